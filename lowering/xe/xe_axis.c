// What is known statically about 2-D address and mask tensors: the facts
// that let a pointer-tensor load or store (Triton's tutorial style,
// `a_ptr + offs_m[:, None] * stride_am + offs_k[None, :]`) become 2-D block
// IO instead of row gathers. Like Triton's AxisInfo, it follows the def
// chain of a tensor and records, per axis, groups of `lin` consecutive
// elements (groups start at multiples of `lin`) inside which the value
// moves by a fixed step: 1 along the columns of a contiguous row, a run-time
// stride along the rows. Divisibility of scalars (Triton's specialization
// hints: zt.divisibility on the kernel's arguments, constants, products)
// decides how far `x % M` stays affine.
//
// zetile's launcher gives the divisible-by-16 hint to positive integers
// only (jit.py), so a hinted stride is also a valid, positive 2D block pitch.
//
// Like Triton's AxisInfo, `x % m` with a step-1 `x` is taken to be
// contiguous in groups of gcd(divisibility of m, of the group starts): that
// holds for x >= 0, the only case index arithmetic produces.
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>

#include "xe/xe_internal.h"

#define AX_BIG ((int64_t)1 << 30)
#define AX_DEPTH 48

static bool name_is(MlirStringRef n, const char* s) {
  size_t l = strlen(s);
  return n.length == l && memcmp(n.data, s, l) == 0;
}

static bool op_is(MlirOperation op, const char* s) {
  return !mlirOperationIsNull(op) && name_is(mlirIdentifierStr(mlirOperationGetName(op)), s);
}

static int rank_of(MlirValue v) {
  MlirType t = mlirValueGetType(v);
  return mlirTypeIsARankedTensor(t) ? (int)mlirShapedTypeGetRank(t) : 0;
}

static int64_t pow2_div(int64_t x) {
  if (x == 0) return AX_BIG;
  if (x < 0) x = -x;
  int64_t d = x & -x;
  return d > AX_BIG ? AX_BIG : d;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

static bool const_int(MlirValue v, int64_t* out) {
  if (!mlirValueIsAOpResult(v)) return false;
  MlirOperation op = mlirOpResultGetOwner(v);
  if (!op_is(op, "arith.constant")) return false;
  MlirAttribute a = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("value"));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAInteger(a)) return false;
  *out = mlirIntegerAttrGetValueInt(a);
  return true;
}

static MlirAttribute hint_attr(MlirOperation op, const char* name) {
  MlirAttribute a = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(name));
  return !mlirAttributeIsNull(a) && mlirAttributeIsADenseI64Array(a) ? a : (MlirAttribute){NULL};
}

// tl.multiple_of on a value: the smallest of its per-dimension divisors.
static int64_t hint_div(MlirOperation op) {
  MlirAttribute a = hint_attr(op, "zt.multiple_of");
  if (mlirAttributeIsNull(a)) return 1;
  int64_t m = AX_BIG;
  for (intptr_t i = 0; i < mlirDenseArrayGetNumElements(a); ++i)
    m = min64(m, mlirDenseI64ArrayGetElement(a, i));
  return m < 1 ? 1 : m;
}

static int64_t scalar_div_rules(xe_emitter_t* e, MlirValue v, int depth);

static int64_t scalar_div(xe_emitter_t* e, MlirValue v, int depth) {
  int64_t d = scalar_div_rules(e, v, depth);
  if (mlirValueIsAOpResult(v)) {
    int64_t h = hint_div(mlirOpResultGetOwner(v));
    if (h > d) d = h;
  }
  return d;
}

