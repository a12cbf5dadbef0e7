// CPU target end to end: kernels built with the C builder, compiled through
// zt_compile (the dlopen'ed compiler), JIT-loaded with cpu_load and called
// directly over the grid; results compared with C references.
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
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


// Softmax over rows: 2-D offsets by expand_dims + broadcast, masked load with
// other=-inf, max and sum reductions along axis 1, broadcast back.
typedef void (*softmax_fn_t)(uint64_t, uint64_t, int32_t, int32_t, int32_t, int32_t,
                             int32_t, int32_t, int32_t, int32_t, int32_t);

START_TEST(test_softmax_rows) {
  enum { BM = 4, BN = 128 };
  zt_type_t t[5] = {zt_type_ptr(ZT_F32), zt_type_ptr(ZT_F32), zt_type_scalar(ZT_I32),
                    zt_type_scalar(ZT_I32), zt_type_scalar(ZT_I32)};
  zt_value_t a[5];  // in, out, rows, cols, stride
  zt_builder_t* b = begin("softmax", 5, t, a);
  zt_value_t pid, m1, m2, mask, x, mx, e, sm, y;
  OK(zt_builder_program_id(b, 0, &pid));
  zt_value_t rows = bin(b, ZT_BINARY_ADDI, splat1(b, bin(b, ZT_BINARY_MULI, pid, cint(b, ZT_I32, BM)), BM),
                        range(b, BM));
  zt_value_t cols = range(b, BN);
  zt_value_t offs = offsets2(b, rows, cols, a[4], BM, BN);
  OK(zt_builder_cmp(b, ZT_CMP_SLT, rows, splat1(b, a[2], BM), &m1));
  OK(zt_builder_cmp(b, ZT_CMP_SLT, cols, splat1(b, a[3], BN), &m2));
  mask = bin(b, ZT_BINARY_ANDI, bcast2(b, expand(b, m1, 1), BM, BN),
             bcast2(b, expand(b, m2, 0), BM, BN));
  zt_value_t ninf = splat2(b, cfloat(b, ZT_F32, -INFINITY), BM, BN);
  OK(zt_builder_load(b, addptr(b, splat2(b, a[0], BM, BN), offs), mask, ninf, &x));
  OK(zt_builder_reduce(b, ZT_REDUCE_MAX, x, 1, &mx));
  OK(zt_builder_unary(b, ZT_UNARY_EXP,
                      bin(b, ZT_BINARY_SUBF, x, bcast2(b, expand(b, mx, 1), BM, BN)), &e));
  OK(zt_builder_reduce(b, ZT_REDUCE_ADD, e, 1, &sm));
  y = bin(b, ZT_BINARY_DIVF, e, bcast2(b, expand(b, sm, 1), BM, BN));
  OK(zt_builder_store(b, addptr(b, splat2(b, a[1], BM, BN), offs), y, mask));
  OK(zt_builder_end_kernel(b));
  kernel_t k = build(b, "softmax");
  int R = 10, C = 100, S = 103, grid = (R + BM - 1) / BM;
  float* in = malloc(sizeof(float) * R * S);
  float* out = calloc((size_t)R * S, sizeof(float));
  for (int i = 0; i < R * S; ++i) in[i] = sinf((float)i * 0.37f) * 4.0f;
  for (int p = 0; p < grid; ++p)
    ((softmax_fn_t)k.fn)((uint64_t)in, (uint64_t)out, R, C, S, p, 0, 0, grid, 1, 1);
  for (int r = 0; r < R; ++r) {
    float m = -INFINITY, sum = 0;
    for (int c = 0; c < C; ++c) m = fmaxf(m, in[r * S + c]);
    for (int c = 0; c < C; ++c) sum += expf(in[r * S + c] - m);
    for (int c = 0; c < C; ++c)
      ck_assert_float_eq_tol(out[r * S + c], expf(in[r * S + c] - m) / sum, 1e-6);
    for (int c = C; c < S; ++c) ck_assert_float_eq(out[r * S + c], 0.0f);
  }
  free(in);
  free(out);
  release(&k);
}
END_TEST

// for i in [0, n): acc += x[i*B + r]; (p, q) = (q, p + q) (a swap of carried
// tensors); s += i (a carried scalar). Stores acc, p and s.
typedef void (*loop_fn_t)(uint64_t, uint64_t, int32_t, int32_t, int32_t, int32_t,
                          int32_t, int32_t, int32_t);

