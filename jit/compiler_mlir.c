// MLIR helpers shared by the lowerings (lowering/lowering.h): parsing,
// pass pipelines and printing, with MLIR's diagnostics turned into statuses.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>
#include <mlir-c/Diagnostics.h>
#include <mlir-c/Pass.h>

#include "compiler_internal.h"
#include "lowering.h"

// One buffer per thread: a compile runs on one thread, in a context of its
// own whose MLIR threading is off (jit/compiler.c), so MLIR emits every
// diagnostic of that compile on the compiling thread. Compiles on other
// threads collect theirs in their own buffers.
static _Thread_local zt_strbuf_t g_diags;
static _Thread_local int g_num_diags;

void zt_strbuf_mlir_cb(MlirStringRef s, void* user) {
  zt_strbuf_append((zt_strbuf_t*)user, s.data, s.length);
}

// `file:line:col` of the innermost file location in loc, if any.
static bool format_loc(MlirLocation loc, zt_strbuf_t* sb, int depth) {
  if (mlirLocationIsNull(loc) || depth > 8) return false;
  if (mlirLocationIsAFileLineColRange(loc)) {
    MlirIdentifier f = mlirLocationFileLineColRangeGetFilename(loc);
    MlirStringRef fs = mlirIdentifierStr(f);
    zt_strbuf_append(sb, fs.data, fs.length);
    zt_strbuf_printf(sb, ":%d:%d", mlirLocationFileLineColRangeGetStartLine(loc),
                     mlirLocationFileLineColRangeGetStartColumn(loc));
    return true;
  }
  if (mlirLocationIsAName(loc))
    return format_loc(mlirLocationNameGetChildLoc(loc), sb, depth + 1);
  if (mlirLocationIsACallSite(loc))
    return format_loc(mlirLocationCallSiteGetCallee(loc), sb, depth + 1);
  if (mlirLocationIsAFused(loc)) {
    intptr_t n = mlirLocationFusedGetNumLocations(loc);
    if (n > 0 && n < 64) {
      MlirLocation locs[64];
      mlirLocationFusedGetLocations(loc, locs);
      for (intptr_t i = 0; i < n; ++i)
        if (format_loc(locs[i], sb, depth + 1)) return true;
    }
  }
  return false;
}

static void format_diag(MlirDiagnostic d, int depth) {
  static const char* const sev[] = {"error", "warning", "note", "remark"};
  MlirDiagnosticSeverity s = mlirDiagnosticGetSeverity(d);
  if (g_diags.size) zt_strbuf_puts(&g_diags, "\n");
  for (int i = 0; i < depth; ++i) zt_strbuf_puts(&g_diags, "  ");
  if (format_loc(mlirDiagnosticGetLocation(d), &g_diags, 0))
    zt_strbuf_puts(&g_diags, ": ");
  zt_strbuf_printf(&g_diags, "%s: ", (unsigned)s < 4 ? sev[s] : "diagnostic");
  mlirDiagnosticPrint(d, zt_strbuf_mlir_cb, &g_diags);
  intptr_t n = mlirDiagnosticGetNumNotes(d);
  for (intptr_t i = 0; i < n && depth < 4; ++i)
    format_diag(mlirDiagnosticGetNote(d, i), depth + 1);
}

static MlirLogicalResult diag_handler(MlirDiagnostic d, void* user) {
  (void)user;
  // Remarks and warnings are not failures; keep the status readable.
  if (mlirDiagnosticGetSeverity(d) == MlirDiagnosticError ||
      g_num_diags < 32) {
    ++g_num_diags;
    format_diag(d, 0);
  }
  return mlirLogicalResultSuccess();
}

void zt_mlir_diag_attach(MlirContext ctx) {
  mlirContextAttachDiagnosticHandler(ctx, diag_handler, NULL, NULL);
}

void zt_mlir_diag_clear(void) {
  zt_strbuf_clear(&g_diags);
  g_num_diags = 0;
}

