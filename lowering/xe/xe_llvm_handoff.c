// The Xe emission's hand-off from MLIR to LLVM IR without bitcode.
//
// gpu-module-to-binary{format=llvm} translates the gpu.module into an LLVM
// module, writes it as bitcode into a gpu.binary, and select_spirv
// (xe_spirv_o0.c) read it back into a fresh LLVMContext: on the attention
// forward the write and the read were ~17 M of the compile's 464 M
// instructions (callgrind in zt_lower_xe), for bytes that only went from one
// LLVM context to another. Here the gpu.module is translated straight into
// the emission's context, doing what upstream's serializer does before it
// writes the bitcode (LLVM 22's ModuleToObject::run and XeVM's
// serializeToObject): the kernel's intel_reqd_sub_group_size set to 16, the
// translation, the data layout and triple of a SPIR-V target machine with no
// CPU name, and LLVM's default<O0> pipeline (the target's O level is 0 on
// this route). The SPIR-V comes out byte-identical to the bitcode route's
// (tests/python/test_xe_pipeline_bytes.py; ZETILE_XE_LLVM_HANDOFF=bitcode
// keeps that route, to compare against).
//
// Modules with bitcode libraries to link (the compat builtins, the int8
// DPAS names) take the bitcode route: upstream links them with
// Linker::LinkOnlyNeeded and internalizes what it pulled in, which LLVM's C
// API does not offer.
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "mlir-c/BuiltinAttributes.h"
#include "mlir-c/BuiltinTypes.h"
#include "mlir-c/Target/LLVMIR.h"

#include "xe/xe_internal.h"

static const char kTriple[] = XE_SPIRV_TRIPLE;

// Whether the gpu.module's one #xevm.target is one this route serves: the
// SPIR-V triple, no files to link.
static bool target_served(MlirOperation gm) {
  MlirAttribute ts = mlirOperationGetAttributeByName(gm, mlirStringRefCreateFromCString("targets"));
  if (mlirAttributeIsNull(ts) || !mlirAttributeIsAArray(ts) || mlirArrayAttrGetNumElements(ts) != 1)
    return false;
  zt_strbuf_t sb;
  zt_strbuf_init(&sb);
  mlirAttributePrint(mlirArrayAttrGetElement(ts, 0), zt_strbuf_mlir_cb, &sb);
  zt_strbuf_append(&sb, "", 1);  // NUL
  bool ok = !sb.failed && strstr(sb.data, "#xevm.target") && !strstr(sb.data, "linkFiles") &&
            (!strstr(sb.data, "triple") || strstr(sb.data, kTriple));
  zt_strbuf_deinit(&sb);
  return ok;
}

// The key of the kept target machine (zt_context_kept compares addresses).
static const char kHandoffMachine[] = "xe handoff target machine";

static void dispose_machine(void* tm) { LLVMDisposeTargetMachine(tm); }

zt_status_t xe_llvm_translate(MlirModule m, LLVMContextRef ctx, LLVMModuleRef* out,
                              bool* declined) {
  *out = NULL;
  *declined = false;
  const char* route = getenv("ZETILE_XE_LLVM_HANDOFF");
  MlirOperation gm = {NULL};
  for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(m));
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    if (zt_op_named(op, "gpu.module")) gm = op;
  if ((route && strcmp(route, "bitcode") == 0) || mlirOperationIsNull(gm) || !target_served(gm)) {
    *declined = true;
    return NULL;
  }
  // XeVM's serializeToObject: the first kernel gets subgroups of 16 (the
  // SPIR-V's word is set to the emitted lanes afterwards, xe_lower.c).
  MlirContext mctx = mlirOperationGetContext(gm);
  MlirStringRef kernel_attr = mlirStringRefCreateFromCString("gpu.kernel");
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(gm, 0));
  for (MlirOperation f = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(f);
       f = mlirOperationGetNextInBlock(f)) {
    if (!zt_op_named(f, "llvm.func") || mlirAttributeIsNull(mlirOperationGetDiscardableAttributeByName(f, kernel_attr)))
      continue;
    mlirOperationSetAttributeByName(
        f, mlirStringRefCreateFromCString("intel_reqd_sub_group_size"),
        mlirIntegerAttrGet(mlirIntegerTypeGet(mctx, 32), 16));
    break;
  }
  double t0 = zt_timing_now_ms();
  LLVMModuleRef mod = mlirTranslateModuleToLLVMIR(gm, ctx);
  zt_timing_record("Xe SPIR-V emission: translation to LLVM IR", zt_timing_now_ms() - t0);
  if (!mod) return zt_make_status(ZT_STATUS_INTERNAL, "Xe SPIR-V: translation to LLVM IR failed");
  // The target machine here only gives the data layout and runs default<O0>
  // (no selection: the backend's module state is not touched), so one is
  // kept per MLIR context for later compiles: creating it was ~1 M
  // instructions, a sixth of an empty kernel's compile (callgrind; issue 22).
  LLVMTargetMachineRef tm = zt_context_kept(mctx, kHandoffMachine);
  bool kept = tm != NULL;
  zt_status_t s = kept ? NULL : xe_spirv_target_machine(LLVMCodeGenLevelNone, &tm);
  if (!s && !kept) kept = zt_context_keep(mctx, kHandoffMachine, tm, dispose_machine);
  if (!s) {
    LLVMTargetDataRef dl = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(mod, dl);
    LLVMDisposeTargetData(dl);
    LLVMSetTarget(mod, kTriple);
    // ModuleToObject::optimizeModule at the target's O level, 0 here.
    LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
    LLVMErrorRef e = LLVMRunPasses(mod, "default<O0>", tm, po);
    LLVMDisposePassBuilderOptions(po);
    if (e) {
      char* msg = LLVMGetErrorMessage(e);
      s = zt_make_status(ZT_STATUS_INTERNAL, "Xe SPIR-V: LLVM's default<O0>: %s", msg);
      LLVMDisposeErrorMessage(msg);
    }
  }
  if (tm && !kept) LLVMDisposeTargetMachine(tm);
  if (s) {
    LLVMDisposeModule(mod);
    return s;
  }
  *out = mod;
  return NULL;
}
