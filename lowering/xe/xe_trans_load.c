// tile.trans of a 2-D tile.block_load, read as a block load of the
// transposed view: the same base, each per-dimension operand (shape,
// stride, offset) and the boundary-check bits swapped, the block shape
// swapped. Element (i, j) of the new load is base + (o1 + i)·t1 + (o0 + j)·t0,
// which is element (j, i) of the old one, with the same bounds and padding,
// so the rewrite is exact.
//
// Why: Triton code transposes loaded tiles into dots (tutorial 06's
// `desc_k.load([...]).T`, the TMA matmuls' `b.T`), and on Xe a transpose of
// a tile spread over subgroups and lanes is a layout conversion through
// lanes or shared memory, which the emitter does not have. A load of the
// transposed view needs none: each row of it is a strided row gather, the
// form the emitter already uses for pointer tensors with a transposed
// layout (our FlashAttention test kernel's K^T), and E5 checks those.
// (Intel's transposed 2D block reads are the faster form; this gives the
// kernels a correct build first.)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>

#include "common/tile_build.h"
#include "xe/xe_internal.h"

// A 2-D transpose ([1, 0]) of a 2-D block load.
static bool candidate(MlirOperation op) {
  if (!zt_op_named(op, "tile.trans") || mlirOperationGetNumOperands(op) != 1) return false;
  MlirValue src = mlirOperationGetOperand(op, 0);
  if (!mlirValueIsAOpResult(src)) return false;
  MlirOperation ld = mlirOpResultGetOwner(src);
  if (!zt_op_named(ld, "tile.block_load") || mlirOperationGetNumOperands(ld) != 7) return false;
  MlirType t = mlirValueGetType(src);
  if (!mlirTypeIsARankedTensor(t) || mlirShapedTypeGetRank(t) != 2) return false;
  MlirAttribute order = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("order"));
  if (mlirAttributeIsNull(order) || !mlirAttributeIsADenseI32Array(order) ||
      mlirDenseArrayGetNumElements(order) != 2 || mlirDenseI32ArrayGetElement(order, 0) != 1 ||
      mlirDenseI32ArrayGetElement(order, 1) != 0)
    return false;
  MlirAttribute bc = mlirOperationGetAttributeByName(ld, mlirStringRefCreateFromCString("boundary_check"));
  return !mlirAttributeIsNull(bc) && mlirAttributeIsAInteger(bc);
}

static MlirOperation rewrite(MlirOperation trans) {
  MlirValue src = mlirOperationGetOperand(trans, 0);
  MlirOperation ld = mlirOpResultGetOwner(src);
  // (base, shape0, shape1, stride0, stride1, offset0, offset1)
  MlirValue o[7];
  for (int i = 0; i < 7; ++i) o[i] = mlirOperationGetOperand(ld, i);
  MlirValue swapped[7] = {o[0], o[2], o[1], o[4], o[3], o[6], o[5]};
  MlirAttribute bc = mlirOperationGetAttributeByName(ld, mlirStringRefCreateFromCString("boundary_check"));
  int64_t bits = mlirIntegerAttrGetValueInt(bc);
  int64_t sbits = (bits & ~3LL) | ((bits & 1) << 1) | ((bits >> 1) & 1);
  MlirOperationState st =
      mlirOperationStateGet(mlirStringRefCreateFromCString("tile.block_load"),
                            mlirOperationGetLocation(trans));
  mlirOperationStateAddOperands(&st, 7, swapped);
  MlirType rt = mlirValueGetType(mlirOperationGetResult(trans, 0));
  mlirOperationStateAddResults(&st, 1, &rt);
  // Every attribute of the load (padding, operandSegmentSizes, hints the
  // front end put there), the boundary bits swapped.
  intptr_t na = mlirOperationGetNumAttributes(ld);
  MlirNamedAttribute* attrs = malloc((size_t)(na ? na : 1) * sizeof *attrs);
  if (!attrs) return (MlirOperation){NULL};  // unchanged: the emitter refuses it as before
  for (intptr_t i = 0; i < na; ++i) {
    attrs[i] = mlirOperationGetAttribute(ld, i);
    MlirStringRef n = mlirIdentifierStr(attrs[i].name);
    if (n.length == 14 && memcmp(n.data, "boundary_check", 14) == 0)
      attrs[i].attribute = mlirIntegerAttrGet(mlirAttributeGetType(bc), sbits);
  }
  mlirOperationStateAddAttributes(&st, na, attrs);
  MlirOperation nl = mlirOperationCreate(&st);
  free(attrs);
  if (mlirOperationIsNull(nl)) return nl;
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(trans), trans, nl);
  mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(trans, 0), mlirOperationGetResult(nl, 0));
  mlirOperationDestroy(trans);
  // The old load goes when the transpose was its only reader.
  if (mlirOpOperandIsNull(mlirValueGetFirstUse(src))) mlirOperationDestroy(ld);
  return nl;
}

// ------------------------------------------------ the pointer form

