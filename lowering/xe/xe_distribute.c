// zetile's own lane distribution: the emitted subgroup-level XeGPU module
// rewritten in place into one lane's code (SIMT form), instead of upstream's
// xegpu-subgroup-distribute.
//
// Why: upstream's pass moves ops out of a gpu.warp_execute_on_lane_0 region
// one pattern at a time and rebuilds the region's yields each time; its cost
// grows much faster than the kernel (the FlashAttention forward: 64 DPAS
// become 8,768 transient copies, 6.6 of the compile's 7 s; a 256x256 GEMM
// 3.5 s). Our emitter already fixes every layout, and all of them are of one
// family: lane j holds column j of each 16-column chunk (lane_layout [16] or
// [1, 16], lane_data [1] / [1, 1] / [2, 1] / [4, 1] for VNNI-packed B
// operands). So the distributed type of every value is a function of its own
// type alone (the last dimension divided by 16), elementwise ops, loops and
// block rows keep their shape, and only a handful of ops change form:
//   - arith.constant splats get a splat of the lane's type;
//   - vector.step (0..15) becomes the lane id;
//   - vector.reduction over a 16-lane vector becomes the lane's own
//     reduction and a butterfly of gpu.shuffle xor 1, 2, 4, 8;
//   - block IO and DPAS take 1-D lane vectors (shape casts around them;
//     `packed` on loads of VNNI operands), tensor descriptors lose their
//     layout.
// Anything outside this (a cross-lane extract, a non-splat constant, another
// lane map, an op not listed) leaves the module untouched and the caller
// runs upstream's pass, so coverage can grow without risk: the check runs
// over the whole kernel before anything is changed.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>

#include "xe/xe_internal.h"

// Lanes of the subgroup the module was emitted for: its gpu.func's
// intel_reqd_sub_group_size (16, or 8 for a SIMD8 row asked for it), read
// once per run by xe_distribute_lanes. A chunk stays XE_SUBGROUP elements
// (the emitter's vectors do not change); at 8 lanes lane j holds elements j
// and j + 8 of each chunk, which is what a SIMD8 subgroup block read of 16
// elements gives it. Thread-local: compiles may run on several threads.
// uint8: the kernel's int8 dots read their operands as unsigned (one
// signedness a module, xe_matrix.c): at 8 lanes the SIMD8 builtin is called by
// name here. One thread-local object for both: with a second _Thread_local
// here, LeakSanitizer's tracer crashed (SIGSEGV) at exit in every forked Check
// test of the ASan build that loads this library (session 14, reproducible:
// build-asan/test_cpu_math), whatever the test compiled.
static _Thread_local struct {
  int lanes;
  bool uint8;
} lane_state = {XE_SUBGROUP, false};
#define lanes_now (lane_state.lanes)
#define uint8_now (lane_state.uint8)
#define LANES lanes_now

static bool dpas8_ok(MlirOperation op);

// A marked lane shuffle (`arith.add[if] %v, %v {zt.shfl_<mode> = D}`, the
// emitter's, rewritten after distribution by xe_lane_moves.c): its mode
// ("xor", ...) and D, or NULL.
static const char* marked_shuffle(MlirOperation op, int64_t* d) {
  for (intptr_t i = 0; i < mlirOperationGetNumAttributes(op); ++i) {
    MlirNamedAttribute a = mlirOperationGetAttribute(op, i);
    MlirStringRef n = mlirIdentifierStr(a.name);
    if (n.length > 8 && !memcmp(n.data, "zt.shfl_", 8) && mlirAttributeIsAInteger(a.attribute)) {
      *d = mlirIntegerAttrGetValueInt(a.attribute);
      return n.data + 8;
    }
  }
  return NULL;
}

typedef struct {
  MlirOperation* ops;
  size_t n, cap;
  bool oom;
} op_list_t;

static void list_push(op_list_t* l, MlirOperation op) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 256;
    MlirOperation* g = realloc(l->ops, cap * sizeof *g);
    if (!g) {
      l->oom = true;
      return;
    }
    l->ops = g;
    l->cap = cap;
  }
  l->ops[l->n++] = op;
}

static bool name_starts(MlirOperation op, const char* prefix) {
  MlirStringRef s = mlirIdentifierStr(mlirOperationGetName(op));
  size_t n = strlen(prefix);
  return s.length >= n && memcmp(s.data, prefix, n) == 0;
}

// ---------------------------------------------------------------- checking

typedef struct {
  MlirContext ctx;
  char why[512];
  bool bad;
  bool pairs;      // some layout gives each lane 2 adjacent columns (int8 A)
  bool wide_rows;  // some block row of more than 16 columns moves to a 1-D value
  bool lane_regs;  // the emitter's lane_regs marker (transposed reads) is present
  // Layout attributes already judged (attributes are uniqued in the context,
  // so one pointer is one layout): layout_ok prints each one it reads, and
  // printing every op's layouts was ~3/4 of this check on the 200-op chain.
  struct {
    const void* attr;
    bool ok, pairs;
  } seen[16];
  int nseen;
} check_t;

// why: "<file:line:col of the op>: <op name>: <reason>". The location is the
// tile op's the emitter wrote the op for (the source line of the construct),
// so a refusal at 8 lanes, where this is the last word, names that line and
// not the kernel's def line (the front end reports the first file:line of
// the message).
static void refuse(check_t* c, MlirOperation op, const char* fmt, const char* detail) {
  if (c->bad) return;
  c->bad = true;
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  char msg[160];
  snprintf(msg, sizeof msg, fmt, detail);
  zt_strbuf_t loc;
  zt_strbuf_init(&loc);
  xe_format_loc(mlirOperationGetLocation(op), &loc);
  snprintf(c->why, sizeof c->why, "%s: %.*s: %s", loc.failed || !loc.data ? "?" : loc.data,
           (int)n.length, n.data, msg);
  zt_strbuf_deinit(&loc);
}

// A vector this pass can distribute: rank 1 or 2, the last dimension a
// multiple of the 16 lanes.
static bool lane_vector(MlirType t) {
  if (!mlirTypeIsAVector(t)) return true;
  intptr_t r = mlirShapedTypeGetRank(t);
  if (r < 1 || r > 2) return false;
  return mlirShapedTypeGetDimSize(t, r - 1) % LANES == 0;
}

// A layout attribute of the family above (or none); *pairs: it gives each
// lane 2 adjacent columns (int8 A, lane_data [1, 2]).
static bool layout_ok(MlirAttribute a, bool* pairs) {
  if (mlirAttributeIsNull(a)) return true;
  zt_strbuf_t sb;
  zt_strbuf_init(&sb);
  mlirAttributePrint(a, zt_strbuf_mlir_cb, &sb);
  char one[48], two[48];
  snprintf(one, sizeof one, "lane_layout = [%d], lane_data = [1]>", LANES);
  snprintf(two, sizeof two, "lane_layout = [1, %d], lane_data = [", LANES);
  const char* at = sb.failed ? NULL : strstr(sb.data, two);
  at = at ? at + strlen(two) : NULL;
  bool ok = !sb.failed && !strstr(sb.data, "sg_layout") && !strstr(sb.data, "inst_data") &&
            (strstr(sb.data, one) ||
             (at && (!strncmp(at, "1, 1]>", 6) || !strncmp(at, "2, 1]>", 6) ||
                     !strncmp(at, "4, 1]>", 6) || !strncmp(at, "1, 2]>", 6))));
  *pairs = ok && strstr(sb.data, "lane_data = [1, 2]");
  zt_strbuf_deinit(&sb);
  return ok;
}

static bool types_ok(MlirOperation op) {
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i)
    if (!lane_vector(mlirValueGetType(mlirOperationGetResult(op, i)))) return false;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i)
    if (!lane_vector(mlirValueGetType(mlirOperationGetOperand(op, i)))) return false;
  for (intptr_t r = 0; r < mlirOperationGetNumRegions(op); ++r)
    for (MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r));
         !mlirBlockIsNull(b); b = mlirBlockGetNextInRegion(b))
      for (intptr_t i = 0; i < mlirBlockGetNumArguments(b); ++i)
        if (!lane_vector(mlirValueGetType(mlirBlockGetArgument(b, i)))) return false;
  return true;
}

// Element types gpu.shuffle lowers for (convert-gpu-to-llvm-spv).
static bool shuffle_type(MlirType t) {
  if (mlirTypeIsAF16(t) || mlirTypeIsAF32(t) || mlirTypeIsAF64(t)) return true;
  if (!mlirTypeIsAInteger(t)) return false;
  unsigned w = mlirIntegerTypeGetWidth(t);
  return w == 8 || w == 16 || w == 32 || w == 64;
}

// A transposed d32 read of 16 rows x 8 dwords (xe_trans_load.c): memory
// row i lands in lane i, 8 registers, which is the result's family layout
// (lane j holds column j of an 8x16 vector).
static bool trans_read_ok(MlirOperation op) {
  MlirType t = mlirValueGetType(mlirOperationGetResult(op, 0));
  if (!mlirTypeIsAVector(t) || mlirShapedTypeGetRank(t) != 2 ||
      mlirShapedTypeGetDimSize(t, 0) != 8 || mlirShapedTypeGetDimSize(t, 1) != LANES ||
      LANES != XE_SUBGROUP)
    return false;
  MlirType et = mlirShapedTypeGetElementType(t);
  return mlirTypeIsAF32(et) || (mlirTypeIsAInteger(et) && mlirIntegerTypeGetWidth(et) == 32);
}

