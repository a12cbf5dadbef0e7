// tile.reduce with a user combiner (tl.reduce with a @jit combine function,
// tuple reductions such as Welford's) on Xe, inside one subgroup.
//
// The combiner's body (elementwise arith/math ops) is emitted inline, as
// often as needed, on whatever the operands are: 16-lane vectors while
// chunks (1-D) or rows / column blocks (2-D) are combined lane by lane, then
// a butterfly over the 16 lanes (subgroup shuffles, see partner()), and
// lane 0 moved out (select on the lane index, then an `or` reduction of the
// bits: exact for every type, NaN included). The built-in kinds (sum, max,
// ...) keep their faster path in xe_reduce.c. (Moving every lane out and
// combining uniform scalars was the first version: upstream's distribution
// took 20 s on a Welford reduction of 64 elements.)
//
// Order: element i of a chunk is combined with element i of the next chunk
// (lower indices on the left), then the lanes pairwise, lower lanes on the
// left. A combiner that is associative and commutative, or that breaks ties
// by an index it carries (argmax-style), gives a sequential reduction's
// result; Triton's GPU reductions make the same assumption.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>

#include "xe/xe_internal.h"

#define MAX_VALS 8  // tensors reduced together

// The combiner function of a tile.reduce, or a null op.
static MlirOperation combiner_fn(xe_emitter_t* e, MlirOperation op) {
  MlirAttribute c = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("combiner"));
  if (mlirAttributeIsNull(c) || !mlirAttributeIsAFlatSymbolRef(c)) return (MlirOperation){NULL};
  MlirStringRef name = mlirFlatSymbolRefAttrGetValue(c);
  MlirOperation mod = mlirModuleGetOperation(e->lc->tile);
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(mod, 0));
  MlirOperation f = zt_symbol_in_block(top, name);
  if (mlirOperationIsNull(f) || !zt_op_named(f, "func.func")) return (MlirOperation){NULL};
  return f;
}

// Values of one inlined combiner body: block arguments and op results.
typedef struct env_s {
  const void* keys[128];
  xe_val_t* vals[128];
  bool owned[128];
  int n;
} env_t;

static xe_val_t* env_get(env_t* v, MlirValue x) {
  for (int i = 0; i < v->n; ++i)
    if (v->keys[i] == x.ptr) return v->vals[i];
  return NULL;
}

static bool env_put(env_t* v, MlirValue x, xe_val_t* r, bool owned) {
  if (v->n == 128) return false;
  v->keys[v->n] = x.ptr;
  v->vals[v->n] = r;
  v->owned[v->n++] = owned;
  return true;
}

// Emits the combiner on (lhs..., rhs...) records, all 16-lane chunks
// (vec) or all scalars; out[i] receive new records the caller frees.
static zt_status_t apply(xe_emitter_t* e, MlirOperation fn, int n, xe_val_t** lhs,
                         xe_val_t** rhs, bool vec, xe_val_t** out) {
  MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(fn, 0));
  env_t env = {.n = 0};
  for (int i = 0; i < n; ++i) {
    env_put(&env, mlirBlockGetArgument(b, i), lhs[i], false);
    env_put(&env, mlirBlockGetArgument(b, n + i), rhs[i], false);
  }
  MlirOperation cur = e->cur;
  zt_status_t s = NULL;
  bool returned = false;
  for (MlirOperation op = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(op) && !s;
       op = mlirOperationGetNextInBlock(op)) {
    if (zt_op_named(op, "func.return")) {
      for (int i = 0; i < n; ++i) {
        xe_val_t* r = env_get(&env, mlirOperationGetOperand(op, i));
        // A copy: the caller owns what it gets.
        xe_val_t* c = r ? xe_alloc(e, r->type) : NULL;
        if (!c) {
          s = e->error ? NULL : xe_fail(e, ZT_STATUS_INTERNAL, "combiner result");
          break;
        }
        for (int32_t k = 0; k < c->nchunks; ++k) memcpy(c->names[k], r->names[k], sizeof c->names[k]);
        out[i] = c;
      }
      returned = !s;
      break;
    }
    xe_set_cur(e, op);
    zt_type_t t;
    if (mlirOperationGetNumResults(op) != 1 ||
        (s = xe_tile_type(e, mlirValueGetType(mlirOperationGetResult(op, 0)), &t)))
      break;
    if (zt_op_named(op, "arith.constant") && t.rank == 0 && t.kind != ZT_BF16) {
      zt_strbuf_t text;
      zt_strbuf_init(&text);
      zt_strbuf_puts(&text, "arith.constant ");
      xe_print_attr(mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("value")),
                    &text);
      xe_val_t* r = xe_alloc(e, t);
      if (r) xe_hoist(e, text.data, false, r->names[0]);
      zt_strbuf_deinit(&text);
      if (!r || !env_put(&env, mlirOperationGetResult(op, 0), r, true)) {
        xe_free_val(r);
        s = xe_fail(e, ZT_STATUS_UNSUPPORTED, "a combiner this large on Xe");
      }
      continue;
    }
    intptr_t no = mlirOperationGetNumOperands(op);
    bool arith = zt_op_name_has_prefix(op, "arith.") || zt_op_name_has_prefix(op, "math.");
    if (!arith || mlirOperationGetNumRegions(op) || no > 3 || t.rank != 0) {
      MlirStringRef on = mlirIdentifierStr(mlirOperationGetName(op));
      s = xe_fail(e, ZT_STATUS_UNSUPPORTED,
                  "%.*s in a reduction combiner on Xe (elementwise arith/math ops only)",
                  (int)on.length, on.data);
      break;
    }
    xe_val_t* ops[3];
    for (intptr_t i = 0; i < no && !s; ++i)
      if (!(ops[i] = env_get(&env, mlirOperationGetOperand(op, i))))
        s = xe_fail(e, ZT_STATUS_INTERNAL, "combiner operand");
    if (s) break;
    xe_note_libm(e, mlirIdentifierStr(mlirOperationGetName(op)));
    zt_type_t rt = vec ? zt_type_tensor(zt_type_scalar(t.kind), 1, (int64_t[]){16}) : t;
    char name[64];
    MlirStringRef on = mlirIdentifierStr(mlirOperationGetName(op));
    snprintf(name, sizeof name, "%.*s", (int)on.length, on.data);
    zt_strbuf_t props;
    zt_strbuf_init(&props);
    xe_op_props(op, &props);
    xe_val_t* r = NULL;
    s = xe_emit_elementwise(e, name, props.data, ops, (int)no, rt, &r);
    zt_strbuf_deinit(&props);
    if (!s && (!r || !env_put(&env, mlirOperationGetResult(op, 0), r, true))) {
      xe_free_val(r);
      s = e->error ? NULL : xe_fail(e, ZT_STATUS_UNSUPPORTED, "a combiner this large on Xe");
    }
  }
  for (int i = 0; i < env.n; ++i)
    if (env.owned[i]) xe_free_val(env.vals[i]);
  xe_set_cur(e, cur);
  if (!s && !returned && !e->error) s = xe_fail(e, ZT_STATUS_INTERNAL, "combiner without return");
  if (!returned)
    for (int i = 0; i < n; ++i) out[i] = NULL;
  return s ? s : NULL;
}

