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

// The pattern of a 1-D mask `s + make_range(start, start + n) < limit`
// (s optional; no code emitted).
static bool mask_pattern(cpu_t* c, const cpu_val_t* mask, const cpu_val_t** s_out,
                         const cpu_val_t** range_out, const cpu_val_t** lim_out) {
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
  *s_out = s;
  *range_out = range;
  *lim_out = lim;
  return true;
}

bool cpu_mask_bound(cpu_t* c, const cpu_val_t* mask, char count[ZT_CPU_NAME],
                    char nowrap[ZT_CPU_NAME]) {
  // Elements [0, clamp(limit - s - start, 0, n)) are the true ones, and the
  // rest false, unless the kernel's i32 sum s + start + i wraps around
  // (negative, so < limit: true again), which nowrap tells.
  const cpu_val_t *s, *range, *lim;
  if (!mask_pattern(c, mask, &s, &range, &lim)) return false;
  zt_type_t t;
  if (cpu_value_type(mlirOperationGetResult(range->op, 0), &t)) return false;
  int64_t start = cpu_int_attr(range->op, "start", 0);
  char n[ZT_CPU_NAME], lo[ZT_CPU_NAME], cl[ZT_CPU_NAME], k[ZT_CPU_NAME], d[ZT_CPU_NAME];
  if (!scalar_i64(c, lim->name, ZT_I32, n)) return false;
  nowrap[0] = 0;
  if (s) {
    char s64[ZT_CPU_NAME], top[ZT_CPU_NAME], sum[ZT_CPU_NAME], mx[ZT_CPU_NAME];
    if (!scalar_i64(c, s->name, ZT_I32, s64)) return false;
    bin(c, "subi", n, s64, d);
    snprintf(n, sizeof n, "%s", d);
    i64_const(c, start + t.shape[0] - 1, top);
    bin(c, "addi", s64, top, sum);
    i64_const(c, 0x7fffffffLL, mx);
    cpu_fresh(c, nowrap);
    cpu_line(c, "%s = arith.cmpi sle, %s, %s : i64", nowrap, sum, mx);
  }
  i64_const(c, start, k);
  bin(c, "subi", n, k, d);
  char zero[ZT_CPU_NAME], full[ZT_CPU_NAME];
  i64_const(c, 0, zero);
  i64_const(c, t.shape[0], full);
  bin(c, "maxsi", d, zero, lo);
  bin(c, "minsi", lo, full, cl);
  cpu_fresh(c, count);
  cpu_line(c, "%s = arith.index_cast %s : i64 to index", count, cl);
  return true;
}

// ---------------------------------------------------------------------------
// Loops split at a mask's end (issue 16). An elementwise loop over a 1-D
// tensor whose lazy chain reads a mask `s + arange < n` runs as two loops:
// [0, count) with the mask known true (its loads become plain vector loads)
// and [count, N) with it known false (its loads give `other` without
// touching memory; what is left is often loop-invariant: a fill). Every
// mask of the chain with the same operands is replaced. A softmax row of
// 781 columns in a 1024-element block computes exp on 781 elements, not
// 1024; layer norm's accumulations read no mask in their full blocks.

#define SPLIT_MAX 16

typedef struct split_s {
  const cpu_val_t* first;  // the mask whose bound is used
  MlirValue keys[SPLIT_MAX];
  cpu_val_t saved[SPLIT_MAX];
  int n;
} split_t;

static bool same_operand(cpu_t* c, MlirValue a, MlirValue b) {
  if (mlirValueEqual(a, b)) return true;
  const cpu_val_t* x = cpu_map_get(c, a);
  const cpu_val_t* y = cpu_map_get(c, b);
  if (!x || !y || x->kind != y->kind) return false;
  if (x->kind == CPU_SPLAT || x->kind == CPU_SCALAR) return !strcmp(x->name, y->name);
  return x->kind == CPU_LAZY && mlirOperationEqual(x->op, y->op);
}

static bool same_mask(cpu_t* c, const cpu_val_t* a, const cpu_val_t* b) {
  if (mlirOperationEqual(a->op, b->op)) return true;
  return cpu_op_is(b->op, "arith.cmpi") &&
         cpu_int_attr(a->op, "predicate", -1) == cpu_int_attr(b->op, "predicate", -2) &&
         same_operand(c, mlirOperationGetOperand(a->op, 0),
                      mlirOperationGetOperand(b->op, 0)) &&
         same_operand(c, mlirOperationGetOperand(a->op, 1),
                      mlirOperationGetOperand(b->op, 1));
}

