// zetile ops: SDPA backward (stdlib-kernels/attention_bwd.py's attn_bwd_delta,
// attn_bwd_dkdv and attn_bwd_dq) from C. Three plans: the delta kernel
// (which also rescales the caller's lse to the log2 units the other two
// read) owns the dk/dv and dq plans and the two fp32 workspaces.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/ops_internal.h"

static bool unset4(const zt_ops_strides4_t* s) {
  return !s->batch && !s->head && !s->seq && !s->dim;
}

static int64_t head_dim_pow2(int64_t e) {
  int64_t h = 16;
  while (h < e) h *= 2;
  return h;
}

// A gradient is written: every element needs its own address.
static zt_status_t distinct(const char* op, const char* what, int64_t b, int64_t h, int64_t l,
                            int64_t e, const zt_ops_strides4_t* s) {
  if ((b > 1 && !s->batch) || (h > 1 && !s->head) || (l > 1 && !s->seq) || (e > 1 && !s->dim))
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.%s has a zero stride: every "
                          "gradient element needs its own address", op, what);
  return NULL;
}

static zt_status_t set4(zt_ops_plan_t* p, const char* pre, const char* seq,
                        const zt_ops_strides4_t* s) {
  char n[32];
  snprintf(n, sizeof n, "%sb", pre);
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, n, s->batch));
  snprintf(n, sizeof n, "%sh", pre);
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, n, s->head));
  snprintf(n, sizeof n, "%s%s", pre, seq);
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, n, s->seq));
  snprintf(n, sizeof n, "%sd", pre);
  return zt_ops__set_int(p, n, s->dim);
}

// What dk/dv and dq share: q, k, v, grad_out strides, sizes, scale,
// dropout and the mask's strides (the caller sets its outputs' strides).
static zt_status_t fill_grad_kernel(zt_ops_plan_t* p, const zt_ops_sdpa_bwd_desc_t* d) {
  const zt_ops_attention_t* a = &d->fwd.attn;
  ZT_RETURN_IF_ERROR(set4(p, "stride_q", "m", &a->q));
  ZT_RETURN_IF_ERROR(set4(p, "stride_k", "n", &a->k));
  ZT_RETURN_IF_ERROR(set4(p, "stride_v", "n", &a->v));
  ZT_RETURN_IF_ERROR(set4(p, "stride_d", "m", &d->grad_out));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "Lq", a->q_len));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "Lk", a->kv_len));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "D", a->head_dim));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "GROUP", a->q_heads / a->kv_heads));
  ZT_RETURN_IF_ERROR(zt_ops__set_f32(p, "sm_scale", a->scale));
  if (d->fwd.dropout_p > 0.0f) {
    ZT_RETURN_IF_ERROR(zt_ops__set_f32(p, "dropout_p", d->fwd.dropout_p));
    // The forward keys its draw by the seed's low 31 bits (ops_attention.c).
    ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "seed", (int64_t)(d->fwd.dropout_seed & 0x7FFFFFFFu)));
  }
  if (d->fwd.mask_kind != ZT_OPS_MASK_NONE) {
    // The kernels offset the mask by b and h, then by row and column.
    const zt_ops_strides4_t* m = &d->fwd.mask;
    ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "stride_mb", m->batch));
    ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "stride_mh", m->head));
    ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "stride_mm", m->seq));
    ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "stride_mn", m->dim));
  }
  return NULL;
}

