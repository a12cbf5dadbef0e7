// zt_lower_xe: tile IR -> subgroup-level XeGPU text (one gpu.module, one
// gpu.func) -> upstream passes -> SPIR-V, plus the kernel's launch metadata.
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

extern char** environ;

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>
#include <mlir-c/Dialect/GPU.h>

#include "xe/xe_atomic.h"
#include "xe/xe_internal.h"
#include "xe/xe_lane_tidy.h"
#include "xe/xe_target.h"

// Work-items per workgroup: nsg subgroups of 16 lanes (the 1-D layout puts
// element i of a chunk on lane i; see xe_internal.h for how chunks are split
// across subgroups).
//
// Chunks per subgroup that zetile aims for when it picks nsg itself: upstream's
// subgroup distribution gets slow with many chunks in one subgroup, and
// more subgroups per workgroup also means more threads in flight per program.
#define XE_CHUNKS_PER_SG 4
// Largest workgroup zetile picks by itself (32 subgroups, 512 work-items).
#define XE_AUTO_MAX_SG 32

// Upstream's gpu-lower-to-xevm-pipeline{xegpu-op-level=subgroup} as 22.1.8
// dumps it (shared/xegpu-lab/pipe_sg.txt), without xegpu-propagate-layout:
// its backward analysis gives no layout to values that only feed
// vector.reduction, and then fails on loops carrying them ("Failed to update
// operation with the layout" at scf.yield). The emitter states every layout
// itself (XE_LAYOUT_ATTR), which is what that pass would have computed for
// 1-D values. convert-vector-to-scf is left out (we emit no vector
// transfers), and so is any canonicalize before distribution: its folding
// would replace broadcasts of constants by new constants that have no
// layout. cse and loop-invariant-code-motion, which fold nothing, run
// before xegpu-subgroup-distribute: its time grows with the ops left inside
// loops (the tutorial matmul's K loop: 39 -> 23 ms). A canonicalize right
// after convert-xegpu-to-xevm folds the scf.if of every gather whose mask is
// a constant (all lanes on) before convert-scf-to-cf splits blocks at each
// one, which costs it time quadratic in their number (attention, head dim
// 128, K^T by 512 gathers: that pipeline half 3.9 -> 1.8 s on a loaded machine).
// It runs bottom-up: top-down (MLIR's default) it was ~3/4 of the MLIR time
// of tutorial 06's backward dkdv at head dim 128 (0.70 of 0.96 s in MLIR's
// pass timing, 0.03 s bottom-up), for the same SPIR-V bytes on that kernel,
// the attention forward, softmax, layer norm, the 200-op chain, both tutorial
// matmuls and atomics (tests/python/test_xe_pipeline_bytes.py).
static void stderr_cb(MlirStringRef r, void* user) {
  (void)user;
  fwrite(r.data, 1, r.length, stderr);
}

static const char kPipeline[] =
    "builtin.module("
    "xevm-attach-target{O=2 chip=%s triple=spirv64-unknown-unknown},"
    "lower-affine,"
    "func.func(gpu-async-region),"
    "gpu.module(cse),gpu.module(loop-invariant-code-motion),"
    "gpu.module(xegpu-subgroup-distribute),"
    "gpu.module(canonicalize),gpu.module(cse),"
    "gpu.module(loop-invariant-code-motion),gpu.module(cse),"
    "gpu.module(xegpu-vector-linearize),"
    "gpu.module(convert-math-to-xevm{convert-arith=true}),"
    "gpu.module(convert-xegpu-to-xevm),gpu.module(canonicalize{top-down=false}),"
    "gpu.module(convert-gpu-to-llvm-spv{use-64bit-index=true}),"
    "gpu.module(cse),gpu.module(reconcile-unrealized-casts),"
    "convert-scf-to-cf,expand-strided-metadata,gpu-to-llvm,lower-affine,"
    "convert-vector-to-llvm{force-32bit-vector-indices=true},"
    "convert-to-llvm,reconcile-unrealized-casts,"
    "gpu.module(canonicalize),gpu.module(cse))";
// SPIR-V emission runs on its own, after a check (no_bf16_values).
static const char kEmitPipeline[] = "builtin.module(gpu-module-to-binary{format=fatbin})";

// xegpu-vector-linearize runs only where zetile's lane code has something
// for it (n-D vectors, vector ops outside the plain 1-D ones:
// xe_linearize_need.c); elsewhere it rewrote nothing and was 14% of
// softmax's second MLIR pipeline. SPIR-V byte-identical without it
// (tests/python/test_xe_emit_text.py, test_xe_pipeline_bytes.py).
// ZETILE_XE_LINEARIZE=1 runs it always (to measure against).
// Likewise convert-vector-to-llvm, whose greedy vector lowerings find
// nothing on such code once it has no strided slices either; convert-to-llvm
// then converts the vector ops (~40% of softmax's second pipeline, same
// SPIR-V). ZETILE_XE_VECTOR_LLVM=1 runs it always.
static void cut_pass(char* pipeline, const char* cut) {
  char* at = strstr(pipeline, cut);
  if (at) memmove(at, at + strlen(cut), strlen(at + strlen(cut)) + 1);
}

static void drop_idle_vector_passes(char* pipeline, MlirModule m) {
  const char* keep = getenv("ZETILE_XE_LINEARIZE");
  if (!(keep && strcmp(keep, "1") == 0) && !xe_needs_linearize(m))
    cut_pass(pipeline, "gpu.module(xegpu-vector-linearize),");
  keep = getenv("ZETILE_XE_VECTOR_LLVM");
  if (!(keep && strcmp(keep, "1") == 0) && !xe_needs_vector_lowering(m))
    cut_pass(pipeline, "convert-vector-to-llvm{force-32bit-vector-indices=true},");
}

extern const unsigned char zt_compat_block2d_bc[];
extern const unsigned long zt_compat_block2d_bc_size;
extern const unsigned char zt_xe_dpas_names_bc[];
extern const unsigned long zt_xe_dpas_names_bc_size;
extern const unsigned char zt_xe_dpas_names_u8_bc[];
extern const unsigned long zt_xe_dpas_names_u8_bc_size;

// Bitcode libraries linked into device modules through
// xevm-attach-target{l=...} (which takes paths): each is written once per
// process into the temp directory and removed at exit.
typedef struct xe_library_s {
  const char* what;
  const unsigned char* data;
  const unsigned long* size;
  char path[256];
} xe_library_t;

static xe_library_t g_libs[] = {
    {"the compat path (no 2D block IO)", zt_compat_block2d_bc, &zt_compat_block2d_bc_size, ""},
    {"int8 DPAS (builtin names)", zt_xe_dpas_names_bc, &zt_xe_dpas_names_bc_size, ""},
    {"uint8 DPAS (builtin names)", zt_xe_dpas_names_u8_bc, &zt_xe_dpas_names_u8_bc_size, ""},
};
enum { XE_LIB_COMPAT = 0, XE_LIB_DPAS_NAMES = 1, XE_LIB_DPAS_NAMES_U8 = 2 };

