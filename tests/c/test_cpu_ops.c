// Every elementwise tile IR op on every element type, JIT-compiled for the
// CPU and compared with C: float ops on f16/bf16/f32/f64, integer ops on
// i8..i64, and the casts between them.
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

enum { B = 16, MAX_OUT = 64 };

typedef void (*ops_fn_t)(uint64_t, uint64_t, uint64_t, int32_t, int32_t, int32_t,
                         int32_t, int32_t, int32_t);

static void* jit(zt_builder_t* b, void** engine, zt_artifact_t** art) {
  const char* text;
  size_t size;
  OK(zt_builder_end_kernel(b));
  OK(zt_builder_module_text(b, &text, &size));
  zt_status_t s = zt_compile(text, size, NULL, art);
  ck_assert_msg(s == NULL, "%s", zt_status_message(s));
  const zt_compiler_api_t* api;
  OK(zt_compiler_load(&api));
  const void* llvm;
  OK(zt_artifact_get(*art, "llvm", &llvm, &size));
  void* fn;
  OK(api->cpu_load(llvm, size, "ops", &fn, engine));
  return fn;
}

static void unjit(void* engine, zt_artifact_t* art) {
  const zt_compiler_api_t* api;
  OK(zt_compiler_load(&api));
  api->cpu_unload(engine);
  zt_artifact_release(art);
}

// Element access by kind, through double.
static double get(zt_scalar_kind_t k, const void* p, int i) {
  switch (k) {
    case ZT_I8: return ((const int8_t*)p)[i];
    case ZT_I16: return ((const int16_t*)p)[i];
    case ZT_I32: return ((const int32_t*)p)[i];
    case ZT_I64: return (double)((const int64_t*)p)[i];
    case ZT_F16: return (double)((const _Float16*)p)[i];
    case ZT_BF16: {
      uint32_t u = (uint32_t)((const uint16_t*)p)[i] << 16;
      float f;
      memcpy(&f, &u, 4);
      return f;
    }
    case ZT_F32: return ((const float*)p)[i];
    default: return ((const double*)p)[i];
  }
}

static void put(zt_scalar_kind_t k, void* p, int i, double v) {
  switch (k) {
    case ZT_I8: ((int8_t*)p)[i] = (int8_t)v; break;
    case ZT_I16: ((int16_t*)p)[i] = (int16_t)v; break;
    case ZT_I32: ((int32_t*)p)[i] = (int32_t)v; break;
    case ZT_I64: ((int64_t*)p)[i] = (int64_t)v; break;
    case ZT_F16: ((_Float16*)p)[i] = (_Float16)v; break;
    case ZT_BF16: {
      float f = (float)v;
      uint32_t u;
      memcpy(&u, &f, 4);
      ((uint16_t*)p)[i] = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
      break;
    }
    case ZT_F32: ((float*)p)[i] = (float)v; break;
    default: ((double*)p)[i] = v; break;
  }
}

// Builds: x = load(X), y = load(Y); out[j*B + i] = op_j(x, y).
typedef struct ops_s {
  zt_builder_t* b;
  zt_value_t x, y, r, out;
  int n;
} ops_t;

static ops_t ops_begin(zt_scalar_kind_t k, zt_scalar_kind_t out_kind) {
  ops_t o = {0};
  OK(zt_builder_create(&o.b));
  zt_type_t t[3] = {zt_type_ptr(k), zt_type_ptr(k), zt_type_ptr(out_kind)};
  zt_value_t a[3];
  OK(zt_builder_begin_kernel(o.b, "ops", 3, t, NULL, a));
  int64_t n = B;
  zt_value_t px, py, po;
  OK(zt_builder_make_range(o.b, 0, B, &o.r));
  OK(zt_builder_splat(o.b, a[0], 1, &n, &px));
  OK(zt_builder_splat(o.b, a[1], 1, &n, &py));
  OK(zt_builder_splat(o.b, a[2], 1, &n, &po));
  OK(zt_builder_addptr(o.b, px, o.r, &px));
  OK(zt_builder_addptr(o.b, py, o.r, &py));
  OK(zt_builder_load(o.b, px, ZT_NO_VALUE, ZT_NO_VALUE, &o.x));
  OK(zt_builder_load(o.b, py, ZT_NO_VALUE, ZT_NO_VALUE, &o.y));
  o.out = po;
  return o;
}

