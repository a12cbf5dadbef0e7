// dg2 target (Arc A-series, Xe-HPG, e.g. acm-g10): zetile's own SIMD8
// lowering. Tile IR -> work-item MLIR text (arith/scf/llvm, OpenCL builtins
// called by their Itanium-mangled names, as OpenCL C compiles to) -> LLVM
// dialect (upstream passes) -> LLVM IR (mlirTranslateModuleToLLVMIR) ->
// SPIR-V (LLVM's SPIR-V backend through the LLVM C API).
//
// Kernel ABI: pointer arguments are i64 global addresses (8 bytes, as on
// pvc/bmg), scalars by value (i1 as i8, bf16 as its 16 bits); the kernel is
// spir_kernel with intel_reqd_sub_group_size = 8; one program = one
// workgroup of 8 * num_warps work-items (meta: local_size, subgroup_size=8).
// No SPIR-V extension is needed: subgroup shuffles are core SPIR-V 1.3
// (GroupNonUniformShuffle), the XMX builtins are imported functions that IGC
// resolves; only DP4A (int8 dots on Gen12LP / Xe-LPG rows, which have no
// XMX) uses SPV_KHR_integer_dot_product. The same lowering serves every
// SIMD8 row of xe_target.c: dg2 and arl-h (XMX), the integrated GPUs from
// Gen9 to Xe-LPG and DG1 (FMA dots, dg2_dot_fma.c).
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Support.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>
#include <mlir-c/BuiltinTypes.h>
#include <mlir-c/Target/LLVMIR.h>

#include "dg2_internal.h"
#include "xe/xe_target.h"

// An argmin/argmax dg2_emit_reduce takes as a pair: 1-D, a whole number
// of elements per work-item (ud: the work-items).
static bool arg_pair_ok(MlirOperation op, void* ud) {
  MlirType t = mlirValueGetType(mlirOperationGetOperand(op, 0));
  return mlirShapedTypeGetRank(t) == 1 &&
         mlirShapedTypeGetDimSize(t, 0) % *(const int32_t*)ud == 0;
}

zt_status_t zt_lower_dg2(zt_lower_ctx_t* lc);

// Structured control flow goes to the CFG before the first canonicalize:
// LLVM 22's canonicalize on scf (its RegionBranchOpInterface patterns)
// grows superlinearly with a loop's iter_args and body, which here hold
// one SSA value per register element (the tutorial matmul at 128x128x32, 8
// subgroups: 22.8 of 24 s in it; on the CFG 0.14 s, same ops out). The
// leading cse folds the emitter's repeated constants first, which makes
// convert-scf-to-cf 3x cheaper (fewer ops moved when it splits blocks).
// convert-to-llvm does in one walk what convert-{arith,index,func,cf}-to-llvm
// did in four (the same LLVM dialect out on tutorial 06's backward, byte for
// byte; mlir-opt-22 --mlir-timing: 1.2 s of conversions -> 0.36 s). No
// canonicalize/cse after the conversion: on the 12 dg2 kernels of tutorials
// 05 and 06 the SPIR-V is byte-identical without them (the LLVM dialect
// they would clean is what the leading passes already left clean), and
// they were ~0.7 s of wall time on 06's backward.
static const char* k_pipeline =
    "builtin.module(cse,convert-scf-to-cf,canonicalize,cse,"
    "arith-expand,convert-to-llvm,reconcile-unrealized-casts)";

static const char* k_triple = "spirv64-unknown-unknown";

static pthread_once_t g_spirv_once = PTHREAD_ONCE_INIT;

static void spirv_init(void) {
  LLVMInitializeSPIRVTargetInfo();
  LLVMInitializeSPIRVTarget();
  LLVMInitializeSPIRVTargetMC();
  LLVMInitializeSPIRVAsmPrinter();
  // DP4A (int8 dots on rows without XMX, dg2_dot_fma.c): LLVM 22's SPIR-V
  // backend lowers OpenCL's dot_4x8packed_* to OpSDot/OpUDot only with
  // SPV_KHR_integer_dot_product enabled (without it, to an OpFMul on
  // integers, invalid SPIR-V), and takes extensions only from its
  // --spirv-ext option, which is process-wide. An enabled extension is
  // declared in a module only when an instruction needs it, so other SPIR-V
  // is unchanged. Errors go to llvm::nulls() and are ignored.
  const char* argv[] = {"zetile", "--spirv-ext=+SPV_KHR_integer_dot_product"};
  LLVMParseCommandLineOptions(2, argv, "");
}

