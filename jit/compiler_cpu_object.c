// CPU target: machine code kept in the artifact.
//
// Why: a CPU artifact used to hold only the LLVM-dialect text, and every new
// process re-ran translation, LLVM -O3 and code generation on it when it
// loaded the kernel (65-145 ms a kernel: 50 cached kernels took 3.5-3.9 s to
// become ready). Now the compile emits an object file for the host CPU
// ("obj", with the host it was built for in "obj_host"), and loading links
// that object with ORC (LLVM's C API): no optimization, no code generation.
// An object built for another CPU (a cache shared between machines) is not
// used: the loader reports it and the runtime falls back to the LLVM text.
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <mlir-c/Target/LLVMIR.h>

#include "base/cpu_fingerprint.h"
#include "compiler_internal.h"
#include "cpu/cpu_helpers.h"
#include "lowering.h"

static zt_status_t llvm_error(LLVMErrorRef e, const char* what) {
  char* msg = LLVMGetErrorMessage(e);  // consumes e
  zt_status_t s = zt_make_status(ZT_STATUS_COMPILE_ERROR, "%s: %s", what, msg ? msg : "?");
  LLVMDisposeErrorMessage(msg);
  return s;
}

// Compiles (which emit objects) run on several threads at once, and loads
// beside them: the one-time set-up below runs once.
static pthread_once_t g_native_once = PTHREAD_ONCE_INIT;

static void native_init(void) {
  LLVMInitializeNativeTarget();
  LLVMInitializeNativeAsmPrinter();
}

static void init_native_target(void) { pthread_once(&g_native_once, native_init); }

// "cpu=<name>;features=<+a,-b,...>;cpuid=<hash>": what the object was
// generated for.
// The host does not change within a process: built once, not on every
// kernel load. NULL if out of memory.
static char* g_host_id;
static pthread_once_t g_host_once = PTHREAD_ONCE_INIT;

static void host_init(void) {
  char* cpu = LLVMGetHostCPUName();
  char* features = LLVMGetHostCPUFeatures();
  // The CPUID fingerprint lets libzetile's own loader (runtime/cpu/elf_load.c)
  // check the host without LLVM; LLVM's name and features keep this path's.
  const char* cpuid = zt_cpu_fingerprint();
  size_t n = strlen(cpu) + strlen(features) + strlen(cpuid) + 32;
  g_host_id = malloc(n);
  if (g_host_id) snprintf(g_host_id, n, "cpu=%s;features=%s;%s", cpu, features, cpuid);
  LLVMDisposeMessage(cpu);
  LLVMDisposeMessage(features);
}

static const char* host_identity(void) {
  pthread_once(&g_host_once, host_init);
  return g_host_id;
}

// Object loads and unloads are serialized among themselves (ORC instances
// are independent, but one lock keeps this path as it was measured), not
// against compiles: a launch need not wait for another thread's compile.
// Loads also hold the compiler lock shared (jit/compiler.c): an
// ExecutionEngine load sets JITDUMPDIR, and a load reads the environment.
static pthread_mutex_t g_object_lock = PTHREAD_MUTEX_INITIALIZER;

// LLVM's x86 tuning prefers 256-bit vectors on AVX-512 CPUs ("prefer-256-bit":
// older server parts lowered their clock for 512-bit code), so its
// vectorizers used ymm registers and split our vector<16xf32> ops in two.
// Tile kernels are long runs of vector arithmetic, where twice the lanes per
// instruction pays: fused softmax 4096x781 12.9 -> 6.2 ms, layer norm
// 2048x1531 5.7 -> 3.4 ms (one thread, bench/cpu_kernels.py). The width is
// ZETILE_CPU_VECTOR_BITS when set (part of the compile key,
// jit/compile_cached.c; e.g. 256 to compare), else 512 where the host has
// AVX-512F, else LLVM's own choice.
static void prefer_vector_width(LLVMModuleRef mod) {
  const char* w = getenv("ZETILE_CPU_VECTOR_BITS");
  if (!w || !*w) {
    char* features = LLVMGetHostCPUFeatures();
    bool avx512 = strstr(features, "+avx512f") != NULL;
    LLVMDisposeMessage(features);
    if (!avx512) return;
    w = "512";
  }
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  static const char key[] = "prefer-vector-width";
  LLVMAttributeRef a =
      LLVMCreateStringAttribute(ctx, key, sizeof key - 1, w, (unsigned)strlen(w));
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
    if (!LLVMIsDeclaration(f)) LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, a);
}

