// The E5-only SPIR-V rewrite runtime/opencl/spirv_fneg_sink.c on
// hand-made modules (spirv-as output embedded as words): an OpFNegate above
// an OpControlBarrier moves to just before its first use in the block, one
// used only in a later block moves to its block's end, one with no barrier
// between it and its use stays, nothing else changes; truncated or
// malformed input is refused without a crash. The output passes spirv-val
// when the tool is installed.
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "opencl/opencl.h"

// OpCapability Addresses, Kernel; OpMemoryModel Physical64 OpenCL;
// OpEntryPoint Kernel %1 "k"; types, %5 = 2, %6 = 272; %1(%8: f32):
//   %9:  %10 = OpFNegate %8; OpControlBarrier %5 %5 %6;
//        %11 = OpFAdd %10 %8; OpBranch %12          (a: used after)
//   %12: %13 = OpFNegate %8; OpControlBarrier %5 %5 %6;
//        OpBranch %14                               (c: used in %14 only)
//   %14: %15 = OpFAdd %13 %8; %16 = OpFNegate %8;
//        %17 = OpFAdd %16 %8; OpReturn                (b: no barrier)
static const uint32_t kIn[] = {
    0x07230203, 0x00010000, 0x00070000, 0x00000012, 0x00000000, 0x00020011,
    0x00000004, 0x00020011, 0x00000006, 0x0003000e, 0x00000002, 0x00000002,
    0x0004000f, 0x00000006, 0x00000001, 0x0000006b, 0x00020013, 0x00000002,
    0x00030016, 0x00000003, 0x00000020, 0x00040015, 0x00000004, 0x00000020,
    0x00000000, 0x0004002b, 0x00000004, 0x00000005, 0x00000002, 0x0004002b,
    0x00000004, 0x00000006, 0x00000110, 0x00040021, 0x00000007, 0x00000002,
    0x00000003, 0x00050036, 0x00000002, 0x00000001, 0x00000000, 0x00000007,
    0x00030037, 0x00000003, 0x00000008, 0x000200f8, 0x00000009, 0x0004007f,
    0x00000003, 0x0000000a, 0x00000008, 0x000400e0, 0x00000005, 0x00000005,
    0x00000006, 0x00050081, 0x00000003, 0x0000000b, 0x0000000a, 0x00000008,
    0x000200f9, 0x0000000c, 0x000200f8, 0x0000000c, 0x0004007f, 0x00000003,
    0x0000000d, 0x00000008, 0x000400e0, 0x00000005, 0x00000005, 0x00000006,
    0x000200f9, 0x0000000e, 0x000200f8, 0x0000000e, 0x00050081, 0x00000003,
    0x0000000f, 0x0000000d, 0x00000008, 0x0004007f, 0x00000003, 0x00000010,
    0x00000008, 0x00050081, 0x00000003, 0x00000011, 0x00000010, 0x00000008,
    0x000100fd, 0x00010038,
};
// The same module with %10 below the first barrier (before %11) and %13
// below the second (before OpBranch %14); block %14 unchanged.
static const uint32_t kWant[] = {
    0x07230203, 0x00010000, 0x00070000, 0x00000012, 0x00000000, 0x00020011,
    0x00000004, 0x00020011, 0x00000006, 0x0003000e, 0x00000002, 0x00000002,
    0x0004000f, 0x00000006, 0x00000001, 0x0000006b, 0x00020013, 0x00000002,
    0x00030016, 0x00000003, 0x00000020, 0x00040015, 0x00000004, 0x00000020,
    0x00000000, 0x0004002b, 0x00000004, 0x00000005, 0x00000002, 0x0004002b,
    0x00000004, 0x00000006, 0x00000110, 0x00040021, 0x00000007, 0x00000002,
    0x00000003, 0x00050036, 0x00000002, 0x00000001, 0x00000000, 0x00000007,
    0x00030037, 0x00000003, 0x00000008, 0x000200f8, 0x00000009, 0x000400e0,
    0x00000005, 0x00000005, 0x00000006, 0x0004007f, 0x00000003, 0x0000000a,
    0x00000008, 0x00050081, 0x00000003, 0x0000000b, 0x0000000a, 0x00000008,
    0x000200f9, 0x0000000c, 0x000200f8, 0x0000000c, 0x000400e0, 0x00000005,
    0x00000005, 0x00000006, 0x0004007f, 0x00000003, 0x0000000d, 0x00000008,
    0x000200f9, 0x0000000e, 0x000200f8, 0x0000000e, 0x00050081, 0x00000003,
    0x0000000f, 0x0000000d, 0x00000008, 0x0004007f, 0x00000003, 0x00000010,
    0x00000008, 0x00050081, 0x00000003, 0x00000011, 0x00000010, 0x00000008,
    0x000100fd, 0x00010038,
};

