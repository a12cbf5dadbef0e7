// zetile ops: SDPA and FlexAttention (stdlib-kernels/attention.py's
// attn_fwd, mods from stdlib-kernels/mods.py) from C.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops_internal.h"

static bool unset4(const zt_ops_strides4_t* s) {
  return !s->batch && !s->head && !s->seq && !s->dim;
}

static bool pow2_tile(int32_t t) { return t >= 16 && t <= 256 && !(t & (t - 1)); }

zt_status_t zt_ops__check4(const char* op, const char* what, int64_t b, int64_t h, int64_t l,
                           int64_t e, const zt_ops_strides4_t* s) {
  int64_t dims[4] = {b, h, l, e}, st[4] = {s->batch, s->head, s->seq, s->dim};
  return zt_ops__check_strides(op, what, 4, dims, st);
}

// Shapes, strides and tiles of what SDPA and flex share, defaults filled.
static zt_status_t resolve_attn(const char* op, zt_ops_attention_t* a) {
  if (!zt_ops__dtype_name(a->dtype))
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.attn.dtype must be ZT_F32, "
                          "ZT_F16 or ZT_BF16 (got kind %d)", op, (int)a->dtype);
  const struct { const char* n; int64_t v; } dims[] = {
      {"batch", a->batch}, {"q_heads", a->q_heads}, {"kv_heads", a->kv_heads},
      {"q_len", a->q_len}, {"kv_len", a->kv_len}, {"head_dim", a->head_dim}};
  for (int i = 0; i < 6; ++i)
    if (dims[i].v < 1 || dims[i].v > INT32_MAX)
      return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.attn.%s must be in [1, 2^31), "
                            "got %lld", op, dims[i].n, (long long)dims[i].v);
  if (a->head_dim > 256)
    return zt_make_status(ZT_STATUS_UNSUPPORTED, "%s: desc.attn.head_dim %lld: head dims up to "
                          "256 are supported", op, (long long)a->head_dim);
  if (a->q_heads % a->kv_heads)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.attn.q_heads (%lld) must be a "
                          "multiple of desc.attn.kv_heads (%lld) (GQA)", op,
                          (long long)a->q_heads, (long long)a->kv_heads);
  if (!isfinite(a->scale))
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.attn.scale must be finite", op);
  if (a->scale == 0.0f) a->scale = (float)(1.0 / sqrt((double)a->head_dim));
  if (!a->block_m) a->block_m = 32;
  if (!a->block_n) a->block_n = 32;
  if (!pow2_tile(a->block_m) || !pow2_tile(a->block_n))
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.attn.block_m/n must be powers of "
                          "two in [16, 256] (got %d, %d)", op, a->block_m, a->block_n);
  int64_t B = a->batch, Hq = a->q_heads, Hk = a->kv_heads, L = a->q_len, S = a->kv_len,
          E = a->head_dim;
  if (unset4(&a->q)) a->q = (zt_ops_strides4_t){Hq * L * E, L * E, E, 1};
  if (unset4(&a->out)) a->out = (zt_ops_strides4_t){Hq * L * E, L * E, E, 1};
  if (unset4(&a->k)) a->k = (zt_ops_strides4_t){Hk * S * E, S * E, E, 1};
  if (unset4(&a->v)) a->v = (zt_ops_strides4_t){Hk * S * E, S * E, E, 1};
  ZT_RETURN_IF_ERROR(zt_ops__check4(op, "q", B, Hq, L, E, &a->q));
  ZT_RETURN_IF_ERROR(zt_ops__check4(op, "k", B, Hk, S, E, &a->k));
  ZT_RETURN_IF_ERROR(zt_ops__check4(op, "v", B, Hk, S, E, &a->v));
  ZT_RETURN_IF_ERROR(zt_ops__check4(op, "out", B, Hq, L, E, &a->out));
  if ((L > 1 && !a->out.seq) || (E > 1 && !a->out.dim) || (Hq > 1 && !a->out.head) ||
      (B > 1 && !a->out.batch))
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.attn.out has a zero stride: "
                          "every output element needs its own address", op);
  if (a->split_kv < ZT_OPS_SPLIT_KV_AUTO || a->split_kv > 64)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.attn.split_kv must be in "
                          "[0, 64] or ZT_OPS_SPLIT_KV_AUTO, got %d", op, a->split_kv);
  if (a->split_kv == 0) a->split_kv = 1;
  if (B * Hq > 65535 || zt_ops__cdiv(L, a->block_m) > UINT32_MAX)
    return zt_make_status(ZT_STATUS_UNSUPPORTED, "%s: batch * q_heads = %lld programs on the "
                          "second grid axis (at most 65535)", op, (long long)(B * Hq));
  return NULL;
}

