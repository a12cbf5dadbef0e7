// The OpenCL backend on Intel's CPU runtime ("opencl:cpu"): discovery by
// name, USM buffers, SPIR-V executables (plain builds, builds linked with
// the emulation library, build failures with logs), argument kinds, grids
// with local sizes from the meta. Skips when the runtime is not installed.
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "zetile/zetile.h"

#define OK(expr)                                                                   \
  do {                                                                             \
    zt_status_t s_ = (expr);                                                       \
    ck_assert_msg(s_ == NULL, "%s: %s", #expr, zt_status_message(s_));             \
  } while (0)

static zt_device_t* open_or_skip(const char* test) {
  zt_device_t* d = NULL;
  zt_status_t s = zt_device_open("opencl:cpu", &d);
  if (s) {
    fprintf(stderr, "SKIP %s: %s\n", test, zt_status_message(s));
    ck_assert_int_eq(zt_status_code(s), ZT_STATUS_NOT_FOUND);
    zt_status_free(s);
    return NULL;
  }
  return d;
}

static zt_artifact_t* artifact_from(const char* file, const char* kernel, const char* args,
                                   int local) {
  char path[512];
  snprintf(path, sizeof path, ZT_BINARY_DIR "/opencl_tests/%s.spv", file);
  FILE* f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "backend_tests.spv not built (target zt_opencl_test_kernels)");
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  zt_artifact_t* a = NULL;
  OK(zt_artifact_create(&a));
  OK(zt_artifact_set(a, "spirv", buf, n));
  char meta[512];
  snprintf(meta, sizeof meta,
           "kernel=%s\ntarget=pvc\nargs=%s\nlocal_size=%d,1,1\nsubgroup_size=16\n"
           "igc_options=-ze-opt-large-register-file\n",
           kernel, args, local);
  OK(zt_artifact_set(a, "meta", meta, strlen(meta)));
  return a;
}

static zt_artifact_t* artifact(const char* kernel, const char* args, int local) {
  return artifact_from("backend_tests", kernel, args, local);
}

START_TEST(test_listed_by_name_after_cpu) {
  zt_device_t* d = open_or_skip(__func__);
  if (!d) return;
  const zt_device_info_t* info = zt_device_info(d);
  ck_assert_str_eq(info->name, "opencl:cpu");
  ck_assert_str_eq(info->backend, "opencl");
  ck_assert_str_eq(info->target, "pvc");
  ck_assert(info->host_memory);
  zt_device_info_t infos[32];
  int32_t n = 0, cpu = -1, ocl = -1;
  OK(zt_device_enumerate(infos, 32, &n));
  for (int32_t i = 0; i < n && i < 32; ++i) {
    if (strcmp(infos[i].name, "cpu") == 0) cpu = i;
    if (strcmp(infos[i].name, "opencl:cpu") == 0) ocl = i;
  }
  ck_assert_int_ge(cpu, 0);
  ck_assert_int_gt(ocl, cpu);  // never the default device while "cpu" exists
  zt_device_t* again = NULL;
  OK(zt_device_open("opencl:cpu", &again));
  ck_assert_ptr_eq(again, d);  // one device object per index
  zt_device_release(again);
  zt_device_t* none = NULL;
  zt_status_t s = zt_device_open("opencl:nosuch", &none);
  ck_assert_int_eq(zt_status_code(s), ZT_STATUS_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(zt_status_message(s), "opencl:nosuch"));
  zt_status_free(s);
  zt_device_release(d);
}
END_TEST

START_TEST(test_buffers_are_host_usm) {
  zt_device_t* d = open_or_skip(__func__);
  if (!d) return;
  zt_buffer_t* b = NULL;
  OK(zt_buffer_alloc(d, 1000, &b));
  ck_assert_uint_eq(zt_buffer_address(b) % 64, 0);
  char in[1000], out[1000];
  for (int i = 0; i < 1000; ++i) in[i] = (char)(i * 7);
  OK(zt_buffer_write(b, 0, in, sizeof in));
  ck_assert_int_eq(memcmp((void*)(uintptr_t)zt_buffer_address(b), in, 1000), 0);
  memset(out, 0, sizeof out);
  OK(zt_buffer_read(b, 10, out, 990));
  ck_assert_int_eq(memcmp(out, in + 10, 990), 0);
  zt_buffer_release(b);
  zt_device_release(d);
}
END_TEST

START_TEST(test_launch_with_tail_and_host_pointers) {
  zt_device_t* d = open_or_skip(__func__);
  if (!d) return;
  zt_artifact_t* a = artifact("scale", "ptr:f32,ptr:f32,f32,i32", 32);
  zt_executable_t* e = NULL;
  OK(zt_executable_create(d, a, &e));
  enum { N = 1000 };
  float* x = malloc(N * sizeof *x);  // plain host memory: host_memory devices take it
  zt_buffer_t* yb = NULL;
  OK(zt_buffer_alloc(d, (N + 32) * sizeof(float), &yb));
  float* y = (float*)(uintptr_t)zt_buffer_address(yb);
  for (int i = 0; i < N; ++i) x[i] = (float)i;
  for (int i = 0; i < N + 32; ++i) y[i] = -1;
  zt_arg_t args[4] = {{ZT_PTR, {.ptr = (uint64_t)(uintptr_t)x}},
                      {ZT_PTR, {.ptr = zt_buffer_address(yb)}},
                      {ZT_F32, {.f = 0.5}},
                      {ZT_I32, {.i = N}}};
  uint32_t grid[3] = {(N + 31) / 32, 1, 1};
  OK(zt_launch(e, grid, 4, args));
  OK(zt_device_synchronize(d));
  for (int i = 0; i < N; ++i) ck_assert_float_eq(y[i], 0.5f * (float)i + 16.0f);
  for (int i = N; i < N + 32; ++i) ck_assert_float_eq(y[i], -1.0f);
  zt_kernel_stats_t st;
  OK(zt_executable_stats(e, &st));
  ck_assert_int_eq(st.max_subgroup_size, 16);
  zt_executable_release(e);
  zt_artifact_release(a);
  zt_buffer_release(yb);
  free(x);
  zt_device_release(d);
}
END_TEST

