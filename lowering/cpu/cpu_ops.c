// Elementwise, shape and memory ops of the CPU lowering.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>

#include "cpu_lower.h"

#define MAX_OPERANDS 8

bool cpu_op_is(MlirOperation op, const char* name) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  size_t l = strlen(name);
  return n.length == l && memcmp(n.data, name, l) == 0;
}

static void append_cb(MlirStringRef s, void* user) {
  zt_strbuf_append((zt_strbuf_t*)user, s.data, s.length);
}

void cpu_op_where(MlirOperation op, char* where, size_t size) {
  zt_strbuf_t loc;
  zt_strbuf_init(&loc);
  mlirLocationPrint(mlirOperationGetLocation(op), append_cb, &loc);
  // loc("file":line:col) -> file:line:col
  where[0] = 0;
  if (loc.data && strncmp(loc.data, "loc(\"", 5) == 0) {
    size_t j = 0;
    for (const char* p = loc.data + 5; *p && j + 1 < size; ++p)
      if (*p != '"') where[j++] = *p;
    where[j] = 0;
    char* close = strrchr(where, ')');
    if (close) *close = 0;
  }
  zt_strbuf_deinit(&loc);
}

zt_status_t cpu_op_error(MlirOperation op, zt_status_code_t code,
                         const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  char where[512];
  cpu_op_where(op, where, sizeof where);
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  if (where[0])
    return zt_make_status(code, "%s: %.*s: %s", where, (int)n.length, n.data, msg);
  return zt_make_status(code, "%.*s: %s", (int)n.length, n.data, msg);
}

zt_status_t cpu_value_type(MlirValue v, zt_type_t* out) {
  return zt_tile_type_from_mlir(mlirValueGetType(v), out);
}

// ---------------------------------------------------------------------------
// Fusion: a pure elementwise tensor op whose few users sit in the same block
// and read each element once is not computed into a buffer; each reader
// re-emits it on the element it needs (CPU_LAZY), so chains of elementwise
// ops become one loop and address arithmetic moves into the load's loop.

#define LAZY_MAX_COST 12
#define LAZY_MAX_WORK 16  // cost times number of users

static bool lazy_user_ok(MlirOperation user) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(user));
  if ((n.length > 6 && memcmp(n.data, "arith.", 6) == 0) ||
      (n.length > 5 && memcmp(n.data, "math.", 5) == 0))
    return true;
  static const char* const ok[] = {
      "tile.addptr",   "tile.load",        "tile.store",   "tile.reduce",
      "tile.trans",    "tile.broadcast",   "tile.reshape", "tile.expand_dims",
      "tile.ptr_cast", "tile.ptr_to_int",  "tile.int_to_ptr", "tile.atomic_rmw",
      "tile.atomic_cas", "tile.scan",      "tile.block_store", "tile.print",
      "tile.assert",   "scf.yield"};
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; ++i)
    if (cpu_op_is(user, ok[i])) return true;
  return false;
}

// Per-element cost of re-emitting `op`, in simple vector instructions.
// Transcendentals become a polynomial of ~25 instructions (exp, cpu_math.c)
// or a libmvec call: counted as 1, a softmax's exp(x - max) (read by its sum
// and by the division) was computed twice per element, which cost more than
// storing it once and reading it back.
static int32_t lazy_op_cost(MlirOperation op) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  if (n.length > 5 && memcmp(n.data, "math.", 5) == 0) {
    static const char* const cheap[] = {"math.absf", "math.absi", "math.fma",
                                        "math.copysign", "math.floor", "math.ceil",
                                        "math.trunc", "math.roundeven", "math.round"};
    for (size_t i = 0; i < sizeof cheap / sizeof cheap[0]; ++i)
      if (cpu_op_is(op, cheap[i])) return 1;
    if (cpu_op_is(op, "math.sqrt") || cpu_op_is(op, "math.rsqrt")) return 3;
    return 8;
  }
  if (cpu_op_is(op, "arith.divf")) return 3;
  if (cpu_op_is(op, "tile.load")) return 4;  // lazy (load_lazy_safe): re-read per use
  return 1;
}

// Users that read each element of an operand once (a chain read by one of
// them is computed once per element, lazy or not).
static bool reads_once(MlirOperation user) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(user));
  if ((n.length > 6 && memcmp(n.data, "arith.", 6) == 0) ||
      (n.length > 5 && memcmp(n.data, "math.", 5) == 0))
    return true;
  return cpu_op_is(user, "tile.store") || cpu_op_is(user, "tile.load") ||
         cpu_op_is(user, "tile.addptr") || cpu_op_is(user, "scf.yield");
}

// A chain with one reader that reads each element once costs nothing to
// recompute there, whatever its length (issue 16: layer norm's
// `(x - mean) * rstd * w + b` with its three loads joins the store's loop);
// this bounds only the code re-emitted per element.
#define LAZY_MAX_CHAIN 40

static bool lazy_ok(MlirOperation def, MlirValue v, int32_t cost) {
  MlirBlock block = mlirOperationGetBlock(def);
  int32_t uses = 0;
  MlirOperation first = {NULL};
  bool one_user = true;
  for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation user = mlirOpOperandGetOwner(u);
    if (!mlirBlockEqual(mlirOperationGetBlock(user), block) || !lazy_user_ok(user))
      return false;
    if (!uses) first = user;
    else if (!mlirOperationEqual(first, user)) one_user = false;
    ++uses;
  }
  // One op reading the chain twice (layer norm's x * x): the two copies are
  // the same pure code, which LLVM's CSE merges.
  if (uses > 0 && one_user && reads_once(first)) return cost <= LAZY_MAX_CHAIN;
  if (cost > LAZY_MAX_COST) return false;
  return uses > 0 && uses * cost <= LAZY_MAX_WORK;
}

// A load may be lazy too (re-read where its element is used, so the loads
// of `acc += tl.load(...)` or `x * w + b` join the loop of their reader
// instead of going through a stack buffer) when moving it there cannot change
// what it reads: no op between the load and the last reader of anything
// computed from it writes memory (stores, atomics, ops with regions, calls),
// and nothing computed from it is stored (a permuted in-place store could
// overwrite elements a later lazy read still needs).
static bool writes_memory(MlirOperation op) {
  if (mlirOperationGetNumRegions(op) > 0) return true;
  static const char* const w[] = {"tile.store", "tile.atomic_rmw", "tile.atomic_cas",
                                  "tile.block_store", "func.call"};
  for (size_t i = 0; i < sizeof w / sizeof w[0]; ++i)
    if (cpu_op_is(op, w[i])) return true;
  return false;
}

#define LOAD_LAZY_SCAN 256  // ops looked at after the load; more: not lazy

// w reads no tainted value as its address, and no tainted value is read
// after w (or outside the load's block).
static bool last_reader(MlirOperation w, const MlirValue* tainted, int nt,
                        MlirBlock block) {
  for (int t = 0; t < nt; ++t) {
    if (mlirValueEqual(mlirOperationGetOperand(w, 0), tainted[t])) return false;
    for (MlirOpOperand u = mlirValueGetFirstUse(tainted[t]); !mlirOpOperandIsNull(u);
         u = mlirOpOperandGetNextUse(u)) {
      MlirOperation owner = mlirOpOperandGetOwner(u);
      if (!mlirBlockEqual(mlirOperationGetBlock(owner), block) ||
          (!mlirOperationEqual(owner, w) && mlirOperationIsBeforeInBlock(w, owner)))
        return false;
    }
  }
  return true;
}

static bool load_lazy_safe(MlirOperation load) {
  MlirValue tainted[32];
  int nt = 0;
  tainted[nt++] = mlirOperationGetResult(load, 0);
  MlirBlock block = mlirOperationGetBlock(load);
  int steps = 0;
  for (MlirOperation w = mlirOperationGetNextInBlock(load); !mlirOperationIsNull(w);
       w = mlirOperationGetNextInBlock(w)) {
    if (++steps > LOAD_LAZY_SCAN) return false;
    bool uses = false;
    for (intptr_t i = 0; i < mlirOperationGetNumOperands(w) && !uses; ++i)
      for (int t = 0; t < nt && !uses; ++t)
        uses = mlirValueEqual(mlirOperationGetOperand(w, i), tainted[t]);
    if (uses) {
      // A store of values computed from the load that is the last reader of
      // all of them reads the load in its own loop; it compares the bytes
      // it writes with the ones the load reads at run time and loads into
      // a buffer first when they may meet (emit_store).
      if (cpu_op_is(w, "tile.store") && last_reader(w, tainted, nt, block)) return true;
      if (cpu_op_is(w, "tile.store") || cpu_op_is(w, "tile.atomic_rmw") ||
          cpu_op_is(w, "tile.atomic_cas") || cpu_op_is(w, "tile.block_store"))
        return false;
      for (intptr_t r = 0; r < mlirOperationGetNumResults(w); ++r) {
        if (nt == (int)(sizeof tainted / sizeof tainted[0])) return false;
        tainted[nt++] = mlirOperationGetResult(w, r);
      }
    }
    if (!writes_memory(w)) continue;
    // Any read of a tainted value after w (in this block) is too late.
    for (int t = 0; t < nt; ++t)
      for (MlirOpOperand u = mlirValueGetFirstUse(tainted[t]); !mlirOpOperandIsNull(u);
           u = mlirOpOperandGetNextUse(u)) {
        MlirOperation owner = mlirOpOperandGetOwner(u);
        if (!mlirBlockEqual(mlirOperationGetBlock(owner), block) ||
            mlirOperationEqual(owner, w) || mlirOperationIsBeforeInBlock(w, owner))
          return false;
      }
  }
  return true;
}

static zt_status_t generic_fn(cpu_t* c, MlirOperation op, char ins[][ZT_CPU_NAME],
                              char outs[][ZT_CPU_NAME]);
typedef zt_status_t (*elem_fn)(cpu_t* c, MlirOperation op,
                               char ins[][ZT_CPU_NAME], char outs[][ZT_CPU_NAME]);
static elem_fn arith_fn_in(cpu_t* c, MlirOperation op);
static zt_status_t addptr_fn(cpu_t* c, MlirOperation op, char ins[][ZT_CPU_NAME],
                             char outs[][ZT_CPU_NAME]);
static void make_range_elem(cpu_t* c, MlirOperation op, const char* idx,
                            char out[ZT_CPU_NAME]);
static zt_status_t load_fn(cpu_t* c, MlirOperation op, char ins[][ZT_CPU_NAME],
                           char outs[][ZT_CPU_NAME]);

