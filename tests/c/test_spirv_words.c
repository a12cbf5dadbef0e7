// The runtime's raw SPIR-V walk (runtime/base/spirv_words.h) and the
// structural check built on it (runtime/base/spirv_check.c), which stands
// between a module and IGC (IGC calls exit(1) on some malformed modules):
// each malformation is refused with its own message, a good module's
// instructions are visited in order, and an unaligned copy reads the same.
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "base/spirv_check.h"
#include "base/spirv_words.h"

// OpCapability Kernel; OpMemoryModel Physical64 OpenCL;
// OpEntryPoint Kernel %1 "k"; %2 = OpTypeVoid; %3 = OpTypeFunction %2;
// %1 = OpFunction %2 None %3; OpLabel %4; OpReturn; OpFunctionEnd
static const uint32_t kModule[] = {
    0x07230203, 0x00010000, 0x00070000, 0x00000005, 0x00000000,
    0x00020011, 0x00000006,                                     // OpCapability Kernel
    0x0003000e, 0x00000002, 0x00000002,                         // OpMemoryModel
    0x0004000f, 0x00000006, 0x00000001, 0x0000006b,             // OpEntryPoint "k"
    0x00020013, 0x00000002,                                     // OpTypeVoid
    0x00030021, 0x00000003, 0x00000002,                         // OpTypeFunction
    0x00050036, 0x00000002, 0x00000001, 0x00000000, 0x00000003, // OpFunction
    0x000200f8, 0x00000004,                                     // OpLabel
    0x000100fd,                                                 // OpReturn
    0x00010038,                                                 // OpFunctionEnd
};
static const uint32_t kOps[] = {17, 14, 15, 19, 33, 54, 248, 253, 56};
enum { kWords = sizeof kModule / 4, kInsts = sizeof kOps / 4 };

// zt_spirv_check's message for a module, "" when accepted.
static char* check_message(const void* data, size_t size, const char* kernel) {
  zt_status_t s = zt_spirv_check(data, size, kernel);
  char* msg = strdup(s ? zt_status_message(s) : "");
  zt_status_free(s);
  return msg;
}

static void expect_message(uint32_t* m, size_t words, const char* want) {
  char* msg = check_message(m, 4 * words, "k");
  ck_assert_msg(strstr(msg, want) != NULL, "message '%s' lacks '%s'", msg, want);
  free(msg);
}

START_TEST(walk_visits_every_instruction) {
  zt_spirv_walk_t it;
  ck_assert(zt_spirv_walk_begin(&it, kModule, sizeof kModule, 100));
  ck_assert_uint_eq(it.bound, 5);
  size_t first, k = 0, expect_first = ZT_SPIRV_HEADER_WORDS;
  uint32_t op, count;
  while (zt_spirv_walk_next(&it, &first, &op, &count)) {
    ck_assert_uint_lt(k, kInsts);
    ck_assert_uint_eq(op, kOps[k]);
    ck_assert_uint_eq(first, expect_first);
    expect_first += count;
    ++k;
  }
  ck_assert_uint_eq(k, kInsts);
  ck_assert(!it.cut);
  char* msg = check_message(kModule, sizeof kModule, "k");
  ck_assert_str_eq(msg, "");
  free(msg);
}
END_TEST

START_TEST(unaligned_copy_reads_the_same) {
  uint8_t* buf = malloc(sizeof kModule + 1);
  memcpy(buf + 1, kModule, sizeof kModule);
  zt_spirv_walk_t it;
  ck_assert(zt_spirv_walk_begin(&it, buf + 1, sizeof kModule, 100));
  size_t first, k = 0;
  uint32_t op, count;
  while (zt_spirv_walk_next(&it, &first, &op, &count)) ck_assert_uint_eq(op, kOps[k++]);
  ck_assert_uint_eq(k, kInsts);
  char* msg = check_message(buf + 1, sizeof kModule, "k");
  ck_assert_str_eq(msg, "");
  free(msg);
  free(buf);
}
END_TEST

START_TEST(malformed_modules_are_refused_with_their_reason) {
  uint32_t m[kWords];
  memcpy(m, kModule, sizeof m);
  expect_message(m, 4, "16 bytes is not a whole module");
  char* msg = check_message(m, sizeof m - 2, "k");
  ck_assert_msg(strstr(msg, "not a whole module"), "%s", msg);
  free(msg);
  m[0] = 0x03022307;  // byte-swapped magic
  expect_message(m, kWords, "bad magic number 0x03022307");
  memcpy(m, kModule, sizeof m);
  m[3] = 0;
  expect_message(m, kWords, "bad id bound 0");
  m[3] = 1u << 23;
  expect_message(m, kWords, "bad id bound 8388608");
  memcpy(m, kModule, sizeof m);
  m[19] = 0x000a0036;  // OpFunction claiming 10 words: runs past the end
  expect_message(m, kWords, "instruction at word 19 (opcode 54) has a bad word count 10");
  zt_spirv_walk_t it;
  ck_assert(zt_spirv_walk_begin(&it, m, sizeof m, 100));
  size_t first;
  uint32_t op, count;
  while (zt_spirv_walk_next(&it, &first, &op, &count)) continue;
  ck_assert(it.cut);
  ck_assert_uint_eq(it.at, 19);
  memcpy(m, kModule, sizeof m);
  m[5] = 0x00000011;  // word count 0: would never advance
  expect_message(m, kWords, "instruction at word 5 (opcode 17) has a bad word count 0");
  memcpy(m, kModule, sizeof m);
  expect_message(m, kWords, "");  // sanity: the copy itself passes
  msg = check_message(m, sizeof m, "other");
  ck_assert_msg(strstr(msg, "no entry point named 'other'"), "%s", msg);
  free(msg);
  ck_assert(!zt_spirv_walk_begin(&it, NULL, 0, 100));
}
END_TEST

int main(void) {
  Suite* s = suite_create("spirv_words");
  TCase* tc = tcase_create("core");
  tcase_add_test(tc, walk_visits_every_instruction);
  tcase_add_test(tc, unaligned_copy_reads_the_same);
  tcase_add_test(tc, malformed_modules_are_refused_with_their_reason);
  suite_add_tcase(s, tc);
  return ct_run_suite(s);
}
