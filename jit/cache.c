// The on-disk cache: <dir>/<key[0:2]>/<key>/<name>, each file a checked
// header plus payload, written through a temporary file and rename(2) so
// that concurrent readers and writers (threads or processes) never see a
// partial entry. Damaged entries read as misses and are removed.
#include "zetile/cache.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#include <xxhash.h>

#define ENTRY_MAGIC 0x3143545au  // "ZTC1" little-endian
#define ENTRY_VERSION 1u

typedef struct entry_header_s {
  uint32_t magic;
  uint32_t version;
  uint64_t payload_size;
  uint64_t checksum;  // XXH3-64 of the payload
} entry_header_t;

static atomic_int_fast64_t counters[ZT_CACHE_NATIVE_BUILDS + 1];

void zt_cache_count(zt_cache_counter_t counter, int64_t n) {
  if ((int)counter < 0 || counter > ZT_CACHE_NATIVE_BUILDS) return;
  atomic_fetch_add(&counters[counter], n);
}

void zt_cache_get_stats(zt_cache_stats_t* out) {
  if (!out) return;
  out->hits = atomic_load(&counters[ZT_CACHE_HITS]);
  out->misses = atomic_load(&counters[ZT_CACHE_MISSES]);
  out->corrupt = atomic_load(&counters[ZT_CACHE_CORRUPT]);
  out->writes = atomic_load(&counters[ZT_CACHE_WRITES]);
  out->compiles = atomic_load(&counters[ZT_CACHE_COMPILES]);
  out->native_hits = atomic_load(&counters[ZT_CACHE_NATIVE_HITS]);
  out->native_builds = atomic_load(&counters[ZT_CACHE_NATIVE_BUILDS]);
}

void zt_hash_hex(const void* data, size_t size, char out_hex[33]) {
  XXH128_hash_t h = XXH3_128bits(data, size);
  snprintf(out_hex, 33, "%016llx%016llx", (unsigned long long)h.high64,
           (unsigned long long)h.low64);
}

// --- directory ---------------------------------------------------------------

static pthread_once_t dir_once = PTHREAD_ONCE_INIT;
static char cache_dir[4096];

static void resolve_dir(void) {
  const char* env = getenv("ZETILE_CACHE_DIR");
  const char* xdg = getenv("XDG_CACHE_HOME");
  const char* home = getenv("HOME");
  if (env && env[0])
    snprintf(cache_dir, sizeof cache_dir, "%s", env);
  else if (xdg && xdg[0])
    snprintf(cache_dir, sizeof cache_dir, "%s/zetile", xdg);
  else if (home && home[0])
    snprintf(cache_dir, sizeof cache_dir, "%s/.cache/zetile", home);
  else
    snprintf(cache_dir, sizeof cache_dir, "/tmp/zetile-cache-%ld", (long)getuid());
  size_t n = strlen(cache_dir);
  while (n > 1 && cache_dir[n - 1] == '/') cache_dir[--n] = 0;
}

const char* zt_cache_dir(void) {
  pthread_once(&dir_once, resolve_dir);
  return cache_dir;
}

static bool debug_enabled(void) {
  const char* d = getenv("ZETILE_DEBUG");
  return d && (strstr(d, "cache") || strcmp(d, "1") == 0 || strcmp(d, "all") == 0);
}

static void debug_log(const char* what, const char* key, const char* name,
                      const char* detail) {
  if (!debug_enabled()) return;
  fprintf(stderr, "zetile cache: %s %s/%s%s%s\n", what, key, name, detail ? ": " : "",
          detail ? detail : "");
}

static zt_status_t check_names(const char* key, const char* name) {
  if (!key || !name || strlen(key) < 3 || !name[0] || name[0] == '.' ||
      strchr(key, '/') || strchr(name, '/') || key[0] == '.' || strlen(key) > 128 ||
      strlen(name) > 128)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "bad cache key '%s' or name '%s'",
                          key ? key : "(null)", name ? name : "(null)");
  return NULL;
}

static void entry_dir(const char* key, char* buf, size_t n) {
  snprintf(buf, n, "%s/%.2s/%s", zt_cache_dir(), key, key);
}

static zt_status_t mkdirs(const char* path) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char* p = tmp + 1; *p; ++p) {
    if (*p != '/') continue;
    *p = 0;
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
      return zt_make_status(ZT_STATUS_IO_ERROR, "cache: mkdir %s: %s", tmp, strerror(errno));
    *p = '/';
  }
  if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
    return zt_make_status(ZT_STATUS_IO_ERROR, "cache: mkdir %s: %s", tmp, strerror(errno));
  return NULL;
}

// --- get / put -----------------------------------------------------------------

