// CPU target: tile IR -> MLIR text on scalars and stack buffers
// (scf/memref/arith/math/llvm) -> upstream passes -> LLVM dialect, which
// cpu_load JIT-compiles. Kernel ABI: the tile arguments (pointers as i64,
// i1 as i8, f16/bf16 as i16 bits) then six i32: program id x, y, z and
// number of programs x, y, z; then a hidden pointer to the calling thread's
// zt_cpu_program_ctx_t (jit/compiler_api.h), which only failing tile.assert
// ops and bounds checks (kernels marked zt.bounds_check) use.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_lower.h"

// Above this many bytes of buffers a kernel allocates them on the heap once
// per program instead of on the stack (worker threads have small stacks).
#define CPU_STACK_LIMIT (256 * 1024)

static const char* k_pipeline =
    "builtin.module(convert-scf-to-cf,convert-math-to-llvm,"
    "convert-math-to-libm,arith-expand,expand-strided-metadata,"
    "convert-vector-to-llvm,finalize-memref-to-llvm,convert-arith-to-llvm,convert-index-to-llvm,"
    "convert-func-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts)";

// convert-scf-to-cf carries an scf.for's `llvm.loop_annotation` to its
// latch branch as a discardable attribute, which translation to LLVM IR
// ignores; moved onto llvm.br's own `loop_annotation` it becomes !llvm.loop
// metadata (cpu_loop_end_lanes: lane loops LLVM must not unroll).
static MlirWalkResult move_loop_annotation(MlirOperation op, void* user) {
  (void)user;
  MlirStringRef key = mlirStringRefCreateFromCString("llvm.loop_annotation");
  MlirAttribute a = mlirOperationGetDiscardableAttributeByName(op, key);
  if (!mlirAttributeIsNull(a) && cpu_op_is(op, "llvm.br")) {
    mlirOperationSetInherentAttributeByName(
        op, mlirStringRefCreateFromCString("loop_annotation"), a);
    mlirOperationRemoveDiscardableAttributeByName(op, key);
  }
  return MlirWalkResultAdvance;
}

static void cpu_deinit(cpu_t* c) {
  zt_strbuf_deinit(&c->entry);
  zt_strbuf_deinit(&c->body);
  zt_strbuf_deinit(&c->globals);
  free(c->map);
  cpu_values_free(c);
  free(c->bufs);
  free(c->index_consts);
  if (!mlirSymbolTableIsNull(c->symbols)) mlirSymbolTableDestroy(c->symbols);
}

// Signature and argument conversions; maps the kernel's block arguments.
static zt_status_t emit_signature(cpu_t* c, const zt_kernel_meta_t* meta,
                                  zt_strbuf_t* out) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(c->lc->kernel, 0));
  zt_strbuf_printf(out, "  func.func @%s(", meta->kernel);
  for (int32_t i = 0; i < meta->num_args; ++i) {
    zt_scalar_kind_t k = meta->arg_kinds[i];
    const char* abi = k == ZT_PTR ? "i64"
                      : k == ZT_I1 ? "i8"
                      : (k == ZT_F16 || k == ZT_BF16) ? "i16"
                                                      : zt_tile_kind_spelling(k);
    zt_strbuf_printf(out, "%%arg%d: %s, ", i, abi);
    cpu_val_t v = {.kind = CPU_SCALAR};
    v.type.kind = k;
    v.type.pointee = meta->arg_pointees[i];
    if (k == ZT_I1) {
      snprintf(v.name, ZT_CPU_NAME, "%%a%d", i);
      zt_strbuf_printf(&c->entry, "    %s = arith.trunci %%arg%d : i8 to i1\n",
                       v.name, i);
    } else if (k == ZT_F16 || k == ZT_BF16) {
      snprintf(v.name, ZT_CPU_NAME, "%%a%d", i);
      zt_strbuf_printf(&c->entry, "    %s = arith.bitcast %%arg%d : i16 to %s\n",
                       v.name, i, zt_tile_kind_spelling(k));
    } else {
      snprintf(v.name, ZT_CPU_NAME, "%%arg%d", i);
    }
    ZT_RETURN_IF_ERROR(cpu_map_put(c, mlirBlockGetArgument(body, i), &v));
  }
  zt_strbuf_puts(out,
                 "%pidx: i32, %pidy: i32, %pidz: i32, %npx: i32, %npy: i32, "
                 "%npz: i32, %zt_ctx: !llvm.ptr) {\n");
  return NULL;
}

