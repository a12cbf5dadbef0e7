// Unrolling a small leading (batch) dimension out of 3-D tile code:
// Triton's batched dot, `tl.dot(x, y)` on (B, M, K) x (B, K, N), as B 2-D
// dots, and every 3-D value around it as B 2-D values.
//
// Why: the Xe lowerings (pvc/bmg SIMD16 and dg2 SIMD8) have layouts for 1-D
// and 2-D tensors only, so the batched dot, which the CPU target and Triton
// run, was refused by name ("3-D tensors are not supported on Xe yet"). A
// constexpr batch of a few slices costs B times the 2-D code, which is what
// a kernel written slice by slice would be.
//
// The rewrite: a 3-D value of shape (B, M, N) becomes B 2-D values of shape
// (M, N); a (1, M, N) value one, read by every slice. The batch index
// `tl.arange(S, S + B)[:, None, None]` becomes the constant S + b in slice b.
// Elementwise ops (arith, math, addptr, pointer casts), splat, broadcast,
// load, store, atomics and dot map slice by slice; an elementwise op or
// broadcast whose operands are all splats of scalars is computed on the
// scalars and splat (so `X + b * M * K` becomes one scalar pointer, as in a
// 2-D kernel). Slices computing the same thing share one value.
//
// An scf.for carrying 3-D values (a batched GEMM's K loop and its (B, M, N)
// accumulator) becomes an scf.for carrying their slices, B iteration values
// for each (one for a (1, M, N) value); its body is unrolled as the
// kernel's code is, its yield yields the slices.
//
// Reductions and scans along axis 1 or 2 map slice by slice along axis 0
// or 1 (session 22); a reduction's (B, X) result must only come back to
// 3-D at the reduced axis (`tl.max(s, 2)[:, :, None]`, a batched softmax).
// An scf.if with 3-D results becomes an scf.if yielding their slices, its
// branches unrolled as a loop body is (session 22).
//
// What it does not handle leaves the kernel unchanged (the lowering then
// refuses the 3-D tensor by name, as before): 3-D values inside
// scf.while, reductions along the batch axis or whose
// (B, X) result is read otherwise (stored, combined as 2-D), reshapes,
// transposes, joins and the like on 3-D values, a batch of more than
// ZT_BATCH_UNROLL_MAX slices, 4-D tensors.
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>

#include "common/tile_build.h"
#include "lowering.h"

#define ZT_BATCH_UNROLL_MAX 16

static int rank_of(MlirType t) {
  return mlirTypeIsARankedTensor(t) ? (int)mlirShapedTypeGetRank(t) : 0;
}

// Ops whose 3-D form is B independent 2-D ops, one per batch slice.
static bool sliceable(MlirOperation op) {
  if (mlirOperationGetNumRegions(op) != 0) return false;
  if (zt_op_name_has_prefix(op, "arith.") || zt_op_name_has_prefix(op, "math."))
    return !zt_op_named(op, "arith.constant");
  static const char* const tile_ops[] = {
      "tile.addptr",    "tile.ptr_to_int", "tile.int_to_ptr", "tile.ptr_cast",   "tile.load",
      "tile.store",     "tile.atomic_rmw", "tile.atomic_cas", "tile.broadcast",  "tile.splat",
      "tile.dot",       "tile.bitcast",    "tile.fp_to_fp",   "tile.expand_dims"};
  for (size_t i = 0; i < sizeof tile_ops / sizeof *tile_ops; ++i)
    if (zt_op_named(op, tile_ops[i])) return true;
  return false;
}

static bool writes(MlirOperation op) {
  return zt_op_named(op, "tile.store") || zt_op_named(op, "tile.atomic_rmw") ||
         zt_op_named(op, "tile.atomic_cas");
}

// Ops computed on the scalars when every tensor operand is a splat.
static bool scalar_foldable(MlirOperation op) {
  return ((zt_op_name_has_prefix(op, "arith.") || zt_op_name_has_prefix(op, "math.")) &&
          !zt_op_named(op, "arith.constant")) ||
         zt_op_named(op, "tile.addptr");
}

// Whether v (2-D (B, 1)) is `tl.arange(S, S + B)[:, None]`; *start: S.
static bool batch_range(MlirValue v, int64_t* start) {
  if (!mlirValueIsAOpResult(v)) return false;
  MlirOperation e = mlirOpResultGetOwner(v);
  if (!zt_op_named(e, "tile.expand_dims")) return false;
  MlirValue r = mlirOperationGetOperand(e, 0);
  if (!mlirValueIsAOpResult(r) || rank_of(mlirValueGetType(r)) != 1) return false;
  MlirOperation mr = mlirOpResultGetOwner(r);
  if (!zt_op_named(mr, "tile.make_range")) return false;
  MlirAttribute s = mlirOperationGetAttributeByName(mr, mlirStringRefCreateFromCString("start"));
  if (mlirAttributeIsNull(s) || !mlirAttributeIsAInteger(s)) return false;
  *start = mlirIntegerAttrGetValueInt(s);
  return true;
}

typedef struct {
  MlirValue v;  // a 3-D value of the original code
  int n;        // 1 (leading dimension 1) or the batch
  MlirValue s[ZT_BATCH_UNROLL_MAX];
} slices_t;

