// Helpers shared by the C tests of include/zetile/ops.h (test_ops_api.c,
// test_ops_bwd.c, test_ops_flex_bwd.c): status checks, a private cache
// directory, the device the checks run on, the loud skip when
// libzetile_compiler is missing; for the backward tests also fp32/fp16/bf16
// host values, device buffers of them, and the relative error check.
#ifndef ZETILE_TESTS_C_OPS_TEST_UTIL_H_
#define ZETILE_TESTS_C_OPS_TEST_UTIL_H_

#include <check.h>
#include <math.h>
#include <stdint.h>
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

/// Adds t to tc unless ZT_TEST_OPS_ONLY, a comma-separated list of test
/// names, is set and does not name it: the slow E5 runs (ZT_TEST_OPS_DEVICE=
/// opencl:cpu, tests/python/test_ops_e5.py) pick the few tests they claim.
static inline void ot_add_test(TCase* tc, const TTest* t) {
  const char* only = getenv("ZT_TEST_OPS_ONLY");
  if (only && *only) {
    size_t n = strlen(t->name);
    const char* at = only;
    bool named = false;
    while ((at = strstr(at, t->name)) != NULL) {
      named = (at == only || at[-1] == ',') && (at[n] == ',' || at[n] == '\0');
      if (named) break;
      at += n;
    }
    if (!named) return;
  }
  tcase_add_test(tc, t);
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

// ------------------------------------------------ values in each dtype
static inline uint16_t ot_f2bf(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7FFF + ((u >> 16) & 1);  // round to nearest even
  return (uint16_t)(u >> 16);
}
static inline float ot_bf2f(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static inline size_t ot_ebytes(zt_scalar_kind_t k) { return k == ZT_F32 ? 4 : 2; }

/// Stores v[i] as kind k at element i of h, and rounds v[i] to what was
/// stored (so a reference computed from v sees the kernel's inputs).
static inline void ot_put(zt_scalar_kind_t k, void* h, size_t i, float* v) {
  if (k == ZT_F32) {
    ((float*)h)[i] = *v;
  } else if (k == ZT_F16) {
    _Float16 x = (_Float16)*v;
    memcpy((char*)h + 2 * i, &x, 2);
    *v = (float)x;
  } else {
    uint16_t b = ot_f2bf(*v);
    memcpy((char*)h + 2 * i, &b, 2);
    *v = ot_bf2f(b);
  }
}
static inline float ot_get(zt_scalar_kind_t k, const void* h, size_t i) {
  if (k == ZT_F32) return ((const float*)h)[i];
  uint16_t b;
  memcpy(&b, (const char*)h + 2 * i, 2);
  if (k == ZT_BF16) return ot_bf2f(b);
  _Float16 x;
  memcpy(&x, &b, 2);
  return (float)x;
}

/// A deterministic value in [-1, 1) from the LCG state s.
static inline float ot_frand(unsigned* s) {
  *s = *s * 1664525u + 1013904223u;
  return (float)((*s >> 8) & 0xFFFF) / 32768.0f - 1.0f;
}

/// n values amp * [-1, 1) from seed (malloc'd).
static inline float* ot_randv(size_t n, unsigned seed, float amp) {
  float* v = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; ++i) v[i] = amp * ot_frand(&seed);
  return v;
}

/// `bytes` raw bytes from h (zeros when h is NULL) on dev.
static inline zt_buffer_t* ot_upload_raw(zt_device_t* dev, const void* h, size_t bytes) {
  zt_buffer_t* b = NULL;
  OK(zt_buffer_alloc(dev, bytes, &b));
  void* z = h ? NULL : calloc(1, bytes);
  OK(zt_buffer_write(b, 0, h ? h : z, bytes));
  free(z);
  return b;
}

/// n contiguous values of kind k on dev: v (rounded in place) or zeros.
static inline zt_buffer_t* ot_upload(zt_device_t* dev, zt_scalar_kind_t k, float* v, size_t n) {
  void* h = calloc(n, ot_ebytes(k));
  if (v)
    for (size_t i = 0; i < n; ++i) ot_put(k, h, i, &v[i]);
  zt_buffer_t* b = ot_upload_raw(dev, h, n * ot_ebytes(k));
  free(h);
  return b;
}

/// n values of kind k read back from b, as floats (malloc'd).
static inline float* ot_download(zt_scalar_kind_t k, zt_buffer_t* b, size_t n) {
  void* h = malloc(n * ot_ebytes(k));
  OK(zt_buffer_read(b, 0, h, n * ot_ebytes(k)));
  float* v = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; ++i) v[i] = ot_get(k, h, i);
  free(h);
  return v;
}

/// max |got - want| / max(1, max |want|) <= tol: each gradient against its
/// own scale; every value finite.
static inline void ot_close_enough(const char* what, const char* name, const float* got,
                                   const double* want, size_t n, double tol) {
  double worst = 0, scale = 1;
  size_t at = 0;
  for (size_t i = 0; i < n; ++i) scale = fmax(scale, fabs(want[i]));
  for (size_t i = 0; i < n; ++i) {
    ck_assert_msg(isfinite(got[i]), "%s: %s[%zu] = %g", what, name, i, got[i]);
    double e = fabs(got[i] - want[i]);
    if (e > worst) worst = e, at = i;
  }
  ck_assert_msg(worst / scale <= tol, "%s: %s[%zu] = %g, expected %g (error %g of scale %g > %g)",
                what, name, at, got[at], want[at], worst, scale, tol);
}

#endif  // ZETILE_TESTS_C_OPS_TEST_UTIL_H_
