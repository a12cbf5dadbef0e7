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
#include <stdlib.h>
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

// ---- narrow vectors of more than 16 elements ----
// At 8 lanes (dg2, ZETILE_DG2_LOWERING=shared8) a lane holds twice the
// 16-lane code's elements: an op on a 16x16 chunk is 32 elements a lane.
// LLVM 22's SPIR-V backend splits such vectors of 32-bit elements while
// legalizing, but not of narrower ones: `unable to legalize instruction:
// <32 x s1> G_FCMP` and then `<32 x s16> G_TRUNC` ended the compile worker
// (the fp32 dot's bf16x3 split compares its operands for NaN, selects on
// the result and truncates to bf16 bits). Splitting them earlier, in the
// lane code (tried: compares and selects in pieces of 16 after lane
// distribution), does not survive LLVM's optimization: the shufflevector
// that puts the pieces together makes it merge them back into one wide
// compare and select. So it is done here, after optimization:
//  - an elementwise instruction (compare, select, binary op, cast) with a
//    vector of N > 16 elements narrower than 32 bits among its operands or
//    result becomes N / 16 instructions on 16 elements (the widest vector
//    SPIR-V's OpenCL environment has);
//  - a narrow result stays in its pieces: the pieces feed the next split
//    instruction, a shufflevector or an extractelement of constant index
//    reading it is rebuilt from them; only other readers get the whole
//    vector back (which the backend may still refuse: a phi, a store);
//  - a 32-bit result is put back together (the backend splits those).
enum { NARROW_W = 16, NARROW_MAX = 16 };

typedef struct {
  LLVMValueRef whole;
  LLVMValueRef piece[NARROW_MAX];
  unsigned n;
} narrow_split_t;

static bool wide_narrow_type(LLVMTypeRef t) {
  if (LLVMGetTypeKind(t) != LLVMVectorTypeKind) return false;
  LLVMTypeRef et = LLVMGetElementType(t);
  LLVMTypeKind k = LLVMGetTypeKind(et);
  unsigned n = LLVMGetVectorSize(t);
  bool narrow = (k == LLVMIntegerTypeKind && LLVMGetIntTypeWidth(et) < 32) ||
                k == LLVMHalfTypeKind || k == LLVMBFloatTypeKind;
  return narrow && n > NARROW_W && n % NARROW_W == 0 && n / NARROW_W <= NARROW_MAX;
}

static bool elementwise(LLVMOpcode op) {
  switch (op) {
    case LLVMFCmp: case LLVMICmp: case LLVMSelect: case LLVMFNeg:
    case LLVMAdd: case LLVMSub: case LLVMMul: case LLVMUDiv: case LLVMSDiv: case LLVMURem:
    case LLVMSRem: case LLVMShl: case LLVMLShr: case LLVMAShr: case LLVMAnd: case LLVMOr:
    case LLVMXor: case LLVMFAdd: case LLVMFSub: case LLVMFMul: case LLVMFDiv: case LLVMFRem:
    case LLVMZExt: case LLVMSExt: case LLVMTrunc: case LLVMFPTrunc: case LLVMFPExt:
    case LLVMUIToFP: case LLVMSIToFP: case LLVMFPToUI: case LLVMFPToSI: case LLVMBitCast:
      return true;
    default:
      return false;
  }
}

// An elementwise instruction on vectors of N > 16 elements (every vector
// operand of N) with a narrow one among them (*narrow), or none.
static bool wide_inst(LLVMValueRef inst, bool* narrow) {
  *narrow = false;
  if (!elementwise(LLVMGetInstructionOpcode(inst))) return false;
  LLVMTypeRef rt = LLVMTypeOf(inst);
  if (LLVMGetTypeKind(rt) != LLVMVectorTypeKind) return false;
  unsigned n = LLVMGetVectorSize(rt);
  if (n <= NARROW_W || n % NARROW_W || n / NARROW_W > NARROW_MAX) return false;
  *narrow = wide_narrow_type(rt);
  for (int i = 0; i < LLVMGetNumOperands(inst); ++i) {
    LLVMTypeRef t = LLVMTypeOf(LLVMGetOperand(inst, i));
    if (LLVMGetTypeKind(t) != LLVMVectorTypeKind) continue;
    if (LLVMGetVectorSize(t) != n) return false;  // (a bitcast changing the count)
    *narrow |= wide_narrow_type(t);
  }
  return true;
}