typedef struct {
  slices_t* m;
  size_t n, cap;
  int64_t batch;
  bool oom;
  MlirOperation at;  // new ops go in front of it
  MlirOperation* old;  // the 3-D ops replaced, in program order (erased last)
  size_t nold, capold;
  MlirOperation* loops;  // the scf.for ops made, whose 3-D arguments go last
  size_t nloops, caploops;
} unroll_t;

static slices_t* find(unroll_t* u, MlirValue v) {
  for (size_t i = 0; i < u->n; ++i)
    if (mlirValueEqual(u->m[i].v, v)) return &u->m[i];
  return NULL;
}

static slices_t* add(unroll_t* u, MlirValue v, int n) {
  if (u->n == u->cap) {
    size_t cap = u->cap ? 2 * u->cap : 64;
    slices_t* p = realloc(u->m, cap * sizeof *p);
    if (!p) {
      u->oom = true;
      return NULL;
    }
    u->m = p;
    u->cap = cap;
  }
  slices_t* s = &u->m[u->n++];
  memset(s, 0, sizeof *s);
  s->v = v;
  s->n = n;
  return s;
}

// Slice b of operand v: v itself when it is not 3-D (a scalar).
static MlirValue slice_of(unroll_t* u, MlirValue v, int b) {
  if (rank_of(mlirValueGetType(v)) != 3) return v;
  slices_t* s = find(u, v);
  return s->s[s->n == 1 ? 0 : b];
}

static MlirType slice_type(MlirType t) {
  int64_t shape[2] = {mlirShapedTypeGetDimSize(t, 1), mlirShapedTypeGetDimSize(t, 2)};
  return zt_tb_tensor(2, shape, mlirShapedTypeGetElementType(t));
}

static MlirValue splat_scalar(MlirValue v) {
  if (!mlirValueIsAOpResult(v)) return (MlirValue){NULL};
  MlirOperation d = mlirOpResultGetOwner(v);
  return zt_op_named(d, "tile.splat") ? mlirOperationGetOperand(d, 0) : (MlirValue){NULL};
}

static int64_t axis_of(MlirOperation op) {
  MlirAttribute a = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("axis"));
  return mlirAttributeIsNull(a) || !mlirAttributeIsAInteger(a) ? -1
                                                               : mlirIntegerAttrGetValueInt(a);
}

// Whether v is a result of a reduction of 3-D values (a (B, M) or (B, N)
// value whose slices are 1-D).
static bool reduced_3d(MlirValue v) {
  if (!mlirValueIsAOpResult(v)) return false;
  MlirOperation d = mlirOpResultGetOwner(v);
  return zt_op_named(d, "tile.reduce") &&
         rank_of(mlirValueGetType(mlirOperationGetOperand(d, 0))) == 3;
}

// A reduction or scan of 3-D values along axis 1 or 2: one along axis 0 or
// 1 of each slice. A reduction's (B, X) results must only come back to 3-D
// (`m[:, :, None]`, expand_dims at the reduced axis: a batched softmax's row
// max and sum), so no (B, X) value needs slices of its own elsewhere.
static bool slice_reduce_ok(MlirOperation op) {
  int64_t axis = axis_of(op);
  if (axis != 1 && axis != 2) return false;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i)
    if (rank_of(mlirValueGetType(mlirOperationGetOperand(op, i))) != 3) return false;
  bool scan = zt_op_named(op, "tile.scan");
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i) {
    MlirValue r = mlirOperationGetResult(op, i);
    if (rank_of(mlirValueGetType(r)) != (scan ? 3 : 2)) return false;
    if (scan) continue;
    for (MlirOpOperand u = mlirValueGetFirstUse(r); !mlirOpOperandIsNull(u);
         u = mlirOpOperandGetNextUse(u)) {
      MlirOperation o = mlirOpOperandGetOwner(u);
      if (!zt_op_named(o, "tile.expand_dims") || axis_of(o) != axis) return false;
    }
  }
  return true;
}

// Whether the kernel's 3-D code is all of a form this rewrite handles
// (bad: not), its batch (0: only leading dimensions of 1), any: 3-D at all.
typedef struct {
  MlirBlock entry;
  int64_t batch;
  bool any, bad, dot;
} check_t;

// Whether 3-D code in block bl can be unrolled: the kernel's entry block or
// the body of an scf.for in such a block.
static bool in_loops(const check_t* c, MlirBlock bl) {
  while (!mlirBlockEqual(bl, c->entry)) {
    MlirOperation p = mlirBlockGetParentOperation(bl);
    if (mlirOperationIsNull(p) || !(zt_op_named(p, "scf.for") || zt_op_named(p, "scf.if")))
      return false;
    bl = mlirOperationGetBlock(p);
    if (mlirBlockIsNull(bl)) return false;
  }
  return true;
}

static bool check_leading(check_t* c, MlirType t) {
  int r = rank_of(t);
  if (r < 3) return true;
  if (r != 3) return false;
  c->any = true;
  int64_t d = mlirShapedTypeGetDimSize(t, 0);
  if (d == 1) return true;
  if (d < 1 || d > ZT_BATCH_UNROLL_MAX || (c->batch && c->batch != d)) return false;
  c->batch = d;
  return true;
}

