// The compat path's VNNI B reads as IGC's internal 2D block read (issue 12,
// session 20), and its plain 8x16 A reads likewise (session 21).
//
// On drivers without cl_intel_subgroup_2d_block_io (Debian's IGC 1.0.12504)
// the compat library (compat/block2d_compat.cl) serves XeVM's VNNI read of
// a dot's 16x16 B block with per-row 1-D block reads behind a run-time check
// of the 2D message's rules, falling back to per-lane loads. IGC has the
// real message as an internal builtin,
// __builtin_IB_subgroup_block_read_flat_transform_u16_k16 (one
// load_block2d.ugm.d16v send, ../shared/XEGPU_NOTES.md), but drops it
// silently wherever another path may replace its result (a fallback branch
// or a select), so it can only be issued unconditionally: where the
// message's rules hold by construction, which this file decides at compile
// time. A dot's 8x16 A blocks (attention's Q) under the same rules are
// __builtin_IB_subgroup_block_read_flat_u16_m8k16v1 (one load_block2d.ugm.d16
// send instead of 8 rows of 1-D block reads with their run-time checks):
// session 18 saw ocloc abort when the compat library issued it for every
// plain read; issued only where the rules are proven it builds, and pvc
// compat attention at head dim 128 went 121 -> 103 spilled registers (fp16;
// bf16 101 -> 76), head dim 64 291 -> 171 sends and its fp16 causal
// variant 27 -> 0 spilled (the library's checks' predicates, hoisted).
// ZETILE_XE_IGC_PLAIN=0 keeps the library's plain reads. Marked loads
// (`zt.igc_vnni`, both kinds) become a call of the builtin in
// zetile's lane distribution (xe_distribute.c); all others keep the compat
// library's read.
//
// The rules (upstream MLIR's XeGPU uArch table for PVC and BMG, "as
// implemented by IGC", and the Khronos extension's stricter minimums where
// they can be shown):
//  - base address 64-byte aligned: every descriptor's base is aligned down
//    and the difference (delta, in elements) moved into x and the width
//    (xe_align_base);
//  - x in whole dwords for 16-bit data and the width a multiple of 4 bytes:
//    the tile's address is 4-byte aligned at every group start (the
//    pointer argument's specialized alignment, even element offsets and
//    loop advances: xe_ptr_dword_aligned), so delta is even, and the block
//    columns start at multiples of 16;
//  - width at least 64 bytes: the descriptor's width is the group's columns
//    (32 16-bit elements or more) plus delta, with no mask term along the
//    columns (a column bound makes the width what is left of it, any size);
//  - pitch a multiple of 16 bytes and at least 32: xe_block_pitch_ok's
//    multiple of 16 bytes (64 or more when constant), and for a hinted
//    argument the smallest positive multiple it allows at least 32 bytes
//    (fp16 rows 16 elements apart or more). The Khronos text asks for 64;
//    a hinted pitch of 32 bytes is not excluded (nor on the native path,
//    docs/ARCHITECTURE.md "2-D block pitch");
//  - height and width at most 2^24: the width is a constant; a row mask's
//    height (what is left of the bound) is not checked, as on the native
//    path.
// Only in blocks (a loop body, the kernel body) of at most XE_SINK_MAX_DOTS
// dots, where xe_sink_loads.c places each read at its first DPAS: in a body
// left as written (tutorial 06's backward, four dots in its dk/dv loop,
// every block read at the top) the sends made IGC spill more than the
// library's row loops (pvc compat, w4 d64: 641 -> 1149 registers).
// ZETILE_XE_IGC_VNNI=0 keeps every read on the compat library (to compare).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>

#include "xe/xe_internal.h"

static int dots_in_block(MlirOperation op) {
  int n = 0;
  for (MlirOperation o = mlirBlockGetFirstOperation(mlirOperationGetBlock(op));
       !mlirOperationIsNull(o); o = mlirOperationGetNextInBlock(o))
    n += zt_op_named(o, "tile.dot");
  return n;
}

// The most tile.dot ops in one block of op's function (the sink's own
// rule, xe_sink_loads.c: a body with a region of more dots is left as
// written, every read where the tile op stands).
static int most_dots_in(MlirOperation op) {
  int most = 0;
  for (intptr_t r = 0; r < mlirOperationGetNumRegions(op); ++r)
    for (MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r));
         !mlirBlockIsNull(b); b = mlirBlockGetNextInRegion(b)) {
      int n = 0;
      for (MlirOperation o = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(o);
           o = mlirOperationGetNextInBlock(o)) {
        n += zt_op_named(o, "tile.dot");
        int inner = most_dots_in(o);
        if (inner > most) most = inner;
      }
      if (n > most) most = n;
    }
  return most;
}

