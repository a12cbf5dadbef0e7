// LLVM IR rewrites between LLVM's optimization and SPIR-V instruction
// selection (xe_spirv_o0.c, select_spirv), for what the SPIR-V backend
// cannot select in an OpenCL (Kernel) module.
//
// Why: InstCombine recognizes bit permutations as `llvm.bitreverse`. A
// column reduction over a 2x2 subgroup grid indexes its SLM exchange by
// (sg % 2) * 64 + (sg / 2 % 2) * 32, which becomes `llvm.bitreverse.i7`;
// LLVM 22's SPIR-V backend selects OpBitReverse, which needs the Shader
// capability (or SPV_KHR_bit_instructions, and i7 an arbitrary-width
// integer extension), and aborts the process with "LLVM ERROR: Unable to
// meet SPIR-V requirements for this target" (llvm-reduce: bitreverse.i7 of
// a value, zext, getelementptr into addrspace(3)). Here each call becomes
// shifts, ands and ors, one per bit: rare, and IGC folds it again.
#include <stdio.h>
#include <string.h>

#include <llvm-c/Core.h>

#include "xe/xe_internal.h"

// A constant of `ty` (an integer or a vector of them) with every element v.
static LLVMValueRef splat(LLVMTypeRef ty, unsigned long long v) {
  if (LLVMGetTypeKind(ty) != LLVMVectorTypeKind) return LLVMConstInt(ty, v, 0);
  unsigned n = LLVMGetVectorSize(ty);
  LLVMValueRef e = LLVMConstInt(LLVMGetElementType(ty), v, 0);
  LLVMValueRef elems[64];
  if (n > 64) return NULL;
  for (unsigned i = 0; i < n; ++i) elems[i] = e;
  return LLVMConstVector(elems, n);
}

// result = OR over bits i of ((x >> i) & 1) << (w - 1 - i).
static LLVMValueRef expand_bitreverse(LLVMBuilderRef b, LLVMValueRef x) {
  LLVMTypeRef ty = LLVMTypeOf(x);
  LLVMTypeRef et = LLVMGetTypeKind(ty) == LLVMVectorTypeKind ? LLVMGetElementType(ty) : ty;
  unsigned w = LLVMGetIntTypeWidth(et);
  LLVMValueRef one = splat(ty, 1), r = splat(ty, 0);
  if (!one) return NULL;
  for (unsigned i = 0; i < w; ++i) {
    LLVMValueRef bit = i ? LLVMBuildLShr(b, x, splat(ty, i), "") : x;
    bit = LLVMBuildAnd(b, bit, one, "");
    unsigned to = w - 1 - i;
    if (to) bit = LLVMBuildShl(b, bit, splat(ty, to), "");
    r = LLVMBuildOr(b, r, bit, "");
  }
  return r;
}

int xe_expand_bitreverse(LLVMModuleRef mod) {
  int count = 0;
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
    size_t len = 0;
    const char* name = LLVMGetValueName2(f, &len);
    if (len < 16 || strncmp(name, "llvm.bitreverse.", 16) != 0) continue;
    // Replace every call (uses change as calls go: restart from the first).
    for (LLVMUseRef u = LLVMGetFirstUse(f); u;) {
      LLVMValueRef call = LLVMGetUser(u);
      if (!LLVMIsACallInst(call) || LLVMGetCalledValue(call) != f) {
        u = LLVMGetNextUse(u);
        continue;
      }
      LLVMPositionBuilderBefore(b, call);
      LLVMValueRef r = expand_bitreverse(b, LLVMGetOperand(call, 0));
      if (!r) {
        u = LLVMGetNextUse(u);
        continue;
      }
      LLVMReplaceAllUsesWith(call, r);
      LLVMInstructionEraseFromParent(call);
      ++count;
      u = LLVMGetFirstUse(f);
    }
  }
  LLVMDisposeBuilder(b);
  return count;
}