static int64_t scalar_div_rules(xe_emitter_t* e, MlirValue v, int depth) {
  if (depth > AX_DEPTH) return 1;
  int64_t c;
  if (const_int(v, &c)) return pow2_div(c);
  if (!mlirValueIsAOpResult(v)) {
    // A kernel argument: Triton's divisible-by-16 hint.
    MlirBlock b = mlirBlockArgumentGetOwner(v);
    if (!mlirOperationEqual(mlirBlockGetParentOperation(b), e->lc->kernel)) return 1;
    MlirAttribute d = mlirOperationGetAttributeByName(
        e->lc->kernel, mlirStringRefCreateFromCString("zt.divisibility"));
    intptr_t i = mlirBlockArgumentGetArgNumber(v);
    if (mlirAttributeIsNull(d) || !mlirAttributeIsADenseI32Array(d) ||
        i >= mlirDenseArrayGetNumElements(d))
      return 1;
    int32_t x = mlirDenseI32ArrayGetElement(d, i);
    return x > 0 ? x : 1;
  }
  MlirOperation op = mlirOpResultGetOwner(v);
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  if (name_is(n, "arith.muli")) {
    int64_t a = scalar_div(e, mlirOperationGetOperand(op, 0), depth + 1);
    int64_t b = scalar_div(e, mlirOperationGetOperand(op, 1), depth + 1);
    return a * b > AX_BIG ? AX_BIG : a * b;
  }
  if (name_is(n, "arith.addi") || name_is(n, "arith.subi") || name_is(n, "arith.remsi") ||
      name_is(n, "arith.remui"))
    return min64(scalar_div(e, mlirOperationGetOperand(op, 0), depth + 1),
                 scalar_div(e, mlirOperationGetOperand(op, 1), depth + 1));
  if (name_is(n, "arith.extsi") || name_is(n, "arith.extui") || name_is(n, "arith.index_cast"))
    return scalar_div(e, mlirOperationGetOperand(op, 0), depth + 1);
  return 1;
}

int64_t xe_scalar_div(xe_emitter_t* e, MlirValue v) { return scalar_div(e, v, 0); }

bool xe_hinted_arg(xe_emitter_t* e, MlirValue v) {
  while (mlirValueIsAOpResult(v)) {
    MlirOperation op = mlirOpResultGetOwner(v);
    if (!op_is(op, "arith.extsi") && !op_is(op, "arith.index_cast")) return false;
    v = mlirOperationGetOperand(op, 0);
  }
  MlirBlock b = mlirBlockArgumentGetOwner(v);
  return mlirOperationEqual(mlirBlockGetParentOperation(b), e->lc->kernel) &&
         scalar_div(e, v, 0) >= 16;
}

bool xe_block_pitch_ok(xe_emitter_t* e, const xe_step_t* s, int esz) {
  if (!s->known || s->coef <= 0) return false;
  // Below 16 lanes (dg2 at SIMD8, ZETILE_DG2_LOWERING=shared8) 2-D blocks are
  // read and written with row gathers: the compat library's emulation of the
  // 2D block messages (rows without them) is written for 16 lanes.
  if (e->lanes != XE_SUBGROUP) return false;
  bool constant = mlirValueIsNull(s->sym);
  if (!constant && !xe_hinted_arg(e, s->sym)) return false;
  int64_t div = s->coef * (constant ? 1 : xe_scalar_div(e, s->sym));
  if ((div * esz) % 16) return false;
  // A hinted argument's pitch is only known to be a multiple of div: it is
  // not refused below 64 bytes (every fp16 GEMM's strides would be), see
  // docs/ARCHITECTURE.md ("2-D block pitch").
  return !constant || s->coef * esz >= XE_BLOCK_MIN_PITCH;
}

bool xe_uniform_scalar(MlirValue v, MlirValue* out) {
  for (int depth = 0; depth < AX_DEPTH; ++depth) {
    if (rank_of(v) == 0) {
      *out = v;
      return true;
    }
    if (!mlirValueIsAOpResult(v)) return false;
    MlirOperation op = mlirOpResultGetOwner(v);
    if (op_is(op, "tile.splat")) {
      *out = mlirOperationGetOperand(op, 0);
      return true;
    }
    if (!op_is(op, "tile.broadcast") && !op_is(op, "tile.expand_dims")) return false;
    // Only a broadcast of a uniform value is uniform: recurse.
    v = mlirOperationGetOperand(op, 0);
  }
  return false;
}

static void unknown(xe_axis_t* a, int rank) {
  memset(a, 0, sizeof *a);
  a->rank = rank;
  for (int d = 0; d < 2; ++d) a->lin[d] = 1;
  a->div = 1;
}

static void uniform(xe_axis_t* a, int rank, int64_t div) {
  memset(a, 0, sizeof *a);
  a->rank = rank;
  for (int d = 0; d < 2; ++d) {
    a->lin[d] = AX_BIG;
    a->step[d].known = true;
  }
  a->div = div;
}

static bool step_is(const xe_step_t* s, int64_t c) {
  return s->known && mlirValueIsNull(s->sym) && s->coef == c;
}

// s = a + sign * b; false if the sum has no (sym, coef) form.
static bool step_add(const xe_step_t* a, const xe_step_t* b, int sign, xe_step_t* s) {
  if (!a->known || !b->known) return false;
  if (step_is(b, 0)) {
    *s = *a;
    return true;
  }
  if (step_is(a, 0)) {
    *s = *b;
    s->coef *= sign;
    return true;
  }
  if (mlirValueIsNull(a->sym) != mlirValueIsNull(b->sym)) return false;
  if (!mlirValueIsNull(a->sym) && !mlirValueEqual(a->sym, b->sym)) return false;
  *s = *a;
  s->coef = a->coef + sign * b->coef;
  return true;
}

