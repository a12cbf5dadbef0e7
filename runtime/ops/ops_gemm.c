// zetile ops: GEMM (stdlib-kernels/gemm.py's gemm_kernel) from C.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ops/ops_internal.h"

static const char* const kActs[] = {"none", "relu", "gelu", "gelu_tanh", "silu"};

void zt_ops_gemm_desc_init(zt_ops_gemm_desc_t* d) {
  if (!d) return;
  memset(d, 0, sizeof *d);
  d->dtype = ZT_F32;
  d->batch = 1;
  d->alpha = 1.0f;
}

static bool unset(const zt_ops_strides3_t* s) { return !s->batch && !s->row && !s->col; }

static bool pow2_tile(int32_t t) { return t >= 16 && t <= 256 && !(t & (t - 1)); }

static bool has_epilogue(const zt_ops_gemm_desc_t* d) {
  return d->has_bias || d->has_residual || d->has_c || d->activation != ZT_OPS_ACT_NONE ||
         d->alpha != 1.0f;
}

// Element sizes of A, B and out: int8 GEMMs read bytes and write int32,
// weight-only ones read bytes for B.
static size_t a_bytes(const zt_ops_gemm_desc_t* d) {
  return d->dtype == ZT_I8 ? 1 : zt_ops__dtype_bytes(d->dtype);
}
static size_t b_bytes(const zt_ops_gemm_desc_t* d) {
  return d->dtype == ZT_I8 || d->weight_bits ? 1 : zt_ops__dtype_bytes(d->dtype);
}
static size_t out_bytes(const zt_ops_gemm_desc_t* d) {
  return d->dtype == ZT_I8 ? 4 : zt_ops__dtype_bytes(d->dtype);
}
// B's stored rows: int4 weights pack two K rows per byte row.
static int64_t b_rows(const zt_ops_gemm_desc_t* d) {
  return d->weight_bits == 4 ? d->k / 2 : d->k;
}

// Weight-only quantization's fields (weight_bits, group_size, scales), checked.
static zt_status_t resolve_quant(const char* op, zt_ops_gemm_desc_t* d) {
  if (!d->weight_bits) return NULL;
  if (d->weight_bits != 4 && d->weight_bits != 8)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.weight_bits must be 0, 4 or 8 "
                          "(got %d)", op, d->weight_bits);
  if (d->dtype == ZT_I8)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: weight-only quantization takes "
                          "ZT_F16, ZT_BF16 or ZT_F32 activations, not ZT_I8", op);
  if (d->group_size < 1 || d->k % d->group_size)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.group_size (%lld) must be >= 1 "
                          "and divide desc.k (%lld)", op, (long long)d->group_size,
                          (long long)d->k);
  if (d->group_size % d->block_k && d->block_k % d->group_size)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.group_size (%lld) and block_k "
                          "(%d) must divide one another", op, (long long)d->group_size,
                          d->block_k);
  if (d->weight_bits == 4 && d->k % 2)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: int4 weights need an even desc.k "
                          "(got %lld)", op, (long long)d->k);
  if (!d->scales_row && !d->scales_col) {
    d->scales_row = d->n;
    d->scales_col = 1;
  }
  int64_t dims[2] = {d->k / d->group_size, d->n}, st[2] = {d->scales_row, d->scales_col};
  return zt_ops__check_strides(op, "scales", 2, dims, st);
}

