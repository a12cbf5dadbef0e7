// zt_lower_xe: tile IR -> subgroup-level XeGPU text (one gpu.module, one
// gpu.func) -> upstream passes -> SPIR-V, plus the kernel's launch metadata.
#include <stdio.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/Dialect/GPU.h>

#include "xe/xe_internal.h"

// Work-items per workgroup: one program is one subgroup of 16 lanes (the
// 1-D layout puts element i of a chunk on lane i). More subgroups per
// program (num_warps) come with the 2-D layouts.
#define XE_LOCAL_SIZE XE_SUBGROUP

// Upstream's gpu-lower-to-xevm-pipeline{xegpu-op-level=subgroup} as 22.1.8
// dumps it (shared/xegpu-lab/pipe_sg.txt), without xegpu-propagate-layout:
// its backward analysis gives no layout to values that only feed
// vector.reduction, and then fails on loops carrying them ("Failed to update
// operation with the layout" at scf.yield). The emitter states every layout
// itself (XE_LAYOUT_ATTR), which is what that pass would have computed for
// 1-D values. The leading cse and convert-vector-to-scf are left out too: we
// emit no vector transfers, and their greedy folding would replace
// broadcasts of constants by new constants that have no layout.
static const char kPipeline[] =
    "builtin.module("
    "xevm-attach-target{O=2 chip=%s triple=spirv64-unknown-unknown},"
    "lower-affine,"
    "func.func(gpu-async-region),"
    "gpu.module(xegpu-subgroup-distribute),"
    "gpu.module(canonicalize),gpu.module(cse),"
    "gpu.module(loop-invariant-code-motion),gpu.module(cse),"
    "gpu.module(xegpu-vector-linearize),"
    "gpu.module(convert-math-to-xevm{convert-arith=true}),"
    "gpu.module(convert-xegpu-to-xevm),"
    "gpu.module(convert-gpu-to-llvm-spv{use-64bit-index=true}),"
    "gpu.module(cse),gpu.module(reconcile-unrealized-casts),"
    "convert-scf-to-cf,expand-strided-metadata,gpu-to-llvm,lower-affine,"
    "convert-vector-to-llvm{force-32bit-vector-indices=true},"
    "convert-to-llvm,reconcile-unrealized-casts,"
    "gpu.module(canonicalize),gpu.module(cse),"
    "gpu-module-to-binary{format=fatbin})";

static bool str_is(MlirStringRef s, const char* c) {
  return s.length == strlen(c) && memcmp(s.data, c, s.length) == 0;
}

zt_status_t xe_emit_module(zt_lower_ctx_t* lc, zt_strbuf_t* out) {
  xe_emitter_t e;
  xe_emitter_init(&e, lc);
  MlirOperation k = lc->kernel;
  xe_set_cur(&e, k);
  zt_status_t s = NULL;
  MlirAttribute sym =
      mlirOperationGetAttributeByName(k, mlirStringRefCreateFromCString("sym_name"));
  MlirStringRef name = mlirAttributeIsNull(sym) ? mlirStringRefCreate("", 0)
                                                : mlirStringAttrGetValue(sym);
  MlirBlock entry = mlirRegionGetFirstBlock(mlirOperationGetRegion(k, 0));
  zt_strbuf_t sig, conv;
  zt_strbuf_init(&sig);
  zt_strbuf_init(&conv);
  for (intptr_t i = 0; i < mlirBlockGetNumArguments(entry) && !s; ++i) {
    MlirValue a = mlirBlockGetArgument(entry, i);
    zt_type_t t;
    s = xe_tile_type(&e, mlirValueGetType(a), &t);
    if (s) break;
    if (t.rank != 0) {
      s = xe_fail(&e, ZT_STATUS_INVALID_ARGUMENT, "argument %d is a tensor", (int)i);
      break;
    }
    xe_val_t* r = xe_alloc(&e, t);
    if (!r) break;
    // Pointers are 8-byte device addresses; i1 travels as a byte (OpenCL
    // kernels take no bool arguments).
    const char* at = t.kind == ZT_I1 ? "i8" : xe_elem(t.kind);
    zt_strbuf_printf(&sig, "%s%%arg%d: %s", i ? ", " : "", (int)i, at);
    if (t.kind == ZT_I1)
      zt_strbuf_printf(&conv, "      %s = arith.trunci %%arg%d : i8 to i1\n",
                       r->names[0], (int)i);
    else
      snprintf(r->names[0], XE_NAME_MAX, "%%arg%d", (int)i);
    xe_bind(&e, a, r);
  }
  if (!s && e.error) {
    s = e.error;
    e.error = NULL;
  }
  e.indent = 3;
  if (!s) s = xe_emit_block(&e, entry);
  if (!s && (e.pre.failed || e.body.failed || sig.failed))
    s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
  if (!s) {
    zt_strbuf_puts(out, "#zt_l = #xegpu.layout<lane_layout = [16], lane_data = [1]>\n");
    zt_strbuf_puts(out, "module attributes {gpu.container_module} {\n");
    zt_strbuf_puts(out, "  gpu.module @zt_xe {\n");
    zt_strbuf_printf(out,
                     "    gpu.func @%.*s(%s) kernel attributes "
                     "{intel_reqd_sub_group_size = 16 : i32, "
                     "known_block_size = array<i32: %d, 1, 1>} {\n",
                     (int)name.length, name.data, sig.data ? sig.data : "",
                     XE_LOCAL_SIZE);
    if (conv.data) zt_strbuf_puts(out, conv.data);
    if (e.pre.data) {
      // Hoisted ops are written with 4 spaces; indent them like the body.
      const char* p = e.pre.data;
      while (*p) {
        const char* nl = strchr(p, '\n');
        size_t l = nl ? (size_t)(nl - p + 1) : strlen(p);
        zt_strbuf_puts(out, "  ");
        zt_strbuf_append(out, p, l);
        p += l;
      }
    }
    if (e.body.data) zt_strbuf_puts(out, e.body.data);
    zt_strbuf_puts(out, "    }\n  }\n}\n");
    if (out->failed) s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
  }
  zt_strbuf_deinit(&sig);
  zt_strbuf_deinit(&conv);
  xe_emitter_deinit(&e);
  return s;
}

