// The accumulator rescale of an online softmax (FlashAttention's
// `acc = acc * alpha[:, None]; acc = tl.dot(p, v, acc)`) in a form Intel's
// IGC allocates in place (issue 12, session 22). An LLVM IR rewrite before
// LLVM's passes (xe_spirv_o0.c, select_module).
//
// Why: the KV loop carries the accumulator as `<8 x float>` phis, one per
// 8x16 DPAS block, each multiplied by the rows' alpha and then read by a
// DPAS as its C operand. IGC 1.0.12504 (Debian's) keeps a vector phi whole
// only when a DPAS reads it (its scalarizer's rule); every other one
// becomes eight single-register phis, and the extracts of a vector it keeps
// are placed right after the vector's definition. With the multiply in
// between, either form leaves 128 scattered registers live across the
// step's QK^T at head dim 128 (8 subgroups, 16 query rows each): 76-107
// registers spilled on pvc's compat path. Measured on the SPIR-V as text
// (bench/xe_attention_acc_probe.py): with the DPAS reading the phis
// directly and the loop not rotated (no exit phis), 0.
//
// The rewrite: `acc * alpha` equals `acc` exactly where every alpha is 1
// (the row maxima did not move), so the multiplies go into a branch taken
// when some element of some multiplier is not 1; there each accumulator
// first passes through a DPAS with zero A and B (C + 0 = C: IGC then keeps
// the phi a vector, and the extracts for the multiply sit in that branch),
// and the DPAS read a phi of the two paths. LLVM's loop rotation is left
// out of the passes for such modules (select_module): rotated, the loop's
// exit phis of the accumulator are split the same way (90 spilled).
// Cost: 16 more DPAS in the rescale branch at head dim 128 (the branch is
// taken while some row's maximum still grows). Differences from the plain
// multiply, only where the branch is taken: a -0 accumulator element
// becomes +0 (C + 0) before it is scaled.
// ZETILE_XE_LAZY_RESCALE=0 keeps the multiply as written (in the cache key).
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/DebugInfo.h>

#include "xe/xe_internal.h"

#define MAX_ACC 64
// Which loops (measured, pvc compat, 256 GRF, session 22): 16 accumulator
// blocks (128 of pvc's 256 registers at 16 lanes), at least 8 sharing each
// multiplier (a row block of 128 or more columns). Head dim 128 at 16 rows
// a subgroup (2 multipliers x 8): 76-107 -> 0 spilled. Not rewritten, each
// worse with the branch or no better: 8 blocks (head dim 64: IGC already
// allocates the multiply in place, 0 spilled); tutorial 06's forward at 4
// subgroups, head dim 64 (32 rows: 4 multipliers x 4, beside a QK^T tile as
// large as the accumulator) 165 -> 438 (scripts/tutorials_compile.py); head
// dim 128 at 4 subgroups (32 blocks, the whole register file) 563 -> 854.
#define ACC_BLOCKS 16
#define MIN_PER_MULTIPLIER 8

typedef struct {
  LLVMValueRef phi;  // the loop-carried accumulator block
  LLVMValueRef mul;  // phi * m (or m * phi)
  LLVMValueRef m;    // the multiplier
  LLVMValueRef dpas; // one DPAS call reading `mul` as C (callee, arg types)
  bool phi_first;
} acc_t;

static bool is_v8f32(LLVMTypeRef t) {
  return LLVMGetTypeKind(t) == LLVMVectorTypeKind && LLVMGetVectorSize(t) == 8 &&
         LLVMGetTypeKind(LLVMGetElementType(t)) == LLVMFloatTypeKind;
}

// A call of a DPAS builtin (intel_sub_group_*_matrix_mad_k*) whose last
// argument, and only that one, is v.
static bool dpas_reads_as_c(LLVMValueRef call, LLVMValueRef v) {
  if (!LLVMIsACallInst(call)) return false;
  LLVMValueRef f = LLVMGetCalledValue(call);
  if (!f || !LLVMIsAFunction(f)) return false;
  size_t len;
  const char* name = LLVMGetValueName2(f, &len);
  if (!strstr(name, "matrix_mad_k")) return false;
  unsigned n = LLVMGetNumArgOperands(call);
  if (n != 3 || LLVMGetOperand(call, 2) != v) return false;
  return LLVMGetOperand(call, 0) != v && LLVMGetOperand(call, 1) != v;
}

// The phi's one fmul user, read only by DPAS as their C operand.
static bool match_acc(LLVMValueRef phi, acc_t* a) {
  LLVMValueRef mul = NULL;
  for (LLVMUseRef u = LLVMGetFirstUse(phi); u; u = LLVMGetNextUse(u)) {
    LLVMValueRef user = LLVMGetUser(u);
    if (LLVMIsAInstruction(user) && LLVMGetInstructionOpcode(user) == LLVMFMul) {
      if (mul && mul != user) return false;
      mul = user;
    }
  }
  if (!mul || LLVMGetInstructionParent(mul) == LLVMGetInstructionParent(phi)) return false;
  bool first = LLVMGetOperand(mul, 0) == phi;
  LLVMValueRef m = LLVMGetOperand(mul, first ? 1 : 0);
  if (m == phi) return false;
  LLVMValueRef dpas = NULL;
  for (LLVMUseRef u = LLVMGetFirstUse(mul); u; u = LLVMGetNextUse(u)) {
    if (!dpas_reads_as_c(LLVMGetUser(u), mul)) return false;
    dpas = LLVMGetUser(u);
  }
  if (!dpas) return false;
  *a = (acc_t){phi, mul, m, dpas, first};
  return true;
}

