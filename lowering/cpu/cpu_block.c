// tile.block_load / tile.block_store on the CPU: a loop nest over the block.
// Element i lives at base + sum_d (offsets[d] + i_d) * strides[d] elements
// (a getelementptr from the base, so LLVM sees strided addresses); in dims
// whose bit is set in boundary_check the access sits under
// 0 <= offsets[d] + i_d < shape[d], so out-of-bounds addresses are never
// touched. Loads read the padding (zero or NaN) there; stores skip them.
#include <stdio.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>

#include "cpu_lower.h"

typedef struct view_s {
  int32_t rank;
  uint32_t check;  // boundary_check bits
  zt_scalar_kind_t kind;  // element kind in memory
  char base[ZT_CPU_NAME];  // !llvm.ptr
  char shape[ZT_MAX_RANK][ZT_CPU_NAME];  // i64
  char stride[ZT_MAX_RANK][ZT_CPU_NAME];  // i64
  char offset[ZT_MAX_RANK][ZT_CPU_NAME];  // i64 (sign-extended)
} view_t;

static zt_status_t scalar_operand(cpu_t* c, MlirOperation op, intptr_t i,
                                  char out[ZT_CPU_NAME]) {
  const cpu_val_t* v;
  ZT_RETURN_IF_ERROR(cpu_get(c, mlirOperationGetOperand(op, i), &v));
  if (v->kind != CPU_SCALAR)
    return cpu_op_error(op, ZT_STATUS_INVALID_ARGUMENT, "operand %d must be a scalar",
                        (int)i);
  snprintf(out, ZT_CPU_NAME, "%s", v->name);
  return NULL;
}

// Reads the view operands (base, shape[r], strides[r], offsets[r]).
static zt_status_t read_view(cpu_t* c, MlirOperation op, int32_t rank, view_t* v) {
  if (rank < 1 || rank > ZT_MAX_RANK)
    return cpu_op_error(op, ZT_STATUS_UNSUPPORTED, "block of rank %d", rank);
  memset(v, 0, sizeof *v);
  v->rank = rank;
  v->check = (uint32_t)cpu_int_attr(op, "boundary_check", 0);
  zt_type_t bt;
  ZT_RETURN_IF_ERROR(cpu_value_type(mlirOperationGetOperand(op, 0), &bt));
  if (bt.kind != ZT_PTR || bt.rank)
    return cpu_op_error(op, ZT_STATUS_INVALID_ARGUMENT, "base must be a scalar pointer");
  v->kind = bt.pointee;
  char base[ZT_CPU_NAME];
  ZT_RETURN_IF_ERROR(scalar_operand(c, op, 0, base));
  cpu_fresh(c, v->base);
  cpu_line(c, "%s = llvm.inttoptr %s : i64 to !llvm.ptr", v->base, base);
  for (int32_t d = 0; d < rank; ++d) {
    ZT_RETURN_IF_ERROR(scalar_operand(c, op, 1 + d, v->shape[d]));
    ZT_RETURN_IF_ERROR(scalar_operand(c, op, 1 + rank + d, v->stride[d]));
    char off[ZT_CPU_NAME];
    ZT_RETURN_IF_ERROR(scalar_operand(c, op, 1 + 2 * rank + d, off));
    cpu_fresh(c, v->offset[d]);
    cpu_line(c, "%s = arith.extsi %s : i32 to i64", v->offset[d], off);
  }
  return NULL;
}

// acc (an i1 name, "" when none yet) &&= 0 <= x && (a <pred> b): one checked
// dim's bound, for the element nest (x = a the position, slt its extent)
// and for the whole-block test (x the offset, a its end, sle the extent).
static void and_in_range(cpu_t* c, const char* x, const char* pred, const char* a,
                         const char* b, char acc[ZT_CPU_NAME]) {
  char z[ZT_CPU_NAME], ge[ZT_CPU_NAME], hi[ZT_CPU_NAME], ok[ZT_CPU_NAME];
  cpu_zero(c, ZT_I64, z);
  cpu_fresh(c, ge);
  cpu_line(c, "%s = arith.cmpi sge, %s, %s : i64", ge, x, z);
  cpu_fresh(c, hi);
  cpu_line(c, "%s = arith.cmpi %s, %s, %s : i64", hi, pred, a, b);
  cpu_fresh(c, ok);
  cpu_line(c, "%s = arith.andi %s, %s : i1", ok, ge, hi);
  if (acc[0]) {
    char both[ZT_CPU_NAME];
    cpu_fresh(c, both);
    cpu_line(c, "%s = arith.andi %s, %s : i1", both, acc, ok);
    snprintf(acc, ZT_CPU_NAME, "%s", both);
  } else {
    snprintf(acc, ZT_CPU_NAME, "%s", ok);
  }
}

