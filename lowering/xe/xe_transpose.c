// tile.trans of accumulator-shaped 2-D tiles (8x16 blocks, lane j holding
// column j) on Xe: the transposes the layout model calls the `lanes` tier
// (every element stays in its subgroup, rows and columns swap lanes and
// registers) and the `slm` tier (the tile is split across subgroups).
//
// Lanes: a 16x16 square of the tile is 16 row vectors x_i (lane l: element
// (i, l)); its transpose wants element (i, l) at register l of lane i. Four
// butterfly stages (distance d = 8, 4, 2, 1) each swap bit d of the register
// index with bit d of the lane index: register i takes, in the lanes whose
// bit d differs from i's, register i ^ d of lane l ^ d (one xor shuffle per
// register and stage, merged by a select on the lane's bit). 64 shuffles
// and 64 selects a square. The general permute (xe_reshape.c) moves each
// output lane that no neighbour shares as a piece of its own: up to 15
// shuffles and selects per output row, ~240 a square, and it stops at
// MAX_PIECES (a 64x64 fp32 tile).
//
// SLM: each subgroup writes its part's block rows to the source tile's
// place in a row-major buffer (16-lane scatters, as xe_convert.c does), a
// barrier, each subgroup reads its part of the transposed tile row by row
// as 16-lane gathers with the source's row pitch between lanes (a column
// of the source), and a second barrier frees the buffer for the next
// exchange of its kind and size (xe_slm_buffer's, shared).
//
// Served: f32, f16 and i32 tiles whose source and result are both 16-column
// blocks of 8 rows (role C). Anything else goes to xe_reshape.c's pieces.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xe/xe_transpose.h"

static const char* loc(xe_emitter_t* e) { return e->loc.data ? e->loc.data : ""; }

static bool c_blocks(const xe_val_t* v) {
  return v && v->layout == XE_LAYOUT_BLOCK2D && v->role == XE_ROLE_C && !v->narrow &&
         v->br == 8 && v->bc == 16 && !strcmp(xe_layout_attr(v), "#zt_a");
}

// The hoisted lane mask (lane & d) != 0.
static void lane_bit(xe_emitter_t* e, int d, xe_name_t out) {
  xe_name_t lane, dc, zc, an;
  char text[224], num[16];
  xe_lane_i32(e, lane);
  snprintf(num, sizeof num, "%d", d);
  xe_vconst(e, num, "i32", dc);
  xe_vconst(e, "0", "i32", zc);
  snprintf(text, sizeof text,
           "arith.andi %s, %s {layout_result_0 = " XE_LAYOUT_ATTR "} : vector<16xi32>", lane, dc);
  xe_hoist(e, text, true, an);
  snprintf(text, sizeof text,
           "arith.cmpi ne, %s, %s {layout_result_0 = " XE_LAYOUT_ATTR "} : vector<16xi32>", an,
           zc);
  xe_hoist(e, text, true, out);
}

// Source and result held whole by every subgroup, both sides multiples of
// 16: the butterfly per 16x16 square.
static void butterfly(xe_emitter_t* e, const xe_val_t* s, xe_val_t* r, zt_scalar_kind_t k) {
  const char* et = xe_elem(k);
  const char* bet = xe_block_elem(k);
  const char* attr = xe_layout_attr(r);
  xe_name_t mask[4];
  for (int b = 0; b < 4; ++b) lane_bit(e, 1 << b, mask[b]);
  xe_name_t zero;
  xe_zero_block(e, k, bet, r->br, attr, zero);
  for (int b = 0; b < r->nbr * r->nbc; ++b) memcpy(r->names[b], zero, sizeof zero);
  int64_t rows = s->tr, cols = s->tc;
  for (int64_t p = 0; p < rows / 16; ++p)
    for (int64_t q = 0; q < cols / 16; ++q) {
      xe_name_t x[16];
      for (int i = 0; i < 16; ++i)
        xe_block_row(e, s, (int32_t)(2 * p + i / 8), (int32_t)q, i % 8, x[i]);
      for (int b = 3; b >= 0; --b) {
        int d = 1 << b;
        xe_name_t y[16];
        for (int i = 0; i < 16; ++i) {
          // Lanes whose bit d equals i's keep x_i; the others take x_{i^d}
          // from lane l ^ d.
          xe_name_t moved;
          xe_lane_shuffle(e, k, x[i ^ d], "xor", d, moved);
          if (i & d) xe_vselect(e, mask[b], x[i], moved, et, y[i]);
          else xe_vselect(e, mask[b], moved, x[i], et, y[i]);
        }
        memcpy(x, y, sizeof x);
      }
      // x_i is row i of the result's square (q, p): rows 16q + i.
      for (int i = 0; i < 16; ++i) {
        int32_t blk = (int32_t)((2 * q + i / 8) * r->nbc + p);
        xe_block_insert_row(e, x[i], r->names[blk], i % 8, bet, r->br, attr);
      }
    }
}