void cpu_read_lazy(cpu_t* c, const cpu_val_t* v, const char* idx,
                   char out[ZT_CPU_NAME]) {
  MlirOperation op = v->op;
  if (cpu_op_is(op, "tile.make_range")) {
    make_range_elem(c, op, idx, out);
    return;
  }
  intptr_t nin = mlirOperationGetNumOperands(op);
  char ins[MAX_OPERANDS][ZT_CPU_NAME], outs[MAX_OPERANDS][ZT_CPU_NAME];
  bool load = cpu_op_is(op, "tile.load");
  // A load's address last: reading its mask or `other` may emit another
  // load, which clears addr_is_ptr (set by gep_address for this one).
  for (intptr_t i = load ? 1 : 0; i < nin && i < MAX_OPERANDS; ++i) {
    const cpu_val_t* in = cpu_map_get(c, mlirOperationGetOperand(op, i));
    if (in) cpu_read(c, in, idx, ins[i]);
  }
  if (load) {
    const cpu_val_t* p = cpu_map_get(c, mlirOperationGetOperand(op, 0));
    if (p && !cpu_gep_address(c, p, idx, ins[0])) cpu_read(c, p, idx, ins[0]);
  }
  // All succeeded when the op was first seen; statuses cannot happen here.
  zt_status_t s = load ? load_fn(c, op, ins, outs)
                  : cpu_op_is(op, "tile.addptr") ? addptr_fn(c, op, ins, outs)
                                                 : arith_fn_in(c, op)(c, op, ins, outs);
  c->addr_is_ptr = false;
  zt_status_free(s);
  snprintf(out, ZT_CPU_NAME, "%s", outs[0]);
}

// A lazy `addptr(base, offsets)` with a uniform base becomes a getelementptr
// from the base, so LLVM sees consecutive addresses (vector and masked
// loads) instead of integers turned into pointers.
bool cpu_gep_address(cpu_t* c, const cpu_val_t* p, const char* idx, char out[ZT_CPU_NAME]) {
  if (p->kind != CPU_LAZY || !cpu_op_is(p->op, "tile.addptr")) return false;
  const cpu_val_t* base = cpu_map_get(c, mlirOperationGetOperand(p->op, 0));
  const cpu_val_t* off = cpu_map_get(c, mlirOperationGetOperand(p->op, 1));
  if (!base || !off || base->kind == CPU_BUFFER || base->kind == CPU_LAZY)
    return false;
  char o[ZT_CPU_NAME], o64[ZT_CPU_NAME], bp[ZT_CPU_NAME];
  cpu_read(c, off, idx, o);
  if (off->type.kind == ZT_I64) {
    snprintf(o64, sizeof o64, "%s", o);
  } else {
    cpu_fresh(c, o64);
    cpu_line(c, "%s = arith.extsi %s : %s to i64", o64, o, cpu_elem(off->type.kind));
  }
  zt_scalar_kind_t pk = p->type.pointee;
  cpu_fresh(c, bp);
  cpu_line(c, "%s = llvm.inttoptr %s : i64 to !llvm.ptr", bp, base->name);
  cpu_fresh(c, out);
  cpu_line(c, "%s = llvm.getelementptr %s[%s] : (!llvm.ptr, i64) -> !llvm.ptr, %s",
           out, bp, o64, pk == ZT_I1 ? "i8" : cpu_elem(pk));
  c->addr_is_ptr = true;
  return true;
}

// ---------------------------------------------------------------------------
// Stores of tensors (issue 16). The loop runs over the elements the mask can
// let through when the mask is `s + arange < n` (1-D; the rest would store
// nothing: softmax's and layer norm's column tails), and a store whose value
// reads lazy loads (load_lazy_safe let them through because this store is
// their last reader) runs them in its loop when the bytes it writes and the
// bytes they read are apart (compared at run time, cpu_range.c); else, or
// when the addresses are not understood, the loads are first read into
// buffers here, which gives every element its value from before the store.

static zt_status_t store_fn(cpu_t* c, MlirOperation op, char ins[][ZT_CPU_NAME],
                            char outs[][ZT_CPU_NAME]);

static void segments(MlirOperation op, int32_t seg[3]);

#define STORE_MAX_LOADS 16

typedef struct lazy_loads_s {
  MlirValue key[STORE_MAX_LOADS];  // values whose slot holds a lazy load
  int n;
  bool over;
} lazy_loads_t;

static void collect_lazy_loads(cpu_t* c, MlirValue v, lazy_loads_t* ll, int depth) {
  const cpu_val_t* x = cpu_map_get(c, v);
  if (!x || x->kind != CPU_LAZY) return;
  if (depth > 64) {
    ll->over = true;
    return;
  }
  if (cpu_op_is(x->op, "tile.load")) {
    for (int i = 0; i < ll->n; ++i)
      if (mlirValueEqual(ll->key[i], v)) return;
    if (ll->n == STORE_MAX_LOADS) {
      ll->over = true;
      return;
    }
    ll->key[ll->n++] = v;
  }
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(x->op); ++i)
    collect_lazy_loads(c, mlirOperationGetOperand(x->op, i), ll, depth + 1);
}

typedef struct store_body_s {
  MlirOperation op;
  const cpu_val_t** in;
  intptr_t nin;
} store_body_t;

static zt_status_t store_body(cpu_t* c, void* user, const char* iv) {
  store_body_t* sb = user;
  char ins[MAX_OPERANDS][ZT_CPU_NAME], outs[MAX_OPERANDS][ZT_CPU_NAME];
  for (intptr_t i = 1; i < sb->nin; ++i) cpu_read(c, sb->in[i], iv, ins[i]);
  if (!cpu_gep_address(c, sb->in[0], iv, ins[0])) cpu_read(c, sb->in[0], iv, ins[0]);
  zt_status_t e = store_fn(c, sb->op, ins, outs);
  c->addr_is_ptr = false;
  return e;
}

// The store's loop, cut at its own mask's end (the elements after it store
// nothing); a mask read only by the stored value splits the loop but its
// tail still stores (`other`).
static void store_loop(cpu_t* c, MlirOperation op, const cpu_val_t** in, intptr_t nin,
                       int64_t numel, zt_status_t* s) {
  store_body_t sb = {op, in, nin};
  MlirValue roots[MAX_OPERANDS];
  for (intptr_t i = 0; i < nin; ++i) roots[i] = mlirOperationGetOperand(op, i);
  int32_t seg[3];
  segments(op, seg);
  MlirValue mask = {NULL};
  if (seg[2]) mask = mlirOperationGetOperand(op, seg[0] + seg[1]);
  zt_status_t e = cpu_split_loop(c, roots, (int)nin, NULL, numel, mask, store_body, &sb);
  if (e && !*s) *s = e;
  else zt_status_free(e);
}

// The defining op of v if it is `name`, else a null op.
static MlirOperation def_of(MlirValue v, const char* name) {
  MlirOperation null = {NULL};
  if (mlirValueIsNull(v) || !mlirValueIsAOpResult(v)) return null;
  MlirOperation d = mlirOpResultGetOwner(v);
  return cpu_op_is(d, name) ? d : null;
}

static bool is_program_id(MlirValue v) {
  MlirOperation e = def_of(v, "arith.extsi");
  if (!mlirOperationIsNull(e)) v = mlirOperationGetOperand(e, 0);
  return !mlirOperationIsNull(def_of(v, "tile.program_id"));
}

// Whether the lazy pointer tensor p is `splat(P) + off` with P = P0 +
// program_id * s (layer norm's `X += row * stride`): then the next program
// reads the same offsets from P + s elements, and `delta` is set to those
// bytes (an i64).
static bool next_program_delta(cpu_t* c, const cpu_val_t* p, char delta[ZT_CPU_NAME]) {
  if (!p || p->kind != CPU_LAZY || !cpu_op_is(p->op, "tile.addptr") || p->type.rank != 1)
    return false;
  MlirOperation sp = def_of(mlirOperationGetOperand(p->op, 0), "tile.splat");
  if (mlirOperationIsNull(sp)) return false;
  MlirOperation base = def_of(mlirOperationGetOperand(sp, 0), "tile.addptr");
  if (mlirOperationIsNull(base)) return false;
  MlirOperation mul = def_of(mlirOperationGetOperand(base, 1), "arith.muli");
  if (mlirOperationIsNull(mul)) return false;
  MlirValue a = mlirOperationGetOperand(mul, 0), b = mlirOperationGetOperand(mul, 1);
  MlirValue sv = is_program_id(a) ? b : is_program_id(b) ? a : (MlirValue){NULL};
  const cpu_val_t* s = mlirValueIsNull(sv) ? NULL : cpu_map_get(c, sv);
  int64_t bytes = cpu_pointee_bytes(&p->type);
  if (!s || s->kind == CPU_BUFFER || s->kind == CPU_LAZY || s->type.rank != 0 || bytes <= 0 ||
      (s->type.kind != ZT_I32 && s->type.kind != ZT_I64))
    return false;
  char s64[ZT_CPU_NAME], bc[ZT_CPU_NAME];
  if (s->type.kind == ZT_I64) {
    snprintf(s64, sizeof s64, "%s", s->name);
  } else {
    cpu_fresh(c, s64);
    cpu_line(c, "%s = arith.extsi %s : i32 to i64", s64, s->name);
  }
  cpu_fresh(c, bc);
  cpu_line(c, "%s = arith.constant %lld : i64", bc, (long long)bytes);
  cpu_fresh(c, delta);
  cpu_line(c, "%s = arith.muli %s, %s : i64", delta, s64, bc);
  return true;
}

// Why (issue 16, session 19): layer norm reads its row X three times, the
// first from memory; the hardware prefetcher follows X only while X misses,
// so each row's first pass waited on memory (~580 ns a row more than from
// cache, against torch's ~240 on this AVX2 EPYC). The store's pass, the
// last over the row, prefetches the next program's row (one line per 16
// lanes of f32) a whole pass ahead. A prefetch never faults.
void cpu_prefetch_next(cpu_t* c, const char* iv) {
  const cpu_val_t* p = c->pf_ptr;
  if (!p) return;
  const cpu_val_t* base = cpu_map_get(c, mlirOperationGetOperand(p->op, 0));
  const cpu_val_t* off = cpu_map_get(c, mlirOperationGetOperand(p->op, 1));
  if (!base || !off || base->kind == CPU_BUFFER || base->kind == CPU_LAZY) return;
  char o[ZT_CPU_NAME], o64[ZT_CPU_NAME], bp[ZT_CPU_NAME], nb[ZT_CPU_NAME], a[ZT_CPU_NAME];
  cpu_read(c, off, iv, o);
  if (off->type.kind == ZT_I64) {
    snprintf(o64, sizeof o64, "%s", o);
  } else {
    cpu_fresh(c, o64);
    cpu_line(c, "%s = arith.extsi %s : %s to i64", o64, o, cpu_elem(off->type.kind));
  }
  cpu_fresh(c, nb);
  cpu_line(c, "%s = arith.addi %s, %s : i64", nb, base->name, c->pf_delta);
  cpu_fresh(c, bp);
  cpu_line(c, "%s = llvm.inttoptr %s : i64 to !llvm.ptr", bp, nb);
  cpu_fresh(c, a);
  zt_scalar_kind_t pk = p->type.pointee;
  cpu_line(c, "%s = llvm.getelementptr %s[%s] : (!llvm.ptr, i64) -> !llvm.ptr, %s", a, bp, o64,
           pk == ZT_I1 ? "i8" : cpu_elem(pk));
  cpu_line(c,
           "\"llvm.intr.prefetch\"(%s) <{cache = 1 : i32, hint = 3 : i32, rw = 0 : i32}> : "
           "(!llvm.ptr) -> ()",
           a);
}

