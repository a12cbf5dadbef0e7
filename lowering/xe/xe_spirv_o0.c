// SPIR-V from the optimized LLVM IR with the backend's instruction selection
// at -O0: the last resort of emit_validated_spirv (xe_lower.c).
//
// Why: LLVM 22's SPIR-V backend, at -O1 and above, mistypes an integer chain
// that its GlobalISel combiner rewrites. Reduced by llvm-reduce from tutorial
// 06's causal backward kernel (the program id times BLOCK_N1 as the start of
// a loop that indvars widens to i64):
//
//   %2 = trunc i64 %0 to i32
//   %3 = shl i32 %2, 1
//   %4 = zext i32 %3 to i64
//   loop: %iv = phi i64 [ %4, ... ], [ %iv.next, ... ]  ...
//
// comes out as `OpShiftLeftLogical %uint %0(ulong)` and a phi of %uint where
// LLVM has i64: invalid (spirv-val refuses it) and wrong. `llc -O0` on the
// same IR, which skips those combines, gives valid SPIR-V. The module is
// already optimized when it reaches instruction selection
// (gpu-module-to-binary{format=llvm} returns that bitcode: SROA, inlining,
// indvars and the rest have run), so only the selection is less clever;
// IGC optimizes the SPIR-V again in any case. Other kernels keep -O2: this
// runs only for a module whose -O2 SPIR-V failed validation.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/BitReader.h>
#include <llvm-c/BitWriter.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "mlir-c/BuiltinAttributes.h"

#include "xe/xe_internal.h"

void LLVMInitializeSPIRVTargetInfo(void);
void LLVMInitializeSPIRVTarget(void);
void LLVMInitializeSPIRVTargetMC(void);
void LLVMInitializeSPIRVAsmPrinter(void);

static const char kTriple[] = XE_SPIRV_TRIPLE;

zt_status_t xe_spirv_target_machine(int level, LLVMTargetMachineRef* out) {
  *out = NULL;
  LLVMInitializeSPIRVTargetInfo();
  LLVMInitializeSPIRVTarget();
  LLVMInitializeSPIRVTargetMC();
  LLVMInitializeSPIRVAsmPrinter();
  char* err = NULL;
  LLVMTargetRef target;
  zt_status_t s = NULL;
  if (LLVMGetTargetFromTriple(kTriple, &target, &err))
    s = zt_make_status(ZT_STATUS_UNSUPPORTED, "Xe SPIR-V: no SPIR-V target: %s",
                       err ? err : "?");
  LLVMDisposeMessage(err);
  if (s) return s;
  *out = LLVMCreateTargetMachine(target, kTriple, "", "", (LLVMCodeGenOptLevel)level,
                                 LLVMRelocDefault, LLVMCodeModelDefault);
  return *out ? NULL : zt_make_status(ZT_STATUS_INTERNAL, "Xe SPIR-V: target machine");
}

// The masked access helpers (xe_mask_calls.c, functions named zt_mcall_*):
// internal, spir_func, and `noinline` while LLVM's passes run (inlined,
// their branches would be back in the kernel for the passes and selection
// to handle one by one), `alwaysinline` for the SPIR-V (FunctionControl
// Inline: IGC inlines them).
static void mark_mask_helpers(LLVMModuleRef mod, bool for_passes) {
  unsigned noinl = LLVMGetEnumAttributeKindForName("noinline", 8);
  unsigned always = LLVMGetEnumAttributeKindForName("alwaysinline", 12);
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
    size_t len;
    const char* name = LLVMGetValueName2(f, &len);
    if (len < 9 || strncmp(name, "zt_mcall_", 9) != 0 || LLVMIsDeclaration(f)) continue;
    if (for_passes) {
      LLVMSetLinkage(f, LLVMInternalLinkage);
      LLVMSetFunctionCallConv(f, LLVMSPIRFUNCCallConv);
      for (LLVMUseRef u = LLVMGetFirstUse(f); u; u = LLVMGetNextUse(u)) {
        LLVMValueRef call = LLVMGetUser(u);
        if (LLVMIsACallInst(call)) LLVMSetInstructionCallConv(call, LLVMSPIRFUNCCallConv);
      }
      LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(ctx, noinl, 0));
    } else {
      LLVMRemoveEnumAttributeAtIndex(f, LLVMAttributeFunctionIndex, noinl);
      LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                              LLVMCreateEnumAttribute(ctx, always, 0));
    }
  }
}

