// Dead-code elimination of side-effect-free ops, run on a lowered module
// before upstream's pipeline. Lowerings emit values that later turn out
// unused (a 1-D index vector whose only readers were re-evaluated lazily
// per block); upstream's canonicalize would drop them, but only after
// xegpu-subgroup-distribute, whose cost grows with the op count, has
// distributed them. Running canonicalize earlier is not an option: its
// folding replaces layout-carrying constants by new ones without layouts.
#include <stdlib.h>
#include <string.h>

#include "lowering.h"

static bool has_prefix(MlirStringRef n, const char* p) {
  size_t l = strlen(p);
  return n.length >= l && memcmp(n.data, p, l) == 0;
}

// Ops known to have no side effects (memory reads and writes, barriers,
// prints and calls are none of these).
static bool pure(MlirOperation op) {
  if (mlirOperationGetNumRegions(op) != 0 || mlirOperationGetNumResults(op) == 0) return false;
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  if (has_prefix(n, "arith.") || has_prefix(n, "math.") || has_prefix(n, "index."))
    return true;
  if (has_prefix(n, "vector.")) {
    static const char* const pure_vector[] = {
        "vector.broadcast", "vector.extract", "vector.insert", "vector.shape_cast",
        "vector.splat",     "vector.shuffle", "vector.bitcast", "vector.extract_strided_slice",
        "vector.insert_strided_slice", "vector.transpose", "vector.reduction",
        "vector.multi_reduction", "vector.from_elements", "vector.step"};
    for (size_t i = 0; i < sizeof pure_vector / sizeof *pure_vector; ++i)
      if (n.length == strlen(pure_vector[i]) && memcmp(n.data, pure_vector[i], n.length) == 0)
        return true;
    return false;
  }
  static const char* const others[] = {"xegpu.create_nd_tdesc", "gpu.subgroup_id",
                                       "gpu.block_id",          "gpu.thread_id",
                                       "gpu.lane_id",           "gpu.block_dim",
                                       "gpu.grid_dim",          "gpu.num_subgroups"};
  for (size_t i = 0; i < sizeof others / sizeof *others; ++i)
    if (n.length == strlen(others[i]) && memcmp(n.data, others[i], n.length) == 0) return true;
  return false;
}

static bool unused(MlirOperation op) {
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i)
    if (!mlirOpOperandIsNull(mlirValueGetFirstUse(mlirOperationGetResult(op, i)))) return false;
  return true;
}

// Erases dead pure ops of a block, last first, so that a chain dies in one
// sweep; recurses into the regions of the ops it keeps.
static size_t dce_block(MlirBlock b) {
  size_t n = 0;
  MlirOperation op = mlirBlockGetFirstOperation(b);
  if (mlirOperationIsNull(op)) return 0;
  // The C API has no previous-op accessor: collect the ops first.
  size_t cap = 64, cnt = 0;
  MlirOperation* ops = malloc(cap * sizeof *ops);
  if (!ops) return 0;
  for (MlirOperation o = op; !mlirOperationIsNull(o); o = mlirOperationGetNextInBlock(o)) {
    if (cnt == cap) {
      MlirOperation* g = realloc(ops, 2 * cap * sizeof *ops);
      if (!g) break;
      ops = g;
      cap *= 2;
    }
    ops[cnt++] = o;
  }
  for (size_t i = cnt; i-- > 0;) {
    MlirOperation o = ops[i];
    if (pure(o) && unused(o)) {
      mlirOperationRemoveFromParent(o);
      mlirOperationDestroy(o);
      ++n;
      continue;
    }
    for (intptr_t r = 0; r < mlirOperationGetNumRegions(o); ++r)
      for (MlirBlock inner = mlirRegionGetFirstBlock(mlirOperationGetRegion(o, r));
           !mlirBlockIsNull(inner); inner = mlirBlockGetNextInRegion(inner))
        n += dce_block(inner);
  }
  free(ops);
  return n;
}

size_t zt_dce(MlirOperation root) {
  size_t total = 0, n;
  // Ops inside regions die after their users outside do; a few sweeps settle it.
  for (int sweep = 0; sweep < 4; ++sweep) {
    n = 0;
    for (intptr_t r = 0; r < mlirOperationGetNumRegions(root); ++r)
      for (MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(root, r));
           !mlirBlockIsNull(b); b = mlirBlockGetNextInRegion(b))
        n += dce_block(b);
    total += n;
    if (!n) break;
  }
  return total;
}
