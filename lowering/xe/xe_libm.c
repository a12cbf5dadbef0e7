// Math ops upstream cannot lower on Xe (math.erf, math.erfc): upstream's
// math-to-XeVM conversion leaves them to LLVM translation, which has no
// intrinsic for them. For a module that has them, the pipeline runs
// convert-math-to-libm after the XeVM conversions (it scalarizes vectors and
// calls erff, erf, ...), and here, once the module is LLVM dialect, those
// libm declarations are renamed to the OpenCL builtins of the same meaning
// (erff -> _Z3erff). LLVM's SPIR-V backend turns calls of OpenCL builtin
// names into OpenCL.std extended instructions (OpExtInst erf), which every
// Intel driver implements; nothing is left to link.
//
// libm's other functions that the conversion may produce for the same
// module (it converts every math op still there, e.g. expf) get the same
// renaming, so the module computes what it would have without it.
#include <stdio.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>

#include "xe/xe_internal.h"

typedef struct libm_fn_s {
  const char* libm;    // base name (f64; f32 adds "f")
  const char* opencl;  // OpenCL C builtin
  int arity;
} libm_fn_t;

static const libm_fn_t kFns[] = {
    {"acos", "acos", 1},   {"acosh", "acosh", 1}, {"asin", "asin", 1},   {"asinh", "asinh", 1},
    {"atan", "atan", 1},   {"atan2", "atan2", 2}, {"atanh", "atanh", 1}, {"cbrt", "cbrt", 1},
    {"ceil", "ceil", 1},   {"cos", "cos", 1},     {"cosh", "cosh", 1},   {"erf", "erf", 1},
    {"erfc", "erfc", 1},   {"exp", "exp", 1},     {"exp2", "exp2", 1},   {"expm1", "expm1", 1},
    {"floor", "floor", 1}, {"fma", "fma", 3},     {"log", "log", 1},     {"log10", "log10", 1},
    {"log1p", "log1p", 1}, {"log2", "log2", 1},   {"pow", "pow", 2},     {"rint", "rint", 1},
    {"round", "round", 1}, {"roundeven", "rint", 1}, {"sin", "sin", 1},  {"sinh", "sinh", 1},
    {"sqrt", "sqrt", 1},   {"tan", "tan", 1},     {"tanh", "tanh", 1},   {"trunc", "trunc", 1},
};

// The OpenCL builtin's mangled name for libm's `name`; false if not libm's.
static bool opencl_name(MlirStringRef name, char* out, size_t n) {
  for (size_t i = 0; i < sizeof kFns / sizeof kFns[0]; ++i) {
    size_t l = strlen(kFns[i].libm);
    char t;
    if (name.length == l && memcmp(name.data, kFns[i].libm, l) == 0) t = 'd';
    else if (name.length == l + 1 && memcmp(name.data, kFns[i].libm, l) == 0 &&
             name.data[l] == 'f') t = 'f';
    else continue;
    // Itanium mangling of an overloadable builtin of `arity` scalar args.
    int w = snprintf(out, n, "_Z%zu%s", strlen(kFns[i].opencl), kFns[i].opencl);
    for (int a = 0; a < kFns[i].arity && w > 0 && (size_t)w + 1 < n; ++a) out[w++] = t;
    out[w] = 0;
    return true;
  }
  return false;
}

typedef struct rename_s {
  MlirOperation funcs[64];
  int n;
} rename_t;

static MlirWalkResult find_cb(MlirOperation op, void* user) {
  rename_t* r = user;
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  // Declarations only (a kernel may be called `erf`).
  if (n.length == 9 && memcmp(n.data, "llvm.func", 9) == 0 && r->n < 64 &&
      mlirBlockIsNull(mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0)))) {
    MlirAttribute sym = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("sym_name"));
    char buf[32];
    if (!mlirAttributeIsNull(sym) && opencl_name(mlirStringAttrGetValue(sym), buf, sizeof buf))
      r->funcs[r->n++] = op;
  }
  return MlirWalkResultAdvance;
}

zt_status_t xe_libm_to_opencl(MlirModule m) {
  rename_t r = {.n = 0};
  mlirOperationWalk(mlirModuleGetOperation(m), find_cb, &r, MlirWalkPreOrder);
  for (int i = 0; i < r.n; ++i) {
    MlirOperation f = r.funcs[i];
    MlirStringRef old = mlirStringAttrGetValue(
        mlirOperationGetAttributeByName(f, mlirStringRefCreateFromCString("sym_name")));
    char oldname[32], name[32];
    snprintf(oldname, sizeof oldname, "%.*s", (int)old.length, old.data);
    opencl_name(old, name, sizeof name);
    // The uses are in the function's symbol table (the gpu.module).
    MlirOperation table = mlirOperationGetParentOperation(f);
    MlirLogicalResult ok = mlirSymbolTableReplaceAllSymbolUses(
        mlirStringRefCreateFromCString(oldname), mlirStringRefCreateFromCString(name), table);
    if (mlirLogicalResultIsFailure(ok))
      return zt_make_status(ZT_STATUS_INTERNAL, "Xe lowering: cannot rename %s to %s", oldname,
                            name);
    mlirOperationSetAttributeByName(
        f, mlirStringRefCreateFromCString("sym_name"),
        mlirStringAttrGet(mlirOperationGetContext(f), mlirStringRefCreateFromCString(name)));
  }
  return NULL;
}