// Stores v (converted to the output kind by `cast` if not NO_VALUE) as op #n.
static void ops_out(ops_t* o, zt_value_t v) {
  zt_value_t c, off, p;
  int64_t n = B;
  OK(zt_builder_const_int(o->b, ZT_I32, o->n * B, &c));
  OK(zt_builder_splat(o->b, c, 1, &n, &off));
  OK(zt_builder_binary(o->b, ZT_BINARY_ADDI, off, o->r, &off));
  OK(zt_builder_addptr(o->b, o->out, off, &p));
  OK(zt_builder_store(o->b, p, v, ZT_NO_VALUE));
  o->n++;
}

static double ref_unary(zt_unary_op_t op, double x) {
  switch (op) {
    case ZT_UNARY_NEGF: return -x;
    case ZT_UNARY_ABSF: return fabs(x);
    case ZT_UNARY_EXP: return exp(x);
    case ZT_UNARY_EXP2: return exp2(x);
    case ZT_UNARY_LOG: return log(x);
    case ZT_UNARY_LOG2: return log2(x);
    case ZT_UNARY_SQRT: return sqrt(x);
    case ZT_UNARY_RSQRT: return 1 / sqrt(x);
    case ZT_UNARY_SIN: return sin(x);
    case ZT_UNARY_COS: return cos(x);
    case ZT_UNARY_TANH: return tanh(x);
    case ZT_UNARY_ERF: return erf(x);
    case ZT_UNARY_FLOOR: return floor(x);
    case ZT_UNARY_CEIL: return ceil(x);
    default: return NAN;
  }
}

static double ref_fbinary(zt_binary_op_t op, double x, double y) {
  switch (op) {
    case ZT_BINARY_ADDF: return x + y;
    case ZT_BINARY_SUBF: return x - y;
    case ZT_BINARY_MULF: return x * y;
    case ZT_BINARY_DIVF: return x / y;
    case ZT_BINARY_REMF: return fmod(x, y);
    case ZT_BINARY_MAXNUMF: case ZT_BINARY_MAXIMUMF: return fmax(x, y);
    case ZT_BINARY_MINNUMF: case ZT_BINARY_MINIMUMF: return fmin(x, y);
    case ZT_BINARY_POWF: return pow(x, y);
    case ZT_BINARY_ATAN2: return atan2(x, y);
    default: return NAN;
  }
}

