// The GEMM tiles a C plan picks by target (runtime/ops/ops_gemm_tiles.c,
// internal: linked in directly) are the ones zetile.ops.gemm's config_for
// picks (python-bindings/zetile/ops/gemm.py, _gathered_xmx_tiles; E2 in
// docs/TEMPLATES.md "dg2 without spills"): on dg2's row a K step of 16 over
// 16 subgroups, 64x64 for plain fp16/bf16, 32x64 with an epilogue,
// weight-only scales or fp32, 32x32x32 for int8; rows with 2D block IO
// (pvc), without XMX (tgllp), the CPU (no row), tiles the caller set, and
// ZETILE_DG2_LOWERING=shared keep the descriptor as it is.
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops_internal.h"

static zt_target_info_t row_of(const char* target) {
  zt_target_info_t r;
  zt_status_t s = zt_target_info(target, &r);
  ck_assert_msg(s == NULL, "%s: %s", target, zt_status_message(s));
  return r;
}

// "BMxBNxBK/warps" of what the plan would pick, or "-" when it keeps the desc.
static const char* pick(const zt_target_info_t* row, zt_ops_gemm_desc_t d) {
  static char buf[64];
  int32_t nw = -1;
  if (!zt_ops__gemm_target_tiles(row, &d, &nw)) {
    ck_assert_int_eq(nw, 0);
    return "-";
  }
  snprintf(buf, sizeof buf, "%dx%dx%d/%d", d.block_m, d.block_n, d.block_k, nw);
  return buf;
}

static zt_ops_gemm_desc_t desc(zt_scalar_kind_t k) {
  zt_ops_gemm_desc_t d;
  zt_ops_gemm_desc_init(&d);
  d.dtype = k;
  d.m = d.n = d.k = 512;
  return d;
}

START_TEST(test_dg2_tiles) {
  zt_target_info_t dg2 = row_of("dg2");
  ck_assert_str_eq(pick(&dg2, desc(ZT_F16)), "64x64x16/16");
  ck_assert_str_eq(pick(&dg2, desc(ZT_BF16)), "64x64x16/16");
  ck_assert_str_eq(pick(&dg2, desc(ZT_F32)), "32x64x16/16");
  ck_assert_str_eq(pick(&dg2, desc(ZT_I8)), "32x32x32/16");
  zt_ops_gemm_desc_t d = desc(ZT_F16);
  d.activation = ZT_OPS_ACT_GELU;
  ck_assert_str_eq(pick(&dg2, d), "32x64x16/16");
  d = desc(ZT_BF16);
  d.has_bias = true;
  ck_assert_str_eq(pick(&dg2, d), "32x64x16/16");
  d = desc(ZT_F16);
  d.alpha = 2.0f;
  ck_assert_str_eq(pick(&dg2, d), "32x64x16/16");
  d = desc(ZT_F16);
  d.weight_bits = 4;
  d.group_size = 128;
  ck_assert_str_eq(pick(&dg2, d), "32x64x16/16");
}
END_TEST

START_TEST(test_other_rows_and_explicit_tiles_keep_the_desc) {
  zt_target_info_t pvc = row_of("pvc"), tgl = row_of("tgllp"), dg2 = row_of("dg2");
  ck_assert_str_eq(pick(&pvc, desc(ZT_F16)), "-");
  ck_assert_str_eq(pick(&tgl, desc(ZT_F16)), "-");
  ck_assert_str_eq(pick(NULL, desc(ZT_F16)), "-");
  zt_ops_gemm_desc_t d = desc(ZT_F16);
  d.block_k = 32;  // the caller's: kept
  ck_assert_str_eq(pick(&dg2, d), "-");
  setenv("ZETILE_DG2_LOWERING", "shared8", 1);
  dg2 = row_of("dg2");  // the row says the route (xe_simd8_route) when it is read
  ck_assert_str_eq(pick(&dg2, desc(ZT_F16)), "-");
  unsetenv("ZETILE_DG2_LOWERING");
}
END_TEST

// The attention forward's (zetile.ops.attention's DG2_FWD, DG2_FWD_D128):
// 16x16 on dg2's row over 8 subgroups for head dims up to 64, 16 up to 128
// (twice that for fp32);
// anything else keeps the descriptor (its 0s become 32x32 when resolved).
static const char* pick_attn_dt(const zt_target_info_t* row, int64_t head_dim, int32_t bm,
                                zt_scalar_kind_t dt) {
  static char buf[64];
  zt_ops_attention_t a;
  memset(&a, 0, sizeof a);
  a.dtype = dt;
  a.head_dim = head_dim;
  a.block_m = bm;
  int32_t nw = -1;
  if (!zt_ops__attn_target_tiles(row, &a, &nw)) {
    ck_assert_int_eq(nw, 0);
    ck_assert_int_eq(a.block_m, bm);
    return "-";
  }
  snprintf(buf, sizeof buf, "%dx%d/%d", a.block_m, a.block_n, nw);
  return buf;
}

static const char* pick_attn(const zt_target_info_t* row, int64_t head_dim, int32_t bm) {
  return pick_attn_dt(row, head_dim, bm, ZT_F16);
}

START_TEST(test_attention_forward_tiles) {
  zt_target_info_t dg2 = row_of("dg2"), pvc = row_of("pvc"), tgl = row_of("tgllp");
  ck_assert_str_eq(pick_attn(&dg2, 64, 0), "16x16/8");
  ck_assert_str_eq(pick_attn(&dg2, 40, 0), "16x16/8");
  ck_assert_str_eq(pick_attn(&dg2, 128, 0), "16x16/16");
  // fp32: twice the subgroups (the operands' bytes a subgroup as fp16's).
  ck_assert_str_eq(pick_attn_dt(&dg2, 64, 0, ZT_F32), "16x16/16");
  ck_assert_str_eq(pick_attn_dt(&dg2, 128, 0, ZT_F32), "16x16/32");
  ck_assert_str_eq(pick_attn_dt(&dg2, 128, 0, ZT_BF16), "16x16/16");
  ck_assert_str_eq(pick_attn(&dg2, 256, 0), "-");
  ck_assert_str_eq(pick_attn(&dg2, 64, 32), "-");  // the caller's tiles
  ck_assert_str_eq(pick_attn(&pvc, 64, 0), "-");
  ck_assert_str_eq(pick_attn(&tgl, 64, 0), "-");
  ck_assert_str_eq(pick_attn(NULL, 64, 0), "-");
  setenv("ZETILE_DG2_LOWERING", "shared8", 1);
  dg2 = row_of("dg2");
  ck_assert_str_eq(pick_attn(&dg2, 64, 0), "-");
  unsetenv("ZETILE_DG2_LOWERING");
}
END_TEST

int main(void) {
  Suite* s = suite_create("ops_gemm_tiles");
  TCase* tc = tcase_create("core");
  tcase_add_test(tc, test_dg2_tiles);
  tcase_add_test(tc, test_other_rows_and_explicit_tiles_keep_the_desc);
  tcase_add_test(tc, test_attention_forward_tiles);
  suite_add_tcase(s, tc);
  SRunner* sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
