// Blocked tree order for tile.reduce with a built-in combiner (sum, max,
// min, product, and/or/xor).
//
// Why: a sequential loop carrying one scalar neither vectorizes (LLVM may
// not reorder a float sum) nor is accurate: the error of a sum of n floats
// grows with n (781 floats: 10x numpy's pairwise error). Here W lanes each
// accumulate every W-th element, G rows at a time, into a row of partials;
// the rows of partials are combined G at a time again until one row is
// left, whose W lanes are then combined as a binary tree. Every loop that
// touches data is an independent loop over the W lanes (LLVM's loop
// vectorizer turns it into one vector op), and each element goes through
// about log_G(n / W) + log2(W) combines, like a pairwise sum.
//
// Only combiners that are one commutative, associative arith op are
// reordered: user combiners (argmin/argmax ties, tuples, anything that
// depends on the order) keep the sequential loop of cpu_control.c. Integer
// results are identical to the sequential order; float sums differ from it
// by rounding only.
#include <stdio.h>
#include <string.h>

#include "cpu_lower.h"

#define TREE_LANES 16  // one AVX-512 vector of f32 (two of f64)
#define TREE_GROUP 8   // rows combined sequentially per partial
#define TREE_MAX_LEVELS 16

static bool simple_combiner(MlirOperation fn) {
  MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(fn, 0));
  if (mlirBlockIsNull(b) || mlirBlockGetNumArguments(b) != 2) return false;
  MlirOperation op = mlirBlockGetFirstOperation(b);
  if (mlirOperationIsNull(op)) return false;
  MlirOperation ret = mlirOperationGetNextInBlock(op);
  if (mlirOperationIsNull(ret) || !mlirOperationIsNull(mlirOperationGetNextInBlock(ret)))
    return false;
  static const char* const ok[] = {
      "arith.addf",    "arith.addi",    "arith.mulf",    "arith.muli",
      "arith.maxnumf", "arith.minnumf", "arith.maximumf", "arith.minimumf",
      "arith.maxsi",   "arith.minsi",   "arith.maxui",   "arith.minui",
      "arith.andi",    "arith.ori",     "arith.xori"};
  bool known = false;
  for (size_t i = 0; i < sizeof ok / sizeof ok[0] && !known; ++i)
    known = cpu_op_is(op, ok[i]);
  if (!known || mlirOperationGetNumOperands(op) != 2 || mlirOperationGetNumResults(op) != 1 ||
      mlirOperationGetNumOperands(ret) != 1)
    return false;
  MlirValue a0 = mlirBlockGetArgument(b, 0), a1 = mlirBlockGetArgument(b, 1);
  MlirValue x = mlirOperationGetOperand(op, 0), y = mlirOperationGetOperand(op, 1);
  bool args = (mlirValueEqual(x, a0) && mlirValueEqual(y, a1)) ||
              (mlirValueEqual(x, a1) && mlirValueEqual(y, a0));
  return args && mlirValueEqual(mlirOperationGetOperand(ret, 0), mlirOperationGetResult(op, 0));
}

// base + sum ivs[i] * strides[i] (base may be NULL).
static void index_of(cpu_t* c, const char* base, int32_t n, char ivs[][ZT_CPU_NAME],
                     const int64_t* strides, char out[ZT_CPU_NAME]) {
  char lin[ZT_CPU_NAME];
  cpu_linear(c, n, ivs, strides, lin);
  if (!base) {
    snprintf(out, ZT_CPU_NAME, "%s", lin);
    return;
  }
  cpu_fresh(c, out);
  cpu_line(c, "%s = arith.addi %s, %s : index", out, base, lin);
}

// One row of W lanes of a level (group grp, row k of it): a copy of the
// group's first row (kind 0) or its combine into the partials (kind 1); or
// the whole group at once (kind 2, emit_level's split first level).
typedef struct row_s {
  int kind;
  MlirOperation fn;
  const cpu_val_t* in;
  const char* base;
  int64_t stride, g;
  int32_t out;
  char grp[ZT_CPU_NAME], k[ZT_CPU_NAME];
} row_t;