// The descriptor with defaults filled in (strides, tiles), checked.
static zt_status_t resolve(const zt_ops_gemm_desc_t* in, zt_ops_gemm_desc_t* d) {
  const char* op = "zt_ops_gemm";
  *d = *in;
  if (!zt_ops__dtype_name(d->dtype) && d->dtype != ZT_I8)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.dtype must be ZT_F32, ZT_F16, "
                          "ZT_BF16 or ZT_I8 (got kind %d)", op, (int)d->dtype);
  if (d->dtype == ZT_I8 && has_epilogue(d))
    return zt_make_status(ZT_STATUS_UNSUPPORTED, "%s: int8 GEMMs store the exact int32 "
                          "accumulator: no activation, alpha, bias, residual or c", op);
  const struct { const char* n; int64_t v; } dims[] = {
      {"batch", d->batch}, {"m", d->m}, {"n", d->n}, {"k", d->k}};
  for (int i = 0; i < 4; ++i)
    if (dims[i].v < 1 || dims[i].v > INT32_MAX)
      return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.%s must be in [1, 2^31), got "
                            "%lld", op, dims[i].n, (long long)dims[i].v);
  if ((unsigned)d->activation > ZT_OPS_ACT_SILU)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.activation %d is not a "
                          "zt_ops_activation_t", op, (int)d->activation);
  if (!isfinite(d->alpha) || !isfinite(d->beta))
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.alpha and desc.beta must be "
                          "finite (alpha=%g, beta=%g)", op, d->alpha, d->beta);
  if (!d->block_m) d->block_m = 64;
  if (!d->block_n) d->block_n = 64;
  if (!d->block_k) d->block_k = 32;
  if (!pow2_tile(d->block_m) || !pow2_tile(d->block_n) || !pow2_tile(d->block_k))
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.block_m/n/k must be powers of two "
                          "in [16, 256] (got %d, %d, %d)", op, d->block_m, d->block_n, d->block_k);
  ZT_RETURN_IF_ERROR(resolve_quant(op, d));
  int64_t M = d->m, N = d->n, K = d->k, KB = b_rows(d);
  if (unset(&d->a))
    d->a = d->trans_a ? (zt_ops_strides3_t){M * K, 1, M} : (zt_ops_strides3_t){M * K, K, 1};
  if (unset(&d->b))
    d->b = d->trans_b ? (zt_ops_strides3_t){KB * N, 1, KB} : (zt_ops_strides3_t){KB * N, N, 1};
  zt_ops_strides3_t mn = {M * N, N, 1};
  if (unset(&d->out)) d->out = mn;
  if (d->beta == 0.0f) d->has_c = false;  // torch's addmm: beta = 0 ignores C
  if (d->has_bias && unset(&d->bias)) d->bias = mn;
  if (d->has_residual && unset(&d->residual)) d->residual = mn;
  if (d->has_c && unset(&d->c)) d->c = mn;
  int64_t da[3] = {d->batch, M, K}, db[3] = {d->batch, KB, N}, dm[3] = {d->batch, M, N};
  struct { const char* n; const int64_t* dims; const zt_ops_strides3_t* s; bool on; } v[] = {
      {"a", da, &d->a, true},           {"b", db, &d->b, true},
      {"out", dm, &d->out, true},       {"bias", dm, &d->bias, d->has_bias},
      {"residual", dm, &d->residual, d->has_residual}, {"c", dm, &d->c, d->has_c}};
  for (size_t i = 0; i < sizeof v / sizeof v[0]; ++i) {
    if (!v[i].on) continue;
    int64_t st[3] = {v[i].s->batch, v[i].s->row, v[i].s->col};
    ZT_RETURN_IF_ERROR(zt_ops__check_strides(op, v[i].n, 3, v[i].dims, st));
  }
  if ((d->m > 1 && d->out.row == 0) || (d->n > 1 && d->out.col == 0) ||
      (d->batch > 1 && d->out.batch == 0))
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: desc.out has a zero stride: every "
                          "output element needs its own address", op);
  return NULL;
}

#define S3(p, pre, st)                                        \
  do {                                                        \
    ZT_RETURN_IF_ERROR(zt_ops__set_int(p, pre "b", (st).batch)); \
    ZT_RETURN_IF_ERROR(zt_ops__set_int(p, pre "m", (st).row));   \
    ZT_RETURN_IF_ERROR(zt_ops__set_int(p, pre "n", (st).col));   \
  } while (0)

// The row-major variant's conditions (export.py "-rm16"): unit column
// strides and row strides that are positive multiples of 16.
static bool row_major16(const zt_ops_gemm_desc_t* d) {
  const zt_ops_strides3_t* s[3] = {&d->a, &d->b, &d->out};
  for (int i = 0; i < 3; ++i)
    if (s[i]->col != 1 || s[i]->row <= 0 || s[i]->row % 16) return false;
  return true;
}