zt_status_t zt_cpu_object_emit(MlirModule m, zt_artifact_t* artifact) {
  init_native_target();
  char* triple = LLVMGetDefaultTargetTriple();
  char* cpu = LLVMGetHostCPUName();
  char* features = LLVMGetHostCPUFeatures();
  const char* host = host_identity();
  LLVMContextRef llctx = LLVMContextCreate();
  LLVMModuleRef mod = NULL;
  LLVMTargetMachineRef tm = NULL;
  LLVMMemoryBufferRef obj = NULL;
  zt_status_t s = NULL;
  char* err = NULL;
  LLVMTargetRef target;
  double t0;  // stage timings (the artifact's "timings" section)
  if (!host) {
    s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "host identity");
    goto cleanup;
  }
  if (LLVMGetTargetFromTriple(triple, &target, &err)) {
    s = zt_make_status(ZT_STATUS_COMPILE_ERROR, "no LLVM target for %s: %s", triple, err);
    goto cleanup;
  }
  // PIC: the object is linked wherever ORC maps it in a later process.
  tm = LLVMCreateTargetMachine(target, triple, cpu, features, LLVMCodeGenLevelAggressive,
                               LLVMRelocPIC, LLVMCodeModelDefault);
  if (!tm) {
    s = zt_make_status(ZT_STATUS_COMPILE_ERROR, "no target machine for %s", cpu);
    goto cleanup;
  }
  t0 = zt_timing_now_ms();
  mod = mlirTranslateModuleToLLVMIR(mlirModuleGetOperation(m), llctx);
  zt_timing_record("CPU translate to LLVM IR", zt_timing_now_ms() - t0);
  if (!mod) {
    s = zt_mlir_diag_status(ZT_STATUS_COMPILE_ERROR, "translation of the CPU kernel to LLVM IR");
    goto cleanup;
  }
  LLVMSetTarget(mod, triple);
  LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(mod, dl);
  LLVMDisposeTargetData(dl);
  zt_cpu_vector_math_annotate(mod);  // vector exp, log, ... -> libmvec
  prefer_vector_width(mod);
  // The same optimization MLIR's ExecutionEngine ran at load (O3 for the host).
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  t0 = zt_timing_now_ms();
  LLVMErrorRef e = LLVMRunPasses(mod, "default<O3>", tm, po);
  zt_timing_record("CPU LLVM -O3", zt_timing_now_ms() - t0);
  LLVMDisposePassBuilderOptions(po);
  if (e) {
    s = llvm_error(e, "LLVM -O3 on the CPU kernel");
    goto cleanup;
  }
  t0 = zt_timing_now_ms();
  LLVMBool failed = LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &err, &obj);
  zt_timing_record("CPU machine code", zt_timing_now_ms() - t0);
  if (failed) {
    s = zt_make_status(ZT_STATUS_COMPILE_ERROR, "code generation for %s: %s", cpu, err);
    goto cleanup;
  }
  s = zt_artifact_set(artifact, "obj", LLVMGetBufferStart(obj), LLVMGetBufferSize(obj));
  if (!s) s = zt_artifact_set(artifact, "obj_host", host, strlen(host));
cleanup:
  if (err) LLVMDisposeMessage(err);
  if (obj) LLVMDisposeMemoryBuffer(obj);
  if (mod) LLVMDisposeModule(mod);
  if (tm) LLVMDisposeTargetMachine(tm);
  LLVMContextDispose(llctx);
  LLVMDisposeMessage(triple);
  LLVMDisposeMessage(cpu);
  LLVMDisposeMessage(features);
  return s;
}