// Largest tensor in the kernel (elements), to size the default workgroup.
static int64_t max_numel(MlirOperation op) {
  int64_t best = 1;
  intptr_t nres = mlirOperationGetNumResults(op);
  for (intptr_t i = 0; i < nres; ++i) {
    zt_type_t t;
    zt_status_t s = zt_tile_type_from_mlir(mlirValueGetType(mlirOperationGetResult(op, i)), &t);
    if (s) {
      zt_status_free(s);
      continue;
    }
    int64_t n = zt_type_numel(t);
    if (n > best) best = n;
  }
  intptr_t nr = mlirOperationGetNumRegions(op);
  for (intptr_t r = 0; r < nr; ++r)
    for (MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r));
         !mlirBlockIsNull(b); b = mlirBlockGetNextInRegion(b))
      for (MlirOperation o = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(o);
           o = mlirOperationGetNextInBlock(o)) {
        int64_t n = max_numel(o);
        if (n > best) best = n;
      }
  return best;
}

static bool has_dot(MlirOperation op) {
  if (dg2_op_is(op, "tile.dot")) return true;
  intptr_t nr = mlirOperationGetNumRegions(op);
  for (intptr_t r = 0; r < nr; ++r)
    for (MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r));
         !mlirBlockIsNull(b); b = mlirBlockGetNextInRegion(b))
      for (MlirOperation o = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(o);
           o = mlirOperationGetNextInBlock(o))
        if (has_dot(o)) return true;
  return false;
}

static int32_t pick_num_warps(zt_lower_ctx_t* lc) {
  int32_t w = lc->options->num_warps;
  if (w > 0) {
    int32_t p = 1;
    while (p * 2 <= w && p < 32) p *= 2;
    return p;
  }
  // Triton's default of 4, fewer for tiles too small to occupy them, more
  // (up to 16) while a work-item would hold over 16 elements of the largest
  // tile: 32 per work-item already spills at SIMD8 (vector add, 1024).
  int64_t n = max_numel(lc->kernel);
  w = 4;
  while (w > 1 && n < (int64_t)DG2_SIMD * w) w /= 2;
  if (!has_dot(lc->kernel))
    while (w < 16 && n / ((int64_t)DG2_SIMD * w) > 16) w *= 2;
  else if (n >= 1024)
    // 32x32x32 fp16 on DPAS: 4 subgroups spill ~60 GRF at SIMD8, 8 about 7.
    // FMA dots (no XMX) hold the operands unpacked: 16 subgroups (on tgllp
    // 159 scratch messages where 8 have 483; a K block of 16 then has none).
    w = xe_target_find(lc->options->target) &&
                !xe_target_has_xmx(xe_target_find(lc->options->target))
            ? 16
            : 8;
  return w;
}

static zt_status_t emit_signature(dg2_t* c, const zt_kernel_meta_t* meta, zt_strbuf_t* out) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(c->lc->kernel, 0));
  zt_strbuf_printf(out, "  func.func @%s(", meta->kernel);
  for (int32_t i = 0; i < meta->num_args; ++i) {
    zt_scalar_kind_t k = meta->arg_kinds[i];
    const char* abi = k == ZT_I1 ? "i8" : dg2_reg(k);
    zt_strbuf_printf(out, "%s%%arg%d: %s", i ? ", " : "", i, abi);
    dg2_val_t v = {.kind = DV_SCALAR};
    v.type.kind = k;
    v.type.pointee = meta->arg_pointees[i];
    if (k == ZT_I1) {
      snprintf(v.name, DG2_NAME, "%%a%d", i);
      dg2_entry_line(c, "%s = arith.trunci %%arg%d : i8 to i1", v.name, i);
    } else {
      snprintf(v.name, DG2_NAME, "%%arg%d", i);
    }
    ZT_RETURN_IF_ERROR(dg2_put(c, mlirBlockGetArgument(body, i), &v));
  }
  zt_strbuf_puts(out, ") {\n");
  return NULL;
}

