// 2-D tiles on Xe: the subgroup grid, DPAS (tile.dot), 2-D block IO
// (tile.block_load/block_store -> create_nd_tdesc + load_nd/store_nd with
// prefetch_nd of the next K tile), pointer-tensor loads/stores of 2-D tiles
// as row gathers/scatters, elementwise ops on 2-D float tiles.
//
// Layouts (xe_internal.h): 2-D float tensors are BLOCK2D records, per
// subgroup a grid of instruction-sized blocks: vector<8x16xT> with
// #zt_a = lane_layout [1, 16], lane_data [1, 1] (lane j holds column j of
// the block) and, for the B operand of DPAS, vector<16x16xT> with
// #zt_b = lane_data [2, 1] (VNNI for 16-bit types; upstream's load_nd turns
// it into the transform read). The workgroup's nsg subgroups form a
// sg_m x sg_n grid over the dot's result tile; the A tile is split by rows
// only and the B tile by columns only.
//
// 2-D integer, i1 and pointer tensors (address arithmetic and masks, as
// Triton programs build them from aranges with [:, None] and [None, :]) are
// LAZY: nothing is emitted where they are defined; each load or store
// re-evaluates their def chain for one row (a scalar index) and one 16-lane
// column chunk, giving per-row offsets and masks for xegpu.load/store. A
// loop that advances a pointer tensor by a uniform amount (a_ptrs += BK)
// carries that amount as one i64 scalar.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>

#include "xe/xe_internal.h"

static const char* loc(xe_emitter_t* e) { return e->loc.data ? e->loc.data : ""; }

static bool name_is(MlirStringRef n, const char* s) {
  size_t l = strlen(s);
  return n.length == l && memcmp(n.data, s, l) == 0;
}

static bool op_is(MlirOperation op, const char* s) {
  return !mlirOperationIsNull(op) && name_is(mlirIdentifierStr(mlirOperationGetName(op)), s);
}

static bool has_prefix(MlirStringRef n, const char* s) {
  size_t l = strlen(s);
  return n.length >= l && memcmp(n.data, s, l) == 0;
}

static int value_rank(MlirValue v) {
  MlirType t = mlirValueGetType(v);
  return mlirTypeIsARankedTensor(t) ? (int)mlirShapedTypeGetRank(t) : 0;
}

static int64_t dim(MlirValue v, int d) {
  return mlirShapedTypeGetDimSize(mlirValueGetType(v), d);
}

static int64_t int_attr(MlirOperation op, const char* name, int64_t dflt) {
  MlirAttribute a = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(name));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAInteger(a)) return dflt;
  return mlirIntegerAttrGetValueInt(a);
}

// ---------------------------------------------------------------------------
// Planning: the subgroup grid.

typedef struct plan_s {
  int64_t dot_m, dot_n;    // first tile.dot's result shape (0: none)
  int64_t wide_m, wide_n;  // the dot result of most elements (replication)
  int64_t big_m, big_n;    // largest 2-D float tile otherwise
  bool has_2d;
  bool gather_dot;         // a dot operand comes from a pointer-tensor load
  unsigned along;          // bit a: a 2-D reduce/scan along axis a, or (bit 1) a
                           // column broadcast (M, 1) -> (M, N)
  bool reduce_2d;          // a 2-D reduce/scan
  bool gathered_operand;   // a dot operand read by gathers (not fp32's extra registers)
  xe_emitter_t* e;
} plan_t;

typedef struct ptr_block_s ptr_block_t;
static bool ptr_block_ok(xe_emitter_t* e, MlirOperation op, bool store, ptr_block_t* pb);
static bool gathered(xe_emitter_t* e, MlirOperation load);

static MlirWalkResult plan_cb(MlirOperation op, void* user) {
  plan_t* p = user;
  if ((op_is(op, "tile.reduce") || op_is(op, "tile.scan")) &&
      value_rank(mlirOperationGetOperand(op, 0)) == 2) {
    int64_t a = int_attr(op, "axis", -1);
    if (a == 0 || a == 1) p->along |= 1u << a;
    p->reduce_2d = true;
  }
  if (op_is(op, "tile.broadcast") && value_rank(mlirOperationGetOperand(op, 0)) == 2 &&
      dim(mlirOperationGetOperand(op, 0), 1) == 1)
    p->along |= 2u;
  if (op_is(op, "tile.dot")) {
    for (int i = 0; i < 2; ++i) {
      MlirValue x = mlirOperationGetOperand(op, i);
      if (mlirValueIsAOpResult(x) && op_is(mlirOpResultGetOwner(x), "tile.load") &&
          gathered(p->e, mlirOpResultGetOwner(x)))
        p->gather_dot = p->gathered_operand = true;
      // fp32 operands (and their bf16 pieces) take 2-3x the registers.
      if (mlirTypeIsAF32(mlirShapedTypeGetElementType(mlirValueGetType(x)))) p->gather_dot = true;
    }
  }
  if (op_is(op, "tile.dot") && p->dot_m == 0) {
    MlirValue r = mlirOperationGetResult(op, 0);
    p->dot_m = dim(r, 0);
    p->dot_n = dim(r, 1);
  }
  if (op_is(op, "tile.dot") && value_rank(mlirOperationGetResult(op, 0)) == 2) {
    MlirValue r = mlirOperationGetResult(op, 0);
    if (dim(r, 0) * dim(r, 1) > p->wide_m * p->wide_n) {
      p->wide_m = dim(r, 0);
      p->wide_n = dim(r, 1);
    }
  }
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i) {
    MlirValue r = mlirOperationGetResult(op, i);
    if (value_rank(r) != 2) continue;
    p->has_2d = true;
    MlirType et = mlirShapedTypeGetElementType(mlirValueGetType(r));
    if (mlirTypeIsAInteger(et)) continue;
    if (dim(r, 0) * dim(r, 1) > p->big_m * p->big_n) {
      p->big_m = dim(r, 0);
      p->big_n = dim(r, 1);
    }
  }
  return MlirWalkResultAdvance;
}

// --- Data values: which 2-D integer tensors hold data (see xe_emitter_t).

static bool int2d(MlirValue v) {
  if (value_rank(v) != 2) return false;
  MlirType et = mlirShapedTypeGetElementType(mlirValueGetType(v));
  return mlirTypeIsAInteger(et) && mlirIntegerTypeGetWidth(et) > 1;
}

typedef struct data_walk_s {
  xe_emitter_t* e;
  bool changed;
} data_walk_t;

static void mark(data_walk_t* d, MlirValue v) {
  if (int2d(v) && xe_mark_data(d->e, v)) d->changed = true;
}

static bool any_data(data_walk_t* d, MlirValue* vs, int n) {
  for (int i = 0; i < n; ++i)
    if (vs[i].ptr && xe_is_data(d->e, vs[i])) return true;
  return false;
}

// Whether a value is index arithmetic only: ranges, splats of scalars,
// constants, their expand_dims/broadcasts and elementwise ops over those (no
// load). Such an operand of an op on data (the shift amounts that unpack
// int4 nibbles, (k % 2) * 4 per row) stays lazy: the elementwise emitter
// evaluates it in the data's layout, whatever role that has.
static bool index_only(MlirValue v, int depth) {
  if (depth > 12) return false;
  if (value_rank(v) == 0) return true;
  if (!mlirValueIsAOpResult(v)) return false;
  MlirOperation p = mlirOpResultGetOwner(v);
  if (op_is(p, "tile.make_range") || op_is(p, "arith.constant")) return true;
  if (op_is(p, "tile.splat")) return value_rank(mlirOperationGetOperand(p, 0)) == 0;
  bool ew = (has_prefix(mlirIdentifierStr(mlirOperationGetName(p)), "arith.") &&
             mlirOperationGetNumResults(p) == 1 && mlirOperationGetNumRegions(p) == 0);
  if (!ew && !op_is(p, "tile.expand_dims") && !op_is(p, "tile.broadcast")) return false;
  MlirType et = mlirShapedTypeGetElementType(mlirValueGetType(v));
  if (!mlirTypeIsAInteger(et)) return false;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(p); ++i)
    if (!index_only(mlirOperationGetOperand(p, i), depth + 1)) return false;
  return true;
}

static MlirWalkResult data_cb(MlirOperation op, void* user) {
  data_walk_t* d = user;
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  intptr_t no = mlirOperationGetNumOperands(op), nr = mlirOperationGetNumResults(op);
  if (name_is(n, "tile.dot")) {
    if (int2d(mlirOperationGetOperand(op, 0))) {
      for (intptr_t i = 0; i < no; ++i) mark(d, mlirOperationGetOperand(op, i));
      mark(d, mlirOperationGetResult(op, 0));
    }
  } else if (name_is(n, "tile.block_load") || name_is(n, "tile.load")) {
    if (nr == 1) mark(d, mlirOperationGetResult(op, 0));
  } else if (name_is(n, "tile.expand_dims") && nr == 1 && no == 1 &&
             !mlirAttributeIsNull(mlirOperationGetDiscardableAttributeByName(
                 op, mlirStringRefCreateFromCString("zt.squeezed_gather")))) {
    // A loaded (M, 1) column or (1, N) row squeezed to 1-D (unit_dims.c:
    // the document mask's doc[q_idx]): data, held as pending rows the
    // broadcast resolves (emit_expand_dims_data), not index arithmetic
    // re-evaluated at each access.
    mark(d, mlirOperationGetResult(op, 0));
  } else if (name_is(n, "tile.broadcast") && nr == 1 && no == 1) {
    MlirValue vs[2] = {mlirOperationGetOperand(op, 0), mlirOperationGetResult(op, 0)};
    if (any_data(d, vs, 2))
      for (int i = 0; i < 2; ++i) mark(d, vs[i]);
  } else if (name_is(n, "tile.reduce") && !xe_argreduce_matches(d->e, op) &&
             !xe_reduce_is_builtin(d->e, op)) {
    // A user combiner reads every tensor it reduces as data (one may be a
    // 2-D integer tensor next to the loaded one). argmin/argmax's positions
    // stay index arithmetic.
    for (intptr_t i = 0; i < no; ++i) mark(d, mlirOperationGetOperand(op, i));
  } else if ((name_is(n, "tile.reshape") || name_is(n, "tile.trans")) && nr == 1 && no == 1) {
    // Moved between lanes by xe_reshape.c: blocks of data on both sides,
    // not index arithmetic re-evaluated at each access.
    MlirValue vs[2] = {mlirOperationGetOperand(op, 0), mlirOperationGetResult(op, 0)};
    for (int i = 0; i < 2; ++i)
      if (value_rank(vs[i]) == 2 && dim(vs[i], 0) > 1 && dim(vs[i], 1) > 1) mark(d, vs[i]);
  } else if (name_is(n, "tile.scan") && no > 1) {
    // A tuple scan (user combiner) reads every member as data, as a user
    // reduction does: an index tile built from aranges beside a loaded one
    // gets the loaded one's blocks, not index arithmetic re-evaluated per
    // access (xe_emit_scan_user needs its members held alike).
    for (intptr_t i = 0; i < no; ++i) mark(d, mlirOperationGetOperand(op, i));
    for (intptr_t i = 0; i < nr; ++i) mark(d, mlirOperationGetResult(op, i));
  } else if (name_is(n, "tile.scan") && nr >= 1 && no >= 1) {
    MlirValue vs[2] = {mlirOperationGetOperand(op, 0), mlirOperationGetResult(op, 0)};
    if (any_data(d, vs, 2))
      for (int i = 0; i < 2; ++i) mark(d, vs[i]);
  } else if (name_is(n, "tile.store") || name_is(n, "tile.block_store")) {
    mark(d, mlirOperationGetOperand(op, name_is(n, "tile.store") ? 1 : no - 1));
  } else if (name_is(n, "tile.atomic_rmw") || name_is(n, "tile.atomic_cas")) {
    // The values an atomic stores (and a cas compares): blocks, as stores'.
    for (intptr_t i = 1; i < no && i < 3; ++i) mark(d, mlirOperationGetOperand(op, i));
    if (nr == 1) mark(d, mlirOperationGetResult(op, 0));
  } else if ((has_prefix(n, "arith.") || has_prefix(n, "math.")) && nr == 1 && no <= 3 &&
             mlirOperationGetNumRegions(op) == 0) {
    MlirValue vs[4] = {mlirOperationGetResult(op, 0)};
    for (intptr_t i = 0; i < no; ++i) vs[i + 1] = mlirOperationGetOperand(op, i);
    if (any_data(d, vs, (int)no + 1))
      for (int i = 0; i <= no; ++i)
        if (i == 0 || !index_only(vs[i], 0)) mark(d, vs[i]);
  } else if (name_is(n, "scf.for")) {
    MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
    MlirOperation y = mlirBlockGetTerminator(body);
    for (intptr_t k = 0; k < nr; ++k) {
      MlirValue vs[4] = {mlirOperationGetOperand(op, 3 + k), mlirBlockGetArgument(body, k + 1),
                         mlirOperationGetOperand(y, k), mlirOperationGetResult(op, k)};
      if (any_data(d, vs, 4))
        for (int i = 0; i < 4; ++i) mark(d, vs[i]);
    }
  } else if (name_is(n, "scf.if")) {
    for (intptr_t k = 0; k < nr; ++k) {
      MlirValue vs[3] = {mlirOperationGetResult(op, k)};
      for (int r = 0; r < 2 && r < mlirOperationGetNumRegions(op); ++r) {
        MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r));
        if (mlirBlockIsNull(b)) continue;
        MlirOperation y = mlirBlockGetTerminator(b);
        if (!mlirOperationIsNull(y) && k < mlirOperationGetNumOperands(y))
          vs[1 + r] = mlirOperationGetOperand(y, k);
      }
      if (any_data(d, vs, 3))
        for (int i = 0; i < 3; ++i)
          if (vs[i].ptr) mark(d, vs[i]);
    }
  }
  return MlirWalkResultAdvance;
}

static void find_data_values(xe_emitter_t* e) {
  data_walk_t d = {e, true};
  for (int round = 0; d.changed && round < 32; ++round) {
    d.changed = false;
    mlirOperationWalk(e->lc->kernel, data_cb, &d, MlirWalkPreOrder);
  }
}

// The layout assignment stage (xe_layout.c) on the planner's grid: a dot
// that asks for a grid of rows (its accumulator feeds row reductions or
// another dot's A operand: attention) gets it, and the kernel's one grid
// follows it (the emitter has one grid per kernel so far: the dots of a
// kernel must agree, which the assignment's grids then show).
// ZETILE_DUMP=layouts prints the annotated tile IR to stderr;
// ZETILE_STOP_AFTER=layouts ends the compile there (FileCheck tests).
static zt_status_t assign_layouts(xe_emitter_t* e, int sm, int sn) {
  const xe_target_t* tg = e->target ? e->target : xe_target_find("pvc");
  int grid[2] = {sm, sn};
  xe_assign_t* a = NULL;
  double t0 = zt_timing_now_ms();
  ZT_RETURN_IF_ERROR(xe_assign_layouts(e->lc->kernel, tg, e->lc->options->num_warps, grid, &a));
  int dg[2];
  bool rows = false;
  if (xe_assign_dot_grid(a, dg, &rows) && rows && (dg[0] != sm || dg[1] != sn)) {
    // Blocked tiles take the kernel's grid: assign again on the dot's.
    sm = dg[0];
    sn = dg[1];
    xe_assign_free(a);
    a = NULL;
    ZT_RETURN_IF_ERROR(xe_assign_layouts(e->lc->kernel, tg, e->lc->options->num_warps, dg, &a));
  }
  // The stage's own cost, next to the pipeline's in the artifact's timings.
  zt_timing_record("layout assignment", zt_timing_now_ms() - t0);
  e->layouts = a;
  e->sg_m = sm;
  e->sg_n = sn;
  e->nsg = sm * sn;
  const char* dump = getenv("ZETILE_DUMP");
  if (dump && strstr(dump, "layouts")) {
    zt_strbuf_t sb;
    zt_strbuf_init(&sb);
    xe_assign_dump(a, e->lc->kernel, &sb);
    if (sb.data) fprintf(stderr, "// -----// layouts (%s) //----- //\n%s", tg->name, sb.data);
    zt_strbuf_deinit(&sb);
  }
  const char* stop = getenv("ZETILE_STOP_AFTER");
  if (stop && strcmp(stop, "layouts") == 0)
    return zt_make_status(ZT_STATUS_UNAVAILABLE,
                          "Xe lowering: stopped after layout assignment (ZETILE_STOP_AFTER)");
  return NULL;
}

zt_status_t xe_matrix_plan(xe_emitter_t* e, bool* has_2d) {
  plan_t p = {.e = e};
  mlirOperationWalk(e->lc->kernel, plan_cb, &p, MlirWalkPreOrder);
  find_data_values(e);
  *has_2d = p.has_2d;
  e->sg_m = e->sg_n = 1;
  if (!p.has_2d) return NULL;
  int64_t m = p.dot_m ? p.dot_m : p.big_m, n = p.dot_m ? p.dot_n : p.big_n;
  if (m == 0) return NULL;  // only integer 2-D tensors (addresses)
  int nw = e->lc->options->num_warps;
  // A first dot with fewer 8x16 output blocks than subgroups (Intel's
  // attention backward at 16 warps: 64x16 S^T tiles beside 64x64 dK/dV)
  // takes the grid of the kernel's widest dot, whose rows it splits alike;
  // the grid's columns hold copies of its 16 columns (block_geometry,
  // xe_values.c: columns replicated).
  if (nw > 0 && p.dot_m && m * n < (int64_t)nw * 128 && n % 16 == 0 &&
      p.wide_m * p.wide_n >= (int64_t)nw * 128 && p.wide_m == m) {
    m = p.wide_m;
    n = p.wide_n;
  }
  int64_t sm, sn;
  if (nw > 0) {
    sn = 1;
    while (sn * 2 <= nw && n % (sn * 2 * 16) == 0) sn *= 2;
    sm = nw / sn;
    // A dot without 2-D reductions: the grid whose per-subgroup tile
    // needs the fewest operand registers. Every grid of nw subgroups holds
    // the same accumulator registers (m * n / nw each); a subgroup's A and B
    // per k step take tm * K + K * tn elements, so the smallest tm + tn
    // (columns first, above, gives Intel's 256x256 / 32-warp matmul 128x16
    // tiles: A alone 128 registers beside 128 of accumulators, spilling).
    // Ties go to the tile of fewer rows (a 32x64 tile reads 8 A and 8 B
    // blocks per 32-deep k step, a 64x32 one 16 and 4): Intel's DPAS layout
    // puts that matmul's 32 warps on 8x4 too.
    // Not for gathered operands: measured worse there (E2 pvc, a strided int8
    // GEMM 64x64 at 4 subgroups: 2 x 2 gave 23 scratch sends, columns first 0).
    if (p.dot_m && !p.reduce_2d && !p.gathered_operand) {
      for (int64_t c = 1; c <= nw; c *= 2) {
        int64_t r = nw / c;
        if (r * c != nw || m % (r * 8) || n % (c * 16)) continue;
        if (m % (sm * 8) || n % (sn * 16) || m / r + n / c < m / sm + n / sn ||
            (m / r + n / c == m / sm + n / sn && m / r < m / sm)) {
          sm = r;
          sn = c;
        }
      }
    }
    if (m % (sm * 8) && !(sm == 1 && (m == 1 || m == 2 || m == 4)))
      return zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                            "Xe lowering: num_warps %d does not split a %lldx%lld tile "
                            "into 8x16 blocks",
                            nw, (long long)m, (long long)n);
  } else {
    // Per-subgroup tiles of up to 32x32 (8 DPAS accumulators), grown to
    // 32x64 and 64x64 to stay within 32 subgroups. Dot operands gathered
    // row by row through pointer tensors cost far more registers than block
    // loads (a 16-lane gather per row and column chunk, its addresses and
    // mask): 32x32 and 32x16 tiles spill (pvc, 256 GRF: 101 and 109
    // registers for the 64x64x32 tutorial matmul), 16x16 does not, so those
    // kernels get 16x16 tiles and up to 64 subgroups.
    int64_t cap = p.gather_dot ? 16 : 32, max_sg = p.gather_dot ? XE_MAX_SUBGROUPS : 32;
    int64_t tm = m < cap ? m : cap, tn = n < cap ? n : cap;
    if (tm < 8) tm = 8;
    if (tn < 16) tn = 16;
    while ((m / tm) * (n / tn) > max_sg) {
      if (tn < 64 && tn < n) tn *= 2;
      else tm *= 2;
    }
    sm = m / tm > 0 ? m / tm : 1;
    sn = n / tn > 0 ? n / tn : 1;
    // Narrow tiles (fewer than 16 columns: pairs from tl.join, thin
    // transposes) stay in one subgroup: their reductions along either axis
    // and their lane moves (xe_reshape.c) then need no exchange.
    if (n < 16) sm = sn = 1;
    // Work along one axis only (row statistics, column sums) stays inside a
    // subgroup when the tile is split along the other axis alone, in parts
    // of 16 (the 1-D results then sit where the 1-D layout puts them).
    if (!p.dot_m && sm * sn > 1 && (p.along == 2u || p.along == 1u)) {
      bool rows = p.along == 2u;
      int64_t len = rows ? m : n;
      int64_t parts = len / 16 < 32 ? len / 16 : 32;
      while (parts > 1 && len % (parts * 16)) parts /= 2;
      if (parts < 1) parts = 1;
      sm = rows ? parts : 1;
      sn = rows ? 1 : parts;
    }
  }
  return assign_layouts(e, (int)sm, (int)sn);
}

int xe_matrix_role(xe_emitter_t* e, MlirValue v) {
  // The assignment's dot-operand layouts first (prologue chains computed in
  // the operand's layout, xe_layout.c), then the direct users.
  const xe_layout_t* l = xe_assign_get(e->layouts, v);
  // An A operand's 8x16 places of a 16-bit dot for int8 bits (fp8 or int8
  // converted on the way: slot_variant in xe_layout.c).
  if (l && l->kind == XE_LK_DPAS && l->operand == XE_DPAS_A) {
    MlirType et = mlirShapedTypeGetElementType(mlirValueGetType(v));
    bool i8 = mlirTypeIsAInteger(et) && mlirIntegerTypeGetWidth(et) == 8;
    return i8 && l->block[1] == 16 ? XE_ROLE_AW : XE_ROLE_A;
  }
  // A B operand's places with one element per slot (lane_data [1, 1] where
  // the dot's own layout packs pairs): values of another width on their
  // way to a 16-bit dot (dequantized weights), held as b16 records.
  if (l && l->kind == XE_LK_DPAS && l->operand == XE_DPAS_B)
    return l->lane_data[0] == 1 && l->block[0] == 16 && l->block[1] == 16 ? XE_ROLE_BW
                                                                            : XE_ROLE_B;
  for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation owner = mlirOpOperandGetOwner(u);
    if (!op_is(owner, "tile.dot")) continue;
    unsigned i = mlirOpOperandGetOperandNumber(u);
    if (i == 0) return XE_ROLE_A;
    if (i == 1) return XE_ROLE_B;
  }
  return XE_ROLE_C;
}

// ---------------------------------------------------------------------------
// Small emitters.

static void hoist_i32(xe_emitter_t* e, int64_t v, xe_name_t out) {
  char text[64];
  snprintf(text, sizeof text, "arith.constant %lld : i32", (long long)v);
  xe_hoist(e, text, false, out);
}

static void hoist_index(xe_emitter_t* e, int64_t v, xe_name_t out) {
  char text[64];
  snprintf(text, sizeof text, "arith.constant %lld : index", (long long)v);
  xe_hoist(e, text, false, out);
}

// out = a + b (scalars of type ty), folding a missing a.
static void add_scalar(xe_emitter_t* e, const char* a, const char* b, const char* ty,
                       xe_name_t out) {
  xe_fresh(e, out);
  xe_line(e);
  zt_strbuf_printf(&e->body, "%s = arith.addi %s, %s : %s%s\n", out, a, b, ty, loc(e));
}

// out = a + b on index values, without an add when either is the hoisted
// constant 0 (fewer ops for upstream's distribution, whose time grows with
// them).
static void add_index(xe_emitter_t* e, const char* a, const char* b, xe_name_t out) {
  xe_name_t zero;
  hoist_index(e, 0, zero);
  if (strcmp(b, zero) == 0) memcpy(out, a, XE_NAME_MAX);
  else if (strcmp(a, zero) == 0) memcpy(out, b, XE_NAME_MAX);
  else add_scalar(e, a, b, "index", out);
}

// This subgroup's row/column (i32, hoisted): sg / sg_n and sg % sg_n.
static void sg_coords(xe_emitter_t* e, xe_name_t sgm, xe_name_t sgn) {
  xe_name_t sg, c;
  xe_sg_id_i32(e, sg);
  hoist_i32(e, e->sg_n, c);
  char text[128];
  snprintf(text, sizeof text, "arith.divui %s, %s : i32", sg, c);
  xe_hoist(e, text, false, sgm);
  snprintf(text, sizeof text, "arith.remui %s, %s : i32", sg, c);
  xe_hoist(e, text, false, sgn);
}

// First row and column of this subgroup's part of a tile of the given role
// (i32, hoisted; "" when 0).
static void tile_origin(xe_emitter_t* e, const xe_val_t* v, xe_name_t row, xe_name_t col) {
  row[0] = col[0] = 0;
  if (e->nsg <= 1) return;
  xe_name_t sgm, sgn, c;
  sg_coords(e, sgm, sgn);
  char text[128];
  if (v->role != XE_ROLE_B && e->sg_m > 1) {
    hoist_i32(e, v->tr, c);
    snprintf(text, sizeof text, "arith.muli %s, %s : i32", sgm, c);
    xe_hoist(e, text, false, row);
  }
  if (v->role != XE_ROLE_A && e->sg_n > 1 && !v->col_rep) {
    hoist_i32(e, v->tc, c);
    snprintf(text, sizeof text, "arith.muli %s, %s : i32", sgn, c);
    xe_hoist(e, text, false, col);
  }
}

// origin + k (i32; origin may be "").
static void offset_i32(xe_emitter_t* e, const char* origin, int64_t k, xe_name_t out) {
  xe_name_t c;
  hoist_i32(e, k, c);
  if (!origin[0]) {
    memcpy(out, c, sizeof c);
    return;
  }
  char text[128];
  snprintf(text, sizeof text, "arith.addi %s, %s : i32", origin, c);
  xe_hoist(e, text, false, out);
}


// ---------------------------------------------------------------------------
// Lazy evaluation of address/mask expressions at (row, column chunk).

typedef struct idx_s {
  const char* s;  // i32 scalar name or NULL (0)
  bool lane;      // + lane id (0..15)
  bool known;     // s is the constant c (one subgroup: no run-time origin)
  int64_t c;
  // With lane: 0 adds the lane id; 1 adds 2 * lane, 2 adds 2 * lane + 1
  // (the even / odd column of the pair an int8 A block gives each lane);
  // 3 the pair order of xe_val_t.pairs8, 4 the same along a contiguous row
  // (the gather is marked zt.pairs8: its lane pairs are adjacent).
  int pair;
} idx_t;

