// include/zetile/ops.h's SDPA backward without Python: the forward planned
// and run from C (its out and lse), then zt_ops_sdpa_bwd_plan/run, and dq,
// dk, dv compared with a double-precision reference computed here from the
// same (dtype-rounded) inputs. Cases: GQA, Lq != Lk, head dims short of the
// exported power of two, causal, float and boolean masks (broadcast, and a
// fully masked row: zero gradients), lse in log2 units, a strided gradient,
// dropout (the mask read back from the forward, the backward must
// regenerate the same one), and misuse. Also the forward's decode path
// with dropout (split_kv > 1), which the backward's dropout relies on being
// the one-pass mask. ZT_TEST_OPS_DEVICE runs it on
// another device. Skips (loudly) when libzetile_compiler is not built.
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ops_test_util.h"
#include "zetile/ops.h"
#include "zetile/zetile.h"

static char dir[256];
static zt_device_t* dev;

// One private cache for the run (an unchecked fixture: the forked tests
// share the specializations they have in common), a device per test.
static void make_cache(void) { ot_cache_make(dir, sizeof dir, "/tmp/zt-ops-bwd-XXXXXX"); }
static void setup(void) { ot_device_open(&dev); }
static void teardown(void) { zt_device_release(dev); }
static void remove_cache(void) { ot_cache_remove(dir); }

// Buffers on this test's device (the dtype helpers: ops_test_util.h).
static zt_buffer_t* upload(zt_scalar_kind_t k, float* v, size_t n) {
  return ot_upload(dev, k, v, n);
}

// ------------------------------------------------------------ reference
typedef struct {
  int64_t B, Hq, Hk, L, S, E;
  double scale;
  bool causal;
  const float* fmask;          // (B, Hq, L, S) additive, or NULL
  const int8_t* bmask;         // (B, Hq, L, S) 1 = attend, or NULL
  const float* keep;           // (B, Hq, L, S) dropout factor (0 or 1/(1-p)), or NULL
  const double* dlse;          // (B, Hq, L) gradient of the natural lse, or NULL
} ref_t;

// out, lse (natural), dq, dk, dv of SDPA in double from contiguous q, k,
// v, dout (all (.., seq, E)). P = softmax(scale q k^T + mask); with
// dropout factors c: out = (P c) v, dv = (P c)^T do, dP = c (do v^T),
// dS = P (dP - rowsum(P dP)), dq = scale dS k, dk = scale dS^T q; a gradient
// g of the lse adds P g to dS (d lse / d s = P): rowsum(P dP) - g.
static void reference(const ref_t* r, const float* q, const float* k, const float* v,
                      const float* dout, double* out, double* lse, double* dq, double* dk,
                      double* dv) {
  int64_t B = r->B, Hq = r->Hq, L = r->L, S = r->S, E = r->E, G = r->Hq / r->Hk;
  memset(dk, 0, sizeof(double) * (size_t)(B * r->Hk * S * E));
  memset(dv, 0, sizeof(double) * (size_t)(B * r->Hk * S * E));
  double* p = malloc(sizeof(double) * (size_t)S);
  double* dp = malloc(sizeof(double) * (size_t)S);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      int64_t hk = h / G;
      const float* Q = q + (b * Hq + h) * L * E;
      const float* K = k + (b * r->Hk + hk) * S * E;
      const float* V = v + (b * r->Hk + hk) * S * E;
      const float* DO = dout + (b * Hq + h) * L * E;
      for (int64_t i = 0; i < L; ++i) {
        size_t row = (size_t)(((b * Hq + h) * L + i) * S);
        double mx = -INFINITY;
        for (int64_t j = 0; j < S; ++j) {
          double s = 0;
          for (int64_t e = 0; e < E; ++e) s += (double)Q[i * E + e] * K[j * E + e];
          s *= r->scale;
          if (r->fmask) s += r->fmask[row + j];
          if ((r->bmask && !r->bmask[row + j]) || (r->causal && j > i)) s = -INFINITY;
          p[j] = s;
          if (s > mx) mx = s;
        }
        double sum = 0;
        for (int64_t j = 0; j < S; ++j) sum += (p[j] = mx == -INFINITY ? 0 : exp(p[j] - mx));
        size_t oi = (size_t)((b * Hq + h) * L + i);
        lse[oi] = sum > 0 ? mx + log(sum) : -INFINITY;
        for (int64_t j = 0; j < S; ++j) p[j] = sum > 0 ? p[j] / sum : 0;
        double delta = 0;
        for (int64_t j = 0; j < S; ++j) {
          double c = r->keep ? r->keep[row + j] : 1.0, d = 0;
          for (int64_t e = 0; e < E; ++e) d += (double)DO[i * E + e] * V[j * E + e];
          dp[j] = d * c;
          delta += p[j] * dp[j];
        }
        if (r->dlse) delta -= r->dlse[oi];
        for (int64_t e = 0; e < E; ++e) {
          double o = 0, g = 0;
          for (int64_t j = 0; j < S; ++j) {
            double c = r->keep ? r->keep[row + j] : 1.0;
            o += p[j] * c * V[j * E + e];
            g += p[j] * (dp[j] - delta) * K[j * E + e];
          }
          out[oi * E + e] = o;
          dq[oi * E + e] = g * r->scale;
        }
        for (int64_t j = 0; j < S; ++j) {
          double c = r->keep ? r->keep[row + j] : 1.0, ds = p[j] * (dp[j] - delta) * r->scale;
          size_t ko = (size_t)(((b * r->Hk + hk) * S + j) * E);
          for (int64_t e = 0; e < E; ++e) {
            dv[ko + e] += p[j] * c * DO[i * E + e];
            dk[ko + e] += ds * Q[i * E + e];
          }
        }
      }
    }
  free(p);
  free(dp);
}

