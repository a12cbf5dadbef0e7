// tile.dot on DG2's XMX through the SIMD8 builtins of
// cl_intel_subgroup_matrix_multiply_accumulate:
//   float8 intel_sub_group_f16_f16_matrix_mad_k16(int8 a, int8 b, float8 acc)
//   float8 intel_sub_group_bf16_bf16_matrix_mad_k16(int8 a, int8 b, float8 acc)
// (IGC 2022 turns each into one `dpas.8x8 (8|M0)` on acm-g10). One call is
// an 8x16 A block times a 16x8 B block; in a subgroup of 8:
//   A: component i of lane j = the pair A[i][2j], A[i][2j+1] (low half first)
//   B: component i of lane j = the pair B[2i][j], B[2i+1][j] (VNNI)
//   C: component i of lane j = C[i][j].
// The dot's [M,N] tile is split over a wm x wn grid of subgroups; each
// subgroup computes its (M/wm) x (N/wn) part as 8x8 blocks, K in steps of 16.
// Layout hints (dg2_plan) make the loads feeding a dot produce its operand
// layouts directly, so no data moves between registers.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dg2_internal.h"

static bool same_shape(const zt_type_t* a, const dg2_layout_t* l) {
  if (a->rank != l->rank) return false;
  for (int32_t d = 0; d < a->rank; ++d)
    if (a->shape[d] != l->shape[d]) return false;
  return true;
}

static zt_status_t propagate(dg2_t* c, MlirValue v, int32_t l, int depth);

static zt_status_t propagate_operands(dg2_t* c, MlirOperation op, int32_t l, int depth) {
  intptr_t n = mlirOperationGetNumOperands(op);
  for (intptr_t i = 0; i < n; ++i)
    ZT_RETURN_IF_ERROR(propagate(c, mlirOperationGetOperand(op, i), l, depth + 1));
  return NULL;
}