static void split_walk(cpu_t* c, MlirValue key, split_t* sp, int depth, bool* over) {
  const cpu_val_t* x = cpu_map_get(c, key);
  if (!x || x->kind != CPU_LAZY || depth > 64 || *over) return;
  const cpu_val_t *s, *r, *l;
  if (!sp->first && mask_pattern(c, x, &s, &r, &l)) sp->first = x;
  if (sp->first && x->type.rank == 1 && cpu_op_is(x->op, "arith.cmpi") &&
      same_mask(c, sp->first, x)) {
    for (int i = 0; i < sp->n; ++i)
      if (mlirValueEqual(sp->keys[i], key)) return;
    if (sp->n == SPLIT_MAX) {
      *over = true;
      return;
    }
    sp->keys[sp->n] = key;
    sp->saved[sp->n++] = *x;
    return;
  }
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(x->op); ++i)
    split_walk(c, mlirOperationGetOperand(x->op, i), sp, depth + 1, over);
}

// Every replaced mask as the splat `b`, or (b NULL) its lazy self again.
static zt_status_t split_set(cpu_t* c, split_t* sp, const char* b) {
  for (int i = 0; i < sp->n; ++i) {
    cpu_val_t v = sp->saved[i];
    if (b) {
      v.kind = CPU_SPLAT;
      snprintf(v.name, ZT_CPU_NAME, "%s", b);
    }
    ZT_RETURN_IF_ERROR(cpu_map_put(c, sp->keys[i], &v));
  }
  return NULL;
}

static void loop_from(cpu_t* c, const char* from, const char* to, char iv[ZT_CPU_NAME]) {
  char c1[ZT_CPU_NAME];
  cpu_index(c, 1, c1);
  snprintf(iv, ZT_CPU_NAME, "%%i%d", c->next_id++);
  cpu_line(c, "scf.for %s = %s to %s step %s {", iv, from, to, c1);
  ++c->indent;
}

// [from, to) in blocks of V elements when `blocked` (both bounds are then
// multiples of V): the inner loop's constant trip count lets LLVM vectorize
// it whole, leaving no scalar remainder code.
static zt_status_t range_loop(cpu_t* c, const char* from, const char* to, bool blocked,
                              int64_t V, cpu_body_fn body, void* user) {
  char iv[ZT_CPU_NAME];
  if (!blocked) {
    loop_from(c, from, to, iv);
    zt_status_t s = body(c, user, iv);
    cpu_loop_end(c);
    return s;
  }
  char o[ZT_CPU_NAME], l[ZT_CPU_NAME], cv[ZT_CPU_NAME];
  snprintf(o, ZT_CPU_NAME, "%%i%d", c->next_id++);
  cpu_line(c, "scf.for %s = %s to %s step %s {", o, from, to, cpu_index(c, V, cv));
  ++c->indent;
  cpu_prefetch_next(c, o);
  cpu_loop_begin(c, V, l);
  cpu_fresh(c, iv);
  cpu_line(c, "%s = arith.addi %s, %s : index", iv, o, l);
  zt_status_t s = body(c, user, iv);
  cpu_loop_end_lanes(c);
  cpu_loop_end(c);
  return s;
}

static zt_status_t split_loop(cpu_t* c, const MlirValue* roots, int nroots,
                              const cpu_val_t* root, int64_t numel, MlirValue skip_mask,
                              cpu_body_fn body, void* user);

// Any such loop reading a load whose base moves with the program id (layer
// norm's X) prefetches the next program's block (cpu_prefetch_pick).
zt_status_t cpu_split_loop(cpu_t* c, const MlirValue* roots, int nroots,
                           const cpu_val_t* root, int64_t numel, MlirValue skip_mask,
                           cpu_body_fn body, void* user) {
  bool picked = cpu_prefetch_pick(c, roots, nroots, root);
  zt_status_t s = split_loop(c, roots, nroots, root, numel, skip_mask, body, user);
  if (picked) c->pf_ptr = NULL;
  return s;
}

