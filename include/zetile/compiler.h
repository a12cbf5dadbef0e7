// zetile: compiling tile IR to target artifacts.
//
// These calls live in libzetile but the work happens in libzetile_compiler
// (MLIR and LLVM), which libzetile loads with dlopen on first use, so that a
// process launching only cached kernels never loads MLIR. Set
// ZETILE_COMPILER_LIB to load it from an explicit path.
#ifndef ZETILE_COMPILER_H_
#define ZETILE_COMPILER_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zetile/api.h"
#include "zetile/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Options that change generated code; all of them are part of cache keys.
typedef struct zt_compile_options_s {
  /// "cpu", "pvc", "bmg", "dg2" (Intel GPU targets emit SPIR-V; dg2 is
  /// Arc A-series, SIMD8). NULL means "cpu".
  const char* target;
  /// Subgroups per workgroup on Xe (Triton's num_warps); 0 lets zetile pick.
  int32_t num_warps;
  /// Xe: avoid 2D block IO and use only what old drivers offer.
  bool compat;
  /// Xe: extra IGC options recorded for the driver (e.g.
  /// "-ze-opt-large-register-file"); NULL for none.
  const char* igc_options;
} zt_compile_options_t;

/// A compiled kernel: named byte sections.
///   "tile"  the tile IR text that was compiled
///   "mlir"  zetile's lowered MLIR, before upstream's pipeline
///   "llvm"  (cpu) LLVM-dialect MLIR that the CPU backend JIT-compiles when
///           it cannot use "obj"
///   "obj"   (cpu) the kernel's machine code (an ELF object) for the CPU named
///           in "obj_host" ("cpu=NAME;features=..."), linked at load
///   "spirv" (Xe) the SPIR-V module handed to the driver
///   "meta"  kernel metadata (jit/kernel_meta.h): name, arguments, launch
typedef struct zt_artifact_s zt_artifact_t;

/// How the message of an UNAVAILABLE status from zt_compile begins when
/// LLVM 22's SPIR-V backend may hold stale state from earlier modules of
/// this process (llvm/llvm-project#160613): the same compile succeeds in a
/// fresh process. zt_compile_cached does that by itself (in a fresh
/// zetile-compile-worker); a caller of zt_compile can do the same.
#define ZT_STALE_SPIRV_BACKEND "LLVM's SPIR-V backend state in this process may be stale"

/// Compiles tile IR text. Errors carry MLIR's diagnostics with the source
/// locations written by the builder. Thread-safe (compiles are serialized).
ZT_API zt_status_t zt_compile(const char* tile_ir, size_t size,
                              const zt_compile_options_t* options,
                              zt_artifact_t** out_artifact);

/// Like zt_compile but looks in the on-disk cache first and stores what it
/// compiles; out_cache_hit (may be NULL) says whether it came from the cache.
ZT_API zt_status_t zt_compile_cached(const char* tile_ir, size_t size,
                                     const zt_compile_options_t* options,
                                     zt_artifact_t** out_artifact,
                                     bool* out_cache_hit);

/// The cache key zt_compile_cached uses (32 hex digits plus NUL).
ZT_API void zt_compile_cache_key(const char* tile_ir, size_t size,
                                 const zt_compile_options_t* options,
                                 char out_key[33]);

/// Frees an artifact; NULL is a no-op.
ZT_API void zt_artifact_release(zt_artifact_t* artifact);
/// Creates an empty artifact.
ZT_API zt_status_t zt_artifact_create(zt_artifact_t** out_artifact);
/// Copies `size` bytes into section `name`, replacing an existing one.
/// All artifact calls refuse NULL handles and outputs with INVALID_ARGUMENT.
ZT_API zt_status_t zt_artifact_set(zt_artifact_t* artifact, const char* name,
                                   const void* data, size_t size);
/// Borrows section `name` (valid until the artifact changes or is freed).
/// Returns NOT_FOUND if absent. Text sections are NUL-terminated (the NUL is
/// not counted in size).
ZT_API zt_status_t zt_artifact_get(const zt_artifact_t* artifact,
                                   const char* name, const void** out_data,
                                   size_t* out_size);
/// Number of sections and the name of section i (borrowed).
ZT_API int32_t zt_artifact_section_count(const zt_artifact_t* artifact);
ZT_API const char* zt_artifact_section_name(const zt_artifact_t* artifact,
                                            int32_t i);
/// One self-checking blob (magic, version, sections, checksum) and back.
/// The blob is malloc'ed; the caller frees it with free().
ZT_API zt_status_t zt_artifact_serialize(const zt_artifact_t* artifact,
                                         void** out_data, size_t* out_size);
ZT_API zt_status_t zt_artifact_deserialize(const void* data, size_t size,
                                           zt_artifact_t** out_artifact);

/// Version string of the compiler that is (or would be) loaded: part of
/// every cache key.
ZT_API const char* zt_compiler_version(void);
/// Whether libzetile_compiler can be loaded (loads it if not yet loaded).
ZT_API zt_status_t zt_compiler_available(void);

#ifdef __cplusplus
}
#endif
#endif  // ZETILE_COMPILER_H_
