// Non-temporal (streaming) stores for large outputs written once (issue 16,
// session 20).
//
// Why: a plain store to a line that is not in the cache first reads the line
// from memory (read for ownership), so an output streamed once costs a read
// and a write of memory per line. On the AVX2 EPYC a C loop adding two
// 4M-float arrays took 3.36-3.51 ms with plain stores and 2.61 with
// `vmovntps` (one thread); vector add was ~0.9x torch, which streams.
//
// What it takes (LLVM, session 19's note in docs/PERFORMANCE.md): a scalar
// store marked nontemporal stops the loop vectorizer ("loop not vectorized"),
// and a vector store marked nontemporal with alignment 4 becomes four
// `movntsd`. So the store's mask-true range is written as explicit vector
// stores of 16 elements (one 64-byte line of f32), each at a 64-byte aligned
// address: the values of a block are computed by the usual lane loop into a
// 16-element scratch buffer, read back as one vector and stored with
// `nontemporal` and alignment 64. The range's elements before its first
// line boundary and after its last are stored one at a time: no line is
// written both ways. This is a second version of the range, behind a run-time
// branch; the plain loop stays as it was for everything else (small outputs
// run as fast as before). The cost is compile time: vector add 61-66 ->
// 91 ms of compiler CPU time, an elementwise exp kernel 92-101 -> 124-143
// (in-process compiles, ZETILE_COMPILE_TIMEOUT=0).
//
// When (all at run time, else the plain loop): the output is large (the
// store's elements times the grid's programs at least CPU_NT_MIN_BYTES:
// smaller outputs may still be in cache for whoever reads them next), its
// element addresses are consecutive (no i32 wrap-around in the offsets) and
// naturally aligned, and the range holds at least CPU_NT_MIN_BLOCKS lines.
// Statically: a 1-D store of 4- or 8-byte elements through
// `addptr(splat(P), s + arange)`, no bounds checking, and a kernel that reads
// nothing through P's argument (no load would read the lines back) and has
// no atomics (streaming stores are weakly ordered: a program must not
// publish through an atomic what another reads). The thread pool fences
// streaming stores before a launch returns (runtime/cpu/thread_pool.c).
//
// Only single-pass kernels: the store in no loop, and no reduction, scan or
// dot in the kernel. Layer norm and softmax store their rows from cache
// after reading them from memory in an earlier pass; streaming their stores
// made them slower, not faster (one thread, AVX2 EPYC, same-run torch
// ratios: layer norm 2048x1531 0.91-0.93 -> 0.74-0.76, softmax 4096x781
// 1.09-1.12 -> 1.03-1.04; perf had the time in the streaming loop itself),
// while vector add went 0.93-0.95 -> 1.02-1.04.
#include <stdio.h>
#include <string.h>

#include "cpu_lower.h"

// Half the 8 MiB last-level cache of the machine this was measured on (a
// constant: sysconf reports 64 MiB on that VM). Vector add 4M floats writes
// 16 MB, layer norm 2048x1531 8 MiB per column block pass, softmax 4096x781
// 16 MiB (1024 lanes per program).
#define CPU_NT_MIN_BYTES (4LL << 20)
#define CPU_NT_MIN_BLOCKS 2
#define CPU_NT_LANES 16
#define CPU_NT_ALIGN 64

// v reads elements s + i (i = 0 .. n-1) for a uniform s: make_range, a
// uniform plus such a value, or its sign extension (wrap-around is checked
// at run time).
static bool consecutive(cpu_t* c, const cpu_val_t* v, int depth) {
  if (!v || v->kind != CPU_LAZY || depth > 16) return false;
  if (cpu_op_is(v->op, "tile.make_range")) return true;
  if (cpu_op_is(v->op, "arith.extsi"))
    return consecutive(c, cpu_map_get(c, mlirOperationGetOperand(v->op, 0)), depth + 1);
  if (!cpu_op_is(v->op, "arith.addi")) return false;
  const cpu_val_t* a = cpu_map_get(c, mlirOperationGetOperand(v->op, 0));
  const cpu_val_t* b = cpu_map_get(c, mlirOperationGetOperand(v->op, 1));
  if (!a || !b) return false;
  bool ua = a->kind == CPU_SPLAT || a->kind == CPU_SCALAR;
  bool ub = b->kind == CPU_SPLAT || b->kind == CPU_SCALAR;
  return (ua && consecutive(c, b, depth + 1)) || (ub && consecutive(c, a, depth + 1));
}

