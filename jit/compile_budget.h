// A compile under a time budget (ZETILE_COMPILE_TIMEOUT): internal to
// libzetile (jit/compile_cached.c uses it).
#ifndef ZETILE_JIT_COMPILE_BUDGET_H_
#define ZETILE_JIT_COMPILE_BUDGET_H_

#include <stdbool.h>
#include <stddef.h>

#include "zetile/compiler.h"

/// Set (to "1") in a zetile-compile-worker's environment for each compile.
#define ZT_IN_COMPILE_WORKER "ZETILE_IN_COMPILE_WORKER"

/// The default budget in seconds when ZETILE_COMPILE_TIMEOUT is not set: a
/// guard against compiles that never end, above every legitimate compile
/// measured here (docs/RELIABILITY.md: up to ~250 s for an attention kernel
/// with one subgroup on pvc).
#define ZT_COMPILE_TIMEOUT_DEFAULT 600.0

/// The budget in seconds: $ZETILE_COMPILE_TIMEOUT when set (0 or "off":
/// none), else ZT_COMPILE_TIMEOUT_DEFAULT.
double zt_compile_budget_seconds(void);

/// True when $ZETILE_COMPILE_TIMEOUT sets a limit (a number above 0): the
/// user asked for it, so a compile that cannot run under it fails instead
/// of running in process without it.
bool zt_compile_budget_explicit(void);

/// Compiles in one of the process's zetile-compile-worker processes (beside
/// libzetile, or $ZETILE_COMPILE_WORKER; started when none is idle and kept
/// for the next compiles) and ends it after `seconds`: the status then says how long each
/// finished stage took and in which stage the time ran out. A worker that
/// dies (a crash in MLIR or LLVM) becomes a COMPILE_ERROR status. When no
/// worker can be started (none found, it cannot be spawned, or it exits
/// before reading the request) *out_ran is false and why_not says why; the
/// status is then an UNAVAILABLE error saying the limit cannot be enforced
/// if `enforce`, else NULL, so that the caller compiles in process.
zt_status_t zt_compile_budgeted(const char* tile_ir, size_t size,
                                const zt_compile_options_t* options, double seconds,
                                bool enforce, zt_artifact_t** out_artifact, bool* out_ran,
                                char* why_not, size_t why_not_size);

/// After an in-process compile that returned s: when s says the process's
/// SPIR-V backend may be stale (ZT_STALE_SPIRV_BACKEND), compiles again in a
/// fresh zetile-compile-worker (*out_ran = true) and returns that status
/// instead; otherwise, or inside a compile worker, or with no worker to
/// start, returns s. Takes s.
zt_status_t zt_compile_if_stale(const char* tile_ir, size_t size,
                                const zt_compile_options_t* options, zt_status_t s,
                                zt_artifact_t** out_artifact, bool* out_ran);

#endif  // ZETILE_JIT_COMPILE_BUDGET_H_
