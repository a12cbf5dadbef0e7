// 1-D tensor descriptors as pointer accesses (zt_block1d_to_pointers): a
// rank-1 tile.block_load / block_store becomes the tile.load / tile.store
// of base + (o + i)·t under the checked bound; loads keep their padding
// (zero, or NaN for floats).
//
// Why: the GPU lowerings have no 1-D block form (Xe's 2D block IO is 2-D;
// the dg2 lowering's block IO too), while 1-D pointer accesses are lane
// code both already write (contiguous ones as block messages on Xe).
// Intel's own FlashAttention forward benchmark stores its per-row m_i
// through a 1-D descriptor (block_shape=[BLOCK_M]). The CPU lowering keeps
// its own block loop nest and does not call this.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>

#include "common/tile_build.h"
#include "lowering.h"

static bool is_block1d(MlirOperation op) {
  bool st = zt_op_named(op, "tile.block_store");
  if (!st && !zt_op_named(op, "tile.block_load")) return false;
  // base, shape, stride, offset (+ value): rank 1.
  return mlirOperationGetNumOperands(op) == (st ? 5 : 4);
}

static bool attr_is(MlirOperation op, const char* name, const char* want) {
  MlirAttribute a = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(name));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAString(a)) return false;
  MlirStringRef s = mlirStringAttrGetValue(a);
  return s.length == strlen(want) && memcmp(s.data, want, s.length) == 0;
}

static void rewrite(MlirOperation op) {
  bool store = zt_op_named(op, "tile.block_store");
  MlirValue o[5];
  for (int i = 0; i < (store ? 5 : 4); ++i) o[i] = mlirOperationGetOperand(op, i);
  MlirType vt = store ? mlirValueGetType(o[4]) : mlirValueGetType(mlirOperationGetResult(op, 0));
  if (!mlirTypeIsARankedTensor(vt) || mlirShapedTypeGetRank(vt) != 1) return;
  MlirType et = mlirShapedTypeGetElementType(vt);
  int64_t n = mlirShapedTypeGetDimSize(vt, 0);
  MlirAttribute bc =
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("boundary_check"));
  int64_t bits = !mlirAttributeIsNull(bc) && mlirAttributeIsAInteger(bc)
                     ? mlirIntegerAttrGetValueInt(bc) : 0;
  zt_tb_t b = zt_tb_at(op);
  MlirValue idx, off;
  zt_tb_axis_index(&b, o[3], o[2], n, &idx, &off);
  MlirValue ap[2] = {zt_tb_splat(&b, o[0], 1, &n), off};
  MlirValue ptrs = zt_tb_op(&b, "tile.addptr", 2, ap, mlirValueGetType(ap[0]), 0, NULL);
  MlirValue mask = bits & 1 ? zt_tb_in_bounds(&b, idx, o[1], n) : (MlirValue){NULL};
  if (store) {
    MlirValue ops[3] = {ptrs, o[4], mask};
    int32_t seg[3] = {1, 1, mask.ptr ? 1 : 0};
    MlirNamedAttribute segs =
        zt_tb_attr(&b, "operandSegmentSizes", mlirDenseI32ArrayGet(b.ctx, 3, seg));
    MlirOperationState st = mlirOperationStateGet(mlirStringRefCreateFromCString("tile.store"), b.loc);
    mlirOperationStateAddOperands(&st, mask.ptr ? 3 : 2, ops);
    mlirOperationStateAddAttributes(&st, 1, &segs);
    MlirOperation ns = mlirOperationCreate(&st);
    if (mlirOperationIsNull(ns)) return;
    mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(op), op, ns);
    mlirOperationDestroy(op);
    return;
  }
  bool nan = mlirTypeIsAFloat(et) && attr_is(op, "padding", "nan");
  MlirValue other = zt_tb_const_splat(&b, et, nan ? NAN : 0.0, 1, &n);
  MlirValue ops[3] = {ptrs, mask, other};
  int32_t seg[3] = {1, mask.ptr ? 1 : 0, mask.ptr ? 1 : 0};
  MlirNamedAttribute segs = zt_tb_attr(&b, "operandSegmentSizes", mlirDenseI32ArrayGet(b.ctx, 3, seg));
  MlirValue v = zt_tb_op(&b, "tile.load", mask.ptr ? 3 : 1, ops, vt, 1, &segs);
  mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, 0), v);
  mlirOperationDestroy(op);
}

zt_status_t zt_block1d_to_pointers(MlirOperation kernel, int* out_count) {
  MlirOperation* ops;
  size_t n;
  if (out_count) *out_count = 0;
  if (!zt_op_list_collect(kernel, is_block1d, &ops, &n))
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "1-D block loads/stores as pointer accesses");
  for (size_t i = 0; i < n; ++i) rewrite(ops[i]);
  if (out_count) *out_count = (int)n;
  free(ops);
  return NULL;
}
