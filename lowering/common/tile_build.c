// Building tile-dialect ops in front of an existing op (tile_build.h).
#include "common/tile_build.h"

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>

zt_tb_t zt_tb_at(MlirOperation op) {
  return (zt_tb_t){.before = op, .loc = mlirOperationGetLocation(op),
                   .ctx = mlirOperationGetContext(op)};
}

MlirValue zt_tb_op(zt_tb_t* b, const char* name, intptr_t nops, const MlirValue* ops, MlirType res,
                   intptr_t nattr, const MlirNamedAttribute* attrs) {
  MlirOperationState st = mlirOperationStateGet(mlirStringRefCreateFromCString(name), b->loc);
  if (nops) mlirOperationStateAddOperands(&st, nops, ops);
  mlirOperationStateAddResults(&st, 1, &res);
  if (nattr) mlirOperationStateAddAttributes(&st, nattr, attrs);
  MlirOperation op = mlirOperationCreate(&st);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(b->before), b->before, op);
  return mlirOperationGetResult(op, 0);
}

MlirNamedAttribute zt_tb_attr(zt_tb_t* b, const char* name, MlirAttribute a) {
  return mlirNamedAttributeGet(mlirIdentifierGet(b->ctx, mlirStringRefCreateFromCString(name)), a);
}

MlirType zt_tb_tensor(int rank, const int64_t* shape, MlirType elem) {
  return mlirRankedTensorTypeGet(rank, shape, elem, mlirAttributeGetNull());
}

MlirValue zt_tb_splat(zt_tb_t* b, MlirValue scalar, int rank, const int64_t* shape) {
  return zt_tb_op(b, "tile.splat", 1, &scalar, zt_tb_tensor(rank, shape, mlirValueGetType(scalar)),
                  0, NULL);
}

MlirValue zt_tb_binop(zt_tb_t* b, const char* name, MlirValue x, MlirValue y) {
  MlirValue ops[2] = {x, y};
  return zt_tb_op(b, name, 2, ops, mlirValueGetType(x), 0, NULL);
}

void zt_tb_axis_index(zt_tb_t* b, MlirValue o, MlirValue stride, int64_t n, MlirValue* idx,
                      MlirValue* off) {
  MlirType i32 = mlirIntegerTypeGet(b->ctx, 32), i64 = mlirIntegerTypeGet(b->ctx, 64);
  MlirNamedAttribute range[2] = {zt_tb_attr(b, "start", mlirIntegerAttrGet(i32, 0)),
                                 zt_tb_attr(b, "end", mlirIntegerAttrGet(i32, n))};
  MlirValue r = zt_tb_op(b, "tile.make_range", 0, NULL, zt_tb_tensor(1, &n, i32), 2, range);
  MlirValue ri = zt_tb_binop(b, "arith.addi", zt_tb_splat(b, o, 1, &n), r);
  *idx = zt_tb_op(b, "arith.extsi", 1, &ri, zt_tb_tensor(1, &n, i64), 0, NULL);
  *off = zt_tb_binop(b, "arith.muli", *idx, zt_tb_splat(b, stride, 1, &n));
}

MlirValue zt_tb_in_bounds(zt_tb_t* b, MlirValue idx, MlirValue bound, int64_t n) {
  MlirType i64 = mlirIntegerTypeGet(b->ctx, 64), i1 = mlirIntegerTypeGet(b->ctx, 1);
  MlirValue zero = zt_tb_const_splat(b, i64, 0.0, 1, &n);
  MlirValue lo_ops[2] = {idx, zero}, hi_ops[2] = {idx, zt_tb_splat(b, bound, 1, &n)};
  // arith.cmpi predicates: 5 sge, 2 slt.
  MlirNamedAttribute sge = zt_tb_attr(b, "predicate", mlirIntegerAttrGet(i64, 5));
  MlirNamedAttribute slt = zt_tb_attr(b, "predicate", mlirIntegerAttrGet(i64, 2));
  MlirValue lo = zt_tb_op(b, "arith.cmpi", 2, lo_ops, zt_tb_tensor(1, &n, i1), 1, &sge);
  MlirValue hi = zt_tb_op(b, "arith.cmpi", 2, hi_ops, zt_tb_tensor(1, &n, i1), 1, &slt);
  return zt_tb_binop(b, "arith.andi", lo, hi);
}

MlirValue zt_tb_const_splat(zt_tb_t* b, MlirType et, double value, int rank, const int64_t* shape) {
  MlirAttribute a = mlirTypeIsAFloat(et) ? mlirFloatAttrDoubleGet(b->ctx, et, value)
                                         : mlirIntegerAttrGet(et, (int64_t)value);
  MlirNamedAttribute v = zt_tb_attr(b, "value", a);
  return zt_tb_splat(b, zt_tb_op(b, "arith.constant", 0, NULL, et, 1, &v), rank, shape);
}