static int64_t head_dim_pow2(int64_t e) {
  int64_t h = 16;
  while (h < e) h *= 2;
  return h;
}

// ZT_OPS_SPLIT_KV_AUTO: zetile.ops' split_kv_for. Only one query tile
// (decode: q_len <= block_m) splits, when its batch * q_heads programs are
// fewer than two per compute unit, into at most 16 shares of at least 4 KV
// tiles each.
static int32_t auto_split_kv(zt_device_t* device, const zt_ops_attention_t* a) {
  if (a->q_len > a->block_m) return 1;
  const zt_device_info_t* info = zt_device_info(device);
  int64_t programs = 2 * (info && info->compute_units > 0 ? info->compute_units : 1);
  int64_t bh = a->batch * a->q_heads;
  if (bh >= programs) return 1;
  int64_t n = zt_ops__cdiv(programs, bh), by_len = zt_ops__cdiv(a->kv_len, a->block_n) / 4;
  if (n > 16) n = 16;
  if (n > by_len) n = by_len;
  return n > 1 ? (int32_t)n : 1;
}

// The spec's variant suffix: dropout, the decode path, both, or none.
static const char* variant(const zt_ops_attention_t* a, bool dropout) {
  if (dropout) return a->split_kv > 1 ? "-drop-split" : "-drop";
  return a->split_kv > 1 ? "-split" : "";
}

// split_kv > 1: the workspaces the shares write (as zetile.ops sizes them:
// (splits, batch * q_heads, q_len[, HEAD_DIM]) fp32), the third grid axis,
// and the combine plan with everything but out and lse bound.
static zt_status_t plan_split(zt_device_t* device, zt_ops_plan_t* p,
                              const zt_ops_attention_t* a) {
  int64_t n = a->split_kv, rows = n * a->batch * a->q_heads * a->q_len,
          hd = head_dim_pow2(a->head_dim);
  if (rows * hd > INT32_MAX)
    return zt_make_status(ZT_STATUS_UNSUPPORTED, "%s: split_kv workspace of %lld elements "
                          "exceeds the kernels' int32 offsets", p->spec, (long long)(rows * hd));
  size_t bytes[3] = {(size_t)(rows * hd) * 4, (size_t)rows * 4, (size_t)rows * 4};
  static const char* const names[3] = {"WS_ACC", "WS_M", "WS_L"};
  for (int i = 0; i < 3; ++i) {
    ZT_RETURN_IF_ERROR(zt_buffer_alloc(device, bytes[i], &p->ws[i]));
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, names[i], p->ws[i]));
  }
  p->grid[2] = (uint32_t)n;
  char spec[ZT_OPS_SPEC_MAX];
  snprintf(spec, sizeof spec, "attncombine-%s-d%lld-%d", zt_ops__dtype_name(a->dtype),
           (long long)hd, a->block_m);
  ZT_RETURN_IF_ERROR(zt_ops__plan_create(device, p->family, spec, NULL, NULL, &p->combine));
  zt_ops_plan_t* c = p->combine;
  for (int i = 0; i < 3; ++i) ZT_RETURN_IF_ERROR(zt_ops__set_buffer(c, names[i], p->ws[i]));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(c, "stride_ob", a->out.batch));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(c, "stride_oh", a->out.head));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(c, "stride_om", a->out.seq));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(c, "stride_od", a->out.dim));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(c, "H", a->q_heads));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(c, "Lq", a->q_len));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(c, "D", a->head_dim));
  ZT_RETURN_IF_ERROR(zt_ops__set_f32(c, "lse_scale", a->lse_log2 ? 1.0 : log(2.0)));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(c, "SPLITS", n));
  c->grid[0] = p->grid[0];
  c->grid[1] = p->grid[1];
  return NULL;
}