// The emitter's marker `unrealized_conversion_cast ... {zt.lane_regs}`:
// each lane's registers of the operands, concatenated and reinterpreted, are
// its registers of the result (transposed reads into B blocks).
static int64_t vec_bits(MlirType t) {
  int64_t n = 1;
  for (intptr_t i = 0; i < mlirShapedTypeGetRank(t); ++i) n *= mlirShapedTypeGetDimSize(t, i);
  MlirType et = mlirShapedTypeGetElementType(t);
  int64_t b = mlirTypeIsAInteger(et) ? mlirIntegerTypeGetWidth(et)
              : mlirTypeIsAF32(et)   ? 32
              : (mlirTypeIsAF16(et) || mlirTypeIsABF16(et)) ? 16
                                     : 0;
  return n * b;
}

static bool lane_regs_ok(MlirOperation op) {
  if (mlirAttributeIsNull(
          mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("zt.lane_regs"))) ||
      mlirOperationGetNumResults(op) != 1 || mlirOperationGetNumOperands(op) < 1)
    return false;
  int64_t bits = 0;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
    MlirType t = mlirValueGetType(mlirOperationGetOperand(op, i));
    if (!mlirTypeIsAVector(t) || mlirShapedTypeGetRank(t) != 2) return false;
    if (!vec_bits(t)) return false;
    bits += vec_bits(t);
  }
  MlirType r = mlirValueGetType(mlirOperationGetResult(op, 0));
  return mlirTypeIsAVector(r) && mlirShapedTypeGetRank(r) == 2 && bits == vec_bits(r);
}

// A vector.shuffle that moves whole groups of LANES elements, each from a
// multiple of LANES (the chunks of xe_wide.c's wide values): lane j's
// element k of the result is its own element mask[k * LANES] / LANES of
// the operands, so the lane's shuffle takes that mask.
static bool lane_shuffle_ok(MlirOperation op) {
  if (mlirOperationGetNumOperands(op) != 2 || mlirOperationGetNumResults(op) != 1) return false;
  for (intptr_t i = 0; i < 2; ++i) {
    MlirType t = mlirValueGetType(mlirOperationGetOperand(op, i));
    if (!mlirTypeIsAVector(t) || mlirShapedTypeGetRank(t) != 1) return false;
  }
  MlirAttribute m = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("mask"));
  if (mlirAttributeIsNull(m) || !mlirAttributeIsADenseI64Array(m)) return false;
  intptr_t n = mlirDenseArrayGetNumElements(m);
  if (n % LANES || n / LANES > 256) return false;
  for (intptr_t k = 0; k < n; k += LANES) {
    int64_t m0 = mlirDenseI64ArrayGetElement(m, k);
    if (m0 < 0 || m0 % LANES) return false;
    for (intptr_t i = 1; i < LANES; ++i)
      if (mlirDenseI64ArrayGetElement(m, k + i) != m0 + i) return false;
  }
  return true;
}

static void fix_shuffle(MlirContext ctx, MlirOperation op) {
  MlirAttribute m = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("mask"));
  intptr_t n = mlirDenseArrayGetNumElements(m) / LANES;
  int64_t lane[256];  // (lane_shuffle_ok: at most 256)
  for (intptr_t k = 0; k < n; ++k) lane[k] = mlirDenseI64ArrayGetElement(m, k * LANES) / LANES;
  mlirOperationSetAttributeByName(op, mlirStringRefCreateFromCString("mask"),
                                  mlirDenseI64ArrayGet(ctx, n, lane));
}

static MlirWalkResult check_op(MlirOperation op, void* user) {
  check_t* c = user;
  if (c->bad) return MlirWalkResultInterrupt;
  if (!types_ok(op)) {
    refuse(c, op, "%s", "a vector whose last dimension is not a multiple of 16 lanes");
    return MlirWalkResultInterrupt;
  }
  static const char* const layout_names[] = {"layout", "layout_result_0", "layout_a",
                                             "layout_b", "layout_cd"};
  for (size_t i = 0; i < sizeof layout_names / sizeof *layout_names; ++i) {
    MlirAttribute a =
        mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(layout_names[i]));
    bool pairs = false, ok = true, known = mlirAttributeIsNull(a);
    for (int j = 0; j < c->nseen && !known; ++j)
      if (c->seen[j].attr == a.ptr) {
        known = true;
        ok = c->seen[j].ok;
        pairs = c->seen[j].pairs;
      }
    if (!known) {
      ok = layout_ok(a, &pairs);
      if (c->nseen < (int)(sizeof c->seen / sizeof c->seen[0])) {
        c->seen[c->nseen].attr = a.ptr;
        c->seen[c->nseen].ok = ok;
        c->seen[c->nseen++].pairs = pairs;
      }
    }
    if (!ok) {
      refuse(c, op, "a lane map outside the family (%s)", layout_names[i]);
      return MlirWalkResultInterrupt;
    }
    c->pairs |= pairs;
  }
  bool vec_result = mlirOperationGetNumResults(op) > 0 &&
                    mlirTypeIsAVector(mlirValueGetType(mlirOperationGetResult(op, 0)));
  if (zt_op_named(op, "arith.constant")) {
    if (vec_result) {
      MlirAttribute v = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("value"));
      if (!mlirAttributeIsADenseElements(v) || !mlirDenseElementsAttrIsSplat(v))
        refuse(c, op, "%s", "a vector constant that is not a splat");
    }
  } else if (name_starts(op, "arith.") || name_starts(op, "math.")) {
    // elementwise. The emitter's marked lane shuffles (xe_lane_moves.c) move
    // 16-lane chunks; at fewer lanes a chunk's elements j and j + 8 share a
    // lane, which they do not know yet (tried: splitting xor shuffles per
    // element made IR that crashed the next pipeline; not found why).
    int64_t d = 0;
    const char* mode = LANES != XE_SUBGROUP ? marked_shuffle(op, &d) : NULL;
    bool idx = mode && !strncmp(mode, "idx", 3);
    if (mode && (strncmp(mode, "xor", 3) && strncmp(mode, "up", 2) && strncmp(mode, "down", 4) &&
                 !idx))
      refuse(c, op, "%s", "a marked lane shuffle of an unknown mode at fewer than 16 lanes");
    else if (mode && (d < (idx ? 0 : 1) || d >= XE_SUBGROUP || mlirOperationGetNumResults(op) != 1))
      refuse(c, op, "%s", "a marked lane shuffle by more than 15 lanes");
  } else if (zt_op_named(op, "vector.broadcast")) {
  } else if (zt_op_named(op, "vector.bitcast")) {
    // Only as the emitter writes it: 8x16 i16 rows (lane j column j; at 8
    // lanes columns j and j + 8) into an int8 A block (lane j columns 2j,
    // 2j + 1, and 2j + 16, 2j + 17 at 8 lanes): per lane i16 -> 2 x i8, and
    // back (stores of such blocks).
    MlirType from = mlirValueGetType(mlirOperationGetOperand(op, 0));
    MlirType to = mlirValueGetType(mlirOperationGetResult(op, 0));
    if (mlirShapedTypeGetRank(from) == 2 && mlirShapedTypeGetDimSize(from, 1) == 2 * XE_SUBGROUP) {
      MlirType tmp = from;
      from = to;
      to = tmp;
    }
    MlirType fe = mlirShapedTypeGetElementType(from), te = mlirShapedTypeGetElementType(to);
    if (mlirShapedTypeGetRank(from) != 2 || !mlirTypeIsAInteger(fe) ||
        mlirIntegerTypeGetWidth(fe) != 16 || !mlirTypeIsAInteger(te) ||
        mlirIntegerTypeGetWidth(te) != 8 || mlirShapedTypeGetDimSize(from, 1) != XE_SUBGROUP)
      refuse(c, op, "%s", "a bitcast other than i16 rows into int8 column pairs");
  } else if (zt_op_named(op, "vector.extract")) {
    if (mlirOperationGetNumOperands(op) != 1 || !vec_result)
      refuse(c, op, "%s", "an element taken out of its lane");
    else
      c->wide_rows |= mlirShapedTypeGetDimSize(mlirValueGetType(mlirOperationGetResult(op, 0)),
                                               0) > XE_SUBGROUP;
  } else if (zt_op_named(op, "vector.insert")) {
    MlirType t = mlirValueGetType(mlirOperationGetOperand(op, 0));
    if (mlirOperationGetNumOperands(op) != 2 || !mlirTypeIsAVector(t))
      refuse(c, op, "%s", "an element put into another lane");
    else
      c->wide_rows |= mlirShapedTypeGetDimSize(t, mlirShapedTypeGetRank(t) - 1) > XE_SUBGROUP;
  } else if (zt_op_named(op, "vector.shuffle")) {
    if (!lane_shuffle_ok(op)) refuse(c, op, "%s", "a shuffle that moves elements across lanes");
  } else if (zt_op_named(op, "vector.reduction")) {
    MlirType t = mlirValueGetType(mlirOperationGetOperand(op, 0));
    if (mlirShapedTypeGetRank(t) != 1 || !shuffle_type(mlirShapedTypeGetElementType(t)))
      refuse(c, op, "%s", "a reduction gpu.shuffle cannot carry");
  } else if (zt_op_named(op, "vector.step")) {
    MlirType t = mlirValueGetType(mlirOperationGetResult(op, 0));
    if (mlirShapedTypeGetDimSize(t, 0) != XE_SUBGROUP)
      refuse(c, op, "%s", "a step of other than 16");
  } else if (LANES != XE_SUBGROUP &&
             (zt_op_named(op, "xegpu.load_nd") || zt_op_named(op, "xegpu.store_nd") ||
              zt_op_named(op, "xegpu.prefetch_nd"))) {
    // The compat library's 2D block emulation (rows without 2D block IO,
    // Xe-HPG) assumes 16 lanes: an 8-lane store of an 8x16 f32 block wrote
    // 8 of 16 columns (opencl:cpu).
    refuse(c, op, "%s", "a 2-D block message at fewer than 16 lanes");
  } else if (zt_op_named(op, "xegpu.load_nd")) {
    if (!mlirAttributeIsNull(
            mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("transpose"))) &&
        !trans_read_ok(op))
      refuse(c, op, "%s", "a transposing block load");
  } else if (zt_op_named(op, "builtin.unrealized_conversion_cast")) {
    if (!lane_regs_ok(op)) refuse(c, op, "%s", "not handled");
    c->lane_regs = true;
  } else if (zt_op_named(op, "xegpu.create_nd_tdesc")) {
    zt_strbuf_t sb;
    zt_strbuf_init(&sb);
    mlirTypePrint(mlirValueGetType(mlirOperationGetResult(op, 0)), zt_strbuf_mlir_cb, &sb);
    if (sb.failed || strstr(sb.data, "array_length")) refuse(c, op, "%s", "array_length > 1");
    zt_strbuf_deinit(&sb);
  } else if (zt_op_named(op, "xegpu.dpas") && LANES != XE_SUBGROUP) {
    if (LANES != 8 || !dpas8_ok(op))
      refuse(c, op, "%s",
             "a DPAS other than fp16/bf16 8x16x16 into fp32 or int8 8x16x32 into int32 at 8 "
             "lanes");
  } else if (zt_op_named(op, "xegpu.store_nd") || zt_op_named(op, "xegpu.prefetch_nd") ||
             zt_op_named(op, "xegpu.update_nd_offset") || zt_op_named(op, "xegpu.dpas")) {
  } else if (zt_op_named(op, "xegpu.load") || zt_op_named(op, "xegpu.store")) {
    if (!mlirAttributeIsNull(
            mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("chunk_size"))))
      refuse(c, op, "%s", "chunked gathers");
    // (Fewer lanes split each gather into one per lane element; an atomic's
    // pieces get ids of their own there, split_gather.)
  } else if (name_starts(op, "scf.")) {
    if (!zt_op_named(op, "scf.for") && !zt_op_named(op, "scf.while") && !zt_op_named(op, "scf.if") &&
        !zt_op_named(op, "scf.yield") && !zt_op_named(op, "scf.condition"))
      refuse(c, op, "%s", "not handled");
  } else if (name_starts(op, "gpu.")) {
    if (zt_op_named(op, "gpu.func")) return MlirWalkResultAdvance;
    if (vec_result) refuse(c, op, "%s", "a vector-valued gpu op");
  } else if (name_starts(op, "llvm.") || zt_op_named(op, "memref.get_global")) {
    // (memref.get_global: the shared local memory buffer of cross-subgroup
    // reductions, read and written by the gathers and scatters above.)
    if (vec_result) refuse(c, op, "%s", "a vector-valued llvm op");
  } else {
    refuse(c, op, "%s", "not handled");
  }
  return c->bad ? MlirWalkResultInterrupt : MlirWalkResultAdvance;
}

