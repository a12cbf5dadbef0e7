// Masked one-element global loads and stores of the lane code as calls of
// one small function per form (issue 22).
//
// Why: upstream's convert-xegpu-to-xevm lowers each lane's masked element
// load or store to its own `scf.if`, which convert-scf-to-cf, LLVM's passes
// and the SPIR-V backend's instruction selection then handle block by block:
// a fp32 softmax row of 1024 at 4 subgroups has 16 loads and 16 stores a
// lane, ~27% of its compile (callgrind: 111 M instructions with the masks,
// 81 M without). As calls, the branch is made once per form: the helper
// holds the original xegpu op (so upstream lowers it as before, cache
// controls included), the kernel calls it. LLVM's passes see the calls
// (the helpers are `noinline` for them, xe_spirv_o0.c) and the SPIR-V keeps
// them with FunctionControl Inline, which IGC honours: dg2's helpers, left to
// IGC the same way, gave the same ISA as inlined ones. ZETILE_XE_MASK_CALLS=0
// leaves the ops in place.
//
// Whole accesses: the N chunks of one tile load (or store) are N such sites
// whose offsets and masks are elements 0..N-1 of one vector (the packer's
// slices), the loads joined by one from_elements. They become one call of a
// helper per form and N that makes the N element calls (written out, not as
// a loop: IGC keeps a loop over the lanes' elements with dynamic indexing,
// 3 loops and 99 spilled registers on softmax). The per-element code is then
// written once per form instead of once per access, and the kernel loses
// the slices and joins around each access (layer norm: 5 loads of one
// form). ZETILE_XE_MASK_VECTORS=0 keeps one call per element.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>

#include "xe/xe_internal.h"
#include "xe/xe_lane_tidy.h"

enum { MAX_FORMS = 64 };

typedef struct {
  MlirOperation* ops;
  size_t n, cap;
  bool oom;
} sites_t;

static bool is_i1_vector(MlirType t) {
  if (!mlirTypeIsAVector(t)) return false;
  MlirType e = mlirShapedTypeGetElementType(t);
  return mlirTypeIsAInteger(e) && mlirIntegerTypeGetWidth(e) == 1;
}

static bool one_element(MlirType t) {
  return mlirTypeIsAVector(t) && mlirShapedTypeGetRank(t) == 1 &&
         mlirShapedTypeGetDimSize(t, 0) == 1;
}

// A lane's masked one-element load or store at a global address (an i64
// base: SLM accesses have a memref base and stay), whose mask is not a
// constant.
static bool is_site(MlirOperation op) {
  bool load = zt_op_named(op, "xegpu.load");
  if (!load && !zt_op_named(op, "xegpu.store")) return false;
  intptr_t n = mlirOperationGetNumOperands(op);
  if (n != (load ? 3 : 4)) return false;
  MlirValue base = mlirOperationGetOperand(op, load ? 0 : 1);
  MlirType bt = mlirValueGetType(base);
  if (!mlirTypeIsAInteger(bt) || mlirIntegerTypeGetWidth(bt) != 64) return false;
  if (load && (mlirOperationGetNumResults(op) != 1 ||
               !one_element(mlirValueGetType(mlirOperationGetResult(op, 0)))))
    return false;
  if (!load && (mlirOperationGetNumResults(op) != 0 ||
                !one_element(mlirValueGetType(mlirOperationGetOperand(op, 0)))))
    return false;
  MlirValue mask = mlirOperationGetOperand(op, n - 1);
  if (!is_i1_vector(mlirValueGetType(mask))) return false;
  return !(mlirValueIsAOpResult(mask) &&
           zt_op_named(mlirOpResultGetOwner(mask), "arith.constant"));
}

static MlirWalkResult collect(MlirOperation op, void* user) {
  sites_t* w = user;
  if (!is_site(op)) return MlirWalkResultAdvance;
  if (!zt_op_list_push(&w->ops, &w->n, &w->cap, op)) {
    w->oom = true;
    return MlirWalkResultInterrupt;
  }
  return MlirWalkResultAdvance;
}

// The op's form: name, operand and result types, attributes (one helper each).
static void form_of(MlirOperation op, zt_strbuf_t* sb) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  zt_strbuf_append(sb, n.data, n.length);
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
    zt_strbuf_puts(sb, i ? "," : "(");
    mlirTypePrint(mlirValueGetType(mlirOperationGetOperand(op, i)), zt_strbuf_mlir_cb, sb);
  }
  zt_strbuf_puts(sb, ")->");
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i)
    mlirTypePrint(mlirValueGetType(mlirOperationGetResult(op, i)), zt_strbuf_mlir_cb, sb);
  for (intptr_t i = 0; i < mlirOperationGetNumAttributes(op); ++i) {
    MlirNamedAttribute a = mlirOperationGetAttribute(op, i);
    MlirStringRef an = mlirIdentifierStr(a.name);
    zt_strbuf_puts(sb, " ");
    zt_strbuf_append(sb, an.data, an.length);
    zt_strbuf_puts(sb, "=");
    mlirAttributePrint(a.attribute, zt_strbuf_mlir_cb, sb);
  }
}

static MlirNamedAttribute nattr(MlirContext ctx, const char* name, MlirAttribute a) {
  return mlirNamedAttributeGet(mlirIdentifierGet(ctx, mlirStringRefCreateFromCString(name)), a);
}

