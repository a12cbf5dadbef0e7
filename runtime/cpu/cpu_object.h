// Cached CPU kernels' machine code loaded by libzetile itself (elf_load.c),
// without libzetile_compiler: what ZETILE_CPU_LOADER chooses between.
#ifndef ZETILE_RUNTIME_CPU_CPU_OBJECT_H_
#define ZETILE_RUNTIME_CPU_CPU_OBJECT_H_

#include <stddef.h>

#include "cpu/elf_load.h"

typedef enum zt_cpu_loader_e {
  ZT_CPU_LOADER_AUTO,  // our loader, ORC when it declines (the default)
  ZT_CPU_LOADER_OWN,   // our loader only: a decline is the load's error
  ZT_CPU_LOADER_ORC,   // libzetile_compiler's ORC link only (as before)
} zt_cpu_loader_t;

/// ZETILE_CPU_LOADER=own|orc (anything else: auto). ZETILE_JITDUMP=1 means
/// ORC: perf's jitdump comes from the compiler's JIT listener.
zt_cpu_loader_t zt_cpu_loader_mode(void);

/// Loads an artifact's "obj" section if its "obj_host" names this CPU (the
/// CPUID fingerprint the compiler appends, base/cpu_fingerprint.h);
/// imports resolve to the runtime's helpers (lowering/cpu/cpu_helpers.h),
/// then the process's symbols, then libm and libmvec. Errors as
/// zt_elf_image_load, and ZT_STATUS_UNSUPPORTED for another CPU's code.
zt_status_t zt_cpu_object_load_own(const void* obj, size_t obj_size, const char* host,
                                   size_t host_size, const char* kernel,
                                   zt_elf_image_t** out_image, void** out_fn);

#endif  // ZETILE_RUNTIME_CPU_CPU_OBJECT_H_