START_TEST(test_loop_carried_tensors) {
  enum { B = 64 };
  zt_type_t t[3] = {zt_type_ptr(ZT_F32), zt_type_ptr(ZT_F32), zt_type_scalar(ZT_I32)};
  zt_value_t a[3];
  zt_builder_t* b = begin("loop", 3, t, a);
  zt_value_t r = range(b, B);
  zt_value_t acc0 = splat1(b, cfloat(b, ZT_F32, 0.0), B);
  zt_value_t p0 = splat1(b, cfloat(b, ZT_F32, 1.0), B);
  zt_value_t q0 = bin(b, ZT_BINARY_ADDF, p0, splat1(b, cfloat(b, ZT_F32, 0.0), B));
  zt_value_t s0 = cint(b, ZT_I32, 0);
  zt_value_t inits[4] = {acc0, p0, q0, s0}, iv, it[4], res[4], x;
  OK(zt_builder_for_begin(b, cint(b, ZT_I32, 0), a[2], cint(b, ZT_I32, 1), 4, inits, &iv, it));
  zt_value_t offs = bin(b, ZT_BINARY_ADDI, splat1(b, bin(b, ZT_BINARY_MULI, iv, cint(b, ZT_I32, B)), B), r);
  OK(zt_builder_load(b, addptr(b, splat1(b, a[0], B), offs), ZT_NO_VALUE, ZT_NO_VALUE, &x));
  zt_value_t yields[4] = {bin(b, ZT_BINARY_ADDF, it[0], x), it[2],
                          bin(b, ZT_BINARY_ADDF, it[1], it[2]),
                          bin(b, ZT_BINARY_ADDI, it[3], iv)};
  OK(zt_builder_for_end(b, 4, yields, res));
  zt_value_t sf;
  OK(zt_builder_cast(b, ZT_CAST_SITOFP, res[3], ZT_F32, &sf));
  zt_value_t out = splat1(b, a[1], B);
  OK(zt_builder_store(b, addptr(b, out, r), res[0], ZT_NO_VALUE));
  OK(zt_builder_store(b, addptr(b, out, bin(b, ZT_BINARY_ADDI, r, splat1(b, cint(b, ZT_I32, B), B))),
                      bin(b, ZT_BINARY_ADDF, res[1], splat1(b, sf, B)), ZT_NO_VALUE));
  OK(zt_builder_end_kernel(b));
  kernel_t k = build(b, "loop");
  int n = 7;
  float* x_h = malloc(sizeof(float) * n * B);
  float out_h[2 * B];
  for (int i = 0; i < n * B; ++i) x_h[i] = (float)(i % 13) - 4.0f;
  ((loop_fn_t)k.fn)((uint64_t)x_h, (uint64_t)out_h, n, 0, 0, 0, 1, 1, 1);
  float p = 1, q = 1;
  int sc = 0;
  for (int i = 0; i < n; ++i) {
    float np = q, nq = p + q;
    p = np;
    q = nq;
    sc += i;
  }
  for (int j = 0; j < B; ++j) {
    float acc = 0;
    for (int i = 0; i < n; ++i) acc += x_h[i * B + j];
    ck_assert_float_eq(out_h[j], acc);
    ck_assert_float_eq(out_h[B + j], p + (float)sc);
  }
  free(x_h);
  release(&k);
}
END_TEST

// if pid == 0 { (v, t) = (x * 2, splat 1) } else { (v, t) = (x + 1, range) }
typedef void (*if_fn_t)(uint64_t, float, int32_t, int32_t, int32_t, int32_t,
                        int32_t, int32_t);

