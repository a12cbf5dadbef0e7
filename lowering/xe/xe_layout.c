// Layout assignment (see xe_layout.h): anchors, propagation, conversions,
// and the annotated dump.
//
// Order of the stage, each step a fixed point over the kernel's ops:
//  1. dots: each picks its grid (rows only when its accumulator reaches a
//     row reduction or another dot's A operand, so that the row statistics
//     and P stay in the subgroups that computed them; otherwise the grid the
//     planner picked for the kernel); operands become dpas<A>/<B> where a
//     load produces them for that dot alone, results and the accumulator
//     operand dpas<C>;
//  2. forward: elementwise ops, loop-carried values and broadcasts take
//     their operands' layout; reductions give slices; expand_dims of a
//     slice along its dimension gives the parent back;
//  3. backward: splats, broadcasts and loop inits take their users' layout;
//  4. the rest: blocked on the kernel's grid (2-D), blocked 1-D chunks,
//     uniform scalars, lazy integer/pointer 2-D tensors;
//  5. conversions: every operand of a dot whose layout is not the one the
//     dot reads, and every elementwise operand whose layout differs from the
//     result's, with the tier the data moves at.
#include "xe/xe_layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>

typedef struct conv_s {
  const void* op;
  int operand;
  xe_layout_t from, to;
  xe_conv_tier_t tier;
} conv_t;

struct xe_assign_s {
  const xe_target_t* tg;
  int default_grid[2];
  int nw;                    ///< num_warps (0: zetile picks)
  // Value -> layout, open addressing on MlirValue.ptr.
  const void** keys;
  xe_layout_t* vals;
  size_t cap, count;
  conv_t* convs;
  int nconv, capconv;
  bool has_dot, rows_only;
  int dot_grid[2];           ///< the first dot's grid
  bool changed;
  bool anchors_only;         ///< defaults(): sources only (the first round)
  bool oom;
};

// --- small helpers -----------------------------------------------------------

static bool op_is(MlirOperation op, const char* s) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  return n.length == strlen(s) && memcmp(n.data, s, n.length) == 0;
}

static bool op_prefix(MlirOperation op, const char* p) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  return n.length >= strlen(p) && memcmp(n.data, p, strlen(p)) == 0;
}

static int rank_of(MlirValue v) {
  MlirType t = mlirValueGetType(v);
  return mlirTypeIsARankedTensor(t) ? (int)mlirShapedTypeGetRank(t) : 0;
}

static int64_t dim_of(MlirValue v, int d) { return mlirShapedTypeGetDimSize(mlirValueGetType(v), d); }

static MlirType elem_of(MlirValue v) {
  MlirType t = mlirValueGetType(v);
  return mlirTypeIsARankedTensor(t) ? mlirShapedTypeGetElementType(t) : t;
}

// Float data (or int8/int32 dot data: decided by the dot anchors).
static bool is_float(MlirValue v) {
  MlirType t = elem_of(v);
  return mlirTypeIsAF16(t) || mlirTypeIsABF16(t) || mlirTypeIsAF32(t) || mlirTypeIsAF64(t);
}

static int64_t int_attr(MlirOperation op, const char* name, int64_t dflt) {
  MlirAttribute a = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(name));
  return !mlirAttributeIsNull(a) && mlirAttributeIsAInteger(a) ? mlirIntegerAttrGetValueInt(a)
                                                               : dflt;
}

static bool elementwise(MlirOperation op) {
  return (op_prefix(op, "arith.") || op_prefix(op, "math.")) &&
         mlirOperationGetNumResults(op) == 1 && mlirOperationGetNumRegions(op) == 0 &&
         !op_is(op, "arith.constant");
}

static size_t hash_ptr(const void* p, size_t cap) {
  uintptr_t x = (uintptr_t)p;
  x ^= x >> 17;
  x *= 0x9E3779B97F4A7C15ull;
  return (size_t)(x >> 7) & (cap - 1);
}

static xe_layout_t* slot(xe_assign_t* a, MlirValue v, bool create) {
  if (create && (a->count + 1) * 2 > a->cap) {
    size_t nc = a->cap ? a->cap * 2 : 256;
    const void** nk = calloc(nc, sizeof *nk);
    xe_layout_t* nv = calloc(nc, sizeof *nv);
    if (!nk || !nv) {
      free(nk);
      free(nv);
      a->oom = true;
      return NULL;
    }
    for (size_t i = 0; i < a->cap; ++i) {
      if (!a->keys[i]) continue;
      size_t h = hash_ptr(a->keys[i], nc);
      while (nk[h]) h = (h + 1) & (nc - 1);
      nk[h] = a->keys[i];
      nv[h] = a->vals[i];
    }
    free(a->keys);
    free(a->vals);
    a->keys = nk;
    a->vals = nv;
    a->cap = nc;
  }
  if (!a->cap) return NULL;
  size_t h = hash_ptr(v.ptr, a->cap);
  while (a->keys[h]) {
    if (a->keys[h] == v.ptr) return &a->vals[h];
    h = (h + 1) & (a->cap - 1);
  }
  if (!create) return NULL;
  a->keys[h] = v.ptr;
  a->count++;
  memset(&a->vals[h], 0, sizeof a->vals[h]);
  return &a->vals[h];
}

