// zetile ops: SDPA and FlexAttention backward (stdlib-kernels/
// attention_bwd.py's attn_bwd_delta, attn_bwd_dkdv and attn_bwd_dq) from C.
// Three plans: the delta kernel (which also rescales the caller's lse to
// the log2 units the other two read) owns the dk/dv and dq plans and the
// two fp32 workspaces; flex adds the block mask as the kernels read it
// (a dense state table and walk lists, rebuilt from the caller's BlockMask
// tables at each run).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
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
  if (p->aligned16) return NULL;  // the row-major variant has its unit head-dim stride built in
  snprintf(n, sizeof n, "%sd", pre);
  return zt_ops__set_int(p, n, s->dim);
}

// The gradients' strides, in the order grad_out, grad_q, grad_k, grad_v.
typedef zt_ops_strides4_t* grads_t[4];

// What dk/dv and dq share: q, k, v, grad_out strides, sizes, scale (the
// caller sets its outputs' strides).
static zt_status_t fill_grad_kernel(zt_ops_plan_t* p, const zt_ops_attention_t* a,
                                    const zt_ops_strides4_t* grad_out) {
  ZT_RETURN_IF_ERROR(set4(p, "stride_q", "m", &a->q));
  ZT_RETURN_IF_ERROR(set4(p, "stride_k", "n", &a->k));
  ZT_RETURN_IF_ERROR(set4(p, "stride_v", "n", &a->v));
  ZT_RETURN_IF_ERROR(set4(p, "stride_d", "m", grad_out));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "Lq", a->q_len));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "Lk", a->kv_len));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "D", a->head_dim));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "GROUP", a->q_heads / a->kv_heads));
  return zt_ops__set_f32(p, "sm_scale", a->scale);
}

// SDPA's own: dropout and the mask's strides.
static zt_status_t fill_sdpa_kernel(zt_ops_plan_t* p, const zt_ops_sdpa_bwd_desc_t* d) {
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

static zt_status_t fill(zt_device_t* device, zt_ops_plan_t* p, const zt_ops_attention_t* a,
                        const grads_t g) {
  int64_t B = a->batch, Hq = a->q_heads, Hk = a->kv_heads, L = a->q_len, S = a->kv_len;
  // delta: rowsum(out * grad_out), and the lse in log2 units.
  ZT_RETURN_IF_ERROR(set4(p, "stride_o", "m", &a->out));
  ZT_RETURN_IF_ERROR(set4(p, "stride_d", "m", g[0]));
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
  ZT_RETURN_IF_ERROR(fill_grad_kernel(kv, a, g[0]));
  ZT_RETURN_IF_ERROR(set4(kv, "stride_kg", "n", g[2]));
  ZT_RETURN_IF_ERROR(set4(kv, "stride_vg", "n", g[3]));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(kv, "Hkv", Hk));
  kv->grid[0] = (uint32_t)zt_ops__cdiv(S, a->block_n);
  kv->grid[1] = (uint32_t)(B * Hk);

  zt_ops_plan_t* q = p->bwd[1];
  ZT_RETURN_IF_ERROR(fill_grad_kernel(q, a, g[0]));
  ZT_RETURN_IF_ERROR(set4(q, "stride_g", "m", g[1]));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(q, "H", Hq));
  q->grid[0] = (uint32_t)zt_ops__cdiv(L, a->block_m);
  q->grid[1] = (uint32_t)(B * Hq);
  for (int i = 0; i < 2; ++i) {
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p->bwd[i], "LSE", p->ws[1]));
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p->bwd[i], "DELTA", p->ws[0]));
  }
  return NULL;
}

