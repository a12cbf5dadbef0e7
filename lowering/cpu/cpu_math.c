// exp on f32 as inline arithmetic (no call), so the loops around it
// vectorize into straight vector code.
//
// Why not libmvec's expf alone (jit/compiler_cpu_vecmath.c maps the other
// math functions there): softmax rows are padded with -inf (masked loads'
// `other`), and libmvec sends every vector holding a lane outside about
// +-87 to a scalar fallback, one libm call per lane: a 4096x513 softmax
// (half its lanes padding) ran ~4x slower than a 4096x1024 one.
//
// The method (Cody-Waite reduction, minimax polynomial, as in Cephes'
// expf): n = round(x / ln2), r = x - n ln2 in two fma steps (|r| <= ln2/2),
// e^r = 1 + r + r^2 p(r) with p of degree 5, result = e^r * 2^n with 2^n
// applied as two powers of two so that n = 128 stays in the exponent range.
// x > 88.72283935546875 (above log(FLT_MAX)) gives +inf, NaN stays NaN, and
// results below about FLT_MIN (x < -87.33654) are flushed to 0, as GPUs' exp
// does: computing a denormal costs a microcode assist of ~100 cycles per
// vector, and the -inf padding of masked softmax rows hit it on every
// vector (a 4096x513 softmax ran 3.5x slower than a 4096x1024 one). Error:
// within 2 ulp of the correctly rounded result wherever that is a normal
// float (tests/python/test_cpu_math.py checks it against float64).
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "cpu_lower.h"

// AVX-512F on the host this compile's machine code is for (the CPU target
// builds for the host: jit/compiler_cpu_object.c). There the 2^n step is
// llvm.ldexp, which LLVM's loop vectorizer widens and x86 selects as one
// vscalefps (plus the int -> float conversion of n): 3 instructions where
// building 2^n in the exponent field twice took 9, and vscalef saturates
// to +inf past the exponent range, so the x > hi select goes too. Without
// AVX-512 a vector ldexp is expanded lane by lane: the exponent-field
// method stays. (A cache shared with a host without AVX-512 loads this
// LLVM text there too: same values, slower.)
static bool g_avx512;
static pthread_once_t g_avx512_once = PTHREAD_ONCE_INIT;

static void avx512_init(void) {
  char* features = LLVMGetHostCPUFeatures();
  g_avx512 = features && strstr(features, "+avx512f") != NULL;
  LLVMDisposeMessage(features);
}

bool cpu_host_avx512(void) {
  pthread_once(&g_avx512_once, avx512_init);
  return g_avx512;
}

static void emit(cpu_t* c, char out[ZT_CPU_NAME], const char* fmt, const char* a,
                 const char* b, const char* d) {
  char line[256];
  snprintf(line, sizeof line, fmt, a, b, d);
  cpu_fresh(c, out);
  cpu_line(c, "%s = %s", out, line);
}

static void fconst(cpu_t* c, const char* v, char out[ZT_CPU_NAME]) {
  cpu_fresh(c, out);
  cpu_line(c, "%s = arith.constant %s : f32", out, v);
}