static MlirWalkResult check_cb(MlirOperation op, void* ud) {
  check_t* c = ud;
  bool three = false;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op) && !c->bad; ++i) {
    MlirType t = mlirValueGetType(mlirOperationGetOperand(op, i));
    three |= rank_of(t) >= 3;
    c->bad |= !check_leading(c, t);
  }
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op) && !c->bad; ++i) {
    MlirType t = mlirValueGetType(mlirOperationGetResult(op, i));
    three |= rank_of(t) >= 3;
    c->bad |= !check_leading(c, t);
  }
  bool loop = zt_op_named(op, "scf.for");  // its 3-D block arguments are its iteration values
  for (intptr_t r = 0; r < mlirOperationGetNumRegions(op) && !c->bad; ++r)
    for (MlirBlock bl = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r));
         !mlirBlockIsNull(bl); bl = mlirBlockGetNextInRegion(bl))
      for (intptr_t a = 0; a < mlirBlockGetNumArguments(bl); ++a) {
        MlirType t = mlirValueGetType(mlirBlockGetArgument(bl, a));
        c->bad |= loop ? !check_leading(c, t) : rank_of(t) >= 3;
      }
  if (c->bad) return MlirWalkResultInterrupt;
  if (!three) return MlirWalkResultAdvance;
  c->dot |= zt_op_named(op, "tile.dot");
  MlirOperation parent = mlirOperationGetParentOperation(op);
  bool yield = zt_op_named(op, "scf.yield") &&
               (zt_op_named(parent, "scf.for") || zt_op_named(parent, "scf.if"));
  bool red = zt_op_named(op, "tile.reduce") || zt_op_named(op, "tile.scan");
  bool iff = zt_op_named(op, "scf.if");
  if (iff) loop = true;  // its 3-D results are slices like a loop's
  if (!in_loops(c, mlirOperationGetBlock(op)) || !(sliceable(op) || loop || yield || red)) {
    c->bad = true;
    return MlirWalkResultInterrupt;
  }
  if (loop || yield) return MlirWalkResultAdvance;  // 3-D and other values mixed
  if (zt_op_named(op, "tile.reduce") || zt_op_named(op, "tile.scan")) {
    c->bad = !slice_reduce_ok(op);
    return c->bad ? MlirWalkResultInterrupt : MlirWalkResultAdvance;
  }
  if (zt_op_named(op, "tile.expand_dims")) {
    MlirValue in = mlirOperationGetOperand(op, 0);
    MlirType it = mlirValueGetType(in), rt = mlirValueGetType(mlirOperationGetResult(op, 0));
    int64_t start;
    // (1, ...) results are 2-D values; a (B, 1, 1) one must be the batch index.
    c->bad = rank_of(it) != 2 ||
             (mlirShapedTypeGetDimSize(rt, 0) != 1 && !reduced_3d(in) &&
              !(mlirShapedTypeGetDimSize(rt, 1) == 1 && mlirShapedTypeGetDimSize(rt, 2) == 1 &&
                batch_range(in, &start)));
  } else {
    // Every tensor operand and result 3-D (no rank changes but expand_dims).
    for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
      int r = rank_of(mlirValueGetType(mlirOperationGetOperand(op, i)));
      c->bad |= r != 0 && r != 3;
    }
    for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i)
      c->bad |= rank_of(mlirValueGetType(mlirOperationGetResult(op, i))) != 3;
  }
  return c->bad ? MlirWalkResultInterrupt : MlirWalkResultAdvance;
}

// op rebuilt in front of `at` with other operands and result types.
static MlirOperation rebuild(MlirOperation at, MlirOperation op, intptr_t nops,
                             const MlirValue* ops, intptr_t nres,
                             const MlirType* res) {
  MlirOperationState st = mlirOperationStateGet(mlirIdentifierStr(mlirOperationGetName(op)),
                                                mlirOperationGetLocation(op));
  if (nops) mlirOperationStateAddOperands(&st, nops, ops);
  if (nres) mlirOperationStateAddResults(&st, nres, res);
  intptr_t na = mlirOperationGetNumAttributes(op);
  MlirNamedAttribute attrs[16];
  if (na > 16) na = 16;  // tile ops carry a few (segment sizes, modifiers, hints)
  for (intptr_t i = 0; i < na; ++i) attrs[i] = mlirOperationGetAttribute(op, i);
  if (na) mlirOperationStateAddAttributes(&st, na, attrs);
  MlirOperation n = mlirOperationCreate(&st);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(at), at, n);
  return n;
}

