// One vector op per tile op per lane (issue 22).
//
// The emitter writes a tile value as chunks of 16 columns and each tile op
// once per chunk; after zetile's lane distribution each chunk is one
// element of the lane (vector<1xT>), so an elementwise op on a 256-element
// tile held by one subgroup is 16 consecutive one-element ops, and every
// later pass (XeVM and LLVM conversions, LLVM's optimization, the SPIR-V
// backend) walks 16 ops where one would do: the 200-op chain was 3,200
// `<1 x f32>` ops per lane. This pass packs such a run into one op on
// vector<NxT> (N of 2, 3, 4, 8 or 16: the vector sizes SPIR-V's OpenCL
// environment takes):
//  - a run is up to 16 ops of one arith elementwise kind with the same
//    attributes and types, every operand and the result vector<1xT> (scalar
//    operands, e.g. a uniform select condition, equal across the run), none
//    using another's result, each within 24 ops of the one before (the
//    emitter interleaves a chunk's helpers), and nothing between them using
//    a member's result (the packed op stands where the last member stood);
//    math ops stay in pieces (see packable);
//  - an operand position whose values are one value in every op becomes a
//    broadcast; one whose values are the elements 0..N-1 of an earlier packed
//    result in order takes that vector as it is; anything else is gathered
//    with vector.from_elements (the pieces' entry into packed code, e.g. the
//    results of one-element gathers);
//  - the old ops stay until the end (a map from op to packed element); then
//    each is erased, and one whose result something left in pieces still
//    uses (a store, a cross-lane move, DPAS, a loop-carried value) becomes a
//    one-element slice of the packed result first. Slices made for every
//    element at once were ~40% of this pass on the chain (callgrind).
// Everything else stays in pieces. ZETILE_XE_PACK=0 turns it off.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>

#include "xe/xe_internal.h"
#include "xe/xe_lane_tidy.h"

enum { PACK_MAX = 16 };

// One packed result and the old ops it stands for.
typedef struct {
  MlirValue wide;
  MlirOperation old[PACK_MAX];
  int n;
} pack_t;

// Old op -> its pack and element (open addressing on the op's pointer).
typedef struct {
  void* key;
  int pack, at;
} pack_slot_t;

typedef struct {
  MlirContext ctx;
  pack_t* packs;
  size_t npacks, cap;
  pack_slot_t* map;
  size_t mcap, mused;
  int packed_ops, groups;
  bool oom;
} pack_state_t;

static size_t slot_hash(void* k, size_t cap) {
  uintptr_t x = (uintptr_t)k;
  x ^= x >> 17;
  x *= (uintptr_t)0x9E3779B97F4A7C15ull;
  return (size_t)(x >> 7) & (cap - 1);
}

static pack_slot_t* map_find(pack_state_t* s, MlirOperation op) {
  if (!s->mcap) return NULL;
  for (size_t i = slot_hash(op.ptr, s->mcap);; i = (i + 1) & (s->mcap - 1)) {
    if (s->map[i].key == op.ptr) return &s->map[i];
    if (!s->map[i].key) return NULL;
  }
}

static bool map_put(pack_state_t* s, MlirOperation op, int pack, int at) {
  if (2 * (s->mused + 1) > s->mcap) {
    size_t c = s->mcap ? 2 * s->mcap : 1024;
    pack_slot_t* m = calloc(c, sizeof *m);
    if (!m) return s->oom = true, false;
    for (size_t j = 0; j < s->mcap; ++j) {
      if (!s->map[j].key) continue;
      size_t i = slot_hash(s->map[j].key, c);
      while (m[i].key) i = (i + 1) & (c - 1);
      m[i] = s->map[j];
    }
    free(s->map);
    s->map = m;
    s->mcap = c;
  }
  size_t i = slot_hash(op.ptr, s->mcap);
  while (s->map[i].key) i = (i + 1) & (s->mcap - 1);
  s->map[i] = (pack_slot_t){op.ptr, pack, at};
  s->mused++;
  return true;
}