static narrow_split_t* split_of(narrow_split_t* done, size_t ndone, LLVMValueRef v) {
  for (size_t i = 0; i < ndone; ++i)
    if (done[i].whole == v) return &done[i];
  return NULL;
}

static LLVMValueRef i32c(LLVMValueRef like, unsigned v) {
  return LLVMConstInt(LLVMInt32TypeInContext(LLVMGetTypeContext(LLVMTypeOf(like))), v, 0);
}

// Elements 16p..16p+15 of v, or the piece of an instruction split before.
static LLVMValueRef narrow_piece(LLVMBuilderRef b, narrow_split_t* done, size_t ndone,
                                 LLVMValueRef v, unsigned p) {
  narrow_split_t* s = split_of(done, ndone, v);
  if (s) return s->piece[p];
  LLVMValueRef mask[NARROW_W];
  for (unsigned j = 0; j < NARROW_W; ++j) mask[j] = i32c(v, p * NARROW_W + j);
  return LLVMBuildShuffleVector(b, v, LLVMGetPoison(LLVMTypeOf(v)),
                                LLVMConstVector(mask, NARROW_W), "");
}

// vec[0..n) put together (a tree of shufflevectors).
static LLVMValueRef concat_pieces(LLVMBuilderRef b, LLVMValueRef* vec, unsigned n) {
  if (n == 1) return vec[0];
  LLVMValueRef lo = concat_pieces(b, vec, n / 2), hi = concat_pieces(b, vec + n / 2, n - n / 2);
  unsigned m = LLVMGetVectorSize(LLVMTypeOf(lo)) + LLVMGetVectorSize(LLVMTypeOf(hi));
  LLVMValueRef mask[NARROW_W * NARROW_MAX];
  for (unsigned j = 0; j < m; ++j) mask[j] = i32c(lo, j);
  return LLVMBuildShuffleVector(b, lo, hi, LLVMConstVector(mask, m), "");
}

static LLVMValueRef build_piece(LLVMBuilderRef b, LLVMValueRef inst, LLVMValueRef* ops,
                                LLVMTypeRef pt) {
  LLVMOpcode op = LLVMGetInstructionOpcode(inst);
  LLVMValueRef r;
  if (op == LLVMFCmp)
    r = LLVMBuildFCmp(b, LLVMGetFCmpPredicate(inst), ops[0], ops[1], "");
  else if (op == LLVMICmp)
    r = LLVMBuildICmp(b, LLVMGetICmpPredicate(inst), ops[0], ops[1], "");
  else if (op == LLVMSelect)
    r = LLVMBuildSelect(b, ops[0], ops[1], ops[2], "");
  else if (op == LLVMFNeg)
    r = LLVMBuildFNeg(b, ops[0], "");
  else if (LLVMGetNumOperands(inst) == 2)
    r = LLVMBuildBinOp(b, op, ops[0], ops[1], "");
  else
    r = LLVMBuildCast(b, op, ops[0], pt, "");
  // (nuw/nsw/exact are left out: fewer promises, same values.)
  if (LLVMIsAInstruction(r) && LLVMCanValueUseFastMathFlags(inst) &&
      LLVMCanValueUseFastMathFlags(r))
    LLVMSetFastMathFlags(r, LLVMGetFastMathFlags(inst));
  return r;
}

