// Lane shuffles and SLM accesses rewritten in place, through the C API,
// for kernels without atomics that zetile's own distribution took.
//
// xe_atomic.c does the same two rewrites (and the atomics) on the printed
// module and parses the result back; for the FlashAttention forward (128
// marked shuffles) that print, rewrite and parse was ~13% of the compile's
// instructions (callgrind), ~15% for softmax (its SLM exchange). Here each
// op is replaced where it stands, with the same result ops as there:
//   %r = arith.add[if] %v, %v {zt.shfl_<mode> = D} : vector<1xT>
//     -> %e = vector.extract %v[0]; %s, %ok = gpu.shuffle <mode> %e, D, 16;
//        %r = vector.broadcast %s
//   %r = xegpu.load %slm[%off], %m : memref<NxT, 3>, vector<1xindex>, vector<1xi1>
//     -> %r = broadcast(scf.if %m[0] { memref.load %slm[%off[0]] } else { 0 })
//   xegpu.store %v, %slm[%off], %m : ...
//     -> scf.if %m[0] { memref.store %v[0], %slm[%off[0]] }
// Anything in another form (or any atomic) leaves the module untouched and
// the caller takes xe_lower_atomics as before: the check runs over the whole
// module first.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>

#include "xe/xe_internal.h"
#include "xe/xe_lane_tidy.h"

static const char* const kModes[] = {"xor", "up", "down", "idx"};

typedef struct {
  MlirOperation* ops;
  size_t n, cap;
  bool oom, refuse;
} moves_t;

static MlirAttribute attr(MlirOperation op, const char* name) {
  return mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(name));
}

// The shuffle mode of a marked op (index into kModes), or -1.
static int shuffle_mode(MlirOperation op) {
  static const char* const keys[4] = {"zt.shfl_xor", "zt.shfl_up", "zt.shfl_down", "zt.shfl_idx"};
  for (int i = 0; i < 4; ++i)
    if (!mlirAttributeIsNull(attr(op, keys[i]))) return i;
  return -1;
}

// vector<1xT> or a scalar T: one element per lane.
static bool lane_value(MlirType t) {
  if (!mlirTypeIsAVector(t))
    return mlirTypeIsAInteger(t) || mlirTypeIsAFloat(t) || mlirTypeIsAIndex(t);
  return mlirShapedTypeGetRank(t) == 1 && mlirShapedTypeGetDimSize(t, 0) == 1;
}

static bool slm_memref(MlirType t) {
  if (!mlirTypeIsAMemRef(t) || mlirShapedTypeGetRank(t) != 1) return false;
  MlirAttribute space = mlirMemRefTypeGetMemorySpace(t);
  return !mlirAttributeIsNull(space) && mlirAttributeIsAInteger(space) &&
         mlirIntegerAttrGetValueInt(space) == 3;
}

static bool shuffle_ok(MlirOperation op, int mode) {
  if (!(zt_op_named(op, "arith.addi") || zt_op_named(op, "arith.addf")) ||
      mlirOperationGetNumOperands(op) != 2 || mlirOperationGetNumResults(op) != 1)
    return false;
  char key[24];
  snprintf(key, sizeof key, "zt.shfl_%s", kModes[mode]);
  MlirAttribute d = attr(op, key);
  if (!mlirAttributeIsAInteger(d)) return false;
  int64_t v = mlirIntegerAttrGetValueInt(d);
  return (v > 0 || (v == 0 && mode == 3)) &&
         lane_value(mlirValueGetType(mlirOperationGetResult(op, 0)));
}

// xegpu.load %mem[%off], %mask (3 operands) / xegpu.store %v, %mem[%off],
// %mask (4) on a memref: 1 load, 2 store, -1 a memref outside SLM (which
// xe_atomic.c refuses with its message), 0 anything else.
static int slm_kind(MlirOperation op) {
  bool ld = zt_op_named(op, "xegpu.load"), st = zt_op_named(op, "xegpu.store");
  if (!ld && !st) return 0;
  intptr_t base = st ? 1 : 0;
  if (mlirOperationGetNumOperands(op) <= base) return 0;
  MlirType t = mlirValueGetType(mlirOperationGetOperand(op, base));
  if (!mlirTypeIsAMemRef(t)) return 0;
  if (!slm_memref(t)) return -1;
  return ld ? 1 : 2;
}

