// Elementwise tile ops written whole (issue 22): one op on the subgroup's
// vector<nchunks*16 x T> instead of one op per 16-element chunk.
//
// Why: every chunk op was written, parsed, distributed to a lane's
// vector<1xT> and joined again by xe_lane_pack.c into one vector<nchunksxT>
// op; the 200-op chain (16 chunks a subgroup) spent ~58% of its compile on
// those pieces (emitted text 403 KB). A vector<Nx16 x T> with the #zt_l
// layout (lane_layout [16], lane_data [1]) gives lane j the elements j,
// j + 16, ...: element k of the lane is lane j of chunk k, the same registers
// the pieces packed give, so xe_distribute.c distributes it like any
// elementwise op.
//
// Between the two forms: a wide record's chunks are `vector.shuffle %w, %w
// [16k .. 16k+15]` (written only when a reader needs them, in the scope that
// reader is in), and chunks become one wide value through a tree of
// shuffles joining equal halves. Both masks move whole 16-lane chunks, which
// xe_distribute.c turns into the lane's own shuffle (element k). Only where
// zetile's distribution runs (upstream's knows no such shuffle) and at 16
// lanes; ZETILE_XE_WIDE=0 writes chunks as before.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinTypes.h>

#include "xe/xe_internal.h"

zt_status_t xe_scope_push(xe_emitter_t* e, int* saved) {
  *saved = e->scope;
  if (!e->scope_parent || e->nscopes % 64 == 0) {
    int* g = realloc(e->scope_parent, (size_t)(e->nscopes + 64 + 1) * sizeof *g);
    if (!g) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
    e->scope_parent = g;
    if (e->nscopes == 0) {
      e->scope_parent[0] = -1;  // the kernel's scope
      e->nscopes = 1;
    }
  }
  e->scope_parent[e->nscopes] = e->scope;
  e->scope = e->nscopes++;
  return NULL;
}

void xe_scope_pop(xe_emitter_t* e, int saved) { e->scope = saved; }

// Whether a name defined in scope s is visible from the current scope.
static bool sees(const xe_emitter_t* e, int s) {
  if (s <= 0) return s == 0;
  for (int at = e->scope; at > 0; at = e->scope_parent[at])
    if (at == s) return true;
  return false;
}

// "vector<NxT>" of n elements of the record's element type.
static void vec_type(const xe_val_t* r, int64_t n, char* out, size_t cap) {
  snprintf(out, cap, "vector<%lldx%s>", (long long)n, xe_elem(r->type.kind));
}

static const char* lc(xe_emitter_t* e) { return e->loc.data ? e->loc.data : ""; }

// out = shuffle(a, b) with mask from, from + 1, ..., from + n - 1.
static void shuffle(xe_emitter_t* e, const xe_val_t* r, const char* a, const char* b,
                    int64_t in_n, int64_t from, int64_t n, xe_name_t out) {
  char t[48];
  vec_type(r, in_n, t, sizeof t);
  xe_fresh(e, out);
  xe_line(e);
  zt_strbuf_printf(&e->body, "%s = vector.shuffle %s, %s [", out, a, b);
  char num[24];
  for (int64_t i = 0; i < n; ++i) {
    int l = snprintf(num, sizeof num, i ? ", %lld" : "%lld", (long long)(from + i));
    zt_strbuf_append(&e->body, num, (size_t)l);
  }
  zt_strbuf_printf(&e->body, "] {layout_result_0 = " XE_LAYOUT_ATTR "} : %s, %s%s\n", t, t,
                   lc(e));
}

void xe_wide_chunks(xe_emitter_t* e, xe_val_t* r) {
  if (!r || !r->wide[0] || sees(e, r->chunk_scope)) return;
  int64_t n = (int64_t)r->nchunks * XE_SUBGROUP;
  for (int32_t k = 0; k < r->nchunks; ++k)
    shuffle(e, r, r->wide, r->wide, n, (int64_t)k * XE_SUBGROUP, XE_SUBGROUP, r->names[k]);
  r->chunk_scope = e->scope;
}