// Defaults filled and checks of the gradients' strides (grads_t order).
static zt_status_t resolve_grads(const char* op, const zt_ops_attention_t* a, const grads_t g) {
  int64_t B = a->batch, Hq = a->q_heads, Hk = a->kv_heads, L = a->q_len, S = a->kv_len,
          E = a->head_dim;
  static const char* const names[4] = {"grad_out", "grad_q", "grad_k", "grad_v"};
  for (int i = 0; i < 4; ++i) {
    int64_t h = i < 2 ? Hq : Hk, l = i < 2 ? L : S;
    if (unset4(g[i])) *g[i] = (zt_ops_strides4_t){h * l * E, l * E, E, 1};
    ZT_RETURN_IF_ERROR(zt_ops__check4(op, names[i], B, h, l, E, g[i]));
    if (i) ZT_RETURN_IF_ERROR(distinct(op, names[i], B, h, l, E, g[i]));
  }
  return NULL;
}

// The delta plan (spec attnbwd-delta-DT-dHD-BM, -dlse with a gradient of
// the lse) owning the dk/dv and dq plans (attnbwd-dkdv-TAIL[0],
// attnbwd-dq-TAIL[1]); the plan is named attnbwd-NAME.
// A builder-made mask mod spliced into the flex backward's "ext" exports:
// dk/dv's tile is keys x queries (transposed), dq's queries x keys.
// A builder-made score mod and its derivative (desc.score_grad_builder) go
// into the "ext" score placeholders (ext_score, ext_score_grad) alike.
typedef struct {
  zt_builder_t *score, *mask, *grad;
} bwd_mods_t;

typedef struct {
  const bwd_mods_t* mods;
  zt_ops_splice_t where;
} bwd_splice_t;

static zt_status_t splice_bwd(zt_ops_plan_t* p, char** text, const char* args_text,
                              void* user) {
  const bwd_splice_t* m = user;
  return zt_ops__splice_mods(p, text, args_text, m->mods->score, m->mods->mask, m->mods->grad,
                             &m->where);
}

// q, k, v, out and every gradient fit the row-major variant (export.py
// "-rm16") of dk/dv and dq: on pvc the generic flex backward f16 d64
// softcap + causal spills 634 (dk/dv) and 337 (dq) bytes, the variant 0.
static bool rm16_bwd(const zt_ops_attention_t* a, const grads_t g) {
  for (int i = 0; i < 4; ++i)
    if (!zt_ops__rm16_view(g[i])) return false;
  return zt_ops__rm16_view(&a->q) && zt_ops__rm16_view(&a->k) && zt_ops__rm16_view(&a->v) &&
         zt_ops__rm16_view(&a->out);
}

static zt_status_t create3(zt_device_t* device, zt_ops_family_t family,
                           const zt_ops_attention_t* a, const char* const tail[2],
                           const char* name, const bwd_mods_t* mods, bool rm16, bool dlse,
                           zt_ops_plan_t** out) {
  const char* dt = zt_ops__dtype_name(a->dtype);
  long long hd = (long long)head_dim_pow2(a->head_dim);
  char spec[ZT_OPS_SPEC_MAX];
  zt_ops_plan_t* p = NULL;
  snprintf(spec, sizeof spec, "attnbwd-delta-%s-d%lld-%d%s", dt, hd, a->block_m,
           dlse ? "-dlse" : "");
  ZT_RETURN_IF_ERROR(zt_ops__plan_create(device, family, spec, NULL, NULL, &p));
  static const char* const which[2] = {"dkdv", "dq"};
  zt_status_t s = NULL;
  for (int i = 0; i < 2 && !s; ++i) {
    snprintf(spec, sizeof spec, "attnbwd-%s-%s", which[i], tail[i]);
    bwd_splice_t m = {mods, {i ? a->block_m : a->block_n, i ? a->block_n : a->block_m, i == 0,
                             {"S0", "M2", "G0"}}};
    bool ext = mods && (mods->score || mods->mask);
    s = zt_ops__plan_create_rm16(device, family, spec, rm16, ext ? splice_bwd : NULL, &m,
                                 &p->bwd[i]);
  }
  if (s) {
    zt_ops_plan_release(p);
    return s;
  }
  // "-rm16" when the dk/dv and dq plans are the row-major variants.
  snprintf(p->spec, sizeof p->spec, "attnbwd-%s%s", name,
           p->bwd[0]->aligned16 && p->bwd[1]->aligned16 ? "-rm16" : "");
  *out = p;
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
  grads_t g = {&d.grad_out, &d.grad_q, &d.grad_k, &d.grad_v};
  ZT_RETURN_IF_ERROR(resolve_grads(op, a, g));
  static const char* const kinds[] = {"nomask", "fmask", "bmask"};
  bool drop = d.fwd.dropout_p > 0.0f;
  char tail[ZT_OPS_SPEC_MAX];
  snprintf(tail, sizeof tail, "%s-d%lld-%dx%d-%s-%s%s", zt_ops__dtype_name(a->dtype),
           (long long)head_dim_pow2(a->head_dim), a->block_m, a->block_n,
           d.fwd.causal ? "causal" : "full", kinds[d.fwd.mask_kind], drop ? "-drop" : "");
  zt_ops_plan_t* p = NULL;
  // The plan's name: what the dk/dv and dq specializations share.
  const char* const tails[2] = {tail, tail};
  ZT_RETURN_IF_ERROR(
      create3(device, ZT_OPS_SDPA_BWD, a, tails, tail, NULL, rm16_bwd(a, g), d.has_grad_lse,
              &p));
  p->d.sdpa_bwd = d;
  zt_status_t s = fill(device, p, a, g);
  for (int i = 0; i < 2 && !s; ++i) s = fill_sdpa_kernel(p->bwd[i], &d);
  if (s) {
    zt_ops_plan_release(p);
    return s;
  }
  *out_plan = p;
  return NULL;
}

