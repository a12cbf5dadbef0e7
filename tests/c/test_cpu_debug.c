// tile.print and tile.assert on the CPU. print: the exact lines (Triton's
// device_print layout) captured from stdout in a forked child, directly and
// from a parallel launch. assert: a failing condition makes the launch
// return DEVICE_ASSERT naming the message, the source location, the program
// and the element, ends that program before its later ops, and leaves the
// process and the next launches fine; a holding one changes nothing.
#include <sys/wait.h>
#include <unistd.h>

#include "cpu_test_util.h"

typedef void (*print_fn_t)(float, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t,
                           void*);

// Runs fn(1.5) as program (2, 0, 1) in a child with stdout on a pipe;
// returns what it printed (malloc'ed).
static char* capture(print_fn_t fn) {
  int fds[2];
  ck_assert_int_eq(pipe(fds), 0);
  fflush(NULL);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    fn(1.5f, 2, 0, 1, 4, 1, 2, NULL);
    _exit(0);
  }
  close(fds[1]);
  size_t cap = 4096, len = 0;
  char* out = malloc(cap);
  ssize_t n;
  while ((n = read(fds[0], out + len, cap - len - 1)) > 0) {
    len += (size_t)n;
    if (len + 1 == cap) out = realloc(out, cap *= 2);
  }
  out[len] = 0;
  close(fds[0]);
  int st;
  waitpid(pid, &st, 0);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
  return out;
}

// print(" x: ", range(0, 4)); print(" v: ", reshape(range * -3, 2x2) as i8,
// f); print(" h: ", -1 as i16 scalar, hex); print(" hello").
static ct_kernel_t build_print(void) {
  zt_type_t t[1] = {zt_type_scalar(ZT_F32)};
  zt_value_t a[1], r, m, r8, r2, h;
  zt_builder_t* b = ct_begin("printer", 1, t, a);
  int64_t four = 4, two[2] = {2, 2};
  OK(zt_builder_make_range(b, 0, 4, &r));
  OK(zt_builder_print(b, " x: ", 1, &r, false));
  m = ct_bin(b, ZT_BINARY_MULI, r, ct_splat(b, ct_cint(b, ZT_I32, -3), 1, &four));
  OK(zt_builder_cast(b, ZT_CAST_TRUNCI, m, ZT_I8, &r8));
  OK(zt_builder_reshape(b, r8, 2, two, &r2));
  zt_value_t both[2] = {r2, a[0]};
  OK(zt_builder_print(b, " v: ", 2, both, false));
  h = ct_cint(b, ZT_I16, -1);
  OK(zt_builder_print(b, " h: ", 1, &h, true));
  OK(zt_builder_print(b, " hello", 0, NULL, false));
  return ct_build(b, "printer");
}

START_TEST(test_print_lines) {
  ct_kernel_t k = build_print();
  char* out = capture((print_fn_t)k.fn);
  const char* want =
      "pid (2, 0, 1) idx (0) x: 0\n"
      "pid (2, 0, 1) idx (1) x: 1\n"
      "pid (2, 0, 1) idx (2) x: 2\n"
      "pid (2, 0, 1) idx (3) x: 3\n"
      "pid (2, 0, 1) idx (0, 0) v: (operand 0) 0\n"
      "pid (2, 0, 1) idx (0, 1) v: (operand 0) -3\n"
      "pid (2, 0, 1) idx (1, 0) v: (operand 0) -6\n"
      "pid (2, 0, 1) idx (1, 1) v: (operand 0) -9\n"
      "pid (2, 0, 1) v: (operand 1) 1.500000\n"
      "pid (2, 0, 1) h: 0xffff\n"
      "pid (2, 0, 1) hello\n";
  ck_assert_str_eq(out, want);
  free(out);
  ct_release(&k);
}
END_TEST