START_TEST(test_if_else) {
  enum { B = 16 };
  zt_type_t t[2] = {zt_type_ptr(ZT_F32), zt_type_scalar(ZT_F32)};
  zt_value_t a[2];
  zt_builder_t* b = begin("ifelse", 2, t, a);
  zt_value_t pid, cond, res[2], rf;
  OK(zt_builder_program_id(b, 0, &pid));
  OK(zt_builder_cmp(b, ZT_CMP_EQ, pid, cint(b, ZT_I32, 0), &cond));
  OK(zt_builder_if_begin(b, cond));
  zt_value_t ty[2] = {bin(b, ZT_BINARY_MULF, a[1], cfloat(b, ZT_F32, 2.0)),
                      splat1(b, cint(b, ZT_I32, 1), B)};
  OK(zt_builder_if_else(b));
  zt_value_t ey[2] = {bin(b, ZT_BINARY_ADDF, a[1], cfloat(b, ZT_F32, 1.0)), range(b, B)};
  OK(zt_builder_if_end(b, 2, ty, ey, res));
  OK(zt_builder_cast(b, ZT_CAST_SITOFP, res[1], ZT_F32, &rf));
  zt_value_t offs = bin(b, ZT_BINARY_ADDI, splat1(b, bin(b, ZT_BINARY_MULI, pid, cint(b, ZT_I32, B)), B),
                        range(b, B));
  OK(zt_builder_store(b, addptr(b, splat1(b, a[0], B), offs),
                      bin(b, ZT_BINARY_ADDF, rf, splat1(b, res[0], B)), ZT_NO_VALUE));
  OK(zt_builder_end_kernel(b));
  kernel_t k = build(b, "ifelse");
  float out[2 * B];
  for (int p = 0; p < 2; ++p) ((if_fn_t)k.fn)((uint64_t)out, 3.5f, p, 0, 0, 2, 1, 1);
  for (int j = 0; j < B; ++j) {
    ck_assert_float_eq(out[j], 1.0f + 7.0f);
    ck_assert_float_eq(out[B + j], (float)j + 4.5f);
  }
  release(&k);
}
END_TEST

// f16 in, f16 arithmetic, exp on f16, bf16 through f32, f16 out.
typedef void (*half_fn_t)(uint64_t, uint64_t, uint64_t, uint16_t, int32_t, int32_t,
                          int32_t, int32_t, int32_t, int32_t);

START_TEST(test_f16_bf16) {
  enum { B = 32 };
  zt_type_t t[4] = {zt_type_ptr(ZT_F16), zt_type_ptr(ZT_F16), zt_type_ptr(ZT_BF16),
                    zt_type_scalar(ZT_F16)};
  zt_value_t a[4];
  zt_builder_t* b = begin("half", 4, t, a);
  zt_value_t r = range(b, B), x, e, xf, bf, bf2;
  OK(zt_builder_load(b, addptr(b, splat1(b, a[0], B), r), ZT_NO_VALUE, ZT_NO_VALUE, &x));
  zt_value_t y = bin(b, ZT_BINARY_ADDF, bin(b, ZT_BINARY_MULF, x, splat1(b, a[3], B)),
                     splat1(b, cfloat(b, ZT_F16, 1.0), B));
  OK(zt_builder_unary(b, ZT_UNARY_EXP, bin(b, ZT_BINARY_MULF, x, splat1(b, cfloat(b, ZT_F16, 0.25), B)), &e));
  OK(zt_builder_store(b, addptr(b, splat1(b, a[1], B), r), bin(b, ZT_BINARY_ADDF, y, e), ZT_NO_VALUE));
  OK(zt_builder_cast(b, ZT_CAST_EXTF, x, ZT_F32, &xf));
  OK(zt_builder_cast(b, ZT_CAST_TRUNCF, xf, ZT_BF16, &bf));
  bf2 = bin(b, ZT_BINARY_MULF, bf, bf);
  OK(zt_builder_unary(b, ZT_UNARY_SQRT, bf2, &bf2));
  OK(zt_builder_store(b, addptr(b, splat1(b, a[2], B), r), bf2, ZT_NO_VALUE));
  OK(zt_builder_end_kernel(b));
  kernel_t k = build(b, "half");
  uint16_t in[B], out[B], outb[B];
  for (int i = 0; i < B; ++i) in[i] = f2h((float)(i - 16) * 0.375f);
  ((half_fn_t)k.fn)((uint64_t)in, (uint64_t)out, (uint64_t)outb, f2h(1.5f), 0, 0, 0, 1, 1, 1);
  for (int i = 0; i < B; ++i) {
    float xv = h2f(in[i]);
    float yv = h2f(f2h(h2f(f2h(xv * 1.5f)) + 1.0f));
    float ev = h2f(f2h(expf(h2f(f2h(xv * 0.25f)))));
    float want = h2f(f2h(yv + ev));
    ck_assert_msg(fabsf(h2f(out[i]) - want) <= 1e-3f * fabsf(want) + 1e-3f,
                  "f16 %d: %g vs %g", i, h2f(out[i]), want);
    uint32_t bits = (uint32_t)outb[i] << 16;
    float bv;
    memcpy(&bv, &bits, 4);
    ck_assert_msg(fabsf(bv - fabsf(xv)) <= 0.01f * fabsf(xv), "bf16 %d: %g vs %g", i,
                  bv, fabsf(xv));
  }
  release(&k);
}
END_TEST