// A 1-D tensor of length n along `axis` of a rows x cols block, broadcast to it.
static MlirValue to_block(zt_tb_t* b, MlirValue v, int axis, const int64_t* shape) {
  MlirType et = mlirShapedTypeGetElementType(mlirValueGetType(v));
  int64_t es[2] = {axis == 0 ? shape[0] : 1, axis == 0 ? 1 : shape[1]};
  MlirNamedAttribute ax =
      zt_tb_attr(b, "axis", mlirIntegerAttrGet(mlirIntegerTypeGet(b->ctx, 32), axis == 0 ? 1 : 0));
  MlirValue e = zt_tb_op(b, "tile.expand_dims", 1, &v, zt_tb_tensor(2, es, et), 1, &ax);
  return zt_tb_op(b, "tile.broadcast", 1, &e, zt_tb_tensor(2, shape, et), 0, NULL);
}

// A 2-D block load with zero padding, as `tile.load(base + (o0 + i)·t0 +
// (o1 + j)·t1, mask = the checked bounds, other = 0)`: what Xe's pointer
// loads take when the inner stride is not 1 (strided row gathers).
static bool pointer_form(MlirOperation ld) {
  MlirValue o[7];
  for (int i = 0; i < 7; ++i) o[i] = mlirOperationGetOperand(ld, i);
  MlirValue res = mlirOperationGetResult(ld, 0);
  MlirType rt = mlirValueGetType(res);
  MlirType et = mlirShapedTypeGetElementType(rt);
  if (!mlirTypeIsAFloat(et) && !mlirTypeIsAInteger(et)) return false;
  MlirAttribute pad = mlirOperationGetAttributeByName(ld, mlirStringRefCreateFromCString("padding"));
  if (!mlirAttributeIsNull(pad) && mlirAttributeIsAString(pad)) {
    MlirStringRef ps = mlirStringAttrGetValue(pad);
    if (!(ps.length == 4 && memcmp(ps.data, "zero", 4) == 0)) return false;
  }
  int64_t bits = mlirIntegerAttrGetValueInt(
      mlirOperationGetAttributeByName(ld, mlirStringRefCreateFromCString("boundary_check")));
  int64_t shape[2] = {mlirShapedTypeGetDimSize(rt, 0), mlirShapedTypeGetDimSize(rt, 1)};
  zt_tb_t b = zt_tb_at(ld);
  MlirValue idx[2], off[2];
  for (int d = 0; d < 2; ++d) zt_tb_axis_index(&b, o[5 + d], o[3 + d], shape[d], &idx[d], &off[d]);
  MlirValue offs = zt_tb_binop(&b, "arith.addi", to_block(&b, off[0], 0, shape),
                         to_block(&b, off[1], 1, shape));
  MlirValue ptrs = zt_tb_splat(&b, o[0], 2, shape);
  MlirValue ap[2] = {ptrs, offs};
  ptrs = zt_tb_op(&b, "tile.addptr", 2, ap, mlirValueGetType(ptrs), 0, NULL);
  MlirValue mask = {NULL};
  for (int d = 0; d < 2; ++d) {
    if (!(bits >> d & 1)) continue;
    MlirValue m = to_block(&b, zt_tb_in_bounds(&b, idx[d], o[1 + d], shape[d]), d, shape);
    mask = mask.ptr ? zt_tb_binop(&b, "arith.andi", mask, m) : m;
  }
  MlirAttribute zero = mlirTypeIsAFloat(et) ? mlirFloatAttrDoubleGet(b.ctx, et, 0.0)
                                            : mlirIntegerAttrGet(et, 0);
  MlirNamedAttribute zv = zt_tb_attr(&b, "value", zero);
  MlirValue other = zt_tb_splat(&b, zt_tb_op(&b, "arith.constant", 0, NULL, et, 1, &zv), 2, shape);
  MlirValue ops[3] = {ptrs, mask, other};
  int32_t seg[3] = {1, mask.ptr ? 1 : 0, mask.ptr ? 1 : 0};
  MlirNamedAttribute segs =
      zt_tb_attr(&b, "operandSegmentSizes", mlirDenseI32ArrayGet(b.ctx, 3, seg));
  MlirValue v = zt_tb_op(&b, "tile.load", mask.ptr ? 3 : 1, ops, rt, 1, &segs);
  mlirValueReplaceAllUsesOfWith(res, v);
  mlirOperationDestroy(ld);
  return true;
}

// ------------------------------------------------ transposed pointer loads
//
// tile.trans of a 2-D tile.load into a dot, in a program of several
// subgroups: `tl.dot(ds, tl.trans(q))` with q loaded through a pointer
// tensor (tutorial 06's backward). The emitter transposes tiles in
// registers only inside one subgroup; the load of the transposed
// addresses (and mask, and other) reads element (j, i) into (i, j) with no
// data movement: trans(load(p, m, o)) = load(trans(p), trans(m), trans(o)),
// exact for any addresses. The emitter evaluates the transposed addresses
// where the load reads them (row gathers). The old load stays when
// something else reads it (the same q also feeds a dot untransposed).

static bool feeds_dot(MlirValue v) {
  for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u))
    if (zt_op_named(mlirOpOperandGetOwner(u), "tile.dot") && mlirOpOperandGetOperandNumber(u) < 2)
      return true;
  return false;
}

