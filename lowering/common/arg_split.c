// argmin/argmax as two built-in reductions, for the lowerings that cannot
// reduce the (value, position) pair of a tile directly: Xe when the tile is
// split across subgroups along the axis (a row argmax of a 64x128 tile over
// 4 or 8 subgroups, an expert argmax of a dot result), dg2 for every 2-D
// tile. Both lowerings already reduce one value along a split axis (lane
// shuffles, then SLM across subgroups), so
//
//   v, i = argmax(x, axis)
//
// becomes
//
//   v = max(x, axis)                         (maxnumf for floats)
//   i = min(where(x == bcast(v), pos, INT32_MAX), axis)
//
// (argmin: min / the same; tie_break_left off: the largest position, max
// with -1). Ties give the lowest position, as the pair combiner does; NaN
// values never win, and a line of NaN only gives index INT32_MAX: the Xe
// lowering's own argmin/argmax (xe_argreduce.c) does the same.
#include <stdio.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>

#include "common/tile_build.h"
#include "lowering.h"

static bool operands_are(MlirOperation op, MlirValue a, MlirValue b) {
  return mlirOperationGetNumOperands(op) == 2 &&
         mlirValueEqual(mlirOperationGetOperand(op, 0), a) &&
         mlirValueEqual(mlirOperationGetOperand(op, 1), b);
}

static bool predicate_of(MlirOperation op, int64_t* p) {
  MlirAttribute a = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("predicate"));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAInteger(a)) return false;
  *p = mlirIntegerAttrGetValueInt(a);
  return true;
}

bool zt_argreduce_combiner(MlirBlock top, MlirStringRef name, zt_arg_spec_t* spec) {
  MlirOperation f = zt_symbol_in_block(top, name);
  if (mlirOperationIsNull(f) || !zt_op_named(f, "func.func")) return false;
  MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0));
  if (mlirBlockIsNull(b) || mlirBlockGetNumArguments(b) != 4) return false;
  MlirValue v1 = mlirBlockGetArgument(b, 0), i1 = mlirBlockGetArgument(b, 1),
            v2 = mlirBlockGetArgument(b, 2), i2 = mlirBlockGetArgument(b, 3);
  bool better = false, tie = false, sel_v = false, sel_i = false;
  *spec = (zt_arg_spec_t){0};
  for (MlirOperation op = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    int64_t p;
    if ((zt_op_named(op, "arith.cmpf") || zt_op_named(op, "arith.cmpi")) &&
        operands_are(op, v1, v2) && predicate_of(op, &p)) {
      bool fl = zt_op_named(op, "arith.cmpf");
      // cmpf: ogt 2, olt 4; cmpi: slt 2, sgt 4, ult 6, ugt 8.
      if (fl && (p == 2 || p == 4)) {
        better = true;
        spec->max = p == 2;
      } else if (!fl && (p == 2 || p == 4 || p == 6 || p == 8)) {
        better = true;
        spec->max = p == 4 || p == 8;
        spec->uns = p >= 6;
      }
    }
    if (zt_op_named(op, "arith.cmpi") && operands_are(op, i1, i2) && predicate_of(op, &p) &&
        p == 2)
      tie = true;
    if (zt_op_named(op, "arith.select") && mlirOperationGetNumOperands(op) == 3) {
      MlirValue a = mlirOperationGetOperand(op, 1), c = mlirOperationGetOperand(op, 2);
      if (mlirValueEqual(a, v1) && mlirValueEqual(c, v2)) sel_v = true;
      if (mlirValueEqual(a, i1) && mlirValueEqual(c, i2)) sel_i = true;
    }
  }
  spec->tie_left = tie;
  return better && sel_v && sel_i;
}

static MlirBlock module_block(MlirOperation kernel) {
  MlirOperation mod = mlirOperationGetParentOperation(kernel);
  return mlirRegionGetFirstBlock(mlirOperationGetRegion(mod, 0));
}

