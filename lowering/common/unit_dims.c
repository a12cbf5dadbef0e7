// Squeezing unit dimensions out of elementwise tile code: tensors of shape
// (M, 1) or (1, N) whose every producer and consumer is elementwise become
// the 1-D tensors (M) / (N) they are.
//
// Why: a Triton kernel writes `tl.sum(x, axis=1, keep_dims=True)` stored
// through `OUT + rm[:, None]`, or `x[:, None]` masks and pointers, and the
// Xe lowering has layouts for 1-D tensors (16 lanes per chunk) and for 2-D
// tiles made of DPAS-sized blocks (16 columns), none for a one-column 2-D
// tile. The same values as 1-D tensors need nothing new.
//
// What is squeezed: the results of elementwise ops (arith, math, addptr,
// pointer casts, load, atomics, broadcast between unit shapes) and the
// operands of those ops and of stores, when every use of such a value is
// another squeezed op. A value also used by a genuinely 2-D consumer (a
// broadcast to (M, N), a dot, a loop's yield) keeps its shape, and so does
// the chain feeding it: nothing is inserted, only types change. Unit-shaped
// operands that come from expand_dims/reshape of a 1-D tensor are replaced
// by that tensor, and from a splat by a 1-D copy of the splat.
//
// A chain that loads (a gather by one index: the document mask's
// `doc[q_idx]` as a (BLOCK_M, 1) column) and ends in a broadcast to
// (M, N) is squeezed too, the broadcast then reading an expand_dims of
// the 1-D result: the Xe lowering gathers the 1-D tensor and broadcasts
// the column or row into its blocks, where a (M, 1) load has no layout.
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>

#include "lowering.h"

static int rank_of(MlirType t) {
  return mlirTypeIsARankedTensor(t) ? (int)mlirShapedTypeGetRank(t) : 0;
}

static bool unit_2d(MlirType t) {
  return rank_of(t) == 2 &&
         (mlirShapedTypeGetDimSize(t, 0) == 1 || mlirShapedTypeGetDimSize(t, 1) == 1);
}

static MlirType squeezed(MlirType t) {
  int64_t n = mlirShapedTypeGetDimSize(t, 0) == 1 ? mlirShapedTypeGetDimSize(t, 1)
                                                   : mlirShapedTypeGetDimSize(t, 0);
  return mlirRankedTensorTypeGet(1, &n, mlirShapedTypeGetElementType(t),
                                 mlirAttributeGetNull());
}

// An op whose unit-shaped operand can be replaced by a 1-D value directly:
// expand_dims / reshape of a 1-D tensor (its operand) and splat (a copy).
static bool is_source(MlirOperation op) {
  if (mlirOperationGetNumResults(op) != 1 ||
      !unit_2d(mlirValueGetType(mlirOperationGetResult(op, 0))))
    return false;
  if (zt_op_named(op, "tile.splat")) return true;
  return (zt_op_named(op, "tile.expand_dims") || zt_op_named(op, "tile.reshape")) &&
         rank_of(mlirValueGetType(mlirOperationGetOperand(op, 0))) == 1;
}

// A reshape of a unit-shaped tensor back to 1-D (tl.squeeze): once its
// operand is squeezed, it is the identity.
static bool is_unsqueeze_sink(MlirOperation op) {
  if (!zt_op_named(op, "tile.reshape") || mlirOperationGetNumResults(op) != 1) return false;
  MlirType in = mlirValueGetType(mlirOperationGetOperand(op, 0));
  MlirType out = mlirValueGetType(mlirOperationGetResult(op, 0));
  return unit_2d(in) && rank_of(out) == 1 &&
         mlirShapedTypeGetDimSize(out, 0) ==
             mlirShapedTypeGetDimSize(in, 0) * mlirShapedTypeGetDimSize(in, 1);
}

// Whether v is computed from a load through elementwise ops (depth-limited:
// gathers' chains are short): unit-shaped v, or with `flat` 1-D v (index
// arithmetic alone is not: the Xe lowering keeps addresses and masks lazy).
static bool loaded(MlirValue v, bool flat, int depth) {
  if (depth > 8 || !mlirValueIsAOpResult(v)) return false;
  MlirType t = mlirValueGetType(v);
  if (flat ? rank_of(t) != 1 : !unit_2d(t)) return false;
  MlirOperation d = mlirOpResultGetOwner(v);
  if (zt_op_named(d, "tile.load")) return true;
  // A loaded 1-D tensor made a column or row (`tl.load(S + rm)[:, None] > 0`):
  // data too, the unit-shaped ops on it as squeezable as a 2-D gather's.
  if (!flat && is_source(d) && !zt_op_named(d, "tile.splat"))
    return loaded(mlirOperationGetOperand(d, 0), true, depth + 1);
  if (mlirOperationGetNumRegions(d) != 0 ||
      !(zt_op_name_has_prefix(d, "arith.") || zt_op_name_has_prefix(d, "math.")))
    return false;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(d); ++i)
    if (loaded(mlirOperationGetOperand(d, i), flat, depth + 1)) return true;
  return false;
}