static bool ptr_candidate(MlirOperation op) {
  if (!zt_op_named(op, "tile.trans") || mlirOperationGetNumOperands(op) != 1) return false;
  MlirValue src = mlirOperationGetOperand(op, 0);
  if (!mlirValueIsAOpResult(src)) return false;
  MlirOperation ld = mlirOpResultGetOwner(src);
  if (!zt_op_named(ld, "tile.load") || mlirOperationGetNumResults(ld) != 1) return false;
  MlirType t = mlirValueGetType(src);
  if (!mlirTypeIsARankedTensor(t) || mlirShapedTypeGetRank(t) != 2) return false;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(ld); ++i) {
    MlirType ot = mlirValueGetType(mlirOperationGetOperand(ld, i));
    if (!mlirTypeIsARankedTensor(ot) || mlirShapedTypeGetRank(ot) != 2) return false;
  }
  return feeds_dot(mlirOperationGetResult(op, 0));
}

static void rewrite_ptr(MlirOperation trans) {
  MlirValue src = mlirOperationGetOperand(trans, 0);
  MlirOperation ld = mlirOpResultGetOwner(src);
  intptr_t no = mlirOperationGetNumOperands(ld);
  MlirValue ops[3];
  zt_tb_t b = zt_tb_at(trans);
  MlirNamedAttribute order =
      zt_tb_attr(&b, "order", mlirOperationGetAttributeByName(trans, mlirStringRefCreateFromCString("order")));
  for (intptr_t i = 0; i < no && i < 3; ++i) {
    MlirValue x = mlirOperationGetOperand(ld, i);
    MlirType xt = mlirValueGetType(x);
    int64_t sh[2] = {mlirShapedTypeGetDimSize(xt, 1), mlirShapedTypeGetDimSize(xt, 0)};
    // A splat `other` (0.0) splats again in the new shape: a transpose of
    // a data tile would be the layout conversion this rewrite avoids.
    if (i == 2 && mlirValueIsAOpResult(x) && zt_op_named(mlirOpResultGetOwner(x), "tile.splat")) {
      ops[i] = zt_tb_splat(&b, mlirOperationGetOperand(mlirOpResultGetOwner(x), 0), 2, sh);
      continue;
    }
    ops[i] = zt_tb_op(&b, "tile.trans", 1, &x, zt_tb_tensor(2, sh, mlirShapedTypeGetElementType(xt)), 1, &order);
  }
  MlirOperationState st = mlirOperationStateGet(mlirStringRefCreateFromCString("tile.load"), b.loc);
  mlirOperationStateAddOperands(&st, no, ops);
  MlirType rt = mlirValueGetType(mlirOperationGetResult(trans, 0));
  mlirOperationStateAddResults(&st, 1, &rt);
  intptr_t na = mlirOperationGetNumAttributes(ld);
  MlirNamedAttribute* attrs = malloc((size_t)(na ? na : 1) * sizeof *attrs);
  if (!attrs) return;  // the transposes stay unused; the emitter refuses as before
  for (intptr_t i = 0; i < na; ++i) attrs[i] = mlirOperationGetAttribute(ld, i);
  mlirOperationStateAddAttributes(&st, na, attrs);
  MlirOperation nl = mlirOperationCreate(&st);
  free(attrs);
  if (mlirOperationIsNull(nl)) return;
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(trans), trans, nl);
  mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(trans, 0), mlirOperationGetResult(nl, 0));
  mlirOperationDestroy(trans);
  if (mlirOpOperandIsNull(mlirValueGetFirstUse(src))) mlirOperationDestroy(ld);
}

// ------------------------------------------------ transposed 2D block reads
//
// The transposed view of a row-major [N, K] tile feeding a dot as its B
// operand ([K, N], rows 1 element apart, columns `pitch` apart) is what
// Intel's transposed 2D block read gives directly, one send per B block
// instead of 16 row gathers: a d32 read of 16 memory rows (N) x 8 dwords
// transposed puts memory row n in lane n. For 16-bit data each dword is a
// K pair (k, k+1), so lane n's 8 dwords are B[2r][n] | B[2r+1][n] << 16,
// the VNNI-packed B block itself (Intel's Triton reads fp16 B^T the same
// way); for fp32, two reads of 8 K each make the 16x16 block (lane n holds
// column n, the layout of fp32 B blocks, xe_dot_f32.c).
//
// Where it cannot serve, the view stays the pointer form (row gathers):
// the inner stride of the memory rows not 1, a reader other than a dot's B
// operand, element types other than f16/bf16/f32, block shapes that are
// not whole 16x16 B blocks, a row pitch not provably a multiple of 16 bytes
// (the 2D block message's rule), and for 16-bit data K's extent or the K
// offset not provably even (a dword holds a K pair: an odd one would
// straddle two dwords or lose the last element to the bounds check).
// The emitter reads marked loads in xe_emit_trans_read below.

#define TRANS_READ_ATTR "zt.trans_read"