// q, k, v and out all fit the row-major variant (export.py "-rm16"): on Xe
// its hints give 2D block loads where the generic export gathers rows (and
// spills: causal SDPA fp16 d64 44 bytes on pvc, the variant 0).
static bool rm16_attn(const zt_ops_attention_t* a) {
  return zt_ops__rm16_view(&a->q) && zt_ops__rm16_view(&a->k) && zt_ops__rm16_view(&a->v) &&
         zt_ops__rm16_view(&a->out);
}

// The arguments every attention specialization has.
static zt_status_t fill_common(zt_ops_plan_t* p, const zt_ops_attention_t* a) {
  const struct { const char* pre; const zt_ops_strides4_t* s; char seq; } ops[] = {
      {"stride_q", &a->q, 'm'}, {"stride_k", &a->k, 'n'}, {"stride_v", &a->v, 'n'},
      {"stride_o", &a->out, 'm'}};
  for (int i = 0; i < 4; ++i) {
    char n[32];
    snprintf(n, sizeof n, "%sb", ops[i].pre);
    ZT_RETURN_IF_ERROR(zt_ops__set_int(p, n, ops[i].s->batch));
    snprintf(n, sizeof n, "%sh", ops[i].pre);
    ZT_RETURN_IF_ERROR(zt_ops__set_int(p, n, ops[i].s->head));
    snprintf(n, sizeof n, "%s%c", ops[i].pre, ops[i].seq);
    ZT_RETURN_IF_ERROR(zt_ops__set_int(p, n, ops[i].s->seq));
    if (p->aligned16) continue;  // the row-major variant has its unit head-dim strides built in
    snprintf(n, sizeof n, "%sd", ops[i].pre);
    ZT_RETURN_IF_ERROR(zt_ops__set_int(p, n, ops[i].s->dim));
  }
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "H", a->q_heads));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "Lq", a->q_len));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "Lk", a->kv_len));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "D", a->head_dim));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "GROUP", a->q_heads / a->kv_heads));
  ZT_RETURN_IF_ERROR(zt_ops__set_f32(p, "sm_scale", a->scale));
  // The kernel's lse is log2; this factor gives the units asked for.
  ZT_RETURN_IF_ERROR(zt_ops__set_f32(p, "lse_scale", a->lse_log2 ? 1.0 : log(2.0)));
  static const char* const zero_ints[] = {"stride_mb", "stride_mh", "stride_mm", "stride_mn",
                                          "sb_b", "sb_h", "sb_m", "si_b", "si_h", "si_m"};
  for (size_t i = 0; i < sizeof zero_ints / sizeof zero_ints[0]; ++i)
    ZT_RETURN_IF_ERROR(zt_ops__set_int(p, zero_ints[i], 0));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "Q_SPARSE", 1));
  p->grid[0] = (uint32_t)zt_ops__cdiv(a->q_len, a->block_m);
  p->grid[1] = (uint32_t)(a->batch * a->q_heads);
  return NULL;
}

zt_status_t zt_ops__resolve_sdpa(const char* op, zt_ops_sdpa_desc_t* d) {
  ZT_RETURN_IF_ERROR(resolve_attn(op, &d->attn));
  const zt_ops_attention_t* a = &d->attn;
  if ((unsigned)d->mask_kind > ZT_OPS_MASK_BOOL)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.mask_kind %d is not a "
                          "zt_ops_mask_kind_t", op, (int)d->mask_kind);
  if (d->mask_kind != ZT_OPS_MASK_NONE) {
    if (unset4(&d->mask))
      d->mask = (zt_ops_strides4_t){a->q_heads * a->q_len * a->kv_len, a->q_len * a->kv_len,
                                    a->kv_len, 1};
    ZT_RETURN_IF_ERROR(zt_ops__check4(op, "mask", a->batch, a->q_heads, a->q_len, a->kv_len,
                                      &d->mask));
  }
  if (!(d->dropout_p >= 0.0f && d->dropout_p < 1.0f))
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.dropout_p must be in [0, 1), "
                          "got %g", op, d->dropout_p);
  return NULL;
}

// The device's own tiles for a (zt_ops__attn_target_tiles: 16x16 over 8
// subgroups on dg2's row) when the caller left them at 0; the subgroup
// count to compile at (0: zetile picks, the descriptor unchanged).
static int32_t target_tiles(zt_device_t* device, zt_ops_attention_t* a) {
  const zt_device_info_t* info = zt_device_info(device);
  if (!info) return 0;
  zt_target_info_t row;
  zt_status_t ts = zt_target_info(info->target, &row);
  int32_t num_warps = 0;
  if (!ts) zt_ops__attn_target_tiles(&row, a, &num_warps);
  zt_status_free(ts);
  return num_warps;
}

