// tile.reshape and tile.trans of small tiles on Xe, in registers.
//
// Both sides are seen as lists of 16-lane vectors, lane l of each holding
// element first + stride * l (row-major) for l < len: a 1-D tensor's chunks
// and a 2-D tile's block rows (stride 1), a narrow tile's columns (stride:
// its width). Each output lane's element sits at one lane of one source
// vector; output lanes reading one source vector at the same distance form
// a piece, moved by one lane shuffle (up or down by the distance) and merged
// into the output vector by a select on the lane index.
//
// Between vectors of one stride the pieces are long: a reshape between
// 16-column tiles and 1-D tensors moves whole runs, a transpose between a
// narrow tile and a 16-column one whole vectors. Across strides (tl.
// interleave's pairs into a 1-D tensor, a transpose of 16-column tiles)
// every lane may be a piece of its own, which limits such moves to small
// tiles (a transpose feeding a dot is the dot's business, not this file's).
// Whole tensors must sit in each subgroup (1-D not split, 2-D tiles not
// split across the subgroup grid): what small tiles get from the planner.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>

#include "xe/xe_internal.h"
#include "xe/xe_transpose.h"

// Lane moves one op may take: each is a shuffle and a select (and the
// distribution upstream does slows down with their number).
#define MAX_PIECES 1024

typedef struct runs_s {
  int n;
  xe_name_t* names;
  int64_t* first;
  int* len;
  int stride;  // the same for every vector of one record
} runs_t;

static void runs_free(runs_t* r) {
  free(r->names);
  free(r->first);
  free(r->len);
  memset(r, 0, sizeof *r);
}

// The runs of a record of type t (names not filled); false if its layout
// does not hold the whole tensor as such runs.
static bool layout_runs(const xe_val_t* v, const zt_type_t* t, runs_t* r) {
  memset(r, 0, sizeof *r);
  int n;
  if (v->layout == XE_LAYOUT_ROW16 && t->rank == 1 && !v->dist) {
    n = v->nchunks;
  } else if (v->layout == XE_LAYOUT_BLOCK2D && t->rank == 2 && v->role == XE_ROLE_C &&
             v->bc == 16 && v->tr == t->shape[0] && v->tc == t->shape[1]) {
    n = v->nbr * v->nbc * v->br;
  } else {
    return false;
  }
  r->names = calloc((size_t)n, sizeof *r->names);
  r->first = calloc((size_t)n, sizeof *r->first);
  r->len = calloc((size_t)n, sizeof *r->len);
  if (!r->names || !r->first || !r->len) {
    runs_free(r);
    return false;
  }
  r->n = n;
  r->stride = 1;
  if (v->narrow) {
    // Vector (bi, j): column j of rows 16 bi ..
    r->stride = v->tc;
    for (int32_t bi = 0; bi < v->nbr; ++bi)
      for (int32_t j = 0; j < v->br; ++j) {
        int64_t left = v->tr - 16LL * bi;
        r->first[bi * v->br + j] = 16LL * bi * v->tc + j;
        r->len[bi * v->br + j] = left < 16 ? (int)left : 16;
      }
    return true;
  }
  if (t->rank == 1) {
    for (int k = 0; k < n; ++k) {
      r->first[k] = 16LL * k;
      int64_t left = v->numel - 16LL * k;
      r->len[k] = left < 16 ? (int)left : 16;
    }
    return true;
  }
  // Vector (bi, bj, rr) is run (bi * nbc + bj) * br + rr.
  for (int32_t bi = 0; bi < v->nbr; ++bi)
    for (int32_t bj = 0; bj < v->nbc; ++bj)
      for (int32_t rr = 0; rr < v->br; ++rr) {
        int i = (bi * v->nbc + bj) * v->br + rr;
        int64_t row = (int64_t)bi * v->br + rr, left = v->tc - 16LL * bj;
        r->first[i] = row * t->shape[1] + 16LL * bj;
        r->len[i] = left < 16 ? (int)left : 16;
      }
  return true;
}

// The element of the source (row-major index) that output element f is.
static int64_t source_of(int64_t f, bool trans, const zt_type_t* rt) {
  if (!trans) return f;
  // Output (i, j) of shape (R, C) is source (j, i) of shape (C, R).
  int64_t c = rt->shape[1], i = f / c, j = f % c;
  return j * rt->shape[0] + i;
}