// Why every pass over the row and not the store's alone (issue 16, session
// 21): layer norm's store pass was ~45% of its time (perf), waiting on Y's
// lines from memory (read for ownership) while it also fetched the next
// row; its two reduction passes read the row from cache and left memory
// idle. With the next row prefetched from the first pass on, its lines are
// asked for a pass or two earlier and the store pass is left Y's alone; the
// later passes' prefetches hit L1. One thread, AVX2 EPYC, alternated: 3.54-
// 3.72 -> 3.38-3.53 ms, torch/zetile 0.89-0.92 -> 0.92-1.02; prefetching in
// the reduction passes only (not the store's) 3.50-3.62.
bool cpu_prefetch_pick(cpu_t* c, const MlirValue* roots, int nroots, const cpu_val_t* root) {
  if (c->pf_ptr) return false;
  lazy_loads_t ll = {.n = 0};
  for (int i = 0; i < nroots; ++i) collect_lazy_loads(c, roots[i], &ll, 0);
  if (root && root->kind == CPU_LAZY)
    for (intptr_t i = 0; i < mlirOperationGetNumOperands(root->op); ++i)
      collect_lazy_loads(c, mlirOperationGetOperand(root->op, i), &ll, 0);
  // f32 and wider: a 16-lane block is at least a 64-byte line.
  for (int j = 0; j < ll.n; ++j) {
    const cpu_val_t* l = cpu_map_get(c, ll.key[j]);
    const cpu_val_t* la = cpu_map_get(c, mlirOperationGetOperand(l->op, 0));
    if (la && cpu_pointee_bytes(&la->type) >= 4 && next_program_delta(c, la, c->pf_delta)) {
      c->pf_ptr = la;
      return true;
    }
  }
  return false;
}

static zt_status_t emit_store(cpu_t* c, MlirOperation op, const cpu_val_t** in,
                              intptr_t nin, int64_t numel, zt_type_t shape) {
  (void)shape;
  lazy_loads_t ll = {.n = 0};
  for (intptr_t i = 1; i < nin; ++i)
    collect_lazy_loads(c, mlirOperationGetOperand(op, i), &ll, 0);
  zt_status_t s = NULL;
  cpu_nt_t nt;
  if (!ll.n) {
    if (cpu_nt_eligible(c, op, in, nin, numel, &nt)) c->nt = &nt;
    store_loop(c, op, in, nin, numel, &s);
    c->nt = NULL;
    return s;
  }
  if (ll.over)
    return cpu_op_error(op, ZT_STATUS_INTERNAL, "too many lazy loads in a stored value");
  zt_type_t vt;
  ZT_RETURN_IF_ERROR(cpu_value_type(mlirOperationGetOperand(op, 1), &vt));
  char ok[ZT_CPU_NAME] = "";
  bool checked = true;
  for (int j = 0; j < ll.n && checked; ++j) {
    const cpu_val_t* l = cpu_map_get(c, ll.key[j]);
    const cpu_val_t* la = cpu_map_get(c, mlirOperationGetOperand(l->op, 0));
    zt_type_t lt;
    checked = la && !cpu_value_type(mlirOperationGetResult(l->op, 0), &lt) &&
              cpu_ranges_disjoint(c, in[0], zt_tile_kind_bytes(vt.kind), la,
                                  zt_tile_kind_bytes(lt.kind), ok);
  }
  checked = checked && ok[0];
  if (checked) {
    cpu_line(c, "scf.if %s {", ok);
    ++c->indent;
    // f32 and wider: a 16-lane block is at least a 64-byte line.
    for (int j = 0; j < ll.n && !c->pf_ptr && zt_tile_kind_bytes(vt.kind) >= 4; ++j) {
      const cpu_val_t* l = cpu_map_get(c, ll.key[j]);
      const cpu_val_t* la = cpu_map_get(c, mlirOperationGetOperand(l->op, 0));
      if (cpu_pointee_bytes(&la->type) >= 4 && next_program_delta(c, la, c->pf_delta))
        c->pf_ptr = la;
    }
    if (cpu_nt_eligible(c, op, in, nin, numel, &nt)) c->nt = &nt;
    store_loop(c, op, in, nin, numel, &s);
    c->nt = NULL;
    c->pf_ptr = NULL;
    --c->indent;
    cpu_line(c, "} else {");
    ++c->indent;
  }
  // The loads' slots hold buffers while the store reads them (in[] point
  // into the slots), then their lazy selves again. Behind the run-time
  // check this path runs only for overlapping arguments: plain loops (fewer
  // for LLVM to compile).
  bool no_split = c->no_split;
  if (checked) c->no_split = true;
  cpu_val_t saved[STORE_MAX_LOADS];
  int done = 0;
  for (; done < ll.n && !s; ++done) {
    const cpu_val_t* l = cpu_map_get(c, ll.key[done]);
    saved[done] = *l;
    const cpu_val_t* m;
    s = cpu_materialize(c, l, &m);
    if (s) break;
    cpu_val_t mv = *m;
    s = cpu_map_put(c, ll.key[done], &mv);
  }
  if (!s) store_loop(c, op, in, nin, numel, &s);
  for (int j = 0; j < done; ++j) {
    zt_status_t e = cpu_map_put(c, ll.key[j], &saved[j]);
    if (e && !s) s = e;
    else zt_status_free(e);
  }
  c->no_split = no_split;
  if (checked) {
    --c->indent;
    cpu_line(c, "}");
  }
  return s;
}

// ---------------------------------------------------------------------------
// Elementwise driver: runs `fn` once on scalars (when no operand lives in a
// buffer, the results are splats) or once per element in a loop.

typedef struct elem_body_s {
  MlirOperation op;
  elem_fn fn;
  const cpu_val_t** in;
  intptr_t nin, nout;
  cpu_val_t* res;  // emit_row_load may mark res[0] for a dot to read in place
} elem_body_t;

static zt_status_t elem_body(cpu_t* c, void* user, const char* iv) {
  elem_body_t* eb = user;
  char ins[MAX_OPERANDS][ZT_CPU_NAME], outs[MAX_OPERANDS][ZT_CPU_NAME];
  MlirOperation op = eb->op;
  bool mem = cpu_op_is(op, "tile.load") || cpu_op_is(op, "tile.store") ||
             cpu_op_is(op, "tile.atomic_rmw") || cpu_op_is(op, "tile.atomic_cas");
  // The address last (see cpu_read_lazy: a lazy load among the other
  // operands clears addr_is_ptr).
  for (intptr_t i = 1; i < eb->nin; ++i) cpu_read(c, eb->in[i], iv, ins[i]);
  if (eb->nin > 0 && !(mem && cpu_gep_address(c, eb->in[0], iv, ins[0])))
    cpu_read(c, eb->in[0], iv, ins[0]);
  zt_status_t s = eb->fn(c, op, ins, outs);
  c->addr_is_ptr = false;
  if (!s)
    for (intptr_t i = 0; i < eb->nout; ++i) cpu_write(c, eb->res[i].buf, iv, outs[i]);
  return s;
}

// A load through a tensor of addresses held in a buffer (issue 16: the
// tutorial matmul's `a_ptrs`, carried through its k loop) reads every
// address from memory and gathers one element at a time. Rows whose
// addresses are consecutive (p[i][j] == p[i][0] + j * bytes, checked at run
// time over the whole tile: an or of the differences) are loaded from the
// row's first address instead, where LLVM sees consecutive addresses
// (vector and masked vector loads); any other tile takes the gather. The
// check costs one read of the addresses, a few vector ops per 8 of them.
int64_t cpu_pointee_bytes(const zt_type_t* t) {
  return t->pointee == ZT_I1 ? 1 : zt_tile_kind_bytes(t->pointee);
}

void cpu_rows_check(cpu_t* c, const cpu_val_t* p, int64_t bytes, char ok[ZT_CPU_NAME]) {
  int64_t cols = p->type.shape[p->type.rank - 1], rows = 1;
  for (int d = 0; d + 1 < p->type.rank; ++d) rows *= p->type.shape[d];
  char c0[ZT_CPU_NAME], cr[ZT_CPU_NAME], cc[ZT_CPU_NAME], c1[ZT_CPU_NAME],
      ek[ZT_CPU_NAME], z[ZT_CPU_NAME], acc[ZT_CPU_NAME];
  cpu_index(c, 0, c0);
  cpu_index(c, rows, cr);
  cpu_index(c, cols, cc);
  cpu_index(c, 1, c1);
  cpu_zero(c, ZT_I64, z);
  cpu_fresh(c, ek);
  cpu_line(c, "%s = arith.constant %lld : i64", ek, (long long)bytes);
  // acc = or over i, j of p[i][j] ^ (p[i][0] + j * bytes).
  char i[ZT_CPU_NAME], a[ZT_CPU_NAME], r0[ZT_CPU_NAME], b0[ZT_CPU_NAME];
  cpu_fresh(c, acc);
  snprintf(i, sizeof i, "%%i%d", c->next_id++);
  cpu_fresh(c, a);
  cpu_line(c, "%s = scf.for %s = %s to %s step %s iter_args(%s = %s) -> (i64) {", acc, i,
           c0, cr, c1, a, z);
  ++c->indent;
  cpu_fresh(c, r0);
  cpu_line(c, "%s = arith.muli %s, %s : index", r0, i, cc);
  cpu_read(c, p, r0, b0);
  char j[ZT_CPU_NAME], a2[ZT_CPU_NAME], racc[ZT_CPU_NAME], idx[ZT_CPU_NAME],
      x[ZT_CPU_NAME], j64[ZT_CPU_NAME], off[ZT_CPU_NAME], want[ZT_CPU_NAME],
      d[ZT_CPU_NAME], o[ZT_CPU_NAME];
  cpu_fresh(c, racc);
  snprintf(j, sizeof j, "%%i%d", c->next_id++);
  cpu_fresh(c, a2);
  cpu_line(c, "%s = scf.for %s = %s to %s step %s iter_args(%s = %s) -> (i64) {", racc, j,
           c0, cc, c1, a2, a);
  ++c->indent;
  cpu_fresh(c, idx);
  cpu_line(c, "%s = arith.addi %s, %s : index", idx, r0, j);
  cpu_read(c, p, idx, x);
  cpu_fresh(c, j64);
  cpu_line(c, "%s = arith.index_cast %s : index to i64", j64, j);
  cpu_fresh(c, off);
  cpu_line(c, "%s = arith.muli %s, %s : i64", off, j64, ek);
  cpu_fresh(c, want);
  cpu_line(c, "%s = arith.addi %s, %s : i64", want, b0, off);
  cpu_fresh(c, d);
  cpu_line(c, "%s = arith.xori %s, %s : i64", d, x, want);
  cpu_fresh(c, o);
  cpu_line(c, "%s = arith.ori %s, %s : i64", o, a2, d);
  cpu_line(c, "scf.yield %s : i64", o);
  cpu_loop_end_lanes(c);
  cpu_line(c, "scf.yield %s : i64", racc);
  cpu_loop_end(c);
  cpu_fresh(c, ok);
  cpu_line(c, "%s = arith.cmpi eq, %s, %s : i64", ok, acc, z);
}

