// A 2-D tile loaded once and read only inside several following loops is
// loaded again inside each of them (issue 12, session 20).
//
// Why: tutorial 06's causal forward runs its KV loop twice (off the diagonal,
// then on it) on one Q tile loaded before both. xe_sink_loads.c moves a
// load read by one following loop into that loop (Q read per KV step, which
// took the forward's Q out of the registers held across its loop), but a
// load that the first loop reads and a later one reads too must stay before
// the first: held across both loops beside the accumulator (pvc, w4 d64: 32
// rows of 64 fp16, 64 registers, with 128 of accumulator). Loaded in each
// loop instead, each loop's copy is placed by the sink at its first reader.
//
// Exact: the copies read the same addresses (their operands are defined
// before the loops) and nothing between the original load and the end of
// the last loop writes memory (no store, atomic, call or barrier in that
// stretch, nested ops included), so each copy reads what the original read.
// ZETILE_XE_RELOAD_PER_LOOP=0 leaves the kernel as it is.
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinTypes.h>

#include "xe/xe_internal.h"

static bool name_has(MlirOperation op, const char* part) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  size_t l = strlen(part);
  for (size_t i = 0; i + l <= n.length; ++i)
    if (memcmp(n.data + i, part, l) == 0) return true;
  return false;
}

static MlirWalkResult find_write(MlirOperation op, void* user) {
  if (name_has(op, "store") || name_has(op, "atomic") || name_has(op, "call") ||
      name_has(op, "barrier") || name_has(op, "print") || name_has(op, "assert") ||
      name_has(op, "scatter")) {
    *(bool*)user = true;
    return MlirWalkResultInterrupt;
  }
  return MlirWalkResultAdvance;
}

static bool writes_memory(MlirOperation op) {
  bool w = false;
  mlirOperationWalk(op, find_write, &w, MlirWalkPreOrder);
  return w;
}

// The ancestor of op that sits in block b (op itself if it does), or null.
static MlirOperation ancestor_in(MlirOperation op, MlirBlock b) {
  while (!mlirOperationIsNull(op)) {
    MlirBlock ob = mlirOperationGetBlock(op);
    if (mlirBlockEqual(ob, b)) return op;
    op = mlirOperationGetParentOperation(op);
  }
  return op;
}

enum { MAX_LOOPS = 8, MAX_USES = 256 };

// The loops (scf.for ops after the load in its block) holding every reader
// of the load; 0 when a reader is elsewhere.
static int reader_loops(MlirOperation load, MlirOperation* loops) {
  MlirBlock b = mlirOperationGetBlock(load);
  int n = 0;
  MlirValue r = mlirOperationGetResult(load, 0);
  for (MlirOpOperand u = mlirValueGetFirstUse(r); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation a = ancestor_in(mlirOpOperandGetOwner(u), b);
    if (mlirOperationIsNull(a) || !zt_op_named(a, "scf.for") ||
        mlirOperationEqual(a, mlirOpOperandGetOwner(u)))
      return 0;  // read outside a loop, or by the for line itself
    int i = 0;
    while (i < n && !mlirOperationEqual(loops[i], a)) ++i;
    if (i == n) {
      if (n == MAX_LOOPS) return 0;
      loops[n++] = a;
    }
  }
  return n;
}

static bool candidate(MlirOperation op) {
  if (!(zt_op_named(op, "tile.load") || zt_op_named(op, "tile.block_load")) ||
      mlirOperationGetNumResults(op) != 1)
    return false;
  MlirType t = mlirValueGetType(mlirOperationGetResult(op, 0));
  if (!mlirTypeIsARankedTensor(t) || mlirShapedTypeGetRank(t) != 2) return false;
  MlirOperation loops[MAX_LOOPS];
  int n = reader_loops(op, loops);
  if (n < 2) return false;
  // Nothing from the load to the last of its loops writes memory.
  int seen = 0;
  for (MlirOperation o = mlirOperationGetNextInBlock(op); !mlirOperationIsNull(o) && seen < n;
       o = mlirOperationGetNextInBlock(o)) {
    if (writes_memory(o)) return false;
    for (int i = 0; i < n; ++i) seen += mlirOperationEqual(o, loops[i]);
  }
  return seen == n;
}

static void reload(MlirOperation load) {
  MlirOperation loops[MAX_LOOPS];
  int n = reader_loops(load, loops);
  MlirValue r = mlirOperationGetResult(load, 0);
  for (int i = 0; i < n; ++i) {
    MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(loops[i], 0));
    MlirOperation copy = mlirOperationClone(load);
    mlirBlockInsertOwnedOperation(body, 0, copy);
    MlirValue c = mlirOperationGetResult(copy, 0);
    // Readers inside this loop read the copy (collected first: the use
    // list changes as operands are set).
    MlirOperation owners[MAX_USES];
    intptr_t nums[MAX_USES];
    int nu = 0;
    for (MlirOpOperand u = mlirValueGetFirstUse(r); !mlirOpOperandIsNull(u) && nu < MAX_USES;
         u = mlirOpOperandGetNextUse(u)) {
      MlirOperation a = ancestor_in(mlirOpOperandGetOwner(u), mlirOperationGetBlock(load));
      if (!mlirOperationIsNull(a) && mlirOperationEqual(a, loops[i])) {
        owners[nu] = mlirOpOperandGetOwner(u);
        nums[nu++] = mlirOpOperandGetOperandNumber(u);
      }
    }
    for (int k = 0; k < nu; ++k) mlirOperationSetOperand(owners[k], nums[k], c);
  }
  if (mlirOpOperandIsNull(mlirValueGetFirstUse(r))) mlirOperationDestroy(load);
}

zt_status_t xe_reload_per_loop(MlirOperation kernel, int* out_count) {
  *out_count = 0;
  const char* env = getenv("ZETILE_XE_RELOAD_PER_LOOP");
  if (env && strcmp(env, "0") == 0) return NULL;
  MlirOperation* ops;
  size_t n;
  if (!zt_op_list_collect(kernel, candidate, &ops, &n))
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe: loads reloaded per loop");
  for (size_t i = 0; i < n; ++i) reload(ops[i]);
  *out_count = (int)n;
  free(ops);
  return NULL;
}