static const xe_layout_t* get(const xe_assign_t* a, MlirValue v) {
  const xe_layout_t* l = slot((xe_assign_t*)a, v, false);
  return l && l->kind != XE_LK_NONE ? l : NULL;
}

// Gives v layout l unless it has one; true if it changed.
static bool set(xe_assign_t* a, MlirValue v, const xe_layout_t* l) {
  if (get(a, v)) return false;
  xe_layout_t* s = slot(a, v, true);
  if (!s) return false;
  *s = *l;
  a->changed = true;
  return true;
}

// --- layout constructors -------------------------------------------------------

static xe_layout_t uniform(void) { return (xe_layout_t){.kind = XE_LK_UNIFORM}; }
static xe_layout_t lazy(void) { return (xe_layout_t){.kind = XE_LK_LAZY}; }

static xe_layout_t blocked2d(const int grid[2]) {
  return (xe_layout_t){.kind = XE_LK_BLOCKED, .rank = 2, .grid = {grid[0], grid[1]},
                       .lanes = {1, 16}, .lane_data = {1, 1}, .block = {8, 16}};
}

static xe_layout_t blocked1d(int nsg) {
  return (xe_layout_t){.kind = XE_LK_BLOCKED, .rank = 1, .grid = {nsg, 1}, .lanes = {16, 1},
                       .lane_data = {1, 1}, .block = {16, 1}};
}

// dpas<operand> for inputs of `bits` bits on a grid; lanes run along the
// block's columns (N of the result, K of A) at the target's execution size.
static xe_layout_t dpas(const xe_target_t* tg, int operand, int bits, const int grid[2]) {
  int ex = tg->dpas_exec_size, k = tg->dpas_systolic_depth * (tg->dpas_channel_bits / bits);
  int ops = tg->dpas_channel_bits / bits;
  xe_layout_t l = {.kind = XE_LK_DPAS, .operand = operand, .rank = 2,
                   .grid = {grid[0], grid[1]}, .lanes = {1, ex}, .lane_data = {1, 1},
                   .ctx = {grid[0], grid[1]}};
  if (operand == XE_DPAS_A) {
    // Rows over the grid's rows; every column of the grid holds them all.
    l.block[0] = tg->dpas_repeat_count;
    l.block[1] = k;
    l.lane_data[1] = k / ex;  // SIMD16 fp16: 1; int8 (k 32): pairs
    l.grid[1] = 1;
  } else if (operand == XE_DPAS_B) {
    l.block[0] = k;
    l.block[1] = ex;
    l.lane_data[0] = ops;  // VNNI: ops-per-channel rows packed in one lane
    l.grid[0] = 1;
  } else {
    l.block[0] = tg->dpas_repeat_count;
    l.block[1] = ex;
  }
  return l;
}

static xe_layout_t slice_of(const xe_layout_t* parent, int dim) {
  xe_layout_t l = *parent;
  l.parent_kind = parent->kind;
  l.kind = XE_LK_SLICE;
  l.slice_dim = dim;
  return l;
}

static bool same(const xe_layout_t* x, const xe_layout_t* y) { return memcmp(x, y, sizeof *x) == 0; }

// --- where an element lives ----------------------------------------------------

// Subgroup coordinates (-1: every subgroup along that grid dim holds it),
// lane and in-lane position of element (i, j) of a 2-D tensor of `shape`
// (1-D: j = 0) in layout l.
typedef struct where_s {
  int sg[2];
  int lane;
  int reg;
} where_t;

static where_t where(const xe_layout_t* l, const int64_t* shape, int64_t i, int64_t j) {
  where_t w = {{-1, -1}, 0, 0};
  xe_layout_t p = *l;
  int64_t idx[2] = {i, j}, shp[2] = {shape[0], l->rank == 2 ? shape[1] : 1};
  if (l->kind == XE_LK_SLICE) {
    // Element i of the slice lives where row (column) i of the parent does,
    // in every lane/subgroup along the reduced dimension: take index 0 there.
    p.kind = l->parent_kind;
    int keep = 1 - l->slice_dim;
    idx[keep] = i;
    idx[l->slice_dim] = 0;
    shp[keep] = shape[0];
    shp[l->slice_dim] = 1;
    p.grid[l->slice_dim] = 1;
  }
  if (p.kind == XE_LK_UNIFORM || p.kind == XE_LK_LAZY || p.kind == XE_LK_NONE) return w;
  int rank = p.kind == XE_LK_BLOCKED && p.rank == 1 ? 1 : 2;
  for (int d = 0; d < rank; ++d) {
    int g = p.grid[d] > 0 ? p.grid[d] : 1;
    int64_t part = shp[d] / g > 0 ? shp[d] / g : 1;
    // One subgroup along a grid dim: every subgroup of the workgroup along
    // it holds the element (replicated).
    w.sg[d] = g > 1 ? (int)(idx[d] / part) : -1;
    idx[d] %= part;
  }
  if (rank == 1) {
    w.lane = (int)(idx[0] % 16);
    w.reg = (int)(idx[0] / 16);
    return w;
  }
  int64_t bi = idx[0] % p.block[0], bj = idx[1] % p.block[1];
  w.lane = (int)(bj / p.lane_data[1]) % (p.lanes[1] > 0 ? p.lanes[1] : 1);
  w.reg = (int)((bi / p.lane_data[0]) * p.lane_data[0] * p.lane_data[1] +
                (bi % p.lane_data[0]) * p.lane_data[1] + bj % p.lane_data[1]);
  return w;
}