static void free_all(xe_val_t** v, int n) {
  for (int i = 0; i < n; ++i) {
    xe_free_val(v[i]);
    v[i] = NULL;
  }
}

// A record naming one 16-lane chunk (borrowed name) of kind k.
static xe_val_t* chunk_rec(xe_emitter_t* e, zt_scalar_kind_t k, const char* name) {
  xe_val_t* r = xe_alloc(e, zt_type_tensor(zt_type_scalar(k), 1, (int64_t[]){16}));
  if (r) snprintf(r->names[0], sizeof r->names[0], "%s", name);
  return r;
}

// Integer type of a kind's bits, for moving lanes exactly.
static const char* bits_type(zt_scalar_kind_t k) {
  switch (zt_scalar_kind_bits(k)) {
    case 1: return "i1";
    case 8: return "i8";
    case 16: return "i16";
    case 64: return "i64";
    default: return "i32";
  }
}

// Lane i of a 16-lane chunk as a uniform scalar record.
// The lane given by the vector<16xi32> `at` (uniform) of a 16-lane chunk as
// a uniform scalar record.
static xe_val_t* lane_scalar_at(xe_emitter_t* e, zt_scalar_kind_t k, const char* v,
                                const char* at);

static xe_val_t* lane_scalar(xe_emitter_t* e, zt_scalar_kind_t k, const char* v, int i) {
  char c[8];
  xe_name_t ci;
  snprintf(c, sizeof c, "%d", i);
  xe_vconst(e, c, "i32", ci);
  return lane_scalar_at(e, k, v, ci);
}

static xe_val_t* lane_scalar_at(xe_emitter_t* e, zt_scalar_kind_t k, const char* v,
                                const char* at) {
  const char* et = xe_elem(k);
  const char* bt = bits_type(k);
  xe_name_t bits, lane, eq, zero, sel, red;
  bool cast = strcmp(et, bt) != 0;
  const char* l = e->loc.data ? e->loc.data : "";
  if (cast) {
    xe_fresh(e, bits);
    xe_line(e);
    zt_strbuf_printf(&e->body,
                     "%s = arith.bitcast %s {layout_result_0 = " XE_LAYOUT_ATTR
                     "} : vector<16x%s> to vector<16x%s>%s\n", bits, v, et, bt, l);
  } else {
    snprintf(bits, sizeof bits, "%s", v);
  }
  xe_lane_i32(e, lane);
  xe_vbinary(e, "arith.cmpi eq,", lane, at, "i32", eq);
  xe_vconst(e, strcmp(bt, "i1") ? "0" : "false", bt, zero);
  xe_vselect(e, eq, bits, zero, bt, sel);
  xe_val_t* r = xe_alloc(e, zt_type_scalar(k));
  if (!r) return NULL;
  if (cast) xe_fresh(e, red);
  else snprintf(red, sizeof red, "%s", r->names[0]);
  xe_line(e);
  zt_strbuf_printf(&e->body, "%s = vector.reduction <or>, %s : vector<16x%s> into %s%s\n", red,
                   sel, bt, bt, l);
  if (cast) {
    xe_line(e);
    zt_strbuf_printf(&e->body, "%s = arith.bitcast %s : %s to %s%s\n", r->names[0], red, bt, et,
                     l);
  }
  return r;
}

// Lane j's partner (lane j ^ d): a marked `v + v` that distribution carries
// to one element per lane, then xe_atomic.c's pass between the pipeline's
// halves turns into gpu.shuffle xor (a subgroup shuffle). Moving lanes
// through SLM instead needs fences, and upstream's distribution gives up
// (silently) once a few of them sit between the accesses.
// mode: "xor" (lane j ^ d), "up" (lane j - d), "down" (lane j + d), "idx"
// (lane d).
void xe_lane_shuffle(xe_emitter_t* e, zt_scalar_kind_t k, const char* v, const char* mode,
                     int d, xe_name_t out) {
  const char* et = xe_elem(k);
  bool f = zt_scalar_kind_is_float(k) && k != ZT_BF16;  // bf16: i16 bits
  e->used_shuffles = true;
  xe_fresh(e, out);
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "%s = arith.%s %s, %s {layout_result_0 = " XE_LAYOUT_ATTR
                   ", zt.shfl_%s = %d : i32} : vector<16x%s>%s\n",
                   out, f ? "addf" : "addi", v, v, mode, d, et, e->loc.data ? e->loc.data : "");
}

static void partner(xe_emitter_t* e, zt_scalar_kind_t k, const char* v, int d, xe_name_t out) {
  xe_lane_shuffle(e, k, v, "xor", d, out);
}

static zt_status_t combine_chunks(xe_emitter_t* e, MlirOperation fn, int n,
                                  const zt_scalar_kind_t* kinds, char (*acc)[XE_NAME_MAX],
                                  char (*next)[XE_NAME_MAX], int valid);

// `vec` with lane i replaced by lane 0 of `from` (a butterfly's result),
// moved by a shuffle: vector ops only (uniform scalars slow upstream's
// distribution down sharply when many rows feed later work: tl.sort).
static void lane0_into(xe_emitter_t* e, zt_scalar_kind_t k, const char* from, int i,
                       xe_name_t vec) {
  xe_name_t moved, sel;
  if (i) xe_lane_shuffle(e, k, from, "up", i, moved);
  else memcpy(moved, from, sizeof moved);
  xe_take_lane(e, moved, i, vec, xe_elem(k), sel);
  memcpy(vec, sel, sizeof sel);
}

