// Dots with a 16-bit float result (`tl.dot(a, b, out_dtype=tl.float16)`,
// or an fp16 accumulator) as an fp32 dot between two conversions:
//   tile.dot(a, b, c : f16) -> f16
// becomes
//   tile.dot(a, b, arith.extf(c) : f32) -> f32, then arith.truncf to f16.
//
// Why: the Xe lowerings issue DPAS with an fp32 accumulator only (XeGPU's
// dpas and the SIMD8 builtins dg2 calls take f32 accumulators for fp16 and
// bf16 inputs), so such dots were refused by name on every Intel target,
// while the CPU target and Triton run them. Accumulating in fp32 and
// rounding once per dot is at least as accurate as fp16 accumulation (the
// result differs from it by the fp16 roundings of the partial sums, which
// the fp32 form does not make); a loop carrying an fp16 accumulator rounds
// once per iteration, as its fp16 type says it must.
//
// An accumulator that is a splat of the constant 0 (out_dtype= without
// acc) becomes a splat of an fp32 0, so the emitters still see a zero
// accumulator and issue no additions for it.
#include <stdlib.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>

#include "common/tile_build.h"
#include "lowering.h"

static bool half_float(MlirType t) { return mlirTypeIsAF16(t) || mlirTypeIsABF16(t); }

static bool candidate(MlirOperation op) {
  // (at most 8 attributes: widen() copies them into a fixed array, and
  // tile.dot has one; a dot with more keeps its refusal by name)
  if (!zt_op_named(op, "tile.dot") || mlirOperationGetNumOperands(op) != 3 ||
      mlirOperationGetNumResults(op) != 1 || mlirOperationGetNumAttributes(op) > 8)
    return false;
  MlirType rt = mlirValueGetType(mlirOperationGetResult(op, 0));
  if (!mlirTypeIsARankedTensor(rt) || !half_float(mlirShapedTypeGetElementType(rt))) return false;
  MlirType at = mlirValueGetType(mlirOperationGetOperand(op, 0));
  return mlirTypeIsARankedTensor(at) && mlirTypeIsAFloat(mlirShapedTypeGetElementType(at));
}

typedef struct {
  MlirOperation* ops;
  int n, cap;
} dot_list_t;

static MlirWalkResult collect(MlirOperation op, void* ud) {
  dot_list_t* l = ud;
  if (!candidate(op)) return MlirWalkResultAdvance;
  if (l->n == l->cap) {
    int cap = l->cap ? 2 * l->cap : 8;
    MlirOperation* p = realloc(l->ops, (size_t)cap * sizeof *p);
    if (!p) return MlirWalkResultInterrupt;
    l->ops = p;
    l->cap = cap;
  }
  l->ops[l->n++] = op;
  return MlirWalkResultAdvance;
}

static void widen(MlirOperation dot) {
  zt_tb_t b = zt_tb_at(dot);
  MlirValue res = mlirOperationGetResult(dot, 0);
  MlirType rt = mlirValueGetType(res);
  int rank = (int)mlirShapedTypeGetRank(rt);
  int64_t shape[4];
  for (int i = 0; i < rank && i < 4; ++i) shape[i] = mlirShapedTypeGetDimSize(rt, i);
  MlirType f32 = mlirF32TypeGet(b.ctx);
  MlirType wide = zt_tb_tensor(rank, shape, f32);
  MlirValue c = mlirOperationGetOperand(dot, 2);
  MlirValue c32 = zt_is_zero_splat(c) ? zt_tb_const_splat(&b, f32, 0.0, rank, shape)
                                : zt_tb_op(&b, "arith.extf", 1, &c, wide, 0, NULL);
  MlirValue ops[3] = {mlirOperationGetOperand(dot, 0), mlirOperationGetOperand(dot, 1), c32};
  intptr_t na = mlirOperationGetNumAttributes(dot);
  MlirNamedAttribute attrs[8];  // na <= 8 (candidate)
  for (intptr_t i = 0; i < na; ++i) attrs[i] = mlirOperationGetAttribute(dot, i);
  MlirValue d32 = zt_tb_op(&b, "tile.dot", 3, ops, wide, na, attrs);
  MlirValue d = zt_tb_op(&b, "arith.truncf", 1, &d32, rt, 0, NULL);
  mlirValueReplaceAllUsesOfWith(res, d);
  mlirOperationDestroy(dot);
  // A zero splat read by nothing else goes (the emitters would hold it).
  if (mlirValueIsAOpResult(c) && mlirOpOperandIsNull(mlirValueGetFirstUse(c)) && zt_is_zero_splat(c))
    mlirOperationDestroy(mlirOpResultGetOwner(c));
}

zt_status_t zt_widen_half_dots(MlirOperation kernel, int* out_count) {
  dot_list_t l = {0};
  mlirOperationWalk(kernel, collect, &l, MlirWalkPreOrder);
  for (int i = 0; i < l.n; ++i) widen(l.ops[i]);
  if (out_count) *out_count = l.n;
  free(l.ops);
  return NULL;
}