static void remove_library_files(void) {
  for (size_t i = 0; i < sizeof g_libs / sizeof g_libs[0]; ++i)
    if (g_libs[i].path[0]) unlink(g_libs[i].path);
}

// Compiles run in parallel (jit/compiler.c): the table is filled under a lock.
static pthread_mutex_t g_libs_lock = PTHREAD_MUTEX_INITIALIZER;

static zt_status_t library_file_locked(int which, const char** out);

static zt_status_t library_file(int which, const char** out) {
  pthread_mutex_lock(&g_libs_lock);
  zt_status_t s = library_file_locked(which, out);
  pthread_mutex_unlock(&g_libs_lock);
  return s;
}

static zt_status_t library_file_locked(int which, const char** out) {
  xe_library_t* lib = &g_libs[which];
  if (!*lib->size)
    return zt_make_status(ZT_STATUS_UNSUPPORTED,
                          "%s is unavailable: this compiler was built without clang-22",
                          lib->what);
  if (!lib->path[0]) {
    static bool registered;
    const char* tmp = getenv("TMPDIR");
    char path[256];
    snprintf(path, sizeof path, "%s/zetile-lib-XXXXXX.bc", tmp && tmp[0] ? tmp : "/tmp");
    int fd = mkstemps(path, 3);
    if (fd < 0)
      return zt_make_status(ZT_STATUS_IO_ERROR, "%s: cannot create %s", lib->what, path);
    const unsigned char* p = lib->data;
    size_t left = *lib->size;
    while (left) {
      ssize_t w = write(fd, p, left);
      if (w <= 0) {
        close(fd);
        unlink(path);
        return zt_make_status(ZT_STATUS_IO_ERROR, "%s: cannot write %s", lib->what, path);
      }
      p += w;
      left -= (size_t)w;
    }
    close(fd);
    if (strchr(path, ',') || strchr(path, '}') || strchr(path, ' ')) {
      unlink(path);
      return zt_make_status(ZT_STATUS_UNSUPPORTED,
                            "library path '%s' cannot go into a pass option", path);
    }
    snprintf(lib->path, sizeof lib->path, "%s", path);
    if (!registered) {
      registered = true;
      atexit(remove_library_files);
    }
  }
  *out = lib->path;
  return NULL;
}

static MlirWalkResult max_chunks_cb(MlirOperation op, void* user) {
  int64_t* best = user;
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i) {
    MlirType t = mlirValueGetType(mlirOperationGetResult(op, i));
    if (!mlirTypeIsARankedTensor(t) || mlirShapedTypeGetRank(t) != 1) continue;
    int64_t n = mlirShapedTypeGetDimSize(t, 0);
    int64_t c = (n + XE_SUBGROUP - 1) / XE_SUBGROUP;
    if (c > *best) *best = c;
  }
  return MlirWalkResultAdvance;
}

// Subgroups per workgroup: the user's num_warps, or enough subgroups that the
// largest 1-D tensor has XE_CHUNKS_PER_SG chunks in each.
static zt_status_t pick_subgroups(zt_lower_ctx_t* lc, int* out) {
  int32_t nw = lc->options->num_warps;
  if (nw > 0) {
    if ((nw & (nw - 1)) || nw > XE_MAX_SUBGROUPS)
      return zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                            "Xe lowering: num_warps %d (a power of two up to %d)",
                            (int)nw, XE_MAX_SUBGROUPS);
    *out = nw;
    return NULL;
  }
  int64_t chunks = 1;
  mlirOperationWalk(lc->kernel, max_chunks_cb, &chunks, MlirWalkPreOrder);
  int n = 1;
  while (n < XE_AUTO_MAX_SG && (int64_t)n * XE_CHUNKS_PER_SG < chunks) n *= 2;
  *out = n;
  return NULL;
}

typedef struct bf16_find_s {
  MlirOperation op;
} bf16_find_t;

static bool is_bf16ish(MlirType t) {
  if (mlirTypeIsABF16(t)) return true;
  if (mlirTypeIsAVector(t)) return mlirTypeIsABF16(mlirShapedTypeGetElementType(t));
  return false;
}

static MlirWalkResult bf16_cb(MlirOperation op, void* user) {
  bf16_find_t* f = user;
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i)
    if (is_bf16ish(mlirValueGetType(mlirOperationGetResult(op, i)))) {
      f->op = op;
      return MlirWalkResultInterrupt;
    }
  return MlirWalkResultAdvance;
}

// LLVM's SPIR-V backend aborts the process (LLVM ERROR, no recovery) on a
// bf16 type without SPV_KHR_bfloat16, which IGC 2022 would misread anyway:
// a bf16 value left in the LLVM module becomes an error here instead.
static zt_status_t no_bf16_values(MlirModule m) {
  bf16_find_t f = {{NULL}};
  mlirOperationWalk(mlirModuleGetOperation(m), bf16_cb, &f, MlirWalkPreOrder);
  if (mlirOperationIsNull(f.op)) return NULL;
  zt_strbuf_t sb;
  zt_strbuf_init(&sb);
  xe_format_loc(mlirOperationGetLocation(f.op), &sb);
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(f.op));
  zt_status_t s = zt_make_status(ZT_STATUS_UNSUPPORTED,
                                 "%s: Xe lowering: a bf16 value (%.*s) would reach SPIR-V, which "
                                 "needs SPV_KHR_bfloat16 for it; zetile keeps bf16 as bits on "
                                 "Xe and missed this one (please report it)",
                                 sb.data ? sb.data : "?", (int)n.length, n.data);
  zt_strbuf_deinit(&sb);
  return s;
}

static MlirWalkResult has_dot_cb(MlirOperation op, void* user) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  if (n.length == 8 && memcmp(n.data, "tile.dot", 8) == 0) {
    *(bool*)user = true;
    return MlirWalkResultInterrupt;
  }
  return MlirWalkResultAdvance;
}

static bool str_is(MlirStringRef s, const char* c) {
  return s.length == strlen(c) && memcmp(s.data, c, s.length) == 0;
}

// 16 lanes unless a SIMD8 row asks for its own width: the opt-in
// ZETILE_DG2_LOWERING=shared8 (jit/compiler.c routes the row here for it as
// for =shared). The width comes from the row, never from the target's name.
// Under =shared8 only a kernel with a tl.dot takes the row's 8 lanes: Xe-HPG's
// DPAS is SIMD8 only, while dot-free kernels compile to far fewer
// instructions at 16 (acm-g10 E2: softmax 1941 at 8 lanes vs 1152 at 16,
// layer norm 4252 vs 2522). =shared8all keeps 8 lanes for every kernel (the
// 8-lane distribution's tests use it on dot-free kernels).
int xe_emit_lanes(const xe_target_t* tg, MlirOperation kernel) {
  xe_simd8_route_t route = xe_simd8_route();
  bool all = route == XE_SIMD8_ROUTE_SHARED8_ALL;
  if (!tg || tg->lowering != XE_LOWERING_SIMD8 || (route != XE_SIMD8_ROUTE_SHARED8 && !all) ||
      tg->subgroup_size <= 0 || tg->subgroup_size >= XE_SUBGROUP ||
      XE_SUBGROUP % tg->subgroup_size != 0)
    return XE_SUBGROUP;
  bool has_dot = all;
  if (!has_dot && !mlirOperationIsNull(kernel))
    mlirOperationWalk(kernel, has_dot_cb, &has_dot, MlirWalkPreOrder);
  return has_dot ? tg->subgroup_size : XE_SUBGROUP;
}