// The loop rotation of xe_lower.c's short pass list, left out for modules
// whose softmax rescale xe_lazy_rescale.c rewrote: rotated, the loop's
// exit phis of the accumulator are scalarized by IGC and spill (90
// registers at head dim 128, bench/xe_attention_acc_probe.py).
static const char kRotate[] = "loop-rotate<header-duplication;no-prepare-for-lto>,";

// Bitcode to SPIR-V (under the emission lock: the backend's state is
// process-wide): `passes`, when given, run first through LLVM's new pass
// manager with the tuning gpu-module-to-binary uses (MLIR's
// makeOptimizingTransformer: unrolling, interleaving and both vectorizers
// on), then instruction selection at `level`.
// `mod` (NULL: s is set) lives in ctx; both are kept in the ring below.
static zt_status_t select_module(LLVMContextRef ctx, LLVMModuleRef mod, zt_status_t s,
                                 const char* passes, LLVMCodeGenOptLevel level,
                                 LLVMMemoryBufferRef* spv) {
  char* err = NULL;
  LLVMTargetMachineRef tm = NULL;
  if (!s) s = xe_spirv_target_machine(level, &tm);
  if (!s) mark_mask_helpers(mod, true);
  // Before the passes, so that SROA sees them (xe_hoist_allocas.c).
  if (!s && passes) xe_hoist_allocas(mod);
  // The online-softmax rescale in a branch (xe_lazy_rescale.c), on the
  // short pass list only; LLVM then does not rotate the module's loops.
  char* unrotated = NULL;
  if (!s && passes && strstr(passes, kRotate) && xe_lazy_rescale(mod) > 0) {
    const char* at = strstr(passes, kRotate);
    size_t n = strlen(passes), cut = strlen(kRotate);
    unrotated = malloc(n + 1);
    if (!unrotated) {
      s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe SPIR-V: pass list");
    } else {
      memcpy(unrotated, passes, (size_t)(at - passes));
      memcpy(unrotated + (at - passes), at + cut, n - (size_t)(at - passes) - cut + 1);
      passes = unrotated;
    }
  }
  if (!s && passes) {
    double t0 = zt_timing_now_ms();
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMPassBuilderOptionsSetLoopUnrolling(po, 1);
    LLVMPassBuilderOptionsSetLoopInterleaving(po, 1);
    LLVMPassBuilderOptionsSetLoopVectorization(po, 1);
    LLVMPassBuilderOptionsSetSLPVectorization(po, 1);
    LLVMErrorRef e = LLVMRunPasses(mod, passes, tm, po);
    LLVMDisposePassBuilderOptions(po);
    if (e) {
      char* msg = LLVMGetErrorMessage(e);
      s = zt_make_status(ZT_STATUS_INTERNAL, "Xe SPIR-V: LLVM passes '%s': %s", passes, msg);
      LLVMDisposeErrorMessage(msg);
    }
    zt_timing_record("Xe SPIR-V emission: LLVM passes", zt_timing_now_ms() - t0);
  }
  if (!s) mark_mask_helpers(mod, false);
  // Before selection, on every route here (xe_llvm_legalize.c).
  if (!s) xe_expand_bitreverse(mod);
  if (!s && xe_split_wide_narrow(mod) < 0)
    s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe SPIR-V: splitting wide narrow vectors");
  // ZETILE_XE_UNSHUFFLE=0 leaves one-element shufflevectors as they are:
  // what upstream's route (ZETILE_XE_LLVM_PASSES=upstream) selects, for
  // comparing the two routes' bytes (test_xe_emit_llvm_passes.py).
  const char* unshuffle = getenv("ZETILE_XE_UNSHUFFLE");
  if (!s && !(unshuffle && strcmp(unshuffle, "0") == 0)) xe_unshuffle_single(mod);
  double t1 = zt_timing_now_ms();
  if (!s && LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &err, spv))
    s = zt_make_status(ZT_STATUS_INTERNAL, "Xe SPIR-V: %s", err ? err : "emission failed");
  if (passes) zt_timing_record("Xe SPIR-V emission: selection", zt_timing_now_ms() - t1);
  free(unrotated);
  LLVMDisposeMessage(err);
  if (tm) LLVMDisposeTargetMachine(tm);
  // The backend's stale module state (xe_lower.c, llvm/llvm-project#160613)
  // shows up when a new module's objects land where an earlier module's
  // were: modules emitted this way, each in a fresh context, met it within
  // the first ~10 emissions of a process (the same route through
  // gpu-module-to-binary, ~1 in 150). Keeping the last few contexts alive
  // until later emissions moves the reuse away: 1 in 150 here too (the caller
  // emits a module that came out invalid once more before giving up).
  // Called under the emission lock, which guards the ring.
  enum { KEEP = 8 };
  static LLVMModuleRef kept_mod[KEEP];
  static LLVMContextRef kept_ctx[KEEP];
  static unsigned kept_next;
  unsigned i = kept_next++ % KEEP;
  if (kept_ctx[i]) {
    if (kept_mod[i]) LLVMDisposeModule(kept_mod[i]);
    LLVMContextDispose(kept_ctx[i]);
  }
  kept_mod[i] = mod;
  kept_ctx[i] = ctx;
  return s;
}