// A private func.func `name` of type fty whose body is `body` (taken).
static MlirOperation private_func(MlirContext ctx, MlirLocation loc, const char* name, MlirType fty,
                                  MlirBlock body) {
  MlirRegion region = mlirRegionCreate();
  mlirRegionAppendOwnedBlock(region, body);
  MlirOperationState fs = mlirOperationStateGet(mlirStringRefCreateFromCString("func.func"), loc);
  MlirNamedAttribute attrs[3] = {
      nattr(ctx, "sym_name", mlirStringAttrGet(ctx, mlirStringRefCreateFromCString(name))),
      nattr(ctx, "function_type", mlirTypeAttrGet(fty)),
      nattr(ctx, "sym_visibility", mlirStringAttrGet(ctx, mlirStringRefCreateFromCString("private")))};
  mlirOperationStateAddAttributes(&fs, 3, attrs);
  mlirOperationStateAddOwnedRegions(&fs, 1, &region);
  return mlirOperationCreate(&fs);
}

// An op `name` of one result type (or none), appended to `block` or put
// before `before`.
static MlirValue build(MlirBlock block, MlirOperation before, MlirLocation loc, const char* name,
                       intptr_t n, const MlirValue* ops, const MlirType* rt, intptr_t na,
                       const MlirNamedAttribute* attrs) {
  MlirOperationState st = mlirOperationStateGet(mlirStringRefCreateFromCString(name), loc);
  if (n) mlirOperationStateAddOperands(&st, n, ops);
  if (rt) mlirOperationStateAddResults(&st, 1, rt);
  if (na) mlirOperationStateAddAttributes(&st, na, attrs);
  MlirOperation o = mlirOperationCreate(&st);
  if (mlirOperationIsNull(before)) mlirBlockAppendOwnedOperation(block, o);
  else mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(before), before, o);
  return rt ? mlirOperationGetResult(o, 0) : (MlirValue){NULL};
}

// The helper's and the call's types are the scalars of the op's one-element
// vectors (upstream's conversion turns a lane's vector<1xT> into T inside
// the kernel; a function's arguments it would leave as vectors).
static MlirType scalar_of(MlirType t) {
  return one_element(t) ? mlirShapedTypeGetElementType(t) : t;
}

static MlirValue to_scalar(MlirContext ctx, MlirBlock b, MlirOperation before, MlirLocation loc,
                           MlirValue v) {
  MlirType t = mlirValueGetType(v);
  if (!one_element(t)) return v;
  MlirType et = mlirShapedTypeGetElementType(t);
  int64_t zero = 0;
  MlirNamedAttribute pos = nattr(ctx, "static_position", mlirDenseI64ArrayGet(ctx, 1, &zero));
  return build(b, before, loc, "vector.extract", 1, &v, &et, 1, &pos);
}

static MlirValue to_vector(MlirBlock b, MlirOperation before, MlirLocation loc, MlirValue v,
                           MlirType vt) {
  if (!one_element(vt)) return v;
  return build(b, before, loc, "vector.broadcast", 1, &v, &vt, 0, NULL);
}

// The operand that is the element offset (load: source, offsets, mask;
// store: value, dest, offsets, mask).
static intptr_t offsets_at(bool load) { return load ? 1 : 2; }

// func.func private @name(address, [value,] mask as scalars) -> scalar
// { the op at that address with offset 0; return its scalar }. The address
// (base + offset x element bytes) is computed in the kernel, where LLVM
// shares it between accesses at the same offsets (layer norm's loads of W,
// B and X: 24 more shifts in the ISA when each call computed its own).
static MlirOperation make_helper(MlirContext ctx, MlirOperation op, const char* name) {
  MlirLocation loc = mlirOperationGetLocation(op);
  bool load = zt_op_named(op, "xegpu.load");
  intptr_t n = mlirOperationGetNumOperands(op), nr = mlirOperationGetNumResults(op);
  intptr_t off = offsets_at(load);
  MlirType ins[4], outs[1];
  MlirLocation locs[4];
  intptr_t na = 0;
  for (intptr_t i = 0; i < n; ++i) {
    if (i == off) continue;
    ins[na] = scalar_of(mlirValueGetType(mlirOperationGetOperand(op, i)));
    locs[na++] = loc;
  }
  for (intptr_t i = 0; i < nr; ++i) outs[i] = scalar_of(mlirValueGetType(mlirOperationGetResult(op, i)));
  MlirType fty = mlirFunctionTypeGet(ctx, na, ins, nr, outs);
  MlirBlock body = mlirBlockCreate(na, ins, locs);
  MlirOperation none = {NULL};
  MlirValue vs[4];
  for (intptr_t i = 0, a = 0; i < n; ++i) {
    MlirType t = mlirValueGetType(mlirOperationGetOperand(op, i));
    if (i == off) {
      MlirAttribute zero = mlirDenseElementsAttrSplatGet(
          t, mlirIntegerAttrGet(mlirIndexTypeGet(ctx), 0));
      MlirNamedAttribute v = nattr(ctx, "value", zero);
      vs[i] = build(body, none, loc, "arith.constant", 0, NULL, &t, 1, &v);
    } else {
      vs[i] = to_vector(body, none, loc, mlirBlockGetArgument(body, a++), t);
    }
  }
  MlirOperation clone = mlirOperationClone(op);
  for (intptr_t i = 0; i < n; ++i) mlirOperationSetOperand(clone, i, vs[i]);
  mlirBlockAppendOwnedOperation(body, clone);
  MlirValue res[1];
  for (intptr_t i = 0; i < nr; ++i)
    res[i] = to_scalar(ctx, body, none, loc, mlirOperationGetResult(clone, i));
  build(body, none, loc, "func.return", nr, res, NULL, 0, NULL);
  return private_func(ctx, loc, name, fty, body);
}