static bool slm_ok(MlirOperation op, int kind) {
  intptr_t base = kind == 2 ? 1 : 0;
  if (mlirOperationGetNumOperands(op) != base + 3) return false;
  if (kind == 1 && (mlirOperationGetNumResults(op) != 1 ||
                    !lane_value(mlirValueGetType(mlirOperationGetResult(op, 0)))))
    return false;
  if (kind == 2 && !lane_value(mlirValueGetType(mlirOperationGetOperand(op, 0)))) return false;
  return lane_value(mlirValueGetType(mlirOperationGetOperand(op, base + 1))) &&
         lane_value(mlirValueGetType(mlirOperationGetOperand(op, base + 2)));
}

static MlirWalkResult collect_cb(MlirOperation op, void* user) {
  moves_t* mv = user;
  // One pass over the attribute names finds both marks (most ops carry
  // neither): the walk visits every op of the lane code, and looking each
  // shuffle mode up by name on every op was a third of this stage's
  // instructions on softmax (callgrind).
  bool atomic = false, shuffle = false;
  for (intptr_t i = 0; i < mlirOperationGetNumAttributes(op); ++i) {
    MlirStringRef n = mlirIdentifierStr(mlirOperationGetAttribute(op, i).name);
    if (n.length < 3 || memcmp(n.data, "zt.", 3) != 0) continue;
    atomic |= n.length >= 9 && memcmp(n.data, "zt.atomic", 9) == 0;
    shuffle |= n.length >= 8 && memcmp(n.data, "zt.shfl_", 8) == 0;
  }
  if (atomic) {
    mv->refuse = true;
    return MlirWalkResultInterrupt;
  }
  int mode = shuffle ? shuffle_mode(op) : -1, kind = mode < 0 ? slm_kind(op) : 0;
  if (mode < 0 && !kind) return MlirWalkResultAdvance;
  if (kind < 0 || (mode >= 0 ? !shuffle_ok(op, mode) : !slm_ok(op, kind))) {
    mv->refuse = true;
    return MlirWalkResultInterrupt;
  }
  if (!zt_op_list_push(&mv->ops, &mv->n, &mv->cap, op)) {
    mv->oom = true;
    return MlirWalkResultInterrupt;
  }
  return MlirWalkResultAdvance;
}

static MlirNamedAttribute named(MlirContext ctx, const char* name, MlirAttribute a) {
  return mlirNamedAttributeGet(mlirIdentifierGet(ctx, mlirStringRefCreateFromCString(name)), a);
}

static MlirOperation make(const char* name, MlirLocation loc, intptr_t nops, const MlirValue* ops,
                          intptr_t nres, const MlirType* res, intptr_t nattr,
                          const MlirNamedAttribute* attrs) {
  MlirOperationState st = mlirOperationStateGet(mlirStringRefCreateFromCString(name), loc);
  if (nops) mlirOperationStateAddOperands(&st, nops, ops);
  if (nres) mlirOperationStateAddResults(&st, nres, res);
  if (nattr) mlirOperationStateAddAttributes(&st, nattr, attrs);
  return mlirOperationCreate(&st);
}

// The lane's element of a vector<1xT> (or the scalar itself).
static MlirValue element(MlirContext ctx, MlirOperation before, MlirValue v) {
  MlirType t = mlirValueGetType(v);
  if (!mlirTypeIsAVector(t)) return v;
  MlirType et = mlirShapedTypeGetElementType(t);
  int64_t zero = 0;
  MlirNamedAttribute pos = named(ctx, "static_position", mlirDenseI64ArrayGet(ctx, 1, &zero));
  MlirOperation x = make("vector.extract", mlirOperationGetLocation(before), 1, &v, 1, &et, 1,
                         &pos);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(before), before, x);
  return mlirOperationGetResult(x, 0);
}

