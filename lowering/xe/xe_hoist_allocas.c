// XeVM's private arrays moved to the function's entry block, before LLVM's
// optimization (xe_spirv_o0.c, select_module).
//
// Why: XeVM lowers each 2D block read/write/DPAS-operand hand-off to an
// `alloca <ty>, i32 N` placed where the op is, inside the K loop, followed
// by the builtin's call and a load (or a store and the call). An alloca
// outside the entry block is a dynamic one: SROA and mem2reg leave it
// alone, so after the compat library's builtins are inlined (the Xe compat
// path, lowering/xe/compat/block2d_compat.cl) their rows are still stored to
// and loaded from private memory, which IGC kept in scratch whenever one
// path wrote it at a run-time index (issue 12: .ss[a0.2] sends, counted as
// spills by zetile isa since 323d666), and after jump threading even
// merged two such arrays under one phi. In the entry block they are static
// allocas and SROA turns them into registers.
//
// Moved only when every use of the alloca lies in its own block (then each
// execution of the block has the array to itself from its first to its last
// use, and one array for the whole function gives the same values) and one
// use is a call to a function the module defines (the compat library's
// builtins): on the native path the callee is a declaration, the array
// stays memory either way, and the SPIR-V stays as it was.
#include <llvm-c/Core.h>

#include "xe/xe_internal.h"

static bool uses_in_block(LLVMValueRef inst, LLVMBasicBlockRef bb) {
  bool defined_callee = false;
  for (LLVMUseRef u = LLVMGetFirstUse(inst); u; u = LLVMGetNextUse(u)) {
    LLVMValueRef user = LLVMGetUser(u);
    if (!LLVMIsAInstruction(user) || LLVMGetInstructionParent(user) != bb) return false;
    if (LLVMIsACallInst(user)) {
      LLVMValueRef callee = LLVMGetCalledValue(user);
      defined_callee |= callee && LLVMIsAFunction(callee) && !LLVMIsDeclaration(callee);
    }
  }
  return defined_callee;
}

int xe_hoist_allocas(struct LLVMOpaqueModule* mod) {
  int moved = 0;
  LLVMBuilderRef b = NULL;
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
    if (LLVMIsDeclaration(f)) continue;
    LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(f);
    for (LLVMBasicBlockRef bb = LLVMGetNextBasicBlock(entry); bb; bb = LLVMGetNextBasicBlock(bb)) {
      LLVMValueRef next = NULL;
      for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = next) {
        next = LLVMGetNextInstruction(i);
        if (LLVMGetInstructionOpcode(i) != LLVMAlloca || !LLVMIsAConstantInt(LLVMGetOperand(i, 0)) ||
            !uses_in_block(i, bb))
          continue;
        if (!b) b = LLVMCreateBuilderInContext(LLVMGetModuleContext(mod));
        if (!b) return moved;
        LLVMPositionBuilderBefore(b, LLVMGetFirstInstruction(entry));
        LLVMInstructionRemoveFromParent(i);
        LLVMInsertIntoBuilder(b, i);
        ++moved;
      }
    }
  }
  if (b) LLVMDisposeBuilder(b);
  return moved;
}