static void emit_prelude(dg2_t* c) {
  dg2_declare(c, "_Z16get_sub_group_idv", "() -> i32");
  dg2_declare(c, "_Z22get_sub_group_local_idv", "() -> i32");
  dg2_entry_line(c, "%%c0_i32 = arith.constant 0 : i32");
  dg2_entry_line(c, "%%c1_i32 = arith.constant 1 : i32");
  dg2_entry_line(c, "%%sg = llvm.call @_Z16get_sub_group_idv() : () -> i32");
  dg2_entry_line(c, "%%lane = llvm.call @_Z22get_sub_group_local_idv() : () -> i32");
  dg2_entry_line(c, "%%c8_i32 = arith.constant 8 : i32");
  dg2_entry_line(c, "%%sg8 = arith.muli %%sg, %%c8_i32 : i32");
  dg2_entry_line(c, "%%tid = arith.addi %%sg8, %%lane : i32");
  dg2_entry_line(c, "%%isl0 = arith.cmpi eq, %%lane, %%c0_i32 : i32");
}

static zt_status_t lower_text(dg2_t* c, const zt_kernel_meta_t* meta, zt_strbuf_t* out) {
  emit_prelude(c);
  zt_strbuf_t sig;
  zt_strbuf_init(&sig);
  zt_status_t s = emit_signature(c, meta, &sig);
  if (!s) s = dg2_plan(c);
  c->indent = 2;
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(c->lc->kernel, 0));
  if (!s) s = dg2_emit_block(c, body);
  if (s) {
    zt_strbuf_deinit(&sig);
    return s;
  }
  zt_strbuf_puts(out, "module {\n");
  zt_strbuf_append(out, c->decls.data ? c->decls.data : "", c->decls.size);
  if (c->smem_bytes > 0) {
    int64_t n = (c->smem_bytes + 15) / 16 * 16;
    zt_strbuf_printf(out,
                     "  llvm.mlir.global internal @zt_smem() {addr_space = 3 : i32, "
                     "alignment = 16 : i64} : !llvm.array<%lld x i8> {\n"
                     "    %%u = llvm.mlir.undef : !llvm.array<%lld x i8>\n"
                     "    llvm.return %%u : !llvm.array<%lld x i8>\n  }\n",
                     (long long)n, (long long)n, (long long)n);
  }
  zt_strbuf_append(out, sig.data, sig.size);
  zt_strbuf_deinit(&sig);
  zt_strbuf_append(out, c->entry.data ? c->entry.data : "", c->entry.size);
  zt_strbuf_append(out, c->body.data ? c->body.data : "", c->body.size);
  zt_strbuf_puts(out, "    return\n  }\n}\n");
  if (out->failed || c->entry.failed || c->body.failed || c->decls.failed)
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "dg2 lowering text");
  return NULL;
}

// LLVM IR fix-ups for the SPIR-V backend and IGC: calling conventions,
// the subgroup size, convergent builtins.
static void fixup_module(LLVMModuleRef mod, LLVMContextRef ctx, const char* kernel) {
  unsigned conv = LLVMGetEnumAttributeKindForName("convergent", 10);
  unsigned nounw = LLVMGetEnumAttributeKindForName("nounwind", 8);
  for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f)) {
    size_t len;
    const char* name = LLVMGetValueName2(f, &len);
    if (strcmp(name, kernel) == 0) {
      LLVMSetFunctionCallConv(f, LLVMSPIRKERNELCallConv);
      LLVMMetadataRef md = LLVMValueAsMetadata(LLVMConstInt(LLVMInt32TypeInContext(ctx), DG2_SIMD, 0));
      unsigned kind = LLVMGetMDKindIDInContext(ctx, "intel_reqd_sub_group_size", 25);
      LLVMGlobalSetMetadata(f, kind, LLVMMDNodeInContext2(ctx, &md, 1));
      LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(ctx, nounw, 0));
    } else {
      LLVMSetFunctionCallConv(f, LLVMSPIRFUNCCallConv);
      if (LLVMIsDeclaration(f)) {
        LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(ctx, conv, 0));
        LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(ctx, nounw, 0));
      }
    }
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i; i = LLVMGetNextInstruction(i))
        if (LLVMGetInstructionOpcode(i) == LLVMCall) {
          LLVMSetInstructionCallConv(i, LLVMSPIRFUNCCallConv);
          LLVMAddCallSiteAttribute(i, LLVMAttributeFunctionIndex, LLVMCreateEnumAttribute(ctx, conv, 0));
        }
  }
}