// The slices of an expand_dims with a 3-D result (check_cb's forms).
static void unroll_expand(unroll_t* u, MlirOperation op) {
  zt_tb_t b = zt_tb_at(u->at);
  b.loc = mlirOperationGetLocation(op);  // errors name the op's own line
  MlirValue in = mlirOperationGetOperand(op, 0), res = mlirOperationGetResult(op, 0);
  MlirType rt = mlirValueGetType(res);
  int64_t lead = mlirShapedTypeGetDimSize(rt, 0);
  if (lead != 1) {  // the batch index: slice i is the constant S + i
    int64_t start = 0, one[2] = {1, 1};
    batch_range(in, &start);
    slices_t* s = add(u, res, (int)lead);
    for (int i = 0; s && i < lead; ++i)
      s->s[i] = zt_tb_const_splat(&b, mlirShapedTypeGetElementType(rt), (double)(start + i), 2,
                                  one);
    return;
  }
  slices_t* s = add(u, res, 1);
  if (!s) return;
  MlirType st = slice_type(rt);
  if (mlirTypeEqual(st, mlirValueGetType(in))) {  // (M, N) -> (1, M, N) or (1, N) -> (1, 1, N)
    s->s[0] = in;
    return;
  }
  // (1, N) -> (1, N, 1): the slice is the column (N, 1), an expand_dims of
  // the 1-D source when there is one, else a reshape.
  if (mlirValueIsAOpResult(in)) {
    MlirOperation d = mlirOpResultGetOwner(in);
    if (zt_op_named(d, "tile.expand_dims") &&
        rank_of(mlirValueGetType(mlirOperationGetOperand(d, 0))) == 1) {
      MlirValue src = mlirOperationGetOperand(d, 0);
      MlirNamedAttribute ax =
          zt_tb_attr(&b, "axis", mlirIntegerAttrGet(mlirIntegerTypeGet(b.ctx, 32), 1));
      s->s[0] = zt_tb_op(&b, "tile.expand_dims", 1, &src, st, 1, &ax);
      return;
    }
  }
  s->s[0] = zt_tb_op(&b, "tile.reshape", 1, &in, st, 0, NULL);
}

// Slice i of op's (single) result when all its tensor operands are splats:
// the op on the scalars, splat. Null when they are not.
static MlirValue fold_splats(unroll_t* u, MlirOperation op, int i) {
  intptr_t nops = mlirOperationGetNumOperands(op);
  MlirValue ops[8];
  if (nops > 8 || mlirOperationGetNumResults(op) != 1) return (MlirValue){NULL};
  bool bcast = zt_op_named(op, "tile.broadcast");
  if (!bcast && !scalar_foldable(op)) return (MlirValue){NULL};
  for (intptr_t k = 0; k < nops; ++k) {
    MlirValue o = mlirOperationGetOperand(op, k);
    if (rank_of(mlirValueGetType(o)) == 0) {
      ops[k] = o;
      continue;
    }
    ops[k] = splat_scalar(slice_of(u, o, i));
    if (mlirValueIsNull(ops[k])) return (MlirValue){NULL};
  }
  MlirType rt = slice_type(mlirValueGetType(mlirOperationGetResult(op, 0)));
  int64_t shape[2] = {mlirShapedTypeGetDimSize(rt, 0), mlirShapedTypeGetDimSize(rt, 1)};
  zt_tb_t b = zt_tb_at(u->at);
  b.loc = mlirOperationGetLocation(op);  // errors name the op's own line
  if (bcast) return zt_tb_splat(&b, ops[0], 2, shape);
  MlirType et = mlirShapedTypeGetElementType(rt);
  MlirValue r = mlirOperationGetResult(rebuild(u->at, op, nops, ops, 1, &et), 0);
  return zt_tb_splat(&b, r, 2, shape);
}

// Slice i of a reduction or scan along axis a of 3-D values: the same op
// along axis a - 1 of the slices (a reduction's results are 1-D).
static void unroll_reduce(unroll_t* u, MlirOperation op, int i) {
  intptr_t nops = mlirOperationGetNumOperands(op), nres = mlirOperationGetNumResults(op);
  if (nops > 4 || nres > 4) {
    u->oom = true;
    return;
  }
  int n = 1;
  MlirValue ops[4];
  for (intptr_t k = 0; k < nops; ++k) {
    slices_t* s = find(u, mlirOperationGetOperand(op, k));
    if (!s) {
      u->oom = true;
      return;
    }
    if (s->n > 1) n = (int)u->batch;
  }
  if (i >= n) return;
  for (intptr_t k = 0; k < nops; ++k) ops[k] = slice_of(u, mlirOperationGetOperand(op, k), i);
  MlirType res[4];
  slices_t* rs[4];
  for (intptr_t k = 0; k < nres; ++k) {
    MlirValue r = mlirOperationGetResult(op, k);
    MlirType t = mlirValueGetType(r);
    if (rank_of(t) == 3) {
      res[k] = slice_type(t);
    } else {
      int64_t x = mlirShapedTypeGetDimSize(t, 1);
      res[k] = zt_tb_tensor(1, &x, mlirShapedTypeGetElementType(t));
    }
    rs[k] = i == 0 ? add(u, r, n) : find(u, r);
    if (!rs[k]) return;
  }
  MlirOperationState st = mlirOperationStateGet(mlirIdentifierStr(mlirOperationGetName(op)),
                                                mlirOperationGetLocation(op));
  mlirOperationStateAddOperands(&st, nops, ops);
  mlirOperationStateAddResults(&st, nres, res);
  intptr_t na = mlirOperationGetNumAttributes(op);
  MlirNamedAttribute attrs[16];
  if (na > 16) na = 16;
  MlirContext ctx = mlirOperationGetContext(op);
  for (intptr_t k = 0; k < na; ++k) {
    attrs[k] = mlirOperationGetAttribute(op, k);
    MlirStringRef nm = mlirIdentifierStr(attrs[k].name);
    if (nm.length == 4 && memcmp(nm.data, "axis", 4) == 0)
      attrs[k].attribute = mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 32), axis_of(op) - 1);
  }
  mlirOperationStateAddAttributes(&st, na, attrs);
  MlirOperation c = mlirOperationCreate(&st);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(u->at), u->at, c);
  for (intptr_t k = 0; k < nres; ++k) rs[k]->s[i] = mlirOperationGetResult(c, k);
}

