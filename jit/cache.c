// The on-disk cache: <dir>/<key[0:2]>/<key>/<name>, each file a checked
// header plus payload, written through a temporary file and rename(2) so
// that concurrent readers and writers (threads or processes) never see a
// partial entry. The header carries a hash of the entry's own key and name,
// so an entry copied or swapped into another place does not load there.
// Entries are opened below the cache directory without following links and
// only as regular files (a FIFO would block a reader forever, a symlink
// could point anywhere). Damaged entries read as misses and are moved aside
// (<name>.bad, beside them) with a warning on stderr.
#include "zetile/cache.h"

#include "debug_flags.h"

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
#define ENTRY_VERSION 2u         // 2: the header names its key and entry

typedef struct entry_header_s {
  uint32_t magic;
  uint32_t version;
  uint64_t payload_size;
  uint64_t checksum;  // XXH3-64 of the payload
  uint64_t identity;  // XXH3-64 of "key/name": where the entry belongs
} entry_header_t;

static uint64_t entry_identity(const char* key, const char* name) {
  char id[300];
  int n = snprintf(id, sizeof id, "%s/%s", key, name);
  return XXH3_64bits(id, (size_t)n);
}

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

// ZETILE_DEBUG: a list of topics ("cache,time"; any separator), or 1 / all
// for every topic. A topic counts wherever it appears in the value, as the
// Python side reads it ("assert" in ZETILE_DEBUG). Read on every call: a
// program may set it after loading zetile.
bool zt_debug_enabled(const char* topic) {
  const char* d = getenv("ZETILE_DEBUG");
  if (!d || !d[0]) return false;
  if (strcmp(d, "1") == 0 || strcmp(d, "all") == 0) return true;
  return topic && topic[0] && strstr(d, topic) != NULL;
}

static bool debug_enabled(void) { return zt_debug_enabled("cache"); }

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

// Moves a damaged entry (a file, a link, a FIFO, a directory: whatever sits
// at `name` in dirfd) aside to ".<name>.bad" so that it is recompiled but
// can still be looked at; says so on stderr (a library never writes to
// stdout; this is the one warning the cache prints unasked).
static zt_status_t corrupt(int dirfd, const char* dirpath, const char* key, const char* name,
                           const char* why) {
  zt_cache_count(ZT_CACHE_CORRUPT, 1);
  zt_cache_count(ZT_CACHE_MISSES, 1);
  char bad[200];
  snprintf(bad, sizeof bad, ".%s.bad", name);
  // A concurrent reader may have moved it already, or a writer replaced it
  // with a good entry that this moves aside: both only cost a recompile.
  bool moved = dirfd >= 0 && renameat(dirfd, name, dirfd, bad) == 0;
  if (!moved && dirfd >= 0 && errno != ENOENT) unlinkat(dirfd, name, 0);
  fprintf(stderr, "zetile: warning: cache entry %s/%s was damaged (%s); %s, recompiling\n",
          dirpath, name, why, moved ? "moved aside (.bad)" : "dropped");
  debug_log("corrupt", key, name, why);
  return zt_make_status(ZT_STATUS_NOT_FOUND, "cache entry %s/%s was corrupt (%s) and was %s",
                        key, name, why, moved ? "moved aside" : "removed");
}

// Opens <cache>/<key[0:2]>/<key> as a directory without following links
// below the cache directory itself (which the user chose and may be a link).
// Creates the levels when `create`. Returns the descriptor or -1 (errno;
// ENOTDIR/ELOOP when a level is not a real directory).
static int open_entry_dir(const char* key, bool create) {
  const int dflags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
  if (create) {
    char d[4500];
    snprintf(d, sizeof d, "%s", zt_cache_dir());
    zt_status_t s = mkdirs(d);
    if (s) {
      zt_status_free(s);
      return -1;
    }
  }
  int root = open(zt_cache_dir(), dflags);
  if (root < 0) return -1;
  char prefix[3] = {key[0], key[1], 0};
  const char* levels[2] = {prefix, key};
  int fd = root;
  for (int i = 0; i < 2; ++i) {
    if (create && mkdirat(fd, levels[i], 0755) != 0 && errno != EEXIST) {
      int e = errno;
      close(fd);
      errno = e;
      return -1;
    }
    int next = openat(fd, levels[i], dflags | O_NOFOLLOW);
    int e = errno;
    close(fd);
    if (next < 0) {
      errno = e;
      return -1;
    }
    fd = next;
  }
  return fd;
}