// A plan by the target's tiles found no export for them (a folder made
// before they were picked): the default tiles, as before.
static bool untarget(zt_status_t* st, int32_t* num_warps, zt_ops_attention_t* a) {
  if (!*st || !*num_warps || zt_status_code(*st) != ZT_STATUS_NOT_FOUND) return false;
  zt_status_free(*st);
  *st = NULL;
  *num_warps = 0;
  a->block_m = a->block_n = 32;
  return true;
}

zt_status_t zt_ops_sdpa_plan(zt_device_t* device, const zt_ops_sdpa_desc_t* desc,
                             zt_ops_plan_t** out_plan) {
  const char* op = "zt_ops_sdpa";
  if (!device || !desc || !out_plan)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_ops_sdpa_plan: device, desc and "
                          "out_plan must not be NULL");
  *out_plan = NULL;
  zt_ops_sdpa_desc_t d = *desc;
  int32_t num_warps = target_tiles(device, &d.attn);
  ZT_RETURN_IF_ERROR(zt_ops__resolve_sdpa(op, &d));
  zt_ops_attention_t* a = &d.attn;
  static const char* const kinds[] = {"nomask", "fmask", "bmask"};
  bool dropout = d.dropout_p > 0.0f;
  bool auto_split = a->split_kv == ZT_OPS_SPLIT_KV_AUTO;
  if (auto_split) a->split_kv = dropout ? 1 : auto_split_kv(device, a);
  char spec[ZT_OPS_SPEC_MAX];
  zt_ops_plan_t* p = NULL;
  for (;;) {
    snprintf(spec, sizeof spec, "attn-%s-d%lld-%dx%d-%s-%s-none-none-dense%s",
             zt_ops__dtype_name(a->dtype), (long long)head_dim_pow2(a->head_dim), a->block_m,
             a->block_n, d.causal ? "causal" : "full", kinds[d.mask_kind], variant(a, dropout));
    zt_status_t st = zt_ops__plan_create_rm16_nw(device, ZT_OPS_SDPA, spec, rm16_attn(a),
                                                 num_warps, NULL, NULL, &p);
    // A split the build does not export: the picked count was only a
    // preference, so the one-pass kernel runs instead.
    if (st && auto_split && a->split_kv > 1 && zt_status_code(st) == ZT_STATUS_NOT_FOUND) {
      zt_status_free(st);
      a->split_kv = 1;
      continue;
    }
    if (untarget(&st, &num_warps, a)) {
      if (auto_split) a->split_kv = dropout ? 1 : auto_split_kv(device, a);
      continue;
    }
    ZT_RETURN_IF_ERROR(st);
    break;
  }
  p->d.sdpa = d;
  zt_status_t s = fill_common(p, a);
  if (!s && d.mask_kind != ZT_OPS_MASK_NONE) {
    // The kernel offsets the mask by b and h, then by row and column.
    s = zt_ops__set_int(p, "stride_mb", d.mask.batch);
    if (!s) s = zt_ops__set_int(p, "stride_mh", d.mask.head);
    if (!s) s = zt_ops__set_int(p, "stride_mm", d.mask.seq);
    if (!s) s = zt_ops__set_int(p, "stride_mn", d.mask.dim);
  }
  if (!s && dropout) {
    s = zt_ops__set_f32(p, "dropout_p", d.dropout_p);
    if (!s) s = zt_ops__set_int(p, "seed", (int64_t)(d.dropout_seed & 0x7FFFFFFFu));
  }
  if (!s && a->split_kv > 1) s = plan_split(device, p, a);
  if (s) {
    zt_ops_plan_release(p);
    return s;
  }
  *out_plan = p;
  return NULL;
}

static const char* const kScoreMods[] = {"none", "alibi", "softcap", "ext"};
static const char* const kMaskMods[] = {"none", "causal", "sliding", "document", "ext"};

typedef struct {
  zt_builder_t *score, *mask;
  int bm, bn;
} mods_in_t;

static zt_status_t splice(zt_ops_plan_t* p, char** text, const char* args_text, void* user) {
  const mods_in_t* m = user;
  zt_ops_splice_t where = {m->bm, m->bn, false, {"B0", "B2", NULL}};
  return zt_ops__splice_mods(p, text, args_text, m->score, m->mask, NULL, &where);
}

