// libzetile_compiler: the entry table libzetile loads with dlopen, the pool
// of MLIR contexts (one per compile in flight), the locks that remain, and
// the compile driver that hands a parsed tile module to the lowering of the
// requested target.
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include <llvm/Config/llvm-config.h>
#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/Dialect/IRDL.h>
#include <mlir-c/RegisterEverything.h>

#include "compiler_internal.h"
#include "lowering.h"
#include "xe/xe_target.h"

// The Xe lowering lives in lowering/xe/ and may be absent from a build.
extern zt_status_t zt_lower_xe(zt_lower_ctx_t* lc) __attribute__((weak));
// The DG2 (Arc, Xe-HPG, SIMD8) lowering lives in lowering/dg2/.
extern zt_status_t zt_lower_dg2(zt_lower_ctx_t* lc) __attribute__((weak));

// Compiles run in parallel, each in a context of its own (below). What
// stays serialized, and why:
// - LLVM's SPIR-V backend (g_spirv_lock): process-wide module state;
// - MLIR's ExecutionEngine loads (zt_compiler_lock, exclusive): they set
//   JITDUMPDIR in the environment (jit/compiler_cpu_jit.c), which compiles
//   read concurrently through getenv; compiles hold g_lock shared. Writers
//   are preferred, so a stream of compiles cannot starve a load.
static pthread_rwlock_t g_lock;
static pthread_once_t g_lock_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_spirv_lock = PTHREAD_MUTEX_INITIALIZER;