static zt_status_t select_spirv(const char* bc, size_t n, const char* passes,
                                LLVMCodeGenOptLevel level, LLVMMemoryBufferRef* spv) {
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMMemoryBufferRef in = LLVMCreateMemoryBufferWithMemoryRangeCopy(bc, n, "xe");
  LLVMModuleRef mod = NULL;
  zt_status_t s = NULL;
  if (LLVMParseBitcodeInContext2(ctx, in, &mod))
    s = zt_make_status(ZT_STATUS_INTERNAL, "Xe SPIR-V: unreadable bitcode");
  LLVMDisposeMemoryBuffer(in);
  return select_module(ctx, mod, s, passes, level, spv);
}

zt_status_t xe_emit_spirv_o0(zt_lower_ctx_t* lc, MlirModule m) {
  MlirModule copy = mlirModuleFromOperation(mlirOperationClone(mlirModuleGetOperation(m)));
  zt_status_t s = zt_mlir_run_pipeline(lc->ctx, copy, "builtin.module(gpu-module-to-binary{format=llvm})",
                                       "Xe LLVM IR for SPIR-V at -O0");
  MlirStringRef bc = {NULL, 0};
  // The bitcode gpu-module-to-binary{format=llvm} left in the gpu.binary.
  if (!s && (!xe_binary_object(copy, &bc) || bc.length <= 4))
    s = zt_make_status(ZT_STATUS_INTERNAL, "Xe SPIR-V at -O0: gpu.binary without bitcode");
  LLVMMemoryBufferRef spv = NULL;
  if (!s) {
    zt_spirv_emission_lock();
    s = select_spirv(bc.data, bc.length, NULL, LLVMCodeGenLevelNone, &spv);
    zt_spirv_emission_unlock();
  }
  mlirModuleDestroy(copy);
  if (!s) s = zt_spirv_validate(LLVMGetBufferStart(spv), LLVMGetBufferSize(spv));
  if (!s) s = zt_spirv_set_artifact(lc->artifact, LLVMGetBufferStart(spv), LLVMGetBufferSize(spv));
  if (spv) LLVMDisposeMemoryBuffer(spv);
  return s;
}