START_TEST(test_every_scalar_kind_reaches_the_kernel) {
  zt_device_t* d = open_or_skip(__func__);
  if (!d) return;
  zt_artifact_t* a = artifact("arg_kinds", "ptr:f64,i8,i16,i32,i64,f32,f64,f16", 16);
  zt_executable_t* e = NULL;
  OK(zt_executable_create(d, a, &e));
  double out[7] = {0};
  zt_arg_t args[8] = {{ZT_PTR, {.ptr = (uint64_t)(uintptr_t)out}}, {ZT_I8, {.i = -5}},
                      {ZT_I16, {.i = -300}},  {ZT_I32, {.i = 70000}},
                      {ZT_I64, {.i = -5000000000LL}}, {ZT_F32, {.f = 1.5}},
                      {ZT_F64, {.f = 1e300}}, {ZT_F16, {.bits = 0x3e00}} /* 1.5 */};
  uint32_t grid[3] = {1, 1, 1};
  OK(zt_launch(e, grid, 8, args));
  OK(zt_device_synchronize(d));
  const double want[7] = {-5, -300, 70000, -5000000000.0, 1.5, 1e300, 1.5};
  for (int i = 0; i < 7; ++i) ck_assert_msg(out[i] == want[i], "arg %d: %g", i + 1, out[i]);
  zt_executable_release(e);
  zt_artifact_release(a);
  zt_device_release(d);
}
END_TEST

START_TEST(test_emulated_builtin_is_linked) {
  zt_device_t* d = open_or_skip(__func__);
  if (!d) return;
  zt_artifact_t* a = artifact("uses_mad", "ptr:f32", 16);
  zt_executable_t* e = NULL;
  OK(zt_executable_create(d, a, &e));
  float out[32] = {0};
  zt_arg_t arg = {ZT_PTR, {.ptr = (uint64_t)(uintptr_t)out}};
  uint32_t grid[3] = {2, 1, 1};
  OK(zt_launch(e, grid, 1, &arg));
  OK(zt_device_synchronize(d));
  for (int i = 0; i < 32; ++i) ck_assert_float_eq(out[i], 33.0f);
  zt_executable_release(e);
  zt_artifact_release(a);
  zt_device_release(d);
}
END_TEST

START_TEST(test_build_failures_are_statuses_with_logs) {
  zt_device_t* d = open_or_skip(__func__);
  if (!d) return;
  zt_executable_t* e = NULL;
  zt_artifact_t* a = artifact_from("backend_unresolved", "unresolved", "ptr:f32", 16);
  zt_status_t s = zt_executable_create(d, a, &e);
  ck_assert_ptr_null(e);
  ck_assert_msg(s != NULL, "a kernel calling an undefined function was built");
  fprintf(stderr, "unresolved import: %s\n", zt_status_message(s));
  zt_status_free(s);
  zt_artifact_release(a);
  a = artifact("no_such_kernel", "ptr:f32", 16);
  s = zt_executable_create(d, a, &e);
  ck_assert_ptr_nonnull(strstr(zt_status_message(s), "CL_INVALID_KERNEL_NAME"));
  zt_status_free(s);
  zt_artifact_release(a);
  // Not SPIR-V at all.
  ck_assert_ptr_null(e);
  OK(zt_artifact_create(&a));
  OK(zt_artifact_set(a, "spirv", "garbage!", 8));
  const char* meta = "kernel=k\ntarget=pvc\nargs=ptr:f32\nlocal_size=16,1,1\n";
  OK(zt_artifact_set(a, "meta", meta, strlen(meta)));
  s = zt_executable_create(d, a, &e);
  ck_assert_ptr_nonnull(s);
  zt_status_free(s);
  // A CPU-target artifact is refused by name.
  const char* cpu_meta = "kernel=k\ntarget=cpu\nargs=ptr:f32\n";
  OK(zt_artifact_set(a, "meta", cpu_meta, strlen(cpu_meta)));
  s = zt_executable_create(d, a, &e);
  ck_assert_int_eq(zt_status_code(s), ZT_STATUS_INVALID_ARGUMENT);
  zt_status_free(s);
  zt_artifact_release(a);
  zt_device_release(d);
}
END_TEST

int main(void) {
#if defined(__SANITIZE_ADDRESS__)
  // Intel's runtime is loaded only on request in sanitizer builds.
  setenv("ZETILE_OPENCL", "0", 1);
#endif
  Suite* s = suite_create("opencl_backend");
  TCase* tc = tcase_create("backend");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_listed_by_name_after_cpu);
  tcase_add_test(tc, test_buffers_are_host_usm);
  tcase_add_test(tc, test_launch_with_tail_and_host_pointers);
  tcase_add_test(tc, test_every_scalar_kind_reaches_the_kernel);
  tcase_add_test(tc, test_emulated_builtin_is_linked);
  tcase_add_test(tc, test_build_failures_are_statuses_with_logs);
  suite_add_tcase(s, tc);
  return ct_run_suite(s);
}
