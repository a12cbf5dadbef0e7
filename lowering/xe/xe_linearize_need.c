// Whether zetile's lane code needs upstream's xegpu-vector-linearize.
//
// The pass exists to flatten n-D vectors (a lane's DPAS blocks,
// vector<8x1xT> columns) and to lower the vector ops that upstream's
// conversions take only in a simpler form (gathers, transposes, broadcasts
// of a vector, shuffles of unequal operands). Much of zetile's lane code has
// none of that: softmax, layer norm and elementwise chains are 1-D vectors
// of one lane's elements moved with extract, insert, extract_strided_slice,
// from_elements and broadcasts of a scalar. On such a module the pass
// rewrites nothing, yet runs three greedy drivers and a conversion over
// every op: 14% of softmax's second MLIR pipeline in MLIR's pass timing. So
// it runs only when some op has a vector of rank 2 or more, or a vector op
// outside that list (an allow-list: an op this file does not know keeps the
// pass).
#include <mlir-c/BuiltinTypes.h>

#include "xe/xe_internal.h"

static bool nd_vector(MlirType t) { return mlirTypeIsAVector(t) && mlirShapedTypeGetRank(t) >= 2; }

// Vector ops the pass leaves as they are when every vector is 1-D.
static bool plain_vector_op(MlirOperation op) {
  static const char* const kPlain[] = {"vector.extract", "vector.insert",
                                       "vector.extract_strided_slice", "vector.from_elements"};
  for (size_t i = 0; i < sizeof kPlain / sizeof kPlain[0]; ++i)
    if (zt_op_named(op, kPlain[i])) return true;
  // The lane packer's one-element slices (a shuffle of one 1-D vector with
  // itself, xe_lane_pack.c) and the wide values' chunks and joins
  // (xe_wide.c: two 1-D operands of one type): one llvm.shufflevector each.
  if (zt_op_named(op, "vector.shuffle")) {
    if (mlirOperationGetNumOperands(op) != 2) return false;
    MlirType a = mlirValueGetType(mlirOperationGetOperand(op, 0));
    return mlirTypeEqual(a, mlirValueGetType(mlirOperationGetOperand(op, 1))) &&
           mlirTypeIsAVector(a) && mlirShapedTypeGetRank(a) == 1;
  }
  // A broadcast of a scalar is already in the form the conversions take; a
  // broadcast of a vector is lowered by the pass.
  return zt_op_named(op, "vector.broadcast") && mlirOperationGetNumOperands(op) == 1 &&
         !mlirTypeIsAVector(mlirValueGetType(mlirOperationGetOperand(op, 0)));
}

// Whether op alone gives the pass work: a vector op outside the list, or an
// n-D vector among its results, operands or its regions' block arguments
// (loop-carried values, function arguments).
static bool gives_work(MlirOperation op) {
  if (zt_op_name_has_prefix(op, "vector.") && !plain_vector_op(op)) return true;
  for (intptr_t i = 0, n = mlirOperationGetNumResults(op); i < n; ++i)
    if (nd_vector(mlirValueGetType(mlirOperationGetResult(op, i)))) return true;
  for (intptr_t i = 0, n = mlirOperationGetNumOperands(op); i < n; ++i)
    if (nd_vector(mlirValueGetType(mlirOperationGetOperand(op, i)))) return true;
  for (intptr_t r = 0, nr = mlirOperationGetNumRegions(op); r < nr; ++r) {
    MlirRegion region = mlirOperationGetRegion(op, r);
    for (MlirBlock b = mlirRegionGetFirstBlock(region); !mlirBlockIsNull(b);
         b = mlirBlockGetNextInRegion(b))
      for (intptr_t a = 0, na = mlirBlockGetNumArguments(b); a < na; ++a)
        if (nd_vector(mlirValueGetType(mlirBlockGetArgument(b, a)))) return true;
  }
  return false;
}

static MlirWalkResult need_visit(MlirOperation op, void* user) {
  if (!gives_work(op)) return MlirWalkResultAdvance;
  *(bool*)user = true;
  return MlirWalkResultInterrupt;
}

bool xe_needs_linearize(MlirModule m) {
  bool need = false;
  mlirOperationWalk(mlirModuleGetOperation(m), need_visit, &need, MlirWalkPreOrder);
  return need;
}

// convert-vector-to-llvm first runs a greedy driver of vector lowerings
// (strided slices to shuffles, broadcasts, shape casts, transposes, masks,
// contractions, ...) over the whole module, then the same conversion
// patterns convert-to-llvm applies to the vector dialect. On lane code that
// needs no linearizing, the one op of the list above those conversions do
// not take is extract_strided_slice (the lane packer now writes shuffles):
// without it the lowerings find nothing, and the pass was ~40% of softmax's
// second MLIR pipeline (pass timing) for the same SPIR-V.
static MlirWalkResult lowering_visit(MlirOperation op, void* user) {
  if (!gives_work(op) && !zt_op_named(op, "vector.extract_strided_slice"))
    return MlirWalkResultAdvance;
  *(bool*)user = true;
  return MlirWalkResultInterrupt;
}

bool xe_needs_vector_lowering(MlirModule m) {
  bool need = false;
  mlirOperationWalk(mlirModuleGetOperation(m), lowering_visit, &need, MlirWalkPreOrder);
  return need;
}