// Integer values may stay *split*: a vector part plus a uniform scalar part
// (value = v + broadcast(s)). Address expressions are sums of a per-row
// term (uniform: offs_m[r] * stride) and a per-column term (a vector shared
// by every row); kept apart, each gather adds them right before it uses
// them. Summed eagerly, every row/chunk would own a loop-invariant
// vector<16xi64> that IGC hoists out of the K loop: 64 of them for a 32x32
// fp16 tile, 128 GRF, the spill of the pointer matmul. add, sub and mul by a
// uniform distribute exactly in two's complement; sign extension of a split
// i32 differs from extending the sum only when the i32 sum overflows, i.e.
// for an offset that would address before the base anyway.
typedef struct lval_s {
  xe_name_t v;     // value (ints/i1) or element offset i64 (pointers); when
                   // split, the vector part
  xe_name_t s;     // split: the uniform scalar part (same kind as v)
  xe_name_t base;  // pointers: i64 base address
  bool vec;        // vector<16x..> (else uniform scalar)
  bool split;      // vec and value = v + broadcast(s)
  bool zero;       // v is the constant 0 (a bare pointer's offset)
  zt_scalar_kind_t kind;  // element kind of v (I64 for pointer offsets)
} lval_t;

typedef struct cache_ent_s {
  const void* key;
  char idx[2 * XE_NAME_MAX + 16];
  lval_t val;
} cache_ent_t;

typedef struct cache_s {
  cache_ent_t* ents;
  int n, cap;
} cache_t;

void xe_matrix_cache_clear(xe_emitter_t* e) {
  cache_t* c = e->lazy_cache;
  if (!c) return;
  free(c->ents);
  free(c);
  e->lazy_cache = NULL;
}

static void idx_key(const idx_t* idx, int rank, char* out, size_t n) {
  snprintf(out, n, "%s%c%d|%s%c%d", rank > 0 && idx[0].s ? idx[0].s : "",
           rank > 0 && idx[0].lane ? 'L' : '-', rank > 0 ? idx[0].pair : 0,
           rank > 1 && idx[1].s ? idx[1].s : "", rank > 1 && idx[1].lane ? 'L' : '-',
           rank > 1 ? idx[1].pair : 0);
}

static lval_t* cache_find(xe_emitter_t* e, MlirValue v, const char* key) {
  cache_t* c = e->lazy_cache;
  if (!c) return NULL;
  for (int i = 0; i < c->n; ++i)
    if (c->ents[i].key == v.ptr && strcmp(c->ents[i].idx, key) == 0) return &c->ents[i].val;
  return NULL;
}

static void cache_put(xe_emitter_t* e, MlirValue v, const char* key, const lval_t* val) {
  cache_t* c = e->lazy_cache;
  if (!c) {
    c = calloc(1, sizeof *c);
    if (!c) return;
    e->lazy_cache = c;
  }
  if (c->n == c->cap) {
    int nc = c->cap ? c->cap * 2 : 64;
    cache_ent_t* ne = realloc(c->ents, (size_t)nc * sizeof *ne);
    if (!ne) return;
    c->ents = ne;
    c->cap = nc;
  }
  c->ents[c->n].key = v.ptr;
  snprintf(c->ents[c->n].idx, sizeof c->ents[c->n].idx, "%s", key);
  c->ents[c->n].val = *val;
  ++c->n;
}

static xe_val_t* find_rec(xe_emitter_t* e, MlirValue v) { return xe_find(e, v); }

// vector<16xT> broadcast of the scalar named x, T spelled t ("index", "i1").
static void broadcast_ty(xe_emitter_t* e, const char* x, const char* t, xe_name_t out) {
  xe_fresh(e, out);
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "%s = vector.broadcast %s {layout_result_0 = " XE_LAYOUT_ATTR
                   "} : %s to vector<16x%s>%s\n",
                   out, x, t, t, loc(e));
}

// vector<16xT> broadcast of the scalar named x.
static void broadcast(xe_emitter_t* e, const char* x, zt_scalar_kind_t k, xe_name_t out) {
  broadcast_ty(e, x, xe_block_elem(k), out);
}

// Whether v, the record of the loaded res, is read in pair order at 8
// lanes (xe_val_t.pairs8): a 16-bit dot's A blocks whose every reader is a
// dot taking them as A, so no other op sees the columns out of order (a
// column broadcast, a store, a row reduction would).
static void mark_pairs8(xe_emitter_t* e, MlirValue res, xe_val_t* v) {
  v->pairs8 = false;
  if (e->lanes != 8 || v->layout != XE_LAYOUT_BLOCK2D || v->role != XE_ROLE_A || v->narrow ||
      v->b16 || v->br != 8 || v->bc != 16 ||
      (v->type.kind != ZT_F16 && v->type.kind != ZT_BF16))
    return;
  MlirOpOperand u = mlirValueGetFirstUse(res);
  if (mlirOpOperandIsNull(u)) return;
  for (; !mlirOpOperandIsNull(u); u = mlirOpOperandGetNextUse(u))
    if (!op_is(mlirOpOperandGetOwner(u), "tile.dot") || mlirOpOperandGetOperandNumber(u) != 0)
      return;
  v->pairs8 = true;
}

// out = a <op> b on vector<16 x t>, hoisted to the kernel entry (a and b
// are hoisted too: the lane id and constants).
static void hoist_vbinary(xe_emitter_t* e, const char* op, const char* a, const char* b,
                          const char* t, xe_name_t out) {
  char text[192];
  snprintf(text, sizeof text, "%s %s, %s {layout_result_0 = " XE_LAYOUT_ATTR "} : vector<16x%s>",
           op, a, b, t);
  xe_hoist(e, text, true, out);
}

// The lane's column in a pair-order chunk (xe_val_t.pairs8), lane id l as
// vector<16xT> named l (T spelled t): (2l mod 16) + l / 8, hoisted. (A
// vector.step the distribution turns into 2 * lane + [0, 1] was tried: the
// same 16-bit loads, IGC merges none of them into d32 either way, and 616
// scratch sends against 581 on tl.dot 64x64x32.)
static void pair_order(xe_emitter_t* e, const char* l, const char* t, xe_name_t out) {
  xe_name_t c15, c3, l2, lo, hi;
  xe_vconst(e, "15", t, c15);
  xe_vconst(e, "3", t, c3);
  hoist_vbinary(e, "arith.addi", l, l, t, l2);
  hoist_vbinary(e, "arith.andi", l2, c15, t, lo);
  hoist_vbinary(e, "arith.shrui", l, c3, t, hi);
  hoist_vbinary(e, "arith.ori", lo, hi, t, out);
}

// out = a <op> b on integers of kind k (vectors when vec).
static void int_bin(xe_emitter_t* e, const char* op, const char* a, const char* b,
                    zt_scalar_kind_t k, bool vec, xe_name_t out) {
  xe_fresh(e, out);
  xe_line(e);
  if (vec)
    zt_strbuf_printf(&e->body,
                     "%s = arith.%s %s, %s {layout_result_0 = " XE_LAYOUT_ATTR
                     "} : vector<16x%s>%s\n",
                     out, op, a, b, xe_block_elem(k), loc(e));
  else
    zt_strbuf_printf(&e->body, "%s = arith.%s %s, %s : %s%s\n", out, op, a, b, xe_block_elem(k),
                     loc(e));
}

// Makes l a plain vector: broadcasts a scalar, sums a split value's parts.
static void to_vec(xe_emitter_t* e, lval_t* l) {
  if (l->vec && !l->split) return;
  xe_name_t b;
  broadcast(e, l->split ? l->s : l->v, l->kind, b);
  if (!l->split) {
    memcpy(l->v, b, sizeof b);
    l->vec = true;
    return;
  }
  xe_name_t sum;
  int_bin(e, "addi", l->v, b, l->kind, true, sum);
  memcpy(l->v, sum, sizeof sum);
  l->split = false;
}

static zt_status_t lazy_eval(xe_emitter_t* e, MlirValue v, const idx_t* idx, lval_t* out);
static void lane_value(xe_emitter_t* e, const xe_val_t* s, int64_t i, xe_name_t out);
static zt_status_t lazy_eval_i64(xe_emitter_t* e, MlirValue v, const idx_t* idx, lval_t* out);

static zt_status_t kind_of(xe_emitter_t* e, MlirValue v, zt_scalar_kind_t* k) {
  zt_type_t t;
  ZT_RETURN_IF_ERROR(xe_tile_type(e, mlirValueGetType(v), &t));
  *k = t.kind;
  return NULL;
}

static const char g_extsi_tag;  // cache key of extsi_name's memo entries


static void extsi_name(xe_emitter_t* e, const char* x, zt_scalar_kind_t k, bool vec,
                       xe_name_t out) {
  // Memoized per op: rows share their column part, extended once.
  MlirValue tag = {&g_extsi_tag};
  lval_t* hit = cache_find(e, tag, x);
  if (hit) {
    memcpy(out, hit->v, sizeof hit->v);
    return;
  }
  xe_fresh(e, out);
  xe_line(e);
  if (vec)
    zt_strbuf_printf(&e->body,
                     "%s = arith.extsi %s {layout_result_0 = " XE_LAYOUT_ATTR
                     "} : vector<16x%s> to vector<16xi64>%s\n",
                     out, x, xe_block_elem(k), loc(e));
  else
    zt_strbuf_printf(&e->body, "%s = arith.extsi %s : %s to i64%s\n", out, x, xe_block_elem(k),
                     loc(e));
  lval_t memo = {.vec = vec, .kind = ZT_I64};
  memcpy(memo.v, out, sizeof memo.v);
  cache_put(e, tag, x, &memo);
}

// Sign-extends an integer lval to i64 (a split value part by part).
static void to_i64(xe_emitter_t* e, lval_t* l) {
  if (l->kind == ZT_I64) return;
  xe_name_t x;
  extsi_name(e, l->v, l->kind, l->vec, x);
  memcpy(l->v, x, sizeof x);
  if (l->split) {
    extsi_name(e, l->s, l->kind, false, x);
    memcpy(l->s, x, sizeof x);
  }
  l->kind = ZT_I64;
}

// The vector and uniform parts of an integer lval (NULL: absent).
static const char* vec_part(const lval_t* l) { return l->vec ? l->v : NULL; }
static const char* uni_part(const lval_t* l) {
  return l->split ? l->s : (l->vec ? NULL : l->v);
}

// out = a + b (a - b when sub; then b has no vector part) on integers of
// one kind, keeping vector and uniform parts apart.
static void add_split(xe_emitter_t* e, lval_t* a, lval_t* b, bool sub, lval_t* out) {
  if (a->zero && !sub) {
    // 0 + b: b itself, with a's base address.
    xe_name_t base;
    memcpy(base, a->base, sizeof base);
    *out = *b;
    memcpy(out->base, base, sizeof base);
    return;
  }
  zt_scalar_kind_t k = a->kind;
  const char *av = vec_part(a), *bv = vec_part(b), *as = uni_part(a), *bs = uni_part(b);
  lval_t r = {.kind = k};
  memcpy(r.base, a->base, sizeof r.base);
  if (av && bv) int_bin(e, "addi", av, bv, k, true, r.v);
  else if (av || bv) snprintf(r.v, sizeof r.v, "%s", av ? av : bv);
  xe_name_t sc = {0};
  if (as && bs) int_bin(e, sub ? "subi" : "addi", as, bs, k, false, sc);
  else if (bs && sub) {
    xe_name_t z;
    char text[64];
    snprintf(text, sizeof text, "arith.constant 0 : %s", xe_block_elem(k));
    xe_hoist(e, text, false, z);
    int_bin(e, "subi", z, bs, k, false, sc);
  } else if (as || bs) snprintf(sc, sizeof sc, "%s", as ? as : bs);
  if (av || bv) {
    r.vec = true;
    if (sc[0]) {
      r.split = true;
      memcpy(r.s, sc, sizeof sc);
    }
  } else {
    memcpy(r.v, sc, sizeof sc);
  }
  *out = r;
}

static void add_i64(xe_emitter_t* e, lval_t* a, lval_t* b, lval_t* out) {
  add_split(e, a, b, false, out);
}

// a * c for a uniform c: each part times c.
static void mul_split(xe_emitter_t* e, lval_t* a, const char* c, lval_t* out) {
  zt_scalar_kind_t k = a->kind;
  lval_t r = {.kind = k, .vec = a->vec, .split = a->split};
  if (a->vec) {
    xe_name_t cb;
    broadcast(e, c, k, cb);
    int_bin(e, "muli", a->v, cb, k, true, r.v);
  } else {
    int_bin(e, "muli", a->v, c, k, false, r.v);
  }
  if (a->split) int_bin(e, "muli", a->s, c, k, false, r.s);
  *out = r;
}

// arith.addi/subi/muli/extsi of integer lvals that involve a vector and a
// uniform part: computed split (see lval_t). false: not such a case.
static zt_status_t eval_split(xe_emitter_t* e, MlirOperation op, MlirStringRef n,
                              const idx_t* idx, lval_t* out, bool* done) {
  *done = false;
  bool add = name_is(n, "arith.addi"), sub = name_is(n, "arith.subi"),
       mul = name_is(n, "arith.muli"), ext = name_is(n, "arith.extsi");
  if (!(add || sub || mul || ext)) return NULL;
  lval_t a, b;
  ZT_RETURN_IF_ERROR(lazy_eval(e, mlirOperationGetOperand(op, 0), idx, &a));
  if (e->error) return NULL;
  if (!zt_scalar_kind_is_int(a.kind) || a.kind == ZT_I1) return NULL;
  if (ext) {
    if (!a.split) return NULL;
    zt_scalar_kind_t rk;
    ZT_RETURN_IF_ERROR(kind_of(e, mlirOperationGetResult(op, 0), &rk));
    if (rk != ZT_I64) return NULL;
    *out = a;
    to_i64(e, out);
    *done = true;
    return NULL;
  }
  ZT_RETURN_IF_ERROR(lazy_eval(e, mlirOperationGetOperand(op, 1), idx, &b));
  if (e->error) return NULL;
  if (mul) {
    // Distribute a uniform factor over a split value.
    if (a.split && !b.vec) mul_split(e, &a, b.v, out);
    else if (b.split && !a.vec) mul_split(e, &b, a.v, out);
    else return NULL;
    *done = true;
    return NULL;
  }
  bool mixed = a.split || b.split || (a.vec != b.vec);
  if (!mixed || (sub && b.vec)) return NULL;
  add_split(e, &a, &b, sub, out);
  *done = true;
  return NULL;
}

static zt_status_t eval_op(xe_emitter_t* e, MlirValue v, const idx_t* idx, lval_t* out) {
  memset(out, 0, sizeof *out);
  if (!mlirValueIsAOpResult(v))
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "a 2-D address or mask built from a loop-carried value (only "
                   "uniform pointer advances are supported on Xe)");
  MlirOperation op = mlirOpResultGetOwner(v);
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  int rank = value_rank(v);
  if (name_is(n, "tile.make_range")) {
    int64_t start = int_attr(op, "start", 0);
    const idx_t* i = &idx[0];
    xe_name_t c;
    hoist_i32(e, start, c);
    xe_name_t s;
    if (i->s) add_scalar(e, i->s, c, "i32", s);
    else memcpy(s, c, sizeof s);
    out->kind = ZT_I32;
    if (!i->lane) {
      memcpy(out->v, s, sizeof s);
      return NULL;
    }
    xe_name_t lane;
    xe_lane_i32(e, lane);
    if (i->pair >= 3) {
      xe_name_t po;
      pair_order(e, lane, "i32", po);
      memcpy(lane, po, sizeof lane);
    } else if (i->pair) {
      // 2 * lane (+ 1): hoisted with the lane id, one vector per parity.
      char text[192];
      xe_name_t k, l2;
      snprintf(text, sizeof text,
               "arith.constant {layout_result_0 = " XE_LAYOUT_ATTR "} dense<%d> : vector<16xi32>",
               i->pair == 1 ? 0 : 1);
      xe_hoist(e, text, true, k);
      snprintf(text, sizeof text,
               "arith.addi %s, %s {layout_result_0 = " XE_LAYOUT_ATTR "} : vector<16xi32>", lane,
               lane);
      xe_hoist(e, text, true, l2);
      snprintf(text, sizeof text,
               "arith.addi %s, %s {layout_result_0 = " XE_LAYOUT_ATTR "} : vector<16xi32>", l2, k);
      xe_hoist(e, text, true, lane);
    }
    lval_t b = {.vec = false, .kind = ZT_I32};
    memcpy(b.v, s, sizeof s);
    to_vec(e, &b);
    xe_fresh(e, out->v);
    xe_line(e);
    zt_strbuf_printf(&e->body,
                     "%s = arith.addi %s, %s {layout_result_0 = " XE_LAYOUT_ATTR
                     "} : vector<16xi32>%s\n",
                     out->v, lane, b.v, loc(e));
    out->vec = true;
    return NULL;
  }
  if (name_is(n, "tile.splat")) {
    xe_val_t* s = xe_lookup(e, mlirOperationGetOperand(op, 0));
    if (!s) return NULL;
    if (s->type.kind == ZT_PTR) {
      memcpy(out->base, s->names[0], sizeof out->base);
      xe_hoist(e, "arith.constant 0 : i64", false, out->v);
      out->kind = ZT_I64;
      out->zero = true;
    } else {
      memcpy(out->v, s->names[0], sizeof out->v);
      out->kind = s->type.kind;
    }
    return NULL;
  }
  if (name_is(n, "tile.broadcast")) {
    MlirValue src = mlirOperationGetOperand(op, 0);
    idx_t si[2] = {{0}, {0}};
    for (int d = 0; d < rank; ++d)
      if (dim(src, d) != 1) si[d] = idx[d];
    return lazy_eval(e, src, si, out);
  }
  if (name_is(n, "tile.expand_dims") ||
      (name_is(n, "tile.reshape") && value_rank(mlirOperationGetOperand(op, 0)) == 1 &&
       rank == 2 && (dim(v, 0) == 1 || dim(v, 1) == 1))) {
    MlirValue src = mlirOperationGetOperand(op, 0);
    // A reshape of n elements to (n, 1) / (1, n) is an expand_dims.
    int axis = name_is(n, "tile.reshape") ? (dim(v, 0) == 1 ? 0 : 1)
                                          : (int)int_attr(op, "axis", 0);
    if (value_rank(src) != 1 || rank != 2)
      return xe_fail(e, ZT_STATUS_UNSUPPORTED, "expand_dims beyond 1-D -> 2-D");
    idx_t si[2] = {idx[axis == 0 ? 1 : 0], {0}};
    return lazy_eval(e, src, si, out);
  }
  if (name_is(n, "tile.trans") && rank == 2) {
    // Element (i, j) of a transpose is element (j, i) of its operand (the
    // lane index moves to the operand's rows: a gather of addresses).
    idx_t si[2] = {idx[1], idx[0]};
    return lazy_eval(e, mlirOperationGetOperand(op, 0), si, out);
  }
  if (name_is(n, "tile.addptr")) {
    lval_t p, o;
    ZT_RETURN_IF_ERROR(lazy_eval(e, mlirOperationGetOperand(op, 0), idx, &p));
    ZT_RETURN_IF_ERROR(lazy_eval_i64(e, mlirOperationGetOperand(op, 1), idx, &o));
    if (e->error) return NULL;
    add_i64(e, &p, &o, out);
    memcpy(out->base, p.base, sizeof out->base);
    return NULL;
  }
  if (has_prefix(n, "arith.")) {
    bool done;
    ZT_RETURN_IF_ERROR(eval_split(e, op, n, idx, out, &done));
    if (done || e->error) return NULL;
  }
  if ((has_prefix(n, "arith.") || has_prefix(n, "math.")) &&
      mlirOperationGetNumResults(op) == 1 && mlirOperationGetNumOperands(op) <= 3) {
    intptr_t no = mlirOperationGetNumOperands(op);
    lval_t ops[3];
    bool vec = false;
    for (intptr_t i = 0; i < no; ++i) {
      ZT_RETURN_IF_ERROR(lazy_eval(e, mlirOperationGetOperand(op, i), idx, &ops[i]));
      if (e->error) return NULL;
      vec |= ops[i].vec;
    }
    zt_scalar_kind_t rk;
    ZT_RETURN_IF_ERROR(kind_of(e, v, &rk));
    xe_val_t recs[3];
    xe_val_t* rp[3];
    for (intptr_t i = 0; i < no; ++i) {
      if (vec) to_vec(e, &ops[i]);
      memset(&recs[i], 0, sizeof recs[i]);
      recs[i].layout = vec ? XE_LAYOUT_ROW16 : XE_LAYOUT_SCALAR;
      recs[i].type = vec ? zt_type_tensor(zt_type_scalar(ops[i].kind), 1, (int64_t[]){16})
                         : zt_type_scalar(ops[i].kind);
      recs[i].nchunks = 1;
      recs[i].names = &ops[i].v;
      rp[i] = &recs[i];
    }
    // Inherent attributes (predicate etc.) in generic form.
    zt_strbuf_t props;
    zt_strbuf_init(&props);
    static const char* const pn[] = {"predicate", "overflowFlags", "fastmath"};
    int np = 0;
    for (size_t i = 0; i < 3; ++i) {
      MlirAttribute a = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(pn[i]));
      if (mlirAttributeIsNull(a)) continue;
      zt_strbuf_puts(&props, np++ ? ", " : "<{");
      zt_strbuf_printf(&props, "%s = ", pn[i]);
      char buf[256];
      zt_strbuf_t tmp;
      zt_strbuf_init(&tmp);
      xe_print_attr(a, &tmp);
      snprintf(buf, sizeof buf, "%s", tmp.data ? tmp.data : "");
      zt_strbuf_deinit(&tmp);
      zt_strbuf_puts(&props, buf);
    }
    if (np) zt_strbuf_puts(&props, "}>");
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)n.length, n.data);
    zt_type_t rt = vec ? zt_type_tensor(zt_type_scalar(rk), 1, (int64_t[]){16})
                       : zt_type_scalar(rk);
    xe_val_t* r = NULL;
    int save_nsg = e->nsg;
    e->nsg = 1;  // a 16-lane temporary, never split
    zt_status_t s = xe_emit_elementwise(e, name, props.data, rp, (int)no, rt, &r);
    e->nsg = save_nsg;
    zt_strbuf_deinit(&props);
    ZT_RETURN_IF_ERROR(s);
    if (!r) return NULL;
    memcpy(out->v, r->names[0], sizeof out->v);
    out->vec = vec;
    out->kind = rk;
    xe_free_val(r);
    return NULL;
  }
  return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                 "a 2-D address or mask computed with %.*s (Xe evaluates "
                 "make_range/splat/broadcast/expand_dims/arith/addptr chains)",
                 (int)n.length, n.data);
}

// Whether eval_op re-evaluates the 1-D value v from its definition (index
// arithmetic); other 1-D values (loads, reductions, reshapes, loop results)
// are read as data.
static bool recomputable(MlirValue v) {
  if (!mlirValueIsAOpResult(v)) return false;
  MlirOperation op = mlirOpResultGetOwner(v);
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  return name_is(n, "tile.make_range") || name_is(n, "tile.splat") ||
         name_is(n, "tile.addptr") ||
         ((has_prefix(n, "arith.") || has_prefix(n, "math.")) &&
          mlirOperationGetNumRegions(op) == 0);
}

static void lane_value_at(xe_emitter_t* e, const xe_val_t* s, const char* idx, xe_name_t out);

static zt_status_t lazy_eval(xe_emitter_t* e, MlirValue v, const idx_t* idx, lval_t* out) {
  int rank = value_rank(v);
  xe_val_t* rec = find_rec(e, v);
  if (rank == 0) {
    memset(out, 0, sizeof *out);
    if (!rec) {
      xe_lookup(e, v);
      return NULL;
    }
    if (rec->type.kind == ZT_PTR) {
      memcpy(out->base, rec->names[0], sizeof out->base);
      xe_hoist(e, "arith.constant 0 : i64", false, out->v);
      out->kind = ZT_I64;
      out->zero = true;
    } else {
      memcpy(out->v, rec->names[0], sizeof out->v);
      out->kind = rec->type.kind;
    }
    return NULL;
  }
  char key[2 * XE_NAME_MAX + 16];
  idx_key(idx, rank, key, sizeof key);
  lval_t* hit = cache_find(e, v, key);
  if (hit) {
    *out = *hit;
    return NULL;
  }
  if (rank == 1 && rec && rec->layout == XE_LAYOUT_ROW16 && rec->type.kind != ZT_PTR &&
      !recomputable(v)) {
    // A 1-D value holding data (a loaded row broadcast over a 2-D tile, a
    // row of ranks compared with its transpose): at a position known at
    // compile time, its chunk, or one element as a uniform scalar.
    const idx_t* i = &idx[0];
    int64_t chunk = i->known ? i->c / 16 : -1;
    // A row position known only at run time (the rows of a tile split over
    // several subgroups): one element as a uniform scalar, its chunk picked
    // by selects (lane_value_at) -- the token ids of a gathered MoE GEMM's
    // rows, a row's argmax compared with the columns. A 1-D value split
    // across subgroups is read from its whole copy (xe_gather_index_rows);
    // lane-varying run-time positions stay refused.
    bool at_run_time = !i->known && !i->lane && i->s;
    if (rec->dist) {
      for (int w = 0; w < e->nwholes; ++w)
        if (e->whole_keys[w] == v.ptr) rec = e->whole_vals[w];
    }
    if (rec->dist || (!i->known && !at_run_time) || (i->lane && i->c % 16) || i->pair ||
        chunk >= rec->nchunks)
      return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                     "2-D index arithmetic reading a 1-D value at a position known only at "
                     "run time on Xe");
    memset(out, 0, sizeof *out);
    out->kind = rec->type.kind;
    if (at_run_time) {
      lane_value_at(e, rec, i->s, out->v);
    } else if (i->lane) {
      memcpy(out->v, rec->names[chunk], sizeof out->v);
      out->vec = true;
    } else if (rec->type.kind != ZT_I1) {
      // Element c in every lane: a lane shuffle, not a uniform scalar
      // (upstream's distribution slows down sharply with those: a 64-element
      // tl.sort took minutes).
      xe_lane_shuffle(e, rec->type.kind, rec->names[chunk], "idx", (int)(i->c % 16), out->v);
      out->vec = true;
    } else {
      lane_value(e, rec, i->c, out->v);
    }
  } else if (rank == 2 && rec && rec->layout == XE_LAYOUT_BLOCK2D && e->lazy_at.set &&
             !idx[0].pair && !idx[1].pair && rec->bc == 16 && rec->br == e->lazy_at.br && rec->nbr == e->lazy_at.nbr &&
             rec->nbc == e->lazy_at.nbc && rec->type.kind != ZT_PTR) {
    // 2-D data inside a mask or index expression, laid out like the blocks
    // being built: the same row of its own block.
    memset(out, 0, sizeof *out);
    xe_block_row(e, rec, e->lazy_at.bi, e->lazy_at.bj, e->lazy_at.rr, out->v);
    out->vec = true;
    out->kind = rec->type.kind;
  } else if (rec && rec->layout == XE_LAYOUT_LAZY && !mlirValueEqual(rec->root, v)) {
    // A moved pointer tensor: its root's value plus the uniform offset.
    lval_t r, d = {.vec = false, .kind = ZT_I64};
    ZT_RETURN_IF_ERROR(lazy_eval(e, rec->root, idx, &r));
    if (e->error) return NULL;
    memcpy(d.v, rec->names[0], sizeof d.v);
    add_i64(e, &r, &d, out);
    memcpy(out->base, r.base, sizeof out->base);
  } else {
    ZT_RETURN_IF_ERROR(eval_op(e, v, idx, out));
    if (e->error) return NULL;
  }
  cache_put(e, v, key, out);
  return NULL;
}