// The kernel argument a pointer value comes from (through splats, addptr,
// broadcasts and reshapes), or a null value when it is not one.
static MlirValue root_arg(cpu_t* c, MlirValue v) {
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(c->lc->kernel, 0));
  for (int depth = 0; depth < 32 && !mlirValueIsNull(v); ++depth) {
    if (mlirValueIsABlockArgument(v))
      return mlirBlockEqual(mlirBlockArgumentGetOwner(v), body) ? v : (MlirValue){NULL};
    MlirOperation d = mlirOpResultGetOwner(v);
    if (!cpu_op_is(d, "tile.splat") && !cpu_op_is(d, "tile.addptr") &&
        !cpu_op_is(d, "tile.broadcast") && !cpu_op_is(d, "tile.expand_dims") &&
        !cpu_op_is(d, "tile.reshape") && !cpu_op_is(d, "tile.trans"))
      break;
    v = mlirOperationGetOperand(d, 0);
  }
  return (MlirValue){NULL};
}

typedef struct nt_scan_s {
  cpu_t* c;
  MlirValue arg;
  bool ok;
} nt_scan_t;

static MlirWalkResult scan_op(MlirOperation op, void* user) {
  nt_scan_t* sc = user;
  if (cpu_op_is(op, "tile.atomic_rmw") || cpu_op_is(op, "tile.atomic_cas") ||
      cpu_op_is(op, "tile.block_load") || cpu_op_is(op, "func.call") ||
      cpu_op_is(op, "tile.reduce") || cpu_op_is(op, "tile.scan") || cpu_op_is(op, "tile.dot")) {
    sc->ok = false;
    return MlirWalkResultInterrupt;
  }
  if (cpu_op_is(op, "tile.load")) {
    MlirValue r = root_arg(sc->c, mlirOperationGetOperand(op, 0));
    if (mlirValueIsNull(r) || mlirValueEqual(r, sc->arg)) {
      sc->ok = false;
      return MlirWalkResultInterrupt;
    }
  }
  return MlirWalkResultAdvance;
}

bool cpu_nt_eligible(cpu_t* c, MlirOperation op, const cpu_val_t** in, intptr_t nin,
                     int64_t numel, cpu_nt_t* out) {
  if (c->bounds || nin < 2 || numel % CPU_NT_LANES || numel < 2 * CPU_NT_LANES) return false;
  zt_type_t vt;
  zt_status_t s = cpu_value_type(mlirOperationGetOperand(op, 1), &vt);
  if (s) {
    zt_status_free(s);
    return false;
  }
  int32_t bytes = vt.kind == ZT_I1 ? 1 : zt_tile_kind_bytes(vt.kind);
  if (vt.rank != 1 || (bytes != 4 && bytes != 8)) return false;
  const cpu_val_t* p = in[0];
  if (p->kind != CPU_LAZY || !cpu_op_is(p->op, "tile.addptr") || p->type.rank != 1)
    return false;
  const cpu_val_t* base = cpu_map_get(c, mlirOperationGetOperand(p->op, 0));
  const cpu_val_t* off = cpu_map_get(c, mlirOperationGetOperand(p->op, 1));
  if (!base || (base->kind != CPU_SPLAT && base->kind != CPU_SCALAR) || !consecutive(c, off, 0))
    return false;
  for (MlirOperation q = mlirOperationGetParentOperation(op);
       !mlirOperationIsNull(q) && !mlirOperationEqual(q, c->lc->kernel);
       q = mlirOperationGetParentOperation(q))
    if (cpu_op_is(q, "scf.for") || cpu_op_is(q, "scf.while")) return false;
  nt_scan_t sc = {c, root_arg(c, mlirOperationGetOperand(op, 0)), true};
  if (mlirValueIsNull(sc.arg)) return false;
  mlirOperationWalk(c->lc->kernel, scan_op, &sc, MlirWalkPreOrder);
  if (!sc.ok) return false;
  *out = (cpu_nt_t){.op = op, .in = in, .numel = numel, .bytes = bytes, .kind = vt.kind};
  return true;
}

static void i64c(cpu_t* c, int64_t v, char out[ZT_CPU_NAME]) {
  cpu_fresh(c, out);
  cpu_line(c, "%s = arith.constant %lld : i64", out, (long long)v);
}

static void op2(cpu_t* c, const char* op, const char* a, const char* b, const char* ty,
                char out[ZT_CPU_NAME]) {
  cpu_fresh(c, out);
  cpu_line(c, "%s = arith.%s %s, %s : %s", out, op, a, b, ty);
}

// Element idx of the store's offsets as an i64.
static void offset_i64(cpu_t* c, const cpu_val_t* off, const char* idx, char out[ZT_CPU_NAME]) {
  char o[ZT_CPU_NAME];
  cpu_read(c, off, idx, o);
  if (off->type.kind == ZT_I64) {
    snprintf(out, ZT_CPU_NAME, "%s", o);
    return;
  }
  cpu_fresh(c, out);
  cpu_line(c, "%s = arith.extsi %s : %s to i64", out, o, cpu_elem(off->type.kind));
}

