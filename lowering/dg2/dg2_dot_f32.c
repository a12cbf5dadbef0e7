// fp32 tile.dot on DG2: bf16 DPAS on bf16 pieces of the fp32 operands.
//
// Xe-HPG's XMX has no fp32 or tf32 mode (its SIMD8 builtins are fp16, bf16
// and 8-bit integers only; tf32 DPAS came with Xe-HPC), so an fp32 dot is
// made of bf16 products as on pvc (lowering/xe/xe_dot_f32.c):
// x = x0 + x1 (+ x2), x0 = x with the low 16 bits of its encoding cleared,
// x1 the same of x - x0, x2 of the next remainder: the rule pvc's lowering
// uses (lowering/xe/xe_dot_f32.c says why truncation rather than rounding),
// so an fp32 dot gives the same pieces on every Xe target. Each remainder is
// exact in f32, products of bf16 pieces are exact in the f32 accumulator, so
//   "tf32" (Triton's default for fp32): x0y0 + x0y1 + x1y0, 3 DPAS;
//   "ieee", "tf32x3": the six products with i + j <= 2, 6 DPAS;
// smallest products first. Two pieces hold x to 2^-15 relative, three hold
// it exactly, for |x| above about 2^-110, below which the pieces fall into
// bf16's subnormal range.
//
// Special values, element by element:
//  - NaN keeps its sign and high payload bits and gets the quiet bit (a NaN
//    whose payload is in its low bits must not become inf); inf stays inf.
//  - inf and NaN get zero low pieces (x - x0 would be NaN). An inf input
//    times the other operand's zero low piece still makes NaN where an fp32
//    dot gives inf, as in every split-precision dot: results stay non-finite.
//  - Low pieces of tiny inputs are bf16 subnormals or zero; whether XMX keeps
//    bf16 subnormals is not something this code relies on or has measured.
// The split is integer arithmetic on the f32 bits: the dg2 lowering emits
// scalar arith ops, and LLVM's SPIR-V backend would need an extension for a
// bf16 conversion.
#include <stdio.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>

#include "dg2_internal.h"

int32_t dg2_f32_pieces(MlirOperation op) {
  MlirAttribute a =
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("input_precision"));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAString(a)) return 2;  // tf32
  MlirStringRef p = mlirStringAttrGetValue(a);
  return p.length == 4 && memcmp(p.data, "tf32", 4) == 0 ? 2 : 3;
}

int32_t dg2_f32_terms(int32_t pieces, const int32_t (**out)[2]) {
  static const int32_t k3[][2] = {{1, 0}, {0, 1}, {0, 0}};
  static const int32_t k6[][2] = {{2, 0}, {1, 1}, {0, 2}, {1, 0}, {0, 1}, {0, 0}};
  *out = pieces == 2 ? k3 : k6;
  return pieces == 2 ? 3 : 6;
}

// out = "<op> a, b : ty" as a fresh name.
static void bin(dg2_t* c, const char* op, const char* a, const char* b, const char* ty,
                char out[DG2_NAME]) {
  dg2_fresh(c, out);
  dg2_line(c, "%s = %s %s, %s : %s", out, op, a, b, ty);
}

// The high bf16 piece of f32 x as i32 bits (0 .. 0xffff): x's high 16 bits,
// a NaN's with the quiet bit set.
static void high_piece(dg2_t* c, const char* x, char out[DG2_NAME]) {
  char bits[DG2_NAME], k16[DG2_NAME], kq[DG2_NAME], t[DG2_NAME], nan[DG2_NAME], tq[DG2_NAME];
  dg2_fresh(c, bits);
  dg2_line(c, "%s = arith.bitcast %s : f32 to i32", bits, x);
  dg2_const(c, "i32", 16, k16);
  dg2_const(c, "i32", 0x40, kq);
  bin(c, "arith.shrui", bits, k16, "i32", t);
  bin(c, "arith.cmpf uno,", x, x, "f32", nan);
  bin(c, "arith.ori", t, kq, "i32", tq);
  dg2_fresh(c, out);
  dg2_line(c, "%s = arith.select %s, %s, %s : i32", out, nan, tq, t);
}

void dg2_split_bf16(dg2_t* c, const char* x, int32_t pieces, char out[][DG2_NAME]) {
  char rest[DG2_NAME];
  snprintf(rest, DG2_NAME, "%s", x);
  for (int32_t p = 0; p < pieces; ++p) {
    char h[DG2_NAME];
    high_piece(c, rest, h);
    dg2_fresh(c, out[p]);
    dg2_line(c, "%s = arith.trunci %s : i32 to i16", out[p], h);
    if (p + 1 == pieces) break;
    char k16[DG2_NAME], hb[DG2_NAME], hf[DG2_NAME], d[DG2_NAME], ok[DG2_NAME], z[DG2_NAME];
    dg2_const(c, "i32", 16, k16);
    bin(c, "arith.shli", h, k16, "i32", hb);
    dg2_fresh(c, hf);
    dg2_line(c, "%s = arith.bitcast %s : i32 to f32", hf, hb);
    bin(c, "arith.subf", rest, hf, "f32", d);
    // inf - inf and NaN - NaN: the low pieces are zero instead.
    bin(c, "arith.cmpf ord,", d, d, "f32", ok);
    dg2_fresh(c, z);
    dg2_line(c, "%s = arith.constant 0.0 : f32", z);
    dg2_fresh(c, rest);
    dg2_line(c, "%s = arith.select %s, %s, %s : f32", rest, ok, d, z);
  }
}