static zt_status_t fill(zt_device_t* device, zt_ops_plan_t* p, const zt_ops_sdpa_bwd_desc_t* d) {
  const zt_ops_attention_t* a = &d->fwd.attn;
  int64_t B = a->batch, Hq = a->q_heads, Hk = a->kv_heads, L = a->q_len, S = a->kv_len;
  // delta: rowsum(out * grad_out), and the lse in log2 units.
  ZT_RETURN_IF_ERROR(set4(p, "stride_o", "m", &a->out));
  ZT_RETURN_IF_ERROR(set4(p, "stride_d", "m", &d->grad_out));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "H", Hq));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "Lq", L));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "D", a->head_dim));
  ZT_RETURN_IF_ERROR(zt_ops__set_f32(p, "lse_scale", a->lse_log2 ? 1.0 : 1.0 / log(2.0)));
  size_t rows = (size_t)(B * Hq * L) * 4;
  for (int i = 0; i < 2; ++i) ZT_RETURN_IF_ERROR(zt_buffer_alloc(device, rows, &p->ws[i]));
  ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, "DELTA", p->ws[0]));
  ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, "LSE2", p->ws[1]));
  p->grid[0] = (uint32_t)zt_ops__cdiv(L, a->block_m);
  p->grid[1] = (uint32_t)(B * Hq);

  zt_ops_plan_t* kv = p->bwd[0];
  ZT_RETURN_IF_ERROR(fill_grad_kernel(kv, d));
  ZT_RETURN_IF_ERROR(set4(kv, "stride_kg", "n", &d->grad_k));
  ZT_RETURN_IF_ERROR(set4(kv, "stride_vg", "n", &d->grad_v));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(kv, "Hkv", Hk));
  kv->grid[0] = (uint32_t)zt_ops__cdiv(S, a->block_n);
  kv->grid[1] = (uint32_t)(B * Hk);

  zt_ops_plan_t* q = p->bwd[1];
  ZT_RETURN_IF_ERROR(fill_grad_kernel(q, d));
  ZT_RETURN_IF_ERROR(set4(q, "stride_g", "m", &d->grad_q));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(q, "H", Hq));
  q->grid[0] = (uint32_t)zt_ops__cdiv(L, a->block_m);
  q->grid[1] = (uint32_t)(B * Hq);
  for (int i = 0; i < 2; ++i) {
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p->bwd[i], "LSE", p->ws[1]));
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p->bwd[i], "DELTA", p->ws[0]));
  }
  return NULL;
}

zt_status_t zt_ops_sdpa_bwd_plan(zt_device_t* device, const zt_ops_sdpa_bwd_desc_t* desc,
                                 zt_ops_plan_t** out_plan) {
  const char* op = "zt_ops_sdpa_bwd";
  if (!device || !desc || !out_plan)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_ops_sdpa_bwd_plan: device, desc and "
                          "out_plan must not be NULL");
  *out_plan = NULL;
  zt_ops_sdpa_bwd_desc_t d = *desc;
  d.fwd.attn.split_kv = 1;  // the backward has no decode path
  ZT_RETURN_IF_ERROR(zt_ops__resolve_sdpa(op, &d.fwd));
  const zt_ops_attention_t* a = &d.fwd.attn;
  int64_t B = a->batch, Hq = a->q_heads, Hk = a->kv_heads, L = a->q_len, S = a->kv_len,
          E = a->head_dim;
  const struct { const char* n; zt_ops_strides4_t* s; int64_t h, l; } g[] = {
      {"grad_out", &d.grad_out, Hq, L}, {"grad_q", &d.grad_q, Hq, L},
      {"grad_k", &d.grad_k, Hk, S}, {"grad_v", &d.grad_v, Hk, S}};
  for (int i = 0; i < 4; ++i) {
    if (unset4(g[i].s)) *g[i].s = (zt_ops_strides4_t){g[i].h * g[i].l * E, g[i].l * E, E, 1};
    ZT_RETURN_IF_ERROR(zt_ops__check4(op, g[i].n, B, g[i].h, g[i].l, E, g[i].s));
    if (i) ZT_RETURN_IF_ERROR(distinct(op, g[i].n, B, g[i].h, g[i].l, E, g[i].s));
  }
  static const char* const kinds[] = {"nomask", "fmask", "bmask"};
  const char* dt = zt_ops__dtype_name(a->dtype);
  long long hd = (long long)head_dim_pow2(E);
  bool drop = d.fwd.dropout_p > 0.0f;
  char tail[ZT_OPS_SPEC_MAX], spec[ZT_OPS_SPEC_MAX];
  snprintf(tail, sizeof tail, "%s-d%lld-%dx%d-%s-%s%s", dt, hd, a->block_m, a->block_n,
           d.fwd.causal ? "causal" : "full", kinds[d.fwd.mask_kind], drop ? "-drop" : "");
  zt_ops_plan_t* p = NULL;
  snprintf(spec, sizeof spec, "attnbwd-delta-%s-d%lld-%d", dt, hd, a->block_m);
  ZT_RETURN_IF_ERROR(zt_ops__plan_create(device, ZT_OPS_SDPA_BWD, spec, NULL, NULL, &p));
  static const char* const which[2] = {"dkdv", "dq"};
  zt_status_t s = NULL;
  for (int i = 0; i < 2 && !s; ++i) {
    snprintf(spec, sizeof spec, "attnbwd-%s-%s", which[i], tail);
    s = zt_ops__plan_create(device, ZT_OPS_SDPA_BWD, spec, NULL, NULL, &p->bwd[i]);
  }
  if (!s) {
    p->d.sdpa_bwd = d;
    s = fill(device, p, &d);
  }
  if (s) {
    zt_ops_plan_release(p);
    return s;
  }
  // The plan's name: what the dk/dv and dq specializations share.
  snprintf(p->spec, sizeof p->spec, "attnbwd-%s", tail);
  *out_plan = p;
  return NULL;
}