// A broadcast of a loaded unit-shaped tensor to (M, N) (see the top): its
// operand is squeezed and read back through an expand_dims.
static bool is_broadcast_sink(MlirOperation op, bool rows) {
  if (!zt_op_named(op, "tile.broadcast") || mlirOperationGetNumOperands(op) != 1 ||
      mlirOperationGetNumResults(op) != 1)
    return false;
  MlirType out = mlirValueGetType(mlirOperationGetResult(op, 0));
  MlirValue in = mlirOperationGetOperand(op, 0);
  return rank_of(out) == 2 && !unit_2d(out) && loaded(in, false, 0) &&
         (rows || mlirShapedTypeGetDimSize(mlirValueGetType(in), 1) == 1);
}

// Elementwise over unit-shaped tensors (scalar operands allowed).
static bool is_candidate(MlirOperation op, bool rows) {
  if (is_unsqueeze_sink(op) || is_broadcast_sink(op, rows)) return true;
  if (mlirOperationGetNumRegions(op) != 0) return false;
  static const char* const tile_ops[] = {
      "tile.addptr", "tile.ptr_to_int", "tile.int_to_ptr", "tile.ptr_cast",  "tile.load",
      "tile.store",  "tile.atomic_rmw", "tile.atomic_cas", "tile.broadcast"};
  bool elementwise = (zt_op_name_has_prefix(op, "arith.") || zt_op_name_has_prefix(op, "math.")) &&
                     !zt_op_named(op, "arith.constant");
  for (size_t i = 0; i < sizeof tile_ops / sizeof *tile_ops && !elementwise; ++i)
    elementwise = zt_op_named(op, tile_ops[i]);
  if (!elementwise) return false;
  bool any = false;
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i) {
    MlirType t = mlirValueGetType(mlirOperationGetResult(op, i));
    if (!unit_2d(t)) return false;
    any = true;
  }
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
    MlirType t = mlirValueGetType(mlirOperationGetOperand(op, i));
    if (rank_of(t) == 0) continue;
    if (!unit_2d(t)) return false;
    any = true;
  }
  return any;
}

typedef struct {
  MlirOperation* ops;
  bool* in;  // ops[i] is squeezed
  size_t n, cap;
  bool oom;
  bool rows;  // (1, N) broadcast sinks too
} walk_t;

static MlirWalkResult collect_cb(MlirOperation op, void* user) {
  walk_t* w = user;
  if (!is_candidate(op, w->rows) && !is_source(op)) return MlirWalkResultAdvance;
  if (!zt_op_list_push(&w->ops, &w->n, &w->cap, op)) {
    w->oom = true;
    return MlirWalkResultInterrupt;
  }
  return MlirWalkResultAdvance;
}

// Index of op in w->ops, or -1. Kernels are small: a linear search.
static ptrdiff_t find(const walk_t* w, MlirOperation op) {
  for (size_t i = 0; i < w->n; ++i)
    if (mlirOperationEqual(w->ops[i], op)) return (ptrdiff_t)i;
  return -1;
}

static bool squeezed_op(const walk_t* w, MlirOperation op) {
  ptrdiff_t i = find(w, op);
  return i >= 0 && w->in[i];
}

// Whether candidate ops[i] can stay squeezed given the others.
static bool still_ok(const walk_t* w, size_t i) {
  MlirOperation op = w->ops[i];
  // A sink's result may go anywhere.
  bool sink = is_unsqueeze_sink(op) || is_broadcast_sink(op, w->rows);
  for (intptr_t r = 0; !sink && r < mlirOperationGetNumResults(op); ++r)
    for (MlirOpOperand u = mlirValueGetFirstUse(mlirOperationGetResult(op, r));
         !mlirOpOperandIsNull(u); u = mlirOpOperandGetNextUse(u))
      if (!squeezed_op(w, mlirOpOperandGetOwner(u))) return false;
  for (intptr_t k = 0; k < mlirOperationGetNumOperands(op); ++k) {
    MlirValue v = mlirOperationGetOperand(op, k);
    if (rank_of(mlirValueGetType(v)) == 0) continue;
    if (!mlirValueIsAOpResult(v)) return false;  // a block argument keeps its type
    MlirOperation d = mlirOpResultGetOwner(v);
    if (!is_source(d) && !squeezed_op(w, d)) return false;
  }
  return true;
}

