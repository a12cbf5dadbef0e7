// Helpers shared by the C tests of include/zetile/ops.h (test_ops_api.c,
// test_ops_bwd.c): status checks, a private cache directory, the device
// the checks run on, and the loud skip when libzetile_compiler is missing.
#ifndef ZETILE_TESTS_C_OPS_TEST_UTIL_H_
#define ZETILE_TESTS_C_OPS_TEST_UTIL_H_

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zetile/zetile.h"

#define OK(expr)                                                                   \
  do {                                                                             \
    zt_status_t s_ = (expr);                                                       \
    ck_assert_msg(s_ == NULL, "%s: %s", #expr, zt_status_message(s_));             \
  } while (0)

/// A fresh directory from `pattern` (ending in XXXXXX) in dir, made the
/// process's ZETILE_CACHE_DIR.
static inline void ot_cache_make(char* dir, size_t size, const char* pattern) {
  snprintf(dir, size, "%s", pattern);
  ck_assert_ptr_nonnull(mkdtemp(dir));
  setenv("ZETILE_CACHE_DIR", dir, 1);
}

static inline void ot_cache_remove(const char* dir) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

/// The device the checks run on: ZT_TEST_OPS_DEVICE (opencl:cpu runs the
/// pvc SPIR-V of every plan on Intel's CPU OpenCL runtime), else the CPU.
static inline void ot_device_open(zt_device_t** dev) {
  const char* name = getenv("ZT_TEST_OPS_DEVICE");
  OK(zt_device_open(name && *name ? name : "cpu", dev));
}

static inline bool compiler_missing(const char* test) {
  zt_status_t s = zt_compiler_available();
  if (!s) return false;
  fprintf(stderr, "SKIP %s: %s\n", test, zt_status_message(s));
  zt_status_free(s);
  return true;
}

/// s must fail with code and a message containing needle; frees s.
static inline void expect(zt_status_t s, zt_status_code_t code, const char* needle) {
  ck_assert_msg(s != NULL, "expected %s (%s), got OK", zt_status_code_name(code), needle);
  ck_assert_msg(zt_status_code(s) == code, "expected %s, got %s: %s", zt_status_code_name(code),
                zt_status_code_name(zt_status_code(s)), zt_status_message(s));
  ck_assert_msg(strstr(zt_status_message(s), needle), "message '%s' lacks '%s'",
                zt_status_message(s), needle);
  zt_status_free(s);
}

#endif  // ZETILE_TESTS_C_OPS_TEST_UTIL_H_