static zt_status_t emit_module_once(zt_lower_ctx_t* lc, zt_strbuf_t* out,
                                    xe_module_info_t* info, bool* out_arg_split) {
  xe_emitter_t e;
  xe_emitter_init(&e, lc);
  // Elementwise tile ops written whole (xe_wide.c): 16 lanes and zetile's
  // own distribution only; ZETILE_XE_WIDE=0 writes chunks.
  const char* wide_env = getenv("ZETILE_XE_WIDE");
  const char* dist_env = getenv("ZETILE_XE_DISTRIBUTE");
  e.wide = e.lanes == XE_SUBGROUP && !(info && info->no_wide) &&
           !(wide_env && strcmp(wide_env, "0") == 0) &&
           !(dist_env && strcmp(dist_env, "upstream") == 0);
  // ZETILE_XE_WIDE=all: every run whole, whatever it costs (to test the form
  // on kernels whose runs are too short to pay).
  e.wide_all = e.wide && wide_env && strcmp(wide_env, "all") == 0;
  MlirOperation k = lc->kernel;
  xe_set_cur(&e, k);
  // One-column / one-row 2-D tiles have no Xe layout; as 1-D tensors they
  // need none. Loaded (1, N) rows broadcast to a tile have one in a single
  // subgroup (1-row blocks) and stay as they are there; over several
  // subgroups the grid may split rows, which one row cannot follow.
  // 3-D code (a batched dot) as one 2-D value per batch slice: Xe has no
  // 3-D layouts (lowering/common/batch_unroll.c). First: the slices' unit
  // shapes are squeezed next.
  zt_status_t s = zt_unroll_batch_dims(k, false, NULL);
  int squeezed;
  if (!s) s = zt_squeeze_unit_dims(k, lc->options->num_warps != 1, &squeezed);
  // Dots with fp16/bf16 results accumulate in fp32 (DPAS has no other).
  if (!s) s = zt_widen_half_dots(k, NULL);
  // A transposed block load into a dot reads the transposed view instead.
  int transposed;
  if (!s) s = xe_transpose_block_loads(&e, k, lc->options->num_warps, &transposed);
  // A tile read by several loops is loaded in each (tutorial 06's causal
  // forward: Q held across both KV loops).
  int reloaded;
  if (!s) s = xe_reload_per_loop(k, &reloaded);
  if (!s) s = pick_subgroups(lc, &e.nsg);
  bool has_2d = false;
  if (!s) s = xe_matrix_plan(&e, &has_2d);
  if (s) {
    xe_emitter_deinit(&e);
    return s;
  }
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
  if (!s && (e.pre.failed || e.body.failed || e.locs.failed || sig.failed))
    s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
  if (!s) {
    int L = e.lanes;
    zt_strbuf_printf(out, "#zt_l = #xegpu.layout<lane_layout = [%d], lane_data = [1]>\n", L);
    zt_strbuf_printf(out, "#zt_a = #xegpu.layout<lane_layout = [1, %d], lane_data = [1, 1]>\n", L);
    zt_strbuf_printf(out, "#zt_b = #xegpu.layout<lane_layout = [1, %d], lane_data = [2, 1]>\n", L);
    // int8 DPAS operands: A lanes hold column pairs, B VNNI quads.
    zt_strbuf_printf(out, "#zt_a8 = #xegpu.layout<lane_layout = [1, %d], lane_data = [1, 2]>\n", L);
    zt_strbuf_printf(out, "#zt_b8 = #xegpu.layout<lane_layout = [1, %d], lane_data = [4, 1]>\n", L);
    if (e.locs.data) zt_strbuf_puts(out, e.locs.data);  // location aliases (xe_set_cur)
    size_t module_at = out->size;  // where type aliases go (xe_alias_vector_types)
    zt_strbuf_puts(out, "module attributes {gpu.container_module} {\n");
    zt_strbuf_puts(out, "  gpu.module @zt_xe {\n");
    // SLM slots of the cross-subgroup reductions, one buffer per element type.
    for (int kind = 0; kind < ZT_SCALAR_KIND_COUNT; ++kind)
      if (e.slm_kinds & (1u << kind))
        zt_strbuf_printf(out,
                         "    memref.global \"private\" @zt_slm_%s : memref<%dx%s, 3>\n",
                         xe_elem((zt_scalar_kind_t)kind), XE_MAX_SUBGROUPS,
                         xe_elem((zt_scalar_kind_t)kind));
    for (int i = 0; i < e.nslm_bufs; ++i) {
      const char* et = xe_elem((zt_scalar_kind_t)e.slm_bufs[i].kind);
      zt_strbuf_printf(out, "    memref.global \"private\" @zt_slm_%s_%d : memref<%dx%s, 3>\n",
                       et, e.slm_bufs[i].n, e.slm_bufs[i].n, et);
    }
    zt_strbuf_printf(out,
                     "    gpu.func @%.*s(%s) kernel attributes "
                     "{intel_reqd_sub_group_size = %d : i32, "
                     "known_block_size = array<i32: %d, 1, 1>} {\n",
                     (int)name.length, name.data, sig.data ? sig.data : "", e.lanes,
                     e.nsg * e.lanes);
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
    xe_sink_loads(&e.body);
    if (e.body.data) zt_strbuf_puts(out, e.body.data);
    zt_strbuf_puts(out, "    }\n  }\n}\n");
    // ZETILE_XE_TYPE_ALIAS=0 leaves the vector types written out (to measure against).
    const char* ta = getenv("ZETILE_XE_TYPE_ALIAS");
    if (!(ta && strcmp(ta, "0") == 0)) xe_alias_vector_types(out, module_at);
    if (out->failed) s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
  }
  zt_strbuf_deinit(&sig);
  zt_strbuf_deinit(&conv);
  if (info) {
    info->nsg = e.nsg;
    info->lanes = e.lanes;
    info->block_io = e.used_block_io;
    info->int8_dpas = e.used_int8_dpas;
    info->uint8_dpas = e.used_uint8_dpas;
    info->libm = e.used_libm;
    info->atomics = e.used_atomics;
    info->shuffles = e.used_shuffles;
    info->slm = e.slm_kinds || e.nslm_bufs;
    info->wide = e.used_wide;
  }
  *out_arg_split = s && e.arg_split;
  xe_emitter_deinit(&e);
  return s;
}