// Combines n parallel 16-lane chunks (valid lanes: `lanes`) down to n
// scalars: a butterfly over the lanes (steps 1, 2, 4, 8), in which lane 0
// always takes the lower lanes on the left; then lane 0.
static zt_status_t butterfly(xe_emitter_t* e, MlirOperation fn, int n,
                             const zt_scalar_kind_t* kinds, char (*acc)[XE_NAME_MAX], int lanes);

static zt_status_t lanes_to_scalars(xe_emitter_t* e, MlirOperation fn, int n,
                                    const zt_scalar_kind_t* kinds, char (*chunks)[XE_NAME_MAX],
                                    int lanes, xe_val_t** out) {
  char acc[MAX_VALS][XE_NAME_MAX];
  for (int t = 0; t < n; ++t) memcpy(acc[t], chunks[t], XE_NAME_MAX);
  ZT_RETURN_IF_ERROR(butterfly(e, fn, n, kinds, acc, lanes));
  if (e->error) return NULL;
  for (int t = 0; t < n; ++t)
    if (!(out[t] = lane_scalar(e, kinds[t], acc[t], 0))) {
      free_all(out, t);
      return NULL;
    }
  return NULL;
}

// The butterfly of lanes_to_scalars: afterwards lane 0 of acc[t] holds the
// combination of lanes 0 .. lanes-1, in order.
static zt_status_t butterfly(xe_emitter_t* e, MlirOperation fn, int n,
                             const zt_scalar_kind_t* kinds, char (*acc)[XE_NAME_MAX], int lanes) {
  char next[MAX_VALS][XE_NAME_MAX];
  for (int d = 1; d < lanes && !e->error; d *= 2) {
    for (int t = 0; t < n; ++t) partner(e, kinds[t], acc[t], d, next[t]);
    // Lane j combines with lane j + d only when that lane holds an element.
    if (lanes < 16) {
      xe_name_t lane, lim, ok, dv;
      char c[8];
      xe_lane_i32(e, lane);
      snprintf(c, sizeof c, "%d", d);
      xe_vconst(e, c, "i32", dv);
      xe_name_t p;
      xe_vbinary(e, "arith.xori", lane, dv, "i32", p);
      snprintf(c, sizeof c, "%d", lanes);
      xe_vconst(e, c, "i32", lim);
      xe_vbinary(e, "arith.cmpi slt,", p, lim, "i32", ok);
      char kept[MAX_VALS][XE_NAME_MAX];
      memcpy(kept, acc, sizeof kept);
      ZT_RETURN_IF_ERROR(combine_chunks(e, fn, n, kinds, acc, next, 16));
      for (int t = 0; t < n; ++t) {
        xe_name_t sel;
        xe_vselect(e, ok, acc[t], kept[t], xe_elem(kinds[t]), sel);
        memcpy(acc[t], sel, XE_NAME_MAX);
      }
    } else {
      ZT_RETURN_IF_ERROR(combine_chunks(e, fn, n, kinds, acc, next, 16));
    }
  }
  return NULL;
}

// acc[t] = combine(acc, next) on 16-lane chunks; lanes >= `valid` keep acc.
static zt_status_t combine_chunks(xe_emitter_t* e, MlirOperation fn, int n,
                                  const zt_scalar_kind_t* kinds, char (*acc)[XE_NAME_MAX],
                                  char (*next)[XE_NAME_MAX], int valid) {
  xe_val_t *a[MAX_VALS] = {0}, *b[MAX_VALS] = {0}, *r[MAX_VALS] = {0};
  zt_status_t s = NULL;
  for (int t = 0; t < n && !s; ++t)
    if (!(a[t] = chunk_rec(e, kinds[t], acc[t])) || !(b[t] = chunk_rec(e, kinds[t], next[t])))
      s = e->error ? NULL : xe_fail(e, ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
  if (!s && !e->error) s = apply(e, fn, n, a, b, true, r);
  if (!s && !e->error) {
    xe_name_t m;
    if (valid < 16) xe_pad_mask(e, valid, m);
    for (int t = 0; t < n; ++t) {
      if (valid < 16) {
        xe_name_t sel;
        xe_vselect(e, m, r[t]->names[0], acc[t], xe_elem(kinds[t]), sel);
        memcpy(acc[t], sel, sizeof sel);
      } else {
        memcpy(acc[t], r[t]->names[0], XE_NAME_MAX);
      }
    }
  }
  free_all(a, n);
  free_all(b, n);
  free_all(r, n);
  return s;
}

static zt_status_t check(xe_emitter_t* e, MlirOperation op, MlirOperation* fn, int* n,
                         xe_val_t** src, zt_scalar_kind_t* kinds) {
  *fn = combiner_fn(e, op);
  *n = (int)mlirOperationGetNumOperands(op);
  if (mlirOperationIsNull(*fn))
    return xe_fail(e, ZT_STATUS_INVALID_ARGUMENT, "tile.reduce without its combiner");
  if (*n > MAX_VALS)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "reductions of more than %d tensors on Xe",
                   MAX_VALS);
  for (int t = 0; t < *n; ++t) {
    if (!(src[t] = xe_lookup(e, mlirOperationGetOperand(op, t)))) return NULL;
    kinds[t] = src[t]->type.kind;
    if (kinds[t] == ZT_PTR || kinds[t] == ZT_I1)
      return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                     "reductions of %s tensors with a user combiner on Xe",
                     zt_scalar_kind_name(kinds[t]));
  }
  return NULL;
}

