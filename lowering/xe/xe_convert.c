// Layout conversions of 2-D block values (issue 12's conversion primitive):
// a BLOCK2D record moved into the blocks of another role (accumulator-shaped
// C blocks -> A operand blocks, ...) through shared local memory.
//
// Each subgroup writes every block row it holds to the tile's place in an
// SLM buffer of the whole tile (row-major, shape[0] x shape[1] elements),
// a workgroup barrier, then each subgroup reads the rows of the blocks the
// target role gives it, and a second barrier lets the next exchange reuse
// the buffer (buffers are shared per element kind and size, xe_slm_buffer).
// Replicated parts (A blocks are held by every subgroup of a grid row)
// write the same bits to the same places: no subgroup is singled out.
//
// Where this subgroup's part is the same rows and columns in both records
// (one subgroup, or a grid of one row for C -> B), every element stays in
// its lane and the target blocks are the source's rows regrouped in
// registers (8x16 accumulator blocks into 16x16 B blocks): no SLM.
// Otherwise the SLM round trip serves the `slm` tier and, for now, the
// `lanes` tier too (no shuffle form yet): 16-lane scatters/gathers per
// block row, correct for every pair of 16-column-block layouts the emitter
// makes. Not served: targets whose
// blocks are not rows of 16 lanes (int8 A/B blocks of 32 columns) and
// narrow tiles.
#include <stdio.h>
#include <string.h>

#include "xe/xe_internal.h"

static const char* loc(xe_emitter_t* e) { return e->loc.data ? e->loc.data : ""; }

// Whether a record's blocks are rows of 16 lanes, lane j column j
// (role A/C 8x16, fp32 B 16x16 and b16 B blocks: all "#zt_a").
static bool row_blocks(const xe_val_t* v) {
  return v->layout == XE_LAYOUT_BLOCK2D && !v->narrow && v->bc == 16 &&
         !strcmp(xe_layout_attr(v), "#zt_a");
}

// Hoisted index: this subgroup's first element of a record's part of the
// tile, as an offset into the row-major tile of `cols` columns ("" when 0).
static void part_base(xe_emitter_t* e, const xe_val_t* v, int64_t cols, xe_name_t out) {
  int sm = e->sg_m > 0 ? e->sg_m : 1, sn = e->sg_n > 0 ? e->sg_n : 1;
  xe_name_t row, col;
  // Grid row sg / sn splits rows (not for B), grid column sg % sn splits
  // columns (not for A): tile_origin's rule in xe_matrix.c.
  xe_sg_index(e, sn, v->role != XE_ROLE_B ? sm : 1, (int64_t)v->tr * cols, row);
  xe_sg_index(e, 1, v->role != XE_ROLE_A ? sn : 1, v->tc, col);
  xe_add_index(e, row, col, out);
}

static void row_of(xe_emitter_t* e, const xe_val_t* s, int32_t blk, int32_t rr, xe_name_t out) {
  const char* et = xe_block_elem(s->type.kind);
  xe_fresh(e, out);
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "%s = vector.extract %s[%d] {layout_result_0 = " XE_LAYOUT_ATTR
                   "} : vector<16x%s> from vector<%dx16x%s>%s\n",
                   out, s->names[blk], (int)rr, et, s->br, et, loc(e));
}

// bf16 travels as its i16 bits (the SLM buffer's element type), a whole
// block at a time: rows extracted from or inserted into a bf16 block
// vector leave bf16 vector poison in the LLVM IR after distribution, which
// SPIR-V cannot carry without SPV_KHR_bfloat16 (the 32-subgroup attention's
// P through SLM: "a bf16 value (llvm.mlir.poison) would reach SPIR-V");
// an i16 block has none.
static void block_bits_cast(xe_emitter_t* e, const char* v, int32_t br, const char* attr,
                            bool to_bits, xe_name_t out) {
  xe_fresh(e, out);
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "%s = arith.bitcast %s {layout_result_0 = %s} : vector<%dx16x%s> to "
                   "vector<%dx16x%s>%s\n",
                   out, v, attr, (int)br, to_bits ? "bf16" : "i16", (int)br,
                   to_bits ? "i16" : "bf16", loc(e));
}