START_TEST(test_float_ops) {
  zt_scalar_kind_t kinds[4] = {ZT_F16, ZT_BF16, ZT_F32, ZT_F64};
  zt_scalar_kind_t k = kinds[_i];
  double tol = k == ZT_F16 ? 4e-3 : k == ZT_BF16 ? 2e-2 : k == ZT_F32 ? 1e-5 : 1e-12;
  ops_t o = ops_begin(k, k);
  for (int u = 0; u < ZT_UNARY_OP_COUNT; ++u) {
    if (u == ZT_UNARY_ABSI) continue;
    zt_value_t v;
    OK(zt_builder_unary(o.b, (zt_unary_op_t)u, o.x, &v));
    ops_out(&o, v);
  }
  for (int bo = ZT_BINARY_ADDF; bo <= ZT_BINARY_ATAN2; ++bo) {
    zt_value_t v;
    OK(zt_builder_binary(o.b, (zt_binary_op_t)bo, o.x, o.y, &v));
    ops_out(&o, v);
  }
  zt_value_t f, c, s;
  OK(zt_builder_fma(o.b, o.x, o.y, o.x, &f));
  ops_out(&o, f);
  OK(zt_builder_cmp(o.b, ZT_CMP_OLT, o.x, o.y, &c));
  OK(zt_builder_select(o.b, c, o.x, o.y, &s));
  ops_out(&o, s);
  // Through f32 and back (extf/truncf, or the identity-free pair for f64).
  if (k != ZT_F32) {
    zt_value_t w, back;
    zt_scalar_kind_t mid = k == ZT_F64 ? ZT_F32 : ZT_F64;
    OK(zt_builder_cast(o.b, k == ZT_F64 ? ZT_CAST_TRUNCF : ZT_CAST_EXTF, o.x, mid, &w));
    OK(zt_builder_cast(o.b, k == ZT_F64 ? ZT_CAST_EXTF : ZT_CAST_TRUNCF, w, k, &back));
    ops_out(&o, back);
  }
  int nout = o.n;
  void* engine;
  zt_artifact_t* art;
  ops_fn_t fn = (ops_fn_t)jit(o.b, &engine, &art);
  zt_builder_release(o.b);
  double xs[B], ys[B];
  uint8_t X[B * 8], Y[B * 8], O[MAX_OUT * B * 8];
  for (int i = 0; i < B; ++i) {
    put(k, X, i, 0.15 + 0.11 * i);
    put(k, Y, i, 1.6 - 0.07 * i);
    xs[i] = get(k, X, i);
    ys[i] = get(k, Y, i);
  }
  fn((uint64_t)X, (uint64_t)Y, (uint64_t)O, 0, 0, 0, 1, 1, 1);
  for (int j = 0; j < nout; ++j)
    for (int i = 0; i < B; ++i) {
      double x = xs[i], y = ys[i], want;
      int nu = ZT_UNARY_OP_COUNT - 1, nb = ZT_BINARY_ATAN2 - ZT_BINARY_ADDF + 1;
      if (j < nu) {
        int u = j < ZT_UNARY_ABSI ? j : j + 1;
        want = ref_unary((zt_unary_op_t)u, x);
      } else if (j < nu + nb) {
        want = ref_fbinary((zt_binary_op_t)(ZT_BINARY_ADDF + j - nu), x, y);
      } else if (j == nu + nb) {
        want = x * y + x;
      } else if (j == nu + nb + 1) {
        want = x < y ? x : y;
      } else {
        want = k == ZT_F64 ? (double)(float)x : x;
      }
      double got = get(k, O, j * B + i);
      ck_assert_msg(fabs(got - want) <= tol * (1 + fabs(want)),
                    "kind %d op #%d elem %d: got %.17g want %.17g (x=%g y=%g)", k, j,
                    i, got, want, x, y);
    }
  unjit(engine, art);
}
END_TEST

static int64_t wrap(zt_scalar_kind_t k, int64_t v) {
  switch (k) {
    case ZT_I8: return (int8_t)v;
    case ZT_I16: return (int16_t)v;
    case ZT_I32: return (int32_t)v;
    default: return v;
  }
}

static uint64_t umask(zt_scalar_kind_t k) {
  int bits = zt_scalar_kind_bits(k);
  return bits == 64 ? ~0ull : ((1ull << bits) - 1);
}