// The record's whole vector, joined from its chunks if it has none here.
static void wide_of(xe_emitter_t* e, xe_val_t* r, xe_name_t out) {
  if (r->wide[0] && sees(e, r->wide_scope)) {
    memcpy(out, r->wide, sizeof(xe_name_t));
    return;
  }
  xe_wide_chunks(e, r);
  xe_name_t level[XE_SUBGROUP];
  int count = r->nchunks;
  for (int k = 0; k < count; ++k) memcpy(level[k], r->names[k], sizeof(xe_name_t));
  for (int64_t len = XE_SUBGROUP; count > 1; len *= 2, count /= 2)
    for (int i = 0; i < count / 2; ++i) {
      xe_name_t j;
      shuffle(e, r, level[2 * i], level[2 * i + 1], len, 0, 2 * len, j);
      memcpy(level[i], j, sizeof j);
    }
  // Kept for the next reader in this scope (chunk_scope stays: the chunks
  // are where they were).
  memcpy(r->wide, level[0], sizeof(xe_name_t));
  r->wide_scope = e->scope;
  memcpy(out, level[0], sizeof(xe_name_t));
}

static bool is_pow2_chunks(int32_t n) { return n == 2 || n == 4 || n == 8 || n == 16; }

static bool is_i1(MlirValue v) {
  MlirType t = mlirValueGetType(v);
  if (mlirTypeIsAVector(t) || mlirTypeIsATensor(t)) t = mlirShapedTypeGetElementType(t);
  return mlirTypeIsAInteger(t) && mlirIntegerTypeGetWidth(t) == 1;
}

static bool is_bool_ext(MlirOperation op) {
  return (zt_op_named(op, "arith.extui") || zt_op_named(op, "arith.extsi")) &&
         is_i1(mlirOperationGetOperand(op, 0));
}

// A boolean, or a boolean widened: InstCombine compares `zext a == zext b`
// as `a == b`, so a compare of widened booleans is a compare of booleans
// by the time the SPIR-V backend sees it (libdevice's nextafter: ocloc
// SIGABRT with whole runs, test_libdevice_ext.py::test_pvc_isa_builds).
static bool boolish(MlirValue v) {
  return is_i1(v) || (mlirValueIsAOpResult(v) && is_bool_ext(mlirOpResultGetOwner(v)));
}

// A boolean xor or compare of booleans (kept in chunks, wide_kind).
static bool bool_pair_op(MlirOperation op) {
  if (!zt_op_named(op, "arith.xori") && !zt_op_named(op, "arith.cmpi")) return false;
  return boolish(mlirOperationGetOperand(op, 0)) || boolish(mlirOperationGetOperand(op, 1));
}

// Whether v (a boolean or a widened one) reaches a boolean xor/compare,
// directly or through one widening.
static bool feeds_bool_pair(MlirValue v) {
  for (MlirOpOperand u = mlirValueGetFirstUse(v); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation o = mlirOpOperandGetOwner(u);
    if (bool_pair_op(o)) return true;
    if (is_bool_ext(o) && feeds_bool_pair(mlirOperationGetResult(o, 0))) return true;
  }
  return false;
}

// Ops written whole: arith's elementwise ops, as xe_lane_pack.c packs them.
// math ops stay in chunks (a vector OpenCL exp and a division after it made
// softmax's ISA 916 -> 957 instructions, session 11), and so do xor and
// compares of booleans (OpLogicalNotEqual / OpLogicalEqual on a bool vector
// abort Debian's IGC; test_xe_lane_pack.py).
static bool wide_kind(MlirOperation op) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  if (!(n.length > 6 && !memcmp(n.data, "arith.", 6)) || zt_op_named(op, "arith.constant") ||
      mlirOperationGetNumResults(op) != 1 || mlirOperationGetNumRegions(op) != 0)
    return false;
  if (bool_pair_op(op)) return false;
  return true;
}

// A 1-D tensor of an element type the whole form takes (not bf16, not
// pointers).
static bool wide_tensor(MlirType t) {
  if (!mlirTypeIsATensor(t) || mlirShapedTypeGetRank(t) != 1) return false;
  MlirType et = mlirShapedTypeGetElementType(t);
  return !mlirTypeIsABF16(et) && (mlirTypeIsAFloat(et) || mlirTypeIsAInteger(et) ||
                                  mlirTypeIsAIndex(et));
}