// Whether every load of the kernel will be placed at its reader: plain
// reads issued where the tile op stands (ZETILE_XE_SINK_LOADS=0, or a
// kernel with a region of more than XE_SINK_MAX_DOTS dots) made ocloc
// abort (SIGABRT, pvc compat attention d64 with the sink off, session 21;
// as in session 18 with every plain read issued).
static bool sunk_kernel(MlirOperation load) {
  const char* env = getenv("ZETILE_XE_SINK_LOADS");
  if (env && strcmp(env, "0") == 0) return false;
  MlirOperation f = load;
  while (!mlirOperationIsNull(mlirOperationGetParentOperation(f)) &&
         !mlirOperationIsNull(mlirOperationGetParentOperation(mlirOperationGetParentOperation(f))))
    f = mlirOperationGetParentOperation(f);
  return most_dots_in(f) <= XE_SINK_MAX_DOTS;
}

// The rules both forms share: the read's kind (a 16x16 B block's VNNI read,
// an 8x16 A block's plain read), the route (compat, 16 lanes) and the block.
static bool read_kind_ok(xe_emitter_t* e, MlirOperation load, const xe_val_t* v, zt_type_t t) {
  const char* env = getenv("ZETILE_XE_IGC_VNNI");
  if (env && strcmp(env, "0") == 0) return false;
  if (dots_in_block(load) > XE_SINK_MAX_DOTS) return false;
  // Only where the compat library would serve the read (xe_lower.c links it
  // for these routes), and at the 16 lanes the builtin's layout is for.
  if (!e->lc || !e->target || e->lanes != XE_SUBGROUP) return false;
  if (!(e->lc->options->compat || !e->target->block_io_2d)) return false;
  if (t.kind != ZT_F16 && t.kind != ZT_BF16) return false;
  if (v->layout != XE_LAYOUT_BLOCK2D || v->b16 || v->narrow || v->pairs8) return false;
  bool vnni = v->role == XE_ROLE_B && v->br == 16 && v->bc == 16;
  // A dot's 8x16 A blocks (attention's Q, a GEMM's A): IGC's plain read
  // (session 21). ZETILE_XE_IGC_PLAIN=0 keeps the library's for them.
  const char* penv = getenv("ZETILE_XE_IGC_PLAIN");
  bool plain = v->role == XE_ROLE_A && v->br == 8 && v->bc == 16 &&
               !(penv && strcmp(penv, "0") == 0);
  if (!vnni && !plain) return false;
  return !plain || sunk_kernel(load);
}

bool xe_igc_vnni_read_ok(xe_emitter_t* e, MlirOperation load, const xe_val_t* v, zt_type_t t,
                         const xe_axis_t* ax, const xe_mask_bounds_t* mb, int64_t cols) {
  if (!read_kind_ok(e, load, v, t)) return false;
  for (int i = 0; i < mb->n; ++i)
    if (mb->b[i].axis == 1) return false;
  if (cols * 2 < 64) return false;
  const xe_step_t* sr = &ax->step[0];
  if (!xe_block_pitch_ok(e, sr, 2)) return false;
  int64_t pitch_min = sr->coef * (mlirValueIsNull(sr->sym) ? 1 : xe_scalar_div(e, sr->sym)) * 2;
  if (pitch_min < 32) return false;
  return xe_ptr_dword_aligned(e, mlirOperationGetOperand(load, 0));
}

// A constant integer through casts and loop-invariant iteration arguments.
static bool const_int(MlirValue v, int depth, int64_t* out) {
  if (depth > 8) return false;
  if (mlirValueIsAOpResult(v)) {
    MlirOperation op = mlirOpResultGetOwner(v);
    if (zt_op_named(op, "arith.constant")) {
      MlirAttribute a = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("value"));
      if (mlirAttributeIsNull(a) || !mlirAttributeIsAInteger(a)) return false;
      *out = mlirIntegerAttrGetValueInt(a);
      return true;
    }
    if (zt_op_named(op, "arith.extsi") || zt_op_named(op, "arith.index_cast"))
      return const_int(mlirOperationGetOperand(op, 0), depth + 1, out);
    return false;
  }
  MlirBlock b = mlirBlockArgumentGetOwner(v);
  MlirOperation loop = mlirBlockGetParentOperation(b);
  intptr_t i = mlirBlockArgumentGetArgNumber(v);
  if (!zt_op_named(loop, "scf.for") || i < 1) return false;
  if (!mlirValueEqual(mlirOperationGetOperand(mlirBlockGetTerminator(b), i - 1), v)) return false;
  return const_int(mlirOperationGetOperand(loop, 3 + i - 1), depth + 1, out);
}