zt_status_t zt_cache_get(const char* key, const char* name, void** out_data,
                         size_t* out_size) {
  ZT_RETURN_IF_ERROR(check_names(key, name));
  if (!out_data || !out_size)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_cache_get: NULL output");
  *out_data = NULL;
  *out_size = 0;
  char dirpath[4500];
  entry_dir(key, dirpath, sizeof dirpath);
  int dirfd = open_entry_dir(key, false);
  if (dirfd < 0) {
    if (errno == ENOTDIR || errno == ELOOP) {
      // A level of the entry's path is a link or a file: move it aside
      // (from its parent) like any damaged entry.
      char parent[4500];
      snprintf(parent, sizeof parent, "%s/%.2s", zt_cache_dir(), key);
      int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
      zt_status_t s = corrupt(pfd, parent, key, pfd >= 0 ? key : name, "not a directory");
      if (pfd >= 0) close(pfd);
      return s;
    }
    zt_cache_count(ZT_CACHE_MISSES, 1);
    debug_log("miss", key, name, NULL);
    return zt_make_status(ZT_STATUS_NOT_FOUND, "cache miss %s/%s", key, name);
  }
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    int e = errno;
    if (e == ELOOP) {
      zt_status_t s = corrupt(dirfd, dirpath, key, name, "a symbolic link");
      close(dirfd);
      return s;
    }
    close(dirfd);
    zt_cache_count(ZT_CACHE_MISSES, 1);
    debug_log("miss", key, name, NULL);
    return zt_make_status(ZT_STATUS_NOT_FOUND, "cache miss %s/%s", key, name);
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    close(dirfd);
    return zt_make_status(ZT_STATUS_IO_ERROR, "cache: stat %s/%s: %s", key, name, strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    zt_status_t s = corrupt(dirfd, dirpath, key, name, "not a regular file");
    close(dirfd);
    return s;
  }
  size_t size = (size_t)st.st_size;
  entry_header_t h;
  const char* why = NULL;
  uint8_t* buf = NULL;
  size_t got = 0;
  if (size < sizeof h) {
    why = "truncated header";
  } else if (size > ((size_t)1 << 34)) {
    why = "implausibly large";  // nothing zetile writes comes close to 16 GiB
  } else if (!(buf = malloc(size))) {
    close(fd);
    close(dirfd);
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "cache entry of %zu bytes", size);
  } else {
    while (got < size) {
      ssize_t r = read(fd, buf + got, size - got);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) break;
      got += (size_t)r;
    }
    memcpy(&h, buf, sizeof h);
    if (got != size) why = "short read";
    else if (h.magic != ENTRY_MAGIC) why = "bad magic";
    else if (h.version != ENTRY_VERSION) why = "other format version";
    else if (h.payload_size != size - sizeof h) why = "wrong size";
    else if (h.identity != entry_identity(key, name)) why = "belongs to another key";
    else if (XXH3_64bits(buf + sizeof h, size - sizeof h) != h.checksum) why = "checksum mismatch";
  }
  close(fd);
  if (why) {
    free(buf);
    zt_status_t s = corrupt(dirfd, dirpath, key, name, why);
    close(dirfd);
    return s;
  }
  close(dirfd);
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
  char dir[4500];
  entry_dir(key, dir, sizeof dir);
  int dirfd = open_entry_dir(key, true);
  if (dirfd < 0)
    return zt_make_status(ZT_STATUS_IO_ERROR, "cache: cannot open %s: %s", dir, strerror(errno));
  // A temporary name of our own in the entry's directory (O_EXCL), renamed
  // over the entry: readers see the old entry or the new one, never half.
  char tmp[200];
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    // Unique per process, call and attempt (O_EXCL catches the rest).
    static atomic_uint_fast64_t counter;
    uint64_t seed[3] = {(uint64_t)getpid(), atomic_fetch_add(&counter, 1),
                        (uint64_t)(uintptr_t)&fd ^ (uint64_t)attempt};
    uint64_t r = XXH3_64bits(seed, sizeof seed);
    snprintf(tmp, sizeof tmp, ".%s.tmp.%016llx", name, (unsigned long long)r);
    fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    int e = errno;
    close(dirfd);
    return zt_make_status(ZT_STATUS_IO_ERROR, "cache: create in %s: %s", dir, strerror(e));
  }
  entry_header_t h = {ENTRY_MAGIC, ENTRY_VERSION, size, XXH3_64bits(data, size),
                      entry_identity(key, name)};
  zt_status_t s = write_all(fd, &h, sizeof h, tmp);
  if (!s) s = write_all(fd, data, size, tmp);
  if (!s && fsync(fd) != 0)
    s = zt_make_status(ZT_STATUS_IO_ERROR, "cache: fsync %s/%s: %s", dir, tmp, strerror(errno));
  if (close(fd) != 0 && !s)
    s = zt_make_status(ZT_STATUS_IO_ERROR, "cache: close %s/%s: %s", dir, tmp, strerror(errno));
  if (!s && renameat(dirfd, tmp, dirfd, name) != 0)
    s = zt_make_status(ZT_STATUS_IO_ERROR, "cache: rename to %s/%s: %s", dir, name,
                       strerror(errno));
  if (s) unlinkat(dirfd, tmp, 0);
  close(dirfd);
  if (s) return s;
  zt_cache_count(ZT_CACHE_WRITES, 1);
  debug_log("write", key, name, NULL);
  return NULL;
}