// ---------------------------------------------------------------- rewriting

typedef struct {
  MlirContext ctx;
  op_list_t fix;  // ops that change form, in program order
} rewrite_t;

// The lane's type of a subgroup-level type: vector<...xN> -> vector<...xN/16>;
// a tensor descriptor without its layout; anything else unchanged.
static MlirType lane_type(MlirContext ctx, MlirType t) {
  if (mlirTypeIsAVector(t)) {
    intptr_t r = mlirShapedTypeGetRank(t);
    int64_t shape[2];
    for (intptr_t i = 0; i < r; ++i) shape[i] = mlirShapedTypeGetDimSize(t, i);
    shape[r - 1] /= LANES;
    return mlirVectorTypeGet(r, shape, mlirShapedTypeGetElementType(t));
  }
  // (Only XeGPU's types carry layouts: scalars are not printed.)
  MlirStringRef ns = mlirDialectGetNamespace(mlirTypeGetDialect(t));
  if (!(ns.length == 5 && memcmp(ns.data, "xegpu", 5) == 0)) return t;
  zt_strbuf_t sb;
  zt_strbuf_init(&sb);
  mlirTypePrint(t, zt_strbuf_mlir_cb, &sb);
  MlirType out = t;
  const char* at = sb.failed ? NULL : strstr(sb.data, ", #xegpu.layout<");
  if (at && strncmp(sb.data, "!xegpu.tensor_desc<", 19) == 0) {
    // Drop ", #xegpu.layout<...>" (its brackets nest).
    const char* p = at + strlen(", #xegpu.layout<");
    int depth = 1;
    while (*p && depth) depth += (*p == '<') - (*p == '>'), ++p;
    zt_strbuf_t nt;
    zt_strbuf_init(&nt);
    zt_strbuf_printf(&nt, "%.*s%s", (int)(at - sb.data), sb.data, p);
    if (!nt.failed) {
      MlirType parsed = mlirTypeParseGet(ctx, mlirStringRefCreate(nt.data, nt.size));
      if (!mlirTypeIsNull(parsed)) out = parsed;
    }
    zt_strbuf_deinit(&nt);
  }
  zt_strbuf_deinit(&sb);
  return out;
}

static bool needs_fix(MlirOperation op) {
  int64_t d;
  if (LANES != XE_SUBGROUP && name_starts(op, "arith.") && marked_shuffle(op, &d)) return true;
  static const char* const names[] = {"arith.constant", "vector.step",    "vector.reduction",
                                      "xegpu.load_nd",  "xegpu.store_nd", "xegpu.dpas",
                                      "xegpu.load",     "xegpu.store",
                                      "builtin.unrealized_conversion_cast", "vector.shuffle"};
  for (size_t i = 0; i < sizeof names / sizeof *names; ++i)
    if (zt_op_named(op, names[i])) return true;
  return false;
}

static MlirWalkResult retype_op(MlirOperation op, void* user) {
  rewrite_t* rw = user;
  if (zt_op_named(op, "gpu.func")) return MlirWalkResultAdvance;
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i) {
    MlirValue v = mlirOperationGetResult(op, i);
    mlirValueSetType(v, lane_type(rw->ctx, mlirValueGetType(v)));
  }
  for (intptr_t r = 0; r < mlirOperationGetNumRegions(op); ++r)
    for (MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r));
         !mlirBlockIsNull(b); b = mlirBlockGetNextInRegion(b))
      for (intptr_t i = 0; i < mlirBlockGetNumArguments(b); ++i) {
        MlirValue a = mlirBlockGetArgument(b, i);
        mlirBlockArgumentSetType(a, lane_type(rw->ctx, mlirValueGetType(a)));
      }
  // The layouts have been applied: later passes see plain lane code
  // (layout_result_<i>, layout_operand_<i>; scf.for has one per result).
  // They are discardable attributes: reading the op's whole attribute list
  // instead builds a dictionary of its properties on every call, which was
  // ~2/5 of this walk on the 200-op chain (callgrind, issue 22).
  for (intptr_t i = mlirOperationGetNumDiscardableAttributes(op) - 1; i >= 0; --i) {
    MlirStringRef n = mlirIdentifierStr(mlirOperationGetDiscardableAttribute(op, i).name);
    if ((n.length > 14 && memcmp(n.data, "layout_result_", 14) == 0) ||
        (n.length > 15 && memcmp(n.data, "layout_operand_", 15) == 0))
      mlirOperationRemoveDiscardableAttributeByName(op, n);
  }
  if (needs_fix(op)) list_push(&rw->fix, op);
  return MlirWalkResultAdvance;
}

static MlirOperation make_op(const char* name, MlirLocation loc, intptr_t nops,
                             const MlirValue* ops, intptr_t nres, const MlirType* res,
                             intptr_t nattr, const MlirNamedAttribute* attrs) {
  MlirOperationState st = mlirOperationStateGet(mlirStringRefCreateFromCString(name), loc);
  if (nops) mlirOperationStateAddOperands(&st, nops, ops);
  if (nres) mlirOperationStateAddResults(&st, nres, res);
  if (nattr) mlirOperationStateAddAttributes(&st, nattr, attrs);
  return mlirOperationCreate(&st);
}

static MlirNamedAttribute named(MlirContext ctx, const char* name, MlirAttribute a) {
  return mlirNamedAttributeGet(mlirIdentifierGet(ctx, mlirStringRefCreateFromCString(name)), a);
}

// Inserts op before `before` and returns its first result.
static MlirValue put_before(MlirOperation before, MlirOperation op) {
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(before), before, op);
  return mlirOperationGetResult(op, 0);
}

static MlirValue shape_cast_before(MlirContext ctx, MlirOperation before, MlirValue v,
                                   MlirType to) {
  return put_before(before, make_op("vector.shape_cast", mlirOperationGetLocation(before), 1,
                                    &v, 1, &to, 0, NULL));
}

static MlirType flat_type(MlirType vec) {
  int64_t n = 1;
  for (intptr_t i = 0; i < mlirShapedTypeGetRank(vec); ++i) n *= mlirShapedTypeGetDimSize(vec, i);
  return mlirVectorTypeGet(1, &n, mlirShapedTypeGetElementType(vec));
}

// Result 0 of op becomes 1-D; its readers get it back in the lane's shape.
static void flatten_result(MlirContext ctx, MlirOperation op) {
  MlirValue r = mlirOperationGetResult(op, 0);
  MlirType shaped = mlirValueGetType(r);
  if (mlirShapedTypeGetRank(shaped) == 1) return;
  mlirValueSetType(r, flat_type(shaped));
  MlirOperation cast = make_op("vector.shape_cast", mlirOperationGetLocation(op), 1, &r, 1,
                               &shaped, 0, NULL);
  mlirBlockInsertOwnedOperationAfter(mlirOperationGetBlock(op), op, cast);
  MlirValue c = mlirOperationGetResult(cast, 0);
  mlirValueReplaceAllUsesOfWith(r, c);
  mlirOperationSetOperand(cast, 0, r);
}