static bool consumed(pack_state_t* s, MlirOperation op) { return map_find(s, op) != NULL; }

static bool one_elem(MlirType t) {
  return mlirTypeIsAVector(t) && mlirShapedTypeGetRank(t) == 1 &&
         mlirShapedTypeGetDimSize(t, 0) == 1 && !mlirVectorTypeIsScalable(t);
}

static bool name_is(MlirOperation op, const char* prefix, size_t len) {
  MlirStringRef s = mlirIdentifierStr(mlirOperationGetName(op));
  return s.length > len && strncmp(s.data, prefix, len) == 0;
}

// Elementwise arith ops whose result is one lane element.
static bool packable(MlirOperation op) {
  if (mlirOperationGetNumResults(op) != 1 || mlirOperationGetNumRegions(op) != 0 ||
      mlirOperationGetNumSuccessors(op) != 0)
    return false;
  intptr_t no = mlirOperationGetNumOperands(op);
  if (no < 1 || no > 3) return false;
  // math ops stay in pieces: a packed exp (a vector OpenCL exp) followed by
  // a packed division made the softmax's ISA 916 -> 957 instructions
  // (`zetile isa`, pvc); in pieces it is what it was.
  if (!name_is(op, "arith.", 6)) return false;
  if (zt_op_named(op, "arith.constant")) return false;
  if (!one_elem(mlirValueGetType(mlirOperationGetResult(op, 0)))) return false;
  // zetile's marks (zt.shfl_*: a lane shuffle xe_lane_moves rewrites per
  // piece; zt.atomic*) keep their op as it is.
  // (Discardable attributes only: the full list builds a dictionary of
  // the op's properties each call.)
  intptr_t na = mlirOperationGetNumDiscardableAttributes(op);
  for (intptr_t i = 0; i < na; ++i) {
    MlirStringRef an = mlirIdentifierStr(mlirOperationGetDiscardableAttribute(op, i).name);
    if (an.length >= 3 && strncmp(an.data, "zt.", 3) == 0) return false;
  }
  for (intptr_t i = 0; i < no; ++i) {
    MlirType t = mlirValueGetType(mlirOperationGetOperand(op, i));
    if (mlirTypeIsAVector(t) && !one_elem(t)) return false;
  }
  // xor and compares of booleans stay in pieces: on vectors LLVM's SPIR-V
  // backend writes them as OpLogicalNotEqual / OpLogicalEqual of a bool
  // vector, on which Debian's IGC (ocloc 22.43) aborts while spirv-val
  // accepts the module (`(x < y) != (x > 1)` on 64 elements: SIGABRT packed,
  // builds in pieces; test_xe_lane_pack.py). and/or/select of bool vectors
  // build.
  if (zt_op_named(op, "arith.xori") || zt_op_named(op, "arith.cmpi")) {
    MlirType t = mlirValueGetType(mlirOperationGetOperand(op, 0));
    if (mlirTypeIsAVector(t)) t = mlirShapedTypeGetElementType(t);
    if (mlirTypeIsAInteger(t) && mlirIntegerTypeGetWidth(t) == 1) return false;
  }
  return true;
}

// The attributes of a run's first op, read once per run: reading an op's
// whole attribute list builds a dictionary of its properties (fastmath,
// overflow flags) on every call, and comparing each candidate that way was
// ~1/4 of this pass on the 200-op chain (callgrind, issue 22).
// (Read when the first candidate of the run gets that far.)
typedef struct {
  intptr_t n;  // -2: not read yet; -1: more than fit (such a run is not packed)
  MlirNamedAttribute at[16];
} attr_list_t;