// base + offset x element bytes, in the kernel before `op` (i64).
static MlirValue address(MlirContext ctx, MlirOperation op, bool load) {
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirBlock none = {NULL};
  MlirType i64 = mlirIntegerTypeGet(ctx, 64);
  MlirValue base = mlirOperationGetOperand(op, load ? 0 : 1);
  MlirValue o = to_scalar(ctx, none, op, loc, mlirOperationGetOperand(op, offsets_at(load)));
  o = build(none, op, loc, "arith.index_cast", 1, &o, &i64, 0, NULL);
  MlirType et = mlirShapedTypeGetElementType(
      mlirValueGetType(load ? mlirOperationGetResult(op, 0) : mlirOperationGetOperand(op, 0)));
  int64_t bytes = mlirTypeIsAInteger(et) ? (mlirIntegerTypeGetWidth(et) + 7) / 8
                  : mlirTypeIsAF16(et) || mlirTypeIsABF16(et) ? 2
                  : mlirTypeIsAF64(et) ? 8 : 4;
  MlirNamedAttribute v = nattr(ctx, "value", mlirIntegerAttrGet(i64, bytes));
  MlirValue sz = build(none, op, loc, "arith.constant", 0, NULL, &i64, 1, &v);
  MlirValue mul[2] = {o, sz};
  MlirValue b = build(none, op, loc, "arith.muli", 2, mul, &i64, 0, NULL);
  MlirValue add[2] = {base, b};
  return build(none, op, loc, "arith.addi", 2, add, &i64, 0, NULL);
}

static MlirOperation owner(MlirValue v) {
  return mlirValueIsAOpResult(v) ? mlirOpResultGetOwner(v) : (MlirOperation){NULL};
}

// A splat of +0 (integer 0 or float +0.0): vector.broadcast of such a
// constant, or a dense constant.
static bool is_plus_zero_splat(MlirValue v) {
  MlirOperation d = owner(v);
  if (mlirOperationIsNull(d)) return false;
  if (zt_op_named(d, "vector.broadcast")) {
    d = owner(mlirOperationGetOperand(d, 0));
    if (mlirOperationIsNull(d)) return false;
  }
  if (!zt_op_named(d, "arith.constant")) return false;
  MlirAttribute a = mlirOperationGetAttributeByName(d, mlirStringRefCreateFromCString("value"));
  if (mlirAttributeIsNull(a)) return false;
  if (mlirAttributeIsADenseElements(a)) {
    if (!mlirDenseElementsAttrIsSplat(a)) return false;
    a = mlirDenseElementsAttrGetSplatValue(a);
  }
  if (mlirAttributeIsAFloat(a)) {
    double x = mlirFloatAttrGetValueDouble(a);
    return x == 0.0 && !signbit(x);
  }
  return mlirAttributeIsAInteger(a) && mlirIntegerAttrGetValueInt(a) == 0;
}

// `op` takes element k of M: `vector.shuffle M, M [k]` (the packer's
// one-element slices) or `vector.extract_strided_slice M [k][1][1]` (its
// form under ZETILE_XE_VECTOR_LLVM=1).
static bool is_element_of(MlirOperation op, MlirValue m, intptr_t k) {
  if (mlirOperationIsNull(op) || !mlirValueEqual(mlirOperationGetOperand(op, 0), m)) return false;
  if (zt_op_named(op, "vector.shuffle")) {
    MlirAttribute mask = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("mask"));
    return mlirValueEqual(mlirOperationGetOperand(op, 1), m) && !mlirAttributeIsNull(mask) &&
           mlirDenseArrayGetNumElements(mask) == 1 && mlirDenseI64ArrayGetElement(mask, 0) == k;
  }
  if (!zt_op_named(op, "vector.extract_strided_slice")) return false;
  MlirAttribute off = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("offsets"));
  MlirAttribute sz = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("sizes"));
  return !mlirAttributeIsNull(off) && !mlirAttributeIsNull(sz) && mlirArrayAttrGetNumElements(off) == 1 &&
         mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(off, 0)) == k &&
         mlirIntegerAttrGetValueInt(mlirArrayAttrGetElement(sz, 0)) == 1;
}

// `select M, from_elements(extract(load_k)[0] ...), +0` where load k is a
// masked global element load under `shuffle M, M [k]`: the select is the
// loads themselves (upstream's lowering gives +0 where the mask is off).
// LLVM's passes folded it when they saw the loads' branches; behind calls
// they cannot (layer norm: 937 -> 1008 instructions without this).
static MlirWalkResult drop_select(MlirOperation op, void* user) {
  int* dropped = user;
  if (!zt_op_named(op, "arith.select") || mlirOperationGetNumOperands(op) != 3)
    return MlirWalkResultAdvance;
  MlirValue m = mlirOperationGetOperand(op, 0);
  MlirValue v = mlirOperationGetOperand(op, 1);
  if (!mlirTypeIsAVector(mlirValueGetType(m)) || !is_plus_zero_splat(mlirOperationGetOperand(op, 2)))
    return MlirWalkResultAdvance;
  MlirOperation fe = owner(v);
  if (mlirOperationIsNull(fe) || !zt_op_named(fe, "vector.from_elements"))
    return MlirWalkResultAdvance;
  intptr_t n = mlirOperationGetNumOperands(fe);
  for (intptr_t k = 0; k < n; ++k) {
    MlirOperation ex = owner(mlirOperationGetOperand(fe, k));
    if (mlirOperationIsNull(ex) || !zt_op_named(ex, "vector.extract") ||
        mlirOperationGetNumOperands(ex) != 1)
      return MlirWalkResultAdvance;
    MlirAttribute pos =
        mlirOperationGetAttributeByName(ex, mlirStringRefCreateFromCString("static_position"));
    if (mlirAttributeIsNull(pos) || mlirDenseArrayGetNumElements(pos) != 1 ||
        mlirDenseI64ArrayGetElement(pos, 0) != 0)
      return MlirWalkResultAdvance;
    MlirOperation ld = owner(mlirOperationGetOperand(ex, 0));
    if (mlirOperationIsNull(ld) || !zt_op_named(ld, "xegpu.load") || !is_site(ld))
      return MlirWalkResultAdvance;
    MlirOperation sh = owner(mlirOperationGetOperand(ld, mlirOperationGetNumOperands(ld) - 1));
    if (!is_element_of(sh, m, k)) return MlirWalkResultAdvance;
  }
  mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, 0), v);
  ++*dropped;
  return MlirWalkResultAdvance;
}