static void flatten_operand(MlirContext ctx, MlirOperation op, intptr_t i) {
  MlirValue v = mlirOperationGetOperand(op, i);
  MlirType t = mlirValueGetType(v);
  if (!mlirTypeIsAVector(t) || mlirShapedTypeGetRank(t) == 1) return;
  mlirOperationSetOperand(op, i, shape_cast_before(ctx, op, v, flat_type(t)));
}

static bool remove_attr(MlirOperation op, const char* name) {
  return mlirOperationRemoveAttributeByName(op, mlirStringRefCreateFromCString(name));
}

static MlirAttribute get_attr(MlirOperation op, const char* name) {
  return mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(name));
}

static MlirValue i32_const(MlirContext ctx, MlirOperation before, int64_t v) {
  MlirType i32 = mlirIntegerTypeGet(ctx, 32);
  MlirNamedAttribute a = named(ctx, "value", mlirIntegerAttrGet(i32, v));
  return put_before(before, make_op("arith.constant", mlirOperationGetLocation(before), 0,
                                    NULL, 1, &i32, 1, &a));
}

// vector.reduction <kind>, %v [, %acc] over 16 lanes -> the lane's own
// elements combined, then a butterfly across the lanes (every lane ends with
// the total, as the subgroup-level op's uniform scalar result).
static zt_status_t fix_reduction(MlirContext ctx, MlirOperation op) {
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirValue v = mlirOperationGetOperand(op, 0);
  MlirType vt = mlirValueGetType(v);
  MlirType et = mlirShapedTypeGetElementType(vt);
  MlirAttribute kind_attr = get_attr(op, "kind");
  zt_strbuf_t ks;
  zt_strbuf_init(&ks);
  mlirAttributePrint(kind_attr, zt_strbuf_mlir_cb, &ks);
  // "#vector.kind<add>"
  char kind[24] = "";
  const char* lt = ks.failed ? NULL : strchr(ks.data, '<');
  if (lt) snprintf(kind, sizeof kind, "%.*s", (int)strcspn(lt + 1, ">"), lt + 1);
  zt_strbuf_deinit(&ks);
  const char* comb = xe_reduction_combiner(kind, mlirTypeIsAFloat(et));
  if (!comb)
    return zt_make_status(ZT_STATUS_INTERNAL, "Xe lane distribution: reduction kind '%s'", kind);
  MlirValue x;
  if (mlirShapedTypeGetDimSize(vt, 0) == 1) {
    MlirNamedAttribute pos = named(ctx, "static_position", mlirDenseI64ArrayGet(ctx, 1, (int64_t[]){0}));
    x = put_before(op, make_op("vector.extract", loc, 1, &v, 1, &et, 1, &pos));
  } else {
    MlirNamedAttribute k = named(ctx, "kind", kind_attr);
    x = put_before(op, make_op("vector.reduction", loc, 1, &v, 1, &et, 1, &k));
  }
  MlirValue width = i32_const(ctx, op, LANES);
  MlirAttribute xor_mode = mlirAttributeParseGet(ctx, mlirStringRefCreateFromCString("#gpu<shuffle_mode xor>"));
  if (mlirAttributeIsNull(xor_mode))
    return zt_make_status(ZT_STATUS_INTERNAL, "Xe lane distribution: no gpu shuffle mode");
  for (int d = 1; d < LANES; d *= 2) {
    MlirValue args[3] = {x, i32_const(ctx, op, d), width};
    MlirType res[2] = {et, mlirIntegerTypeGet(ctx, 1)};
    MlirNamedAttribute mode = named(ctx, "mode", xor_mode);
    MlirValue other = put_before(op, make_op("gpu.shuffle", loc, 3, args, 2, res, 1, &mode));
    MlirValue pair[2] = {x, other};
    x = put_before(op, make_op(comb, loc, 2, pair, 1, &et, 0, NULL));
  }
  if (mlirOperationGetNumOperands(op) > 1) {
    MlirValue pair[2] = {mlirOperationGetOperand(op, 1), x};
    x = put_before(op, make_op(comb, loc, 2, pair, 1, &et, 0, NULL));
  }
  mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, 0), x);
  mlirOperationDestroy(op);
  return NULL;
}

// vector.step : vector<16xindex> -> the lane id as vector<1xindex>; at
// fewer lanes, lane j's elements j, j + LANES, ... (vector<16/LANESxindex>).
static void fix_step(MlirContext ctx, MlirOperation op) {
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirType idx = mlirIndexTypeGet(ctx);
  MlirValue lane = put_before(op, make_op("gpu.lane_id", loc, 0, NULL, 1, &idx, 0, NULL));
  MlirType vt = mlirValueGetType(mlirOperationGetResult(op, 0));
  MlirValue b = put_before(op, make_op("vector.broadcast", loc, 1, &lane, 1, &vt, 0, NULL));
  int64_t per = mlirShapedTypeGetDimSize(vt, 0);
  if (per > 1) {
    MlirAttribute steps[XE_SUBGROUP];
    for (int64_t k = 0; k < per && k < XE_SUBGROUP; ++k)
      steps[k] = mlirIntegerAttrGet(idx, k * LANES);
    MlirNamedAttribute v = named(ctx, "value", mlirDenseElementsAttrGet(vt, per, steps));
    MlirValue c = put_before(op, make_op("arith.constant", loc, 0, NULL, 1, &vt, 1, &v));
    MlirValue pair[2] = {b, c};
    b = put_before(op, make_op("arith.addi", loc, 2, pair, 1, &vt, 0, NULL));
  }
  mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, 0), b);
  mlirOperationDestroy(op);
}

// Whether a block-IO layout is a VNNI-packed operand (lane_data [2, 1] or [4, 1]).
static bool packed_layout(MlirAttribute a) {
  if (mlirAttributeIsNull(a)) return false;
  zt_strbuf_t sb;
  zt_strbuf_init(&sb);
  mlirAttributePrint(a, zt_strbuf_mlir_cb, &sb);
  bool p = !sb.failed && (strstr(sb.data, "lane_data = [2, 1]") || strstr(sb.data, "lane_data = [4, 1]"));
  zt_strbuf_deinit(&sb);
  return p;
}

// The lane_regs marker in lane code: operands flattened, concatenated
// (vector.shuffle), bitcast to the result's element type, shaped as the
// result.
static void fix_lane_regs(MlirContext ctx, MlirOperation op) {
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirValue acc = {NULL};
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
    MlirValue x = mlirOperationGetOperand(op, i);
    x = shape_cast_before(ctx, op, x, flat_type(mlirValueGetType(x)));
    if (!acc.ptr) {
      acc = x;
      continue;
    }
    int64_t n = mlirShapedTypeGetDimSize(mlirValueGetType(acc), 0) +
                mlirShapedTypeGetDimSize(mlirValueGetType(x), 0);
    int64_t mask[64];
    for (int64_t j = 0; j < n && j < 64; ++j) mask[j] = j;
    MlirType ct = mlirVectorTypeGet(1, &n, mlirShapedTypeGetElementType(mlirValueGetType(acc)));
    MlirValue pair[2] = {acc, x};
    MlirNamedAttribute m = named(ctx, "mask", mlirDenseI64ArrayGet(ctx, n, mask));
    acc = put_before(op, make_op("vector.shuffle", loc, 2, pair, 1, &ct, 1, &m));
  }
  MlirValue res = mlirOperationGetResult(op, 0);
  MlirType rt = mlirValueGetType(res);
  MlirType flat = flat_type(rt);
  if (!mlirTypeEqual(mlirShapedTypeGetElementType(flat),
                     mlirShapedTypeGetElementType(mlirValueGetType(acc))))
    acc = put_before(op, make_op("vector.bitcast", loc, 1, &acc, 1, &flat, 0, NULL));
  acc = shape_cast_before(ctx, op, acc, rt);
  mlirValueReplaceAllUsesOfWith(res, acc);
  mlirOperationDestroy(op);
}

// Element k of a lane vector as a one-element vector (the form XeVM's
// gathers and scatters take per lane).
static MlirValue lane_element(MlirContext ctx, MlirOperation before, MlirValue v, int64_t k) {
  MlirLocation loc = mlirOperationGetLocation(before);
  MlirType et = mlirShapedTypeGetElementType(mlirValueGetType(v));
  MlirNamedAttribute pos = named(ctx, "static_position", mlirDenseI64ArrayGet(ctx, 1, &k));
  MlirValue x = put_before(before, make_op("vector.extract", loc, 1, &v, 1, &et, 1, &pos));
  int64_t one = 1;
  MlirType vt = mlirVectorTypeGet(1, &one, et);
  return put_before(before, make_op("vector.broadcast", loc, 1, &x, 1, &vt, 0, NULL));
}