static int64_t ref_ibinary(zt_scalar_kind_t k, zt_binary_op_t op, int64_t x, int64_t y) {
  uint64_t m = umask(k), ux = (uint64_t)x & m, uy = (uint64_t)y & m;
  int bits = zt_scalar_kind_bits(k);
  switch (op) {
    case ZT_BINARY_ADDI: return wrap(k, (int64_t)((uint64_t)x + (uint64_t)y));
    case ZT_BINARY_SUBI: return wrap(k, (int64_t)((uint64_t)x - (uint64_t)y));
    case ZT_BINARY_MULI: return wrap(k, (int64_t)((uint64_t)x * (uint64_t)y));
    case ZT_BINARY_DIVSI: return wrap(k, x / y);
    case ZT_BINARY_DIVUI: return wrap(k, (int64_t)(ux / uy));
    case ZT_BINARY_REMSI: return wrap(k, x % y);
    case ZT_BINARY_REMUI: return wrap(k, (int64_t)(ux % uy));
    case ZT_BINARY_MAXSI: return x > y ? x : y;
    case ZT_BINARY_MINSI: return x < y ? x : y;
    case ZT_BINARY_MAXUI: return ux > uy ? x : y;
    case ZT_BINARY_MINUI: return ux < uy ? x : y;
    case ZT_BINARY_ANDI: return x & y;
    case ZT_BINARY_ORI: return x | y;
    case ZT_BINARY_XORI: return x ^ y;
    case ZT_BINARY_SHLI: return wrap(k, (int64_t)(ux << (uy % bits)));
    case ZT_BINARY_SHRSI: return x >> (uy % bits);
    case ZT_BINARY_SHRUI: return wrap(k, (int64_t)(ux >> (uy % bits)));
    case ZT_BINARY_MULHIUI:
      return wrap(k, (int64_t)(uint64_t)(((unsigned __int128)ux * uy) >> bits));
    default: return 0;
  }
}