static double tolerance(zt_scalar_kind_t k) {
  return k == ZT_F32 ? 2e-4 : k == ZT_F16 ? 2e-2 : 8e-2;
}

// ---------------------------------------------------------------- cases
typedef struct {
  zt_scalar_kind_t dtype;
  int64_t B, Hq, Hk, L, S, E;
  bool causal, lse_log2, strided_dq;
  zt_ops_mask_kind_t mask;
  bool dead_row;          // bool mask: query row 3 attends to nothing
  const char* spec;       // the backward plan's expected name
  bool grad_lse;          // a gradient of the lse (in its units) is given
} bwd_case_t;

// The forward from C, then the backward, against the reference.
static void run_case(const bwd_case_t* c, const char* what) {
  int64_t B = c->B, Hq = c->Hq, Hk = c->Hk, L = c->L, S = c->S, E = c->E;
  size_t nq = (size_t)(B * Hq * L * E), nk = (size_t)(B * Hk * S * E),
         nm = (size_t)(B * Hq * L * S), nr = (size_t)(B * Hq * L);
  float *q = ot_randv(nq, 11, 1.0f), *k = ot_randv(nk, 12, 1.0f), *v = ot_randv(nk, 13, 1.0f),
        *dout = ot_randv(nq, 14, 1.0f);
  zt_buffer_t *bq = upload(c->dtype, q, nq), *bk = upload(c->dtype, k, nk),
              *bv = upload(c->dtype, v, nk), *bdo = upload(c->dtype, dout, nq);
  zt_buffer_t *bo = upload(c->dtype, NULL, nq), *blse = NULL, *bmask = NULL;
  OK(zt_buffer_alloc(dev, nr * 4, &blse));
  float* fmask = NULL;
  int8_t* bm = NULL;
  zt_ops_sdpa_desc_t fwd = {.attn = {.dtype = c->dtype, .batch = B, .q_heads = Hq,
                                     .kv_heads = Hk, .q_len = L, .kv_len = S, .head_dim = E,
                                     .lse_log2 = c->lse_log2},
                            .causal = c->causal, .mask_kind = c->mask};
  if (c->mask == ZT_OPS_MASK_ADDITIVE) {
    // One (L, S) mask broadcast over batch and heads (strides 0).
    float* m = ot_randv((size_t)(L * S), 15, 2.0f);
    bmask = upload(c->dtype, m, (size_t)(L * S));
    fmask = malloc(nm * sizeof(float));
    for (size_t i = 0; i < nm; ++i) fmask[i] = m[i % (size_t)(L * S)];
    free(m);
    fwd.mask = (zt_ops_strides4_t){0, 0, S, 1};
  } else if (c->mask == ZT_OPS_MASK_BOOL) {
    bm = malloc(nm);
    unsigned seed = 16;
    for (size_t i = 0; i < nm; ++i) {
      size_t row = (i / (size_t)S) % (size_t)L;
      bm[i] = (c->dead_row && row == 3) ? 0 : ot_frand(&seed) > -0.4f;
    }
    OK(zt_buffer_alloc(dev, nm, &bmask));
    OK(zt_buffer_write(bmask, 0, bm, nm));
  }
  zt_ops_plan_t* fp = NULL;
  OK(zt_ops_sdpa_plan(dev, &fwd, &fp));
  zt_ops_attention_buffers_t fb = {.q = bq, .k = bk, .v = bv, .out = bo, .lse = blse,
                                   .mask = bmask};
  OK(zt_ops_attention_run(fp, &fb));

  zt_ops_sdpa_bwd_desc_t d = {.fwd = fwd, .has_grad_lse = c->grad_lse};
  float* glse = c->grad_lse ? ot_randv(nr, 17, 1.0f) : NULL;
  zt_buffer_t* bglse = NULL;
  double* dlse = NULL;
  if (glse) {
    OK(zt_buffer_alloc(dev, nr * 4, &bglse));
    OK(zt_buffer_write(bglse, 0, glse, nr * 4));
    // Per log2 unit when the lse is log2: per natural unit, / ln 2.
    dlse = malloc(nr * sizeof(double));
    for (size_t i = 0; i < nr; ++i) dlse[i] = c->lse_log2 ? glse[i] / log(2.0) : glse[i];
  }
  int64_t pad = c->strided_dq ? E + 8 : E;  // grad_q rows padded: a strided gradient
  if (c->strided_dq) d.grad_q = (zt_ops_strides4_t){Hq * L * pad, L * pad, pad, 1};
  zt_buffer_t *bdq = upload(c->dtype, NULL, (size_t)(B * Hq * L * pad)),
              *bdk = upload(c->dtype, NULL, nk), *bdv = upload(c->dtype, NULL, nk);
  zt_ops_plan_t* p = NULL;
  OK(zt_ops_sdpa_bwd_plan(dev, &d, &p));
  ck_assert_str_eq(zt_ops_plan_spec(p), c->spec);
  zt_ops_sdpa_bwd_buffers_t b = {.q = bq, .k = bk, .v = bv, .out = bo, .lse = blse,
                                 .grad_out = bdo, .mask = bmask, .grad_q = bdq, .grad_k = bdk,
                                 .grad_v = bdv, .grad_lse = bglse};
  OK(zt_ops_sdpa_bwd_run(p, &b));
  OK(zt_device_synchronize(dev));

  ref_t r = {B, Hq, Hk, L, S, E, 1.0 / sqrt((double)E), c->causal, fmask, bm, NULL, dlse};
  double *out = malloc(nq * 8), *lse = malloc(nr * 8), *dq = malloc(nq * 8),
         *dk = malloc(nk * 8), *dv = malloc(nk * 8);
  reference(&r, q, k, v, dout, out, lse, dq, dk, dv);
  double t = tolerance(c->dtype);
  float* got_o = ot_download(c->dtype, bo, nq);
  ot_close_enough(what, "out (forward)", got_o, out, nq, t);
  float* dqp = ot_download(c->dtype, bdq, (size_t)(B * Hq * L * pad));
  float* got_dq = malloc(nq * sizeof(float));
  for (size_t i = 0; i < nq; ++i) got_dq[i] = dqp[(i / (size_t)E) * (size_t)pad + i % (size_t)E];
  float *got_dk = ot_download(c->dtype, bdk, nk), *got_dv = ot_download(c->dtype, bdv, nk);
  ot_close_enough(what, "dq", got_dq, dq, nq, t);
  ot_close_enough(what, "dk", got_dk, dk, nk, t);
  ot_close_enough(what, "dv", got_dv, dv, nk, t);
  if (c->dead_row)
    for (int64_t e = 0; e < E; ++e)
      ck_assert_msg(got_dq[3 * E + e] == 0.0f, "%s: dq of the fully masked row is %g", what,
                    got_dq[3 * E + e]);
  // The plan runs again with the same result (its workspaces are reused).
  OK(zt_ops_sdpa_bwd_run(p, &b));
  OK(zt_device_synchronize(dev));
  float* again = ot_download(c->dtype, bdk, nk);
  ck_assert_msg(!memcmp(again, got_dk, nk * sizeof(float)), "%s: a second run differs", what);

  free(again);
  free(got_o);
  free(dqp);
  free(got_dq);
  free(got_dk);
  free(got_dv);
  free(out);
  free(lse);
  free(dq);
  free(dk);
  free(dv);
  free(q);
  free(k);
  free(v);
  free(dout);
  free(fmask);
  free(bm);
  free(glse);
  free(dlse);
  zt_ops_plan_release(p);
  zt_ops_plan_release(fp);
  zt_buffer_t* all[] = {bq, bk, bv, bdo, bo, blse, bmask, bdq, bdk, bdv, bglse};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) zt_buffer_release(all[i]);
}