// An op of a run: wide_kind on 1-D tensors of such types only (scalar
// operands allowed). A boolean result (or a widened one) read by a boolean
// xor or compare (boolish operands) stays
// in chunks too: those chunk ops would read shuffles of the whole vector,
// and LLVM's InstCombine folds `cmp (shuffle a, M), (shuffle b, M)` into a
// vector compare of bools, OpLogicalNotEqual on a bool vector, on which
// Debian's IGC aborts (conformance binary/mask_ne under ZETILE_XE_WIDE=all).
static bool run_member(MlirOperation op) {
  if (!wide_kind(op)) return false;
  MlirValue res = mlirOperationGetResult(op, 0);
  MlirType rt = mlirValueGetType(res);
  if (!wide_tensor(rt)) return false;
  if (boolish(res) && feeds_bool_pair(res)) return false;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
    MlirType t = mlirValueGetType(mlirOperationGetOperand(op, i));
    if (mlirTypeIsATensor(t) && !wide_tensor(t)) return false;
  }
  return true;
}

static bool is_splat(MlirValue v) {
  return mlirValueIsAOpResult(v) && zt_op_named(mlirOpResultGetOwner(v), "tile.splat");
}

// Decisions per run (open addressing on the op's pointer).
typedef struct {
  const void** keys;
  bool* whole;
  size_t cap, count;
} wide_runs_t;

static bool runs_find(wide_runs_t* r, MlirOperation op, bool* whole) {
  if (!r->cap) return false;
  for (size_t i = ((uintptr_t)op.ptr >> 4) & (r->cap - 1);; i = (i + 1) & (r->cap - 1)) {
    if (!r->keys[i]) return false;
    if (r->keys[i] == op.ptr) {
      *whole = r->whole[i];
      return true;
    }
  }
}

static bool runs_put(wide_runs_t* r, MlirOperation op, bool whole) {
  if ((r->count + 1) * 2 > r->cap) {
    size_t cap = r->cap ? 2 * r->cap : 256;
    const void** k = calloc(cap, sizeof *k);
    bool* w = calloc(cap, sizeof *w);
    if (!k || !w) {
      free(k);
      free(w);
      return false;
    }
    for (size_t i = 0; i < r->cap; ++i) {
      if (!r->keys[i]) continue;
      size_t j = ((uintptr_t)r->keys[i] >> 4) & (cap - 1);
      while (k[j]) j = (j + 1) & (cap - 1);
      k[j] = r->keys[i];
      w[j] = r->whole[i];
    }
    free(r->keys);
    free(r->whole);
    r->keys = k;
    r->whole = w;
    r->cap = cap;
  }
  size_t i = ((uintptr_t)op.ptr >> 4) & (r->cap - 1);
  while (r->keys[i] && r->keys[i] != op.ptr) i = (i + 1) & (r->cap - 1);
  if (!r->keys[i]) ++r->count;
  r->keys[i] = op.ptr;
  r->whole[i] = whole;
  return true;
}

void xe_wide_free(xe_emitter_t* e) {
  wide_runs_t* r = e->wide_runs;
  if (!r) return;
  free(r->keys);
  free(r->whole);
  free(r);
  e->wide_runs = NULL;
}