// Slice i of `m[:, :, None]` (or `m[:, None, :]`) of a reduction's (B, X)
// result: the 1-D slice expanded to (X, 1) (or (1, X)).
static void unroll_reduced_expand(unroll_t* u, MlirOperation op, int i) {
  MlirValue in = mlirOperationGetOperand(op, 0), res = mlirOperationGetResult(op, 0);
  slices_t* si = find(u, in);
  if (!si) {
    u->oom = true;
    return;
  }
  if (i >= si->n) return;
  slices_t* s = i == 0 ? add(u, res, si->n) : find(u, res);
  if (!s) return;
  zt_tb_t b = zt_tb_at(u->at);
  b.loc = mlirOperationGetLocation(op);
  MlirNamedAttribute ax =
      zt_tb_attr(&b, "axis", mlirIntegerAttrGet(mlirIntegerTypeGet(b.ctx, 32), axis_of(op) - 1));
  MlirValue x = si->s[i];
  s->s[i] = zt_tb_op(&b, "tile.expand_dims", 1, &x, slice_type(mlirValueGetType(res)), 1, &ax);
}

// Slice i of op's results (the batch loop is outside the op loop: a
// slice's code stays together, as a kernel written slice by slice would
// have it, and its values die before the next slice's are made).
static void unroll_op(unroll_t* u, MlirOperation op, int i) {
  if (zt_op_named(op, "tile.expand_dims") &&
      reduced_3d(mlirOperationGetOperand(op, 0))) {
    unroll_reduced_expand(u, op, i);
    return;
  }
  if (zt_op_named(op, "tile.reduce") || zt_op_named(op, "tile.scan")) {
    unroll_reduce(u, op, i);
    return;
  }
  if (zt_op_named(op, "tile.expand_dims")) {
    if (i == 0) unroll_expand(u, op);
    return;
  }
  intptr_t nops = mlirOperationGetNumOperands(op), nres = mlirOperationGetNumResults(op);
  if (nres > 4 || nops > 16) {
    u->oom = true;  // not a form tile ops have; check_cb let it through
    return;
  }
  // Slices: the batch when any operand or result has it, else one.
  int n = 1;
  for (intptr_t k = 0; k < nops; ++k) {
    MlirType t = mlirValueGetType(mlirOperationGetOperand(op, k));
    slices_t* s = rank_of(t) == 3 ? find(u, mlirOperationGetOperand(op, k)) : NULL;
    if (rank_of(t) == 3 && !s) {
      u->oom = true;  // a 3-D value not made here (check_cb excludes it)
      return;
    }
    if (s && s->n > 1) n = (int)u->batch;
  }
  for (intptr_t k = 0; k < nres; ++k)
    if (mlirShapedTypeGetDimSize(mlirValueGetType(mlirOperationGetResult(op, k)), 0) > 1)
      n = (int)u->batch;
  if (i >= n) return;
  slices_t* rs[4] = {0};
  for (intptr_t k = 0; k < nres; ++k) {
    MlirValue r = mlirOperationGetResult(op, k);
    rs[k] = i == 0 ? add(u, r, n) : find(u, r);
    if (!rs[k]) return;
  }
  // Stores and atomics write: every slice is its own op.
  bool pure = nres > 0 && !writes(op);
  MlirType res[4];
  for (intptr_t k = 0; k < nres; ++k)
    res[k] = slice_type(mlirValueGetType(mlirOperationGetResult(op, k)));
  MlirValue ops[16];
  bool same = i > 0 && pure;
  for (intptr_t k = 0; k < nops; ++k) {
    ops[k] = slice_of(u, mlirOperationGetOperand(op, k), i);
    same &= mlirValueEqual(ops[k], slice_of(u, mlirOperationGetOperand(op, k), i - 1));
  }
  if (same) {  // slice i computes what slice i - 1 did
    for (intptr_t k = 0; k < nres; ++k) rs[k]->s[i] = rs[k]->s[i - 1];
    return;
  }
  MlirValue f = fold_splats(u, op, i);
  if (!mlirValueIsNull(f)) {
    rs[0]->s[i] = f;
    return;
  }
  if (zt_op_named(op, "tile.broadcast") && mlirTypeEqual(mlirValueGetType(ops[0]), res[0])) {
    rs[0]->s[i] = ops[0];  // (1, M, N) -> (B, M, N): the slice itself
    return;
  }
  MlirOperation c = rebuild(u->at, op, nops, ops, nres, res);
  for (intptr_t k = 0; k < nres; ++k) rs[k]->s[i] = mlirOperationGetResult(c, k);
}