// C[M,N] = A[M,K] @ B[K,N] + 1 with A, B of `in` kind, fp32 (or i32) result;
// K is looped in steps of BK with a carried accumulator.
typedef void (*dot_fn_t)(uint64_t, uint64_t, uint64_t, int32_t, int32_t, int32_t,
                         int32_t, int32_t, int32_t, int32_t);

static kernel_t dot_kernel(zt_scalar_kind_t in, zt_scalar_kind_t acc_kind, int M,
                           int N, int BK, const char* prec) {
  zt_type_t t[4] = {zt_type_ptr(in), zt_type_ptr(in), zt_type_ptr(acc_kind),
                    zt_type_scalar(ZT_I32)};
  zt_value_t a[4];
  zt_builder_t* b = begin("gemm", 4, t, a);
  zt_value_t rm = range(b, M), rn = range(b, N), rk = range(b, BK), iv, acc, res, x, y;
  zt_value_t one = acc_kind == ZT_I32 ? cint(b, ZT_I32, 1) : cfloat(b, ZT_F32, 1.0);
  zt_value_t acc0 = splat2(b, one, M, N);
  OK(zt_builder_for_begin(b, cint(b, ZT_I32, 0), a[3], cint(b, ZT_I32, BK), 1, &acc0, &iv, &acc));
  zt_value_t kk = bin(b, ZT_BINARY_ADDI, splat1(b, iv, BK), rk);
  zt_value_t aoff = offsets2(b, rm, kk, a[3], M, BK);
  zt_value_t boff = offsets2(b, kk, rn, cint(b, ZT_I32, N), BK, N);
  OK(zt_builder_load(b, addptr(b, splat2(b, a[0], M, BK), aoff), ZT_NO_VALUE, ZT_NO_VALUE, &x));
  OK(zt_builder_load(b, addptr(b, splat2(b, a[1], BK, N), boff), ZT_NO_VALUE, ZT_NO_VALUE, &y));
  OK(zt_builder_dot(b, x, y, acc, prec, &res));
  OK(zt_builder_for_end(b, 1, &res, &acc));
  OK(zt_builder_store(b, addptr(b, splat2(b, a[2], M, N), offsets2(b, rm, rn, cint(b, ZT_I32, N), M, N)),
                      acc, ZT_NO_VALUE));
  OK(zt_builder_end_kernel(b));
  return build(b, "gemm");
}

START_TEST(test_dot_f16_f32_i8) {
  enum { M = 16, N = 32, K = 64, BK = 16 };
  zt_scalar_kind_t kinds[3] = {ZT_F16, ZT_F32, ZT_I8};
  for (int v = 0; v < 3; ++v) {
    zt_scalar_kind_t in = kinds[v], ak = in == ZT_I8 ? ZT_I32 : ZT_F32;
    kernel_t k = dot_kernel(in, ak, M, N, BK, "ieee");
    float af[M * K], bf[K * N];
    uint16_t ah[M * K], bh[K * N];
    int8_t ai[M * K], bi[K * N];
    for (int i = 0; i < M * K; ++i) {
      ai[i] = (int8_t)((i * 7) % 11 - 5);
      af[i] = in == ZT_I8 ? ai[i] : h2f(f2h(sinf((float)i)));
      ah[i] = f2h(af[i]);
    }
    for (int i = 0; i < K * N; ++i) {
      bi[i] = (int8_t)((i * 5) % 9 - 4);
      bf[i] = in == ZT_I8 ? bi[i] : h2f(f2h(cosf((float)i * 0.5f)));
      bh[i] = f2h(bf[i]);
    }
    float cf[M * N];
    int32_t ci[M * N];
    const void* pa = in == ZT_F16 ? (void*)ah : in == ZT_F32 ? (void*)af : (void*)ai;
    const void* pb = in == ZT_F16 ? (void*)bh : in == ZT_F32 ? (void*)bf : (void*)bi;
    void* pc = ak == ZT_I32 ? (void*)ci : (void*)cf;
    ((dot_fn_t)k.fn)((uint64_t)pa, (uint64_t)pb, (uint64_t)pc, K, 0, 0, 0, 1, 1, 1);
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        double want = 1;
        for (int kk = 0; kk < K; ++kk) want += (double)af[m * K + kk] * bf[kk * N + n];
        if (ak == ZT_I32)
          ck_assert_int_eq(ci[m * N + n], (int32_t)want);
        else
          ck_assert_msg(fabs(cf[m * N + n] - want) < 1e-4 * (1 + fabs(want)),
                        "kind %d [%d,%d]: %g vs %g", v, m, n, cf[m * N + n], want);
      }
    release(&k);
  }
}
END_TEST