START_TEST(test_bwd_f32_gqa) {
  if (compiler_missing(__func__)) return;
  // GQA 4 over 2, Lq != Lk, neither a multiple of 32, head dim 40 in the d64 export.
  bwd_case_t c = {ZT_F32, 2, 4, 2, 37, 45, 40, false, false, false, ZT_OPS_MASK_NONE, false,
                  "attnbwd-f32-d64-32x32-full-nomask"};
  run_case(&c, "f32 gqa");
}
END_TEST

START_TEST(test_bwd_f32_causal_lse_log2_strided) {
  if (compiler_missing(__func__)) return;
  bwd_case_t c = {ZT_F32, 1, 2, 1, 45, 37, 64, true, true, true, ZT_OPS_MASK_NONE, false,
                  "attnbwd-f32-d64-32x32-causal-nomask"};
  run_case(&c, "f32 causal, lse log2, strided dq");
}
END_TEST

// A gradient of the lse (a loss that reads the forward's lse too), natural
// units with GQA, and log2 units with causal fp16 (the delta kernel's -dlse
// export scales it to natural).
START_TEST(test_bwd_f32_grad_lse_gqa) {
  if (compiler_missing(__func__)) return;
  bwd_case_t c = {ZT_F32, 2, 4, 2, 37, 45, 40, false, false, false, ZT_OPS_MASK_NONE, false,
                  "attnbwd-f32-d64-32x32-full-nomask", true};
  run_case(&c, "f32 GQA, grad_lse");
}
END_TEST