xe_conv_tier_t xe_layout_conv_tier(const xe_layout_t* from, const xe_layout_t* to,
                                   const int64_t* shape) {
  if (same(from, to)) return XE_CONV_NONE;
  if (from->kind == XE_LK_LAZY || to->kind == XE_LK_LAZY) return XE_CONV_REGISTERS;
  if (from->kind == XE_LK_UNIFORM) return XE_CONV_REGISTERS;  // a broadcast
  int rank = to->kind == XE_LK_SLICE || (to->kind == XE_LK_BLOCKED && to->rank == 1) ? 1 : 2;
  int64_t n0 = shape[0], n1 = rank == 2 ? shape[1] : 1;
  xe_conv_tier_t tier = XE_CONV_REGISTERS;
  for (int64_t i = 0; i < n0; ++i)
    for (int64_t j = 0; j < n1; ++j) {
      where_t a = where(from, shape, i, j), b = where(to, shape, i, j);
      // Every subgroup that needs it must hold it: the source is everywhere
      // along a grid dim (-1), or both name the same subgroup.
      for (int d = 0; d < 2; ++d)
        if (a.sg[d] != -1 && a.sg[d] != b.sg[d]) return XE_CONV_SLM;
      if (a.lane != b.lane) tier = XE_CONV_LANES;
    }
  return tier;
}

// --- the stage -------------------------------------------------------------------

// Input bits of a dot's DPAS: fp32 dots run as bf16 pieces (xe_dot_f32.c).
static int bits_of(MlirValue v) {
  MlirType t = elem_of(v);
  if (mlirTypeIsAF16(t) || mlirTypeIsABF16(t) || mlirTypeIsAF32(t)) return 16;
  if (mlirTypeIsAInteger(t)) return (int)mlirIntegerTypeGetWidth(t);
  return 64;
}

// Whether a value flows (through elementwise ops) into a reduction along
// axis 1 or a dot's A operand: a walk over the values it reaches, each
// visited once (elementwise DAGs share values: x * x + x).
static bool reaches_rows(MlirValue v) {
  enum { CAP = 1024 };  // values looked at; a dot's epilogue is far smaller
  const void* seen[CAP];
  MlirValue todo[CAP];
  int nseen = 0, ntodo = 0;
  todo[ntodo++] = v;
  seen[nseen++] = v.ptr;
  bool found = false;
  while (ntodo && !found) {
    MlirValue x = todo[--ntodo];
    for (MlirOpOperand u = mlirValueGetFirstUse(x); !mlirOpOperandIsNull(u) && !found;
         u = mlirOpOperandGetNextUse(u)) {
      MlirOperation o = mlirOpOperandGetOwner(u);
      unsigned i = mlirOpOperandGetOperandNumber(u);
      if (op_is(o, "tile.reduce") && int_attr(o, "axis", -1) == 1 && rank_of(x) == 2)
        found = true;
      else if (op_is(o, "tile.dot")) found = i == 0;
      else if (elementwise(o) && rank_of(mlirOperationGetResult(o, 0)) == 2) {
        MlirValue r = mlirOperationGetResult(o, 0);
        bool dup = false;
        for (int k = 0; k < nseen && !dup; ++k) dup = seen[k] == r.ptr;
        if (!dup && nseen < CAP && ntodo < CAP) {
          seen[nseen++] = r.ptr;
          todo[ntodo++] = r;
        }
      }
    }
  }
  return found;
}

