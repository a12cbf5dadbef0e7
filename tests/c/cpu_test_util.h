// Helpers shared by the test_cpu_*.c tests: build a kernel with the C
// builder, compile it for the CPU, and either call the JIT'ed function
// directly (one program, chosen ids) or launch it on the CPU device (the
// grid in parallel on the thread pool, as users run it).
#ifndef ZETILE_TESTS_C_CPU_TEST_UTIL_H_
#define ZETILE_TESTS_C_CPU_TEST_UTIL_H_

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "compiler_api.h"
#include "zetile/zetile.h"

#define OK(expr)                                                              \
  do {                                                                        \
    zt_status_t s_ = (expr);                                                  \
    ck_assert_msg(s_ == NULL, "%s failed: %s", #expr, zt_status_message(s_)); \
  } while (0)

typedef struct ct_kernel_s {
  zt_artifact_t* artifact;
  void* fn;  // the kernel with the CPU ABI (jit/compiler_api.h)
  void* engine;
  const zt_compiler_api_t* api;
  zt_device_t* device;  // made by the first ct_launch
  zt_executable_t* exe;
} ct_kernel_t;

static inline zt_builder_t* ct_begin(const char* name, int n, const zt_type_t* types,
                                     zt_value_t* args) {
  zt_builder_t* b;
  OK(zt_builder_create(&b));
  zt_builder_set_loc(b, "kern.py", 7, 3);
  OK(zt_builder_begin_kernel(b, name, n, types, NULL, args));
  return b;
}

/// Ends the kernel, compiles it for the CPU and JIT-loads it; releases b.
/// ZT_TEST_DUMP=1 prints the CPU lowering's MLIR.
static inline ct_kernel_t ct_build(zt_builder_t* b, const char* name) {
  ct_kernel_t k = {0};
  const char* text;
  size_t size;
  OK(zt_builder_end_kernel(b));
  OK(zt_builder_module_text(b, &text, &size));
  zt_compile_options_t opt = {.target = "cpu"};
  zt_status_t s = zt_compile(text, size, &opt, &k.artifact);
  ck_assert_msg(s == NULL, "compile failed: %s\n%s", zt_status_message(s), text);
  OK(zt_compiler_load(&k.api));
  const void* mlir;
  size_t ms;
  OK(zt_artifact_get(k.artifact, "mlir", &mlir, &ms));
  if (getenv("ZT_TEST_DUMP")) fprintf(stderr, "%s\n%.*s\n", text, (int)ms, (const char*)mlir);
  const void* llvm;
  size_t llvm_size;
  OK(zt_artifact_get(k.artifact, "llvm", &llvm, &llvm_size));
  s = k.api->cpu_load(llvm, llvm_size, name, &k.fn, &k.engine);
  ck_assert_msg(s == NULL, "cpu_load failed: %s\n%.*s", zt_status_message(s), (int)ms,
                (const char*)mlir);
  ck_assert_ptr_nonnull(k.fn);
  zt_builder_release(b);
  return k;
}

static inline void ct_release(ct_kernel_t* k) {
  zt_executable_release(k->exe);
  zt_device_release(k->device);
  k->api->cpu_unload(k->engine);
  zt_artifact_release(k->artifact);
}

/// Launches the kernel on the CPU device over grid (host pointers are valid
/// device addresses there) and returns the launch's status.
static inline zt_status_t ct_launch(ct_kernel_t* k, uint32_t gx, uint32_t gy,
                                    uint32_t gz, int32_t n, const zt_arg_t* args) {
  if (!k->device) ZT_RETURN_IF_ERROR(zt_device_open("cpu", &k->device));
  if (!k->exe) ZT_RETURN_IF_ERROR(zt_executable_create(k->device, k->artifact, &k->exe));
  uint32_t grid[3] = {gx, gy, gz};
  return zt_launch(k->exe, grid, n, args);
}

static inline zt_arg_t ct_ptr(const void* p) {
  zt_arg_t a = {.kind = ZT_PTR};
  a.value.ptr = (uint64_t)(uintptr_t)p;
  return a;
}

static inline zt_arg_t ct_int(zt_scalar_kind_t k, int64_t v) {
  zt_arg_t a = {.kind = k};
  a.value.i = v;
  return a;
}

static inline zt_value_t ct_cint(zt_builder_t* b, zt_scalar_kind_t k, int64_t v) {
  zt_value_t r;
  OK(zt_builder_const_int(b, k, v, &r));
  return r;
}

static inline zt_value_t ct_splat(zt_builder_t* b, zt_value_t v, int32_t rank,
                                  const int64_t* shape) {
  zt_value_t r;
  OK(zt_builder_splat(b, v, rank, shape, &r));
  return r;
}

static inline zt_value_t ct_bin(zt_builder_t* b, zt_binary_op_t op, zt_value_t x,
                                zt_value_t y) {
  zt_value_t r;
  OK(zt_builder_binary(b, op, x, y, &r));
  return r;
}

/// ptr + range(0, n) (a 1-D tensor of pointers).
static inline zt_value_t ct_ptrs(zt_builder_t* b, zt_value_t ptr, int64_t n,
                                 zt_value_t* out_range) {
  zt_value_t r, p;
  OK(zt_builder_make_range(b, 0, (int32_t)n, &r));
  OK(zt_builder_splat(b, ptr, 1, &n, &p));
  OK(zt_builder_addptr(b, p, r, &p));
  if (out_range) *out_range = r;
  return p;
}

#endif  // ZETILE_TESTS_C_CPU_TEST_UTIL_H_