static MlirOperation terminator(MlirBlock b) {
  MlirOperation last = {NULL};
  for (MlirOperation op = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    last = op;
  return last;
}

// Backwards from a dot operand: loads, elementwise ops and loop-carried
// values that produce it take its layout.
static zt_status_t propagate(dg2_t* c, MlirValue v, int32_t l, int depth) {
  if (depth > 200 || dg2_hint_get(c, v) >= 0) return NULL;
  zt_type_t t;
  zt_status_t s = dg2_value_type(v, &t);
  if (s) {
    zt_status_free(s);
    return NULL;
  }
  if (!same_shape(&t, &c->layouts[l])) return NULL;
  ZT_RETURN_IF_ERROR(dg2_hint_put(c, v, l));
  if (mlirValueIsABlockArgument(v)) {
    MlirBlock b = mlirBlockArgumentGetOwner(v);
    MlirOperation parent = mlirBlockGetParentOperation(b);
    intptr_t idx = mlirBlockArgumentGetArgNumber(v);
    if (!mlirOperationIsNull(parent) && dg2_op_is(parent, "scf.for") && idx >= 1) {
      ZT_RETURN_IF_ERROR(propagate(c, mlirOperationGetOperand(parent, 3 + idx - 1), l, depth + 1));
      ZT_RETURN_IF_ERROR(propagate(c, mlirOperationGetResult(parent, idx - 1), l, depth + 1));
      MlirOperation y = terminator(b);
      if (!mlirOperationIsNull(y))
        ZT_RETURN_IF_ERROR(propagate(c, mlirOperationGetOperand(y, idx - 1), l, depth + 1));
    }
    return NULL;
  }
  MlirOperation op = mlirOpResultGetOwner(v);
  if (dg2_op_is(op, "scf.for")) {
    intptr_t r = mlirOpResultGetResultNumber(v);
    MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
    return propagate(c, mlirBlockGetArgument(b, r + 1), l, depth + 1);
  }
  if (dg2_op_is(op, "tile.block_load")) return NULL;  // its scalars keep no layout
  if (dg2_op_is(op, "tile.load") || dg2_op_is(op, "tile.addptr") ||
      dg2_op_prefix(op, "arith.") || dg2_op_prefix(op, "math."))
    return propagate_operands(c, op, l, depth);
  return NULL;
}

static zt_status_t dot_shapes(MlirOperation op, zt_type_t* a, zt_type_t* b, zt_type_t* acc) {
  ZT_RETURN_IF_ERROR(dg2_value_type(mlirOperationGetOperand(op, 0), a));
  ZT_RETURN_IF_ERROR(dg2_value_type(mlirOperationGetOperand(op, 1), b));
  ZT_RETURN_IF_ERROR(dg2_value_type(mlirOperationGetOperand(op, 2), acc));
  return NULL;
}

// Why a dot cannot use the DPAS path (NULL when it can).
static const char* dot_unsupported(const zt_type_t* a, const zt_type_t* b,
                                   const zt_type_t* acc) {
  if (a->rank != 2 || b->rank != 2 || acc->rank != 2) return "only 2-D dots";
  if (!((a->kind == ZT_F16 && b->kind == ZT_F16) || (a->kind == ZT_BF16 && b->kind == ZT_BF16)))
    return "only fp16 x fp16 and bf16 x bf16 inputs (fp32, tf32 and int8 dots are not "
           "lowered for dg2 yet)";
  if (acc->kind != ZT_F32) return "only fp32 accumulation";
  if (a->shape[0] % 8 || b->shape[1] % 8 || a->shape[1] % 16)
    return "M and N must be multiples of 8 and K a multiple of 16";
  return NULL;
}

static zt_status_t plan_block(dg2_t* c, MlirBlock b);

static zt_status_t plan_op(dg2_t* c, MlirOperation op) {
  intptr_t nr = mlirOperationGetNumRegions(op);
  for (intptr_t r = 0; r < nr; ++r) {
    MlirRegion reg = mlirOperationGetRegion(op, r);
    for (MlirBlock b = mlirRegionGetFirstBlock(reg); !mlirBlockIsNull(b);
         b = mlirBlockGetNextInRegion(b))
      ZT_RETURN_IF_ERROR(plan_block(c, b));
  }
  if (!dg2_op_is(op, "tile.dot")) return NULL;
  c->uses_dot = true;
  zt_type_t a, b, acc;
  zt_status_t s = dot_shapes(op, &a, &b, &acc);
  if (s || dot_unsupported(&a, &b, &acc)) {
    zt_status_free(s);
    return NULL;  // reported when the dot is lowered
  }
  int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  int32_t la, lb, lc;
  ZT_RETURN_IF_ERROR(dg2_dpas_layout(c, DL_DPAS_A, m, n, k, &la));
  ZT_RETURN_IF_ERROR(dg2_dpas_layout(c, DL_DPAS_B, m, n, k, &lb));
  ZT_RETURN_IF_ERROR(dg2_dpas_layout(c, DL_DPAS_C, m, n, k, &lc));
  ZT_RETURN_IF_ERROR(propagate(c, mlirOperationGetResult(op, 0), lc, 0));
  ZT_RETURN_IF_ERROR(propagate(c, mlirOperationGetOperand(op, 2), lc, 0));
  ZT_RETURN_IF_ERROR(propagate(c, mlirOperationGetOperand(op, 0), la, 0));
  ZT_RETURN_IF_ERROR(propagate(c, mlirOperationGetOperand(op, 1), lb, 0));
  return NULL;
}

static zt_status_t plan_block(dg2_t* c, MlirBlock b) {
  for (MlirOperation op = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    ZT_RETURN_IF_ERROR(plan_op(c, op));
  return NULL;
}

zt_status_t dg2_plan(dg2_t* c) { return plan_op(c, c->lc->kernel); }

// 16 consecutive 16-bit elements as the int8 operand of the builtin.
static void pack16(dg2_t* c, const char* ety, char (*el)[DG2_NAME], int32_t first,
                   char out[DG2_NAME]) {
  char v[DG2_NAME];
  dg2_fresh(c, v);
  dg2_line(c, "%s = llvm.mlir.undef : vector<16x%s>", v, ety);
  for (int i = 0; i < 16; ++i) {
    char idx[DG2_NAME], nv[DG2_NAME];
    dg2_const(c, "i32", i, idx);
    dg2_fresh(c, nv);
    dg2_line(c, "%s = llvm.insertelement %s, %s[%s : i32] : vector<16x%s>", nv, el[first + i],
             v, idx, ety);
    snprintf(v, DG2_NAME, "%s", nv);
  }
  dg2_fresh(c, out);
  dg2_line(c, "%s = llvm.bitcast %s : vector<16x%s> to vector<8xi32>", out, v, ety);
}

zt_status_t dg2_emit_dot(dg2_t* c, MlirOperation op) {
  zt_type_t a, b, acc;
  ZT_RETURN_IF_ERROR(dot_shapes(op, &a, &b, &acc));
  const char* why = dot_unsupported(&a, &b, &acc);
  if (why) return dg2_op_error(op, ZT_STATUS_UNSUPPORTED, "dg2: %s", why);
  int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  int32_t la, lb, lc;
  ZT_RETURN_IF_ERROR(dg2_dpas_layout(c, DL_DPAS_A, m, n, k, &la));
  ZT_RETURN_IF_ERROR(dg2_dpas_layout(c, DL_DPAS_B, m, n, k, &lb));
  ZT_RETURN_IF_ERROR(dg2_dpas_layout(c, DL_DPAS_C, m, n, k, &lc));
  const dg2_val_t *va, *vb, *vc;
  ZT_RETURN_IF_ERROR(dg2_get_checked(c, mlirOperationGetOperand(op, 0), &va));
  ZT_RETURN_IF_ERROR(dg2_get_checked(c, mlirOperationGetOperand(op, 1), &vb));
  ZT_RETURN_IF_ERROR(dg2_get_checked(c, mlirOperationGetOperand(op, 2), &vc));
  dg2_val_t A, B, C;
  ZT_RETURN_IF_ERROR(dg2_to_layout(c, va, la, &A));
  ZT_RETURN_IF_ERROR(dg2_to_layout(c, vb, lb, &B));
  ZT_RETURN_IF_ERROR(dg2_to_layout(c, vc, lc, &C));
  int32_t wm = c->layouts[lc].wm, wn = c->layouts[lc].wn;
  int64_t mb = m / wm / 8, nb = n / wn / 8, kb = k / 16;
  const char* ety = a.kind == ZT_BF16 ? "i16" : "f16";
  const char* fn = a.kind == ZT_BF16 ? "_Z40intel_sub_group_bf16_bf16_matrix_mad_k16Dv8_iS_Dv8_f"
                                     : "_Z38intel_sub_group_f16_f16_matrix_mad_k16Dv8_iS_Dv8_f";
  dg2_declare(c, fn, "(vector<8xi32>, vector<8xi32>, vector<8xf32>) -> vector<8xf32>");
  char(*pa)[DG2_NAME] = dg2_alloc_names(c, (int32_t)(mb * kb));
  char(*pb)[DG2_NAME] = dg2_alloc_names(c, (int32_t)(kb * nb));
  dg2_val_t r;
  memset(&r, 0, sizeof r);
  r.kind = DV_DIST;
  ZT_RETURN_IF_ERROR(dg2_value_type(mlirOperationGetResult(op, 0), &r.type));
  r.layout = lc;
  r.el = dg2_alloc_names(c, c->layouts[lc].e);
  if (!pa || !pb || !r.el) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "dg2 dot");
  for (int64_t i = 0; i < mb; ++i)
    for (int64_t q = 0; q < kb; ++q)
      pack16(c, ety, A.el, (int32_t)((i * kb + q) * 16), pa[i * kb + q]);
  for (int64_t q = 0; q < kb; ++q)
    for (int64_t j = 0; j < nb; ++j)
      pack16(c, ety, B.el, (int32_t)((q * nb + j) * 16), pb[q * nb + j]);
  for (int64_t i = 0; i < mb; ++i)
    for (int64_t j = 0; j < nb; ++j) {
      int32_t s0 = (int32_t)((i * nb + j) * 8);
      char v[DG2_NAME];
      dg2_fresh(c, v);
      dg2_line(c, "%s = llvm.mlir.undef : vector<8xf32>", v);
      for (int e = 0; e < 8; ++e) {
        char idx[DG2_NAME], nv[DG2_NAME];
        dg2_const(c, "i32", e, idx);
        dg2_fresh(c, nv);
        dg2_line(c, "%s = llvm.insertelement %s, %s[%s : i32] : vector<8xf32>", nv,
                 C.el[s0 + e], v, idx);
        snprintf(v, DG2_NAME, "%s", nv);
      }
      for (int64_t q = 0; q < kb; ++q) {
        char nv[DG2_NAME];
        dg2_fresh(c, nv);
        dg2_line(c,
                 "%s = llvm.call @%s(%s, %s, %s) : (vector<8xi32>, vector<8xi32>, "
                 "vector<8xf32>) -> vector<8xf32>",
                 nv, fn, pa[i * kb + q], pb[q * nb + j], v);
        snprintf(v, DG2_NAME, "%s", nv);
      }
      for (int e = 0; e < 8; ++e) {
        char idx[DG2_NAME];
        dg2_const(c, "i32", e, idx);
        dg2_fresh(c, r.el[s0 + e]);
        dg2_line(c, "%s = llvm.extractelement %s[%s : i32] : vector<8xf32>", r.el[s0 + e], v,
                 idx);
      }
    }
  return dg2_put(c, mlirOperationGetResult(op, 0), &r);
}