// A gather or scatter whose lane holds n > 1 elements (a 16-element chunk
// at 8 lanes): XeVM lowers one element per lane, so one op per element;
// a gather's pieces are put back together with vector.shuffle.
static void split_gather(MlirContext ctx, MlirOperation op) {
  bool load = zt_op_named(op, "xegpu.load");
  int64_t n = 0;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
    MlirType t = mlirValueGetType(mlirOperationGetOperand(op, i));
    if (mlirTypeIsAVector(t)) n = mlirShapedTypeGetDimSize(t, 0);
  }
  if (n <= 1) return;
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirValue acc = {NULL};
  // zt.pairs8 (xe_matrix.c): a gather of a dot's A in pair order along a
  // contiguous row, so the lane's second element is at the first one's
  // offset + 1. Written so (not as element 1 of the offset vector, which
  // LLVM leaves as an `or` of vector arithmetic), IGC sees the two 16-bit
  // loads as adjacent and may merge them into one d32 load, as it does the
  // dg2 folder's; alignment stays IGC's call (the loads say 2 bytes).
  bool pairs = load && n == 2 && mlirOperationGetNumOperands(op) == 3 &&
               !mlirAttributeIsNull(get_attr(op, "zt.pairs8"));
  if (load) remove_attr(op, "zt.pairs8");
  MlirValue next = {NULL};
  if (pairs) {
    MlirValue off = mlirOperationGetOperand(op, 1);
    MlirType idx = mlirIndexTypeGet(ctx);
    int64_t z = 0, one = 1;
    MlirNamedAttribute pos = named(ctx, "static_position", mlirDenseI64ArrayGet(ctx, 1, &z));
    MlirValue o0 = put_before(op, make_op("vector.extract", loc, 1, &off, 1, &idx, 1, &pos));
    MlirNamedAttribute c1 = named(ctx, "value", mlirIntegerAttrGet(idx, 1));
    MlirValue one_ix = put_before(op, make_op("arith.constant", loc, 0, NULL, 1, &idx, 1, &c1));
    MlirValue sum[2] = {o0, one_ix};
    MlirValue o1 = put_before(op, make_op("arith.addi", loc, 2, sum, 1, &idx, 0, NULL));
    MlirType v1 = mlirVectorTypeGet(1, &one, idx);
    next = put_before(op, make_op("vector.broadcast", loc, 1, &o1, 1, &v1, 0, NULL));
  }
  for (int64_t k = 0; k < n; ++k) {
    MlirOperation piece = mlirOperationClone(op);
    mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(op), op, piece);
    // An atomic's value, compare and result ops are paired by their id
    // (xe_atomics_in_place): piece k of each gets id * n + k, so element k's
    // compare, atomic and old value stay one site.
    static const char* const ids[] = {"zt.atomic_id", "zt.atomic_cmp", "zt.atomic_result"};
    for (int a = 0; a < 3; ++a) {
      MlirStringRef an = mlirStringRefCreateFromCString(ids[a]);
      MlirAttribute id = mlirOperationGetAttributeByName(piece, an);
      if (mlirAttributeIsNull(id) || !mlirAttributeIsAInteger(id)) continue;
      mlirOperationSetAttributeByName(
          piece, an,
          mlirIntegerAttrGet(mlirAttributeGetType(id), mlirIntegerAttrGetValueInt(id) * n + k));
    }
    for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
      MlirValue v = mlirOperationGetOperand(op, i);
      if (pairs && k == 1 && i == 1) mlirOperationSetOperand(piece, i, next);
      else if (mlirTypeIsAVector(mlirValueGetType(v)))
        mlirOperationSetOperand(piece, i, lane_element(ctx, piece, v, k));
    }
    if (!load) continue;
    MlirValue r = mlirOperationGetResult(piece, 0);
    int64_t one = 1;
    MlirType et = mlirShapedTypeGetElementType(mlirValueGetType(r));
    mlirValueSetType(r, mlirVectorTypeGet(1, &one, et));
    if (!acc.ptr) {
      acc = r;
      continue;
    }
    int64_t m = k + 1, mask[XE_SUBGROUP];
    for (int64_t j = 0; j < m; ++j) mask[j] = j;
    MlirType ct = mlirVectorTypeGet(1, &m, et);
    MlirValue pair[2] = {acc, r};
    MlirNamedAttribute ma = named(ctx, "mask", mlirDenseI64ArrayGet(ctx, m, mask));
    acc = put_before(op, make_op("vector.shuffle", loc, 2, pair, 1, &ct, 1, &ma));
  }
  if (load) mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, 0), acc);
  mlirOperationDestroy(op);
}

// ---- DPAS at 8 lanes (Xe-HPG): the SIMD8 builtin instead of xegpu.dpas ----
// XeVM 22.1 has no Xe-HPG DPAS (its chips are pvc and bmg, SIMD16), so at 8
// lanes the lane-level xegpu.dpas becomes two calls of IGC's SIMD8 builtin
// (the one lowering/dg2/dg2_dot.c calls), one per 8-column half of the
// 8x16 block. In the 8-lane lane code lane j holds columns j and j + 8:
//   A 8x16 (vector<8x2>): the builtin wants lane j to hold columns 2j,
//     2j + 1 of each row as one dword (int8): 4 gpu.shuffle idx a row,
//     none when the emitter read A in pair order (zt.a_pairs8 on the op,
//     xe_val_t.pairs8: lane j's elements are already 2j, 2j + 1);
//   B 16x16 (vector<16x2>): column j + 8h is rows 0..15 of the lane's half
//     h, whose dwords are the VNNI pairs (rows 2r, 2r + 1) the builtin takes;
//   C 8x16 f32 (vector<8x2>): half h is the builtin's float8 accumulator.
//   int8 (k32): A 8x32 i8 is vector<8x4> (lane j: columns 2j, 2j + 1,
//     2j + 16, 2j + 17), i.e. the i16 pairs j and j + 8 moved like fp16's
//     columns (the builtin's dword 4j..4j+3 is the pairs 2j, 2j + 1); B
//     32x16 is vector<32x2>: half h is 32 rows of one column, 8 dwords of 4
//     rows each (VNNI); C is i32. (Signed or unsigned: uint8_now.)
static bool is_int(MlirType t, unsigned w) {
  return mlirTypeIsAInteger(t) && mlirIntegerTypeGetWidth(t) == w;
}

static const char* dpas8_builtin(MlirType et) {
  if (mlirTypeIsAF16(et)) return "_Z38intel_sub_group_f16_f16_matrix_mad_k16Dv8_iS_Dv8_f";
  if (mlirTypeIsABF16(et)) return "_Z40intel_sub_group_bf16_bf16_matrix_mad_k16Dv8_iS_Dv8_f";
  if (is_int(et, 8))
    return uint8_now ? "_Z36intel_sub_group_u8_u8_matrix_mad_k32Dv8_jS_Dv8_i"
                     : "_Z36intel_sub_group_i8_i8_matrix_mad_k32Dv8_iS_S_";
  return NULL;
}

static bool dpas8_ok(MlirOperation op) {
  if (mlirOperationGetNumOperands(op) < 2) return false;
  MlirType a = mlirValueGetType(mlirOperationGetOperand(op, 0));
  MlirType b = mlirValueGetType(mlirOperationGetOperand(op, 1));
  MlirType r = mlirValueGetType(mlirOperationGetResult(op, 0));
  MlirType et = mlirShapedTypeGetElementType(a), rt = mlirShapedTypeGetElementType(r);
  int64_t k = is_int(et, 8) ? 32 : 16;  // K of one DPAS: 8 dwords of A's row
  return mlirShapedTypeGetRank(a) == 2 && mlirShapedTypeGetDimSize(a, 0) == 8 &&
         mlirShapedTypeGetDimSize(a, 1) == k && mlirShapedTypeGetRank(b) == 2 &&
         mlirShapedTypeGetDimSize(b, 0) == k && mlirShapedTypeGetDimSize(b, 1) == 16 &&
         dpas8_builtin(et) && mlirTypeEqual(et, mlirShapedTypeGetElementType(b)) &&
         (is_int(et, 8) ? is_int(rt, 32) : mlirTypeIsAF32(rt));
}

static MlirValue op1(MlirOperation before, const char* name, MlirValue x, MlirType t) {
  return put_before(before, make_op(name, mlirOperationGetLocation(before), 1, &x, 1, &t, 0, NULL));
}

static MlirValue op2(MlirOperation before, const char* name, MlirValue x, MlirValue y, MlirType t) {
  MlirValue p[2] = {x, y};
  return put_before(before, make_op(name, mlirOperationGetLocation(before), 2, p, 1, &t, 0, NULL));
}

// Column h of a lane's R x 2 value as vector<R>, element by element (a
// shuffle of the flattened value would be a vector of 32 halves, which
// LLVM 22's SPIR-V backend cannot split: "unable to legalize ... <32 x s16>").
static MlirValue lane_half(MlirContext ctx, MlirOperation before, MlirValue v, int h) {
  MlirType t = mlirValueGetType(v);
  int64_t rows = mlirShapedTypeGetDimSize(t, 0);
  MlirType et = mlirShapedTypeGetElementType(t);
  MlirLocation loc = mlirOperationGetLocation(before);
  MlirValue el[2 * XE_SUBGROUP];
  if (rows > 2 * XE_SUBGROUP) rows = 2 * XE_SUBGROUP;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t pos[2] = {r, h};
    MlirNamedAttribute p = named(ctx, "static_position", mlirDenseI64ArrayGet(ctx, 2, pos));
    el[r] = put_before(before, make_op("vector.extract", loc, 1, &v, 1, &et, 1, &p));
  }
  MlirType rt = mlirVectorTypeGet(1, &rows, et);
  return put_before(before, make_op("vector.from_elements", loc, rows, el, 1, &rt, 0, NULL));
}