static MlirValue constant(MlirContext ctx, MlirOperation before, MlirType t, int64_t v) {
  MlirAttribute a = mlirTypeIsAFloat(t) ? mlirFloatAttrDoubleGet(ctx, t, (double)v)
                                        : mlirIntegerAttrGet(t, v);
  MlirNamedAttribute value = named(ctx, "value", a);
  MlirOperation c = make("arith.constant", mlirOperationGetLocation(before), 0, NULL, 1, &t, 1,
                         &value);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(before), before, c);
  return mlirOperationGetResult(c, 0);
}

// Back to the replaced op's result type (vector<1xT> from T).
static MlirValue widen(MlirOperation before, MlirValue s, MlirType to) {
  if (!mlirTypeIsAVector(to)) return s;
  MlirOperation b = make("vector.broadcast", mlirOperationGetLocation(before), 1, &s, 1, &to, 0,
                         NULL);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(before), before, b);
  return mlirOperationGetResult(b, 0);
}

static void replace(MlirOperation op, MlirValue with) {
  mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, 0), with);
  mlirOperationDestroy(op);
}

// The lanes of the kernel's subgroup: its gpu.func's intel_reqd_sub_group_size
// (16, or 8 for dg2 at SIMD8), which gpu.shuffle's width must equal.
static int64_t subgroup_lanes(MlirOperation op) {
  for (MlirOperation f = mlirOperationGetParentOperation(op); !mlirOperationIsNull(f);
       f = mlirOperationGetParentOperation(f))
    if (zt_op_named(f, "gpu.func")) {
      MlirAttribute a = attr(f, "intel_reqd_sub_group_size");
      return mlirAttributeIsAInteger(a) ? mlirIntegerAttrGetValueInt(a) : 16;
    }
  return 16;
}

static zt_status_t rewrite_shuffle(MlirContext ctx, MlirOperation op) {
  int mode = shuffle_mode(op);
  char key[24], spelled[40];
  snprintf(key, sizeof key, "zt.shfl_%s", kModes[mode]);
  snprintf(spelled, sizeof spelled, "#gpu<shuffle_mode %s>", kModes[mode]);
  MlirAttribute m = mlirAttributeParseGet(ctx, mlirStringRefCreateFromCString(spelled));
  if (mlirAttributeIsNull(m))
    return zt_make_status(ZT_STATUS_INTERNAL, "Xe shuffles: no gpu shuffle mode %s", kModes[mode]);
  MlirType rt = mlirValueGetType(mlirOperationGetResult(op, 0));
  MlirType et = mlirTypeIsAVector(rt) ? mlirShapedTypeGetElementType(rt) : rt;
  MlirType i32 = mlirIntegerTypeGet(ctx, 32);
  MlirValue args[3] = {element(ctx, op, mlirOperationGetOperand(op, 0)),
                       constant(ctx, op, i32, mlirIntegerAttrGetValueInt(attr(op, key))),
                       constant(ctx, op, i32, subgroup_lanes(op))};
  MlirType res[2] = {et, mlirIntegerTypeGet(ctx, 1)};
  MlirNamedAttribute mode_attr = named(ctx, "mode", m);
  MlirOperation sh = make("gpu.shuffle", mlirOperationGetLocation(op), 3, args, 2, res, 1,
                          &mode_attr);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(op), op, sh);
  replace(op, widen(op, mlirOperationGetResult(sh, 0), rt));
  return NULL;
}

// A region of one block holding `ops` (already created) and an scf.yield of
// `yielded` (n 0 or 1).
static MlirRegion region_of(MlirLocation loc, MlirOperation* ops, int nops, MlirValue* yielded,
                            int n) {
  MlirRegion r = mlirRegionCreate();
  MlirBlock b = mlirBlockCreate(0, NULL, NULL);
  mlirRegionAppendOwnedBlock(r, b);
  for (int i = 0; i < nops; ++i) mlirBlockAppendOwnedOperation(b, ops[i]);
  mlirBlockAppendOwnedOperation(b, make("scf.yield", loc, n, yielded, 0, NULL, 0, NULL));
  return r;
}

