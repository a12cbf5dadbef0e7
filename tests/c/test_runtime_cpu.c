// The CPU backend and the device registry: buffers, the thread pool and the
// libffi call path (through a hand-written kernel with the CPU ABI), and the
// argument checks of zt_launch.
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
#include "cpu/cpu_backend.h"
#include "zetile/zetile.h"

#define OK(expr)                                                                   \
  do {                                                                             \
    zt_status_t s_ = (expr);                                                       \
    ck_assert_msg(s_ == NULL, "%s: %s", #expr, zt_status_message(s_));             \
  } while (0)

static void expect_code(zt_status_t s, zt_status_code_t code, const char* needle) {
  ck_assert_msg(zt_status_code(s) == code, "expected %s, got %s: %s",
                zt_status_code_name(code), zt_status_code_name(zt_status_code(s)),
                zt_status_message(s));
  if (needle)
    ck_assert_msg(strstr(zt_status_message(s), needle), "'%s' not in '%s'", needle,
                  zt_status_message(s));
  zt_status_free(s);
}

START_TEST(test_enumerate_and_open) {
  unsetenv("ZETILE_DEVICE");
  zt_device_info_t infos[16];
  int32_t n = 0;
  OK(zt_device_enumerate(infos, 16, &n));
  ck_assert_int_ge(n, 1);
  int32_t cpu = -1, gpus = 0;
  for (int32_t i = 0; i < n && i < 16; ++i) {
    if (strcmp(infos[i].name, "cpu") == 0) cpu = i;
    if (strcmp(infos[i].backend, "level_zero") == 0) gpus++;
  }
  ck_assert_int_ge(cpu, 0);
  ck_assert(infos[cpu].host_memory);
  if (!gpus) {  // without an Intel GPU the default device is the CPU target
    zt_device_t* dd = NULL;
    OK(zt_device_open(NULL, &dd));
    ck_assert_str_eq(zt_device_info(dd)->name, "cpu");
    zt_device_release(dd);
  }
  int32_t m = 0;
  OK(zt_device_enumerate(NULL, 0, &m));  // counting only
  ck_assert_int_eq(m, n);
  zt_device_t* d = NULL;
  OK(zt_device_open("cpu", &d));
  ck_assert_str_eq(zt_device_info(d)->target, "cpu");
  ck_assert_int_ge(zt_device_info(d)->compute_units, 1);
  zt_device_release(d);
  OK(zt_device_open("cpu:0", &d));
  zt_device_release(d);
  expect_code(zt_device_open("cpu:1", &d), ZT_STATUS_NOT_FOUND, "cpu:1");
  // backend:NAME opens a device by its full name (opencl:cpu); an unknown
  // one is not found, a negative index is malformed.
  expect_code(zt_device_open("cpu:x", &d), ZT_STATUS_NOT_FOUND, "cpu:x");
  expect_code(zt_device_open("cpu:-1", &d), ZT_STATUS_INVALID_ARGUMENT, "cpu:-1");
  expect_code(zt_device_open("tpu", &d), ZT_STATUS_INVALID_ARGUMENT, "level_zero");
  setenv("ZETILE_DEVICE", "cpu", 1);
  OK(zt_device_open(NULL, &d));
  ck_assert_str_eq(zt_device_info(d)->name, "cpu");
  zt_device_release(d);
  setenv("ZETILE_DEVICE", "nope:3", 1);
  expect_code(zt_device_open("default", &d), ZT_STATUS_INVALID_ARGUMENT, "ZETILE_DEVICE");
  zt_device_release(NULL);  // harmless
}
END_TEST

START_TEST(test_buffers) {
  zt_device_t* d = NULL;
  OK(zt_device_open("cpu", &d));
  zt_buffer_t* b = NULL;
  OK(zt_buffer_alloc(d, 1000, &b));
  ck_assert_uint_eq(zt_buffer_size(b), 1000);
  ck_assert_uint_eq(zt_buffer_address(b) % 64, 0);
  char src[1000], dst[1000];
  for (int i = 0; i < 1000; ++i) src[i] = (char)(i * 7);
  OK(zt_buffer_write(b, 0, src, 1000));
  memset(dst, 0, sizeof dst);
  OK(zt_buffer_read(b, 10, dst, 990));
  ck_assert_mem_eq(dst, src + 10, 990);
  expect_code(zt_buffer_write(b, 999, src, 2), ZT_STATUS_INVALID_ARGUMENT, "outside");
  expect_code(zt_buffer_read(b, 1001, dst, 0), ZT_STATUS_INVALID_ARGUMENT, "outside");
  zt_device_release(d);  // the buffer keeps the device alive
  ck_assert_mem_eq((void*)(uintptr_t)zt_buffer_address(b), src, 1000);
  zt_buffer_release(b);
  zt_buffer_release(NULL);
}
END_TEST

// --- a kernel with every argument kind -------------------------------------

#define META_ALL_KINDS                                                             \
  "kernel=all_kinds\ntarget=cpu\n"                                                 \
  "args=ptr:i32,i1,i8,i16,i32,i64,f16,bf16,f32,f64,ptr:f32\n"                       \
  "local_size=1,1,1\nsubgroup_size=1\n"

static atomic_int bad_args;
static pthread_t seen_threads[64];
static atomic_int num_seen;
static pthread_mutex_t seen_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int sleep_us;

static void note_thread(void) {
  pthread_t self = pthread_self();
  pthread_mutex_lock(&seen_mu);
  int n = atomic_load(&num_seen);
  for (int i = 0; i < n; ++i)
    if (pthread_equal(seen_threads[i], self)) {
      pthread_mutex_unlock(&seen_mu);
      return;
    }
  if (n < 64) {
    seen_threads[n] = self;
    atomic_store(&num_seen, n + 1);
  }
  pthread_mutex_unlock(&seen_mu);
}

static void all_kinds(uint64_t counts, int8_t b, int8_t i8, int16_t i16, int32_t i32,
                      int64_t i64, uint16_t f16, uint16_t bf16, float f32, double f64,
                      uint64_t out, int32_t px, int32_t py, int32_t pz, int32_t nx,
                      int32_t ny, int32_t nz) {
  if (b != 1 || i8 != -5 || i16 != -1234 || i32 != 123456789 ||
      i64 != -1234567890123LL || f16 != 0x3c00 || bf16 != 0x3f80 || f32 != 2.5f ||
      f64 != -0.125 || px < 0 || px >= nx || py < 0 || py >= ny || pz < 0 || pz >= nz)
    atomic_fetch_add(&bad_args, 1);
  int32_t linear = px + nx * (py + ny * pz);
  atomic_fetch_add((atomic_int*)(uintptr_t)counts + linear, 1);
  if (linear == 0) *(float*)(uintptr_t)out = f32 * (float)f64;
  note_thread();
  int us = atomic_load(&sleep_us);
  if (us) usleep((useconds_t)us);
}

static void make_args(zt_arg_t args[11], uint64_t counts, uint64_t out) {
  args[0] = (zt_arg_t){ZT_PTR, {.ptr = counts}};
  args[1] = (zt_arg_t){ZT_I1, {.i = 1}};
  args[2] = (zt_arg_t){ZT_I8, {.i = -5}};
  args[3] = (zt_arg_t){ZT_I16, {.i = -1234}};
  args[4] = (zt_arg_t){ZT_I32, {.i = 123456789}};
  args[5] = (zt_arg_t){ZT_I64, {.i = -1234567890123LL}};
  args[6] = (zt_arg_t){ZT_F16, {.bits = 0x3c00}};
  args[7] = (zt_arg_t){ZT_BF16, {.bits = 0x3f80}};
  args[8] = (zt_arg_t){ZT_F32, {.f = 2.5}};
  args[9] = (zt_arg_t){ZT_F64, {.f = -0.125}};
  args[10] = (zt_arg_t){ZT_PTR, {.ptr = out}};
}

static void run_grid(uint32_t gx, uint32_t gy, uint32_t gz, int us) {
  zt_device_t* d = NULL;
  OK(zt_device_open("cpu", &d));
  zt_executable_t* e = NULL;
  OK(zt_cpu_executable_create_from_function(d, META_ALL_KINDS, (void*)all_kinds, &e));
  size_t total = (size_t)gx * gy * gz;
  zt_buffer_t *counts = NULL, *out = NULL;
  OK(zt_buffer_alloc(d, total * sizeof(int32_t), &counts));
  OK(zt_buffer_alloc(d, sizeof(float), &out));
  int32_t* zeros = calloc(total, sizeof(int32_t));
  OK(zt_buffer_write(counts, 0, zeros, total * sizeof(int32_t)));
  zt_arg_t args[11];
  make_args(args, zt_buffer_address(counts), zt_buffer_address(out));
  atomic_store(&bad_args, 0);
  atomic_store(&sleep_us, us);
  uint32_t grid[3] = {gx, gy, gz};
  OK(zt_launch(e, grid, 11, args));
  OK(zt_device_synchronize(d));
  int32_t* got = malloc(total * sizeof(int32_t));
  OK(zt_buffer_read(counts, 0, got, total * sizeof(int32_t)));
  for (size_t i = 0; i < total; ++i)
    ck_assert_msg(got[i] == 1, "program %zu ran %d times", i, got[i]);
  ck_assert_int_eq(atomic_load(&bad_args), 0);
  float r = 0;
  OK(zt_buffer_read(out, 0, &r, sizeof r));
  ck_assert(r == -0.3125f);
  free(got);
  free(zeros);
  zt_buffer_release(counts);
  zt_buffer_release(out);
  zt_executable_release(e);
  zt_device_release(d);
}

START_TEST(test_launch_every_kind_3d_grid) { run_grid(7, 5, 3, 0); }
END_TEST

START_TEST(test_launch_single_program) { run_grid(1, 1, 1, 0); }
END_TEST

START_TEST(test_launch_large_grid) { run_grid(256, 64, 4, 0); }
END_TEST

START_TEST(test_launch_uses_several_threads) {
  setenv("ZETILE_NUM_THREADS", "4", 1);
  atomic_store(&num_seen, 0);
  run_grid(16, 4, 2, 2000);
  ck_assert_int_ge(atomic_load(&num_seen), 2);
  ck_assert_int_le(atomic_load(&num_seen), 4);
  // The pool persists: a second launch reuses it and still counts exactly once.
  run_grid(9, 9, 9, 0);
}
END_TEST

static void* launch_thread(void* p) {
  (void)p;
  run_grid(33, 3, 2, 0);
  return NULL;
}

START_TEST(test_concurrent_launches) {
  setenv("ZETILE_NUM_THREADS", "3", 1);
  pthread_t t[4];
  for (int i = 0; i < 4; ++i) pthread_create(&t[i], NULL, launch_thread, NULL);
  for (int i = 0; i < 4; ++i) pthread_join(t[i], NULL);
}
END_TEST

START_TEST(test_argument_checks) {
  zt_device_t* d = NULL;
  OK(zt_device_open("cpu", &d));
  zt_executable_t* e = NULL;
  OK(zt_cpu_executable_create_from_function(d, META_ALL_KINDS, (void*)all_kinds, &e));
  zt_arg_t args[11];
  make_args(args, 0, 0);
  uint32_t grid[3] = {1, 1, 1};
  expect_code(zt_launch(e, grid, 10, args), ZT_STATUS_INVALID_ARGUMENT,
              "kernel 'all_kinds' takes 11 arguments, 10 given");
  args[4].kind = ZT_I64;
  expect_code(zt_launch(e, grid, 11, args), ZT_STATUS_INVALID_ARGUMENT,
              "kernel 'all_kinds': argument 4 is i32, but i64 was given");
  make_args(args, 0, 0);
  args[10].kind = ZT_F32;
  expect_code(zt_launch(e, grid, 11, args), ZT_STATUS_INVALID_ARGUMENT,
              "argument 10 is a pointer to f32");
  expect_code(zt_launch(e, NULL, 11, args), ZT_STATUS_INVALID_ARGUMENT, NULL);
  // An empty grid runs nothing (the NULL pointers above are never touched).
  make_args(args, 0, 0);
  uint32_t empty[3] = {4, 0, 1};
  OK(zt_launch(e, empty, 11, args));
  zt_executable_release(e);
  zt_executable_release(NULL);
  zt_device_release(d);
}
END_TEST

START_TEST(test_executable_from_artifact) {
  zt_device_t* d = NULL;
  OK(zt_device_open("cpu", &d));
  zt_artifact_t* a = NULL;
  OK(zt_artifact_create(&a));
  zt_executable_t* e = NULL;
  expect_code(zt_executable_create(d, a, &e), ZT_STATUS_NOT_FOUND, "meta");
  const char* xe_meta = "kernel=k\ntarget=pvc\nargs=ptr:f32\n";
  OK(zt_artifact_set(a, "meta", xe_meta, strlen(xe_meta)));
  expect_code(zt_executable_create(d, a, &e), ZT_STATUS_INVALID_ARGUMENT, "target 'pvc'");
  const char* cpu_meta = "kernel=k\ntarget=cpu\nargs=ptr:f32\n";
  OK(zt_artifact_set(a, "meta", cpu_meta, strlen(cpu_meta)));
  expect_code(zt_executable_create(d, a, &e), ZT_STATUS_NOT_FOUND, "llvm");
  ck_assert_ptr_null(e);
  zt_artifact_release(a);
  zt_device_release(d);
}
END_TEST

START_TEST(test_stats_unknown_on_cpu) {
  zt_device_t* d = NULL;
  OK(zt_device_open("cpu", &d));
  zt_executable_t* e = NULL;
  OK(zt_cpu_executable_create_from_function(d, META_ALL_KINDS, (void*)all_kinds, &e));
  zt_kernel_stats_t st;
  OK(zt_executable_stats(e, &st));
  ck_assert_int_eq(st.spill_bytes, -1);
  zt_executable_release(e);
  zt_device_release(d);
}
END_TEST

int main(void) {
  Suite* suite = suite_create("runtime_cpu");
  TCase* tc = tcase_create("cpu");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_enumerate_and_open);
  tcase_add_test(tc, test_buffers);
  tcase_add_test(tc, test_launch_every_kind_3d_grid);
  tcase_add_test(tc, test_launch_single_program);
  tcase_add_test(tc, test_launch_large_grid);
  tcase_add_test(tc, test_launch_uses_several_threads);
  tcase_add_test(tc, test_concurrent_launches);
  tcase_add_test(tc, test_argument_checks);
  tcase_add_test(tc, test_executable_from_artifact);
  tcase_add_test(tc, test_stats_unknown_on_cpu);
  suite_add_tcase(suite, tc);
  return ct_run_suite(suite);
}
