// Internal to libzetile_compiler: the pool of MLIR contexts, the locks that
// remain, and the diagnostics each compile collects.
#ifndef ZETILE_JIT_COMPILER_INTERNAL_H_
#define ZETILE_JIT_COMPILER_INTERNAL_H_

#include <llvm-c/Types.h>
#include <mlir-c/IR.h>
#include <mlir-c/Pass.h>

#include "compiler_api.h"
#include "zetile/status.h"

// Generated at configure time (CMakeLists.txt, libzetile_compiler section).
extern const unsigned char zt_tile_dialect_text[];
extern const unsigned long zt_tile_dialect_size;
extern const char zt_compiler_source_hash[];

/// Compiles hold this lock shared and run in parallel; MLIR ExecutionEngine
/// loads and unloads (jit/compiler_cpu_jit.c) hold it exclusively (they
/// change the environment, which compiles read).
void zt_compiler_lock(void);
void zt_compiler_unlock(void);  // either kind
/// Shared: compiles and object loads (they read the environment). Not
/// recursive: a thread holding it must not take it again.
void zt_compiler_lock_shared(void);

/// What compiles leave for later ones in the same context
/// (jit/compiler_context_cache.c): parsed pass managers, kept objects.
typedef struct zt_context_cache_s zt_context_cache_t;

/// A context of the pool (jit/compiler.c): all dialects, LLVM translations
/// and the tile dialect (whose IRDL module `dialect` must outlive it), and
/// its cache (NULL if there was no memory for one; destroyed before it).
typedef struct zt_mlir_context_s {
  MlirContext ctx;
  MlirModule dialect;
  zt_context_cache_t* cache;
} zt_mlir_context_t;

/// A cache for ctx (NULL when out of memory: nothing is kept then), and its
/// release: destroys what it kept (before the context itself goes).
zt_context_cache_t* zt_context_cache_create(MlirContext ctx);
void zt_context_cache_release(zt_context_cache_t* c);
/// A compile binds its context's cache while it holds the context, and
/// unbinds it before giving the context back; the stages find it by their
/// context (a context is used by one thread at a time). NULL: a no-op.
void zt_context_cache_bind(zt_context_cache_t* c);
void zt_context_cache_unbind(zt_context_cache_t* c);
/// A pass manager kept for exactly this pipeline text in ctx, taken out of
/// the cache (NULL if none, or ctx's cache is not bound); give it back
/// with zt_context_cache_keep_pm after a run that succeeded.
MlirPassManager zt_context_cache_take_pm(MlirContext ctx, const char* pipeline);
/// Keeps pm (parsed from `pipeline`) for a later run in ctx; false (pm is
/// the caller's to destroy) when ctx's cache is not bound.
bool zt_context_cache_keep_pm(MlirContext ctx, const char* pipeline, MlirPassManager pm);

/// Takes a context for this thread's exclusive use (an idle one, or a new
/// one); give it back with zt_compiler_context_release. Thread-safe.
zt_status_t zt_compiler_context_acquire(zt_mlir_context_t* out);
void zt_compiler_context_release(zt_mlir_context_t c);

/// The sum of the stage times recorded so far by this thread's compile.
double zt_timing_recorded_ms(void);
/// Frees this thread's diagnostic and timing buffers (end of a compile).
void zt_compile_thread_release(void);

/// Diagnostics: the handler attached to the context appends every message
/// (as `file:line:col: error: msg`) to one buffer; zt_mlir_diag_clear starts
/// a new collection and zt_mlir_diag_status makes a status of `code` whose
/// message is `what` followed by the collected text.
void zt_mlir_diag_attach(MlirContext ctx);
void zt_mlir_diag_clear(void);
zt_status_t zt_mlir_diag_status(zt_status_code_t code, const char* what);

/// CPU JIT (jit/compiler_cpu_jit.c).
zt_status_t zt_cpu_jit_load(const char* llvm_mlir, size_t size,
                            const char* kernel_name, void** out_fn,
                            void** out_engine);
void zt_cpu_jit_unload(void* engine);
/// The symbols CPU kernels call into the runtime: lowering/cpu/cpu_helpers.h.

/// CPU machine code in the artifact (jit/compiler_cpu_object.c).
zt_status_t zt_cpu_object_load(const void* obj, size_t size, const char* host,
                               size_t host_size, const char* kernel_name, void** out_fn,
                               void** out_engine);
void zt_cpu_object_unload(void* engine);
/// Loads glibc's libmvec (globally, once per process: kernels' vector math
/// calls resolve in it); false when it is missing. Thread-safe
/// (jit/compiler_cpu_vecmath.c).
bool zt_cpu_vector_math_init(void);
/// Marks the module's scalar math calls (llvm.exp.f32, ...) with their
/// libmvec variants for the host, before optimization, so that LLVM's
/// vectorizers call those; returns the number of calls marked.
int zt_cpu_vector_math_annotate(LLVMModuleRef mod);

#endif  // ZETILE_JIT_COMPILER_INTERNAL_H_