// The flex descriptor checked with its defaults filled (block sizes, mask
// broadcast, tiles clamped to the blocks); shared with the backward.
zt_status_t zt_ops__resolve_flex(const char* op, zt_ops_flex_desc_t* d) {
  ZT_RETURN_IF_ERROR(resolve_attn(op, &d->attn));
  zt_ops_attention_t* a = &d->attn;
  if ((unsigned)d->score_mod > ZT_OPS_SCORE_BUILDER)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.score_mod %d is not a "
                          "zt_ops_score_mod_t", op, (int)d->score_mod);
  if ((unsigned)d->mask_mod > ZT_OPS_MASK_MOD_BUILDER)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.mask_mod %d is not a "
                          "zt_ops_mask_mod_t", op, (int)d->mask_mod);
  if ((d->score_mod == ZT_OPS_SCORE_BUILDER && !d->score_builder) ||
      (d->mask_mod == ZT_OPS_MASK_MOD_BUILDER && !d->mask_builder))
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.%s_builder is NULL with a "
                          "builder-made %s mod", op,
                          d->score_mod == ZT_OPS_SCORE_BUILDER && !d->score_builder ? "score"
                                                                                    : "mask",
                          d->score_mod == ZT_OPS_SCORE_BUILDER && !d->score_builder ? "score"
                                                                                    : "mask");
  if (d->score_mod == ZT_OPS_SCORE_SOFTCAP && !(d->softcap > 0.0f && isfinite(d->softcap)))
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.softcap must be > 0 with the "
                          "softcap score mod (got %g)", op, d->softcap);
  if (d->mask_mod == ZT_OPS_MASK_MOD_SLIDING && d->window < 1)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.window must be >= 1 with the "
                          "sliding mask mod (got %d)", op, d->window);
  if (d->mask_mod == ZT_OPS_MASK_MOD_DOCUMENT &&
      (d->document_len < (a->q_len > a->kv_len ? a->q_len : a->kv_len) ||
       d->document_len > (1 << 24)))
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.document_len (%lld) must cover "
                          "q_len and kv_len (and be at most 2^24)", op,
                          (long long)d->document_len);
  if (!d->q_block) d->q_block = 128;
  if (!d->kv_block) d->kv_block = 128;
  if (!d->mask_batch) d->mask_batch = 1;
  if (!d->mask_heads) d->mask_heads = 1;
  if (d->q_block < 1 || d->kv_block < 1 || d->q_block > INT32_MAX || d->kv_block > INT32_MAX)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.q_block and desc.kv_block must "
                          "be >= 1", op);
  // A sparse block holds whole kernel tiles (as zetile.ops does).
  if (a->block_m > d->q_block) a->block_m = (int32_t)d->q_block;
  if (a->block_n > d->kv_block) a->block_n = (int32_t)d->kv_block;
  if (d->q_block % a->block_m || d->kv_block % a->block_n)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: block mask sizes (%lld, %lld) must be "
                          "multiples of the kernel tiles (%d, %d)", op, (long long)d->q_block,
                          (long long)d->kv_block, a->block_m, a->block_n);
  if (d->mask_batch != 1 && d->mask_batch != a->batch)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.mask_batch must be 1 or batch "
                          "(%lld), got %lld", op, (long long)a->batch, (long long)d->mask_batch);
  if (d->mask_heads != 1 && d->mask_heads != a->q_heads)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.mask_heads must be 1 or q_heads "
                          "(%lld), got %lld", op, (long long)a->q_heads,
                          (long long)d->mask_heads);
  int64_t qb = zt_ops__cdiv(a->q_len, d->q_block), kvb = zt_ops__cdiv(a->kv_len, d->kv_block);
  if (d->mask_batch * d->mask_heads * qb * kvb > INT32_MAX)
    return zt_make_status(ZT_STATUS_UNSUPPORTED, "%s: the block mask tables exceed 2^31 entries",
                          op);
  return NULL;
}