// Whether scalar v is even: a constant, the division facts, a loop's
// induction variable with an even start and step, a sum or difference of
// even values (a K loop's k0, program_id * BLOCK_N).
static bool even(xe_emitter_t* e, MlirValue v, int depth) {
  int64_t c;
  if (const_int(v, 0, &c)) return c % 2 == 0;
  if (xe_scalar_div(e, v) % 2 == 0) return true;
  if (depth > 6) return false;
  if (mlirValueIsABlockArgument(v)) {
    MlirOperation loop = mlirBlockGetParentOperation(mlirBlockArgumentGetOwner(v));
    return zt_op_named(loop, "scf.for") && mlirBlockArgumentGetArgNumber(v) == 0 &&
           even(e, mlirOperationGetOperand(loop, 0), depth + 1) &&
           even(e, mlirOperationGetOperand(loop, 2), depth + 1);
  }
  MlirOperation op = mlirOpResultGetOwner(v);
  if (zt_op_named(op, "arith.addi") || zt_op_named(op, "arith.subi"))
    return even(e, mlirOperationGetOperand(op, 0), depth + 1) &&
           even(e, mlirOperationGetOperand(op, 1), depth + 1);
  if (zt_op_named(op, "arith.muli"))
    return even(e, mlirOperationGetOperand(op, 0), depth + 1) ||
           even(e, mlirOperationGetOperand(op, 1), depth + 1);
  if (zt_op_named(op, "arith.extsi") || zt_op_named(op, "arith.index_cast"))
    return even(e, mlirOperationGetOperand(op, 0), depth + 1);
  return false;
}

// A descriptor extent known at run time only: a kernel argument (through
// casts) that Triton's launcher specialized as a multiple of 16 (`i32:16`),
// optionally times a constant. Its smallest positive value in bytes, or 0.
// No run-time check can stand in for this proof: IGC drops the builtin
// when a fallback path may replace its result (see the top of this file).
static int64_t hinted_min_bytes(xe_emitter_t* e, MlirValue v) {
  int64_t c = 1;
  if (mlirValueIsAOpResult(v) && zt_op_named(mlirOpResultGetOwner(v), "arith.muli")) {
    MlirOperation op = mlirOpResultGetOwner(v);
    for (int i = 0; i < 2; ++i)
      if (const_int(mlirOperationGetOperand(op, i), 0, &c) && c > 0 &&
          xe_hinted_arg(e, mlirOperationGetOperand(op, 1 - i)))
        return c * xe_scalar_div(e, mlirOperationGetOperand(op, 1 - i)) * 2;
    return 0;
  }
  return xe_hinted_arg(e, v) ? xe_scalar_div(e, v) * 2 : 0;
}

bool xe_igc_vnni_desc_ok(xe_emitter_t* e, MlirOperation load, const xe_val_t* v, zt_type_t t,
                         MlirValue base, MlirValue width, MlirValue pitch, MlirValue col) {
  if (!read_kind_ok(e, load, v, t)) return false;
  // The descriptor's own extents are the message's: its width (plus the
  // alignment delta, xe_align_base) a constant of 64 bytes or more, its
  // pitch a constant multiple of 16 bytes and at least 64 (Intel's
  // FlashAttention and tutorial 06: [y, HEAD_DIM] with strides [HEAD_DIM, 1]),
  // x whole dwords: an even column offset (the subgroup's column origin is a
  // multiple of 16) on a 4-byte aligned base, so delta is even.
  // A run-time width or pitch (tutorial 09's and 03a's [M, K] descriptors
  // with strides [K, 1]) passes as a hinted argument (hinted_min_bytes): a
  // multiple of 16 bytes, at least 32 (fp16 K = 16), the pointer loads' rule
  // (xe_igc_vnni_read_ok, xe_block_pitch_ok); the Khronos text's 64-byte
  // minimums are then not shown for the smallest value, as for hinted
  // pointer pitches and on the native path (docs/ARCHITECTURE.md).
  int64_t w, p;
  if (const_int(width, 0, &w) ? w * 2 < 64 : hinted_min_bytes(e, width) < 32) return false;
  if (const_int(pitch, 0, &p)) {
    if ((p * 2) % 16 || p * 2 < XE_BLOCK_MIN_PITCH) return false;
  } else {
    int64_t pm = hinted_min_bytes(e, pitch);
    if (pm < 32 || pm % 16) return false;
  }
  if (!even(e, col, 0)) return false;
  return xe_ptr_dword_aligned(e, base);
}

