// Lane code in the forms upstream's conversions lower in one op each.
//
// After zetile's lane distribution a value built element by element (the
// rows of a gathered K^T tile, an accumulator column) is a chain of
//   vector.insert %x, %acc [i] : vector<1xT> into vector<Nx1xT>
// xegpu-vector-linearize turns each into a vector.shuffle of a vector<NxT>
// and a vector<1xT>, whose operands differ in length, and the vector-to-LLVM
// patterns then lower such a shuffle element by element: N extracts, N
// inserts and their position constants. For the FlashAttention forward
// (head dim 64) that was 304 inserts -> ~19,600 LLVM ops, over half of the
// module every later pass, LLVM's -O2 and the SPIR-V backend walked.
// Inserting the element into the flattened vector instead (rewrite_insert)
// lowers to one llvm.insertelement per element and is the same value: that
// module's LLVM form went from ~12,300 to ~3,500 lines.
#include <stdlib.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>

#include "xe/xe_internal.h"

typedef struct {
  MlirOperation* ops;
  size_t n, cap;
  bool oom;
} tidy_list_t;

static bool one_element_vector(MlirType t) {
  return mlirTypeIsAVector(t) && mlirShapedTypeGetRank(t) == 1 &&
         mlirShapedTypeGetDimSize(t, 0) == 1;
}

// vector.insert of a vector<1xT> with static positions only, into a vector
// whose last dimension is 1 (so the element's position is the given one
// followed by 0).
static bool is_single_insert(MlirOperation op) {
  if (!zt_op_named(op, "vector.insert") || mlirOperationGetNumOperands(op) != 2) return false;
  MlirType src = mlirValueGetType(mlirOperationGetOperand(op, 0));
  MlirType dst = mlirValueGetType(mlirOperationGetOperand(op, 1));
  if (!one_element_vector(src) || !mlirTypeIsAVector(dst)) return false;
  intptr_t rank = mlirShapedTypeGetRank(dst);
  if (rank < 2 || mlirShapedTypeGetDimSize(dst, rank - 1) != 1) return false;
  MlirAttribute pos =
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("static_position"));
  return !mlirAttributeIsNull(pos) && mlirAttributeIsADenseI64Array(pos) &&
         mlirDenseArrayGetNumElements(pos) == rank - 1;
}

static MlirWalkResult collect_cb(MlirOperation op, void* user) {
  tidy_list_t* l = user;
  if (!is_single_insert(op)) return MlirWalkResultAdvance;
  if (!zt_op_list_push(&l->ops, &l->n, &l->cap, op)) {
    l->oom = true;
    return MlirWalkResultInterrupt;
  }
  return MlirWalkResultAdvance;
}

static MlirNamedAttribute position(MlirContext ctx, intptr_t n, const int64_t* v) {
  MlirIdentifier name = mlirIdentifierGet(ctx, mlirStringRefCreateFromCString("static_position"));
  return mlirNamedAttributeGet(name, mlirDenseI64ArrayGet(ctx, n, v));
}

static MlirOperation create(const char* name, MlirLocation loc, intptr_t nops, MlirValue* ops,
                            MlirType res, intptr_t nattr, MlirNamedAttribute* attrs) {
  MlirOperationState st = mlirOperationStateGet(mlirStringRefCreateFromCString(name), loc);
  mlirOperationStateAddOperands(&st, nops, ops);
  mlirOperationStateAddResults(&st, 1, &res);
  if (nattr) mlirOperationStateAddAttributes(&st, nattr, attrs);
  return mlirOperationCreate(&st);
}

static MlirValue put_before(MlirOperation before, MlirOperation op) {
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(before), before, op);
  return mlirOperationGetResult(op, 0);
}

// %r = vector.insert %x, %dst [p...] : vector<1xT> into vector<...x1xT>
// ->  %f = vector.shape_cast %dst : ... to vector<NxT>
//     %e = vector.extract %x[0] : T from vector<1xT>
//     %i = vector.insert %e, %f [linear(p..., 0)] : T into vector<NxT>
//     %r = vector.shape_cast %i : vector<NxT> to vector<...x1xT>
// 1-D on purpose: canonicalize folds a chain of such inserts into one
// vector.from_elements, which xegpu-vector-linearize would split into a
// shuffle per row again if it were n-D; the shape casts fold away.
static void rewrite_insert(MlirContext ctx, MlirOperation op) {
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirValue src = mlirOperationGetOperand(op, 0), dst = mlirOperationGetOperand(op, 1);
  MlirType dt = mlirValueGetType(dst), et = mlirShapedTypeGetElementType(dt);
  MlirAttribute old =
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("static_position"));
  intptr_t rank = mlirShapedTypeGetRank(dt);
  int64_t n = 1, at = 0;
  for (intptr_t d = 0; d < rank; ++d) {
    int64_t size = mlirShapedTypeGetDimSize(dt, d);
    int64_t p = d < rank - 1 ? mlirDenseI64ArrayGetElement(old, d) : 0;
    at = at * size + p;
    n *= size;
  }
  MlirType flat = mlirVectorTypeGet(1, &n, et);
  int64_t zero = 0;
  MlirNamedAttribute p0 = position(ctx, 1, &zero), pat = position(ctx, 1, &at);
  MlirValue f = put_before(op, create("vector.shape_cast", loc, 1, &dst, flat, 0, NULL));
  MlirValue e = put_before(op, create("vector.extract", loc, 1, &src, et, 1, &p0));
  MlirValue ins[2] = {e, f};
  MlirValue i = put_before(op, create("vector.insert", loc, 2, ins, flat, 1, &pat));
  MlirValue r = put_before(op, create("vector.shape_cast", loc, 1, &i, dt, 0, NULL));
  mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, 0), r);
  mlirOperationDestroy(op);
}

zt_status_t xe_tidy_lanes(MlirContext ctx, MlirModule m, int* out_rewritten) {
  tidy_list_t l = {0};
  mlirOperationWalk(mlirModuleGetOperation(m), collect_cb, &l, MlirWalkPreOrder);
  if (l.oom) {
    free(l.ops);
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe lane tidy-up");
  }
  for (size_t i = 0; i < l.n; ++i) rewrite_insert(ctx, l.ops[i]);
  free(l.ops);
  if (out_rewritten) *out_rewritten = (int)l.n;
  return NULL;
}
