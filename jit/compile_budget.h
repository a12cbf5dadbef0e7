// A compile under a time budget (ZETILE_COMPILE_TIMEOUT): internal to
// libzetile (jit/compile_cached.c uses it).
#ifndef ZETILE_JIT_COMPILE_BUDGET_H_
#define ZETILE_JIT_COMPILE_BUDGET_H_

#include <stdbool.h>
#include <stddef.h>

#include "zetile/compiler.h"

/// The budget in seconds from $ZETILE_COMPILE_TIMEOUT (0: none, the default).
double zt_compile_budget_seconds(void);

/// Compiles in a zetile-compile-worker process (beside libzetile, or
/// $ZETILE_COMPILE_WORKER) and ends it after `seconds`: the status then
/// says how long each finished stage took and in which stage the time ran
/// out. Sets *out_ran = false (and returns NULL) when no worker can be
/// started, so that the caller compiles in process instead.
zt_status_t zt_compile_budgeted(const char* tile_ir, size_t size,
                                const zt_compile_options_t* options, double seconds,
                                zt_artifact_t** out_artifact, bool* out_ran);

#endif  // ZETILE_JIT_COMPILE_BUDGET_H_