// Row rr of the i16 block `bits` (br rows).
static void bits_row(xe_emitter_t* e, const char* bits, int32_t br, int32_t rr, xe_name_t out) {
  xe_fresh(e, out);
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "%s = vector.extract %s[%d] {layout_result_0 = " XE_LAYOUT_ATTR
                   "} : vector<16xi16> from vector<%dx16xi16>%s\n",
                   out, bits, (int)rr, (int)br, loc(e));
}

bool xe_convert_servable(const xe_val_t* s, int role) {
  if (!row_blocks(s)) return false;
  zt_scalar_kind_t k = s->type.kind;
  if (k != ZT_F32 && k != ZT_F16 && k != ZT_BF16 && k != ZT_I32) return false;
  return role == XE_ROLE_A || role == XE_ROLE_B || role == XE_ROLE_C || role == XE_ROLE_BW;
}

// A target record's blocks: rows of 16 lanes, or a 16-bit B operand's VNNI
// block (#zt_b, lane_data [2, 1]). Written row by row, the VNNI block is the
// same: in lane code (xe_distribute.c) every block is lane j's column j,
// rows in order, and the packing is the DPAS operand's view of those
// registers (a VNNI load is `packed`, a row insert places one element).
static bool target_blocks(const xe_val_t* d) {
  return row_blocks(d) || (d->layout == XE_LAYOUT_BLOCK2D && !d->narrow && d->bc == 16 &&
                           d->br == 16 && !strcmp(xe_layout_attr(d), "#zt_b"));
}

// Whether this subgroup's part of the tile is the same rows and columns in
// records s and d (tile_origin's rule: rows split unless B, columns split
// unless A, on grid dims of more than one subgroup).
static bool same_part(const xe_emitter_t* e, const xe_val_t* s, const xe_val_t* d) {
  int sm = e->sg_m > 0 ? e->sg_m : 1, sn = e->sg_n > 0 ? e->sg_n : 1;
  if (s->tr != d->tr || s->tc != d->tc) return false;
  if (sm > 1 && (s->role == XE_ROLE_B) != (d->role == XE_ROLE_B)) return false;
  if (sn > 1 && (s->role == XE_ROLE_A) != (d->role == XE_ROLE_A)) return false;
  return true;
}

// Every element stays in its lane and subgroup (the `registers` tier with
// blocks of another height: 8x16 accumulator blocks into 16x16 B blocks on
// a grid of one row): d's block rows are s's block rows, regrouped.
static void regroup(xe_emitter_t* e, const xe_val_t* s, xe_val_t* d) {
  zt_scalar_kind_t k = s->type.kind;
  const char* et = xe_block_elem(k);
  const char* attr = xe_layout_attr(d);
  xe_name_t zero;
  xe_zero_block(e, k, et, d->br, attr, zero);
  for (int32_t bi = 0; bi < d->nbr; ++bi)
    for (int32_t bj = 0; bj < d->nbc; ++bj) {
      xe_name_t blk;
      memcpy(blk, zero, sizeof blk);
      for (int32_t rr = 0; rr < d->br; ++rr) {
        int32_t row = bi * d->br + rr;  // in the subgroup's part
        xe_name_t v;
        row_of(e, s, (row / s->br) * s->nbc + bj, row % s->br, v);
        xe_block_insert_row(e, v, blk, rr, et, d->br, attr);
      }
      memcpy(d->names[bi * d->nbc + bj], blk, sizeof(xe_name_t));
    }
}

