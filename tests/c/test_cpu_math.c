// Scalar (no loop) uses of ops that lower to libm calls or to
// arith.mului_extended on the CPU: umulhi on i32/i64 and erf, tanh, atan2,
// powf on f32/f64 must lower and resolve when the JIT links the kernel.
// (test_cpu_ops.c covers the same ops on tensors.)
#include <math.h>

#include "cpu_test_util.h"

typedef void (*hi32_fn_t)(int32_t, int32_t, uint64_t, int32_t, int32_t, int32_t, int32_t,
                          int32_t, int32_t, void*);
typedef void (*hi64_fn_t)(int64_t, int64_t, uint64_t, int32_t, int32_t, int32_t, int32_t,
                          int32_t, int32_t, void*);

START_TEST(test_umulhi) {
  zt_scalar_kind_t k = _i ? ZT_I64 : ZT_I32;
  zt_type_t t[3] = {zt_type_scalar(k), zt_type_scalar(k), zt_type_ptr(k)};
  zt_value_t a[3];
  zt_builder_t* b = ct_begin("hi", 3, t, a);
  OK(zt_builder_store(b, a[2], ct_bin(b, ZT_BINARY_MULHIUI, a[0], a[1]), ZT_NO_VALUE));
  ct_kernel_t kern = ct_build(b, "hi");
  if (k == ZT_I32) {
    int32_t out = 0;
    int32_t xs[3][2] = {{-1, -1}, {0x7fffffff, 3}, {123456789, -987654321}};
    for (int i = 0; i < 3; ++i) {
      ((hi32_fn_t)kern.fn)(xs[i][0], xs[i][1], (uint64_t)(uintptr_t)&out, 0, 0, 0, 1, 1, 1,
                           NULL);
      uint32_t want = (uint32_t)(((uint64_t)(uint32_t)xs[i][0] * (uint32_t)xs[i][1]) >> 32);
      ck_assert_uint_eq((uint32_t)out, want);
    }
  } else {
    int64_t out = 0;
    int64_t xs[3][2] = {{-1, -1}, {INT64_MAX, 3}, {0x123456789abcdefll, -987654321987ll}};
    for (int i = 0; i < 3; ++i) {
      ((hi64_fn_t)kern.fn)(xs[i][0], xs[i][1], (uint64_t)(uintptr_t)&out, 0, 0, 0, 1, 1, 1,
                           NULL);
      uint64_t want =
          (uint64_t)(((unsigned __int128)(uint64_t)xs[i][0] * (uint64_t)xs[i][1]) >> 64);
      ck_assert_uint_eq((uint64_t)out, want);
    }
  }
  ct_release(&kern);
}
END_TEST

typedef void (*m32_fn_t)(float, float, uint64_t, int32_t, int32_t, int32_t, int32_t,
                         int32_t, int32_t, void*);
typedef void (*m64_fn_t)(double, double, uint64_t, int32_t, int32_t, int32_t, int32_t,
                         int32_t, int32_t, void*);

START_TEST(test_libm_scalars) {
  zt_scalar_kind_t k = _i ? ZT_F64 : ZT_F32;
  zt_type_t t[3] = {zt_type_scalar(k), zt_type_scalar(k), zt_type_ptr(k)};
  zt_value_t a[3], v[4], p;
  zt_builder_t* b = ct_begin("m", 3, t, a);
  OK(zt_builder_unary(b, ZT_UNARY_ERF, a[0], &v[0]));
  OK(zt_builder_unary(b, ZT_UNARY_TANH, a[0], &v[1]));
  OK(zt_builder_binary(b, ZT_BINARY_ATAN2, a[0], a[1], &v[2]));
  OK(zt_builder_binary(b, ZT_BINARY_POWF, a[1], a[0], &v[3]));
  for (int j = 0; j < 4; ++j) {
    OK(zt_builder_addptr(b, a[2], ct_cint(b, ZT_I32, j), &p));
    OK(zt_builder_store(b, p, v[j], ZT_NO_VALUE));
  }
  ct_kernel_t kern = ct_build(b, "m");
  double x = 0.37, y = 1.9, want[4] = {erf(x), tanh(x), atan2(x, y), pow(y, x)};
  double got[4];
  if (k == ZT_F32) {
    float out[4];
    ((m32_fn_t)kern.fn)((float)x, (float)y, (uint64_t)(uintptr_t)out, 0, 0, 0, 1, 1, 1, NULL);
    for (int j = 0; j < 4; ++j) got[j] = out[j];
  } else {
    ((m64_fn_t)kern.fn)(x, y, (uint64_t)(uintptr_t)got, 0, 0, 0, 1, 1, 1, NULL);
  }
  double tol = k == ZT_F32 ? 1e-6 : 1e-14;
  for (int j = 0; j < 4; ++j)
    ck_assert_msg(fabs(got[j] - want[j]) <= tol * fabs(want[j]), "op %d: %.17g want %.17g",
                  j, got[j], want[j]);
  ct_release(&kern);
}
END_TEST

int main(void) {
  Suite* s = suite_create("cpu_math");
  TCase* tc = tcase_create("math");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_umulhi, 0, 2);
  tcase_add_loop_test(tc, test_libm_scalars, 0, 2);
  suite_add_tcase(s, tc);
  return ct_run_suite(s);
}
