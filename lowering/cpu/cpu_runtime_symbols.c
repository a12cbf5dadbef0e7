// The functions CPU kernels call into the runtime: f16/bf16 conversions
// (LLVM emits calls to them on hosts without F16C / AVX512-BF16), tile.print,
// tile.assert and bounds checks (cpu_helpers.c). Compiled into both
// libzetile_compiler (its ORC and ExecutionEngine loads register them) and
// libzetile (whose own object loader, runtime/cpu/elf_load.c, resolves
// kernels' imports here first): the runtime loads cached kernels without
// the compiler.
#include <stdint.h>
#include <string.h>

#include "cpu_helpers.h"

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