// AVX-512 form (issue 16, session 13): 15 vector instructions per 16 lanes
// where the Cephes form below took 22 (softmax 4096x781 spends a third of
// its time here). n = round(x log2e) by the shifter: t = fma(x, log2e,
// 1.5 * 2^23) holds n in its low mantissa bits (ulp 1 there), so n as f32
// is t - 1.5 * 2^23 and n as i32 is bits(t) - bits(1.5 * 2^23): no
// vrndscaleps (2 uops), vcvttps2dq and vcvtdq2ps. No fptosi means no poison
// for NaN lanes: a NaN x gives a NaN y and ldexp(NaN, k) is NaN, so the NaN
// select goes. No clamp at lo: lanes below it are selected to 0 whatever
// they computed (x = -inf gives NaN there, selected away), which LLVM folds
// into a zero-masked vscalefps. e^r is one Horner chain of degree 6 with
// c0 = c1 = 1 (6 FMAs, where 1 + r + r^2 p(r) with p of degree 5 took 8):
// coefficients fitted for relative error on |r| <= ln2/2 * 1.0002 (Lawson's
// iteration), 0.045 ulp of polynomial error with the f32-rounded
// coefficients; the result stays within 2 ulp (test_cpu_math.py,
// test_cpu_exp_scalef.py).
static void exp_f32_avx512(cpu_t* c, const char* x, char out[ZT_CPU_NAME]) {
  char hi[ZT_CPU_NAME], lo[ZT_CPU_NAME], l2e[ZT_CPU_NAME], magic[ZT_CPU_NAME],
      ln2h[ZT_CPU_NAME], ln2l[ZT_CPU_NAME], one[ZT_CPU_NAME], mbits[ZT_CPU_NAME],
      zero[ZT_CPU_NAME];
  fconst(c, "-87.33654022216797", lo);
  fconst(c, "88.72283935546875", hi);
  fconst(c, "1.44269502162933349609375", l2e);
  fconst(c, "12582912.0", magic);  // 1.5 * 2^23
  fconst(c, "-0.693359375", ln2h);
  fconst(c, "2.12194440e-4", ln2l);
  fconst(c, "1.0", one);
  fconst(c, "0.0", zero);
  cpu_fresh(c, mbits);
  cpu_line(c, "%s = arith.constant 1262485504 : i32", mbits);  // bits of 1.5 * 2^23
  static const char* const poly[] = {"1.3879680773e-03", "8.3687081933e-03",
                                     "4.1667226702e-02", "1.6666521132e-01",
                                     "4.9999997020e-01"};
  char xc[ZT_CPU_NAME], t[ZT_CPU_NAME], n[ZT_CPU_NAME], r[ZT_CPU_NAME], p[ZT_CPU_NAME],
      tmp[ZT_CPU_NAME], tb[ZT_CPU_NAME], ni[ZT_CPU_NAME], sc[ZT_CPU_NAME], small[ZT_CPU_NAME];
  emit(c, xc, "arith.minimumf %s, %s : f32", x, hi, "");
  emit(c, t, "math.fma %s, %s, %s : f32", xc, l2e, magic);
  emit(c, n, "arith.subf %s, %s : f32", t, magic, "");
  emit(c, tmp, "math.fma %s, %s, %s : f32", n, ln2h, xc);
  emit(c, r, "math.fma %s, %s, %s : f32", n, ln2l, tmp);
  fconst(c, poly[0], p);
  for (int i = 1; i < 7; ++i) {
    char k[ZT_CPU_NAME], q[ZT_CPU_NAME];
    if (i < 5) fconst(c, poly[i], k);
    emit(c, q, "math.fma %s, %s, %s : f32", p, r, i < 5 ? k : one);
    snprintf(p, ZT_CPU_NAME, "%s", q);
  }
  emit(c, tb, "arith.bitcast %s : f32 to i32", t, "", "");
  emit(c, ni, "arith.subi %s, %s : i32", tb, mbits, "");
  emit(c, sc, "llvm.intr.ldexp(%s, %s) : (f32, i32) -> f32", p, ni, "");
  emit(c, small, "arith.cmpf olt, %s, %s : f32", x, lo, "");
  emit(c, out, "arith.select %s, %s, %s : f32", small, zero, sc);
}