START_TEST(test_int_ops) {
  zt_scalar_kind_t kinds[4] = {ZT_I8, ZT_I16, ZT_I32, ZT_I64};
  zt_scalar_kind_t k = kinds[_i];
  int bits = zt_scalar_kind_bits(k);
  ops_t o = ops_begin(k, k);
  // Tags say what each output is, for the reference below.
  enum { T_ABS = 100, T_SEL, T_WIDTH, T_EXTUI, T_SITOFP, T_UITOFP, T_BITCAST };
  int tags[MAX_OUT];
  zt_value_t c, v, w, ys = o.y, small;
  // Shift amounts >= the width are poison: keep them in range.
  OK(zt_builder_const_int(o.b, k, bits - 1, &c));
  OK(zt_builder_splat(o.b, c, 1, (int64_t[]){B}, &c));
  OK(zt_builder_binary(o.b, ZT_BINARY_ANDI, o.y, c, &ys));
  OK(zt_builder_const_int(o.b, k, 0x3f, &c));
  OK(zt_builder_splat(o.b, c, 1, (int64_t[]){B}, &c));
  OK(zt_builder_binary(o.b, ZT_BINARY_ANDI, o.y, c, &small));
  for (int bo = ZT_BINARY_ADDI; bo <= ZT_BINARY_MULHIUI; ++bo) {
    bool shift = bo == ZT_BINARY_SHLI || bo == ZT_BINARY_SHRSI || bo == ZT_BINARY_SHRUI;
    tags[o.n] = bo;
    OK(zt_builder_binary(o.b, (zt_binary_op_t)bo, o.x, shift ? ys : o.y, &v));
    ops_out(&o, v);
  }
  tags[o.n] = T_ABS;
  OK(zt_builder_unary(o.b, ZT_UNARY_ABSI, o.x, &v));
  ops_out(&o, v);
  tags[o.n] = T_SEL;
  OK(zt_builder_cmp(o.b, ZT_CMP_ULT, o.x, o.y, &c));
  OK(zt_builder_select(o.b, c, o.x, o.y, &v));
  ops_out(&o, v);
  zt_scalar_kind_t other = k == ZT_I64 ? ZT_I8 : ZT_I64;
  tags[o.n] = T_WIDTH;
  OK(zt_builder_cast(o.b, k == ZT_I64 ? ZT_CAST_TRUNCI : ZT_CAST_EXTSI, o.x, other, &w));
  OK(zt_builder_cast(o.b, k == ZT_I64 ? ZT_CAST_EXTSI : ZT_CAST_TRUNCI, w, k, &v));
  ops_out(&o, v);
  if (k != ZT_I64) {
    tags[o.n] = T_EXTUI;
    OK(zt_builder_cast(o.b, ZT_CAST_EXTUI, o.x, ZT_I64, &w));
    OK(zt_builder_const_int(o.b, ZT_I64, 1, &c));
    OK(zt_builder_splat(o.b, c, 1, (int64_t[]){B}, &c));
    OK(zt_builder_binary(o.b, ZT_BINARY_SHRUI, w, c, &w));
    OK(zt_builder_cast(o.b, ZT_CAST_TRUNCI, w, k, &v));
    ops_out(&o, v);
  }
  tags[o.n] = T_SITOFP;
  OK(zt_builder_cast(o.b, ZT_CAST_SITOFP, o.x, ZT_F64, &w));
  OK(zt_builder_cast(o.b, ZT_CAST_FPTOSI, w, k, &v));
  ops_out(&o, v);
  tags[o.n] = T_UITOFP;
  OK(zt_builder_cast(o.b, ZT_CAST_UITOFP, small, ZT_F32, &w));
  OK(zt_builder_cast(o.b, ZT_CAST_FPTOUI, w, k, &v));
  ops_out(&o, v);
  if (k == ZT_I32 || k == ZT_I16) {
    tags[o.n] = T_BITCAST;
    OK(zt_builder_cast(o.b, ZT_CAST_BITCAST, o.x, k == ZT_I32 ? ZT_F32 : ZT_F16, &w));
    OK(zt_builder_cast(o.b, ZT_CAST_BITCAST, w, k, &v));
    ops_out(&o, v);
  }
  int nout = o.n;
  void* engine;
  zt_artifact_t* art;
  ops_fn_t fn = (ops_fn_t)jit(o.b, &engine, &art);
  zt_builder_release(o.b);
  uint8_t X[B * 8], Y[B * 8], O[MAX_OUT * B * 8];
  int64_t xs[B], yv[B];
  for (int i = 0; i < B; ++i) {
    xs[i] = wrap(k, (int64_t)(i * 37 - 300) * (bits > 16 ? 1000003 : 1));
    yv[i] = wrap(k, (int64_t)(i % 5 + 1) * (i & 1 ? -1 : 1) * 3);
    put(k, X, i, (double)xs[i]);
    put(k, Y, i, (double)yv[i]);
    if (k == ZT_I64) {
      ((int64_t*)X)[i] = xs[i];
      ((int64_t*)Y)[i] = yv[i];
    }
  }
  fn((uint64_t)X, (uint64_t)Y, (uint64_t)O, 0, 0, 0, 1, 1, 1);
  uint64_t m = umask(k);
  for (int j = 0; j < nout; ++j)
    for (int i = 0; i < B; ++i) {
      int64_t x = xs[i], y = yv[i], want;
      switch (tags[j]) {
        case T_ABS: want = wrap(k, x < 0 ? -x : x); break;
        case T_SEL: want = ((uint64_t)x & m) < ((uint64_t)y & m) ? x : y; break;
        case T_WIDTH: want = k == ZT_I64 ? (int8_t)x : x; break;
        case T_EXTUI: want = wrap(k, (int64_t)(((uint64_t)x & m) >> 1)); break;
        case T_SITOFP: case T_BITCAST: want = x; break;
        case T_UITOFP: want = y & 0x3f; break;
        default: {
          zt_binary_op_t bo = (zt_binary_op_t)tags[j];
          bool shift = bo == ZT_BINARY_SHLI || bo == ZT_BINARY_SHRSI || bo == ZT_BINARY_SHRUI;
          want = ref_ibinary(k, bo, x, shift ? (y & (bits - 1)) : y);
        }
      }
      int64_t got = k == ZT_I64 ? ((int64_t*)O)[j * B + i] : (int64_t)get(k, O, j * B + i);
      ck_assert_msg(got == want, "kind %d op #%d (tag %d) elem %d: got %lld want %lld (x=%lld y=%lld)",
                    k, j, tags[j], i, (long long)got, (long long)want, (long long)x,
                    (long long)y);
    }
  unjit(engine, art);
}
END_TEST

int main(void) {
  Suite* s = suite_create("cpu_ops");
  TCase* tc = tcase_create("ops");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_float_ops, 0, 4);
  tcase_add_loop_test(tc, test_int_ops, 0, 4);
  suite_add_tcase(s, tc);
  return ct_run_suite(s);
}