// The argmin/argmax spec of a tile.reduce, or false.
static bool arg_reduce_of(MlirOperation op, MlirBlock top, zt_arg_spec_t* sp) {
  if (!zt_op_named(op, "tile.reduce") || mlirOperationGetNumOperands(op) != 2 ||
      mlirOperationGetNumResults(op) != 2)
    return false;
  MlirAttribute c = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("combiner"));
  if (mlirAttributeIsNull(c) || !mlirAttributeIsAFlatSymbolRef(c)) return false;
  MlirType pt = mlirValueGetType(mlirOperationGetOperand(op, 1));
  MlirType vt = mlirValueGetType(mlirOperationGetOperand(op, 0));
  if (!mlirTypeIsARankedTensor(pt) || !mlirTypeIsARankedTensor(vt)) return false;
  MlirType pe = mlirShapedTypeGetElementType(pt), ve = mlirShapedTypeGetElementType(vt);
  // i32 positions; float or integer (not i1) values.
  if (!mlirTypeIsAInteger(pe) || mlirIntegerTypeGetWidth(pe) != 32) return false;
  if (mlirTypeIsAInteger(ve) ? mlirIntegerTypeGetWidth(ve) < 8 : !mlirTypeIsAFloat(ve))
    return false;
  return zt_argreduce_combiner(top, mlirFlatSymbolRefAttrGetValue(c), sp);
}

typedef struct type_text_s {
  char s[16];
  size_t n;
} type_text_t;

static void type_text(MlirStringRef part, void* ud) {
  type_text_t* t = ud;
  if (t->n + part.length < sizeof t->s) memcpy(t->s + t->n, part.data, part.length);
  t->n += part.length;
  if (t->n < sizeof t->s) t->s[t->n] = 0;
}

// @name: a one-op combiner (a, b) -> `op` a, b of element type et, made in
// the module once (the lowerings recognize it as a built-in reduction).
static bool combiner(MlirOperation kernel, const char* op, MlirType et, char* name,
                     size_t cap) {
  type_text_t ets = {.n = 0};
  mlirTypePrint(et, type_text, &ets);
  if (ets.n == 0 || ets.n >= sizeof ets.s) return false;
  snprintf(name, cap, "zt_arg_split_%s_%s", op + 6, ets.s);  // op + 6: past "arith."
  MlirBlock top = module_block(kernel);
  if (!mlirOperationIsNull(zt_symbol_in_block(top, mlirStringRefCreateFromCString(name))))
    return true;
  char text[512];
  snprintf(text, sizeof text,
           "func.func private @%s(%%a: %s, %%b: %s) -> %s {\n"
           "  %%r = %s %%a, %%b : %s\n"
           "  return %%r : %s\n"
           "}\n",
           name, ets.s, ets.s, ets.s, op, ets.s, ets.s);
  MlirOperation f = mlirOperationCreateParse(mlirOperationGetContext(kernel),
                                             mlirStringRefCreateFromCString(text),
                                             mlirStringRefCreateFromCString("arg_split"));
  if (mlirOperationIsNull(f)) return false;
  mlirBlockInsertOwnedOperationBefore(top, kernel, f);
  return true;
}

static MlirValue reduce_with(zt_tb_t* b, MlirValue x, MlirAttribute axis, const char* comb,
                             MlirType res) {
  int32_t seg[4] = {1, 0, 0, 0};
  MlirNamedAttribute at[4] = {
      zt_tb_attr(b, "axis", axis),
      zt_tb_attr(b, "combiner",
                 mlirFlatSymbolRefAttrGet(b->ctx, mlirStringRefCreateFromCString(comb))),
      zt_tb_attr(b, "operandSegmentSizes", mlirDenseI32ArrayGet(b->ctx, 4, seg)),
      zt_tb_attr(b, "resultSegmentSizes", mlirDenseI32ArrayGet(b->ctx, 4, seg))};
  return zt_tb_op(b, "tile.reduce", 1, &x, res, 4, at);
}