void cpu_exp_f32(cpu_t* c, const char* x, char out[ZT_CPU_NAME]) {
  if (cpu_host_avx512()) {
    exp_f32_avx512(c, x, out);
    return;
  }
  char lo[ZT_CPU_NAME], hi[ZT_CPU_NAME], l2e[ZT_CPU_NAME], ln2h[ZT_CPU_NAME],
      ln2l[ZT_CPU_NAME], one[ZT_CPU_NAME], inf[ZT_CPU_NAME];
  fconst(c, "-87.33654022216797", lo);  // just above log(FLT_MIN)
  fconst(c, "88.72283935546875", hi);
  fconst(c, "1.44269502162933349609375", l2e);  // log2(e) rounded to f32
  fconst(c, "-0.693359375", ln2h);              // -ln2, high part (exact in 9 bits)
  fconst(c, "2.12194440e-4", ln2l);             // -ln2 - ln2h
  fconst(c, "1.0", one);
  fconst(c, "0x7F800000", inf);
  static const char* const poly[] = {"1.9875691500e-4", "1.3981999507e-3",
                                     "8.3334519073e-3", "4.1665795894e-2",
                                     "1.6666665459e-1", "5.0000001201e-1"};
  char xc[ZT_CPU_NAME], t[ZT_CPU_NAME], n[ZT_CPU_NAME], r[ZT_CPU_NAME], r2[ZT_CPU_NAME],
      p[ZT_CPU_NAME], y[ZT_CPU_NAME], tmp[ZT_CPU_NAME];
  emit(c, tmp, "arith.maximumf %s, %s : f32", x, lo, "");
  emit(c, xc, "arith.minimumf %s, %s : f32", tmp, hi, "");
  emit(c, t, "arith.mulf %s, %s : f32", xc, l2e, "");
  emit(c, n, "math.roundeven %s : f32", t, "", "");
  emit(c, tmp, "math.fma %s, %s, %s : f32", n, ln2h, xc);
  emit(c, r, "math.fma %s, %s, %s : f32", n, ln2l, tmp);
  emit(c, r2, "arith.mulf %s, %s : f32", r, r, "");
  fconst(c, poly[0], p);
  for (int i = 1; i < 6; ++i) {
    char k[ZT_CPU_NAME], q[ZT_CPU_NAME];
    fconst(c, poly[i], k);
    emit(c, q, "math.fma %s, %s, %s : f32", p, r, k);
    snprintf(p, ZT_CPU_NAME, "%s", q);
  }
  emit(c, tmp, "math.fma %s, %s, %s : f32", p, r2, r);
  emit(c, y, "arith.addf %s, %s : f32", tmp, one, "");
  // 2^n as 2^n1 * 2^n2, each built in the exponent field.
  char ni[ZT_CPU_NAME], n1[ZT_CPU_NAME], n2[ZT_CPU_NAME], c1[ZT_CPU_NAME], bias[ZT_CPU_NAME],
      c23[ZT_CPU_NAME];
  emit(c, ni, "arith.fptosi %s : f32 to i32", n, "", "");
  cpu_fresh(c, c1);
  cpu_line(c, "%s = arith.constant 1 : i32", c1);
  cpu_fresh(c, bias);
  cpu_line(c, "%s = arith.constant 127 : i32", bias);
  cpu_fresh(c, c23);
  cpu_line(c, "%s = arith.constant 23 : i32", c23);
  emit(c, n1, "arith.shrsi %s, %s : i32", ni, c1, "");
  emit(c, n2, "arith.subi %s, %s : i32", ni, n1, "");
  const char* parts[2] = {n1, n2};
  for (int i = 0; i < 2; ++i) {
    char b[ZT_CPU_NAME], s[ZT_CPU_NAME], f[ZT_CPU_NAME], m[ZT_CPU_NAME];
    emit(c, b, "arith.addi %s, %s : i32", parts[i], bias, "");
    emit(c, s, "arith.shli %s, %s : i32", b, c23, "");
    emit(c, f, "arith.bitcast %s : i32 to f32", s, "", "");
    emit(c, m, "arith.mulf %s, %s : f32", y, f, "");
    snprintf(y, ZT_CPU_NAME, "%s", m);
  }
  char big[ZT_CPU_NAME], small[ZT_CPU_NAME], nan[ZT_CPU_NAME], y1[ZT_CPU_NAME],
      y2[ZT_CPU_NAME], zero[ZT_CPU_NAME];
  fconst(c, "0.0", zero);
  emit(c, small, "arith.cmpf olt, %s, %s : f32", x, lo, "");
  emit(c, y1, "arith.select %s, %s, %s : f32", small, zero, y);
  emit(c, big, "arith.cmpf ogt, %s, %s : f32", x, hi, "");
  emit(c, y2, "arith.select %s, %s, %s : f32", big, inf, y1);
  emit(c, nan, "arith.cmpf uno, %s, %s : f32", x, x, "");
  emit(c, out, "arith.select %s, %s, %s : f32", nan, x, y2);
}