static void info(xe_emitter_t* e, MlirValue v, xe_axis_t* out, int depth);

static void combine_add(xe_emitter_t* e, MlirOperation op, int sign, int rank, xe_axis_t* out,
                        int depth) {
  xe_axis_t a, b;
  info(e, mlirOperationGetOperand(op, 0), &a, depth + 1);
  info(e, mlirOperationGetOperand(op, 1), &b, depth + 1);
  unknown(out, rank);
  for (int d = 0; d < rank; ++d) {
    if (!step_add(&a.step[d], &b.step[d], sign, &out->step[d])) continue;
    out->lin[d] = min64(a.lin[d], b.lin[d]);
  }
  out->div = min64(a.div, b.div);
}

static void combine_mul(xe_emitter_t* e, MlirOperation op, int rank, xe_axis_t* out, int depth) {
  unknown(out, rank);
  for (int k = 0; k < 2; ++k) {
    MlirValue x = mlirOperationGetOperand(op, k), u = mlirOperationGetOperand(op, 1 - k), s;
    if (!xe_uniform_scalar(u, &s)) continue;
    xe_axis_t a;
    info(e, x, &a, depth + 1);
    int64_t c = 0;
    bool is_c = const_int(s, &c);
    for (int d = 0; d < rank; ++d) {
      const xe_step_t* st = &a.step[d];
      if (!st->known) continue;
      xe_step_t r = *st;
      if (step_is(st, 0)) r.coef = 0;
      else if (is_c) r.coef = st->coef * c;
      else if (mlirValueIsNull(st->sym)) r.sym = s;
      else continue;
      if (r.coef == 0) r.sym = (MlirValue){NULL};
      out->step[d] = r;
      out->lin[d] = a.lin[d];
    }
    int64_t du = scalar_div(e, s, depth + 1);
    out->div = a.div * du > AX_BIG ? AX_BIG : a.div * du;
    return;
  }
}

static void combine_rem(xe_emitter_t* e, MlirOperation op, int rank, xe_axis_t* out, int depth) {
  unknown(out, rank);
  MlirValue s;
  if (!xe_uniform_scalar(mlirOperationGetOperand(op, 1), &s)) return;
  xe_axis_t a;
  info(e, mlirOperationGetOperand(op, 0), &a, depth + 1);
  int64_t dm = scalar_div(e, s, depth + 1);
  for (int d = 0; d < rank; ++d) {
    if (step_is(&a.step[d], 0)) {
      out->step[d] = a.step[d];
      out->lin[d] = a.lin[d];
    } else if (step_is(&a.step[d], 1)) {
      out->step[d] = a.step[d];
      out->lin[d] = min64(a.lin[d], min64(dm, a.div));
    }
  }
  out->div = min64(a.div, dm);
}