// The load's only reader is a tile.dot (as its a) later in its block, and
// no op between them writes memory: that dot may read the loaded rows where
// they are instead of from a copy (cpu_dot.c; issue 16).
static bool dot_reads_in_place(cpu_t* c, MlirOperation load, const zt_type_t* t) {
  if (c->bounds || c->no_split || t->rank != 2 || (t->kind != ZT_F32 && t->kind != ZT_F16))
    return false;
  MlirOpOperand u = mlirValueGetFirstUse(mlirOperationGetResult(load, 0));
  if (mlirOpOperandIsNull(u) || !mlirOpOperandIsNull(mlirOpOperandGetNextUse(u))) return false;
  MlirOperation dot = mlirOpOperandGetOwner(u);
  if (!cpu_op_is(dot, "tile.dot") || mlirOpOperandGetOperandNumber(u) != 0 ||
      !mlirBlockEqual(mlirOperationGetBlock(dot), mlirOperationGetBlock(load)))
    return false;
  for (MlirOperation w = mlirOperationGetNextInBlock(load); !mlirOperationEqual(w, dot);
       w = mlirOperationGetNextInBlock(w))
    if (mlirOperationIsNull(w) || writes_memory(w)) return false;
  return true;
}

// An i1: every element of the load's mask is true (true without a mask).
static void mask_all_true(cpu_t* c, elem_body_t* eb, int64_t numel, char out[ZT_CPU_NAME]) {
  int32_t seg[3];
  segments(eb->op, seg);
  const cpu_val_t* m = seg[1] && eb->nin > 1 ? eb->in[1] : NULL;
  if (m && (m->kind == CPU_SCALAR || m->kind == CPU_SPLAT)) {
    snprintf(out, ZT_CPU_NAME, "%s", m->name);
    return;
  }
  char t[ZT_CPU_NAME];
  cpu_fresh(c, t);
  cpu_line(c, "%s = arith.constant true", t);
  if (!m) {
    snprintf(out, ZT_CPU_NAME, "%s", t);
    return;
  }
  char c0[ZT_CPU_NAME], cn[ZT_CPU_NAME], c1[ZT_CPU_NAME], i[ZT_CPU_NAME], a[ZT_CPU_NAME],
      x[ZT_CPU_NAME], y[ZT_CPU_NAME];
  cpu_fresh(c, out);
  snprintf(i, sizeof i, "%%i%d", c->next_id++);
  cpu_fresh(c, a);
  cpu_line(c, "%s = scf.for %s = %s to %s step %s iter_args(%s = %s) -> (i1) {", out, i,
           cpu_index(c, 0, c0), cpu_index(c, numel, cn), cpu_index(c, 1, c1), a, t);
  ++c->indent;
  cpu_read(c, m, i, x);
  cpu_fresh(c, y);
  cpu_line(c, "%s = arith.andi %s, %s : i1", y, a, x);
  cpu_line(c, "scf.yield %s : i1", y);
  cpu_loop_end_lanes(c);
}

// The row that starts at bp, moved by `step` bytes (the next iteration's
// row of a carried pointer tensor; NULL: bp is already that row, as for
// block loads, cpu_block.c), prefetched into L1: every 64-byte line from
// its first to its last byte. Why (issue 16, session 17): the
// tutorial matmul's b tile is 32 rows a matrix row apart, new every k step;
// on this AVX2 EPYC its copy into the tile buffer waited on those rows
// (~38% of the kernel at 1024^3, perf). Prefetched one step ahead they have
// the whole dot to arrive: 1024^3 32x32 tiles 135 -> 114 ms, 64x64 105 ->
// 89 ms (prefetcht1: no better; prefetchnta: slower).
void cpu_prefetch_row(cpu_t* c, const char* bp, const char* step, int64_t row_bytes) {
  for (int64_t off = 0; off < row_bytes + 63; off += 64) {
    int64_t o = off < row_bytes ? off : row_bytes - 1;  // the last line, if not yet
    if (off >= row_bytes && (row_bytes - 1) % 64 == 0) break;
    char oc[ZT_CPU_NAME], at[ZT_CPU_NAME], g[ZT_CPU_NAME];
    cpu_fresh(c, oc);
    cpu_line(c, "%s = arith.constant %lld : i64", oc, (long long)o);
    if (step) {
      cpu_fresh(c, at);
      cpu_line(c, "%s = arith.addi %s, %s : i64", at, step, oc);
    } else {
      snprintf(at, sizeof at, "%s", oc);
    }
    cpu_fresh(c, g);
    cpu_line(c, "%s = llvm.getelementptr %s[%s] : (!llvm.ptr, i64) -> !llvm.ptr, i8", g, bp, at);
    cpu_line(c,
             "\"llvm.intr.prefetch\"(%s) <{cache = 1 : i32, hint = 3 : i32, rw = 0 : i32}> : "
             "(!llvm.ptr) -> ()",
             g);
  }
}

static zt_status_t emit_row_load(cpu_t* c, elem_body_t* eb, const zt_type_t* shape,
                                 int64_t numel, bool* done) {
  *done = false;
  const cpu_val_t* p = eb->in[0];
  int64_t cols = shape->shape[shape->rank - 1];
  if (p->kind != CPU_BUFFER || shape->rank < 2 || cols < CPU_ROW_LOAD_MIN || c->no_split)
    return NULL;
  int64_t rows = numel / cols;
  int64_t bytes = cpu_pointee_bytes(&p->type);
  if (bytes <= 0) return NULL;
  *done = true;
  char ty[96], cc[ZT_CPU_NAME], ok[ZT_CPU_NAME] = "";
  cpu_buf_type(c, p->buf, ty, sizeof ty);
  cpu_index(c, cols, cc);
  // A carried tensor moved by uniform steps was checked before its loop.
  MlirValue pv = mlirOperationGetOperand(eb->op, 0);
  const char* step = NULL;  // bytes to the next iteration's rows, if known
  for (int32_t k = 0; k < c->num_rows_ok && !ok[0]; ++k)
    if (mlirValueEqual(c->rows_arg[k], pv)) {
      snprintf(ok, sizeof ok, "%s", c->rows_ok[k]);
      ++c->rows_loads[k];
      if (c->rows_step[k][0]) step = c->rows_step[k];
    }
  if (!ok[0]) cpu_rows_check(c, p, bytes, ok);
  // Read in place by its dot when the rows are consecutive and the mask all
  // true: then nothing is copied here (cpu_val_t.rows_ok).
  const bool in_place = dot_reads_in_place(c, eb->op, shape);
  char fast[ZT_CPU_NAME] = "";
  if (in_place) {
    char all[ZT_CPU_NAME], t[ZT_CPU_NAME], slow[ZT_CPU_NAME];
    mask_all_true(c, eb, numel, all);
    cpu_fresh(c, fast);
    cpu_line(c, "%s = arith.andi %s, %s : i1", fast, ok, all);
    cpu_fresh(c, t);
    cpu_line(c, "%s = arith.constant true", t);
    cpu_fresh(c, slow);
    cpu_line(c, "%s = arith.xori %s, %s : i1", slow, fast, t);
    cpu_line(c, "scf.if %s {", slow);
    ++c->indent;
  }
  cpu_line(c, "scf.if %s {", ok);
  ++c->indent;
  // Rows from their first address.
  char ri[ZT_CPU_NAME], rj[ZT_CPU_NAME], rb[ZT_CPU_NAME], ra[ZT_CPU_NAME],
      bp[ZT_CPU_NAME], idx[ZT_CPU_NAME], j64[ZT_CPU_NAME], addr[ZT_CPU_NAME];
  char ins[MAX_OPERANDS][ZT_CPU_NAME], outs[MAX_OPERANDS][ZT_CPU_NAME];
  zt_status_t s = NULL;
  cpu_loop_begin(c, rows, ri);
  cpu_fresh(c, rb);
  cpu_line(c, "%s = arith.muli %s, %s : index", rb, ri, cc);
  cpu_fresh(c, ra);
  cpu_line(c, "%s = memref.load %s[%s] : %s", ra, p->name, rb, ty);
  cpu_fresh(c, bp);
  cpu_line(c, "%s = llvm.inttoptr %s : i64 to !llvm.ptr", bp, ra);
  if (step) cpu_prefetch_row(c, bp, step, cols * bytes);
  cpu_loop_begin(c, cols, rj);
  cpu_fresh(c, idx);
  cpu_line(c, "%s = arith.addi %s, %s : index", idx, rb, rj);
  for (intptr_t k = 1; k < eb->nin; ++k) cpu_read(c, eb->in[k], idx, ins[k]);
  cpu_fresh(c, j64);
  cpu_line(c, "%s = arith.index_cast %s : index to i64", j64, rj);
  cpu_fresh(c, addr);
  zt_scalar_kind_t pk = p->type.pointee;
  cpu_line(c, "%s = llvm.getelementptr %s[%s] : (!llvm.ptr, i64) -> !llvm.ptr, %s", addr,
           bp, j64, pk == ZT_I1 ? "i8" : cpu_elem(pk));
  snprintf(ins[0], ZT_CPU_NAME, "%s", addr);
  c->addr_is_ptr = true;
  s = eb->fn(c, eb->op, ins, outs);
  c->addr_is_ptr = false;
  if (!s) cpu_write(c, eb->res[0].buf, idx, outs[0]);
  cpu_loop_end_lanes(c);
  cpu_loop_end(c);
  --c->indent;
  cpu_line(c, "} else {");
  ++c->indent;
  if (!s) {
    char iv[ZT_CPU_NAME];
    cpu_loop_begin(c, numel, iv);
    s = elem_body(c, eb, iv);
    cpu_loop_end(c);
  }
  --c->indent;
  cpu_line(c, "}");
  if (in_place) {
    --c->indent;
    cpu_line(c, "}");
    snprintf(eb->res[0].rows_ok, ZT_CPU_NAME, "%s", fast);
    snprintf(eb->res[0].rows_ptr, ZT_CPU_NAME, "%s", p->name);
    eb->res[0].rows_ptr_buf = p->buf;
  }
  return s;
}