// The grid of a dot: rows only when its result reaches row work.
static void dot_grid(xe_assign_t* a, MlirOperation dot, int grid[2], bool* rows) {
  MlirValue r = mlirOperationGetResult(dot, 0);
  *rows = reaches_rows(r);
  int64_t m = dim_of(r, 0), n = dim_of(r, 1);
  // The planner's grid serves when it already keeps rows whole.
  if (!*rows || a->default_grid[1] == 1) {
    grid[0] = a->default_grid[0];
    grid[1] = a->default_grid[1];
    // A dot whose output that grid does not cut into whole 8x16 blocks (a
    // narrow second dot: 64x16 over 1x4) gets a grid of its own, chosen by
    // the planner's rule for its shape (columns first, 16 each, then rows
    // of 8); emission switches to it for the dot's operands and result.
    int nsg = grid[0] * grid[1];
    if (!*rows && nsg > 1 && (m % ((int64_t)grid[0] * 8) || n % ((int64_t)grid[1] * 16))) {
      int sn = 1;
      while (sn * 2 <= nsg && n % ((int64_t)sn * 2 * 16) == 0) sn *= 2;
      int sm = nsg / sn;
      if (n % ((int64_t)sn * 16) == 0 && m % ((int64_t)sm * 8) == 0) {
        grid[0] = sm;
        grid[1] = sn;
      }
    }
    return;
  }
  int g;
  if (a->nw > 0) {
    g = a->nw;
    // Fewer than 8 rows a subgroup (128 rows over 32: Intel's 32-warp
    // FlashAttention config) make no DPAS block: the rows go over the
    // subgroups that take 8 each and the columns over the rest (16x2), and
    // the row statistics meet across those columns through SLM
    // (rows_across_subgroups, xe_reduce.c).
    while (g > 1 && m % ((int64_t)g * 8)) g /= 2;
    if (g < a->nw && n % ((int64_t)(a->nw / g) * 16) == 0) {
      grid[0] = g;
      grid[1] = a->nw / g;
      return;
    }
    // Too few 16-column blocks for the other subgroups (a 64x16 S^T at 16
    // warps): the grid's columns hold copies of the whole rows (the
    // emitter holds such a result like an A operand, xe_values.c, and its
    // B operand whole: col_rep), so row work stays inside each subgroup.
    if (g < a->nw && m % ((int64_t)g * 8) == 0 && n % 16 == 0 && n < (int64_t)(a->nw / g) * 16) {
      grid[0] = g;
      grid[1] = a->nw / g;
      return;
    }
    g = a->nw;
  } else {
    // Whole 16-row groups per subgroup (the 1-D row statistics then sit
    // where the 1-D layout puts them), at most 8 subgroups.
    g = 1;
    while (g * 2 <= 8 && m % ((int64_t)g * 2 * 16) == 0) g *= 2;
  }
  grid[0] = g;
  grid[1] = 1;
}

// Same element width and class (float or integer): a layout's registers
// hold them alike.
static bool same_elem_width(MlirValue x, MlirValue y) {
  MlirType a = elem_of(x), b = elem_of(y);
  bool fa = mlirTypeIsAFloat(a), fb = mlirTypeIsAFloat(b);
  if (fa != fb) return false;
  if (fa) return mlirFloatTypeGetWidth(a) == mlirFloatTypeGetWidth(b);
  return mlirTypeIsAInteger(a) && mlirTypeIsAInteger(b) &&
         mlirIntegerTypeGetWidth(a) == mlirIntegerTypeGetWidth(b);
}

static bool single_use(MlirValue x) {
  MlirOpOperand u = mlirValueGetFirstUse(x);
  return !mlirOpOperandIsNull(u) && mlirOpOperandIsNull(mlirOpOperandGetNextUse(u));
}

// The places of layout l with one element per register slot: a 16-bit
// dot's B operand (16x16 blocks, lane j holding column j, VNNI pairs of
// rows per 32-bit slot) for values of another width on their way to it.
// Lane j then holds column j's elements in row order just the same, so a
// cast from such a value (int8 weights -> fp16) keeps every element in its
// lane: the register tier, and the dequantization computes per lane. A
// 16-bit dot's A operand on SIMD16 (8x16 blocks, lane j column j, one
// element per slot) already is such places: int8 or fp8 bits on their way
// to an fp16 A operand keep the A blocks of the dot, not the int8 dot's
// 8x32 ones. Int8 dots and execution size 8 have no such variant here.
static bool slot_variant(const xe_layout_t* l, xe_layout_t* out) {
  if (l->kind == XE_LK_DPAS && l->operand == XE_DPAS_A && l->block[0] == 8 &&
      l->block[1] == 16 && l->lanes[1] == 16 && l->lane_data[1] == 1) {
    *out = *l;
    return true;
  }
  if (l->kind != XE_LK_DPAS || l->operand != XE_DPAS_B || l->block[0] != 16 ||
      l->block[1] != 16 || l->lanes[1] != 16)
    return false;
  *out = *l;
  out->lane_data[0] = 1;
  return true;
}

// Whether an integer value is data: it comes from a load through
// elementwise ops (weights), not index arithmetic (masks, shift amounts).
static bool data_chain(MlirValue y, int depth) {
  if (depth > 16 || !mlirValueIsAOpResult(y)) return false;
  MlirOperation p = mlirOpResultGetOwner(y);
  if (op_is(p, "tile.load") || op_is(p, "tile.block_load")) return true;
  if (!elementwise(p)) return false;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(p); ++i)
    if (data_chain(mlirOperationGetOperand(p, i), depth + 1)) return true;
  return false;
}

// Whether every reader of x is an elementwise op whose result already holds
// the chain's operand layout (operand `role`): x then reaches the dot only,
// through the chain (fp8's emulated conversion reads the loaded bits four
// times: exponent, mantissa, sign, NaN test).
static bool read_by_chain_only(const xe_assign_t* a, MlirValue x, int role) {
  MlirOpOperand u = mlirValueGetFirstUse(x);
  if (mlirOpOperandIsNull(u)) return false;
  for (; !mlirOpOperandIsNull(u); u = mlirOpOperandGetNextUse(u)) {
    MlirOperation o = mlirOpOperandGetOwner(u);
    if (!elementwise(o)) return false;
    const xe_layout_t* l = get(a, mlirOperationGetResult(o, 0));
    if (!l || l->kind != XE_LK_DPAS || l->operand != role) return false;
  }
  return true;
}

enum { CHAIN_SEEN = 256 };
typedef struct chain_walk_s {
  const void* seen[CHAIN_SEEN];
  int nseen;
} chain_walk_t;

