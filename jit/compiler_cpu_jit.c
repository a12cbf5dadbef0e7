// CPU target: JIT-compiles the LLVM-dialect section of an artifact with
// MLIR's ExecutionEngine (ORC) and hands back the kernel's raw entry point.
#include <stdint.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <mlir-c/ExecutionEngine.h>

#include "compiler_internal.h"
#include "cpu/cpu_helpers.h"
#include "lowering.h"

// MLIR's ExecutionEngine always attaches LLVM's perf JIT listener, which
// writes a jitdump file per engine under $JITDUMPDIR/.debug/jit (/tmp when
// unset): over a thousand files after one test run. Unless the user asks
// for them (ZETILE_JITDUMP=1, for `perf inject --jit`), point the listener at
// a private directory and remove it once the code is emitted; the listener
// keeps writing to its already-open, now unlinked, file.
static int rm_entry(const char* path, const struct stat* st, int flag, struct FTW* ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

typedef struct {
  char dir[64];
  char* saved;  // previous JITDUMPDIR (owned) or NULL
  bool had;
  bool active;
} jitdump_guard_t;

static void jitdump_begin(jitdump_guard_t* g) {
  memset(g, 0, sizeof *g);
  const char* keep = getenv("ZETILE_JITDUMP");
  if (keep && keep[0] == '1') return;
  snprintf(g->dir, sizeof g->dir, "/tmp/zetile-jitdump-XXXXXX");
  if (!mkdtemp(g->dir)) return;
  const char* old = getenv("JITDUMPDIR");
  g->had = old != NULL;
  g->saved = old ? strdup(old) : NULL;
  setenv("JITDUMPDIR", g->dir, 1);  // under the exclusive compiler lock: no compile reads the environment now
  g->active = true;
}

static void jitdump_end(jitdump_guard_t* g) {
  if (!g->active) return;
  if (g->had)
    setenv("JITDUMPDIR", g->saved, 1);
  else
    unsetenv("JITDUMPDIR");
  free(g->saved);
  nftw(g->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static zt_status_t load_in(MlirContext ctx, const char* text, size_t size, const char* name,
                           void** out_fn, void** out_engine);

static zt_status_t load_locked(const char* text, size_t size, const char* name,
                               void** out_fn, void** out_engine) {
  zt_mlir_context_t c;
  ZT_RETURN_IF_ERROR(zt_compiler_context_acquire(&c));
  zt_status_t s = load_in(c.ctx, text, size, name, out_fn, out_engine);
  // The engine owns its translated LLVM module: the context can go back.
  zt_compiler_context_release(c);
  zt_compile_thread_release();
  return s;
}

static zt_status_t load_in(MlirContext ctx, const char* text, size_t size, const char* name,
                           void** out_fn, void** out_engine) {
  MlirModule m;
  ZT_RETURN_IF_ERROR(zt_mlir_parse_untimed(ctx, text, size, "llvm section", &m));
  zt_mlir_diag_clear();
  jitdump_guard_t dump;
  jitdump_begin(&dump);
  MlirExecutionEngine jit = mlirExecutionEngineCreate(m, 3, 0, NULL, false, false);
  mlirModuleDestroy(m);
  if (mlirExecutionEngineIsNull(jit)) {
    jitdump_end(&dump);
    return zt_mlir_diag_status(ZT_STATUS_COMPILE_ERROR,
                               "LLVM JIT could not translate the llvm section");
  }
  for (size_t i = 0; i < zt_cpu_runtime_symbol_count(); ++i) {
    void* fn = NULL;
    const char* sym = zt_cpu_runtime_symbol(i, &fn);
    mlirExecutionEngineRegisterSymbol(jit, mlirStringRefCreateFromCString(sym), fn);
  }
  void* fn = mlirExecutionEngineLookup(jit, mlirStringRefCreateFromCString(name));
  jitdump_end(&dump);  // the code is emitted (and its dump file open) by now
  if (!fn) {
    zt_status_t s = zt_mlir_diag_status(ZT_STATUS_COMPILE_ERROR, "JIT lookup failed");
    mlirExecutionEngineDestroy(jit);
    return zt_status_annotate(s, "kernel %s", name);
  }
  zt_mlir_diag_clear();
  *out_fn = fn;
  *out_engine = jit.ptr;
  return NULL;
}

zt_status_t zt_cpu_jit_load(const char* llvm_mlir, size_t size,
                            const char* kernel_name, void** out_fn,
                            void** out_engine) {
  *out_fn = NULL;
  *out_engine = NULL;
  if (!llvm_mlir || !kernel_name)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "cpu_load: NULL argument");
  zt_compiler_lock();
  zt_status_t s = load_locked(llvm_mlir, size, kernel_name, out_fn, out_engine);
  zt_compiler_unlock();
  return s;
}

void zt_cpu_jit_unload(void* engine) {
  if (!engine) return;
  zt_compiler_lock();
  mlirExecutionEngineDestroy((MlirExecutionEngine){engine});
  zt_compiler_unlock();
}