START_TEST(test_bwd_f16_causal_grad_lse_log2) {
  if (compiler_missing(__func__)) return;
  bwd_case_t c = {ZT_F16, 1, 2, 2, 40, 40, 64, true, true, false, ZT_OPS_MASK_NONE, false,
                  "attnbwd-f16-d64-32x32-causal-nomask-rm16", true};
  run_case(&c, "f16 causal, lse log2, grad_lse");
}
END_TEST

START_TEST(test_bwd_f32_float_mask) {
  if (compiler_missing(__func__)) return;
  bwd_case_t c = {ZT_F32, 2, 2, 2, 33, 50, 64, false, false, false, ZT_OPS_MASK_ADDITIVE,
                  false, "attnbwd-f32-d64-32x32-full-fmask-rm16"};
  run_case(&c, "f32 float mask (broadcast)");
}
END_TEST

START_TEST(test_bwd_f16_bool_mask_dead_row) {
  if (compiler_missing(__func__)) return;
  bwd_case_t c = {ZT_F16, 1, 2, 2, 40, 40, 64, false, false, false, ZT_OPS_MASK_BOOL, true,
                  "attnbwd-f16-d64-32x32-full-bmask-rm16"};
  run_case(&c, "f16 bool mask, a dead row");
}
END_TEST

START_TEST(test_bwd_bf16_causal_d128) {
  if (compiler_missing(__func__)) return;
  bwd_case_t c = {ZT_BF16, 1, 2, 1, 35, 35, 96, true, false, false, ZT_OPS_MASK_NONE, false,
                  "attnbwd-bf16-d128-32x32-causal-nomask-rm16"};
  run_case(&c, "bf16 causal d96");
}
END_TEST