static zt_status_t emit_spirv(zt_lower_ctx_t* lc, MlirModule m, const char* kernel) {
  // The SPIR-V backend's module state and its options are process-wide
  // (lowering.h): from its set-up to its disposal, one compile at a time.
  zt_spirv_emission_lock();
  pthread_once(&g_spirv_once, spirv_init);
  double t0 = zt_timing_now_ms();
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = mlirTranslateModuleToLLVMIR(mlirModuleGetOperation(m), ctx);
  if (!mod) {
    LLVMContextDispose(ctx);
    zt_spirv_emission_unlock();
    return zt_make_status(ZT_STATUS_INTERNAL, "dg2: translation to LLVM IR failed");
  }
  zt_timing_record("dg2 translate to LLVM IR", zt_timing_now_ms() - t0);
  zt_status_t s = NULL;
  char* err = NULL;
  LLVMTargetRef target;
  LLVMTargetMachineRef tm = NULL;
  if (LLVMGetTargetFromTriple(k_triple, &target, &err)) {
    s = zt_make_status(ZT_STATUS_UNSUPPORTED, "dg2: no SPIR-V target in this LLVM: %s",
                       err ? err : "?");
  } else {
    // Code generation at -O0 (the IR is already optimized by MLIR and IGC
    // optimizes again): at -O1 and above LLVM's codegen IR passes run Loop
    // Strength Reduction, which may narrow an index to i7 (`trunc i32 to i7;
    // shl i7; add i7; zext i7 to i64`: tutorial 05's column sum at 32
    // subgroups, (tid % 128) * 4 + 512 as the start of a pointer walk), and
    // LLVM 22's SPIR-V backend emits i7 as an 8-bit integer without the
    // 7-bit wrap: work-items 128..255 read one row too far (wrong sums on
    // opencl:cpu, E5; spirv-val cannot see it). -O0 runs no LSR; the
    // backend's own time is about the same (llc-22 on 06's backward: 0.8-1.0
    // s vs 1.0 s of CPU).
    tm = LLVMCreateTargetMachine(target, k_triple, "", "", LLVMCodeGenLevelNone,
                                 LLVMRelocDefault, LLVMCodeModelDefault);
    if (!tm) s = zt_make_status(ZT_STATUS_INTERNAL, "dg2: SPIR-V target machine");
  }
  LLVMDisposeMessage(err);
  err = NULL;
  if (!s) {
    LLVMSetTarget(mod, k_triple);
    LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
    LLVMSetModuleDataLayout(mod, td);
    LLVMDisposeTargetData(td);
    fixup_module(mod, ctx, kernel);
    // The masked load/store and atomic helpers (dg2_ops.c, dg2_atomic.c)
    // stay functions in the SPIR-V (FunctionControl Inline): IGC inlines
    // them, and the ISA is the same as with LLVM's always-inline here
    // (acm-g10, identical instructions on the bench's GEMM, a 32x32 matmul,
    // softmax, layer norm, vector add, the attention forward and six
    // atomics), while the SPIR-V backend selects each helper's branch once
    // instead of once per element: a dg2 GEMM's compile -19% (callgrind,
    // issue 22), its SPIR-V 154 -> 112 KB. ZETILE_DG2_INLINE=1 inlines as
    // before (test_dg2_while_mulhi.py compares the two ISAs).
    double ti = zt_timing_now_ms();
    const char* inl = getenv("ZETILE_DG2_INLINE");
    if (inl && strcmp(inl, "1") == 0) {
      LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
      LLVMErrorRef e = LLVMRunPasses(mod, "always-inline", tm, po);
      LLVMDisposePassBuilderOptions(po);
      if (e) {
        char* m = LLVMGetErrorMessage(e);
        s = zt_make_status(ZT_STATUS_INTERNAL, "dg2: inlining failed: %s", m ? m : "?");
        LLVMDisposeErrorMessage(m);
      }
      // The inliner names the blocks it makes ("zt_mload_f16.exit"): unnamed,
      // as the scf.if blocks were, so no OpName is emitted for them.
      for (LLVMValueRef f = LLVMGetFirstFunction(mod); f; f = LLVMGetNextFunction(f))
        for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb; bb = LLVMGetNextBasicBlock(bb))
          LLVMSetValueName2(LLVMBasicBlockAsValue(bb), "", 0);
    }
    zt_timing_record("dg2 inline helpers", zt_timing_now_ms() - ti);
  }
  if (!s) {
    if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &err))
      s = zt_make_status(ZT_STATUS_INTERNAL, "dg2: invalid LLVM IR: %s", err ? err : "?");
    LLVMDisposeMessage(err);
    err = NULL;
  }
  // The LLVM IR as text ("llvmir") only when asked for (ZETILE_DG2_LLVMIR=1,
  // in the cache key): printing it was ~5% of a dg2 GEMM's compile
  // (callgrind, issue 22) for an artifact nothing downstream reads.
  const char* keep = getenv("ZETILE_DG2_LLVMIR");
  if (!s && keep && strcmp(keep, "1") == 0) {
    char* text = LLVMPrintModuleToString(mod);
    s = zt_artifact_set(lc->artifact, "llvmir", text, strlen(text));
    LLVMDisposeMessage(text);
  }
  if (!s) {
    double t1 = zt_timing_now_ms();
    LLVMMemoryBufferRef buf = NULL;
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &err, &buf)) {
      s = zt_make_status(ZT_STATUS_INTERNAL, "dg2: SPIR-V emission failed: %s", err ? err : "?");
    } else {
      // See lowering/common/spirv_check.c: the backend now and then emits an
      // invalid module; the caller emits again.
      s = zt_spirv_validate(LLVMGetBufferStart(buf), LLVMGetBufferSize(buf));
      if (!s)
        s = zt_spirv_set_artifact(lc->artifact, LLVMGetBufferStart(buf),
                                  LLVMGetBufferSize(buf));
      LLVMDisposeMemoryBuffer(buf);
    }
    LLVMDisposeMessage(err);
    zt_timing_record("dg2 SPIR-V emission", zt_timing_now_ms() - t1);
  }
  if (tm) LLVMDisposeTargetMachine(tm);
  LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  zt_spirv_emission_unlock();
  return s;
}