zt_status_t zt_ops_flex_plan(zt_device_t* device, const zt_ops_flex_desc_t* desc,
                             zt_ops_plan_t** out_plan) {
  const char* op = "zt_ops_flex";
  if (!device || !desc || !out_plan)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_ops_flex_plan: device, desc and "
                          "out_plan must not be NULL");
  *out_plan = NULL;
  zt_ops_flex_desc_t d = *desc;
  int32_t num_warps = target_tiles(device, &d.attn);
  ZT_RETURN_IF_ERROR(zt_ops__resolve_flex(op, &d));
  zt_ops_attention_t* a = &d.attn;
  int64_t qb = zt_ops__cdiv(a->q_len, d.q_block), kvb = zt_ops__cdiv(a->kv_len, d.kv_block);
  char spec[ZT_OPS_SPEC_MAX];
  zt_ops_plan_t* p = NULL;
  mods_in_t mods = {d.score_mod == ZT_OPS_SCORE_BUILDER ? d.score_builder : NULL,
                    d.mask_mod == ZT_OPS_MASK_MOD_BUILDER ? d.mask_builder : NULL,
                    a->block_m, a->block_n};
  bool ext = mods.score || mods.mask;
  bool auto_split = a->split_kv == ZT_OPS_SPLIT_KV_AUTO;
  if (auto_split) a->split_kv = auto_split_kv(device, a);
  for (;;) {
    // Always the variant with full-block tables: without them the plan
    // passes zero counts, so one export serves both.
    snprintf(spec, sizeof spec, "attn-%s-d%lld-%dx%d-full-nomask-%s-%s-sparsefull%lld%s",
             zt_ops__dtype_name(a->dtype), (long long)head_dim_pow2(a->head_dim), a->block_m,
             a->block_n, kScoreMods[d.score_mod], kMaskMods[d.mask_mod], (long long)d.kv_block,
             variant(a, false));
    zt_status_t st = zt_ops__plan_create_rm16_nw(device, ZT_OPS_FLEX, spec, rm16_attn(a),
                                                 num_warps, ext ? splice : NULL, &mods, &p);
    if (st && auto_split && a->split_kv > 1 && zt_status_code(st) == ZT_STATUS_NOT_FOUND) {
      zt_status_free(st);   // no split export: one pass (see the SDPA plan)
      a->split_kv = 1;
      continue;
    }
    if (untarget(&st, &num_warps, a)) {
      // The default tiles, cut to the block mask's as zt_ops__resolve_flex does.
      if (a->block_m > d.q_block) a->block_m = (int32_t)d.q_block;
      if (a->block_n > d.kv_block) a->block_n = (int32_t)d.kv_block;
      mods.bm = a->block_m;
      mods.bn = a->block_n;
      if (auto_split) a->split_kv = auto_split_kv(device, a);
      continue;
    }
    ZT_RETURN_IF_ERROR(st);
    break;
  }
  d.score_builder = d.mask_builder = d.score_grad_builder = NULL;  // the caller owns them
  p->d.flex = d;
  zt_status_t s = fill_common(p, a);
  int64_t mh = d.mask_heads, mb = d.mask_batch;
  if (!s) s = zt_ops__set_int(p, "sb_b", mb == 1 ? 0 : mh * qb);
  if (!s) s = zt_ops__set_int(p, "sb_h", mh == 1 ? 0 : qb);
  if (!s) s = zt_ops__set_int(p, "sb_m", 1);
  if (!s) s = zt_ops__set_int(p, "si_b", mb == 1 ? 0 : mh * qb * kvb);
  if (!s) s = zt_ops__set_int(p, "si_h", mh == 1 ? 0 : qb * kvb);
  if (!s) s = zt_ops__set_int(p, "si_m", kvb);
  if (!s) s = zt_ops__set_int(p, "Q_SPARSE", d.q_block);
  if (!s && !d.has_full_blocks) {
    // Zero full blocks per row: the index table is never read.
    size_t bytes = (size_t)(mb * mh * qb) * sizeof(int32_t);
    int32_t* zeros = calloc((size_t)(mb * mh * qb), sizeof(int32_t));
    s = zeros ? zt_buffer_alloc(device, bytes, &p->zero)
              : zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "%s: zero block counts", op);
    if (!s) s = zt_buffer_write(p->zero, 0, zeros, bytes);
    free(zeros);
    if (!s) s = zt_ops__set_buffer(p, "full_num", p->zero);
    if (!s) s = zt_ops__set_buffer(p, "full_idx", p->zero);
  }
  if (!s && (d.score_mod || d.mask_mod)) {
    // The mods' parameters (stdlib-kernels/mods.py reads them from B3).
    float params[4] = {d.softcap, (float)d.window, (float)d.document_len, 0.0f};
    s = zt_buffer_alloc(device, sizeof params, &p->params);
    if (!s) s = zt_buffer_write(p->params, 0, params, sizeof params);
    if (!s) s = zt_ops__set_buffer(p, "B3", p->params);
  }
  if (!s && a->split_kv > 1) s = plan_split(device, p, a);
  if (s) {
    zt_ops_plan_release(p);
    return s;
  }
  *out_plan = p;
  return NULL;
}