// Dropout: the forward's keep flags read back (q = k = 0 makes the softmax
// uniform, v = the identity with head_dim = kv_len makes out[.., i, j] the
// dropped weight: 0 or 1 / (S (1 - p))), then random inputs with the same
// seed and shape (the draw depends on the position only): the backward
// must regenerate those flags.
START_TEST(test_bwd_dropout) {
  if (compiler_missing(__func__)) return;
  const int64_t B = 1, H = 2, L = 21, S = 64, E = 64;
  const float P = 0.3f;
  size_t nq = (size_t)(B * H * L * E), nk = (size_t)(B * H * S * E), nm = (size_t)(B * H * L * S),
         nr = (size_t)(B * H * L);
  zt_ops_sdpa_desc_t fwd = {.attn = {.dtype = ZT_F32, .batch = B, .q_heads = H, .kv_heads = H,
                                     .q_len = L, .kv_len = S, .head_dim = E},
                            .causal = true, .dropout_p = P, .dropout_seed = 77};
  float* eye = calloc(nk, sizeof(float));
  for (int64_t h = 0; h < B * H; ++h)
    for (int64_t j = 0; j < S; ++j) eye[(size_t)((h * S + j) * E + j)] = 1.0f;
  zt_buffer_t *zq = upload(ZT_F32, NULL, nq), *zk = upload(ZT_F32, NULL, nk),
              *bi = upload(ZT_F32, eye, nk), *bo = upload(ZT_F32, NULL, nq), *blse = NULL;
  OK(zt_buffer_alloc(dev, nr * 4, &blse));
  // Without causal for the read-back: every key of a row is in the softmax.
  zt_ops_sdpa_desc_t probe = fwd;
  probe.causal = false;
  zt_ops_plan_t* fp = NULL;
  OK(zt_ops_sdpa_plan(dev, &probe, &fp));
  zt_ops_attention_buffers_t fb = {.q = zq, .k = zk, .v = bi, .out = bo, .lse = blse};
  OK(zt_ops_attention_run(fp, &fb));
  OK(zt_device_synchronize(dev));
  float* flags = ot_download(ZT_F32, bo, nq);
  float* keep = malloc(nm * sizeof(float));
  size_t kept = 0;
  for (size_t i = 0; i < nm; ++i) {
    keep[i] = flags[i] > 0.5f / S ? 1.0f / (1.0f - P) : 0.0f;
    kept += keep[i] != 0;
  }
  ck_assert_msg(kept > nm / 2 && kept < nm * 9 / 10, "dropout: kept %zu of %zu", kept, nm);
  zt_ops_plan_release(fp);

  float *q = ot_randv(nq, 21, 1.0f), *k = ot_randv(nk, 22, 1.0f), *v = ot_randv(nk, 23, 1.0f),
        *dout = ot_randv(nq, 24, 1.0f);
  zt_buffer_t *bq = upload(ZT_F32, q, nq), *bk = upload(ZT_F32, k, nk),
              *bv = upload(ZT_F32, v, nk), *bdo = upload(ZT_F32, dout, nq);
  OK(zt_ops_sdpa_plan(dev, &fwd, &fp));
  fb = (zt_ops_attention_buffers_t){.q = bq, .k = bk, .v = bv, .out = bo, .lse = blse};
  OK(zt_ops_attention_run(fp, &fb));
  zt_ops_sdpa_bwd_desc_t d = {.fwd = fwd};
  zt_buffer_t *bdq = upload(ZT_F32, NULL, nq), *bdk = upload(ZT_F32, NULL, nk),
              *bdv = upload(ZT_F32, NULL, nk);
  zt_ops_plan_t* p = NULL;
  OK(zt_ops_sdpa_bwd_plan(dev, &d, &p));
  ck_assert_str_eq(zt_ops_plan_spec(p), "attnbwd-f32-d64-32x32-causal-nomask-drop");
  zt_ops_sdpa_bwd_buffers_t b = {.q = bq, .k = bk, .v = bv, .out = bo, .lse = blse,
                                 .grad_out = bdo, .grad_q = bdq, .grad_k = bdk, .grad_v = bdv};
  OK(zt_ops_sdpa_bwd_run(p, &b));
  OK(zt_device_synchronize(dev));
  ref_t r = {B, H, H, L, S, E, 1.0 / sqrt((double)E), true, NULL, NULL, keep};
  double *out = malloc(nq * 8), *lse = malloc(nr * 8), *dq = malloc(nq * 8),
         *dk = malloc(nk * 8), *dv = malloc(nk * 8);
  reference(&r, q, k, v, dout, out, lse, dq, dk, dv);
  float *got_o = ot_download(ZT_F32, bo, nq), *got_dq = ot_download(ZT_F32, bdq, nq),
        *got_dk = ot_download(ZT_F32, bdk, nk), *got_dv = ot_download(ZT_F32, bdv, nk);
  // The forward's out with these flags confirms the read-back; then the
  // gradients need the same flags regenerated.
  ot_close_enough("dropout", "out (forward)", got_o, out, nq, 2e-4);
  ot_close_enough("dropout", "dq", got_dq, dq, nq, 2e-4);
  ot_close_enough("dropout", "dk", got_dk, dk, nk, 2e-4);
  ot_close_enough("dropout", "dv", got_dv, dv, nk, 2e-4);
  // Another seed in the backward: other flags, so dv moves away.
  zt_ops_sdpa_bwd_desc_t other = d;
  other.fwd.dropout_seed = 78;
  zt_ops_plan_t* p2 = NULL;
  OK(zt_ops_sdpa_bwd_plan(dev, &other, &p2));
  OK(zt_ops_sdpa_bwd_run(p2, &b));
  OK(zt_device_synchronize(dev));
  float* wrong = ot_download(ZT_F32, bdv, nk);
  double worst = 0;
  for (size_t i = 0; i < nk; ++i) worst = fmax(worst, fabs(wrong[i] - dv[i]));
  ck_assert_msg(worst > 1e-2, "dropout: seed 78's dv equals seed 77's (%g)", worst);
  zt_ops_plan_release(p2);

  float* frees[] = {eye, flags, keep, q, k, v, dout, got_o, got_dq, got_dk, got_dv, wrong};
  for (size_t i = 0; i < sizeof frees / sizeof frees[0]; ++i) free(frees[i]);
  free(out);
  free(lse);
  free(dq);
  free(dk);
  free(dv);
  zt_ops_plan_release(p);
  zt_ops_plan_release(fp);
  zt_buffer_t* all[] = {zq, zk, bi, bo, blse, bq, bk, bv, bdo, bdq, bdk, bdv};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) zt_buffer_release(all[i]);
}
END_TEST