xe_val_t* xe_convert_blocks(xe_emitter_t* e, const xe_val_t* s, int role) {
  if (!xe_convert_servable(s, role)) {
    if (!e->error)
      e->error = xe_fail(e, ZT_STATUS_UNSUPPORTED,
                         "a layout conversion of a 2-D %s tile into dot operand %s blocks on Xe "
                         "(only 8x16 / 16x16 blocks of 16-lane rows are exchanged through "
                         "shared local memory)",
                         zt_scalar_kind_name(s->type.kind),
                         role == XE_ROLE_A ? "A" : role == XE_ROLE_C ? "C" : "B");
    return NULL;
  }
  zt_scalar_kind_t k = s->type.kind;
  int64_t rows = s->type.shape[0], cols = s->type.shape[1];
  int64_t n = rows * cols;
  xe_val_t* d = xe_alloc_role(e, s->type, role);
  if (!d) return NULL;
  if (!target_blocks(d) || d->type.shape[0] != rows) {
    xe_free_val(d);
    if (!e->error)
      e->error = xe_fail(e, ZT_STATUS_INTERNAL, "layout conversion: target blocks");
    return NULL;
  }
  if (same_part(e, s, d) && s->bc == d->bc) {
    regroup(e, s, d);
    return d;
  }
  int64_t bytes = n * zt_scalar_kind_bits(k) / 8;
  int64_t budget = e->target && e->target->slm_per_workgroup > 0
                       ? e->target->slm_per_workgroup
                       : 65536;
  if (bytes > budget) {
    if (!e->error)
      e->error = xe_fail(e, ZT_STATUS_UNSUPPORTED,
                         "a layout conversion of a %lldx%lld %s tile through shared local "
                         "memory needs %lld bytes, more than the %lld bytes a workgroup has "
                         "on %s",
                         (long long)rows, (long long)cols, zt_scalar_kind_name(k),
                         (long long)bytes, (long long)budget,
                         e->target && e->target->name ? e->target->name : "Xe");
    xe_free_val(d);
    return NULL;
  }
  bool bf = k == ZT_BF16;
  zt_scalar_kind_t bk = bf ? ZT_I16 : k;  // the buffer's element kind
  const char* set = xe_elem(bk);
  const char* et = xe_block_elem(k);
  xe_name_t slm, all, sbase, dbase;
  if (!xe_slm_buffer(e, bk, (int)n, slm)) {
    xe_free_val(d);
    return NULL;
  }
  xe_all_true(e, all);
  part_base(e, s, cols, sbase);
  part_base(e, d, cols, dbase);
  // Writes: block (bi, bj) row rr of this subgroup's part.
  for (int32_t bi = 0; bi < s->nbr; ++bi)
    for (int32_t bj = 0; bj < s->nbc; ++bj) {
      xe_name_t bits;
      if (bf) block_bits_cast(e, s->names[bi * s->nbc + bj], s->br, xe_layout_attr(s), true, bits);
      for (int32_t rr = 0; rr < s->br; ++rr) {
        xe_name_t row, offs;
        if (bf) bits_row(e, bits, s->br, rr, row);
        else row_of(e, s, bi * s->nbc + bj, rr, row);
        xe_slm_offsets(e, sbase, ((int64_t)bi * s->br + rr) * cols + 16LL * bj, offs);
        xe_slm_store(e, row, slm, offs, all, set, n);
      }
    }
  xe_line(e);
  zt_strbuf_printf(&e->body, "gpu.barrier%s\n", loc(e));
  const char* attr = xe_layout_attr(d);
  xe_name_t zero;
  // bf16 blocks are built from their i16 bits (block_bits_cast).
  xe_zero_block(e, bk, bf ? "i16" : et, d->br, attr, zero);
  for (int32_t bi = 0; bi < d->nbr; ++bi)
    for (int32_t bj = 0; bj < d->nbc; ++bj) {
      xe_name_t blk;
      memcpy(blk, zero, sizeof blk);
      for (int32_t rr = 0; rr < d->br; ++rr) {
        xe_name_t offs, row;
        xe_slm_offsets(e, dbase, ((int64_t)bi * d->br + rr) * cols + 16LL * bj, offs);
        xe_slm_load(e, slm, offs, all, set, n, row);
        xe_block_insert_row(e, row, blk, rr, bf ? "i16" : et, d->br, attr);
      }
      if (bf) {
        xe_name_t b;
        block_bits_cast(e, blk, d->br, attr, false, b);
        memcpy(blk, b, sizeof blk);
      }
      // The record takes the last insert's name (records' names are theirs
      // to rename: loops do the same, xe_flat_assign).
      memcpy(d->names[bi * d->nbc + bj], blk, sizeof(xe_name_t));
    }
  // The buffer is reused by the next exchange of its kind and size.
  xe_line(e);
  zt_strbuf_printf(&e->body, "gpu.barrier%s\n", loc(e));
  return d;
}