// Ops of the rest of the kernel that 3-D code may move across: no writes,
// no barriers, no control flow.
static bool reads_only(MlirOperation op) {
  if (mlirOperationGetNumRegions(op) != 0) return false;
  if (zt_op_name_has_prefix(op, "arith.") || zt_op_name_has_prefix(op, "math.")) return true;
  static const char* const ok[] = {"tile.make_range", "tile.expand_dims", "tile.splat",
                                   "tile.broadcast",  "tile.reshape",     "tile.addptr",
                                   "tile.load",       "tile.program_id",  "tile.num_programs",
                                   "tile.ptr_cast",   "tile.ptr_to_int",  "tile.int_to_ptr"};
  for (size_t i = 0; i < sizeof ok / sizeof *ok; ++i)
    if (zt_op_named(op, ok[i])) return true;
  return false;
}

static bool has_3d(MlirOperation op) {
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i)
    if (rank_of(mlirValueGetType(mlirOperationGetOperand(op, i))) == 3) return true;
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i)
    if (rank_of(mlirValueGetType(mlirOperationGetResult(op, i))) == 3) return true;
  return false;
}

// One segment's ops, slice by slice, its closing write included: slice
// b + 1's loads then follow slice b's store. A program that read in slice
// b + 1 what it writes in slice b would see the difference; on a GPU that
// program already depends on which lanes hold which elements (no barrier
// orders one element's store before another's load). Writing every slice's
// store last instead cost IGC 1440 sends for the 4-slice test kernel
// (slice by slice: 94).
static void unroll_segment(unroll_t* u, MlirOperation* ops, size_t n) {
  for (int i = 0; i < u->batch && !u->oom; ++i)
    for (size_t j = 0; j < n && !u->oom; ++j) unroll_op(u, ops[j], i);
}

static void unroll_block(unroll_t* u, MlirBlock bl);

// Slice count of a 3-D type: 1 for (1, M, N), else the batch.
static int slices_for(const unroll_t* u, MlirType t) {
  return mlirShapedTypeGetDimSize(t, 0) == 1 ? 1 : (int)u->batch;
}

// An scf.for carrying 3-D values: a new scf.for in front of it with the
// other iteration values first, in order, then every 3-D value's slices;
// the body moves over (its 3-D arguments are erased once nothing reads
// them) and is unrolled in place.
static void unroll_loop(unroll_t* u, MlirOperation op) {
  intptr_t nops = mlirOperationGetNumOperands(op), nres = mlirOperationGetNumResults(op);
  size_t cap = (size_t)(nops + nres * u->batch) + 4;
  MlirValue* ops = malloc(cap * sizeof *ops);
  MlirType* res = malloc(cap * sizeof *res);
  if (!ops || !res || !zt_op_list_push(&u->loops, &u->nloops, &u->caploops, op)) {
    free(ops);
    free(res);
    u->oom = true;
    return;
  }
  intptr_t n = 0, r = 0;
  for (intptr_t k = 0; k < 3; ++k) ops[n++] = mlirOperationGetOperand(op, k);
  for (int pass = 0; pass < 2; ++pass)  // the other values, then the slices
    for (intptr_t k = 0; k < nres; ++k) {
      MlirValue init = mlirOperationGetOperand(op, 3 + k);
      MlirType t = mlirValueGetType(mlirOperationGetResult(op, k));
      if ((rank_of(t) == 3) != (pass == 1)) continue;
      if (pass == 0) {
        ops[n++] = init;
        res[r++] = t;
        continue;
      }
      for (int i = 0; i < slices_for(u, t); ++i) {
        ops[n++] = slice_of(u, init, i);
        res[r++] = slice_type(t);
      }
    }
  MlirOperationState st = mlirOperationStateGet(mlirStringRefCreateFromCString("scf.for"),
                                                mlirOperationGetLocation(op));
  mlirOperationStateAddOperands(&st, n, ops);
  if (r) mlirOperationStateAddResults(&st, r, res);
  intptr_t na = mlirOperationGetNumAttributes(op);
  for (intptr_t i = 0; i < na; ++i) {
    MlirNamedAttribute a = mlirOperationGetAttribute(op, i);
    mlirOperationStateAddAttributes(&st, 1, &a);
  }
  MlirRegion region = mlirRegionCreate();
  mlirOperationStateAddOwnedRegions(&st, 1, &region);
  MlirOperation nf = mlirOperationCreate(&st);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(op), op, nf);
  mlirRegionTakeBody(mlirOperationGetRegion(nf, 0), mlirOperationGetRegion(op, 0));
  u->loops[u->nloops - 1] = nf;
  free(ops);
  free(res);
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(nf, 0));
  MlirLocation loc = mlirOperationGetLocation(op);
  // Results and arguments: the others in place, the 3-D ones' slices after.
  intptr_t j = 0;
  for (intptr_t k = 0; k < nres; ++k) {
    MlirValue old = mlirOperationGetResult(op, k);
    if (rank_of(mlirValueGetType(old)) != 3)
      mlirValueReplaceAllUsesOfWith(old, mlirOperationGetResult(nf, j++));
  }
  for (intptr_t k = 0; k < nres && !u->oom; ++k) {
    MlirValue old = mlirOperationGetResult(op, k), arg = mlirBlockGetArgument(body, 1 + k);
    MlirType t = mlirValueGetType(old);
    if (rank_of(t) != 3) continue;
    int c = slices_for(u, t);
    slices_t* sr = add(u, old, c);
    slices_t* sa = sr ? add(u, arg, c) : NULL;
    if (!sa) return;
    for (int i = 0; i < c; ++i) {
      sr->s[i] = mlirOperationGetResult(nf, j++);
      sa->s[i] = mlirBlockAddArgument(body, slice_type(t), loc);
    }
  }
  if (!zt_op_list_push(&u->old, &u->nold, &u->capold, op)) u->oom = true;
  if (!u->oom) unroll_block(u, body);
}

