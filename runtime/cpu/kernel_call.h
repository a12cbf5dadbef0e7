// Calling a CPU kernel (arguments, program id, grid size, context; the ABI
// of jit/compiler_api.h) without libffi on x86-64 System V: libffi's generic
// ffi_call cost about 100 ns per program, three quarters of a one-program
// launch. The plan, made once per executable, says which register or stack
// slot each argument takes; a call is then one indirect call through a
// fixed prototype. Other ABIs, and kernels with more stack arguments than
// the prototypes carry, return false from zt_kcall_plan and use libffi.
#ifndef ZETILE_RUNTIME_CPU_KERNEL_CALL_H_
#define ZETILE_RUNTIME_CPU_KERNEL_CALL_H_

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"

#define ZT_KCALL_GPRS 6
#define ZT_KCALL_XMMS 8
#define ZT_KCALL_MAX_STACK 32
#define ZT_KCALL_WORDS (ZT_KCALL_GPRS + ZT_KCALL_XMMS + ZT_KCALL_MAX_STACK)

typedef struct zt_kcall_plan_s {
  int32_t num_args;                  // kernel arguments plus the 7 hidden ones
  uint8_t slot[ZT_MAX_KERNEL_ARGS + 7];  // word index in zt_kcall_frame_t
  int32_t stack_words;               // stack slots used (picks the prototype)
} zt_kcall_plan_t;

/// The words of one call: general registers, vector registers (bit
/// patterns), then stack slots, in that order.
typedef struct zt_kcall_frame_s {
  uint64_t w[ZT_KCALL_WORDS];
} zt_kcall_frame_t;

/// Plans calls for a kernel whose arguments have these kinds (then the 6
/// i32 ids and the context pointer). False: use libffi.
bool zt_kcall_plan(zt_kcall_plan_t* plan, const zt_scalar_kind_t* kinds, int32_t n);

/// Writes argument i (of kind k) into its slot.
void zt_kcall_set(const zt_kcall_plan_t* plan, zt_kcall_frame_t* f, int32_t i,
                  zt_scalar_kind_t k, const zt_packed_arg_t* v);

/// The slot of argument i, for the values that change per program.
static inline uint64_t* zt_kcall_word(const zt_kcall_plan_t* plan, zt_kcall_frame_t* f,
                                      int32_t i) {
  return &f->w[plan->slot[i]];
}

/// Calls fn with the frame's arguments.
void zt_kcall(const zt_kcall_plan_t* plan, void* fn, const zt_kcall_frame_t* f);

#endif  // ZETILE_RUNTIME_CPU_KERNEL_CALL_H_