// lazy_eval, sign-extended to i64; cached too, so that the column part of
// an address is extended once per chunk, not once per row.
static zt_status_t lazy_eval_i64(xe_emitter_t* e, MlirValue v, const idx_t* idx, lval_t* out) {
  int rank = value_rank(v);
  char key[2 * XE_NAME_MAX + 16];
  idx_key(idx, rank, key, sizeof key);
  strcat(key, "#i64");
  lval_t* hit = rank ? cache_find(e, v, key) : NULL;
  if (hit) {
    *out = *hit;
    return NULL;
  }
  ZT_RETURN_IF_ERROR(lazy_eval(e, v, idx, out));
  if (e->error) return NULL;
  to_i64(e, out);
  if (rank) cache_put(e, v, key, out);
  return NULL;
}

// ---------------------------------------------------------------------------
// Ops.

static bool is_const_one(MlirValue v, int depth) {
  if (depth > 8) return false;
  if (mlirValueIsAOpResult(v)) {
    MlirOperation op = mlirOpResultGetOwner(v);
    if (op_is(op, "arith.constant")) return int_attr(op, "value", 0) == 1;
    if (op_is(op, "arith.extsi") || op_is(op, "arith.extui") || op_is(op, "arith.index_cast"))
      return is_const_one(mlirOperationGetOperand(op, 0), depth + 1);
    return false;
  }
  // A loop-invariant iteration argument: its initial value.
  MlirBlock b = mlirBlockArgumentGetOwner(v);
  MlirOperation parent = mlirBlockGetParentOperation(b);
  if (!op_is(parent, "scf.for")) return false;
  intptr_t i = mlirBlockArgumentGetArgNumber(v);
  if (i < 1) return false;
  MlirOperation term = mlirBlockGetTerminator(b);
  if (!mlirValueEqual(mlirOperationGetOperand(term, i - 1), v)) return false;
  return is_const_one(mlirOperationGetOperand(parent, 3 + i - 1), depth + 1);
}

bool xe_value_is_one(MlirValue v) { return is_const_one(v, 0); }

static bool in_loop(MlirOperation op) {
  for (MlirOperation p = mlirOperationGetParentOperation(op); !mlirOperationIsNull(p);
       p = mlirOperationGetParentOperation(p)) {
    if (op_is(p, "scf.for") || op_is(p, "scf.while")) return true;
    if (op_is(p, "func.func")) return false;
  }
  return false;
}

// Element type of a 2-D block vector in memory operations (bf16 travels
// as i16 bits through gathers and scatters).
static const char* mem_elem(zt_scalar_kind_t k) { return xe_elem(k); }

static void cast_index(xe_emitter_t* e, const char* x, const char* from, xe_name_t out) {
  xe_fresh(e, out);
  xe_line(e);
  zt_strbuf_printf(&e->body, "%s = arith.index_cast %s : %s to index%s\n", out, x, from,
                   loc(e));
}

// 2D block IO needs a 64-byte aligned base address: the base goes down to
// the 64-byte boundary and the columns move right by the difference (in
// elements: the base is element aligned), as Intel's Triton does. Columns
// left of the tensor then read memory before it instead of zeros; only
// negative column offsets could reach them. out: the aligned base (i64) and
// the difference in elements (index).
void xe_align_base(xe_emitter_t* e, const char* addr, zt_scalar_kind_t k, xe_name_t base,
                   xe_name_t delta) {
  xe_name_t m64, dlt, esz, dltel;
  char text[96];
  xe_hoist(e, "arith.constant -64 : i64", false, m64);
  snprintf(text, sizeof text, "arith.constant %d : i64", zt_scalar_kind_bits(k) / 8);
  xe_hoist(e, text, false, esz);
  xe_fresh(e, base);
  xe_line(e);
  zt_strbuf_printf(&e->body, "%s = arith.andi %s, %s : i64%s\n", base, addr, m64, loc(e));
  xe_fresh(e, dlt);
  xe_line(e);
  zt_strbuf_printf(&e->body, "%s = arith.subi %s, %s : i64%s\n", dlt, addr, base, loc(e));
  xe_fresh(e, dltel);
  xe_line(e);
  zt_strbuf_printf(&e->body, "%s = arith.divui %s, %s : i64%s\n", dltel, dlt, esz, loc(e));
  cast_index(e, dltel, "i64", delta);
}

// emit_nd_blocks at fewer than 16 lanes (dg2's SIMD8 DPAS path): each block
// row is one 16-element gather (scatter) masked by the descriptor's bounds,
// lanes outside [0, s0) x [0, s1) reading zeros as the block message does.
// The compat library's 2-D block emulation is 16-lane (an 8-lane store of an
// 8x16 f32 block wrote 8 of its 16 columns) and Xe-HPG has no 2-D block
// messages; the per-row form is what the pointer path gathers at 8 lanes.
// addr is the element-aligned base (no 64-byte alignment needed).
static void nd_blocks_by_rows(xe_emitter_t* e, xe_val_t* v, zt_type_t t, bool store,
                              const char* addr, const char* s0, const char* s1,
                              const char* st0, const char* o0, const char* o1, int32_t bi0,
                              int32_t bi1, int32_t bj0, int32_t bj1) {
  const char* mt = mem_elem(t.kind);
  const char* attr = xe_layout_attr(v);
  bool bf = t.kind == ZT_BF16;  // bf16 rows travel as i16 bits (xe_emit.c)
  xe_name_t step, zix, s1v, zrow, izero;
  xe_lane_index(e, step);
  if (v->pairs8 && !store) {
    xe_name_t po;
    pair_order(e, step, "index", po);
    memcpy(step, po, sizeof step);
  }
  xe_zero_offsets(e, zix);
  hoist_index(e, 0, izero);
  char text[192];
  snprintf(text, sizeof text, "arith.constant {layout_result_0 = " XE_LAYOUT_ATTR
                              "} dense<%s> : vector<16x%s>",
           zt_scalar_kind_is_float(t.kind) && !bf ? "0.0" : "0", mt);
  xe_hoist(e, text, true, zrow);
  broadcast_ty(e, s1, "index", s1v);
  for (int32_t bj = bj0; bj < bj1; ++bj) {
    // Columns of this block (one per lane element) and their bound.
    xe_name_t cj, c0, cb, cols, cin, cge, cok;
    hoist_index(e, (int64_t)(bj - bj0) * v->bc, cj);
    add_index(e, o1, cj, c0);
    broadcast_ty(e, c0, "index", cb);
    xe_vbinary(e, "arith.addi", cb, step, "index", cols);
    xe_vbinary(e, "arith.cmpi slt,", cols, s1v, "index", cin);
    xe_vbinary(e, "arith.cmpi sge,", cols, zix, "index", cge);
    xe_vbinary(e, "arith.andi", cin, cge, "i1", cok);
    for (int32_t bi = bi0; bi < bi1; ++bi) {
      const char* nm = v->names[bi * v->nbc + bj];
      xe_name_t acc, blk;
      if (store) {
        snprintf(blk, sizeof blk, "%s", nm);
        if (bf) {
          xe_fresh(e, blk);
          xe_line(e);
          zt_strbuf_printf(&e->body,
                           "%s = arith.bitcast %s {layout_result_0 = %s} : vector<%dx16xbf16> "
                           "to vector<%dx16xi16>%s\n",
                           blk, nm, attr, v->br, v->br, loc(e));
        }
      } else {
        snprintf(text, sizeof text,
                 "arith.constant {layout_result_0 = %s} dense<%s> : vector<%dx16x%s>", attr,
                 zt_scalar_kind_is_float(t.kind) && !bf ? "0.0" : "0", v->br, mt);
        xe_hoist(e, text, true, acc);
      }
      for (int r = 0; r < v->br; ++r) {
        xe_name_t ri, row, rlt, rge, rok, rokv, mask, roff, roffv, offs;
        hoist_index(e, (int64_t)(bi - bi0) * v->br + r, ri);
        add_index(e, o0, ri, row);
        xe_fresh(e, rlt);
        xe_line(e);
        zt_strbuf_printf(&e->body, "%s = arith.cmpi slt, %s, %s : index%s\n", rlt, row, s0,
                         loc(e));
        xe_fresh(e, rge);
        xe_line(e);
        zt_strbuf_printf(&e->body, "%s = arith.cmpi sge, %s, %s : index%s\n", rge, row, izero,
                         loc(e));
        xe_fresh(e, rok);
        xe_line(e);
        zt_strbuf_printf(&e->body, "%s = arith.andi %s, %s : i1%s\n", rok, rlt, rge, loc(e));
        broadcast_ty(e, rok, "i1", rokv);
        xe_vbinary(e, "arith.andi", rokv, cok, "i1", mask);
        xe_fresh(e, roff);
        xe_line(e);
        zt_strbuf_printf(&e->body, "%s = arith.muli %s, %s : index%s\n", roff, row, st0,
                         loc(e));
        broadcast_ty(e, roff, "index", roffv);
        xe_vbinary(e, "arith.addi", roffv, cols, "index", offs);
        if (store) {
          xe_name_t rv;
          xe_fresh(e, rv);
          xe_line(e);
          zt_strbuf_printf(&e->body,
                           "%s = vector.extract %s[%d] {layout_result_0 = " XE_LAYOUT_ATTR
                           "} : vector<16x%s> from vector<%dx16x%s>%s\n",
                           rv, blk, r, mt, v->br, mt, loc(e));
          xe_line(e);
          zt_strbuf_printf(&e->body,
                           "xegpu.store %s, %s[%s], %s <{layout = " XE_LAYOUT_ATTR
                           "}> : vector<16x%s>, i64, vector<16xindex>, vector<16xi1>%s\n",
                           rv, addr, offs, mask, mt, loc(e));
          continue;
        }
        xe_name_t g, sel, ins;
        xe_fresh(e, g);
        xe_line(e);
        zt_strbuf_printf(&e->body,
                         "%s = xegpu.load %s[%s], %s <{layout = " XE_LAYOUT_ATTR
                         "}> : i64, vector<16xindex>, vector<16xi1> -> vector<16x%s>%s\n",
                         g, addr, offs, mask, mt, loc(e));
        xe_vselect(e, mask, g, zrow, mt, sel);
        if (r == v->br - 1 && !bf) snprintf(ins, sizeof ins, "%s", nm);
        else xe_fresh(e, ins);
        xe_line(e);
        zt_strbuf_printf(&e->body,
                         "%s = vector.insert %s, %s [%d] {layout_result_0 = %s} : "
                         "vector<16x%s> into vector<%dx16x%s>%s\n",
                         ins, sel, acc, r, attr, mt, v->br, mt, loc(e));
        memcpy(acc, ins, sizeof acc);
      }
      if (!store && bf) {
        xe_line(e);
        zt_strbuf_printf(&e->body,
                         "%s = arith.bitcast %s {layout_result_0 = %s} : vector<%dx16xi16> to "
                         "vector<%dx16xbf16>%s\n",
                         nm, acc, attr, v->br, v->br, loc(e));
      }
    }
  }
}

// Loads (stores) blocks [bi0, bi1) x [bj0, bj1) of v through one 2-D block
// descriptor over `addr` (i64 byte address, element aligned): s0 rows of s1
// elements, rows st0 elements apart (index names); block (bi0, bj0) sits at
// [o0, o1]. aligned/delta: addr already split by xe_align_base (NULL: split
// here). prefetch: also prefetch the next K tile (whole tiles only).
// igc_vnni: the reads are marked for IGC's 2D transform read (xe_igc_vnni.c).
static void emit_nd_blocks(xe_emitter_t* e, xe_val_t* v, zt_type_t t, bool store,
                           const char* addr, const char* aligned, const char* delta,
                           const char* s0_in, const char* s1_in, const char* st0,
                           const char* o0, const char* o1_in, int32_t bi0, int32_t bi1,
                           int32_t bj0, int32_t bj1, bool prefetch, bool igc_vnni) {
  if (e->lanes != XE_SUBGROUP) {
    if (v->bc != 16) {
      xe_fail(e, ZT_STATUS_UNSUPPORTED, "%dx%d blocks of a 2-D block descriptor at %d lanes",
              v->br, v->bc, e->lanes);
      return;
    }
    nd_blocks_by_rows(e, v, t, store, addr, s0_in, s1_in, st0, o0, o1_in, bi0, bi1, bj0, bj1);
    return;
  }
  e->used_block_io = true;
  // bf16 blocks travel as bf16 through 2-D block IO (lab a2).
  const char* et = xe_block_elem(t.kind);
  const char* attr = xe_layout_attr(v);
  xe_name_t s0, s1, o1, one, base, dltidx, s1a, o1a;
  memcpy(s0, s0_in, sizeof s0);
  memcpy(s1, s1_in, sizeof s1);
  memcpy(o1, o1_in, sizeof o1);
  hoist_index(e, 1, one);
  if (aligned) {
    snprintf(base, sizeof base, "%s", aligned);
    snprintf(dltidx, sizeof dltidx, "%s", delta);
  } else {
    xe_align_base(e, addr, t.kind, base, dltidx);
  }
  add_index(e, s1, dltidx, s1a);
  add_index(e, o1, dltidx, o1a);
  memcpy(s1, s1a, sizeof s1);
  memcpy(o1, o1a, sizeof o1);
  xe_name_t td;
  xe_fresh(e, td);
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "%s = xegpu.create_nd_tdesc %s, shape : [%s, %s], strides : [%s, %s] : "
                   "i64 -> !xegpu.tensor_desc<%dx%dx%s, %s>%s\n",
                   td, base, s0, s1, st0, one, v->br, v->bc, et, attr, loc(e));
  for (int32_t bi = bi0; bi < bi1; ++bi) {
    xe_name_t ro, ci, rr;
    hoist_index(e, (int64_t)(bi - bi0) * v->br, ci);
    add_index(e, o0, ci, rr);
    memcpy(ro, rr, sizeof ro);
    for (int32_t bj = bj0; bj < bj1; ++bj) {
      xe_name_t co, cj;
      hoist_index(e, (int64_t)(bj - bj0) * v->bc, cj);
      add_index(e, o1, cj, co);
      const char* nm = v->names[bi * v->nbc + bj];
      xe_line(e);
      if (store) {
        zt_strbuf_printf(&e->body,
                         "xegpu.store_nd %s, %s[%s, %s] <{layout = %s}> : vector<%dx%dx%s>, "
                         "!xegpu.tensor_desc<%dx%dx%s, %s>%s\n",
                         nm, td, ro, co, attr, v->br, v->bc, et, v->br, v->bc, et, attr,
                         loc(e));
      } else {
        zt_strbuf_printf(&e->body,
                         "%s = xegpu.load_nd %s[%s, %s] <{layout = %s}>%s : "
                         "!xegpu.tensor_desc<%dx%dx%s, %s> -> vector<%dx%dx%s>%s\n",
                         nm, td, ro, co, attr, igc_vnni ? " {zt.igc_vnni}" : "", v->br, v->bc,
                         et, attr, v->br, v->bc, et, loc(e));
      }
    }
  }
  if (prefetch) {
    // Prefetch the next K tile (A: columns + K, B: rows + K) into the
    // caches. The prefetch descriptor has its own shape: a descriptor of
    // B's type would be merged with B's by CSE and B's load would lose its
    // VNNI transform (XEGPU_NOTES a5b).
    // Rows (A) or columns (B) of this descriptor's blocks only.
    int64_t kdim = v->role == XE_ROLE_A ? t.shape[1] : t.shape[0];
    int64_t tr = (int64_t)(bi1 - bi0) * v->br, tc = (int64_t)(bj1 - bj0) * v->bc;
    int ph = v->role == XE_ROLE_A ? (tr >= 32 ? 32 : tr == 8 ? 16 : (int)tr)
                                  : (kdim >= 32 ? 32 : 8);
    xe_name_t pd;
    xe_fresh(e, pd);
    xe_line(e);
    zt_strbuf_printf(&e->body,
                     "%s = xegpu.create_nd_tdesc %s, shape : [%s, %s], strides : [%s, %s] : "
                     "i64 -> !xegpu.tensor_desc<%dx16x%s, #zt_a>%s\n",
                     pd, base, s0, s1, st0, one, ph, et, loc(e));
    int64_t rows = v->role == XE_ROLE_A ? tr : kdim;
    int64_t cols = v->role == XE_ROLE_A ? kdim : tc;
    for (int64_t pr = 0; pr < rows; pr += ph) {
      for (int64_t pc = 0; pc < cols; pc += 16) {
        xe_name_t cr, cc, ar, ac;
        hoist_index(e, pr + (v->role == XE_ROLE_B ? kdim : 0), cr);
        hoist_index(e, pc + (v->role == XE_ROLE_A ? kdim : 0), cc);
        add_index(e, o0, cr, ar);
        add_index(e, o1, cc, ac);
        xe_line(e);
        zt_strbuf_printf(&e->body,
                         "xegpu.prefetch_nd %s[%s, %s] <{l1_hint = #xegpu.cache_hint<cached>, "
                         "l2_hint = #xegpu.cache_hint<cached>, layout = #zt_a}> : "
                         "!xegpu.tensor_desc<%dx16x%s, #zt_a>%s\n",
                         pd, ar, ac, ph, et, loc(e));
      }
    }
  }
}

// tile.block_load / tile.block_store on 2-D tiles.
static zt_status_t emit_block_io(xe_emitter_t* e, MlirOperation op, bool store) {
  intptr_t no = mlirOperationGetNumOperands(op);
  if (no != 7 + (store ? 1 : 0))
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "block loads/stores of rank other than 2");
  MlirValue vals[8];
  xe_val_t* r[8];
  for (intptr_t i = 0; i < no; ++i) {
    vals[i] = mlirOperationGetOperand(op, i);
    r[i] = xe_lookup(e, vals[i]);
    if (!r[i]) return NULL;
  }
  bool trans_read = !store && xe_is_trans_read(op);
  if (!trans_read && !is_const_one(vals[4], 0))
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "2-D block with an inner stride not known to be 1 (Xe's 2-D block "
                   "IO needs unit inner strides)");
  MlirAttribute pad = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("padding"));
  if (!store && !mlirAttributeIsNull(pad) && mlirAttributeIsAString(pad)) {
    MlirStringRef ps = mlirStringAttrGetValue(pad);
    if (name_is(ps, "nan"))
      return xe_fail(e, ZT_STATUS_UNSUPPORTED, "NaN padding (the hardware fills zeros)");
  }
  xe_val_t* v;
  zt_type_t t;
  if (store) {
    v = r[7];
    t = v->type;
    if (v->layout != XE_LAYOUT_BLOCK2D || v->role != XE_ROLE_C)
      return xe_fail(e, ZT_STATUS_UNSUPPORTED, "block store of a dot operand");
  } else {
    MlirValue res = mlirOperationGetResult(op, 0);
    ZT_RETURN_IF_ERROR(xe_tile_type(e, mlirValueGetType(res), &t));
    v = xe_alloc_for(e, res, t, xe_matrix_role(e, res));
    if (!v) return NULL;
    mark_pairs8(e, res, v);
    if (v->layout != XE_LAYOUT_BLOCK2D)
      return xe_fail(e, ZT_STATUS_UNSUPPORTED, "a 2-D block load of this type on Xe");
  }
  if (v->tc < 16) {
    if (!store) xe_free_val(v);
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "tensor-descriptor blocks narrower than 16 columns on Xe");
  }
  // Sizes as index (the kernel passes them as i64 scalars).
  xe_name_t s0, s1, st0, o0, o1;
  cast_index(e, r[1]->names[0], "i64", s0);
  cast_index(e, r[2]->names[0], "i64", s1);
  cast_index(e, r[3]->names[0], "i64", st0);
  xe_name_t row0, col0;
  tile_origin(e, v, row0, col0);
  xe_name_t rb, cb;
  if (row0[0]) add_scalar(e, r[5]->names[0], row0, "i32", rb);
  else memcpy(rb, r[5]->names[0], sizeof rb);
  if (col0[0]) add_scalar(e, r[6]->names[0], col0, "i32", cb);
  else memcpy(cb, r[6]->names[0], sizeof cb);
  cast_index(e, rb, "i32", o0);
  cast_index(e, cb, "i32", o1);
  if (trans_read) {
    // The transposed view of a row-major tile, into a dot's B (xe_trans_load.c).
    xe_name_t pitch;
    cast_index(e, r[4]->names[0], "i64", pitch);
    zt_status_t s = xe_emit_trans_read(e, v, t, r[0]->names[0], s0, s1, pitch, o0, o1);
    if (s || e->error) {
      xe_free_val(v);
      return s;
    }
    xe_bind(e, mlirOperationGetResult(op, 0), v);
    return NULL;
  }
  // (int8 tiles: no prefetch yet; the prefetch shapes are 16-bit ones.)
  bool igc_vnni = !store && xe_igc_vnni_desc_ok(e, op, v, t, vals[0], vals[2], vals[3], vals[6]);
  emit_nd_blocks(e, v, t, store, r[0]->names[0], NULL, NULL, s0, s1, st0, o0, o1, 0, v->nbr, 0,
                 v->nbc,
                 !store && in_loop(op) && v->role != XE_ROLE_C && t.kind != ZT_I8, igc_vnni);
  if (!store) xe_bind(e, mlirOperationGetResult(op, 0), v);
  return NULL;
}

// Row index names of a block row: origin + bi*br + r (i32, hoisted).
static void row_index(xe_emitter_t* e, const char* origin, int64_t k, xe_name_t out) {
  offset_i32(e, origin, k, out);
}

static zt_status_t lane_mask_of(xe_emitter_t* e, MlirValue m, const idx_t* idx, xe_name_t out) {
  lval_t lm;
  ZT_RETURN_IF_ERROR(lazy_eval(e, m, idx, &lm));
  if (e->error) return NULL;
  to_vec(e, &lm);
  memcpy(out, lm.v, XE_NAME_MAX);
  return NULL;
}

// --- Pointer tensors as 2-D block IO.
//
// A load or store through a 2-D pointer tensor whose offsets xe_axis.c
// proves affine (columns one element apart, rows a stride apart, in groups
// of at least one block), with a mask made of per-axis bounds `x < b` and
// a zero `other`, is the same memory access as a 2-D block load: one
// descriptor per group, its width/height the mask's bounds (the hardware
// reads zeros and drops writes outside), no per-row address or mask
// vectors. Anything else stays a row gather/scatter.

struct ptr_block_s {
  xe_axis_t ax;         // of the pointer tensor's offsets
  xe_mask_bounds_t mb;  // the mask's terms
  zt_scalar_kind_t kind;
  bool trans;           // a transposed view into dots' B: transposed reads
};


// Static part of the test (shared by the planner): types, pointer facts,
// mask form, `other`, the row pitch's alignment (16 bytes, Triton's rule
// for tensor descriptors, which these loads become).
static bool ptr_block_ok(xe_emitter_t* e, MlirOperation op, bool store, ptr_block_t* pb) {
  intptr_t no = mlirOperationGetNumOperands(op);
  MlirValue p = mlirOperationGetOperand(op, 0);
  MlirValue m = {NULL}, o = {NULL};
  if (store) {
    if (no > 2) m = mlirOperationGetOperand(op, 2);
  } else {
    if (no > 1) m = mlirOperationGetOperand(op, 1);
    if (no > 2) o = mlirOperationGetOperand(op, 2);
  }
  if (value_rank(p) != 2) return false;
  MlirValue data = store ? mlirOperationGetOperand(op, 1) : mlirOperationGetResult(op, 0);
  MlirType et = mlirShapedTypeGetElementType(mlirValueGetType(data));
  int esz;
  if (mlirTypeIsAF16(et)) pb->kind = ZT_F16, esz = 2;
  else if (mlirTypeIsABF16(et)) pb->kind = ZT_BF16, esz = 2;
  else if (mlirTypeIsAF32(et)) pb->kind = ZT_F32, esz = 4;
  else if (mlirTypeIsAInteger(et) && mlirIntegerTypeGetWidth(et) == 8) pb->kind = ZT_I8, esz = 1;
  else return false;
  if (o.ptr && !zt_is_zero_splat(o)) return false;
  xe_axis_info(e, p, &pb->ax);
  const xe_step_t *sr = &pb->ax.step[0], *sc = &pb->ax.step[1];
  pb->trans = !store && xe_ptr_trans_read_ok(e, op, &pb->ax);
  if (pb->trans) {
    // (a K bound only where it keeps dword pairs whole: xe_trans_load.c)
    if (!xe_mask_bounds(e, m, &pb->mb)) return false;
    for (int i = 0; i < pb->mb.n; ++i) {
      const xe_bound_t* b = &pb->mb.b[i];
      if (b->axis == 0 ? !xe_ptr_trans_k_bound_ok(e, op, b)
                       : b->lin < dim(mlirOperationGetResult(op, 0), 1))
        return false;
    }
    return true;
  }
  if (!sc->known || !mlirValueIsNull(sc->sym) || sc->coef != 1 || pb->ax.lin[1] < 16) return false;
  // The row pitch must be positive: a constant, or a hinted argument
  // (positive by the launcher's rule) times a positive constant; a
  // constant one of 64 bytes or more (the message's minimum).
  if (pb->ax.lin[0] < 8 || !xe_block_pitch_ok(e, sr, esz)) return false;
  return xe_mask_bounds(e, m, &pb->mb);
}

// Whether a 2-D load stays a row gather (for the planner: gathers cost
// registers, block loads do not).
static bool gathered(xe_emitter_t* e, MlirOperation load) {
  ptr_block_t pb;
  return !ptr_block_ok(e, load, false, &pb);
}

// An i64 name for a scalar integer record name of kind k.
static void scalar_i64(xe_emitter_t* e, const char* x, zt_scalar_kind_t k, xe_name_t out) {
  if (k == ZT_I64) {
    memcpy(out, x, XE_NAME_MAX);
    return;
  }
  xe_fresh(e, out);
  xe_line(e);
  zt_strbuf_printf(&e->body, "%s = arith.extsi %s : %s to i64%s\n", out, x, xe_elem(k), loc(e));
}