// A loop body's yield of 3-D values: the others, then the slices, in the
// order unroll_loop gave the iteration values.
static void unroll_yield(unroll_t* u, MlirOperation op) {
  intptr_t nops = mlirOperationGetNumOperands(op);
  MlirValue* ops = malloc(((size_t)nops * (size_t)u->batch + 1) * sizeof *ops);
  if (!ops || !zt_op_list_push(&u->old, &u->nold, &u->capold, op)) {
    free(ops);
    u->oom = true;
    return;
  }
  intptr_t n = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (intptr_t k = 0; k < nops; ++k) {
      MlirValue v = mlirOperationGetOperand(op, k);
      MlirType t = mlirValueGetType(v);
      if ((rank_of(t) == 3) != (pass == 1)) continue;
      if (pass == 0) ops[n++] = v;
      for (int i = 0; pass == 1 && i < slices_for(u, t); ++i) ops[n++] = slice_of(u, v, i);
    }
  rebuild(op, op, n, ops, 0, NULL);
  free(ops);
}

// An scf.if with 3-D results: a new scf.if in front of it with the other
// results first, then every 3-D result's slices; both branches move over
// and are unrolled in place (their yields yield the slices, unroll_yield).
static void unroll_if(unroll_t* u, MlirOperation op) {
  intptr_t nres = mlirOperationGetNumResults(op);
  MlirType* res = malloc(((size_t)nres * (size_t)u->batch + 1) * sizeof *res);
  if (!res) {
    u->oom = true;
    return;
  }
  intptr_t r = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (intptr_t k = 0; k < nres; ++k) {
      MlirType t = mlirValueGetType(mlirOperationGetResult(op, k));
      if ((rank_of(t) == 3) != (pass == 1)) continue;
      for (int i = 0; i < (pass ? slices_for(u, t) : 1); ++i) res[r++] = pass ? slice_type(t) : t;
    }
  MlirOperationState st = mlirOperationStateGet(mlirStringRefCreateFromCString("scf.if"),
                                                mlirOperationGetLocation(op));
  MlirValue cond = mlirOperationGetOperand(op, 0);
  mlirOperationStateAddOperands(&st, 1, &cond);
  if (r) mlirOperationStateAddResults(&st, r, res);
  free(res);
  MlirRegion regions[2] = {mlirRegionCreate(), mlirRegionCreate()};
  mlirOperationStateAddOwnedRegions(&st, 2, regions);
  MlirOperation ni = mlirOperationCreate(&st);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(op), op, ni);
  for (int g = 0; g < 2; ++g)
    mlirRegionTakeBody(mlirOperationGetRegion(ni, g), mlirOperationGetRegion(op, g));
  intptr_t j = 0;
  for (intptr_t k = 0; k < nres; ++k) {
    MlirValue old = mlirOperationGetResult(op, k);
    if (rank_of(mlirValueGetType(old)) != 3)
      mlirValueReplaceAllUsesOfWith(old, mlirOperationGetResult(ni, j++));
  }
  for (intptr_t k = 0; k < nres && !u->oom; ++k) {
    MlirValue old = mlirOperationGetResult(op, k);
    MlirType t = mlirValueGetType(old);
    if (rank_of(t) != 3) continue;
    slices_t* sr = add(u, old, slices_for(u, t));
    if (!sr) return;
    for (int i = 0; i < sr->n; ++i) sr->s[i] = mlirOperationGetResult(ni, j++);
  }
  if (!zt_op_list_push(&u->old, &u->nold, &u->capold, op)) u->oom = true;
  for (int g = 0; g < 2 && !u->oom; ++g) {
    MlirBlock bl = mlirRegionGetFirstBlock(mlirOperationGetRegion(ni, g));
    if (!mlirBlockIsNull(bl)) unroll_block(u, bl);
  }
}