// Position of inst in its block (0 = first).
static unsigned position(LLVMValueRef inst) {
  unsigned n = 0;
  for (LLVMValueRef i = LLVMGetPreviousInstruction(inst); i; i = LLVMGetPreviousInstruction(i)) ++n;
  return n;
}

// Phis of `succ` that name `from` as an incoming block are rebuilt naming
// `to` (the C API sets no incoming block).
static void retarget_phis(LLVMBuilderRef b, LLVMBasicBlockRef succ, LLVMBasicBlockRef from,
                          LLVMBasicBlockRef to) {
  LLVMValueRef i = LLVMGetFirstInstruction(succ);
  while (i && LLVMIsAPHINode(i)) {
    LLVMValueRef next = LLVMGetNextInstruction(i);
    unsigned n = LLVMCountIncoming(i);
    bool hit = false;
    for (unsigned k = 0; k < n; ++k) hit |= LLVMGetIncomingBlock(i, k) == from;
    if (hit) {
      LLVMPositionBuilderBefore(b, i);
      size_t len;
      const char* name = LLVMGetValueName2(i, &len);
      LLVMValueRef p = LLVMBuildPhi(b, LLVMTypeOf(i), "");
      for (unsigned k = 0; k < n; ++k) {
        LLVMValueRef v = LLVMGetIncomingValue(i, k);
        LLVMBasicBlockRef bb = LLVMGetIncomingBlock(i, k);
        if (bb == from) bb = to;
        LLVMAddIncoming(p, &v, &bb, 1);
      }
      LLVMReplaceAllUsesWith(i, p);
      LLVMInstructionEraseFromParent(i);
      LLVMSetValueName2(p, name, len);
    }
    i = next;
  }
}

// The branch's test taken over the whole subgroup (OpenCL's sub_group_any):
// the rescale branch holds DPAS, which every lane of a subgroup must reach
// together, and a multiplier may differ between lanes (a per-column scale
// `acc * s[None, :]` matches the pattern as well as attention's per-row
// alpha, which every lane holds alike). Uniform, the branch is exact for
// both: lanes whose multipliers are all 1 multiply by 1.
static LLVMValueRef subgroup_any(LLVMBuilderRef b, LLVMModuleRef mod, LLVMValueRef cond,
                                 unsigned cc) {
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx);
  LLVMTypeRef fty = LLVMFunctionType(i32, &i32, 1, 0);
  LLVMValueRef f = LLVMGetNamedFunction(mod, "_Z13sub_group_anyi");
  if (!f) {
    f = LLVMAddFunction(mod, "_Z13sub_group_anyi", fty);
    LLVMSetFunctionCallConv(f, cc);
    unsigned k = LLVMGetEnumAttributeKindForName("convergent", 10);
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(ctx, k, 0));
  }
  LLVMValueRef arg = LLVMBuildZExt(b, cond, i32, "");
  LLVMValueRef any = LLVMBuildCall2(b, fty, f, &arg, 1, "zt.alpha.any");
  LLVMSetInstructionCallConv(any, cc);
  return LLVMBuildICmp(b, LLVMIntNE, any, LLVMConstInt(i32, 0, 0), "zt.rescale.any");
}

