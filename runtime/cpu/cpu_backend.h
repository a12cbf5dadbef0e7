// Internal entry points of the CPU backend (not part of the public API).
#ifndef ZETILE_RUNTIME_CPU_CPU_BACKEND_H_
#define ZETILE_RUNTIME_CPU_CPU_BACKEND_H_

#include "zetile/runtime.h"

/// Test hook: an executable on a CPU device that calls `fn`, a C function
/// with the CPU kernel ABI of jit/compiler_api.h, described by the kernel
/// meta text `meta_text` (see runtime/base/kernel_meta.h). Lets the thread
/// pool and libffi path be tested without the compiler.
ZT_API zt_status_t zt_cpu_executable_create_from_function(
    zt_device_t* device, const char* meta_text, void* fn,
    zt_executable_t** out_executable);

#endif  // ZETILE_RUNTIME_CPU_CPU_BACKEND_H_