// A dot operand's layout, backward: a load read by the dot alone produces
// it directly; an elementwise op read by the dot alone (a prologue: scaling,
// a cast) computes in it, and so do its operands of the same element width
// that only the chain reads, back to their loads. Operands of another width
// that only the chain reads (int8 weights before their conversion, their
// int32 or fp32 dequantization, fp8 bits) take the operand's places one
// element per slot (slot_variant), back to their loads too. A value read
// elsewhere too, or of another width where no such variant exists, keeps
// its own layout and the op reading it records a conversion. A value read
// several times inside the chain is taken once all its readers are
// (anchor_dots walks the chain again until nothing changes).
static void operand_chain(xe_assign_t* a, chain_walk_t* w, MlirValue x, const xe_layout_t* l,
                          int depth) {
  if (depth > 32 || rank_of(x) != 2 || !mlirValueIsAOpResult(x)) return;
  if (depth == 0 ? !single_use(x) : !read_by_chain_only(a, x, l->operand)) return;
  for (int k = 0; k < w->nseen; ++k)
    if (w->seen[k] == x.ptr) return;
  if (w->nseen == CHAIN_SEEN) return;
  w->seen[w->nseen++] = x.ptr;
  MlirOperation p = mlirOpResultGetOwner(x);
  if (op_is(p, "tile.load") || op_is(p, "tile.block_load")) {
    set(a, x, l);
    return;
  }
  if (!elementwise(p)) return;
  set(a, x, l);
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(p); ++i) {
    MlirValue y = mlirOperationGetOperand(p, i);
    xe_layout_t v;
    if (rank_of(y) != 2) continue;
    if (same_elem_width(y, x)) operand_chain(a, w, y, l, depth + 1);
    else if (slot_variant(l, &v) && (is_float(y) || data_chain(y, 0)))
      operand_chain(a, w, y, &v, depth + 1);
  }
}

static MlirWalkResult anchor_dots(MlirOperation op, void* user) {
  xe_assign_t* a = user;
  if (!op_is(op, "tile.dot")) return MlirWalkResultAdvance;
  // A batched (3-D) dot has no DPAS layout: the emitter refuses it by name.
  // (Laying its 3-D values out as 2-D blocks divided by zero in
  // xe_layout_conv_tier: the compile worker died of SIGFPE.)
  if (rank_of(mlirOperationGetResult(op, 0)) != 2) return MlirWalkResultAdvance;
  int grid[2];
  bool rows;
  dot_grid(a, op, grid, &rows);
  if (!a->has_dot) {
    a->has_dot = true;
    a->dot_grid[0] = grid[0];
    a->dot_grid[1] = grid[1];
  }
  if (rows) a->rows_only = true;
  int bits = bits_of(mlirOperationGetOperand(op, 0));
  for (int i = 0; i < 2; ++i) {
    xe_layout_t l = dpas(a->tg, i == 0 ? XE_DPAS_A : XE_DPAS_B, bits, grid);
    for (int round = 0; round < 8; ++round) {
      chain_walk_t w = {.nseen = 0};
      a->changed = false;
      operand_chain(a, &w, mlirOperationGetOperand(op, i), &l, 0);
      if (!a->changed) break;
    }
  }
  xe_layout_t c = dpas(a->tg, XE_DPAS_C, bits, grid);
  set(a, mlirOperationGetResult(op, 0), &c);
  set(a, mlirOperationGetOperand(op, 2), &c);
  return MlirWalkResultAdvance;
}

// Loop-carried values: init, block argument, yielded value and result share
// a layout.
static void tie_loop(xe_assign_t* a, MlirOperation op) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
  MlirOperation y = mlirBlockGetTerminator(body);
  intptr_t nr = mlirOperationGetNumResults(op);
  intptr_t first = mlirOperationGetNumOperands(op) - nr;  // scf.for: lb, ub, step, inits
  for (intptr_t k = 0; k < nr; ++k) {
    MlirValue vs[4] = {mlirOperationGetOperand(op, first + k),
                       mlirBlockGetArgument(body, mlirBlockGetNumArguments(body) - nr + k),
                       mlirOperationGetOperand(y, k), mlirOperationGetResult(op, k)};
    const xe_layout_t* l = NULL;
    for (int i = 0; i < 4 && !l; ++i) l = get(a, vs[i]);
    if (!l) continue;
    xe_layout_t c = *l;
    for (int i = 0; i < 4; ++i) set(a, vs[i], &c);
  }
}

// A broadcast of a 1-D value's expand_dims (op) read by an elementwise op
// whose other 2-D data operand is a dot's tile on another grid than l's.
static bool used_on_other_grid(xe_assign_t* a, MlirOperation op, const xe_layout_t* l) {
  MlirValue src = mlirOperationGetOperand(op, 0);
  if (!mlirValueIsAOpResult(src)) return false;
  MlirOperation ed = mlirOpResultGetOwner(src);
  if (!op_is(ed, "tile.expand_dims") || rank_of(mlirOperationGetOperand(ed, 0)) != 1)
    return false;
  MlirValue r = mlirOperationGetResult(op, 0);
  for (MlirOpOperand u = mlirValueGetFirstUse(r); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation user = mlirOpOperandGetOwner(u);
    if (!elementwise(user)) continue;
    for (intptr_t i = 0; i < mlirOperationGetNumOperands(user); ++i) {
      MlirValue x = mlirOperationGetOperand(user, i);
      if (mlirValueEqual(x, r)) continue;
      const xe_layout_t* o = get(a, x);
      if (o && o->kind == XE_LK_DPAS && o->rank == 2 &&
          (o->ctx[0] != l->ctx[0] || o->ctx[1] != l->ctx[1]))
        return true;
    }
  }
  return false;
}