zt_status_t xe_emit_module(zt_lower_ctx_t* lc, zt_strbuf_t* out, xe_module_info_t* info) {
  bool arg_split = false;
  zt_status_t s = emit_module_once(lc, out, info, &arg_split);
  // An argmin/argmax whose tile the plan split across subgroups along the
  // axis: the kernel's argmin/argmax become a max/min and a min of positions
  // (lowering/common/arg_split.c), built-in reductions that meet in SLM,
  // and the kernel is emitted again. Only then: where the pair reduces in
  // each subgroup, one pass over the tile is cheaper.
  if (s && arg_split) {
    int n = 0;
    zt_status_t r = zt_split_argreduces(lc->kernel, NULL, NULL, &n);
    if (!r && n > 0) {
      zt_status_free(s);
      s = emit_module_once(lc, out, info, &arg_split);
    }
    zt_status_free(r);
  }
  return s;
}

// The SPIR-V binary held by the gpu.binary that gpu-module-to-binary made.
bool xe_binary_object(MlirModule m, MlirStringRef* out) {
  MlirBlock top = mlirModuleGetBody(m);
  for (MlirOperation op = mlirBlockGetFirstOperation(top); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (!str_is(mlirIdentifierStr(mlirOperationGetName(op)), "gpu.binary")) continue;
    MlirAttribute objs =
        mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("objects"));
    if (mlirAttributeIsNull(objs) || !mlirAttributeIsAArray(objs) ||
        mlirArrayAttrGetNumElements(objs) < 1)
      return false;
    MlirAttribute obj = mlirArrayAttrGetElement(objs, 0);
    if (!mlirAttributeIsAGPUObjectAttr(obj)) return false;
    *out = mlirGPUObjectAttrGetObject(obj);
    return true;
  }
  return false;
}

static zt_status_t find_spirv(MlirModule m, MlirStringRef* out) {
  if (!xe_binary_object(m, out))
    return zt_make_status(ZT_STATUS_INTERNAL,
                          "Xe lowering: the pipeline produced no gpu.binary");
  static const unsigned char magic[4] = {0x03, 0x02, 0x23, 0x07};
  if (out->length < 20 || memcmp(out->data, magic, 4) != 0)
    return zt_make_status(ZT_STATUS_INTERNAL, "Xe lowering: gpu.binary does not hold SPIR-V");
  return NULL;
}

// LLVM 22's SPIR-V backend keeps module analysis results in a static
// member (SPIRVModuleAnalysis::MAI, llvm/llvm-project#160613, fixed after
// 22.x by #160956): inside one process, later modules now and then come out
// with a result id defined twice, and more often the more modules the
// process has emitted (after ~800, most of them). And at -O1 and above its
// instruction selection mistypes some integer chains (xe_spirv_o0.c), the
// same in every process. zetile emits in process and validates the result
// (SPIRV-Tools). An invalid module from a process's first emission is the
// second kind: the optimized IR is selected at -O0. From a process that has
// emitted before it may be the first kind: the compile fails with
// ZT_STALE_SPIRV_BACKEND, which the compile worker takes as its cue to exit
// and the caller (jit/compile_budget.c, jit/compile_cached.c) as its cue to
// compile again in a fresh zetile-compile-worker, where the emission is the
// first. The library never starts an MLIR tool for this.

// LLVM's optimization before SPIR-V selection. gpu-module-to-binary runs
// LLVM's default<O2> (xevm-attach-target's O=2) and selects at -O2; zetile
// takes the module's LLVM IR from it unoptimized, runs default<O1> and
// selects at -O2 itself (xe_spirv_o0.c). Why O1: InstCombine is most of
// LLVM's time on lane code (~2/3 of it at O1), and O2 adds more of it, the
// SLP vectorizer, GVN and a second loop pipeline whose work IGC does again
// from the SPIR-V; on the attention forward, softmax, layer norm, the
// 200-op chain and both tutorial matmuls the ISA (`zetile isa`:
// instructions, sends, DPAS and where, loops, spills) is the same as
// after O2, and the SPIR-V byte-identical for four of the six. O=1 in
// xevm-attach-target instead also selects at -O1, which changes the ISA.
// Since session 14 not default<O1> itself but IPSCCP, the inliner (the
// atomics' internal helpers, xe_atomic.c), O1's function simplification,
// IndVarSimplify and DivRemPairs: the module is one spir_kernel calling
// declarations, so O1's attribute inference, GlobalOpt and late loop
// pipeline found nothing to do, and InstCombine ran 8 times (half of LLVM's time on softmax). `opt
// -time-passes` on the kernels' bitcode: softmax 9.2 -> 3.9 ms, attention
// 20.4 -> 11.1 ms (session 14's list, without the three passes below).
// Session 15 took three passes of O1 back after the spill verdict with the
// driver's figure (zetile isa's `spill`: ocloc's line, ISA scratch sends,
// NEO's spill_bytes in AUB mode) differed from O1's on compat-path kernels:
// - div-rem-pairs (O1's last function pass): without it the tuner's
//   32x32x32 GEMM on the compat path (the program-id swizzle's `/` and `%`
//   by GROUP_M, emulated by IGC) got 4096 B of driver spill memory for
//   NEO's pvc while ocloc and the ISA showed none (test_tune_cli.py -k aub);
// - ipsccp (O1's module prefix): without it the attention forward on the
//   compat path spilled 26 registers (38 scratch sends; O1: 0) and
//   FlashAttention 128x64 146 instead of 101;
// - indvars (in O1's function simplification): without it the tutorial
//   matmul on the compat path spilled 176 registers / 429 scratch sends
//   where O1 spills 175 / 427.
// With the three, the verdict equals O1's on every kernel of the check
// (docs/ARCHITECTURE.md "Session 15"); ZETILE_XE_LLVM_PASSES=default<O1>
// gives the old route.
// ZETILE_XE_LLVM_PASSES: "short" (the list below, also the default), another
// pipeline text (LLVM's new pass manager; "default<O2>" gives the bytes of
// the upstream route), or "upstream" for gpu-module-to-binary's own
// optimization and selection.
#define XE_LLVM_IC "instcombine<max-iterations=1;no-verify-fixpoint>"
static const char kLlvmPasses[] =
    "ipsccp,cgscc(inline),function(simplifycfg,sroa,early-cse," XE_LLVM_IC ",simplifycfg,"
    "sroa,early-cse<memssa>,simplifycfg," XE_LLVM_IC ",simplifycfg,reassociate,"
    "loop-mssa(loop-instsimplify,loop-simplifycfg,licm<no-allowspeculation>,"
    "loop-rotate<header-duplication;no-prepare-for-lto>,licm<allowspeculation>),"
    "simplifycfg," XE_LLVM_IC ",loop(indvars),div-rem-pairs)";

static zt_status_t emit_spirv_once(zt_lower_ctx_t* lc, MlirModule m, const char* passes,
                                   zt_status_t* bad) {
  *bad = NULL;
  if (passes) return xe_emit_spirv_passes(lc, m, passes, bad);
  MlirModule copy = mlirModuleFromOperation(mlirOperationClone(mlirModuleGetOperation(m)));
  const char* alt = getenv("ZETILE_XE_EMIT_PIPELINE");
  zt_status_t s = zt_mlir_run_pipeline(lc->ctx, copy, alt && *alt ? alt : kEmitPipeline,
                                       "Xe SPIR-V emission");
  MlirStringRef spv = {NULL, 0};
  if (!s) s = find_spirv(copy, &spv);
  if (!s) *bad = zt_spirv_validate(spv.data, spv.length);
  if (!s && !*bad) s = zt_spirv_set_artifact(lc->artifact, spv.data, spv.length);
  mlirModuleDestroy(copy);
  return s;
}