static void lock_init(void) {
  pthread_rwlockattr_t a;
  pthread_rwlockattr_init(&a);
  // (a GNU extension: the library builds with _GNU_SOURCE)
  pthread_rwlockattr_setkind_np(&a, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  pthread_rwlock_init(&g_lock, &a);
  pthread_rwlockattr_destroy(&a);
}

void zt_compiler_lock(void) {
  pthread_once(&g_lock_once, lock_init);
  pthread_rwlock_wrlock(&g_lock);
}
void zt_compiler_unlock(void) { pthread_rwlock_unlock(&g_lock); }
void zt_compiler_lock_shared(void) {
  pthread_once(&g_lock_once, lock_init);
  pthread_rwlock_rdlock(&g_lock);
}
void zt_spirv_emission_lock(void) { pthread_mutex_lock(&g_spirv_lock); }
void zt_spirv_emission_unlock(void) { pthread_mutex_unlock(&g_spirv_lock); }

// Contexts: an MLIR context is used by one thread at a time, so each compile
// takes one from this pool (creating it when all are in use: ~3 ms with
// every dialect, the LLVM translations and the IRDL tile dialect) and gives
// it back after. Up to ZT_IDLE_CONTEXTS stay for reuse; more are destroyed
// (each holds its uniqued types and attributes).
#define ZT_IDLE_CONTEXTS 8
static pthread_mutex_t g_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static zt_mlir_context_t g_idle[ZT_IDLE_CONTEXTS];
static int g_num_idle;
static pthread_once_t g_passes_once = PTHREAD_ONCE_INIT;

static void passes_init(void) { mlirRegisterAllPasses(); }  // process-wide registry

static zt_status_t context_create(zt_mlir_context_t* out) {
  pthread_once(&g_passes_once, passes_init);
  MlirDialectRegistry reg = mlirDialectRegistryCreate();
  mlirRegisterAllDialects(reg);
  // MLIR's own thread pool stays off: parallelism is across compiles (one
  // thread each), and diagnostics are collected per thread
  // (jit/compiler_mlir.c), which needs every pass on the compiling thread.
  MlirContext ctx = mlirContextCreateWithRegistry(reg, false);
  mlirDialectRegistryDestroy(reg);
  mlirRegisterAllLLVMTranslations(ctx);
  zt_mlir_diag_attach(ctx);
  MlirModule m;
  // Untimed: the creation is timed as a whole ("context").
  zt_status_t s = zt_mlir_parse_untimed(ctx, (const char*)zt_tile_dialect_text,
                                        (size_t)zt_tile_dialect_size, "tile.irdl.mlir", &m);
  if (s) {
    mlirContextDestroy(ctx);
    return zt_status_annotate(s, "embedded tile dialect");
  }
  if (mlirLogicalResultIsFailure(mlirLoadIRDLDialects(m))) {
    s = zt_mlir_diag_status(ZT_STATUS_INTERNAL, "loading the tile dialect");
    mlirModuleDestroy(m);
    mlirContextDestroy(ctx);
    return s;
  }
  out->ctx = ctx;
  out->dialect = m;
  out->cache = zt_context_cache_create(ctx);
  return NULL;
}

zt_status_t zt_compiler_context_acquire(zt_mlir_context_t* out) {
  pthread_mutex_lock(&g_pool_lock);
  bool have = g_num_idle > 0;
  if (have) *out = g_idle[--g_num_idle];
  pthread_mutex_unlock(&g_pool_lock);
  return have ? NULL : context_create(out);
}

void zt_compiler_context_release(zt_mlir_context_t c) {
  if (mlirContextIsNull(c.ctx)) return;
  zt_mlir_diag_clear();
  pthread_mutex_lock(&g_pool_lock);
  bool kept = g_num_idle < ZT_IDLE_CONTEXTS;
  if (kept) g_idle[g_num_idle++] = c;
  pthread_mutex_unlock(&g_pool_lock);
  if (!kept) {
    zt_context_cache_release(c.cache);  // its pass managers live in the context
    mlirModuleDestroy(c.dialect);  // the loaded dialect refers to it: kept until here
    mlirContextDestroy(c.ctx);
  }
}

static char g_version[256];
static pthread_once_t g_version_once = PTHREAD_ONCE_INIT;

static void version_init(void) {
  XXH64_hash_t h = XXH3_64bits(zt_tile_dialect_text, zt_tile_dialect_size);
  snprintf(g_version, sizeof g_version,
           "zetile %s mlir %s dialect %016llx src %s api %d", ZT_VERSION_STRING,
           LLVM_VERSION_STRING, (unsigned long long)h, zt_compiler_source_hash,
           ZT_COMPILER_API_VERSION);
}

static const char* compiler_version(void) {
  pthread_once(&g_version_once, version_init);
  return g_version;
}

// The func.func carrying the zt.kernel attribute.
static zt_status_t find_kernel(MlirModule m, MlirOperation* out) {
  MlirBlock body = mlirModuleGetBody(m);
  MlirStringRef kattr = mlirStringRefCreateFromCString("zt.kernel");
  int found = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
    if (n.length == 9 && memcmp(n.data, "func.func", 9) == 0 &&
        !mlirAttributeIsNull(mlirOperationGetAttributeByName(op, kattr))) {
      *out = op;
      ++found;
    }
  }
  if (found != 1)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                          "tile module must hold exactly one func.func with "
                          "the zt.kernel attribute (found %d)",
                          found);
  return NULL;
}