// On host-memory devices the block tables are checked before the launch:
// an index outside [0, kv_blocks) would make the kernel read outside k and v.
static zt_status_t check_tables(const zt_ops_plan_t* p, const zt_buffer_t* num,
                                const zt_buffer_t* idx, const char* what) {
  const zt_ops_flex_desc_t* d = &p->d.flex;
  if (!zt_device_info(p->device)->host_memory) return NULL;
  int64_t qb = zt_ops__cdiv(d->attn.q_len, d->q_block);
  int64_t kvb = zt_ops__cdiv(d->attn.kv_len, d->kv_block);
  const int32_t* n = (const int32_t*)(uintptr_t)zt_buffer_address(num);
  const int32_t* ix = (const int32_t*)(uintptr_t)zt_buffer_address(idx);
  for (int64_t r = 0; r < d->mask_batch * d->mask_heads * qb; ++r) {
    if (n[r] < 0 || n[r] > kvb)
      return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_ops_attention_run: %s_num_blocks[%lld] "
                            "= %d is outside [0, %lld]", what, (long long)r, n[r], (long long)kvb);
    for (int32_t j = 0; j < n[r]; ++j)
      if (ix[r * kvb + j] < 0 || ix[r * kvb + j] >= kvb)
        return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_ops_attention_run: %s_indices"
                              "[%lld, %d] = %d is outside [0, %lld)", what, (long long)r, j,
                              ix[r * kvb + j], (long long)kvb);
  }
  return NULL;
}

static zt_status_t table(zt_ops_plan_t* p, const char* what, const char* arg,
                         const zt_buffer_t* b, int64_t entries) {
  int64_t dims[1] = {entries}, st[1] = {1};
  ZT_RETURN_IF_ERROR(zt_ops__check_view("zt_ops_attention_run", what, b, 4, 1, dims, st));
  return zt_ops__set_buffer(p, arg, b);
}

zt_status_t zt_ops__view4(const char* op, const char* what, const zt_buffer_t* b, size_t eb,
                          int64_t d0, int64_t d1, int64_t d2, int64_t d3, zt_ops_strides4_t s) {
  int64_t dims[4] = {d0, d1, d2, d3}, st[4] = {s.batch, s.head, s.seq, s.dim};
  return zt_ops__check_view(op, what, b, eb, 4, dims, st);
}

static zt_status_t view4(const char* what, const zt_buffer_t* b, size_t eb, int64_t d0,
                         int64_t d1, int64_t d2, int64_t d3, zt_ops_strides4_t s) {
  return zt_ops__view4("zt_ops_attention_run", what, b, eb, d0, d1, d2, d3, s);
}

// The attention launch, then (split_kv > 1) the combine into out and lse;
// the device runs them in order.
static zt_status_t launch_attention(zt_ops_plan_t* p, const zt_buffer_t* out,
                                    const zt_buffer_t* lse) {
  ZT_RETURN_IF_ERROR(zt_ops__launch(p));
  if (!p->combine) return NULL;
  ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p->combine, "O", out));
  ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p->combine, "LSE", lse));
  return zt_ops__launch(p->combine);
}

