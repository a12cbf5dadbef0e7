// Run-time bounds of integer and pointer tensors of the CPU lowering (issue
// 16): a store whose value is computed from lazy loads (layer norm's
// `tl.store(Y + cols, (x - mean) * rstd * w + b)`) reads those loads in its
// own loop, element by element, which is only Triton's meaning (every
// element loaded before any is stored) when the stored bytes cannot be ones
// a later element still reads. The byte ranges of the store and of each load
// are computed from the address expressions (splats, make_range, + - *,
// addptr) before the loop and compared at run time (cpu_ops.c).
#include <stdio.h>
#include <string.h>

#include "cpu_lower.h"

#define RANGE_DEPTH 16

// ok &&= cond (ok "" means true so far).
static void and_ok(cpu_t* c, char ok[ZT_CPU_NAME], const char* cond) {
  if (!ok[0]) {
    snprintf(ok, ZT_CPU_NAME, "%s", cond);
    return;
  }
  char r[ZT_CPU_NAME];
  cpu_fresh(c, r);
  cpu_line(c, "%s = arith.andi %s, %s : i1", r, ok, cond);
  snprintf(ok, ZT_CPU_NAME, "%s", r);
}

static void i64_const(cpu_t* c, int64_t v, char out[ZT_CPU_NAME]) {
  cpu_fresh(c, out);
  cpu_line(c, "%s = arith.constant %lld : i64", out, (long long)v);
}

static void bin(cpu_t* c, const char* op, const char* a, const char* b,
                char out[ZT_CPU_NAME]) {
  cpu_fresh(c, out);
  cpu_line(c, "%s = arith.%s %s, %s : i64", out, op, a, b);
}

// A scalar SSA value of kind k as i64.
static bool scalar_i64(cpu_t* c, const char* name, zt_scalar_kind_t k,
                       char out[ZT_CPU_NAME]) {
  if (k == ZT_I64 || k == ZT_PTR) {
    snprintf(out, ZT_CPU_NAME, "%s", name);
    return true;
  }
  if (k != ZT_I32 && k != ZT_I16 && k != ZT_I8) return false;
  cpu_fresh(c, out);
  cpu_line(c, "%s = arith.extsi %s : %s to i64", out, name, cpu_elem(k));
  return true;
}

// The i32 (or narrower) arithmetic of the kernel wraps where the i64 bounds
// do not: the bounds hold only when they fit the result's type.
static void fits(cpu_t* c, zt_scalar_kind_t k, const char* lo, const char* hi,
                 char ok[ZT_CPU_NAME]) {
  if (k == ZT_I64 || k == ZT_PTR) return;
  int bits = zt_tile_kind_bytes(k) * 8;
  char mn[ZT_CPU_NAME], mx[ZT_CPU_NAME], a[ZT_CPU_NAME], b[ZT_CPU_NAME];
  i64_const(c, -(1LL << (bits - 1)), mn);
  i64_const(c, (1LL << (bits - 1)) - 1, mx);
  cpu_fresh(c, a);
  cpu_line(c, "%s = arith.cmpi sge, %s, %s : i64", a, lo, mn);
  and_ok(c, ok, a);
  cpu_fresh(c, b);
  cpu_line(c, "%s = arith.cmpi sle, %s, %s : i64", b, hi, mx);
  and_ok(c, ok, b);
}

static bool range_rec(cpu_t* c, const cpu_val_t* v, int depth, char lo[ZT_CPU_NAME],
                      char hi[ZT_CPU_NAME], char ok[ZT_CPU_NAME]);

static bool operand_range(cpu_t* c, MlirOperation op, intptr_t i, int depth,
                          char lo[ZT_CPU_NAME], char hi[ZT_CPU_NAME], char ok[ZT_CPU_NAME]) {
  const cpu_val_t* v = cpu_map_get(c, mlirOperationGetOperand(op, i));
  return v && range_rec(c, v, depth + 1, lo, hi, ok);
}