static zt_status_t emit_elementwise(cpu_t* c, MlirOperation op, elem_fn fn,
                                    bool pure) {
  intptr_t nin = mlirOperationGetNumOperands(op);
  intptr_t nout = mlirOperationGetNumResults(op);
  if (nin > MAX_OPERANDS || nout > MAX_OPERANDS)
    return cpu_op_error(op, ZT_STATUS_UNSUPPORTED, "too many operands");
  const cpu_val_t* in[MAX_OPERANDS];
  zt_type_t out_types[MAX_OPERANDS];
  bool any_buffer = false;
  int64_t numel = 1;
  zt_type_t shape_type = {0};
  for (intptr_t i = 0; i < nin; ++i) {
    ZT_RETURN_IF_ERROR(cpu_get(c, mlirOperationGetOperand(op, i), &in[i]));
    if (in[i]->kind == CPU_BUFFER || in[i]->kind == CPU_LAZY) {
      any_buffer = true;
      shape_type = in[i]->type;
    }
    if (in[i]->type.rank > 0 && shape_type.rank == 0) shape_type = in[i]->type;
  }
  for (intptr_t i = 0; i < nout; ++i) {
    zt_status_t s = cpu_value_type(mlirOperationGetResult(op, i), &out_types[i]);
    if (s) return cpu_op_error(op, ZT_STATUS_UNSUPPORTED, "%s", zt_status_message(s));
    if (out_types[i].rank > 0) shape_type = out_types[i];
  }
  for (int d = 0; d < shape_type.rank; ++d) numel *= shape_type.shape[d];
  char ins[MAX_OPERANDS][ZT_CPU_NAME], outs[MAX_OPERANDS][ZT_CPU_NAME];
  cpu_val_t res[MAX_OPERANDS];
  if (!any_buffer) {
    for (intptr_t i = 0; i < nin; ++i) snprintf(ins[i], ZT_CPU_NAME, "%s", in[i]->name);
    ZT_RETURN_IF_ERROR(fn(c, op, ins, outs));
    for (intptr_t i = 0; i < nout; ++i) {
      memset(&res[i], 0, sizeof res[i]);
      res[i].kind = out_types[i].rank ? CPU_SPLAT : CPU_SCALAR;
      res[i].type = out_types[i];
      snprintf(res[i].name, ZT_CPU_NAME, "%s", outs[i]);
      ZT_RETURN_IF_ERROR(cpu_map_put(c, mlirOperationGetResult(op, i), &res[i]));
    }
    return NULL;
  }
  if ((pure || (cpu_op_is(op, "tile.load") && load_lazy_safe(op))) && nout == 1) {
    int32_t cost = lazy_op_cost(op);
    for (intptr_t i = 0; i < nin; ++i)
      if (in[i]->kind == CPU_LAZY) cost += in[i]->cost;
    MlirValue r = mlirOperationGetResult(op, 0);
    if (lazy_ok(op, r, cost)) {
      cpu_val_t v = {.kind = CPU_LAZY, .type = out_types[0], .op = op, .cost = cost};
      snprintf(v.name, ZT_CPU_NAME, "<lazy>");
      return cpu_map_put(c, r, &v);
    }
  }
  if (cpu_op_is(op, "tile.store")) return emit_store(c, op, in, nin, numel, shape_type);
  for (intptr_t i = 0; i < nout; ++i)
    ZT_RETURN_IF_ERROR(cpu_new_buf_val(c, out_types[i], &res[i]));
  elem_body_t eb = {op, fn, in, nin, nout, res};
  zt_status_t s;
  bool atomic = cpu_op_is(op, "tile.atomic_rmw") || cpu_op_is(op, "tile.atomic_cas");
  bool rows_done = false;
  if (cpu_op_is(op, "tile.load") && nout == 1 &&
      (s = emit_row_load(c, &eb, &shape_type, numel, &rows_done)) != NULL)
    return s;
  if (rows_done) {
    s = NULL;
  } else if (shape_type.rank == 1 && !atomic) {
    MlirValue roots[MAX_OPERANDS];
    for (intptr_t i = 0; i < nin; ++i) roots[i] = mlirOperationGetOperand(op, i);
    s = cpu_split_loop(c, roots, (int)nin, NULL, numel, (MlirValue){NULL}, elem_body, &eb);
  } else {
    char iv[ZT_CPU_NAME];
    cpu_loop_begin(c, numel, iv);
    s = elem_body(c, &eb, iv);
    cpu_loop_end(c);
  }
  (void)ins;
  (void)outs;
  ZT_RETURN_IF_ERROR(s);
  for (intptr_t i = 0; i < nout; ++i)
    ZT_RETURN_IF_ERROR(cpu_map_put(c, mlirOperationGetResult(op, i), &res[i]));
  return NULL;
}

// The op itself on scalars, in generic form with its attributes.
static zt_status_t generic_fn(cpu_t* c, MlirOperation op,
                              char ins[][ZT_CPU_NAME], char outs[][ZT_CPU_NAME]) {
  intptr_t nin = mlirOperationGetNumOperands(op);
  intptr_t nout = mlirOperationGetNumResults(op);
  zt_strbuf_t* b = &c->body;
  char base[ZT_CPU_NAME];
  cpu_fresh(c, base);
  for (int i = 0; i < c->indent; ++i) zt_strbuf_append(b, "  ", 2);
  if (nout == 1) zt_strbuf_printf(b, "%s = ", base);
  if (nout > 1) zt_strbuf_printf(b, "%s:%d = ", base, (int)nout);
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  zt_strbuf_printf(b, "\"%.*s\"(", (int)n.length, n.data);
  for (intptr_t i = 0; i < nin; ++i) zt_strbuf_printf(b, "%s%s", i ? ", " : "", ins[i]);
  zt_strbuf_puts(b, ")");
  intptr_t na = mlirOperationGetNumAttributes(op);
  for (intptr_t i = 0; i < na; ++i) {
    MlirNamedAttribute a = mlirOperationGetAttribute(op, i);
    MlirStringRef an = mlirIdentifierStr(a.name);
    zt_strbuf_printf(b, "%s%.*s = ", i ? ", " : " {", (int)an.length, an.data);
    mlirAttributePrint(a.attribute, append_cb, b);
    if (i == na - 1) zt_strbuf_puts(b, "}");
  }
  zt_strbuf_puts(b, " : (");
  for (intptr_t i = 0; i < nin; ++i) {
    zt_type_t t;
    ZT_RETURN_IF_ERROR(cpu_value_type(mlirOperationGetOperand(op, i), &t));
    zt_strbuf_printf(b, "%s%s", i ? ", " : "", cpu_elem(t.kind));
  }
  zt_strbuf_puts(b, ") -> (");
  for (intptr_t i = 0; i < nout; ++i) {
    zt_type_t t;
    ZT_RETURN_IF_ERROR(cpu_value_type(mlirOperationGetResult(op, i), &t));
    zt_strbuf_printf(b, "%s%s", i ? ", " : "", cpu_elem(t.kind));
    if (nout == 1)
      snprintf(outs[i], ZT_CPU_NAME, "%s", base);
    else
      snprintf(outs[i], ZT_CPU_NAME, "%s#%d", base, (int)i);
  }
  zt_strbuf_puts(b, ")\n");
  return NULL;
}

// Integer division and remainder never trap. x86 raises SIGFPE for a zero
// divisor and for INT_MIN / -1, which would kill the user's process; GPUs
// return some value instead, and Triton kernels do divide in masked-off lanes
// (whose loaded values are unspecified: zero here). So the divisor becomes 1
// where it is 0 or, for signed ops, where the quotient overflows: x / 0 = x,
// x % 0 = 0, INT_MIN / -1 = INT_MIN (= -INT_MIN, wrapped), INT_MIN % -1 = 0,
// which are also what those ops return on the GPU backends we compare with.
static bool is_int_division(MlirOperation op, bool* is_signed) {
  static const char* const sdiv[] = {"arith.divsi", "arith.remsi", "arith.floordivsi",
                                     "arith.ceildivsi"};
  static const char* const udiv[] = {"arith.divui", "arith.remui", "arith.ceildivui"};
  for (size_t i = 0; i < sizeof sdiv / sizeof sdiv[0]; ++i)
    if (cpu_op_is(op, sdiv[i])) return *is_signed = true;
  for (size_t i = 0; i < sizeof udiv / sizeof udiv[0]; ++i)
    if (cpu_op_is(op, udiv[i])) {
      *is_signed = false;
      return true;
    }
  return false;
}

// A divisor that is a constant (or a splat or broadcast of one: `x // 16`,
// `offs % 7` with a constexpr) stays an integer op: LLVM turns it into shifts
// or a multiply by a magic number, cheaper than the f64 division.
static bool constant_divisor(MlirOperation op) {
  MlirValue v = mlirOperationGetOperand(op, 1);
  for (int depth = 0; depth < 8 && mlirValueIsAOpResult(v); ++depth) {
    MlirOperation d = mlirOpResultGetOwner(v);
    if (cpu_op_is(d, "arith.constant")) return true;
    if (!cpu_op_is(d, "tile.splat") && !cpu_op_is(d, "tile.broadcast")) return false;
    v = mlirOperationGetOperand(d, 0);
  }
  return false;
}