// --- whole accesses ------------------------------------------------------

enum { MAX_GROUP = 16, MAX_JOINS = 8 };

// Element k of a vector through the packer's slice (is_element_of: a
// shuffle, or a strided slice under ZETILE_XE_VECTOR_LLVM=1; for offsets
// behind an index_cast); V, or null.
static MlirValue slice_source(MlirValue v, intptr_t k, bool through_cast) {
  MlirValue none = {NULL};
  MlirOperation d = owner(v);
  if (through_cast) {
    if (mlirOperationIsNull(d) || !zt_op_named(d, "arith.index_cast")) return none;
    d = owner(mlirOperationGetOperand(d, 0));
  }
  if (mlirOperationIsNull(d)) return none;
  MlirValue src = mlirOperationGetOperand(d, 0);
  return is_element_of(d, src, k) ? src : none;
}

static bool group_width_ok(MlirValue offs, MlirValue mask, intptr_t n) {
  MlirType ot = mlirValueGetType(offs), mt = mlirValueGetType(mask);
  if (!mlirTypeIsAVector(ot) || mlirShapedTypeGetRank(ot) != 1 || mlirShapedTypeGetDimSize(ot, 0) != n)
    return false;
  MlirType oe = mlirShapedTypeGetElementType(ot);
  if (!mlirTypeIsAInteger(oe) || mlirIntegerTypeGetWidth(oe) != 64) return false;
  if (!is_i1_vector(mt) || mlirShapedTypeGetRank(mt) != 1 || mlirShapedTypeGetDimSize(mt, 0) != n)
    return false;
  return n == 2 || n == 4 || n == 8 || n == 16;
}

// May sit between the accesses of a group (they move to one point): pure
// arith and vector ops only.
static bool movable_across(MlirOperation op) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  return (n.length > 6 && strncmp(n.data, "arith.", 6) == 0) ||
         (n.length > 7 && strncmp(n.data, "vector.", 7) == 0);
}

static bool same_form(MlirOperation a, MlirOperation b, zt_strbuf_t* x, zt_strbuf_t* y) {
  x->size = y->size = 0;
  form_of(a, x);
  form_of(b, y);
  return !x->failed && !y->failed && x->size == y->size && memcmp(x->data, y->data, x->size) == 0;
}

typedef struct {
  bool load;
  intptr_t n;
  MlirOperation at[MAX_GROUP];  // site of element k
  MlirValue base, offs, mask, whole;  // whole: the stored vector, or null
  MlirOperation joins[MAX_JOINS];     // loads: their from_elements
  int njoins;
  MlirOperation first, last;          // in block order
} group_t;

// The join of a load's result: `vector.extract [0]` of one use, into a
// from_elements; the from_elements, or null.
static MlirOperation join_of_use(MlirOpOperand u) {
  MlirOperation none = {NULL};
  MlirOperation ex = mlirOpOperandGetOwner(u);
  if (!zt_op_named(ex, "vector.extract") || mlirOperationGetNumOperands(ex) != 1) return none;
  MlirAttribute pos = mlirOperationGetAttributeByName(ex, mlirStringRefCreateFromCString("static_position"));
  if (mlirAttributeIsNull(pos) || mlirDenseArrayGetNumElements(pos) != 1 ||
      mlirDenseI64ArrayGetElement(pos, 0) != 0)
    return none;
  MlirOpOperand u2 = mlirValueGetFirstUse(mlirOperationGetResult(ex, 0));
  if (mlirOpOperandIsNull(u2) || !mlirOpOperandIsNull(mlirOpOperandGetNextUse(u2))) return none;
  MlirOperation fe = mlirOpOperandGetOwner(u2);
  return zt_op_named(fe, "vector.from_elements") ? fe : none;
}

// Element k of from_elements `fe` is `vector.extract [0]` of `ld`'s result.
static bool joins_load(MlirOperation fe, intptr_t k, MlirOperation ld) {
  MlirOperation e = owner(mlirOperationGetOperand(fe, k));
  if (mlirOperationIsNull(e) || !zt_op_named(e, "vector.extract") ||
      mlirOperationGetNumOperands(e) != 1)
    return false;
  MlirOperation l = owner(mlirOperationGetOperand(e, 0));
  if (mlirOperationIsNull(l) || !mlirOperationEqual(l, ld)) return false;
  MlirAttribute pos = mlirOperationGetAttributeByName(e, mlirStringRefCreateFromCString("static_position"));
  if (mlirAttributeIsNull(pos) || mlirDenseArrayGetNumElements(pos) != 1 ||
      mlirDenseI64ArrayGetElement(pos, 0) != 0)
    return false;
  MlirOpOperand u = mlirValueGetFirstUse(mlirOperationGetResult(e, 0));
  return !mlirOpOperandIsNull(u) && mlirOpOperandIsNull(mlirOpOperandGetNextUse(u));
}