// The range's elements before its first line boundary, [0, h), and after
// its last, [last, end), with plain stores one at a time, in one loop (the
// element's code once): fewer than 16 each. Not vectorized: as 16-lane
// blocks storing only those lanes (masked vector stores) vector add compiled
// slower (wall clock on the loaded machine, 160 -> 275 ms). Not as whole
// plain blocks that the streamed lines overlap: a plain store to a line that
// is also streamed cost more than streaming saved (a C loop of that shape:
// 3.42 -> 3.61 ms, where exact heads and tails gave 2.58).
static zt_status_t scalar_ends(cpu_t* c, const char* h, const char* last, const char* end,
                               cpu_body_fn body, void* user) {
  char n[ZT_CPU_NAME], t[ZT_CPU_NAME], j[ZT_CPU_NAME], c0[ZT_CPU_NAME], c1[ZT_CPU_NAME];
  char in_head[ZT_CPU_NAME], k[ZT_CPU_NAME], u[ZT_CPU_NAME], iv[ZT_CPU_NAME];
  cpu_fresh(c, t);
  cpu_line(c, "%s = arith.subi %s, %s : index", t, end, last);
  cpu_fresh(c, n);
  cpu_line(c, "%s = arith.addi %s, %s : index", n, h, t);
  snprintf(j, ZT_CPU_NAME, "%%i%d", c->next_id++);
  cpu_line(c, "scf.for %s = %s to %s step %s {", j, cpu_index(c, 0, c0), n, cpu_index(c, 1, c1));
  ++c->indent;
  cpu_fresh(c, in_head);
  cpu_line(c, "%s = arith.cmpi ult, %s, %s : index", in_head, j, h);
  cpu_fresh(c, k);
  cpu_line(c, "%s = arith.subi %s, %s : index", k, j, h);
  cpu_fresh(c, u);
  cpu_line(c, "%s = arith.addi %s, %s : index", u, last, k);
  cpu_fresh(c, iv);
  cpu_line(c, "%s = arith.select %s, %s, %s : index", iv, in_head, j, u);
  zt_status_t s = body(c, user, iv);
  --c->indent;
  cpu_line(c, "} {llvm.loop_annotation = #llvm.loop_annotation<vectorize = "
              "#llvm.loop_vectorize<disable = true>, unroll = #llvm.loop_unroll<disable = true>>}");
  return s;
}