static zt_status_t safe_div_fn(cpu_t* c, MlirOperation op, char ins[][ZT_CPU_NAME],
                               char outs[][ZT_CPU_NAME]) {
  bool is_signed = false;
  is_int_division(op, &is_signed);
  zt_type_t t;
  ZT_RETURN_IF_ERROR(cpu_value_type(mlirOperationGetResult(op, 0), &t));
  const char* ty = cpu_elem(t.kind);
  int bits = zt_tile_kind_bytes(t.kind) * 8;
  char z[ZT_CPU_NAME], one[ZT_CPU_NAME], bad[ZT_CPU_NAME];
  cpu_zero(c, t.kind, z);
  cpu_fresh(c, bad);
  cpu_line(c, "%s = arith.cmpi eq, %s, %s : %s", bad, ins[1], z, ty);
  if (is_signed && t.kind != ZT_I1) {
    char mn[ZT_CPU_NAME], m1[ZT_CPU_NAME], amin[ZT_CPU_NAME], bm1[ZT_CPU_NAME],
        ovf[ZT_CPU_NAME], any[ZT_CPU_NAME];
    cpu_fresh(c, mn);
    if (bits == 64)
      cpu_line(c, "%s = arith.constant -9223372036854775808 : i64", mn);
    else
      cpu_line(c, "%s = arith.constant %lld : %s", mn, -(1LL << (bits - 1)), ty);
    cpu_fresh(c, m1);
    cpu_line(c, "%s = arith.constant -1 : %s", m1, ty);
    cpu_fresh(c, amin);
    cpu_line(c, "%s = arith.cmpi eq, %s, %s : %s", amin, ins[0], mn, ty);
    cpu_fresh(c, bm1);
    cpu_line(c, "%s = arith.cmpi eq, %s, %s : %s", bm1, ins[1], m1, ty);
    cpu_fresh(c, ovf);
    cpu_line(c, "%s = arith.andi %s, %s : i1", ovf, amin, bm1);
    cpu_fresh(c, any);
    cpu_line(c, "%s = arith.ori %s, %s : i1", any, bad, ovf);
    snprintf(bad, sizeof bad, "%s", any);
  }
  cpu_fresh(c, one);
  cpu_line(c, "%s = arith.constant %s : %s", one, t.kind == ZT_I1 ? "true" : "1", ty);
  char safe[2][ZT_CPU_NAME];
  snprintf(safe[0], ZT_CPU_NAME, "%s", ins[0]);
  cpu_fresh(c, safe[1]);
  cpu_line(c, "%s = arith.select %s, %s, %s : %s", safe[1], bad, one, ins[1], ty);
  bool rem = cpu_op_is(op, "arith.remsi") || cpu_op_is(op, "arith.remui");
  bool quo = cpu_op_is(op, "arith.divsi") || cpu_op_is(op, "arith.divui");
  if ((rem || quo) && (t.kind == ZT_I8 || t.kind == ZT_I16 || t.kind == ZT_I32) &&
      !constant_divisor(op)) {
    cpu_div_f64(c, safe[0], safe[1], ty, is_signed, rem, outs[0]);
    return NULL;
  }
  return generic_fn(c, op, safe, outs);
}

// Quotient or remainder of integers of at most 32 bits through f64: x86 has
// no vector integer division, so `offs % M` over a tensor was one scalar
// idiv per element (the tutorial matmul's two 32-element `% M` / `% N`
// rows: ~12% of its profile at 512^3, one thread). trunc(x / d) taken from
// the f64 quotient is exact: x and d are exact in f64; when d divides x the
// quotient is an integer below 2^32 and exact; otherwise the exact quotient
// lies at least 1/|d| from every integer, while rounding moves it by at most
// |x / d| * 2^-53 < 1/|d| (|x| < 2^32), so it never reaches the integer that
// would change the truncation. The remainder is x - q * d in the integer
// type (exact: |q * d| <= |x|). d is never 0 here (safe_div_fn). Constant
// divisors keep the integer op (constant_divisor).
void cpu_div_f64(cpu_t* c, const char* x, const char* d, const char* ty, bool is_signed,
                 bool rem, char out[ZT_CPU_NAME]) {
  const char* to = is_signed ? "sitofp" : "uitofp";
  char xf[ZT_CPU_NAME], df[ZT_CPU_NAME], qf[ZT_CPU_NAME], q[ZT_CPU_NAME];
  cpu_fresh(c, xf);
  cpu_line(c, "%s = arith.%s %s : %s to f64", xf, to, x, ty);
  cpu_fresh(c, df);
  cpu_line(c, "%s = arith.%s %s : %s to f64", df, to, d, ty);
  cpu_fresh(c, qf);
  cpu_line(c, "%s = arith.divf %s, %s : f64", qf, xf, df);
  cpu_fresh(c, q);
  cpu_line(c, "%s = arith.%s %s : f64 to %s", q, is_signed ? "fptosi" : "fptoui", qf, ty);
  if (!rem) {
    snprintf(out, ZT_CPU_NAME, "%s", q);
    return;
  }
  char m[ZT_CPU_NAME];
  cpu_fresh(c, m);
  cpu_line(c, "%s = arith.muli %s, %s : %s", m, q, d, ty);
  cpu_fresh(c, out);
  cpu_line(c, "%s = arith.subi %s, %s : %s", out, x, m, ty);
}

// exp on f32 without a call (cpu_math.c: vectorizes; libmvec's expf is slow
// on the -inf padding of masked rows).
static zt_status_t exp_f32_fn(cpu_t* c, MlirOperation op, char ins[][ZT_CPU_NAME],
                              char outs[][ZT_CPU_NAME]) {
  (void)op;
  cpu_exp_f32(c, ins[0], outs[0]);
  return NULL;
}

static bool is_exp_f32(MlirOperation op) {
  if (!cpu_op_is(op, "math.exp") || mlirOperationGetNumResults(op) != 1) return false;
  zt_type_t t;
  zt_status_t s = cpu_value_type(mlirOperationGetResult(op, 0), &t);
  bool ok = !s && t.kind == ZT_F32;
  zt_status_free(s);
  return ok;
}

// f32 division by a uniform divisor (softmax's e / sum(e)) is the plain
// f32 divf (vdivps). The x * (1/d)-in-f64 form with one FMA correction
// (6659a8b) was exact but slower than vdivps on AVX-512: two f32<->f64
// conversions, a multiply, two FMAs, a compare and a select per 8 lanes,
// twice over per 16. 4096 rows x 781, one thread: a row divided by its sum
// took 1.17-1.18x the time of the same row divided by a loaded tensor times
// the sum (vdivps) with the f64 form, 0.95-0.97x with vdivps (issue 16, h4b).
// On the AVX2 EPYC (session 18) the form without the correction measured
// the same as vdivps (the loop waits on its stores to memory) and is not
// exact anyway: a quotient exactly halfway between two subnormal f32
// numbers (test_division_by_uniform_breaks_exact_ties_to_even) comes out of
// the f64 product a little off the tie and rounds the wrong way.

// arith.maxnumf / minnumf on f32 and f64 as llvm.intr.maxnum / minnum.
// Left to arith-expand they become two compares and two selects, and in a
// reduction's partial row (acc = max(acc, x) on a stack buffer) LLVM turns
// "store (x or acc) back to acc's address" into a masked store: on the AVX2
// EPYC (issue 16, session 18) softmax 4096x781 spent ~29% of its time on
// the row max's vmaskmovps stores. The intrinsic is the same operation (NaN
// operands ignored) and x86 selects it as vmaxps, vcmpunordps, vblendvps.
static zt_status_t minmax_num_fn(cpu_t* c, MlirOperation op, char ins[][ZT_CPU_NAME],
                                 char outs[][ZT_CPU_NAME]) {
  zt_type_t t;
  ZT_RETURN_IF_ERROR(cpu_value_type(mlirOperationGetResult(op, 0), &t));
  const char* ty = cpu_elem(t.kind);
  cpu_fresh(c, outs[0]);
  cpu_line(c, "%s = llvm.intr.%s(%s, %s) : (%s, %s) -> %s", outs[0],
           cpu_op_is(op, "arith.maxnumf") ? "maxnum" : "minnum", ins[0], ins[1], ty, ty, ty);
  return NULL;
}

static bool is_minmax_num(MlirOperation op) {
  if ((!cpu_op_is(op, "arith.maxnumf") && !cpu_op_is(op, "arith.minnumf")) ||
      mlirOperationGetNumResults(op) != 1)
    return false;
  zt_type_t t;
  zt_status_t s = cpu_value_type(mlirOperationGetResult(op, 0), &t);
  bool ok = !s && (t.kind == ZT_F32 || t.kind == ZT_F64);
  zt_status_free(s);
  return ok;
}

// The scalar emitter of an arith/math op.
static elem_fn arith_fn_in(cpu_t* c, MlirOperation op) {
  bool is_signed;
  if (is_exp_f32(op)) return exp_f32_fn;
  if (is_minmax_num(op)) return minmax_num_fn;
  return is_int_division(op, &is_signed) ? safe_div_fn : generic_fn;
}

// ---------------------------------------------------------------------------
// Pointers and memory

static zt_status_t addptr_fn(cpu_t* c, MlirOperation op, char ins[][ZT_CPU_NAME],
                             char outs[][ZT_CPU_NAME]) {
  zt_type_t pt, ot;
  ZT_RETURN_IF_ERROR(cpu_value_type(mlirOperationGetOperand(op, 0), &pt));
  ZT_RETURN_IF_ERROR(cpu_value_type(mlirOperationGetOperand(op, 1), &ot));
  char off[ZT_CPU_NAME], bytes[ZT_CPU_NAME], size[ZT_CPU_NAME];
  if (ot.kind == ZT_I64) {
    snprintf(off, sizeof off, "%s", ins[1]);
  } else {
    cpu_fresh(c, off);
    cpu_line(c, "%s = arith.extsi %s : %s to i64", off, ins[1], cpu_elem(ot.kind));
  }
  cpu_fresh(c, size);
  cpu_line(c, "%s = arith.constant %d : i64", size, zt_tile_kind_bytes(pt.pointee));
  cpu_fresh(c, bytes);
  cpu_line(c, "%s = arith.muli %s, %s : i64", bytes, off, size);
  cpu_fresh(c, outs[0]);
  cpu_line(c, "%s = arith.addi %s, %s : i64", outs[0], ins[0], bytes);
  return NULL;
}

// Segment sizes of tile.load / tile.store: which optional operands exist.
static void segments(MlirOperation op, int32_t seg[3]) {
  seg[0] = 1;
  seg[1] = 0;
  seg[2] = 0;
  MlirAttribute a = mlirOperationGetAttributeByName(
      op, mlirStringRefCreateFromCString("operandSegmentSizes"));
  if (!mlirAttributeIsNull(a) && mlirAttributeIsADenseI32Array(a) &&
      mlirDenseArrayGetNumElements(a) == 3) {
    for (int i = 0; i < 3; ++i) seg[i] = mlirDenseI32ArrayGetElement(a, i);
    return;
  }
  // Without the attribute, operand count tells (the mask comes first).
  intptr_t n = mlirOperationGetNumOperands(op);
  if (cpu_op_is(op, "tile.store")) {
    seg[1] = 1;
    seg[2] = n > 2;
  } else {
    seg[1] = n > 1;
    seg[2] = n > 2;
  }
}

static void to_ptr(cpu_t* c, const char* addr, char p[ZT_CPU_NAME]) {
  if (c->addr_is_ptr) {
    snprintf(p, ZT_CPU_NAME, "%s", addr);
    return;
  }
  cpu_fresh(c, p);
  cpu_line(c, "%s = llvm.inttoptr %s : i64 to !llvm.ptr", p, addr);
}

