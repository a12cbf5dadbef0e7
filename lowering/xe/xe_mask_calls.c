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
  for (size_t i = 0; i < w.n && !s; ++i) {
    MlirOperation op = w.ops[i];
    sb.size = 0;
    form_of(op, &sb);
    zt_strbuf_append(&sb, "", 1);
    if (sb.failed) {
      s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe masked access calls");
      break;
    }
    int f = 0;
    while (f < nforms && strcmp(forms[f], sb.data) != 0) ++f;
    bool load = zt_op_named(op, "xegpu.load");
    char name[48];
    if (f == nforms) {
      if (nforms == MAX_FORMS) continue;
      forms[nforms] = strdup(sb.data);
      if (!forms[nforms]) {
        s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe masked access calls");
        break;
      }
      ++nforms;
      snprintf(name, sizeof name, "zt_mcall_%s%d", load ? "load" : "store", f);
      MlirOperation h = make_helper(ctx, op, name);
      mlirBlockInsertOwnedOperationBefore(gbody, first, h);
    }
    snprintf(name, sizeof name, "zt_mcall_%s%d", load ? "load" : "store", f);
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
  for (int f = 0; f < nforms; ++f) free(forms[f]);
  free(w.ops);
  if (out_calls) *out_calls = calls;
  return s;
}