static zt_status_t emit_row(cpu_t* c, void* user, const char* start) {
  (void)start;
  const row_t* r = user;
  const int64_t W = TREE_LANES, g = r->g, stride = r->stride;
  char src_idx[ZT_CPU_NAME], dst_idx[ZT_CPU_NAME], lane[ZT_CPU_NAME];
  cpu_loop_begin(c, W, lane);
  char iv3[3][ZT_CPU_NAME], iv2[2][ZT_CPU_NAME];
  snprintf(iv2[0], ZT_CPU_NAME, "%s", r->grp);
  snprintf(iv2[1], ZT_CPU_NAME, "%s", lane);
  int64_t ds[2] = {W, 1};
  index_of(c, NULL, 2, iv2, ds, dst_idx);
  if (r->kind == 2) {
    // The group's g rows combined lane by lane in one pass: acc = row 0,
    // then rows 1 .. g-1 in order (each partial's order unchanged).
    char acc[1][ZT_CPU_NAME], x[1][ZT_CPU_NAME], res[1][ZT_CPU_NAME];
    for (int64_t k = 0; k < g; ++k) {
      char kc[ZT_CPU_NAME];
      snprintf(iv3[0], ZT_CPU_NAME, "%s", r->grp);
      snprintf(iv3[1], ZT_CPU_NAME, "%s", cpu_index(c, k, kc));
      snprintf(iv3[2], ZT_CPU_NAME, "%s", lane);
      int64_t ss[3] = {g * W * stride, W * stride, stride};
      index_of(c, r->base, 3, iv3, ss, src_idx);
      cpu_read(c, r->in, src_idx, k ? x[0] : acc[0]);
      if (!k) continue;
      ZT_RETURN_IF_ERROR(cpu_inline_combiner(c, r->fn, 1, acc, x, res));
      snprintf(acc[0], ZT_CPU_NAME, "%s", res[0]);
    }
    cpu_write(c, r->out, dst_idx, acc[0]);
    cpu_loop_end_lanes(c);
    return NULL;
  }
  if (r->kind == 0) {
    char x[ZT_CPU_NAME];
    int64_t ss[2] = {g * W * stride, stride};
    index_of(c, r->base, 2, iv2, ss, src_idx);
    cpu_read(c, r->in, src_idx, x);
    cpu_write(c, r->out, dst_idx, x);
    cpu_loop_end_lanes(c);
    return NULL;
  }
  snprintf(iv3[0], ZT_CPU_NAME, "%s", r->grp);
  snprintf(iv3[1], ZT_CPU_NAME, "%s", r->k);
  snprintf(iv3[2], ZT_CPU_NAME, "%s", lane);
  int64_t ss[3] = {g * W * stride, W * stride, stride};
  index_of(c, r->base, 3, iv3, ss, src_idx);
  const cpu_val_t pv = {.kind = CPU_BUFFER, .type = {.kind = c->bufs[r->out].kind},
                        .buf = r->out};
  cpu_val_t p = pv;
  snprintf(p.name, ZT_CPU_NAME, "%%b%d", r->out);
  char lhs[1][ZT_CPU_NAME], rhs[1][ZT_CPU_NAME], res[1][ZT_CPU_NAME];
  cpu_read(c, &p, dst_idx, lhs[0]);
  cpu_read(c, r->in, src_idx, rhs[0]);
  ZT_RETURN_IF_ERROR(cpu_inline_combiner(c, r->fn, 1, lhs, rhs, res));
  cpu_write(c, r->out, dst_idx, res[0]);
  cpu_loop_end_lanes(c);
  return NULL;
}

