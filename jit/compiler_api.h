// The interface between libzetile and libzetile_compiler, which libzetile
// loads with dlopen (jit/compiler_loader.c). One versioned table of function
// pointers, in the manner of ggml's backend structs: a new entry goes at the
// end and bumps ZT_COMPILER_API_VERSION.
#ifndef ZETILE_JIT_COMPILER_API_H_
#define ZETILE_JIT_COMPILER_API_H_

#include <setjmp.h>
#include <stdatomic.h>
#include <stddef.h>

#include "zetile/compiler.h"
#include "zetile/status.h"

#define ZT_COMPILER_API_VERSION 2

typedef struct zt_compiler_api_s {
  int api_version;
  /// Version of the compiler: zetile version + MLIR version + a hash of the
  /// dialect and lowering sources; part of every cache key.
  const char* (*version)(void);
  /// Compiles tile IR into a new artifact (see zt_compile).
  zt_status_t (*compile)(const char* tile_ir, size_t size,
                         const zt_compile_options_t* options,
                         zt_artifact_t** out_artifact);
  /// CPU target: JIT-compiles an artifact's "llvm" section and returns the
  /// kernel's function pointer. The kernel's C signature is its arguments
  /// (pointers as uint64_t; i1/i8/i16/i32/i64 as int8_t..int64_t; f32 float;
  /// f64 double; f16/bf16 as uint16_t bits) followed by six int32_t:
  /// program id x, y, z and number of programs x, y, z, and one hidden
  /// `zt_cpu_program_ctx_t*` (below; NULL allowed, see there).
  /// *out_engine keeps the code alive until cpu_unload.
  zt_status_t (*cpu_load)(const char* llvm_mlir, size_t size,
                          const char* kernel_name, void** out_fn,
                          void** out_engine);
  void (*cpu_unload)(void* engine);
  /// CPU target, version 2: links an artifact's "obj" section (machine code
  /// for the CPU named in its "obj_host" section) without recompiling it.
  /// ZT_STATUS_UNSUPPORTED when the object was built for another CPU: the
  /// caller then loads the "llvm" section with cpu_load. The engine is
  /// released with cpu_unload_object.
  zt_status_t (*cpu_load_object)(const void* obj, size_t size, const char* host,
                                 size_t host_size, const char* kernel_name, void** out_fn,
                                 void** out_engine);
  void (*cpu_unload_object)(void* engine);
} zt_compiler_api_t;

/// The error slot of one CPU launch, shared by the threads running it.
typedef struct zt_cpu_launch_error_s {
  atomic_int failed;  ///< 0; the first failing assertion sets 1 and fills message
  char message[1024];  ///< "file:line:col: program (x, y, z) ...: Assertion `m` failed"
  int out_of_bounds;   ///< set with `failed` by a failed bounds check (not an assertion)
} zt_cpu_launch_error_t;

/// The CPU kernels' hidden last argument: per calling thread, set up by the
/// runtime (runtime/cpu/cpu_backend.c) around each program. A kernel uses
/// it only when a tile.assert fails: the helper (lowering/cpu/cpu_helpers.c)
/// records the failure in *error (first one wins) and longjmps to `exit`,
/// ending that program; the runtime then starts no more programs and the
/// launch returns ZT_STATUS_DEVICE_ASSERT with the message. Kernels leave
/// no state behind but heap-allocated tensor buffers (kernels with more
/// than 256 KiB of them), which leak on that path. With a NULL context (a
/// kernel called directly, as tests do) failed assertions are ignored.
typedef struct zt_cpu_program_ctx_s {
  zt_cpu_launch_error_t* error;
  jmp_buf exit;  ///< setjmp'ed by the caller before each program
  /// Kernels compiled with bounds checks (tile attribute zt.bounds_check)
  /// check each access against these: per kernel argument, the buffer's
  /// address and size in bytes (size 0: not a buffer). NULL: no checks.
  const uint64_t (*bounds)[2];
  int32_t num_bounds;
} zt_cpu_program_ctx_t;

/// Exported by libzetile_compiler.
typedef const zt_compiler_api_t* (*zt_compiler_get_api_fn)(void);
#define ZT_COMPILER_GET_API_SYMBOL "zt_compiler_get_api"

/// In libzetile: the loaded compiler, loading it on first call.
zt_status_t zt_compiler_load(const zt_compiler_api_t** out_api);

#endif  // ZETILE_JIT_COMPILER_API_H_