static zt_status_t split_loop(cpu_t* c, const MlirValue* roots, int nroots,
                              const cpu_val_t* root, int64_t numel, MlirValue skip_mask,
                              cpu_body_fn body, void* user) {
  split_t sp = {.first = NULL, .n = 0};
  bool over = c->no_split;
  for (int i = 0; i < nroots; ++i) split_walk(c, roots[i], &sp, 0, &over);
  if (root && root->kind == CPU_LAZY)
    for (intptr_t i = 0; i < mlirOperationGetNumOperands(root->op); ++i)
      split_walk(c, mlirOperationGetOperand(root->op, i), &sp, 1, &over);
  char count[ZT_CPU_NAME], nowrap[ZT_CPU_NAME], iv[ZT_CPU_NAME];
  zt_status_t s = NULL;
  if (over || !sp.n || !cpu_mask_bound(c, sp.first, count, nowrap)) {
    cpu_loop_begin(c, numel, iv);
    s = body(c, user, iv);
    cpu_loop_end(c);
    return s;
  }
  char t[ZT_CPU_NAME], f[ZT_CPU_NAME], c0[ZT_CPU_NAME], cn[ZT_CPU_NAME];
  cpu_fresh(c, t);
  cpu_line(c, "%s = arith.constant true", t);
  cpu_fresh(c, f);
  cpu_line(c, "%s = arith.constant false", f);
  // Three loops: [0, head_end) with the mask true, [head_end, tail_start)
  // reading it, [tail_start, N) with it false. With N a multiple of the
  // vector width V (16 lanes: one AVX-512 f32 vector) the first stops at a
  // multiple of V and the second is the next V elements (one masked vector
  // op), so that no loop leaves LLVM a scalar remainder (13 scalar exps per
  // softmax row of 781 columns); else the second is empty. When the kernel's
  // i32 sum s + i wraps around, the second loop is all of them.
  const int64_t V = 16;
  char head_end[ZT_CPU_NAME], tail_start[ZT_CPU_NAME];
  snprintf(head_end, sizeof head_end, "%s", count);
  snprintf(tail_start, sizeof tail_start, "%s", count);
  if (numel % V == 0 && numel >= 2 * V) {  // `blocked` below
    char cv[ZT_CPU_NAME], cnv[ZT_CPU_NAME], rem[ZT_CPU_NAME], down[ZT_CPU_NAME];
    cpu_index(c, V, cv);
    cpu_index(c, numel - V, cnv);
    cpu_fresh(c, rem);
    cpu_line(c, "%s = arith.remui %s, %s : index", rem, count, cv);
    cpu_fresh(c, down);
    cpu_line(c, "%s = arith.subi %s, %s : index", down, count, rem);
    char part_end[ZT_CPU_NAME], all[ZT_CPU_NAME], next[ZT_CPU_NAME], cn0[ZT_CPU_NAME];
    cpu_fresh(c, part_end);
    cpu_line(c, "%s = arith.minui %s, %s : index", part_end, down, cnv);
    cpu_fresh(c, next);
    cpu_line(c, "%s = arith.addi %s, %s : index", next, part_end, cv);
    // A block the mask covers whole (vector add's every program but the
    // last) is one unmasked loop: no masked last vector (session 19).
    cpu_index(c, numel, cn0);
    cpu_fresh(c, all);
    cpu_line(c, "%s = arith.cmpi uge, %s, %s : index", all, count, cn0);
    cpu_fresh(c, head_end);
    cpu_line(c, "%s = arith.select %s, %s, %s : index", head_end, all, cn0, part_end);
    cpu_fresh(c, tail_start);
    cpu_line(c, "%s = arith.select %s, %s, %s : index", tail_start, all, cn0, next);
  }
  if (nowrap[0]) {
    char he[ZT_CPU_NAME], ts[ZT_CPU_NAME];
    cpu_fresh(c, he);
    cpu_line(c, "%s = arith.select %s, %s, %s : index", he, nowrap, head_end,
             cpu_index(c, 0, c0));
    cpu_fresh(c, ts);
    cpu_line(c, "%s = arith.select %s, %s, %s : index", ts, nowrap, tail_start,
             cpu_index(c, numel, cn));
    snprintf(head_end, sizeof head_end, "%s", he);
    snprintf(tail_start, sizeof tail_start, "%s", ts);
  }
  bool blocked = numel % V == 0 && numel >= 2 * V;
  // The tail loop is left out only when skip_mask (a store's own mask) is
  // one of the masks replaced by false there: then it stores nothing. A
  // mask found elsewhere in the chain (a stored value's load mask, whose
  // tail gives `other`) does not make the store's tail empty.
  bool skip_tail = false;
  if (!mlirValueIsNull(skip_mask))
    for (int i = 0; i < sp.n && !skip_tail; ++i)
      skip_tail = mlirValueEqual(sp.keys[i], skip_mask);
  s = split_set(c, &sp, t);
  // A store's mask-true range may stream its full lines (cpu_store_nt.c):
  // only where the store's own mask is true there (or it has none).
  bool nt = false;
  if (!s && blocked && c->nt && nroots > 0 &&
      mlirValueEqual(roots[0], mlirOperationGetOperand(c->nt->op, 0)) &&
      (mlirValueIsNull(skip_mask) || skip_tail))
    nt = cpu_nt_begin(c, head_end, body, user, &s);
  if (!s) s = range_loop(c, cpu_index(c, 0, c0), head_end, blocked, V, body, user);
  if (nt) {
    --c->indent;
    cpu_line(c, "}");
  }
  if (!s && strcmp(head_end, tail_start)) {
    s = split_set(c, &sp, NULL);
    if (!s) s = range_loop(c, head_end, tail_start, blocked, V, body, user);
  }
  if (!s && !skip_tail) {
    s = split_set(c, &sp, f);
    if (!s) s = range_loop(c, tail_start, cpu_index(c, numel, cn), blocked, V, body, user);
  }
  zt_status_t r = split_set(c, &sp, NULL);
  if (r && !s) s = r;
  else zt_status_free(r);
  return s;
}

