// tile.dot without XMX (Gen9, Gen11, Gen12LP, Xe-LPG: rows of xe_target.c
// with no DPAS): the same operand layouts as the DPAS path (dg2_dot.c), with
// the products on FMAs. The layouts are those of a SIMD8 DPAS with one
// element per 32-bit channel (pack 1, a K step of 8), or four int8 per
// channel (pack 4, K step 32) where the row has DP4A:
//   A: component i of lane j = A[i][kstep + pack*j .. + pack-1]
//   B: component i of lane j = B[kstep + pack*i .. + pack-1][j]
//   C: component i of lane j = C[i][j]
// so C[i][j] (lane j) += sum over lanes l of A's component i in lane l
// (broadcast with sub_group_shuffle, a core SPIR-V 1.3 instruction) times
// B's component l in lane j. Keeping the layouts means the planner, the
// loads and every other op are shared with the DPAS path; only this block
// product differs.
//
// Semantics are tl.dot's: fp16/bf16 inputs are widened exactly to fp32 and
// multiplied and accumulated in fp32 with fma (one rounding per step); fp32
// inputs are fp32 FMAs whatever input_precision asks (as precise as "ieee",
// more than "tf32", which Triton allows); int8 inputs accumulate in int32,
// wrapping, as DPAS does: DP4A (dot_4x8packed_{ss_int,uu_uint} of
// cl_khr_integer_dot_product) adds four products per call, otherwise
// widened integer multiply-adds. K is summed in increasing order.
#include <stdio.h>
#include <string.h>

#include "dg2_internal.h"

// x (an element of kind k in its register type) as the compute type: f32
// for floats, i32 for 8-bit integers.
static void widen(dg2_t* c, zt_scalar_kind_t k, bool is_unsigned, const char* x,
                  char out[DG2_NAME]) {
  switch (k) {
    case ZT_F16:
      dg2_fresh(c, out);
      dg2_line(c, "%s = arith.extf %s : f16 to f32", out, x);
      return;
    case ZT_BF16: {
      // bf16 lives in i16 registers: its bits are the high half of an f32.
      char w[DG2_NAME], s[DG2_NAME], sh[DG2_NAME];
      dg2_fresh(c, w);
      dg2_line(c, "%s = arith.extui %s : i16 to i32", w, x);
      dg2_const(c, "i32", 16, sh);
      dg2_fresh(c, s);
      dg2_line(c, "%s = arith.shli %s, %s : i32", s, w, sh);
      dg2_fresh(c, out);
      dg2_line(c, "%s = arith.bitcast %s : i32 to f32", out, s);
      return;
    }
    case ZT_I8:
      dg2_fresh(c, out);
      dg2_line(c, "%s = arith.%s %s : i8 to i32", out, is_unsigned ? "extui" : "extsi", x);
      return;
    default:  // f32
      snprintf(out, DG2_NAME, "%s", x);
  }
}

// Four consecutive int8 elements as one i32 (element q at bits 8q).
static void pack4(dg2_t* c, char (*el)[DG2_NAME], int32_t first, char out[DG2_NAME]) {
  char v[DG2_NAME];
  dg2_fresh(c, v);
  dg2_line(c, "%s = llvm.mlir.undef : vector<4xi8>", v);
  for (int32_t q = 0; q < 4; ++q) {
    char idx[DG2_NAME], nv[DG2_NAME];
    dg2_const(c, "i32", q, idx);
    dg2_fresh(c, nv);
    dg2_line(c, "%s = llvm.insertelement %s, %s[%s : i32] : vector<4xi8>", nv, el[first + q], v,
             idx);
    snprintf(v, DG2_NAME, "%s", nv);
  }
  dg2_fresh(c, out);
  dg2_line(c, "%s = llvm.bitcast %s : vector<4xi8> to i32", out, v);
}

int32_t dg2_fma_pack(const dg2_t* c, zt_scalar_kind_t in, int64_t k) {
  return in == ZT_I8 && c->target && c->target->dp4a && k % 32 == 0 ? 4 : 1;
}