// A shufflevector or constant-index extractelement reading split values,
// rebuilt from their pieces; false if `user` is neither.
static bool read_pieces(LLVMBuilderRef b, narrow_split_t* done, size_t ndone, LLVMValueRef user) {
  LLVMOpcode op = LLVMGetInstructionOpcode(user);
  LLVMPositionBuilderBefore(b, user);
  if (op == LLVMExtractElement) {
    narrow_split_t* s = split_of(done, ndone, LLVMGetOperand(user, 0));
    LLVMValueRef ix = LLVMGetOperand(user, 1);
    if (!s || !LLVMIsAConstantInt(ix)) return false;
    unsigned long long i = LLVMConstIntGetZExtValue(ix);
    if (i >= (unsigned long long)s->n * NARROW_W) return false;
    LLVMValueRef r = LLVMBuildExtractElement(b, s->piece[i / NARROW_W],
                                             i32c(user, (unsigned)(i % NARROW_W)), "");
    LLVMReplaceAllUsesWith(user, r);
    LLVMInstructionEraseFromParent(user);
    return true;
  }
  if (op != LLVMShuffleVector) return false;
  LLVMValueRef x = LLVMGetOperand(user, 0), y = LLVMGetOperand(user, 1);
  unsigned nx = LLVMGetVectorSize(LLVMTypeOf(x)), nm = LLVMGetNumMaskElements(user);
  if (nm > NARROW_W * NARROW_MAX) return false;
  // Each result element: the piece (or unsplit operand) and index it comes from.
  LLVMValueRef src[2] = {NULL, NULL}, mask[NARROW_W * NARROW_MAX];
  LLVMValueRef from[NARROW_W * NARROW_MAX];
  unsigned at[NARROW_W * NARROW_MAX];
  int nsrc = 0;
  bool one_shuffle = true;
  for (unsigned j = 0; j < nm; ++j) {
    int e = LLVMGetMaskValue(user, j);
    from[j] = NULL;
    if (e < 0) continue;
    LLVMValueRef v = (unsigned)e < nx ? x : y;
    unsigned i = (unsigned)e < nx ? (unsigned)e : (unsigned)e - nx;
    narrow_split_t* s = split_of(done, ndone, v);
    from[j] = s ? s->piece[i / NARROW_W] : v;
    at[j] = s ? i % NARROW_W : i;
    int k = 0;
    while (k < nsrc && src[k] != from[j]) ++k;
    if (k == nsrc) {
      if (nsrc == 2 || (nsrc == 1 && LLVMTypeOf(src[0]) != LLVMTypeOf(from[j])))
        one_shuffle = false;
      else
        src[nsrc++] = from[j];
    }
  }
  LLVMValueRef r;
  if (one_shuffle && nsrc) {
    unsigned n0 = LLVMGetVectorSize(LLVMTypeOf(src[0]));
    for (unsigned j = 0; j < nm; ++j)
      mask[j] = !from[j] ? LLVMGetUndef(LLVMInt32TypeInContext(LLVMGetTypeContext(LLVMTypeOf(x))))
                         : i32c(x, at[j] + (from[j] == src[0] ? 0 : n0));
    r = LLVMBuildShuffleVector(b, src[0], nsrc > 1 ? src[1] : LLVMGetPoison(LLVMTypeOf(src[0])),
                               LLVMConstVector(mask, nm), "");
  } else {
    r = LLVMGetPoison(LLVMTypeOf(user));
    for (unsigned j = 0; j < nm; ++j)
      if (from[j])
        r = LLVMBuildInsertElement(b, r, LLVMBuildExtractElement(b, from[j], i32c(x, at[j]), ""),
                                   i32c(x, j), "");
  }
  LLVMReplaceAllUsesWith(user, r);
  LLVMInstructionEraseFromParent(user);
  return true;
}

int xe_split_wide_narrow(LLVMModuleRef mod) {
  size_t ndone = 0, cap = 0;
  narrow_split_t* done = NULL;
  LLVMBuilderRef b = NULL;
  // In program order (blocks in layout order): a split operand's pieces
  // were made before an instruction that dominates this one, as the operand
  // itself did (phis are not split: their operands are taken apart where
  // they are read). An instruction reading split pieces is split too, 32-bit
  // or not: the pieces go on to the next reader, and a bitcast of the
  // shufflevector putting them together came out as invalid SPIR-V
  // (OpCompositeExtract of an int from a float vector).
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef inst = LLVMGetFirstInstruction(bb); inst;
           inst = LLVMGetNextInstruction(inst)) {
        bool narrow = false;
        if (!wide_inst(inst, &narrow)) continue;
        int nops = LLVMGetNumOperands(inst);
        for (int i = 0; i < nops && !narrow; ++i)
          narrow = split_of(done, ndone, LLVMGetOperand(inst, i)) != NULL;
        if (!narrow || nops > 3) continue;
        if (ndone == cap) {
          cap = cap ? 2 * cap : 32;
          narrow_split_t* g = realloc(done, cap * sizeof *g);
          if (!g) {
            free(done);
            if (b) LLVMDisposeBuilder(b);
            return -1;
          }
          done = g;
        }
        if (!b) b = LLVMCreateBuilderInContext(LLVMGetModuleContext(mod));
        LLVMTypeRef rt = LLVMTypeOf(inst);
        narrow_split_t s = {.whole = inst, .n = LLVMGetVectorSize(rt) / NARROW_W};
        LLVMTypeRef pt = LLVMVectorType(LLVMGetElementType(rt), NARROW_W);
        LLVMPositionBuilderBefore(b, inst);
        for (unsigned p = 0; p < s.n; ++p) {
          LLVMValueRef ops[3];
          for (int i = 0; i < nops; ++i) {
            LLVMValueRef v = LLVMGetOperand(inst, i);
            ops[i] = LLVMGetTypeKind(LLVMTypeOf(v)) == LLVMVectorTypeKind
                         ? narrow_piece(b, done, ndone, v, p)
                         : v;
          }
          s.piece[p] = build_piece(b, inst, ops, pt);
        }
        done[ndone++] = s;  // whole until its readers are rebuilt (below)
      }
  if (!ndone) return 0;
  // Readers that can take the pieces, then the wholes: erased when nothing
  // reads them any more (last first: a later one may read an earlier one),
  // put back together for any other reader.
  // (Readers are listed first: rebuilding one erases it, and a shuffle of
  // a value with itself is two uses.)
  for (size_t k = 0; k < ndone; ++k) {
    LLVMValueRef users[64];
    int nu = 0;
    for (LLVMUseRef u = LLVMGetFirstUse(done[k].whole); u && nu < 64; u = LLVMGetNextUse(u)) {
      LLVMValueRef user = LLVMGetUser(u);
      int j = 0;
      while (j < nu && users[j] != user) ++j;
      if (j == nu) users[nu++] = user;
    }
    for (int j = 0; j < nu; ++j)
      if (!split_of(done, ndone, users[j])) read_pieces(b, done, ndone, users[j]);
  }
  for (size_t k = ndone; k-- > 0;) {
    LLVMValueRef inst = done[k].whole;
    if (LLVMGetFirstUse(inst)) {
      LLVMPositionBuilderBefore(b, inst);
      LLVMReplaceAllUsesWith(inst, concat_pieces(b, done[k].piece, done[k].n));
    }
    LLVMInstructionEraseFromParent(inst);
  }
  LLVMDisposeBuilder(b);
  free(done);
  return (int)ndone;
}