// The buffers both backward families bind (checked against their views).
typedef struct {
  zt_buffer_t *q, *k, *v, *out, *lse, *grad_out, *grad_q, *grad_k, *grad_v, *grad_lse;
} common_bufs_t;

static zt_status_t bind_common(const char* op, zt_ops_plan_t* p, const zt_ops_attention_t* a,
                               const zt_ops_strides4_t* const g[4], bool has_grad_lse,
                               const common_bufs_t* b) {
  size_t eb = zt_ops__dtype_bytes(a->dtype);
  int64_t B = a->batch, Hq = a->q_heads, Hk = a->kv_heads, L = a->q_len, S = a->kv_len,
          E = a->head_dim;
  ZT_RETURN_IF_ERROR(zt_ops__view4(op, "q", b->q, eb, B, Hq, L, E, a->q));
  ZT_RETURN_IF_ERROR(zt_ops__view4(op, "k", b->k, eb, B, Hk, S, E, a->k));
  ZT_RETURN_IF_ERROR(zt_ops__view4(op, "v", b->v, eb, B, Hk, S, E, a->v));
  ZT_RETURN_IF_ERROR(zt_ops__view4(op, "out", b->out, eb, B, Hq, L, E, a->out));
  ZT_RETURN_IF_ERROR(zt_ops__view4(op, "grad_out", b->grad_out, eb, B, Hq, L, E, *g[0]));
  ZT_RETURN_IF_ERROR(zt_ops__view4(op, "grad_q", b->grad_q, eb, B, Hq, L, E, *g[1]));
  ZT_RETURN_IF_ERROR(zt_ops__view4(op, "grad_k", b->grad_k, eb, B, Hk, S, E, *g[2]));
  ZT_RETURN_IF_ERROR(zt_ops__view4(op, "grad_v", b->grad_v, eb, B, Hk, S, E, *g[3]));
  int64_t rows[1] = {B * Hq * L}, unit[1] = {1};
  ZT_RETURN_IF_ERROR(zt_ops__check_view(op, "lse", b->lse, 4, 1, rows, unit));
  if (!has_grad_lse != !b->grad_lse)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: buffers.grad_lse is %s but the plan "
                          "was made with desc.has_grad_lse %s", op,
                          b->grad_lse ? "given" : "NULL", has_grad_lse ? "true" : "false");
  if (has_grad_lse) {
    ZT_RETURN_IF_ERROR(zt_ops__check_view(op, "grad_lse", b->grad_lse, 4, 1, rows, unit));
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, "DLSE", b->grad_lse));
  }
  const char* const names[7] = {"q", "k", "v", "grad_out", "grad_q", "grad_k", "grad_v"};
  const zt_buffer_t* const al[7] = {b->q, b->k, b->v, b->grad_out, b->grad_q, b->grad_k,
                                    b->grad_v};
  for (int i = 0; i < 2; ++i)
    ZT_RETURN_IF_ERROR(zt_ops__check_aligned16(op, p->bwd[i], 7, names, al));
  ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, "O", b->out));
  ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, "DO", b->grad_out));
  ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, "LSE", b->lse));
  for (int i = 0; i < 2; ++i) {
    zt_ops_plan_t* k = p->bwd[i];
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(k, "Q", b->q));
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(k, "K", b->k));
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(k, "V", b->v));
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(k, "DO", b->grad_out));
  }
  ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p->bwd[0], "DK", b->grad_k));
  ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p->bwd[0], "DV", b->grad_v));
  return zt_ops__set_buffer(p->bwd[1], "DQ", b->grad_q);
}