zt_status_t zt_mlir_diag_status(zt_status_code_t code, const char* what) {
  zt_status_t s;
  if (g_diags.size && !g_diags.failed)
    s = zt_make_status(code, "%s:\n%s", what, g_diags.data);
  else
    s = zt_make_status(code, "%s (no diagnostic)", what);
  zt_mlir_diag_clear();
  return s;
}

// Stage timings of the compile in progress on this thread: every parse and
// pipeline records "what=milliseconds", and compiler.c stores the log as the
// artifact's "timings" section. g_timed_ms sums what was recorded, so that
// compiler.c can tell the lowering's own (unrecorded) time from the rest.
static _Thread_local zt_strbuf_t g_timings;
static _Thread_local double g_timed_ms;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

void zt_timing_reset(void) {
  zt_strbuf_clear(&g_timings);
  g_timed_ms = 0;
}

double zt_timing_recorded_ms(void) { return g_timed_ms; }

void zt_compile_thread_release(void) {
  // Python's worker threads come and go: their buffers must not outlive
  // the compile (a thread's _Thread_local storage is not freed at its exit).
  zt_strbuf_deinit(&g_timings);
  zt_strbuf_deinit(&g_diags);
  g_num_diags = 0;
  g_timed_ms = 0;
}

// The compile worker (jit/compile_worker.c) streams stages to stderr so that
// the process that gave it a time budget can say where the time went.
static int g_stage_stream;
static pthread_once_t g_stage_stream_once = PTHREAD_ONCE_INIT;

static void stage_stream_init(void) {
  const char* e = getenv("ZETILE_STAGE_STREAM");
  g_stage_stream = e && e[0] == '1';
}

static int stage_stream(void) {
  pthread_once(&g_stage_stream_once, stage_stream_init);
  return g_stage_stream;
}

void zt_stage_begin(const char* what) {
  if (stage_stream()) {
    fprintf(stderr, "zetile-stage: begin %s\n", what);
    fflush(stderr);
  }
}

void zt_timing_record(const char* what, double ms) {
  if (stage_stream()) {
    fprintf(stderr, "zetile-stage: done %s %.1f\n", what, ms);
    fflush(stderr);
  }
  zt_strbuf_printf(&g_timings, "%s=%.3f\n", what, ms);
  g_timed_ms += ms;
}

const char* zt_timing_log(size_t* out_size) {
  *out_size = g_timings.size;
  return g_timings.data ? g_timings.data : "";
}

double zt_timing_now_ms(void) { return now_ms(); }

zt_status_t zt_mlir_parse(MlirContext ctx, const char* text, size_t size,
                          const char* what, MlirModule* out_module) {
  char label[160];
  snprintf(label, sizeof label, "parse %s", what);
  zt_stage_begin(label);
  double t0 = now_ms();
  zt_status_t s = zt_mlir_parse_untimed(ctx, text, size, what, out_module);
  zt_timing_record(label, now_ms() - t0);
  return s;
}

zt_status_t zt_mlir_parse_untimed(MlirContext ctx, const char* text, size_t size,
                                  const char* what, MlirModule* out_module) {
  *out_module = (MlirModule){NULL};
  zt_mlir_diag_clear();
  // MLIR's lexer reads one byte past the text it is given (it expects a
  // NUL there): text from the C API need not have one (found by
  // tests/fuzz/fuzz_tile_ir.c under ASan), so parse a terminated copy.
  char* copy = malloc(size + 1);
  if (!copy) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "%s: %zu bytes of text", what, size);
  if (size) memcpy(copy, text, size);
  copy[size] = 0;
  MlirOperation op = mlirOperationCreateParse(
      ctx, mlirStringRefCreate(copy, size), mlirStringRefCreateFromCString(what));
  free(copy);
  char msg[256];
  if (mlirOperationIsNull(op)) {
    snprintf(msg, sizeof msg, "%s does not parse or verify", what);
    return zt_mlir_diag_status(ZT_STATUS_COMPILE_ERROR, msg);
  }
  MlirIdentifier name = mlirOperationGetName(op);
  MlirStringRef ns = mlirIdentifierStr(name);
  if (ns.length != 14 || strncmp(ns.data, "builtin.module", 14) != 0) {
    // A single top-level op (e.g. irdl.dialect) goes into an implicit module,
    // as mlir-opt does.
    MlirModule m = mlirModuleCreateEmpty(mlirOperationGetLocation(op));
    mlirBlockAppendOwnedOperation(mlirModuleGetBody(m), op);
    op = mlirModuleGetOperation(m);
  }
  // No mlirOperationVerify here: mlirOperationCreateParse already verified
  // what it parsed (MLIR's parser config verifies after parsing unless told
  // not to) and returned null if it did not verify (the diagnostics above
  // say why). A second verifier run cost ~1% of a pvc softmax compile
  // (callgrind; issue 22).
  zt_mlir_diag_clear();
  *out_module = mlirModuleFromOperation(op);
  return NULL;
}