static zt_status_t corrupt(const char* path, const char* key, const char* name,
                           const char* why) {
  zt_cache_count(ZT_CACHE_CORRUPT, 1);
  zt_cache_count(ZT_CACHE_MISSES, 1);
  unlink(path);  // a concurrent writer may already have replaced it: harmless
  debug_log("corrupt", key, name, why);
  return zt_make_status(ZT_STATUS_NOT_FOUND, "cache entry %s/%s was corrupt (%s) and was removed",
                        key, name, why);
}

zt_status_t zt_cache_get(const char* key, const char* name, void** out_data,
                         size_t* out_size) {
  ZT_RETURN_IF_ERROR(check_names(key, name));
  if (!out_data || !out_size)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_cache_get: NULL output");
  *out_data = NULL;
  *out_size = 0;
  char path[4500];
  entry_dir(key, path, sizeof path);
  size_t dl = strlen(path);
  snprintf(path + dl, sizeof path - dl, "/%s", name);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    zt_cache_count(ZT_CACHE_MISSES, 1);
    debug_log("miss", key, name, NULL);
    return zt_make_status(ZT_STATUS_NOT_FOUND, "cache miss %s/%s", key, name);
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return zt_make_status(ZT_STATUS_IO_ERROR, "cache: stat %s: %s", path, strerror(err));
  }
  size_t size = (size_t)st.st_size;
  entry_header_t h;
  if (size < sizeof h) {
    close(fd);
    return corrupt(path, key, name, "truncated header");
  }
  uint8_t* buf = malloc(size);
  if (!buf) {
    close(fd);
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "cache entry of %zu bytes", size);
  }
  size_t got = 0;
  while (got < size) {
    ssize_t r = read(fd, buf + got, size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  memcpy(&h, buf, sizeof h);
  const char* why = NULL;
  if (got != size) why = "short read";
  else if (h.magic != ENTRY_MAGIC) why = "bad magic";
  else if (h.version != ENTRY_VERSION) why = "other format version";
  else if (h.payload_size != size - sizeof h) why = "wrong size";
  else if (XXH3_64bits(buf + sizeof h, size - sizeof h) != h.checksum) why = "checksum mismatch";
  if (why) {
    free(buf);
    return corrupt(path, key, name, why);
  }
  // Hand out the payload in place: move it to the front of the allocation.
  memmove(buf, buf + sizeof h, size - sizeof h);
  *out_data = buf;
  *out_size = size - sizeof h;
  zt_cache_count(ZT_CACHE_HITS, 1);
  debug_log("hit", key, name, NULL);
  return NULL;
}

static zt_status_t write_all(int fd, const void* data, size_t size, const char* path) {
  const uint8_t* p = data;
  while (size) {
    ssize_t w = write(fd, p, size);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0)
      return zt_make_status(ZT_STATUS_IO_ERROR, "cache: write %s: %s", path,
                            w < 0 ? strerror(errno) : "short write");
    p += w;
    size -= (size_t)w;
  }
  return NULL;
}

zt_status_t zt_cache_put(const char* key, const char* name, const void* data,
                         size_t size) {
  ZT_RETURN_IF_ERROR(check_names(key, name));
  if (size && !data)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_cache_put: NULL data");
  char dir[4500], tmp[4700], path[4700];
  entry_dir(key, dir, sizeof dir);
  ZT_RETURN_IF_ERROR(mkdirs(dir));
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(tmp, sizeof tmp, "%s/.%s.tmp.XXXXXX", dir, name);
  int fd = mkostemp(tmp, O_CLOEXEC);
  if (fd < 0)
    return zt_make_status(ZT_STATUS_IO_ERROR, "cache: create %s: %s", tmp, strerror(errno));
  entry_header_t h = {ENTRY_MAGIC, ENTRY_VERSION, size, XXH3_64bits(data, size)};
  zt_status_t s = write_all(fd, &h, sizeof h, tmp);
  if (!s) s = write_all(fd, data, size, tmp);
  // mkstemp makes 0600 files; entries are readable like other cache files.
  if (!s) (void)fchmod(fd, 0644);
  if (!s && fsync(fd) != 0)
    s = zt_make_status(ZT_STATUS_IO_ERROR, "cache: fsync %s: %s", tmp, strerror(errno));
  if (close(fd) != 0 && !s)
    s = zt_make_status(ZT_STATUS_IO_ERROR, "cache: close %s: %s", tmp, strerror(errno));
  if (!s && rename(tmp, path) != 0)
    s = zt_make_status(ZT_STATUS_IO_ERROR, "cache: rename to %s: %s", path, strerror(errno));
  if (s) {
    unlink(tmp);
    return s;
  }
  zt_cache_count(ZT_CACHE_WRITES, 1);
  debug_log("write", key, name, NULL);
  return NULL;
}
