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

// LLVM lowers f16/bf16 conversions to these runtime calls on hosts without
// F16C / AVX512-BF16. Not every libgcc has them (GCC 12 lacks the bf16 ones),
// so we provide them. Round to nearest even; NaNs stay quiet NaNs.
typedef _Float16 zt_half_reg_t;  // returned in xmm0 like LLVM's half/bfloat

static uint16_t f32_to_f16_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000u, abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  if (abs >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
  if (abs < 0x38800000u) {
    int e = (int)(abs >> 23);
    if (e < 102) return (uint16_t)sign;
    uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    int shift = 126 - e;
    uint32_t half = mant >> shift, rem = mant & ((1u << shift) - 1u);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return (uint16_t)(sign | half);
  }
  uint32_t h = (abs - 0x38000000u) >> 13, rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return (uint16_t)(sign | h);
}

static float f16_bits_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu,
           m = h & 0x3ffu, u;
  if (e == 0) {
    if (m == 0) {
      u = sign;
    } else {
      e = 113;
      while (!(m & 0x400u)) { m <<= 1; --e; }
      u = sign | (e << 23) | ((m & 0x3ffu) << 13);
    }
  } else if (e == 31) {
    u = sign | 0x7f800000u | (m << 13);
  } else {
    u = sign | ((e + 112) << 23) | (m << 13);
  }
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static uint16_t f32_to_bf16_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static zt_half_reg_t bits_reg(uint16_t b) {
  zt_half_reg_t r;
  memcpy(&r, &b, 2);
  return r;
}
static uint16_t reg_bits(zt_half_reg_t r) {
  uint16_t b;
  memcpy(&b, &r, 2);
  return b;
}

static zt_half_reg_t zt_truncsfhf2(float f) { return bits_reg(f32_to_f16_bits(f)); }
static zt_half_reg_t zt_truncdfhf2(double d) {
  return bits_reg(f32_to_f16_bits((float)d));
}
static float zt_extendhfsf2(zt_half_reg_t h) { return f16_bits_to_f32(reg_bits(h)); }
static zt_half_reg_t zt_truncsfbf2(float f) { return bits_reg(f32_to_bf16_bits(f)); }
static zt_half_reg_t zt_truncdfbf2(double d) {
  return bits_reg(f32_to_bf16_bits((float)d));
}
static float zt_extendbfsf2(zt_half_reg_t h) {
  uint32_t u = (uint32_t)reg_bits(h) << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static const struct {
  const char* name;
  void* fn;
} k_runtime_symbols[] = {
    {"__truncsfhf2", (void*)zt_truncsfhf2}, {"__gnu_f2h_ieee", (void*)zt_truncsfhf2},
    {"__truncdfhf2", (void*)zt_truncdfhf2}, {"__extendhfsf2", (void*)zt_extendhfsf2},
    {"__gnu_h2f_ieee", (void*)zt_extendhfsf2}, {"__truncsfbf2", (void*)zt_truncsfbf2},
    {"__truncdfbf2", (void*)zt_truncdfbf2}, {"__extendbfsf2", (void*)zt_extendbfsf2},
    // What tile.print and tile.assert call (lowering/cpu/cpu_debug.c).
    {ZT_CPU_PRINT_SYMBOL, (void*)zt_cpu_print},
    {ZT_CPU_ASSERT_SYMBOL, (void*)zt_cpu_assert_fail},
    {ZT_CPU_BOUNDS_SYMBOL, (void*)zt_cpu_check_access},
};

size_t zt_cpu_runtime_symbol_count(void) {
  return sizeof k_runtime_symbols / sizeof k_runtime_symbols[0];
}

const char* zt_cpu_runtime_symbol(size_t i, void** out_fn) {
  *out_fn = k_runtime_symbols[i].fn;
  return k_runtime_symbols[i].name;
}

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
  for (size_t i = 0; i < sizeof k_runtime_symbols / sizeof k_runtime_symbols[0]; ++i)
    mlirExecutionEngineRegisterSymbol(
        jit, mlirStringRefCreateFromCString(k_runtime_symbols[i].name),
        k_runtime_symbols[i].fn);
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