// Half h of an int8 B block (vector<32x2xi8>) as the builtin's 8 dwords,
// each from 4 rows (a <32 x i8> value is one LLVM 22's SPIR-V backend
// cannot split).
static MlirValue b_half_i8(MlirContext ctx, MlirOperation before, MlirValue b, int h) {
  MlirLocation loc = mlirOperationGetLocation(before);
  MlirType i8 = mlirIntegerTypeGet(ctx, 8), i32 = mlirIntegerTypeGet(ctx, 32);
  int64_t four = 4, one = 1, eight = 8;
  MlirType v4 = mlirVectorTypeGet(1, &four, i8), v1 = mlirVectorTypeGet(1, &one, i32);
  MlirValue dw[8];
  for (int i = 0; i < 8; ++i) {
    MlirValue el[4];
    for (int r = 0; r < 4; ++r) {
      int64_t pos[2] = {4 * i + r, h};
      MlirNamedAttribute p = named(ctx, "static_position", mlirDenseI64ArrayGet(ctx, 2, pos));
      el[r] = put_before(before, make_op("vector.extract", loc, 1, &b, 1, &i8, 1, &p));
    }
    MlirValue q = put_before(before, make_op("vector.from_elements", loc, 4, el, 1, &v4, 0, NULL));
    MlirValue bits = put_before(before, make_op("vector.bitcast", loc, 1, &q, 1, &v1, 0, NULL));
    MlirNamedAttribute p0 =
        named(ctx, "static_position", mlirDenseI64ArrayGet(ctx, 1, (int64_t[]){0}));
    dw[i] = put_before(before, make_op("vector.extract", loc, 1, &bits, 1, &i32, 1, &p0));
  }
  MlirType v8 = mlirVectorTypeGet(1, &eight, i32);
  return put_before(before, make_op("vector.from_elements", loc, 8, dw, 1, &v8, 0, NULL));
}

// v (bf16, a lane's DPAS operand) as its i16 bits. A bitcast of v would
// leave v in the module, and the values a dequantized operand is built from
// are bf16 only on the way: rows of i16 bitcast to bf16 and inserted into a
// bf16 constant (the weight-only int4 GEMM's B), which LLVM lowers from a
// bf16 poison that SPIR-V cannot hold (no SPV_KHR_bfloat16; no_bf16_values
// in xe_lower.c refused it). So the bitcast is taken back through the
// inserts (and extracts) to the i16 values and constants they came from;
// bf16 is left only where nothing feeds it as i16 (then, with `fallback`, a
// vector.bitcast as before; without, a null value).
static MlirValue bf16_bits(MlirContext ctx, MlirOperation before, MlirValue v, int depth,
                           bool fallback) {
  MlirType t = mlirValueGetType(v), i16 = mlirIntegerTypeGet(ctx, 16);
  bool vec = mlirTypeIsAVector(t);
  MlirType bt = i16;
  if (vec) {
    int64_t shape[4];
    intptr_t r = mlirShapedTypeGetRank(t);
    for (intptr_t i = 0; i < r && i < 4; ++i) shape[i] = mlirShapedTypeGetDimSize(t, i);
    bt = mlirVectorTypeGet(r, shape, i16);
  }
  MlirOperation def = mlirValueIsAOpResult(v) ? mlirOpResultGetOwner(v) : (MlirOperation){NULL};
  MlirLocation loc = mlirOperationGetLocation(before);
  if (!mlirOperationIsNull(def) && depth < 64) {
    if ((zt_op_named(def, "arith.bitcast") || zt_op_named(def, "vector.bitcast")) &&
        mlirTypeEqual(mlirValueGetType(mlirOperationGetOperand(def, 0)), bt))
      return mlirOperationGetOperand(def, 0);
    if (zt_op_named(def, "vector.insert") && mlirOperationGetNumOperands(def) == 2) {
      MlirValue x = bf16_bits(ctx, before, mlirOperationGetOperand(def, 0), depth + 1, fallback);
      MlirValue d = x.ptr ? bf16_bits(ctx, before, mlirOperationGetOperand(def, 1), depth + 1,
                                      fallback)
                          : x;
      if (!d.ptr) return d;
      MlirValue ops[2] = {x, d};
      MlirNamedAttribute p = named(ctx, "static_position", get_attr(def, "static_position"));
      return put_before(before, make_op("vector.insert", loc, 2, ops, 1, &bt, 1, &p));
    }
    if (zt_op_named(def, "vector.extract") && mlirOperationGetNumOperands(def) == 1) {
      MlirValue x = bf16_bits(ctx, before, mlirOperationGetOperand(def, 0), depth + 1, false);
      if (x.ptr) {
        MlirNamedAttribute p = named(ctx, "static_position", get_attr(def, "static_position"));
        return put_before(before, make_op("vector.extract", loc, 1, &x, 1, &bt, 1, &p));
      }
    }
    MlirAttribute c = zt_op_named(def, "arith.constant") ? get_attr(def, "value")
                                                         : (MlirAttribute){NULL};
    if (vec && !mlirAttributeIsNull(c) && mlirAttributeIsADenseElements(c) &&
        mlirDenseElementsAttrIsSplat(c)) {
      // bf16 is the top half of the fp32 value (exact: it was a bf16).
      float f = (float)mlirFloatAttrGetValueDouble(mlirDenseElementsAttrGetSplatValue(c));
      uint32_t u;
      memcpy(&u, &f, sizeof u);
      MlirNamedAttribute a = named(
          ctx, "value", mlirDenseElementsAttrSplatGet(bt, mlirIntegerAttrGet(i16, (int16_t)(u >> 16))));
      return put_before(before, make_op("arith.constant", loc, 0, NULL, 1, &bt, 1, &a));
    }
  }
  if (!fallback) return (MlirValue){NULL};
  return put_before(before, make_op(vec ? "vector.bitcast" : "arith.bitcast", loc, 1, &v, 1, &bt,
                                    0, NULL));
}

// The builtin's declaration in the gpu.module (once per name).
static zt_status_t declare_dpas8(MlirContext ctx, MlirOperation func, const char* fn,
                                 const char* acc) {
  MlirOperation mod = mlirOperationGetParentOperation(func);
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(mod, 0));
  if (!mlirOperationIsNull(zt_symbol_in_block(body, mlirStringRefCreateFromCString(fn))))
    return NULL;
  char text[256];
  snprintf(text, sizeof text,
           "func.func private @%s(vector<8xi32>, vector<8xi32>, vector<8x%s>) -> vector<8x%s>",
           fn, acc, acc);
  MlirOperation d = mlirOperationCreateParse(ctx, mlirStringRefCreateFromCString(text),
                                             mlirStringRefCreateFromCString("dpas8"));
  if (mlirOperationIsNull(d))
    return zt_make_status(ZT_STATUS_INTERNAL, "Xe lane distribution: SIMD8 DPAS declaration");
  mlirBlockInsertOwnedOperationBefore(body, func, d);
  return NULL;
}