// In order on the device: delta and the log2 lse first, read by both.
static zt_status_t launch3(zt_ops_plan_t* p) {
  ZT_RETURN_IF_ERROR(zt_ops__launch(p));
  ZT_RETURN_IF_ERROR(zt_ops__launch(p->bwd[0]));
  return zt_ops__launch(p->bwd[1]);
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
  const zt_ops_strides4_t* g[4] = {&d->grad_out, &d->grad_q, &d->grad_k, &d->grad_v};
  common_bufs_t cb = {bufs->q, bufs->k, bufs->v, bufs->out, bufs->lse, bufs->grad_out,
                      bufs->grad_q, bufs->grad_k, bufs->grad_v, bufs->grad_lse};
  ZT_RETURN_IF_ERROR(bind_common(op, p, a, g, d->has_grad_lse, &cb));
  if (d->fwd.mask_kind != ZT_OPS_MASK_NONE) {
    size_t mb = d->fwd.mask_kind == ZT_OPS_MASK_BOOL ? 1 : zt_ops__dtype_bytes(a->dtype);
    ZT_RETURN_IF_ERROR(zt_ops__view4(op, "mask", bufs->mask, mb, a->batch, a->q_heads,
                                     a->q_len, a->kv_len, d->fwd.mask));
    for (int i = 0; i < 2; ++i)
      ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p->bwd[i], "mask_ptr", bufs->mask));
  }
  return launch3(p);
}

// ------------------------------------------------- FlexAttention backward
static const char* const kScore[] = {"none", "alibi", "softcap", "ext"};
static const char* const kMask[] = {"none", "causal", "sliding", "document", "ext"};

// The block mask's shapes: mb x mh x qb x kvb for the state and dq's lists,
// mb x hk x kvb x qb for dk/dv's (hk: 1 when the mask broadcasts over heads,
// else the KV heads, each the union of its query heads' blocks).
typedef struct {
  int64_t mb, mh, qb, kvb, hk, group;
} blk_dims_t;

static blk_dims_t blk_dims(const zt_ops_flex_desc_t* d) {
  blk_dims_t k;
  k.mb = d->mask_batch;
  k.mh = d->mask_heads;
  k.qb = zt_ops__cdiv(d->attn.q_len, d->q_block);
  k.kvb = zt_ops__cdiv(d->attn.kv_len, d->kv_block);
  k.hk = k.mh == 1 ? 1 : d->attn.kv_heads;
  k.group = d->attn.q_heads / d->attn.kv_heads;
  return k;
}