// The same int8 bytes read as unsigned ("unsigned"): exact, values >= 128
// count as 128..255; "unsigned" on float operands is refused.
START_TEST(test_dot_u8) {
  enum { M = 16, N = 32, K = 64, BK = 32 };
  kernel_t k = dot_kernel(ZT_I8, ZT_I32, M, N, BK, "unsigned");
  uint8_t a[M * K], x[K * N];
  for (int i = 0; i < M * K; ++i) a[i] = (uint8_t)(i * 37 + 11);
  for (int i = 0; i < K * N; ++i) x[i] = (uint8_t)(i * 91 + 200);
  int32_t c[M * N];
  ((dot_fn_t)k.fn)((uint64_t)a, (uint64_t)x, (uint64_t)c, K, 0, 0, 0, 1, 1, 1);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      int64_t want = 1;
      for (int kk = 0; kk < K; ++kk) want += (int64_t)a[m * K + kk] * x[kk * N + n];
      ck_assert_int_eq(c[m * N + n], want);
    }
  release(&k);

  zt_type_t t[1] = {zt_type_ptr(ZT_F16)};
  zt_value_t arg, v, acc, res;
  zt_builder_t* b = begin("bad", 1, t, &arg);
  OK(zt_builder_load(b, splat2(b, arg, 16, 16), ZT_NO_VALUE, ZT_NO_VALUE, &v));
  acc = splat2(b, cfloat(b, ZT_F32, 0.0), 16, 16);
  zt_status_t st = zt_builder_dot(b, v, v, acc, "unsigned", &res);
  ck_assert_ptr_nonnull(st);
  ck_assert_msg(strstr(zt_status_message(st), "needs integer operands") != NULL, "%s",
                zt_status_message(st));
  zt_status_free(st);
  zt_builder_release(b);
}
END_TEST

// while (i < n) { i = i * 2 + 1; v = v + v } with a carried tensor; then a
// user combiner reduce (argmax-like: value and index) and trans/reshape.
typedef void (*while_fn_t)(uint64_t, int32_t, int32_t, int32_t, int32_t, int32_t,
                           int32_t, int32_t);

