// Integer division on the CPU target never traps: zero divisors (as in the
// masked-off lanes of `x // y` after masked loads) and INT_MIN / -1 give
// defined values instead of SIGFPE. Each kernel runs in a forked child so
// that a trap is reported as a failure instead of ending the test runner.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cpu_test_util.h"

enum { B = 16, NOPS = 4 };

static const zt_binary_op_t k_ops[NOPS] = {ZT_BINARY_DIVSI, ZT_BINARY_DIVUI,
                                           ZT_BINARY_REMSI, ZT_BINARY_REMUI};

typedef void (*div_fn_t)(uint64_t, uint64_t, uint64_t, int32_t, int32_t, int32_t,
                         int32_t, int32_t, int32_t, int32_t, void*);

static int64_t wrap(zt_scalar_kind_t k, int64_t v) {
  switch (k) {
    case ZT_I8: return (int8_t)v;
    case ZT_I16: return (int16_t)v;
    case ZT_I32: return (int32_t)v;
    default: return v;
  }
}

static int64_t get(zt_scalar_kind_t k, const void* p, int i) {
  switch (k) {
    case ZT_I8: return ((const int8_t*)p)[i];
    case ZT_I16: return ((const int16_t*)p)[i];
    case ZT_I32: return ((const int32_t*)p)[i];
    default: return ((const int64_t*)p)[i];
  }
}

static void put(zt_scalar_kind_t k, void* p, int i, int64_t v) {
  switch (k) {
    case ZT_I8: ((int8_t*)p)[i] = (int8_t)v; break;
    case ZT_I16: ((int16_t*)p)[i] = (int16_t)v; break;
    case ZT_I32: ((int32_t*)p)[i] = (int32_t)v; break;
    default: ((int64_t*)p)[i] = v; break;
  }
}

// The documented results: divisor 0 acts as 1; INT_MIN / -1 wraps.
static int64_t ref(zt_scalar_kind_t k, zt_binary_op_t op, int64_t x, int64_t y) {
  int bits = zt_scalar_kind_bits(k);
  uint64_t m = bits == 64 ? ~0ull : (1ull << bits) - 1;
  uint64_t ux = (uint64_t)x & m, uy = (uint64_t)y & m;
  int64_t mn = bits == 64 ? INT64_MIN : -(1ll << (bits - 1));
  bool sbad = y == 0 || (x == mn && y == -1);
  switch (op) {
    case ZT_BINARY_DIVSI: return sbad ? x : wrap(k, x / y);
    case ZT_BINARY_REMSI: return sbad ? 0 : wrap(k, x % y);
    case ZT_BINARY_DIVUI: return uy == 0 ? x : wrap(k, (int64_t)(ux / uy));
    default: return uy == 0 ? 0 : wrap(k, (int64_t)(ux % uy));
  }
}

// Runs fn(X, Y, O, n) in a child; O must be shared memory. Returns the
// child's wait status.
static int run_in_child(div_fn_t fn, void* X, void* Y, void* O, int32_t n) {
  fflush(NULL);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    fn((uint64_t)(uintptr_t)X, (uint64_t)(uintptr_t)Y, (uint64_t)(uintptr_t)O, n, 0, 0,
       0, 1, 1, 1, NULL);
    _exit(0);
  }
  int st = 0;
  ck_assert_int_eq(waitpid(pid, &st, 0), pid);
  return st;
}

static void check_exit(int st) {
  ck_assert_msg(!WIFSIGNALED(st), "kernel died of signal %d (%s)", WTERMSIG(st),
                strsignal(WTERMSIG(st)));
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
}

