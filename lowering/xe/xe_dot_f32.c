// fp32 tl.dot on Xe: DPAS on bf16 pieces of the fp32 operands.
//
// x = x0 + x1 (+ x2), each piece a bf16 number: x0 = x with the low 16 bits
// of its encoding cleared, x1 the same of x - x0 (exact in f32), x2 of the
// next remainder; a NaN's high piece gets the quiet bit, so a NaN whose
// payload sits in its low bits does not become inf. dg2's lowering splits
// by the same rule (lowering/dg2/dg2_dot_f32.c), so an fp32 dot gives the
// same pieces on every Xe target. Products of pieces are exact in the f32
// accumulator, so
//   "tf32"            (Triton's default for fp32): x0y0 + x0y1 + x1y0, 3 DPAS,
//                     about 16 significant bits per product (tf32 has 11);
//   "tf32x3", "ieee": the six products with i + j <= 2, 6 DPAS, within a few
//                     f32 ulps of an fp32 dot, though not bit-identical to an
//                     FMA loop (the dropped terms are below 2^-24 relative).
// Truncation, not rounding to nearest: three pieces hold any x exactly
// either way, and two hold it to 2^-15 relative (2^-17 rounded), while the
// rounding sequence (13 integer ops per piece instead of 4) doubled the ISA
// of a 64x64 fp32 matmul on pvc (953 -> 1899 instructions, same DPAS). The
// NaN's quiet bit costs 3 ops per piece (953 -> 1144): before it, a NaN
// input with a low-bits payload gave inf, a wrong answer.
// Smallest products go first into the accumulator. Inputs that are inf or
// NaN keep their high piece and get zero low pieces (not inf - inf); an inf
// times the other operand's zero low piece still makes NaN where fp32 gives
// inf, as in every split-precision dot (results stay non-finite there).
//
// Layouts: A blocks are 8x16 f32 with #zt_a, so their bf16 pieces are DPAS A
// operands as they are. B blocks are 16x16 f32 loaded without VNNI (#zt_a,
// lane j holds column j); lane j's 16 values are the same under #zt_b, so
// the last op of each B piece carries #zt_b.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>

#include "xe/xe_internal.h"

static const char* loc(xe_emitter_t* e) { return e->loc.data ? e->loc.data : ""; }

// out = <text> on vector<RxC> values with the given layout (format after "=").
#define LINE(out, ...)                                  \
  do {                                                  \
    xe_fresh(e, out);                                   \
    xe_line(e);                                         \
    zt_strbuf_printf(&e->body, "%s = ", out);           \
    zt_strbuf_printf(&e->body, __VA_ARGS__);            \
    zt_strbuf_printf(&e->body, "%s\n", loc(e));         \
  } while (0)

// The bf16 pieces of one f32 block (rows x 16) into pieces[0..np).
static void split_block(xe_emitter_t* e, const char* x, int rows, int np, const char* out_attr,
                        xe_name_t pieces[3]) {
  char vf[40], vi[40], vh[40], vb[40], vc[40], text[200];
  snprintf(vf, sizeof vf, "vector<%dx16xf32>", rows);
  snprintf(vi, sizeof vi, "vector<%dx16xi32>", rows);
  snprintf(vh, sizeof vh, "vector<%dx16xi16>", rows);
  snprintf(vb, sizeof vb, "vector<%dx16xbf16>", rows);
  snprintf(vc, sizeof vc, "vector<%dx16xi1>", rows);
  xe_name_t mask, c16, zero, quiet;
  snprintf(text, sizeof text, "arith.constant {layout_result_0 = #zt_a} dense<-65536> : %s", vi);
  xe_hoist(e, text, true, mask);
  snprintf(text, sizeof text, "arith.constant {layout_result_0 = #zt_a} dense<4194304> : %s", vi);
  xe_hoist(e, text, true, quiet);
  snprintf(text, sizeof text, "arith.constant {layout_result_0 = #zt_a} dense<16> : %s", vi);
  xe_hoist(e, text, true, c16);
  snprintf(text, sizeof text, "arith.constant {layout_result_0 = #zt_a} dense<0.0> : %s", vf);
  xe_hoist(e, text, true, zero);
  xe_name_t rest;
  snprintf(rest, sizeof rest, "%s", x);
  for (int p = 0; p < np; ++p) {
    xe_name_t bits, hi0, hq, nan, hi, hif, sh, tr;
    LINE(bits, "arith.bitcast %s {layout_result_0 = #zt_a} : %s to %s", rest, vf, vi);
    LINE(hi0, "arith.andi %s, %s {layout_result_0 = #zt_a} : %s", bits, mask, vi);
    LINE(hq, "arith.ori %s, %s {layout_result_0 = #zt_a} : %s", hi0, quiet, vi);
    LINE(nan, "arith.cmpf uno, %s, %s {layout_result_0 = #zt_a} : %s", rest, rest, vf);
    LINE(hi, "arith.select %s, %s, %s {layout_result_0 = #zt_a} : %s, %s", nan, hq, hi0, vc,
         vi);
    LINE(sh, "arith.shrui %s, %s {layout_result_0 = #zt_a} : %s", hi, c16, vi);
    LINE(tr, "arith.trunci %s {layout_result_0 = #zt_a} : %s to %s", sh, vi, vh);
    LINE(pieces[p], "arith.bitcast %s {layout_result_0 = %s} : %s to %s", tr, out_attr, vh, vb);
    if (p + 1 == np) break;
    xe_name_t d, ok, nrest;
    LINE(hif, "arith.bitcast %s {layout_result_0 = #zt_a} : %s to %s", hi, vi, vf);
    LINE(d, "arith.subf %s, %s {layout_result_0 = #zt_a} : %s", rest, hif, vf);
    // inf - inf and NaN - NaN: the low pieces are zero instead.
    LINE(ok, "arith.cmpf ord, %s, %s {layout_result_0 = #zt_a} : %s", d, d, vf);
    LINE(nrest, "arith.select %s, %s, %s {layout_result_0 = #zt_a} : %s, %s", ok, d, zero, vc,
         vf);
    memcpy(rest, nrest, sizeof rest);
  }
}

