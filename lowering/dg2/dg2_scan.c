// tile.scan (tl.cumsum, tl.cumprod, tl.associative_scan of one value) of the
// dg2 lowering.
//
// The same route as the general tile.reduce (dg2_control.c): the tensor goes
// through local memory once, then every work-item folds, for each result
// element it holds, the elements along the axis up to it (from it on when
// reversed). That is O(len) combines per element instead of a log-step
// scan, but it needs no shuffles, no second pass and no layout of its own,
// works along any axis of any rank, and applies the combiner in the order
// the CPU lowering does (running value, next element), so non-commutative
// combiners and float sums give the CPU's sequence of operations. The
// kernels that scan (Intel's prefix-sum benchmark: 32x16 and 64x32 fp32
// tiles) scan short axes.
#include <stdio.h>

#include <mlir-c/BuiltinAttributes.h>

#include "dg2_internal.h"

zt_status_t dg2_emit_scan(dg2_t* c, MlirOperation op) {
  if (mlirOperationGetNumOperands(op) != 1 || mlirOperationGetNumResults(op) != 1)
    return dg2_op_error(op, ZT_STATUS_UNSUPPORTED,
                        "dg2: a scan of %d values (one value is supported)",
                        (int)mlirOperationGetNumOperands(op));
  MlirAttribute ca = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("combiner"));
  if (mlirAttributeIsNull(ca) || !mlirAttributeIsAFlatSymbolRef(ca))
    return dg2_op_error(op, ZT_STATUS_INVALID_ARGUMENT, "scan without a combiner");
  MlirOperation fn = mlirSymbolTableLookup(c->symbols, mlirFlatSymbolRefAttrGetValue(ca));
  if (mlirOperationIsNull(fn))
    return dg2_op_error(op, ZT_STATUS_INVALID_ARGUMENT, "combiner not found");
  MlirAttribute ra = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("reverse"));
  bool rev = !mlirAttributeIsNull(ra) && mlirAttributeIsABool(ra) && mlirBoolAttrGetValue(ra);
  zt_type_t st;
  ZT_RETURN_IF_ERROR(dg2_value_type(mlirOperationGetOperand(op, 0), &st));
  int64_t axis = dg2_int_attr(op, "axis", 0);
  if (st.rank < 1 || axis < 0 || axis >= st.rank)
    return dg2_op_error(op, ZT_STATUS_INVALID_ARGUMENT, "bad scan axis");
  int64_t len = st.shape[axis];
  ZT_RETURN_IF_ERROR(dg2_stage_in_smem(c, mlirOperationGetOperand(op, 0), &st));
  MlirValue res = mlirOperationGetResult(op, 0);
  int32_t rl = dg2_hint_get(c, res);
  if (rl < 0) ZT_RETURN_IF_ERROR(dg2_blocked(c, st.rank, st.shape, &rl));
  int32_t e = c->layouts[rl].e;
  dg2_val_t r = {.kind = DV_DIST, .type = st, .layout = rl};
  r.el = dg2_alloc_names(c, e);
  if (!r.el) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "dg2 values");
  const char* ty = dg2_reg(st.kind);
  char last[DG2_NAME], lenc[DG2_NAME];
  dg2_const(c, "i32", len - 1, last);
  dg2_const(c, "i32", len, lenc);
  for (int32_t k = 0; k < e; ++k) {
    char sc[ZT_MAX_RANK][DG2_NAME], pos[DG2_NAME], ub[DG2_NAME];
    dg2_coords(c, rl, k, sc);
    snprintf(pos, DG2_NAME, "%s", sc[axis]);
    // The first element folded, and how many elements in all: forward
    // 0 .. pos (pos + 1), reversed len-1 down to pos (len - pos).
    dg2_fresh(c, ub);
    if (rev)
      dg2_line(c, "%s = arith.subi %s, %s : i32", ub, lenc, pos);
    else
      dg2_line(c, "%s = arith.addi %s, %%c1_i32 : i32", ub, pos);
    char acc[1][DG2_NAME], rhs[1][DG2_NAME], out[1][DG2_NAME], iv[DG2_NAME], arg[DG2_NAME],
        result[DG2_NAME];
    snprintf(sc[axis], DG2_NAME, "%s", rev ? last : "%c0_i32");
    dg2_smem_load_elem(c, &st, sc, acc[0]);
    dg2_fresh(c, result);
    dg2_fresh(c, iv);
    dg2_fresh(c, arg);
    dg2_line(c, "%s = scf.for %s = %%c1_i32 to %s step %%c1_i32 iter_args(%s = %s) -> (%s) : i32 {",
             result, iv, ub, arg, acc[0], ty);
    c->indent++;
    ++c->loop_epoch;
    if (rev) {
      char idx[DG2_NAME];
      dg2_fresh(c, idx);
      dg2_line(c, "%s = arith.subi %s, %s : i32", idx, last, iv);
      snprintf(sc[axis], DG2_NAME, "%s", idx);
    } else {
      snprintf(sc[axis], DG2_NAME, "%s", iv);
    }
    dg2_smem_load_elem(c, &st, sc, rhs[0]);
    snprintf(acc[0], DG2_NAME, "%s", arg);
    ZT_RETURN_IF_ERROR(dg2_combine(c, fn, 1, acc, rhs, out));
    dg2_line(c, "scf.yield %s : %s", out[0], ty);
    c->indent--;
    ++c->loop_epoch;
    dg2_line(c, "}");
    snprintf(r.el[k], DG2_NAME, "%s", result);
  }
  return dg2_put(c, res, &r);
}