// Lane l: the uniform `base` + k + l * m (the lane index times a splat, as
// zetile's distribution takes index vectors: no non-splat constants).
static void strided_offsets(xe_emitter_t* e, const char* base, int64_t k, int64_t m,
                            xe_name_t out) {
  char text[256];
  xe_name_t step, mc, lanes, kb, sum, v;
  xe_lane_index(e, step);
  snprintf(text, sizeof text,
           "arith.constant {layout_result_0 = " XE_LAYOUT_ATTR "} dense<%lld> : vector<16xindex>",
           (long long)m);
  xe_hoist(e, text, true, mc);
  snprintf(text, sizeof text,
           "arith.muli %s, %s {layout_result_0 = " XE_LAYOUT_ATTR "} : vector<16xindex>", step, mc);
  xe_hoist(e, text, true, lanes);
  if (!base[0] && !k) {
    memcpy(out, lanes, sizeof lanes);
    return;
  }
  snprintf(text, sizeof text, "arith.constant %lld : index", (long long)k);
  xe_hoist(e, text, false, kb);
  if (base[0]) {
    snprintf(text, sizeof text, "arith.addi %s, %s : index", base, kb);
    xe_hoist(e, text, false, sum);
  } else {
    memcpy(sum, kb, sizeof sum);
  }
  snprintf(text, sizeof text,
           "vector.broadcast %s {layout_result_0 = " XE_LAYOUT_ATTR "} : index to vector<16xindex>",
           sum);
  xe_hoist(e, text, true, v);
  snprintf(text, sizeof text,
           "arith.addi %s, %s {layout_result_0 = " XE_LAYOUT_ATTR "} : vector<16xindex>", lanes,
           v);
  xe_hoist(e, text, true, out);
}

// This subgroup's first row and column of a role-C record (tile_origin's
// rule in xe_matrix.c: grid row sg / sn splits rows, grid column sg % sn
// splits columns), as index values ("" when 0), scaled by rmul and cmul.
static void part_origin(xe_emitter_t* e, const xe_val_t* v, int64_t rmul, int64_t cmul,
                        xe_name_t out) {
  int sm = e->sg_m > 0 ? e->sg_m : 1, sn = e->sg_n > 0 ? e->sg_n : 1;
  xe_name_t row, col;
  xe_sg_index(e, sn, v->tr < v->type.shape[0] ? sm : 1, (int64_t)v->tr * rmul, row);
  xe_sg_index(e, 1, v->tc < v->type.shape[1] ? sn : 1, (int64_t)v->tc * cmul, col);
  xe_add_index(e, row, col, out);
}

static bool through_slm(xe_emitter_t* e, const xe_val_t* s, xe_val_t* r, zt_scalar_kind_t k) {
  int64_t rows = s->type.shape[0], cols = s->type.shape[1], n = rows * cols;
  const char* et = xe_elem(k);
  const char* bet = xe_block_elem(k);
  xe_name_t slm, all, sbase, dbase;
  if (!xe_slm_buffer(e, k, (int)n, slm)) return false;
  xe_all_true(e, all);
  part_origin(e, s, cols, 1, sbase);
  // The result's part starts at result row r0, column c0: source element
  // (c0, r0), i.e. c0 * cols + r0 in the buffer.
  part_origin(e, r, 1, cols, dbase);
  for (int32_t bi = 0; bi < s->nbr; ++bi)
    for (int32_t bj = 0; bj < s->nbc; ++bj)
      for (int32_t rr = 0; rr < s->br; ++rr) {
        xe_name_t row, offs;
        xe_block_row(e, s, bi, bj, rr, row);
        xe_slm_offsets(e, sbase, ((int64_t)bi * s->br + rr) * cols + 16LL * bj, offs);
        xe_slm_store(e, row, slm, offs, all, et, n);
      }
  xe_line(e);
  zt_strbuf_printf(&e->body, "gpu.barrier%s\n", loc(e));
  const char* attr = xe_layout_attr(r);
  xe_name_t zero;
  xe_zero_block(e, k, bet, r->br, attr, zero);
  for (int32_t bi = 0; bi < r->nbr; ++bi)
    for (int32_t bj = 0; bj < r->nbc; ++bj) {
      xe_name_t blk;
      memcpy(blk, zero, sizeof blk);
      for (int32_t rr = 0; rr < r->br; ++rr) {
        // Result (i, j) = source (j, i): row i of the result's block is a
        // column of the source, lanes `cols` elements apart.
        xe_name_t offs, row;
        strided_offsets(e, dbase, 16LL * bj * cols + (int64_t)bi * r->br + rr, cols, offs);
        xe_slm_load(e, slm, offs, all, et, n, row);
        xe_block_insert_row(e, row, blk, rr, bet, r->br, attr);
      }
      memcpy(r->names[bi * r->nbc + bj], blk, sizeof(xe_name_t));
    }
  xe_line(e);
  zt_strbuf_printf(&e->body, "gpu.barrier%s\n", loc(e));
  return true;
}

bool xe_emit_trans_blocks(xe_emitter_t* e, const xe_val_t* s, xe_val_t* r) {
  if (getenv("ZETILE_XE_TRANS_BLOCKS") && !strcmp(getenv("ZETILE_XE_TRANS_BLOCKS"), "0"))
    return false;
  if (!c_blocks(s) || !c_blocks(r)) return false;
  zt_scalar_kind_t k = s->type.kind;
  if (k != ZT_F32 && k != ZT_F16 && k != ZT_I32) return false;
  if (r->type.shape[0] != s->type.shape[1] || r->type.shape[1] != s->type.shape[0]) return false;
  bool whole = s->tr == s->type.shape[0] && s->tc == s->type.shape[1] &&
               r->tr == r->type.shape[0] && r->tc == r->type.shape[1];
  if (whole) {
    if (s->tr % 16 || s->tc % 16) return false;
    butterfly(e, s, r, k);
    return true;
  }
  int64_t bytes = s->type.shape[0] * s->type.shape[1] * zt_scalar_kind_bits(k) / 8;
  int64_t budget = e->target && e->target->slm_per_workgroup > 0
                       ? e->target->slm_per_workgroup
                       : 65536;
  if (bytes > budget) return false;
  return through_slm(e, s, r, k);
}