static intptr_t count_uses(MlirValue v) {
  intptr_t n = 0;
  for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u); u = mlirOpOperandGetNextUse(u))
    ++n;
  return n;
}

// A load site whose result is element k of from_elements joins (one per
// reader, as the wide emitter writes them) of N loads of one form at
// offsets/mask elements 0..N-1 of one vector each.
static bool load_group(MlirOperation op, group_t* g, zt_strbuf_t* x, zt_strbuf_t* y) {
  MlirValue r = mlirOperationGetResult(op, 0);
  g->njoins = 0;
  for (MlirOpOperand u = mlirValueGetFirstUse(r); !mlirOpOperandIsNull(u); u = mlirOpOperandGetNextUse(u)) {
    MlirOperation fe = join_of_use(u);
    if (mlirOperationIsNull(fe) || g->njoins == MAX_JOINS) return false;
    g->joins[g->njoins++] = fe;
  }
  if (!g->njoins) return false;
  MlirOperation fe = g->joins[0];
  intptr_t n = mlirOperationGetNumOperands(fe);
  if (n < 2 || n > MAX_GROUP) return false;
  MlirBlock blk = mlirOperationGetBlock(op);
  g->load = true;
  g->n = n;
  g->whole.ptr = NULL;
  for (intptr_t k = 0; k < n; ++k) {
    MlirOperation e = owner(mlirOperationGetOperand(fe, k));
    if (mlirOperationIsNull(e) || !zt_op_named(e, "vector.extract") ||
        mlirOperationGetNumOperands(e) != 1)
      return false;
    MlirOperation ld = owner(mlirOperationGetOperand(e, 0));
    if (mlirOperationIsNull(ld) || !is_site(ld) || !zt_op_named(ld, "xegpu.load") ||
        !mlirBlockEqual(mlirOperationGetBlock(ld), blk))
      return false;
    // Every use of the load is its element of one of the joins.
    if (count_uses(mlirOperationGetResult(ld, 0)) != g->njoins) return false;
    for (int j = 0; j < g->njoins; ++j)
      if (mlirOperationGetNumOperands(g->joins[j]) != n || !joins_load(g->joins[j], k, ld))
        return false;
    MlirValue o = slice_source(mlirOperationGetOperand(ld, 1), k, true);
    MlirValue mk = slice_source(mlirOperationGetOperand(ld, 2), k, false);
    if (!o.ptr || !mk.ptr) return false;
    if (k == 0) {
      g->base = mlirOperationGetOperand(ld, 0);
      g->offs = o;
      g->mask = mk;
      if (!group_width_ok(o, mk, n)) return false;
    } else if (!mlirValueEqual(g->base, mlirOperationGetOperand(ld, 0)) ||
               !mlirValueEqual(g->offs, o) || !mlirValueEqual(g->mask, mk) ||
               !same_form(g->at[0], ld, x, y)) {
      return false;
    }
    g->at[k] = ld;
  }
  // From this load (the first in block order, as the walk reached it
  // first) to the first join: the group's loads, other loads and pure ops
  // only (the group's loads move to this one, ahead of reads only).
  intptr_t seen = 0;
  g->first = op;
  for (MlirOperation p = op; !mlirOperationIsNull(p); p = mlirOperationGetNextInBlock(p)) {
    for (int j = 0; j < g->njoins; ++j)
      if (mlirOperationEqual(p, g->joins[j])) return seen == n;
    bool member = false;
    for (intptr_t k = 0; k < n && !member; ++k) member = mlirOperationEqual(p, g->at[k]);
    if (member) ++seen;
    else if (!movable_across(p) && !zt_op_named(p, "xegpu.load")) return false;  // (reads)
  }
  return false;
}

// From a store site, the next stores of the block that complete elements
// 0..N-1 of its offsets' and mask's vectors, one form, only pure ops
// between (the stores move to the last one).
static bool store_group(MlirOperation op, group_t* g, zt_strbuf_t* x, zt_strbuf_t* y) {
  MlirValue off0 = mlirOperationGetOperand(op, 2);
  MlirOperation c = owner(off0);
  if (mlirOperationIsNull(c) || !zt_op_named(c, "arith.index_cast")) return false;
  MlirOperation sh = owner(mlirOperationGetOperand(c, 0));
  if (mlirOperationIsNull(sh) || mlirOperationGetNumOperands(sh) < 1) return false;
  MlirValue offs = mlirOperationGetOperand(sh, 0);
  MlirType ot = mlirValueGetType(offs);
  if (!mlirTypeIsAVector(ot) || mlirShapedTypeGetRank(ot) != 1) return false;
  intptr_t n = mlirShapedTypeGetDimSize(ot, 0);
  if (n < 2 || n > MAX_GROUP) return false;
  g->load = false;
  g->n = n;
  g->njoins = 0;
  g->offs = offs;
  g->mask.ptr = NULL;
  g->base = mlirOperationGetOperand(op, 1);
  for (intptr_t k = 0; k < n; ++k) g->at[k].ptr = NULL;
  intptr_t got = 0;
  g->first = op;
  for (MlirOperation p = op; !mlirOperationIsNull(p); p = mlirOperationGetNextInBlock(p)) {
    if (!zt_op_named(p, "xegpu.store") || !is_site(p)) {
      if (!movable_across(p)) return false;
      continue;
    }
    if (!mlirValueEqual(mlirOperationGetOperand(p, 1), g->base)) return false;
    intptr_t k = 0;
    while (k < n && !slice_source(mlirOperationGetOperand(p, 2), k, true).ptr) ++k;
    if (k == n || g->at[k].ptr || !mlirValueEqual(slice_source(mlirOperationGetOperand(p, 2), k, true), offs))
      return false;
    MlirValue mk = slice_source(mlirOperationGetOperand(p, 3), k, false);
    if (!mk.ptr) return false;
    if (!g->mask.ptr) {
      g->mask = mk;
      if (!group_width_ok(offs, mk, n)) return false;
    } else if (!mlirValueEqual(g->mask, mk)) {
      return false;
    }
    if (got && !same_form(g->first, p, x, y)) return false;
    g->at[k] = p;
    g->last = p;
    if (++got == n) break;
  }
  if (got != n) return false;
  // The stored values: elements of one whole vector, or joined here.
  MlirValue w = {NULL};
  for (intptr_t k = 0; k < n; ++k) {
    MlirValue sv = slice_source(mlirOperationGetOperand(g->at[k], 0), k, false);
    if (!sv.ptr || (k && !mlirValueEqual(sv, w))) {
      w.ptr = NULL;
      break;
    }
    w = sv;
  }
  g->whole = w;
  return true;
}