static MlirWalkResult propagate(MlirOperation op, void* user) {
  xe_assign_t* a = user;
  intptr_t no = mlirOperationGetNumOperands(op);
  if (op_is(op, "scf.for")) {
    tie_loop(a, op);
    return MlirWalkResultAdvance;
  }
  if (elementwise(op)) {
    MlirValue r = mlirOperationGetResult(op, 0);
    if (rank_of(r) == 0) return MlirWalkResultAdvance;
    // Forward: the first operand with a data layout (dpas before blocked:
    // the accumulator's layout wins over a default).
    const xe_layout_t* best = NULL;
    for (intptr_t i = 0; i < no; ++i) {
      const xe_layout_t* l = get(a, mlirOperationGetOperand(op, i));
      if (!l || l->kind == XE_LK_LAZY || l->kind == XE_LK_UNIFORM) continue;
      if (!best || (l->kind == XE_LK_DPAS && best->kind != XE_LK_DPAS)) best = l;
    }
    // Integer results follow only dot data (int32 accumulators); other
    // integers are index arithmetic and masks.
    if (best && (is_float(r) || best->kind == XE_LK_DPAS)) {
      xe_layout_t c = *best;
      set(a, r, &c);
    }
    // Backward: float splats and broadcasts feeding it take the result's
    // layout (masks and indices stay lazy).
    const xe_layout_t* rl = get(a, r);
    if (rl && rl->kind != XE_LK_LAZY)
      for (intptr_t i = 0; i < no; ++i) {
        MlirValue x = mlirOperationGetOperand(op, i);
        if (!mlirValueIsAOpResult(x) || rank_of(x) != rank_of(r) || !is_float(x)) continue;
        MlirOperation p = mlirOpResultGetOwner(x);
        if (op_is(p, "tile.splat") || op_is(p, "tile.broadcast")) {
          xe_layout_t c = *rl;
          set(a, x, &c);
        }
      }
    return MlirWalkResultAdvance;
  }
  if (op_is(op, "tile.reduce") && no >= 1) {
    MlirValue x = mlirOperationGetOperand(op, 0);
    const xe_layout_t* l = get(a, x);
    if (!l) return MlirWalkResultAdvance;
    for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i) {
      MlirValue r = mlirOperationGetResult(op, i);
      xe_layout_t c = rank_of(r) == 0 ? uniform() : slice_of(l, (int)int_attr(op, "axis", 0));
      if (l->kind == XE_LK_SLICE) c = uniform();  // not reached: 1-D reductions are uniform
      set(a, r, &c);
    }
    return MlirWalkResultAdvance;
  }
  if (op_is(op, "tile.expand_dims") && no == 1) {
    // The row statistic broadcast back over its tile: the parent layout.
    const xe_layout_t* l = get(a, mlirOperationGetOperand(op, 0));
    if (l && l->kind == XE_LK_SLICE && int_attr(op, "axis", -1) == l->slice_dim) {
      xe_layout_t c = *l;
      c.kind = l->parent_kind;
      c.parent_kind = XE_LK_NONE;
      c.slice_dim = 0;
      set(a, mlirOperationGetResult(op, 0), &c);
    }
    return MlirWalkResultAdvance;
  }
  if (op_is(op, "tile.broadcast") && no == 1) {
    // (M, 1) in a parent layout -> (M, N): the same layout, unless it is a
    // row statistic of one dot's tile added to another dot's tile on
    // another grid (x + tl.sum(y, 1)[:, None]): the broadcast is made from
    // the 1-D value where it is used, so it takes its user's layout
    // (backward, above) and no tile crosses grids.
    const xe_layout_t* l = get(a, mlirOperationGetOperand(op, 0));
    if (l && l->kind == XE_LK_DPAS && l->rank == 2 && used_on_other_grid(a, op, l))
      return MlirWalkResultAdvance;
    if (l && (l->kind == XE_LK_DPAS || l->kind == XE_LK_BLOCKED) && l->rank == 2) {
      xe_layout_t c = *l;
      set(a, mlirOperationGetResult(op, 0), &c);
    }
  }
  return MlirWalkResultAdvance;
}