// Divisibility of an integer scalar: xe_scalar_div's facts plus scf.for
// induction variables (lower bound and step) and sums/products of those.
static int64_t div_of(xe_emitter_t* e, MlirValue v, int depth) {
  int64_t d = xe_scalar_div(e, v);
  if (depth > 6) return d;
  int64_t r = 1;
  if (mlirValueIsABlockArgument(v)) {
    MlirOperation loop = mlirBlockGetParentOperation(mlirBlockArgumentGetOwner(v));
    if (zt_op_named(loop, "scf.for") && mlirBlockArgumentGetArgNumber(v) == 0) {
      int64_t a = div_of(e, mlirOperationGetOperand(loop, 0), depth + 1);
      int64_t b = div_of(e, mlirOperationGetOperand(loop, 2), depth + 1);
      r = a < b ? a : b;
    }
  } else {
    MlirOperation op = mlirOpResultGetOwner(v);
    if (zt_op_named(op, "arith.addi") || zt_op_named(op, "arith.subi")) {
      int64_t a = div_of(e, mlirOperationGetOperand(op, 0), depth + 1);
      int64_t b = div_of(e, mlirOperationGetOperand(op, 1), depth + 1);
      r = a < b ? a : b;
    } else if (zt_op_named(op, "arith.muli")) {
      int64_t a = div_of(e, mlirOperationGetOperand(op, 0), depth + 1);
      int64_t b = div_of(e, mlirOperationGetOperand(op, 1), depth + 1);
      r = a > (1LL << 30) / (b ? b : 1) ? (1LL << 30) : a * b;
    } else if (zt_op_named(op, "arith.extsi") || zt_op_named(op, "arith.extui") ||
               zt_op_named(op, "arith.index_cast")) {
      r = div_of(e, mlirOperationGetOperand(op, 0), depth + 1);
    }
  }
  return r > d ? r : d;
}

// Whether v is read only as operand `which` of dots (0: A, 1: B).
static bool only_dot_operand(MlirValue v, intptr_t which) {
  MlirOpOperand u = mlirValueGetFirstUse(v);
  if (mlirOpOperandIsNull(u)) return false;
  for (; !mlirOpOperandIsNull(u); u = mlirOpOperandGetNextUse(u))
    if (!zt_op_named(mlirOpOperandGetOwner(u), "tile.dot") ||
        mlirOpOperandGetOperandNumber(u) != which)
      return false;
  return true;
}

// Whether the transposed-view load nl (inner stride not 1) is read with
// transposed 2D block reads (see above).
// What both forms (block loads, pointer loads) ask of the transposed tile:
// read only as dots' B operands, f16/bf16/f32, K and N multiples of 16;
// *b16 says whether its elements are 16-bit, *k/*n give its extents.
//
// A dots' A operand read from a row-major [K, M] tile (`a.T`, Intel's
// transposed-A GEMMs) has the same geometry: axis 0 (M) one element apart,
// axis 1 (K) a stride apart. One transposed d32 read of 16 memory rows (K)
// x 8 dwords (M pairs) gives lane k the 16 M elements of column k, i.e.
// two 8x16 A blocks (xe_emit_trans_read): served for 16-bit data, M and K
// multiples of 16 (one read per pair of 8-row blocks; fp32 A keeps the
// gathers).
static bool b_tile_ok(MlirValue res, bool* b16, int64_t* k, int64_t* n) {
  bool a = !only_dot_operand(res, 1);
  if (a && !only_dot_operand(res, 0)) return false;
  // ZETILE_XE_TRANS_READ_A=0: A operands keep the gathers (to compare).
  const char* env = getenv("ZETILE_XE_TRANS_READ_A");
  if (a && env && strcmp(env, "0") == 0) return false;
  MlirType t = mlirValueGetType(res);
  MlirType et = mlirShapedTypeGetElementType(t);
  *b16 = mlirTypeIsAF16(et) || mlirTypeIsABF16(et);
  if (!*b16 && (a || !mlirTypeIsAF32(et))) return false;
  *k = mlirShapedTypeGetDimSize(t, 0);
  *n = mlirShapedTypeGetDimSize(t, 1);
  return *k > 0 && *n > 0 && *k % 16 == 0 && *n % 16 == 0;
}

static bool trans_read_ok(xe_emitter_t* e, MlirOperation nl) {
  // (At fewer than 16 lanes, dg2's SIMD8 path, no 2-D block messages: the
  // pointer form's gathers read the transposed view.)
  if (!e || e->lanes != XE_SUBGROUP || !xe_value_is_one(mlirOperationGetOperand(nl, 3)))
    return false;
  bool b16;
  int64_t k, n;
  if (!b_tile_ok(mlirOperationGetResult(nl, 0), &b16, &k, &n)) return false;
  MlirAttribute pad = mlirOperationGetAttributeByName(nl, mlirStringRefCreateFromCString("padding"));
  if (!mlirAttributeIsNull(pad) && mlirAttributeIsAString(pad)) {
    MlirStringRef ps = mlirStringAttrGetValue(pad);
    if (!(ps.length == 4 && memcmp(ps.data, "zero", 4) == 0)) return false;
  }
  // The message's pitch is a multiple of 16 bytes (stride1 is the memory
  // rows' pitch in elements): 8 elements of 16 bits, 4 of 32.
  if (div_of(e, mlirOperationGetOperand(nl, 4), 0) % (b16 ? 8 : 4)) return false;
  if (!b16) return true;
  // (shape0 = K extent, offset0 = K offset)
  return div_of(e, mlirOperationGetOperand(nl, 1), 0) % 2 == 0 &&
         div_of(e, mlirOperationGetOperand(nl, 5), 0) % 2 == 0;
}

