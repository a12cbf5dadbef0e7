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
#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#include "xe/xe_internal.h"

void LLVMInitializeSPIRVTargetInfo(void);
void LLVMInitializeSPIRVTarget(void);
void LLVMInitializeSPIRVTargetMC(void);
void LLVMInitializeSPIRVAsmPrinter(void);

static const char kTriple[] = "spirv64-unknown-unknown";

// Instruction selection at -O0 of bitcode, to SPIR-V (under the emission
// lock: the backend's state is process-wide).
static zt_status_t select_o0(const char* bc, size_t n, LLVMMemoryBufferRef* spv) {
  LLVMInitializeSPIRVTargetInfo();
  LLVMInitializeSPIRVTarget();
  LLVMInitializeSPIRVTargetMC();
  LLVMInitializeSPIRVAsmPrinter();
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMMemoryBufferRef in = LLVMCreateMemoryBufferWithMemoryRangeCopy(bc, n, "xe");
  LLVMModuleRef mod = NULL;
  zt_status_t s = NULL;
  if (LLVMParseBitcodeInContext2(ctx, in, &mod))
    s = zt_make_status(ZT_STATUS_INTERNAL, "Xe SPIR-V at -O0: unreadable bitcode");
  LLVMDisposeMemoryBuffer(in);
  char* err = NULL;
  LLVMTargetRef target;
  LLVMTargetMachineRef tm = NULL;
  if (!s && LLVMGetTargetFromTriple(kTriple, &target, &err))
    s = zt_make_status(ZT_STATUS_UNSUPPORTED, "Xe SPIR-V at -O0: no SPIR-V target: %s",
                       err ? err : "?");
  LLVMDisposeMessage(err);
  err = NULL;
  if (!s) {
    tm = LLVMCreateTargetMachine(target, kTriple, "", "", LLVMCodeGenLevelNone, LLVMRelocDefault,
                                 LLVMCodeModelDefault);
    if (!tm) s = zt_make_status(ZT_STATUS_INTERNAL, "Xe SPIR-V at -O0: target machine");
  }
  if (!s && LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &err, spv))
    s = zt_make_status(ZT_STATUS_INTERNAL, "Xe SPIR-V at -O0: %s", err ? err : "emission failed");
  LLVMDisposeMessage(err);
  if (tm) LLVMDisposeTargetMachine(tm);
  if (mod) LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  return s;
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
    s = select_o0(bc.data, bc.length, &spv);
    zt_spirv_emission_unlock();
  }
  mlirModuleDestroy(copy);
  if (!s) s = zt_spirv_validate(LLVMGetBufferStart(spv), LLVMGetBufferSize(spv));
  if (!s) s = zt_artifact_set(lc->artifact, "spirv", LLVMGetBufferStart(spv), LLVMGetBufferSize(spv));
  if (spv) LLVMDisposeMemoryBuffer(spv);
  return s;
}
