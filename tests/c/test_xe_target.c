// The Intel GPU target table (lowering/xe/xe_target.c, linked in directly):
// each row is consistent with itself and with the lowering it names, and
// the compiler's dispatch follows the table (a row without a lowering is
// refused with the row's reason; a name not in it is an invalid argument).
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "xe/xe_target.h"
#include "xe_detect.h"
#include "xe_kernels.h"
#include "zetile/compiler.h"

START_TEST(rows_are_consistent) {
  ck_assert_int_ge(xe_target_count(), 5);
  for (int i = 0; i < xe_target_count(); ++i) {
    const xe_target_t* t = xe_target_at(i);
    ck_assert_ptr_nonnull(t);
    ck_assert_ptr_eq(xe_target_find(t->name), t);
    // The subgroup size the kernels run at is one the hardware offers.
    bool offered = false;
    for (int j = 0; j < 4 && t->subgroup_sizes[j]; ++j)
      offered = offered || t->subgroup_sizes[j] == t->subgroup_size;
    ck_assert_msg(offered, "%s", t->name);
    if (xe_target_has_xmx(t)) {
      // DPAS runs at the subgroup's width; a channel is 32 bits.
      ck_assert_int_eq(t->dpas_exec_size, t->subgroup_size);
      ck_assert_int_eq(t->dpas_channel_bits, 32);
      ck_assert_int_eq(xe_target_ops_per_channel(t, 16), 2);
      ck_assert_int_eq(xe_target_ops_per_channel(t, 8), 4);
      ck_assert_int_eq(xe_target_dpas_k(t, 16), 16);
      ck_assert_int_eq(xe_target_dpas_k(t, 8), 32);
      ck_assert_int_le(t->dpas_repeat_count, 8);
    } else {
      // No XMX: every DPAS field is zero (none half-filled), no tf32.
      ck_assert_int_eq(t->dpas_systolic_depth + t->dpas_repeat_count + t->dpas_channel_bits, 0);
      ck_assert(!t->dpas_tf32);
      ck_assert_int_eq(xe_target_dpas_k(t, 16), 0);
    }
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
  // Lunar Lake and Panther Lake emit bmg's SPIR-V (xe_target.c says why).
  ck_assert_int_eq(xe_target_find("lnl")->lowering, XE_LOWERING_XEVM);
  ck_assert_str_eq(xe_target_find("lnl")->xevm_chip, "bmg");
  ck_assert_int_eq(xe_target_find("ptl")->lowering, XE_LOWERING_XEVM);
  ck_assert_str_eq(xe_target_find("ptl")->xevm_chip, "bmg");
  ck_assert_ptr_null(xe_target_find("foo"));
  ck_assert_ptr_null(xe_target_find(NULL));
  ck_assert_ptr_null(xe_target_at(-1));
  ck_assert_ptr_null(xe_target_at(xe_target_count()));
}
END_TEST


// Integrated GPUs (issue 21): Gen9 to Xe-LPG have no XMX and run the SIMD8
// lowering's FMA dots; DP4A from Gen12LP on; none has 2D block IO.
START_TEST(integrated_rows) {
  static const char* const no_xmx[] = {"skl", "icllp", "tgllp", "rkl", "adl-s",
                                       "adl-p", "dg1", "mtl"};
  for (size_t i = 0; i < sizeof no_xmx / sizeof no_xmx[0]; ++i) {
    const xe_target_t* t = xe_target_find(no_xmx[i]);
    ck_assert_msg(t != NULL, "%s", no_xmx[i]);
    ck_assert(!xe_target_has_xmx(t));
    ck_assert_int_eq(t->lowering, XE_LOWERING_SIMD8);
    ck_assert(!t->block_io_2d);
    ck_assert_int_eq(t->grf_bytes, 32);
    ck_assert_ptr_nonnull(t->ocloc_device);
    // DP4A is Gen12LP's: Gen9 and Gen11 have none.
    bool older = strcmp(t->name, "skl") == 0 || strcmp(t->name, "icllp") == 0;
    ck_assert_int_eq(t->dp4a, !older);
  }
  const xe_target_t* arl = xe_target_find("arl-h");
  ck_assert(xe_target_has_xmx(arl) && arl->dpas_exec_size == 8 && !arl->dpas_tf32);
  ck_assert(xe_target_has_xmx(xe_target_find("dg2")));
  ck_assert(xe_target_has_xmx(xe_target_find("lnl")));
  ck_assert(!xe_target_has_xmx(xe_target_find("mtl")));
}
END_TEST

static const char* detect(uint32_t id, uint32_t ip, const char* name, int s0, int s1, int s2,
                          int dp4a, int xmx, char* why) {
  zt_xe_props_t p = {.device_id = id, .ip_version = ip, .name = name, .dp4a = dp4a,
                     .xmx = xmx, .subgroup_sizes = {s0, s1, s2}};
  const char* row = zt_xe_detect(&p, why, 192);
  ck_assert_ptr_nonnull(row);
  ck_assert_msg(xe_target_find(row) != NULL, "detection gave '%s', not a row", row);
  ck_assert_msg(why[0], "no reason given for %s", row);
  return row;
}

#define IP(major, minor) (((uint32_t)(major) << 22) | ((uint32_t)(minor) << 14))

START_TEST(detection_by_id_and_ip_version) {
  char why[192];
  static const struct {
    uint32_t id;
    const char* row;
  } ids[] = {{0x9a49, "tgllp"}, {0x3e92, "skl"},   {0x5917, "skl"},   {0x8a52, "icllp"},
             {0x4c80, "rkl"},   {0x4680, "adl-s"}, {0xa780, "adl-s"}, {0x46a6, "adl-p"},
             {0xa7a0, "adl-p"}, {0x4905, "dg1"},   {0x7d55, "mtl"},   {0x7d67, "mtl"},
             {0x7d51, "arl-h"}, {0x56a0, "dg2"},   {0x0bd5, "pvc"},   {0xe20b, "bmg"},
             {0x64a0, "lnl"},   {0xb080, "ptl"}};
  for (size_t i = 0; i < sizeof ids / sizeof ids[0]; ++i) {
    // The id decides even against contrary properties.
    const char* row = detect(ids[i].id, 0, NULL, 16, 32, 0, 1, 1, why);
    ck_assert_msg(strcmp(row, ids[i].row) == 0, "0x%04x: %s, expected %s", ids[i].id, row,
                  ids[i].row);
    char hex[16];
    snprintf(hex, sizeof hex, "0x%04x", ids[i].id);
    ck_assert_msg(strstr(why, hex), "%s", why);
  }
  ck_assert_ptr_nonnull(strstr(why, "Panther Lake"));
  detect(0x9a49, 0, NULL, 0, 0, 0, -1, -1, why);
  ck_assert_ptr_nonnull(strstr(why, "Tiger Lake"));
  // IP versions as ocloc prints them (`ocloc ids adl-p` -> 12.3.0).
  ck_assert_str_eq(detect(0, IP(12, 3), NULL, 0, 0, 0, -1, -1, why), "adl-p");
  ck_assert_ptr_nonnull(strstr(why, "12.3.0"));
  ck_assert_str_eq(detect(0, IP(9, 1) | 9, NULL, 0, 0, 0, -1, -1, why), "skl");
  ck_assert_str_eq(detect(0, IP(12, 10), NULL, 0, 0, 0, -1, -1, why), "dg1");
  ck_assert_str_eq(detect(0, IP(12, 55) | 8, NULL, 0, 0, 0, -1, -1, why), "dg2");
  ck_assert_str_eq(detect(0, IP(12, 71), NULL, 0, 0, 0, -1, -1, why), "mtl");
  ck_assert_str_eq(detect(0, IP(20, 4), NULL, 0, 0, 0, -1, -1, why), "lnl");
  // Names, as the old rule read them.
  ck_assert_str_eq(detect(0, 0, "Intel(R) Data Center GPU Max 1550", 0, 0, 0, -1, -1, why),
                   "pvc");
  ck_assert_str_eq(detect(0, 0, "Intel(R) Arc(TM) A770 Graphics", 0, 0, 0, -1, -1, why), "dg2");
  ck_assert_ptr_nonnull(strstr(why, "A770"));
}
END_TEST

START_TEST(unknown_gpus_get_the_closest_row_never_pvc) {
  char why[192];
  // SIMD8 without XMX: DP4A picks Gen12LP's row, none (or unreported) Gen9's.
  ck_assert_str_eq(detect(0x1234, 0, "Intel(R) Graphics", 8, 16, 32, 1, 0, why), "tgllp");
  ck_assert_ptr_nonnull(strstr(why, "closest"));
  ck_assert_ptr_nonnull(strstr(why, "unknown PCI id"));
  ck_assert_ptr_nonnull(strstr(why, "8/16/32"));
  ck_assert_str_eq(detect(0x1234, 0, NULL, 8, 16, 32, 0, 0, why), "skl");
  ck_assert_str_eq(detect(0x1234, 0, NULL, 8, 16, 32, -1, -1, why), "skl");
  ck_assert_ptr_nonnull(strstr(why, "not reported"));
  // SIMD8 with XMX: the SIMD8 DPAS row.
  ck_assert_str_eq(detect(0, 0, NULL, 8, 16, 32, 1, 1, why), "dg2");
  ck_assert_ptr_nonnull(strstr(why, "no PCI id"));
  // SIMD16/32 only (Xe2 and later): bmg, not pvc, with or without the
  // features reported.
  ck_assert_str_eq(detect(0x1234, 0, NULL, 16, 32, 0, 1, 1, why), "bmg");
  ck_assert_str_eq(detect(0x1234, 0, NULL, 16, 32, 0, -1, -1, why), "bmg");
  ck_assert_str_eq(detect(0x1234, 0, NULL, 16, 32, 0, 1, 0, why), "bmg");
  ck_assert_ptr_nonnull(strstr(why, "no SIMD8"));
  // Nothing reported at all: the most conservative row.
  ck_assert_str_eq(detect(0, 0, NULL, 0, 0, 0, -1, -1, why), "skl");
  ck_assert_ptr_nonnull(strstr(why, "no row fits"));
  // NEO's simulation names its product (its spelling mapped to the row's).
  zt_xe_props_t p = {.simulated = "adlp", .dp4a = -1, .xmx = -1, .subgroup_sizes = {8, 16, 32}};
  ck_assert_str_eq(zt_xe_detect(&p, why, sizeof why), "adl-p");
  ck_assert_ptr_nonnull(strstr(why, "ProductFamilyOverride=adlp"));
  p.simulated = "nosuchpart";
  ck_assert_str_eq(zt_xe_detect(&p, why, sizeof why), "skl");
  ck_assert_ptr_nonnull(zt_xe_detect(&p, NULL, 0));
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
  // Every SIMD8 row without XMX builds through the SIMD8 lowering.
  s = compile_for("skl");
  ck_assert_msg(s == NULL, "%s", zt_status_message(s));
  s = compile_for("tgllp");
  ck_assert_msg(s == NULL, "%s", zt_status_message(s));
  s = compile_for("lnl");
  ck_assert_msg(s == NULL, "%s", zt_status_message(s));
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
  tcase_add_test(tc, integrated_rows);
  tcase_add_test(tc, detection_by_id_and_ip_version);
  tcase_add_test(tc, unknown_gpus_get_the_closest_row_never_pvc);
  suite_add_tcase(su, tc);
  return ct_run_suite(su);
}