// Tensor case: x = load(X, mask), y = load(Y, mask) (zero where masked off),
// O[j*B + i] = op_j(x, y) for every lane, masked-off ones included.
START_TEST(test_tensor_div) {
  static const zt_scalar_kind_t kinds[4] = {ZT_I8, ZT_I16, ZT_I32, ZT_I64};
  zt_scalar_kind_t k = kinds[_i];
  int bits = zt_scalar_kind_bits(k);
  zt_type_t t[4] = {zt_type_ptr(k), zt_type_ptr(k), zt_type_ptr(k),
                    zt_type_scalar(ZT_I32)};
  zt_value_t a[4], r;
  zt_builder_t* b = ct_begin("divk", 4, t, a);
  int64_t n = B;
  zt_value_t px = ct_ptrs(b, a[0], B, &r), py = ct_ptrs(b, a[1], B, NULL);
  zt_value_t mask, x, y;
  OK(zt_builder_cmp(b, ZT_CMP_SLT, r, ct_splat(b, a[3], 1, &n), &mask));
  OK(zt_builder_load(b, px, mask, ZT_NO_VALUE, &x));
  OK(zt_builder_load(b, py, mask, ZT_NO_VALUE, &y));
  for (int j = 0; j < NOPS; ++j) {
    zt_value_t off = ct_bin(b, ZT_BINARY_ADDI, r,
                            ct_splat(b, ct_cint(b, ZT_I32, j * B), 1, &n));
    zt_value_t po;
    OK(zt_builder_addptr(b, ct_splat(b, a[2], 1, &n), off, &po));
    OK(zt_builder_store(b, po, ct_bin(b, k_ops[j], x, y), ZT_NO_VALUE));
  }
  ct_kernel_t kern = ct_build(b, "divk");
  int64_t mn = bits == 64 ? INT64_MIN : -(1ll << (bits - 1));
  int64_t xs[B] = {7, -7, 7, -7, 100, mn, mn, mn, 5, 0, -1, mn + 1, 3, 9, 9, 9};
  int64_t ys[B] = {2, 2, -2, -2, 0, -1, 1, 0, 0, 0, -1, -1, 3, 9, 9, 9};
  int32_t valid = 12;  // lanes 12.. are masked off: x = y = 0 there
  uint8_t X[B * 8], Y[B * 8];
  for (int i = 0; i < B; ++i) {
    put(k, X, i, wrap(k, xs[i]));
    put(k, Y, i, wrap(k, ys[i]));
  }
  void* O = mmap(NULL, NOPS * B * 8, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                 -1, 0);
  ck_assert_ptr_ne(O, MAP_FAILED);
  memset(O, 0x5a, NOPS * B * 8);
  check_exit(run_in_child((div_fn_t)kern.fn, X, Y, O, valid));
  for (int j = 0; j < NOPS; ++j)
    for (int i = 0; i < B; ++i) {
      int64_t x = i < valid ? wrap(k, xs[i]) : 0, y = i < valid ? wrap(k, ys[i]) : 0;
      int64_t want = ref(k, k_ops[j], x, y), got = get(k, O, j * B + i);
      ck_assert_msg(got == want, "kind %d op %d lane %d: %lld op %lld = %lld, want %lld",
                    k, j, i, (long long)x, (long long)y, (long long)got,
                    (long long)want);
    }
  munmap(O, NOPS * B * 8);
  ct_release(&kern);
}
END_TEST

// Scalar case (no loop): kernel arguments divided directly.
typedef void (*sdiv_fn_t)(int64_t, int64_t, uint64_t, int32_t, int32_t, int32_t,
                          int32_t, int32_t, int32_t, void*);

