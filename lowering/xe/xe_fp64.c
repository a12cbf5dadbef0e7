// Float64 on Intel GPUs without fp64 hardware (dg2, Gen11, Gen12LP): the
// kernel is refused by name before emission, at the first op that holds a
// double. Why: the lowerings would emit valid SPIR-V (spirv-val accepts it)
// that Intel's compiler then refuses at build time ("Double type is not
// supported on this platform"), an error naming neither the kernel's line
// nor what to change; on a real device that is a failed build at launch.
#include <stdio.h>
#include <string.h>

#include <mlir-c/BuiltinTypes.h>

#include "lowering.h"
#include "xe/xe_target.h"

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
  // loc("file":line:col) -> file:line:col
  zt_strbuf_t loc;
  zt_strbuf_init(&loc);
  mlirLocationPrint(mlirOperationGetLocation(f.found), zt_strbuf_mlir_cb, &loc);
  char where[512] = "";
  if (loc.data && loc.size > 5 && !strncmp(loc.data, "loc(\"", 5)) {
    size_t j = 0;
    for (const char* p = loc.data + 5; *p && j + 1 < sizeof where; ++p)
      if (*p != '"') where[j++] = *p;
    where[j] = 0;
    char* close = strrchr(where, ')');
    if (close) *close = 0;
  }
  zt_strbuf_deinit(&loc);
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(f.found));
  return zt_make_status(ZT_STATUS_UNSUPPORTED,
                        "%s%s%.*s: float64 values on %s (%s), which has no fp64 hardware "
                        "(Intel's compiler refuses doubles there): compute in float32",
                        where, where[0] ? ": " : "", (int)n.length, n.data, tg->name, tg->arch);
}