zt_status_t zt_ops_sdpa_bwd_run(zt_ops_plan_t* p, const zt_ops_sdpa_bwd_buffers_t* bufs) {
  const char* op = "zt_ops_sdpa_bwd_run";
  if (!p || !bufs)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: plan and buffers must not be NULL",
                          op);
  if (p->family != ZT_OPS_SDPA_BWD)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: plan %s is not an SDPA backward "
                          "plan (zt_ops_sdpa_bwd_plan)", op, p->spec);
  const zt_ops_sdpa_bwd_desc_t* d = &p->d.sdpa_bwd;
  const zt_ops_attention_t* a = &d->fwd.attn;
  size_t eb = zt_ops__dtype_bytes(a->dtype);
  int64_t B = a->batch, Hq = a->q_heads, Hk = a->kv_heads, L = a->q_len, S = a->kv_len,
          E = a->head_dim;
  ZT_RETURN_IF_ERROR(zt_ops__view4(op, "q", bufs->q, eb, B, Hq, L, E, a->q));
  ZT_RETURN_IF_ERROR(zt_ops__view4(op, "k", bufs->k, eb, B, Hk, S, E, a->k));
  ZT_RETURN_IF_ERROR(zt_ops__view4(op, "v", bufs->v, eb, B, Hk, S, E, a->v));
  ZT_RETURN_IF_ERROR(zt_ops__view4(op, "out", bufs->out, eb, B, Hq, L, E, a->out));
  ZT_RETURN_IF_ERROR(zt_ops__view4(op, "grad_out", bufs->grad_out, eb, B, Hq, L, E,
                                   d->grad_out));
  ZT_RETURN_IF_ERROR(zt_ops__view4(op, "grad_q", bufs->grad_q, eb, B, Hq, L, E, d->grad_q));
  ZT_RETURN_IF_ERROR(zt_ops__view4(op, "grad_k", bufs->grad_k, eb, B, Hk, S, E, d->grad_k));
  ZT_RETURN_IF_ERROR(zt_ops__view4(op, "grad_v", bufs->grad_v, eb, B, Hk, S, E, d->grad_v));
  int64_t rows[1] = {B * Hq * L}, unit[1] = {1};
  ZT_RETURN_IF_ERROR(zt_ops__check_view(op, "lse", bufs->lse, 4, 1, rows, unit));
  zt_ops_plan_t *kv = p->bwd[0], *q = p->bwd[1];
  ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, "O", bufs->out));
  ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, "DO", bufs->grad_out));
  ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, "LSE", bufs->lse));
  for (int i = 0; i < 2; ++i) {
    zt_ops_plan_t* k = p->bwd[i];
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(k, "Q", bufs->q));
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(k, "K", bufs->k));
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(k, "V", bufs->v));
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(k, "DO", bufs->grad_out));
  }
  if (d->fwd.mask_kind != ZT_OPS_MASK_NONE) {
    size_t mb = d->fwd.mask_kind == ZT_OPS_MASK_BOOL ? 1 : eb;
    ZT_RETURN_IF_ERROR(zt_ops__view4(op, "mask", bufs->mask, mb, B, Hq, L, S, d->fwd.mask));
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(kv, "mask_ptr", bufs->mask));
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(q, "mask_ptr", bufs->mask));
  }
  ZT_RETURN_IF_ERROR(zt_ops__set_buffer(kv, "DK", bufs->grad_k));
  ZT_RETURN_IF_ERROR(zt_ops__set_buffer(kv, "DV", bufs->grad_v));
  ZT_RETURN_IF_ERROR(zt_ops__set_buffer(q, "DQ", bufs->grad_q));
  // In order on the device: delta and the log2 lse first, read by both.
  ZT_RETURN_IF_ERROR(zt_ops__launch(p));
  ZT_RETURN_IF_ERROR(zt_ops__launch(kv));
  return zt_ops__launch(q);
}