// func.func private @name(base, N element byte offsets, N mask bits
// [, N values]) making the N element calls of `scalar` (the form's helper).
static MlirOperation make_vector_helper(MlirContext ctx, const group_t* g, const char* name,
                                        const char* scalar) {
  MlirOperation op = g->at[0];
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirType i64 = mlirIntegerTypeGet(ctx, 64);
  MlirType et = scalar_of(mlirValueGetType(g->load ? mlirOperationGetResult(op, 0)
                                                   : mlirOperationGetOperand(op, 0)));
  MlirType vt = mlirVectorTypeGet(1, &g->n, et);
  MlirType ins[4], outs[1];
  MlirLocation locs[4] = {loc, loc, loc, loc};
  intptr_t na = 0;
  if (!g->load) ins[na++] = vt;
  ins[na++] = i64;
  ins[na++] = mlirValueGetType(g->offs);
  ins[na++] = mlirValueGetType(g->mask);
  outs[0] = vt;
  MlirType fty = mlirFunctionTypeGet(ctx, na, ins, g->load ? 1 : 0, outs);
  MlirBlock body = mlirBlockCreate(na, ins, locs);
  MlirOperation none = {NULL};
  intptr_t a0 = g->load ? 0 : 1;
  MlirValue base = mlirBlockGetArgument(body, a0);
  MlirValue offs = mlirBlockGetArgument(body, a0 + 1);
  MlirValue mask = mlirBlockGetArgument(body, a0 + 2);
  MlirNamedAttribute callee =
      nattr(ctx, "callee", mlirFlatSymbolRefAttrGet(ctx, mlirStringRefCreateFromCString(scalar)));
  MlirValue got[MAX_GROUP];
  MlirType i1 = mlirIntegerTypeGet(ctx, 1);
  for (intptr_t k = 0; k < g->n; ++k) {
    MlirNamedAttribute pos = nattr(ctx, "static_position", mlirDenseI64ArrayGet(ctx, 1, (int64_t[]){k}));
    MlirValue o = build(body, none, loc, "vector.extract", 1, &offs, &i64, 1, &pos);
    MlirValue add[2] = {base, o};
    MlirValue addr = build(body, none, loc, "arith.addi", 2, add, &i64, 0, NULL);
    MlirValue mk = build(body, none, loc, "vector.extract", 1, &mask, &i1, 1, &pos);
    if (g->load) {
      MlirValue args[2] = {addr, mk};
      got[k] = build(body, none, loc, "func.call", 2, args, &et, 1, &callee);
    } else {
      MlirValue w = mlirBlockGetArgument(body, 0);
      MlirValue args[3] = {build(body, none, loc, "vector.extract", 1, &w, &et, 1, &pos), addr, mk};
      build(body, none, loc, "func.call", 3, args, NULL, 1, &callee);
    }
  }
  MlirValue res[1];
  if (g->load) res[0] = build(body, none, loc, "vector.from_elements", g->n, got, &vt, 0, NULL);
  build(body, none, loc, "func.return", g->load ? 1 : 0, res, NULL, 0, NULL);
  return private_func(ctx, loc, name, fty, body);
}

// The index of `key` in table[0, *n), appended (a copy; *added) when it is
// not there: -1 when the table is full, -2 out of memory.
static int intern_form(char** table, int* n, const char* key, bool* added) {
  *added = false;
  for (int i = 0; i < *n; ++i)
    if (strcmp(table[i], key) == 0) return i;
  if (*n == MAX_FORMS) return -1;
  if (!(table[*n] = strdup(key))) return -2;
  *added = true;
  return (*n)++;
}

static void erase_if_dead(MlirOperation op) {
  if (mlirOperationIsNull(op)) return;
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i)
    if (!mlirOpOperandIsNull(mlirValueGetFirstUse(mlirOperationGetResult(op, i)))) return;
  mlirOperationDestroy(op);
}

// A group's width and form, NUL-terminated in sb (false: out of memory).
static bool group_key(const group_t* g, zt_strbuf_t* sb) {
  sb->size = 0;
  zt_strbuf_printf(sb, "%d|", (int)g->n);
  form_of(g->at[0], sb);
  zt_strbuf_append(sb, "", 1);
  return !sb->failed;
}

static bool shared_key(char* const* keys, const int* counts, int n, const char* key) {
  for (int k = 0; k < n; ++k)
    if (strcmp(keys[k], key) == 0) return counts[k] >= 2;
  return false;
}

