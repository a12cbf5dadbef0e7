// Internal to libzetile_compiler: the process-wide MLIR context, the lock
// that serializes every use of it, and the diagnostics it collects.
#ifndef ZETILE_JIT_COMPILER_INTERNAL_H_
#define ZETILE_JIT_COMPILER_INTERNAL_H_

#include <llvm-c/Types.h>
#include <mlir-c/IR.h>

#include "compiler_api.h"
#include "zetile/status.h"

// Generated at configure time (CMakeLists.txt, libzetile_compiler section).
extern const unsigned char zt_tile_dialect_text[];
extern const unsigned long zt_tile_dialect_size;
extern const char zt_compiler_source_hash[];

/// Every compile and JIT load holds this lock: MLIR contexts are not
/// thread-safe for our use (diagnostics are collected in one place).
void zt_compiler_lock(void);
void zt_compiler_unlock(void);

/// The process's context (created on first use, with all dialects, passes,
/// LLVM translations and the tile dialect). Call with the lock held.
zt_status_t zt_compiler_context(MlirContext* out_ctx);

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
/// The symbols CPU kernels call into the runtime (f16/bf16 conversions,
/// print, assert, bounds checks): i in [0, count).
size_t zt_cpu_runtime_symbol_count(void);
const char* zt_cpu_runtime_symbol(size_t i, void** out_fn);

/// CPU machine code in the artifact (jit/compiler_cpu_object.c).
zt_status_t zt_cpu_object_load(const void* obj, size_t size, const char* host,
                               size_t host_size, const char* kernel_name, void** out_fn,
                               void** out_engine);
void zt_cpu_object_unload(void* engine);
/// Loads glibc's libmvec (globally, once per process: kernels' vector math
/// calls resolve in it); false when it is missing. Caller holds the
/// compiler lock (jit/compiler_cpu_vecmath.c).
bool zt_cpu_vector_math_init(void);
/// Marks the module's scalar math calls (llvm.exp.f32, ...) with their
/// libmvec variants for the host, before optimization, so that LLVM's
/// vectorizers call those; returns the number of calls marked.
int zt_cpu_vector_math_annotate(LLVMModuleRef mod);

#endif  // ZETILE_JIT_COMPILER_INTERNAL_H_
