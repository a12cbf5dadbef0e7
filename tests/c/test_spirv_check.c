// The in-process SPIR-V validator (lowering/common/spirv_check.c) that every
// emitted Xe/DG2 module passes through: a hand-assembled minimal kernel
// module is accepted, the same module with a result id defined twice (the
// defect LLVM's SPIR-V backend now and then produces) is rejected with
// SPIRV-Tools' message, and so is a byte count that is not whole words.
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "lowering.h"

// OpCapability Addresses, Kernel; OpMemoryModel Physical64 OpenCL;
// OpEntryPoint Kernel %3 "k"; %1 = OpTypeVoid; %2 = OpTypeFunction %1;
// %3 = OpFunction %1 None %2; %4 = OpLabel; OpReturn; OpFunctionEnd.
static const uint32_t kModule[] = {
    0x07230203, 0x00010000, 0, 5, 0,
    (2u << 16) | 17, 4, (2u << 16) | 17, 6,
    (3u << 16) | 14, 2, 2,
    (4u << 16) | 15, 6, 3, 0x6b,
    (2u << 16) | 19, 1,
    (3u << 16) | 33, 2, 1,
    (5u << 16) | 54, 1, 3, 0, 2,
    (2u << 16) | 248, 4,
    (1u << 16) | 253,
    (1u << 16) | 56,
};
enum { kLabelIdWord = 27, kFunctionTypeWord = 25 };

START_TEST(test_valid_module) {
  if (!zt_spirv_validator_available()) return;
  zt_status_t s = zt_spirv_validate(kModule, sizeof kModule);
  ck_assert_msg(s == NULL, "%s", zt_status_message(s));
}
END_TEST

START_TEST(test_id_defined_twice) {
  ck_assert_msg(zt_spirv_validator_available(), "built without SPIRV-Tools");
  uint32_t m[sizeof kModule / 4];
  memcpy(m, kModule, sizeof m);
  ck_assert_uint_eq(m[kLabelIdWord], 4);
  m[kLabelIdWord] = 3;  // the label reuses the function's id
  zt_status_t s = zt_spirv_validate(m, sizeof m);
  ck_assert_ptr_nonnull(s);
  ck_assert_msg(strstr(zt_status_message(s), "defined more than once") != NULL, "%s",
                zt_status_message(s));
  zt_status_free(s);
}
END_TEST

// Validation runs without SPIRV-Tools' friendly names (they cost ~1/4 of
// it); an invalid module is validated again with them, so the message
// names the id as spirv-val would ('1[%void]', not '1[%1]').
START_TEST(test_message_has_friendly_names) {
  ck_assert_msg(zt_spirv_validator_available(), "built without SPIRV-Tools");
  uint32_t m[sizeof kModule / 4];
  memcpy(m, kModule, sizeof m);
  ck_assert_uint_eq(m[kFunctionTypeWord], 2);
  m[kFunctionTypeWord] = 1;  // OpFunction's type is OpTypeVoid, not a function type
  zt_status_t s = zt_spirv_validate(m, sizeof m);
  ck_assert_ptr_nonnull(s);
  ck_assert_msg(strstr(zt_status_message(s), "'1[%void]'") != NULL, "%s", zt_status_message(s));
  zt_status_free(s);
}
END_TEST

START_TEST(test_partial_word) {
  zt_status_t s = zt_spirv_validate(kModule, sizeof kModule - 1);
  if (!zt_spirv_validator_available()) {
    ck_assert_ptr_null(s);
    return;
  }
  ck_assert_ptr_nonnull(s);
  zt_status_free(s);
}
END_TEST

// The artifact's SPIR-V has its ids numbered in order of first appearance,
// so a module's bytes do not depend on how LLVM's backend numbered it (a
// stale backend renumbers labels): the module and a copy with its ids
// permuted and its bound raised store the same bytes, and those are the
// module with ids 1..4 in first-appearance order (%3 the entry point, 1st).
static void stored(const uint32_t* m, size_t size, uint32_t* out) {
  zt_artifact_t* a = NULL;
  ck_assert_ptr_null(zt_artifact_create(&a));
  zt_status_t s = zt_spirv_set_artifact(a, m, size);
  ck_assert_msg(s == NULL, "%s", zt_status_message(s));
  const void* data = NULL;
  size_t n = 0;
  ck_assert_ptr_null(zt_artifact_get(a, "spirv", &data, &n));
  ck_assert_uint_eq(n, size);
  memcpy(out, data, n);
  zt_artifact_release(a);
}

START_TEST(test_ids_renumbered) {
  ck_assert_msg(zt_spirv_validator_available(), "built without SPIRV-Tools");
  enum { N = sizeof kModule / 4 };
  // kModule with %1 %2 %3 %4 -> %7 %9 %2 %5 and the bound 12.
  static const uint32_t perm[] = {7, 9, 2, 5};
  uint32_t p[N];
  memcpy(p, kModule, sizeof p);
  p[3] = 12;
  static const int id_words[] = {14, 17, 19, 20, 22, 23, 25, 27};  // every id operand
  for (size_t i = 0; i < sizeof id_words / sizeof *id_words; ++i)
    p[id_words[i]] = perm[p[id_words[i]] - 1];
  ck_assert_ptr_null(zt_spirv_validate(p, sizeof p));
  uint32_t a[N], b[N];
  stored(kModule, sizeof kModule, a);
  stored(p, sizeof p, b);
  ck_assert_mem_eq(a, b, sizeof a);
  // First appearance: %3 (entry point) 1, %1 (void) 2, %2 (fn type) 3, %4 4.
  uint32_t want[N];
  static const uint32_t first[] = {2, 3, 1, 4};
  memcpy(want, kModule, sizeof want);
  for (size_t i = 0; i < sizeof id_words / sizeof *id_words; ++i)
    want[id_words[i]] = first[want[id_words[i]] - 1];
  ck_assert_mem_eq(a, want, sizeof a);
  ck_assert_ptr_null(zt_spirv_validate(a, sizeof a));
}
END_TEST

int main(void) {
  Suite* su = suite_create("spirv_check");
  TCase* tc = tcase_create("validate");
  tcase_add_test(tc, test_valid_module);
  tcase_add_test(tc, test_id_defined_twice);
  tcase_add_test(tc, test_message_has_friendly_names);
  tcase_add_test(tc, test_partial_word);
  tcase_add_test(tc, test_ids_renumbered);
  suite_add_tcase(su, tc);
  SRunner* sr = srunner_create(su);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