// Step 4: defaults for everything left. 2-D values hold data when they are
// floats or loaded (int8 operands); other 2-D integers, masks and pointers
// are index arithmetic, evaluated where used.
// In the first round (anchors_only) only the sources get them: loads (block
// IO anchors) and scalars; what they reach is propagated before the rest.
static MlirWalkResult defaults(MlirOperation op, void* user) {
  xe_assign_t* a = user;
  bool loaded = op_is(op, "tile.load") || op_is(op, "tile.block_load");
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i) {
    MlirValue r = mlirOperationGetResult(op, i);
    if (get(a, r)) continue;
    int rank = rank_of(r);
    if (a->anchors_only && rank != 0 && !loaded) continue;
    xe_layout_t l;
    if (rank == 0) l = uniform();
    else if (rank == 1) {
      // As the emitter holds 1-D tensors: split over the subgroups when
      // they have a 16-element chunk each, else replicated in every one.
      int nsg = a->default_grid[0] * a->default_grid[1];
      l = blocked1d((dim_of(r, 0) + 15) / 16 >= nsg ? nsg : 1);
    }
    else if (is_float(r) || loaded) l = blocked2d(a->default_grid);
    else l = lazy();
    set(a, r, &l);
  }
  return MlirWalkResultAdvance;
}

static void add_conv(xe_assign_t* a, MlirOperation op, int i, const xe_layout_t* from,
                     const xe_layout_t* to, const int64_t* shape) {
  xe_conv_tier_t tier = xe_layout_conv_tier(from, to, shape);
  if (tier == XE_CONV_NONE) return;
  if (a->nconv == a->capconv) {
    int nc = a->capconv ? a->capconv * 2 : 16;
    conv_t* n = realloc(a->convs, (size_t)nc * sizeof *n);
    if (!n) {
      a->oom = true;
      return;
    }
    a->convs = n;
    a->capconv = nc;
  }
  a->convs[a->nconv++] = (conv_t){op.ptr, i, *from, *to, tier};
}

static MlirWalkResult conversions(MlirOperation op, void* user) {
  xe_assign_t* a = user;
  if (op_is(op, "tile.dot")) {
    MlirValue r = mlirOperationGetResult(op, 0);
    const xe_layout_t* rl = get(a, r);
    if (!rl || rank_of(r) != 2) return MlirWalkResultAdvance;  // see anchor_dots
    int grid[2] = {rl->grid[0], rl->grid[1]};
    int bits = bits_of(mlirOperationGetOperand(op, 0));
    for (int i = 0; i < 3; ++i) {
      MlirValue x = mlirOperationGetOperand(op, i);
      const xe_layout_t* l = get(a, x);
      if (!l) continue;
      xe_layout_t want = dpas(a->tg, i == 0 ? XE_DPAS_A : i == 1 ? XE_DPAS_B : XE_DPAS_C, bits,
                              grid);
      int64_t shape[2] = {dim_of(x, 0), dim_of(x, 1)};
      add_conv(a, op, i, l, &want, shape);
    }
    return MlirWalkResultAdvance;
  }
  if (elementwise(op)) {
    MlirValue r = mlirOperationGetResult(op, 0);
    const xe_layout_t* rl = get(a, r);
    if (!rl || rank_of(r) == 0 || rl->kind == XE_LK_LAZY) return MlirWalkResultAdvance;
    for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
      MlirValue x = mlirOperationGetOperand(op, i);
      const xe_layout_t* l = get(a, x);
      if (!l || l->kind == XE_LK_LAZY || l->kind == XE_LK_UNIFORM) continue;
      int64_t shape[2] = {dim_of(x, 0), rank_of(x) == 2 ? dim_of(x, 1) : 1};
      add_conv(a, op, (int)i, l, rl, shape);
    }
  }
  return MlirWalkResultAdvance;
}

zt_status_t xe_assign_layouts(MlirOperation kernel, const xe_target_t* tg, int num_warps,
                              const int default_grid[2], xe_assign_t** out) {
  *out = NULL;
  xe_assign_t* a = calloc(1, sizeof *a);
  if (!a) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "layout assignment");
  a->tg = tg;
  a->nw = num_warps;
  a->default_grid[0] = default_grid[0] > 0 ? default_grid[0] : 1;
  a->default_grid[1] = default_grid[1] > 0 ? default_grid[1] : 1;
  mlirOperationWalk(kernel, anchor_dots, a, MlirWalkPreOrder);
  for (int pass = 0; pass < 3; ++pass) {
    a->changed = true;
    for (int round = 0; a->changed && round < 64; ++round) {
      a->changed = false;
      mlirOperationWalk(kernel, propagate, a, MlirWalkPreOrder);
    }
    a->anchors_only = pass == 0;
    if (pass < 2) mlirOperationWalk(kernel, defaults, a, MlirWalkPreOrder);
  }
  mlirOperationWalk(kernel, conversions, a, MlirWalkPreOrder);
  if (a->oom) {
    xe_assign_free(a);
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "layout assignment");
  }
  *out = a;
  return NULL;
}

void xe_assign_free(xe_assign_t* a) {
  if (!a) return;
  free(a->keys);
  free(a->vals);
  free(a->convs);
  free(a);
}

const xe_layout_t* xe_assign_get(const xe_assign_t* a, MlirValue v) {
  return a ? get(a, v) : NULL;
}

bool xe_assign_dot_grid(const xe_assign_t* a, int grid[2], bool* rows_only) {
  if (!a || !a->has_dot) return false;
  grid[0] = a->dot_grid[0];
  grid[1] = a->dot_grid[1];
  *rows_only = a->rows_only;
  return true;
}

