// The Intel GPU target table (lowering/xe/xe_target.c, linked in directly):
// each row is consistent with itself and with the lowering it names, and
// the compiler's dispatch follows the table (a row without a lowering is
// refused with the row's reason; a name not in it is an invalid argument).
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "xe/xe_target.h"
#include "xe_kernels.h"
#include "zetile/compiler.h"

START_TEST(rows_are_consistent) {
  ck_assert_int_ge(xe_target_count(), 5);
  for (int i = 0; i < xe_target_count(); ++i) {
    const xe_target_t* t = xe_target_at(i);
    ck_assert_ptr_nonnull(t);
    ck_assert_ptr_eq(xe_target_find(t->name), t);
    // DPAS runs at the subgroup's width; a channel is 32 bits.
    ck_assert_int_eq(t->dpas_exec_size, t->subgroup_size);
    ck_assert_int_eq(t->dpas_channel_bits, 32);
    ck_assert_int_eq(xe_target_ops_per_channel(t, 16), 2);
    ck_assert_int_eq(xe_target_ops_per_channel(t, 8), 4);
    ck_assert_int_eq(xe_target_dpas_k(t, 16), 16);
    ck_assert_int_eq(xe_target_dpas_k(t, 8), 32);
    ck_assert_int_le(t->dpas_repeat_count, 8);
    ck_assert_int_ge(t->grf_default, 128);
    // A large register file comes with the IGC option that selects it.
    ck_assert(!t->grf_large || (t->grf_large_option && t->grf_large_option[0]));
    // XeVM rows name the chip XeVM has a table for; rows without a
    // lowering say why.
    if (t->lowering == XE_LOWERING_XEVM) {
      ck_assert_ptr_nonnull(t->xevm_chip);
      ck_assert(strcmp(t->xevm_chip, "pvc") == 0 || strcmp(t->xevm_chip, "bmg") == 0);
      ck_assert_int_eq(t->subgroup_size, 16);
      ck_assert(t->block_io_2d);
    }
    if (t->lowering == XE_LOWERING_SIMD8) ck_assert_int_eq(t->subgroup_size, 8);
    if (t->lowering == XE_LOWERING_NONE) ck_assert(t->not_yet && t->not_yet[0]);
  }
}
END_TEST

START_TEST(known_rows) {
  const xe_target_t* pvc = xe_target_find("pvc");
  ck_assert_ptr_nonnull(pvc);
  ck_assert_int_eq(pvc->subgroup_size, 16);
  ck_assert_int_eq(pvc->grf_large, 256);
  ck_assert_int_eq(pvc->slm_per_workgroup, 128 * 1024);
  const xe_target_t* dg2 = xe_target_find("dg2");
  ck_assert_ptr_nonnull(dg2);
  ck_assert_int_eq(dg2->lowering, XE_LOWERING_SIMD8);
  ck_assert(!dg2->block_io_2d);
  ck_assert(!dg2->dpas_tf32);
  ck_assert_int_eq(xe_target_find("bmg")->lowering, XE_LOWERING_XEVM);
  ck_assert_int_eq(xe_target_find("lnl")->lowering, XE_LOWERING_NONE);
  ck_assert_int_eq(xe_target_find("ptl")->lowering, XE_LOWERING_NONE);
  ck_assert_ptr_null(xe_target_find("foo"));
  ck_assert_ptr_null(xe_target_find(NULL));
  ck_assert_ptr_null(xe_target_at(-1));
  ck_assert_ptr_null(xe_target_at(xe_target_count()));
}
END_TEST

static zt_status_t compile_for(const char* target) {
  char* text = NULL;
  zt_status_t s = xk_vector_add(1024, &text);
  ck_assert_msg(s == NULL, "%s", zt_status_message(s));
  zt_compile_options_t opt = {0};
  opt.target = target;
  zt_artifact_t* art = NULL;
  s = zt_compile(text, strlen(text), &opt, &art);
  zt_artifact_release(art);
  free(text);
  return s;
}

START_TEST(dispatch_follows_the_table) {
  zt_status_t s = compile_for("pvc");
  ck_assert_msg(s == NULL, "%s", zt_status_message(s));
  s = compile_for("lnl");
  ck_assert_int_eq(zt_status_code(s), ZT_STATUS_UNSUPPORTED);
  ck_assert_ptr_nonnull(strstr(zt_status_message(s), "Lunar Lake"));
  zt_status_free(s);
  s = compile_for("foo");
  ck_assert_int_eq(zt_status_code(s), ZT_STATUS_INVALID_ARGUMENT);
  zt_status_free(s);
}
END_TEST

int main(void) {
  Suite* su = suite_create("xe_target");
  TCase* tc = tcase_create("table");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, rows_are_consistent);
  tcase_add_test(tc, known_rows);
  tcase_add_test(tc, dispatch_follows_the_table);
  suite_add_tcase(su, tc);
  SRunner* sr = srunner_create(su);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
