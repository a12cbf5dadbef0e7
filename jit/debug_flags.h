// ZETILE_DEBUG, parsed in one place (jit/cache.c) for libzetile's topics:
// "cache" (hits, misses, writes), "time" (where each compile spent its time,
// jit/compile_cached.c).
#ifndef ZETILE_JIT_DEBUG_FLAGS_H_
#define ZETILE_JIT_DEBUG_FLAGS_H_

#include <stdbool.h>

/// Whether ZETILE_DEBUG names `topic` (or is 1 / all). Thread-safe.
bool zt_debug_enabled(const char* topic);

#endif  // ZETILE_JIT_DEBUG_FLAGS_H_