xe_conv_tier_t xe_assign_conversion(const xe_assign_t* a, MlirOperation op, int i,
                                    const xe_layout_t** from, const xe_layout_t** to) {
  for (int k = 0; a && k < a->nconv; ++k)
    if (a->convs[k].op == op.ptr && a->convs[k].operand == i) {
      if (from) *from = &a->convs[k].from;
      if (to) *to = &a->convs[k].to;
      return a->convs[k].tier;
    }
  return XE_CONV_NONE;
}

// --- printing ----------------------------------------------------------------------

static void print_body(const xe_layout_t* l, xe_lkind_t kind, zt_strbuf_t* sb) {
  static const char* ops[] = {"A", "B", "C"};
  if (kind == XE_LK_DPAS) zt_strbuf_printf(sb, "dpas<%s, ", ops[l->operand]);
  else zt_strbuf_puts(sb, "blocked<");
  if (l->rank == 1 && kind == XE_LK_BLOCKED) {
    zt_strbuf_printf(sb, "grid=[%d], lanes=[16], block=[16]>", l->grid[0]);
    return;
  }
  zt_strbuf_printf(sb, "grid=[%d, %d], lanes=[%d, %d], lane_data=[%d, %d], block=[%d, %d]>",
                   l->grid[0], l->grid[1], l->lanes[0], l->lanes[1], l->lane_data[0],
                   l->lane_data[1], l->block[0], l->block[1]);
}

void xe_layout_print(const xe_layout_t* l, zt_strbuf_t* sb) {
  switch (l->kind) {
    case XE_LK_UNIFORM: zt_strbuf_puts(sb, "uniform"); return;
    case XE_LK_LAZY: zt_strbuf_puts(sb, "lazy"); return;
    case XE_LK_NONE: zt_strbuf_puts(sb, "none"); return;
    case XE_LK_SLICE:
      zt_strbuf_printf(sb, "slice<dim=%d, ", l->slice_dim);
      print_body(l, l->parent_kind, sb);
      zt_strbuf_puts(sb, ">");
      return;
    default: print_body(l, l->kind, sb);
  }
}

static const char* tier_name(xe_conv_tier_t t) {
  switch (t) {
    case XE_CONV_REGISTERS: return "registers";
    case XE_CONV_LANES: return "lanes";
    case XE_CONV_SLM: return "slm";
    default: return "none";
  }
}

typedef struct dump_s {
  const xe_assign_t* a;
  MlirContext ctx;
  bool remove;
} dump_t;

// Sets (or removes) the zt.layout / zt.convert attributes of one op.
static MlirWalkResult annotate(MlirOperation op, void* user) {
  dump_t* d = user;
  MlirStringRef lname = mlirStringRefCreateFromCString("zt.layout");
  MlirStringRef cname = mlirStringRefCreateFromCString("zt.convert");
  if (d->remove) {
    mlirOperationRemoveDiscardableAttributeByName(op, lname);
    mlirOperationRemoveDiscardableAttributeByName(op, cname);
    return MlirWalkResultAdvance;
  }
  intptr_t nr = mlirOperationGetNumResults(op);
  zt_strbuf_t sb;
  zt_strbuf_init(&sb);
  bool any = false;
  for (intptr_t i = 0; i < nr; ++i) {
    const xe_layout_t* l = get(d->a, mlirOperationGetResult(op, i));
    if (i) zt_strbuf_puts(&sb, "; ");
    if (l) {
      xe_layout_print(l, &sb);
      any = true;
    } else {
      zt_strbuf_puts(&sb, "none");
    }
  }
  if (any && sb.data)
    mlirOperationSetDiscardableAttributeByName(
        op, lname, mlirStringAttrGet(d->ctx, mlirStringRefCreateFromCString(sb.data)));
  zt_strbuf_clear(&sb);
  for (int k = 0; k < d->a->nconv; ++k) {
    const conv_t* c = &d->a->convs[k];
    if (c->op != op.ptr) continue;
    if (sb.size) zt_strbuf_puts(&sb, "; ");
    zt_strbuf_printf(&sb, "operand %d: ", c->operand);
    xe_layout_print(&c->from, &sb);
    zt_strbuf_puts(&sb, " -> ");
    xe_layout_print(&c->to, &sb);
    zt_strbuf_printf(&sb, " via %s", tier_name(c->tier));
  }
  if (sb.size && sb.data)
    mlirOperationSetDiscardableAttributeByName(
        op, cname, mlirStringAttrGet(d->ctx, mlirStringRefCreateFromCString(sb.data)));
  zt_strbuf_deinit(&sb);
  return MlirWalkResultAdvance;
}

static void print_cb(MlirStringRef s, void* user) { zt_strbuf_append(user, s.data, s.length); }

void xe_assign_dump(const xe_assign_t* a, MlirOperation kernel, zt_strbuf_t* sb) {
  dump_t d = {a, mlirOperationGetContext(kernel), false};
  mlirOperationWalk(kernel, annotate, &d, MlirWalkPreOrder);
  mlirOperationPrint(kernel, print_cb, sb);
  zt_strbuf_puts(sb, "\n");
  d.remove = true;
  mlirOperationWalk(kernel, annotate, &d, MlirWalkPreOrder);
}