// ---- one-element shuffles ----
// A 2-D tile both atomically added and reduced (tl.atomic_add(P, x) and
// tl.sum(x, 0): a 32x16 fp32 tile at 1 warp, or a dot's copies stored and
// reduced) came out as invalid SPIR-V: `OpCompositeExtract %uint %r
// 1162307424`, the float atomic's cmpxchg result read at an index that
// changes from run to run. llvm-reduce (llc-22 -O2, spirv-val) keeps a
// loop with a cmpxchg and its extractvalue, and one `shufflevector <8 x
// float> %v, poison, <1 x i32> <i32 k>` (InstCombine's form of the
// reduction's element extraction) elsewhere in the kernel; written as
// extractelement + insertelement the same module is valid. So every
// shufflevector with a one-element result is rewritten that way here
// (one element is one register either way: no cost).
int xe_unshuffle_single(LLVMModuleRef mod) {
  int count = 0;
  LLVMBuilderRef b = NULL;
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef inst = LLVMGetFirstInstruction(bb); inst;) {
        LLVMValueRef next = LLVMGetNextInstruction(inst);
        LLVMTypeRef rt = LLVMTypeOf(inst);
        if (LLVMGetInstructionOpcode(inst) != LLVMShuffleVector ||
            LLVMGetTypeKind(rt) != LLVMVectorTypeKind || LLVMGetVectorSize(rt) != 1 ||
            LLVMGetNumMaskElements(inst) != 1) {
          inst = next;
          continue;
        }
        if (!b) b = LLVMCreateBuilderInContext(LLVMGetModuleContext(mod));
        LLVMPositionBuilderBefore(b, inst);
        LLVMValueRef src = LLVMGetOperand(inst, 0);
        unsigned n = LLVMGetVectorSize(LLVMTypeOf(src));
        int k = LLVMGetMaskValue(inst, 0);
        LLVMValueRef r = LLVMGetPoison(rt);
        if (k != LLVMGetUndefMaskElem()) {
          if ((unsigned)k >= n) src = LLVMGetOperand(inst, 1);
          LLVMTypeRef i32 = LLVMInt32TypeInContext(LLVMGetModuleContext(mod));
          LLVMValueRef x = LLVMBuildExtractElement(b, src, LLVMConstInt(i32, (unsigned)k % n, 0), "");
          r = LLVMBuildInsertElement(b, r, x, LLVMConstInt(i32, 0, 0), "");
        }
        LLVMReplaceAllUsesWith(inst, r);
        LLVMInstructionEraseFromParent(inst);
        ++count;
        inst = next;
      }
  if (b) LLVMDisposeBuilder(b);
  return count;
}