// Whether the SPIR-V comes from gpu-module-to-binary (upstream's route:
// ZETILE_XE_LLVM_PASSES=upstream or a ZETILE_XE_EMIT_PIPELINE of one's own).
static bool upstream_emission(void) {
  const char* passes = getenv("ZETILE_XE_LLVM_PASSES");
  const char* alt = getenv("ZETILE_XE_EMIT_PIPELINE");
  return (passes && strcmp(passes, "upstream") == 0) || (alt && *alt);
}

static zt_status_t emit_validated_spirv(zt_lower_ctx_t* lc, MlirModule m) {
  // ZETILE_XE_EMIT=o0: straight to the -O0 selection (tests of that path);
  // =process: emit in a fresh process, as if this one were stale (tests).
  const char* mode = getenv("ZETILE_XE_EMIT");
  if (mode && strcmp(mode, "o0") == 0) return xe_emit_spirv_o0(lc, m);
  int before = zt_spirv_emission_count();
  bool first = before == 0;
  bool stale = zt_spirv_backend_stale();
  if (((mode && strcmp(mode, "process") == 0) || stale) && !first)
    return zt_make_status(ZT_STATUS_UNAVAILABLE, "%s (%s)", ZT_STALE_SPIRV_BACKEND,
                          stale ? "an earlier module came out invalid" : "ZETILE_XE_EMIT=process");
  const char* passes = getenv("ZETILE_XE_LLVM_PASSES");
  if (upstream_emission())
    passes = NULL;
  else if (!passes || !*passes || strcmp(passes, "short") == 0)
    passes = kLlvmPasses;
  zt_status_t bad = NULL;
  zt_status_t s = emit_spirv_once(lc, m, passes, &bad);
  if (s || !bad) return s;  // an error other than an invalid module: no second try
  if (getenv("ZETILE_XE_EMIT_LOG"))
    fprintf(stderr, "zetile: invalid SPIR-V at emission %d: %s\n", before + 1,
            zt_status_message(bad));
  if (!first) {
    // A stale backend's duplicate ids depend on where the new module's
    // objects land: once more, before taking the process as stale.
    zt_status_free(bad);
    s = emit_spirv_once(lc, m, passes, &bad);
    if (s || !bad) return s;
    zt_spirv_backend_set_stale();
    zt_status_t r = zt_make_status(ZT_STATUS_UNAVAILABLE, "%s: %s", ZT_STALE_SPIRV_BACKEND,
                                   zt_status_message(bad));
    zt_status_free(bad);
    return r;
  }
  double t0 = zt_timing_now_ms();
  zt_status_t o0 = xe_emit_spirv_o0(lc, m);
  zt_timing_record("Xe SPIR-V emission (-O0 selection)", zt_timing_now_ms() - t0);
  if (!o0) {
    zt_status_free(bad);
    return NULL;
  }
  zt_status_free(o0);
  return zt_status_annotate(bad, "Xe SPIR-V emission (invalid at -O2 and at -O0)");
}

// The SubgroupSize execution mode of the kernel set to `lanes`. LLVM 22's
// XeVM route writes 16 whatever the gpu.func's intel_reqd_sub_group_size
// (seen: 8 in the gpu.func and in mlir-translate's LLVM IR of it, 16 in the
// SPIR-V gpu-module-to-binary makes), and a runtime would then run the
// 8-lane code in subgroups of 16: the one word is rewritten here.
static zt_status_t spirv_subgroup_size(zt_lower_ctx_t* lc, int lanes) {
  const void* data = NULL;
  size_t size = 0;
  ZT_RETURN_IF_ERROR(zt_artifact_get(lc->artifact, "spirv", &data, &size));
  if (size % 4 || size < 20)
    return zt_make_status(ZT_STATUS_INTERNAL, "Xe lowering: SPIR-V of %zu bytes", size);
  uint32_t* w = malloc(size);
  if (!w) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe lowering: SPIR-V copy");
  memcpy(w, data, size);
  size_t n = size / 4, found = 0;
  enum { OP_EXECUTION_MODE = 16, MODE_SUBGROUP_SIZE = 35 };
  for (size_t i = 5; i < n;) {
    uint32_t wc = w[i] >> 16, op = w[i] & 0xffffu;
    if (wc == 0) break;
    if (op == OP_EXECUTION_MODE && wc == 4 && i + 3 < n && w[i + 2] == MODE_SUBGROUP_SIZE) {
      w[i + 3] = (uint32_t)lanes;
      ++found;
    }
    i += wc;
  }
  zt_status_t s = found ? zt_artifact_set(lc->artifact, "spirv", w, size)
                        : zt_make_status(ZT_STATUS_INTERNAL,
                                         "Xe lowering: no SubgroupSize execution mode to set "
                                         "to %d lanes", lanes);
  free(w);
  return s;
}

// A row the SIMD8 lowering serves, taken through this lowering by opt-in
// (issue 12's first step toward one Xe lowering). What this lowering emits
// today is decided by the row, not its name: 16-lane code (XE_SUBGROUP),
// which the row must offer among its subgroup sizes (Xe-HPG runs SIMD16
// kernels; its SIMD8 DPAS does not take them); DPAS only where the row's
// execution size is those 16 lanes; and 2D block IO only where the row has
// it, else the compat library's per-row 1-D block reads (forced below).
static zt_status_t xe_shared_row_check(zt_lower_ctx_t* lc, const xe_target_t* tg) {
  bool offers = false;
  int lanes = xe_emit_lanes(tg, lc->kernel);
  for (int i = 0; i < 4 && tg->subgroup_sizes[i]; ++i)
    offers = offers || tg->subgroup_sizes[i] == lanes;
  if (!offers)
    return zt_make_status(ZT_STATUS_UNSUPPORTED,
                          "Xe lowering (shared, ZETILE_DG2_LOWERING=shared): target '%s' does "
                          "not offer subgroups of %d lanes, the size this lowering emits for it",
                          tg->name, lanes);
  bool has_dot = false;
  mlirOperationWalk(lc->kernel, has_dot_cb, &has_dot, MlirWalkPreOrder);
  // ZETILE_STOP_AFTER=layouts ends the compile after layout assignment,
  // before anything is emitted: the row's DPAS layouts (execution size 8 on
  // dg2) and the conversions they imply can be looked at before emission
  // follows them (ZETILE_DUMP=layouts).
  const char* stop = getenv("ZETILE_STOP_AFTER");
  bool layouts_only = stop && strcmp(stop, "layouts") == 0;
  // At the row's own lanes (=shared8) the dot is the SIMD8 DPAS builtin
  // (xe_distribute.c) when the execution size is those lanes.
  if (has_dot && tg->dpas_exec_size != lanes && !layouts_only)
    return zt_make_status(ZT_STATUS_UNSUPPORTED,
                          "Xe lowering (shared, ZETILE_DG2_LOWERING=shared): tl.dot on target "
                          "'%s' needs DPAS at execution size %d (%s); the shared lowering emits "
                          "%d-lane DPAS only (the dg2 lowering builds it: unset "
                          "ZETILE_DG2_LOWERING)",
                          tg->name, tg->dpas_exec_size,
                          tg->dpas_exec_size ? "SIMD8 XMX" : "no XMX: FMA dots", XE_SUBGROUP);
  return NULL;
}