static bool range_rec(cpu_t* c, const cpu_val_t* v, int depth, char lo[ZT_CPU_NAME],
                      char hi[ZT_CPU_NAME], char ok[ZT_CPU_NAME]) {
  if (depth > RANGE_DEPTH) return false;
  zt_scalar_kind_t k = v->type.kind;
  if (v->kind == CPU_SCALAR || v->kind == CPU_SPLAT) {
    if (!scalar_i64(c, v->name, k, lo)) return false;
    snprintf(hi, ZT_CPU_NAME, "%s", lo);
    return true;
  }
  if (v->kind != CPU_LAZY) return false;
  MlirOperation op = v->op;
  if (cpu_op_is(op, "tile.make_range")) {
    // The op's own result type: an alias (expand_dims, reshape) of the
    // range keeps its elements.
    zt_type_t t;
    if (cpu_value_type(mlirOperationGetResult(op, 0), &t) || t.rank != 1) return false;
    int64_t start = cpu_int_attr(op, "start", 0);
    i64_const(c, start, lo);
    i64_const(c, start + t.shape[0] - 1, hi);
    return true;
  }
  char alo[ZT_CPU_NAME], ahi[ZT_CPU_NAME], blo[ZT_CPU_NAME], bhi[ZT_CPU_NAME];
  if (cpu_op_is(op, "arith.extsi")) return operand_range(c, op, 0, depth, lo, hi, ok);
  if (cpu_op_is(op, "tile.addptr")) {
    zt_type_t pt;
    if (cpu_value_type(mlirOperationGetOperand(op, 0), &pt)) return false;
    if (!operand_range(c, op, 0, depth, alo, ahi, ok) ||
        !operand_range(c, op, 1, depth, blo, bhi, ok))
      return false;
    char size[ZT_CPU_NAME], l2[ZT_CPU_NAME], h2[ZT_CPU_NAME];
    i64_const(c, zt_tile_kind_bytes(pt.pointee), size);
    bin(c, "muli", blo, size, l2);
    bin(c, "muli", bhi, size, h2);
    bin(c, "addi", alo, l2, lo);
    bin(c, "addi", ahi, h2, hi);
    return true;
  }
  bool add = cpu_op_is(op, "arith.addi"), sub = cpu_op_is(op, "arith.subi"),
       mul = cpu_op_is(op, "arith.muli");
  if (!add && !sub && !mul) return false;
  if (!operand_range(c, op, 0, depth, alo, ahi, ok) ||
      !operand_range(c, op, 1, depth, blo, bhi, ok))
    return false;
  if (add) {
    bin(c, "addi", alo, blo, lo);
    bin(c, "addi", ahi, bhi, hi);
  } else if (sub) {
    bin(c, "subi", alo, bhi, lo);
    bin(c, "subi", ahi, blo, hi);
  } else {
    // The four corner products (no i64 overflow: the factors fit 32 bits,
    // checked below for narrower results; i64 factors are not bounded).
    if (k == ZT_I64) return false;
    char p[4][ZT_CPU_NAME], m1[ZT_CPU_NAME], m2[ZT_CPU_NAME], x1[ZT_CPU_NAME],
        x2[ZT_CPU_NAME];
    bin(c, "muli", alo, blo, p[0]);
    bin(c, "muli", alo, bhi, p[1]);
    bin(c, "muli", ahi, blo, p[2]);
    bin(c, "muli", ahi, bhi, p[3]);
    bin(c, "minsi", p[0], p[1], m1);
    bin(c, "minsi", p[2], p[3], m2);
    bin(c, "minsi", m1, m2, lo);
    bin(c, "maxsi", p[0], p[1], x1);
    bin(c, "maxsi", p[2], p[3], x2);
    bin(c, "maxsi", x1, x2, hi);
  }
  fits(c, k, lo, hi, ok);
  return true;
}

bool cpu_value_range(cpu_t* c, const cpu_val_t* v, char lo[ZT_CPU_NAME],
                     char hi[ZT_CPU_NAME], char ok[ZT_CPU_NAME]) {
  return range_rec(c, v, 0, lo, hi, ok);
}

bool cpu_ranges_disjoint(cpu_t* c, const cpu_val_t* a, int32_t abytes,
                         const cpu_val_t* b, int32_t bbytes, char ok[ZT_CPU_NAME]) {
  char alo[ZT_CPU_NAME], ahi[ZT_CPU_NAME], blo[ZT_CPU_NAME], bhi[ZT_CPU_NAME];
  if (!cpu_value_range(c, a, alo, ahi, ok) || !cpu_value_range(c, b, blo, bhi, ok))
    return false;
  // [alo, ahi + abytes) and [blo, bhi + bbytes) do not meet.
  char sa[ZT_CPU_NAME], sb[ZT_CPU_NAME], ea[ZT_CPU_NAME], eb[ZT_CPU_NAME],
      below[ZT_CPU_NAME], above[ZT_CPU_NAME], apart[ZT_CPU_NAME];
  i64_const(c, abytes, sa);
  i64_const(c, bbytes, sb);
  bin(c, "addi", ahi, sa, ea);
  bin(c, "addi", bhi, sb, eb);
  cpu_fresh(c, below);
  cpu_line(c, "%s = arith.cmpi ule, %s, %s : i64", below, ea, blo);
  cpu_fresh(c, above);
  cpu_line(c, "%s = arith.cmpi ule, %s, %s : i64", above, eb, alo);
  cpu_fresh(c, apart);
  cpu_line(c, "%s = arith.ori %s, %s : i1", apart, below, above);
  and_ok(c, ok, apart);
  return true;
}