// The forward's decode path with dropout (spec -drop-split): the keep flags
// depend on the position only, so splitting the keys into shares gives the
// one-pass result (and lse), and not the undropped one.
static void run_fwd(zt_ops_sdpa_desc_t* d, zt_buffer_t* const* qkv, int32_t split,
                    float dropout_p, const char* spec, float* out, float* lse) {
  d->attn.split_kv = split;
  d->dropout_p = dropout_p;
  size_t no = (size_t)(d->attn.batch * d->attn.q_heads * d->attn.q_len * d->attn.head_dim),
         nr = (size_t)(d->attn.batch * d->attn.q_heads * d->attn.q_len);
  zt_buffer_t *bo = upload(ZT_F32, NULL, no), *bl = upload(ZT_F32, NULL, nr);
  zt_ops_plan_t* p = NULL;
  OK(zt_ops_sdpa_plan(dev, d, &p));
  ck_assert_str_eq(zt_ops_plan_spec(p), spec);
  zt_ops_attention_buffers_t b = {.q = qkv[0], .k = qkv[1], .v = qkv[2], .out = bo, .lse = bl};
  OK(zt_ops_attention_run(p, &b));
  OK(zt_device_synchronize(dev));
  float *o = ot_download(ZT_F32, bo, no), *l = ot_download(ZT_F32, bl, nr);
  memcpy(out, o, no * sizeof(float));
  memcpy(lse, l, nr * sizeof(float));
  free(o);
  free(l);
  zt_ops_plan_release(p);
  zt_buffer_release(bo);
  zt_buffer_release(bl);
}