// op (a matching argmin/argmax) rewritten as above; false when a combiner
// could not be made (op left as it is).
static bool split_one(MlirOperation kernel, MlirOperation op, const zt_arg_spec_t* sp) {
  MlirValue x = mlirOperationGetOperand(op, 0), pos = mlirOperationGetOperand(op, 1);
  MlirType xt = mlirValueGetType(x), pt = mlirValueGetType(pos);
  MlirType et = mlirShapedTypeGetElementType(xt), it = mlirShapedTypeGetElementType(pt);
  bool fl = mlirTypeIsAFloat(et);
  const char* vop = fl ? (sp->max ? "arith.maxnumf" : "arith.minnumf")
                       : sp->max ? (sp->uns ? "arith.maxui" : "arith.maxsi")
                                 : (sp->uns ? "arith.minui" : "arith.minsi");
  const char* iop = sp->tie_left ? "arith.minsi" : "arith.maxsi";
  char vname[64], iname[64];
  if (!combiner(kernel, vop, et, vname, sizeof vname) ||
      !combiner(kernel, iop, it, iname, sizeof iname))
    return false;
  MlirAttribute axis = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("axis"));
  int ax = mlirAttributeIsNull(axis) ? 0 : (int)mlirIntegerAttrGetValueInt(axis);
  int rank = (int)mlirShapedTypeGetRank(xt);
  int64_t shape[4];
  for (int d = 0; d < rank && d < 4; ++d) shape[d] = mlirShapedTypeGetDimSize(xt, d);
  zt_tb_t b = zt_tb_at(op);
  MlirValue r0 = mlirOperationGetResult(op, 0), r1 = mlirOperationGetResult(op, 1);
  MlirValue v = reduce_with(&b, x, axis, vname, mlirValueGetType(r0));
  // The best value back on x's shape.
  MlirValue vb;
  if (rank == 1) {
    vb = zt_tb_splat(&b, v, 1, shape);
  } else {
    int64_t es[4];
    for (int d = 0; d < rank; ++d) es[d] = d == ax ? 1 : shape[d];
    MlirNamedAttribute ea =
        zt_tb_attr(&b, "axis", mlirIntegerAttrGet(mlirIntegerTypeGet(b.ctx, 32), ax));
    MlirValue e = zt_tb_op(&b, "tile.expand_dims", 1, &v, zt_tb_tensor(rank, es, et), 1, &ea);
    vb = zt_tb_op(&b, "tile.broadcast", 1, &e, xt, 0, NULL);
  }
  // arith predicates: cmpf oeq 1, cmpi eq 0.
  MlirValue eo[2] = {x, vb};
  MlirNamedAttribute pr =
      zt_tb_attr(&b, "predicate", mlirIntegerAttrGet(mlirIntegerTypeGet(b.ctx, 64), fl ? 1 : 0));
  MlirType bt = zt_tb_tensor(rank, shape, mlirIntegerTypeGet(b.ctx, 1));
  MlirValue eq = zt_tb_op(&b, fl ? "arith.cmpf" : "arith.cmpi", 2, eo, bt, 1, &pr);
  MlirValue none = zt_tb_const_splat(&b, it, sp->tie_left ? 2147483647.0 : -1.0, rank, shape);
  MlirValue so[3] = {eq, pos, none};
  MlirValue cand = zt_tb_op(&b, "arith.select", 3, so, pt, 0, NULL);
  MlirValue i = reduce_with(&b, cand, axis, iname, mlirValueGetType(r1));
  mlirValueReplaceAllUsesOfWith(r0, v);
  mlirValueReplaceAllUsesOfWith(r1, i);
  mlirOperationDestroy(op);
  return true;
}

typedef struct collect_s {
  MlirBlock top;
  zt_arg_keep_fn keep;
  void* ud;
  MlirOperation ops[64];
  zt_arg_spec_t specs[64];
  int n;
} collect_t;

static MlirWalkResult collect_cb(MlirOperation op, void* ud) {
  collect_t* c = ud;
  zt_arg_spec_t sp;
  if (c->n < 64 && arg_reduce_of(op, c->top, &sp) && !(c->keep && c->keep(op, c->ud))) {
    c->ops[c->n] = op;
    c->specs[c->n++] = sp;
  }
  return MlirWalkResultAdvance;
}

zt_status_t zt_split_argreduces(MlirOperation kernel, zt_arg_keep_fn keep, void* ud,
                                int* out_count) {
  collect_t c = {.top = module_block(kernel), .keep = keep, .ud = ud};
  mlirOperationWalk(kernel, collect_cb, &c, MlirWalkPostOrder);
  int done = 0;
  for (int k = 0; k < c.n; ++k) done += split_one(kernel, c.ops[k], &c.specs[k]);
  if (out_count) *out_count = done;
  return NULL;
}