bool cpu_mask_bound(cpu_t* c, const cpu_val_t* mask, char count[ZT_CPU_NAME]) {
  // mask = (s + make_range(start, start + n)) < limit, 1-D: elements
  // [0, clamp(limit - s - start, 0, n)) are the true ones.
  if (mask->kind != CPU_LAZY || mask->type.rank != 1 ||
      !cpu_op_is(mask->op, "arith.cmpi") ||
      cpu_int_attr(mask->op, "predicate", -1) != 2 /* slt */)
    return false;
  const cpu_val_t* x = cpu_map_get(c, mlirOperationGetOperand(mask->op, 0));
  const cpu_val_t* lim = cpu_map_get(c, mlirOperationGetOperand(mask->op, 1));
  if (!x || !lim || x->kind != CPU_LAZY ||
      (lim->kind != CPU_SPLAT && lim->kind != CPU_SCALAR))
    return false;
  const cpu_val_t* s = NULL;
  const cpu_val_t* range = x;
  if (cpu_op_is(x->op, "arith.addi")) {
    const cpu_val_t* a = cpu_map_get(c, mlirOperationGetOperand(x->op, 0));
    const cpu_val_t* b = cpu_map_get(c, mlirOperationGetOperand(x->op, 1));
    if (!a || !b) return false;
    if (a->kind == CPU_SPLAT || a->kind == CPU_SCALAR) {
      s = a;
      range = b;
    } else if (b->kind == CPU_SPLAT || b->kind == CPU_SCALAR) {
      s = b;
      range = a;
    } else {
      return false;
    }
  }
  if (range->kind != CPU_LAZY || !cpu_op_is(range->op, "tile.make_range")) return false;
  zt_type_t t;
  if (cpu_value_type(mlirOperationGetResult(range->op, 0), &t) || t.rank != 1 ||
      t.shape[0] != mask->type.shape[0] || lim->type.kind != ZT_I32 ||
      x->type.kind != ZT_I32)
    return false;
  // In i64: limit - s - start; the i32 sum s + i wraps for none of the
  // counted elements when s + n fits (else no bound: the loop stays whole).
  char l64[ZT_CPU_NAME], n[ZT_CPU_NAME], zero[ZT_CPU_NAME], full[ZT_CPU_NAME],
      lo[ZT_CPU_NAME], cl[ZT_CPU_NAME];
  if (!scalar_i64(c, lim->name, ZT_I32, l64)) return false;
  snprintf(n, sizeof n, "%s", l64);
  if (s) {
    char s64[ZT_CPU_NAME], d[ZT_CPU_NAME];
    if (!scalar_i64(c, s->name, ZT_I32, s64)) return false;
    bin(c, "subi", n, s64, d);
    snprintf(n, sizeof n, "%s", d);
    // s + start + len - 1 must not pass INT32_MAX (the kernel's i32 sum
    // would wrap to negative values, which are < limit: true lanes).
    char top[ZT_CPU_NAME], mx[ZT_CPU_NAME], wrap[ZT_CPU_NAME], alt[ZT_CPU_NAME];
    i64_const(c, cpu_int_attr(range->op, "start", 0) + t.shape[0] - 1, top);
    char sum[ZT_CPU_NAME];
    bin(c, "addi", s64, top, sum);
    i64_const(c, 0x7fffffffLL, mx);
    cpu_fresh(c, wrap);
    cpu_line(c, "%s = arith.cmpi sgt, %s, %s : i64", wrap, sum, mx);
    // Wrapping: count every element (the masked loop then decides).
    i64_const(c, t.shape[0] + cpu_int_attr(range->op, "start", 0), alt);
    char sel[ZT_CPU_NAME];
    cpu_fresh(c, sel);
    cpu_line(c, "%s = arith.select %s, %s, %s : i64", sel, wrap, alt, n);
    snprintf(n, sizeof n, "%s", sel);
  }
  char st[ZT_CPU_NAME], d2[ZT_CPU_NAME];
  i64_const(c, cpu_int_attr(range->op, "start", 0), st);
  bin(c, "subi", n, st, d2);
  i64_const(c, 0, zero);
  i64_const(c, t.shape[0], full);
  bin(c, "maxsi", d2, zero, lo);
  bin(c, "minsi", lo, full, cl);
  cpu_fresh(c, count);
  cpu_line(c, "%s = arith.index_cast %s : i64 to index", count, cl);
  return true;
}