zt_status_t zt_ops_attention_run(zt_ops_plan_t* p, const zt_ops_attention_buffers_t* bufs) {
  if (!p || !bufs)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_ops_attention_run: plan and buffers "
                          "must not be NULL");
  if (p->family != ZT_OPS_SDPA && p->family != ZT_OPS_FLEX)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_ops_attention_run: plan %s is not an "
                          "attention plan", p->spec);
  const zt_ops_attention_t* a = p->family == ZT_OPS_SDPA ? &p->d.sdpa.attn : &p->d.flex.attn;
  size_t eb = zt_ops__dtype_bytes(a->dtype);
  int64_t B = a->batch, Hq = a->q_heads, Hk = a->kv_heads, L = a->q_len, S = a->kv_len,
          E = a->head_dim;
  ZT_RETURN_IF_ERROR(view4("q", bufs->q, eb, B, Hq, L, E, a->q));
  ZT_RETURN_IF_ERROR(view4("k", bufs->k, eb, B, Hk, S, E, a->k));
  ZT_RETURN_IF_ERROR(view4("v", bufs->v, eb, B, Hk, S, E, a->v));
  ZT_RETURN_IF_ERROR(view4("out", bufs->out, eb, B, Hq, L, E, a->out));
  const char* const names[4] = {"q", "k", "v", "out"};
  const zt_buffer_t* const al[4] = {bufs->q, bufs->k, bufs->v, bufs->out};
  ZT_RETURN_IF_ERROR(zt_ops__check_aligned16("zt_ops_attention_run", p, 4, names, al));
  ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, "Q", bufs->q));
  ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, "K", bufs->k));
  ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, "V", bufs->v));
  ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, "O", bufs->out));
  const zt_buffer_t* lse = bufs->lse;
  if (lse) {
    ZT_RETURN_IF_ERROR(table(p, "lse", "LSE", lse, B * Hq * L));
  } else {
    if (!p->lse) ZT_RETURN_IF_ERROR(zt_buffer_alloc(p->device, (size_t)(B * Hq * L) * 4, &p->lse));
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, "LSE", p->lse));
    lse = p->lse;
  }
  if (p->family == ZT_OPS_SDPA) {
    const zt_ops_sdpa_desc_t* d = &p->d.sdpa;
    if (d->mask_kind != ZT_OPS_MASK_NONE) {
      ZT_RETURN_IF_ERROR(view4("mask", bufs->mask, d->mask_kind == ZT_OPS_MASK_BOOL ? 1 : eb, B,
                               Hq, L, S, d->mask));
      ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, "mask_ptr", bufs->mask));
    }
    return launch_attention(p, bufs->out, lse);
  }
  const zt_ops_flex_desc_t* d = &p->d.flex;
  int64_t rows = d->mask_batch * d->mask_heads * zt_ops__cdiv(L, d->q_block);
  int64_t cells = rows * zt_ops__cdiv(S, d->kv_block);
  ZT_RETURN_IF_ERROR(table(p, "kv_num_blocks", "kv_num", bufs->kv_num_blocks, rows));
  ZT_RETURN_IF_ERROR(table(p, "kv_indices", "kv_idx", bufs->kv_indices, cells));
  ZT_RETURN_IF_ERROR(check_tables(p, bufs->kv_num_blocks, bufs->kv_indices, "kv"));
  if (d->has_full_blocks) {
    ZT_RETURN_IF_ERROR(table(p, "full_kv_num_blocks", "full_num", bufs->full_kv_num_blocks, rows));
    ZT_RETURN_IF_ERROR(table(p, "full_kv_indices", "full_idx", bufs->full_kv_indices, cells));
    ZT_RETURN_IF_ERROR(check_tables(p, bufs->full_kv_num_blocks, bufs->full_kv_indices, "full_kv"));
  }
  // Builder-made mods get their tensor, or the parameter block when none is
  // given (a valid address the mod does not read).
  if (d->score_mod == ZT_OPS_SCORE_BUILDER)
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, "B0", bufs->score_tensor ? bufs->score_tensor
                                                                      : p->params));
  if (d->mask_mod == ZT_OPS_MASK_MOD_BUILDER)
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, "B2", bufs->mask_tensor ? bufs->mask_tensor
                                                                     : p->params));
  if (d->score_mod == ZT_OPS_SCORE_ALIBI) {
    int64_t dims[1] = {Hq}, st[1] = {1};
    ZT_RETURN_IF_ERROR(zt_ops__check_view("zt_ops_attention_run", "score_tensor (ALiBi slopes)",
                                          bufs->score_tensor, 4, 1, dims, st));
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, "B0", bufs->score_tensor));
  }
  if (d->mask_mod == ZT_OPS_MASK_MOD_DOCUMENT) {
    int64_t dims[1] = {d->document_len}, st[1] = {1};
    ZT_RETURN_IF_ERROR(zt_ops__check_view("zt_ops_attention_run", "mask_tensor (document ids)",
                                          bufs->mask_tensor, 4, 1, dims, st));
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, "B2", bufs->mask_tensor));
  }
  return launch_attention(p, bufs->out, lse);
}