bool xe_is_trans_read(MlirOperation op) {
  return !mlirAttributeIsNull(
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(TRANS_READ_ATTR)));
}

static const char* tloc(xe_emitter_t* e) { return e->loc.data ? e->loc.data : ""; }

static void idx_const(xe_emitter_t* e, int64_t v, xe_name_t out) {
  char text[64];
  snprintf(text, sizeof text, "arith.constant %lld : index", (long long)v);
  xe_hoist(e, text, false, out);
}

// out = a <op> b on index values.
static void idx_bin(xe_emitter_t* e, const char* op, const char* a, const char* b, xe_name_t out) {
  xe_fresh(e, out);
  xe_line(e);
  zt_strbuf_printf(&e->body, "%s = arith.%s %s, %s : index%s\n", out, op, a, b, tloc(e));
}

// A blocks (16-bit) from the transposed descriptor td: for each 16-column
// (K) block bj and each pair of 8-row (M) blocks, one read of 16 K rows x 8
// dwords at dword column xa + (first M) / 2; lane k's 16 elements are M
// rows 0..15 of column k, cast to a 16x16 block as B's are, whose rows 0-7
// and 8-15 are the two A blocks (moved row by row: one element per lane
// each). An odd last block uses the first half (descriptor bounds zero
// what lies past M; pointer tiles have whole pairs, emit_ptr_blocks).
static zt_status_t trans_read_a(xe_emitter_t* e, xe_val_t* v, const char* td, const char* xa,
                                const char* o1, const char* et_in) {
  const char* attr = xe_layout_attr(v);
  // bf16 rows move as i16 bits (a bf16 poison would reach SPIR-V), cast back
  // once a block is whole, as nd_blocks_by_rows does.
  bool bf = strcmp(et_in, "bf16") == 0;
  const char* et = bf ? "i16" : et_in;
  for (int32_t bj = 0; bj < v->nbc; ++bj) {
    xe_name_t cj, y;
    idx_const(e, (int64_t)bj * 16, cj);
    idx_bin(e, "addi", o1, cj, y);
    for (int32_t bi = 0; bi < v->nbr; bi += 2) {
      xe_name_t ck, x, raw, wide;
      idx_const(e, (int64_t)bi * 4, ck);
      idx_bin(e, "addi", xa, ck, x);
      xe_fresh(e, raw);
      xe_line(e);
      zt_strbuf_printf(&e->body,
                       "%s = xegpu.load_nd %s[%s, %s] <{layout = #zt_a, transpose = "
                       "array<i64: 1, 0>}> : !xegpu.tensor_desc<16x8xi32> -> vector<8x16xi32>%s\n",
                       raw, td, y, x, tloc(e));
      xe_fresh(e, wide);
      xe_line(e);
      zt_strbuf_printf(&e->body,
                       "%s = builtin.unrealized_conversion_cast %s : vector<8x16xi32> to "
                       "vector<16x16x%s> {zt.lane_regs}%s\n",
                       wide, raw, et, tloc(e));
      for (int h = 0; h < 2 && bi + h < v->nbr; ++h) {
        xe_name_t acc;
        char text[160];
        snprintf(text, sizeof text,
                 "arith.constant {layout_result_0 = %s} dense<%s> : vector<8x16x%s>", attr,
                 bf ? "0" : "0.0", et);
        xe_hoist(e, text, true, acc);
        for (int r = 0; r < 8; ++r) {
          xe_name_t row, ins;
          xe_fresh(e, row);
          xe_line(e);
          zt_strbuf_printf(&e->body,
                           "%s = vector.extract %s[%d] {layout_result_0 = " XE_LAYOUT_ATTR
                           "} : vector<16x%s> from vector<16x16x%s>%s\n",
                           row, wide, 8 * h + r, et, et, tloc(e));
          if (r == 7 && !bf) snprintf(ins, sizeof ins, "%s", v->names[(bi + h) * v->nbc + bj]);
          else xe_fresh(e, ins);
          xe_line(e);
          zt_strbuf_printf(&e->body,
                           "%s = vector.insert %s, %s [%d] {layout_result_0 = %s} : "
                           "vector<16x%s> into vector<8x16x%s>%s\n",
                           ins, row, acc, r, attr, et, et, tloc(e));
          memcpy(acc, ins, sizeof acc);
        }
        if (bf) {
          xe_line(e);
          zt_strbuf_printf(&e->body,
                           "%s = arith.bitcast %s {layout_result_0 = %s} : vector<8x16xi16> to "
                           "vector<8x16xbf16>%s\n",
                           v->names[(bi + h) * v->nbc + bj], acc, attr, tloc(e));
        }
      }
    }
  }
  return NULL;
}