bool cpu_nt_begin(cpu_t* c, const char* end, cpu_body_fn body, void* user, zt_status_t* s) {
  const cpu_nt_t* nt = c->nt;
  const cpu_val_t* off = cpu_map_get(c, mlirOperationGetOperand(nt->in[0]->op, 1));
  char c0[ZT_CPU_NAME], cl[ZT_CPU_NAME], cn1[ZT_CPU_NAME];
  cpu_index(c, 0, c0);
  cpu_index(c, CPU_NT_LANES, cl);
  // Where element 0 goes, and how many elements until a 64-byte boundary.
  char p0[ZT_CPU_NAME], a0[ZT_CPU_NAME], k[ZT_CPU_NAME], m[ZT_CPU_NAME], hb[ZT_CPU_NAME];
  if (!cpu_gep_address(c, nt->in[0], c0, p0)) return false;  // eligible: cannot fail
  c->addr_is_ptr = false;
  cpu_fresh(c, a0);
  cpu_line(c, "%s = llvm.ptrtoint %s : !llvm.ptr to i64", a0, p0);
  i64c(c, CPU_NT_ALIGN - 1, k);
  op2(c, "andi", a0, k, "i64", m);
  char neg[ZT_CPU_NAME], sh[ZT_CPU_NAME], h64[ZT_CPU_NAME], h[ZT_CPU_NAME];
  char z[ZT_CPU_NAME];
  i64c(c, 0, z);
  op2(c, "subi", z, a0, "i64", neg);
  op2(c, "andi", neg, k, "i64", hb);
  i64c(c, nt->bytes == 4 ? 2 : 3, sh);
  op2(c, "shrui", hb, sh, "i64", h64);
  cpu_fresh(c, h);
  cpu_line(c, "%s = arith.index_cast %s : i64 to index", h, h64);
  // Conditions: naturally aligned, consecutive, large, long enough.
  char ok[ZT_CPU_NAME], t[ZT_CPU_NAME], e[ZT_CPU_NAME];
  i64c(c, nt->bytes - 1, e);
  op2(c, "andi", a0, e, "i64", t);
  cpu_fresh(c, ok);
  cpu_line(c, "%s = arith.cmpi eq, %s, %s : i64", ok, t, z);
  char o0[ZT_CPU_NAME], on[ZT_CPU_NAME], d[ZT_CPU_NAME], want[ZT_CPU_NAME];
  offset_i64(c, off, c0, o0);
  offset_i64(c, off, cpu_index(c, nt->numel - 1, cn1), on);
  op2(c, "subi", on, o0, "i64", d);
  i64c(c, nt->numel - 1, want);
  char cons[ZT_CPU_NAME], r[ZT_CPU_NAME];
  cpu_fresh(c, cons);
  cpu_line(c, "%s = arith.cmpi eq, %s, %s : i64", cons, d, want);
  op2(c, "andi", ok, cons, "i1", r);
  snprintf(ok, sizeof ok, "%s", r);
  const char* np[3] = {"%npx", "%npy", "%npz"};
  char tot[ZT_CPU_NAME];
  i64c(c, nt->numel * nt->bytes, tot);
  for (int i = 0; i < 3; ++i) {
    char x[ZT_CPU_NAME];
    cpu_fresh(c, x);
    cpu_line(c, "%s = arith.extsi %s : i32 to i64", x, np[i]);
    op2(c, "muli", tot, x, "i64", r);
    snprintf(tot, sizeof tot, "%s", r);
  }
  char lim[ZT_CPU_NAME], big[ZT_CPU_NAME];
  i64c(c, CPU_NT_MIN_BYTES, lim);
  cpu_fresh(c, big);
  cpu_line(c, "%s = arith.cmpi sge, %s, %s : i64", big, tot, lim);
  op2(c, "andi", ok, big, "i1", r);
  snprintf(ok, sizeof ok, "%s", r);
  char need[ZT_CPU_NAME], cm[ZT_CPU_NAME], enough[ZT_CPU_NAME];
  op2(c, "addi", h, cpu_index(c, CPU_NT_MIN_BLOCKS * CPU_NT_LANES, cm), "index", need);
  cpu_fresh(c, enough);
  cpu_line(c, "%s = arith.cmpi uge, %s, %s : index", enough, end, need);
  op2(c, "andi", ok, enough, "i1", r);
  snprintf(ok, sizeof ok, "%s", r);
  cpu_line(c, "scf.if %s {", ok);
  ++c->indent;
  char len[ZT_CPU_NAME], q[ZT_CPU_NAME], last[ZT_CPU_NAME];
  op2(c, "subi", end, h, "index", len);
  op2(c, "remui", len, cl, "index", q);
  op2(c, "subi", end, q, "index", last);
  zt_status_t st = scalar_ends(c, h, last, end, body, user);
  // The whole lines [h, last): the lane loop computes a block's values into
  // a scratch buffer, read back as one vector for the streaming store. (The
  // buffer goes through the stack on AVX2: a round trip per line, nothing
  // beside a line's trip to memory. The same blocks for small outputs too,
  // with a plain vector store, were 35% slower than the plain loop in
  // cache: vector add 65536, 20 -> 27 us; so the plain loop stays in the
  // other branch.)
  zt_type_t bt = {.kind = nt->kind, .rank = 1};
  bt.shape[0] = CPU_NT_LANES;
  int32_t scratch = -1;
  if (!st) st = cpu_new_buf(c, bt, &scratch);
  char o[ZT_CPU_NAME], l[ZT_CPU_NAME], iv[ZT_CPU_NAME], v[ZT_CPU_NAME];
  snprintf(o, ZT_CPU_NAME, "%%i%d", c->next_id++);
  cpu_line(c, "scf.for %s = %s to %s step %s {", o, h, last, cl);
  ++c->indent;
  cpu_prefetch_next(c, o);
  cpu_loop_begin(c, CPU_NT_LANES, l);
  cpu_fresh(c, iv);
  cpu_line(c, "%s = arith.addi %s, %s : index", iv, o, l);
  if (!st) {
    cpu_read(c, nt->in[1], iv, v);
    cpu_write(c, scratch, l, v);
  }
  cpu_loop_end_lanes(c);
  if (!st) {
    char vec[ZT_CPU_NAME], pa[ZT_CPU_NAME], ty[96], vty[48];
    snprintf(vty, sizeof vty, "vector<%dx%s>", CPU_NT_LANES, cpu_elem(nt->kind));
    cpu_fresh(c, vec);
    cpu_line(c, "%s = vector.load %%b%d[%s] : %s, %s", vec, scratch, c0,
             cpu_buf_type(c, scratch, ty, sizeof ty), vty);
    cpu_gep_address(c, nt->in[0], o, pa);
    c->addr_is_ptr = false;
    cpu_line(c, "llvm.store %s, %s {alignment = %d : i64, nontemporal} : %s, !llvm.ptr", vec, pa,
             CPU_NT_ALIGN, vty);
  }
  --c->indent;
  cpu_line(c, "}");
  --c->indent;
  cpu_line(c, "} else {");
  ++c->indent;
  *s = st;
  return true;
}
