// Float64 on Intel GPUs without fp64 hardware (dg2, Gen11, Gen12LP): the
// kernel is refused by name before emission, at the first op that holds a
// double. Why: the lowerings would emit valid SPIR-V (spirv-val accepts it)
// that Intel's compiler then refuses at build time ("Double type is not
// supported on this platform"), an error naming neither the kernel's line
// nor what to change; on a real device that is a failed build at launch.

#include <mlir-c/BuiltinTypes.h>

#include "xe/xe_internal.h"

static bool is_f64(MlirType t) {
  if (mlirTypeIsAShaped(t)) t = mlirShapedTypeGetElementType(t);
  return mlirTypeIsAF64(t);
}

typedef struct {
  MlirOperation found;
} find_t;

static MlirWalkResult find_f64(MlirOperation op, void* ud) {
  find_t* f = ud;
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i) {
    if (is_f64(mlirValueGetType(mlirOperationGetResult(op, i)))) {
      f->found = op;
      return MlirWalkResultInterrupt;
    }
  }
  // Block arguments: the kernel's own (a float64 scalar argument) and loops'.
  for (intptr_t r = 0; r < mlirOperationGetNumRegions(op); ++r) {
    MlirRegion reg = mlirOperationGetRegion(op, r);
    for (MlirBlock b = mlirRegionGetFirstBlock(reg); !mlirBlockIsNull(b);
         b = mlirBlockGetNextInRegion(b)) {
      for (intptr_t a = 0; a < mlirBlockGetNumArguments(b); ++a) {
        if (is_f64(mlirValueGetType(mlirBlockGetArgument(b, a)))) {
          f->found = op;
          return MlirWalkResultInterrupt;
        }
      }
    }
  }
  return MlirWalkResultAdvance;
}

zt_status_t xe_check_fp64(const struct xe_target_s* tg, MlirOperation kernel) {
  if (!tg || !tg->no_fp64) return NULL;
  find_t f = {{NULL}};
  mlirOperationWalk(kernel, find_f64, &f, MlirWalkPreOrder);
  if (mlirOperationIsNull(f.found)) return NULL;
  zt_strbuf_t where;
  zt_strbuf_init(&where);
  xe_format_loc(mlirOperationGetLocation(f.found), &where);
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(f.found));
  zt_status_t st = zt_make_status(ZT_STATUS_UNSUPPORTED,
                                  "%s: %.*s: float64 values on %s (%s), which has no fp64 "
                                  "hardware (Intel's compiler refuses doubles there): compute in "
                                  "float32",
                                  where.data ? where.data : "?", (int)n.length, n.data, tg->name,
                                  tg->arch);
  zt_strbuf_deinit(&where);
  return st;
}
