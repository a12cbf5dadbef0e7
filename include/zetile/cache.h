// zetile: the content-addressed on-disk cache.
//
// Layout: $ZETILE_CACHE_DIR (default $XDG_CACHE_HOME/zetile or
// ~/.cache/zetile) / <2 hex digits> / <32-hex key> / <name>. Every file
// holds a header with a checksum: a truncated or corrupt entry reads as a
// miss (and is removed), never as data. Writes go to a temporary file that
// is renamed into place, so readers in other processes never see half an
// entry.
#ifndef ZETILE_CACHE_H_
#define ZETILE_CACHE_H_

#include <stddef.h>
#include <stdint.h>

#include "zetile/api.h"
#include "zetile/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zt_cache_stats_s {
  int64_t hits;
  int64_t misses;
  int64_t corrupt;   ///< entries found damaged and dropped
  int64_t writes;
  int64_t compiles;  ///< calls into the compiler (zt_compile)
  int64_t native_hits;    ///< driver binaries reused (Level Zero)
  int64_t native_builds;  ///< SPIR-V built by the driver
} zt_cache_stats_t;

/// The cache directory in use (borrowed, process lifetime).
ZT_API const char* zt_cache_dir(void);
/// Reads entry `name` under `key` into a malloc'ed buffer (free with free()).
/// NOT_FOUND on a miss or a corrupt entry.
ZT_API zt_status_t zt_cache_get(const char* key, const char* name,
                                void** out_data, size_t* out_size);
/// Writes entry `name` under `key` atomically.
ZT_API zt_status_t zt_cache_put(const char* key, const char* name,
                                const void* data, size_t size);
/// Counters of this process.
ZT_API void zt_cache_get_stats(zt_cache_stats_t* out_stats);
typedef enum zt_cache_counter_e {
  ZT_CACHE_HITS,
  ZT_CACHE_MISSES,
  ZT_CACHE_CORRUPT,
  ZT_CACHE_WRITES,
  ZT_CACHE_COMPILES,
  ZT_CACHE_NATIVE_HITS,
  ZT_CACHE_NATIVE_BUILDS,
} zt_cache_counter_t;
/// Adds n to a counter (thread-safe; used by the compiler and backends).
ZT_API void zt_cache_count(zt_cache_counter_t counter, int64_t n);
/// 128-bit content hash (XXH3) as 32 hex digits plus NUL.
ZT_API void zt_hash_hex(const void* data, size_t size, char out_hex[33]);

#ifdef __cplusplus
}
#endif
#endif  // ZETILE_CACHE_H_