START_TEST(test_fwd_dropout_split_kv) {
  if (compiler_missing(__func__)) return;
  const int64_t B = 1, H = 2, L = 3, S = 300, E = 64;
  size_t nq = (size_t)(B * H * L * E), nk = (size_t)(B * H * S * E), nr = (size_t)(B * H * L);
  float *q = ot_randv(nq, 31, 1.0f), *k = ot_randv(nk, 32, 1.0f), *v = ot_randv(nk, 33, 1.0f);
  zt_buffer_t* qkv[3] = {upload(ZT_F32, q, nq), upload(ZT_F32, k, nk), upload(ZT_F32, v, nk)};
  zt_ops_sdpa_desc_t d = {.attn = {.dtype = ZT_F32, .batch = B, .q_heads = H, .kv_heads = H,
                                   .q_len = L, .kv_len = S, .head_dim = E},
                          .dropout_seed = 9};
  float *o1 = malloc(nq * 4), *o4 = malloc(nq * 4), *o0 = malloc(nq * 4), *l1 = malloc(nr * 4),
        *l4 = malloc(nr * 4), *l0 = malloc(nr * 4);
  run_fwd(&d, qkv, 1, 0.25f, "attn-f32-d64-32x32-full-nomask-none-none-dense-drop", o1, l1);
  run_fwd(&d, qkv, 4, 0.25f, "attn-f32-d64-32x32-full-nomask-none-none-dense-drop-split", o4, l4);
  run_fwd(&d, qkv, 4, 0.0f, "attn-f32-d64-32x32-full-nomask-none-none-dense-split", o0, l0);
  double worst = 0, moved = 0;
  for (size_t i = 0; i < nq; ++i) {
    worst = fmax(worst, fabs(o4[i] - o1[i]));
    moved = fmax(moved, fabs(o0[i] - o1[i]));
  }
  ck_assert_msg(worst < 1e-5, "dropout split 4 vs one pass: out differs by %g", worst);
  ck_assert_msg(moved > 1e-2, "dropout changed nothing (%g)", moved);
  for (size_t i = 0; i < nr; ++i) {
    ck_assert_msg(fabs(l4[i] - l1[i]) < 1e-5, "lse[%zu]: %g vs %g", i, l4[i], l1[i]);
    ck_assert_msg(fabs(l0[i] - l1[i]) < 1e-5, "the lse is the undropped one: %g vs %g", l0[i],
                  l1[i]);
  }
  float* frees[] = {q, k, v, o1, o4, o0, l1, l4, l0};
  for (size_t i = 0; i < sizeof frees / sizeof frees[0]; ++i) free(frees[i]);
  for (int i = 0; i < 3; ++i) zt_buffer_release(qkv[i]);
}
END_TEST