// The group as one call of `name` (kernel side): byte offsets as one
// vector multiply, then the call at the first load or the last store.
static void call_group(MlirContext ctx, const group_t* g, const char* name) {
  MlirOperation at = g->load ? g->first : g->last;
  MlirLocation loc = mlirOperationGetLocation(at);
  MlirBlock none = {NULL};
  MlirType i64 = mlirIntegerTypeGet(ctx, 64);
  MlirType ot = mlirValueGetType(g->offs);
  MlirType et = scalar_of(mlirValueGetType(g->load ? mlirOperationGetResult(g->at[0], 0)
                                                   : mlirOperationGetOperand(g->at[0], 0)));
  int64_t bytes = mlirTypeIsAInteger(et) ? (mlirIntegerTypeGetWidth(et) + 7) / 8
                  : mlirTypeIsAF16(et) || mlirTypeIsABF16(et) ? 2
                  : mlirTypeIsAF64(et) ? 8 : 4;
  MlirNamedAttribute v = nattr(ctx, "value", mlirDenseElementsAttrSplatGet(ot, mlirIntegerAttrGet(i64, bytes)));
  MlirValue sz = build(none, at, loc, "arith.constant", 0, NULL, &ot, 1, &v);
  MlirValue mul[2] = {g->offs, sz};
  MlirValue ob = build(none, at, loc, "arith.muli", 2, mul, &ot, 0, NULL);
  MlirNamedAttribute callee =
      nattr(ctx, "callee", mlirFlatSymbolRefAttrGet(ctx, mlirStringRefCreateFromCString(name)));
  MlirType vt = mlirVectorTypeGet(1, &g->n, et);
  if (g->load) {
    MlirValue args[3] = {g->base, ob, g->mask};
    MlirValue r = build(none, at, loc, "func.call", 3, args, &vt, 1, &callee);
    for (int j = 0; j < g->njoins; ++j) {
      mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(g->joins[j], 0), r);
      mlirOperationDestroy(g->joins[j]);
    }
  } else {
    MlirValue w = g->whole;
    if (!w.ptr) {
      MlirValue parts[MAX_GROUP];
      for (intptr_t k = 0; k < g->n; ++k)
        parts[k] = to_scalar(ctx, none, at, loc, mlirOperationGetOperand(g->at[k], 0));
      w = build(none, at, loc, "vector.from_elements", g->n, parts, &vt, 0, NULL);
    }
    MlirValue args[4] = {w, g->base, ob, g->mask};
    build(none, at, loc, "func.call", 4, args, NULL, 1, &callee);
  }
  for (intptr_t k = 0; k < g->n; ++k) {
    MlirOperation s = g->at[k];
    MlirOperation ex = {NULL}, val = {NULL};
    if (g->load) {
      MlirValue lr = mlirOperationGetResult(s, 0);
      for (MlirOpOperand u = mlirValueGetFirstUse(lr); !mlirOpOperandIsNull(u);
           u = mlirValueGetFirstUse(lr)) {
        ex = mlirOpOperandGetOwner(u);
        mlirOperationDestroy(ex);
      }
    } else {
      val = owner(mlirOperationGetOperand(s, 0));
    }
    MlirOperation cast = owner(mlirOperationGetOperand(s, g->load ? 1 : 2));
    MlirOperation msh = owner(mlirOperationGetOperand(s, g->load ? 2 : 3));
    mlirOperationDestroy(s);
    MlirOperation osh = mlirOperationIsNull(cast) ? cast : owner(mlirOperationGetOperand(cast, 0));
    erase_if_dead(cast);
    erase_if_dead(osh);
    erase_if_dead(msh);
    if (!mlirOperationIsNull(val) && zt_op_named(val, "vector.shuffle")) erase_if_dead(val);
  }
}