static int cmp_lines(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

// From a launch of 3 x 2 programs on the pool: whole lines, 11 per program.
START_TEST(test_print_launch) {
  ct_kernel_t k = build_print();
  int fds[2];
  ck_assert_int_eq(pipe(fds), 0);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    zt_arg_t args[1] = {{.kind = ZT_F32, .value.f = -0.25}};
    zt_status_t s = ct_launch(&k, 3, 2, 1, 1, args);
    _exit(s ? 3 : 0);
  }
  close(fds[1]);
  static char buf[1 << 16];
  size_t len = 0;
  ssize_t n;
  while ((n = read(fds[0], buf + len, sizeof buf - len - 1)) > 0) len += (size_t)n;
  buf[len] = 0;
  close(fds[0]);
  int st;
  waitpid(pid, &st, 0);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
  char* lines[128];
  int nl = 0;
  for (char* p = strtok(buf, "\n"); p && nl < 128; p = strtok(NULL, "\n")) lines[nl++] = p;
  ck_assert_int_eq(nl, 66);
  qsort(lines, (size_t)nl, sizeof lines[0], cmp_lines);
  ck_assert_str_eq(lines[0], "pid (0, 0, 0) h: 0xffff");
  ck_assert_str_eq(lines[65], "pid (2, 1, 0) v: (operand 1) -0.250000");
  int per_program[3][2] = {{0}};
  for (int i = 0; i < nl; ++i) {
    int x, y, z;
    ck_assert_int_eq(sscanf(lines[i], "pid (%d, %d, %d)", &x, &y, &z), 3);
    ck_assert(x >= 0 && x < 3 && y >= 0 && y < 2 && z == 0);
    per_program[x][y]++;
    if (strstr(lines[i], "(operand 1)"))
      ck_assert_msg(strstr(lines[i], "v: (operand 1) -0.250000"), "%s", lines[i]);
  }
  for (int x = 0; x < 3; ++x)
    for (int y = 0; y < 2; ++y) ck_assert_int_eq(per_program[x][y], 11);
  ct_release(&k);
}
END_TEST

// check(X, O, n): x = load(X + pid*8 + r); assert(x < n, "x < n") at
// kern.py:12:5; store(O + pid*8 + r, x).
static ct_kernel_t build_check(void) {
  zt_type_t t[3] = {zt_type_ptr(ZT_I32), zt_type_ptr(ZT_I32), zt_type_scalar(ZT_I32)};
  zt_value_t a[3], pid, r, x, ok, px, po;
  int64_t eight = 8;
  zt_builder_t* b = ct_begin("check", 3, t, a);
  OK(zt_builder_program_id(b, 0, &pid));
  OK(zt_builder_make_range(b, 0, 8, &r));
  zt_value_t offs = ct_bin(
      b, ZT_BINARY_ADDI, r,
      ct_splat(b, ct_bin(b, ZT_BINARY_MULI, pid, ct_cint(b, ZT_I32, 8)), 1, &eight));
  OK(zt_builder_addptr(b, ct_splat(b, a[0], 1, &eight), offs, &px));
  OK(zt_builder_load(b, px, ZT_NO_VALUE, ZT_NO_VALUE, &x));
  OK(zt_builder_cmp(b, ZT_CMP_SLT, x, ct_splat(b, a[2], 1, &eight), &ok));
  zt_builder_set_loc(b, "kern.py", 12, 5);
  OK(zt_builder_assert(b, ok, "x < n"));
  zt_builder_set_loc(b, "kern.py", 13, 5);
  OK(zt_builder_addptr(b, ct_splat(b, a[1], 1, &eight), offs, &po));
  OK(zt_builder_store(b, po, x, ZT_NO_VALUE));
  return ct_build(b, "check");
}

