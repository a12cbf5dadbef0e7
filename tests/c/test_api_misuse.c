// C API misuse (issue 17): NULL handles and outputs, negative counts and
// ranks, sizes that overflow, artifacts whose metadata disagrees with their
// code. Each call must come back with a status (or, for calls that return
// no status, a harmless value), never crash. Runs under ASan/UBSan in the
// suite (scripts/test.sh), which also catches reads out of bounds that a
// plain run would miss (zt_type_tensor with rank -1 read shape[-1]).
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "zetile/zetile.h"

// The call must fail with a status of the given code (freed here).
#define FAILS_WITH(code, expr)                                                      \
  do {                                                                              \
    zt_status_t s_ = (expr);                                                        \
    ck_assert_msg(s_ != NULL, "%s succeeded", #expr);                               \
    ck_assert_msg(zt_status_code(s_) == (code), "%s: %s (%s)", #expr,                \
                  zt_status_code_name(zt_status_code(s_)), zt_status_message(s_));  \
    ck_assert_msg(zt_status_message(s_)[0] != 0, "%s: empty message", #expr);       \
    zt_status_free(s_);                                                             \
  } while (0)
#define INVALID(expr) FAILS_WITH(ZT_STATUS_INVALID_ARGUMENT, expr)

#define OK(expr)                                                                    \
  do {                                                                              \
    zt_status_t s_ = (expr);                                                        \
    ck_assert_msg(s_ == NULL, "%s: %s", #expr, zt_status_message(s_));              \
  } while (0)

// --- runtime -----------------------------------------------------------------

START_TEST(test_buffer_sizes_that_would_wrap) {
  zt_device_t* dev;
  OK(zt_device_open("cpu", &dev));
  // SIZE_MAX - 10 used to round up to a 64-byte block and "succeed".
  size_t sizes[] = {SIZE_MAX, SIZE_MAX - 10, SIZE_MAX - 63, (size_t)PTRDIFF_MAX + 1};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
    zt_buffer_t* b = (zt_buffer_t*)0x1;
    FAILS_WITH(ZT_STATUS_OUT_OF_MEMORY, zt_buffer_alloc(dev, sizes[i], &b));
    ck_assert_ptr_null(b);
  }
  // A real buffer refuses ranges outside it, including ones whose end wraps.
  zt_buffer_t* b;
  OK(zt_buffer_alloc(dev, 16, &b));
  char host[32] = {0};
  INVALID(zt_buffer_write(b, 8, host, 16));
  INVALID(zt_buffer_write(b, SIZE_MAX, host, 2));
  INVALID(zt_buffer_read(b, 1, host, SIZE_MAX));
  INVALID(zt_buffer_read(b, 0, NULL, 4));
  OK(zt_buffer_write(b, 0, host, 16));
  zt_buffer_release(b);
  zt_device_release(dev);
}
END_TEST

START_TEST(test_runtime_null_handles) {
  zt_device_t* dev = NULL;
  INVALID(zt_device_open("cpu", NULL));
  INVALID(zt_device_enumerate(NULL, 4, NULL));
  int32_t n = 0;
  INVALID(zt_device_enumerate(NULL, -1, &n));
  INVALID(zt_device_enumerate(NULL, 2, &n));
  INVALID(zt_device_synchronize(NULL));
  zt_buffer_t* b = NULL;
  INVALID(zt_buffer_alloc(NULL, 16, &b));
  OK(zt_device_open("cpu", &dev));
  INVALID(zt_buffer_alloc(dev, 16, NULL));
  INVALID(zt_buffer_write(NULL, 0, "x", 1));
  INVALID(zt_buffer_read(NULL, 0, (char[1]){0}, 1));
  zt_executable_t* e = NULL;
  INVALID(zt_executable_create(NULL, NULL, &e));
  INVALID(zt_executable_create(dev, NULL, &e));
  uint32_t grid[3] = {1, 1, 1};
  INVALID(zt_launch(NULL, grid, 0, NULL));
  zt_kernel_stats_t st;
  INVALID(zt_executable_stats(NULL, &st));
  // Calls without a status return harmless values; releases accept NULL.
  ck_assert_ptr_null(zt_device_info(NULL));
  ck_assert_uint_eq(zt_buffer_address(NULL), 0);
  ck_assert_uint_eq(zt_buffer_size(NULL), 0);
  zt_buffer_release(NULL);
  zt_executable_release(NULL);
  zt_device_release(NULL);
  zt_device_retain(NULL);
  zt_device_release(dev);
}
END_TEST

// --- artifacts and the compiler ----------------------------------------------

START_TEST(test_artifact_null_handles) {
  INVALID(zt_artifact_create(NULL));
  zt_artifact_t* a;
  OK(zt_artifact_create(&a));
  INVALID(zt_artifact_set(NULL, "x", "y", 1));
  INVALID(zt_artifact_set(a, NULL, "y", 1));
  INVALID(zt_artifact_set(a, "x", NULL, 1));
  // size + 1 used to wrap to 0: a 0-byte copy then written past its end.
  INVALID(zt_artifact_set(a, "x", "y", SIZE_MAX));
  OK(zt_artifact_set(a, "x", NULL, 0));
  const void* d;
  size_t n;
  INVALID(zt_artifact_get(NULL, "x", &d, &n));
  INVALID(zt_artifact_get(a, NULL, &d, &n));
  INVALID(zt_artifact_get(a, "x", NULL, &n));
  FAILS_WITH(ZT_STATUS_NOT_FOUND, zt_artifact_get(a, "absent", &d, &n));
  void* blob;
  INVALID(zt_artifact_serialize(NULL, &blob, &n));
  INVALID(zt_artifact_serialize(a, NULL, &n));
  INVALID(zt_artifact_serialize(a, &blob, NULL));
  zt_artifact_t* b = NULL;
  INVALID(zt_artifact_deserialize(NULL, 16, &b));
  INVALID(zt_artifact_deserialize("ZTA1", 4, NULL));
  FAILS_WITH(ZT_STATUS_IO_ERROR, zt_artifact_deserialize("ZTA1", 4, &b));
  ck_assert_int_eq(zt_artifact_section_count(NULL), 0);
  ck_assert_ptr_null(zt_artifact_section_name(NULL, 0));
  ck_assert_ptr_null(zt_artifact_section_name(a, -1));
  ck_assert_ptr_null(zt_artifact_section_name(a, 7));
  zt_artifact_release(NULL);
  zt_artifact_release(a);
}
END_TEST

START_TEST(test_compiler_null_arguments) {
  zt_artifact_t* a = NULL;
  INVALID(zt_compile(NULL, 10, NULL, &a));
  INVALID(zt_compile("module {}", 9, NULL, NULL));
  INVALID(zt_compile_cached(NULL, 10, NULL, &a, NULL));
  INVALID(zt_compile_cached("module {}", 9, NULL, NULL, NULL));
  char key[33] = "unchanged";
  zt_compile_cache_key("x", 1, NULL, NULL);  // nothing to write to: no-op
  zt_compile_cache_key(NULL, 5, NULL, key);  // NULL text hashes as empty
  char empty[33];
  zt_compile_cache_key("", 0, NULL, empty);
  ck_assert_str_eq(key, empty);
  void* data;
  size_t size;
  INVALID(zt_cache_get(NULL, "x", &data, &size));
  INVALID(zt_cache_get("0123456789abcdef0123456789abcdef", NULL, &data, &size));
  INVALID(zt_cache_get("0123456789abcdef0123456789abcdef", "x", NULL, &size));
  INVALID(zt_cache_put("0123456789abcdef0123456789abcdef", "x", NULL, 4));
  INVALID(zt_cache_get("../../etc", "passwd", &data, &size));
  zt_cache_get_stats(NULL);
}
END_TEST

// --- types and the builder -----------------------------------------------------

START_TEST(test_type_tensor_bad_ranks) {
  int64_t shape[1] = {16};
  // rank -1 used to read shape[-1]; too large a rank was silently clamped.
  zt_type_t t = zt_type_tensor(zt_type_scalar(ZT_F32), -1, shape);
  ck_assert_int_eq(t.rank, -1);
  t = zt_type_tensor(zt_type_scalar(ZT_F32), ZT_MAX_RANK + 1, shape);
  ck_assert_int_eq(t.rank, -1);
  t = zt_type_tensor(zt_type_scalar(ZT_F32), 1, NULL);
  ck_assert_int_eq(t.rank, -1);
  char buf[64];
  zt_type_format(t, buf, sizeof buf);
  ck_assert_str_eq(buf, "<invalid type>");
  ck_assert_int_eq(zt_type_numel(t), 1);
  t = zt_type_tensor(zt_type_scalar(ZT_F32), 1, shape);
  ck_assert_int_eq(t.rank, 1);
  ck_assert_int_eq(t.shape[0], 16);
  // An invalid type cannot become a kernel argument.
  zt_builder_t* b;
  OK(zt_builder_create(&b));
  zt_type_t bad = zt_type_tensor(zt_type_scalar(ZT_F32), -1, shape);
  zt_value_t arg;
  INVALID(zt_builder_begin_kernel(b, "k", 1, &bad, NULL, &arg));
  zt_builder_release(b);
}
END_TEST

START_TEST(test_begin_kernel_bad_arguments) {
  zt_builder_t* b;
  OK(zt_builder_create(&b));
  zt_type_t types[1] = {zt_type_ptr(ZT_F32)};
  zt_value_t args[1];
  INVALID(zt_builder_begin_kernel(b, "k", -5, types, NULL, args));  // was OK
  INVALID(zt_builder_begin_kernel(b, NULL, 1, types, NULL, args));
  INVALID(zt_builder_begin_kernel(b, "k", 1, NULL, NULL, args));
  INVALID(zt_builder_begin_kernel(b, "k", 1, types, NULL, NULL));
  INVALID(zt_builder_begin_kernel(b, "", 0, NULL, NULL, NULL));
  INVALID(zt_builder_create(NULL));
  const char* text;
  INVALID(zt_builder_module_text(b, NULL, NULL));
  INVALID(zt_builder_module_text(b, &text, NULL));  // no kernel ended
  // After the refusals the builder still works.
  OK(zt_builder_begin_kernel(b, "k", 1, types, NULL, args));
  zt_value_t v;
  INVALID(zt_builder_const_int(b, ZT_I32, 1, NULL));
  INVALID(zt_builder_program_id(b, 0, NULL));
  int64_t shape[1] = {16};
  OK(zt_builder_const_int(b, ZT_I32, 1, &v));
  zt_value_t t;
  INVALID(zt_builder_splat(b, v, 1, NULL, &t));
  INVALID(zt_builder_splat(b, v, -1, shape, &t));
  INVALID(zt_builder_broadcast(b, v, 1, NULL, &t));
  INVALID(zt_builder_reshape(b, v, 1, NULL, &t));
  OK(zt_builder_splat(b, v, 1, shape, &t));
  INVALID(zt_builder_trans(b, t, NULL, &v));
  INVALID(zt_builder_hint(b, t, "multiple_of", NULL, 1, &v));
  INVALID(zt_builder_hint(b, t, "multiple_of", (int64_t[]){16}, -1, &v));
  INVALID(zt_builder_print(b, "x", -3, NULL, false));
  INVALID(zt_builder_print(b, "x", 2, NULL, false));
  zt_value_t srcs[1] = {t}, out[2];
  INVALID(zt_builder_reduce_begin(b, -1, srcs, 0, out));
  INVALID(zt_builder_reduce_begin(b, 1, NULL, 0, out));
  INVALID(zt_builder_reduce_begin(b, 1, srcs, 0, NULL));
  INVALID(zt_builder_scan_begin(b, 1, srcs, 0, false, NULL));
  INVALID(zt_builder_for_begin(b, v, v, v, 2, NULL, &v, out));
  INVALID(zt_builder_while_begin(b, -2, srcs, out));
  INVALID(zt_builder_block_load(b, args[0], 1, NULL, NULL, NULL, shape, 0, ZT_PADDING_ZERO,
                                &v));
  INVALID(zt_builder_block_store(b, args[0], 1, NULL, NULL, NULL, t, 0));
  INVALID(zt_builder_end_kernel(NULL));
  OK(zt_builder_end_kernel(b));
  size_t size;
  OK(zt_builder_module_text(b, &text, &size));
  ck_assert_ptr_nonnull(strstr(text, "func.func @k("));
  zt_builder_release(b);
}
END_TEST

// Every builder call that returns a status refuses a NULL builder (13 of
// them used to dereference it before any check).
START_TEST(test_builder_null_handle) {
  zt_builder_t* b = NULL;
  zt_value_t v = 0, vs[2] = {0, 0}, out[4];
  int64_t shape[1] = {16};
  int32_t order[1] = {0};
  zt_type_t types[1] = {zt_type_ptr(ZT_F32)};
  const char* text;
  size_t size;
  INVALID(zt_builder_begin_kernel(b, "k", 1, types, NULL, out));
  INVALID(zt_builder_end_kernel(b));
  INVALID(zt_builder_module_text(b, &text, &size));
  INVALID(zt_builder_const_int(b, ZT_I32, 1, &v));
  INVALID(zt_builder_const_float(b, ZT_F32, 1.0, &v));
  INVALID(zt_builder_program_id(b, 0, &v));
  INVALID(zt_builder_num_programs(b, 0, &v));
  INVALID(zt_builder_make_range(b, 0, 16, &v));
  INVALID(zt_builder_splat(b, v, 1, shape, &v));
  INVALID(zt_builder_broadcast(b, v, 1, shape, &v));
  INVALID(zt_builder_expand_dims(b, v, 0, &v));
  INVALID(zt_builder_reshape(b, v, 1, shape, &v));
  INVALID(zt_builder_trans(b, v, order, &v));
  INVALID(zt_builder_hint(b, v, "multiple_of", shape, 1, &v));
  INVALID(zt_builder_binary(b, ZT_BINARY_ADDF, v, v, &v));
  INVALID(zt_builder_unary(b, ZT_UNARY_NEGF, v, &v));
  INVALID(zt_builder_fma(b, v, v, v, &v));
  INVALID(zt_builder_cmp(b, ZT_CMP_EQ, v, v, &v));
  INVALID(zt_builder_select(b, v, v, v, &v));
  INVALID(zt_builder_cast(b, ZT_CAST_EXTSI, v, ZT_I64, &v));
  INVALID(zt_builder_addptr(b, v, v, &v));
  INVALID(zt_builder_ptr_to_int(b, v, &v));
  INVALID(zt_builder_int_to_ptr(b, v, ZT_F32, &v));
  INVALID(zt_builder_ptr_cast(b, v, ZT_F32, &v));
  INVALID(zt_builder_load(b, v, ZT_NO_VALUE, ZT_NO_VALUE, &v));
  INVALID(zt_builder_store(b, v, v, ZT_NO_VALUE));
  INVALID(zt_builder_reduce(b, ZT_REDUCE_ADD, v, 0, &v));
  INVALID(zt_builder_reduce_begin(b, 1, vs, 0, out));
  INVALID(zt_builder_reduce_end(b, 1, vs, out));
  INVALID(zt_builder_dot(b, v, v, v, NULL, &v));
  INVALID(zt_builder_block_load(b, v, 1, vs, vs, vs, shape, 0, ZT_PADDING_ZERO, &v));
  INVALID(zt_builder_block_store(b, v, 1, vs, vs, vs, v, 0));
  INVALID(zt_builder_atomic_rmw(b, ZT_ATOMIC_ADD, v, v, ZT_NO_VALUE, NULL, NULL, &v));
  INVALID(zt_builder_atomic_cas(b, v, v, v, NULL, NULL, &v));
  INVALID(zt_builder_scan_begin(b, 1, vs, 0, false, out));
  INVALID(zt_builder_scan_end(b, 1, vs, out));
  INVALID(zt_builder_print(b, "x", 1, vs, false));
  INVALID(zt_builder_assert(b, v, "m"));
  INVALID(zt_builder_for_begin(b, v, v, v, 0, NULL, &v, NULL));
  INVALID(zt_builder_for_end(b, 0, NULL, NULL));
  INVALID(zt_builder_if_begin(b, v));
  INVALID(zt_builder_if_else(b));
  INVALID(zt_builder_if_end(b, 0, NULL, NULL, NULL));
  INVALID(zt_builder_while_begin(b, 0, NULL, NULL));
  INVALID(zt_builder_while_cond(b, v, NULL));
  INVALID(zt_builder_while_end(b, 0, NULL, NULL));
  // Calls without a status: harmless on NULL.
  zt_builder_set_loc(b, "f.py", 1, 1);
  zt_type_t t = zt_builder_value_type(b, 0);
  ck_assert_int_eq(t.rank, 0);
  zt_builder_release(b);
}
END_TEST

// --- an artifact whose metadata disagrees with its code -----------------------

static zt_artifact_t* compile_copy_kernel_for(const char* target) {
  zt_builder_t* b;
  OK(zt_builder_create(&b));
  zt_type_t types[3] = {zt_type_ptr(ZT_F32), zt_type_ptr(ZT_F32), zt_type_scalar(ZT_I32)};
  zt_value_t a[3], r, x, px, py, n, mask;
  int64_t shape[1] = {16};
  OK(zt_builder_begin_kernel(b, "copy", 3, types, NULL, a));
  OK(zt_builder_make_range(b, 0, 16, &r));
  OK(zt_builder_splat(b, a[2], 1, shape, &n));
  OK(zt_builder_cmp(b, ZT_CMP_SLT, r, n, &mask));
  OK(zt_builder_splat(b, a[0], 1, shape, &px));
  OK(zt_builder_addptr(b, px, r, &px));
  OK(zt_builder_load(b, px, mask, ZT_NO_VALUE, &x));
  OK(zt_builder_splat(b, a[1], 1, shape, &py));
  OK(zt_builder_addptr(b, py, r, &py));
  OK(zt_builder_store(b, py, x, mask));
  OK(zt_builder_end_kernel(b));
  const char* text;
  size_t size;
  OK(zt_builder_module_text(b, &text, &size));
  zt_artifact_t* art;
  zt_compile_options_t o = {.target = target};
  OK(zt_compile(text, size, &o, &art));
  zt_builder_release(b);
  return art;
}

static zt_artifact_t* compile_copy_kernel(void) { return compile_copy_kernel_for("cpu"); }

static void expect_refused(zt_device_t* dev, zt_artifact_t* art, const char* meta,
                           const char* why) {
  OK(zt_artifact_set(art, "meta", meta, strlen(meta)));
  zt_executable_t* e = (zt_executable_t*)0x1;
  zt_status_t s = zt_executable_create(dev, art, &e);
  ck_assert_msg(s != NULL, "metadata '%s' was accepted", meta);
  ck_assert_msg(strstr(zt_status_message(s), why), "%s", zt_status_message(s));
  ck_assert_ptr_null(e);
  zt_status_free(s);
}

START_TEST(test_artifact_metadata_must_match_code) {
  zt_device_t* dev;
  OK(zt_device_open("cpu", &dev));
  zt_artifact_t* art = compile_copy_kernel();
  const void* meta0;
  size_t n0;
  OK(zt_artifact_get(art, "meta", &meta0, &n0));
  char* good = strndup(meta0, n0);
  ck_assert_ptr_nonnull(strstr(good, "args=ptr:f32,ptr:f32,i32"));
  // The genuine artifact loads and runs.
  zt_executable_t* e;
  OK(zt_executable_create(dev, art, &e));
  float src[16], dst[16] = {0};
  for (int i = 0; i < 16; ++i) src[i] = (float)i;
  zt_arg_t args[3] = {{.kind = ZT_PTR, .value.ptr = (uint64_t)(uintptr_t)src},
                      {.kind = ZT_PTR, .value.ptr = (uint64_t)(uintptr_t)dst},
                      {.kind = ZT_I32, .value.i = 16}};
  uint32_t grid[3] = {1, 1, 1};
  OK(zt_launch(e, grid, 3, args));
  ck_assert_mem_eq(src, dst, sizeof src);
  zt_executable_release(e);
  // Fewer, more and other arguments than the code takes; another name.
  expect_refused(dev, art, "kernel=copy\ntarget=cpu\nargs=ptr:f32,ptr:f32\n", "metadata lists 2");
  expect_refused(dev, art, "kernel=copy\ntarget=cpu\nargs=ptr:f32,ptr:f32,i32,i32\n",
                 "metadata lists 4");
  expect_refused(dev, art, "kernel=copy\ntarget=cpu\nargs=ptr:f32,ptr:f32,i32,f64\n",
                 "argument 3 is i32 in the code but f64");
  expect_refused(dev, art, "kernel=copy\ntarget=cpu\nargs=ptr:f32,ptr:f32,f32\n",
                 "argument 2 is i32 in the code but f32");
  expect_refused(dev, art, "kernel=other\ntarget=cpu\nargs=ptr:f32,ptr:f32,i32\n",
                 "no function 'other'");
  expect_refused(dev, art, "kernel=copy\ntarget=cpu\nargs=ptr:f32,bogus\n", "unknown argument");
  free(good);
  zt_artifact_release(art);
  zt_device_release(dev);
}
END_TEST

// Xe artifacts: the SPIR-V kernel's parameters against the metadata, on the
// Xe executor available here (Intel's OpenCL CPU runtime, when installed).
START_TEST(test_xe_artifact_metadata_must_match_code) {
  zt_device_t* dev = NULL;
  zt_status_t s = zt_device_open("opencl:cpu", &dev);
  if (s) {
    fprintf(stderr, "SKIP test_xe_artifact_metadata_must_match_code: %s\n",
            zt_status_message(s));
    zt_status_free(s);
    return;
  }
  zt_artifact_t* art = compile_copy_kernel_for("pvc");
  zt_executable_t* e;
  OK(zt_executable_create(dev, art, &e));  // the genuine artifact loads and runs
  float src[16], dst[16] = {0};
  for (int i = 0; i < 16; ++i) src[i] = (float)i;
  zt_arg_t args[3] = {{.kind = ZT_PTR, .value.ptr = (uint64_t)(uintptr_t)src},
                      {.kind = ZT_PTR, .value.ptr = (uint64_t)(uintptr_t)dst},
                      {.kind = ZT_I32, .value.i = 16}};
  uint32_t grid[3] = {1, 1, 1};
  OK(zt_launch(e, grid, 3, args));
  OK(zt_device_synchronize(dev));
  ck_assert_mem_eq(src, dst, sizeof src);
  zt_executable_release(e);
  // Metadata with one argument fewer: a launch would leave the kernel's
  // third parameter unset. Refused (both Xe backends compare the driver's
  // count of the kernel's arguments with the metadata at load).
  const char* fewer = "kernel=copy\ntarget=pvc\nargs=ptr:f32,ptr:f32\nlocal_size=16,1,1\n"
                      "subgroup_size=16\n";
  OK(zt_artifact_set(art, "meta", fewer, strlen(fewer)));
  zt_status_t s2 = zt_executable_create(dev, art, &e);
  if (!s2) {
    s2 = zt_launch(e, grid, 2, args);
    zt_executable_release(e);
  }
  ck_assert_int_eq(zt_status_code(s2), ZT_STATUS_INVALID_ARGUMENT);
  ck_assert_msg(strstr(zt_status_message(s2), "takes 3 arguments"), "%s", zt_status_message(s2));
  zt_status_free(s2);
  zt_artifact_release(art);
  zt_device_release(dev);
}
END_TEST

int main(void) {
  Suite* s = suite_create("api_misuse");
  TCase* tc = tcase_create("misuse");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_buffer_sizes_that_would_wrap);
  tcase_add_test(tc, test_runtime_null_handles);
  tcase_add_test(tc, test_artifact_null_handles);
  tcase_add_test(tc, test_compiler_null_arguments);
  tcase_add_test(tc, test_type_tensor_bad_ranks);
  tcase_add_test(tc, test_begin_kernel_bad_arguments);
  tcase_add_test(tc, test_builder_null_handle);
  tcase_add_test(tc, test_artifact_metadata_must_match_code);
  tcase_add_test(tc, test_xe_artifact_metadata_must_match_code);
  suite_add_tcase(s, tc);
  return ct_run_suite(s);
}