// Block-mask arguments: the state's strides over (batch, query head, q
// block, kv block), the walk lists' strides (a broadcast dimension has 0),
// and the block sizes.
static zt_status_t fill_flex_kernels(zt_ops_plan_t* p, const zt_ops_flex_desc_t* d) {
  blk_dims_t k = blk_dims(d);
  for (int i = 0; i < 2; ++i) {
    zt_ops_plan_t* c = p->bwd[i];
    ZT_RETURN_IF_ERROR(zt_ops__set_int(c, "sbk_b", k.mb == 1 ? 0 : k.mh * k.qb * k.kvb));
    ZT_RETURN_IF_ERROR(zt_ops__set_int(c, "sbk_h", k.mh == 1 ? 0 : k.qb * k.kvb));
    ZT_RETURN_IF_ERROR(zt_ops__set_int(c, "sbk_m", k.kvb));
    ZT_RETURN_IF_ERROR(zt_ops__set_int(c, "sbk_n", 1));
    ZT_RETURN_IF_ERROR(zt_ops__set_int(c, "Q_SPARSE", d->q_block));
    ZT_RETURN_IF_ERROR(zt_ops__set_int(c, "KV_SPARSE", d->kv_block));
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(c, "blocks", p->blk[0]));
    // dk/dv (i = 0) walks query blocks per KV block, dq KV blocks per query block.
    int64_t heads = i ? k.mh : k.hk, rows = i ? k.qb : k.kvb, cols = i ? k.kvb : k.qb;
    ZT_RETURN_IF_ERROR(zt_ops__set_int(c, "ln_b", k.mb == 1 ? 0 : heads * rows));
    ZT_RETURN_IF_ERROR(zt_ops__set_int(c, "ln_h", heads == 1 ? 0 : rows));
    ZT_RETURN_IF_ERROR(zt_ops__set_int(c, "li_b", k.mb == 1 ? 0 : heads * rows * cols));
    ZT_RETURN_IF_ERROR(zt_ops__set_int(c, "li_h", heads == 1 ? 0 : rows * cols));
    ZT_RETURN_IF_ERROR(zt_ops__set_int(c, "li_r", cols));
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(c, "lnum", p->blk[i ? 1 : 3]));
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(c, "lidx", p->blk[i ? 2 : 4]));
    // The mods' parameters (mods.py reads them from slot 3).
    if (d->score_mod) {
      ZT_RETURN_IF_ERROR(zt_ops__set_buffer(c, "S3", p->params));
      ZT_RETURN_IF_ERROR(zt_ops__set_buffer(c, "G3", p->params));
    }
    if (d->mask_mod) ZT_RETURN_IF_ERROR(zt_ops__set_buffer(c, "M3", p->params));
  }
  return NULL;
}