// One block of V elements [start, start + V) of a 1-D value of numel
// elements that a tree reduction reads (cpu_reduce_tree.c): when root's lazy
// chain reads a mask `s + arange < n` over the same numel elements, branches
// on the uniform `start`: the whole block below the mask's end (the mask a
// true splat: plain vector loads, no per-lane compare of 64-bit indices), or
// not (the mask read). The tree keeps its order; only how each element is
// read changes, so results are bit for bit the same. Blocks wholly past the
// end: on AVX-512 hosts they read the mask too (measured there, session 13:
// with a third branch LLVM no longer unrolled the tree's group loop, its
// partials went to the stack behind run-time alias checks, and softmax
// 4096x781 got slower). Without AVX-512 the partials are on the stack
// anyway, and the 15 blocks past 781 of a 1024-lane softmax row built their
// masks from 64-bit indices (~15 instructions per 8 lanes, ~11% of the
// kernel on the AVX2 EPYC, session 18): a third branch takes `other` for
// every lane there (the mask a false splat).
zt_status_t cpu_split_block(cpu_t* c, const cpu_val_t* root, int64_t numel, const char* start,
                            int64_t V, cpu_body_fn body, void* user) {
  split_t sp = {.first = NULL, .n = 0};
  bool over = c->no_split;
  if (root && root->kind == CPU_LAZY)
    for (intptr_t i = 0; i < mlirOperationGetNumOperands(root->op); ++i)
      split_walk(c, mlirOperationGetOperand(root->op, i), &sp, 1, &over);
  char count[ZT_CPU_NAME], nowrap[ZT_CPU_NAME];
  if (over || !sp.n || sp.first->type.rank != 1 || sp.first->type.shape[0] != numel ||
      !cpu_mask_bound(c, sp.first, count, nowrap))
    return body(c, user, start);
  char end[ZT_CPU_NAME], cv[ZT_CPU_NAME], full[ZT_CPU_NAME], past[ZT_CPU_NAME];
  cpu_fresh(c, end);
  cpu_line(c, "%s = arith.addi %s, %s : index", end, start, cpu_index(c, V, cv));
  cpu_fresh(c, full);
  cpu_line(c, "%s = arith.cmpi ule, %s, %s : index", full, end, count);
  past[0] = 0;
  if (!cpu_host_avx512()) {
    cpu_fresh(c, past);
    cpu_line(c, "%s = arith.cmpi uge, %s, %s : index", past, start, count);
  }
  if (nowrap[0]) {  // a wrapping i32 sum: every block reads the mask
    char a[ZT_CPU_NAME];
    cpu_fresh(c, a);
    cpu_line(c, "%s = arith.andi %s, %s : i1", a, full, nowrap);
    snprintf(full, sizeof full, "%s", a);
    if (past[0]) {
      cpu_fresh(c, a);
      cpu_line(c, "%s = arith.andi %s, %s : i1", a, past, nowrap);
      snprintf(past, sizeof past, "%s", a);
    }
  }
  // The branches: full (mask true), past (mask false), else the mask read.
  const char* conds[2] = {full, past};
  const char* consts[2] = {"true", "false"};
  int nbranch = past[0] ? 2 : 1;
  zt_status_t s = NULL;
  for (int i = 0; i < nbranch; ++i) {
    char k[ZT_CPU_NAME];
    cpu_fresh(c, k);
    cpu_line(c, "%s = arith.constant %s", k, consts[i]);
    if (!s) s = split_set(c, &sp, k);
    cpu_line(c, "scf.if %s {", conds[i]);
    ++c->indent;
    if (!s) s = body(c, user, start);
    --c->indent;
    cpu_line(c, "} else {");
    ++c->indent;
  }
  if (!s) s = split_set(c, &sp, NULL);
  if (!s) s = body(c, user, start);
  for (int i = 0; i < nbranch; ++i) {
    --c->indent;
    cpu_line(c, "}");
  }
  zt_status_t r = split_set(c, &sp, NULL);
  if (r && !s) s = r;
  else zt_status_free(r);
  return s;
}