static bool is_stale(zt_status_t s) {
  return zt_status_code(s) == ZT_STATUS_UNAVAILABLE &&
         strncmp(zt_status_message(s), ZT_STALE_SPIRV_BACKEND, strlen(ZT_STALE_SPIRV_BACKEND)) == 0;
}

// The Xe lowering's policy (xe_lower.c, emit_validated_spirv), at -O0
// already: an invalid module from the process's first emission is an
// error; from a process that emitted before, LLVM's stale backend state
// (llvm/llvm-project#160613) is the likely cause: once more with a fresh
// LLVM module, then ZT_STALE_SPIRV_BACKEND, and the caller compiles again
// in a fresh compile worker. (Until session 10 dg2 tried 4 times in process
// and then failed: "Id 44 is defined more than once" in a CI run.)
static zt_status_t emit_checked_spirv(zt_lower_ctx_t* lc, MlirModule m, const char* kernel) {
  const char* mode = getenv("ZETILE_XE_EMIT");
  bool first = zt_spirv_emission_count() == 0;
  if (!first && (zt_spirv_backend_stale() || (mode && strcmp(mode, "process") == 0)))
    return zt_make_status(ZT_STATUS_UNAVAILABLE, "%s (%s)", ZT_STALE_SPIRV_BACKEND,
                          zt_spirv_backend_stale() ? "an earlier module came out invalid"
                                                   : "ZETILE_XE_EMIT=process");
  zt_status_t s = emit_spirv(lc, m, kernel);
  if (!s || first || !strstr(zt_status_message(s), "invalid SPIR-V")) return s;
  zt_status_free(s);
  s = emit_spirv(lc, m, kernel);
  if (!s || !strstr(zt_status_message(s), "invalid SPIR-V")) return s;
  zt_spirv_backend_set_stale();
  zt_status_t r = zt_make_status(ZT_STATUS_UNAVAILABLE, "%s: %s", ZT_STALE_SPIRV_BACKEND,
                                 zt_status_message(s));
  zt_status_free(s);
  return r;
}