// Extent and start of a descriptor along one axis from the mask's bounds on
// it: rem = min(bound - x at the group's start); size = max(rem, unit) and
// start = (rem <= 0) * unit, so a group the mask leaves empty reads zeros.
// unit is 1, or 2 for the K pairs of a transposed 16-bit read (its width
// and offset are halved into dwords: a width of 1 element would be none).
static zt_status_t bound_extent(xe_emitter_t* e, const ptr_block_t* pb, int axis,
                                const idx_t* idx, int64_t dflt, int64_t unit, xe_name_t size,
                                xe_name_t start) {
  xe_name_t rem = {0};
  zt_scalar_kind_t rk = ZT_I32;
  for (int i = 0; i < pb->mb.n; ++i) {
    const xe_bound_t* b = &pb->mb.b[i];
    if (b->axis != axis) continue;
    lval_t x;
    idx_t swapped[2] = {idx[1], idx[0]};
    ZT_RETURN_IF_ERROR(lazy_eval(e, b->x, b->trans ? swapped : idx, &x));
    if (e->error) return NULL;
    if (x.vec) return xe_fail(e, ZT_STATUS_INTERNAL, "mask bound evaluated to a vector");
    xe_val_t* br = xe_lookup(e, b->bound);
    if (!br) return NULL;
    if (br->type.kind != x.kind)
      return xe_fail(e, ZT_STATUS_INTERNAL, "mask bound of another type than its index");
    const char* ty = xe_elem(x.kind);
    xe_name_t r;
    int_bin(e, "subi", br->names[0], x.v, x.kind, false, r);
    if (b->inclusive) {
      xe_name_t one, r1;
      char text[64];
      snprintf(text, sizeof text, "arith.constant 1 : %s", ty);
      xe_hoist(e, text, false, one);
      int_bin(e, "addi", r, one, x.kind, false, r1);
      memcpy(r, r1, sizeof r);
    }
    if (rem[0] && rk != x.kind) return xe_fail(e, ZT_STATUS_INTERNAL, "mixed mask bound types");
    if (rem[0]) {
      xe_name_t mn;
      int_bin(e, "minsi", rem, r, x.kind, false, mn);
      memcpy(rem, mn, sizeof rem);
    } else {
      memcpy(rem, r, sizeof rem);
    }
    rk = x.kind;
  }
  if (!rem[0]) {
    hoist_index(e, dflt, size);
    hoist_index(e, 0, start);
    return NULL;
  }
  const char* ty = xe_elem(rk);
  char text[64];
  xe_name_t one, zero, mx, le, dead;
  snprintf(text, sizeof text, "arith.constant %lld : %s", (long long)unit, ty);
  xe_hoist(e, text, false, one);
  snprintf(text, sizeof text, "arith.constant 0 : %s", ty);
  xe_hoist(e, text, false, zero);
  int_bin(e, "maxsi", rem, one, rk, false, mx);
  xe_fresh(e, le);
  xe_line(e);
  zt_strbuf_printf(&e->body, "%s = arith.cmpi sle, %s, %s : %s%s\n", le, rem, zero, ty, loc(e));
  xe_fresh(e, dead);
  xe_line(e);
  zt_strbuf_printf(&e->body, "%s = arith.extui %s : i1 to %s%s\n", dead, le, ty, loc(e));
  if (unit != 1) {
    xe_name_t d2;
    int_bin(e, "muli", dead, one, rk, false, d2);
    memcpy(dead, d2, sizeof dead);
  }
  cast_index(e, mx, ty, size);
  cast_index(e, dead, ty, start);
  return NULL;
}

// The root of a pointer tensor carried by an scf.for that starts at its
// root and advances by a uniform amount whose bytes are a multiple of 64,
// so that the alignment of root + advance is the root's; null otherwise.
static MlirValue moved_root_64(xe_emitter_t* e, MlirValue p, zt_scalar_kind_t k) {
  MlirValue none = {NULL};
  xe_val_t* rec = xe_find(e, p);
  if (!rec || rec->layout != XE_LAYOUT_LAZY || mlirValueEqual(rec->root, p) ||
      !mlirValueIsABlockArgument(p))
    return none;
  MlirBlock b = mlirBlockArgumentGetOwner(p);
  MlirOperation loop = mlirBlockGetParentOperation(b);
  intptr_t i = mlirBlockArgumentGetArgNumber(p);
  if (!op_is(loop, "scf.for") || i < 1) return none;
  MlirValue init = mlirOperationGetOperand(loop, 3 + i - 1);
  if (!mlirValueEqual(init, rec->root)) return none;  // advanced before the loop
  MlirValue y = mlirOperationGetOperand(mlirBlockGetTerminator(b), i - 1), s;
  if (!mlirValueIsAOpResult(y) || !op_is(mlirOpResultGetOwner(y), "tile.addptr")) return none;
  MlirOperation add = mlirOpResultGetOwner(y);
  if (!mlirValueEqual(mlirOperationGetOperand(add, 0), p) ||
      !xe_uniform_scalar(mlirOperationGetOperand(add, 1), &s))
    return none;
  int64_t bytes = xe_scalar_div(e, s) * (zt_scalar_kind_bits(k) / 8);
  return bytes % 64 == 0 ? rec->root : none;
}

// A pointer load of a transposed view into dots' B blocks v (pb->trans):
// one transposed-read descriptor at the tile's first element, N rows (the
// mask's bound on axis 1, else the tile's) of K elements (what is left of
// the mask's bound on axis 0, so a K tail reads zeros; without one the
// tile's, widened to the message's 64-byte minimum: nothing past the tile
// is read), the column stride as pitch (xe_emit_trans_read).
static zt_status_t emit_ptr_trans(xe_emitter_t* e, MlirOperation op, const ptr_block_t* pb,
                                  xe_val_t* v, zt_type_t t) {
  MlirValue p = mlirOperationGetOperand(op, 0);
  int esz = zt_scalar_kind_bits(t.kind) / 8;
  xe_name_t row0, col0, eszn, pitch;
  tile_origin(e, v, row0, col0);
  char text[64];
  snprintf(text, sizeof text, "arith.constant %d : i64", esz);
  xe_hoist(e, text, false, eszn);
  const xe_step_t* sn = &pb->ax.step[1];
  if (mlirValueIsNull(sn->sym)) {
    hoist_index(e, sn->coef, pitch);
  } else {
    xe_val_t* sv = xe_lookup(e, sn->sym);
    if (!sv) return NULL;
    xe_name_t s64, c, prod;
    scalar_i64(e, sv->names[0], sv->type.kind, s64);
    if (sn->coef != 1) {
      snprintf(text, sizeof text, "arith.constant %lld : i64", (long long)sn->coef);
      xe_hoist(e, text, false, c);
      int_bin(e, "muli", s64, c, ZT_I64, false, prod);
      memcpy(s64, prod, sizeof s64);
    }
    cast_index(e, s64, "i64", pitch);
  }
  xe_name_t ri, cj;
  offset_i32(e, row0, 0, ri);
  offset_i32(e, col0, 0, cj);
  idx_t idx[2] = {{ri, false}, {cj, false}};
  lval_t pv;
  ZT_RETURN_IF_ERROR(lazy_eval(e, p, idx, &pv));
  if (e->error) return NULL;
  if (pv.vec) return xe_fail(e, ZT_STATUS_INTERNAL, "block address evaluated to a vector");
  xe_name_t bytes, addr, kw, k0, h, y0;
  int_bin(e, "muli", pv.v, eszn, ZT_I64, false, bytes);
  int_bin(e, "addi", pv.base, bytes, ZT_I64, false, addr);
  bool k_bound = false;
  for (int i = 0; i < pb->mb.n; ++i) k_bound |= pb->mb.b[i].axis == 0;
  if (k_bound) {
    ZT_RETURN_IF_ERROR(bound_extent(e, pb, 0, idx, v->tr, esz == 2 ? 2 : 1, kw, k0));
    if (e->error) return NULL;
  } else {
    hoist_index(e, v->tr * esz < 64 ? 64 / esz : v->tr, kw);
    hoist_index(e, 0, k0);
  }
  ZT_RETURN_IF_ERROR(bound_extent(e, pb, 1, idx, v->tc, 1, h, y0));
  if (e->error) return NULL;
  ZT_RETURN_IF_ERROR(xe_emit_trans_read(e, v, t, addr, kw, h, pitch, k0, y0));
  if (e->error) return NULL;
  xe_bind(e, mlirOperationGetResult(op, 0), v);
  return NULL;
}

// tile.load (store) through a pointer tensor as 2-D block IO; *done false
// when the access does not qualify (the caller gathers instead).
static zt_status_t emit_ptr_blocks(xe_emitter_t* e, MlirOperation op, bool store, bool* done) {
  *done = false;
  ptr_block_t pb;
  if (!ptr_block_ok(e, op, store, &pb)) return NULL;
  MlirValue p = mlirOperationGetOperand(op, 0);
  xe_val_t* v;
  zt_type_t t;
  MlirValue res = {NULL};
  if (store) {
    v = xe_lookup(e, mlirOperationGetOperand(op, 1));
    if (!v) return NULL;
    if (v->layout != XE_LAYOUT_BLOCK2D || v->role != XE_ROLE_C || v->type.kind == ZT_I8)
      return NULL;
    t = v->type;
  } else {
    res = mlirOperationGetResult(op, 0);
    ZT_RETURN_IF_ERROR(xe_tile_type(e, mlirValueGetType(res), &t));
    v = xe_alloc_for(e, res, t, xe_matrix_role(e, res));
    if (!v) return NULL;
    mark_pairs8(e, res, v);
    // 8-bit data has 2D block reads of 32 columns only (dot operands);
    // other int8 tiles keep gathers. So do int8 weights in a 16-bit B
    // operand's places (b16): read as the int8 dot's 32x16 VNNI blocks
    // (lane j gets column j's 32 rows in order) and split into two 16x16
    // blocks row by row, LLVM 22's SPIR-V backend cannot legalize the
    // G_UNMERGE_VALUES of <32 x s8> into <16 x s8> halves that this becomes
    // ("unable to legalize instruction", gemm_fp16_w8 on pvc).
    if (v->layout != XE_LAYOUT_BLOCK2D ||
        (t.kind == ZT_I8 && (v->role == XE_ROLE_C || v->b16))) {
      xe_free_val(v);
      return NULL;
    }
  }
  if (pb.trans) {
    // (B: 16x16 blocks; A: 16-bit 8x16 blocks in whole pairs, one read
    // each, so nothing past the tile's rows is read: xe_emit_trans_read)
    bool a_ok = v->role == XE_ROLE_A && v->br == 8 && v->nbr % 2 == 0 && t.kind != ZT_F32;
    if (store || (v->role != XE_ROLE_B && !a_ok) || v->b16 || v->narrow ||
        (!a_ok && v->br != 16) || v->bc != 16) {
      if (!store) xe_free_val(v);
      return NULL;  // gathers
    }
    *done = true;
    return emit_ptr_trans(e, op, &pb, v, t);
  }
  // Groups: as many whole blocks as the facts allow, within this
  // subgroup's tile (whose origin is a multiple of its size).
  int64_t gr = pb.ax.lin[0] < v->tr ? pb.ax.lin[0] : v->tr;
  int64_t gc = pb.ax.lin[1] < v->tc ? pb.ax.lin[1] : v->tc;
  for (int i = 0; i < pb.mb.n; ++i) {
    int64_t* g = pb.mb.b[i].axis == 0 ? &gr : &gc;
    if (pb.mb.b[i].lin < *g) *g = pb.mb.b[i].lin;
  }
  if (gr < v->br || gr % v->br || v->tr % gr || gc < v->bc || gc % v->bc || v->tc % gc) {
    if (!store) xe_free_val(v);
    return NULL;
  }
  *done = true;
  int esz = zt_scalar_kind_bits(t.kind) / 8;
  xe_name_t row0, col0, eszn;
  tile_origin(e, v, row0, col0);
  {
    char text[64];
    snprintf(text, sizeof text, "arith.constant %d : i64", esz);
    xe_hoist(e, text, false, eszn);
  }
  // Row pitch in elements (index).
  xe_name_t pitch;
  const xe_step_t* sr = &pb.ax.step[0];
  if (mlirValueIsNull(sr->sym)) {
    hoist_index(e, sr->coef, pitch);
  } else {
    xe_val_t* sv = xe_lookup(e, sr->sym);
    if (!sv) return NULL;
    xe_name_t s64, c, prod;
    scalar_i64(e, sv->names[0], sv->type.kind, s64);
    if (sr->coef != 1) {
      char text[64];
      snprintf(text, sizeof text, "arith.constant %lld : i64", (long long)sr->coef);
      xe_hoist(e, text, false, c);
      int_bin(e, "muli", s64, c, ZT_I64, false, prod);
      memcpy(s64, prod, sizeof s64);
    }
    cast_index(e, s64, "i64", pitch);
  }
  // Prefetch of the next K tile: each descriptor covers all of K.
  bool whole_k = v->role == XE_ROLE_A ? gc == v->tc : gr == v->tr;
  bool prefetch = !store && whole_k && in_loop(op) && v->role != XE_ROLE_C && t.kind != ZT_I8;
  bool igc_vnni = !store && xe_igc_vnni_read_ok(e, op, v, t, &pb.ax, &pb.mb, gc);
  for (int64_t gi = 0; gi < v->tr / gr; ++gi) {
    for (int64_t gj = 0; gj < v->tc / gc; ++gj) {
      xe_name_t ri, cj;
      offset_i32(e, row0, gi * gr, ri);
      offset_i32(e, col0, gj * gc, cj);
      idx_t idx[2] = {{ri, false}, {cj, false}};
      lval_t pv;
      // A loop-advanced pointer whose advance keeps 64-byte alignment: the
      // base is aligned from its loop-invariant root (hoisted out of the
      // loop), and only the advance is added in the loop.
      MlirValue root = moved_root_64(e, p, t.kind);
      ZT_RETURN_IF_ERROR(lazy_eval(e, mlirValueIsNull(root) ? p : root, idx, &pv));
      if (e->error) return NULL;
      if (pv.vec) return xe_fail(e, ZT_STATUS_INTERNAL, "block address evaluated to a vector");
      xe_name_t bytes, addr, aligned = {0}, delta = {0};
      int_bin(e, "muli", pv.v, eszn, ZT_I64, false, bytes);
      int_bin(e, "addi", pv.base, bytes, ZT_I64, false, addr);
      if (!mlirValueIsNull(root)) {
        xe_name_t root_aligned, adv;
        xe_align_base(e, addr, t.kind, root_aligned, delta);
        int_bin(e, "muli", xe_find(e, p)->names[0], eszn, ZT_I64, false, adv);
        int_bin(e, "addi", root_aligned, adv, ZT_I64, false, aligned);
      }
      xe_name_t h, y0, w, x0;
      ZT_RETURN_IF_ERROR(bound_extent(e, &pb, 0, idx, gr, 1, h, y0));
      ZT_RETURN_IF_ERROR(bound_extent(e, &pb, 1, idx, gc, 1, w, x0));
      if (e->error) return NULL;
      int32_t bi0 = (int32_t)(gi * gr / v->br), bj0 = (int32_t)(gj * gc / v->bc);
      emit_nd_blocks(e, v, t, store, addr, aligned[0] ? aligned : NULL, delta[0] ? delta : NULL,
                     h, w, pitch, y0, x0, bi0, bi0 + (int32_t)(gr / v->br), bj0,
                     bj0 + (int32_t)(gc / v->bc), prefetch, igc_vnni);
    }
  }
  if (!store) xe_bind(e, res, v);
  return NULL;
}

// Where block row rr of block (bi, bj) of v sits in the tile: the lazy
// index to evaluate addresses, masks and index arithmetic at (names in a,
// b), and in `pad` the mask of its lanes that hold elements ("" when all
// do). Usual blocks: tile row bi*br + rr over the lanes of columns bj*16..;
// narrow blocks: column rr over the lanes of rows bi*16.. (xe_val_t.narrow).
static void block_row_index(xe_emitter_t* e, const xe_val_t* v, const char* row0,
                            const char* col0, int32_t bi, int32_t bj, int rr, xe_name_t a,
                            xe_name_t b, idx_t idx[2], xe_name_t pad) {
  pad[0] = 0;
  if (v->narrow) {
    offset_i32(e, row0, (int64_t)bi * 16, a);
    offset_i32(e, col0, rr, b);
    idx[0] = (idx_t){a, true, !row0[0], (int64_t)bi * 16};
    idx[1] = (idx_t){b, false, !col0[0], rr};
    int64_t left = v->tr - 16LL * bi;
    if (left < 16) xe_pad_mask(e, left, pad);
    return;
  }
  row_index(e, row0, (int64_t)bi * v->br + rr, a);
  offset_i32(e, col0, (int64_t)bj * 16, b);
  idx[0] = (idx_t){a, false, !row0[0], (int64_t)bi * v->br + rr};
  idx[1] = (idx_t){b, true, !col0[0], (int64_t)bj * 16, v->pairs8 ? 3 : 0};
}

// Lanes of padding (pad, see block_row_index) take no part in memory accesses.
static void narrow_mask(xe_emitter_t* e, const char* pad, xe_name_t mask) {
  if (!pad[0]) return;
  xe_name_t m;
  xe_vbinary(e, "arith.andi", mask, pad, "i1", m);
  memcpy(mask, m, sizeof m);
}

// The lane addresses and mask of one 16-lane access of pointer tensor p at
// idx: pv (base and per-lane i64 offsets), the mask (m's, or all lanes)
// narrowed by the padding lanes pad and pad2 ("" for none). Errors are left
// in e->error, as lazy_eval leaves them.
static zt_status_t lane_ptr_mask(xe_emitter_t* e, MlirValue p, MlirValue m, const idx_t idx[2],
                                 const char* pad, const char* pad2, lval_t* pv, xe_name_t mask) {
  ZT_RETURN_IF_ERROR(lazy_eval(e, p, idx, pv));
  if (e->error) return NULL;
  to_vec(e, pv);
  if (m.ptr) ZT_RETURN_IF_ERROR(lane_mask_of(e, m, idx, mask));
  else xe_all_true(e, mask);
  if (e->error) return NULL;
  narrow_mask(e, pad, mask);
  narrow_mask(e, pad2, mask);
  return NULL;
}

// pv's per-lane offsets as the index vector xegpu.load/store take.
static void lane_index(xe_emitter_t* e, const lval_t* pv, xe_name_t ix) {
  xe_fresh(e, ix);
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "%s = arith.index_cast %s {layout_result_0 = " XE_LAYOUT_ATTR
                   "} : vector<16xi64> to vector<16xindex>%s\n",
                   ix, pv->v, loc(e));
}

// One 16-lane gather of the pointer tensor p at idx (masked by m, `other`
// o where masked off) into g. other_scalar/other_vec: a uniform `other`
// broadcast once per load.
static zt_status_t gather_row(xe_emitter_t* e, MlirValue p, MlirValue m, MlirValue o,
                              zt_type_t t, const idx_t idx[2], const char* pad,
                              xe_name_t other_scalar, xe_name_t other_vec, xe_name_t g) {
  const char* mt = mem_elem(t.kind);
  lval_t pv;
  xe_name_t mask, ix;
  ZT_RETURN_IF_ERROR(lane_ptr_mask(e, p, m, idx, pad, "", &pv, mask));
  if (e->error) return NULL;
  lane_index(e, &pv, ix);
  xe_fresh(e, g);
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "%s = xegpu.load %s[%s], %s <{layout = " XE_LAYOUT_ATTR
                   "}> %s: i64, vector<16xindex>, vector<16xi1> -> vector<16x%s>%s\n",
                   g, pv.base, ix, mask, idx[1].pair == 4 ? "{zt.pairs8} " : "", mt, loc(e));
  if (!o.ptr) return NULL;
  lval_t ov;
  ZT_RETURN_IF_ERROR(lazy_eval(e, o, idx, &ov));
  if (e->error) return NULL;
  if (t.kind == ZT_BF16) {
    // bf16 scalars are held as their i16 bits (xe_emit.c).
    if (ov.kind != ZT_BF16)
      return xe_fail(e, ZT_STATUS_UNSUPPORTED, "a bf16 load's `other` of another type");
    ov.kind = ZT_I16;
  }
  if (!ov.vec && strcmp(ov.v, other_scalar) == 0) {
    // A uniform `other` (a splat): broadcast once per load.
    memcpy(ov.v, other_vec, sizeof ov.v);
    ov.vec = true;
  } else if (!ov.vec) {
    memcpy(other_scalar, ov.v, XE_NAME_MAX);
    to_vec(e, &ov);
    memcpy(other_vec, ov.v, XE_NAME_MAX);
  }
  to_vec(e, &ov);
  xe_name_t sel;
  xe_fresh(e, sel);
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "%s = arith.select %s, %s, %s {layout_result_0 = " XE_LAYOUT_ATTR
                   "} : vector<16xi1>, vector<16x%s>%s\n",
                   sel, mask, g, ov.v, mt, loc(e));
  memcpy(g, sel, XE_NAME_MAX);
  return NULL;
}

// An int8 dot's A blocks (8x32, lane j holding columns 2j and 2j + 1 of
// each row) gathered: per row two 16-lane gathers, of the even and the odd
// columns (idx_t.pair), packed into one i16 per lane (even byte low, as the
// DPAS reads it), the rows gathered into an 8x16 i16 block in the plain
// lane map and bitcast to the 8x32 i8 block (per lane: 8 i16 -> 8 x 2 i8).
// As many gathers as a 16-column tile of the same bytes would need.
static zt_status_t gather_i8_pairs(xe_emitter_t* e, MlirOperation op, xe_val_t* v, zt_type_t t) {
  intptr_t no = mlirOperationGetNumOperands(op);
  MlirValue p = mlirOperationGetOperand(op, 0);
  MlirValue m = no > 1 ? mlirOperationGetOperand(op, 1) : (MlirValue){NULL};
  MlirValue o = no > 2 ? mlirOperationGetOperand(op, 2) : (MlirValue){NULL};
  xe_name_t row0, col0, zero, c8;
  tile_origin(e, v, row0, col0);
  char text[192];
  snprintf(text, sizeof text, "arith.constant {layout_result_0 = #zt_a} dense<0> : vector<%dx16xi16>",
           v->br);
  xe_hoist(e, text, true, zero);
  xe_hoist(e, "arith.constant {layout_result_0 = " XE_LAYOUT_ATTR "} dense<8> : vector<16xi16>",
           true, c8);
  xe_name_t other_scalar = "", other_vec = "";
  for (int32_t bi = 0; bi < v->nbr; ++bi) {
    for (int32_t bj = 0; bj < v->nbc; ++bj) {
      xe_name_t acc;
      memcpy(acc, zero, sizeof acc);
      for (int r = 0; r < v->br; ++r) {
        xe_name_t ia, ib, half[2];
        row_index(e, row0, (int64_t)bi * v->br + r, ia);
        offset_i32(e, col0, (int64_t)bj * 32, ib);
        for (int h = 0; h < 2; ++h) {
          idx_t idx[2] = {{ia, false, !row0[0], (int64_t)bi * v->br + r, 0},
                          {ib, true, !col0[0], (int64_t)bj * 32, h + 1}};
          xe_name_t g, w;
          ZT_RETURN_IF_ERROR(gather_row(e, p, m, o, t, idx, "", other_scalar, other_vec, g));
          if (e->error) return NULL;
          xe_fresh(e, w);
          xe_line(e);
          zt_strbuf_printf(&e->body,
                           "%s = arith.extui %s {layout_result_0 = " XE_LAYOUT_ATTR
                           "} : vector<16xi8> to vector<16xi16>%s\n",
                           w, g, loc(e));
          if (h) {
            xe_name_t sh;
            xe_fresh(e, sh);
            xe_line(e);
            zt_strbuf_printf(&e->body,
                             "%s = arith.shli %s, %s {layout_result_0 = " XE_LAYOUT_ATTR
                             "} : vector<16xi16>%s\n",
                             sh, w, c8, loc(e));
            memcpy(w, sh, sizeof w);
          }
          memcpy(half[h], w, sizeof w);
        }
        xe_name_t word, ins;
        xe_fresh(e, word);
        xe_line(e);
        zt_strbuf_printf(&e->body,
                         "%s = arith.ori %s, %s {layout_result_0 = " XE_LAYOUT_ATTR
                         "} : vector<16xi16>%s\n",
                         word, half[0], half[1], loc(e));
        xe_fresh(e, ins);
        xe_line(e);
        zt_strbuf_printf(&e->body,
                         "%s = vector.insert %s, %s [%d] {layout_result_0 = #zt_a} : "
                         "vector<16xi16> into vector<%dx16xi16>%s\n",
                         ins, word, acc, r, v->br, loc(e));
        memcpy(acc, ins, sizeof acc);
      }
      xe_line(e);
      zt_strbuf_printf(&e->body,
                       "%s = vector.bitcast %s {layout_result_0 = %s} : vector<%dx16xi16> to "
                       "vector<%dx32xi8>%s\n",
                       v->names[bi * v->nbc + bj], acc, xe_layout_attr(v), v->br, v->br, loc(e));
    }
  }
  xe_bind(e, mlirOperationGetResult(op, 0), v);
  return NULL;
}

// tile.load of a 2-D pointer tensor: per block row one 16-lane gather.
static zt_status_t emit_gather(xe_emitter_t* e, MlirOperation op) {
  intptr_t no = mlirOperationGetNumOperands(op);
  MlirValue p = mlirOperationGetOperand(op, 0);
  MlirValue m = no > 1 ? mlirOperationGetOperand(op, 1) : (MlirValue){NULL};
  MlirValue o = no > 2 ? mlirOperationGetOperand(op, 2) : (MlirValue){NULL};
  MlirValue res = mlirOperationGetResult(op, 0);
  zt_type_t t;
  ZT_RETURN_IF_ERROR(xe_tile_type(e, mlirValueGetType(res), &t));
  if (t.kind == ZT_I1 || t.kind == ZT_PTR)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "2-D loads of %s tensors",
                   t.kind == ZT_I1 ? "boolean" : "pointer");
  xe_val_t* v = xe_alloc_for(e, res, t, xe_matrix_role(e, res));
  if (!v) return NULL;
  mark_pairs8(e, res, v);
  if (v->layout == XE_LAYOUT_BLOCK2D && t.kind == ZT_I8 && v->role == XE_ROLE_A && !v->b16 &&
      !v->narrow && v->br == 8 && v->bc == 32)
    return gather_i8_pairs(e, op, v, t);
  if (v->layout != XE_LAYOUT_BLOCK2D || v->bc != 16) {
    xe_free_val(v);
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "2-D gathers of %s tensors %s on Xe", zt_scalar_kind_name(t.kind),
                   t.kind == ZT_I8 ? "feeding a dot (their block reads need contiguous rows a "
                                        "multiple of 16 and at least 64 bytes apart)"
                                      : "here");
  }
  const char* et = xe_block_elem(t.kind);
  const char* mt = mem_elem(t.kind);
  const char* attr = xe_layout_attr(v);
  xe_name_t row0, col0;
  tile_origin(e, v, row0, col0);
  char text[192];
  xe_name_t zero;
  snprintf(text, sizeof text, "arith.constant {layout_result_0 = %s} dense<%s> : vector<%dx16x%s>",
           attr, zt_scalar_kind_is_float(t.kind) ? "0.0" : "0", v->br, et);
  if (t.kind == ZT_BF16)
    snprintf(text, sizeof text, "arith.constant {layout_result_0 = %s} dense<0> : vector<%dx16xi16>",
             attr, v->br);
  xe_hoist(e, text, true, zero);
  // Pair order along rows contiguous in pairs (step 1 in groups of an even
  // length, groups starting at even columns): a lane's pair is adjacent.
  bool unit_pairs = false;
  if (v->pairs8) {
    xe_axis_t ax;
    xe_axis_info(e, p, &ax);
    unit_pairs = ax.rank == 2 && ax.step[1].known && mlirValueIsNull(ax.step[1].sym) &&
                 ax.step[1].coef == 1 && ax.lin[1] % 2 == 0;
  }
  xe_name_t other_scalar = "", other_vec = "";
  for (int32_t bi = 0; bi < v->nbr; ++bi) {
    for (int32_t bj = 0; bj < v->nbc; ++bj) {
      xe_name_t acc;
      memcpy(acc, zero, sizeof acc);
      for (int r = 0; r < v->br; ++r) {
        xe_name_t ia, ib, pad;
        idx_t idx[2];
        block_row_index(e, v, row0, col0, bi, bj, r, ia, ib, idx, pad);
        if (idx[1].pair == 3 && unit_pairs) idx[1].pair = 4;
        xe_name_t g;
        ZT_RETURN_IF_ERROR(gather_row(e, p, m, o, t, idx, pad, other_scalar, other_vec, g));
        if (e->error) return NULL;
        xe_name_t ins;
        if (r == v->br - 1 && t.kind != ZT_BF16) memcpy(ins, v->names[bi * v->nbc + bj], sizeof ins);
        else xe_fresh(e, ins);
        xe_line(e);
        zt_strbuf_printf(&e->body,
                         "%s = vector.insert %s, %s [%d] {layout_result_0 = %s} : "
                         "vector<16x%s> into vector<%dx16x%s>%s\n",
                         ins, g, acc, r, attr, mt, v->br, mt, loc(e));
        memcpy(acc, ins, sizeof acc);
      }
      if (t.kind == ZT_BF16) {
        xe_line(e);
        zt_strbuf_printf(&e->body,
                         "%s = arith.bitcast %s {layout_result_0 = %s} : vector<%dx16xi16> to "
                         "vector<%dx16xbf16>%s\n",
                         v->names[bi * v->nbc + bj], acc, attr, v->br, v->br, loc(e));
      }
    }
  }
  xe_bind(e, res, v);
  return NULL;
}