static zt_status_t lower_text(cpu_t* c, const zt_kernel_meta_t* meta,
                              zt_strbuf_t* out) {
  zt_strbuf_t sig;
  zt_strbuf_init(&sig);
  zt_status_t s = emit_signature(c, meta, &sig);
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(c->lc->kernel, 0));
  c->indent = 2;
  if (!s) s = cpu_emit_block(c, body);
  if (s) {
    zt_strbuf_deinit(&sig);
    return s;
  }
  int64_t bytes = 0;
  for (int32_t i = 0; i < c->num_bufs; ++i)
    bytes += c->bufs[i].numel * zt_tile_kind_bytes(c->bufs[i].kind);
  bool heap = bytes > CPU_STACK_LIMIT;
  zt_strbuf_puts(out, "module {\n");
  if (c->globals.size) zt_strbuf_append(out, c->globals.data, c->globals.size);
  zt_strbuf_append(out, sig.data, sig.size);
  zt_strbuf_deinit(&sig);
  for (int32_t i = 0; i < c->num_bufs; ++i) {
    char ty[96];
    zt_strbuf_printf(out, "    %%b%d = memref.%s() {alignment = 64 : i64} : %s\n", i,
                     heap ? "alloc" : "alloca", cpu_buf_type(c, i, ty, sizeof ty));
  }
  zt_strbuf_append(out, c->entry.data ? c->entry.data : "", c->entry.size);
  zt_strbuf_append(out, c->body.data ? c->body.data : "", c->body.size);
  if (heap)
    for (int32_t i = 0; i < c->num_bufs; ++i) {
      char ty[96];
      zt_strbuf_printf(out, "    memref.dealloc %%b%d : %s\n", i,
                       cpu_buf_type(c, i, ty, sizeof ty));
    }
  zt_strbuf_puts(out, "    return\n  }\n}\n");
  if (out->failed || c->entry.failed || c->body.failed || c->globals.failed)
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "cpu lowering text");
  return NULL;
}

zt_status_t zt_lower_cpu(zt_lower_ctx_t* lc) {
  zt_kernel_meta_t meta;
  zt_kernel_meta_init(&meta);
  ZT_RETURN_IF_ERROR(zt_kernel_meta_from_func(lc->kernel, &meta));
  snprintf(meta.target, sizeof meta.target, "cpu");
  cpu_t c;
  memset(&c, 0, sizeof c);
  c.lc = lc;
  // Bounds mode: the builder marks the kernel (zt_builder_set_bounds_check).
  c.bounds = !mlirAttributeIsNull(mlirOperationGetAttributeByName(
      lc->kernel, mlirStringRefCreateFromCString("zt.bounds_check")));
  zt_strbuf_init(&c.entry);
  zt_strbuf_init(&c.body);
  zt_strbuf_init(&c.globals);
  c.symbols = mlirSymbolTableCreate(mlirModuleGetOperation(lc->tile));
  zt_strbuf_t text;
  zt_strbuf_init(&text);
  zt_status_t s = lower_text(&c, &meta, &text);
  cpu_deinit(&c);
  if (!s) s = zt_artifact_set(lc->artifact, "mlir", text.data, text.size);
  MlirModule m = {NULL};
  if (!s) s = zt_mlir_parse(lc->ctx, text.data, text.size, "cpu lowering", &m);
  if (s) s = zt_status_annotate(s, "CPU lowering of %s", meta.kernel);
  zt_strbuf_deinit(&text);
  if (!s) s = zt_mlir_run_pipeline(lc->ctx, m, k_pipeline, "CPU LLVM pipeline");
  if (!s) {
    mlirOperationWalk(mlirModuleGetOperation(m), move_loop_annotation, NULL,
                      MlirWalkPostOrder);
    zt_strbuf_t llvm;
    zt_strbuf_init(&llvm);
    zt_mlir_print(mlirModuleGetOperation(m), &llvm);
    s = llvm.failed ? zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "llvm text")
                    : zt_artifact_set(lc->artifact, "llvm", llvm.data, llvm.size);
    zt_strbuf_deinit(&llvm);
    // The machine code too, so a later process links it instead of running
    // LLVM -O3 again (ZETILE_CPU_OBJECT=0: the LLVM text only).
    const char* obj = getenv("ZETILE_CPU_OBJECT");
    if (!s && !(obj && obj[0] == '0')) s = zt_cpu_object_emit(m, lc->artifact);
  }
  if (!mlirModuleIsNull(m)) mlirModuleDestroy(m);
  if (!s) {
    zt_strbuf_t mt;
    zt_strbuf_init(&mt);
    zt_kernel_meta_format(&meta, &mt);
    s = zt_artifact_set(lc->artifact, "meta", mt.data, mt.size);
    zt_strbuf_deinit(&mt);
  }
  return s;
}