zt_status_t dg2_emit_dot_fma(dg2_t* c, const dg2_fma_dot_t* d, dg2_val_t* r) {
  const dg2_layout_t* lc = &c->layouts[r->layout];
  const dg2_layout_t* la = &c->layouts[d->A->layout];
  const dg2_layout_t* lb = &c->layouts[d->B->layout];
  int32_t pack = la->pack;
  bool dp4a = pack == 4, integer = d->in == ZT_I8;
  const char* ty = integer ? "i32" : "f32";
  int64_t mb = lc->m / lc->wm / 8, nb = lc->n / lc->wn / 8, kb = lc->k / (8 * pack);
  // Operands in the compute type, once: one word per 8 * pack elements'
  // component (DP4A: four int8 packed), or one element each.
  int32_t na = la->e / pack, nbw = lb->e / pack;
  char(*ca)[DG2_NAME] = dg2_alloc_names(c, na);
  char(*cb)[DG2_NAME] = dg2_alloc_names(c, nbw);
  char(*bc)[DG2_NAME] = dg2_alloc_names(c, 64);
  if (!ca || !cb || !bc) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "dg2 FMA dot");
  for (int32_t s = 0; s < na; ++s) {
    if (dp4a) pack4(c, d->A->el, s * 4, ca[s]);
    else widen(c, d->in, d->is_unsigned, d->A->el[s], ca[s]);
  }
  for (int32_t s = 0; s < nbw; ++s) {
    if (dp4a) pack4(c, d->B->el, s * 4, cb[s]);
    else widen(c, d->in, d->is_unsigned, d->B->el[s], cb[s]);
  }
  char shuf[48], sig[48];
  snprintf(shuf, sizeof shuf, "_Z17sub_group_shuffle%sj", integer ? "i" : "f");
  snprintf(sig, sizeof sig, "(%s, i32) -> %s", ty, ty);
  dg2_declare(c, shuf, sig);
  const char* dot4 = d->is_unsigned ? "_Z21dot_4x8packed_uu_uintjj" : "_Z20dot_4x8packed_ss_intjj";
  if (dp4a) dg2_declare(c, dot4, "(i32, i32) -> i32");
  else if (!integer) dg2_declare(c, "_Z3fmafff", "(f32, f32, f32) -> f32");
  // The accumulators start as C's elements, slot for slot.
  for (int32_t s = 0; s < lc->e; ++s) memcpy(r->el[s], d->C->el[s], DG2_NAME);
  char lane[8][DG2_NAME];
  for (int l = 0; l < 8; ++l) dg2_const(c, "i32", l, lane[l]);
  for (int64_t bk = 0; bk < kb; ++bk)
    for (int64_t bm = 0; bm < mb; ++bm) {
      // Row i's K step, from every lane: bc[i * 8 + l].
      for (int i = 0; i < 8; ++i)
        for (int l = 0; l < 8; ++l) {
          dg2_fresh(c, bc[i * 8 + l]);
          dg2_line(c, "%s = llvm.call @%s(%s, %s) : %s", bc[i * 8 + l], shuf,
                   ca[(bm * kb + bk) * 8 + i], lane[l], sig);
        }
      for (int64_t bn = 0; bn < nb; ++bn)
        for (int l = 0; l < 8; ++l) {
          const char* b = cb[(bk * nb + bn) * 8 + l];
          for (int i = 0; i < 8; ++i) {
            char* acc = r->el[(bm * nb + bn) * 8 + i];
            char nv[DG2_NAME];
            dg2_fresh(c, nv);
            if (dp4a) {
              char p[DG2_NAME];
              dg2_fresh(c, p);
              dg2_line(c, "%s = llvm.call @%s(%s, %s) : (i32, i32) -> i32", p, dot4,
                       bc[i * 8 + l], b);
              dg2_line(c, "%s = arith.addi %s, %s : i32", nv, acc, p);
            } else if (integer) {
              char p[DG2_NAME];
              dg2_fresh(c, p);
              dg2_line(c, "%s = arith.muli %s, %s : i32", p, bc[i * 8 + l], b);
              dg2_line(c, "%s = arith.addi %s, %s : i32", nv, acc, p);
            } else {
              dg2_line(c, "%s = llvm.call @_Z3fmafff(%s, %s, %s) : (f32, f32, f32) -> f32", nv,
                       bc[i * 8 + l], b, acc);
            }
            memcpy(acc, nv, DG2_NAME);
          }
        }
    }
  return NULL;
}