static void rewrite_slm(MlirContext ctx, MlirOperation op, int kind) {
  MlirLocation loc = mlirOperationGetLocation(op);
  intptr_t base = kind == 2 ? 1 : 0;
  MlirValue mem = mlirOperationGetOperand(op, base);
  MlirValue off = element(ctx, op, mlirOperationGetOperand(op, base + 1));
  MlirValue mask = element(ctx, op, mlirOperationGetOperand(op, base + 2));
  MlirType et = mlirShapedTypeGetElementType(mlirValueGetType(mem));
  if (kind == 2) {
    MlirValue val = element(ctx, op, mlirOperationGetOperand(op, 0));
    MlirValue sops[3] = {val, mem, off};
    MlirOperation store = make("memref.store", loc, 3, sops, 0, NULL, 0, NULL);
    MlirRegion regions[2] = {region_of(loc, &store, 1, NULL, 0), mlirRegionCreate()};
    MlirOperationState st = mlirOperationStateGet(mlirStringRefCreateFromCString("scf.if"), loc);
    mlirOperationStateAddOperands(&st, 1, &mask);
    mlirOperationStateAddOwnedRegions(&st, 2, regions);
    mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(op), op, mlirOperationCreate(&st));
    mlirOperationDestroy(op);
    return;
  }
  MlirValue lops[2] = {mem, off};
  MlirOperation load = make("memref.load", loc, 2, lops, 1, &et, 0, NULL);
  MlirValue loaded = mlirOperationGetResult(load, 0);
  MlirAttribute z = mlirTypeIsAFloat(et) ? mlirFloatAttrDoubleGet(ctx, et, 0.0)
                                         : mlirIntegerAttrGet(et, 0);
  MlirNamedAttribute zv = named(ctx, "value", z);
  MlirOperation zero = make("arith.constant", loc, 0, NULL, 1, &et, 1, &zv);
  MlirValue zval = mlirOperationGetResult(zero, 0);
  MlirRegion regions[2] = {region_of(loc, &load, 1, &loaded, 1),
                           region_of(loc, &zero, 1, &zval, 1)};
  MlirOperationState st = mlirOperationStateGet(mlirStringRefCreateFromCString("scf.if"), loc);
  mlirOperationStateAddOperands(&st, 1, &mask);
  mlirOperationStateAddResults(&st, 1, &et);
  mlirOperationStateAddOwnedRegions(&st, 2, regions);
  MlirOperation iff = mlirOperationCreate(&st);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(op), op, iff);
  replace(op, widen(op, mlirOperationGetResult(iff, 0),
                    mlirValueGetType(mlirOperationGetResult(op, 0))));
}

zt_status_t xe_lane_moves(MlirContext ctx, MlirModule m, bool* out_done) {
  *out_done = false;
  // The SLM rewrite makes scf.if/scf.yield and memref ops: their dialects
  // must be loaded first. An op made while its dialect is not loaded gets an
  // unregistered name that loading the dialect later frees (valgrind: a
  // kernel without loops at 8 lanes, its module then crashed when destroyed
  // or in the next pass).
  mlirContextGetOrLoadDialect(ctx, mlirStringRefCreateFromCString("scf"));
  mlirContextGetOrLoadDialect(ctx, mlirStringRefCreateFromCString("memref"));
  moves_t mv = {0};
  mlirOperationWalk(mlirModuleGetOperation(m), collect_cb, &mv, MlirWalkPreOrder);
  if (mv.oom) {
    free(mv.ops);
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe lane moves");
  }
  if (mv.refuse) {
    free(mv.ops);
    return NULL;
  }
  zt_status_t s = NULL;
  for (size_t i = 0; i < mv.n && !s; ++i) {
    int kind = slm_kind(mv.ops[i]);
    if (kind) rewrite_slm(ctx, mv.ops[i], kind);
    else s = rewrite_shuffle(ctx, mv.ops[i]);
  }
  free(mv.ops);
  if (!s) *out_done = true;
  return s;
}