static zt_status_t fill(zt_ops_plan_t* p, bool epi, bool rm16) {
  const zt_ops_gemm_desc_t* d = &p->d.gemm;
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "M", d->m));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "N", d->n));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "K", d->k));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "s_ab", d->a.batch));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "s_am", d->a.row));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "s_bb", d->b.batch));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "s_bk", d->b.row));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "s_ob", d->out.batch));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "s_om", d->out.row));
  if (!rm16) {  // the row-major variant has its unit column strides compiled in
    ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "s_ak", d->a.col));
    ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "s_bn", d->b.col));
    ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "s_on", d->out.col));
  }
  zt_ops_strides3_t zero = {0, 0, 0};
  // Absent epilogue operands read the plan's one zero element (stride 0):
  // one specialization serves every combination of them.
  S3(p, "s_x", d->has_bias ? d->bias : zero);
  S3(p, "s_r", d->has_residual ? d->residual : zero);
  S3(p, "s_c", d->has_c ? d->c : zero);
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "s_sg", d->weight_bits ? d->scales_row : 0));
  ZT_RETURN_IF_ERROR(zt_ops__set_int(p, "s_sn", d->weight_bits ? d->scales_col : 0));
  ZT_RETURN_IF_ERROR(zt_ops__set_f32(p, "alpha", d->alpha));
  ZT_RETURN_IF_ERROR(zt_ops__set_f32(p, "beta", d->has_c ? d->beta : 0.0));
  if (epi) {
    size_t eb = zt_ops__dtype_bytes(d->dtype);
    ZT_RETURN_IF_ERROR(zt_buffer_alloc(p->device, eb, &p->zero));
    const uint32_t z = 0;
    ZT_RETURN_IF_ERROR(zt_buffer_write(p->zero, 0, &z, eb));
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, "BIAS", p->zero));
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, "RES", p->zero));
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, "C_IN", p->zero));
  }
  int64_t tiles = zt_ops__cdiv(d->m, d->block_m) * zt_ops__cdiv(d->n, d->block_n);
  if (tiles > UINT32_MAX || d->batch > 65535)
    return zt_make_status(ZT_STATUS_UNSUPPORTED, "zt_ops_gemm: grid %lld x %lld is too large",
                          (long long)tiles, (long long)d->batch);
  p->grid[0] = (uint32_t)tiles;
  p->grid[1] = (uint32_t)d->batch;
  return NULL;
}

// One plan of desc: by_target, the target's own tiles where it has them
// (ops_gemm_tiles.c; *chose says so), else the descriptor's or the default.
static zt_status_t plan(zt_device_t* device, const zt_ops_gemm_desc_t* desc, bool by_target,
                        bool* chose, zt_ops_plan_t** out_plan) {
  zt_ops_gemm_desc_t in = *desc;
  int32_t num_warps = 0;
  *chose = false;
  if (by_target) {
    zt_target_info_t row;
    zt_status_t ts = zt_target_info(zt_device_info(device)->target, &row);
    if (!ts) *chose = zt_ops__gemm_target_tiles(&row, &in, &num_warps);
    zt_status_free(ts);
  }
  zt_ops_gemm_desc_t d;
  ZT_RETURN_IF_ERROR(resolve(&in, &d));
  bool epi = has_epilogue(&d);
  bool rm16 = row_major16(&d);
  char dt[48], spec[ZT_OPS_SPEC_MAX];
  if (d.dtype == ZT_I8)
    snprintf(dt, sizeof dt, "i8");
  else if (d.weight_bits)  // e.g. f16w4g128
    snprintf(dt, sizeof dt, "%sw%dg%lld", zt_ops__dtype_name(d.dtype), d.weight_bits,
             (long long)d.group_size);
  else
    snprintf(dt, sizeof dt, "%s", zt_ops__dtype_name(d.dtype));
  snprintf(spec, sizeof spec, "gemm-%s-%s-%s-%dx%dx%d%s", dt, kActs[d.activation],
           epi ? "epi" : "plain", d.block_m, d.block_n, d.block_k, rm16 ? "-rm16" : "");
  zt_ops_plan_t* p = NULL;
  zt_status_t s = zt_ops__plan_create_nw(device, ZT_OPS_GEMM, spec, num_warps, NULL, NULL, &p);
  if (s && rm16 && zt_status_code(s) == ZT_STATUS_NOT_FOUND) {
    // A folder without the row-major variant: the generic one serves too.
    zt_status_free(s);
    rm16 = false;
    spec[strlen(spec) - strlen("-rm16")] = 0;
    s = zt_ops__plan_create_nw(device, ZT_OPS_GEMM, spec, num_warps, NULL, NULL, &p);
  }
  if (s) return s;
  p->d.gemm = d;
  p->aligned16 = rm16;
  s = fill(p, epi, rm16);
  if (s) {
    zt_ops_plan_release(p);
    return s;
  }
  *out_plan = p;
  return NULL;
}