// The lanes of a store or atomic of a tile held in copies that issue it:
// one copy does, so nothing is written or added twice. A blocks (dot
// operands, and tiles too narrow for the grid, xe_values.c) are the same in
// every subgroup of a grid row: grid column 0 issues them. B blocks are the
// same in every subgroup of a grid column (grid row 0 issues), and col_rep
// B blocks in every subgroup (subgroup 0). The mask is uniform in each
// subgroup (hoisted); "" when the tile has no copies.
static void copies_once(xe_emitter_t* e, const xe_val_t* v, xe_name_t out) {
  out[0] = 0;
  bool rows = v->role == XE_ROLE_B && e->sg_m > 1;
  bool cols = (v->role == XE_ROLE_A || v->col_rep) && e->sg_n > 1;
  if (e->nsg <= 1 || (!rows && !cols)) return;
  xe_name_t sgm, sgn, zero, c[2], both;
  sg_coords(e, sgm, sgn);
  hoist_i32(e, 0, zero);
  char text[192];
  int n = 0;
  if (rows) {
    snprintf(text, sizeof text, "arith.cmpi eq, %s, %s : i32", sgm, zero);
    xe_hoist(e, text, false, c[n++]);
  }
  if (cols) {
    snprintf(text, sizeof text, "arith.cmpi eq, %s, %s : i32", sgn, zero);
    xe_hoist(e, text, false, c[n++]);
  }
  memcpy(both, c[0], sizeof both);
  if (n == 2) {
    snprintf(text, sizeof text, "arith.andi %s, %s : i1", c[0], c[1]);
    xe_hoist(e, text, false, both);
  }
  snprintf(text, sizeof text,
           "vector.broadcast %s {layout_result_0 = " XE_LAYOUT_ATTR "} : i1 to vector<16xi1>",
           both);
  xe_hoist(e, text, true, out);
}

// tile.store of a 2-D tile through a 2-D pointer tensor: row scatters.
// With `atomic` ("<kind>:<sem>:<scope>", xe_emit_atomic_2d in xe_memory.c)
// each row's scatter carries an atomic's marks instead (zt.atomic_id = id *
// 1024 + the row's number), which xe_atomic.c turns into per-lane atomics as
// it does 1-D ones. Every element is stored by exactly one lane (tiles held
// in copies: one copy issues, copies_once), so an atomic happens once per
// element.
zt_status_t xe_scatter_2d(xe_emitter_t* e, MlirValue p, MlirValue val, MlirValue m,
                          MlirValue cmp, const char* atomic, int atomic_id, xe_val_t* old) {
  xe_val_t* v = xe_lookup(e, val);
  if (!v) return NULL;
  // atomic_cas: each row's compare values go first, in a store marked with
  // the atomic's id (zt.atomic_cmp), as the 1-D cas's: laid out as the
  // values, so that each row's lanes match.
  xe_val_t* c = mlirValueIsNull(cmp) ? NULL : xe_lookup(e, cmp);
  if (!mlirValueIsNull(cmp) && !c) return NULL;
  if (c && (c->layout != XE_LAYOUT_BLOCK2D || c->role != v->role || c->br != v->br ||
            c->bc != v->bc || c->nbr != v->nbr || c->nbc != v->nbc || c->narrow != v->narrow ||
            c->type.kind != v->type.kind))
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "a 2-D atomic_cas whose compare values are held unlike its new values on Xe");
  // (B blocks: rows of 16 lanes or VNNI pairs, lane j column j either way;
  // int8 B blocks of 32 rows are not written yet.)
  bool b_ok = v->role == XE_ROLE_B && v->type.kind != ZT_I8;
  if (v->layout != XE_LAYOUT_BLOCK2D ||
      (v->role != XE_ROLE_C && v->role != XE_ROLE_A && !b_ok) || v->b16)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "2-D %s of this value on Xe",
                   atomic ? "atomic" : "store");
  // An int8 tile held as an int8 dot's A operand (8x32 blocks, lane j the
  // column pair 2j, 2j + 1): each block viewed as 8x16 i16 (a lane's pair
  // in one register), each row stored as two scatters, the low bytes to the
  // even columns and the high bytes to the odd ones (idx_t.pair), the
  // reverse of gather_i8_pairs.
  bool pairs = v->type.kind == ZT_I8 && v->role == XE_ROLE_A && v->bc == 32 && v->br == 8 &&
               !v->narrow;
  if (v->bc != 16 && !pairs)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "2-D store of an int8 tile in %dx%d blocks on Xe", v->br, v->bc);
  if (atomic && (pairs || v->bc != 16 || v->type.kind == ZT_BF16))
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "2-D atomics on %s tiles on Xe",
                   zt_scalar_kind_name(v->type.kind));
  // The old values (a marked gather per row, after its atomic) land in
  // blocks like the value's: C-role values only (a replicated A-role value
  // is added by grid column 0 alone, whose old values no other subgroup has).
  if (old && (v->role != XE_ROLE_C || old->layout != XE_LAYOUT_BLOCK2D || old->br != v->br ||
              old->bc != v->bc || old->nbr != v->nbr || old->nbc != v->nbc))
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "old values of a 2-D atomic on a tile held in %s blocks on Xe",
                   v->role == XE_ROLE_C ? "other" : "replicated");
  // Each atomic row gets an id below 1024 within its atomic (atomic_id * 1024
  // + row); refused before any text is emitted for the tile, so a failed
  // emission leaves no compare store or row extract behind.
  if (atomic && (int64_t)v->nbr * v->nbc * v->br > 1024)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "a 2-D atomic of more than 1024 rows of 16 per subgroup on Xe");
  int row_id = 0;
  const char* mt = mem_elem(v->type.kind);
  xe_name_t old_zero = "";
  if (old) {
    char text[192];
    snprintf(text, sizeof text,
             "arith.constant {layout_result_0 = %s} dense<%s> : vector<%dx16x%s>",
             xe_layout_attr(old), zt_scalar_kind_is_float(v->type.kind) ? "0.0" : "0", v->br, mt);
    xe_hoist(e, text, true, old_zero);
  }
  xe_name_t row0, col0, col_once;
  tile_origin(e, v, row0, col0);
  copies_once(e, v, col_once);
  for (int32_t bi = 0; bi < v->nbr; ++bi) {
    for (int32_t bj = 0; bj < v->nbc; ++bj) {
      const char* blk = v->names[bi * v->nbc + bj];
      xe_name_t bits;
      if (v->type.kind == ZT_BF16) {
        // Rows travel as i16 bits: a bf16 vector would reach SPIR-V, which
        // needs SPV_KHR_bfloat16 for it.
        xe_fresh(e, bits);
        xe_line(e);
        zt_strbuf_printf(&e->body,
                         "%s = arith.bitcast %s {layout_result_0 = %s} : vector<%dx16xbf16> to "
                         "vector<%dx16xi16>%s\n",
                         bits, blk, xe_layout_attr(v), v->br, v->br, loc(e));
        blk = bits;
      }
      if (pairs) {
        xe_name_t c8;
        xe_hoist(e, "arith.constant {layout_result_0 = " XE_LAYOUT_ATTR
                    "} dense<8> : vector<16xi16>", true, c8);
        xe_fresh(e, bits);
        xe_line(e);
        zt_strbuf_printf(&e->body,
                         "%s = vector.bitcast %s {layout_result_0 = #zt_a} : vector<8x32xi8> to "
                         "vector<8x16xi16>%s\n",
                         bits, blk, loc(e));
        for (int r = 0; r < v->br; ++r) {
          xe_name_t ia, ib, word, hi, bytes[2];
          row_index(e, row0, (int64_t)bi * v->br + r, ia);
          offset_i32(e, col0, (int64_t)bj * 32, ib);
          xe_fresh(e, word);
          xe_line(e);
          zt_strbuf_printf(&e->body,
                           "%s = vector.extract %s[%d] {layout_result_0 = " XE_LAYOUT_ATTR
                           "} : vector<16xi16> from vector<8x16xi16>%s\n",
                           word, bits, r, loc(e));
          xe_fresh(e, hi);
          xe_line(e);
          zt_strbuf_printf(&e->body,
                           "%s = arith.shrui %s, %s {layout_result_0 = " XE_LAYOUT_ATTR
                           "} : vector<16xi16>%s\n",
                           hi, word, c8, loc(e));
          for (int h = 0; h < 2; ++h) {
            xe_fresh(e, bytes[h]);
            xe_line(e);
            zt_strbuf_printf(&e->body,
                             "%s = arith.trunci %s {layout_result_0 = " XE_LAYOUT_ATTR
                             "} : vector<16xi16> to vector<16xi8>%s\n",
                             bytes[h], h ? hi : word, loc(e));
            idx_t idx[2] = {{ia, false, !row0[0], (int64_t)bi * v->br + r, 0},
                            {ib, true, !col0[0], (int64_t)bj * 32, h + 1}};
            lval_t pv;
            xe_name_t mask, ix;
            ZT_RETURN_IF_ERROR(lane_ptr_mask(e, p, m, idx, col_once, "", &pv, mask));
            if (e->error) return NULL;
            lane_index(e, &pv, ix);
            xe_line(e);
            zt_strbuf_printf(&e->body,
                             "xegpu.store %s, %s[%s], %s <{layout = " XE_LAYOUT_ATTR
                             "}> : vector<16xi8>, i64, vector<16xindex>, vector<16xi1>%s\n",
                             bytes[h], pv.base, ix, mask, loc(e));
          }
        }
        continue;
      }
      xe_name_t old_acc;
      memcpy(old_acc, old_zero, sizeof old_acc);
      for (int r = 0; r < v->br; ++r) {
        xe_name_t ia, ib, pad;
        idx_t idx[2];
        block_row_index(e, v, row0, col0, bi, bj, r, ia, ib, idx, pad);
        lval_t pv;
        xe_name_t mask, ix, row;
        ZT_RETURN_IF_ERROR(lane_ptr_mask(e, p, m, idx, pad, col_once, &pv, mask));
        if (e->error) return NULL;
        xe_fresh(e, row);
        xe_line(e);
        zt_strbuf_printf(&e->body,
                         "%s = vector.extract %s[%d] {layout_result_0 = " XE_LAYOUT_ATTR
                         "} : vector<16x%s> from vector<%dx16x%s>%s\n",
                         row, blk, r, mt, v->br, mt, loc(e));
        lane_index(e, &pv, ix);
        if (c) {
          xe_name_t crow;
          xe_block_row(e, c, bi, bj, r, crow);
          xe_line(e);
          zt_strbuf_printf(&e->body,
                           "xegpu.store %s, %s[%s], %s <{layout = " XE_LAYOUT_ATTR
                           "}> {zt.atomic_cmp = %d : i64} : vector<16x%s>, i64, "
                           "vector<16xindex>, vector<16xi1>%s\n",
                           crow, pv.base, ix, mask, atomic_id * 1024 + row_id, mt, loc(e));
        }
        xe_line(e);
        if (atomic) {
          zt_strbuf_printf(&e->body,
                           "xegpu.store %s, %s[%s], %s <{layout = " XE_LAYOUT_ATTR
                           "}> {zt.atomic = \"%s\", zt.atomic_id = %d : i64} : vector<16x%s>, "
                           "i64, vector<16xindex>, vector<16xi1>%s\n",
                           row, pv.base, ix, mask, atomic, atomic_id * 1024 + row_id, mt,
                           loc(e));
          if (old) {
            xe_name_t g, ins;
            xe_fresh(e, g);
            xe_line(e);
            zt_strbuf_printf(&e->body,
                             "%s = xegpu.load %s[%s], %s <{layout = " XE_LAYOUT_ATTR
                             "}> {zt.atomic_result = %d : i64} : i64, vector<16xindex>, "
                             "vector<16xi1> -> vector<16x%s>%s\n",
                             g, pv.base, ix, mask, atomic_id * 1024 + row_id, mt, loc(e));
            if (r == v->br - 1) memcpy(ins, old->names[bi * v->nbc + bj], sizeof ins);
            else xe_fresh(e, ins);
            xe_line(e);
            zt_strbuf_printf(&e->body,
                             "%s = vector.insert %s, %s [%d] {layout_result_0 = %s} : "
                             "vector<16x%s> into vector<%dx16x%s>%s\n",
                             ins, g, old_acc, r, xe_layout_attr(old), mt, v->br, mt, loc(e));
            memcpy(old_acc, ins, sizeof old_acc);
          }
          ++row_id;
          continue;
        }
        zt_strbuf_printf(&e->body,
                         "xegpu.store %s, %s[%s], %s <{layout = " XE_LAYOUT_ATTR
                         "}> : vector<16x%s>, i64, vector<16xindex>, vector<16xi1>%s\n",
                         row, pv.base, ix, mask, mt, loc(e));
      }
    }
  }
  return NULL;
}

static zt_status_t emit_scatter(xe_emitter_t* e, MlirOperation op) {
  intptr_t no = mlirOperationGetNumOperands(op);
  return xe_scatter_2d(e, mlirOperationGetOperand(op, 0), mlirOperationGetOperand(op, 1),
                       no > 2 ? mlirOperationGetOperand(op, 2) : (MlirValue){NULL},
                       (MlirValue){NULL}, NULL, 0, NULL);
}


static zt_status_t dot_blocks(xe_emitter_t* e, MlirOperation op, xe_val_t* a, xe_val_t* b,
                              xe_val_t* c, bool int8, bool f32, zt_scalar_kind_t ak);

// tile.dot: one DPAS per (8-row block, 16-column block, 16-deep K step).
static zt_status_t emit_dot(xe_emitter_t* e, MlirOperation op) {
  xe_val_t* a = xe_lookup(e, mlirOperationGetOperand(op, 0));
  xe_val_t* b = xe_lookup(e, mlirOperationGetOperand(op, 1));
  xe_val_t* c = xe_lookup(e, mlirOperationGetOperand(op, 2));
  if (!a || !b || !c) return NULL;
  zt_scalar_kind_t ak = a->type.kind;
  bool int8 = ak == ZT_I8;
  if (int8 && (b->type.kind != ZT_I8 || c->type.kind != ZT_I32))
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "dot of %s x %s -> %s on Xe (int8 x int8 -> int32 for integers)",
                   zt_scalar_kind_name(ak), zt_scalar_kind_name(b->type.kind),
                   zt_scalar_kind_name(c->type.kind));
  if (int8) {
    bool uns = zt_dot_is_unsigned(op);
    // XeVM calls one builtin for every int8 DPAS; the linked shim decides its
    // signedness, so a module has one.
    if (e->used_int8_dpas && uns != e->used_uint8_dpas)
      return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                     "signed and unsigned int8 dots in one kernel on Xe");
    e->used_int8_dpas = true;
    e->used_uint8_dpas = uns;
  }
  bool f32 = ak == ZT_F32;
  if (!int8 && ((ak != ZT_F16 && ak != ZT_BF16 && ak != ZT_F32) || b->type.kind != ak ||
                c->type.kind != ZT_F32))
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "dot of %s x %s -> %s on Xe (fp16/bf16/fp32 inputs with fp32 "
                   "accumulation, int8 with int32)",
                   zt_scalar_kind_name(ak), zt_scalar_kind_name(b->type.kind),
                   zt_scalar_kind_name(c->type.kind));
  // Layout conversions the assignment recorded at the operands (xe_layout.c).
  xe_val_t a_view;
  const xe_layout_t *from = NULL, *to = NULL;
  xe_conv_tier_t tier = xe_assign_conversion(e->layouts, op, 0, &from, &to);
  if (tier == XE_CONV_REGISTERS && a->layout == XE_LAYOUT_BLOCK2D && a->role == XE_ROLE_C &&
      !a->narrow && a->br == 8 && a->bc == 16 && a->tc == a->type.shape[1] &&
      (ak == ZT_F16 || ak == ZT_BF16) && from->block[0] == 8 && from->block[1] == 16 &&
      from->lane_data[0] == 1 && from->lane_data[1] == 1) {
    // Accumulator-shaped 16-bit blocks (8x16, lane j holding column j) whose
    // rows this subgroup holds whole are A blocks register for register:
    // attention's P. The record is viewed as role A, nothing is emitted.
    a_view = *a;
    a_view.role = XE_ROLE_A;
    a = &a_view;
  }
  // Operands held in blocks of another role: the same blocks viewed in the
  // dot's role where the geometry is the same (one subgroup: C and A blocks
  // of a tile coincide), else moved through shared local memory
  // (xe_convert.c); the moved records are freed after the dot.
  xe_val_t views[3];
  xe_val_t* moved[3] = {NULL, NULL, NULL};
  for (int i = 0; i < 3; ++i) {
    xe_val_t* x = i == 0 ? a : i == 1 ? b : c;
    int want = i == 0 ? XE_ROLE_A : i == 1 ? XE_ROLE_B : XE_ROLE_C;
    if (x->layout != XE_LAYOUT_BLOCK2D || x->role == want) continue;
    xe_val_t* y = NULL;
    xe_val_t* like = xe_alloc_role(e, x->type, want);
    if (!like && e->error) {
      // No such geometry: the move below says why, or the refusal does.
      zt_status_free(e->error);
      e->error = NULL;
    }
    if (like && !like->narrow && !x->narrow && like->b16 == x->b16 && like->br == x->br &&
        like->bc == x->bc && like->tr == x->tr && like->tc == x->tc && like->nbr == x->nbr &&
        like->nbc == x->nbc && !strcmp(xe_layout_attr(like), xe_layout_attr(x))) {
      views[i] = *x;
      views[i].role = want;
      y = &views[i];
    }
    if (like) xe_free_val(like);
    if (!y && xe_convert_servable(x, want)) {
      y = moved[i] = xe_convert_blocks(e, x, want);
      if (!y) {
        for (int j = 0; j < i; ++j) xe_free_val(moved[j]);
        return NULL;  // e->error holds the reason (sticky)
      }
    }
    if (!y) {
      tier = xe_assign_conversion(e->layouts, op, i, &from, &to);
      zt_strbuf_t sb;
      zt_strbuf_init(&sb);
      if (tier != XE_CONV_NONE) {
        xe_layout_print(from, &sb);
        zt_strbuf_puts(&sb, " -> ");
        xe_layout_print(to, &sb);
      }
      zt_status_t st = xe_fail(e, ZT_STATUS_UNSUPPORTED,
                               "dot operand %d: %s blocks of %s (%s) into the dot's %s blocks%s%s%s "
                               "are not moved on Xe (shared local memory serves rows of 16 "
                               "lanes: not int8 operands or narrow tiles)",
                               i, x->role == XE_ROLE_A ? "A" : x->role == XE_ROLE_B ? "B" : "C",
                               zt_scalar_kind_name(x->type.kind), xe_layout_attr(x),
                               want == XE_ROLE_A ? "A" : want == XE_ROLE_B ? "B" : "C",
                               sb.data ? " (" : "", sb.data ? sb.data : "", sb.data ? ")" : "");
      zt_strbuf_deinit(&sb);
      for (int j = 0; j < i; ++j) xe_free_val(moved[j]);
      return st;
    }
    if (i == 0) a = y;
    else if (i == 1) b = y;
    else c = y;
  }
  zt_status_t st = dot_blocks(e, op, a, b, c, int8, f32, ak);
  for (int j = 0; j < 3; ++j) xe_free_val(moved[j]);
  return st;
}

// The tile.dot ops in op's block (a loop body, the kernel body).
static int dots_in_block(MlirOperation op) {
  MlirBlock b = mlirOperationGetBlock(op);
  int n = 0;
  for (MlirOperation o = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(o);
       o = mlirOperationGetNextInBlock(o))
    n += op_is(o, "tile.dot");
  return n;
}

// The DPAS of a dot whose operands are A, B and C blocks.
static zt_status_t dot_blocks(xe_emitter_t* e, MlirOperation op, xe_val_t* a, xe_val_t* b,
                              xe_val_t* c, bool int8, bool f32, zt_scalar_kind_t ak) {
  if (a->layout != XE_LAYOUT_BLOCK2D || a->role != XE_ROLE_A || b->layout != XE_LAYOUT_BLOCK2D ||
      b->role != XE_ROLE_B || c->layout != XE_LAYOUT_BLOCK2D || c->role != XE_ROLE_C)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "dot operands must come straight from loads on Xe (no ops between "
                   "the load and the dot yet)");
  // acc += dot(a, b): accumulate into acc directly when the dot starts
  // from zeros and its only use is that addition.
  MlirValue res = mlirOperationGetResult(op, 0);
  MlirOperation fused = {NULL};
  if (zt_is_zero_splat(mlirOperationGetOperand(op, 2))) {
    MlirOpOperand u = mlirValueGetFirstUse(res);
    if (!mlirOpOperandIsNull(u) && mlirOpOperandIsNull(mlirOpOperandGetNextUse(u)) &&
        op_is(mlirOpOperandGetOwner(u), int8 ? "arith.addi" : "arith.addf")) {
      MlirOperation add = mlirOpOperandGetOwner(u);
      MlirValue other = mlirOperationGetOperand(add, mlirOpOperandGetOperandNumber(u) ? 0 : 1);
      xe_val_t* x = find_rec(e, other);
      if (x && x->layout == XE_LAYOUT_BLOCK2D && x->role == XE_ROLE_C) {
        c = x;
        fused = add;
      }
    }
  }
  if (c->tc < 16)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "dots with fewer than 16 output columns on Xe");
  if (a->br != 8 || c->br != 8)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "dots of fewer than 8 rows (M < 8) on Xe");
  int ksteps = a->nbc;
  if (b->nbr != ksteps || a->nbr != c->nbr || b->nbc != c->nbc)
    return xe_fail(e, ZT_STATUS_INTERNAL, "dot block shapes do not match");
  xe_val_t* r = xe_alloc_for(e, res, c->type, XE_ROLE_C);
  if (!r) return NULL;
  if (f32) {
    // bf16 pieces and 3 or 6 DPAS per block (xe_dot_f32.c).
    zt_status_t st = xe_emit_dot_f32(e, op, a, b, c, r);
    if (st) {
      xe_free_val(r);
      return st;
    }
  }
  const char* at = xe_block_elem(ak);
  // K step by K step (issue 12) where the loads will sit at their first
  // reader (xe_sink_loads.c leaves regions with more than XE_SINK_MAX_DOTS
  // dots as written): a step holds its A blocks (one per output row block)
  // and one B block at a time, or its B blocks and one A block, whichever
  // is smaller. Finishing one output block before starting the next held
  // all of A's or all of B's blocks until the last row or column: attention
  // with head dim 128 on 8 subgroups spilled 182 registers on pvc's compat
  // path that way, 145 this way (Q read per step both times). The output
  // blocks are then all live from the first step, as they are at the end;
  // with every load at the region's top (the backward's dk/dv loop) that
  // only adds pressure (tutorial 06 backward w4 d64: 641 -> 1308 spilled),
  // so there the blocks go one after another: row by row (all of B waits
  // for the next row), or column by column (all of A waits) when A is the
  // smaller. Each accumulator's chain over k keeps its order either way
  // (the same sums, the same result). Nor when the output blocks alone
  // take more than half the register file: then every order spills, and
  // holding all of them from the first step spilled the most (tutorial 06
  // forward w4 d128: its P @ V accumulators are 32x128 fp32 per subgroup,
  // 256 registers: 1082 spilled with, 868 without; the same dot at w8, 128
  // registers, spills less with). ZETILE_XE_DOT_ORDER=blocks: always block
  // after block.
  const char* order = getenv("ZETILE_XE_DOT_ORDER");
  const xe_target_t* tg = e->target;
  int64_t regs = (int64_t)(tg->grf_large ? tg->grf_large : tg->grf_default) * tg->grf_bytes;
  int64_t out_bytes = (int64_t)c->nbr * c->nbc * c->br * 16 * 4;
  bool k_outer = dots_in_block(op) <= XE_SINK_MAX_DOTS && 2 * out_bytes <= regs &&
                 !(order && !strcmp(order, "blocks"));
  int32_t ab = a->br * a->bc, bb = b->br * 16;
  bool b_outer = c->nbr * ab + bb <= c->nbc * bb + ab;
  bool by_cols = c->nbr * ab < c->nbc * bb && c->nbc > 1;
  xe_name_t* cur = f32 ? NULL : calloc((size_t)c->nbr * (size_t)c->nbc, sizeof(xe_name_t));
  if (!f32 && !cur) {
    xe_free_val(r);
    return xe_fail(e, ZT_STATUS_INTERNAL, "out of memory in a dot");
  }
  for (int32_t i = 0; i < c->nbr && !f32; ++i)
    for (int32_t j = 0; j < c->nbc; ++j)
      memcpy(cur[i * c->nbc + j], c->names[i * c->nbc + j], sizeof(xe_name_t));
  int32_t total = ksteps * c->nbr * c->nbc;
  for (int32_t t = 0; t < total && !f32; ++t) {
    int32_t k, i, j;
    if (k_outer) {
      int32_t n_outer = b_outer ? c->nbc : c->nbr, n_inner = b_outer ? c->nbr : c->nbc;
      int32_t o = (t / n_inner) % n_outer, in = t % n_inner;
      k = t / (n_outer * n_inner);
      i = b_outer ? in : o;
      j = b_outer ? o : in;
    } else {
      int32_t blk = t / ksteps, n_inner = by_cols ? c->nbr : c->nbc;
      k = t % ksteps;
      i = by_cols ? blk % n_inner : blk / n_inner;
      j = by_cols ? blk / n_inner : blk % n_inner;
    }
    xe_name_t d;
    if (k == ksteps - 1) memcpy(d, r->names[i * r->nbc + j], sizeof d);
    else xe_fresh(e, d);
    xe_line(e);
    // fp16/bf16: 8x16 A, 16x16 B; int8: 8x32 A, 32x16 B (upstream calls
    // the s8_s8 builtin, which lowering/xe/compat/dpas_names.cl maps onto
    // IGC's i8_i8).
    const char* ct = int8 ? "i32" : "f32";
    zt_strbuf_printf(&e->body,
                     "%s = xegpu.dpas %s, %s, %s {layout_a = %s, layout_b = %s, "
                     "layout_cd = #zt_a%s} : vector<8x%dx%s>, vector<%dx16x%s>, "
                     "vector<8x16x%s> -> vector<8x16x%s>%s\n",
                     d, a->names[i * a->nbc + k], b->names[k * b->nbc + j],
                     cur[i * c->nbc + j], xe_layout_attr(a), xe_layout_attr(b),
                     a->pairs8 ? ", zt.a_pairs8" : "", a->bc, at, b->br, at, ct, ct,
                     loc(e));
    memcpy(cur[i * c->nbc + j], d, sizeof(xe_name_t));
  }
  free(cur);
  if (!mlirOperationIsNull(fused)) {
    xe_val_t* r2 = xe_alloc_for(e, mlirOperationGetResult(fused, 0), c->type, XE_ROLE_C);
    if (!r2) {
      xe_free_val(r);
      return NULL;
    }
    memcpy(r2->names, r->names, (size_t)r->nchunks * sizeof(xe_name_t));
    xe_bind(e, mlirOperationGetResult(fused, 0), r2);
  }
  xe_bind(e, res, r);
  return NULL;
}