zt_status_t zt_ops_flex_bwd_plan(zt_device_t* device, const zt_ops_flex_bwd_desc_t* desc,
                                 zt_ops_plan_t** out_plan) {
  const char* op = "zt_ops_flex_bwd";
  if (!device || !desc || !out_plan)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_ops_flex_bwd_plan: device, desc and "
                          "out_plan must not be NULL");
  *out_plan = NULL;
  zt_ops_flex_bwd_desc_t d = *desc;
  d.fwd.attn.split_kv = 1;  // the backward has no decode path
  ZT_RETURN_IF_ERROR(zt_ops__resolve_flex(op, &d.fwd));
  // A builder-made mask mod needs no derivative: it is spliced into the
  // backward's "ext" exports as into the forward's. A builder-made score
  // mod comes with its derivative d score_mod / d score as a second builder
  // function (nothing derives one from builder IR; zetile.ops'
  // flex_attention_backward differentiates Python mods by tracing them).
  if (d.fwd.score_mod == ZT_OPS_SCORE_BUILDER && !d.fwd.score_grad_builder)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.fwd.score_grad_builder is NULL: "
                          "a builder-made score mod needs its derivative d score_mod / d score "
                          "as a second builder kernel of the same signature for the backward",
                          op);
  bwd_mods_t mods = {
      d.fwd.score_mod == ZT_OPS_SCORE_BUILDER ? d.fwd.score_builder : NULL,
      d.fwd.mask_mod == ZT_OPS_MASK_MOD_BUILDER ? d.fwd.mask_builder : NULL,
      d.fwd.score_mod == ZT_OPS_SCORE_BUILDER ? d.fwd.score_grad_builder : NULL};
  // Not kept: the caller owns them.
  d.fwd.score_builder = d.fwd.mask_builder = d.fwd.score_grad_builder = NULL;
  const zt_ops_flex_desc_t* f = &d.fwd;
  const zt_ops_attention_t* a = &f->attn;
  grads_t g = {&d.grad_out, &d.grad_q, &d.grad_k, &d.grad_v};
  ZT_RETURN_IF_ERROR(resolve_grads(op, a, g));
  char base[ZT_OPS_SPEC_MAX], name[ZT_OPS_SPEC_MAX], tail[2][ZT_OPS_SPEC_MAX];
  snprintf(base, sizeof base, "%s-d%lld-%dx%d", zt_ops__dtype_name(a->dtype),
           (long long)head_dim_pow2(a->head_dim), a->block_m, a->block_n);
  // Each kernel's spec names the block length along the axis it walks
  // (its SUBS = that length / its tile); the plan's name both.
  snprintf(tail[0], sizeof tail[0], "%s-full-nomask-%s-%s-sparse%lld", base,
           kScore[f->score_mod], kMask[f->mask_mod], (long long)f->q_block);
  snprintf(tail[1], sizeof tail[1], "%s-full-nomask-%s-%s-sparse%lld", base,
           kScore[f->score_mod], kMask[f->mask_mod], (long long)f->kv_block);
  snprintf(name, sizeof name, "%s-%s-%s-sparse%lldx%lld", base, kScore[f->score_mod],
           kMask[f->mask_mod], (long long)f->q_block, (long long)f->kv_block);
  zt_ops_plan_t* p = NULL;
  const char* const tails[2] = {tail[0], tail[1]};
  ZT_RETURN_IF_ERROR(create3(device, ZT_OPS_FLEX_BWD, a, tails, name, &mods, rm16_bwd(a, g),
                             d.has_grad_lse, &p));
  p->d.flex_bwd = d;
  blk_dims_t k = blk_dims(f);
  size_t cells = (size_t)(k.mb * k.mh * k.qb * k.kvb), kcells = (size_t)(k.mb * k.hk * k.kvb * k.qb);
  const size_t bytes[5] = {cells, (size_t)(k.mb * k.mh * k.qb) * 4, cells * 4,
                           (size_t)(k.mb * k.hk * k.kvb) * 4, kcells * 4};
  zt_status_t s = NULL;
  for (int i = 0; i < 5 && !s; ++i) s = zt_buffer_alloc(device, bytes[i], &p->blk[i]);
  float params[4] = {f->softcap, (float)f->window, (float)f->document_len, 0.0f};
  if (!s && (f->score_mod || f->mask_mod)) {  // also a builder mask mod's default tensor
    s = zt_buffer_alloc(device, sizeof params, &p->params);
    if (!s) s = zt_buffer_write(p->params, 0, params, sizeof params);
  }
  if (!s) s = fill(device, p, a, g);
  if (!s) s = fill_flex_kernels(p, f);
  if (s) {
    zt_ops_plan_release(p);
    return s;
  }
  *out_plan = p;
  return NULL;
}