zt_status_t xe_emit_dot_f32(xe_emitter_t* e, MlirOperation op, const xe_val_t* a,
                            const xe_val_t* b, const xe_val_t* c, xe_val_t* r) {
  MlirAttribute pa =
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("input_precision"));
  bool three = true;  // tf32
  if (!mlirAttributeIsNull(pa) && mlirAttributeIsAString(pa)) {
    MlirStringRef p = mlirStringAttrGetValue(pa);
    three = p.length == 4 && memcmp(p.data, "tf32", 4) == 0;
  }
  int np = three ? 2 : 3;
  int ksteps = a->nbc;
  // Pieces of every A block (i, k) and B block (k, j), computed once.
  size_t na = (size_t)a->nchunks, nb = (size_t)b->nchunks;
  xe_name_t(*ap)[3] = calloc(na, sizeof *ap);
  xe_name_t(*bp)[3] = calloc(nb, sizeof *bp);
  if (!ap || !bp) {
    free(ap);
    free(bp);
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
  }
  for (size_t i = 0; i < na; ++i) split_block(e, a->names[i], a->br, np, "#zt_a", ap[i]);
  for (size_t i = 0; i < nb; ++i) split_block(e, b->names[i], b->br, np, "#zt_b", bp[i]);
  // Products (piece of A, piece of B), smallest first.
  static const int k3[][2] = {{1, 0}, {0, 1}, {0, 0}};
  static const int k6[][2] = {{2, 0}, {1, 1}, {0, 2}, {1, 0}, {0, 1}, {0, 0}};
  const int(*terms)[2] = three ? k3 : k6;
  int nterms = three ? 3 : 6;
  for (int32_t i = 0; i < c->nbr; ++i) {
    for (int32_t j = 0; j < c->nbc; ++j) {
      xe_name_t cur;
      snprintf(cur, sizeof cur, "%s", c->names[i * c->nbc + j]);
      for (int k = 0; k < ksteps; ++k) {
        for (int t = 0; t < nterms; ++t) {
          xe_name_t d;
          bool last = k == ksteps - 1 && t == nterms - 1;
          if (last) memcpy(d, r->names[i * r->nbc + j], sizeof d);
          else xe_fresh(e, d);
          xe_line(e);
          zt_strbuf_printf(&e->body,
                           "%s = xegpu.dpas %s, %s, %s {layout_a = #zt_a, layout_b = #zt_b, "
                           "layout_cd = #zt_a} : vector<8x16xbf16>, vector<16x16xbf16>, "
                           "vector<8x16xf32> -> vector<8x16xf32>%s\n",
                           d, ap[i * a->nbc + k][terms[t][0]], bp[k * b->nbc + j][terms[t][1]],
                           cur, loc(e));
          memcpy(cur, d, sizeof cur);
        }
      }
    }
  }
  free(ap);
  free(bp);
  return NULL;
}