// The SPIR-V binary held by the gpu.binary that gpu-module-to-binary made.
static zt_status_t find_spirv(MlirModule m, MlirStringRef* out) {
  MlirBlock top = mlirModuleGetBody(m);
  for (MlirOperation op = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (!str_is(mlirIdentifierStr(mlirOperationGetName(op)), "gpu.binary")) continue;
    MlirAttribute objs =
        mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("objects"));
    if (mlirAttributeIsNull(objs) || !mlirAttributeIsAArray(objs) ||
        mlirArrayAttrGetNumElements(objs) < 1)
      break;
    MlirAttribute obj = mlirArrayAttrGetElement(objs, 0);
    if (!mlirAttributeIsAGPUObjectAttr(obj)) break;
    *out = mlirGPUObjectAttrGetObject(obj);
    static const unsigned char magic[4] = {0x03, 0x02, 0x23, 0x07};
    if (out->length < 20 || memcmp(out->data, magic, 4) != 0)
      return zt_make_status(ZT_STATUS_INTERNAL,
                            "Xe lowering: gpu.binary does not hold SPIR-V");
    return NULL;
  }
  return zt_make_status(ZT_STATUS_INTERNAL,
                        "Xe lowering: the pipeline produced no gpu.binary");
}

zt_status_t zt_lower_xe(zt_lower_ctx_t* lc) {
  const char* target = lc->options->target ? lc->options->target : "";
  if (strcmp(target, "pvc") != 0 && strcmp(target, "bmg") != 0)
    // XeVM only knows these two (others compile silently to wrong code).
    return zt_make_status(ZT_STATUS_UNSUPPORTED,
                          "Xe lowering: target '%s' (pvc and bmg only)", target);
  zt_strbuf_t text;
  zt_strbuf_init(&text);
  zt_status_t s = xe_emit_module(lc, &text);
  if (s) {
    zt_strbuf_deinit(&text);
    return s;
  }
  s = zt_artifact_set(lc->artifact, "mlir", text.data, text.size);
  MlirModule m = {NULL};
  if (!s) s = zt_mlir_parse(lc->ctx, text.data, text.size, "Xe lowered module", &m);
  zt_strbuf_deinit(&text);
  if (!s) {
    char pipeline[sizeof kPipeline + 16];
    snprintf(pipeline, sizeof pipeline, kPipeline, target);
    s = zt_mlir_run_pipeline(lc->ctx, m, pipeline, "Xe pipeline (XeGPU -> XeVM -> SPIR-V)");
  }
  if (!s) {
    MlirStringRef spv = {NULL, 0};
    s = find_spirv(m, &spv);
    if (!s) s = zt_artifact_set(lc->artifact, "spirv", spv.data, spv.length);
  }
  if (!mlirModuleIsNull(m)) mlirModuleDestroy(m);
  if (s) return s;

  zt_kernel_meta_t meta;
  zt_kernel_meta_init(&meta);
  ZT_RETURN_IF_ERROR(zt_kernel_meta_from_func(lc->kernel, &meta));
  snprintf(meta.target, sizeof meta.target, "%s", target);
  meta.local_size[0] = XE_LOCAL_SIZE;
  meta.local_size[1] = 1;
  meta.local_size[2] = 1;
  meta.subgroup_size = XE_SUBGROUP;
  if (lc->options->igc_options)
    snprintf(meta.igc_options, sizeof meta.igc_options, "%s", lc->options->igc_options);
  zt_strbuf_t mt;
  zt_strbuf_init(&mt);
  zt_kernel_meta_format(&meta, &mt);
  s = mt.failed ? zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "meta")
                : zt_artifact_set(lc->artifact, "meta", mt.data, mt.size);
  zt_strbuf_deinit(&mt);
  return s;
}