// One BlockMask table pair read back and checked (counts in [0, kvb],
// indices in [0, kvb)), its listed blocks marked `val` in the state.
static zt_status_t mark(const char* op, const char* what, const zt_buffer_t* num,
                        const zt_buffer_t* idx, const blk_dims_t* k, int8_t val, int8_t* state) {
  int64_t rows = k->mb * k->mh * k->qb, dims[1] = {rows}, cells[1] = {rows * k->kvb},
          unit[1] = {1};
  char n1[40], n2[40];
  snprintf(n1, sizeof n1, "%s_num_blocks", what);
  snprintf(n2, sizeof n2, "%s_indices", what);
  ZT_RETURN_IF_ERROR(zt_ops__check_view(op, n1, num, 4, 1, dims, unit));
  ZT_RETURN_IF_ERROR(zt_ops__check_view(op, n2, idx, 4, 1, cells, unit));
  int32_t* hn = malloc((size_t)rows * 4);
  int32_t* hi = malloc((size_t)(rows * k->kvb) * 4);
  zt_status_t s = !hn || !hi ? zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "%s: block tables", op)
                             : NULL;
  if (!s) s = zt_buffer_read(num, 0, hn, (size_t)rows * 4);
  if (!s) s = zt_buffer_read(idx, 0, hi, (size_t)(rows * k->kvb) * 4);
  for (int64_t r = 0; r < rows && !s; ++r) {
    if (hn[r] < 0 || hn[r] > k->kvb) {
      s = zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: %s[%lld] = %d is outside [0, %lld]",
                         op, n1, (long long)r, hn[r], (long long)k->kvb);
      break;
    }
    for (int32_t j = 0; j < hn[r] && !s; ++j) {
      int32_t c = hi[r * k->kvb + j];
      if (c < 0 || c >= k->kvb)
        s = zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: %s[%lld, %d] = %d is outside "
                           "[0, %lld)", op, n2, (long long)r, j, c, (long long)k->kvb);
      else
        state[r * k->kvb + c] = val;
    }
  }
  free(hn);
  free(hi);
  return s;
}

// Per row of a rows x cols table: the live columns, ascending, and how many.
static void walk(const int8_t* live, int64_t rows, int64_t cols, int32_t* num, int32_t* idx) {
  for (int64_t r = 0; r < rows; ++r) {
    int32_t n = 0;
    for (int64_t c = 0; c < cols; ++c)
      if (live[r * cols + c]) idx[r * cols + n++] = (int32_t)c;
    for (int64_t c = n; c < cols; ++c) idx[r * cols + c] = 0;
    num[r] = n;
  }
}

// The kernels' block tables from the caller's BlockMask (see blk_dims_t).
static zt_status_t build_blocks(const char* op, zt_ops_plan_t* p,
                                const zt_ops_flex_bwd_buffers_t* b) {
  const zt_ops_flex_desc_t* f = &p->d.flex_bwd.fwd;
  blk_dims_t k = blk_dims(f);
  size_t cells = (size_t)(k.mb * k.mh * k.qb * k.kvb), kcells = (size_t)(k.mb * k.hk * k.kvb * k.qb);
  int8_t* state = calloc(cells, 1);
  int8_t* live = calloc(kcells, 1);
  int32_t *nq = malloc((size_t)(k.mb * k.mh * k.qb) * 4), *iq = malloc(cells * 4),
          *nk = malloc((size_t)(k.mb * k.hk * k.kvb) * 4), *ik = malloc(kcells * 4);
  zt_status_t s = NULL;
  if (!state || !live || !nq || !iq || !nk || !ik)
    s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "%s: block tables", op);
  // Partial blocks, then full ones (a block listed in both is full).
  if (!s) s = mark(op, "kv", b->kv_num_blocks, b->kv_indices, &k, 1, state);
  if (!s && f->has_full_blocks)
    s = mark(op, "full_kv", b->full_kv_num_blocks, b->full_kv_indices, &k, 2, state);
  if (!s) {
    // dq: per (b, h, query block) the listed KV blocks; the state is
    // already live/not per row.
    int8_t* lq = malloc(cells);
    if (!lq) {
      s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "%s: block tables", op);
    } else {
      for (size_t i = 0; i < cells; ++i) lq[i] = state[i] != 0;
      walk(lq, k.mb * k.mh * k.qb, k.kvb, nq, iq);
      free(lq);
    }
  }
  if (!s) {
    // dk/dv: per (b, kv head, KV block) the query blocks any query head of
    // the group keeps (transposed).
    for (int64_t bb = 0; bb < k.mb; ++bb)
      for (int64_t h = 0; h < k.mh; ++h) {
        int64_t hk = k.hk == 1 ? 0 : h / k.group;
        for (int64_t r = 0; r < k.qb; ++r)
          for (int64_t c = 0; c < k.kvb; ++c)
            if (state[((bb * k.mh + h) * k.qb + r) * k.kvb + c])
              live[((bb * k.hk + hk) * k.kvb + c) * k.qb + r] = 1;
      }
    walk(live, k.mb * k.hk * k.kvb, k.qb, nk, ik);
  }
  // An earlier run's launches may still read the lists being replaced.
  if (!s) s = zt_device_synchronize(p->device);
  if (!s) s = zt_buffer_write(p->blk[0], 0, state, cells);
  if (!s) s = zt_buffer_write(p->blk[1], 0, nq, (size_t)(k.mb * k.mh * k.qb) * 4);
  if (!s) s = zt_buffer_write(p->blk[2], 0, iq, cells * 4);
  if (!s) s = zt_buffer_write(p->blk[3], 0, nk, (size_t)(k.mb * k.hk * k.kvb) * 4);
  if (!s) s = zt_buffer_write(p->blk[4], 0, ik, kcells * 4);
  free(state);
  free(live);
  free(nq);
  free(iq);
  free(nk);
  free(ik);
  return s;
}