zt_status_t zt_lower_xe(zt_lower_ctx_t* lc) {
  const char* target = lc->options->target ? lc->options->target : "";
  const xe_target_t* tg = xe_target_find(target);
  // XeVM has hardware tables for its rows' chips only (others compile
  // silently to wrong code), and the emitter writes 16-lane vectors.
  // Rows of the SIMD8 lowering come here only by opt-in (jit/compiler.c,
  // ZETILE_DG2_LOWERING=shared): see xe_shared_row_check.
  bool shared_row = tg && tg->lowering == XE_LOWERING_SIMD8;
  if (!tg || (!shared_row && (tg->lowering != XE_LOWERING_XEVM || !tg->xevm_chip ||
                              tg->subgroup_size != XE_SUBGROUP)))
    return zt_make_status(ZT_STATUS_UNSUPPORTED,
                          "Xe lowering: target '%s' is not one the XeVM path builds for%s%s",
                          target, tg && tg->not_yet ? ": " : "",
                          tg && tg->not_yet ? tg->not_yet : "");
  if (shared_row) ZT_RETURN_IF_ERROR(xe_shared_row_check(lc, tg));
  ZT_RETURN_IF_ERROR(xe_check_fp64(tg, lc->kernel));
  zt_strbuf_t text;
  zt_strbuf_init(&text);
  xe_module_info_t info = {.nsg = 1, .lanes = XE_SUBGROUP};
  zt_status_t s = xe_emit_module(lc, &text, &info);
  int nsg = info.nsg;
  if (s) {
    zt_strbuf_deinit(&text);
    return s;
  }
  s = zt_artifact_set(lc->artifact, "mlir", text.data, text.size);
  // ZETILE_XE_DUMP=file: the lowered module, also when upstream's pipeline
  // then fails (the artifact is not returned on errors).
  const char* dump = getenv("ZETILE_XE_DUMP");
  if (!s && dump && *dump) {
    FILE* f = fopen(dump, "w");
    if (f) {
      fwrite(text.data, 1, text.size, f);
      fclose(f);
    }
  }
  // Only modules with 2-D block IO import the builtins old drivers lack; the
  // others stay byte for byte the same with or without compat.
  bool uses_block_io = info.block_io, uses_int8_dpas = info.int8_dpas;
  MlirModule m = {NULL};
  if (!s) s = zt_mlir_parse(lc->ctx, text.data, text.size, "Xe lowered module", &m);
  zt_strbuf_deinit(&text);
  if (!s) {
    char pipeline[sizeof kPipeline + 600];
    // A row without an XeVM chip (the SIMD8 rows, by opt-in): XeVM 22.1 has
    // no Xe-HPG table; bmg's stands in, which is safe only because what
    // would read it (DPAS shapes, 2D block sizes) is refused or replaced
    // above and below for such rows.
    snprintf(pipeline, sizeof pipeline, kPipeline, tg->xevm_chip ? tg->xevm_chip : "bmg");
    // ZETILE_XE_PIPELINE: another pipeline text in place of kPipeline (for
    // measuring variants of it; the chip is written out, no %s).
    const char* alt = getenv("ZETILE_XE_PIPELINE");
    if (alt && *alt && strlen(alt) + 1 <= sizeof pipeline)
      snprintf(pipeline, sizeof pipeline, "%s", alt);
    char lib[600] = "";
    const char* path = NULL;
    // Drivers without 2D block IO (Debian 12's): link OpenCL C versions of
    // the builtins into the device module, so the SPIR-V imports none.
    if ((lc->options->compat || !tg->block_io_2d) && uses_block_io) {
      s = library_file(XE_LIB_COMPAT, &path);
      if (!s) snprintf(lib, sizeof lib, "%s", path);
    }
    // int8 DPAS: the builtin under the name upstream calls (dpas_names.cl).
    // (At 8 lanes xe_distribute.c calls the SIMD8 builtin by its own name.)
    if (!s && uses_int8_dpas && info.lanes == XE_SUBGROUP) {
      s = library_file(info.uint8_dpas ? XE_LIB_DPAS_NAMES_U8 : XE_LIB_DPAS_NAMES, &path);
      if (!s) {
        size_t l = strlen(lib);
        snprintf(lib + l, sizeof lib - l, "%s%s", l ? "," : "", path);
      }
    }
    if (!s && lib[0]) {
      char* at = strstr(pipeline, "triple=spirv64-unknown-unknown}");
      if (at) {
        char tail[sizeof pipeline];
        snprintf(tail, sizeof tail, "%s", at + strlen("triple=spirv64-unknown-unknown"));
        snprintf(at, sizeof pipeline - (size_t)(at - pipeline),
                 "triple=spirv64-unknown-unknown l=%s%s", lib, tail);
      }
    }
    if (!s && info.libm) {
      // erf & co. as libm calls, renamed to OpenCL builtins afterwards (xe_libm.c).
      const char* after = "gpu.module(convert-math-to-xevm{convert-arith=true}),";
      char* at = strstr(pipeline, after);
      if (!at) {
        s = zt_make_status(ZT_STATUS_INTERNAL, "Xe lowering: pipeline without %s", after);
      } else {
        at += strlen(after);
        char tail[sizeof pipeline];
        snprintf(tail, sizeof tail, "%s", at);
        snprintf(at, sizeof pipeline - (size_t)(at - pipeline), "convert-math-to-libm,%s", tail);
      }
    }
    if (!s) {
      double t = zt_timing_now_ms();
      zt_dce(mlirModuleGetOperation(m));
      zt_timing_record("dead code", zt_timing_now_ms() - t);
    }
    // Lane distribution: zetile's own (xe_distribute.c) where it covers the
    // kernel, upstream's xegpu-subgroup-distribute otherwise.
    // ZETILE_XE_DISTRIBUTE=upstream forces upstream's; =zetile makes a kernel
    // ours cannot take an error (for tests of its coverage).
    bool ours_done = false, tidied = false;
    if (!s) {
      const char* mode = getenv("ZETILE_XE_DISTRIBUTE");
      bool ours = !(mode && strcmp(mode, "upstream") == 0);
      bool strict = mode && strcmp(mode, "zetile") == 0;
      bool done = false;
      char why[600] = "";  // (it starts with the refused op's file:line:col)
      if (ours) {
        double t = zt_timing_now_ms();
        s = xe_distribute_lanes(lc->ctx, m, info.uint8_dpas, &done, why, sizeof why);
        zt_timing_record(done ? "lane distribution (zetile)" : "lane distribution check",
                         zt_timing_now_ms() - t);
      }
      // Upstream's distribution follows, and it knows no chunk shuffles of
      // whole-written ops (xe_wide.c): the module once more in chunks.
      if (!s && !done && !strict && info.wide) {
        double t = zt_timing_now_ms();
        zt_strbuf_t again;
        zt_strbuf_init(&again);
        xe_module_info_t chunked = {.nsg = 1, .lanes = XE_SUBGROUP, .no_wide = true};
        s = xe_emit_module(lc, &again, &chunked);
        if (!s) {
          mlirModuleDestroy(m);
          m.ptr = NULL;
          info = chunked;
          s = zt_artifact_set(lc->artifact, "mlir", again.data, again.size);
        }
        if (!s) s = zt_mlir_parse(lc->ctx, again.data, again.size, "Xe lowered module", &m);
        zt_strbuf_deinit(&again);
        if (!s) zt_dce(mlirModuleGetOperation(m));
        zt_timing_record("emission again in chunks", zt_timing_now_ms() - t);
      }
      // Upstream's distribution knows no 8-lane layouts of Xe-HPG (its chips
      // are pvc and bmg): below 16 lanes ours must cover the kernel.
      if (!s && !done && info.lanes != XE_SUBGROUP)
        s = zt_make_status(ZT_STATUS_UNSUPPORTED,
                           "Xe lowering: at %d lanes (ZETILE_DG2_LOWERING=shared8) zetile's lane "
                           "distribution must cover the kernel, and does not (%s)",
                           info.lanes, why);
      if (!s && strict && !done)
        s = zt_make_status(ZT_STATUS_UNSUPPORTED,
                           "Xe lowering: zetile's lane distribution does not cover this kernel "
                           "(%s) and ZETILE_XE_DISTRIBUTE=zetile",
                           why);
      // ZETILE_DUMP=lanes prints the kernel as one lane's code;
      // ZETILE_STOP_AFTER=lanes ends the compile there (FileCheck tests).
      const char* dump = getenv("ZETILE_DUMP");
      if (!s && done && dump && strstr(dump, "lanes")) {
        fprintf(stderr, "// -----// lanes (%s) //----- //\n", tg->name);
        mlirOperationPrint(mlirModuleGetOperation(m), stderr_cb, NULL);
        fputc('\n', stderr);
      }
      const char* stop = getenv("ZETILE_STOP_AFTER");
      if (!s && stop && strcmp(stop, "lanes") == 0)
        s = zt_make_status(ZT_STATUS_UNAVAILABLE,
                           done ? "Xe lowering: stopped after lane distribution (ZETILE_STOP_AFTER)"
                                : "Xe lowering: stopped before upstream's lane distribution "
                                  "(ZETILE_STOP_AFTER; zetile's does not cover: %s)",
                           why);
      // Element-by-element inserts into the one-element form that lowers to
      // one LLVM op each (xe_lane_tidy.c); ZETILE_XE_TIDY=0 skips it.
      const char* tidy = getenv("ZETILE_XE_TIDY");
      if (!s && done && !(tidy && strcmp(tidy, "0") == 0)) {
        double t = zt_timing_now_ms();
        s = xe_tidy_lanes(lc->ctx, m, NULL);
        tidied = true;
        zt_timing_record("lane tidy-up", zt_timing_now_ms() - t);
      }
      // One vector op per tile op per lane where the pieces are uniform
      // elementwise ops (xe_lane_pack.c); ZETILE_XE_PACK=0 skips it.
      if (!s && done) {
        double t = zt_timing_now_ms();
        s = xe_pack_lanes(lc->ctx, m, NULL);
        zt_timing_record("lane packing", zt_timing_now_ms() - t);
      }
      // Masked element loads/stores as calls of one helper per form
      // (xe_mask_calls.c); ZETILE_XE_MASK_CALLS=0 skips it. Not with
      // atomics (their text route re-prints the module; not checked with
      // helpers in it) nor at 8 lanes (not checked there), nor on upstream's
      // emission route, which would keep the helpers `noinline` (the flip to
      // inline is zetile's route's, xe_spirv_o0.c).
      if (!s && done && !info.atomics && info.lanes == XE_SUBGROUP && !upstream_emission())
        s = xe_mask_calls(lc->ctx, m, NULL);
      ours_done = done;
      if (!s && done) {
        // Upstream's distribution and the canonicalize after it, which
        // tidies upstream's output: on zetile's lane code it cost the most
        // of any pass on big kernels (tutorial 06's backward d128 dkdv:
        // ~0.5 of 1.5 s of CPU) and left the SPIR-V of that kernel, the
        // attention forward, softmax, layer norm, the 200-op chain and both
        // tutorial matmuls byte-identical; the canonicalize after
        // convert-xegpu-to-xevm and the final one still run. Without the
        // tidy-up (ZETILE_XE_TIDY=0) it stays: it folds the untidied insert
        // chains before linearize. ZETILE_XE_LANE_CANON=1 keeps it (to
        // measure against).
        // The cse and loop-invariant-code-motion after that canonicalize
        // go with it: the cse and licm before the distribution already ran
        // on the same lane code, and one cse follows (same bytes, see above).
        const char* keep = getenv("ZETILE_XE_LANE_CANON");
        const char* passes[] = {"gpu.module(xegpu-subgroup-distribute),gpu.module(canonicalize),"
                                "gpu.module(cse),gpu.module(loop-invariant-code-motion),",
                                "gpu.module(xegpu-subgroup-distribute),"};
        bool lean = false;  // the cut of passes[0] was made
        for (int i = (keep && strcmp(keep, "1") == 0) || !tidied ? 1 : 0; i < 2; ++i) {
          char* at = strstr(pipeline, passes[i]);
          if (!at) continue;
          memmove(at, at + strlen(passes[i]), strlen(at + strlen(passes[i])) + 1);
          lean = i == 0;
          break;
        }
        // Clean-ups whose work LLVM's own passes (kLlvmPasses: early-cse,
        // instcombine, simplifycfg; O2 on the other routes) do again on the
        // LLVM IR: the cse after loop-invariant-code-motion, the cse after
        // convert-gpu-to-llvm-spv, the gpu.module's reconcile-unrealized-casts
        // (the module-level one after convert-to-llvm resolves every cast) and
        // the final cse. What stays is needed: without the cse before the
        // motion 56 conformance kernels (shapes, permutes, random) come out
        // with other SPIR-V, and without the final canonicalize bf16 kernels
        // fail (it folds the bf16 values no_bf16_values refuses). SPIR-V
        // byte-identical on the benchmark kernels, a tutorial-06 backward,
        // the atomics (tests/python/test_xe_pipeline_bytes.py) and the 1708
        // conformance builds for pvc (compat path; the compiler's subgroups and 1).
        // The two canonicalizes that stay skip region simplification (block
        // merging and dead-block removal, which simplifycfg does in LLVM):
        // the same 1708 + 12 builds byte-identical, callgrind in zt_lower_xe
        // softmax -2.7%, attention -3.0%.
        // ZETILE_XE_CLEANUP_PASSES=1 keeps them all as they were (to measure against).
        const char* cleanup = getenv("ZETILE_XE_CLEANUP_PASSES");
        const char* lean_cuts[] = {
            "gpu.module(loop-invariant-code-motion),gpu.module(cse),"
            "gpu.module(xegpu-vector-linearize),",
            ",gpu.module(cse),gpu.module(reconcile-unrealized-casts),convert-scf-to-cf,",
            ",gpu.module(canonicalize),gpu.module(cse))",
            "gpu.module(canonicalize{top-down=false}),", ",gpu.module(canonicalize))"};
        const char* lean_keeps[] = {
            "gpu.module(loop-invariant-code-motion),gpu.module(xegpu-vector-linearize),",
            ",convert-scf-to-cf,", ",gpu.module(canonicalize))",
            "gpu.module(canonicalize{top-down=false region-simplify=disabled}),",
            ",gpu.module(canonicalize{region-simplify=disabled}))"};
        for (size_t i = 0; lean && !(cleanup && strcmp(cleanup, "1") == 0) &&
                           i < sizeof lean_cuts / sizeof lean_cuts[0];
             ++i) {
          char* at = strstr(pipeline, lean_cuts[i]);
          if (!at) continue;
          size_t kl = strlen(lean_keeps[i]), cl = strlen(lean_cuts[i]);
          if (strlen(pipeline) + kl - cl + 1 > sizeof pipeline) continue;  // (a longer keep)
          memmove(at + kl, at + cl, strlen(at + cl) + 1);
          memcpy(at, lean_keeps[i], kl);
        }
        // Module-level conversions with nothing to convert in zetile's lane
        // code: no affine ops (neither lower-affine), no strided memref views
        // (expand-strided-metadata: the SLM buffers are static memref.globals),
        // no host-side gpu ops (gpu-to-llvm). Each still walks the module
        // with a conversion driver (~9% of softmax's MLIR pipeline in MLIR's
        // pass timing). Left over, such an op would fail translation to LLVM
        // IR loudly. SPIR-V byte-identical without them (fresh process per
        // kernel): tests/python/test_xe_emit_text.py. ZETILE_XE_NOOP_PASSES=1
        // keeps them (to measure against).
        const char* noop = getenv("ZETILE_XE_NOOP_PASSES");
        const char* cuts[] = {"},lower-affine,", "expand-strided-metadata,", ",gpu-to-llvm,",
                              ",lower-affine,"};
        const char* keeps[] = {"},", "", ",", ","};
        for (size_t i = 0; !(noop && strcmp(noop, "1") == 0) && i < sizeof cuts / sizeof cuts[0];
             ++i) {
          char* at = strstr(pipeline, cuts[i]);
          if (!at) continue;
          size_t kl = strlen(keeps[i]), cl = strlen(cuts[i]);
          memmove(at + kl, at + cl, strlen(at + cl) + 1);
        }
      }
    }
    if (!s && (info.atomics || info.shuffles || info.slm)) {
      // Atomics, lane shuffles and SLM accesses are rewritten between
      // distribution and the conversions (xe_atomic.c): the pipeline runs in
      // two parts around that.
      const char* cut = "gpu.module(xegpu-vector-linearize),";
      char* at = strstr(pipeline, cut);
      if (!at) {
        s = zt_make_status(ZT_STATUS_INTERNAL, "Xe lowering: pipeline without %s", cut);
      } else {
        char first[sizeof pipeline + 8], second[sizeof pipeline + 32];
        snprintf(first, sizeof first, "%.*s)", (int)(at - pipeline) - 1, pipeline);
        snprintf(second, sizeof second, "builtin.module(%s", at);
        s = zt_mlir_run_pipeline_verify_end(lc->ctx, m, first,
                                            "Xe pipeline (XeGPU distribution)");
        // After zetile's distribution: in place (atomics: xe_atomic.c, then
        // shuffles and SLM: xe_lane_moves.c), not through the module's text.
        // ZETILE_XE_MOVES=text takes the text route always.
        const char* moves = getenv("ZETILE_XE_MOVES");
        bool moved = false;
        if (!s && ours_done && !(moves && strcmp(moves, "text") == 0)) {
          double t = zt_timing_now_ms();
          bool atomics_done = !info.atomics;
          if (info.atomics) s = xe_atomics_in_place(lc->ctx, m, &atomics_done);
          if (!s && atomics_done) s = xe_lane_moves(lc->ctx, m, &moved);
          zt_timing_record("lane moves", zt_timing_now_ms() - t);
        }
        // The text route (xe_atomic.c) writes 16-lane vectors.
        if (!s && !moved && info.lanes != XE_SUBGROUP)
          s = zt_make_status(ZT_STATUS_UNSUPPORTED,
                             "Xe lowering: at %d lanes the kernel's lane shuffles, SLM exchanges "
                             "or atomics are not in the form rewritten in place (xe_lane_moves.c)",
                             info.lanes);
        if (!s && !moved) s = xe_lower_atomics(lc->ctx, &m);
        if (!s && ours_done) drop_idle_vector_passes(second, m);
        if (!s)
          s = zt_mlir_run_pipeline_verify_end(lc->ctx, m, second, "Xe pipeline (XeVM -> LLVM)");
      }
    } else if (!s) {
      if (ours_done) drop_idle_vector_passes(pipeline, m);
      s = zt_mlir_run_pipeline_verify_end(lc->ctx, m, pipeline,
                                          "Xe pipeline (XeGPU -> XeVM -> LLVM)");
    }
    if (!s && info.libm) s = xe_libm_to_opencl(m);
    if (!s) s = no_bf16_values(m);
    if (!s) s = emit_validated_spirv(lc, m);
    if (!s && info.lanes != XE_SUBGROUP) s = spirv_subgroup_size(lc, info.lanes);
  }
  if (!mlirModuleIsNull(m)) mlirModuleDestroy(m);
  if (s) return s;

  zt_kernel_meta_t meta;
  zt_kernel_meta_init(&meta);
  ZT_RETURN_IF_ERROR(zt_kernel_meta_from_func(lc->kernel, &meta));
  snprintf(meta.target, sizeof meta.target, "%s", target);
  meta.local_size[0] = nsg * info.lanes;
  meta.local_size[1] = 1;
  meta.local_size[2] = 1;
  meta.subgroup_size = info.lanes;  // what was emitted (a SIMD8 row's default is 8)
  bool has_dot = false;
  mlirOperationWalk(lc->kernel, has_dot_cb, &has_dot, MlirWalkPreOrder);
  if (lc->options->igc_options)
    snprintf(meta.igc_options, sizeof meta.igc_options, "%s", lc->options->igc_options);
  else if (has_dot && tg->grf_large > tg->grf_default)
    // DPAS tiles (accumulators, A/B blocks, prefetch addresses) spill in the
    // default 128 GRF: use the large register file, as Intel's Triton does.
    snprintf(meta.igc_options, sizeof meta.igc_options, "%s", tg->grf_large_option);
  zt_strbuf_t mt;
  zt_strbuf_init(&mt);
  zt_kernel_meta_format(&meta, &mt);
  s = mt.failed ? zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "meta")
                : zt_artifact_set(lc->artifact, "meta", mt.data, mt.size);
  zt_strbuf_deinit(&mt);
  return s;
}