// Opens the nest over `block`; per dim computes the position, the element
// offset so far and the in-bounds condition so far (hoisted to the loop of
// its dim). Writes the element's address, the condition ("" when no dim is
// checked) and the block-linear index.
static void nest_begin(cpu_t* c, const view_t* v, const int64_t* block,
                       char addr[ZT_CPU_NAME], char inb[ZT_CPU_NAME],
                       char lin[ZT_CPU_NAME]) {
  char ivs[ZT_MAX_RANK][ZT_CPU_NAME], acc[ZT_CPU_NAME] = "";
  inb[0] = 0;
  for (int32_t d = 0; d < v->rank; ++d) {
    cpu_loop_begin(c, block[d], ivs[d]);
    char i64[ZT_CPU_NAME], pos[ZT_CPU_NAME], term[ZT_CPU_NAME];
    cpu_fresh(c, i64);
    cpu_line(c, "%s = arith.index_cast %s : index to i64", i64, ivs[d]);
    cpu_fresh(c, pos);
    cpu_line(c, "%s = arith.addi %s, %s : i64", pos, v->offset[d], i64);
    cpu_fresh(c, term);
    cpu_line(c, "%s = arith.muli %s, %s : i64", term, pos, v->stride[d]);
    if (acc[0]) {
      char sum[ZT_CPU_NAME];
      cpu_fresh(c, sum);
      cpu_line(c, "%s = arith.addi %s, %s : i64", sum, acc, term);
      snprintf(acc, sizeof acc, "%s", sum);
    } else {
      snprintf(acc, sizeof acc, "%s", term);
    }
    if (v->check & (1u << d)) and_in_range(c, pos, "slt", pos, v->shape[d], inb);
  }
  cpu_fresh(c, addr);
  cpu_line(c, "%s = llvm.getelementptr %s[%s] : (!llvm.ptr, i64) -> !llvm.ptr, %s", addr,
           v->base, acc, v->kind == ZT_I1 ? "i8" : cpu_elem(v->kind));
  int64_t strides[ZT_MAX_RANK];
  cpu_strides(v->rank, block, strides);
  cpu_linear(c, v->rank, ivs, strides, lin);
}

// Closes the nest: the innermost loop as a lane loop. LLVM fully unrolled a
// 32-element row (a 64x32 tile of a 64x64x32 matmul) into 32 scalar
// compare-branch-load-store groups before its loop vectorizer saw it, while
// 64-element rows became masked vector loads: with unrolling off for the
// innermost loop, every row width is vectorized.
static void nest_end(cpu_t* c, int32_t rank) {
  for (int32_t d = 0; d < rank; ++d) {
    if (d == 0)
      cpu_loop_end_lanes(c);
    else
      cpu_loop_end(c);
  }
}

// The padding element: zero, or a quiet NaN of the float kind.
static void padding(cpu_t* c, zt_scalar_kind_t k, bool nan, char out[ZT_CPU_NAME]) {
  if (!nan) {
    cpu_zero(c, k, out);
    return;
  }
  const char* bits = k == ZT_F16 ? "0x7E00" : k == ZT_BF16 ? "0x7FC0"
                     : k == ZT_F64 ? "0x7FF8000000000000" : "0x7FC00000";
  cpu_fresh(c, out);
  cpu_line(c, "%s = arith.constant %s : %s", out, bits, cpu_elem(k));
}

// The step (an i64) of the scf.for whose induction variable v is, or false.
static bool iv_step(cpu_t* c, MlirValue v, char out[ZT_CPU_NAME]) {
  if (mlirValueIsAOpResult(v) || mlirBlockArgumentGetArgNumber(v) != 0) return false;
  MlirOperation loop = mlirBlockGetParentOperation(mlirBlockArgumentGetOwner(v));
  if (mlirOperationIsNull(loop) || !cpu_op_is(loop, "scf.for") ||
      mlirOperationGetNumOperands(loop) < 3)
    return false;
  return cpu_scalar_i64(c, cpu_map_get(c, mlirOperationGetOperand(loop, 2)), out);
}