zt_status_t xe_emit_trans_read(xe_emitter_t* e, xe_val_t* v, zt_type_t t, const char* addr,
                               const char* s0, const char* s1, const char* pitch,
                               const char* o0, const char* o1) {
  bool f32 = t.kind == ZT_F32;
  bool a = v->role == XE_ROLE_A;
  if (v->layout != XE_LAYOUT_BLOCK2D || v->b16 || v->narrow || v->bc != 16 ||
      !(a ? v->br == 8 && !f32 : v->role == XE_ROLE_B && v->br == 16) ||
      !(f32 || t.kind == ZT_F16 || t.kind == ZT_BF16))
    return xe_fail(e, ZT_STATUS_INTERNAL,
                   "a transposed 2-D block read that is not a dot's 16x16 B or 16-bit 8x16 A "
                   "blocks");
  e->used_block_io = true;
  const char* dt = f32 ? "f32" : "i32";
  // 2D block IO wants a 64-byte aligned base: the dword columns move right
  // by the difference. Tensor descriptors' bases are 16-byte aligned
  // (Triton's rule), so the difference is whole dwords.
  xe_name_t base, dli;
  xe_align_base(e, addr, ZT_I32, base, dli);
  // Memory rows are N (s1 of them, `pitch` elements apart), their dwords
  // K pairs (16-bit: K, the pitch and the K offset are even, trans_read_ok)
  // or K elements (fp32).
  xe_name_t w, p, x0, one, two;
  idx_const(e, 1, one);
  if (f32) {
    memcpy(w, s0, sizeof w);
    memcpy(p, pitch, sizeof p);
    memcpy(x0, o0, sizeof x0);
  } else {
    idx_const(e, 2, two);
    idx_bin(e, "divsi", s0, two, w);
    idx_bin(e, "divsi", pitch, two, p);
    idx_bin(e, "divsi", o0, two, x0);
  }
  xe_name_t wa, xa;
  idx_bin(e, "addi", w, dli, wa);
  idx_bin(e, "addi", x0, dli, xa);
  xe_name_t td;
  xe_fresh(e, td);
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "%s = xegpu.create_nd_tdesc %s, shape : [%s, %s], strides : [%s, %s] : "
                   "i64 -> !xegpu.tensor_desc<16x8x%s>%s\n",
                   td, base, s1, wa, p, one, dt, tloc(e));
  const char* et = xe_block_elem(t.kind);
  if (a) return trans_read_a(e, v, td, xa, o1, et);
  for (int32_t bi = 0; bi < v->nbr; ++bi) {
    for (int32_t bj = 0; bj < v->nbc; ++bj) {
      xe_name_t cj, y, raw[2];
      idx_const(e, (int64_t)bj * 16, cj);
      idx_bin(e, "addi", o1, cj, y);
      int nreads = f32 ? 2 : 1;
      for (int h = 0; h < nreads; ++h) {
        xe_name_t ck, x;
        // dword column of this block's (half-)K range
        idx_const(e, f32 ? (int64_t)bi * 16 + 8 * h : (int64_t)bi * 8, ck);
        idx_bin(e, "addi", xa, ck, x);
        xe_fresh(e, raw[h]);
        xe_line(e);
        zt_strbuf_printf(&e->body,
                         "%s = xegpu.load_nd %s[%s, %s] <{layout = #zt_a, transpose = "
                         "array<i64: 1, 0>}> : !xegpu.tensor_desc<16x8x%s> -> vector<8x16x%s>%s\n",
                         raw[h], td, y, x, dt, dt, tloc(e));
      }
      // The reads' lanes are the B block's lanes as they are (see above):
      // a marker that zetile's lane distribution turns into a bitcast /
      // concatenation of each lane's registers (xe_distribute.c).
      xe_line(e);
      if (f32)
        zt_strbuf_printf(&e->body,
                         "%s = builtin.unrealized_conversion_cast %s, %s : vector<8x16xf32>, "
                         "vector<8x16xf32> to vector<16x16xf32> {zt.lane_regs}%s\n",
                         v->names[bi * v->nbc + bj], raw[0], raw[1], tloc(e));
      else
        zt_strbuf_printf(&e->body,
                         "%s = builtin.unrealized_conversion_cast %s : vector<8x16xi32> to "
                         "vector<16x16x%s> {zt.lane_regs}%s\n",
                         v->names[bi * v->nbc + bj], raw[0], et, tloc(e));
    }
  }
  return NULL;
}

// ------------------------------------------------ transposed reads of pointer loads
//
// A 2-D pointer load whose offsets move by one element down the rows (K)
// and by a stride across the columns (N): `tl.load(K + offs_n[None, :] *
// stride + offs_d[:, None])`, and what rewrite_ptr above makes of
// `tl.trans(tl.load(p))`, tutorial 06's backward (qT, kT, vT, do^T). Its
// memory rows are the tile's columns, so a dot's B operand read from it is
// the transposed 2D block read of the descriptor case, the descriptor built
// from xe_axis.c's facts at the subgroup tile's first element (the caller,
// xe_matrix.c's emit_ptr_blocks). Served only where exact, as above, and:
// the facts' groups cover the whole tensor, a mask term along K only where
// it keeps dword pairs whole (16-bit data: `k < bound` with the bound and
// the tile's K offsets provably even, as a GEMM's `offs_k < K - k0` with K
// hinted and k0 a loop counter; the descriptor's width is then what is left
// of the bound, so a K tail reads zeros: xe_ptr_trans_k_bound_ok), and for
// 16-bit data the tile's first element provably 4-byte aligned (a dword
// holds a K pair: the pointer argument's specialized alignment, even
// element offsets and even loop advances).