static zt_status_t compile_locked(const char* tile_ir, size_t size,
                                  const zt_compile_options_t* options,
                                  zt_artifact_t* artifact) {
  const char* target = options->target ? options->target : "cpu";
  zt_status_t (*lower)(zt_lower_ctx_t*) = NULL;
  const xe_target_t* row = strcmp(target, "cpu") == 0 ? NULL : xe_target_find(target);
  if (row && row->lowering == XE_LOWERING_SIMD8 && xe_simd8_route() == XE_SIMD8_ROUTE_INVALID)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                          "ZETILE_DG2_LOWERING='%s' is not one of shared, shared8, shared8all "
                          "(unset: target '%s' builds through zetile's SIMD8 lowering)",
                          getenv("ZETILE_DG2_LOWERING"), target);
  // ZETILE_DG2_LOWERING=shared*: the SIMD8 rows through the shared Xe
  // lowering (issue 12's step toward one Xe lowering; opt-in while it builds
  // less than lowering/dg2: docs/ARCHITECTURE.md "dg2 through the shared
  // lowering"); xe_target_lowering_now says which.
  if (strcmp(target, "cpu") == 0) {
    lower = zt_lower_cpu;
  } else if (row && xe_target_lowering_now(row) == XE_LOWERING_XEVM && zt_lower_xe) {
    lower = zt_lower_xe;
  } else if (row && row->lowering == XE_LOWERING_XEVM) {
    return zt_make_status(ZT_STATUS_UNSUPPORTED,
                          "target '%s': this compiler was built without the "
                          "Xe lowering",
                          target);
  } else if (row && row->lowering == XE_LOWERING_SIMD8) {
    if (!zt_lower_dg2)
      return zt_make_status(ZT_STATUS_UNSUPPORTED,
                            "target '%s': this compiler was built without the "
                            "SIMD8 (dg2) lowering",
                            target);
    lower = zt_lower_dg2;
  } else if (xe_target_find(target)) {
    // A row of the target table without a lowering yet (lowering/xe/xe_target.c).
    return zt_make_status(ZT_STATUS_UNSUPPORTED, "target '%s' (%s): not built for yet: %s",
                          target, xe_target_find(target)->arch,
                          xe_target_find(target)->not_yet ? xe_target_find(target)->not_yet
                                                          : "no lowering");
  } else {
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                          "unknown target '%s' (valid targets: cpu, pvc, bmg, dg2)",
                          target);
  }
  zt_timing_reset();
  double t0 = zt_timing_now_ms();
  zt_mlir_context_t c;
  ZT_RETURN_IF_ERROR(zt_compiler_context_acquire(&c));
  zt_context_cache_bind(c.cache);
  zt_timing_record("context", zt_timing_now_ms() - t0);
  zt_status_t s = zt_artifact_set(artifact, "tile", tile_ir, size);
  MlirModule m = {NULL};
  if (!s) s = zt_mlir_parse(c.ctx, tile_ir, size, "tile IR", &m);
  zt_lower_ctx_t lc = {.ctx = c.ctx, .tile = m, .options = options,
                       .artifact = artifact};
  if (!s) s = find_kernel(m, &lc.kernel);
  if (!s) s = zt_fold_hints(lc.kernel);
  double t1 = zt_timing_now_ms(), timed = zt_timing_recorded_ms();
  if (!s) {
    s = lower(&lc);
    // What the lowering recorded (parses, pipelines, emission, its named
    // stages) and the rest: zetile's own lowering code between those.
    double total = zt_timing_now_ms() - t1;
    double own = total - (zt_timing_recorded_ms() - timed);
    zt_timing_record("lowering's own code (not itemized)", own > 0 ? own : 0);
    zt_timing_record("lower (total)", total);
  }
  double t2 = zt_timing_now_ms();
  if (!mlirModuleIsNull(m)) mlirModuleDestroy(m);
  zt_context_cache_unbind(c.cache);
  zt_compiler_context_release(c);
  zt_timing_record("release context", zt_timing_now_ms() - t2);
  zt_timing_record("compile (total)", zt_timing_now_ms() - t0);
  if (!s) {
    size_t n;
    const char* log = zt_timing_log(&n);
    s = zt_artifact_set(artifact, "timings", log, n);
  }
  return s;
}

static zt_status_t compiler_compile(const char* tile_ir, size_t size,
                                    const zt_compile_options_t* options,
                                    zt_artifact_t** out_artifact) {
  *out_artifact = NULL;
  if (!tile_ir)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "tile IR is NULL");
  zt_compile_options_t defaults = {0};
  if (!options) options = &defaults;
  zt_artifact_t* a;
  ZT_RETURN_IF_ERROR(zt_artifact_create(&a));
  zt_compiler_lock_shared();
  zt_status_t s = compile_locked(tile_ir, size, options, a);
  zt_compiler_unlock();
  zt_compile_thread_release();
  if (s) {
    zt_artifact_release(a);
    return s;
  }
  *out_artifact = a;
  return NULL;
}

static const zt_compiler_api_t g_api = {
    /* .api_version = */ ZT_COMPILER_API_VERSION,
    /* .version = */ compiler_version,
    /* .compile = */ compiler_compile,
    /* .cpu_load = */ zt_cpu_jit_load,
    /* .cpu_unload = */ zt_cpu_jit_unload,
    /* .cpu_load_object = */ zt_cpu_object_load,
    /* .cpu_unload_object = */ zt_cpu_object_unload,
};

ZT_API const zt_compiler_api_t* zt_compiler_get_api(void) { return &g_api; }