// ------------------------------------------------ the call, at lane level

#define IGC_VNNI_FN "__builtin_IB_subgroup_block_read_flat_transform_u16_k16"
#define IGC_PLAIN_FN "__builtin_IB_subgroup_block_read_flat_u16_m8k16v1"

static MlirOperation make(const char* name, MlirLocation loc, intptr_t nops, const MlirValue* ops,
                          MlirType res, intptr_t nattr, const MlirNamedAttribute* attrs) {
  MlirOperationState st = mlirOperationStateGet(mlirStringRefCreateFromCString(name), loc);
  if (nops) mlirOperationStateAddOperands(&st, nops, ops);
  mlirOperationStateAddResults(&st, 1, &res);
  if (nattr) mlirOperationStateAddAttributes(&st, nattr, attrs);
  return mlirOperationCreate(&st);
}

static MlirValue before(MlirOperation at, MlirOperation op) {
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(at), at, op);
  return mlirOperationGetResult(op, 0);
}

static MlirValue i32_of(MlirContext ctx, MlirOperation at, int64_t v) {
  MlirType i32 = mlirIntegerTypeGet(ctx, 32);
  MlirNamedAttribute a = mlirNamedAttributeGet(
      mlirIdentifierGet(ctx, mlirStringRefCreateFromCString("value")), mlirIntegerAttrGet(i32, v));
  return before(at, make("arith.constant", mlirOperationGetLocation(at), 0, NULL, i32, 1, &a));
}

static MlirValue bin(MlirOperation at, const char* name, MlirValue a, MlirValue b) {
  MlirValue ops[2] = {a, b};
  return before(at, make(name, mlirOperationGetLocation(at), 2, ops, mlirValueGetType(a), 0, NULL));
}

// An index value as i32 (the builtin's operands; the descriptor's extents,
// pitch and offsets fit: XeVM passes them as i32 too).
static MlirValue as_i32(MlirContext ctx, MlirOperation at, MlirValue v) {
  MlirType i32 = mlirIntegerTypeGet(ctx, 32);
  if (mlirTypeIsAInteger(mlirValueGetType(v))) return v;
  return before(at, make("arith.index_cast", mlirOperationGetLocation(at), 1, &v, i32, 0, NULL));
}

// value * 2 - 1 (bytes of 16-bit elements, minus one) or value - 1.
static MlirValue minus_one(MlirContext ctx, MlirOperation at, MlirValue v, bool bytes) {
  MlirValue x = as_i32(ctx, at, v);
  if (bytes) x = bin(at, "arith.muli", x, i32_of(ctx, at, 2));
  return bin(at, "arith.subi", x, i32_of(ctx, at, 1));
}

static zt_status_t declare(MlirContext ctx, MlirOperation at, const char* fn, const char* sig) {
  MlirOperation func = at;
  while (!mlirOperationIsNull(func) && !zt_op_named(func, "gpu.func"))
    func = mlirOperationGetParentOperation(func);
  if (mlirOperationIsNull(func))
    return zt_make_status(ZT_STATUS_INTERNAL, "Xe: IGC 2D read outside a gpu.func");
  MlirOperation mod = mlirOperationGetParentOperation(func);
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(mod, 0));
  if (!mlirOperationIsNull(zt_symbol_in_block(body, mlirStringRefCreateFromCString(fn))))
    return NULL;
  // (long base, int width - 1, int height - 1, int pitch - 1, int2 coord)
  // -> uint8 (transform) or ushort8 (plain), IGC's declarations
  // (compat/block2d_compat.cl declares their transposed sibling the same way).
  char text[256];
  snprintf(text, sizeof text, "func.func private @%s(i64, i32, i32, i32, vector<2xi32>) -> %s",
           fn, sig);
  MlirOperation d = mlirOperationCreateParse(ctx, mlirStringRefCreateFromCString(text),
                                             mlirStringRefCreateFromCString("igc_vnni"));
  if (mlirOperationIsNull(d))
    return zt_make_status(ZT_STATUS_INTERNAL, "Xe: IGC 2D read declaration");
  mlirBlockInsertOwnedOperationBefore(body, func, d);
  return NULL;
}

