// Builder tests: the text it writes parses and verifies against the IRDL
// dialect (through mlir-opt-22, as a user would check it), and type errors
// come back as statuses naming the source location.
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_run.h"
#include "zetile/builder.h"

#define OK(expr)                                                        \
  do {                                                                  \
    zt_status_t s_ = (expr);                                            \
    ck_assert_msg(s_ == NULL, "%s failed: %s", #expr, zt_status_message(s_)); \
  } while (0)

// Runs mlir-opt-22 on text; returns its exit code.
static int mlir_opt_accepts(const char* text) {
  char path[] = "/tmp/zt_builder_XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  FILE* f = fdopen(fd, "w");
  fputs(text, f);
  fclose(f);
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "mlir-opt-22 --irdl-file=%s/dialect/tile.irdl.mlir %s -o /dev/null",
           ZT_SOURCE_DIR, path);
  int rc = system(cmd);
  unlink(path);
  return rc;
}

static zt_builder_t* vector_add(void) {
  zt_builder_t* b;
  OK(zt_builder_create(&b));
  zt_builder_set_loc(b, "add.py", 3, 1);
  zt_type_t types[4] = {zt_type_ptr(ZT_F32), zt_type_ptr(ZT_F32),
                        zt_type_ptr(ZT_F32), zt_type_scalar(ZT_I32)};
  zt_value_t a[4];
  OK(zt_builder_begin_kernel(b, "add_kernel", 4, types, NULL, a));
  zt_value_t pid, c, base, r, offs, n, mask, px, x, py, y, sum, pz;
  int64_t shape[1] = {1024};
  OK(zt_builder_program_id(b, 0, &pid));
  OK(zt_builder_const_int(b, ZT_I32, 1024, &c));
  OK(zt_builder_binary(b, ZT_BINARY_MULI, pid, c, &base));
  OK(zt_builder_make_range(b, 0, 1024, &r));
  OK(zt_builder_splat(b, base, 1, shape, &offs));
  OK(zt_builder_binary(b, ZT_BINARY_ADDI, offs, r, &offs));
  OK(zt_builder_splat(b, a[3], 1, shape, &n));
  OK(zt_builder_cmp(b, ZT_CMP_SLT, offs, n, &mask));
  OK(zt_builder_splat(b, a[0], 1, shape, &px));
  OK(zt_builder_addptr(b, px, offs, &px));
  OK(zt_builder_load(b, px, mask, ZT_NO_VALUE, &x));
  OK(zt_builder_splat(b, a[1], 1, shape, &py));
  OK(zt_builder_addptr(b, py, offs, &py));
  OK(zt_builder_load(b, py, mask, ZT_NO_VALUE, &y));
  OK(zt_builder_binary(b, ZT_BINARY_ADDF, x, y, &sum));
  OK(zt_builder_splat(b, a[2], 1, shape, &pz));
  OK(zt_builder_addptr(b, pz, offs, &pz));
  OK(zt_builder_store(b, pz, sum, mask));
  OK(zt_builder_end_kernel(b));
  return b;
}

START_TEST(test_vector_add_parses) {
  zt_builder_t* b = vector_add();
  const char* text;
  size_t size;
  OK(zt_builder_module_text(b, &text, &size));
  ck_assert_uint_eq(strlen(text), size);
  ck_assert_ptr_nonnull(strstr(text, "\"tile.load\""));
  ck_assert_ptr_nonnull(strstr(text, "loc(\"add.py\":3:1)"));
  ck_assert_int_eq(mlir_opt_accepts(text), 0);
  zt_builder_release(b);
}
END_TEST

START_TEST(test_control_flow_and_reduce_parse) {
  zt_builder_t* b;
  OK(zt_builder_create(&b));
  zt_type_t types[2] = {zt_type_ptr(ZT_F32), zt_type_scalar(ZT_I32)};
  zt_value_t a[2];
  OK(zt_builder_begin_kernel(b, "k", 2, types, NULL, a));
  int64_t shape[2] = {4, 16};
  zt_value_t zero, one, f0, acc, iv, it, res, red, red2, cond, r1, mx, pid;
  OK(zt_builder_const_int(b, ZT_I32, 0, &zero));
  OK(zt_builder_const_int(b, ZT_I32, 1, &one));
  OK(zt_builder_const_float(b, ZT_F32, 0.5, &f0));
  OK(zt_builder_splat(b, f0, 2, shape, &acc));
  OK(zt_builder_for_begin(b, zero, a[1], one, 1, &acc, &iv, &it));
  zt_value_t e;
  OK(zt_builder_unary(b, ZT_UNARY_EXP, it, &e));
  OK(zt_builder_for_end(b, 1, &e, &res));
  OK(zt_builder_reduce(b, ZT_REDUCE_ADD, res, 1, &red));
  OK(zt_builder_reduce(b, ZT_REDUCE_MAX, red, 0, &red2));
  OK(zt_builder_program_id(b, 0, &pid));
  OK(zt_builder_cmp(b, ZT_CMP_EQ, pid, zero, &cond));
  OK(zt_builder_if_begin(b, cond));
  zt_value_t t1;
  OK(zt_builder_binary(b, ZT_BINARY_MULF, red2, red2, &t1));
  OK(zt_builder_if_else(b));
  OK(zt_builder_if_end(b, 1, &t1, &red2, &r1));
  OK(zt_builder_binary(b, ZT_BINARY_MAXNUMF, r1, f0, &mx));
  OK(zt_builder_store(b, a[0], mx, ZT_NO_VALUE));
  OK(zt_builder_end_kernel(b));
  const char* text;
  OK(zt_builder_module_text(b, &text, NULL));
  ck_assert_int_eq(mlir_opt_accepts(text), 0);
  zt_builder_release(b);
}
END_TEST