// Whether op's run (the ops of run_member linked by their values within one
// block) is worth writing whole at n chunks a subgroup. Written in chunks a
// run is ops * n ops; whole it is ops, plus n - 1 shuffles to join each
// vector that enters it in chunks and n to split each of its values read
// outside it. A shuffle counts 3 ops: the chunks' ops are cheap after the
// front end (xe_lane_pack.c joins them into one), the shuffles are not; by
// op count alone layer norm's runs (6 ops, 8 chunks, 3 joins) went whole
// and its compile took 147.4 -> 162.0 M instructions (callgrind). The
// decision is made once per run, at its first op.
static bool run_whole(xe_emitter_t* e, MlirOperation op, int32_t n) {
  if (!e->wide_runs) e->wide_runs = calloc(1, sizeof(wide_runs_t));
  wide_runs_t* runs = e->wide_runs;
  bool whole = false;
  if (!runs || runs_find(runs, op, &whole)) return whole;
  MlirBlock block = mlirOperationGetBlock(op);
  MlirOperation* todo = NULL;
  MlirOperation* members = NULL;
  size_t ntodo = 0, nmem = 0, cap = 0;
  long ops = 0, joins = 0, splits = 0;
  MlirValue joined[64];
  size_t njoined = 0;
  bool ok = runs_put(runs, op, false);
#define PUSH(x)                                                                         \
  do {                                                                                  \
    if (nmem == cap) {                                                                  \
      cap = cap ? 2 * cap : 64;                                                         \
      MlirOperation* g1 = realloc(todo, cap * sizeof *g1);                              \
      if (g1) todo = g1;                                                                \
      MlirOperation* g2 = realloc(members, cap * sizeof *g2);                           \
      if (g2) members = g2;                                                             \
      if (!g1 || !g2) ok = false;                                                       \
    }                                                                                   \
    if (ok) todo[ntodo++] = members[nmem++] = (x);                                      \
  } while (0)
  PUSH(op);
  while (ok && ntodo) {
    MlirOperation m = todo[--ntodo];
    ++ops;
    // Values entering: from a member (linked) or from outside (joined once).
    for (intptr_t i = 0; ok && i < mlirOperationGetNumOperands(m); ++i) {
      MlirValue v = mlirOperationGetOperand(m, i);
      if (!mlirTypeIsATensor(mlirValueGetType(v)) || is_splat(v)) continue;
      MlirOperation d = mlirValueIsAOpResult(v) ? mlirOpResultGetOwner(v) : (MlirOperation){NULL};
      bool seen;
      if (!mlirOperationIsNull(d) && mlirBlockEqual(mlirOperationGetBlock(d), block) &&
          run_member(d)) {
        if (!runs_find(runs, d, &seen)) {
          ok = runs_put(runs, d, false);
          PUSH(d);
        }
        continue;
      }
      bool known = false;  // (joined once: x * x, or two members reading it)
      for (size_t j = 0; j < njoined && !known; ++j) known = mlirValueEqual(joined[j], v);
      if (!known && njoined < sizeof joined / sizeof joined[0]) joined[njoined++] = v;
      joins += !known;
    }
    // Readers: members, or outside (the value is split once).
    bool outside = false;
    MlirValue r = mlirOperationGetResult(m, 0);
    for (MlirOpOperand u = mlirValueGetFirstUse(r); ok && !mlirOpOperandIsNull(u);
         u = mlirOpOperandGetNextUse(u)) {
      MlirOperation o = mlirOpOperandGetOwner(u);
      bool seen;
      if (mlirBlockEqual(mlirOperationGetBlock(o), block) && run_member(o)) {
        if (!runs_find(runs, o, &seen)) {
          ok = runs_put(runs, o, false);
          PUSH(o);
        }
      } else {
        outside = true;
      }
    }
    splits += outside;
  }
#undef PUSH
  whole = ok && (e->wide_all || (ops > 1 && 3 * (joins * (n - 1) + splits * n) < ops * (n - 1)));
  for (size_t i = 0; ok && i < nmem; ++i) ok = runs_put(runs, members[i], whole);
  free(todo);
  free(members);
  return ok && whole;
}

