// CPU target: vector math through glibc's libmvec (issue 16).
//
// Why: LLVM's loop vectorizer turns `exp` on each element into
// llvm.exp.v8f32, which code generation then splits back into one scalar
// expf call per element (softmax spent its time there), and its cost model,
// knowing that, often keeps such loops scalar. LLVM maps math calls to a
// vector library through the `vector-function-abi-variant` attribute of
// each call (what its -vector-library option fills in; that option is not
// reachable through the C API: LLVMRunPasses's library info ignores it in
// LLVM 22, checked). So before optimization every call of a scalar math
// intrinsic gets that attribute naming libmvec's variants for the host's
// vector widths, declared in the module; the vectorizers then cost and emit
// calls such as _ZGVdN8v_expf. libmvec follows the x86-64 vector function
// ABI; glibc documents its functions to within 4 ulp (the scalar ones about
// 1 ulp).
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "compiler_internal.h"

static bool g_mvec;
static pthread_once_t g_mvec_once = PTHREAD_ONCE_INIT;

static void mvec_init(void) { g_mvec = dlopen("libmvec.so.1", RTLD_NOW | RTLD_GLOBAL) != NULL; }

bool zt_cpu_vector_math_init(void) {
  pthread_once(&g_mvec_once, mvec_init);  // compiles and loads call it from any thread
  return g_mvec;
}

// LLVM intrinsic name suffix -> libmvec base name (f32 adds "f"); `args`
// is the number of vector operands ("v" or "vv" in the mangled name).
static const struct {
  const char* intrinsic;
  const char* fn;
  int args;
} k_math[] = {
    {"exp", "exp", 1},     {"exp2", "exp2", 1},   {"exp10", "exp10", 1},
    {"log", "log", 1},     {"log2", "log2", 1},   {"log10", "log10", 1},
    {"sin", "sin", 1},     {"cos", "cos", 1},     {"tan", "tan", 1},
    {"sinh", "sinh", 1},   {"cosh", "cosh", 1},   {"tanh", "tanh", 1},
    {"asin", "asin", 1},   {"acos", "acos", 1},   {"atan", "atan", 1},
    {"pow", "pow", 2},     {"atan2", "atan2", 2},
};

// One variant per vector register width the host has: (ISA letter, bits).
static int host_variants(char isa[3], int bits[3]) {
  char* features = LLVMGetHostCPUFeatures();
  int n = 0;
  isa[n] = 'b', bits[n++] = 128;
  if (strstr(features, "+avx2")) isa[n] = 'd', bits[n++] = 256;
  if (strstr(features, "+avx512f")) isa[n] = 'e', bits[n++] = 512;
  LLVMDisposeMessage(features);
  return n;
}

// `fn` is a declaration of llvm.<op>.f32/.f64 in k_math: declares its
// vector variants, writes the attribute value to attr and appends the
// declarations to used[*nused].
static bool variants_of(LLVMModuleRef mod, LLVMValueRef fn, char* attr, size_t cap,
                        LLVMValueRef* used, int* nused) {
  size_t len;
  const char* name = LLVMGetValueName2(fn, &len);
  if (len < 9 || strncmp(name, "llvm.", 5) != 0) return false;
  int width = 0;
  if (len > 4 && !strcmp(name + len - 4, ".f32")) width = 32;
  if (len > 4 && !strcmp(name + len - 4, ".f64")) width = 64;
  if (!width) return false;
  int k = -1;
  for (size_t i = 0; i < sizeof k_math / sizeof k_math[0] && k < 0; ++i)
    if (strlen(k_math[i].intrinsic) == len - 9 &&
        !strncmp(name + 5, k_math[i].intrinsic, len - 9))
      k = (int)i;
  if (k < 0) return false;
  char isa[3];
  int bits[3];
  int nv = host_variants(isa, bits);
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMTypeRef et = width == 32 ? LLVMFloatTypeInContext(ctx) : LLVMDoubleTypeInContext(ctx);
  const char* params = k_math[k].args == 2 ? "vv" : "v";
  size_t at = 0;
  attr[0] = 0;
  for (int v = 0; v < nv; ++v) {
    int lanes = bits[v] / width;
    char vname[64];
    snprintf(vname, sizeof vname, "_ZGV%cN%d%s_%s%s", isa[v], lanes, params, k_math[k].fn,
             width == 32 ? "f" : "");
    LLVMValueRef vf = LLVMGetNamedFunction(mod, vname);
    if (!vf) {
      LLVMTypeRef vt = LLVMVectorType(et, (unsigned)lanes);
      LLVMTypeRef ps[2] = {vt, vt};
      vf = LLVMAddFunction(mod, vname, LLVMFunctionType(vt, ps, (unsigned)k_math[k].args, 0));
      used[(*nused)++] = vf;
    }
    int w = snprintf(attr + at, cap - at, "%s_ZGV_LLVM_N%d%s_%.*s(%s)", v ? "," : "", lanes,
                     params, (int)len, name, vname);
    if (w < 0 || (size_t)w >= cap - at) return false;
    at += (size_t)w;
  }
  return nv > 0;
}

int zt_cpu_vector_math_annotate(LLVMModuleRef mod) {
  if (!zt_cpu_vector_math_init()) return 0;
  char* triple = LLVMGetDefaultTargetTriple();
  bool x86 = strncmp(triple, "x86_64", 6) == 0;
  LLVMDisposeMessage(triple);
  // A module that has its own llvm.compiler.used is left alone (ours never
  // does: the list below would have to be merged).
  if (!x86 || LLVMGetNamedGlobal(mod, "llvm.compiler.used")) return 0;
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMValueRef used[64];
  int nused = 0, calls = 0;
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
    char attr[512];
    if (!LLVMIsDeclaration(f) || nused + 3 > 64 ||
        !variants_of(mod, f, attr, sizeof attr, used, &nused))
      continue;
    static const char key[] = "vector-function-abi-variant";
    LLVMAttributeRef a =
        LLVMCreateStringAttribute(ctx, key, sizeof key - 1, attr, (unsigned)strlen(attr));
    for (LLVMUseRef u = LLVMGetFirstUse(f); u; u = LLVMGetNextUse(u)) {
      LLVMValueRef call = LLVMGetUser(u);
      if (LLVMIsACallInst(call) && LLVMGetCalledValue(call) == f) {
        LLVMAddCallSiteAttribute(call, LLVMAttributeFunctionIndex, a);
        ++calls;
      }
    }
  }
  if (nused) {
    // Keeps the declarations alive until the vectorizers have used them.
    LLVMTypeRef ptr = LLVMPointerTypeInContext(ctx, 0);
    LLVMValueRef arr = LLVMConstArray2(ptr, used, (uint64_t)nused);
    LLVMValueRef g = LLVMAddGlobal(mod, LLVMTypeOf(arr), "llvm.compiler.used");
    LLVMSetInitializer(g, arr);
    LLVMSetLinkage(g, LLVMAppendingLinkage);
    LLVMSetSection(g, "llvm.metadata");
  }
  return calls;
}