START_TEST(test_type_error_names_location) {
  zt_builder_t* b;
  OK(zt_builder_create(&b));
  zt_type_t types[1] = {zt_type_ptr(ZT_F32)};
  zt_value_t a[1], i, f, out;
  OK(zt_builder_begin_kernel(b, "k", 1, types, NULL, a));
  zt_builder_set_loc(b, "bad.py", 7, 9);
  OK(zt_builder_const_int(b, ZT_I32, 1, &i));
  OK(zt_builder_const_float(b, ZT_F32, 1.0, &f));
  zt_status_t s = zt_builder_binary(b, ZT_BINARY_ADDF, i, f, &out);
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(zt_status_code(s), ZT_STATUS_INVALID_ARGUMENT);
  ck_assert_msg(strstr(zt_status_message(s), "bad.py:7:9") != NULL, "%s",
                zt_status_message(s));
  zt_status_free(s);
  // A value from a closed region is rejected.
  zt_value_t zero, iv, body_val;
  OK(zt_builder_const_int(b, ZT_I32, 0, &zero));
  OK(zt_builder_for_begin(b, zero, zero, i, 0, NULL, &iv, NULL));
  OK(zt_builder_binary(b, ZT_BINARY_ADDI, iv, iv, &body_val));
  OK(zt_builder_for_end(b, 0, NULL, NULL));
  s = zt_builder_binary(b, ZT_BINARY_ADDI, body_val, zero, &out);
  ck_assert_ptr_nonnull(s);
  ck_assert_ptr_nonnull(strstr(zt_status_message(s), "not visible"));
  zt_status_free(s);
  zt_builder_release(b);
}
END_TEST

START_TEST(test_float_constants_exact) {
  zt_builder_t* b;
  OK(zt_builder_create(&b));
  zt_value_t a[1], v;
  zt_type_t t = zt_type_ptr(ZT_F32);
  OK(zt_builder_begin_kernel(b, "k", 1, &t, NULL, a));
  OK(zt_builder_const_float(b, ZT_F16, 1.0, &v));
  OK(zt_builder_const_float(b, ZT_BF16, -2.0, &v));
  OK(zt_builder_const_float(b, ZT_F32, 0.1, &v));
  OK(zt_builder_end_kernel(b));
  const char* text;
  OK(zt_builder_module_text(b, &text, NULL));
  ck_assert_ptr_nonnull(strstr(text, "0x3C00 : f16"));
  ck_assert_ptr_nonnull(strstr(text, "0xC000 : bf16"));
  ck_assert_ptr_nonnull(strstr(text, "0x3DCCCCCD : f32"));
  ck_assert_int_eq(mlir_opt_accepts(text), 0);
  zt_builder_release(b);
}
END_TEST