zt_status_t xe_igc_vnni_call(MlirContext ctx, MlirOperation op, bool* done) {
  *done = false;
  MlirStringRef mark = mlirStringRefCreateFromCString("zt.igc_vnni");
  if (mlirAttributeIsNull(mlirOperationGetAttributeByName(op, mark))) return NULL;
  mlirOperationRemoveAttributeByName(op, mark);
  // The forms the emitter writes (emit_nd_blocks): load_nd %td[%y, %x] of
  // create_nd_tdesc %base, shape : [%s0, %s1], strides : [%st0, %one]
  // (every operand an SSA value); anything else keeps XeVM's read.
  if (mlirOperationGetNumOperands(op) != 3) return NULL;
  MlirValue td = mlirOperationGetOperand(op, 0);
  if (!mlirValueIsAOpResult(td)) return NULL;
  MlirOperation cd = mlirOpResultGetOwner(td);
  if (!zt_op_named(cd, "xegpu.create_nd_tdesc") || mlirOperationGetNumOperands(cd) != 5)
    return NULL;
  MlirValue base = mlirOperationGetOperand(cd, 0);
  MlirType rt = mlirValueGetType(mlirOperationGetResult(op, 0));
  if (!mlirTypeIsAInteger(mlirValueGetType(base)) || !mlirTypeIsAVector(rt)) return NULL;
  int64_t n = 1;
  for (intptr_t i = 0; i < mlirShapedTypeGetRank(rt); ++i) n *= mlirShapedTypeGetDimSize(rt, i);
  MlirType et = mlirShapedTypeGetElementType(rt);
  // 16 elements a lane: a 16x16 VNNI B block; 8: an 8x16 A block.
  if ((n != 16 && n != 8) || !(mlirTypeIsAF16(et) || mlirTypeIsABF16(et))) return NULL;
  bool vnni = n == 16;
  const char* fn = vnni ? IGC_VNNI_FN : IGC_PLAIN_FN;
  ZT_RETURN_IF_ERROR(declare(ctx, op, fn, vnni ? "vector<8xi32>" : "vector<8xi16>"));
  MlirLocation loc = mlirOperationGetLocation(op);
  MlirValue coord_parts[2] = {as_i32(ctx, op, mlirOperationGetOperand(op, 2)),
                              as_i32(ctx, op, mlirOperationGetOperand(op, 1))};
  int64_t two = 2, eight = 8, sixteen = 16;
  MlirType i32 = mlirIntegerTypeGet(ctx, 32);
  MlirValue coord = before(op, make("vector.from_elements", loc, 2, coord_parts,
                                    mlirVectorTypeGet(1, &two, i32), 0, NULL));
  MlirValue args[5] = {base, minus_one(ctx, op, mlirOperationGetOperand(cd, 2), true),
                       minus_one(ctx, op, mlirOperationGetOperand(cd, 1), false),
                       minus_one(ctx, op, mlirOperationGetOperand(cd, 3), true), coord};
  MlirNamedAttribute callee = mlirNamedAttributeGet(
      mlirIdentifierGet(ctx, mlirStringRefCreateFromCString("callee")),
      mlirFlatSymbolRefAttrGet(ctx, mlirStringRefCreateFromCString(fn)));
  MlirType ret = mlirVectorTypeGet(1, &eight, vnni ? i32 : mlirIntegerTypeGet(ctx, 16));
  MlirValue dw = before(op, make("func.call", loc, 5, args, ret, 1, &callee));
  // VNNI: lane j's 8 dwords are rows 2r (low half) and 2r + 1 of column j,
  // the lane's B block, element order as the packed load_nd's. Plain: lane
  // j's 8 halves are column j of rows 0-7, the A block's lane order.
  MlirValue flat = before(op, make("vector.bitcast", loc, 1, &dw,
                                   mlirVectorTypeGet(1, vnni ? &sixteen : &eight, et), 0, NULL));
  MlirValue res = flat;
  if (mlirShapedTypeGetRank(rt) != 1)
    res = before(op, make("vector.shape_cast", loc, 1, &flat, rt, 0, NULL));
  mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, 0), res);
  mlirOperationDestroy(op);
  *done = true;
  return NULL;
}