START_TEST(test_while_trans_reduce2) {
  enum { B = 8 };
  zt_type_t t[2] = {zt_type_ptr(ZT_I32), zt_type_scalar(ZT_I32)};
  zt_value_t a[2];
  zt_builder_t* b = begin("wtr", 2, t, a);
  zt_value_t r = range(b, B), ba[2], aa[2], res[2], cond;
  zt_value_t inits[2] = {cint(b, ZT_I32, 0), r};
  OK(zt_builder_while_begin(b, 2, inits, ba));
  OK(zt_builder_cmp(b, ZT_CMP_SLT, ba[0], a[1], &cond));
  OK(zt_builder_while_cond(b, cond, aa));
  zt_value_t ys[2] = {bin(b, ZT_BINARY_ADDI, bin(b, ZT_BINARY_MULI, aa[0], cint(b, ZT_I32, 2)),
                          cint(b, ZT_I32, 1)),
                      bin(b, ZT_BINARY_ADDI, aa[1], aa[1])};
  OK(zt_builder_while_end(b, 2, ys, res));
  // [B] -> [2, B/2] -> trans -> [B/2, 2]; out[j] = trans flat j + i_final.
  int64_t shp[2] = {2, B / 2};
  zt_value_t m2, tr, flat, args[4], comb[2], red[2], cmp;
  OK(zt_builder_reshape(b, res[1], 2, shp, &m2));
  int32_t order[2] = {1, 0};
  OK(zt_builder_trans(b, m2, order, &tr));
  int64_t fl = B;
  OK(zt_builder_reshape(b, tr, 1, &fl, &flat));
  zt_value_t o = bin(b, ZT_BINARY_ADDI, flat, splat1(b, res[0], B));
  OK(zt_builder_store(b, addptr(b, splat1(b, a[0], B), r), o, ZT_NO_VALUE));
  // argmax over `o` with a two-value combiner.
  zt_value_t srcs[2] = {o, r};
  OK(zt_builder_reduce_begin(b, 2, srcs, 0, args));
  OK(zt_builder_cmp(b, ZT_CMP_SGE, args[0], args[2], &cmp));
  OK(zt_builder_select(b, cmp, args[0], args[2], &comb[0]));
  OK(zt_builder_select(b, cmp, args[1], args[3], &comb[1]));
  OK(zt_builder_reduce_end(b, 2, comb, red));
  zt_value_t pB = addptr(b, a[0], cint(b, ZT_I32, B));
  OK(zt_builder_store(b, pB, red[0], ZT_NO_VALUE));
  OK(zt_builder_store(b, addptr(b, pB, cint(b, ZT_I32, 1)), red[1], ZT_NO_VALUE));
  OK(zt_builder_end_kernel(b));
  kernel_t k = build(b, "wtr");
  int32_t out[B + 2];
  int n = 20;
  ((while_fn_t)k.fn)((uint64_t)out, n, 0, 0, 0, 1, 1, 1);
  int i = 0, mult = 1;
  while (i < n) {
    i = i * 2 + 1;
    mult *= 2;
  }
  int best = -1, best_j = -1;
  for (int j = 0; j < B; ++j) {
    // flat j = trans[j / 2][j % 2] = m2[j % 2][j / 2] = v[(j % 2) * B/2 + j / 2]
    int src = (j % 2) * (B / 2) + j / 2;
    int want = src * mult + i;
    ck_assert_int_eq(out[j], want);
    if (want >= best) {
      best = want;
      best_j = j;
    }
  }
  ck_assert_int_eq(out[B], best);
  ck_assert_int_eq(out[B + 1], best_j);
  release(&k);
}
END_TEST

// A while carrying only a tensor (no scalar), with a reduction in its
// condition region: v = r; while (max(v) < n) v = v * 3 + 1.
START_TEST(test_while_tensor_only) {
  enum { B = 8 };
  zt_type_t t[2] = {zt_type_ptr(ZT_I32), zt_type_scalar(ZT_I32)};
  zt_value_t a[2];
  zt_builder_t* b = begin("wt", 2, t, a);
  zt_value_t r = range(b, B), bv, av, res, mx, cond;
  OK(zt_builder_while_begin(b, 1, &r, &bv));
  OK(zt_builder_reduce(b, ZT_REDUCE_MAX, bv, 0, &mx));
  OK(zt_builder_cmp(b, ZT_CMP_SLT, mx, a[1], &cond));
  OK(zt_builder_while_cond(b, cond, &av));
  zt_value_t y = bin(b, ZT_BINARY_ADDI, bin(b, ZT_BINARY_MULI, av, splat1(b, cint(b, ZT_I32, 3), B)),
                     splat1(b, cint(b, ZT_I32, 1), B));
  OK(zt_builder_while_end(b, 1, &y, &res));
  OK(zt_builder_store(b, addptr(b, splat1(b, a[0], B), r), res, ZT_NO_VALUE));
  OK(zt_builder_end_kernel(b));
  kernel_t k = build(b, "wt");
  int32_t out[B], v[B];
  ((while_fn_t)k.fn)((uint64_t)out, 1000, 0, 0, 0, 1, 1, 1);
  for (int j = 0; j < B; ++j) v[j] = j;
  for (;;) {
    int m = v[0];
    for (int j = 1; j < B; ++j) m = v[j] > m ? v[j] : m;
    if (!(m < 1000)) break;
    for (int j = 0; j < B; ++j) v[j] = v[j] * 3 + 1;
  }
  for (int j = 0; j < B; ++j) ck_assert_int_eq(out[j], v[j]);
  release(&k);
}
END_TEST