// A 2-D block load whose offset in some dim is its loop's induction
// variable (`a_desc.load([pid_m * BM, k])` in `for k in range(0, K, BK)`):
// the rows the next iteration reads, prefetched into L1 (every line of
// each row), as row loads of carried pointers do (cpu_prefetch_row): the tiles' rows are a matrix row apart and new every
// step. A prefetch never faults, so rows past the view's end are harmless.
static void prefetch_next_block(cpu_t* c, MlirOperation op, const view_t* v,
                                const int64_t* block) {
  if (v->rank != 2) return;
  char step[2][ZT_CPU_NAME];
  bool any = false;
  for (int32_t d = 0; d < 2; ++d) {
    if (iv_step(c, mlirOperationGetOperand(op, 1 + 2 * 2 + d), step[d])) {
      any = true;
    } else {
      cpu_zero(c, ZT_I64, step[d]);
    }
  }
  if (!any) return;
  const int64_t row_bytes = block[1] * zt_tile_kind_bytes(v->kind == ZT_I1 ? ZT_I8 : v->kind);
  char o1[ZT_CPU_NAME], t1[ZT_CPU_NAME], r[ZT_CPU_NAME];
  cpu_fresh(c, o1);
  cpu_line(c, "%s = arith.addi %s, %s : i64", o1, v->offset[1], step[1]);
  cpu_fresh(c, t1);
  cpu_line(c, "%s = arith.muli %s, %s : i64", t1, o1, v->stride[1]);
  cpu_loop_begin(c, block[0], r);
  char r64[ZT_CPU_NAME], p0[ZT_CPU_NAME], p1[ZT_CPU_NAME], t0[ZT_CPU_NAME], e[ZT_CPU_NAME],
      row[ZT_CPU_NAME];
  cpu_fresh(c, r64);
  cpu_line(c, "%s = arith.index_cast %s : index to i64", r64, r);
  cpu_fresh(c, p0);
  cpu_line(c, "%s = arith.addi %s, %s : i64", p0, v->offset[0], r64);
  cpu_fresh(c, p1);
  cpu_line(c, "%s = arith.addi %s, %s : i64", p1, p0, step[0]);
  cpu_fresh(c, t0);
  cpu_line(c, "%s = arith.muli %s, %s : i64", t0, p1, v->stride[0]);
  cpu_fresh(c, e);
  cpu_line(c, "%s = arith.addi %s, %s : i64", e, t0, t1);
  cpu_fresh(c, row);
  cpu_line(c, "%s = llvm.getelementptr %s[%s] : (!llvm.ptr, i64) -> !llvm.ptr, %s", row,
           v->base, e, v->kind == ZT_I1 ? "i8" : cpu_elem(v->kind));
  cpu_prefetch_row(c, row, NULL, row_bytes);
  cpu_loop_end(c);
}

// Whether the block lies inside the view in every checked dim:
// 0 <= offset[d] and offset[d] + block[d] <= shape[d] (an i1 in *out).
static void whole_block(cpu_t* c, const view_t* v, const int64_t* block, char out[ZT_CPU_NAME]) {
  out[0] = 0;
  for (int32_t d = 0; d < v->rank; ++d) {
    if (!(v->check & (1u << d))) continue;
    char n[ZT_CPU_NAME], end[ZT_CPU_NAME];
    cpu_fresh(c, n);
    cpu_line(c, "%s = arith.constant %lld : i64", n, (long long)block[d]);
    cpu_fresh(c, end);
    cpu_line(c, "%s = arith.addi %s, %s : i64", end, v->offset[d], n);
    and_in_range(c, v->offset[d], "sle", end, v->shape[d], out);
  }
}

// The copy of the block into buf: padding where a checked dim is out of
// bounds (pad), every element read where none is checked.
static void copy_block(cpu_t* c, MlirOperation op, const view_t* v, const zt_type_t* rt,
                       int32_t buf, const char* pad) {
  char addr[ZT_CPU_NAME], inb[ZT_CPU_NAME], lin[ZT_CPU_NAME], x[ZT_CPU_NAME];
  nest_begin(c, v, rt->shape, addr, inb, lin);
  c->addr_is_ptr = true;
  if (inb[0]) {
    const char* ty = cpu_elem(rt->kind);
    char y[ZT_CPU_NAME];
    cpu_fresh(c, x);
    cpu_line(c, "%s = scf.if %s -> (%s) {", x, inb, ty);
    ++c->indent;
    cpu_check_access(c, op, addr, rt->kind, 0);
    cpu_raw_load(c, rt->kind, addr, y);
    cpu_line(c, "scf.yield %s : %s", y, ty);
    --c->indent;
    cpu_line(c, "} else {");
    cpu_line(c, "  scf.yield %s : %s", pad, ty);
    cpu_line(c, "}");
  } else {
    cpu_check_access(c, op, addr, rt->kind, 0);
    cpu_raw_load(c, rt->kind, addr, x);
  }
  c->addr_is_ptr = false;
  cpu_write(c, buf, lin, x);
  nest_end(c, rt->rank);
}