zt_status_t xe_emit_reduce_user(xe_emitter_t* e, MlirOperation op) {
  MlirOperation fn;
  int n;
  xe_val_t* src[MAX_VALS];
  zt_scalar_kind_t kinds[MAX_VALS];
  ZT_RETURN_IF_ERROR(check(e, op, &fn, &n, src, kinds));
  if (e->error) return NULL;
  int rank = src[0]->type.rank;
  if (rank == 1) {
    const xe_val_t* s = src[0];
    bool cross = s->dist && e->nsg > 1;
    for (int t = 0; t < n; ++t)
      if (src[t]->layout != XE_LAYOUT_ROW16 || src[t]->numel != s->numel ||
          src[t]->nchunks != s->nchunks || src[t]->dist != s->dist)
        return xe_fail(e, ZT_STATUS_INTERNAL, "reduced tensors of different layouts");
    if (cross && (e->nsg > XE_SUBGROUP || s->numel % XE_SUBGROUP))
      return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                     "a reduction with a user combiner across more than 16 subgroups on Xe");
    // Subgroup g's chunks (all of them when not split) lane by lane, then
    // its lanes; a split tensor's per-subgroup results then meet in SLM and
    // combine the same way, subgroup g in lane g (lower indices first).
    char acc[MAX_VALS][XE_NAME_MAX], next[MAX_VALS][XE_NAME_MAX];
    for (int t = 0; t < n; ++t) memcpy(acc[t], src[t]->names[0], XE_NAME_MAX);
    for (int32_t c = 1; c < s->nchunks && !e->error; ++c) {
      for (int t = 0; t < n; ++t) memcpy(next[t], src[t]->names[c], XE_NAME_MAX);
      int64_t left = cross ? 16 : s->numel - 16LL * c;
      ZT_RETURN_IF_ERROR(combine_chunks(e, fn, n, kinds, acc, next, left < 16 ? (int)left : 16));
    }
    if (e->error) return NULL;
    xe_val_t* res[MAX_VALS] = {0};
    int lanes = s->numel < 16 ? (int)s->numel : 16;
    ZT_RETURN_IF_ERROR(lanes_to_scalars(e, fn, n, kinds, acc, lanes, res));
    if (e->error) return NULL;
    if (cross) {
      char slots[MAX_VALS][XE_NAME_MAX];
      for (int t = 0; t < n; ++t) {
        xe_name_t v[XE_MAX_SUBGROUPS / XE_SUBGROUP];
        xe_cross_sg_gather(e, kinds[t], res[t]->names[0], v);
        memcpy(slots[t], v[0], XE_NAME_MAX);
      }
      free_all(res, n);
      ZT_RETURN_IF_ERROR(lanes_to_scalars(e, fn, n, kinds, slots, e->nsg, res));
      if (e->error) return NULL;
    }
    for (int t = 0; t < n; ++t) xe_bind(e, mlirOperationGetResult(op, t), res[t]);
    return NULL;
  }
  // 2-D tiles (BLOCK2D, role C), the axis inside each subgroup.
  MlirAttribute ax = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("axis"));
  int axis = mlirAttributeIsNull(ax) || !mlirAttributeIsAInteger(ax)
                 ? -1 : (int)mlirIntegerAttrGetValueInt(ax);
  const xe_val_t* s = src[0];
  for (int t = 0; t < n; ++t) {
    const xe_val_t* x = src[t];
    if (x->layout != XE_LAYOUT_BLOCK2D || x->role != XE_ROLE_C || x->bc != 16 ||
        x->br != s->br || x->nbr != s->nbr || x->nbc != s->nbc || kinds[t] == ZT_BF16 ||
        kinds[t] == ZT_I1)
      return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                     "a reduction with a user combiner of this 2-D value on Xe");
  }
  if ((axis != 0 && axis != 1) || !xe_axis_local(e, s, axis))
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "a 2-D reduction with a user combiner along an axis split across "
                   "subgroups on Xe");
  xe_val_t* out[MAX_VALS] = {0};
  for (int t = 0; t < n; ++t) {
    zt_type_t rt;
    ZT_RETURN_IF_ERROR(xe_tile_type(e, mlirValueGetType(mlirOperationGetResult(op, t)), &rt));
    if (rt.rank != 1 || !(out[t] = xe_alloc(e, rt)) ||
        out[t]->nchunks != (axis == 0 ? s->nbc : (s->tr + 15) / 16)) {
      free_all(out, n);
      return e->error ? NULL : xe_fail(e, ZT_STATUS_UNSUPPORTED, "2-D reduction result layout");
    }
  }
  char acc[MAX_VALS][XE_NAME_MAX], next[MAX_VALS][XE_NAME_MAX];
  zt_status_t st = NULL;
  if (s->narrow && axis == 1) {
    // By columns (xe_val_t.narrow): a row's elements sit in one lane of each
    // block row, so block bi's rows combine lane by lane, left to right,
    // into output chunk bi (tl.split is this with a select for a combiner).
    for (int32_t bi = 0; bi < s->nbr && !st && !e->error; ++bi) {
      for (int32_t j = 0; j < s->br && !st; ++j) {
        for (int t = 0; t < n; ++t) xe_block_row(e, src[t], bi, 0, j, j ? next[t] : acc[t]);
        if (j) st = combine_chunks(e, fn, n, kinds, acc, next, 16);
      }
      for (int t = 0; t < n && !st; ++t) memcpy(out[t]->names[bi], acc[t], XE_NAME_MAX);
    }
  } else if (s->narrow) {
    // Column j: its blocks lane by lane (a last partial block's padding
    // lanes keep the running value), then its lanes; lane j of the output.
    for (int32_t j = 0; j < s->br && !st && !e->error; ++j) {
      for (int32_t bi = 0; bi < s->nbr && !st; ++bi) {
        for (int t = 0; t < n; ++t) xe_block_row(e, src[t], bi, 0, j, bi ? next[t] : acc[t]);
        int64_t left = s->tr - 16LL * bi;
        if (bi) st = combine_chunks(e, fn, n, kinds, acc, next, left < 16 ? (int)left : 16);
      }
      if (!st) st = butterfly(e, fn, n, kinds, acc, s->tr < 16 ? (int)s->tr : 16);
      if (st || e->error) break;
      for (int t = 0; t < n; ++t) {
        if (j == 0)
          xe_vconst(e, zt_scalar_kind_is_float(kinds[t]) ? "0.0" : "0", xe_elem(kinds[t]),
                    out[t]->names[0]);
        lane0_into(e, kinds[t], acc[t], j, out[t]->names[0]);
      }
    }
  } else if (axis == 0) {
    // Each block column: its rows combined lane by lane, top to bottom.
    for (int32_t bj = 0; bj < s->nbc && !st && !e->error; ++bj) {
      bool first = true;
      for (int32_t bi = 0; bi < s->nbr && !st; ++bi)
        for (int32_t rr = 0; rr < s->br && !st; ++rr) {
          for (int t = 0; t < n; ++t) xe_block_row(e, src[t], bi, bj, rr, first ? acc[t] : next[t]);
          if (!first) st = combine_chunks(e, fn, n, kinds, acc, next, 16);
          first = false;
        }
      for (int t = 0; t < n && !st; ++t) memcpy(out[t]->names[bj], acc[t], XE_NAME_MAX);
    }
  } else {
    // Each row: its column blocks lane by lane, then its 16 lanes; the
    // row's scalar goes to lane (row % 16) of output chunk row / 16.
    for (int32_t c = 0; c < out[0]->nchunks && !st && !e->error; ++c) {
      char vec[MAX_VALS][XE_NAME_MAX];
      for (int i = 0; i < 16 && 16 * c + i < s->tr && !st && !e->error; ++i) {
        int row = 16 * c + i, bi = row / s->br, rr = row % s->br;
        for (int32_t bj = 0; bj < s->nbc && !st; ++bj) {
          for (int t = 0; t < n; ++t) xe_block_row(e, src[t], bi, bj, rr, bj ? next[t] : acc[t]);
          if (bj) st = combine_chunks(e, fn, n, kinds, acc, next, 16);
        }
        if (!st) st = butterfly(e, fn, n, kinds, acc, 16);
        if (st || e->error) break;
        for (int t = 0; t < n; ++t) {
          const char* et = xe_elem(kinds[t]);
          if (i == 0) {
            xe_name_t z;
            xe_vconst(e, strcmp(et, "i1") ? (zt_scalar_kind_is_float(kinds[t]) ? "0.0" : "0")
                                          : "false", et, z);
            memcpy(vec[t], z, XE_NAME_MAX);
          }
          lane0_into(e, kinds[t], acc[t], i, vec[t]);
          memcpy(out[t]->names[c], vec[t], XE_NAME_MAX);
        }
      }
    }
  }
  if (st || e->error) {
    free_all(out, n);
    return st;
  }
  for (int t = 0; t < n; ++t) xe_bind(e, mlirOperationGetResult(op, t), out[t]);
  return NULL;
}