// One level: rows of W lanes from `in` (element index base + pos * stride of
// row r, lane l at pos = r * W + l), g rows per group, into buffer `out`
// (rows / g rows of W lanes).
// split: the first level of a 1-D value of numel elements (positions are
// element indices): each row of W lanes read through cpu_split_block, so
// that the rows below a mask's end load without per-lane compares (softmax's
// row max over 781 of 1024 columns).
static zt_status_t emit_level(cpu_t* c, MlirOperation fn, const cpu_val_t* in,
                              const char* base, int64_t stride, int64_t rows, int64_t g,
                              int32_t out, bool split, int64_t numel) {
  const int64_t W = TREE_LANES;
  char ivs[3][ZT_CPU_NAME];
  if (split && g > 1 && g <= TREE_GROUP && !cpu_host_avx512()) {
    // Without AVX-512: group by group, each group's g rows in one lane loop
    // (the partial in registers, the row read in address order). Why
    // (issue 16, session 19): below, row k of every group comes before row
    // k + 1, so a row is read as g streams a group (512 bytes) apart, and
    // on this AVX2 EPYC the partials live on the stack; softmax 4096x781
    // waited on its first read of each row (the max's loads ~14% of the
    // kernel, perf), ~370 ns a row more than the same rows from cache.
    // Same combines in the same order per partial: same bits. The mask is
    // split per group (g * W lanes), not per row.
    cpu_loop_begin(c, rows / g, ivs[0]);
    char start[ZT_CPU_NAME];
    int64_t st[1] = {g * W};
    cpu_linear(c, 1, ivs, st, start);
    row_t r = {.kind = 2, .fn = fn, .in = in, .base = base, .stride = stride, .g = g,
               .out = out};
    snprintf(r.grp, ZT_CPU_NAME, "%s", ivs[0]);
    ZT_RETURN_IF_ERROR(cpu_split_block(c, in, numel, start, g * W, emit_row, &r));
    cpu_loop_end(c);
    return NULL;
  }
  cpu_loop_begin(c, rows / g, ivs[0]);
  {  // first row of the group: a copy
    char start[ZT_CPU_NAME];
    int64_t st[1] = {g * W};
    cpu_linear(c, 1, ivs, st, start);
    row_t r = {.kind = 0, .in = in, .base = base, .stride = stride, .g = g, .out = out};
    snprintf(r.grp, ZT_CPU_NAME, "%s", ivs[0]);
    ZT_RETURN_IF_ERROR(split ? cpu_split_block(c, in, numel, start, W, emit_row, &r)
                             : emit_row(c, &r, start));
  }
  cpu_loop_end(c);
  if (g > 1) {
    // Row k of every group, then row k + 1: each partial still combines its
    // group's rows in order (the same result bit for bit), but the groups'
    // combines are independent of one another between two steps, where
    // group by group each waited for the previous one's result (softmax's
    // row max was bound by the latency of max).
    char one[ZT_CPU_NAME], cg[ZT_CPU_NAME];
    cpu_index(c, 1, one);
    cpu_index(c, g, cg);
    snprintf(ivs[1], ZT_CPU_NAME, "%%i%d", c->next_id++);
    cpu_line(c, "scf.for %s = %s to %s step %s {", ivs[1], one, cg, one);
    ++c->indent;
    cpu_loop_begin(c, rows / g, ivs[0]);
    char start[ZT_CPU_NAME];
    int64_t st[2] = {g * W, W};
    cpu_linear(c, 2, ivs, st, start);
    row_t r = {.kind = 1, .fn = fn, .in = in, .base = base, .stride = stride, .g = g,
               .out = out};
    snprintf(r.grp, ZT_CPU_NAME, "%s", ivs[0]);
    snprintf(r.k, ZT_CPU_NAME, "%s", ivs[1]);
    ZT_RETURN_IF_ERROR(split ? cpu_split_block(c, in, numel, start, W, emit_row, &r)
                             : emit_row(c, &r, start));
    cpu_loop_end(c);
    --c->indent;
    cpu_line(c, "}");
  }
  return NULL;
}

zt_status_t cpu_emit_tree_reduce(cpu_t* c, MlirOperation fn, const cpu_val_t* src,
                                 int64_t len, int64_t astr, const char* base,
                                 bool* done, char out[ZT_CPU_NAME]) {
  const int64_t W = TREE_LANES, G = TREE_GROUP;
  *done = false;
  if (!simple_combiner(fn) || len < 2 * W || len % W) return NULL;
  // The plan: group sizes per level until one row is left.
  int64_t groups[TREE_MAX_LEVELS];
  int32_t levels = 0;
  for (int64_t rows = len / W; rows > 1;) {
    int64_t g = rows % G == 0 ? G : rows <= 2 * G ? rows : 0;
    if (!g || levels == TREE_MAX_LEVELS) return NULL;
    groups[levels++] = g;
    rows /= g;
  }
  if (!levels) return NULL;
  zt_type_t bt = {.kind = src->type.kind, .rank = 1};
  int64_t rows = len / W;
  const cpu_val_t* in = src;
  cpu_val_t part[2];
  const char* in_base = base;
  int64_t stride = astr;
  for (int32_t lv = 0; lv < levels; ++lv) {
    cpu_val_t* p = &part[lv & 1];
    bt.shape[0] = rows / groups[lv] * W;
    ZT_RETURN_IF_ERROR(cpu_new_buf_val(c, bt, p));
    bool split = lv == 0 && src->type.rank == 1 && astr == 1 && src->kind == CPU_LAZY;
    ZT_RETURN_IF_ERROR(
        emit_level(c, fn, in, in_base, stride, rows, groups[lv], p->buf, split, len));
    rows /= groups[lv];
    in = p;
    in_base = NULL;
    stride = 1;
  }
  // The last row's lanes as a binary tree: lane l takes lane l + half.
  for (int64_t half = W / 2; half >= 1; half /= 2) {
    char l[ZT_CPU_NAME], hi[ZT_CPU_NAME], k[ZT_CPU_NAME];
    char lhs[1][ZT_CPU_NAME], rhs[1][ZT_CPU_NAME], res[1][ZT_CPU_NAME];
    cpu_loop_begin(c, half, l);
    cpu_fresh(c, hi);
    cpu_line(c, "%s = arith.addi %s, %s : index", hi, l, cpu_index(c, half, k));
    cpu_read(c, in, l, lhs[0]);
    cpu_read(c, in, hi, rhs[0]);
    ZT_RETURN_IF_ERROR(cpu_inline_combiner(c, fn, 1, lhs, rhs, res));
    cpu_write(c, in->buf, l, res[0]);
    cpu_loop_end(c);
  }
  char c0[ZT_CPU_NAME];
  cpu_read(c, in, cpu_index(c, 0, c0), out);
  *done = true;
  return NULL;
}