static zt_status_t fix_dpas8(MlirContext ctx, MlirOperation op) {
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirValue a = mlirOperationGetOperand(op, 0), b = mlirOperationGetOperand(op, 1);
  MlirType at = mlirValueGetType(a), et = mlirShapedTypeGetElementType(at);
  const char* fn = dpas8_builtin(et);
  bool int8 = is_int(et, 8);
  // A read in pair order (xe_val_t.pairs8): lane j already holds columns
  // 2j, 2j + 1 of each row, elements 0 and 1.
  bool in_pairs = !int8 && !mlirAttributeIsNull(mlirOperationGetAttributeByName(
                               op, mlirStringRefCreateFromCString("zt.a_pairs8")));
  if (int8) {
    // The lane's 8x4 bytes as 8x2 i16 pairs, which move like fp16 columns.
    int64_t as[2] = {mlirShapedTypeGetDimSize(at, 0), mlirShapedTypeGetDimSize(at, 1) / 2};
    MlirType i16 = mlirIntegerTypeGet(ctx, 16);
    a = put_before(op, make_op("vector.bitcast", loc, 1, &a, 1,
                               (MlirType[]){mlirVectorTypeGet(2, as, i16)}, 0, NULL));
    at = mlirValueGetType(a);
    et = i16;
  } else if (mlirTypeIsABF16(et)) {
    // bf16 travels as its i16 bits (SPIR-V has no bf16 without
    // SPV_KHR_bfloat16; no_bf16_values in xe_lower.c checks it).
    a = bf16_bits(ctx, op, a, 0, true);
    b = bf16_bits(ctx, op, b, 0, true);
    at = mlirValueGetType(a);
    et = mlirIntegerTypeGet(ctx, 16);
  }
  MlirOperation func = mlirOperationGetParentOperation(op);
  while (!mlirOperationIsNull(func) && !zt_op_named(func, "gpu.func"))
    func = mlirOperationGetParentOperation(func);
  ZT_RETURN_IF_ERROR(declare_dpas8(ctx, func, fn, int8 ? "i32" : "f32"));
  MlirType i32 = mlirIntegerTypeGet(ctx, 32), i1 = mlirIntegerTypeGet(ctx, 1);
  // (acc_t: the accumulator's element type, f32 or i32.)
  MlirType idx = mlirIndexTypeGet(ctx), acc_t = int8 ? i32 : mlirF32TypeGet(ctx);
  int64_t eight = 8, two = 2, one = 1;
  MlirType v8i32 = mlirVectorTypeGet(1, &eight, i32), v8acc = mlirVectorTypeGet(1, &eight, acc_t);
  MlirValue lane_ix = put_before(op, make_op("gpu.lane_id", loc, 0, NULL, 1, &idx, 0, NULL));
  MlirValue lane = op1(op, "arith.index_cast", lane_ix, i32);
  // Source lanes of columns 2j and 2j + 1, and which half holds them (j >= 4).
  MlirValue src_lo = op2(op, "arith.andi", op2(op, "arith.muli", lane, i32_const(ctx, op, 2), i32),
                         i32_const(ctx, op, 7), i32);
  MlirValue src_hi = op2(op, "arith.addi", src_lo, i32_const(ctx, op, 1), i32);
  MlirNamedAttribute ult = named(ctx, "predicate", mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), 6));
  MlirValue cmp_ops[2] = {lane, i32_const(ctx, op, 4)};
  MlirValue low_half = put_before(op, make_op("arith.cmpi", loc, 2, cmp_ops, 1, &i1, 1, &ult));
  MlirValue width = i32_const(ctx, op, LANES);
  MlirAttribute idx_mode = mlirAttributeParseGet(ctx, mlirStringRefCreateFromCString("#gpu<shuffle_mode idx>"));
  MlirValue rows[8];
  for (int r = 0; r < 8; ++r) {
    MlirValue part[2];
    for (int w = 0; w < 2 && in_pairs; ++w) {
      int64_t pos[2] = {r, w};
      MlirNamedAttribute p = named(ctx, "static_position", mlirDenseI64ArrayGet(ctx, 2, pos));
      part[w] = put_before(op, make_op("vector.extract", loc, 1, &a, 1, &et, 1, &p));
    }
    for (int w = 0; w < 2 && !in_pairs; ++w) {
      MlirValue got[2];
      for (int h = 0; h < 2; ++h) {
        int64_t pos[2] = {r, h};
        MlirNamedAttribute p = named(ctx, "static_position", mlirDenseI64ArrayGet(ctx, 2, pos));
        MlirValue e = put_before(op, make_op("vector.extract", loc, 1, &a, 1, &et, 1, &p));
        MlirValue args[3] = {e, w ? src_hi : src_lo, width};
        MlirType res[2] = {et, i1};
        MlirNamedAttribute mode = named(ctx, "mode", idx_mode);
        got[h] = put_before(op, make_op("gpu.shuffle", loc, 3, args, 2, res, 1, &mode));
      }
      MlirValue sel[3] = {low_half, got[0], got[1]};
      part[w] = put_before(op, make_op("arith.select", loc, 3, sel, 1, &et, 0, NULL));
    }
    MlirType v2 = mlirVectorTypeGet(1, &two, et), v1 = mlirVectorTypeGet(1, &one, i32);
    MlirValue pr = put_before(op, make_op("vector.from_elements", loc, 2, part, 1, &v2, 0, NULL));
    MlirValue bits = op1(op, "vector.bitcast", pr, v1);
    MlirNamedAttribute p0 = named(ctx, "static_position", mlirDenseI64ArrayGet(ctx, 1, (int64_t[]){0}));
    rows[r] = put_before(op, make_op("vector.extract", loc, 1, &bits, 1, &i32, 1, &p0));
  }
  MlirValue apk = put_before(op, make_op("vector.from_elements", loc, 8, rows, 1, &v8i32, 0, NULL));
  MlirValue acc = mlirOperationGetNumOperands(op) > 2 ? mlirOperationGetOperand(op, 2)
                                                      : (MlirValue){NULL};
  MlirValue d[2];
  MlirAttribute callee = mlirFlatSymbolRefAttrGet(ctx, mlirStringRefCreateFromCString(fn));
  for (int h = 0; h < 2; ++h) {
    MlirValue bh = int8 ? b_half_i8(ctx, op, b, h)
                        : op1(op, "vector.bitcast", lane_half(ctx, op, b, h), v8i32);
    MlirValue ch;
    if (acc.ptr) {
      ch = lane_half(ctx, op, acc, h);
    } else {
      MlirNamedAttribute z =
          named(ctx, "value", int8 ? mlirDenseElementsAttrInt32SplatGet(v8acc, 0)
                                   : mlirDenseElementsAttrFloatSplatGet(v8acc, 0.0f));
      ch = put_before(op, make_op("arith.constant", loc, 0, NULL, 1, &v8acc, 1, &z));
    }
    MlirValue args[3] = {apk, bh, ch};
    MlirNamedAttribute c = named(ctx, "callee", callee);
    d[h] = put_before(op, make_op("func.call", loc, 3, args, 1, &v8acc, 1, &c));
  }
  int64_t mask[16], sixteen = 16;
  for (int r = 0; r < 8; ++r) mask[2 * r] = r, mask[2 * r + 1] = 8 + r;
  MlirNamedAttribute m = named(ctx, "mask", mlirDenseI64ArrayGet(ctx, 16, mask));
  MlirType v16 = mlirVectorTypeGet(1, &sixteen, acc_t);
  MlirValue flat = put_before(op, make_op("vector.shuffle", loc, 2, d, 1, &v16, 1, &m));
  MlirValue res = shape_cast_before(ctx, op, flat, mlirValueGetType(mlirOperationGetResult(op, 0)));
  mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, 0), res);
  mlirOperationDestroy(op);
  return NULL;
}

// A marked xor shuffle (`%r = arith.add[if] %v, %v {zt.shfl_xor = D}`: r is
// v read from lane i ^ D of the 16-lane chunk, xe_lane_moves.c) at fewer
// lanes, where lane j holds elements j, j + LANES, ...: written here as
// gpu.shuffle ops, one per lane element, for D < LANES; for D >= LANES the
// partner is in the same lane (element k ^ D / LANES).
// One gpu.shuffle (mode "xor", "up", "down" or "idx" by / of off) of the
// scalar x across the subgroup's lanes.
static MlirValue shuffle1(MlirContext ctx, MlirOperation before, MlirValue x, const char* mode,
                          int64_t off) {
  char text[48];
  snprintf(text, sizeof text, "#gpu<shuffle_mode %s>", mode);
  MlirAttribute ma = mlirAttributeParseGet(ctx, mlirStringRefCreateFromCString(text));
  MlirValue args[3] = {x, i32_const(ctx, before, off), i32_const(ctx, before, LANES)};
  MlirType res2[2] = {mlirValueGetType(x), mlirIntegerTypeGet(ctx, 1)};
  MlirNamedAttribute m = named(ctx, "mode", ma);
  return put_before(before, make_op("gpu.shuffle", mlirOperationGetLocation(before), 3, args, 2,
                                    res2, 1, &m));
}

// Marked up / down / idx shuffles at fewer lanes. Element k of lane j is
// chunk element i = j + LANES * k. idx d: element d / LANES of lane
// d % LANES, for every element. down d (i + d) with d = LANES * q + r:
// lanes j < LANES - r take element k + q of lane j + r (shuffle down r),
// the others element k + q + 1 of lane j + r - LANES (shuffle up LANES -
// r); up d (i - d): lanes j >= r take element k - q of lane j - r, the
// others element k - q - 1 of lane j - r + LANES. Sources past the chunk
// are the 16-lane shuffle's out-of-range lanes: any value (the lane's own).
static void fix_marked_moves(MlirContext ctx, MlirOperation op, const char* mode, int64_t d,
                             MlirValue v, int64_t n, MlirValue* el) {
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirType et = mlirShapedTypeGetElementType(mlirValueGetType(v));
  MlirValue x[XE_SUBGROUP];
  for (int64_t k = 0; k < n; ++k) {
    MlirNamedAttribute p = named(ctx, "static_position", mlirDenseI64ArrayGet(ctx, 1, &k));
    x[k] = put_before(op, make_op("vector.extract", loc, 1, &v, 1, &et, 1, &p));
  }
  if (!strncmp(mode, "idx", 3)) {
    MlirValue b = d / LANES < n ? shuffle1(ctx, op, x[d / LANES], "idx", d % LANES) : x[0];
    for (int64_t k = 0; k < n; ++k) el[k] = b;
    return;
  }
  bool down = !strncmp(mode, "down", 4);
  int64_t q = d / LANES, r = d % LANES;
  MlirType idx = mlirIndexTypeGet(ctx);
  MlirValue lane = {NULL}, near = {NULL};
  if (r) {
    // down: lanes j < LANES - r read lane j + r; up: lanes j >= r read j - r.
    lane = put_before(op, make_op("gpu.lane_id", loc, 0, NULL, 1, &idx, 0, NULL));
    MlirNamedAttribute cv =
        named(ctx, "value", mlirIntegerAttrGet(idx, down ? LANES - r : r));
    MlirValue c = put_before(op, make_op("arith.constant", loc, 0, NULL, 1, &idx, 1, &cv));
    MlirAttribute pred = mlirIntegerAttrGet(mlirIntegerTypeGet(ctx, 64), down ? 6 : 9);  // ult / uge
    MlirNamedAttribute pa = named(ctx, "predicate", pred);
    MlirValue ops[2] = {lane, c};
    MlirType i1 = mlirIntegerTypeGet(ctx, 1);
    near = put_before(op, make_op("arith.cmpi", loc, 2, ops, 1, &i1, 1, &pa));
  }
  for (int64_t k = 0; k < n; ++k) {
    int64_t s0 = down ? k + q : k - q, s1 = down ? s0 + 1 : s0 - 1;
    bool h0 = s0 >= 0 && s0 < n, h1 = r && s1 >= 0 && s1 < n;
    MlirValue a = !h0 ? (MlirValue){NULL} : r ? shuffle1(ctx, op, x[s0], down ? "down" : "up", r)
                                              : x[s0];
    MlirValue b = h1 ? shuffle1(ctx, op, x[s1], down ? "up" : "down", LANES - r)
                     : (MlirValue){NULL};
    if (a.ptr && b.ptr) {
      MlirValue ops[3] = {near, a, b};
      el[k] = put_before(op, make_op("arith.select", loc, 3, ops, 1, &et, 0, NULL));
    } else {
      el[k] = a.ptr ? a : b.ptr ? b : x[k];
    }
  }
}

