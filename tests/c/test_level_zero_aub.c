// The Level Zero backend on Intel's real driver (NEO) in AUB mode: a device
// without hardware. Module builds run the real IGC; allocations, launches
// and synchronization go through the driver, but kernels do not compute and
// copies do not move data, so no test here looks at buffer contents.
//
// Each test runs in its own forked process (Check's default) and sets the
// environment before the first zetile call, which is when libzetile loads
// the Level Zero loader.
#include <check.h>
#include <dlfcn.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_run.h"
#include "xe_kernels.h"
#include "zetile/zetile.h"

#define OK(expr)                                                                   \
  do {                                                                             \
    zt_status_t s_ = (expr);                                                       \
    ck_assert_msg(s_ == NULL, "%s: %s", #expr, zt_status_message(s_));             \
  } while (0)

#define E1_META                                                                    \
  "kernel=tail1d\ntarget=pvc\n"                                                    \
  "args=ptr:f32,ptr:f32,i64,i64,i64,ptr:f32,ptr:f32,i64,i64,i64,i64\n"              \
  "local_size=16,1,1\nsubgroup_size=16\n"

static char cache_dir[256];

// NULL when NEO and the loader can be used, else why not.
static const char* neo_unusable(void) {
#if defined(__SANITIZE_ADDRESS__)
  // NEO opens IGC with RTLD_DEEPBIND, which AddressSanitizer refuses (the
  // process exits): these tests cannot run in a sanitizer build.
  return "AddressSanitizer build (NEO dlopens IGC with RTLD_DEEPBIND)";
#endif
  void* h = dlopen("libze_intel_gpu.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!h) return "Intel's Level Zero driver (libze_intel_gpu, package intel-opencl-icd) is not installed";
  dlclose(h);
  h = dlopen("libze_loader.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!h) return "the Level Zero loader (libze1) is not installed";
  dlclose(h);
  return NULL;
}

static void aub_env(void) {
  setenv("NEOReadDebugKeys", "1", 1);
  setenv("SetCommandStreamReceiver", "1", 1);
  setenv("ProductFamilyOverride", "pvc", 1);
  setenv("OverrideMaxWorkgroupSize", "1024", 1);
  setenv("AUBDumpCaptureFileName", "/dev/null", 1);
}

static void setup(void) {
  snprintf(cache_dir, sizeof cache_dir, "/tmp/zt-ze-test-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(cache_dir));
  setenv("ZETILE_CACHE_DIR", cache_dir, 1);
  unsetenv("ZETILE_LEVEL_ZERO");
  unsetenv("ZETILE_DEVICE");
  unsetenv("ZETILE_TARGET");
  unsetenv("ZETILE_COMPAT");
  unsetenv("ZETILE_ZE_SYNC");
  unsetenv("ZETILE_ZE_TIMESTAMP_QUERY");
}

static void teardown(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache_dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", cache_dir);
}

#define REQUIRE_NEO()                                            \
  do {                                                           \
    const char* why_ = neo_unusable();                           \
    if (why_) {                                                  \
      fprintf(stderr, "SKIP %s: %s\n", __func__, why_);          \
      return;                                                    \
    }                                                            \
    aub_env();                                                   \
  } while (0)

static void* read_file(const char* name, size_t* out_size) {
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/data/%s", ZT_SOURCE_DIR, name);
  FILE* f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void* data = malloc((size_t)n);
  ck_assert_uint_eq(fread(data, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *out_size = (size_t)n;
  return data;
}

static zt_artifact_t* make_artifact(const char* spv_file, const char* meta) {
  size_t n = 0;
  void* spv = read_file(spv_file, &n);
  zt_artifact_t* a = NULL;
  OK(zt_artifact_create(&a));
  OK(zt_artifact_set(a, "spirv", spv, n));
  OK(zt_artifact_set(a, "meta", meta, strlen(meta)));
  free(spv);
  return a;
}

static void expect_code(zt_status_t s, zt_status_code_t code, const char* needle) {
  ck_assert_msg(zt_status_code(s) == code, "expected %s, got %s: %s",
                zt_status_code_name(code), zt_status_code_name(zt_status_code(s)),
                zt_status_message(s));
  if (needle)
    ck_assert_msg(strstr(zt_status_message(s), needle), "'%s' not in '%s'", needle,
                  zt_status_message(s));
  zt_status_free(s);
}

START_TEST(test_enumerate_finds_pvc) {
  REQUIRE_NEO();
  zt_device_info_t infos[16];
  int32_t n = 0;
  OK(zt_device_enumerate(infos, 16, &n));
  ck_assert_int_ge(n, 2);
  ck_assert_str_eq(infos[0].name, "level_zero:0");
  ck_assert_str_eq(infos[0].backend, "level_zero");
  ck_assert_str_eq(infos[0].target, "pvc");
  ck_assert(!infos[0].host_memory);
  ck_assert_int_gt(infos[0].compute_units, 0);
  ck_assert_uint_gt(infos[0].memory_bytes, 0);
  ck_assert_int_gt((int)strlen(infos[0].driver_version), 0);
  fprintf(stderr, "AUB device: %s (%s), driver %s, %d EUs, %llu bytes\n",
          infos[0].description, infos[0].target, infos[0].driver_version,
          infos[0].compute_units, (unsigned long long)infos[0].memory_bytes);
  // The default device is the first GPU.
  zt_device_t* d = NULL;
  OK(zt_device_open(NULL, &d));
  ck_assert_str_eq(zt_device_info(d)->name, "level_zero:0");
  zt_device_release(d);
  OK(zt_device_open("level_zero", &d));
  // Opening the same GPU again shares the device (one context).
  zt_device_t* d2 = NULL;
  OK(zt_device_open("level_zero:0", &d2));
  ck_assert_ptr_eq(d, d2);
  zt_device_release(d2);
  zt_device_release(d);
  OK(zt_device_open("level_zero:0", &d));  // after the last release: a new one
  zt_device_release(d);
  expect_code(zt_device_open("level_zero:9", &d), ZT_STATUS_NOT_FOUND, "level_zero:9");
}
END_TEST

START_TEST(test_build_launch_stats_native_cache) {
  REQUIRE_NEO();
  zt_device_t* d = NULL;
  OK(zt_device_open("level_zero:0", &d));
  zt_cache_stats_t base;  // after the device probe's own cache traffic
  zt_cache_get_stats(&base);
  zt_buffer_t *x = NULL, *y = NULL;
  OK(zt_buffer_alloc(d, 1000 * sizeof(float), &x));
  OK(zt_buffer_alloc(d, 1000 * sizeof(float), &y));
  ck_assert_uint_ne(zt_buffer_address(x), 0);
  float host[1000];
  for (int i = 0; i < 1000; ++i) host[i] = (float)i;
  OK(zt_buffer_write(x, 0, host, sizeof host));
  OK(zt_buffer_read(y, 0, host, sizeof host));

  zt_artifact_t* a = make_artifact("e1_gather_scatter_1d_mask.pvc.spv", E1_META);
  zt_executable_t* e = NULL;
  OK(zt_executable_create(d, a, &e));
  zt_cache_stats_t st;
  zt_cache_get_stats(&st);
  ck_assert_int_eq(st.native_builds, 1);
  ck_assert_int_eq(st.native_hits, 0);
  ck_assert_int_eq(st.writes, base.writes + 1);

  zt_kernel_stats_t ks;
  OK(zt_executable_stats(e, &ks));
  ck_assert_int_eq(ks.spill_bytes, 0);
  ck_assert_int_ge(ks.private_bytes, 0);
  ck_assert_int_eq(ks.max_subgroup_size, 16);

  uint64_t px = zt_buffer_address(x), py = zt_buffer_address(y);
  zt_arg_t args[11] = {
      {ZT_PTR, {.ptr = px}}, {ZT_PTR, {.ptr = px}}, {ZT_I64, {.i = 0}},
      {ZT_I64, {.i = 1000}}, {ZT_I64, {.i = 1}},    {ZT_PTR, {.ptr = py}},
      {ZT_PTR, {.ptr = py}}, {ZT_I64, {.i = 0}},    {ZT_I64, {.i = 1000}},
      {ZT_I64, {.i = 1}},    {ZT_I64, {.i = 1000}},
  };
  uint32_t grid[3] = {(1000 + 15) / 16, 1, 1};
  OK(zt_launch(e, grid, 11, args));
  OK(zt_launch(e, grid, 11, args));
  OK(zt_device_synchronize(d));
  args[2].kind = ZT_I32;
  expect_code(zt_launch(e, grid, 11, args), ZT_STATUS_INVALID_ARGUMENT, "argument 2 is i64");
  zt_executable_release(e);

  // Second creation: the driver's binary comes from the cache.
  OK(zt_executable_create(d, a, &e));
  zt_cache_get_stats(&st);
  ck_assert_int_eq(st.native_builds, 1);
  ck_assert_int_eq(st.native_hits, 1);
  args[2].kind = ZT_I64;
  OK(zt_launch(e, grid, 11, args));
  OK(zt_device_synchronize(d));
  zt_executable_release(e);

  // Other build flags make another native entry.
  zt_artifact_t* b = make_artifact(
      "e1_gather_scatter_1d_mask.pvc.spv",
      E1_META "igc_options=-ze-opt-large-register-file\n");
  OK(zt_executable_create(d, b, &e));
  zt_cache_get_stats(&st);
  ck_assert_int_eq(st.native_builds, 2);
  OK(zt_executable_stats(e, &ks));
  ck_assert_int_eq(ks.num_grf, 256);
  zt_executable_release(e);

  zt_artifact_release(b);
  zt_artifact_release(a);
  zt_buffer_release(x);
  zt_buffer_release(y);
  zt_device_release(d);
}
END_TEST

// Many queued launches, buffers and executables released while launches may
// still be queued (the backend drains first), in both list modes.
static void queued_launches(void) {
  zt_device_t* d = NULL;
  OK(zt_device_open("level_zero:0", &d));
  zt_buffer_t *x = NULL, *y = NULL;
  OK(zt_buffer_alloc(d, 4096, &x));
  OK(zt_buffer_alloc(d, 4096, &y));
  zt_artifact_t* a = make_artifact("e1_gather_scatter_1d_mask.pvc.spv", E1_META);
  zt_executable_t* e = NULL;
  OK(zt_executable_create(d, a, &e));
  uint64_t px = zt_buffer_address(x), py = zt_buffer_address(y);
  zt_arg_t args[11] = {
      {ZT_PTR, {.ptr = px}}, {ZT_PTR, {.ptr = px}}, {ZT_I64, {.i = 0}},
      {ZT_I64, {.i = 1024}}, {ZT_I64, {.i = 1}},    {ZT_PTR, {.ptr = py}},
      {ZT_PTR, {.ptr = py}}, {ZT_I64, {.i = 0}},    {ZT_I64, {.i = 1024}},
      {ZT_I64, {.i = 1}},    {ZT_I64, {.i = 1024}},
  };
  uint32_t grid[3] = {64, 1, 1};
  for (int i = 0; i < 50; ++i) OK(zt_launch(e, grid, 11, args));
  OK(zt_device_synchronize(d));
  OK(zt_device_synchronize(d));  // nothing pending: a no-op
  for (int i = 0; i < 20; ++i) OK(zt_launch(e, grid, 11, args));
  float host[16];
  OK(zt_buffer_read(y, 0, host, sizeof host));  // ordered after the launches
  OK(zt_launch(e, grid, 11, args));
  zt_buffer_release(x);  // drains the queued launch first
  zt_executable_release(e);
  zt_buffer_release(y);
  zt_artifact_release(a);
  zt_device_release(d);
}

START_TEST(test_queued_launches_async) {
  REQUIRE_NEO();
  queued_launches();
}
END_TEST

START_TEST(test_queued_launches_sync_list) {
  REQUIRE_NEO();
  setenv("ZETILE_ZE_SYNC", "1", 1);
  queued_launches();
}
END_TEST

// Kernel timestamps: every launch in a timing region is counted, across
// more launches than the device's pool of timestamp events (64) and a
// region with none; launches outside a region are not. NEO in AUB mode
// executes no command, so the device writes no timestamp: all are
// reported missing and the time is 0 (the values mean nothing here; only
// the API path runs). The CPU has no device timer.
static void timed_launches(void) {
  zt_device_t* d = NULL;
  OK(zt_device_open("level_zero:0", &d));
  zt_buffer_t* x = NULL;
  OK(zt_buffer_alloc(d, 1000 * sizeof(float), &x));
  zt_artifact_t* a = make_artifact("e1_gather_scatter_1d_mask.pvc.spv", E1_META);
  zt_executable_t* e = NULL;
  OK(zt_executable_create(d, a, &e));
  uint64_t px = zt_buffer_address(x);
  zt_arg_t args[11] = {
      {ZT_PTR, {.ptr = px}}, {ZT_PTR, {.ptr = px}}, {ZT_I64, {.i = 0}},
      {ZT_I64, {.i = 1000}}, {ZT_I64, {.i = 1}},    {ZT_PTR, {.ptr = px}},
      {ZT_PTR, {.ptr = px}}, {ZT_I64, {.i = 0}},    {ZT_I64, {.i = 1000}},
      {ZT_I64, {.i = 1}},    {ZT_I64, {.i = 1000}},
  };
  uint32_t grid[3] = {(1000 + 15) / 16, 1, 1};
  zt_device_timing_t t;
  expect_code(zt_device_timing_end(d, &t), ZT_STATUS_INVALID_ARGUMENT, "no timing region");
  OK(zt_launch(e, grid, 11, args));  // not timed
  OK(zt_device_timing_begin(d));
  expect_code(zt_device_timing_begin(d), ZT_STATUS_INVALID_ARGUMENT, "already open");
  for (int i = 0; i < 150; ++i) OK(zt_launch(e, grid, 11, args));
  OK(zt_device_timing_end(d, &t));
  ck_assert_int_eq(t.kernels, 150);
  ck_assert_int_eq(t.missing, 150);  // AUB mode: no command ran
  ck_assert(t.kernel_ns == 0.0 && t.span_ns == 0.0);
  ck_assert_msg(t.tick_ns > 0.0 && t.tick_ns < 1000.0, "timer tick %g ns", t.tick_ns);
  OK(zt_launch(e, grid, 11, args));  // not timed
  OK(zt_device_timing_begin(d));
  OK(zt_device_timing_end(d, &t));
  ck_assert_int_eq(t.kernels, 0);
  OK(zt_device_timing_begin(d));
  for (int i = 0; i < 3; ++i) OK(zt_launch(e, grid, 11, args));
  OK(zt_device_timing_end(d, &t));
  ck_assert_int_eq(t.kernels, 3);
  OK(zt_device_synchronize(d));
  zt_executable_release(e);
  zt_buffer_release(x);
  zt_artifact_release(a);
  zt_device_release(d);

  zt_device_t* cpu = NULL;
  OK(zt_device_open("cpu", &cpu));
  expect_code(zt_device_timing_begin(cpu), ZT_STATUS_UNSUPPORTED, "no device timer");
  expect_code(zt_device_timing_end(cpu, &t), ZT_STATUS_UNSUPPORTED, "no device timer");
  zt_device_release(cpu);
}

START_TEST(test_kernel_timestamps_copied) {
  REQUIRE_NEO();
  timed_launches();
}
END_TEST

START_TEST(test_kernel_timestamps_queried) {
  REQUIRE_NEO();
  setenv("ZETILE_ZE_TIMESTAMP_QUERY", "1", 1);
  timed_launches();
}
END_TEST

START_TEST(test_kernel_timestamps_sync_list) {
  REQUIRE_NEO();
  setenv("ZETILE_ZE_SYNC", "1", 1);
  timed_launches();
}
END_TEST

START_TEST(test_damaged_native_entry_rebuilds) {
  REQUIRE_NEO();
  zt_device_t* d = NULL;
  OK(zt_device_open("level_zero:0", &d));
  zt_artifact_t* a = make_artifact("e1_gather_scatter_1d_mask.pvc.spv", E1_META);
  zt_executable_t* e = NULL;
  OK(zt_executable_create(d, a, &e));
  zt_executable_release(e);
  // Damage every cached file: the next creation rebuilds from SPIR-V.
  char cmd[512];
  snprintf(cmd, sizeof cmd,
           "find '%s' -type f -name native -exec sh -c 'printf garbage | "
           "dd of=\"$0\" bs=1 seek=40 conv=notrunc 2>/dev/null' {} \\;",
           cache_dir);
  ck_assert_int_eq(system(cmd), 0);
  OK(zt_executable_create(d, a, &e));
  zt_cache_stats_t st;
  zt_cache_get_stats(&st);
  ck_assert_int_eq(st.corrupt, 1);
  ck_assert_int_eq(st.native_builds, 2);
  ck_assert_int_eq(st.native_hits, 0);
  zt_executable_release(e);
  zt_artifact_release(a);
  zt_device_release(d);
}
END_TEST

// Replaces the opcode of the first instruction after the first OpLabel with
// one that IGC does not know: a module that parses but fails to build.
static void break_first_instruction(uint8_t* spv, size_t n) {
  size_t words = n / 4;
  bool after_label = false;
  for (size_t i = 5; i < words;) {
    uint32_t w;
    memcpy(&w, spv + 4 * i, 4);
    uint32_t wc = w >> 16, op = w & 0xffff;
    if (after_label) {
      w = (wc << 16) | 0x7ff0;
      memcpy(spv + 4 * i, &w, 4);
      return;
    }
    if (op == 248) after_label = true;  // OpLabel
    i += wc ? wc : 1;
  }
  ck_abort_msg("no OpLabel in the fixture");
}

// Metadata listing fewer arguments than the SPIR-V kernel takes (a launch
// would leave parameters unset) is refused at load (issue 17).
START_TEST(test_load_refused_when_meta_disagrees_with_spirv) {
  REQUIRE_NEO();
  zt_device_t* d = NULL;
  OK(zt_device_open("level_zero:0", &d));
  zt_artifact_t* a = make_artifact("e1_gather_scatter_1d_mask.pvc.spv",
                                   "kernel=tail1d\ntarget=pvc\nargs=ptr:f32,ptr:f32,i64\n"
                                   "local_size=16,1,1\nsubgroup_size=16\n");
  zt_executable_t* e = NULL;
  expect_code(zt_executable_create(d, a, &e), ZT_STATUS_INVALID_ARGUMENT,
              "takes 11 arguments but its meta lists 3");
  ck_assert_ptr_null(e);
  zt_artifact_release(a);
  zt_device_release(d);
}
END_TEST

START_TEST(test_build_failure_carries_log) {
  REQUIRE_NEO();
  zt_device_t* d = NULL;
  OK(zt_device_open("level_zero:0", &d));
  size_t n = 0;
  uint8_t* spv = read_file("e1_gather_scatter_1d_mask.pvc.spv", &n);
  break_first_instruction(spv, n);
  zt_artifact_t* a = NULL;
  OK(zt_artifact_create(&a));
  OK(zt_artifact_set(a, "spirv", spv, n));
  OK(zt_artifact_set(a, "meta", E1_META, strlen(E1_META)));
  zt_executable_t* e = NULL;
  zt_status_t s = zt_executable_create(d, a, &e);
  fprintf(stderr, "unbuildable SPIR-V: %s\n", zt_status_message(s));
  ck_assert_ptr_null(e);
  ck_assert_msg(strstr(zt_status_message(s), "build log:") &&
                    strstr(zt_status_message(s), "32752"),
                "%s", zt_status_message(s));
  expect_code(s, ZT_STATUS_DRIVER_ERROR, "ZE_RESULT_ERROR_MODULE_BUILD_FAILURE");
  zt_cache_stats_t st;
  zt_cache_get_stats(&st);
  ck_assert_int_eq(st.native_builds, 0);
  zt_artifact_release(a);
  free(spv);
  zt_device_release(d);
}
END_TEST

// IGC calls exit(1) on a module with a bad magic number: zetile must refuse
// it first (this test would end the process otherwise).
START_TEST(test_malformed_spirv_never_reaches_igc) {
  REQUIRE_NEO();
  zt_device_t* d = NULL;
  OK(zt_device_open("level_zero:0", &d));
  size_t n = 0;
  uint8_t* spv = read_file("e1_gather_scatter_1d_mask.pvc.spv", &n);
  zt_artifact_t* a = NULL;
  OK(zt_artifact_create(&a));
  OK(zt_artifact_set(a, "meta", E1_META, strlen(E1_META)));
  zt_executable_t* e = NULL;
  uint32_t bad = 0xdeadbeef;
  uint8_t* copy = malloc(n);
  memcpy(copy, spv, n);
  memcpy(copy, &bad, 4);
  OK(zt_artifact_set(a, "spirv", copy, n));
  expect_code(zt_executable_create(d, a, &e), ZT_STATUS_INVALID_ARGUMENT, "magic");
  OK(zt_artifact_set(a, "spirv", spv, n / 2 + 2));  // cut mid-instruction
  expect_code(zt_executable_create(d, a, &e), ZT_STATUS_INVALID_ARGUMENT, "SPIR-V");
  OK(zt_artifact_set(a, "spirv", spv, n));
  const char* meta = "kernel=other\ntarget=pvc\nargs=ptr:f32\n";
  OK(zt_artifact_set(a, "meta", meta, strlen(meta)));
  expect_code(zt_executable_create(d, a, &e), ZT_STATUS_INVALID_ARGUMENT,
              "no entry point named 'other'");
  free(copy);
  free(spv);
  zt_artifact_release(a);
  zt_device_release(d);
}
END_TEST

START_TEST(test_missing_2d_block_builtins_are_explained) {
  REQUIRE_NEO();
  zt_device_t* d = NULL;
  OK(zt_device_open("level_zero:0", &d));
  zt_artifact_t* a = make_artifact("b1_elementwise_2d_block_io.pvc.spv",
                                   "kernel=eltwise\ntarget=pvc\nargs=ptr:f32\n"
                                   "local_size=16,1,1\nsubgroup_size=16\n");
  zt_executable_t* e = NULL;
  zt_status_t s = zt_executable_create(d, a, &e);
  if (!s) {
    // A newer driver has the builtins: nothing to explain.
    fprintf(stderr, "note: this driver resolves the 2D block IO builtins\n");
    zt_executable_release(e);
  } else {
    fprintf(stderr, "2D block IO kernel: %s\n", zt_status_message(s));
    expect_code(s, ZT_STATUS_DRIVER_ERROR, "use the compat path");
  }
  zt_artifact_release(a);
  zt_device_release(d);
}
END_TEST

START_TEST(test_wrong_kernel_name_and_arity) {
  REQUIRE_NEO();
  zt_device_t* d = NULL;
  OK(zt_device_open("level_zero:0", &d));
  zt_artifact_t* a = make_artifact("e1_gather_scatter_1d_mask.pvc.spv",
                                   "kernel=nope\ntarget=pvc\nargs=ptr:f32\n");
  zt_executable_t* e = NULL;
  expect_code(zt_executable_create(d, a, &e), ZT_STATUS_INVALID_ARGUMENT,
              "no entry point named 'nope'");
  const char* meta = "kernel=tail1d\ntarget=pvc\nargs=ptr:f32\nlocal_size=16,1,1\n";
  OK(zt_artifact_set(a, "meta", meta, strlen(meta)));
  expect_code(zt_executable_create(d, a, &e), ZT_STATUS_INVALID_ARGUMENT, "11 arguments");
  // CPU artifacts do not load on a GPU.
  meta = "kernel=tail1d\ntarget=cpu\nargs=ptr:f32\n";
  OK(zt_artifact_set(a, "meta", meta, strlen(meta)));
  expect_code(zt_executable_create(d, a, &e), ZT_STATUS_INVALID_ARGUMENT, "target 'cpu'");
  zt_artifact_release(a);
  zt_device_release(d);
}
END_TEST

static bool intel_render_node(void) {
  DIR* dir = opendir("/sys/class/drm");
  if (!dir) return false;
  bool found = false;
  struct dirent* ent;
  while ((ent = readdir(dir))) {
    if (strncmp(ent->d_name, "renderD", 7) != 0) continue;
    char path[512], buf[32] = {0};
    snprintf(path, sizeof path, "/sys/class/drm/%s/device/vendor", ent->d_name);
    FILE* f = fopen(path, "r");
    if (f && fgets(buf, sizeof buf, f) && strtoul(buf, NULL, 16) == 0x8086) found = true;
    if (f) fclose(f);
  }
  closedir(dir);
  return found;
}

// Without the AUB variables and without an Intel GPU, zeInit would segfault:
// zetile must not call it, and simply lists no level_zero device.
START_TEST(test_plain_process_lists_no_gpu) {
  unsetenv("NEOReadDebugKeys");
  unsetenv("SetCommandStreamReceiver");
  unsetenv("ProductFamilyOverride");
  zt_device_info_t infos[16];
  int32_t n = 0;
  OK(zt_device_enumerate(infos, 16, &n));
  int gpus = 0;
  for (int i = 0; i < n; ++i) gpus += strcmp(infos[i].backend, "level_zero") == 0;
  if (!intel_render_node()) ck_assert_int_eq(gpus, 0);
  zt_device_t* d = NULL;
  OK(zt_device_open(NULL, &d));
  if (!intel_render_node()) ck_assert_str_eq(zt_device_info(d)->name, "cpu");
  zt_device_release(d);
  if (!intel_render_node())
    expect_code(zt_device_open("level_zero", &d), ZT_STATUS_NOT_FOUND, "level_zero");
}
END_TEST

// Debian 12's driver lacks the 2D block IO builtins: the device says compat.
// The probe's answer is cached per device and driver version.
START_TEST(test_compat_probe) {
  REQUIRE_NEO();
  zt_device_info_t info;
  int32_t n = 0;
  OK(zt_device_enumerate(&info, 1, &n));
  ck_assert_int_ge(n, 1);
  fprintf(stderr, "driver %s: compat=%d\n", info.driver_version, info.compat);
  // The answer agrees with what zeKernelCreate says about such a kernel.
  zt_device_t* d = NULL;
  OK(zt_device_open("level_zero:0", &d));
  zt_artifact_t* a = make_artifact("b1_elementwise_2d_block_io.pvc.spv",
                                   "kernel=eltwise\ntarget=pvc\nargs=ptr:f32\n"
                                   "local_size=16,1,1\nsubgroup_size=16\n");
  zt_executable_t* e = NULL;
  zt_status_t s = zt_executable_create(d, a, &e);
  bool unlinked = s && strstr(zt_status_message(s), "UNLINKED");
  ck_assert_int_eq(info.compat, unlinked);
  zt_status_free(s);
  zt_executable_release(e);
  zt_artifact_release(a);
  zt_device_release(d);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "test -n \"$(find '%s' -name block_io_probe)\"", cache_dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(test_compat_override) {
  REQUIRE_NEO();
  setenv("ZETILE_COMPAT", "0", 1);
  zt_device_info_t info;
  int32_t n = 0;
  OK(zt_device_enumerate(&info, 1, &n));
  ck_assert(!info.compat);
}
END_TEST

START_TEST(test_disabled_by_env) {
  REQUIRE_NEO();
  setenv("ZETILE_LEVEL_ZERO", "0", 1);
  setenv("ZETILE_OPENCL", "0", 1);  // opencl:cpu (Intel's CPU runtime) would be listed too
  int32_t n = 0;
  zt_device_info_t infos[4];
  OK(zt_device_enumerate(infos, 4, &n));
  ck_assert_int_eq(n, 1);
  ck_assert_str_eq(infos[0].name, "cpu");
}
END_TEST

// --- with the compiler: tile program → SPIR-V → driver -----------------------

static bool maps_mention(const char* needle) {
  FILE* f = fopen("/proc/self/maps", "r");
  if (!f) return false;
  char line[1024];
  bool found = false;
  while (!found && fgets(line, sizeof line, f)) found = strstr(line, needle) != NULL;
  fclose(f);
  return found;
}

// Launches an executable with plausible arguments made from its meta (the
// AUB device does not compute, so the values only need to be well-formed).
static const char* launch_from_meta(zt_device_t* d, const zt_artifact_t* a,
                                    zt_executable_t* e) {
  static char why[512];
  const void* meta = NULL;
  size_t n = 0;
  if (zt_artifact_get(a, "meta", &meta, &n)) return "no meta";
  const char* args_line = strstr(meta, "args=");
  if (!args_line) return "meta without args";
  args_line += 5;
  zt_arg_t args[64];
  zt_buffer_t* bufs[64];
  int32_t count = 0, nbufs = 0;
  static const struct {
    const char* name;
    zt_scalar_kind_t kind;
  } kinds[] = {{"ptr", ZT_PTR}, {"i1", ZT_I1},   {"i8", ZT_I8},   {"i16", ZT_I16},
               {"i32", ZT_I32}, {"i64", ZT_I64}, {"f16", ZT_F16}, {"bf16", ZT_BF16},
               {"f32", ZT_F32}, {"f64", ZT_F64}};
  for (const char* p = args_line; *p && *p != '\n' && count < 64;) {
    size_t len = strcspn(p, ",:\n");
    zt_arg_t arg = {0};
    bool known = false;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; ++k)
      if (strlen(kinds[k].name) == len && strncmp(p, kinds[k].name, len) == 0) {
        arg.kind = kinds[k].kind;
        known = true;
      }
    if (!known) return "unknown argument kind in meta";
    if (arg.kind == ZT_PTR) {
      zt_status_t s = zt_buffer_alloc(d, 1 << 20, &bufs[nbufs]);
      if (s) {
        snprintf(why, sizeof why, "%s", zt_status_message(s));
        zt_status_free(s);
        return why;
      }
      arg.value.ptr = zt_buffer_address(bufs[nbufs++]);
    } else if (arg.kind == ZT_F32 || arg.kind == ZT_F64) {
      arg.value.f = 1.0;
    } else if (arg.kind == ZT_F16 || arg.kind == ZT_BF16) {
      arg.value.bits = 0x3c00;
    } else {
      arg.value.i = 256;
    }
    args[count++] = arg;
    p += strcspn(p, ",\n");
    if (*p == ',') p++;
  }
  uint32_t grid[3] = {4, 1, 1};
  zt_status_t s = zt_launch(e, grid, count, args);
  if (!s) s = zt_device_synchronize(d);
  for (int32_t i = 0; i < nbufs; ++i) zt_buffer_release(bufs[i]);
  if (s) {
    snprintf(why, sizeof why, "%s", zt_status_message(s));
    zt_status_free(s);
    return why;
  }
  return NULL;
}

typedef zt_status_t (*kernel_fn)(char** out_text);
static zt_status_t k_vector_add(char** t) { return xk_vector_add(256, t); }
static zt_status_t k_softmax(char** t) { return xk_softmax(128, false, t); }
static zt_status_t k_layer_norm(char** t) { return xk_layer_norm(128, t); }
static const struct {
  const char* name;
  kernel_fn build;
} xe_programs[] = {
    {"vector_add", k_vector_add}, {"softmax", k_softmax}, {"layer_norm", k_layer_norm}};

// Compiles (through the cache) and launches every program; returns NULL or
// the first failure. `warm` also requires cache hits and no compiler loaded.
static const char* run_xe_programs(bool warm) {
  static char why[2048];
  zt_device_t* d = NULL;
  zt_status_t s = zt_device_open("level_zero:0", &d);
  const char* fail = NULL;
  for (size_t k = 0; !s && !fail && k < sizeof xe_programs / sizeof xe_programs[0]; ++k) {
    char* ir = NULL;
    s = xe_programs[k].build(&ir);
    if (s) break;
    zt_compile_options_t o = {.target = zt_device_info(d)->target,
                              .compat = zt_device_info(d)->compat};
    zt_artifact_t* a = NULL;
    bool hit = false;
    s = zt_compile_cached(ir, strlen(ir), &o, &a, &hit);
    free(ir);
    if (s) {
      s = zt_status_annotate(s, "%s", xe_programs[k].name);
      break;
    }
    if (warm && !hit) fail = "warm process: compile cache miss";
    zt_executable_t* e = NULL;
    if (!fail) s = zt_executable_create(d, a, &e);
    if (!fail && !s) {
      const char* w = launch_from_meta(d, a, e);
      if (w) {
        snprintf(why, sizeof why, "%s: %s", xe_programs[k].name, w);
        fail = why;
      }
    }
    zt_executable_release(e);
    zt_artifact_release(a);
  }
  if (s) {
    snprintf(why, sizeof why, "%s", zt_status_message(s));
    zt_status_free(s);
    fail = why;
  }
  zt_device_release(d);
  if (!fail && warm) {
    zt_cache_stats_t st;
    zt_cache_get_stats(&st);
    if (st.compiles || st.native_builds) fail = "warm process compiled something";
    else if (maps_mention("libzetile_compiler") || maps_mention("libMLIR"))
      fail = "warm process loaded the compiler";
  }
  return fail;
}

START_TEST(test_xe_programs_cold_then_warm_process) {
  REQUIRE_NEO();
  zt_status_t avail = zt_compiler_available();
  if (avail) {
    fprintf(stderr, "SKIP %s: %s\n", __func__, zt_status_message(avail));
    zt_status_free(avail);
    return;
  }
  const char* why = run_xe_programs(false);
  ck_assert_msg(why == NULL, "%s", why);
  zt_cache_stats_t st;
  zt_cache_get_stats(&st);
  ck_assert_int_eq(st.compiles, 3);
  // A new process (exec'd): both caches hit, MLIR never loads.
  pid_t pid = fork();
  if (pid == 0) {
    char* argv[] = {"test_level_zero_aub", "--warm-child", NULL};
    execv("/proc/self/exe", argv);
    _exit(3);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "warm child: status %d",
                status);
}
END_TEST

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--warm-child") == 0) {
    const char* why = run_xe_programs(true);
    if (why) fprintf(stderr, "warm child: %s\n", why);
    return why ? 1 : 0;
  }
  Suite* suite = suite_create("level_zero_aub");
  TCase* tc = tcase_create("aub");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_enumerate_finds_pvc);
  tcase_add_test(tc, test_build_launch_stats_native_cache);
  tcase_add_test(tc, test_queued_launches_async);
  tcase_add_test(tc, test_queued_launches_sync_list);
  tcase_add_test(tc, test_kernel_timestamps_copied);
  tcase_add_test(tc, test_kernel_timestamps_queried);
  tcase_add_test(tc, test_kernel_timestamps_sync_list);
  tcase_add_test(tc, test_damaged_native_entry_rebuilds);
  tcase_add_test(tc, test_build_failure_carries_log);
  tcase_add_test(tc, test_malformed_spirv_never_reaches_igc);
  tcase_add_test(tc, test_missing_2d_block_builtins_are_explained);
  tcase_add_test(tc, test_wrong_kernel_name_and_arity);
  tcase_add_test(tc, test_plain_process_lists_no_gpu);
  tcase_add_test(tc, test_compat_probe);
  tcase_add_test(tc, test_compat_override);
  tcase_add_test(tc, test_disabled_by_env);
  tcase_add_test(tc, test_xe_programs_cold_then_warm_process);
  tcase_add_test(tc, test_load_refused_when_meta_disagrees_with_spirv);
  suite_add_tcase(suite, tc);
  return ct_run_suite(suite);
}