// f32 -> bf16 rounds to nearest even on the bits: upstream's arith.truncf
// to bf16 does not reach SPIR-V without SPV_KHR_bfloat16, which IGC 2022
// would read as half (XEGPU_NOTES b2/b3).
// Elementwise ops on 2-D float tiles (and casts between them).
// block[rr] = row (a 16-lane vector) in *block (vector<br x 16 x et>, layout
// attribute attr): a fresh name replaces *block.
void xe_block_insert_row(xe_emitter_t* e, const char* row, xe_name_t block, int rr,
                         const char* et, int32_t br, const char* attr) {
  xe_name_t nb;
  xe_fresh(e, nb);
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "%s = vector.insert %s, %s [%d] {layout_result_0 = %s} : vector<16x%s> "
                   "into vector<%dx16x%s>%s\n",
                   nb, row, block, rr, attr, et, br, et, loc(e));
  memcpy(block, nb, sizeof nb);
}

// A lazy 2-D integer or i1 value (index arithmetic, masks) as blocks laid
// out like `like` (role C): each block row is the lazy expression evaluated
// at that row (the evaluation loads and stores use), inserted row by row.
// A new record, not bound.
// `cast` (optional): an op name applied to each row first ("arith.extui"
// to `cast_kind`): i1 masks become integer or float rows before they are put
// into blocks, so that no vector of i1 is built (IGC's SPIR-V reader aborts
// on the logical ops LLVM then makes of such vectors).
static xe_val_t* materialize_lazy_as(xe_emitter_t* e, MlirValue v, const xe_val_t* like,
                                     const char* cast, zt_scalar_kind_t cast_kind) {
  zt_type_t t;
  if (xe_tile_type(e, mlirValueGetType(v), &t) || t.kind == ZT_PTR || t.rank != 2) {
    xe_fail(e, ZT_STATUS_UNSUPPORTED, "2-D pointer tensors as values on Xe");
    return NULL;
  }
  zt_scalar_kind_t from = t.kind;
  if (cast) t.kind = cast_kind;
  xe_val_t* r = xe_alloc_blocks(e, t, xe_alloc_role_like(like));
  if (!r) return NULL;
  if (r->layout != XE_LAYOUT_BLOCK2D || r->br != like->br || r->nbr != like->nbr ||
      r->nbc != like->nbc || r->bc != 16) {
    xe_free_val(r);
    xe_fail(e, ZT_STATUS_UNSUPPORTED, "a 2-D integer/mask operand of this layout on Xe");
    return NULL;
  }
  const char* et = xe_block_elem(t.kind);
  xe_name_t zero, row0, col0;
  xe_zero_block(e, t.kind, et, r->br, xe_layout_attr(r), zero);
  tile_origin(e, r, row0, col0);
  for (int32_t bi = 0; bi < r->nbr && !e->error; ++bi)
    for (int32_t bj = 0; bj < r->nbc && !e->error; ++bj) {
      xe_name_t acc;
      memcpy(acc, zero, sizeof acc);
      for (int rr = 0; rr < r->br && !e->error; ++rr) {
        xe_name_t ia, ib, pad;
        idx_t idx[2];
        block_row_index(e, r, row0, col0, bi, bj, rr, ia, ib, idx, pad);
        lval_t lv;
        e->lazy_at.set = true;
        e->lazy_at.bi = bi, e->lazy_at.bj = bj, e->lazy_at.rr = rr;
        e->lazy_at.br = r->br, e->lazy_at.nbr = r->nbr, e->lazy_at.nbc = r->nbc;
        zt_status_t st = lazy_eval(e, v, idx, &lv);
        e->lazy_at.set = false;
        if (st && !e->error) e->error = st;  // callers see a NULL record and e->error
        else zt_status_free(st);
        if (e->error) break;
        to_vec(e, &lv);
        if (cast) {
          xe_name_t c;
          xe_fresh(e, c);
          xe_line(e);
          zt_strbuf_printf(&e->body,
                           "%s = %s %s {layout_result_0 = " XE_LAYOUT_ATTR
                           "} : vector<16x%s> to vector<16x%s>%s\n",
                           c, cast, lv.v, xe_block_elem(from), et, loc(e));
          memcpy(lv.v, c, sizeof c);
        }
        xe_block_insert_row(e, lv.v, acc, rr, et, r->br, xe_layout_attr(r));
      }
      memcpy(r->names[bi * r->nbc + bj], acc, sizeof acc);
    }
  if (e->error) {
    xe_free_val(r);
    return NULL;
  }
  return r;
}

static xe_val_t* materialize_lazy(xe_emitter_t* e, MlirValue v, const xe_val_t* like) {
  return materialize_lazy_as(e, v, like, NULL, ZT_I32);
}

xe_val_t* xe_materialize_lazy(xe_emitter_t* e, MlirValue v, const xe_val_t* like) {
  return materialize_lazy(e, v, like);
}

// An elementwise op on a narrow tile with index arithmetic or a mask among
// its operands, row by row: a narrow block row is one column, whose index is
// a constant, so lazy rows fold to constants, and a 2-D mask block built of
// such constants is a non-splat constant upstream does not distribute
// (22.1.8). Rows are 16-lane vectors instead; the result rows go into blocks.
static zt_status_t elementwise_rows(xe_emitter_t* e, MlirOperation op, xe_val_t** ops, int no,
                                    xe_val_t* r) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  char name[64];
  snprintf(name, sizeof name, "%.*s", (int)n.length, n.data);
  zt_strbuf_t props;
  zt_strbuf_init(&props);
  xe_op_props(op, &props);
  const char* et = xe_block_elem(r->type.kind);
  xe_name_t zero, row0, col0;
  xe_zero_block(e, r->type.kind, et, r->br, xe_layout_attr(r), zero);
  tile_origin(e, r, row0, col0);
  zt_status_t s = NULL;
  xe_name_t rows[3];
  for (int32_t bi = 0; bi < r->nbr && !s && !e->error; ++bi) {
    xe_name_t blk;
    memcpy(blk, zero, sizeof blk);
    for (int32_t j = 0; j < r->br && !s && !e->error; ++j) {
      xe_val_t recs[3], *rp[3];
      for (int i = 0; i < no && !s; ++i) {
        rp[i] = ops[i];
        if (ops[i]->layout == XE_LAYOUT_SCALAR) continue;
        zt_scalar_kind_t k = ops[i]->type.kind;
        if (ops[i]->layout == XE_LAYOUT_LAZY) {
          xe_name_t ia, ib, pad;
          idx_t idx[2];
          lval_t lv;
          block_row_index(e, r, row0, col0, bi, 0, j, ia, ib, idx, pad);
          e->lazy_at.set = true;
          e->lazy_at.bi = bi, e->lazy_at.bj = 0, e->lazy_at.rr = j;
          e->lazy_at.br = r->br, e->lazy_at.nbr = r->nbr, e->lazy_at.nbc = r->nbc;
          s = lazy_eval(e, mlirOperationGetOperand(op, i), idx, &lv);
          e->lazy_at.set = false;
          if (s || e->error) break;
          to_vec(e, &lv);
          memcpy(rows[i], lv.v, sizeof rows[i]);
          k = lv.kind;
        } else {
          xe_block_row(e, ops[i], bi, 0, j, rows[i]);
        }
        memset(&recs[i], 0, sizeof recs[i]);
        recs[i].layout = XE_LAYOUT_ROW16;
        recs[i].type = zt_type_tensor(zt_type_scalar(k), 1, (int64_t[]){16});
        recs[i].numel = 16;
        recs[i].nchunks = 1;
        recs[i].names = &rows[i];
        rp[i] = &recs[i];
      }
      if (s || e->error) break;
      xe_val_t* out = NULL;
      int save_nsg = e->nsg;
      e->nsg = 1;  // a 16-lane temporary, never split
      s = xe_emit_elementwise(e, name, props.data, rp, no,
                              zt_type_tensor(zt_type_scalar(r->type.kind), 1, (int64_t[]){16}),
                              &out);
      e->nsg = save_nsg;
      if (!s && out) xe_block_insert_row(e, out->names[0], blk, j, et, r->br, xe_layout_attr(r));
      xe_free_val(out);
    }
    memcpy(r->names[bi], blk, sizeof blk);
  }
  zt_strbuf_deinit(&props);
  return s;
}

// int8 arithmetic on an int8 dot's operand (`a - zero` before tl.dot(a, b)
// into int32, or int8 bits in a 16-bit dot's places): every element stays
// where the operand's layout put it (8x32 A blocks with lane pairs, 32x16
// VNNI B blocks, or the 16-bit places), so the op is emitted on those blocks
// as they are; scalars are broadcast to the block. Index arithmetic or masks
// (which would have to be evaluated in the pair layout) are refused.
static zt_status_t i8_operand_elementwise(xe_emitter_t* e, MlirOperation op,
                                          xe_val_t* const* given, intptr_t no,
                                          const xe_val_t* shape, zt_type_t rt) {
  xe_val_t* ops[3];
  for (intptr_t i = 0; i < no; ++i) {
    const xe_val_t* x = ops[i] = given[i];
    // A splat (`a - 1`): its scalar, broadcast below.
    MlirValue v = mlirOperationGetOperand(op, i);
    if (x->layout != XE_LAYOUT_BLOCK2D && mlirValueIsAOpResult(v) &&
        op_is(mlirOpResultGetOwner(v), "tile.splat")) {
      x = ops[i] = xe_lookup(e, mlirOperationGetOperand(mlirOpResultGetOwner(v), 0));
      if (!x) return NULL;
    }
    if (x->layout == XE_LAYOUT_SCALAR && x->type.kind == ZT_I8) continue;
    if (x->layout != XE_LAYOUT_BLOCK2D || x->type.kind != ZT_I8 || x->role != shape->role ||
        x->b16 != shape->b16 || x->br != shape->br || x->bc != shape->bc || x->nbr != shape->nbr ||
        x->nbc != shape->nbc || x->narrow)
      return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                     "int8 arithmetic before a dot mixing its operand with index arithmetic, "
                     "masks or values of another layout on Xe");
  }
  MlirValue res = mlirOperationGetResult(op, 0);
  int role = shape->b16 ? (shape->role == XE_ROLE_A ? XE_ROLE_AW : XE_ROLE_BW) : shape->role;
  xe_val_t* r = xe_alloc_for(e, res, rt, role);
  if (!r) return NULL;
  if (r->layout != XE_LAYOUT_BLOCK2D || r->br != shape->br || r->bc != shape->bc ||
      r->nbr != shape->nbr || r->nbc != shape->nbc) {
    xe_free_val(r);
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "int8 arithmetic whose result the dot reads in other blocks on Xe");
  }
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  char vt[48], lattr[48];
  snprintf(vt, sizeof vt, "vector<%dx%dxi8>", r->br, r->bc);
  snprintf(lattr, sizeof lattr, "{layout_result_0 = %s}", xe_layout_attr(r));
  xe_name_t bc[3];
  for (intptr_t i = 0; i < no; ++i) {
    if (ops[i]->layout != XE_LAYOUT_SCALAR) continue;
    xe_fresh(e, bc[i]);
    xe_line(e);
    zt_strbuf_printf(&e->body, "%s = vector.broadcast %s %s : i8 to %s%s\n", bc[i],
                     ops[i]->names[0], lattr, vt, loc(e));
  }
  // (Integer ops only: no predicate, fastmath or rounding properties.)
  if (r->bc * r->br > 16 * 16) {
    // 32x16 B blocks: a lane's 32 bytes are one <32 x i8> vector, which
    // LLVM 22's SPIR-V backend cannot take apart ("unable to legalize
    // G_UNMERGE_VALUES" into <16 x s8> halves or s8 elements). So the lane's
    // registers are viewed as 8 dwords (the zt.lane_regs marker, as the
    // transposed reads use), and the op runs on each of the four byte
    // positions in turn (shift, truncate, op, widen, shift back, or): only
    // <8 x i32> and <8 x i8> vectors per lane. Elementwise, so which bytes
    // meet in a dword does not matter.
    xe_name_t w[3], acc = "", b8[3];
    for (intptr_t i = 0; i < no; ++i)
      if (ops[i]->layout == XE_LAYOUT_SCALAR) {
        xe_fresh(e, b8[i]);
        xe_line(e);
        zt_strbuf_printf(&e->body,
                         "%s = vector.broadcast %s {layout_result_0 = #zt_a} : i8 to "
                         "vector<8x16xi8>%s\n",
                         b8[i], ops[i]->names[0], loc(e));
      }
    for (int32_t k = 0; k < r->nbr * r->nbc; ++k) {
      for (intptr_t i = 0; i < no; ++i) {
        if (ops[i]->layout == XE_LAYOUT_SCALAR) continue;
        xe_fresh(e, w[i]);
        xe_line(e);
        zt_strbuf_printf(&e->body,
                         "%s = builtin.unrealized_conversion_cast %s : %s to vector<8x16xi32> "
                         "{zt.lane_regs}%s\n",
                         w[i], ops[i]->names[k], vt, loc(e));
      }
      acc[0] = 0;
      for (int j = 0; j < 4; ++j) {
        xe_name_t sh, x[3], res, wide, up;
        char text[160];
        snprintf(text, sizeof text,
                 "arith.constant {layout_result_0 = #zt_a} dense<%d> : vector<8x16xi32>", 8 * j);
        xe_hoist(e, text, true, sh);
        for (intptr_t i = 0; i < no; ++i) {
          if (ops[i]->layout == XE_LAYOUT_SCALAR) {
            memcpy(x[i], b8[i], sizeof x[i]);
            continue;
          }
          xe_name_t s2;
          memcpy(s2, w[i], sizeof s2);
          if (j) {
            xe_fresh(e, s2);
            xe_line(e);
            zt_strbuf_printf(&e->body,
                             "%s = arith.shrui %s, %s {layout_result_0 = #zt_a} : "
                             "vector<8x16xi32>%s\n",
                             s2, w[i], sh, loc(e));
          }
          xe_fresh(e, x[i]);
          xe_line(e);
          zt_strbuf_printf(&e->body,
                           "%s = arith.trunci %s {layout_result_0 = #zt_a} : vector<8x16xi32> "
                           "to vector<8x16xi8>%s\n",
                           x[i], s2, loc(e));
        }
        xe_fresh(e, res);
        xe_line(e);
        zt_strbuf_printf(&e->body, "%s = \"%.*s\"(", res, (int)n.length, n.data);
        for (intptr_t i = 0; i < no; ++i) zt_strbuf_printf(&e->body, "%s%s", i ? ", " : "", x[i]);
        zt_strbuf_printf(&e->body, ") {layout_result_0 = #zt_a} : (");
        for (intptr_t i = 0; i < no; ++i)
          zt_strbuf_printf(&e->body, "%svector<8x16xi8>", i ? ", " : "");
        zt_strbuf_printf(&e->body, ") -> vector<8x16xi8>%s\n", loc(e));
        xe_fresh(e, wide);
        xe_line(e);
        zt_strbuf_printf(&e->body,
                         "%s = arith.extui %s {layout_result_0 = #zt_a} : vector<8x16xi8> to "
                         "vector<8x16xi32>%s\n",
                         wide, res, loc(e));
        memcpy(up, wide, sizeof up);
        if (j) {
          xe_fresh(e, up);
          xe_line(e);
          zt_strbuf_printf(&e->body,
                           "%s = arith.shli %s, %s {layout_result_0 = #zt_a} : "
                           "vector<8x16xi32>%s\n",
                           up, wide, sh, loc(e));
        }
        if (acc[0]) {
          xe_name_t o;
          xe_fresh(e, o);
          xe_line(e);
          zt_strbuf_printf(&e->body,
                           "%s = arith.ori %s, %s {layout_result_0 = #zt_a} : "
                           "vector<8x16xi32>%s\n",
                           o, acc, up, loc(e));
          memcpy(acc, o, sizeof acc);
        } else {
          memcpy(acc, up, sizeof acc);
        }
      }
      xe_line(e);
      zt_strbuf_printf(&e->body,
                       "%s = builtin.unrealized_conversion_cast %s : vector<8x16xi32> to %s "
                       "{zt.lane_regs}%s\n",
                       r->names[k], acc, vt, loc(e));
    }
    xe_bind(e, res, r);
    return NULL;
  }
  for (int32_t k = 0; k < r->nbr * r->nbc; ++k) {
    xe_line(e);
    zt_strbuf_printf(&e->body, "%s = \"%.*s\"(", r->names[k], (int)n.length, n.data);
    for (intptr_t i = 0; i < no; ++i)
      zt_strbuf_printf(&e->body, "%s%s", i ? ", " : "",
                       ops[i]->layout == XE_LAYOUT_SCALAR ? bc[i] : ops[i]->names[k]);
    zt_strbuf_printf(&e->body, ") %s : (", lattr);
    for (intptr_t i = 0; i < no; ++i) zt_strbuf_printf(&e->body, "%s%s", i ? ", " : "", vt);
    zt_strbuf_printf(&e->body, ") -> %s%s\n", vt, loc(e));
  }
  xe_bind(e, res, r);
  return NULL;
}

// given: the op's operand records (at most 3), looked up by the caller.
static zt_status_t emit_block_elementwise_ops(xe_emitter_t* e, MlirOperation op,
                                              xe_val_t* const* given) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  xe_note_libm(e, n);
  intptr_t no = mlirOperationGetNumOperands(op);
  xe_val_t* ops[3];
  bool lazy[3] = {false, false, false};
  const xe_val_t* shape = NULL;
  for (intptr_t i = 0; i < no; ++i) {
    ops[i] = given[i];
    lazy[i] = ops[i]->layout == XE_LAYOUT_LAZY;
    if (ops[i]->layout == XE_LAYOUT_BLOCK2D) {
      if (shape && (shape->role != ops[i]->role ||
                    (shape->b16 != ops[i]->b16 && shape->br != ops[i]->br)))
        return xe_fail(e, ZT_STATUS_UNSUPPORTED, "2-D operands of different layouts");
      shape = ops[i];
    }
  }
  MlirValue res = mlirOperationGetResult(op, 0);
  zt_type_t rt;
  ZT_RETURN_IF_ERROR(xe_tile_type(e, mlirValueGetType(res), &rt));
  if (shape && rt.kind == ZT_I8 && shape->type.kind == ZT_I8 && !shape->narrow &&
      (shape->role == XE_ROLE_A || shape->role == XE_ROLE_B))
    return i8_operand_elementwise(e, op, ops, no, shape, rt);
  if ((shape && shape->bc != 16) || rt.kind == ZT_I8)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "elementwise ops on int8 tiles on Xe (int8 tiles go straight from "
                   "block loads into tl.dot)");
  static const char* const casts[] = {"arith.extui", "arith.extsi", "arith.uitofp",
                                      "arith.sitofp", "arith.trunci"};
  for (size_t i = 0; no == 1 && lazy[0] && i < sizeof casts / sizeof *casts; ++i) {
    if (!name_is(n, casts[i]) || rt.kind == ZT_BF16) continue;
    // A cast of index arithmetic or a mask: its rows, cast, are the blocks.
    xe_val_t* like = xe_alloc_for(e, res, rt, XE_ROLE_C);
    if (!like) return NULL;
    xe_val_t* m = like->layout == XE_LAYOUT_BLOCK2D
                      ? materialize_lazy_as(e, mlirOperationGetOperand(op, 0), like, casts[i],
                                            rt.kind)
                      : NULL;
    xe_free_val(like);
    if (!m) return e->error ? NULL : xe_fail(e, ZT_STATUS_UNSUPPORTED, "a 2-D cast on Xe");
    xe_bind(e, res, m);
    return NULL;
  }
  int role = shape ? xe_alloc_role_like(shape) : XE_ROLE_C;
  // B operand places: one element per slot (b16) or the dot's packing; the
  // two are the same registers for 16x16 blocks of 16-bit elements and for
  // a cast between widths (sitofp i8 -> f16: lane j keeps column j, rows in
  // order), so the result takes the one the assignment gave it.
  if (shape && shape->role == XE_ROLE_B) {
    int want = xe_matrix_role(e, res);
    if ((want == XE_ROLE_B || want == XE_ROLE_BW) && shape->br == 16) role = want;
  }
  // A operand places likewise: int8 bits in 8x16 A blocks (b16) and their
  // fp16 conversion are the same places.
  if (shape && shape->role == XE_ROLE_A) {
    int want = xe_matrix_role(e, res);
    if (want == XE_ROLE_A || want == XE_ROLE_AW) role = want;
  }
  // The assignment may want the result as a dot's A operand where its
  // operands are accumulator-shaped (attention's P = exp2(...).to(fp16)):
  // with a register-tier conversion the blocks are the same registers.
  const xe_layout_t* rl = xe_assign_get(e->layouts, res);
  if (shape && role == XE_ROLE_C && rl && rl->kind == XE_LK_DPAS && rl->operand == XE_DPAS_A &&
      (rt.kind == ZT_F16 || rt.kind == ZT_BF16) && !shape->narrow && shape->br == 8 &&
      rl->block[0] == 8 && rl->block[1] == 16 && rl->lane_data[1] == 1) {
    bool regs = true;
    for (intptr_t i = 0; i < no; ++i)
      if (ops[i]->layout == XE_LAYOUT_BLOCK2D &&
          xe_assign_conversion(e->layouts, op, (int)i, NULL, NULL) != XE_CONV_REGISTERS)
        regs = false;
    if (regs) role = XE_ROLE_A;
  }
  // A dot operand computed here from values in another layout (the
  // assignment recorded a lanes/SLM conversion at this op's operands): the
  // result keeps its operands' blocks and the dot moves it into its role
  // (emit_dot, xe_convert.c), after the op, where it is narrowest when the
  // op is a cast to 16 bits.
  xe_val_t* r = xe_alloc_for(e, res, rt, role);
  if (!r) return NULL;
  if (r->role != (shape ? shape->role : XE_ROLE_C) &&
      (r->layout != XE_LAYOUT_BLOCK2D || r->nbr != shape->nbr || r->nbc != shape->nbc ||
       r->br != shape->br)) {
    xe_free_val(r);
    return xe_fail(e, ZT_STATUS_INTERNAL, "accumulator blocks do not line up with A blocks");
  }
  bool any_lazy = false, any_bf16 = rt.kind == ZT_BF16;
  for (intptr_t i = 0; i < no; ++i) {
    any_lazy |= lazy[i];
    any_bf16 |= ops[i]->type.kind == ZT_BF16;
  }
  if (r->layout == XE_LAYOUT_BLOCK2D && r->narrow && any_lazy && !any_bf16) {
    zt_status_t s = elementwise_rows(e, op, ops, (int)no, r);
    if (s || e->error) {
      xe_free_val(r);
      return s;
    }
    xe_bind(e, res, r);
    return NULL;
  }
  // Index arithmetic and masks meeting data (a one-hot matrix times a
  // tensor, a select on a 2-D mask): evaluated into blocks here.
  xe_val_t* made[3] = {NULL, NULL, NULL};
  for (intptr_t i = 0; i < no; ++i) {
    if (!lazy[i]) continue;
    if (r->layout != XE_LAYOUT_BLOCK2D ||
        !(made[i] = materialize_lazy(e, mlirOperationGetOperand(op, i), r))) {
      for (intptr_t j = 0; j < i; ++j) xe_free_val(made[j]);
      xe_free_val(r);
      return e->error ? NULL
                      : xe_fail(e, ZT_STATUS_UNSUPPORTED,
                                "2-D op mixing index arithmetic and data on Xe");
    }
    ops[i] = made[i];
  }
  const char* la = xe_layout_attr(r);
  char lattr[48];
  snprintf(lattr, sizeof lattr, "{layout_result_0 = %s}", la);
  // Unsupported bf16 forms are refused before anything is emitted.
  char name[64];
  snprintf(name, sizeof name, "%.*s", (int)n.length, n.data);
  // Integers of up to 16 bits (int8 tiles on their way to a bf16 dot) are
  // exact in f32: converted there, then rounded once to bf16 below.
  bool int_to_bf16 = (name_is(n, "arith.sitofp") || name_is(n, "arith.uitofp")) &&
                     rt.kind == ZT_BF16 && zt_scalar_kind_is_int(ops[0]->type.kind) &&
                     zt_scalar_kind_bits(ops[0]->type.kind) <= 16;
  bool to_bf16 = (name_is(n, "arith.truncf") && rt.kind == ZT_BF16) || int_to_bf16;
  bool from_bf16 = name_is(n, "arith.extf") && ops[0]->type.kind == ZT_BF16;
  bool bf16_scalar = false;
  for (intptr_t i = 0; i < no; ++i)
    bf16_scalar |= ops[i]->layout == XE_LAYOUT_SCALAR && ops[i]->type.kind == ZT_BF16;
  if (bf16_scalar || (rt.kind == ZT_BF16 && !to_bf16) ||
      (!from_bf16 && ops[0]->type.kind == ZT_BF16 && !name_is(n, "arith.extf"))) {
    for (intptr_t i = 0; i < no; ++i) xe_free_val(made[i]);
    xe_free_val(r);
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   bf16_scalar ? "bf16 scalars on Xe"
                               : "bf16 arithmetic on Xe (convert to f32 with .to(tl.float32))");
  }
  // Scalars broadcast once.
  xe_name_t bc[3];
  for (intptr_t i = 0; i < no; ++i) {
    if (ops[i]->layout != XE_LAYOUT_SCALAR) continue;
    xe_fresh(e, bc[i]);
    xe_line(e);
    const char* t = xe_block_elem(ops[i]->type.kind);
    zt_strbuf_printf(&e->body, "%s = vector.broadcast %s %s : %s to vector<%dx16x%s>%s\n",
                     bc[i], ops[i]->names[0], lattr, t, r->br, t, loc(e));
  }
  zt_strbuf_t props;
  zt_strbuf_init(&props);
  static const char* const pn[] = {"predicate", "fastmath", "roundingmode"};
  int np = 0;
  for (size_t i = 0; i < 3; ++i) {
    MlirAttribute a = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(pn[i]));
    if (mlirAttributeIsNull(a)) continue;
    zt_strbuf_puts(&props, np++ ? ", " : "<{");
    zt_strbuf_printf(&props, "%s = ", pn[i]);
    xe_print_attr(a, &props);
  }
  if (np) zt_strbuf_puts(&props, "}>");
  char vt32[48], vt16[48], vtbf[48], vti1[48];
  snprintf(vt32, sizeof vt32, "vector<%dx16xi32>", r->br);
  snprintf(vt16, sizeof vt16, "vector<%dx16xi16>", r->br);
  snprintf(vtbf, sizeof vtbf, "vector<%dx16xbf16>", r->br);
  snprintf(vti1, sizeof vti1, "vector<%dx16xi1>", r->br);
  for (int32_t k = 0; k < r->nchunks; ++k) {
    if (to_bf16) {
      // Integer round-to-nearest-even, then bits -> bf16.
      xe_name_t bits, sh, lsb, bias, sum, rnd, isnan, sel, tr, c16, c1, c7fff, cnan;
      char text[256];
      const char* x = ops[0]->names[k];
      xe_name_t xf;
      if (int_to_bf16) {
        xe_fresh(e, xf);
        xe_line(e);
        zt_strbuf_printf(&e->body, "%s = %s %s %s : vector<%dx16x%s> to vector<%dx16xf32>%s\n",
                         xf, name, x, lattr, r->br, xe_block_elem(ops[0]->type.kind), r->br,
                         loc(e));
        x = xf;
      }
#define XE_VC(nm, val)                                                                 \
  snprintf(text, sizeof text, "arith.constant %s dense<%s> : %s", lattr, val, vt32); \
  xe_hoist(e, text, true, nm)
      XE_VC(c16, "16");
      XE_VC(c1, "1");
      XE_VC(c7fff, "32767");
      XE_VC(cnan, "32704");
#undef XE_VC
#define XE_OP(dst, ...)                                    \
  do {                                                     \
    xe_fresh(e, dst);                                      \
    xe_line(e);                                            \
    zt_strbuf_printf(&e->body, "%s = ", dst);              \
    zt_strbuf_printf(&e->body, __VA_ARGS__);               \
    zt_strbuf_printf(&e->body, "%s\n", loc(e));            \
  } while (0)
      XE_OP(bits, "arith.bitcast %s %s : vector<%dx16xf32> to %s", x, lattr, r->br, vt32);
      XE_OP(sh, "arith.shrui %s, %s %s : %s", bits, c16, lattr, vt32);
      XE_OP(lsb, "arith.andi %s, %s %s : %s", sh, c1, lattr, vt32);
      XE_OP(bias, "arith.addi %s, %s %s : %s", c7fff, lsb, lattr, vt32);
      XE_OP(sum, "arith.addi %s, %s %s : %s", bits, bias, lattr, vt32);
      XE_OP(rnd, "arith.shrui %s, %s %s : %s", sum, c16, lattr, vt32);
      XE_OP(isnan, "arith.cmpf uno, %s, %s %s : vector<%dx16xf32>", x, x, lattr, r->br);
      XE_OP(sel, "arith.select %s, %s, %s %s : %s, %s", isnan, cnan, rnd, lattr, vti1, vt32);
      XE_OP(tr, "arith.trunci %s %s : %s to %s", sel, lattr, vt32, vt16);
#undef XE_OP
      xe_line(e);
      zt_strbuf_printf(&e->body, "%s = arith.bitcast %s %s : %s to %s%s\n", r->names[k], tr,
                       lattr, vt16, vtbf, loc(e));
      continue;
    }
    if (from_bf16) {
      xe_name_t b16, b32, c16, sh;
      char text[256];
      snprintf(text, sizeof text, "arith.constant %s dense<16> : %s", lattr, vt32);
      xe_hoist(e, text, true, c16);
      xe_fresh(e, b16);
      xe_line(e);
      zt_strbuf_printf(&e->body, "%s = arith.bitcast %s %s : %s to %s%s\n", b16,
                       ops[0]->names[k], lattr, vtbf, vt16, loc(e));
      xe_fresh(e, b32);
      xe_line(e);
      zt_strbuf_printf(&e->body, "%s = arith.extui %s %s : %s to %s%s\n", b32, b16, lattr, vt16,
                       vt32, loc(e));
      xe_fresh(e, sh);
      xe_line(e);
      zt_strbuf_printf(&e->body, "%s = arith.shli %s, %s %s : %s%s\n", sh, b32, c16, lattr, vt32,
                       loc(e));
      xe_line(e);
      zt_strbuf_printf(&e->body, "%s = arith.bitcast %s %s : %s to vector<%dx16x%s>%s\n",
                       r->names[k], sh, lattr, vt32, r->br, xe_block_elem(rt.kind), loc(e));
      continue;
    }
    xe_line(e);
    zt_strbuf_printf(&e->body, "%s = \"%s\"(", r->names[k], name);
    for (intptr_t i = 0; i < no; ++i)
      zt_strbuf_printf(&e->body, "%s%s", i ? ", " : "",
                       ops[i]->layout == XE_LAYOUT_SCALAR ? bc[i] : ops[i]->names[k]);
    zt_strbuf_printf(&e->body, ") %s %s : (", props.data ? props.data : "", lattr);
    for (intptr_t i = 0; i < no; ++i)
      zt_strbuf_printf(&e->body, "%svector<%dx16x%s>", i ? ", " : "", r->br,
                       xe_block_elem(ops[i]->type.kind));
    zt_strbuf_printf(&e->body, ") -> vector<%dx16x%s>%s\n", r->br, xe_block_elem(rt.kind), loc(e));
  }
  zt_strbuf_deinit(&props);
  for (intptr_t i = 0; i < no; ++i) xe_free_val(made[i]);
  xe_bind(e, res, r);
  return NULL;
}