// The gpu.module's #xevm.target with its O level replaced by `level`:
// gpu-module-to-binary then runs LLVM's default pipeline of that level.
static zt_status_t set_target_opt_level(MlirModule m, int level) {
  MlirBlock top = mlirModuleGetBody(m);
  MlirStringRef targets_name = mlirStringRefCreateFromCString("targets");
  for (MlirOperation op = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    MlirAttribute ts = mlirOperationGetAttributeByName(op, targets_name);
    if (mlirAttributeIsNull(ts) || !mlirAttributeIsAArray(ts) ||
        mlirArrayAttrGetNumElements(ts) != 1)
      continue;
    zt_strbuf_t sb;
    zt_strbuf_init(&sb);
    mlirAttributePrint(ts, zt_strbuf_mlir_cb, &sb);
    zt_strbuf_append(&sb, "", 1);  // NUL
    // O = 2 is the default, which the printer leaves out.
    if (sb.failed) {
      zt_strbuf_deinit(&sb);
      return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe SPIR-V: target text");
    }
    char* at = strstr(sb.data, "#xevm.target<");
    char* o = strstr(sb.data, "O = ");
    zt_status_t s = NULL;
    char text[1024];
    if (o && o[4] >= '0' && o[4] <= '3' && !(o[5] >= '0' && o[5] <= '9')) {
      o[4] = (char)('0' + level);
      snprintf(text, sizeof text, "%s", sb.data);
    } else if (at && !o) {
      at += strlen("#xevm.target<");
      snprintf(text, sizeof text, "%.*sO = %d, %s", (int)(at - sb.data), sb.data, level, at);
    } else if (!at && !o && (at = strstr(sb.data, "#xevm.target"))) {
      // All parameters at their defaults (bmg): no angle brackets at all.
      at += strlen("#xevm.target");
      snprintf(text, sizeof text, "%.*s<O = %d>%s", (int)(at - sb.data), sb.data, level, at);
    } else {
      s = zt_make_status(ZT_STATUS_INTERNAL, "Xe SPIR-V: unexpected target %s", sb.data);
    }
    if (!s) {
      MlirAttribute na = mlirAttributeParseGet(mlirOperationGetContext(op),
                                               mlirStringRefCreateFromCString(text));
      if (mlirAttributeIsNull(na))
        s = zt_make_status(ZT_STATUS_INTERNAL, "Xe SPIR-V: cannot parse %s", text);
      else
        mlirOperationSetAttributeByName(op, targets_name, na);
    }
    zt_strbuf_deinit(&sb);
    return s;
  }
  return zt_make_status(ZT_STATUS_INTERNAL, "Xe SPIR-V: no gpu.module with one target");
}

zt_status_t xe_emit_spirv_passes(zt_lower_ctx_t* lc, MlirModule m, const char* passes,
                                 zt_status_t* invalid) {
  *invalid = NULL;
  LLVMMemoryBufferRef spv = NULL;
  // Straight into LLVM's context where it can (xe_llvm_handoff.c).
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = NULL;
  bool declined = false;
  zt_status_t ts = xe_llvm_translate(m, ctx, &mod, &declined);
  if (!declined) {
    const char* dump = getenv("ZETILE_XE_DUMP_BC");
    if (!ts && dump && *dump) LLVMWriteBitcodeToFile(mod, dump);
    if (!ts) {
      zt_spirv_emission_lock();
      ts = select_module(ctx, mod, NULL, passes, LLVMCodeGenLevelDefault, &spv);
      zt_spirv_emission_unlock();
    } else {
      LLVMContextDispose(ctx);
    }
    if (!ts) *invalid = zt_spirv_validate(LLVMGetBufferStart(spv), LLVMGetBufferSize(spv));
    if (!ts && !*invalid)
      ts = zt_spirv_set_artifact(lc->artifact, LLVMGetBufferStart(spv), LLVMGetBufferSize(spv));
    if (spv) LLVMDisposeMemoryBuffer(spv);
    return ts;
  }
  LLVMContextDispose(ctx);
  MlirModule copy = mlirModuleFromOperation(mlirOperationClone(mlirModuleGetOperation(m)));
  zt_status_t s = set_target_opt_level(copy, 0);
  if (!s)
    s = zt_mlir_run_pipeline(lc->ctx, copy, "builtin.module(gpu-module-to-binary{format=llvm})",
                             "Xe SPIR-V emission (LLVM IR, not optimized)");
  MlirStringRef bc = {NULL, 0};
  if (!s && (!xe_binary_object(copy, &bc) || bc.length <= 4))
    s = zt_make_status(ZT_STATUS_INTERNAL, "Xe SPIR-V: gpu.binary without bitcode");
  // ZETILE_XE_DUMP_BC=file: that bitcode (to time LLVM's passes on it with opt).
  const char* dump = getenv("ZETILE_XE_DUMP_BC");
  if (!s && dump && *dump) {
    FILE* f = fopen(dump, "wb");
    if (f) {
      fwrite(bc.data, 1, bc.length, f);
      fclose(f);
    }
  }
  if (!s) {
    zt_spirv_emission_lock();
    s = select_spirv(bc.data, bc.length, passes, LLVMCodeGenLevelDefault, &spv);
    zt_spirv_emission_unlock();
  }
  mlirModuleDestroy(copy);
  if (!s) *invalid = zt_spirv_validate(LLVMGetBufferStart(spv), LLVMGetBufferSize(spv));
  if (!s && !*invalid)
    s = zt_spirv_set_artifact(lc->artifact, LLVMGetBufferStart(spv), LLVMGetBufferSize(spv));
  if (spv) LLVMDisposeMemoryBuffer(spv);
  return s;
}
