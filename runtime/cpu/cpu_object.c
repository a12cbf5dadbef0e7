// See cpu_object.h. Why a loader of our own: linking a cached kernel's
// object with ORC meant dlopening libzetile_compiler (MLIR and LLVM, 42-54 ms)
// in every new process that launched one, most of its time to a first launch.
#include "cpu/cpu_object.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/cpu_fingerprint.h"
#include "cpu/cpu_helpers.h"

zt_cpu_loader_t zt_cpu_loader_mode(void) {
  const char* dump = getenv("ZETILE_JITDUMP");
  if (dump && dump[0] == '1') return ZT_CPU_LOADER_ORC;
  const char* v = getenv("ZETILE_CPU_LOADER");
  if (v && !strcmp(v, "own")) return ZT_CPU_LOADER_OWN;
  if (v && !strcmp(v, "orc")) return ZT_CPU_LOADER_ORC;
  return ZT_CPU_LOADER_AUTO;
}

// libm and libmvec by handle: the process may hold libm only in a local
// scope (libzetile dlopened RTLD_LOCAL by a program that does not link it),
// and nothing else loads libmvec (the compiler did, RTLD_GLOBAL).
static void* g_libm;
static void* g_libmvec;
static pthread_once_t g_libs_once = PTHREAD_ONCE_INIT;

static void libs_init(void) {
  g_libm = dlopen("libm.so.6", RTLD_LAZY | RTLD_LOCAL);
  g_libmvec = dlopen("libmvec.so.1", RTLD_LAZY | RTLD_LOCAL);
}

// The same order as the ORC path (jit/compiler_cpu_object.c): the runtime's
// helpers first (a libgcc's own __truncsfbf2 must not win), then the process.
static void* resolve(const char* name, void* ctx) {
  (void)ctx;
  size_t n = zt_cpu_runtime_symbol_count();
  for (size_t i = 0; i < n; ++i) {
    void* fn = NULL;
    if (!strcmp(zt_cpu_runtime_symbol(i, &fn), name)) return fn;
  }
  void* p = dlsym(RTLD_DEFAULT, name);
  if (p) return p;
  pthread_once(&g_libs_once, libs_init);
  if (g_libm && (p = dlsym(g_libm, name))) return p;
  if (g_libmvec && (p = dlsym(g_libmvec, name))) return p;
  return NULL;
}

// "...;cpuid=<hash>" at the end of obj_host, naming this host.
static bool built_here(const char* host, size_t size) {
  const char* mine = zt_cpu_fingerprint();
  size_t n = strlen(mine);
  return n && size > n && host[size - n - 1] == ';' && !memcmp(host + size - n, mine, n);
}

zt_status_t zt_cpu_object_load_own(const void* obj, size_t obj_size, const char* host,
                                   size_t host_size, const char* kernel,
                                   zt_elf_image_t** out_image, void** out_fn) {
  *out_image = NULL;
  *out_fn = NULL;
  if (!host || !built_here(host, host_size))
    return zt_make_status(ZT_STATUS_UNSUPPORTED,
                          "the kernel's machine code was built for another CPU (or before "
                          "artifacts named the CPUID)");
  return zt_elf_image_load(obj, obj_size, kernel, resolve, NULL, out_image, out_fn);
}