START_TEST(test_bad_module_reports_location) {
  const char* text =
      "module {\n"
      "  func.func @k(%v0: !tile.ptr<f32>) attributes {zt.kernel} {\n"
      "    %v1 = arith.constant 1 : i32 loc(\"bad.py\":3:7)\n"
      "    %v2 = \"tile.splat\"(%v1, %v1) : (i32, i32) -> tensor<4xi32> "
      "loc(\"bad.py\":12:5)\n"
      "    return\n"
      "  }\n"
      "}\n";
  zt_compile_options_t opt = {.target = "cpu"};
  zt_artifact_t* art = NULL;
  zt_status_t s = zt_compile(text, strlen(text), &opt, &art);
  ck_assert_ptr_nonnull(s);
  ck_assert_ptr_null(art);
  ck_assert_int_eq(zt_status_code(s), ZT_STATUS_COMPILE_ERROR);
  ck_assert_msg(strstr(zt_status_message(s), "bad.py:12:5: error:") != NULL, "%s",
                zt_status_message(s));
  zt_status_free(s);
  // Plain syntax errors point into the text.
  s = zt_compile("module { func.func @k( }", 24, &opt, &art);
  ck_assert_int_eq(zt_status_code(s), ZT_STATUS_COMPILE_ERROR);
  ck_assert_msg(strstr(zt_status_message(s), "tile IR:1:") != NULL, "%s",
                zt_status_message(s));
  zt_status_free(s);
  // The compiler keeps working after errors.
  zt_type_t t = zt_type_ptr(ZT_F32);
  zt_value_t a;
  zt_builder_t* b = begin("ok", 1, &t, &a);
  OK(zt_builder_store(b, a, cfloat(b, ZT_F32, 2.5), ZT_NO_VALUE));
  OK(zt_builder_end_kernel(b));
  kernel_t k = build(b, "ok");
  float v = 0;
  ((void (*)(uint64_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t))k.fn)(
      (uint64_t)&v, 0, 0, 0, 1, 1, 1);
  ck_assert_float_eq(v, 2.5f);
  release(&k);
}
END_TEST

START_TEST(test_unknown_target_and_meta) {
  zt_type_t t[3] = {zt_type_ptr(ZT_BF16), zt_type_scalar(ZT_I64), zt_type_scalar(ZT_I1)};
  zt_value_t a[3];
  zt_builder_t* b = begin("metak", 3, t, a);
  OK(zt_builder_end_kernel(b));
  const char* text;
  size_t size;
  OK(zt_builder_module_text(b, &text, &size));
  zt_compile_options_t opt = {.target = "gfx90a"};
  zt_artifact_t* art = NULL;
  zt_status_t s = zt_compile(text, size, &opt, &art);
  ck_assert_int_eq(zt_status_code(s), ZT_STATUS_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(zt_status_message(s), "cpu"));
  zt_status_free(s);
  OK(zt_compile(text, size, NULL, &art));  // NULL options: cpu
  const void* meta;
  size_t ms;
  OK(zt_artifact_get(art, "meta", &meta, &ms));
  ck_assert_ptr_nonnull(strstr(meta, "kernel=metak\n"));
  ck_assert_ptr_nonnull(strstr(meta, "target=cpu\n"));
  ck_assert_ptr_nonnull(strstr(meta, "args=ptr:bf16,i64,i1\n"));
  const void* tile;
  OK(zt_artifact_get(art, "tile", &tile, &ms));
  ck_assert_str_eq(tile, text);
  zt_artifact_release(art);
  zt_builder_release(b);
  const char* v = zt_compiler_version();
  ck_assert_ptr_nonnull(strstr(v, "zetile"));
  ck_assert_ptr_null(strstr(v, "unavailable"));
  const zt_compiler_api_t* api;
  OK(zt_compiler_load(&api));
  ck_assert_ptr_nonnull(strstr(api->version(), "mlir 22."));
}
END_TEST

int main(void) {
  Suite* s = suite_create("compiler_cpu");
  TCase* tc = tcase_create("cpu");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_vector_add_tail);
  tcase_add_test(tc, test_softmax_rows);
  tcase_add_test(tc, test_loop_carried_tensors);
  tcase_add_test(tc, test_if_else);
  tcase_add_test(tc, test_f16_bf16);
  tcase_add_test(tc, test_dot_f16_f32_i8);
  tcase_add_test(tc, test_dot_u8);
  tcase_add_test(tc, test_while_trans_reduce2);
  tcase_add_test(tc, test_while_tensor_only);
  tcase_add_test(tc, test_bad_module_reports_location);
  tcase_add_test(tc, test_unknown_target_and_meta);
  suite_add_tcase(s, tc);
  return ct_run_suite(s);
}