// The 1-D value for a unit-shaped operand produced by source op d.
static MlirValue source_value(MlirOperation d) {
  if (!zt_op_named(d, "tile.splat")) return mlirOperationGetOperand(d, 0);
  // One 1-D copy per splat, right after it (dominates wherever it does);
  // found again through its zt.squeezed_copy marker.
  MlirOperation next = mlirOperationGetNextInBlock(d);
  MlirStringRef mark = mlirStringRefCreateFromCString("zt.squeezed_copy");
  if (!mlirOperationIsNull(next) && zt_op_named(next, "tile.splat") &&
      !mlirAttributeIsNull(mlirOperationGetAttributeByName(next, mark)) &&
      mlirValueEqual(mlirOperationGetOperand(next, 0), mlirOperationGetOperand(d, 0)))
    return mlirOperationGetResult(next, 0);
  MlirOperation copy = mlirOperationClone(d);
  MlirValue r = mlirOperationGetResult(copy, 0);
  mlirValueSetType(r, squeezed(mlirValueGetType(r)));
  mlirOperationSetDiscardableAttributeByName(
      copy, mark, mlirUnitAttrGet(mlirOperationGetContext(d)));
  mlirBlockInsertOwnedOperationAfter(mlirOperationGetBlock(d), d, copy);
  return r;
}

// A new op `name` (in -> t) at op's location, not yet in a block.
static MlirOperation one_operand_op(const char* name, MlirOperation op, MlirValue in, MlirType t) {
  MlirOperationState st =
      mlirOperationStateGet(mlirStringRefCreateFromCString(name), mlirOperationGetLocation(op));
  mlirOperationStateAddOperands(&st, 1, &in);
  mlirOperationStateAddResults(&st, 1, &t);
  return mlirOperationCreate(&st);
}