static void read_attrs(MlirOperation op, attr_list_t* l) {
  l->n = mlirOperationGetNumAttributes(op);
  if (l->n > 16) {
    l->n = -1;
    return;
  }
  for (intptr_t i = 0; i < l->n; ++i) l->at[i] = mlirOperationGetAttribute(op, i);
}

static bool same_kind(MlirOperation a, attr_list_t* al, MlirOperation b) {
  if (!mlirIdentifierEqual(mlirOperationGetName(a), mlirOperationGetName(b))) return false;
  intptr_t no = mlirOperationGetNumOperands(a);
  if (mlirOperationGetNumOperands(b) != no) return false;
  if (!mlirTypeEqual(mlirValueGetType(mlirOperationGetResult(a, 0)),
                     mlirValueGetType(mlirOperationGetResult(b, 0))))
    return false;
  for (intptr_t i = 0; i < no; ++i) {
    MlirValue va = mlirOperationGetOperand(a, i), vb = mlirOperationGetOperand(b, i);
    if (!mlirTypeEqual(mlirValueGetType(va), mlirValueGetType(vb))) return false;
    // Scalar operands are not packed: they must be the same value.
    if (!mlirTypeIsAVector(mlirValueGetType(va)) && !mlirValueEqual(va, vb)) return false;
  }
  if (al->n == -2) read_attrs(a, al);
  if (al->n < 0 || mlirOperationGetNumAttributes(b) != al->n) return false;
  for (intptr_t i = 0; i < al->n; ++i) {
    MlirNamedAttribute x = al->at[i];
    MlirAttribute y = mlirOperationGetAttributeByName(b, mlirIdentifierStr(x.name));
    if (mlirAttributeIsNull(y) || !mlirAttributeEqual(x.attribute, y)) return false;
  }
  return true;
}

// Whether op uses a result of one of run[0..n).
static bool uses_any(MlirOperation op, MlirOperation* run, int n) {
  intptr_t no = mlirOperationGetNumOperands(op);
  for (intptr_t i = 0; i < no; ++i) {
    MlirValue v = mlirOperationGetOperand(op, i);
    if (!mlirValueIsAOpResult(v)) continue;
    MlirOperation d = mlirOpResultGetOwner(v);
    for (int j = 0; j < n; ++j)
      if (mlirOperationEqual(d, run[j])) return true;
  }
  return false;
}