void cpu_raw_load(cpu_t* c, zt_scalar_kind_t k, const char* addr,
                          char out[ZT_CPU_NAME]) {
  char p[ZT_CPU_NAME];
  to_ptr(c, addr, p);
  cpu_fresh(c, out);
  if (k == ZT_I1) {  // booleans are bytes in memory
    char byte[ZT_CPU_NAME], z[ZT_CPU_NAME];
    snprintf(byte, sizeof byte, "%s", out);
    cpu_line(c, "%s = llvm.load %s {alignment = 1 : i64} : !llvm.ptr -> i8", byte, p);
    cpu_zero(c, ZT_I8, z);
    cpu_fresh(c, out);
    cpu_line(c, "%s = arith.cmpi ne, %s, %s : i8", out, byte, z);
    return;
  }
  cpu_line(c, "%s = llvm.load %s {alignment = %d : i64} : !llvm.ptr -> %s", out, p,
           zt_tile_kind_bytes(k), cpu_elem(k));
}

void cpu_raw_store(cpu_t* c, zt_scalar_kind_t k, const char* addr,
                           const char* v) {
  char p[ZT_CPU_NAME];
  to_ptr(c, addr, p);
  if (k == ZT_I1) {
    char byte[ZT_CPU_NAME];
    cpu_fresh(c, byte);
    cpu_line(c, "%s = arith.extui %s : i1 to i8", byte, v);
    cpu_line(c, "llvm.store %s, %s {alignment = 1 : i64} : i8, !llvm.ptr", byte, p);
    return;
  }
  cpu_line(c, "llvm.store %s, %s {alignment = %d : i64} : %s, !llvm.ptr", v, p,
           zt_tile_kind_bytes(k), cpu_elem(k));
}

static zt_status_t load_fn(cpu_t* c, MlirOperation op, char ins[][ZT_CPU_NAME],
                           char outs[][ZT_CPU_NAME]) {
  zt_type_t rt;
  ZT_RETURN_IF_ERROR(cpu_value_type(mlirOperationGetResult(op, 0), &rt));
  int32_t seg[3];
  segments(op, seg);
  if (!seg[1]) {
    cpu_check_access(c, op, ins[0], rt.kind, 0);
    cpu_raw_load(c, rt.kind, ins[0], outs[0]);
    return NULL;
  }
  // Masked-off addresses are never touched.
  const char* ty = cpu_elem(rt.kind);
  cpu_fresh(c, outs[0]);
  cpu_line(c, "%s = scf.if %s -> (%s) {", outs[0], ins[1], ty);
  ++c->indent;
  char x[ZT_CPU_NAME];
  cpu_check_access(c, op, ins[0], rt.kind, 0);
  cpu_raw_load(c, rt.kind, ins[0], x);
  cpu_line(c, "scf.yield %s : %s", x, ty);
  --c->indent;
  cpu_line(c, "} else {");
  ++c->indent;
  char z[ZT_CPU_NAME];
  cpu_line(c, "scf.yield %s : %s", seg[2] ? ins[2] : cpu_zero(c, rt.kind, z), ty);
  --c->indent;
  cpu_line(c, "}");
  return NULL;
}

static zt_status_t store_fn(cpu_t* c, MlirOperation op, char ins[][ZT_CPU_NAME],
                            char outs[][ZT_CPU_NAME]) {
  zt_type_t vt;
  ZT_RETURN_IF_ERROR(cpu_value_type(mlirOperationGetOperand(op, 1), &vt));
  int32_t seg[3];
  segments(op, seg);
  if (seg[2]) {
    cpu_line(c, "scf.if %s {", ins[2]);
    ++c->indent;
  }
  cpu_check_access(c, op, ins[0], vt.kind, 1);
  cpu_raw_store(c, vt.kind, ins[0], ins[1]);
  if (seg[2]) {
    --c->indent;
    cpu_line(c, "}");
  }
  return NULL;
}

// ---------------------------------------------------------------------------
// Atomics: real llvm.atomicrmw / llvm.cmpxchg per element (the programs of a
// launch run on several threads at once). Elements of one op are done in
// order, so lanes that share an address combine one after the other. Scopes
// are ignored: every CPU atomic is system-wide.

// LLVM ordering of a tile `sem`; `failure` gives cmpxchg's failure ordering
// (no release part).
static const char* atomic_ordering(const char* sem, bool failure) {
  if (!strcmp(sem, "relaxed")) return "monotonic";
  if (!strcmp(sem, "acquire")) return "acquire";
  if (!strcmp(sem, "release")) return failure ? "monotonic" : "release";
  return failure ? "acquire" : "acq_rel";
}

static bool is_float_kind(zt_scalar_kind_t k) {
  return k == ZT_F16 || k == ZT_BF16 || k == ZT_F32 || k == ZT_F64;
}

// Memory type of an atomic on elements of kind k: i1 is a byte; floats in
// cmpxchg go as integers of their width (cmpxchg takes integers only).
static const char* atomic_mem_type(zt_scalar_kind_t k, bool as_int) {
  if (k == ZT_I1) return "i8";
  if (as_int && is_float_kind(k))
    return k == ZT_F64 ? "i64" : k == ZT_F32 ? "i32" : "i16";
  return cpu_elem(k);
}

// Value x of kind k as the atomic's memory type (and back with `back`).
static void atomic_convert(cpu_t* c, zt_scalar_kind_t k, bool as_int, const char* x,
                           bool back, char out[ZT_CPU_NAME]) {
  const char* mt = atomic_mem_type(k, as_int);
  if (k == ZT_I1) {
    cpu_fresh(c, out);
    if (back) {
      char z[ZT_CPU_NAME];
      cpu_zero(c, ZT_I8, z);
      cpu_line(c, "%s = arith.cmpi ne, %s, %s : i8", out, x, z);
    } else {
      cpu_line(c, "%s = arith.extui %s : i1 to i8", out, x);
    }
    return;
  }
  if (as_int && is_float_kind(k)) {
    cpu_fresh(c, out);
    if (back)
      cpu_line(c, "%s = arith.bitcast %s : %s to %s", out, x, mt, cpu_elem(k));
    else
      cpu_line(c, "%s = arith.bitcast %s : %s to %s", out, x, cpu_elem(k), mt);
    return;
  }
  snprintf(out, ZT_CPU_NAME, "%s", x);
}

static zt_status_t string_attr(MlirOperation op, const char* name, char* out, size_t n) {
  MlirAttribute a =
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(name));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAString(a))
    return cpu_op_error(op, ZT_STATUS_INVALID_ARGUMENT, "missing %s attribute", name);
  MlirStringRef v = mlirStringAttrGetValue(a);
  snprintf(out, n, "%.*s", (int)v.length, v.data);
  return NULL;
}

// The llvm.atomicrmw operation of a tile kind on elements of kind k.
static const char* atomic_binop(const char* kind, zt_scalar_kind_t k) {
  bool f = is_float_kind(k);
  if (!strcmp(kind, "xchg")) return "xchg";
  if (!strcmp(kind, "add")) return f ? "fadd" : k == ZT_I1 ? NULL : "add";
  if (!strcmp(kind, "max")) return f ? "fmax" : k == ZT_I1 ? NULL : "max";
  if (!strcmp(kind, "min")) return f ? "fmin" : k == ZT_I1 ? NULL : "min";
  if (f) return NULL;
  if (!strcmp(kind, "umax")) return "umax";
  if (!strcmp(kind, "umin")) return "umin";
  if (!strcmp(kind, "and")) return "_and";
  if (!strcmp(kind, "or")) return "_or";
  if (!strcmp(kind, "xor")) return "_xor";
  return NULL;
}

// Opens `scf.if mask -> (T) {` when the op is masked; closed by
// masked_end, which yields `x` or (masked off) a zero.
static void masked_begin(cpu_t* c, const char* mask, const char* ty, char res[ZT_CPU_NAME]) {
  cpu_fresh(c, res);
  cpu_line(c, "%s = scf.if %s -> (%s) {", res, mask, ty);
  ++c->indent;
}

static void masked_end(cpu_t* c, zt_scalar_kind_t k, const char* x) {
  char z[ZT_CPU_NAME];
  cpu_line(c, "scf.yield %s : %s", x, cpu_elem(k));
  --c->indent;
  cpu_line(c, "} else {");
  cpu_line(c, "  scf.yield %s : %s", cpu_zero(c, k, z), cpu_elem(k));
  cpu_line(c, "}");
}

static zt_status_t atomic_rmw_fn(cpu_t* c, MlirOperation op, char ins[][ZT_CPU_NAME],
                                 char outs[][ZT_CPU_NAME]) {
  zt_type_t vt;
  ZT_RETURN_IF_ERROR(cpu_value_type(mlirOperationGetOperand(op, 1), &vt));
  char kind[16], sem[16];
  ZT_RETURN_IF_ERROR(string_attr(op, "kind", kind, sizeof kind));
  ZT_RETURN_IF_ERROR(string_attr(op, "sem", sem, sizeof sem));
  const char* bin = atomic_binop(kind, vt.kind);
  if (!bin)
    return cpu_op_error(op, ZT_STATUS_UNSUPPORTED, "atomic %s on %s", kind,
                        zt_tile_kind_spelling(vt.kind));
  int32_t seg[3];
  segments(op, seg);
  char res[ZT_CPU_NAME];
  if (seg[2]) masked_begin(c, ins[2], cpu_elem(vt.kind), res);
  char p[ZT_CPU_NAME], v[ZT_CPU_NAME], old[ZT_CPU_NAME], x[ZT_CPU_NAME];
  cpu_check_access(c, op, ins[0], vt.kind, 2);
  to_ptr(c, ins[0], p);
  atomic_convert(c, vt.kind, false, ins[1], false, v);
  cpu_fresh(c, old);
  cpu_line(c, "%s = llvm.atomicrmw %s %s, %s %s : !llvm.ptr, %s", old, bin, p, v,
           atomic_ordering(sem, false), atomic_mem_type(vt.kind, false));
  atomic_convert(c, vt.kind, false, old, true, x);
  if (seg[2]) {
    masked_end(c, vt.kind, x);
    snprintf(outs[0], ZT_CPU_NAME, "%s", res);
  } else {
    snprintf(outs[0], ZT_CPU_NAME, "%s", x);
  }
  return NULL;
}

// Compares bit patterns (floats included), as GPUs' CAS instructions do.
static zt_status_t atomic_cas_fn(cpu_t* c, MlirOperation op, char ins[][ZT_CPU_NAME],
                                 char outs[][ZT_CPU_NAME]) {
  zt_type_t vt;
  ZT_RETURN_IF_ERROR(cpu_value_type(mlirOperationGetOperand(op, 1), &vt));
  char sem[16];
  ZT_RETURN_IF_ERROR(string_attr(op, "sem", sem, sizeof sem));
  const char* mt = atomic_mem_type(vt.kind, true);
  char p[ZT_CPU_NAME], cmp[ZT_CPU_NAME], v[ZT_CPU_NAME], pair[ZT_CPU_NAME],
      old[ZT_CPU_NAME];
  cpu_check_access(c, op, ins[0], vt.kind, 2);
  to_ptr(c, ins[0], p);
  atomic_convert(c, vt.kind, true, ins[1], false, cmp);
  atomic_convert(c, vt.kind, true, ins[2], false, v);
  cpu_fresh(c, pair);
  cpu_line(c, "%s = llvm.cmpxchg %s, %s, %s %s %s : !llvm.ptr, %s", pair, p, cmp, v,
           atomic_ordering(sem, false), atomic_ordering(sem, true), mt);
  cpu_fresh(c, old);
  cpu_line(c, "%s = llvm.extractvalue %s[0] : !llvm.struct<(%s, i1)>", old, pair, mt);
  atomic_convert(c, vt.kind, true, old, true, outs[0]);
  return NULL;
}