START_TEST(test_scalar_div) {
  zt_type_t t[3] = {zt_type_scalar(ZT_I64), zt_type_scalar(ZT_I64), zt_type_ptr(ZT_I64)};
  zt_value_t a[3];
  zt_builder_t* b = ct_begin("divs", 3, t, a);
  for (int j = 0; j < NOPS; ++j) {
    zt_value_t p;
    OK(zt_builder_addptr(b, a[2], ct_cint(b, ZT_I32, j), &p));
    OK(zt_builder_store(b, p, ct_bin(b, k_ops[j], a[0], a[1]), ZT_NO_VALUE));
  }
  ct_kernel_t kern = ct_build(b, "divs");
  int64_t cases[][2] = {{INT64_MIN, -1}, {42, 0}, {-42, 5}, {0, 0}};
  int64_t* O = mmap(NULL, 64, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ck_assert_ptr_ne(O, MAP_FAILED);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c) {
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
      ((sdiv_fn_t)kern.fn)(cases[c][0], cases[c][1], (uint64_t)(uintptr_t)O, 0, 0, 0, 1,
                           1, 1, NULL);
      _exit(0);
    }
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    check_exit(st);
    for (int j = 0; j < NOPS; ++j)
      ck_assert_msg(O[j] == ref(ZT_I64, k_ops[j], cases[c][0], cases[c][1]),
                    "case %zu op %d: got %lld", c, j, (long long)O[j]);
  }
  munmap(O, 64);
  ct_release(&kern);
}
END_TEST

// Through the runtime (the grid on the thread pool): Triton's
// `r = x // y` with masked loads over a tail block.
START_TEST(test_launch_masked_tail) {
  zt_type_t t[4] = {zt_type_ptr(ZT_I32), zt_type_ptr(ZT_I32), zt_type_ptr(ZT_I32),
                    zt_type_scalar(ZT_I32)};
  zt_value_t a[4], r, pid;
  zt_builder_t* b = ct_begin("floordiv", 4, t, a);
  int64_t n = 64;
  OK(zt_builder_program_id(b, 0, &pid));
  OK(zt_builder_make_range(b, 0, 64, &r));
  zt_value_t offs = ct_bin(b, ZT_BINARY_ADDI, r,
                           ct_splat(b, ct_bin(b, ZT_BINARY_MULI, pid, ct_cint(b, ZT_I32, 64)),
                                    1, &n));
  zt_value_t mask, px, py, po, x, y;
  OK(zt_builder_cmp(b, ZT_CMP_SLT, offs, ct_splat(b, a[3], 1, &n), &mask));
  OK(zt_builder_addptr(b, ct_splat(b, a[0], 1, &n), offs, &px));
  OK(zt_builder_addptr(b, ct_splat(b, a[1], 1, &n), offs, &py));
  OK(zt_builder_addptr(b, ct_splat(b, a[2], 1, &n), offs, &po));
  OK(zt_builder_load(b, px, mask, ZT_NO_VALUE, &x));
  OK(zt_builder_load(b, py, mask, ZT_NO_VALUE, &y));
  OK(zt_builder_store(b, po, ct_bin(b, ZT_BINARY_DIVSI, x, y), mask));
  ct_kernel_t kern = ct_build(b, "floordiv");
  enum { N = 1000 };
  int32_t* X = malloc(N * 4);
  int32_t* Y = malloc(N * 4);
  int32_t* O = mmap(NULL, N * 4, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  for (int i = 0; i < N; ++i) {
    X[i] = i * 7 - 3000;
    Y[i] = i % 13 + 1;
  }
  fflush(NULL);
  pid_t child = fork();
  if (child == 0) {
    zt_arg_t args[4] = {ct_ptr(X), ct_ptr(Y), ct_ptr(O), ct_int(ZT_I32, N)};
    zt_status_t s = ct_launch(&kern, (N + 63) / 64, 1, 1, 4, args);
    _exit(s ? 2 : 0);
  }
  int st = 0;
  ck_assert_int_eq(waitpid(child, &st, 0), child);
  check_exit(st);
  for (int i = 0; i < N; ++i) ck_assert_int_eq(O[i], X[i] / Y[i]);
  munmap(O, N * 4);
  free(X);
  free(Y);
  ct_release(&kern);
}
END_TEST

int main(void) {
  Suite* s = suite_create("cpu_div");
  TCase* tc = tcase_create("div");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_tensor_div, 0, 4);
  tcase_add_test(tc, test_scalar_div);
  tcase_add_test(tc, test_launch_masked_tail);
  suite_add_tcase(s, tc);
  return ct_run_suite(s);
}
