// A loader of x86-64 relocatable objects (ET_REL) of the kind LLVM emits for
// CPU kernels, in libzetile: a cached kernel's machine code becomes callable
// without loading libzetile_compiler (MLIR, LLVM: a 42-54 ms dlopen that
// dominated a new process's first launch).
//
// It handles what those objects hold (docs/PERFORMANCE.md, "Warm start"):
// allocated PROGBITS/NOBITS sections (code, constants, data), relocations
// R_X86_64_PC32 and R_X86_64_PLT32 with addends, imports resolved by the
// caller. Anything else (another relocation type, TLS, constructors, a
// symbol the caller cannot resolve, a malformed file) is refused with a
// status, never a crash: the caller then links with ORC as before.
#ifndef ZETILE_RUNTIME_CPU_ELF_LOAD_H_
#define ZETILE_RUNTIME_CPU_ELF_LOAD_H_

#include <stddef.h>

#include "zetile/status.h"

typedef struct zt_elf_image_s zt_elf_image_t;

/// Returns the address of the import `name`, or NULL if unknown.
typedef void* (*zt_elf_resolve_fn)(const char* name, void* ctx);

/// Maps the object's allocated sections into fresh memory, resolves its
/// imports through `resolve`, applies its relocations and makes the code
/// read-execute and the constants read-only (never writable and executable
/// at once). On success *out_entry is the address of the global function
/// `entry` and *out_image owns the memory (zt_elf_image_release). The bytes
/// in `obj` are only read (any alignment) and may be freed afterwards.
/// Errors: ZT_STATUS_UNSUPPORTED for a valid object using something this
/// loader does not handle, ZT_STATUS_INVALID_ARGUMENT for a malformed one,
/// ZT_STATUS_NOT_FOUND when `entry` or an import is missing. Thread-safe.
zt_status_t zt_elf_image_load(const void* obj, size_t size, const char* entry,
                              zt_elf_resolve_fn resolve, void* ctx,
                              zt_elf_image_t** out_image, void** out_entry);

/// Unmaps the image; NULL is a no-op. Its code must not be running.
void zt_elf_image_release(zt_elf_image_t* image);

#endif  // ZETILE_RUNTIME_CPU_ELF_LOAD_H_