// Operands of one elementwise op held in blocks of different roles (an
// accumulator-shaped f32 tile and a splat the assignment placed as a dot's
// A operand: attention backward's `tl.where(mask, pT, 0.0)` when pT's whole
// chain feeds an A operand): the same blocks viewed in the first operand's
// role where the geometry coincides (as emit_dot does), else moved by the
// conversion tiers (xe_convert.c); the moved records are freed after.
static zt_status_t emit_block_elementwise(xe_emitter_t* e, MlirOperation op) {
  intptr_t no = mlirOperationGetNumOperands(op);
  if (no > 3) return xe_fail(e, ZT_STATUS_UNSUPPORTED, "%d operands", (int)no);
  xe_val_t* ops[3];
  const xe_val_t* first = NULL;
  bool mixed = false;
  for (intptr_t i = 0; i < no; ++i) {
    ops[i] = xe_lookup(e, mlirOperationGetOperand(op, i));
    if (!ops[i]) return NULL;
    if (ops[i]->layout != XE_LAYOUT_BLOCK2D) continue;
    if (!first) first = ops[i];
    else if (ops[i]->role != first->role) mixed = true;
  }
  if (!mixed) return emit_block_elementwise_ops(e, op, ops);
  xe_val_t views[3];
  xe_val_t* moved[3] = {NULL, NULL, NULL};
  int want = first->role;
  for (intptr_t i = 0; i < no; ++i) {
    xe_val_t* x = ops[i];
    if (x->layout != XE_LAYOUT_BLOCK2D || x->role == want) continue;
    bool view = !x->narrow && !first->narrow && x->b16 == first->b16 && x->br == first->br &&
                x->bc == first->bc && x->tr == first->tr && x->tc == first->tc &&
                x->nbr == first->nbr && x->nbc == first->nbc &&
                !strcmp(xe_layout_attr(x), xe_layout_attr(first));
    if (view) {
      views[i] = *x;
      views[i].role = want;
      ops[i] = &views[i];
    } else if (xe_convert_servable(x, want)) {
      ops[i] = moved[i] = xe_convert_blocks(e, x, want);
      if (!ops[i]) break;  // e->error holds the reason
    } else {
      break;  // the impl's check names it
    }
  }
  zt_status_t s = e->error ? NULL : emit_block_elementwise_ops(e, op, ops);
  for (int i = 0; i < 3; ++i) xe_free_val(moved[i]);
  return s;
}

static zt_status_t emit_block_splat(xe_emitter_t* e, MlirOperation op) {
  xe_val_t* s = xe_lookup(e, mlirOperationGetOperand(op, 0));
  if (!s) return NULL;
  MlirValue res = mlirOperationGetResult(op, 0);
  // Only the `other` of loads: those read the scalar themselves.
  bool only_other = true;
  for (MlirOpOperand u = mlirValueGetFirstUse(res); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u))
    only_other &= op_is(mlirOpOperandGetOwner(u), "tile.load") &&
                  mlirOpOperandGetOperandNumber(u) == 2;
  if (only_other) {
    xe_val_t* r = calloc(1, sizeof *r);
    if (r) r->names = calloc(1, sizeof(xe_name_t));
    if (!r || !r->names) {
      free(r);
      return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
    }
    ZT_RETURN_IF_ERROR(xe_tile_type(e, mlirValueGetType(res), &r->type));
    r->layout = XE_LAYOUT_LAZY;
    r->nchunks = 1;
    r->root = res;
    xe_hoist(e, "arith.constant 0 : i64", false, r->names[0]);
    xe_bind(e, res, r);
    return NULL;
  }
  zt_type_t t;
  ZT_RETURN_IF_ERROR(xe_tile_type(e, mlirValueGetType(res), &t));
  if (t.kind == ZT_BF16) return xe_fail(e, ZT_STATUS_UNSUPPORTED, "bf16 splats on Xe");
  xe_val_t* r = xe_alloc_for(e, res, t, xe_matrix_role(e, res));
  if (!r) return NULL;
  if (r->bc != 16) {
    xe_free_val(r);
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "a splat into an int8 dot operand on Xe");
  }
  xe_name_t b;
  xe_fresh(e, b);
  xe_line(e);
  const char* et = xe_block_elem(t.kind);
  zt_strbuf_printf(&e->body,
                   "%s = vector.broadcast %s {layout_result_0 = %s} : %s to vector<%dx16x%s>%s\n",
                   b, s->names[0], xe_layout_attr(r), et, r->br, et, loc(e));
  for (int32_t k = 0; k < r->nchunks; ++k) memcpy(r->names[k], b, sizeof b);
  xe_bind(e, res, r);
  return NULL;
}

// --- 1-D -> 2-D: expand_dims and broadcast of data values -----------------
//
// (1, N) from a 1-D tensor is a tile of one-row blocks (lane j holds column
// j, as in the 1-D chunks). (M, 1) has no block form (16 lanes per block
// row): it stays a pending record (LAZY, root = the expand_dims) that a
// broadcast to (M, N) resolves: row r of the result is element r of the
// 1-D tensor in every lane, moved out of its lane by a masked
// vector.reduction (the cross-lane op upstream distributes).

static zt_status_t allgather_row16(xe_emitter_t* e, const xe_val_t* col, xe_val_t* whole);

static bool single_use(MlirValue v) {
  MlirOpOperand u = mlirValueGetFirstUse(v);
  return !mlirOpOperandIsNull(u) && mlirOpOperandIsNull(mlirOpOperandGetNextUse(u));
}

// A copy of record s with room for every subgroup's chunks (a 1-D value
// split across subgroups, about to be gathered whole), or NULL.
static xe_val_t* whole_record(const xe_emitter_t* e, const xe_val_t* s) {
  xe_val_t* w = calloc(1, sizeof *w);
  xe_name_t* names = w ? calloc((size_t)s->nchunks * e->nsg, sizeof(xe_name_t)) : NULL;
  if (!names) {
    free(w);
    return NULL;
  }
  *w = *s;
  w->names = names;
  return w;
}

static zt_status_t emit_expand_dims_data(xe_emitter_t* e, MlirOperation op) {
  MlirValue src = mlirOperationGetOperand(op, 0), res = mlirOperationGetResult(op, 0);
  int axis = (int)int_attr(op, "axis", 0);
  xe_val_t* s = xe_lookup(e, src);
  if (!s) return NULL;
  // (On a grid of one row, the split is the tile's own column split: the
  // 1-row block path below takes each subgroup's chunks as they are.)
  bool own_cols = s->dist && axis == 0 && e->sg_m == 1 && e->sg_n == e->nsg;
  if (value_rank(src) == 1 && s->layout == XE_LAYOUT_ROW16 && s->dist && axis == 0 &&
      e->sg_m > 1 && single_use(src) && s->nchunks * e->nsg <= 32 && s->type.kind != ZT_BF16) {
    // A row (1, N) of a 1-D tensor split across the subgroups (a gather
    // by kv_idx, unit_dims.c): every subgroup's blocks hold all N columns,
    // so the tensor is gathered whole first (this expand_dims is its only
    // reader, so its record is replaced by the whole one).
    xe_val_t* w = whole_record(e, s);
    if (!w) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
    zt_status_t st = allgather_row16(e, s, w);
    if (st || e->error) {
      xe_free_val(w);
      return st;
    }
    s = xe_bind(e, src, w);
    if (!s) return NULL;
  }
  // (M, 1) columns may be split across subgroups by rows (the broadcast
  // checks the split matches); (1, N) rows need the whole tensor.
  if (value_rank(src) != 1 || s->layout != XE_LAYOUT_ROW16 || (s->dist && axis != 1 && !own_cols))
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "expand_dims of this value on Xe (1-D tensors in one subgroup only)");
  zt_type_t t;
  ZT_RETURN_IF_ERROR(xe_tile_type(e, mlirValueGetType(res), &t));
  if (t.kind == ZT_BF16)
    // 1-D bf16 values are i16 bits, 2-D bf16 blocks are bf16: no bridge yet.
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "expand_dims of bf16 tensors on Xe");
  // (1, N) over a grid that splits rows has no block form either (one row
  // cannot split across subgroups): a pending record too, which a broadcast
  // evaluates row by row (lazy_eval reads the 1-D chunk of each column).
  if (axis == 1 || e->sg_m > 1) {
    xe_val_t* r = calloc(1, sizeof *r);
    if (r) r->names = calloc(1, sizeof(xe_name_t));
    if (!r || !r->names) {
      free(r);
      return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
    }
    r->type = t;
    r->layout = XE_LAYOUT_LAZY;
    r->nchunks = 1;
    r->root = res;
    xe_hoist(e, "arith.constant 0 : i64", false, r->names[0]);
    xe_bind(e, res, r);
    return NULL;
  }
  xe_val_t* r = xe_alloc_for(e, res, t, XE_ROLE_C);
  if (!r) return NULL;
  if (r->layout == XE_LAYOUT_BLOCK2D && r->narrow && r->tr == 1 && s->nchunks == 1) {
    // (C) -> (1, C) by columns: column j's one row (lane 0) is element j.
    const char* et = xe_elem(t.kind);
    xe_name_t blk;
    xe_zero_block(e, t.kind, et, r->br, "#zt_a", blk);
    for (int32_t j = 0; j < r->br; ++j) {
      xe_name_t v;
      if (j) xe_lane_shuffle(e, t.kind, s->names[0], "down", j, v);
      else memcpy(v, s->names[0], sizeof v);
      xe_block_insert_row(e, v, blk, j, et, r->br, "#zt_a");
    }
    memcpy(r->names[0], blk, sizeof blk);
    xe_bind(e, res, r);
    return NULL;
  }
  if (r->layout != XE_LAYOUT_BLOCK2D || r->br != 1 || r->nbc != s->nchunks) {
    xe_free_val(r);
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "expand_dims to this 2-D layout on Xe");
  }
  const char* et = xe_elem(t.kind);
  // vector.insert of a row into a block is what upstream distributes (a
  // vector.broadcast vector<16> -> vector<1x16> leaves the row's producer
  // undistributed in 22.1.8).
  char text[160];
  xe_name_t zero;
  snprintf(text, sizeof text, "arith.constant {layout_result_0 = #zt_a} dense<%s> : vector<1x16x%s>",
           zt_scalar_kind_is_float(t.kind) ? "0.0" : "0", et);
  xe_hoist(e, text, true, zero);
  for (int32_t bj = 0; bj < r->nbc; ++bj) {
    xe_line(e);
    zt_strbuf_printf(&e->body,
                     "%s = vector.insert %s, %s [0] {layout_result_0 = #zt_a} : vector<16x%s> "
                     "into vector<1x16x%s>%s\n",
                     r->names[bj], s->names[bj], zero, et, et, loc(e));
  }
  xe_bind(e, res, r);
  return NULL;
}

// Element i of a 1-D record as a uniform scalar (masked reduction).
static void lane_value(xe_emitter_t* e, const xe_val_t* s, int64_t i, xe_name_t out) {
  const char* et = xe_elem(s->type.kind);
  bool f = zt_scalar_kind_is_float(s->type.kind);
  xe_name_t lane, ci, eq, zero, sel;
  char v[16];
  snprintf(v, sizeof v, "%d", (int)(i % 16));
  xe_lane_i32(e, lane);
  xe_vconst(e, v, "i32", ci);
  xe_vconst(e, f ? "-0.0" : "0", et, zero);
  xe_vbinary(e, "arith.cmpi eq,", lane, ci, "i32", eq);
  xe_vselect(e, eq, s->names[i / 16], zero, et, sel);
  // Every other lane holds -0.0 (0 for integers): the add gives x exactly,
  // signed zeros and NaN included.
  xe_fresh(e, out);
  xe_line(e);
  zt_strbuf_printf(&e->body, "%s = vector.reduction <%s>, %s : vector<16x%s> into %s%s\n",
                   out, f ? "add" : "or", sel, et, et, loc(e));
}

// Element idx (a uniform i32 known only at run time: it depends on the
// subgroup) of a 1-D record every subgroup holds whole: its chunk picked by
// selects, then lane_value's masked reduction on the lane.
// The 16-lane chunk of a 1-D record holding element idx (a uniform i32
// known at run time), picked by selects, and idx's lane in it.
static void chunk_at(xe_emitter_t* e, const xe_val_t* s, const char* idx, xe_name_t v,
                     xe_name_t ln) {
  const char* et = xe_elem(s->type.kind);
  xe_name_t c16, chunk;
  char text[192];
  hoist_i32(e, 16, c16);
  snprintf(text, sizeof text, "arith.divui %s, %s : i32", idx, c16);
  xe_hoist(e, text, false, chunk);
  snprintf(text, sizeof text, "arith.remui %s, %s : i32", idx, c16);
  xe_hoist(e, text, false, ln);
  memcpy(v, s->names[0], sizeof(xe_name_t));
  for (int32_t k = 1; k < s->nchunks; ++k) {
    xe_name_t ck, is, nv;
    hoist_i32(e, k, ck);
    snprintf(text, sizeof text, "arith.cmpi eq, %s, %s : i32", chunk, ck);
    xe_hoist(e, text, false, is);
    xe_fresh(e, nv);
    xe_line(e);
    zt_strbuf_printf(&e->body,
                     "%s = arith.select %s, %s, %s {layout_result_0 = " XE_LAYOUT_ATTR
                     "} : vector<16x%s>%s\n",
                     nv, is, s->names[k], v, et, loc(e));
    memcpy(v, nv, sizeof(xe_name_t));
  }
}

static void lane_value_at(xe_emitter_t* e, const xe_val_t* s, const char* idx, xe_name_t out) {
  const char* et = xe_elem(s->type.kind);
  bool f = zt_scalar_kind_is_float(s->type.kind);
  xe_name_t ln, v, lane, lv, eq, zero, sel;
  char text[192];
  chunk_at(e, s, idx, v, ln);
  xe_lane_i32(e, lane);
  snprintf(text, sizeof text,
           "vector.broadcast %s {layout_result_0 = " XE_LAYOUT_ATTR "} : i32 to vector<16xi32>", ln);
  xe_hoist(e, text, true, lv);
  xe_vconst(e, f ? "-0.0" : "0", et, zero);
  xe_vbinary(e, "arith.cmpi eq,", lane, lv, "i32", eq);
  xe_vselect(e, eq, v, zero, et, sel);
  xe_fresh(e, out);
  xe_line(e);
  zt_strbuf_printf(&e->body, "%s = vector.reduction <%s>, %s : vector<16x%s> into %s%s\n",
                   out, f ? "add" : "or", sel, et, et, loc(e));
}

// A broadcast to a narrow tile (by columns): an (M, 1) column is every
// column (its 1-D chunks), a (1, C) row gives column j its element j, index
// arithmetic is evaluated into the blocks.
static zt_status_t broadcast_narrow(xe_emitter_t* e, MlirValue src, const xe_val_t* s,
                                    MlirValue res, xe_val_t* r) {
  const char* et = xe_elem(r->type.kind);
  MlirOperation def = mlirValueIsAOpResult(src) ? mlirOpResultGetOwner(src) : (MlirOperation){NULL};
  xe_val_t* col = NULL;
  if (s->layout == XE_LAYOUT_LAZY && op_is(def, "tile.expand_dims") &&
      int_attr(def, "axis", 0) == 1)
    col = xe_lookup(e, mlirOperationGetOperand(def, 0));
  xe_name_t zero;
  if (col && col->layout == XE_LAYOUT_ROW16 && !col->dist && col->nchunks == r->nbr &&
      r->type.kind != ZT_BF16) {
    xe_zero_block(e, r->type.kind, et, r->br, "#zt_a", zero);
    for (int32_t bi = 0; bi < r->nbr; ++bi) {
      xe_name_t blk;
      memcpy(blk, zero, sizeof blk);
      for (int32_t j = 0; j < r->br; ++j)
        xe_block_insert_row(e, col->names[bi], blk, j, et, r->br, "#zt_a");
      memcpy(r->names[bi], blk, sizeof blk);
    }
  } else if (s->layout == XE_LAYOUT_BLOCK2D && s->narrow && s->tr == 1 && s->br == r->br &&
             r->type.kind != ZT_BF16) {
    xe_zero_block(e, r->type.kind, et, r->br, "#zt_a", zero);
    xe_name_t blk;
    memcpy(blk, zero, sizeof blk);
    for (int32_t j = 0; j < r->br; ++j) {
      xe_name_t row, x, v;
      xe_block_row(e, s, 0, 0, j, row);
      // (A reduction and a splat: an idx lane shuffle of a row extracted
      // from a block is left undistributed by upstream 22.1.8.)
      xe_val_t one = {.layout = XE_LAYOUT_ROW16, .type = s->type, .numel = 1, .nchunks = 1,
                      .names = &row};
      lane_value(e, &one, 0, x);
      xe_vsplat(e, x, et, v);
      xe_block_insert_row(e, v, blk, j, et, r->br, "#zt_a");
    }
    for (int32_t bi = 0; bi < r->nbr; ++bi) memcpy(r->names[bi], blk, sizeof blk);
  } else if (s->layout == XE_LAYOUT_LAZY && r->type.kind != ZT_PTR && r->type.kind != ZT_I1) {
    xe_val_t* m = materialize_lazy(e, res, r);
    xe_free_val(r);
    if (!m) return e->error ? NULL : xe_fail(e, ZT_STATUS_UNSUPPORTED, "this broadcast on Xe");
    xe_bind(e, res, m);
    return NULL;
  } else {
    xe_free_val(r);
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "broadcast of this value to a narrow tile on Xe");
  }
  xe_bind(e, res, r);
  return NULL;
}

// A 1-D value split across the subgroups (each holds nchunks of its
// chunks, subgroup g chunks g * nchunks...) gathered whole into every
// subgroup through shared local memory: each writes its chunks to their
// place, a barrier, each reads all of them, a barrier (the buffer is then
// free for the next exchange). `whole` receives nchunks * nsg names.
static zt_status_t allgather_row16(xe_emitter_t* e, const xe_val_t* col, xe_val_t* whole) {
  zt_scalar_kind_t k = col->type.kind;
  const char* et = xe_elem(k);
  int64_t total = (int64_t)col->nchunks * e->nsg, n = total * 16;
  if (n * zt_scalar_kind_bits(k) / 8 > 65536)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "a 1-D value of %lld elements gathered into every subgroup needs more than "
                   "64 KB of shared local memory on Xe", (long long)col->numel);
  xe_name_t slm, all, base;
  if (!xe_slm_buffer(e, k, (int)n, slm)) return NULL;
  xe_all_true(e, all);
  xe_sg_index(e, 1, e->nsg, 16LL * col->nchunks, base);
  for (int32_t c = 0; c < col->nchunks; ++c) {
    xe_name_t offs;
    xe_slm_offsets(e, base, 16LL * c, offs);
    xe_slm_store(e, col->names[c], slm, offs, all, et, n);
  }
  xe_line(e);
  zt_strbuf_printf(&e->body, "gpu.barrier%s\n", loc(e));
  for (int64_t c = 0; c < total; ++c) {
    xe_name_t offs;
    xe_slm_offsets(e, "", 16 * c, offs);
    xe_slm_load(e, slm, offs, all, et, n, whole->names[c]);
  }
  xe_line(e);
  zt_strbuf_printf(&e->body, "gpu.barrier%s\n", loc(e));
  whole->nchunks = (int32_t)total;
  whole->dist = false;
  return NULL;
}

// Whether some user of v is an expand_dims to an (M, 1) column of integers
// or i1 (index or mask arithmetic, evaluated row by row: lazy_eval).
static bool read_by_index_rows(MlirValue v) {
  for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation o = mlirOpOperandGetOwner(u);
    if (!op_is(o, "tile.expand_dims") || int_attr(o, "axis", 0) != 1) continue;
    MlirType et = mlirShapedTypeGetElementType(mlirValueGetType(mlirOperationGetResult(o, 0)));
    if (mlirTypeIsAInteger(et)) return true;
  }
  return false;
}

