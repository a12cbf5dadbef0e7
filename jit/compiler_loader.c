// libzetile's side of the compiler: loads libzetile_compiler (MLIR, LLVM)
// with dlopen on first use, so that processes launching only cached kernels
// never pay for loading MLIR.
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "compile_budget.h"
#include "compile_report.h"
#include "compiler_api.h"
#include "zetile/compiler.h"

#ifndef ZT_COMPILER_LIB_NAME
#define ZT_COMPILER_LIB_NAME "libzetile_compiler.so"
#endif

static pthread_mutex_t g_load_lock = PTHREAD_MUTEX_INITIALIZER;
static const zt_compiler_api_t* g_api;
static char g_load_error[1024];
static bool g_load_tried;

// $ZETILE_COMPILER_LIB, else the compiler beside libzetile.so.
static void compiler_path(char* out, size_t size) {
  const char* env = getenv("ZETILE_COMPILER_LIB");
  if (env && *env) {
    snprintf(out, size, "%s", env);
    return;
  }
  Dl_info info;
  if (dladdr((void*)compiler_path, &info) && info.dli_fname) {
    const char* slash = strrchr(info.dli_fname, '/');
    if (slash) {
      snprintf(out, size, "%.*s/%s", (int)(slash - info.dli_fname),
               info.dli_fname, ZT_COMPILER_LIB_NAME);
      if (access(out, R_OK) == 0) return;
    }
  }
  // Fall back to the dynamic linker's search path.
  snprintf(out, size, "%s", ZT_COMPILER_LIB_NAME);
}

// Exported (though internal) so that tests can reach cpu_load directly.
ZT_API zt_status_t zt_compiler_load(const zt_compiler_api_t** out_api) {
  pthread_mutex_lock(&g_load_lock);
  if (!g_api && !g_load_tried) {
    g_load_tried = true;
    char path[PATH_MAX];
    compiler_path(path, sizeof path);
    // RTLD_LOCAL: MLIR's and LLVM's many symbols stay out of the global scope.
    // RTLD_LAZY: most of their functions are never called by one process;
    // binding them all up front costs ~9 ms of every cold compile.
    void* h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    if (!h) {
      // The usual cause on an installed wheel: MLIR/LLVM 22 are not on the
      // system (they are not bundled); say which packages bring them.
      const char* why = dlerror();
      bool missing_llvm = why && (strstr(why, "libMLIR") || strstr(why, "libLLVM"));
      snprintf(g_load_error, sizeof g_load_error, "cannot load %s: %s%s", path, why,
               missing_llvm ? " (zetile's compiler needs LLVM/MLIR 22: on Debian 12, "
                              "apt-get install llvm-22 libmlir-22 from bookworm-security)"
                            : "");
    } else {
      zt_compiler_get_api_fn get =
          (zt_compiler_get_api_fn)dlsym(h, ZT_COMPILER_GET_API_SYMBOL);
      const zt_compiler_api_t* api = get ? get() : NULL;
      if (!api) {
        snprintf(g_load_error, sizeof g_load_error, "%s has no %s", path,
                 ZT_COMPILER_GET_API_SYMBOL);
        dlclose(h);
      } else if (api->api_version < ZT_COMPILER_API_VERSION) {
        snprintf(g_load_error, sizeof g_load_error,
                 "%s has compiler API version %d, this libzetile needs %d",
                 path, api->api_version, ZT_COMPILER_API_VERSION);
        dlclose(h);
      } else {
        g_api = api;  // never unloaded: LLVM does not support it
      }
    }
  }
  const zt_compiler_api_t* api = g_api;
  pthread_mutex_unlock(&g_load_lock);
  if (!api) {
    if (out_api) *out_api = NULL;
    return zt_make_status(ZT_STATUS_UNAVAILABLE, "compiler: %s", g_load_error);
  }
  if (out_api) *out_api = api;
  return NULL;
}

zt_status_t zt_compiler_available(void) { return zt_compiler_load(NULL); }

zt_status_t zt_compile_unreported(const char* tile_ir, size_t size,
                                  const zt_compile_options_t* options,
                                  zt_artifact_t** out_artifact) {
  if (!out_artifact || (!tile_ir && size))
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_compile: NULL %s",
                          out_artifact ? "tile_ir" : "out_artifact");
  *out_artifact = NULL;
  const zt_compiler_api_t* api;
  ZT_RETURN_IF_ERROR(zt_compiler_load(&api));
  return api->compile(tile_ir, size, options, out_artifact);
}

zt_status_t zt_compile(const char* tile_ir, size_t size,
                       const zt_compile_options_t* options,
                       zt_artifact_t** out_artifact) {
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  zt_status_t s = zt_compile_unreported(tile_ir, size, options, out_artifact);
  bool ran;
  s = zt_compile_if_stale(tile_ir, size, options, s, out_artifact, &ran);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  // On failure too: the noted front end belongs to this compile only.
  zt_compile_report(s ? NULL : *out_artifact, options, "compiled (no cache)", ms);
  return s;
}

// The version names the compiler's bytes, read without loading it: cache
// keys must not depend on whether MLIR is loaded, and any rebuild of the
// compiler (new lowering code, new LLVM) changes its bytes.
static char g_version[256];
static pthread_once_t g_version_once = PTHREAD_ONCE_INIT;

static void version_init(void) {
  char path[PATH_MAX];
  compiler_path(path, sizeof path);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || st.st_size <= 0) {
    if (fd >= 0) close(fd);
    snprintf(g_version, sizeof g_version, "zetile %s compiler unavailable",
             ZT_VERSION_STRING);
    return;
  }
  void* p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    snprintf(g_version, sizeof g_version, "zetile %s compiler %lld-%lld",
             ZT_VERSION_STRING, (long long)st.st_size,
             (long long)st.st_mtim.tv_sec);
    return;
  }
  XXH128_hash_t h = XXH3_128bits(p, (size_t)st.st_size);
  munmap(p, (size_t)st.st_size);
  snprintf(g_version, sizeof g_version, "zetile %s compiler %016llx%016llx",
           ZT_VERSION_STRING, (unsigned long long)h.high64,
           (unsigned long long)h.low64);
}

const char* zt_compiler_version(void) {
  pthread_once(&g_version_once, version_init);
  return g_version;
}