START_TEST(test_assert) {
  setenv("ZETILE_NUM_THREADS", "4", 1);
  enum { P = 64, N = P * 8 };
  ct_kernel_t k = build_check();
  int32_t X[N], O[N];
  for (int i = 0; i < N; ++i) X[i] = i;
  zt_arg_t args[3] = {ct_ptr(X), ct_ptr(O), ct_int(ZT_I32, N)};
  // Holds everywhere: OK, every element stored.
  memset(O, 0xff, sizeof O);
  OK(ct_launch(&k, P, 1, 1, 3, args));
  for (int i = 0; i < N; ++i) ck_assert_int_eq(O[i], X[i]);
  // Fails in program 5 at element 3 only.
  X[5 * 8 + 3] = N + 100;
  memset(O, 0xff, sizeof O);
  zt_status_t s = ct_launch(&k, P, 1, 1, 3, args);
  ck_assert_int_eq(zt_status_code(s), ZT_STATUS_DEVICE_ASSERT);
  const char* msg = zt_status_message(s);
  ck_assert_msg(strstr(msg, "kern.py:12:5") && strstr(msg, "program (5, 0, 0)") &&
                    strstr(msg, "idx (3)") && strstr(msg, "x < n"),
                "message: %s", msg);
  zt_status_free(s);
  // The failing program stopped at the assert: nothing of it was stored.
  for (int i = 5 * 8; i < 6 * 8; ++i) ck_assert_int_eq(O[i], -1);
  // Every program fails at once: one report, no crash; then a good launch.
  for (int i = 0; i < N; ++i) X[i] = N;
  s = ct_launch(&k, P, 1, 1, 3, args);
  ck_assert_int_eq(zt_status_code(s), ZT_STATUS_DEVICE_ASSERT);
  ck_assert_ptr_nonnull(strstr(zt_status_message(s), "idx (0)"));
  zt_status_free(s);
  for (int i = 0; i < N; ++i) X[i] = i;
  memset(O, 0xff, sizeof O);
  OK(ct_launch(&k, P, 1, 1, 3, args));
  for (int i = 0; i < N; ++i) ck_assert_int_eq(O[i], X[i]);
  ct_release(&k);
}
END_TEST

// A scalar assert (rank 0), and a kernel called directly with a NULL context
// (as tests do): the failure is ignored and the kernel runs on.
typedef void (*scalar_fn_t)(int32_t, uint64_t, int32_t, int32_t, int32_t, int32_t, int32_t,
                            int32_t, void*);

START_TEST(test_assert_scalar) {
  zt_type_t t[2] = {zt_type_scalar(ZT_I32), zt_type_ptr(ZT_I32)};
  zt_value_t a[2], ok;
  zt_builder_t* b = ct_begin("positive", 2, t, a);
  OK(zt_builder_cmp(b, ZT_CMP_SGT, a[0], ct_cint(b, ZT_I32, 0), &ok));
  OK(zt_builder_assert(b, ok, "v > 0"));
  OK(zt_builder_store(b, a[1], a[0], ZT_NO_VALUE));
  ct_kernel_t k = ct_build(b, "positive");
  int32_t out = 0;
  zt_arg_t args[2] = {ct_int(ZT_I32, 7), ct_ptr(&out)};
  OK(ct_launch(&k, 4, 1, 1, 2, args));
  ck_assert_int_eq(out, 7);
  args[0] = ct_int(ZT_I32, -2);
  zt_status_t s = ct_launch(&k, 4, 1, 1, 2, args);
  ck_assert_int_eq(zt_status_code(s), ZT_STATUS_DEVICE_ASSERT);
  ck_assert_msg(strstr(zt_status_message(s), "v > 0") &&
                    !strstr(zt_status_message(s), "idx"),
                "%s", zt_status_message(s));
  zt_status_free(s);
  ck_assert_int_eq(out, 7);
  ((scalar_fn_t)k.fn)(-5, (uint64_t)(uintptr_t)&out, 0, 0, 0, 1, 1, 1, NULL);
  ck_assert_int_eq(out, -5);
  ct_release(&k);
}
END_TEST

int main(void) {
  Suite* s = suite_create("cpu_debug");
  TCase* tc = tcase_create("debug");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_print_lines);
  tcase_add_test(tc, test_print_launch);
  tcase_add_test(tc, test_assert);
  tcase_add_test(tc, test_assert_scalar);
  suite_add_tcase(s, tc);
  return ct_run_suite(s);
}
