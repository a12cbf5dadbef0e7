// See kernel_call.h. System V x86-64 passes integer-class arguments in six
// general registers and floating-point ones in eight vector registers, each
// class in order, and the rest on the stack in argument order, 8 bytes per
// slot. A prototype of 6 integers, 8 doubles and K stack integers therefore
// reaches every register and the first K stack slots; extra stack words are
// harmless (the caller pops them). Narrow integers are passed extended to 64
// bits (sign for signed kinds, zero for f16/bf16 bit patterns), which both
// GCC's and clang's conventions for the callee accept; f32 travels in the
// low half of a vector register or stack slot, as the ABI puts it.
#include "cpu/kernel_call.h"

#include <string.h>

#if defined(__x86_64__) && !defined(_WIN32)
#define KCALL_SYSV 1
#else
#define KCALL_SYSV 0
#endif

static bool is_float(zt_scalar_kind_t k) { return k == ZT_F32 || k == ZT_F64; }

bool zt_kcall_plan(zt_kcall_plan_t* plan, const zt_scalar_kind_t* kinds, int32_t n) {
  if (!KCALL_SYSV || n < 0 || n > ZT_MAX_KERNEL_ARGS) return false;
  int32_t gpr = 0, xmm = 0, stack = 0;
  plan->num_args = n + 7;
  for (int32_t i = 0; i < n + 7; ++i) {
    bool fp = i < n && is_float(kinds[i]);
    int32_t word;
    if (fp && xmm < ZT_KCALL_XMMS) {
      word = ZT_KCALL_GPRS + xmm++;
    } else if (!fp && gpr < ZT_KCALL_GPRS) {
      word = gpr++;
    } else {
      if (stack >= ZT_KCALL_MAX_STACK) return false;
      word = ZT_KCALL_GPRS + ZT_KCALL_XMMS + stack++;
    }
    plan->slot[i] = (uint8_t)word;
  }
  plan->stack_words = stack;
  return true;
}

void zt_kcall_set(const zt_kcall_plan_t* plan, zt_kcall_frame_t* f, int32_t i,
                  zt_scalar_kind_t k, const zt_packed_arg_t* v) {
  uint64_t w = 0;
  switch (k) {
    case ZT_I1:
    case ZT_I8: w = (uint64_t)(int64_t)v->i8; break;
    case ZT_I16: w = (uint64_t)(int64_t)v->i16; break;
    case ZT_I32: w = (uint64_t)(int64_t)v->i32; break;
    case ZT_F16:
    case ZT_BF16: w = v->u16; break;
    case ZT_F32: memcpy(&w, &v->f32, sizeof v->f32); break;  // low half, rest zero
    case ZT_F64: memcpy(&w, &v->f64, sizeof v->f64); break;
    default: w = v->u64; break;  // i64, pointers
  }
  f->w[plan->slot[i]] = w;
}

#if KCALL_SYSV
#define G uint64_t
#define D double
#define S uint64_t
#define PROTO_REGS G, G, G, G, G, G, D, D, D, D, D, D, D, D
#define S8 S, S, S, S, S, S, S, S
typedef void (*call8_t)(PROTO_REGS, S8);
typedef void (*call16_t)(PROTO_REGS, S8, S8);
typedef void (*call32_t)(PROTO_REGS, S8, S8, S8, S8);

static inline double as_double(uint64_t w) {
  double d;
  memcpy(&d, &w, sizeof d);
  return d;
}

#define REGS(w)                                                                         \
  w[0], w[1], w[2], w[3], w[4], w[5], as_double(w[6]), as_double(w[7]), as_double(w[8]), \
      as_double(w[9]), as_double(w[10]), as_double(w[11]), as_double(w[12]),            \
      as_double(w[13])
#define STK8(s, o) s[o], s[o + 1], s[o + 2], s[o + 3], s[o + 4], s[o + 5], s[o + 6], s[o + 7]
#endif

void zt_kcall(const zt_kcall_plan_t* plan, void* fn, const zt_kcall_frame_t* f) {
#if KCALL_SYSV
  const uint64_t* w = f->w;
  const uint64_t* s = f->w + ZT_KCALL_GPRS + ZT_KCALL_XMMS;
  if (plan->stack_words <= 8)
    ((call8_t)fn)(REGS(w), STK8(s, 0));
  else if (plan->stack_words <= 16)
    ((call16_t)fn)(REGS(w), STK8(s, 0), STK8(s, 8));
  else
    ((call32_t)fn)(REGS(w), STK8(s, 0), STK8(s, 8), STK8(s, 16), STK8(s, 24));
#else
  (void)plan, (void)fn, (void)f;
#endif
}