zt_status_t zt_squeeze_unit_dims(MlirOperation kernel, bool rows, int* out_count) {
  walk_t w = {.rows = rows};
  *out_count = 0;
  mlirOperationWalk(kernel, collect_cb, &w, MlirWalkPreOrder);
  if (!w.oom && w.n) w.in = malloc(w.n * sizeof *w.in);
  if (w.oom || (w.n && !w.in)) {
    free(w.ops);
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "squeezing unit dimensions");
  }
  for (size_t i = 0; i < w.n; ++i) w.in[i] = is_candidate(w.ops[i], rows);
  // Drop candidates with a use or an operand outside the set until stable.
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < w.n; ++i)
      if (w.in[i] && !still_ok(&w, i)) {
        w.in[i] = false;
        changed = true;
      }
  }
  // A broadcast sink whose operand is not squeezed (a source: already an
  // expand_dims of a 1-D tensor) stays as it is.
  // (Which ops are broadcast sinks is settled before any type changes.)
  bool* bsink = calloc(w.n ? w.n : 1, sizeof *bsink);
  if (!bsink) {
    free(w.in);
    free(w.ops);
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "squeezing unit dimensions");
  }
  for (size_t i = 0; i < w.n; ++i) {
    if (!w.in[i] || !is_broadcast_sink(w.ops[i], rows)) continue;
    bsink[i] = true;
    MlirOperation op = w.ops[i];
    if (!squeezed_op(&w, mlirOpResultGetOwner(mlirOperationGetOperand(op, 0)))) {
      w.in[i] = false;
      continue;
    }
    // (M, 1) -> axis 1, (1, N) -> axis 0: the expand_dims made now, while
    // its operand has the unit shape it gives back (the operand's producer
    // is squeezed below).
    MlirValue in = mlirOperationGetOperand(op, 0);
    MlirType ut = mlirValueGetType(in);
    int axis = mlirShapedTypeGetDimSize(ut, 1) == 1 ? 1 : 0;
    MlirContext ctx = mlirOperationGetContext(op);
    MlirType i1 = mlirIntegerTypeGet(ctx, 1);
    if (mlirTypeEqual(mlirShapedTypeGetElementType(ut), i1)) {
      // A loaded column compared before its broadcast (`tl.load(S + rm)[:,
      // None] > 0`): the Xe lowering broadcasts data of 8 bits and more,
      // while 2-D booleans are masks it re-evaluates lazily. The booleans
      // travel as i32 (extui on the 1-D values, truncated back after the
      // broadcast: 0/1 exactly).
      MlirType i32 = mlirIntegerTypeGet(ctx, 32);
      int64_t ushape[2] = {mlirShapedTypeGetDimSize(ut, 0), mlirShapedTypeGetDimSize(ut, 1)};
      MlirType ut32 = mlirRankedTensorTypeGet(2, ushape, i32, mlirAttributeGetNull());
      MlirType u1d32 = squeezed(ut32);
      MlirOperation ext = one_operand_op("arith.extui", op, in, u1d32);
      mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(op), op, ext);
      MlirValue bres = mlirOperationGetResult(op, 0);
      MlirType bt = mlirValueGetType(bres);
      int64_t bshape[2] = {mlirShapedTypeGetDimSize(bt, 0), mlirShapedTypeGetDimSize(bt, 1)};
      mlirValueSetType(bres, mlirRankedTensorTypeGet(2, bshape, i32, mlirAttributeGetNull()));
      MlirOperation tr = one_operand_op("arith.trunci", op, bres, bt);
      mlirBlockInsertOwnedOperationAfter(mlirOperationGetBlock(op), op, tr);
      mlirValueReplaceAllUsesExcept(bres, mlirOperationGetResult(tr, 0), 1, &tr);
      // The expand_dims below takes the 1-D i32 value (already squeezed).
      in = mlirOperationGetResult(ext, 0);
      ut = ut32;
    }
    MlirNamedAttribute ax = mlirNamedAttributeGet(
        mlirIdentifierGet(ctx, mlirStringRefCreateFromCString("axis")),
        mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 32), axis));
    MlirOperationState st = mlirOperationStateGet(
        mlirStringRefCreateFromCString("tile.expand_dims"), mlirOperationGetLocation(op));
    mlirOperationStateAddOperands(&st, 1, &in);
    mlirOperationStateAddResults(&st, 1, &ut);
    mlirOperationStateAddAttributes(&st, 1, &ax);
    MlirOperation ed = mlirOperationCreate(&st);
    // (The Xe lowering holds the result as data: xe_matrix.c's data_cb.)
    mlirOperationSetDiscardableAttributeByName(
        ed, mlirStringRefCreateFromCString("zt.squeezed_gather"), mlirUnitAttrGet(ctx));
    mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(op), op, ed);
    mlirOperationSetOperand(op, 0, mlirOperationGetResult(ed, 0));
  }
  int count = 0;
  for (size_t i = 0; i < w.n; ++i) {
    if (!w.in[i]) continue;
    MlirOperation op = w.ops[i];
    if (bsink[i]) {
      ++count;
      continue;
    }
    for (intptr_t k = 0; k < mlirOperationGetNumOperands(op); ++k) {
      MlirValue v = mlirOperationGetOperand(op, k);
      if (rank_of(mlirValueGetType(v)) != 2) continue;  // scalar, or already squeezed
      MlirOperation d = mlirOpResultGetOwner(v);
      if (is_source(d) && !squeezed_op(&w, d))
        mlirOperationSetOperand(op, k, source_value(d));
    }
    if (is_unsqueeze_sink(op)) {
      // Its result is the squeezed operand; the op goes below.
      mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, 0), mlirOperationGetOperand(op, 0));
      ++count;
      continue;
    }
    for (intptr_t r = 0; r < mlirOperationGetNumResults(op); ++r) {
      MlirValue v = mlirOperationGetResult(op, r);
      mlirValueSetType(v, squeezed(mlirValueGetType(v)));
    }
    ++count;
  }
  // Sinks and sources left without uses go (the Xe lowering would still
  // look at them).
  for (size_t i = 0; i < w.n; ++i) {
    MlirOperation op = w.ops[i];
    if (w.in[i] && is_unsqueeze_sink(op)) {
      mlirOperationDestroy(op);
      continue;
    }
    if (w.in[i] || !is_source(op)) continue;
    if (mlirOpOperandIsNull(mlirValueGetFirstUse(mlirOperationGetResult(op, 0))))
      mlirOperationDestroy(op);
  }
  free(bsink);
  free(w.in);
  free(w.ops);
  *out_count = count;
  if (count && !mlirOperationVerify(kernel))
    return zt_make_status(ZT_STATUS_INTERNAL,
                          "squeezing unit dimensions produced invalid tile IR");
  return NULL;
}