static MlirOperation create(const char* name, MlirLocation loc, intptr_t nops,
                            const MlirValue* ops, MlirType res, intptr_t nattr,
                            const MlirNamedAttribute* attrs) {
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

static MlirNamedAttribute named_i64s(MlirContext ctx, const char* name, intptr_t n,
                                     const int64_t* v) {
  MlirIdentifier id = mlirIdentifierGet(ctx, mlirStringRefCreateFromCString(name));
  return mlirNamedAttributeGet(id, mlirDenseI64ArrayGet(ctx, n, v));
}

// The packed result whose element *at stands for v (v an old op's
// result), or NULL.
static pack_t* pack_of(pack_state_t* s, MlirValue v, int* at) {
  if (!mlirValueIsAOpResult(v)) return NULL;
  pack_slot_t* e = map_find(s, mlirOpResultGetOwner(v));
  if (!e) return NULL;
  *at = e->at;
  return &s->packs[e->pack];
}

// The scalar of a vector<1xT> value, made before `at`.
static MlirValue scalar_of(pack_state_t* s, MlirValue v, MlirOperation at) {
  int64_t pos = 0;
  int i = -1;
  pack_t* p = pack_of(s, v, &i);
  if (p) {
    v = p->wide;
    pos = i;
  } else if (mlirValueIsAOpResult(v)) {
    MlirOperation d = mlirOpResultGetOwner(v);
    if (zt_op_named(d, "vector.broadcast") &&
        !mlirTypeIsAVector(mlirValueGetType(mlirOperationGetOperand(d, 0))))
      return mlirOperationGetOperand(d, 0);
  }
  MlirType et = mlirShapedTypeGetElementType(mlirValueGetType(v));
  MlirNamedAttribute p0 = named_i64s(s->ctx, "static_position", 1, &pos);
  return put_before(at, create("vector.extract", mlirOperationGetLocation(at), 1, &v, et, 1, &p0));
}

// The vector<nxT> operand for position `pos` of run[0..n), made before `at`.
static MlirValue wide_operand(pack_state_t* s, MlirOperation* run, int n, intptr_t pos,
                              MlirOperation at) {
  MlirValue v0 = mlirOperationGetOperand(run[0], pos);
  MlirType t0 = mlirValueGetType(v0);
  if (!mlirTypeIsAVector(t0)) return v0;  // a scalar, equal across the run
  MlirType et = mlirShapedTypeGetElementType(t0);
  int64_t nn = n;
  MlirType wt = mlirVectorTypeGet(1, &nn, et);
  MlirLocation loc = mlirOperationGetLocation(run[0]);
  bool uniform = true;
  for (int i = 1; i < n && uniform; ++i)
    uniform = mlirValueEqual(mlirOperationGetOperand(run[i], pos), v0);
  if (uniform) {
    MlirValue sc = scalar_of(s, v0, at);
    return put_before(at, create("vector.broadcast", loc, 1, &sc, wt, 0, NULL));
  }
  int at0 = -1;
  pack_t* p = pack_of(s, v0, &at0);
  if (p && at0 == 0 && p->n == n) {
    bool in_order = true;
    for (int i = 1; i < n && in_order; ++i)
      in_order = mlirValueEqual(mlirOperationGetOperand(run[i], pos),
                                mlirOperationGetResult(p->old[i], 0));
    if (in_order) return p->wide;
  }
  MlirValue el[PACK_MAX];
  for (int i = 0; i < n; ++i) el[i] = scalar_of(s, mlirOperationGetOperand(run[i], pos), at);
  return put_before(at, create("vector.from_elements", loc, n, el, wt, 0, NULL));
}

static bool pack_run(pack_state_t* s, MlirOperation* run, int n) {
  if (s->npacks == s->cap) {
    size_t c = s->cap ? 2 * s->cap : 64;
    pack_t* np = realloc(s->packs, c * sizeof *np);
    if (!np) return s->oom = true, false;
    s->packs = np;
    s->cap = c;
  }
  MlirOperation first = run[0], last = run[n - 1];
  MlirLocation loc = mlirOperationGetLocation(first);
  intptr_t no = mlirOperationGetNumOperands(first);
  MlirValue ops[3];
  for (intptr_t i = 0; i < no; ++i) ops[i] = wide_operand(s, run, n, i, last);
  MlirType rt = mlirValueGetType(mlirOperationGetResult(first, 0));
  int64_t nn = n;
  MlirType wt = mlirVectorTypeGet(1, &nn, mlirShapedTypeGetElementType(rt));
  intptr_t na = mlirOperationGetNumAttributes(first);
  MlirNamedAttribute attrs[16];
  if (na > 16) return true;  // not expected of arith/math: leave the run alone
  for (intptr_t i = 0; i < na; ++i) attrs[i] = mlirOperationGetAttribute(first, i);
  MlirStringRef name = mlirIdentifierStr(mlirOperationGetName(first));
  char nm[64];
  if (name.length >= sizeof nm) return true;
  memcpy(nm, name.data, name.length);
  nm[name.length] = 0;
  MlirValue wide = put_before(last, create(nm, loc, no, ops, wt, na, attrs));
  int idx = (int)s->npacks++;
  pack_t* p = &s->packs[idx];
  p->wide = wide;
  p->n = n;
  for (int i = 0; i < n; ++i) {
    p->old[i] = run[i];
    if (!map_put(s, run[i], idx, i)) return false;
  }
  s->packed_ops += n;
  s->groups++;
  return true;
}

// The old ops, last pack first (so an old op's uses by later packed old ops
// are gone when it is looked at): erased, after a one-element slice of the
// packed result takes over the uses something in pieces still makes.
// The slice is written as `vector.shuffle %wide, %wide [i]`, the form
// convert-vector-to-llvm's greedy pre-lowering turns a one-element
// `vector.extract_strided_slice` into: convert-to-llvm takes the shuffle
// itself, so lane code without other such ops can skip that pass
// (xe_needs_vector_lowering), with the same SPIR-V.
// ZETILE_XE_VECTOR_LLVM=1 (the reference route) writes the strided slice.
static MlirOperation slice(pack_state_t* s, MlirValue wide, int64_t off, MlirOperation old) {
  MlirLocation loc = mlirOperationGetLocation(old);
  MlirType t = mlirValueGetType(mlirOperationGetResult(old, 0));
  const char* ref = getenv("ZETILE_XE_VECTOR_LLVM");
  if (ref && strcmp(ref, "1") == 0) {
    MlirType i64 = mlirIntegerTypeGet(s->ctx, 64);
    MlirAttribute v[3] = {mlirIntegerAttrGet(i64, off), mlirIntegerAttrGet(i64, 1),
                          mlirIntegerAttrGet(i64, 1)};
    static const char* const names[3] = {"offsets", "sizes", "strides"};
    MlirNamedAttribute a[3];
    for (int i = 0; i < 3; ++i)
      a[i] = mlirNamedAttributeGet(
          mlirIdentifierGet(s->ctx, mlirStringRefCreateFromCString(names[i])),
          mlirArrayAttrGet(s->ctx, 1, &v[i]));
    return create("vector.extract_strided_slice", loc, 1, &wide, t, 3, a);
  }
  MlirNamedAttribute mask = named_i64s(s->ctx, "mask", 1, &off);
  MlirValue both[2] = {wide, wide};
  return create("vector.shuffle", loc, 2, both, t, 1, &mask);
}

static void finish(pack_state_t* s) {
  for (size_t k = s->npacks; k-- > 0;) {
    pack_t* p = &s->packs[k];
    for (int i = p->n; i-- > 0;) {
      MlirOperation op = p->old[i];
      MlirValue r = mlirOperationGetResult(op, 0);
      if (!mlirOpOperandIsNull(mlirValueGetFirstUse(r))) {
        // Right after the packed op: every remaining use is past the run.
        MlirOperation w = mlirOpResultGetOwner(p->wide);
        MlirOperation sl = slice(s, p->wide, i, op);
        mlirBlockInsertOwnedOperationAfter(mlirOperationGetBlock(w), w, sl);
        mlirValueReplaceAllUsesOfWith(r, mlirOperationGetResult(sl, 0));
      }
      mlirOperationDestroy(op);
    }
  }
}

// The widths SPIR-V vectors take in OpenCL (Vector16 for 8 and 16).
static int split_width(int n) {
  static const int w[] = {16, 8, 4, 3, 2};
  for (int i = 0; i < 5; ++i)
    if (n >= w[i]) return w[i];
  return 1;
}

static bool pack_block(pack_state_t* s, MlirBlock b);

static bool pack_regions(pack_state_t* s, MlirOperation op) {
  intptr_t nr = mlirOperationGetNumRegions(op);
  for (intptr_t r = 0; r < nr; ++r)
    for (MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r)); !mlirBlockIsNull(b);
         b = mlirBlockGetNextInRegion(b))
      if (!pack_block(s, b)) return false;
  return true;
}

