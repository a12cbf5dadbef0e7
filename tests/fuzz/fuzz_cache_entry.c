// libFuzzer: arbitrary bytes as an on-disk cache entry. zt_cache_get must
// return a miss (the entry moved aside) or exactly the payload that
// zt_cache_put would have written for those bytes; never crash or hang.
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zetile/cache.h"

#define KEY "0123456789abcdef0123456789abcdef"

static char dir[64];
static char path[256];

static void init(void) {
  if (dir[0]) return;
  snprintf(dir, sizeof dir, "/tmp/zt-fuzz-cache-%d", (int)getpid());
  setenv("ZETILE_CACHE_DIR", dir, 1);
  zt_status_free(zt_cache_put(KEY, "artifact", "seed", 4));
  snprintf(path, sizeof path, "%s/01/%s/artifact", dir, KEY);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  init();
  FILE* f = fopen(path, "wb");
  if (!f) {
    // A previous input's entry was moved aside: the directory is still there.
    return 0;
  }
  if (size) fwrite(data, 1, size, f);
  fclose(f);
  void* out = NULL;
  size_t n = 0;
  // The warning a damaged entry prints would flood the fuzzer's output
  // (which also goes to stderr): silence it around the call only.
  static int devnull = -1, saved = -1;
  if (devnull < 0) devnull = open("/dev/null", O_WRONLY);
  fflush(stderr);
  saved = dup(2);
  dup2(devnull, 2);
  zt_status_t s = zt_cache_get(KEY, "artifact", &out, &n);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  if (!s) {
    // A hit: the bytes must be exactly a valid entry whose payload we got.
    if (n > size || memcmp(out, data + (size - n), n) != 0) abort();
    free(out);
  }
  zt_status_free(s);
  return 0;
}