zt_status_t zt_lower_dg2(zt_lower_ctx_t* lc) {
  // The SIMD8 lowering serves the table's SIMD8 rows (xe_target.c).
  const xe_target_t* tg = xe_target_find(lc->options->target);
  if (!tg || tg->lowering != XE_LOWERING_SIMD8 || tg->subgroup_size != DG2_SIMD)
    return zt_make_status(ZT_STATUS_UNSUPPORTED, "dg2 lowering: target '%s' is not a SIMD8 row",
                          lc->options->target ? lc->options->target : "");
  ZT_RETURN_IF_ERROR(xe_check_fp64(tg, lc->kernel));
  zt_kernel_meta_t meta;
  zt_kernel_meta_init(&meta);
  ZT_RETURN_IF_ERROR(zt_kernel_meta_from_func(lc->kernel, &meta));
  snprintf(meta.target, sizeof meta.target, "%s", tg->name);
  // 1-D tensor descriptors: pointer accesses under their bound (this
  // lowering's block IO is 2-D; lowering/common/block1d.c).
  ZT_RETURN_IF_ERROR(zt_block1d_to_pointers(lc->kernel, NULL));
  // A batched (3-D) dot as one 2-D dot per batch slice
  // (lowering/common/batch_unroll.c): the SIMD8 dot is 2-D only, while
  // this lowering runs other 3-D code (elementwise, reductions) as it is.
  ZT_RETURN_IF_ERROR(zt_unroll_batch_dims(lc->kernel, true, NULL));
  // Dots with fp16/bf16 results accumulate in fp32 (the builtins have no other).
  ZT_RETURN_IF_ERROR(zt_widen_half_dots(lc->kernel, NULL));
  dg2_t c;
  memset(&c, 0, sizeof c);
  c.lc = lc;
  c.target = tg;
  c.num_warps = pick_num_warps(lc);
  c.threads = DG2_SIMD * c.num_warps;
  // argmin/argmax pairs reduce here only as 1-D tensors over whole
  // work-items (dg2_emit_reduce); the others become a max/min and a min of
  // positions, one value each (lowering/common/arg_split.c).
  ZT_RETURN_IF_ERROR(zt_split_argreduces(lc->kernel, arg_pair_ok, &c.threads, NULL));
  zt_strbuf_init(&c.entry);
  zt_strbuf_init(&c.body);
  zt_strbuf_init(&c.decls);
  c.symbols = mlirSymbolTableCreate(mlirModuleGetOperation(lc->tile));
  zt_strbuf_t text;
  zt_strbuf_init(&text);
  double t0 = zt_timing_now_ms();
  zt_status_t s = lower_text(&c, &meta, &text);
  zt_timing_record("dg2 lowering (text)", zt_timing_now_ms() - t0);
  int32_t warps = c.num_warps;
  dg2_free(&c);
  zt_strbuf_deinit(&c.entry);
  zt_strbuf_deinit(&c.body);
  zt_strbuf_deinit(&c.decls);
  mlirSymbolTableDestroy(c.symbols);
  if (!s) s = zt_artifact_set(lc->artifact, "mlir", text.data, text.size);
  MlirModule m = {NULL};
  if (!s) s = zt_mlir_parse(lc->ctx, text.data, text.size, "dg2 lowering", &m);
  zt_strbuf_deinit(&text);
  // MLIR's verifier once, on the pipeline's result (as the Xe route since
  // session 8): after each of the 7 passes it was ~11% of a dg2 GEMM's
  // compile (callgrind); ZETILE_DEBUG=verify runs it after every pass.
  if (!s) s = zt_mlir_run_pipeline_verify_end(lc->ctx, m, k_pipeline, "dg2 LLVM pipeline");
  if (!s) s = emit_checked_spirv(lc, m, meta.kernel);
  if (!mlirModuleIsNull(m)) mlirModuleDestroy(m);
  if (s && !is_stale(s)) return zt_status_annotate(s, "dg2 lowering of %s", meta.kernel);
  if (s) return s;  // the caller reads ZT_STALE_SPIRV_BACKEND at the start of the message
  meta.local_size[0] = DG2_SIMD * warps;
  meta.local_size[1] = 1;
  meta.local_size[2] = 1;
  meta.subgroup_size = DG2_SIMD;
  if (lc->options->igc_options)
    snprintf(meta.igc_options, sizeof meta.igc_options, "%s", lc->options->igc_options);
  zt_strbuf_t mt;
  zt_strbuf_init(&mt);
  zt_kernel_meta_format(&meta, &mt);
  s = zt_artifact_set(lc->artifact, "meta", mt.data, mt.size);
  zt_strbuf_deinit(&mt);
  return s;
}