// spirv-val on words, when the tool is on PATH (else skipped: returns 0).
static int spirv_val(const uint32_t* w, size_t size) {
  if (system("command -v spirv-val >/dev/null 2>&1") != 0) return 0;
  char path[] = "/tmp/zt_fneg_sinkXXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  FILE* f = fdopen(fd, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(w, 1, size, f), size);
  fclose(f);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "spirv-val %s", path);
  int rc = system(cmd);
  remove(path);
  return rc;
}

START_TEST(test_moves_below_barrier) {
  ck_assert_int_eq(spirv_val(kIn, sizeof kIn), 0);
  size_t moved = 99;
  uint32_t* out = zt_cl_spirv_sink_fneg(kIn, sizeof kIn, &moved);
  ck_assert_ptr_nonnull(out);
  ck_assert_uint_eq(moved, 2);
  for (size_t i = 0; i < sizeof kWant / 4; ++i)
    ck_assert_msg(out[i] == kWant[i], "word %zu: 0x%08x, want 0x%08x", i,
                  out[i], kWant[i]);
  ck_assert_int_eq(spirv_val(out, sizeof kWant), 0);
  free(out);
}
END_TEST

// Without a barrier between a negation and its use nothing moves: NULL
// (the caller keeps its own bytes, so they stay byte-equal) and moved 0.
// kWant is such a module: every barrier already sits above its negation.
START_TEST(test_untouched_without_barrier) {
  size_t moved = 99;
  ck_assert_ptr_null(zt_cl_spirv_sink_fneg(kWant, sizeof kWant, &moved));
  ck_assert_uint_eq(moved, 0);
}
END_TEST

START_TEST(test_malformed_refused) {
  size_t moved = 99;
  // Not whole words, too short, wrong magic.
  ck_assert_ptr_null(zt_cl_spirv_sink_fneg(kIn, sizeof kIn - 1, &moved));
  ck_assert_uint_eq(moved, 0);
  ck_assert_ptr_null(zt_cl_spirv_sink_fneg(kIn, 16, &moved));
  uint32_t m[sizeof kIn / 4];
  memcpy(m, kIn, sizeof m);
  m[0] = 0x03022307u;
  ck_assert_ptr_null(zt_cl_spirv_sink_fneg(m, sizeof m, &moved));
  // Every truncation at a whole word (an instruction running past the end
  // for most) and a zero word count: refused or a whole module, no crash
  // (the ASan build reads past nothing).
  for (size_t n = 5; n < sizeof kIn / 4; ++n) {
    uint32_t* t = malloc(n * 4);
    memcpy(t, kIn, n * 4);
    uint32_t* out = zt_cl_spirv_sink_fneg(t, n * 4, &moved);
    if (!out) ck_assert_uint_eq(moved, 0);
    free(out);
    free(t);
  }
  memcpy(m, kIn, sizeof m);
  m[5] = 17;  // OpCapability with word count 0
  ck_assert_ptr_null(zt_cl_spirv_sink_fneg(m, sizeof m, &moved));
  ck_assert_uint_eq(moved, 0);
}
END_TEST

int main(void) {
  Suite* s = suite_create("spirv_fneg_sink");
  TCase* tc = tcase_create("core");
  tcase_add_test(tc, test_moves_below_barrier);
  tcase_add_test(tc, test_untouched_without_barrier);
  tcase_add_test(tc, test_malformed_refused);
  suite_add_tcase(s, tc);
  return ct_run_suite(s);
}