zt_status_t zt_ops_gemm_plan(zt_device_t* device, const zt_ops_gemm_desc_t* desc,
                             zt_ops_plan_t** out_plan) {
  if (!device || !desc || !out_plan)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_ops_gemm_plan: device, desc and "
                          "out_plan must not be NULL");
  *out_plan = NULL;
  bool chose;
  zt_status_t s = plan(device, desc, true, &chose, out_plan);
  zt_status_code_t code = zt_status_code(s);
  if (s && chose && (code == ZT_STATUS_NOT_FOUND || code == ZT_STATUS_INVALID_ARGUMENT)) {
    // The target's tiles not exported (a folder of the default set), or
    // weight-only groups that do not divide their K step: the default
    // tiles, which spill there but run (a caller's error shows again).
    zt_status_free(s);
    s = plan(device, desc, false, &chose, out_plan);
  }
  return s;
}

static zt_status_t view3(const char* what, const zt_buffer_t* b, size_t eb, int64_t d0,
                         int64_t d1, int64_t d2, zt_ops_strides3_t s) {
  int64_t dims[3] = {d0, d1, d2}, st[3] = {s.batch, s.row, s.col};
  return zt_ops__check_view("zt_ops_gemm_run", what, b, eb, 3, dims, st);
}

zt_status_t zt_ops_gemm_run(zt_ops_plan_t* p, const zt_ops_gemm_buffers_t* bufs) {
  if (!p || !bufs)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_ops_gemm_run: plan and buffers must "
                          "not be NULL");
  if (p->family != ZT_OPS_GEMM)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_ops_gemm_run: plan %s is not a GEMM "
                          "plan", p->spec);
  const zt_ops_gemm_desc_t* d = &p->d.gemm;
  size_t eb = zt_ops__dtype_bytes(d->dtype);
  ZT_RETURN_IF_ERROR(view3("a", bufs->a, a_bytes(d), d->batch, d->m, d->k, d->a));
  ZT_RETURN_IF_ERROR(view3("b", bufs->b, b_bytes(d), d->batch, b_rows(d), d->n, d->b));
  ZT_RETURN_IF_ERROR(view3("out", bufs->out, out_bytes(d), d->batch, d->m, d->n, d->out));
  if (d->weight_bits) {
    int64_t dims[2] = {d->k / d->group_size, d->n}, st[2] = {d->scales_row, d->scales_col};
    ZT_RETURN_IF_ERROR(zt_ops__check_view("zt_ops_gemm_run", "scales", bufs->scales, eb, 2, dims,
                                          st));
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, "SCALES", bufs->scales));
  }
  if (p->aligned16) {
    // The row-major variant was compiled for 16-byte aligned operands.
    const struct { const char* n; const zt_buffer_t* b; } al[] = {
        {"a", bufs->a}, {"b", bufs->b}, {"out", bufs->out}};
    for (int i = 0; i < 3; ++i)
      if (zt_buffer_address(al[i].b) % 16)
        return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_ops_gemm_run: buffer '%s' is not "
                              "16-byte aligned, which plan %s was compiled for", al[i].n,
                              p->spec);
  }
  ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, "A", bufs->a));
  ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, "B", bufs->b));
  ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, "OUT", bufs->out));
  struct { const char* n; const char* arg; zt_buffer_t* b; bool on; zt_ops_strides3_t s; } e[] = {
      {"bias", "BIAS", bufs->bias, d->has_bias, d->bias},
      {"residual", "RES", bufs->residual, d->has_residual, d->residual},
      {"c", "C_IN", bufs->c, d->has_c, d->c}};
  for (int i = 0; i < 3; ++i) {
    if (!e[i].on) continue;
    ZT_RETURN_IF_ERROR(view3(e[i].n, e[i].b, eb, d->batch, d->m, d->n, e[i].s));
    ZT_RETURN_IF_ERROR(zt_ops__set_buffer(p, e[i].arg, e[i].b));
  }
  return zt_ops__launch(p);
}