static bool trans_order_ok(MlirOperation op) {
  MlirAttribute a = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("order"));
  if (mlirAttributeIsNull(a)) return true;  // 2-D: the swap
  if (!mlirAttributeIsADenseI32Array(a) || mlirDenseArrayGetNumElements(a) != 2) return false;
  return mlirDenseI32ArrayGetElement(a, 0) == 1 && mlirDenseI32ArrayGetElement(a, 1) == 0;
}

// The piece of an output vector (run first/stride/len) that starts at lane
// l: its source vector *v, the distance *d (source lane - output lane), and
// the lane after its end (returned).
static int piece_at(const int32_t* vec_of, const int8_t* lane_of, int64_t first, int stride,
                    int len, bool trans, const zt_type_t* rt, int l, int32_t* v, int* d) {
  int64_t s = source_of(first + (int64_t)stride * l, trans, rt);
  *v = vec_of[s];
  *d = lane_of[s] - l;
  int hi = l + 1;
  for (; hi < len; ++hi) {
    int64_t s2 = source_of(first + (int64_t)stride * hi, trans, rt);
    if (vec_of[s2] != *v || lane_of[s2] - hi != *d) break;
  }
  return hi;
}

// Output vector (run first/stride/len) from the source vectors.
static void emit_vector(xe_emitter_t* e, const runs_t* src, const int32_t* vec_of,
                        const int8_t* lane_of, int64_t first, int stride, int len, bool trans,
                        const zt_type_t* rt, zt_scalar_kind_t k, xe_name_t out) {
  const char* et = xe_elem(k);
  xe_name_t acc = "";
  for (int l = 0, hi; l < len; l = hi) {
    int32_t v;
    int d;
    hi = piece_at(vec_of, lane_of, first, stride, len, trans, rt, l, &v, &d);
    xe_name_t moved;
    if (d > 0) xe_lane_shuffle(e, k, src->names[v], "down", d, moved);
    else if (d < 0) xe_lane_shuffle(e, k, src->names[v], "up", -d, moved);
    else memcpy(moved, src->names[v], sizeof moved);
    if (l == 0 && hi == len) {
      memcpy(acc, moved, sizeof acc);  // one piece: the whole vector
    } else {
      if (!acc[0]) xe_vconst(e, zt_scalar_kind_is_float(k) ? "0.0" : "0", et, acc);
      xe_name_t lane, lo_c, hi_c, ge, lt, in, sel;
      char num[16];
      xe_lane_i32(e, lane);
      snprintf(num, sizeof num, "%d", l);
      xe_vconst(e, num, "i32", lo_c);
      snprintf(num, sizeof num, "%d", hi);
      xe_vconst(e, num, "i32", hi_c);
      xe_vbinary(e, "arith.cmpi sge,", lane, lo_c, "i32", ge);
      xe_vbinary(e, "arith.cmpi slt,", lane, hi_c, "i32", lt);
      xe_vbinary(e, "arith.andi", ge, lt, "i1", in);
      xe_vselect(e, in, moved, acc, et, sel);
      memcpy(acc, sel, sizeof acc);
    }
  }
  memcpy(out, acc, sizeof acc);
}

// Number of pieces an output vector (run first/stride/len) takes.
static int count_pieces(const int32_t* vec_of, const int8_t* lane_of, int64_t first,
                        int stride, int len, bool trans, const zt_type_t* rt) {
  int n = 0;
  int32_t v;
  int d;
  for (int l = 0; l < len; ++n)
    l = piece_at(vec_of, lane_of, first, stride, len, trans, rt, l, &v, &d);
  return n;
}