// --- scans ---------------------------------------------------------------
//
// tl.associative_scan with a user combine function (tuples too). Along the
// lanes (1-D tensors, axis 1 of 2-D tiles) each 16-lane chunk is scanned
// Hillis-Steele style (steps 1, 2, 4, 8: lane j combines lane j - d's value
// on its left; reverse scans lane j + d's, the higher indices on the left as
// Triton's flip-scan-flip has them), then combined with the carry of the
// chunks before it (after it, reversed). Along rows (axis 0) each row is
// combined lane by lane with the running row.

// The inclusive scan of one chunk across its `valid` lanes, in place.
static zt_status_t scan_lanes(xe_emitter_t* e, MlirOperation fn, int n,
                              const zt_scalar_kind_t* kinds, char (*acc)[XE_NAME_MAX], int valid,
                              bool rev) {
  xe_name_t lane;
  xe_lane_i32(e, lane);
  for (int d = 1; d < valid && !e->error; d *= 2) {
    char p[MAX_VALS][XE_NAME_MAX], kept[MAX_VALS][XE_NAME_MAX];
    for (int t = 0; t < n; ++t) xe_lane_shuffle(e, kinds[t], acc[t], rev ? "down" : "up", d, p[t]);
    // Lanes with a partner: j >= d (up), j + d < valid (down).
    xe_name_t ok, lim;
    char cv[8];
    snprintf(cv, sizeof cv, "%d", rev ? valid - d : d);
    xe_vconst(e, cv, "i32", lim);
    xe_vbinary(e, rev ? "arith.cmpi slt," : "arith.cmpi sge,", lane, lim, "i32", ok);
    memcpy(kept, acc, sizeof kept);
    // combine(partner, acc): combine_chunks keeps its first argument's place.
    memcpy(acc, p, sizeof p);
    ZT_RETURN_IF_ERROR(combine_chunks(e, fn, n, kinds, acc, kept, 16));
    for (int t = 0; t < n && !e->error; ++t) {
      xe_name_t sel;
      xe_vselect(e, ok, acc[t], kept[t], xe_elem(kinds[t]), sel);
      memcpy(acc[t], sel, XE_NAME_MAX);
    }
  }
  return NULL;
}

// acc[t] = combine(x[t], acc[t]) on every lane, the uniform scalars x on the
// left; lanes where `mask` (vector<16xi1>, NULL: all) is false keep acc.
static zt_status_t combine_scalars_left(xe_emitter_t* e, MlirOperation fn, int n,
                                        const zt_scalar_kind_t* kinds, xe_val_t** x,
                                        char (*acc)[XE_NAME_MAX], const char* mask) {
  xe_val_t* b[MAX_VALS] = {0};
  xe_val_t* r[MAX_VALS] = {0};
  for (int t = 0; t < n; ++t) b[t] = chunk_rec(e, kinds[t], acc[t]);
  zt_status_t st = apply(e, fn, n, x, b, true, r);
  for (int t = 0; t < n && !st && !e->error; ++t) {
    if (mask) {
      xe_name_t sel;
      xe_vselect(e, mask, r[t]->names[0], acc[t], xe_elem(kinds[t]), sel);
      memcpy(acc[t], sel, XE_NAME_MAX);
    } else {
      memcpy(acc[t], r[t]->names[0], XE_NAME_MAX);
    }
  }
  free_all(b, n);
  free_all(r, n);
  return st;
}

// Scans the chunks ch[k][t] (k = 0..nch-1, in index order; the last one
// holding `last_valid` elements) across lanes and chunks, in place.
static zt_status_t scan_chunks(xe_emitter_t* e, MlirOperation fn, int n,
                               const zt_scalar_kind_t* kinds, char (*ch)[MAX_VALS][XE_NAME_MAX],
                               int32_t nch, int last_valid, bool rev) {
  xe_val_t* carry[MAX_VALS] = {0};
  zt_status_t st = NULL;
  for (int32_t q = 0; q < nch && !st && !e->error; ++q) {
    int32_t c = rev ? nch - 1 - q : q;
    int valid = c == nch - 1 ? last_valid : 16;
    char (*acc)[XE_NAME_MAX] = ch[c];
    st = scan_lanes(e, fn, n, kinds, acc, valid, rev);
    if (!st && !e->error && carry[0]) st = combine_scalars_left(e, fn, n, kinds, carry, acc, NULL);
    if (st || e->error || q == nch - 1) break;
    // The running total: the last valid lane (lane 0 when reversed).
    free_all(carry, n);
    for (int t = 0; t < n; ++t)
      if (!(carry[t] = lane_scalar(e, kinds[t], acc[t], rev ? 0 : valid - 1))) break;
  }
  free_all(carry, n);
  return st;
}