// Whether packing run[0..n) gains anything: an operand taken whole from an
// earlier pack, or a result some packable op uses. Otherwise (e.g. the index
// casts between one-element gathers) it would only add slices.
static bool worth_it(pack_state_t* s, MlirOperation* run, int n) {
  intptr_t no = mlirOperationGetNumOperands(run[0]);
  for (intptr_t pos = 0; pos < no; ++pos) {
    int at = -1;
    pack_t* p = pack_of(s, mlirOperationGetOperand(run[0], pos), &at);
    if (p && at == 0 && p->n == n) return true;
  }
  for (int i = 0; i < n; ++i)
    for (MlirOpOperand u = mlirValueGetFirstUse(mlirOperationGetResult(run[i], 0));
         !mlirOpOperandIsNull(u); u = mlirOpOperandGetNextUse(u))
      if (packable(mlirOpOperandGetOwner(u))) return true;
  return false;
}

static bool is_member(MlirOperation op, MlirOperation* run, int n) {
  for (int i = 0; i < n; ++i)
    if (mlirOperationEqual(op, run[i])) return true;
  return false;
}

// How far past the last member a run looks for the next one: the emitter
// interleaves a chunk's helpers (a masked load's gather, an offset's scalar
// add and broadcast) with the op itself.
enum { PACK_WINDOW = 24 };