static void info_rules(xe_emitter_t* e, MlirValue v, xe_axis_t* out, int depth) {
  int rank = rank_of(v);
  if (depth > AX_DEPTH || rank > 2) {
    unknown(out, rank);
    return;
  }
  if (rank == 0) {
    uniform(out, 0, scalar_div(e, v, depth));
    return;
  }
  // A pointer tensor moved by a loop: its root, moved by a uniform amount.
  xe_val_t* rec = xe_find(e, v);
  if (rec && rec->layout == XE_LAYOUT_LAZY && !mlirValueIsNull(rec->root) &&
      !mlirValueEqual(rec->root, v)) {
    info(e, rec->root, out, depth + 1);
    return;
  }
  if (!mlirValueIsAOpResult(v)) {
    // A loop-carried pointer tensor advanced by a uniform amount each
    // iteration (a_ptrs += BLOCK_K * stride): the facts of its initial value.
    MlirBlock b = mlirBlockArgumentGetOwner(v);
    MlirOperation loop = mlirBlockGetParentOperation(b);
    intptr_t i = mlirBlockArgumentGetArgNumber(v);
    if (op_is(loop, "scf.for") && i >= 1) {
      MlirValue y = mlirOperationGetOperand(mlirBlockGetTerminator(b), i - 1), s;
      if (mlirValueIsAOpResult(y) && op_is(mlirOpResultGetOwner(y), "tile.addptr") &&
          mlirValueEqual(mlirOperationGetOperand(mlirOpResultGetOwner(y), 0), v) &&
          xe_uniform_scalar(mlirOperationGetOperand(mlirOpResultGetOwner(y), 1), &s)) {
        info(e, mlirOperationGetOperand(loop, 3 + i - 1), out, depth + 1);
        return;
      }
    }
    unknown(out, rank);
    return;
  }
  MlirOperation op = mlirOpResultGetOwner(v);
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  if (name_is(n, "tile.make_range")) {
    unknown(out, rank);
    MlirAttribute st = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("start"));
    int64_t start = mlirAttributeIsNull(st) ? 0 : mlirIntegerAttrGetValueInt(st);
    out->lin[0] = mlirShapedTypeGetDimSize(mlirValueGetType(v), 0);
    out->step[0] = (xe_step_t){.known = true, .coef = 1};
    out->div = pow2_div(start);
    return;
  }
  if (name_is(n, "tile.splat")) {
    MlirValue s = mlirOperationGetOperand(op, 0);
    bool ptr = !mlirTypeIsAInteger(mlirValueGetType(s)) && !mlirTypeIsAIndex(mlirValueGetType(s));
    uniform(out, rank, ptr ? 1 : scalar_div(e, s, depth + 1));
    return;
  }
  if (name_is(n, "tile.broadcast")) {
    MlirValue src = mlirOperationGetOperand(op, 0);
    info(e, src, out, depth + 1);
    for (int d = 0; d < rank; ++d)
      if (mlirShapedTypeGetDimSize(mlirValueGetType(src), d) == 1) {
        out->lin[d] = AX_BIG;
        out->step[d] = (xe_step_t){.known = true};
      }
    return;
  }
  if (name_is(n, "tile.trans") && rank == 2 && mlirOperationGetNumOperands(op) == 1) {
    // A 2-D transpose ([1, 0], the only one of rank 2): the facts per axis swap.
    xe_axis_t s;
    info(e, mlirOperationGetOperand(op, 0), &s, depth + 1);
    *out = s;
    out->lin[0] = s.lin[1], out->lin[1] = s.lin[0];
    out->step[0] = s.step[1], out->step[1] = s.step[0];
    return;
  }
  if (name_is(n, "tile.expand_dims") || name_is(n, "tile.reshape")) {
    MlirValue src = mlirOperationGetOperand(op, 0);
    if (rank_of(src) != 1 || rank != 2) {
      unknown(out, rank);
      return;
    }
    int64_t d0 = mlirShapedTypeGetDimSize(mlirValueGetType(v), 0);
    int axis;
    if (name_is(n, "tile.reshape")) {
      int64_t d1 = mlirShapedTypeGetDimSize(mlirValueGetType(v), 1);
      if (d0 != 1 && d1 != 1) {
        unknown(out, rank);
        return;
      }
      axis = d0 == 1 ? 0 : 1;
    } else {
      MlirAttribute ax = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("axis"));
      axis = mlirAttributeIsNull(ax) ? 0 : (int)mlirIntegerAttrGetValueInt(ax);
    }
    xe_axis_t s;
    info(e, src, &s, depth + 1);
    uniform(out, rank, s.div);
    out->lin[1 - axis] = s.lin[0];
    out->step[1 - axis] = s.step[0];
    return;
  }
  if (name_is(n, "arith.extsi") || name_is(n, "arith.extui") || name_is(n, "arith.index_cast")) {
    info(e, mlirOperationGetOperand(op, 0), out, depth + 1);
    out->rank = rank;
    return;
  }
  if (name_is(n, "arith.addi") || name_is(n, "tile.addptr")) {
    combine_add(e, op, 1, rank, out, depth);
    return;
  }
  if (name_is(n, "arith.subi")) {
    combine_add(e, op, -1, rank, out, depth);
    return;
  }
  if (name_is(n, "arith.muli")) {
    combine_mul(e, op, rank, out, depth);
    return;
  }
  if (name_is(n, "arith.remsi") || name_is(n, "arith.remui")) {
    combine_rem(e, op, rank, out, depth);
    return;
  }
  unknown(out, rank);
}