// tl.multiple_of / max_contiguous / max_constancy: tile.hint ops that parse
// against the dialect; malformed hints are statuses.
START_TEST(test_hints_parse_and_are_checked) {
  zt_builder_t* b;
  OK(zt_builder_create(&b));
  zt_type_t t = zt_type_ptr(ZT_F32);
  zt_value_t a[1], r, h, h2, pid, hs;
  OK(zt_builder_begin_kernel(b, "k", 1, &t, NULL, a));
  OK(zt_builder_make_range(b, 0, 64, &r));
  int64_t v16 = 16, v64 = 64;
  OK(zt_builder_hint(b, r, "multiple_of", &v16, 1, &h));
  OK(zt_builder_hint(b, h, "max_contiguous", &v64, 1, &h2));
  OK(zt_builder_program_id(b, 0, &pid));
  OK(zt_builder_hint(b, pid, "max_constancy", &v16, 1, &hs));
  zt_type_t ht = zt_builder_value_type(b, h2);
  ck_assert_int_eq(ht.rank, 1);
  ck_assert_int_eq(ht.shape[0], 64);
  int64_t bad = 12;
  zt_status_t s = zt_builder_hint(b, r, "max_contiguous", &bad, 1, &h);
  ck_assert_ptr_nonnull(s);
  ck_assert_ptr_nonnull(strstr(zt_status_message(s), "power of two"));
  zt_status_free(s);
  s = zt_builder_hint(b, r, "aligned", &v16, 1, &h);
  ck_assert_ptr_nonnull(s);
  ck_assert_ptr_nonnull(strstr(zt_status_message(s), "unknown hint"));
  zt_status_free(s);
  int64_t two[2] = {16, 16};
  s = zt_builder_hint(b, r, "multiple_of", two, 2, &h);
  ck_assert_ptr_nonnull(s);
  zt_status_free(s);
  OK(zt_builder_end_kernel(b));
  const char* text;
  OK(zt_builder_module_text(b, &text, NULL));
  ck_assert_ptr_nonnull(strstr(text, "\"tile.hint\""));
  ck_assert_ptr_nonnull(strstr(text, "hint = \"max_contiguous\", values = array<i64: 64>"));
  ck_assert_int_eq(mlir_opt_accepts(text), 0);
  zt_builder_release(b);
}
END_TEST

START_TEST(test_block_atomic_scan_debug_ops_parse) {
  zt_builder_t* b;
  OK(zt_builder_create(&b));
  zt_type_t types[3] = {zt_type_ptr(ZT_F16), zt_type_ptr(ZT_I32), zt_type_scalar(ZT_I64)};
  zt_value_t a[3];
  OK(zt_builder_begin_kernel(b, "k", 3, types, NULL, a));
  zt_value_t one, zero, shape[2], strides[2], offs[2], tile, one32;
  OK(zt_builder_const_int(b, ZT_I64, 1, &one));
  OK(zt_builder_const_int(b, ZT_I32, 0, &zero));
  OK(zt_builder_const_int(b, ZT_I32, 1, &one32));
  shape[0] = shape[1] = a[2];
  strides[0] = a[2];
  strides[1] = one;
  offs[0] = offs[1] = zero;
  int64_t bs[2] = {8, 16};
  OK(zt_builder_block_load(b, a[0], 2, shape, strides, offs, bs, 3, ZT_PADDING_ZERO, &tile));
  OK(zt_builder_block_store(b, a[0], 2, shape, strides, offs, tile, 1));
  zt_value_t r, ri, old, cas, sargs[2], comb, scanned;
  OK(zt_builder_make_range(b, 0, 16, &r));
  int64_t s16 = 16;
  zt_value_t p;
  OK(zt_builder_splat(b, a[1], 1, &s16, &p));
  OK(zt_builder_addptr(b, p, r, &p));
  OK(zt_builder_atomic_rmw(b, ZT_ATOMIC_ADD, p, r, ZT_NO_VALUE, NULL, NULL, &old));
  OK(zt_builder_atomic_cas(b, a[1], zero, one32, "relaxed", "gpu", &cas));
  OK(zt_builder_scan_begin(b, 1, &old, 0, true, sargs));
  OK(zt_builder_binary(b, ZT_BINARY_ADDI, sargs[0], sargs[1], &comb));
  zt_status_t wrong = zt_builder_reduce_end(b, 1, &comb, &ri);  // wrong closer
  ck_assert_ptr_nonnull(wrong);
  zt_status_free(wrong);
  OK(zt_builder_scan_end(b, 1, &comb, &scanned));
  OK(zt_builder_print(b, "x = \"quoted\"\n", 1, &scanned, false));
  zt_value_t c;
  OK(zt_builder_cmp(b, ZT_CMP_SGE, scanned, scanned, &c));
  OK(zt_builder_assert(b, c, "scan went backwards"));
  OK(zt_builder_end_kernel(b));
  const char* text;
  OK(zt_builder_module_text(b, &text, NULL));
  ck_assert_ptr_nonnull(strstr(text, "\"tile.block_load\""));
  ck_assert_ptr_nonnull(strstr(text, "reverse = true"));
  ck_assert_int_eq(mlir_opt_accepts(text), 0);
  zt_builder_release(b);
}
END_TEST

int main(void) {
  Suite* s = suite_create("builder");
  TCase* tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_vector_add_parses);
  tcase_add_test(tc, test_control_flow_and_reduce_parse);
  tcase_add_test(tc, test_type_error_names_location);
  tcase_add_test(tc, test_float_constants_exact);
  tcase_add_test(tc, test_block_atomic_scan_debug_ops_parse);
  tcase_add_test(tc, test_hints_parse_and_are_checked);
  suite_add_tcase(s, tc);
  return ct_run_suite(s);
}
