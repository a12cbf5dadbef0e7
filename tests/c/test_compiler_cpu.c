// CPU target end to end: kernels built with the C builder, compiled through
// zt_compile (the dlopen'ed compiler), JIT-loaded with cpu_load and called
// directly over the grid; results compared with C references.
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compiler_api.h"
#include "zetile/builder.h"
#include "zetile/compiler.h"

#define OK(expr)                                                              \
  do {                                                                        \
    zt_status_t s_ = (expr);                                                  \
    ck_assert_msg(s_ == NULL, "%s failed: %s", #expr, zt_status_message(s_)); \
  } while (0)

typedef struct kernel_s {
  zt_artifact_t* artifact;
  void* fn;
  void* engine;
  const zt_compiler_api_t* api;
} kernel_t;

// Compiles the builder's module for the CPU and JIT-loads it.
static kernel_t build(zt_builder_t* b, const char* name) {
  kernel_t k = {0};
  const char* text;
  size_t size;
  OK(zt_builder_module_text(b, &text, &size));
  zt_compile_options_t opt = {.target = "cpu"};
  zt_status_t s = zt_compile(text, size, &opt, &k.artifact);
  ck_assert_msg(s == NULL, "compile failed: %s\n%s", zt_status_message(s), text);
  OK(zt_compiler_load(&k.api));
  if (getenv("ZT_TEST_DUMP")) {
    const void* mlir;
    size_t ms;
    OK(zt_artifact_get(k.artifact, "mlir", &mlir, &ms));
    fprintf(stderr, "%s\n", (const char*)mlir);
  }
  const void* llvm;
  size_t llvm_size;
  OK(zt_artifact_get(k.artifact, "llvm", &llvm, &llvm_size));
  s = k.api->cpu_load(llvm, llvm_size, name, &k.fn, &k.engine);
  if (s) {
    const void* mlir;
    size_t ms;
    zt_artifact_get(k.artifact, "mlir", &mlir, &ms);
    ck_abort_msg("cpu_load failed: %s\n%s", zt_status_message(s), (const char*)mlir);
  }
  ck_assert_ptr_nonnull(k.fn);
  zt_builder_release(b);
  return k;
}

static void release(kernel_t* k) {
  k->api->cpu_unload(k->engine);
  zt_artifact_release(k->artifact);
}

static zt_builder_t* begin(const char* name, int n, const zt_type_t* types,
                           zt_value_t* args) {
  zt_builder_t* b;
  OK(zt_builder_create(&b));
  zt_builder_set_loc(b, "test.py", 1, 1);
  OK(zt_builder_begin_kernel(b, name, n, types, NULL, args));
  return b;
}

static zt_value_t cint(zt_builder_t* b, zt_scalar_kind_t k, int64_t v) {
  zt_value_t r;
  OK(zt_builder_const_int(b, k, v, &r));
  return r;
}
static zt_value_t cfloat(zt_builder_t* b, zt_scalar_kind_t k, double v) {
  zt_value_t r;
  OK(zt_builder_const_float(b, k, v, &r));
  return r;
}
static zt_value_t bin(zt_builder_t* b, zt_binary_op_t op, zt_value_t x, zt_value_t y) {
  zt_value_t r;
  OK(zt_builder_binary(b, op, x, y, &r));
  return r;
}
static zt_value_t splat1(zt_builder_t* b, zt_value_t v, int64_t n) {
  zt_value_t r;
  OK(zt_builder_splat(b, v, 1, &n, &r));
  return r;
}
static zt_value_t splat2(zt_builder_t* b, zt_value_t v, int64_t m, int64_t n) {
  int64_t shape[2] = {m, n};
  zt_value_t r;
  OK(zt_builder_splat(b, v, 2, shape, &r));
  return r;
}
static zt_value_t addptr(zt_builder_t* b, zt_value_t p, zt_value_t off) {
  zt_value_t r;
  OK(zt_builder_addptr(b, p, off, &r));
  return r;
}
static zt_value_t range(zt_builder_t* b, int32_t n) {
  zt_value_t r;
  OK(zt_builder_make_range(b, 0, n, &r));
  return r;
}
static zt_value_t bcast2(zt_builder_t* b, zt_value_t v, int64_t m, int64_t n) {
  int64_t shape[2] = {m, n};
  zt_value_t r;
  OK(zt_builder_broadcast(b, v, 2, shape, &r));
  return r;
}
static zt_value_t expand(zt_builder_t* b, zt_value_t v, int axis) {
  zt_value_t r;
  OK(zt_builder_expand_dims(b, v, axis, &r));
  return r;
}
// row[:, None] * stride + col[None, :] as an [m, n] i32 tensor.
static zt_value_t offsets2(zt_builder_t* b, zt_value_t rows, zt_value_t cols,
                           zt_value_t stride, int64_t m, int64_t n) {
  zt_value_t r = bcast2(b, expand(b, rows, 1), m, n);
  zt_value_t c = bcast2(b, expand(b, cols, 0), m, n);
  return bin(b, ZT_BINARY_ADDI, bin(b, ZT_BINARY_MULI, r, splat2(b, stride, m, n)), c);
}

// Bit helpers for f16 references.
static uint16_t f2h(float f) {
  _Float16 h = (_Float16)f;
  uint16_t u;
  memcpy(&u, &h, 2);
  return u;
}
static float h2f(uint16_t u) {
  _Float16 h;
  memcpy(&h, &u, 2);
  return (float)h;
}

// ---------------------------------------------------------------------------

typedef void (*add_fn_t)(uint64_t, uint64_t, uint64_t, int32_t, int32_t, int32_t,
                         int32_t, int32_t, int32_t, int32_t);

START_TEST(test_vector_add_tail) {
  enum { BLOCK = 256 };
  zt_type_t t[4] = {zt_type_ptr(ZT_F32), zt_type_ptr(ZT_F32), zt_type_ptr(ZT_F32),
                    zt_type_scalar(ZT_I32)};
  zt_value_t a[4];
  zt_builder_t* b = begin("add_kernel", 4, t, a);
  zt_value_t pid, x, y, mask;
  OK(zt_builder_program_id(b, 0, &pid));
  zt_value_t offs = bin(b, ZT_BINARY_ADDI,
                        splat1(b, bin(b, ZT_BINARY_MULI, pid, cint(b, ZT_I32, BLOCK)), BLOCK),
                        range(b, BLOCK));
  OK(zt_builder_cmp(b, ZT_CMP_SLT, offs, splat1(b, a[3], BLOCK), &mask));
  OK(zt_builder_load(b, addptr(b, splat1(b, a[0], BLOCK), offs), mask, ZT_NO_VALUE, &x));
  OK(zt_builder_load(b, addptr(b, splat1(b, a[1], BLOCK), offs), mask, ZT_NO_VALUE, &y));
  OK(zt_builder_store(b, addptr(b, splat1(b, a[2], BLOCK), offs),
                      bin(b, ZT_BINARY_ADDF, x, y), mask));
  OK(zt_builder_end_kernel(b));
  kernel_t k = build(b, "add_kernel");
  int n = 1000, grid = (n + BLOCK - 1) / BLOCK;
  float* xs = malloc(sizeof(float) * n);
  float* ys = malloc(sizeof(float) * n);
  float* zs = malloc(sizeof(float) * (n + 64));
  for (int i = 0; i < n; ++i) {
    xs[i] = (float)i * 0.5f;
    ys[i] = 3.0f - (float)i;
  }
  for (int i = 0; i < n + 64; ++i) zs[i] = -7.0f;  // guard past n stays
  for (int p = 0; p < grid; ++p)
    ((add_fn_t)k.fn)((uint64_t)xs, (uint64_t)ys, (uint64_t)zs, n, p, 0, 0, grid, 1, 1);
  for (int i = 0; i < n; ++i) ck_assert_float_eq(zs[i], xs[i] + ys[i]);
  for (int i = n; i < n + 64; ++i) ck_assert_float_eq(zs[i], -7.0f);
  free(xs);
  free(ys);
  free(zs);
  release(&k);
}
END_TEST

int main(void) {
  Suite* s = suite_create("compiler_cpu");
  TCase* tc = tcase_create("cpu");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_vector_add_tail);
  suite_add_tcase(s, tc);
  SRunner* sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