static zt_status_t fix_marked(MlirContext ctx, MlirOperation op, int64_t d) {
  MlirValue v = mlirOperationGetOperand(op, 0);
  MlirType t = mlirValueGetType(v);
  MlirLocation loc = mlirOperationGetLocation(op);
  int64_t n = mlirTypeIsAVector(t) ? mlirShapedTypeGetDimSize(t, 0) : 1, mask[XE_SUBGROUP];
  if (!mlirTypeIsAVector(t) || mlirShapedTypeGetRank(t) != 1 || n > XE_SUBGROUP)
    return zt_make_status(ZT_STATUS_INTERNAL, "Xe lane distribution: a marked shuffle's type");
  MlirValue res;
  int64_t dd = 0;
  const char* mode = marked_shuffle(op, &dd);
  if (mode && strncmp(mode, "xor", 3)) {
    MlirValue el[XE_SUBGROUP];
    fix_marked_moves(ctx, op, mode, d, v, n, el);
    res = put_before(op, make_op("vector.from_elements", loc, n, el, 1, &t, 0, NULL));
  } else if (d >= LANES) {
    for (int64_t k = 0; k < n; ++k) mask[k] = k ^ (d / LANES);
    MlirValue pair[2] = {v, v};
    MlirNamedAttribute m = named(ctx, "mask", mlirDenseI64ArrayGet(ctx, n, mask));
    res = put_before(op, make_op("vector.shuffle", loc, 2, pair, 1, &t, 1, &m));
  } else {
    MlirType et = mlirShapedTypeGetElementType(t), i1 = mlirIntegerTypeGet(ctx, 1);
    MlirAttribute xor_mode =
        mlirAttributeParseGet(ctx, mlirStringRefCreateFromCString("#gpu<shuffle_mode xor>"));
    MlirValue el[XE_SUBGROUP];
    MlirValue off = i32_const(ctx, op, d), width = i32_const(ctx, op, LANES);
    for (int64_t k = 0; k < n; ++k) {
      MlirNamedAttribute p = named(ctx, "static_position", mlirDenseI64ArrayGet(ctx, 1, &k));
      MlirValue e = put_before(op, make_op("vector.extract", loc, 1, &v, 1, &et, 1, &p));
      MlirValue args[3] = {e, off, width};
      MlirType res2[2] = {et, i1};
      MlirNamedAttribute mode = named(ctx, "mode", xor_mode);
      el[k] = put_before(op, make_op("gpu.shuffle", loc, 3, args, 2, res2, 1, &mode));
    }
    res = put_before(op, make_op("vector.from_elements", loc, n, el, 1, &t, 0, NULL));
  }
  mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, 0), res);
  mlirOperationDestroy(op);
  return NULL;
}

static zt_status_t fix_op(MlirContext ctx, MlirOperation op) {
  int64_t d = 0;
  if (LANES != XE_SUBGROUP && name_starts(op, "arith.") && marked_shuffle(op, &d))
    return fix_marked(ctx, op, d);
  if (zt_op_named(op, "arith.constant")) {
    MlirType t = mlirValueGetType(mlirOperationGetResult(op, 0));
    if (!mlirTypeIsAVector(t)) return NULL;
    MlirAttribute v = get_attr(op, "value");
    mlirOperationSetAttributeByName(
        op, mlirStringRefCreateFromCString("value"),
        mlirDenseElementsAttrSplatGet(t, mlirDenseElementsAttrGetSplatValue(v)));
  } else if (zt_op_named(op, "vector.step")) {
    fix_step(ctx, op);
  } else if (zt_op_named(op, "vector.reduction")) {
    return fix_reduction(ctx, op);
  } else if (zt_op_named(op, "xegpu.load_nd")) {
    bool igc = false;
    ZT_RETURN_IF_ERROR(xe_igc_vnni_call(ctx, op, &igc));
    if (igc) return NULL;
    bool packed = packed_layout(get_attr(op, "layout"));
    remove_attr(op, "layout");
    if (packed) mlirOperationSetAttributeByName(op, mlirStringRefCreateFromCString("packed"),
                                                mlirUnitAttrGet(ctx));
    flatten_result(ctx, op);
  } else if (zt_op_named(op, "xegpu.store_nd")) {
    remove_attr(op, "layout");
    flatten_operand(ctx, op, 0);
  } else if (zt_op_named(op, "xegpu.dpas") && LANES == 8) {
    return fix_dpas8(ctx, op);
  } else if (zt_op_named(op, "xegpu.dpas")) {
    remove_attr(op, "layout_a");
    remove_attr(op, "layout_b");
    remove_attr(op, "layout_cd");
    for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) flatten_operand(ctx, op, i);
    flatten_result(ctx, op);
  } else if (zt_op_named(op, "xegpu.load") || zt_op_named(op, "xegpu.store")) {
    remove_attr(op, "layout");
    if (LANES < XE_SUBGROUP) split_gather(ctx, op);
  } else if (zt_op_named(op, "builtin.unrealized_conversion_cast")) {
    fix_lane_regs(ctx, op);
  } else if (zt_op_named(op, "vector.shuffle")) {
    fix_shuffle(ctx, op);
  }
  return NULL;
}

// Every bf16 -> i16 arith.bitcast at fewer lanes (the emitter moves bf16
// as i16 bits, and at 16 lanes such round trips fold away after LLVM
// lowering; at 8 lanes a lane's bf16 rows are vectors, whose LLVM form
// starts from a bf16 poison SPIR-V cannot hold): taken back to the i16
// values through extracts and inserts (bf16_bits), so the bf16 values die.
static MlirWalkResult find_bf16_bits(MlirOperation op, void* user) {
  if (!zt_op_named(op, "arith.bitcast")) return MlirWalkResultAdvance;
  MlirType from = mlirValueGetType(mlirOperationGetOperand(op, 0));
  MlirType to = mlirValueGetType(mlirOperationGetResult(op, 0));
  if (mlirTypeIsAVector(from)) from = mlirShapedTypeGetElementType(from);
  if (mlirTypeIsAVector(to)) to = mlirShapedTypeGetElementType(to);
  if (mlirTypeIsABF16(from) && mlirTypeIsAInteger(to)) list_push(user, op);
  return MlirWalkResultAdvance;
}

static zt_status_t untangle_bf16(MlirContext ctx, MlirOperation func) {
  op_list_t l = {NULL, 0, 0, false};
  mlirOperationWalk(func, find_bf16_bits, &l, MlirWalkPreOrder);
  if (l.oom) {
    free(l.ops);
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe lane distribution");
  }
  for (size_t i = 0; i < l.n; ++i) {
    MlirValue r = bf16_bits(ctx, l.ops[i], mlirOperationGetOperand(l.ops[i], 0), 0, false);
    if (r.ptr) mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(l.ops[i], 0), r);
  }
  free(l.ops);
  return NULL;
}

typedef struct {
  MlirOperation funcs[8];
  int n;
} funcs_t;

static MlirWalkResult find_funcs(MlirOperation op, void* user) {
  funcs_t* f = user;
  if (zt_op_named(op, "gpu.func")) {
    if (f->n < 8) f->funcs[f->n] = op;
    f->n++;
    return MlirWalkResultSkip;
  }
  return MlirWalkResultAdvance;
}

static MlirWalkResult find_marker(MlirOperation op, void* user) {
  if (!zt_op_named(op, "builtin.unrealized_conversion_cast") ||
      mlirAttributeIsNull(
          mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("zt.lane_regs"))))
    return MlirWalkResultAdvance;
  *(bool*)user = true;
  return MlirWalkResultInterrupt;
}

zt_status_t xe_distribute_lanes(MlirContext ctx, MlirModule m, bool uint8_dpas, bool* done,
                                char* why, size_t why_size) {
  *done = false;
  uint8_now = uint8_dpas;
  if (why_size) why[0] = 0;
  funcs_t fs = {.n = 0};
  mlirOperationWalk(mlirModuleGetOperation(m), find_funcs, &fs, MlirWalkPreOrder);
  if (fs.n != 1) {
    snprintf(why, why_size, "%d kernel functions", fs.n);
    return NULL;
  }
  MlirAttribute sgs = mlirOperationGetAttributeByName(
      fs.funcs[0], mlirStringRefCreateFromCString("intel_reqd_sub_group_size"));
  lanes_now = mlirAttributeIsAInteger(sgs) ? (int)mlirIntegerAttrGetValueInt(sgs) : XE_SUBGROUP;
  if (lanes_now <= 0 || XE_SUBGROUP % lanes_now) {
    snprintf(why, why_size, "a subgroup of %d lanes", lanes_now);
    lanes_now = XE_SUBGROUP;
    return NULL;
  }
  check_t c = {.ctx = ctx, .bad = false};
  mlirOperationWalk(fs.funcs[0], check_op, &c, MlirWalkPreOrder);
  // A row of a 2-D value whose lanes hold column pairs (2j, 2j+1) is not
  // laid out like a 1-D value of the same width (j, j + 16): such moves
  // would need lane shuffles.
  if (!c.bad && c.pairs && c.wide_rows) {
    c.bad = true;
    snprintf(c.why, sizeof c.why, "rows of a column-pair layout moved to 1-D values");
  }
  if (c.bad) {
    snprintf(why, why_size, "%s", c.why);
    // Upstream's pass does not know the marker: say so instead of letting
    // it fail on an unrealized cast.
    if (!c.lane_regs) mlirOperationWalk(fs.funcs[0], find_marker, &c.lane_regs, MlirWalkPreOrder);
    if (c.lane_regs)
      return zt_make_status(ZT_STATUS_UNSUPPORTED,
                            "Xe lowering: transposed 2D block reads need zetile's lane "
                            "distribution, which does not cover this kernel (%s); "
                            "ZETILE_XE_TRANS_READ=0 reads those operands with row gathers",
                            c.why);
    return NULL;
  }
  rewrite_t rw = {.ctx = ctx};
  mlirOperationWalk(fs.funcs[0], retype_op, &rw, MlirWalkPreOrder);
  if (rw.fix.oom) {
    free(rw.fix.ops);
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe lane distribution");
  }
  zt_status_t s = NULL;
  for (size_t i = 0; i < rw.fix.n && !s; ++i) s = fix_op(ctx, rw.fix.ops[i]);
  free(rw.fix.ops);
  if (!s && LANES != XE_SUBGROUP) s = untangle_bf16(ctx, fs.funcs[0]);
  if (!s) *done = true;
  return s;
}