// The 3-D code of block bl (the entry block or a loop body), segment by
// segment: 3-D ops up to a write (store, atomic) or up to an op of the rest
// with effects, the new ops in front of the segment's last op (or of that
// op), so memory order between segments stays the program's. (Op by op
// instead, each op's slices together, IGC issued 680 sends for the
// 4-slice test kernel, against 94.)
static void unroll_block(unroll_t* u, MlirBlock bl) {
  size_t seg = u->nold;
  for (MlirOperation op = mlirBlockGetFirstOperation(bl); !mlirOperationIsNull(op) && !u->oom;
       op = mlirOperationGetNextInBlock(op)) {
    bool three = has_3d(op), loop = zt_op_named(op, "scf.for"), iff = zt_op_named(op, "scf.if");
    bool yield = three && zt_op_named(op, "scf.yield");
    loop |= iff;  // a region op: ends the segment, unrolled on its own
    if (!loop && !yield && three &&
        !zt_op_list_push(&u->old, &u->nold, &u->capold, op)) {
      u->oom = true;
      break;
    }
    bool end = loop || yield ||
               (three ? writes(op) || mlirOperationIsNull(mlirOperationGetNextInBlock(op))
                      : u->nold > seg && !reads_only(op));
    if (end && u->nold > seg) {
      u->at = op;
      unroll_segment(u, u->old + seg, u->nold - seg);
      seg = u->nold;
    }
    if (iff && three) {
      unroll_if(u, op);
    } else if (iff) {
      for (int g = 0; g < 2 && !u->oom; ++g) {
        MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, g));
        if (!mlirBlockIsNull(b)) unroll_block(u, b);
      }
    } else if (loop && three) {
      unroll_loop(u, op);
    } else if (loop) {
      unroll_block(u, mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0)));
    }
    else if (yield) unroll_yield(u, op);
    if (loop || yield) seg = u->nold;
  }
  if (u->nold > seg && !u->oom) {  // the last segment ends at its last 3-D op
    u->at = u->old[u->nold - 1];
    unroll_segment(u, u->old + seg, u->nold - seg);
  }
}

// Ops the rewrite may leave unread (the batch index's range and column,
// splats no slice took): erased when nothing reads them.
static bool dead_pure(MlirOperation op) {
  if (mlirOperationGetNumRegions(op) != 0 || mlirOperationGetNumResults(op) != 1) return false;
  if (!mlirOpOperandIsNull(mlirValueGetFirstUse(mlirOperationGetResult(op, 0)))) return false;
  return zt_op_named(op, "tile.make_range") || zt_op_named(op, "tile.expand_dims") ||
         zt_op_named(op, "tile.splat") || zt_op_named(op, "tile.broadcast") ||
         zt_op_named(op, "tile.reshape") || zt_op_named(op, "tile.addptr") ||
         (zt_op_name_has_prefix(op, "arith.") || zt_op_name_has_prefix(op, "math."));
}

zt_status_t zt_unroll_batch_dims(MlirOperation kernel, bool dots_only, int* out_batch) {
  if (out_batch) *out_batch = 0;
  MlirBlock entry = mlirRegionGetFirstBlock(mlirOperationGetRegion(kernel, 0));
  check_t c = {.entry = entry};
  mlirOperationWalk(kernel, check_cb, &c, MlirWalkPreOrder);
  // Nothing to do, or a form left to the refusal.
  if (!c.any || c.bad || (dots_only && !c.dot)) return NULL;
  unroll_t u = {.batch = c.batch ? c.batch : 1};
  unroll_block(&u, entry);
  MlirOperation* old = u.old;
  size_t nold = u.nold;
  if (u.oom) {
    free(old);
    free(u.loops);
    free(u.m);
    return zt_make_status(ZT_STATUS_INTERNAL,
                          "batch unroll: out of memory or an unexpected 3-D form");
  }
  // The 3-D ops are read by 3-D ops only: erased readers first.
  MlirOperation* feed = NULL;
  size_t nfeed = 0, capfeed = 0;
  for (size_t i = nold; i-- > 0;) {
    for (intptr_t k = 0; k < mlirOperationGetNumOperands(old[i]); ++k) {
      MlirValue o = mlirOperationGetOperand(old[i], k);
      // (A reduction's (B, X) result: its reduction is one of the 3-D ops.)
      if (mlirValueIsAOpResult(o) && rank_of(mlirValueGetType(o)) != 3 && !reduced_3d(o))
        zt_op_list_push(&feed, &nfeed, &capfeed, mlirOpResultGetOwner(o));
    }
    mlirOperationDestroy(old[i]);
  }
  // What fed only them (the batch index's column and range, splats' constants).
  for (size_t i = 0; i < nfeed; ++i) {
    MlirOperation d = feed[i];
    if (mlirOperationIsNull(d) || !dead_pure(d)) continue;
    for (intptr_t k = 0; k < mlirOperationGetNumOperands(d); ++k) {
      MlirValue o = mlirOperationGetOperand(d, k);
      if (mlirValueIsAOpResult(o))
        zt_op_list_push(&feed, &nfeed, &capfeed, mlirOpResultGetOwner(o));
    }
    // Later entries may name d again.
    for (size_t j = i + 1; j < nfeed; ++j)
      if (mlirOperationEqual(feed[j], d)) feed[j] = (MlirOperation){NULL};
    mlirOperationDestroy(d);
  }
  free(feed);
  // The loops' old 3-D iteration values, read by nothing now.
  for (size_t i = 0; i < u.nloops; ++i) {
    MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(u.loops[i], 0));
    for (intptr_t a = mlirBlockGetNumArguments(body); a-- > 0;)
      if (rank_of(mlirValueGetType(mlirBlockGetArgument(body, a))) == 3)
        mlirBlockEraseArgument(body, (unsigned)a);
  }
  free(u.loops);
  free(old);
  free(u.m);
  if (out_batch) *out_batch = (int)u.batch;
  return NULL;
}