START_TEST(test_bwd_misuse) {
  if (compiler_missing(__func__)) return;
  zt_ops_sdpa_bwd_desc_t d = {.fwd = {.attn = {.dtype = ZT_F32, .batch = 1, .q_heads = 2,
                                               .kv_heads = 1, .q_len = 8, .kv_len = 8,
                                               .head_dim = 64}}};
  zt_ops_plan_t* p = NULL;
  expect(zt_ops_sdpa_bwd_plan(NULL, &d, &p), ZT_STATUS_INVALID_ARGUMENT, "must not be NULL");
  zt_ops_sdpa_bwd_desc_t e = d;
  e.fwd.attn.q_heads = 3;
  e.fwd.attn.kv_heads = 2;
  expect(zt_ops_sdpa_bwd_plan(dev, &e, &p), ZT_STATUS_INVALID_ARGUMENT, "kv_heads");
  e = d;
  e.grad_k = (zt_ops_strides4_t){0, 0, 0, 1};  // every key row onto one
  expect(zt_ops_sdpa_bwd_plan(dev, &e, &p), ZT_STATUS_INVALID_ARGUMENT, "grad_k");
  e = d;
  e.grad_q = (zt_ops_strides4_t){1, 1, -1, 1};
  expect(zt_ops_sdpa_bwd_plan(dev, &e, &p), ZT_STATUS_INVALID_ARGUMENT, "negative stride");
  e = d;
  e.fwd.dropout_p = 1.0f;
  expect(zt_ops_sdpa_bwd_plan(dev, &e, &p), ZT_STATUS_INVALID_ARGUMENT, "dropout_p");
  e = d;
  e.fwd.attn.head_dim = 256;  // not in the default exports
  expect(zt_ops_sdpa_bwd_plan(dev, &e, &p), ZT_STATUS_NOT_FOUND, "python -m zetile.ops.export");
  e = d;
  e.fwd.attn.split_kv = 4;  // ignored: the backward has one pass
  OK(zt_ops_sdpa_bwd_plan(dev, &e, &p));
  ck_assert_str_eq(zt_ops_plan_spec(p), "attnbwd-f32-d64-32x32-full-nomask-rm16");
  size_t n = 2 * 8 * 64;
  zt_buffer_t *small = upload(ZT_F32, NULL, 8), *big = upload(ZT_F32, NULL, n);
  zt_ops_sdpa_bwd_buffers_t b = {.q = big, .k = big, .v = big, .out = big, .lse = big,
                                 .grad_out = big, .grad_q = big, .grad_k = big, .grad_v = big};
  expect(zt_ops_sdpa_bwd_run(NULL, &b), ZT_STATUS_INVALID_ARGUMENT, "must not be NULL");
  b.grad_v = small;
  expect(zt_ops_sdpa_bwd_run(p, &b), ZT_STATUS_INVALID_ARGUMENT, "grad_v");
  b.grad_v = big;
  b.lse = NULL;
  expect(zt_ops_sdpa_bwd_run(p, &b), ZT_STATUS_INVALID_ARGUMENT, "'lse' is NULL");
  b.lse = big;
  // A grad_lse the plan was not made for, and the reverse.
  b.grad_lse = big;
  expect(zt_ops_sdpa_bwd_run(p, &b), ZT_STATUS_INVALID_ARGUMENT, "has_grad_lse false");
  b.grad_lse = NULL;
  e.has_grad_lse = true;
  zt_ops_plan_t* pg = NULL;
  OK(zt_ops_sdpa_bwd_plan(dev, &e, &pg));
  expect(zt_ops_sdpa_bwd_run(pg, &b), ZT_STATUS_INVALID_ARGUMENT, "grad_lse is NULL");
  b.grad_lse = small;  // 8 floats for 16 rows
  expect(zt_ops_sdpa_bwd_run(pg, &b), ZT_STATUS_INVALID_ARGUMENT, "grad_lse");
  b.grad_lse = NULL;
  zt_ops_plan_release(pg);
  // A forward plan is not a backward plan, nor the reverse.
  zt_ops_plan_t* fp = NULL;
  OK(zt_ops_sdpa_plan(dev, &d.fwd, &fp));
  expect(zt_ops_sdpa_bwd_run(fp, &b), ZT_STATUS_INVALID_ARGUMENT, "not an SDPA backward");
  zt_ops_attention_buffers_t ab = {.q = big, .k = big, .v = big, .out = big};
  expect(zt_ops_attention_run(p, &ab), ZT_STATUS_INVALID_ARGUMENT, "not an attention plan");
  zt_ops_plan_release(fp);
  zt_ops_plan_release(p);
  zt_buffer_release(small);
  zt_buffer_release(big);
}
END_TEST

int main(void) {
  Suite* s = suite_create("ops_bwd");
  TCase* tc = tcase_create("sdpa_bwd");
  tcase_add_unchecked_fixture(tc, make_cache, remove_cache);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 300);
  suite_add_tcase(s, tc);
  ot_add_test(tc, test_bwd_f32_gqa);
  ot_add_test(tc, test_bwd_f32_causal_lse_log2_strided);
  ot_add_test(tc, test_bwd_f32_float_mask);
  ot_add_test(tc, test_bwd_f32_grad_lse_gqa);
  ot_add_test(tc, test_bwd_f16_causal_grad_lse_log2);
  ot_add_test(tc, test_bwd_f16_bool_mask_dead_row);
  ot_add_test(tc, test_bwd_bf16_causal_d128);
  ot_add_test(tc, test_bwd_dropout);
  ot_add_test(tc, test_fwd_dropout_split_kv);
  ot_add_test(tc, test_bwd_misuse);
  SRunner* r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}