zt_status_t xe_mask_calls(MlirContext ctx, MlirModule m, int* out_calls) {
  if (out_calls) *out_calls = 0;
  const char* env = getenv("ZETILE_XE_MASK_CALLS");
  if (env && strcmp(env, "0") == 0) return NULL;
  MlirOperation gm = zt_op_in_block(mlirModuleGetBody(m), "gpu.module");
  if (mlirOperationIsNull(gm)) return NULL;
  int dropped = 0;
  mlirOperationWalk(gm, drop_select, &dropped, MlirWalkPreOrder);
  sites_t w = {0};
  mlirOperationWalk(gm, collect, &w, MlirWalkPreOrder);
  if (w.oom) {
    free(w.ops);
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe masked access calls");
  }
  // Only where it pays: a form called once would add a function for nothing.
  if (w.n < 2) {
    free(w.ops);
    return NULL;
  }
  MlirBlock gbody = mlirRegionGetFirstBlock(mlirOperationGetRegion(gm, 0));
  MlirOperation first = mlirBlockGetFirstOperation(gbody);
  char* forms[MAX_FORMS];
  int nforms = 0, calls = 0;
  zt_status_t s = NULL;
  zt_strbuf_t sb;
  zt_strbuf_init(&sb);
  // Whole accesses first; ZETILE_XE_MASK_VECTORS=0 makes element calls only.
  const char* vec_env = getenv("ZETILE_XE_MASK_VECTORS");
  bool vectors = !(vec_env && strcmp(vec_env, "0") == 0);
  bool* taken = vectors ? calloc(w.n, sizeof *taken) : NULL;
  char* vforms[MAX_FORMS];
  int nvforms = 0;
  zt_strbuf_t x, y;
  zt_strbuf_init(&x);
  zt_strbuf_init(&y);
  if (vectors && !taken) s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe masked access calls");
  // Only forms of two or more whole accesses: with one, the element code
  // moves into the helper and costs the same (softmax: 94.7 vs 94.6 M
  // instructions) while IGC's ISA grew (916 -> 954: the vector's moves).
  char* keys[MAX_FORMS];
  int counts[MAX_FORMS], nkeys = 0;
  for (size_t i = 0; taken && i < w.n && !s; ++i) {
    group_t g;
    bool load = zt_op_named(w.ops[i], "xegpu.load");
    if (taken[i] || !(load ? load_group(w.ops[i], &g, &x, &y) : store_group(w.ops[i], &g, &x, &y)))
      continue;
    for (intptr_t k = 0; k < g.n; ++k)
      for (size_t j = i; j < w.n; ++j)
        if (mlirOperationEqual(w.ops[j], g.at[k])) taken[j] = true;
    if (!group_key(&g, &sb)) {
      s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe masked access calls");
      break;
    }
    int kx = 0;
    while (kx < nkeys && strcmp(keys[kx], sb.data) != 0) ++kx;
    if (kx < nkeys) {
      ++counts[kx];
    } else if (nkeys < MAX_FORMS && (keys[nkeys] = strdup(sb.data))) {
      counts[nkeys++] = 1;
    }
  }
  if (taken) memset(taken, 0, w.n * sizeof *taken);
  for (size_t i = 0; i < w.n && !s; ++i) {
    MlirOperation op = w.ops[i];
    if (taken && taken[i]) continue;
    group_t g;
    bool load = zt_op_named(op, "xegpu.load");
    if (taken && (load ? load_group(op, &g, &x, &y) : store_group(op, &g, &x, &y)) &&
        group_key(&g, &sb) && shared_key(keys, counts, nkeys, sb.data)) {
      sb.size = 0;
      form_of(op, &sb);
      zt_strbuf_append(&sb, "", 1);
      if (sb.failed) {
        s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe masked access calls");
        break;
      }
      bool added;
      int f = intern_form(forms, &nforms, sb.data, &added);
      if (f == -2) {
        s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe masked access calls");
        break;
      }
      if (f == -1) goto element_calls;
      char name[48], vname[48];
      snprintf(name, sizeof name, "zt_mcall_%s%d", load ? "load" : "store", f);
      if (added) mlirBlockInsertOwnedOperationBefore(gbody, first, make_helper(ctx, op, name));
      // One vector helper per form and width.
      x.size = 0;
      zt_strbuf_printf(&x, "%d:%d", f, (int)g.n);
      zt_strbuf_append(&x, "", 1);
      if (x.failed) {
        s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe masked access calls");
        break;
      }
      int v = intern_form(vforms, &nvforms, x.data, &added);
      if (v == -2) {
        s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe masked access calls");
        break;
      }
      if (v == -1) goto element_calls;
      snprintf(vname, sizeof vname, "zt_mcall_%sv%d", load ? "load" : "store", v);
      if (added)
        mlirBlockInsertOwnedOperationBefore(gbody, first, make_vector_helper(ctx, &g, vname, name));
      for (intptr_t k = 0; k < g.n; ++k)
        for (size_t j = i; j < w.n; ++j)
          if (mlirOperationEqual(w.ops[j], g.at[k])) taken[j] = true;
      call_group(ctx, &g, vname);
      calls += (int)g.n;
      continue;
    }
  element_calls:
    sb.size = 0;
    form_of(op, &sb);
    zt_strbuf_append(&sb, "", 1);
    if (sb.failed) {
      s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe masked access calls");
      break;
    }
    bool added;
    int f = intern_form(forms, &nforms, sb.data, &added);
    if (f == -2) {
      s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe masked access calls");
      break;
    }
    if (f == -1) continue;  // no room for another helper: this access stays as it is
    char name[48];
    snprintf(name, sizeof name, "zt_mcall_%s%d", load ? "load" : "store", f);
    if (added) mlirBlockInsertOwnedOperationBefore(gbody, first, make_helper(ctx, op, name));
    intptr_t n = mlirOperationGetNumOperands(op);
    MlirLocation loc = mlirOperationGetLocation(op);
    MlirBlock none = {NULL};
    MlirValue args[4];
    intptr_t na = 0;
    MlirValue addr = address(ctx, op, load);
    for (intptr_t a = 0; a < n; ++a) {
      if (a == offsets_at(load)) continue;
      args[na++] = a == (load ? 0 : 1) ? addr : to_scalar(ctx, none, op, loc, mlirOperationGetOperand(op, a));
    }
    MlirNamedAttribute callee =
        nattr(ctx, "callee", mlirFlatSymbolRefAttrGet(ctx, mlirStringRefCreateFromCString(name)));
    if (load) {
      MlirType vt = mlirValueGetType(mlirOperationGetResult(op, 0));
      MlirType rt = scalar_of(vt);
      MlirValue r = build(none, op, loc, "func.call", na, args, &rt, 1, &callee);
      mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, 0), to_vector(none, op, loc, r, vt));
    } else {
      build(none, op, loc, "func.call", na, args, NULL, 1, &callee);
    }
    mlirOperationDestroy(op);
    ++calls;
  }
  zt_strbuf_deinit(&sb);
  zt_strbuf_deinit(&x);
  zt_strbuf_deinit(&y);
  for (int f = 0; f < nforms; ++f) free(forms[f]);
  for (int v = 0; v < nvforms; ++v) free(vforms[v]);
  for (int k = 0; k < nkeys; ++k) free(keys[k]);
  free(taken);
  free(w.ops);
  if (out_calls) *out_calls = calls;
  return s;
}