zt_status_t cpu_emit_block_load(cpu_t* c, MlirOperation op) {
  zt_type_t rt;
  ZT_RETURN_IF_ERROR(cpu_value_type(mlirOperationGetResult(op, 0), &rt));
  view_t v;
  ZT_RETURN_IF_ERROR(read_view(c, op, rt.rank, &v));
  bool nan = false;
  MlirAttribute pa = mlirOperationGetAttributeByName(
      op, mlirStringRefCreateFromCString("padding"));
  if (!mlirAttributeIsNull(pa) && mlirAttributeIsAString(pa)) {
    MlirStringRef s = mlirStringAttrGetValue(pa);
    nan = s.length == 3 && memcmp(s.data, "nan", 3) == 0;
  }
  if (nan && rt.kind != ZT_F16 && rt.kind != ZT_BF16 && rt.kind != ZT_F32 &&
      rt.kind != ZT_F64)
    return cpu_op_error(op, ZT_STATUS_INVALID_ARGUMENT, "NaN padding of %s",
                        zt_tile_kind_spelling(rt.kind));
  cpu_val_t r;
  ZT_RETURN_IF_ERROR(cpu_new_buf_val(c, rt, &r));
  char pad[ZT_CPU_NAME] = "";
  if (v.check) padding(c, rt.kind, nan, pad);
  prefetch_next_block(c, op, &v, rt.shape);
  // A block wholly inside its checked dims (every block of a matmul's K
  // loop but the edges) is copied by a nest without per-element bounds:
  // plain vector loads where the checked copy's are masked (AVX2's masked
  // loads and the per-element select were ~40% of the descriptor matmul).
  char whole[ZT_CPU_NAME] = "";
  if (v.check) {
    whole_block(c, &v, rt.shape, whole);
    cpu_line(c, "scf.if %s {", whole);
    ++c->indent;
    view_t inside = v;
    inside.check = 0;
    copy_block(c, op, &inside, &rt, r.buf, pad);
    --c->indent;
    cpu_line(c, "} else {");
    ++c->indent;
  }
  copy_block(c, op, &v, &rt, r.buf, pad);
  if (v.check) {
    --c->indent;
    cpu_line(c, "}");
  }
  return cpu_map_put(c, mlirOperationGetResult(op, 0), &r);
}

zt_status_t cpu_emit_block_store(cpu_t* c, MlirOperation op) {
  intptr_t n = mlirOperationGetNumOperands(op);
  if (n < 5 || (n - 2) % 3)
    return cpu_op_error(op, ZT_STATUS_INVALID_ARGUMENT, "block_store with %d operands",
                        (int)n);
  MlirValue value = mlirOperationGetOperand(op, n - 1);
  const cpu_val_t* val;
  ZT_RETURN_IF_ERROR(cpu_get(c, value, &val));
  zt_type_t vt = val->type;
  if (vt.rank != (int32_t)((n - 2) / 3))
    return cpu_op_error(op, ZT_STATUS_INVALID_ARGUMENT, "value of rank %d", vt.rank);
  view_t v;
  ZT_RETURN_IF_ERROR(read_view(c, op, vt.rank, &v));
  char addr[ZT_CPU_NAME], inb[ZT_CPU_NAME], lin[ZT_CPU_NAME], x[ZT_CPU_NAME];
  nest_begin(c, &v, vt.shape, addr, inb, lin);
  cpu_read(c, val, lin, x);
  c->addr_is_ptr = true;
  if (inb[0]) {
    cpu_line(c, "scf.if %s {", inb);
    ++c->indent;
  }
  cpu_check_access(c, op, addr, vt.kind, 1);
  cpu_raw_store(c, vt.kind, addr, x);
  if (inb[0]) {
    --c->indent;
    cpu_line(c, "}");
  }
  c->addr_is_ptr = false;
  nest_end(c, vt.rank);
  return NULL;
}