// A 1-D scan split across subgroups, after each subgroup scanned its part
// (ch[0 .. ncol-1]): the parts' totals meet in SLM, are scanned across the
// subgroups the same way, and subgroup g's part combines with the total of
// the parts before it (after it, reversed) on its left.
static zt_status_t scan_across_subgroups(xe_emitter_t* e, MlirOperation fn, int n,
                                         const zt_scalar_kind_t* kinds,
                                         char (*ch)[MAX_VALS][XE_NAME_MAX], int32_t ncol,
                                         bool rev) {
  char g[MAX_VALS][XE_NAME_MAX];
  for (int t = 0; t < n; ++t) {
    xe_val_t* total = lane_scalar(e, kinds[t], ch[rev ? 0 : ncol - 1][t], rev ? 0 : 15);
    if (!total) return NULL;
    xe_name_t v[XE_MAX_SUBGROUPS / XE_SUBGROUP];
    xe_cross_sg_gather(e, kinds[t], total->names[0], v);
    xe_free_val(total);
    memcpy(g[t], v[0], XE_NAME_MAX);
  }
  ZT_RETURN_IF_ERROR(scan_lanes(e, fn, n, kinds, g, e->nsg, rev));
  // Subgroup sg takes lane sg - 1 (sg + 1 reversed), when there is one.
  xe_name_t sg, sgv, one, at, lim, has;
  char text[96];
  xe_sg_id_i32(e, sg);
  xe_vsplat(e, sg, "i32", sgv);
  xe_vconst(e, "1", "i32", one);
  xe_vbinary(e, rev ? "arith.addi" : "arith.subi", sgv, one, "i32", at);
  snprintf(text, sizeof text, "%d", rev ? e->nsg : -1);
  xe_vconst(e, text, "i32", lim);
  xe_vbinary(e, rev ? "arith.cmpi slt," : "arith.cmpi sgt,", at, lim, "i32", has);
  xe_val_t* prefix[MAX_VALS] = {0};
  for (int t = 0; t < n; ++t)
    if (!(prefix[t] = lane_scalar_at(e, kinds[t], g[t], at))) {
      free_all(prefix, n);
      return NULL;
    }
  zt_status_t st = NULL;
  for (int32_t c = 0; c < ncol && !st && !e->error; ++c)
    st = combine_scalars_left(e, fn, n, kinds, prefix, ch[c], has);
  free_all(prefix, n);
  return st;
}

