// exp on f32 as inline arithmetic (no call), so the loops around it
// vectorize into straight vector code.
//
// Why not libmvec's expf alone (jit/compiler_cpu_vecmath.c maps the other
// math functions there): softmax rows are padded with -inf (masked loads'
// `other`), and libmvec sends every vector holding a lane outside about
// +-87 to a scalar fallback, one libm call per lane: a 4096x513 softmax
// (half its lanes padding) ran ~4x slower than a 4096x1024 one.
//
// The method (Cody-Waite reduction, minimax polynomial): n = round(x / ln2)
// by a shifter constant, r = x - n ln2 in two fma steps (|r| <= ln2/2), e^r
// as one Horner chain of degree 6, result = e^r * 2^n (exp_f32_shifter).
// x above log(FLT_MAX) gives +inf, NaN stays NaN, and
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
// vscalefps, and vscalef saturates to +inf past the exponent range. Without
// AVX-512 a vector ldexp is expanded lane by lane: 2^n goes into the
// exponent field instead. (A cache shared with a host without AVX-512
// loads this LLVM text there too: same values, slower.)
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

// The shifter form (issue 16, session 13 on AVX-512, session 18 on AVX2):
// 15 vector instructions per 16 lanes on AVX-512 where the Cephes form
// took 22. n = round(x log2e) by the shifter: t = fma(x, log2e, 1.5 * 2^23)
// holds n in its low mantissa bits (ulp 1 there), so n as f32 is
// t - 1.5 * 2^23 and n as i32 is bits(t) - bits(1.5 * 2^23): no
// round instruction (vrndscaleps, vroundps) and no float -> int conversion.
// No clamp at lo: lanes below it are selected to 0 whatever they computed
// (x = -inf gives NaN there, selected away). e^r is one Horner chain of
// degree 6 with c0 = c1 = 1 (6 FMAs, where 1 + r + r^2 p(r) with p of
// degree 5 took 8): coefficients fitted for relative error on
// |r| <= ln2/2 * 1.0002 (Lawson's iteration), 0.045 ulp of polynomial error
// with the f32-rounded coefficients; the result stays within 2 ulp
// (test_cpu_math.py, test_cpu_exp_scalef.py).
//
// 2^n: with AVX-512, llvm.ldexp (one vscalefps; NaN stays NaN, it
// saturates to +inf past the range, so x is only clamped at hi). Without
// it, n << 23 added to p's bits (a vector ldexp is expanded lane by lane
// there): bits(t) << 23 is n << 23, since bits(1.5 * 2^23) has nine low
// zero bits. Exact while the result is a normal float: x >= lo gives
// n >= -126 with p >= 1 at n = -126 (r = x + 126 ln2 >= 4.5e-6); x <= the
// largest f32 below 128 ln2 gives n <= 128 with p < 1 at n = 128. Past that
// the lane is x + inf: +inf for a large x, NaN for NaN. Same operations
// before the scaling and an exact scaling on both: the two hosts' results
// are the same bits. On the AVX2 EPYC the Cephes form below it took 32
// vector instructions per 8 lanes, with 29 constants re-broadcast from
// memory per 16 lanes.
static void exp_f32_shifter(cpu_t* c, const char* x, bool avx512, char out[ZT_CPU_NAME]) {
  char lo[ZT_CPU_NAME], l2e[ZT_CPU_NAME], magic[ZT_CPU_NAME], ln2h[ZT_CPU_NAME],
      ln2l[ZT_CPU_NAME], one[ZT_CPU_NAME], zero[ZT_CPU_NAME];
  fconst(c, "-87.33654022216797", lo);
  fconst(c, "1.44269502162933349609375", l2e);
  fconst(c, "12582912.0", magic);  // 1.5 * 2^23
  fconst(c, "-0.693359375", ln2h);
  fconst(c, "2.12194440e-4", ln2l);
  fconst(c, "1.0", one);
  fconst(c, "0.0", zero);
  static const char* const poly[] = {"1.3879680773e-03", "8.3687081933e-03",
                                     "4.1667226702e-02", "1.6666521132e-01",
                                     "4.9999997020e-01"};
  char xc[ZT_CPU_NAME], t[ZT_CPU_NAME], n[ZT_CPU_NAME], r[ZT_CPU_NAME], p[ZT_CPU_NAME],
      tmp[ZT_CPU_NAME], tb[ZT_CPU_NAME], sc[ZT_CPU_NAME], small[ZT_CPU_NAME];
  snprintf(xc, ZT_CPU_NAME, "%s", x);
  if (avx512) {
    char hi[ZT_CPU_NAME];
    fconst(c, "88.72283935546875", hi);
    emit(c, xc, "arith.minimumf %s, %s : f32", x, hi, "");
  }
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
  if (avx512) {
    char mbits[ZT_CPU_NAME], ni[ZT_CPU_NAME];
    cpu_fresh(c, mbits);
    cpu_line(c, "%s = arith.constant 1262485504 : i32", mbits);  // bits of 1.5 * 2^23
    emit(c, ni, "arith.subi %s, %s : i32", tb, mbits, "");
    emit(c, sc, "llvm.intr.ldexp(%s, %s) : (f32, i32) -> f32", p, ni, "");
  } else {
    char c23[ZT_CPU_NAME], e[ZT_CPU_NAME], pb[ZT_CPU_NAME], yb[ZT_CPU_NAME],
        y[ZT_CPU_NAME], big[ZT_CPU_NAME], hi[ZT_CPU_NAME], inf[ZT_CPU_NAME],
        over[ZT_CPU_NAME];
    cpu_fresh(c, c23);
    cpu_line(c, "%s = arith.constant 23 : i32", c23);
    emit(c, e, "arith.shli %s, %s : i32", tb, c23, "");
    emit(c, pb, "arith.bitcast %s : f32 to i32", p, "", "");
    emit(c, yb, "arith.addi %s, %s : i32", pb, e, "");
    emit(c, y, "arith.bitcast %s : i32 to f32", yb, "", "");
    fconst(c, "88.72283172607421875", hi);  // the largest f32 below 128 ln2
    fconst(c, "0x7F800000", inf);
    emit(c, big, "arith.cmpf ugt, %s, %s : f32", x, hi, "");
    emit(c, over, "arith.addf %s, %s : f32", x, inf, "");
    emit(c, sc, "arith.select %s, %s, %s : f32", big, over, y);
  }
  emit(c, small, "arith.cmpf olt, %s, %s : f32", x, lo, "");
  emit(c, out, "arith.select %s, %s, %s : f32", small, zero, sc);
}

void cpu_exp_f32(cpu_t* c, const char* x, char out[ZT_CPU_NAME]) {
  exp_f32_shifter(c, x, cpu_host_avx512(), out);
}