// ---------------------------------------------------------------------------
// Shape ops

int64_t cpu_int_attr(MlirOperation op, const char* name, int64_t dflt) {
  MlirAttribute a =
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(name));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAInteger(a)) return dflt;
  return mlirIntegerAttrGetValueInt(a);
}

static zt_status_t result_type(MlirOperation op, intptr_t i, zt_type_t* t) {
  zt_status_t s = cpu_value_type(mlirOperationGetResult(op, i), t);
  if (s) {
    zt_status_t e = cpu_op_error(op, ZT_STATUS_UNSUPPORTED, "%s", zt_status_message(s));
    zt_status_free(s);
    return e;
  }
  return NULL;
}

// The result is the operand seen with another type (same elements).
static zt_status_t emit_alias(cpu_t* c, MlirOperation op) {
  const cpu_val_t* src;
  ZT_RETURN_IF_ERROR(cpu_get(c, mlirOperationGetOperand(op, 0), &src));
  if (src->kind == CPU_LAZY &&
      !lazy_ok(op, mlirOperationGetResult(op, 0), src->cost))
    ZT_RETURN_IF_ERROR(cpu_materialize(c, src, &src));
  cpu_val_t v = *src;
  ZT_RETURN_IF_ERROR(result_type(op, 0, &v.type));
  return cpu_map_put(c, mlirOperationGetResult(op, 0), &v);
}

static void make_range_elem(cpu_t* c, MlirOperation op, const char* idx,
                            char out[ZT_CPU_NAME]) {
  int64_t start = cpu_int_attr(op, "start", 0);
  char x[ZT_CPU_NAME], k[ZT_CPU_NAME];
  cpu_fresh(c, x);
  cpu_line(c, "%s = arith.index_cast %s : index to i32", x, idx);
  if (!start) {
    snprintf(out, ZT_CPU_NAME, "%s", x);
    return;
  }
  cpu_fresh(c, k);
  cpu_line(c, "%s = arith.constant %lld : i32", k, (long long)start);
  cpu_fresh(c, out);
  cpu_line(c, "%s = arith.addi %s, %s : i32", out, x, k);
}

static zt_status_t emit_make_range(cpu_t* c, MlirOperation op) {
  zt_type_t t;
  ZT_RETURN_IF_ERROR(result_type(op, 0, &t));
  MlirValue res = mlirOperationGetResult(op, 0);
  if (lazy_ok(op, res, 1)) {
    cpu_val_t v = {.kind = CPU_LAZY, .type = t, .op = op, .cost = 1};
    snprintf(v.name, ZT_CPU_NAME, "<lazy>");
    return cpu_map_put(c, res, &v);
  }
  cpu_val_t r;
  ZT_RETURN_IF_ERROR(cpu_new_buf_val(c, t, &r));
  char iv[ZT_CPU_NAME], x[ZT_CPU_NAME];
  cpu_loop_begin(c, t.shape[0], iv);
  make_range_elem(c, op, iv, x);
  cpu_write(c, r.buf, iv, x);
  cpu_loop_end(c);
  return cpu_map_put(c, res, &r);
}

// broadcast and trans: result element at ivs reads source element
// sum(ivs[d] * src_stride[d]).
static zt_status_t emit_gather(cpu_t* c, MlirOperation op, bool trans) {
  const cpu_val_t* src;
  ZT_RETURN_IF_ERROR(cpu_get(c, mlirOperationGetOperand(op, 0), &src));
  zt_type_t t;
  ZT_RETURN_IF_ERROR(result_type(op, 0, &t));
  if (src->kind == CPU_SCALAR || src->kind == CPU_SPLAT) {
    cpu_val_t v = *src;
    v.type = t;
    return cpu_map_put(c, mlirOperationGetResult(op, 0), &v);
  }
  int64_t sstr[ZT_MAX_RANK], rstr[ZT_MAX_RANK];
  cpu_strides(src->type.rank, src->type.shape, sstr);
  if (trans) {
    MlirAttribute a = mlirOperationGetAttributeByName(
        op, mlirStringRefCreateFromCString("order"));
    if (mlirAttributeIsNull(a) || !mlirAttributeIsADenseI32Array(a) ||
        mlirDenseArrayGetNumElements(a) != t.rank)
      return cpu_op_error(op, ZT_STATUS_INVALID_ARGUMENT, "bad order attribute");
    for (int d = 0; d < t.rank; ++d) {
      int32_t o = mlirDenseI32ArrayGetElement(a, d);
      if (o < 0 || o >= t.rank)
        return cpu_op_error(op, ZT_STATUS_INVALID_ARGUMENT, "bad order attribute");
      rstr[d] = sstr[o];
    }
  } else {
    if (src->type.rank != t.rank)
      return cpu_op_error(op, ZT_STATUS_INVALID_ARGUMENT, "broadcast changes rank");
    for (int d = 0; d < t.rank; ++d)
      rstr[d] = src->type.shape[d] == 1 && t.shape[d] != 1 ? 0 : sstr[d];
  }
  cpu_val_t r;
  ZT_RETURN_IF_ERROR(cpu_new_buf_val(c, t, &r));
  int64_t dstr[ZT_MAX_RANK];
  cpu_strides(t.rank, t.shape, dstr);
  char ivs[ZT_MAX_RANK][ZT_CPU_NAME], si[ZT_CPU_NAME], di[ZT_CPU_NAME],
      x[ZT_CPU_NAME];
  cpu_nest_begin(c, t.rank, t.shape, ivs);
  cpu_linear(c, t.rank, ivs, rstr, si);
  cpu_linear(c, t.rank, ivs, dstr, di);
  cpu_read(c, src, si, x);
  cpu_write(c, r.buf, di, x);
  cpu_nest_end(c, t.rank);
  return cpu_map_put(c, mlirOperationGetResult(op, 0), &r);
}

static zt_status_t emit_axis_value(cpu_t* c, MlirOperation op, const char* what) {
  int64_t axis = cpu_int_attr(op, "axis", -1);
  if (axis < 0 || axis > 2)
    return cpu_op_error(op, ZT_STATUS_INVALID_ARGUMENT, "axis must be 0, 1 or 2");
  cpu_val_t v = {.kind = CPU_SCALAR};
  v.type.kind = ZT_I32;
  snprintf(v.name, ZT_CPU_NAME, "%%%s%c", what, (int)('x' + axis));
  return cpu_map_put(c, mlirOperationGetResult(op, 0), &v);
}

// ---------------------------------------------------------------------------

zt_status_t cpu_emit_block(cpu_t* c, MlirBlock block) {
  for (MlirOperation op = mlirBlockGetFirstOperation(block);
       !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op)) {
    if (cpu_op_is(op, "scf.yield") || cpu_op_is(op, "scf.condition") ||
        cpu_op_is(op, "func.return"))
      break;
    ZT_RETURN_IF_ERROR(cpu_emit_op(c, op));
  }
  return NULL;
}

zt_status_t cpu_emit_op(cpu_t* c, MlirOperation op) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  if (n.length > 5 && memcmp(n.data, "tile.", 5) == 0) {
    if (cpu_op_is(op, "tile.program_id")) return emit_axis_value(c, op, "pid");
    if (cpu_op_is(op, "tile.num_programs")) return emit_axis_value(c, op, "np");
    if (cpu_op_is(op, "tile.make_range")) return emit_make_range(c, op);
    if (cpu_op_is(op, "tile.splat")) return emit_alias(c, op);
    if (cpu_op_is(op, "tile.broadcast")) return emit_gather(c, op, false);
    if (cpu_op_is(op, "tile.trans")) return emit_gather(c, op, true);
    if (cpu_op_is(op, "tile.expand_dims") || cpu_op_is(op, "tile.reshape") ||
        cpu_op_is(op, "tile.ptr_to_int") || cpu_op_is(op, "tile.int_to_ptr") ||
        cpu_op_is(op, "tile.ptr_cast"))
      return emit_alias(c, op);
    if (cpu_op_is(op, "tile.addptr")) return emit_elementwise(c, op, addptr_fn, true);
    if (cpu_op_is(op, "tile.load")) return emit_elementwise(c, op, load_fn, false);
    if (cpu_op_is(op, "tile.store")) return emit_elementwise(c, op, store_fn, false);
    if (cpu_op_is(op, "tile.atomic_rmw"))
      return emit_elementwise(c, op, atomic_rmw_fn, false);
    if (cpu_op_is(op, "tile.atomic_cas"))
      return emit_elementwise(c, op, atomic_cas_fn, false);
    if (cpu_op_is(op, "tile.reduce")) return cpu_emit_reduce(c, op);
    if (cpu_op_is(op, "tile.dot")) return cpu_emit_dot(c, op);
    if (cpu_op_is(op, "tile.scan")) return cpu_emit_scan(c, op);
    if (cpu_op_is(op, "tile.block_load")) return cpu_emit_block_load(c, op);
    if (cpu_op_is(op, "tile.block_store")) return cpu_emit_block_store(c, op);
    if (cpu_op_is(op, "tile.print")) return cpu_emit_print(c, op);
    if (cpu_op_is(op, "tile.assert")) return cpu_emit_assert(c, op);
  } else if (cpu_op_is(op, "scf.for")) {
    return cpu_emit_for(c, op);
  } else if (cpu_op_is(op, "scf.if")) {
    return cpu_emit_if(c, op);
  } else if (cpu_op_is(op, "scf.while")) {
    return cpu_emit_while(c, op);
  } else if ((n.length > 6 && memcmp(n.data, "arith.", 6) == 0) ||
             (n.length > 5 && memcmp(n.data, "math.", 5) == 0)) {
    if (cpu_op_is(op, "arith.constant") && mlirOperationGetNumResults(op) == 1) {
      zt_type_t t;
      ZT_RETURN_IF_ERROR(result_type(op, 0, &t));
      if (t.rank)
        return cpu_op_error(op, ZT_STATUS_UNSUPPORTED,
                            "tensor constants are not tile IR (use tile.splat)");
    }
    return emit_elementwise(c, op, arith_fn_in(c, op), true);
  }
  return cpu_op_error(op, ZT_STATUS_UNSUPPORTED,
                      "operation not supported by the CPU lowering");
}