zt_status_t zt_ops_flex_bwd_run(zt_ops_plan_t* p, const zt_ops_flex_bwd_buffers_t* bufs) {
  const char* op = "zt_ops_flex_bwd_run";
  if (!p || !bufs)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: plan and buffers must not be NULL",
                          op);
  if (p->family != ZT_OPS_FLEX_BWD)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: plan %s is not a FlexAttention "
                          "backward plan (zt_ops_flex_bwd_plan)", op, p->spec);
  const zt_ops_flex_bwd_desc_t* d = &p->d.flex_bwd;
  const zt_ops_flex_desc_t* f = &d->fwd;
  const zt_ops_attention_t* a = &f->attn;
  const zt_ops_strides4_t* g[4] = {&d->grad_out, &d->grad_q, &d->grad_k, &d->grad_v};
  common_bufs_t cb = {bufs->q, bufs->k, bufs->v, bufs->out, bufs->lse, bufs->grad_out,
                      bufs->grad_q, bufs->grad_k, bufs->grad_v, bufs->grad_lse};
  ZT_RETURN_IF_ERROR(bind_common(op, p, a, g, d->has_grad_lse, &cb));
  int64_t unit[1] = {1};
  if (f->score_mod == ZT_OPS_SCORE_ALIBI) {
    int64_t dims[1] = {a->q_heads};
    ZT_RETURN_IF_ERROR(zt_ops__check_view(op, "score_tensor (ALiBi slopes)", bufs->score_tensor,
                                          4, 1, dims, unit));
    for (int i = 0; i < 2; ++i) {
      ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p->bwd[i], "S0", bufs->score_tensor));
      ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p->bwd[i], "G0", bufs->score_tensor));
    }
  }
  if (f->mask_mod == ZT_OPS_MASK_MOD_DOCUMENT) {
    int64_t dims[1] = {f->document_len};
    ZT_RETURN_IF_ERROR(zt_ops__check_view(op, "mask_tensor (document ids)", bufs->mask_tensor,
                                          4, 1, dims, unit));
    for (int i = 0; i < 2; ++i)
      ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p->bwd[i], "M2", bufs->mask_tensor));
  }
  // Builder-made mods get their tensor, or the parameter block when none is
  // given (a valid address the mod does not read), as the forward; the
  // score mod's derivative reads the score mod's.
  if (f->score_mod == ZT_OPS_SCORE_BUILDER)
    for (int i = 0; i < 2; ++i) {
      const zt_buffer_t* t = bufs->score_tensor ? bufs->score_tensor : p->params;
      ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p->bwd[i], "S0", t));
      ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p->bwd[i], "G0", t));
    }
  if (f->mask_mod == ZT_OPS_MASK_MOD_BUILDER)
    for (int i = 0; i < 2; ++i)
      ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p->bwd[i], "M2", bufs->mask_tensor ? bufs->mask_tensor
                                                                               : p->params));
  ZT_RETURN_IF_ERROR(build_blocks(op, p, bufs));
  return launch3(p);
}