static zt_status_t run_pipeline(MlirContext ctx, MlirModule module, const char* pipeline,
                                const char* what, bool verify_each);

static zt_status_t run_pipeline_timed(MlirContext ctx, MlirModule module,
                                      const char* pipeline, const char* what,
                                      bool verify_each) {
  char label[160];
  snprintf(label, sizeof label, "pipeline %s", what);
  zt_stage_begin(label);
  double t0 = now_ms();
  // gpu-module-to-binary runs LLVM's SPIR-V backend, whose module state is
  // process-wide (llvm/llvm-project#160613): one emission at a time.
  bool emits = strstr(pipeline, "gpu-module-to-binary") != NULL;
  if (emits) zt_spirv_emission_lock();
  zt_status_t s = run_pipeline(ctx, module, pipeline, what, verify_each);
  if (emits) zt_spirv_emission_unlock();
  zt_timing_record(label, now_ms() - t0);
  return s;
}

zt_status_t zt_mlir_run_pipeline(MlirContext ctx, MlirModule module,
                                 const char* pipeline, const char* what) {
  return run_pipeline_timed(ctx, module, pipeline, what, true);
}

zt_status_t zt_mlir_run_pipeline_verify_end(MlirContext ctx, MlirModule module,
                                            const char* pipeline, const char* what) {
  // ZETILE_DEBUG=verify: after every pass again, to find the pass at fault.
  const char* debug = getenv("ZETILE_DEBUG");
  return run_pipeline_timed(ctx, module, pipeline, what, debug && strstr(debug, "verify"));
}

zt_status_t zt_mlir_run_pipeline_untimed(MlirContext ctx, MlirModule module,
                                         const char* pipeline, const char* what) {
  bool emits = strstr(pipeline, "gpu-module-to-binary") != NULL;
  if (emits) zt_spirv_emission_lock();
  zt_status_t s = run_pipeline(ctx, module, pipeline, what, true);
  if (emits) zt_spirv_emission_unlock();
  return s;
}