// A 2-D scan along an axis split across subgroups (axis 0 over the grid's
// rows, axis 1 over its columns), after each subgroup scanned its own part
// (ch[r * ncol + j]): each tuple member's line totals (axis 0: the last row,
// 16 columns a vector; axis 1: each row's last lane, lane i = row 16c + i)
// meet in SLM, slot [grid index][line of the tile], one member at a time
// (members of one kind share a buffer); then each subgroup folds, in grid
// order, the totals of the subgroups before it (after it, reversed: higher
// indices on the left, as the lanes' steps have them), each step kept only
// where that subgroup is before it, and combines the fold on the left of its
// own results when some subgroup is.
static zt_status_t scan_2d_across(xe_emitter_t* e, MlirOperation fn, int n,
                                  const zt_scalar_kind_t* kinds,
                                  char (*ch)[MAX_VALS][XE_NAME_MAX], const xe_val_t* s, int axis,
                                  bool rev) {
  int sm = e->sg_m, sn = e->sg_n, parts = axis == 0 ? sm : sn;
  int32_t nrow = s->nbr * s->br, ncol = s->nbc;
  int64_t R = s->type.shape[0], Rp = (R + 15) / 16 * 16, T = s->type.shape[1] / 16;
  if (s->narrow || s->type.shape[1] % 16 || T != (int64_t)sn * ncol || R != (int64_t)sm * nrow ||
      s->tr != nrow)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "a 2-D scan with a user combiner along an axis split across subgroups of this "
                   "tile on Xe");
  int32_t nout = axis == 0 ? ncol : (nrow + 15) / 16;
  int64_t nslots = axis == 0 ? (int64_t)sm * T * 16 : (int64_t)sn * Rp;
  char(*part)[MAX_VALS][XE_NAME_MAX] = calloc((size_t)nout * (size_t)(parts + 2), sizeof *part);
  if (!part) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
  // got[i * nout + c]: grid index i's totals of line chunk c; pre[c]: the fold.
  char(*got)[MAX_VALS][XE_NAME_MAX] = part + nout;
  char(*pre)[MAX_VALS][XE_NAME_MAX] = got + (size_t)parts * nout;
  zt_status_t st = NULL;
  for (int t = 0; t < n && !st && !e->error; ++t) {
    const char* et = xe_elem(kinds[t]);
    if (axis == 0) {
      for (int32_t j = 0; j < ncol; ++j)
        memcpy(part[j][t], ch[(rev ? 0 : nrow - 1) * ncol + j][t], XE_NAME_MAX);
    } else {
      for (int32_t c = 0; c < nout; ++c) memcpy(part[c][t], ch[16 * c * ncol][t], XE_NAME_MAX);
      for (int32_t q = 0; q < nrow; ++q) {
        xe_val_t* tot = lane_scalar(e, kinds[t], ch[q * ncol + (rev ? 0 : ncol - 1)][t],
                                    rev ? 0 : 15);
        if (!tot) break;
        xe_name_t p;
        xe_put_lane(e, tot->names[0], q % 16, part[q / 16][t], et, p);
        xe_free_val(tot);
        memcpy(part[q / 16][t], p, XE_NAME_MAX);
      }
    }
    xe_name_t slm, all, wrow, wcol, wbase;
    if (e->error || !xe_slm_buffer(e, kinds[t], (int)nslots, slm)) break;
    xe_all_true(e, all);
    if (axis == 0) {
      xe_sg_index(e, sn, sm, T * 16, wrow);
      xe_sg_index(e, 1, sn, (int64_t)ncol * 16, wcol);
    } else {
      xe_sg_index(e, 1, sn, Rp, wcol);
      xe_sg_index(e, sn, sm, nrow, wrow);
    }
    xe_add_index(e, wrow, wcol, wbase);
    for (int32_t c = 0; c < nout; ++c) {
      xe_name_t offs, mask;
      xe_slm_offsets(e, wbase, 16LL * c, offs);
      if (axis == 0 || nrow - 16LL * c >= 16) memcpy(mask, all, sizeof mask);
      else xe_pad_mask(e, nrow - 16LL * c, mask);
      xe_slm_store(e, part[c][t], slm, offs, mask, et, nslots);
    }
    xe_line(e);
    zt_strbuf_printf(&e->body, "gpu.barrier%s\n", e->loc.data ? e->loc.data : "");
    const char* own = axis == 0 ? wcol : wrow;
    int64_t stride = axis == 0 ? T * 16 : Rp;
    for (int i = 0; i < parts; ++i)
      for (int32_t c = 0; c < nout; ++c) {
        xe_name_t offs, mask;
        xe_slm_offsets(e, own, i * stride + 16LL * c, offs);
        if (axis == 0 || nrow - 16LL * c >= 16) memcpy(mask, all, sizeof mask);
        else xe_pad_mask(e, nrow - 16LL * c, mask);
        xe_slm_load(e, slm, offs, mask, et, nslots, got[i * nout + c][t]);
      }
    xe_line(e);
    zt_strbuf_printf(&e->body, "gpu.barrier%s\n", e->loc.data ? e->loc.data : "");
  }
  xe_name_t mine, has;
  if (!e->error) {
    if (axis == 0) xe_sg_index(e, sn, sm, 1, mine);
    else xe_sg_index(e, 1, sn, 1, mine);
    xe_sg_before_mask(e, mine, rev ? parts - 1 : 0, rev, has);
  }
  for (int32_t c = 0; c < nout && !st && !e->error; ++c) {
    for (int q = 0; q < parts && !st && !e->error; ++q) {
      int i = rev ? parts - 1 - q : q;
      if (q == 0) {
        memcpy(pre[c], got[i * nout + c], sizeof pre[c]);
        continue;
      }
      char acc[MAX_VALS][XE_NAME_MAX];
      memcpy(acc, pre[c], sizeof acc);
      st = combine_chunks(e, fn, n, kinds, acc, got[i * nout + c], 16);
      xe_name_t before;
      xe_sg_before_mask(e, mine, i, rev, before);
      for (int t = 0; t < n && !st && !e->error; ++t) {
        xe_name_t sel;
        xe_vselect(e, before, acc[t], pre[c][t], xe_elem(kinds[t]), sel);
        memcpy(pre[c][t], sel, XE_NAME_MAX);
      }
    }
  }
  // The fold on the left of this subgroup's results.
  if (axis == 0) {
    for (int32_t r = 0; r < nrow && !st && !e->error; ++r)
      for (int32_t j = 0; j < ncol && !st && !e->error; ++j) {
        char acc[MAX_VALS][XE_NAME_MAX];
        memcpy(acc, pre[j], sizeof acc);
        st = combine_chunks(e, fn, n, kinds, acc, ch[r * ncol + j], 16);
        for (int t = 0; t < n && !st && !e->error; ++t) {
          xe_name_t sel;
          xe_vselect(e, has, acc[t], ch[r * ncol + j][t], xe_elem(kinds[t]), sel);
          memcpy(ch[r * ncol + j][t], sel, XE_NAME_MAX);
        }
      }
  } else {
    // Row q's fold: lane q % 16 of its chunk, in every lane (an idx shuffle).
    for (int32_t q = 0; q < nrow && !st && !e->error; ++q) {
      char row[MAX_VALS][XE_NAME_MAX];
      for (int t = 0; t < n; ++t) xe_lane_shuffle(e, kinds[t], pre[q / 16][t], "idx", q % 16, row[t]);
      for (int32_t j = 0; j < ncol && !st && !e->error; ++j) {
        char acc[MAX_VALS][XE_NAME_MAX];
        memcpy(acc, row, sizeof acc);
        st = combine_chunks(e, fn, n, kinds, acc, ch[q * ncol + j], 16);
        for (int t = 0; t < n && !st && !e->error; ++t) {
          xe_name_t sel;
          xe_vselect(e, has, acc[t], ch[q * ncol + j][t], xe_elem(kinds[t]), sel);
          memcpy(ch[q * ncol + j][t], sel, XE_NAME_MAX);
        }
      }
    }
  }
  free(part);
  return st;
}

// The scan of a narrow tile's chunks ch[bi * br + j] (see xe_emit_scan_user).
static zt_status_t scan_narrow(xe_emitter_t* e, MlirOperation fn, int n,
                               const zt_scalar_kind_t* kinds, char (*ch)[MAX_VALS][XE_NAME_MAX],
                               const xe_val_t* s, int axis, bool rev) {
  zt_status_t st = NULL;
  if (axis == 0) {
    char(*col)[MAX_VALS][XE_NAME_MAX] = calloc((size_t)s->nbr, sizeof *col);
    if (!col) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
    int64_t tail = s->tr - 16LL * (s->nbr - 1);
    for (int32_t j = 0; j < s->br && !st && !e->error; ++j) {
      for (int32_t bi = 0; bi < s->nbr; ++bi) memcpy(col[bi], ch[bi * s->br + j], sizeof col[bi]);
      st = scan_chunks(e, fn, n, kinds, col, s->nbr, (int)tail, rev);
      for (int32_t bi = 0; bi < s->nbr && !st; ++bi)
        memcpy(ch[bi * s->br + j], col[bi], sizeof col[bi]);
    }
    free(col);
    return st;
  }
  for (int32_t bi = 0; bi < s->nbr && !st && !e->error; ++bi)
    for (int32_t q = 1; q < s->br && !st && !e->error; ++q) {
      int32_t j = rev ? s->br - 1 - q : q, prev = rev ? j + 1 : j - 1;
      char acc[MAX_VALS][XE_NAME_MAX];
      memcpy(acc, ch[bi * s->br + prev], sizeof acc);
      st = combine_chunks(e, fn, n, kinds, acc, ch[bi * s->br + j], 16);
      memcpy(ch[bi * s->br + j], acc, sizeof acc);
    }
  return st;
}