// Whether integer offsets (scalar or tensor) are provably even: at every
// group's first element, which is where a tile starts or is an even
// distance (origin multiples of 16, even pitch) before it.
static bool even_offsets(xe_emitter_t* e, MlirValue v) {
  if (!mlirTypeIsARankedTensor(mlirValueGetType(v))) return div_of(e, v, 0) % 2 == 0;
  xe_axis_t ax;
  xe_axis_info(e, v, &ax);
  return ax.div % 2 == 0;
}

// Whether pointer (tensor) p is provably 4-byte aligned at every group's
// first element, for elements of 2 bytes.
static bool dword_aligned(xe_emitter_t* e, MlirValue p, int depth) {
  if (depth > 16) return false;
  if (mlirValueIsABlockArgument(p)) {
    MlirOperation parent = mlirBlockGetParentOperation(mlirBlockArgumentGetOwner(p));
    intptr_t i = mlirBlockArgumentGetArgNumber(p);
    if (zt_op_named(parent, "scf.for") && i >= 1) {
      // A loop-carried pointer: its initial value, and each advance.
      MlirBlock b = mlirBlockArgumentGetOwner(p);
      MlirValue y = mlirOperationGetOperand(mlirBlockGetTerminator(b), i - 1), s;
      if (!mlirValueIsAOpResult(y) || !zt_op_named(mlirOpResultGetOwner(y), "tile.addptr"))
        return false;
      MlirOperation add = mlirOpResultGetOwner(y);
      if (!mlirValueEqual(mlirOperationGetOperand(add, 0), p) ||
          !xe_uniform_scalar(mlirOperationGetOperand(add, 1), &s) || !even_offsets(e, s))
        return false;
      return dword_aligned(e, mlirOperationGetOperand(parent, 3 + i - 1), depth + 1);
    }
    // A kernel argument: the launcher's specialized alignment (bytes).
    return !mlirTypeIsARankedTensor(mlirValueGetType(p)) && xe_scalar_div(e, p) % 4 == 0;
  }
  MlirOperation op = mlirOpResultGetOwner(p);
  if (zt_op_named(op, "tile.addptr"))
    return dword_aligned(e, mlirOperationGetOperand(op, 0), depth + 1) &&
           even_offsets(e, mlirOperationGetOperand(op, 1));
  if (zt_op_named(op, "tile.splat") || zt_op_named(op, "tile.broadcast") ||
      zt_op_named(op, "tile.expand_dims") || zt_op_named(op, "tile.trans"))
    return dword_aligned(e, mlirOperationGetOperand(op, 0), depth + 1);
  return false;
}

bool xe_ptr_dword_aligned(xe_emitter_t* e, MlirValue p) { return dword_aligned(e, p, 0); }

bool xe_trans_reads_enabled(void) {
  // ZETILE_XE_TRANS_READ=0: never, to compare. ZETILE_XE_DISTRIBUTE=upstream
  // too: upstream's lane distribution knows no layout for a transposed
  // read's result ("Could not find layout attribute for operand 1 of
  // xegpu.dpas"), and zetile's own, which does, is not run.
  const char* tr = getenv("ZETILE_XE_TRANS_READ");
  const char* dist = getenv("ZETILE_XE_DISTRIBUTE");
  return !(tr && strcmp(tr, "0") == 0) && !(dist && strcmp(dist, "upstream") == 0);
}

bool xe_ptr_trans_read_ok(xe_emitter_t* e, MlirOperation op, const xe_axis_t* ax) {
  if (!e || !xe_trans_reads_enabled() || !zt_op_named(op, "tile.load")) return false;
  bool b16;
  int64_t k, n;
  if (!b_tile_ok(mlirOperationGetResult(op, 0), &b16, &k, &n)) return false;
  const xe_step_t *sk = &ax->step[0], *sn = &ax->step[1];
  // K: one element apart over the whole tensor; N: a positive stride (a
  // constant or a hinted argument times one), over the whole tensor.
  if (!sk->known || !mlirValueIsNull(sk->sym) || sk->coef != 1 || ax->lin[0] < k) return false;
  // (the message's pitch: at least 64 bytes when constant)
  if (ax->lin[1] < n || !xe_block_pitch_ok(e, sn, b16 ? 2 : 4)) return false;
  return !b16 || dword_aligned(e, mlirOperationGetOperand(op, 0), 0);
}

bool xe_ptr_trans_k_bound_ok(xe_emitter_t* e, MlirOperation op, const xe_bound_t* b) {
  MlirValue res = mlirOperationGetResult(op, 0);
  MlirType t = mlirValueGetType(res);
  // x must count up by one over the whole tile's K: the width is what is
  // left of the bound at the tile's first K element.
  if (b->axis != 0 || b->lin < mlirShapedTypeGetDimSize(t, 0)) return false;
  MlirType et = mlirShapedTypeGetElementType(t);
  if (!(mlirTypeIsAF16(et) || mlirTypeIsABF16(et))) return true;
  // 16-bit data: a dword holds a K pair, so what is left (bound - x, one
  // more when inclusive) must be even wherever a tile starts, or the last
  // dword would hold one element in bounds and one past it.
  return !b->inclusive && div_of(e, b->bound, 0) % 2 == 0 && even_offsets(e, b->x);
}