static zt_status_t run_pipeline(MlirContext ctx, MlirModule module, const char* pipeline,
                                const char* what, bool verify_each) {
  zt_mlir_diag_clear();
  // ZETILE_DEBUG=passes: MLIR's own pass timing, printed to stderr when the
  // pass manager is destroyed (what each pass of a pipeline cost; the
  // "time" topic gives whole pipelines only). Only when named: "all" would
  // bury the other topics under it. Such a pass manager is not kept.
  const char* debug = getenv("ZETILE_DEBUG");
  bool timed = debug && strstr(debug, "passes");
  // A pass manager parsed and initialized by an earlier compile in this
  // context, when there is one (jit/compiler_context_cache.c).
  MlirPassManager pm = timed ? (MlirPassManager){NULL} : zt_context_cache_take_pm(ctx, pipeline);
  MlirLogicalResult r;
  if (!pm.ptr) {
    pm = mlirPassManagerCreate(ctx);
    zt_strbuf_t err;
    zt_strbuf_init(&err);
    r = mlirParsePassPipeline(mlirPassManagerGetAsOpPassManager(pm),
                              mlirStringRefCreateFromCString(pipeline), zt_strbuf_mlir_cb, &err);
    if (mlirLogicalResultIsFailure(r)) {
      zt_status_t s = zt_make_status(ZT_STATUS_INTERNAL, "%s: bad pipeline %s: %s",
                                     what, pipeline, err.data ? err.data : "");
      zt_strbuf_deinit(&err);
      mlirPassManagerDestroy(pm);
      return s;
    }
    zt_strbuf_deinit(&err);
  }
  // The pipeline text goes first (pass options do not show in the timing).
  if (timed) {
    fprintf(stderr, "zetile pipeline (%s): %s\n", what, pipeline);
    mlirPassManagerEnableTiming(pm);
  }
  mlirPassManagerEnableVerifier(pm, verify_each);
  r = mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(module));
  // Kept only after a run that succeeded (a failed pass may leave its state
  // half-way).
  if (timed || mlirLogicalResultIsFailure(r) || !zt_context_cache_keep_pm(ctx, pipeline, pm))
    mlirPassManagerDestroy(pm);
  if (mlirLogicalResultIsFailure(r)) {
    char msg[256];
    snprintf(msg, sizeof msg, "%s failed", what);
    return zt_mlir_diag_status(ZT_STATUS_COMPILE_ERROR, msg);
  }
  if (!verify_each && !mlirOperationVerify(mlirModuleGetOperation(module))) {
    char msg[256];
    snprintf(msg, sizeof msg,
             "%s made IR that does not verify (ZETILE_DEBUG=verify names the pass)", what);
    return zt_mlir_diag_status(ZT_STATUS_COMPILE_ERROR, msg);
  }
  zt_mlir_diag_clear();
  return NULL;
}

void zt_mlir_print(MlirOperation op, zt_strbuf_t* sb) {
  MlirOpPrintingFlags flags = mlirOpPrintingFlagsCreate();
  mlirOpPrintingFlagsEnableDebugInfo(flags, false, false);
  mlirOperationPrintWithFlags(op, flags, zt_strbuf_mlir_cb, sb);
  mlirOpPrintingFlagsDestroy(flags);
}

zt_status_t zt_kernel_meta_from_func(MlirOperation kernel,
                                     zt_kernel_meta_t* meta) {
  MlirStringRef name = zt_kernel_name(kernel);
  if (name.length == 0 || name.length >= sizeof meta->kernel)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "kernel has no usable name");
  memcpy(meta->kernel, name.data, name.length);
  meta->kernel[name.length] = 0;
  MlirAttribute ft = mlirOperationGetAttributeByName(
      kernel, mlirStringRefCreateFromCString("function_type"));
  if (mlirAttributeIsNull(ft) || !mlirAttributeIsAType(ft))
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "kernel has no function type");
  MlirType t = mlirTypeAttrGetValue(ft);
  intptr_t n = mlirFunctionTypeGetNumInputs(t);
  if (n > ZT_MAX_KERNEL_ARGS)
    return zt_make_status(ZT_STATUS_UNSUPPORTED, "%s: %d arguments (max %d)",
                          meta->kernel, (int)n, ZT_MAX_KERNEL_ARGS);
  meta->num_args = (int32_t)n;
  for (intptr_t i = 0; i < n; ++i) {
    zt_type_t at;
    zt_status_t s = zt_tile_type_from_mlir(mlirFunctionTypeGetInput(t, i), &at);
    if (s) return zt_status_annotate(s, "%s: argument %d", meta->kernel, (int)i);
    if (at.rank != 0)
      return zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                            "%s: argument %d is a tensor; kernel arguments are "
                            "scalars or pointers",
                            meta->kernel, (int)i);
    meta->arg_kinds[i] = at.kind;
    meta->arg_pointees[i] = at.kind == ZT_PTR ? at.pointee : ZT_I8;
  }
  return NULL;
}
