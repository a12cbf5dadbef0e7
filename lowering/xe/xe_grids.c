// Per-dot subgroup grids in emission (issue 12).
//
// The emitter's records do not carry a grid: which part of a tile a
// subgroup holds follows from the record's role and e->sg_m x e->sg_n
// (tile_origin in xe_matrix.c, and every reduction, store and exchange).
// The layout assignment gives a dot whose output the kernel's grid does not
// cut into whole 8x16 blocks a grid of its own (xe_layout.c dot_grid), and
// every value on that dot's operand chains and after its result carries it
// (xe_layout_t.ctx). Before each op the emitter switches sg_m/sg_n to the
// grid of the op's values, so the dot's loads, DPAS, epilogue and stores
// are emitted on its grid and the rest of the kernel on the kernel's; the
// number of subgroups is the same. Lazy values (indices, masks, pointers)
// are evaluated at their use, on the user's grid. A tile read on another
// grid than the one it was made on would need a conversion between grids
// (SLM, as xe_convert.c does within one grid): refused, naming both.
#include <stdio.h>
#include <string.h>

#include "xe/xe_internal.h"

static bool name_is(MlirOperation op, const char* s) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  return n.length == strlen(s) && memcmp(n.data, s, n.length) == 0;
}

// The grid of a value's layout: its dot's (ctx), or 0x0 for the kernel's
// and for values without storage on a grid (scalars, lazy, 1-D).
static void grid_of(const xe_emitter_t* e, MlirValue v, int g[2]) {
  g[0] = g[1] = 0;
  const xe_layout_t* l = xe_assign_get(e->layouts, v);
  if (!l || l->rank != 2) return;
  if (l->kind != XE_LK_DPAS && l->kind != XE_LK_BLOCKED && l->kind != XE_LK_SLICE) return;
  if (l->ctx[0] > 0 && l->ctx[1] > 0 && (l->ctx[0] != e->kg_m || l->ctx[1] != e->kg_n)) {
    g[0] = l->ctx[0];
    g[1] = l->ctx[1];
  }
}

static bool holds_data(const xe_emitter_t* e, MlirValue v) {
  const xe_layout_t* l = xe_assign_get(e->layouts, v);
  return l && l->rank == 2 &&
         (l->kind == XE_LK_DPAS || l->kind == XE_LK_BLOCKED || l->kind == XE_LK_SLICE);
}

// Tiles whose grid columns hold copies (xe_val_t.col_rep: a 64x16 S^T on
// an 8x2 grid) are read by elementwise ops and dots, which compute the same
// values in every copy; by stores and atomics, which issue from one copy
// (copies_once, xe_matrix.c); and by the built-in reductions, which combine
// each element once (reduce_2d's parts, xe_reduce.c). User-combiner and
// argmin/argmax reductions, scans, lane moves and SLM conversions assume
// parts that do not repeat: refused by name.
static zt_status_t replicas_read(xe_emitter_t* e, MlirOperation op) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  bool ew = (n.length > 6 && memcmp(n.data, "arith.", 6) == 0) ||
            (n.length > 5 && memcmp(n.data, "math.", 5) == 0);
  if (ew || name_is(op, "tile.dot") || name_is(op, "tile.store") ||
      name_is(op, "tile.atomic_rmw") || name_is(op, "tile.atomic_cas"))
    return NULL;
  if (name_is(op, "tile.reduce") && xe_reduce_is_builtin(e, op) && !xe_argreduce_matches(e, op))
    return NULL;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
    const xe_val_t* x = xe_find(e, mlirOperationGetOperand(op, i));
    if (x && x->layout == XE_LAYOUT_BLOCK2D && x->col_rep)
      return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                     "a %lldx%lld tile has fewer 16-column blocks than the %dx%d subgroup "
                     "grid has columns, so each grid column holds a copy; only elementwise "
                     "ops, dots, stores, atomics and built-in reductions read such copies "
                     "on Xe so far (not %.*s)",
                     (long long)x->type.shape[0], (long long)x->type.shape[1], e->sg_m,
                     e->sg_n, (int)n.length, n.data);
  }
  return NULL;
}

zt_status_t xe_op_grid(xe_emitter_t* e, MlirOperation op) {
  if (!e->layouts) return NULL;
  if (!e->kg_m) {
    e->kg_m = e->sg_m > 0 ? e->sg_m : 1;
    e->kg_n = e->sg_n > 0 ? e->sg_n : 1;
  }
  // Control flow: its body's ops switch for themselves.
  if (name_is(op, "scf.for") || name_is(op, "scf.if") || name_is(op, "scf.while") ||
      name_is(op, "scf.yield") || name_is(op, "scf.condition"))
    return NULL;
  int g[2] = {0, 0};
  bool have = false;
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op) && !have; ++i) {
    MlirValue r = mlirOperationGetResult(op, i);
    if (!holds_data(e, r)) continue;
    grid_of(e, r, g);
    have = true;
  }
  if (!have && (name_is(op, "tile.store") || name_is(op, "tile.block_store") ||
                name_is(op, "tile.atomic_rmw") || name_is(op, "tile.atomic_cas"))) {
    intptr_t no = mlirOperationGetNumOperands(op);
    MlirValue v = mlirOperationGetOperand(op, name_is(op, "tile.block_store") ? no - 1 : 1);
    if (holds_data(e, v)) grid_of(e, v, g);
  }
  int sm = g[0] ? g[0] : e->kg_m, sn = g[0] ? g[1] : e->kg_n;
  if (sm * sn != e->kg_m * e->kg_n) {
    sm = e->kg_m;
    sn = e->kg_n;
  }
  // Tiles made on one grid and read on another: no conversion between
  // grids yet. (Only where some dot has a grid of its own: otherwise every
  // data value is on the kernel's grid.)
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
    MlirValue x = mlirOperationGetOperand(op, i);
    if (!holds_data(e, x)) continue;
    // (A lazy record, e.g. the expand_dims of a row statistic, stores
    // nothing on a grid: it is evaluated on its user's.)
    const xe_val_t* xr = xe_find(e, x);
    if (xr && xr->layout == XE_LAYOUT_LAZY) continue;
    int h[2];
    grid_of(e, x, h);
    int xm = h[0] ? h[0] : e->kg_m, xn = h[0] ? h[1] : e->kg_n;
    if (xm != sm || xn != sn)
      return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                     "a tile made on the %dx%d subgroup grid is read on the %dx%d grid of "
                     "another dot on Xe (each dot has its own grid; no conversion between "
                     "grids yet)",
                     xm, xn, sm, sn);
  }
  ZT_RETURN_IF_ERROR(replicas_read(e, op));
  if (sm != e->sg_m || sn != e->sg_n) {
    e->sg_m = sm;
    e->sg_n = sn;
    // Lazy rows evaluated for the other grid's parts.
    xe_matrix_cache_clear(e);
  }
  return NULL;
}