// The program's own facts (tl.max_contiguous, tl.max_constancy,
// tl.multiple_of; lowering/common/hints.c put them on the producer) where
// they say more than the rules found.
static void apply_hints(MlirOperation op, xe_axis_t* a) {
  MlirAttribute c = hint_attr(op, "zt.max_contiguous"), k = hint_attr(op, "zt.max_constancy");
  for (int d = 0; d < a->rank && d < 2; ++d) {
    if (!mlirAttributeIsNull(c) && d < mlirDenseArrayGetNumElements(c)) {
      int64_t x = mlirDenseI64ArrayGetElement(c, d);
      if (x > 1 && (x > a->lin[d] || !step_is(&a->step[d], 1))) {
        a->lin[d] = x;
        a->step[d] = (xe_step_t){.known = true, .coef = 1};
      }
    }
    if (!mlirAttributeIsNull(k) && d < mlirDenseArrayGetNumElements(k)) {
      int64_t x = mlirDenseI64ArrayGetElement(k, d);
      if (x > 1 && (x > a->lin[d] || !step_is(&a->step[d], 0))) {
        a->lin[d] = x;
        a->step[d] = (xe_step_t){.known = true};
      }
    }
  }
  int64_t m = hint_div(op);
  if (m > a->div) a->div = m;
}

static void info(xe_emitter_t* e, MlirValue v, xe_axis_t* out, int depth) {
  info_rules(e, v, out, depth);
  if (mlirValueIsAOpResult(v)) apply_hints(mlirOpResultGetOwner(v), out);
}

void xe_axis_info(xe_emitter_t* e, MlirValue v, xe_axis_t* out) { info(e, v, out, 0); }

// --- masks

static bool add_bound(xe_emitter_t* e, MlirValue x, MlirValue bound, bool inclusive,
                      xe_mask_bounds_t* mb) {
  MlirValue s;
  if (!xe_uniform_scalar(bound, &s) || mb->n >= XE_MAX_BOUNDS) return false;
  xe_axis_t a;
  xe_axis_info(e, x, &a);
  if (a.rank != 2) return false;
  for (int d = 0; d < 2; ++d) {
    // x counts up by one along d and stays put along the other axis.
    if (!step_is(&a.step[d], 1) || !step_is(&a.step[1 - d], 0) || a.lin[1 - d] < AX_BIG)
      continue;
    mb->b[mb->n++] = (xe_bound_t){.axis = d, .x = x, .bound = s, .inclusive = inclusive,
                                  .lin = a.lin[d]};
    return true;
  }
  return false;
}

static bool bounds(xe_emitter_t* e, MlirValue m, xe_mask_bounds_t* mb, int depth) {
  if (depth > AX_DEPTH || !mlirValueIsAOpResult(m)) return false;
  MlirOperation op = mlirOpResultGetOwner(m);
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  if (name_is(n, "tile.broadcast")) {
    // Broadcasting a comparison along a size-1 axis keeps it one of x < b:
    // its x is analysed in its own (size-1) shape, constant along that axis.
    return bounds(e, mlirOperationGetOperand(op, 0), mb, depth + 1);
  }
  if (name_is(n, "tile.trans") && mlirOperationGetNumOperands(op) == 1 &&
      rank_of(m) == 2) {
    // A transposed mask (trans(load(p, m)) made load(trans(p), trans(m)),
    // xe_trans_load.c): its terms with the axes swapped, x read at the
    // swapped index.
    int first = mb->n;
    if (!bounds(e, mlirOperationGetOperand(op, 0), mb, depth + 1)) return false;
    for (int i = first; i < mb->n; ++i) {
      mb->b[i].axis = 1 - mb->b[i].axis;
      mb->b[i].trans = !mb->b[i].trans;
    }
    return true;
  }
  if (name_is(n, "arith.andi"))
    return bounds(e, mlirOperationGetOperand(op, 0), mb, depth + 1) &&
           bounds(e, mlirOperationGetOperand(op, 1), mb, depth + 1);
  if (!name_is(n, "arith.cmpi")) return false;
  MlirAttribute p = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("predicate"));
  if (mlirAttributeIsNull(p) || !mlirAttributeIsAInteger(p)) return false;
  // arith.cmpi predicates: 2 slt, 3 sle, 4 sgt, 5 sge.
  int64_t pr = mlirIntegerAttrGetValueInt(p);
  MlirValue a = mlirOperationGetOperand(op, 0), b = mlirOperationGetOperand(op, 1);
  if (pr == 2 || pr == 3) return add_bound(e, a, b, pr == 3, mb);
  if (pr == 4 || pr == 5) return add_bound(e, b, a, pr == 5, mb);
  return false;
}

bool xe_mask_bounds(xe_emitter_t* e, MlirValue m, xe_mask_bounds_t* out) {
  memset(out, 0, sizeof *out);
  if (mlirValueIsNull(m)) return true;
  return bounds(e, m, out, 0);
}