zt_status_t xe_wide_elementwise(xe_emitter_t* e, MlirOperation op, const char* opname,
                                const char* props, xe_val_t** ops, xe_val_t** splat_of,
                                int nops, zt_type_t rt, xe_val_t** out) {
  *out = NULL;
  if (!e->wide || e->lanes != XE_SUBGROUP || rt.rank != 1 || rt.kind == ZT_BF16 ||
      rt.kind == ZT_PTR || nops < 1 || nops > 4 || !wide_kind(op))
    return NULL;
  if (!run_member(op)) return NULL;
  // (The record's id is given back when the op is not written whole: the
  // text of kernels without whole runs stays what it was.)
  int id = e->next_id;
  xe_val_t* r = xe_alloc(e, rt);
  if (!r) return NULL;
  bool ok = r->layout == XE_LAYOUT_ROW16 && is_pow2_chunks(r->nchunks);
  for (int i = 0; i < nops && ok; ++i) {
    const xe_val_t* x = splat_of[i] ? splat_of[i] : ops[i];
    ok = x->type.kind != ZT_BF16 && x->type.kind != ZT_PTR &&
         (x->layout == XE_LAYOUT_SCALAR ||
          (x->layout == XE_LAYOUT_ROW16 && x->nchunks == r->nchunks && x->dist == r->dist));
  }
  if (!ok || !run_whole(e, op, r->nchunks)) {
    xe_free_val(r);
    e->next_id = id;
    return NULL;
  }
  int64_t n = (int64_t)r->nchunks * XE_SUBGROUP;
  xe_name_t names[4];
  for (int i = 0; i < nops; ++i) {
    bool here = ops[i]->wide[0] && sees(e, ops[i]->wide_scope);
    const xe_val_t* x = splat_of[i] && !here ? splat_of[i] : ops[i];
    if (x->layout == XE_LAYOUT_SCALAR) {
      const char* t = xe_elem(x->type.kind);
      xe_fresh(e, names[i]);
      xe_line(e);
      zt_strbuf_printf(&e->body,
                       "%s = vector.broadcast %s {layout_result_0 = " XE_LAYOUT_ATTR
                       "} : %s to vector<%lldx%s>%s\n",
                       names[i], x->names[0], t, (long long)n, t, lc(e));
    } else {
      wide_of(e, ops[i], names[i]);
    }
  }
  xe_fresh(e, r->wide);
  r->wide_scope = e->scope;
  r->chunk_scope = -1;
  xe_line(e);
  // (puts, not printf: ~10% of the emitter on the 200-op chain went to
  // vsnprintf)
  zt_strbuf_t* b = &e->body;
  char nt[24];
  snprintf(nt, sizeof nt, "vector<%lldx", (long long)n);
  zt_strbuf_puts(b, r->wide);
  zt_strbuf_puts(b, " = \"");
  zt_strbuf_puts(b, opname);
  zt_strbuf_puts(b, "\"(");
  for (int i = 0; i < nops; ++i) {
    if (i) zt_strbuf_puts(b, ", ");
    zt_strbuf_puts(b, names[i]);
  }
  zt_strbuf_puts(b, ") ");
  if (props) zt_strbuf_puts(b, props);
  zt_strbuf_puts(b, " {layout_result_0 = " XE_LAYOUT_ATTR "} : (");
  for (int i = 0; i < nops; ++i) {
    const xe_val_t* x = splat_of[i] ? splat_of[i] : ops[i];
    if (i) zt_strbuf_puts(b, ", ");
    zt_strbuf_puts(b, nt);
    zt_strbuf_puts(b, xe_elem(x->type.kind));
    zt_strbuf_puts(b, ">");
  }
  zt_strbuf_puts(b, ") -> ");
  zt_strbuf_puts(b, nt);
  zt_strbuf_puts(b, xe_elem(rt.kind));
  zt_strbuf_puts(b, ">");
  zt_strbuf_puts(b, lc(e));
  zt_strbuf_puts(b, "\n");
  e->used_wide = true;
  *out = r;
  return NULL;
}

xe_val_t* xe_wide_splat(xe_emitter_t* e, MlirOperation op, const xe_val_t* scalar, zt_type_t t) {
  if (!e->wide || e->lanes != XE_SUBGROUP || t.rank != 1 || t.kind == ZT_BF16 ||
      t.kind == ZT_PTR || scalar->layout != XE_LAYOUT_SCALAR)
    return NULL;
  MlirValue v = mlirOperationGetResult(op, 0);
  if (mlirOpOperandIsNull(mlirValueGetFirstUse(v))) return NULL;
  int id = e->next_id;
  xe_val_t* r = xe_alloc(e, t);
  if (!r) return NULL;
  bool ok = r->layout == XE_LAYOUT_ROW16 && is_pow2_chunks(r->nchunks);
  // Every reader is an op of a run written whole (the run's decision, made
  // here for it): then the splat is one broadcast of the whole vector.
  for (MlirOpOperand u = mlirValueGetFirstUse(v); ok && !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation o = mlirOpOperandGetOwner(u);
    ok = mlirBlockEqual(mlirOperationGetBlock(o), mlirOperationGetBlock(op)) && run_member(o) &&
         run_whole(e, o, r->nchunks);
  }
  if (!ok) {
    xe_free_val(r);
    e->next_id = id;
    return NULL;
  }
  const char* et = xe_elem(t.kind);
  xe_fresh(e, r->wide);
  r->wide_scope = e->scope;
  r->chunk_scope = -1;
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "%s = vector.broadcast %s {layout_result_0 = " XE_LAYOUT_ATTR
                   "} : %s to vector<%lldx%s>%s\n",
                   r->wide, scalar->names[0], et, (long long)r->nchunks * XE_SUBGROUP, et, lc(e));
  e->used_wide = true;
  return r;
}