static zt_status_t define_runtime_symbols(LLVMOrcLLJITRef jit, LLVMOrcJITDylibRef jd) {
  size_t n = zt_cpu_runtime_symbol_count();
  LLVMOrcCSymbolMapPair* pairs = calloc(n, sizeof *pairs);
  if (!pairs) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "runtime symbols");
  for (size_t i = 0; i < n; ++i) {
    void* fn = NULL;
    const char* name = zt_cpu_runtime_symbol(i, &fn);
    pairs[i].Name = LLVMOrcLLJITMangleAndIntern(jit, name);
    pairs[i].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)fn;
    pairs[i].Sym.Flags.GenericFlags =
        LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
  }
  LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(pairs, n);  // takes the names
  free(pairs);
  LLVMErrorRef e = LLVMOrcJITDylibDefine(jd, mu);
  return e ? llvm_error(e, "defining the CPU runtime's symbols") : NULL;
}

static zt_status_t load_locked(const void* obj, size_t size, const char* host, size_t host_size,
                               const char* name, void** out_fn, void** out_engine) {
  // perf's jitdump (ZETILE_JITDUMP=1) comes from the listener MLIR's
  // ExecutionEngine attaches: profiling runs load the LLVM text through it.
  const char* dump = getenv("ZETILE_JITDUMP");
  if (dump && dump[0] == '1')
    return zt_make_status(ZT_STATUS_UNSUPPORTED, "ZETILE_JITDUMP=1 loads the LLVM text");
  init_native_target();
  zt_cpu_vector_math_init();  // the object may call libmvec
  const char* here = host_identity();
  if (!here) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "host identity");
  bool same = strlen(here) == host_size && memcmp(here, host, host_size) == 0;
  if (!same)
    return zt_make_status(ZT_STATUS_UNSUPPORTED,
                          "the kernel's machine code was built for another CPU");
  LLVMOrcLLJITRef jit = NULL;
  LLVMErrorRef e = LLVMOrcCreateLLJIT(&jit, NULL);
  if (e) return llvm_error(e, "creating an ORC JIT");
  LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(jit);
  zt_status_t s = define_runtime_symbols(jit, jd);
  // Everything else (libm's expf, memcpy, ...) resolves in this process.
  LLVMOrcDefinitionGeneratorRef gen = NULL;
  if (!s) {
    e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
        &gen, LLVMOrcLLJITGetGlobalPrefix(jit), NULL, NULL);
    if (e)
      s = llvm_error(e, "process symbol generator");
    else
      LLVMOrcJITDylibAddGenerator(jd, gen);
  }
  if (!s) {
    LLVMMemoryBufferRef buf =
        LLVMCreateMemoryBufferWithMemoryRangeCopy(obj, size, "zetile-cpu-kernel");
    e = LLVMOrcLLJITAddObjectFile(jit, jd, buf);  // takes buf
    if (e) s = llvm_error(e, "linking the kernel's machine code");
  }
  LLVMOrcExecutorAddress addr = 0;
  if (!s) {
    e = LLVMOrcLLJITLookup(jit, &addr, name);
    if (e) s = llvm_error(e, "looking up the kernel");
  }
  if (s) {
    LLVMErrorRef d = LLVMOrcDisposeLLJIT(jit);
    if (d) LLVMConsumeError(d);
    return zt_status_annotate(s, "kernel %s", name);
  }
  *out_fn = (void*)(uintptr_t)addr;
  *out_engine = jit;
  return NULL;
}

zt_status_t zt_cpu_object_load(const void* obj, size_t size, const char* host,
                               size_t host_size, const char* kernel_name, void** out_fn,
                               void** out_engine) {
  *out_fn = NULL;
  *out_engine = NULL;
  if (!obj || !size || !host || !kernel_name)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "cpu_load_object: NULL argument");
  zt_compiler_lock_shared();  // not while an ExecutionEngine load changes the environment
  pthread_mutex_lock(&g_object_lock);
  zt_status_t s = load_locked(obj, size, host, host_size, kernel_name, out_fn, out_engine);
  pthread_mutex_unlock(&g_object_lock);
  zt_compiler_unlock();
  return s;
}

void zt_cpu_object_unload(void* engine) {
  if (!engine) return;
  pthread_mutex_lock(&g_object_lock);
  LLVMErrorRef e = LLVMOrcDisposeLLJIT((LLVMOrcLLJITRef)engine);
  if (e) LLVMConsumeError(e);
  pthread_mutex_unlock(&g_object_lock);
}