static bool pack_block(pack_state_t* s, MlirBlock b) {
  MlirOperation op = mlirBlockGetFirstOperation(b);
  while (!mlirOperationIsNull(op)) {
    if (consumed(s, op) || !packable(op)) {
      if (!pack_regions(s, op)) return false;
      op = mlirOperationGetNextInBlock(op);
      continue;
    }
    // Members: ops of op's kind after it, none using another member's
    // result; the ops between them must not use a member's result either
    // (the packed op stands where the last member stood).
    MlirOperation run[PACK_MAX];
    int n = 1, gap = 0;
    run[0] = op;
    attr_list_t first_attrs = {.n = -2};
    for (MlirOperation q = mlirOperationGetNextInBlock(op);
         n < PACK_MAX && !mlirOperationIsNull(q) && gap <= PACK_WINDOW;
         q = mlirOperationGetNextInBlock(q)) {
      if (mlirOperationGetNumRegions(q) != 0) break;
      bool uses = uses_any(q, run, n);
      if (!uses && !consumed(s, q) && packable(q) && same_kind(run[0], &first_attrs, q)) {
        run[n++] = q;
        gap = 0;
        continue;
      }
      if (uses) break;
      ++gap;
    }
    // The longest width SPIR-V takes; the rest start runs of their own.
    int w = split_width(n);
    MlirOperation resume = mlirOperationGetNextInBlock(op);
    if (w >= 2 && worth_it(s, run, w)) {
      // Resume at the first op after run[0] that is not packed away.
      while (!mlirOperationIsNull(resume) && is_member(resume, run, w))
        resume = mlirOperationGetNextInBlock(resume);
      if (!pack_run(s, run, w)) return false;
    }
    op = resume;
  }
  return true;
}

static void print_cb(MlirStringRef r, void* user) {
  (void)user;
  fwrite(r.data, 1, r.length, stderr);
}

zt_status_t xe_pack_lanes(MlirContext ctx, MlirModule m, int* out_packed) {
  if (out_packed) *out_packed = 0;
  const char* env = getenv("ZETILE_XE_PACK");
  if (env && strcmp(env, "0") == 0) return NULL;
  pack_state_t s = {.ctx = ctx};
  bool ok = pack_regions(&s, mlirModuleGetOperation(m));
  if (ok) finish(&s);
  free(s.packs);
  free(s.map);
  if (!ok) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe lane packing");
  if (out_packed) *out_packed = s.packed_ops;
  // ZETILE_DUMP=packed prints the lane code after packing.
  const char* dump = getenv("ZETILE_DUMP");
  if (dump && strstr(dump, "packed")) {
    fprintf(stderr, "// -----// packed lanes: %d ops in %d vector ops //----- //\n", s.packed_ops,
            s.groups);
    mlirOperationPrint(mlirModuleGetOperation(m), print_cb, NULL);
    fputc('\n', stderr);
  }
  return NULL;
}