zt_status_t xe_emit_scan_user(xe_emitter_t* e, MlirOperation op) {
  MlirOperation fn;
  int n;
  xe_val_t* src[MAX_VALS];
  zt_scalar_kind_t kinds[MAX_VALS];
  ZT_RETURN_IF_ERROR(check(e, op, &fn, &n, src, kinds));
  if (e->error) return NULL;
  MlirAttribute rv = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("reverse"));
  MlirAttribute ax = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("axis"));
  bool rev = !mlirAttributeIsNull(rv) && mlirAttributeIsABool(rv) && mlirBoolAttrGetValue(rv);
  int axis = mlirAttributeIsNull(ax) || !mlirAttributeIsAInteger(ax)
                 ? 0 : (int)mlirIntegerAttrGetValueInt(ax);
  const xe_val_t* s = src[0];
  bool one_d = s->layout == XE_LAYOUT_ROW16;
  for (int t = 0; t < n; ++t) {
    const xe_val_t* x = src[t];
    bool ok = one_d ? x->layout == XE_LAYOUT_ROW16 && x->dist == s->dist && x->numel == s->numel
                    : x->layout == XE_LAYOUT_BLOCK2D && x->role == XE_ROLE_C && x->bc == 16 &&
                          x->br == s->br && x->nbr == s->nbr && x->nbc == s->nbc &&
                          kinds[t] != ZT_BF16 && x->narrow == s->narrow;
    if (!ok)
      // Split grids are fine (scan_across); what is refused is a member held
      // unlike the first (e.g. an index tile built from aranges beside a
      // loaded one) or a bf16 member.
      return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                     "a scan with a user combiner on Xe whose operand %d is %s (every operand must be "
                     "held like the first: a 1-D tensor, or a 2-D tile in 16-column accumulator "
                     "blocks, not bf16)",
                     t,
                     kinds[t] == ZT_BF16 ? "bf16"
                     : t == 0            ? "neither a 1-D tensor nor a tile in accumulator blocks"
                                         : "held unlike operand 0");
  }
  bool cross = one_d && s->dist && e->nsg > 1;
  if (cross && (e->nsg > XE_SUBGROUP || s->numel % XE_SUBGROUP))
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "a scan with a user combiner across more than 16 subgroups on Xe");
  if (!one_d && axis != 0 && axis != 1)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "a 2-D scan along axis %d", axis);
  bool split = !one_d && (axis == 0 ? e->sg_m > 1 : e->sg_n > 1);
  xe_val_t* out[MAX_VALS] = {0};
  for (int t = 0; t < n; ++t)
    if (!(out[t] = xe_alloc_for(e, mlirOperationGetResult(op, t), src[t]->type, XE_ROLE_C)) ||
        out[t]->layout != s->layout || out[t]->nchunks != s->nchunks) {
      free_all(out, n);
      return e->error ? NULL
                      : xe_fail(e, ZT_STATUS_UNSUPPORTED,
                                "a scan with a user combiner on Xe whose result %d would be held "
                                "unlike its operands",
                                t);
    }
  zt_status_t st = NULL;
  int32_t nrow = one_d ? 1 : s->nbr * s->br;  // rows of 16-lane chunks
  int32_t ncol = one_d ? s->nchunks : s->nbc;
  char(*ch)[MAX_VALS][XE_NAME_MAX] = calloc((size_t)nrow * (size_t)ncol, sizeof *ch);
  if (!ch) {
    free_all(out, n);
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
  }
  // The chunks: row r's column block j at ch[r * ncol + j].
  for (int32_t r = 0; r < nrow; ++r)
    for (int32_t j = 0; j < ncol; ++j)
      for (int t = 0; t < n; ++t) {
        if (one_d) memcpy(ch[j][t], src[t]->names[j], XE_NAME_MAX);
        else xe_block_row(e, src[t], r / s->br, j, r % s->br, ch[r * ncol + j][t]);
      }
  if (!one_d && s->narrow) {
    // By columns (xe_val_t.narrow) the axes swap roles: down the rows,
    // column j (row j of every block) is a 1-D sequence of chunks; along a
    // row, block row j combines the running row j - 1 of the same block.
    st = scan_narrow(e, fn, n, kinds, ch, s, axis, rev);
  } else if (one_d || axis == 1) {
    int64_t tail = one_d && !cross ? s->numel - 16LL * (s->nchunks - 1) : 16;
    for (int32_t r = 0; r < nrow && !st && !e->error; ++r)
      st = scan_chunks(e, fn, n, kinds, ch + (size_t)r * ncol, ncol, (int)tail, rev);
    if (cross && !st && !e->error) st = scan_across_subgroups(e, fn, n, kinds, ch, ncol, rev);
  } else {
    // Along rows: row r combines the running row on its left.
    for (int32_t q = 1; q < nrow && !st && !e->error; ++q) {
      int32_t r = rev ? nrow - 1 - q : q, prev = rev ? r + 1 : r - 1;
      for (int32_t j = 0; j < ncol && !st; ++j) {
        char acc[MAX_VALS][XE_NAME_MAX];
        memcpy(acc, ch[prev * ncol + j], sizeof acc);
        st = combine_chunks(e, fn, n, kinds, acc, ch[r * ncol + j], 16);
        memcpy(ch[r * ncol + j], acc, sizeof acc);
      }
    }
  }
  if (split && !st && !e->error) st = scan_2d_across(e, fn, n, kinds, ch, s, axis, rev);
  if (!st && !e->error) {
    for (int t = 0; t < n; ++t) {
      if (one_d) {
        for (int32_t j = 0; j < ncol; ++j) memcpy(out[t]->names[j], ch[j][t], XE_NAME_MAX);
        continue;
      }
      const char* et = xe_block_elem(kinds[t]);
      char text[160];
      xe_name_t zero;
      snprintf(text, sizeof text,
               "arith.constant {layout_result_0 = #zt_a} dense<%s> : vector<%dx16x%s>",
               zt_scalar_kind_is_float(kinds[t]) ? "0.0" : "0", s->br, et);
      xe_hoist(e, text, true, zero);
      for (int32_t bi = 0; bi < s->nbr; ++bi)
        for (int32_t j = 0; j < ncol; ++j) {
          xe_name_t blk;
          memcpy(blk, zero, sizeof blk);
          for (int32_t rr = 0; rr < s->br; ++rr)
            xe_block_insert_row(e, ch[(bi * s->br + rr) * ncol + j][t], blk, rr, et, s->br,
                                "#zt_a");
          memcpy(out[t]->names[bi * ncol + j], blk, sizeof blk);
        }
    }
  }
  free(ch);
  if (st || e->error) {
    free_all(out, n);
    return st;
  }
  for (int t = 0; t < n; ++t) xe_bind(e, mlirOperationGetResult(op, t), out[t]);
  return NULL;
}