zt_status_t xe_gather_index_rows(xe_emitter_t* e, MlirOperation op) {
  if (e->nsg == 1) return NULL;
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i) {
    MlirValue v = mlirOperationGetResult(op, i);
    if (value_rank(v) != 1 || recomputable(v) || !read_by_index_rows(v)) continue;
    xe_val_t* s = xe_lookup(e, v);
    if (!s) return NULL;
    if (s->layout != XE_LAYOUT_ROW16 || !s->dist || s->type.kind == ZT_PTR ||
        s->type.kind == ZT_BF16 || s->nchunks * e->nsg > 32 ||
        e->nwholes == (int)(sizeof e->whole_keys / sizeof e->whole_keys[0]))
      continue;  // lazy_eval refuses it by name
    xe_val_t* w = whole_record(e, s);
    if (!w) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
    w->wide[0] = 0;
    w->wide_scope = w->chunk_scope = 0;
    zt_status_t st = allgather_row16(e, s, w);
    if (st || e->error) {
      xe_free_val(w);
      return st;
    }
    e->whole_keys[e->nwholes] = v.ptr;
    e->whole_vals[e->nwholes++] = w;
  }
  return NULL;
}

// (M, 1) -> (M, K) of a 1-D column (a per-row scale `s[:, None]`) into a
// dot's A operand places over several subgroups (a_f16 * s[:, None] at
// num_warps 4): the A blocks hold every column of the subgroup's rows and
// are the same in every subgroup of a grid row, so each subgroup needs the
// column's values at its own rows, which a column split across the
// subgroups (the 1-D default) does not give it: gathered whole first
// (allgather_row16), then row q of the part is the column at row0 + q (a
// constant position on a grid of one row, else picked at run time).
// *done false: not this case.
static zt_status_t broadcast_col_into_a(xe_emitter_t* e, MlirOperation op, const xe_val_t* s,
                                        zt_type_t t, bool* done) {
  *done = false;
  MlirValue src = mlirOperationGetOperand(op, 0), res = mlirOperationGetResult(op, 0);
  int role = xe_matrix_role(e, res);
  if (e->nsg <= 1 || s->layout != XE_LAYOUT_LAZY || t.kind == ZT_BF16 || t.kind == ZT_I1 ||
      t.kind == ZT_PTR || t.kind == ZT_I8 || (role != XE_ROLE_A && role != XE_ROLE_C))
    return NULL;
  MlirOperation def = mlirValueIsAOpResult(src) ? mlirOpResultGetOwner(src) : (MlirOperation){NULL};
  if (!op_is(def, "tile.expand_dims") || int_attr(def, "axis", 0) != 1) return NULL;
  xe_val_t* col = xe_lookup(e, mlirOperationGetOperand(def, 0));
  if (!col) return NULL;
  if (col->layout != XE_LAYOUT_ROW16 || col->type.kind != t.kind ||
      (int64_t)col->nchunks * (col->dist ? e->nsg : 1) * 16 < t.shape[0] ||
      (int64_t)col->nchunks * (col->dist ? e->nsg : 1) > 32)
    return NULL;
  xe_val_t* r = xe_alloc_for(e, res, t, role);
  if (!r) return NULL;
  // Accumulator-shaped tiles: only where the paths below this function
  // refuse (a column split across subgroups whose chunks are not this
  // subgroup's rows, or a whole column on a grid of one row: a row
  // statistic of another dot's tile, x + tl.sum(y, 1)[:, None]).
  bool c_case = role == XE_ROLE_C &&
                (col->dist ? !(e->sg_n == 1 && col->nchunks * 16 == r->tr)
                           : !(e->sg_n == 1 && e->sg_m > 1));
  if (r->layout != XE_LAYOUT_BLOCK2D || r->role != role || r->narrow || r->b16 ||
      r->bc != 16 || (role == XE_ROLE_C && !c_case)) {
    xe_free_val(r);
    return NULL;
  }
  *done = true;
  xe_name_t wnames[32];
  xe_val_t whole = *col;
  whole.names = wnames;
  if (col->dist) {
    ZT_RETURN_IF_ERROR(allgather_row16(e, col, &whole));
    if (e->error) {
      xe_free_val(r);
      return NULL;
    }
  } else {
    memcpy(wnames, col->names, (size_t)col->nchunks * sizeof(xe_name_t));
  }
  const char* et = xe_elem(t.kind);
  xe_name_t row0, col0;
  tile_origin(e, r, row0, col0);
  for (int32_t bi = 0; bi < r->nbr; ++bi) {
    xe_name_t blk;
    xe_zero_block(e, t.kind, et, r->br, "#zt_a", blk);
    for (int32_t rr = 0; rr < r->br; ++rr) {
      xe_name_t v, b;
      int64_t q = (int64_t)bi * r->br + rr;
      if (!row0[0]) {
        lane_value(e, &whole, q, v);
      } else {
        xe_name_t idx;
        offset_i32(e, row0, q, idx);
        lane_value_at(e, &whole, idx, v);
      }
      xe_vsplat(e, v, et, b);
      xe_block_insert_row(e, b, blk, rr, et, r->br, "#zt_a");
    }
    for (int32_t bj = 0; bj < r->nbc; ++bj) memcpy(r->names[bi * r->nbc + bj], blk, sizeof blk);
  }
  xe_bind(e, res, r);
  return NULL;
}

// A (1, N) row of a 1-D tensor that every subgroup holds whole, broadcast to
// a tile whose columns the grid splits (r's columns start at sg_n * tc, a
// run-time position): each block column bj of this subgroup is chunk
// (sg_n * tc) / 16 + bj of the row, picked by selects (chunk_at), and every
// block row repeats it. The everyday GEMM bias epilogue `acc +
// tl.load(BIAS + rn[None, :])` at grids with several subgroup rows
// (num_warps 32: 2 x 16), where the row's layout is the whole 1-D tensor.
// *done false: not this case (a grid of one column has constant positions:
// the lazy path evaluates those).
static zt_status_t broadcast_row_by_column_origin(xe_emitter_t* e, MlirOperation def, MlirValue res,
                                                  zt_type_t t, xe_val_t* r, bool* done) {
  *done = false;
  xe_val_t* row = xe_lookup(e, mlirOperationGetOperand(def, 0));
  if (!row || row->layout != XE_LAYOUT_ROW16 || row->dist || row->type.kind != t.kind ||
      t.kind == ZT_BF16 || t.kind == ZT_I1 || t.kind == ZT_PTR ||
      (int64_t)row->nchunks * 16 != t.shape[1] || r->layout != XE_LAYOUT_BLOCK2D ||
      r->narrow || r->b16 || r->bc != 16 || r->role != XE_ROLE_C || r->nbc * 16 != r->tc ||
      e->nsg <= 1 || e->sg_n <= 1)
    return NULL;
  xe_name_t row0, col0;
  tile_origin(e, r, row0, col0);
  if (!col0[0]) return NULL;
  *done = true;
  const char* et = xe_elem(t.kind);
  for (int32_t bj = 0; bj < r->nbc; ++bj) {
    xe_name_t idx, v, ln, blk;
    offset_i32(e, col0, (int64_t)bj * 16, idx);
    chunk_at(e, row, idx, v, ln);  // (ln is 0: col0 is a multiple of 16)
    xe_zero_block(e, t.kind, et, r->br, "#zt_a", blk);
    for (int32_t rr = 0; rr < r->br; ++rr) xe_block_insert_row(e, v, blk, rr, et, r->br, "#zt_a");
    for (int32_t bi = 0; bi < r->nbr; ++bi) memcpy(r->names[bi * r->nbc + bj], blk, sizeof blk);
  }
  xe_bind(e, res, r);
  return NULL;
}

static zt_status_t emit_broadcast_data(xe_emitter_t* e, MlirOperation op) {
  MlirValue src = mlirOperationGetOperand(op, 0), res = mlirOperationGetResult(op, 0);
  xe_val_t* s = xe_lookup(e, src);
  if (!s) return NULL;
  zt_type_t t;
  ZT_RETURN_IF_ERROR(xe_tile_type(e, mlirValueGetType(res), &t));
  {
    bool done;
    ZT_RETURN_IF_ERROR(broadcast_col_into_a(e, op, s, t, &done));
    if (done || e->error) return NULL;
  }
  xe_val_t* r = xe_alloc_for(e, res, t, XE_ROLE_C);
  if (!r) return NULL;
  const char* et = xe_elem(t.kind);
  if (r->layout != XE_LAYOUT_BLOCK2D || r->bc != 16) {
    xe_free_val(r);
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "broadcast to this 2-D layout on Xe");
  }
  if (r->narrow) return broadcast_narrow(e, src, s, res, r);
  // (Every subgroup holding the row at r's columns: one subgroup, a row held
  // like an A operand over a grid of one row, xe_values.c, or a row split
  // over a grid of one row by the tile's own columns, emit_expand_dims_data:
  // the bias row of a GEMM epilogue, `acc + tl.load(BIAS + rn[None, :])`.)
  if (s->layout == XE_LAYOUT_BLOCK2D && s->br == 1 && s->nbc == r->nbc &&
      (e->nsg == 1 || ((s->role == XE_ROLE_A || s->role == XE_ROLE_C) && e->sg_m == 1 &&
                       r->tc == s->tc))) {
    // (1, N) -> (M, N): every block row is the source row.
    for (int32_t bj = 0; bj < r->nbc; ++bj) {
      xe_name_t row;
      xe_fresh(e, row);
      xe_line(e);
      zt_strbuf_printf(&e->body,
                       "%s = vector.extract %s[0] {layout_result_0 = " XE_LAYOUT_ATTR
                       "} : vector<16x%s> from vector<1x16x%s>%s\n",
                       row, s->names[bj], et, et, loc(e));
      char text[160];
      xe_name_t blk;
      snprintf(text, sizeof text,
               "arith.constant {layout_result_0 = #zt_a} dense<%s> : vector<%dx16x%s>",
               zt_scalar_kind_is_float(t.kind) ? "0.0" : "0", r->br, et);
      xe_hoist(e, text, true, blk);
      for (int32_t rr = 0; rr < r->br; ++rr) xe_block_insert_row(e, row, blk, rr, et, r->br, "#zt_a");
      for (int32_t bi = 0; bi < r->nbr; ++bi) memcpy(r->names[bi * r->nbc + bj], blk, sizeof blk);
    }
    xe_bind(e, res, r);
    return NULL;
  }
  MlirOperation def = mlirValueIsAOpResult(src) ? mlirOpResultGetOwner(src) : (MlirOperation){NULL};
  xe_val_t* col = NULL;
  if (s->layout == XE_LAYOUT_LAZY && op_is(def, "tile.expand_dims") &&
      int_attr(def, "axis", 0) == 1)
    col = xe_lookup(e, mlirOperationGetOperand(def, 0));
  bool local = e->nsg == 1 ? !col || !col->dist
                            : e->sg_n == 1 && col && col->dist && col->nchunks * 16 == r->tr;
  if (s->layout == XE_LAYOUT_LAZY && op_is(def, "tile.expand_dims") &&
      int_attr(def, "axis", 0) == 0) {
    bool done;
    ZT_RETURN_IF_ERROR(broadcast_row_by_column_origin(e, def, res, t, r, &done));
    if (done || e->error) return NULL;
  }
  if ((!col || col->layout != XE_LAYOUT_ROW16) && s->layout == XE_LAYOUT_LAZY &&
      t.kind != ZT_PTR && t.kind != ZT_I1) {
    // Index arithmetic broadcast into data: evaluated row by row.
    xe_val_t* m = materialize_lazy(e, res, r);
    xe_free_val(r);
    if (!m) return NULL;
    xe_bind(e, res, m);
    return NULL;
  }
  bool any_rows = !local && col && col->layout == XE_LAYOUT_ROW16 && !col->dist &&
                  e->sg_n == 1 && e->sg_m > 1 && r->tc == t.shape[1] &&
                  (int64_t)col->nchunks * 16 >= t.shape[0] && t.kind != ZT_BF16 &&
                  t.kind != ZT_I1 && t.kind != ZT_PTR;
  if (any_rows) {
    // (M, 1) -> (M, N) where the rows of a subgroup are not whole chunks of
    // the 1-D column (16 subgroups over 128 rows: 8 each) and every
    // subgroup holds the whole column (a row reduction across subgroups
    // broadcast back): row r of this subgroup's part is col[row0 + r],
    // picked at run time.
    xe_name_t row0, col0;
    tile_origin(e, r, row0, col0);
    if (r->tr < 16 && 16 % r->tr == 0 && row0[0]) {
      // The part's rows sit in one 16-row chunk, at lane o = row0 % 16, a
      // multiple of tr: row q is lane o + q of that chunk, broadcast by a
      // lane shuffle (`idx`) for each of the 16 / tr places o can take and
      // a select on the subgroup's o (2 shuffles and a select a row for 8
      // rows a subgroup, against a masked reduction across the lanes).
      xe_name_t v, o;
      char text[192];
      chunk_at(e, col, row0, v, o);
      int places = 16 / (int)r->tr;
      xe_name_t at[16];  // at[p]: the vector<16xi1> "o == p * tr"
      for (int p = 1; p < places; ++p) {
        xe_name_t cp, is;
        hoist_i32(e, (int64_t)p * r->tr, cp);
        snprintf(text, sizeof text, "arith.cmpi eq, %s, %s : i32", o, cp);
        xe_hoist(e, text, false, is);
        snprintf(text, sizeof text,
                 "vector.broadcast %s {layout_result_0 = " XE_LAYOUT_ATTR "} : i1 to vector<16xi1>",
                 is);
        xe_hoist(e, text, true, at[p]);
      }
      xe_name_t blk;
      xe_zero_block(e, t.kind, et, r->br, "#zt_a", blk);
      for (int32_t bi = 0; bi < r->nbr; ++bi) {
        for (int32_t rr = 0; rr < r->br; ++rr) {
          int q = bi * r->br + rr;
          xe_name_t b;
          xe_lane_shuffle(e, t.kind, v, "idx", q, b);
          for (int p = 1; p < places; ++p) {
            xe_name_t sh, sel;
            xe_lane_shuffle(e, t.kind, v, "idx", q + p * (int)r->tr, sh);
            xe_vselect(e, at[p], sh, b, et, sel);
            memcpy(b, sel, sizeof b);
          }
          xe_block_insert_row(e, b, blk, rr, et, r->br, "#zt_a");
        }
        for (int32_t bj = 0; bj < r->nbc; ++bj) memcpy(r->names[bi * r->nbc + bj], blk, sizeof blk);
        if (bi + 1 < r->nbr) xe_zero_block(e, t.kind, et, r->br, "#zt_a", blk);
      }
      xe_bind(e, res, r);
      return NULL;
    }
    for (int32_t bi = 0; bi < r->nbr; ++bi) {
      xe_name_t blk;
      xe_zero_block(e, t.kind, et, r->br, "#zt_a", blk);
      for (int32_t rr = 0; rr < r->br; ++rr) {
        xe_name_t idx, v, b;
        offset_i32(e, row0, (int64_t)bi * r->br + rr, idx);
        lane_value_at(e, col, idx, v);
        xe_vsplat(e, v, et, b);
        xe_block_insert_row(e, b, blk, rr, et, r->br, "#zt_a");
      }
      for (int32_t bj = 0; bj < r->nbc; ++bj) memcpy(r->names[bi * r->nbc + bj], blk, sizeof blk);
    }
    xe_bind(e, res, r);
    return NULL;
  }
  if (!col || col->layout != XE_LAYOUT_ROW16 || !local) {
    xe_free_val(r);
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "broadcast of this value to 2-D on Xe");
  }
  // (M, 1) -> (M, N): row r is col[r] in every lane.
  char text[160];
  xe_name_t zero;
  snprintf(text, sizeof text, "arith.constant {layout_result_0 = #zt_a} dense<%s> : vector<%dx16x%s>",
           zt_scalar_kind_is_float(t.kind) ? "0.0" : "0", r->br, et);
  xe_hoist(e, text, true, zero);
  for (int32_t bi = 0; bi < r->nbr; ++bi) {
    xe_name_t blk;
    memcpy(blk, zero, sizeof blk);
    for (int32_t rr = 0; rr < r->br; ++rr) {
      xe_name_t v, b;
      lane_value(e, col, (int64_t)bi * r->br + rr, v);
      xe_vsplat(e, v, et, b);
      xe_block_insert_row(e, b, blk, rr, et, r->br, "#zt_a");
    }
    for (int32_t bj = 0; bj < r->nbc; ++bj) memcpy(r->names[bi * r->nbc + bj], blk, sizeof blk);
  }
  xe_bind(e, res, r);
  return NULL;
}

// tile.reshape between a 2-D tile held in one subgroup, whose columns fill
// whole blocks, and a 1-D tensor (tl.ravel, tl.reshape to and from 1-D):
// in row-major order 1-D chunk (row * blocks per row + block column) is
// that block row, so the reshape only moves rows between the two records.
// Other reshapes are not done (*handled false).
static zt_status_t emit_reshape_rows(xe_emitter_t* e, MlirOperation op, bool* handled) {
  *handled = false;
  MlirValue src = mlirOperationGetOperand(op, 0), res = mlirOperationGetResult(op, 0);
  zt_type_t st, rt;
  ZT_RETURN_IF_ERROR(xe_tile_type(e, mlirValueGetType(src), &st));
  ZT_RETURN_IF_ERROR(xe_tile_type(e, mlirValueGetType(res), &rt));
  if (st.kind == ZT_BF16 || st.kind == ZT_PTR || st.kind == ZT_I1 || st.kind == ZT_I8 ||
      e->nsg != 1)
    return NULL;
  bool ravel = st.rank == 2 && rt.rank == 1;
  bool unravel = st.rank == 1 && rt.rank == 2 && rt.shape[0] > 1 && rt.shape[1] > 1;
  if (!ravel && !unravel) return NULL;
  const zt_type_t* t2 = ravel ? &st : &rt;
  if (t2->shape[1] % 16) return NULL;
  xe_val_t* s = xe_lookup(e, src);
  if (!s) return NULL;
  xe_val_t *blocks = NULL, *made = NULL;
  if (ravel) {
    if (s->layout == XE_LAYOUT_LAZY) {
      xe_val_t* like = xe_alloc_blocks(e, st, XE_ROLE_C);
      if (!like) return NULL;
      made = like->layout == XE_LAYOUT_BLOCK2D ? materialize_lazy(e, src, like) : NULL;
      xe_free_val(like);
      if (!made) return NULL;
      s = made;
    }
    if (s->layout != XE_LAYOUT_BLOCK2D || s->role != XE_ROLE_C || s->bc != 16) {
      xe_free_val(made);
      return NULL;
    }
    blocks = s;
  }
  *handled = true;
  xe_val_t* r = ravel ? xe_alloc(e, rt) : xe_alloc_blocks(e, rt, XE_ROLE_C);
  xe_val_t* line = ravel ? r : s;
  xe_val_t* tile = ravel ? blocks : r;
  if (!r || line->layout != XE_LAYOUT_ROW16 || line->dist || tile->layout != XE_LAYOUT_BLOCK2D ||
      tile->bc != 16 || line->nchunks != tile->nbr * tile->br * tile->nbc) {
    xe_free_val(r);
    xe_free_val(made);
    return e->error ? NULL : xe_fail(e, ZT_STATUS_UNSUPPORTED, "this reshape on Xe");
  }
  const char* et = xe_block_elem(rt.kind);
  xe_name_t zero = "";
  if (unravel) {
    char text[160];
    snprintf(text, sizeof text, "arith.constant {layout_result_0 = #zt_a} dense<%s> : vector<%dx16x%s>",
             zt_scalar_kind_is_float(rt.kind) ? "0.0" : "0", tile->br, et);
    xe_hoist(e, text, true, zero);
  }
  for (int32_t bi = 0; bi < tile->nbr; ++bi)
    for (int32_t bj = 0; bj < tile->nbc; ++bj) {
      xe_name_t acc;
      memcpy(acc, zero, sizeof acc);
      for (int32_t rr = 0; rr < tile->br; ++rr) {
        int32_t chunk = (bi * tile->br + rr) * tile->nbc + bj;
        if (ravel) {
          xe_block_row(e, tile, bi, bj, rr, line->names[chunk]);
          continue;
        }
        xe_block_insert_row(e, line->names[chunk], acc, rr, et, tile->br, "#zt_a");
      }
      if (unravel) memcpy(tile->names[bi * tile->nbc + bj], acc, sizeof acc);
    }
  xe_free_val(made);
  xe_bind(e, res, r);
  return NULL;
}

// A lazy 2-D value: nothing to emit now. addptr by a uniform amount keeps
// the root and adds to the carried offset.
// Whether a 2-D value is index arithmetic (addresses, masks, integer index
// tensors that hold no data): kept as a pending record, not blocks.
static bool lazy_kind(xe_emitter_t* e, MlirValue v) {
  MlirType et = mlirShapedTypeGetElementType(mlirValueGetType(v));
  if (mlirTypeIsAFloat(et)) return false;
  if (!mlirTypeIsAInteger(et)) return true;  // pointers
  return mlirIntegerTypeGetWidth(et) == 1 || !xe_is_data(e, v);
}

static zt_status_t emit_lazy(xe_emitter_t* e, MlirOperation op) {
  MlirValue res = mlirOperationGetResult(op, 0);
  zt_type_t t;
  ZT_RETURN_IF_ERROR(xe_tile_type(e, mlirValueGetType(res), &t));
  xe_val_t* r = xe_alloc(e, t);
  if (!r) return NULL;
  r->root = res;
  if (op_is(op, "tile.addptr")) {
    MlirValue p = mlirOperationGetOperand(op, 0);
    MlirValue o = mlirOperationGetOperand(op, 1);
    xe_val_t* pr = find_rec(e, p);
    if (pr && pr->layout == XE_LAYOUT_LAZY && mlirValueIsAOpResult(o) &&
        op_is(mlirOpResultGetOwner(o), "tile.splat")) {
      xe_val_t* s = xe_lookup(e, mlirOperationGetOperand(mlirOpResultGetOwner(o), 0));
      if (!s) {
        xe_free_val(r);
        return NULL;
      }
      xe_name_t x;
      if (s->type.kind == ZT_I64) {
        memcpy(x, s->names[0], sizeof x);
      } else {
        xe_fresh(e, x);
        xe_line(e);
        zt_strbuf_printf(&e->body, "%s = arith.extsi %s : %s to i64%s\n", x, s->names[0],
                         xe_block_elem(s->type.kind), loc(e));
      }
      r->root = pr->root;
      add_scalar(e, pr->names[0], x, "i64", r->names[0]);
    }
  }
  xe_bind(e, res, r);
  return NULL;
}

zt_status_t xe_matrix_op(xe_emitter_t* e, MlirOperation op, bool* handled) {
  *handled = false;
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  if (has_prefix(n, "scf.") || name_is(n, "func.return")) return NULL;
  bool two_d = false;
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i)
    two_d |= value_rank(mlirOperationGetResult(op, i)) == 2;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i)
    two_d |= value_rank(mlirOperationGetOperand(op, i)) == 2;
  bool block_io = name_is(n, "tile.block_load") || name_is(n, "tile.block_store");
  if (!two_d && !block_io) return NULL;
  *handled = true;
  zt_status_t s = NULL;
  if (name_is(n, "tile.reshape")) {
    // Rows moved between a 2-D tile and a 1-D tensor; other reshapes below.
    bool done = false;
    s = emit_reshape_rows(e, op, &done);
    MlirValue res = mlirOperationGetResult(op, 0);
    // (Unit-shaped index arithmetic stays lazy, below.)
    bool lazy = value_rank(res) == 2 && (dim(res, 0) == 1 || dim(res, 1) == 1) &&
                !xe_is_data(e, res) &&
                !mlirTypeIsAFloat(mlirShapedTypeGetElementType(mlirValueGetType(res)));
    if (!s && !done && !e->error && !lazy) {
      // Anything else that stays 1-D/2-D: lanes moved by shuffles.
      s = xe_emit_permute(e, op);
      done = true;
    }
    if (s || done || e->error) {
      xe_matrix_cache_clear(e);
      return s;
    }
  }
  if (name_is(n, "tile.trans") && value_rank(mlirOperationGetResult(op, 0)) == 2 &&
      lazy_kind(e, mlirOperationGetResult(op, 0))) {
    // A transposed address, mask or index tensor: evaluated where it is read.
    s = emit_lazy(e, op);
    xe_matrix_cache_clear(e);
    return s;
  }
  if (name_is(n, "tile.trans")) {
    s = xe_emit_permute(e, op);
    xe_matrix_cache_clear(e);
    return s;
  }
  if (block_io) {
    // Rank-1 blocks were rewritten as pointer accesses before emission
    // (lowering/common/block1d.c); other ranks are refused there by name.
    s = emit_block_io(e, op, name_is(n, "tile.block_store"));
  } else if (name_is(n, "tile.dot")) {
    s = emit_dot(e, op);
  } else if (name_is(n, "tile.reduce") && value_rank(mlirOperationGetOperand(op, 0)) == 2) {
    s = xe_emit_any_reduce(e, op);
  } else if (name_is(n, "tile.scan")) {
    s = xe_emit_scan(e, op);
  } else if (name_is(n, "tile.atomic_rmw") || name_is(n, "tile.atomic_cas")) {
    s = xe_emit_atomic_2d(e, op);
  } else if (name_is(n, "tile.load") || name_is(n, "tile.store")) {
    bool store = name_is(n, "tile.store"), done = false;
    s = emit_ptr_blocks(e, op, store, &done);
    if (!s && !done && !e->error) s = store ? emit_scatter(e, op) : emit_gather(e, op);
  } else {
    MlirValue res = mlirOperationGetNumResults(op) ? mlirOperationGetResult(op, 0)
                                                   : (MlirValue){NULL};
    zt_type_t t = {0};
    if (res.ptr) s = xe_tile_type(e, mlirValueGetType(res), &t);
    if (s) {
    } else if (!res.ptr || t.rank != 2 || mlirOperationGetNumResults(op) != 1) {
      s = xe_fail(e, ZT_STATUS_UNSUPPORTED, "operation on 2-D tensors not supported on Xe yet");
    } else if (lazy_kind(e, res)) {
      if (name_is(n, "tile.make_range") || name_is(n, "tile.splat") ||
          name_is(n, "tile.broadcast") || name_is(n, "tile.expand_dims") ||
          (name_is(n, "tile.reshape") && value_rank(mlirOperationGetOperand(op, 0)) == 1 &&
           (t.shape[0] == 1 || t.shape[1] == 1)) ||
          name_is(n, "tile.addptr") ||
          ((has_prefix(n, "arith.") || has_prefix(n, "math.")) &&
           mlirOperationGetNumRegions(op) == 0))
        s = emit_lazy(e, op);
      else
        s = xe_fail(e, ZT_STATUS_UNSUPPORTED,
                    "operation producing a 2-D integer tensor not supported on Xe yet");
    } else if (name_is(n, "tile.splat")) {
      s = emit_block_splat(e, op);
    } else if (name_is(n, "tile.expand_dims")) {
      s = emit_expand_dims_data(e, op);
    } else if (name_is(n, "tile.broadcast")) {
      s = emit_broadcast_data(e, op);
    } else if ((has_prefix(n, "arith.") || has_prefix(n, "math.")) &&
               mlirOperationGetNumRegions(op) == 0) {
      s = emit_block_elementwise(e, op);
    } else {
      s = xe_fail(e, ZT_STATUS_UNSUPPORTED, "operation on 2-D tensors not supported on Xe yet");
    }
  }
  xe_matrix_cache_clear(e);
  return s;
}
