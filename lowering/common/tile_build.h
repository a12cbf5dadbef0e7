// Building tile-dialect ops in front of an existing op: the few helpers the
// rewrites before a lowering share (lowering/xe/xe_trans_load.c's pointer
// forms, lowering/common/block1d.c). New ops take the location of the op
// they are built for, so errors still name the kernel's source line.
#ifndef ZETILE_LOWERING_COMMON_TILE_BUILD_H_
#define ZETILE_LOWERING_COMMON_TILE_BUILD_H_

#include <stdint.h>

#include <mlir-c/IR.h>

typedef struct zt_tb_s {
  MlirOperation before;  // new ops go in front of it
  MlirLocation loc;
  MlirContext ctx;
} zt_tb_t;

/// A builder inserting in front of op, with op's location.
zt_tb_t zt_tb_at(MlirOperation op);
/// Creates `name` with one result of type res; returns the result.
MlirValue zt_tb_op(zt_tb_t* b, const char* name, intptr_t nops, const MlirValue* ops, MlirType res,
                   intptr_t nattr, const MlirNamedAttribute* attrs);
MlirNamedAttribute zt_tb_attr(zt_tb_t* b, const char* name, MlirAttribute a);
MlirType zt_tb_tensor(int rank, const int64_t* shape, MlirType elem);
MlirValue zt_tb_splat(zt_tb_t* b, MlirValue scalar, int rank, const int64_t* shape);
/// A two-operand op whose result has x's type (arith.addi, arith.andi, ...).
MlirValue zt_tb_binop(zt_tb_t* b, const char* name, MlirValue x, MlirValue y);
/// (o + 0..n-1) as i64 (*idx, 1-D) and times stride (*off): one axis of a
/// block of a strided view (o: i32 offset, stride: i64).
void zt_tb_axis_index(zt_tb_t* b, MlirValue o, MlirValue stride, int64_t n, MlirValue* idx,
                      MlirValue* off);
/// 0 <= idx < bound as a 1-D i1 tensor of length n (bound: i64 scalar).
MlirValue zt_tb_in_bounds(zt_tb_t* b, MlirValue idx, MlirValue bound, int64_t n);
/// A scalar arith.constant of type et (float or integer) splat to rank/shape.
MlirValue zt_tb_const_splat(zt_tb_t* b, MlirType et, double value, int rank, const int64_t* shape);

#endif  // ZETILE_LOWERING_COMMON_TILE_BUILD_H_