// One loop header's accumulators, all multiplied in block `body`.
static bool rewrite(LLVMValueRef fn, acc_t* acc, int n) {
  LLVMBasicBlockRef body = LLVMGetInstructionParent(acc[0].mul);
  LLVMValueRef first = acc[0].mul;
  for (int i = 0; i < n; ++i) {
    if (LLVMGetInstructionParent(acc[i].mul) != body) return false;
    if (position(acc[i].mul) < position(first)) first = acc[i].mul;
  }
  // Every multiplier must be there before the branch.
  unsigned at = position(first);
  for (int i = 0; i < n; ++i) {
    LLVMValueRef m = acc[i].m;
    if (LLVMIsAConstant(m)) return false;  // the branch's test would fold away
    if (LLVMIsAInstruction(m) && LLVMGetInstructionParent(m) == body && position(m) >= at)
      return false;
  }
  LLVMContextRef ctx = LLVMGetModuleContext(LLVMGetGlobalParent(fn));
  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  LLVMSetCurrentDebugLocation2(b, LLVMInstructionGetDebugLoc(first));
  LLVMPositionBuilderBefore(b, first);
  LLVMTypeRef v8 = LLVMTypeOf(acc[0].phi);
  LLVMTypeRef f32 = LLVMGetElementType(v8), i32 = LLVMInt32TypeInContext(ctx);
  LLVMValueRef ones[8];
  for (int k = 0; k < 8; ++k) ones[k] = LLVMConstReal(f32, 1.0);
  LLVMValueRef one = LLVMConstVector(ones, 8), cond = NULL;
  LLVMValueRef seen[MAX_ACC];
  int nseen = 0;
  for (int i = 0; i < n; ++i) {
    bool dup = false;
    for (int k = 0; k < nseen; ++k) dup |= seen[k] == acc[i].m;
    if (!dup) seen[nseen++] = acc[i].m;
  }
  if (n < MIN_PER_MULTIPLIER * nseen) {
    LLVMDisposeBuilder(b);
    return false;
  }
  for (int i = 0; i < nseen; ++i) {
    // une: a NaN multiplier takes the branch too.
    LLVMValueRef ne = LLVMBuildFCmp(b, LLVMRealUNE, seen[i], one, "zt.alpha.ne1");
    for (int k = 0; k < 8; ++k) {
      LLVMValueRef e = LLVMBuildExtractElement(b, ne, LLVMConstInt(i32, k, 0), "");
      cond = cond ? LLVMBuildOr(b, cond, e, "") : e;
    }
  }
  cond = subgroup_any(b, LLVMGetGlobalParent(fn), cond, LLVMGetInstructionCallConv(acc[0].dpas));
  LLVMBasicBlockRef join = LLVMInsertBasicBlockInContext(ctx, LLVMGetNextBasicBlock(body),
                                                         "zt.rescale.join");
  LLVMBasicBlockRef scale = LLVMInsertBasicBlockInContext(ctx, join, "zt.rescale");
  // The rescale branch: identity DPAS, then the multiply as written.
  LLVMPositionBuilderAtEnd(b, scale);
  LLVMValueRef scaled[MAX_ACC];
  for (int i = 0; i < n; ++i) {
    LLVMValueRef d = acc[i].dpas, callee = LLVMGetCalledValue(d);
    LLVMValueRef args[3] = {LLVMConstNull(LLVMTypeOf(LLVMGetOperand(d, 0))),
                            LLVMConstNull(LLVMTypeOf(LLVMGetOperand(d, 1))), acc[i].phi};
    LLVMValueRef id = LLVMBuildCall2(b, LLVMGetCalledFunctionType(d), callee, args, 3,
                                     "zt.acc.id");
    LLVMSetInstructionCallConv(id, LLVMGetInstructionCallConv(d));
    LLVMValueRef s = acc[i].phi_first ? LLVMBuildFMul(b, id, acc[i].m, "zt.acc.scaled")
                                      : LLVMBuildFMul(b, acc[i].m, id, "zt.acc.scaled");
    if (LLVMCanValueUseFastMathFlags(acc[i].mul))
      LLVMSetFastMathFlags(s, LLVMGetFastMathFlags(acc[i].mul));
    scaled[i] = s;
  }
  LLVMBuildBr(b, join);
  // The join: a phi per accumulator replaces the multiply.
  LLVMPositionBuilderAtEnd(b, join);
  for (int i = 0; i < n; ++i) {
    LLVMValueRef p = LLVMBuildPhi(b, v8, "zt.acc");
    LLVMValueRef vals[2] = {acc[i].phi, scaled[i]};
    LLVMBasicBlockRef from[2] = {body, scale};
    LLVMAddIncoming(p, vals, from, 2);
    LLVMReplaceAllUsesWith(acc[i].mul, p);
    LLVMInstructionEraseFromParent(acc[i].mul);
  }
  // The rest of the body moves to the join block, its terminator with it.
  LLVMValueRef moved = LLVMGetNextInstruction(cond);
  while (moved) {
    LLVMValueRef next = LLVMGetNextInstruction(moved);
    LLVMInstructionRemoveFromParent(moved);
    LLVMInsertIntoBuilder(b, moved);
    moved = next;
  }
  LLVMPositionBuilderAtEnd(b, body);
  LLVMBuildCondBr(b, cond, scale, join);
  LLVMValueRef term = LLVMGetBasicBlockTerminator(join);
  for (unsigned k = 0, ns = term ? LLVMGetNumSuccessors(term) : 0; k < ns; ++k)
    retarget_phis(b, LLVMGetSuccessor(term, k), body, join);
  LLVMDisposeBuilder(b);
  return true;
}

int xe_lazy_rescale(struct LLVMOpaqueModule* mod) {
  const char* off = getenv("ZETILE_XE_LAZY_RESCALE");
  if (off && strcmp(off, "0") == 0) return 0;
  int done = 0;
  for (LLVMValueRef fn = LLVMGetFirstFunction(mod); fn; fn = LLVMGetNextFunction(fn)) {
    if (LLVMIsDeclaration(fn)) continue;
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(fn); bb; bb = LLVMGetNextBasicBlock(bb)) {
      acc_t acc[MAX_ACC];
      int n = 0;
      for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i && LLVMIsAPHINode(i);
           i = LLVMGetNextInstruction(i)) {
        if (!is_v8f32(LLVMTypeOf(i)) || n == MAX_ACC) continue;
        if (match_acc(i, &acc[n])) ++n;
      }
      if (n == ACC_BLOCKS && rewrite(fn, acc, n)) ++done;
    }
  }
  return done;
}