// ------------------------------------------------ transposes undone

// A tile.trans of a tile.trans whose orders compose to the identity:
// `tl.trans(qT)` with `qT = q_desc.load(...).T` (Intel's FlashAttention
// backward: the dk and dq dots read Q and K back in their stored form).
// Folded to the inner operand before the rewrites below, so the stored
// form is read as it is (a plain block read of a dot's B operand) rather
// than as a transposed load of a transposed view whose small tile (16x64
// over 8x1 subgroups) no layout of the kernel's grid holds.
static bool order_at(MlirOperation op, intptr_t n, int32_t* out) {
  MlirAttribute a = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("order"));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsADenseI32Array(a) ||
      mlirDenseArrayGetNumElements(a) != n || n > 8)
    return false;
  for (intptr_t i = 0; i < n; ++i) out[i] = mlirDenseI32ArrayGetElement(a, i);
  return true;
}

static bool double_trans(MlirOperation op) {
  if (!zt_op_named(op, "tile.trans") || mlirOperationGetNumOperands(op) != 1) return false;
  MlirValue src = mlirOperationGetOperand(op, 0);
  if (!mlirValueIsAOpResult(src)) return false;
  MlirOperation in = mlirOpResultGetOwner(src);
  if (!zt_op_named(in, "tile.trans") || mlirOperationGetNumOperands(in) != 1) return false;
  MlirType t = mlirValueGetType(src);
  if (!mlirTypeIsARankedTensor(t)) return false;
  intptr_t n = mlirShapedTypeGetRank(t);
  int32_t outer[8], inner[8];
  if (!order_at(op, n, outer) || !order_at(in, n, inner)) return false;
  // Result dim i is the inner result's dim outer[i], the source's dim
  // inner[outer[i]].
  for (intptr_t i = 0; i < n; ++i)
    if (outer[i] < 0 || outer[i] >= n || inner[outer[i]] != i) return false;
  return true;
}

static zt_status_t fold_double_trans(MlirOperation kernel) {
  MlirOperation* ops;
  size_t n;
  if (!zt_op_list_collect(kernel, double_trans, &ops, &n))
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe: transposes of transposes");
  // In program order: folding one may destroy its inner transpose, which
  // comes earlier in the list (already done), never a later entry.
  for (size_t i = 0; i < n; ++i) {
    if (!double_trans(ops[i])) continue;  // its inner one was folded away
    MlirValue mid = mlirOperationGetOperand(ops[i], 0);
    MlirOperation in = mlirOpResultGetOwner(mid);
    mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(ops[i], 0), mlirOperationGetOperand(in, 0));
    mlirOperationDestroy(ops[i]);
    if (mlirOpOperandIsNull(mlirValueGetFirstUse(mid))) mlirOperationDestroy(in);
  }
  free(ops);
  return NULL;
}

zt_status_t xe_transpose_block_loads(xe_emitter_t* e, MlirOperation kernel, int num_warps,
                                     int* out_count) {
  ZT_RETURN_IF_ERROR(fold_double_trans(kernel));
  // Each kind is collected first and rewritten after the walk.
  MlirOperation* ops;
  size_t n;
  if (out_count) *out_count = 0;
  if (num_warps > 1) {
    if (!zt_op_list_collect(kernel, ptr_candidate, &ops, &n))
      return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe: transposed pointer loads");
    for (size_t i = 0; i < n; ++i) rewrite_ptr(ops[i]);
    if (out_count) *out_count = (int)n;
    free(ops);
  }
  if (!zt_op_list_collect(kernel, candidate, &ops, &n))
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe: transposed block loads");
  for (size_t i = 0; i < n; ++i) {
    MlirOperation nl = rewrite(ops[i]);
    // The transposed view's inner stride is the old row stride: unless it
    // is 1 (by the emitter's own test), Xe's plain block IO cannot read it,
    // pointer loads can (strided row gathers), or transposed 2D block
    // reads where they serve (ZETILE_XE_TRANS_READ=0: never, to compare).
    if (mlirOperationIsNull(nl) || xe_value_is_one(mlirOperationGetOperand(nl, 4))) continue;
    if (xe_trans_reads_enabled() && trans_read_ok(e, nl)) {
      MlirContext ctx = mlirOperationGetContext(nl);
      mlirOperationSetAttributeByName(nl, mlirStringRefCreateFromCString(TRANS_READ_ATTR),
                                      mlirUnitAttrGet(ctx));
      continue;
    }
    pointer_form(nl);
  }
  if (out_count) *out_count += (int)n;
  free(ops);
  // 1-D descriptors have no block form on Xe: pointer accesses
  // (lowering/common/block1d.c; Intel's FlashAttention benchmark's m_i).
  return zt_block1d_to_pointers(kernel, NULL);
}