zt_status_t xe_emit_permute(xe_emitter_t* e, MlirOperation op) {
  bool trans = zt_op_named(op, "tile.trans");
  const char* what = trans ? "transpose" : "reshape";
  MlirValue src = mlirOperationGetOperand(op, 0), res = mlirOperationGetResult(op, 0);
  zt_type_t st, rt;
  ZT_RETURN_IF_ERROR(xe_tile_type(e, mlirValueGetType(src), &st));
  ZT_RETURN_IF_ERROR(xe_tile_type(e, mlirValueGetType(res), &rt));
  if (trans && (st.rank != 2 || !trans_order_ok(op)))
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "this transpose on Xe (2-D swaps only)");
  zt_scalar_kind_t k = st.kind;
  if (k == ZT_BF16 || k == ZT_I1 || k == ZT_PTR)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "a %s of %s tensors outside dots on Xe", what,
                   zt_scalar_kind_name(k));
  xe_val_t* s = xe_lookup(e, src);
  if (!s) return NULL;
  xe_val_t* made = NULL;
  if (s->layout == XE_LAYOUT_LAZY) {
    // Index arithmetic reshaped as data: its blocks first.
    xe_val_t* like = xe_alloc_blocks(e, st, XE_ROLE_C);
    if (!like) return NULL;
    made = like->layout == XE_LAYOUT_BLOCK2D ? xe_materialize_lazy(e, src, like) : NULL;
    xe_free_val(like);
    if (!made) return e->error ? NULL : xe_fail(e, ZT_STATUS_UNSUPPORTED, "this %s on Xe", what);
    s = made;
  }
  xe_val_t* r = rt.rank == 2 ? xe_alloc_blocks(e, rt, XE_ROLE_C) : xe_alloc(e, rt);
  runs_t in = {0}, out = {0};
  int32_t* vec_of = NULL;
  int8_t* lane_of = NULL;
  zt_status_t status = NULL;
  int64_t numel = rt.rank == 2 ? rt.shape[0] * rt.shape[1] : rt.shape[0];
  if (!r) goto done;
  if (trans && rt.rank == 2 && xe_emit_trans_blocks(e, s, r)) {
    // 16-column block tiles: a butterfly of shuffles in one subgroup, or
    // through SLM across subgroups (xe_transpose.c).
    if (!zt_scalar_kind_is_float(k)) xe_mark_data(e, res);
    if (!e->error) {
      xe_bind(e, res, r);
      r = NULL;
    }
    goto done;
  }
  if (!layout_runs(s, &st, &in) || !layout_runs(r, &rt, &out)) {
    status = xe_fail(e, ZT_STATUS_UNSUPPORTED,
                     "a %s of a tile split across subgroups or not made of 16-column blocks "
                     "on Xe (transposes of 16-column tiles: in one subgroup, or across "
                     "subgroups within the shared local memory a workgroup has; other "
                     "tiles: small, in one subgroup)", what);
    goto done;
  }
  vec_of = malloc((size_t)numel * sizeof *vec_of);
  lane_of = malloc((size_t)numel * sizeof *lane_of);
  if (!vec_of || !lane_of) {
    status = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
    goto done;
  }
  for (int i = 0; i < in.n; ++i)
    for (int l = 0; l < in.len[i]; ++l) {
      vec_of[in.first[i] + (int64_t)in.stride * l] = i;
      lane_of[in.first[i] + (int64_t)in.stride * l] = (int8_t)l;
    }
  int pieces = 0;
  for (int o = 0; o < out.n; ++o)
    pieces += count_pieces(vec_of, lane_of, out.first[o], out.stride, out.len[o], trans, &rt);
  if (pieces > MAX_PIECES) {
    status = xe_fail(e, ZT_STATUS_UNSUPPORTED,
                     "a %s that moves %d pieces of lanes on Xe (at most %d: small tiles; "
                     "a transpose feeding tl.dot goes to the dot)",
                     what, pieces, MAX_PIECES);
    goto done;
  }
  // The source's vectors: 1-D chunks as they are, block rows extracted.
  for (int i = 0; i < in.n; ++i) {
    if (st.rank == 1) {
      memcpy(in.names[i], s->names[i], sizeof in.names[i]);
    } else {
      int32_t rr = i % s->br, blk = i / s->br;
      xe_block_row(e, s, blk / s->nbc, blk % s->nbc, rr, in.names[i]);
    }
  }
  for (int o = 0; o < out.n; ++o)
    emit_vector(e, &in, vec_of, lane_of, out.first[o], out.stride, out.len[o], trans, &rt, k,
                out.names[o]);
  if (rt.rank == 1) {
    for (int o = 0; o < out.n; ++o) memcpy(r->names[o], out.names[o], sizeof r->names[o]);
  } else {
    const char* et = xe_block_elem(k);
    xe_name_t zero;
    xe_zero_block(e, k, et, r->br, xe_layout_attr(r), zero);
    for (int32_t b = 0; b < r->nbr * r->nbc; ++b) {
      xe_name_t acc;
      memcpy(acc, zero, sizeof acc);
      for (int32_t rr = 0; rr < r->br; ++rr)
        xe_block_insert_row(e, out.names[b * r->br + rr], acc, rr, et, r->br,
                            xe_layout_attr(r));
      memcpy(r->names[b], acc, sizeof acc);
    }
    // Integer results hold data now (blocks, not lazy index arithmetic).
    if (!zt_scalar_kind_is_float(k)) xe_mark_data(e, res);
  }
  if (!e->error) {
    xe_bind(e, res, r);
    r = NULL;
  }
done:
  free(vec_of);
  free(lane_of);
  runs_free(&in);
  runs_free(&out);
  xe_free_val(r);
  xe_free_val(made);
  return status;
}
