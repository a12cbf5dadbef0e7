// tile.reduce of 1-D tensors to scalars on Xe: the combiner must be one of
// the built-in kinds (a function holding a single arith op on its two
// arguments); chunks are combined elementwise, then one vector.reduction
// (upstream lowers it to 4 butterfly shuffles across the 16 lanes).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>

#include "xe/xe_internal.h"

typedef struct reduce_kind_s {
  const char* op;         // combiner op in the tile IR
  const char* kind;       // vector.reduction kind
  const char* combine;    // elementwise op combining chunks
  int identity;           // see identity_text
  bool nan_propagating;   // maximumf/minimumf
} reduce_kind_t;

enum { ID_ZERO, ID_ONE, ID_NEG_INF, ID_POS_INF, ID_INT_MIN, ID_INT_MAX, ID_ONES };

static const reduce_kind_t kKinds[] = {
    {"arith.addf", "add", "arith.addf", ID_ZERO, false},
    {"arith.addi", "add", "arith.addi", ID_ZERO, false},
    {"arith.mulf", "mul", "arith.mulf", ID_ONE, false},
    {"arith.muli", "mul", "arith.muli", ID_ONE, false},
    // OpenCL fmax/fmin ignore NaN: maximumf/minimumf add a NaN check.
    {"arith.maximumf", "maxnumf", "arith.maxnumf", ID_NEG_INF, true},
    {"arith.minimumf", "minnumf", "arith.minnumf", ID_POS_INF, true},
    {"arith.maxnumf", "maxnumf", "arith.maxnumf", ID_NEG_INF, false},
    {"arith.minnumf", "minnumf", "arith.minnumf", ID_POS_INF, false},
    {"arith.maxsi", "maxsi", "arith.maxsi", ID_INT_MIN, false},
    {"arith.minsi", "minsi", "arith.minsi", ID_INT_MAX, false},
    {"arith.maxui", "maxui", "arith.maxui", ID_ZERO, false},
    {"arith.minui", "minui", "arith.minui", ID_ONES, false},
    {"arith.andi", "and", "arith.andi", ID_ONES, false},
    {"arith.ori", "or", "arith.ori", ID_ZERO, false},
    {"arith.xori", "xor", "arith.xori", ID_ZERO, false},
};

static const char* float_bits(zt_scalar_kind_t k, int which) {
  // which: 0 = -inf, 1 = +inf, 2 = NaN
  static const char* const f16[] = {"0xFC00", "0x7C00", "0x7E00"};
  static const char* const f32[] = {"0xFF800000", "0x7F800000", "0x7FC00000"};
  static const char* const f64[] = {"0xFFF0000000000000", "0x7FF0000000000000",
                                    "0x7FF8000000000000"};
  return k == ZT_F16 ? f16[which] : k == ZT_F64 ? f64[which] : f32[which];
}

static void identity_text(int id, zt_scalar_kind_t k, char* buf, size_t n) {
  bool f = zt_scalar_kind_is_float(k);
  int bits = zt_scalar_kind_bits(k);
  switch (id) {
    case ID_ZERO: snprintf(buf, n, f ? "0.0" : "0"); break;
    case ID_ONE: snprintf(buf, n, f ? "1.0" : "1"); break;
    case ID_NEG_INF: snprintf(buf, n, "%s", float_bits(k, 0)); break;
    case ID_POS_INF: snprintf(buf, n, "%s", float_bits(k, 1)); break;
    case ID_INT_MIN:
      if (bits == 1) snprintf(buf, n, "true");
      else snprintf(buf, n, "%lld", bits >= 64 ? (long long)INT64_MIN
                                               : -(1LL << (bits - 1)));
      break;
    case ID_INT_MAX:
      if (bits == 1) snprintf(buf, n, "false");
      else snprintf(buf, n, "%lld", bits >= 64 ? (long long)INT64_MAX
                                               : (1LL << (bits - 1)) - 1);
      break;
    default: snprintf(buf, n, bits == 1 ? "true" : "-1"); break;
  }
}

static bool str_is(MlirStringRef s, const char* c) {
  return s.length == strlen(c) && memcmp(s.data, c, s.length) == 0;
}

// Finds the built-in kind of the combiner function `name`, or NULL.
static const reduce_kind_t* combiner_kind(xe_emitter_t* e, MlirStringRef name) {
  MlirOperation mod = mlirModuleGetOperation(e->lc->tile);
  MlirBlock top = mlirRegionGetFirstBlock(mlirOperationGetRegion(mod, 0));
  MlirOperation f = zt_symbol_in_block(top, name);
  if (mlirOperationIsNull(f) || !zt_op_named(f, "func.func")) return NULL;
  MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0));
  if (mlirBlockIsNull(b) || mlirBlockGetNumArguments(b) != 2) return NULL;
  MlirOperation op = mlirBlockGetFirstOperation(b);
  if (mlirOperationIsNull(op)) return NULL;
  MlirOperation ret = mlirOperationGetNextInBlock(op);
  if (mlirOperationIsNull(ret) ||
      !str_is(mlirIdentifierStr(mlirOperationGetName(ret)), "func.return") ||
      mlirOperationGetNumOperands(ret) != 1 ||
      !mlirValueEqual(mlirOperationGetOperand(ret, 0), mlirOperationGetResult(op, 0)) ||
      mlirOperationGetNumOperands(op) != 2)
    return NULL;
  MlirValue a0 = mlirBlockGetArgument(b, 0), a1 = mlirBlockGetArgument(b, 1);
  MlirValue x = mlirOperationGetOperand(op, 0), y = mlirOperationGetOperand(op, 1);
  if (!((mlirValueEqual(x, a0) && mlirValueEqual(y, a1)) ||
        (mlirValueEqual(x, a1) && mlirValueEqual(y, a0))))
    return NULL;
  MlirStringRef on = mlirIdentifierStr(mlirOperationGetName(op));
  for (size_t i = 0; i < sizeof kKinds / sizeof kKinds[0]; ++i)
    if (str_is(on, kKinds[i].op)) return &kKinds[i];
  return NULL;
}

static const char* loc(xe_emitter_t* e) { return e->loc.data ? e->loc.data : ""; }

// i1 reductions travel as i32 0/1 across subgroups: the kind on i32 that
// gives the same result (i1's signed order has true < false).
static const char* i1_as_i32_kind(const char* kind) {
  if (!strcmp(kind, "add") || !strcmp(kind, "xor")) return "xor";
  if (!strcmp(kind, "mul") || !strcmp(kind, "and") || !strcmp(kind, "minui"))
    return "and";
  if (!strcmp(kind, "maxsi")) return "and";
  if (!strcmp(kind, "minsi")) return "or";
  return "or";  // or, maxui
}

void xe_cross_sg_reduce(xe_emitter_t* e, const char* kind, const char* identity,
                        zt_scalar_kind_t k, const char* in, xe_name_t out) {
  if (e->nsg <= 1) {
    snprintf(out, XE_NAME_MAX, "%s", in);
    return;
  }
  if (k == ZT_I1) {
    xe_name_t w, r;
    xe_fresh(e, w);
    xe_line(e);
    zt_strbuf_printf(&e->body, "%s = arith.extui %s : i1 to i32%s\n", w, in, loc(e));
    const char* k32 = i1_as_i32_kind(kind);
    xe_cross_sg_reduce(e, k32, strcmp(k32, "and") ? "0" : "1", ZT_I32, w, r);
    xe_fresh(e, out);
    xe_line(e);
    zt_strbuf_printf(&e->body, "%s = arith.trunci %s : i32 to i1%s\n", out, r, loc(e));
    return;
  }
  const char* et = xe_elem(k);
  xe_name_t slots[XE_MAX_SUBGROUPS / XE_SUBGROUP], idv, acc;
  int nv = xe_cross_sg_gather(e, k, in, slots);
  xe_vconst(e, identity, et, idv);
  for (int j = 0; j < nv; ++j) {
    xe_name_t sel;
    int valid = e->nsg - j * XE_SUBGROUP;
    if (valid < XE_SUBGROUP) {
      xe_name_t mask;
      xe_pad_mask(e, valid, mask);
      xe_vselect(e, mask, slots[j], idv, et, sel);
    } else {
      memcpy(sel, slots[j], sizeof sel);
    }
    if (j == 0) {
      memcpy(acc, sel, sizeof acc);
    } else {
      // Elementwise combination of the gathered slots.
      const char* cop = xe_reduction_combiner(kind, zt_scalar_kind_is_float(k));
      xe_name_t n;
      xe_vbinary(e, cop ? cop : "arith.addf", acc, sel, et, n);
      memcpy(acc, n, sizeof acc);
    }
  }
  xe_fresh(e, out);
  xe_line(e);
  zt_strbuf_printf(&e->body, "%s = vector.reduction <%s>, %s : vector<16x%s> into %s%s\n",
                   out, kind, acc, et, et, loc(e));
}

int xe_cross_sg_gather(xe_emitter_t* e, zt_scalar_kind_t k, const char* in,
                       xe_name_t* out) {
  const char* et = xe_elem(k);
  e->slm_kinds |= 1u << k;
  char text[256];
  xe_name_t slm, sg, sgv, lane0, b;
  snprintf(text, sizeof text, "memref.get_global @zt_slm_%s : memref<%dx%s, 3>", et,
           XE_MAX_SUBGROUPS, et);
  xe_hoist(e, text, false, slm);
  xe_sg_id(e, sg);
  snprintf(text, sizeof text,
           "vector.broadcast %s {layout_result_0 = " XE_LAYOUT_ATTR
           "} : index to vector<16xindex>",
           sg);
  xe_hoist(e, text, true, sgv);
  xe_lane0_mask(e, lane0);
  // Lane 0 of subgroup s writes slot s; after the barrier every subgroup
  // reads all slots (16 per gather).
  xe_fresh(e, b);
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "%s = vector.broadcast %s {layout_result_0 = " XE_LAYOUT_ATTR
                   "} : %s to vector<16x%s>%s\n",
                   b, in, et, et, loc(e));
  xe_slm_store(e, b, slm, sgv, lane0, et, XE_MAX_SUBGROUPS);
  xe_line(e);
  zt_strbuf_printf(&e->body, "gpu.barrier%s\n", loc(e));
  xe_name_t step;
  xe_lane_index(e, step);
  int nv = 0;
  for (int j = 0; j * XE_SUBGROUP < e->nsg; ++j, ++nv) {
    xe_name_t offs, mask;
    if (j == 0) {
      memcpy(offs, step, sizeof offs);
    } else {
      xe_name_t c;
      snprintf(text, sizeof text,
               "arith.constant {layout_result_0 = " XE_LAYOUT_ATTR
               "} dense<%d> : vector<16xindex>",
               j * XE_SUBGROUP);
      xe_hoist(e, text, true, c);
      snprintf(text, sizeof text,
               "arith.addi %s, %s {layout_result_0 = " XE_LAYOUT_ATTR
               "} : vector<16xindex>",
               step, c);
      xe_hoist(e, text, true, offs);
    }
    int valid = e->nsg - j * XE_SUBGROUP;
    if (valid >= XE_SUBGROUP) xe_all_true(e, mask);
    else xe_pad_mask(e, valid, mask);
    xe_fresh(e, out[j]);
    xe_line(e);
    zt_strbuf_printf(&e->body,
                     "%s = xegpu.load %s[%s], %s <{layout = " XE_LAYOUT_ATTR
                     "}> : memref<%dx%s, 3>, vector<16xindex>, vector<16xi1> -> "
                     "vector<16x%s>%s\n",
                     out[j], slm, offs, mask, XE_MAX_SUBGROUPS, et, et, loc(e));
  }
  // The slots are reused by the next exchange: wait until all have read.
  xe_line(e);
  zt_strbuf_printf(&e->body, "gpu.barrier%s\n", loc(e));
  return nv;
}

bool xe_slm_buffer(xe_emitter_t* e, zt_scalar_kind_t k, int n, xe_name_t out) {
  int i = 0;
  while (i < e->nslm_bufs && !(e->slm_bufs[i].kind == (int)k && e->slm_bufs[i].n == n)) ++i;
  if (i == e->nslm_bufs) {
    if (i == (int)(sizeof e->slm_bufs / sizeof e->slm_bufs[0])) {
      if (!e->error)
        e->error = xe_fail(e, ZT_STATUS_UNSUPPORTED,
                           "more than %d shared local memory exchanges of different sizes in "
                           "one kernel on Xe", i);
      return false;
    }
    e->slm_bufs[i].kind = (int)k;
    e->slm_bufs[i].n = n;
    e->nslm_bufs++;
  }
  const char* et = xe_elem(k);
  char text[128];
  snprintf(text, sizeof text, "memref.get_global @zt_slm_%s_%d : memref<%dx%s, 3>", et, n, n, et);
  xe_hoist(e, text, false, out);
  return true;
}

// `out` = lane index + base + k (base: a hoisted uniform index, or "" for
// none), hoisted: the vector<16xindex> offsets of an SLM gather or scatter.
static void slm_offsets(xe_emitter_t* e, const char* base, int64_t k, xe_name_t out) {
  xe_name_t step, kb, sum, v;
  char text[192];
  xe_lane_index(e, step);
  if (!base || !base[0]) {
    if (k == 0) {
      memcpy(out, step, sizeof(xe_name_t));
      return;
    }
    snprintf(text, sizeof text,
             "arith.constant {layout_result_0 = " XE_LAYOUT_ATTR "} dense<%lld> : vector<16xindex>",
             (long long)k);
    xe_hoist(e, text, true, v);
  } else {
    snprintf(text, sizeof text, "arith.constant %lld : index", (long long)k);
    xe_hoist(e, text, false, kb);
    if (k) {
      snprintf(text, sizeof text, "arith.addi %s, %s : index", base, kb);
      xe_hoist(e, text, false, sum);
    } else {
      memcpy(sum, base, sizeof sum);
    }
    snprintf(text, sizeof text,
             "vector.broadcast %s {layout_result_0 = " XE_LAYOUT_ATTR "} : index to vector<16xindex>",
             sum);
    xe_hoist(e, text, true, v);
  }
  snprintf(text, sizeof text,
           "arith.addi %s, %s {layout_result_0 = " XE_LAYOUT_ATTR "} : vector<16xindex>", step, v);
  xe_hoist(e, text, true, out);
}

// Hoisted index `sg_id / div % mod * mul` ("" when it is always 0).
static void sg_index(xe_emitter_t* e, int div, int mod, int64_t mul, xe_name_t out) {
  out[0] = 0;
  if (mod <= 1 || mul == 0) return;
  xe_name_t sg, c, q, r;
  char text[160];
  xe_sg_id(e, sg);
  memcpy(q, sg, sizeof q);
  if (div > 1) {
    snprintf(text, sizeof text, "arith.constant %d : index", div);
    xe_hoist(e, text, false, c);
    snprintf(text, sizeof text, "arith.divui %s, %s : index", sg, c);
    xe_hoist(e, text, false, q);
  }
  snprintf(text, sizeof text, "arith.constant %d : index", mod);
  xe_hoist(e, text, false, c);
  snprintf(text, sizeof text, "arith.remui %s, %s : index", q, c);
  xe_hoist(e, text, false, r);
  snprintf(text, sizeof text, "arith.constant %lld : index", (long long)mul);
  xe_hoist(e, text, false, c);
  snprintf(text, sizeof text, "arith.muli %s, %s : index", r, c);
  xe_hoist(e, text, false, out);
}

static void add_index(xe_emitter_t* e, const char* a, const char* b, xe_name_t out) {
  if (!a[0] || !b[0]) {
    memcpy(out, a[0] ? a : b, sizeof(xe_name_t));
    return;
  }
  char text[128];
  snprintf(text, sizeof text, "arith.addi %s, %s : index", a, b);
  xe_hoist(e, text, false, out);
}

// The three index helpers above, for the layout conversions (xe_convert.c).
void xe_slm_offsets(xe_emitter_t* e, const char* base, int64_t k, xe_name_t out) {
  slm_offsets(e, base, k, out);
}
void xe_sg_index(xe_emitter_t* e, int div, int mod, int64_t mul, xe_name_t out) {
  sg_index(e, div, mod, mul, out);
}
void xe_slm_store(xe_emitter_t* e, const char* v, const char* slm, const char* offs,
                  const char* mask, const char* et, int64_t n) {
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "xegpu.store %s, %s[%s], %s <{layout = " XE_LAYOUT_ATTR
                   "}> : vector<16x%s>, memref<%lldx%s, 3>, vector<16xindex>, "
                   "vector<16xi1>%s\n",
                   v, slm, offs, mask, et, (long long)n, et, loc(e));
}
void xe_slm_load(xe_emitter_t* e, const char* slm, const char* offs, const char* mask,
                 const char* et, int64_t n, xe_name_t out) {
  xe_fresh(e, out);
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "%s = xegpu.load %s[%s], %s <{layout = " XE_LAYOUT_ATTR
                   "}> : memref<%lldx%s, 3>, vector<16xindex>, vector<16xi1> -> "
                   "vector<16x%s>%s\n",
                   out, slm, offs, mask, (long long)n, et, et, loc(e));
}
void xe_add_index(xe_emitter_t* e, const char* a, const char* b, xe_name_t out) {
  add_index(e, a, b, out);
}

void xe_slm_from_sg0(xe_emitter_t* e, zt_scalar_kind_t k, const char* v, int ch, int n,
                     xe_name_t out) {
  const char* et = xe_elem(k);
  xe_name_t slm, offs, sg0, all;
  if (!xe_slm_buffer(e, k, 16 * n, slm)) {
    snprintf(out, XE_NAME_MAX, "%s", v);
    return;
  }
  slm_offsets(e, "", 16LL * ch, offs);
  xe_sg0_mask(e, sg0);
  xe_all_true(e, all);
  xe_slm_store(e, v, slm, offs, sg0, et, 16LL * n);
  xe_line(e);
  zt_strbuf_printf(&e->body, "gpu.barrier%s\n", loc(e));
  xe_fresh(e, out);
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "%s = xegpu.load %s[%s], %s <{layout = " XE_LAYOUT_ATTR
                   "}> : memref<%dx%s, 3>, vector<16xindex>, vector<16xi1> -> vector<16x%s>%s\n",
                   out, slm, offs, all, 16 * n, et, et, loc(e));
  xe_line(e);
  zt_strbuf_printf(&e->body, "gpu.barrier%s\n", loc(e));
}

// any |= isnan(v): the NaN-propagating max/min's record of the partials it
// combined (any starts empty: the first one is taken as it is).
static void or_nan(xe_emitter_t* e, const char* v, const char* et, xe_name_t any) {
  xe_name_t u;
  xe_vbinary(e, "arith.cmpf uno,", v, v, et, u);
  if (any[0]) {
    xe_name_t o;
    xe_vbinary(e, "arith.ori", any, u, "i1", o);
    memcpy(any, o, sizeof(xe_name_t));
  } else {
    memcpy(any, u, sizeof(xe_name_t));
  }
}

// The second half of both exchanges below: after the barrier that ends the
// writes, each subgroup reads, for every chunk c of the 1-D result it holds,
// the `nparts` partials at SLM slots (part * T + c) * 16, combines them in
// part order (a NaN-propagating max/min returns NaN if any partial is one),
// and barriers again so the next exchange may reuse the buffer. Lanes at or
// past `valid` in chunk c (the padding of a result shorter than 16) read
// with a false mask; valid < 0 means every lane is valid.
static zt_status_t combine_slm_partials(xe_emitter_t* e, const reduce_kind_t* rk,
                                        zt_scalar_kind_t k, const char* slm, int64_t n,
                                        int nparts, int64_t T, int64_t valid, bool nan_check,
                                        xe_val_t* r) {
  const char* et = xe_elem(k);
  xe_name_t all;
  xe_all_true(e, all);
  // The first chunk this subgroup holds: sg * nchunks when distributed.
  xe_name_t rbase = "";
  if (r->dist) sg_index(e, 1, e->nsg, 16LL * r->nchunks, rbase);
  xe_name_t nan_v;
  if (nan_check) xe_vconst(e, float_bits(k, 2), et, nan_v);
  for (int32_t c = 0; c < r->nchunks; ++c) {
    xe_name_t acc = "", any = "";
    xe_name_t mask;
    if (valid < 0 || valid - 16LL * c >= 16 || r->dist) memcpy(mask, all, sizeof mask);
    else xe_pad_mask(e, valid - 16LL * c, mask);
    for (int i = 0; i < nparts; ++i) {
      xe_name_t offs, v;
      slm_offsets(e, rbase, ((int64_t)i * T + c) * 16, offs);
      xe_slm_load(e, slm, offs, mask, et, n, v);
      if (nan_check) or_nan(e, v, et, any);
      if (!acc[0]) {
        memcpy(acc, v, sizeof acc);
      } else {
        xe_name_t nv;
        xe_vbinary(e, rk->combine, acc, v, et, nv);
        memcpy(acc, nv, sizeof acc);
      }
    }
    if (nan_check) xe_vselect(e, any, nan_v, acc, et, r->names[c]);
    else memcpy(r->names[c], acc, sizeof acc);
  }
  xe_line(e);
  zt_strbuf_printf(&e->body, "gpu.barrier%s\n", loc(e));
  return NULL;
}

// How many different row parts and column parts of a 2-D record the
// subgroups hold: the grid's rows and columns, less the copies. A blocks are
// the same across a grid row (all columns in each subgroup), B blocks down
// a grid column (all rows), col_rep B blocks in every subgroup. Copies write
// the same bits to the same SLM slots, and each slot is combined once, so
// no element is counted twice.
static void parts_of(const xe_emitter_t* e, const xe_val_t* s, int* rparts, int* cparts) {
  *rparts = s->role == XE_ROLE_B ? 1 : e->sg_m;
  *cparts = s->role == XE_ROLE_A || s->col_rep ? 1 : e->sg_n;
}

// Axis 0 of a tile whose rows are split across subgroups (sg_m > 1): the
// column partials `part` (nbc chunks of 16 columns, this subgroup's own
// rows combined; a NaN where a NaN-propagating max/min met one) meet in
// SLM, slot [grid row][column chunk of the whole tile], and after a barrier
// each subgroup combines the sg_m partials of every chunk of the 1-D result
// it holds (all of them when the result is replicated, its share when
// distributed), in grid-row order, so every subgroup computes the same bits.
// A second barrier lets the next exchange reuse the buffer. (Records held
// in copies: one slot per different row part, parts_of.)
static zt_status_t cols_across_subgroups(xe_emitter_t* e, const reduce_kind_t* rk,
                                         const xe_val_t* s, xe_name_t* part, bool nan_check,
                                         xe_val_t* r) {
  zt_scalar_kind_t k = s->type.kind;
  const char* et = xe_elem(k);
  int64_t T = s->type.shape[1] / 16;  // column chunks of the whole tile
  int sm, sn;
  parts_of(e, s, &sm, &sn);
  if (s->type.shape[1] % 16 || T != (int64_t)sn * s->nbc ||
      r->nchunks != (r->dist ? T / e->nsg : T))
    return xe_fail(e, ZT_STATUS_INTERNAL, "column reduction across subgroups: layouts");
  int64_t n = (int64_t)sm * T * 16;
  if (n * zt_scalar_kind_bits(k) / 8 > 65536)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "a 2-D reduction along axis 0 across %d subgroups of a tile %lld columns wide "
                   "needs %lld bytes of shared local memory on Xe (64 KB at most)",
                   sm, (long long)s->type.shape[1], (long long)(n * zt_scalar_kind_bits(k) / 8));
  xe_name_t slm, all, wrow, wcol, wbase;
  if (!xe_slm_buffer(e, k, (int)n, slm)) return NULL;
  xe_all_true(e, all);
  // This subgroup's slots: grid row sg / sg_n, grid column sg % sg_n.
  sg_index(e, e->sg_n, sm, T * 16, wrow);
  sg_index(e, 1, sn, (int64_t)s->nbc * 16, wcol);
  add_index(e, wrow, wcol, wbase);
  for (int32_t bj = 0; bj < s->nbc; ++bj) {
    xe_name_t offs;
    slm_offsets(e, wbase, 16LL * bj, offs);
    xe_slm_store(e, part[bj], slm, offs, all, et, n);
  }
  xe_line(e);
  zt_strbuf_printf(&e->body, "gpu.barrier%s\n", loc(e));
  return combine_slm_partials(e, rk, k, slm, n, sm, T, -1, nan_check, r);
}

// Axis 1 of a tile whose columns are split across subgroups (sg_n > 1), or
// whose rows per subgroup are not whole 16-row chunks of the 1-D result:
// each subgroup's row partials `part` (nout chunks, lane i = its row 16c + i;
// its own columns combined) go to SLM slot [grid column][row of the whole
// tile], and after a barrier each subgroup combines, in grid-column order,
// the sg_n partials of every chunk of the 1-D result it holds. Mirrors
// cols_across_subgroups (records held in copies: one slot per different
// column part).
static zt_status_t rows_across_subgroups(xe_emitter_t* e, const reduce_kind_t* rk,
                                         const xe_val_t* s, xe_name_t* part, int32_t nout,
                                         bool nan_check, xe_val_t* r) {
  zt_scalar_kind_t k = s->type.kind;
  const char* et = xe_elem(k);
  int64_t R = s->type.shape[0];
  int64_t Rp = (R + 15) / 16 * 16;  // the 1-D result's chunks, padding included
  int64_t T = Rp / 16;
  int sm, sn;
  parts_of(e, s, &sm, &sn);
  if (R != (int64_t)sm * s->tr || r->nchunks != (r->dist ? T / e->nsg : T))
    return xe_fail(e, ZT_STATUS_INTERNAL, "row reduction across subgroups: layouts");
  int64_t n = (int64_t)sn * Rp;
  if (n * zt_scalar_kind_bits(k) / 8 > 65536)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "a 2-D reduction along axis 1 across %d subgroups of a tile %lld rows high "
                   "needs %lld bytes of shared local memory on Xe (64 KB at most)",
                   sn, (long long)R, (long long)(n * zt_scalar_kind_bits(k) / 8));
  xe_name_t slm, all, wrow, wcol, wbase;
  if (!xe_slm_buffer(e, k, (int)n, slm)) return NULL;
  xe_all_true(e, all);
  // This subgroup's slots: grid column sg % sg_n, its rows from
  // (sg / sg_n) * tr.
  sg_index(e, 1, sn, Rp, wcol);
  sg_index(e, e->sg_n, sm, s->tr, wrow);
  add_index(e, wcol, wrow, wbase);
  for (int32_t c = 0; c < nout; ++c) {
    xe_name_t offs, mask;
    slm_offsets(e, wbase, 16LL * c, offs);
    int64_t left = s->tr - 16LL * c;
    if (left >= 16) memcpy(mask, all, sizeof mask);
    else xe_pad_mask(e, left, mask);
    xe_slm_store(e, part[c], slm, offs, mask, et, n);
  }
  xe_line(e);
  zt_strbuf_printf(&e->body, "gpu.barrier%s\n", loc(e));
  // Lanes past the last row (R < 16) read slots nobody wrote: padding.
  return combine_slm_partials(e, rk, k, slm, n, sn, T, R, nan_check, r);
}

// The built-in kind of a tile.reduce (one operand, a single-op combiner).
static zt_status_t reduce_kind_of(xe_emitter_t* e, MlirOperation op, const reduce_kind_t** out) {
  MlirAttribute comb = mlirOperationGetAttributeByName(
      op, mlirStringRefCreateFromCString("combiner"));
  if (mlirAttributeIsNull(comb) || !mlirAttributeIsAFlatSymbolRef(comb))
    return xe_fail(e, ZT_STATUS_INVALID_ARGUMENT, "tile.reduce without a combiner");
  MlirStringRef cname = mlirFlatSymbolRefAttrGetValue(comb);
  if (mlirOperationGetNumOperands(op) != 1)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "reductions of %d tensors at once (argmin/argmax-style "
                   "combiners) are not supported on Xe yet",
                   (int)mlirOperationGetNumOperands(op));
  *out = combiner_kind(e, cname);
  if (!*out)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "user-defined reduction combiner @%.*s (only single-op "
                   "built-in combiners such as sum/max/min are supported on Xe yet)",
                   (int)cname.length, cname.data);
  return NULL;
}

bool xe_reduce_is_builtin(xe_emitter_t* e, MlirOperation op) {
  MlirAttribute comb = mlirOperationGetAttributeByName(
      op, mlirStringRefCreateFromCString("combiner"));
  return mlirOperationGetNumOperands(op) == 1 && !mlirAttributeIsNull(comb) &&
         mlirAttributeIsAFlatSymbolRef(comb) &&
         combiner_kind(e, mlirFlatSymbolRefAttrGetValue(comb)) != NULL;
}

zt_status_t xe_emit_any_reduce(xe_emitter_t* e, MlirOperation op) {
  MlirValue x = mlirOperationGetOperand(op, 0);
  bool two_d = mlirTypeIsARankedTensor(mlirValueGetType(x)) &&
               mlirShapedTypeGetRank(mlirValueGetType(x)) == 2;
  if (xe_argreduce_matches(e, op)) return xe_emit_argreduce(e, op);
  if (xe_reduce_is_builtin(e, op)) return two_d ? xe_emit_reduce_2d(e, op) : xe_emit_reduce(e, op);
  return xe_emit_reduce_user(e, op);
}

static zt_status_t reduce_row16(xe_emitter_t* e, const reduce_kind_t* rk, const xe_val_t* s,
                                xe_val_t** out);

zt_status_t xe_emit_reduce(xe_emitter_t* e, MlirOperation op) {
  const reduce_kind_t* rk;
  ZT_RETURN_IF_ERROR(reduce_kind_of(e, op, &rk));
  xe_val_t* s = xe_lookup(e, mlirOperationGetOperand(op, 0));
  if (!s) return NULL;
  if (s->layout != XE_LAYOUT_ROW16)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "reduction of a scalar");
  xe_val_t* r = NULL;
  ZT_RETURN_IF_ERROR(reduce_row16(e, rk, s, &r));
  if (r) xe_bind(e, mlirOperationGetResult(op, 0), r);
  return NULL;
}

// A 1-D (ROW16) record reduced to a new scalar record.
static zt_status_t reduce_row16(xe_emitter_t* e, const reduce_kind_t* rk, const xe_val_t* s,
                                xe_val_t** out) {
  *out = NULL;
  zt_scalar_kind_t k = s->type.kind;
  if (k == ZT_BF16) {
    // bf16: reduce the f32 values (exact for max/min; sums and products
    // accumulate in f32) and round the result once.
    xe_val_t* wide = xe_bf16_to_f32(e, s);
    if (!wide) return NULL;
    wide->dist = s->dist;
    xe_val_t* r32 = NULL;
    zt_status_t st = reduce_row16(e, rk, wide, &r32);
    xe_free_val(wide);
    if (st || !r32) return st;
    *out = xe_f32_to_bf16(e, r32);
    xe_free_val(r32);
    return NULL;
  }
  bool f = zt_scalar_kind_is_float(k);
  bool nan_check = rk->nan_propagating && f;
  const char* et = xe_elem(k);
  char idt[48];
  identity_text(rk->identity, k, idt, sizeof idt);

  // Padding lanes (tensors of fewer than 16 elements) hold the identity.
  xe_name_t acc;
  memcpy(acc, s->names[0], sizeof acc);
  if (s->numel < XE_SUBGROUP) {
    xe_name_t pad, id;
    xe_pad_mask(e, s->numel, pad);
    xe_vconst(e, idt, et, id);
    xe_vselect(e, pad, s->names[0], id, et, acc);
  }
  xe_name_t first;
  memcpy(first, acc, sizeof first);
  for (int32_t c = 1; c < s->nchunks; ++c) {
    xe_name_t n;
    xe_vbinary(e, rk->combine, acc, s->names[c], et, n);
    memcpy(acc, n, sizeof acc);
  }
  xe_val_t* r = xe_alloc(e, zt_type_scalar(k));
  if (!r) return NULL;
  xe_name_t red;
  bool cross = s->dist && e->nsg > 1;
  if (nan_check || cross) xe_fresh(e, red);
  else memcpy(red, r->names[0], sizeof red);
  xe_line(e);
  zt_strbuf_printf(&e->body, "%s = vector.reduction <%s>, %s : vector<16x%s> into %s%s\n",
                   red, rk->kind, acc, et, et, loc(e));
  if (cross) {
    // Per-subgroup partial results -> the workgroup's result.
    xe_name_t all;
    xe_cross_sg_reduce(e, rk->kind, idt, k, red, all);
    if (nan_check) {
      memcpy(red, all, sizeof red);
    } else {
      memcpy(r->names[0], all, sizeof all);
    }
  }
  if (nan_check) {
    // Any NaN in the source makes the result NaN (tile IR's maximumf).
    xe_name_t any;
    for (int32_t c = 0; c < s->nchunks; ++c) {
      xe_name_t u;
      const char* src = c == 0 ? first : s->names[c];
      xe_fresh(e, u);
      xe_line(e);
      zt_strbuf_printf(&e->body,
                       "%s = arith.cmpf uno, %s, %s {layout_result_0 = " XE_LAYOUT_ATTR
                       "} : vector<16x%s>%s\n",
                       u, src, src, et, loc(e));
      if (c == 0) {
        memcpy(any, u, sizeof any);
      } else {
        xe_name_t o;
        xe_fresh(e, o);
        xe_line(e);
        zt_strbuf_printf(&e->body,
                         "%s = arith.ori %s, %s {layout_result_0 = " XE_LAYOUT_ATTR
                         "} : vector<16xi1>%s\n",
                         o, any, u, loc(e));
        memcpy(any, o, sizeof any);
      }
    }
    xe_name_t one, zero, flags, cnt, nan, isnan;
    xe_vconst(e, "1.0", et, one);
    xe_vconst(e, "0.0", et, zero);
    xe_vselect(e, any, one, zero, et, flags);
    xe_fresh(e, cnt);
    xe_line(e);
    xe_name_t cnt0;
    xe_fresh(e, cnt0);
    zt_strbuf_printf(&e->body,
                     "%s = vector.reduction <maxnumf>, %s : vector<16x%s> into %s%s\n",
                     cross ? cnt0 : cnt, flags, et, et, loc(e));
    if (cross) {
      xe_name_t all;
      xe_cross_sg_reduce(e, "maxnumf", "0.0", k, cnt0, all);
      memcpy(cnt, all, sizeof cnt);
    }
    char text[96];
    xe_name_t zs;
    snprintf(text, sizeof text, "arith.constant 0.0 : %s", et);
    xe_hoist(e, text, false, zs);
    snprintf(text, sizeof text, "arith.constant %s : %s", float_bits(k, 2), et);
    xe_hoist(e, text, false, nan);
    xe_fresh(e, isnan);
    xe_line(e);
    zt_strbuf_printf(&e->body, "%s = arith.cmpf ogt, %s, %s : %s%s\n", isnan, cnt, zs,
                     et, loc(e));
    xe_line(e);
    zt_strbuf_printf(&e->body, "%s = arith.select %s, %s, %s : %s%s\n", r->names[0],
                     isnan, nan, red, et, loc(e));
  }
  *out = r;
  return NULL;
}

// acc's lane i = the reduction of the 1-D view x (a uniform scalar).
static zt_status_t reduce_into_lane(xe_emitter_t* e, const reduce_kind_t* rk, const xe_val_t* x,
                                    int i, xe_name_t acc) {
  xe_val_t* sc = NULL;
  ZT_RETURN_IF_ERROR(reduce_row16(e, rk, x, &sc));
  if (!sc) return NULL;
  xe_name_t sel;
  xe_put_lane(e, sc->names[0], i, acc, xe_elem(x->type.kind), sel);
  xe_free_val(sc);
  memcpy(acc, sel, sizeof sel);
  return NULL;
}

// A narrow tile (by columns, xe_val_t.narrow). Along axis 1 a row's
// elements sit in one lane of each block row: the rows combine elementwise
// and block bi is output chunk bi. Along axis 0 column j (row j of every
// block, padding lanes set to the identity) is reduced like a 1-D tensor
// and its scalar goes to lane j.
static zt_status_t reduce_narrow(xe_emitter_t* e, const reduce_kind_t* rk, const xe_val_t* s,
                                 int axis, xe_val_t* r) {
  zt_scalar_kind_t k = s->type.kind;
  const char* et = xe_elem(k);
  bool nan_check = rk->nan_propagating && zt_scalar_kind_is_float(k);
  char idt[48];
  identity_text(rk->identity, k, idt, sizeof idt);
  xe_name_t id;
  xe_vconst(e, idt, et, id);
  if (r->nchunks != (axis == 1 ? s->nbr : 1) || s->nbr > 64)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "this reduction of a narrow tile on Xe");
  if (axis == 1) {
    xe_name_t nan_v;
    if (nan_check) xe_vconst(e, float_bits(k, 2), et, nan_v);
    for (int32_t bi = 0; bi < s->nbr; ++bi) {
      xe_name_t acc, any = "";
      for (int32_t j = 0; j < s->br; ++j) {
        xe_name_t row, n;
        xe_block_row(e, s, bi, 0, j, row);
        if (nan_check) or_nan(e, row, et, any);
        if (j == 0) {
          memcpy(acc, row, sizeof acc);
          continue;
        }
        xe_vbinary(e, rk->combine, acc, row, et, n);
        memcpy(acc, n, sizeof acc);
      }
      if (nan_check) xe_vselect(e, any, nan_v, acc, et, r->names[bi]);
      else memcpy(r->names[bi], acc, sizeof acc);
    }
    return NULL;
  }
  xe_name_t out;
  memcpy(out, id, sizeof out);
  for (int32_t j = 0; j < s->br; ++j) {
    xe_name_t names[64];
    for (int32_t bi = 0; bi < s->nbr; ++bi) {
      xe_block_row(e, s, bi, 0, j, names[bi]);
      int64_t left = s->tr - 16LL * bi;
      if (left < 16) {
        xe_name_t pad, sel;
        xe_pad_mask(e, left, pad);
        xe_vselect(e, pad, names[bi], id, et, sel);
        memcpy(names[bi], sel, sizeof sel);
      }
    }
    xe_val_t tmp = {.layout = XE_LAYOUT_ROW16, .numel = 16LL * s->nbr, .nchunks = s->nbr,
                    .names = names};
    tmp.type = zt_type_tensor(zt_type_scalar(k), 1, (int64_t[]){tmp.numel});
    ZT_RETURN_IF_ERROR(reduce_into_lane(e, rk, &tmp, j, out));
    if (e->error) return NULL;
  }
  memcpy(r->names[0], out, sizeof out);
  return NULL;
}

// tile.reduce of a 2-D tile (BLOCK2D, one subgroup) along one axis, to a
// 1-D tensor in the ROW16 layout. Only ops that upstream distributes are
// used: rows of a block are vector<16> values (vector.extract), lane j
// holding column j.
//  axis 0: each output chunk (16 columns) combines, elementwise, every row
//          of its block column: no cross-lane work.
//  axis 1: each row's blocks combine elementwise, then its 16 lanes by xor
//          shuffles; output chunk c takes row 16c + i's total into lane i
//          with a select on the lane index (NaN-propagating max/min reduce
//          the row like a 1-D chunk instead).
// Narrow tiles: reduce_narrow. Index arithmetic is made blocks first.
static zt_status_t reduce_2d(xe_emitter_t* e, MlirOperation op, const reduce_kind_t* rk,
                             xe_val_t* s);

zt_status_t xe_emit_reduce_2d(xe_emitter_t* e, MlirOperation op) {
  const reduce_kind_t* rk;
  ZT_RETURN_IF_ERROR(reduce_kind_of(e, op, &rk));
  MlirValue src = mlirOperationGetOperand(op, 0);
  xe_val_t* s = xe_lookup(e, src);
  if (!s) return NULL;
  if (s->layout != XE_LAYOUT_LAZY || s->type.kind == ZT_PTR || s->type.kind == ZT_I1)
    return reduce_2d(e, op, rk, s);
  // Index arithmetic reduced (a rank: the count of smaller elements, a
  // histogram's one-hot sums): its blocks first.
  xe_val_t* like = xe_alloc_blocks(e, s->type, XE_ROLE_C);
  xe_val_t* made = like && like->layout == XE_LAYOUT_BLOCK2D ? xe_materialize_lazy(e, src, like)
                                                              : NULL;
  xe_free_val(like);
  if (!made) return e->error ? NULL : xe_fail(e, ZT_STATUS_UNSUPPORTED, "this reduction on Xe");
  zt_status_t st = reduce_2d(e, op, rk, made);
  xe_free_val(made);
  return st;
}

static zt_status_t reduce_2d(xe_emitter_t* e, MlirOperation op, const reduce_kind_t* rk,
                             xe_val_t* s) {
  MlirAttribute ax = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("axis"));
  int axis = mlirAttributeIsNull(ax) || !mlirAttributeIsAInteger(ax)
                 ? -1 : (int)mlirIntegerAttrGetValueInt(ax);
  // Dot operand blocks (A, B) are held in copies (parts_of): rows of 16
  // lanes all the same, lane j column j (int8 B blocks of 32 rows and the
  // 16-bit places of int8 operands are not reduced yet).
  bool copies = s->layout == XE_LAYOUT_BLOCK2D && !s->b16 &&
                ((s->role == XE_ROLE_A && s->bc == 16) ||
                 (s->role == XE_ROLE_B && s->type.kind != ZT_I8 && s->type.kind != ZT_BF16));
  if (s->layout != XE_LAYOUT_BLOCK2D || (s->role != XE_ROLE_C && !copies) || s->bc != 16)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "reduction of this 2-D value on Xe");
  if (axis != 0 && axis != 1)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "2-D reduction along axis %d", axis);
  // Column (row) results of a tile split by rows (columns) across
  // subgroups, or whose parts do not sit where the 1-D layout puts them,
  // meet in SLM (cols_across_subgroups, rows_across_subgroups).
  bool across = false;
  if (copies) {
    // Local only when every subgroup holds the whole tile and the 1-D
    // result is replicated (fewer 16-element chunks than subgroups,
    // xe_alloc); else the parts meet in SLM, one slot per different part.
    int rp, cp;
    parts_of(e, s, &rp, &cp);
    int64_t len = s->type.shape[axis == 0 ? 1 : 0];
    across = rp > 1 || cp > 1 || (e->nsg > 1 && (len + 15) / 16 >= e->nsg);
  } else if (!xe_axis_local(e, s, axis) && !s->narrow && (axis == 1 || e->sg_m > 1)) {
    across = true;
  } else if (!xe_axis_local(e, s, axis)) {
    bool whole = axis == 1 ? e->sg_n == 1 : e->sg_m == 1;
    if (whole)
      // Whole rows (columns) per subgroup, but fewer than 16 of them: the
      // 1-D result's layout holds 16 per chunk.
      return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                     "a 2-D reduction along axis %d with %d %s per subgroup (%dx%d subgroups) "
                     "on Xe: each subgroup needs a multiple of 16 (use fewer warps)",
                     axis, axis == 1 ? s->tr : s->tc, axis == 1 ? "rows" : "columns", e->sg_m,
                     e->sg_n);
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "a 2-D reduction along axis %d of a tile split that way across subgroups "
                   "(%dx%d) on Xe", axis, e->sg_m, e->sg_n);
  }
  zt_scalar_kind_t k = s->type.kind;
  if (k == ZT_I1)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "2-D reductions of i1 tensors on Xe");
  MlirValue res = mlirOperationGetResult(op, 0);
  zt_type_t rt;
  ZT_RETURN_IF_ERROR(xe_tile_type(e, mlirValueGetType(res), &rt));
  if (rt.rank != 1)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "2-D reductions keeping dims on Xe");
  // bf16 tiles (bf16 blocks) reduce as f32 blocks; the 1-D result is rounded
  // back to bf16 bits once (max/min exact, sums accumulate in f32).
  xe_val_t* wide = NULL;
  if (k == ZT_BF16) {
    zt_type_t wt = s->type;
    wt.kind = ZT_F32;
    wide = xe_alloc_role(e, wt, s->role);
    if (!wide || wide->nchunks != s->nchunks || wide->br != s->br) {
      xe_free_val(wide);
      return e->error ? NULL : xe_fail(e, ZT_STATUS_INTERNAL, "bf16 reduction blocks");
    }
    char text[160];
    xe_name_t c16;
    snprintf(text, sizeof text, "arith.constant {layout_result_0 = #zt_a} dense<16> : vector<%dx16xi32>",
             s->br);
    xe_hoist(e, text, true, c16);
    for (int32_t i = 0; i < s->nchunks; ++i) {
      xe_name_t b16, b32, sh;
      xe_fresh(e, b16);
      xe_line(e);
      zt_strbuf_printf(&e->body, "%s = arith.bitcast %s {layout_result_0 = #zt_a} : "
                       "vector<%dx16xbf16> to vector<%dx16xi16>%s\n", b16, s->names[i], s->br,
                       s->br, loc(e));
      xe_fresh(e, b32);
      xe_line(e);
      zt_strbuf_printf(&e->body, "%s = arith.extui %s {layout_result_0 = #zt_a} : "
                       "vector<%dx16xi16> to vector<%dx16xi32>%s\n", b32, b16, s->br, s->br,
                       loc(e));
      xe_fresh(e, sh);
      xe_line(e);
      zt_strbuf_printf(&e->body, "%s = arith.shli %s, %s {layout_result_0 = #zt_a} : "
                       "vector<%dx16xi32>%s\n", sh, b32, c16, s->br, loc(e));
      xe_line(e);
      zt_strbuf_printf(&e->body, "%s = arith.bitcast %s {layout_result_0 = #zt_a} : "
                       "vector<%dx16xi32> to vector<%dx16xf32>%s\n", wide->names[i], sh, s->br,
                       s->br, loc(e));
    }
    s = wide;
    k = ZT_F32;
    rt.kind = ZT_F32;
  }
  const char* et = xe_elem(k);
  bool f = zt_scalar_kind_is_float(k);
  bool nan_check = rk->nan_propagating && f;
  xe_val_t* r = xe_alloc(e, rt);
  if (!r || (!across && r->nchunks != (axis == 0 ? s->nbc : (s->tr + 15) / 16))) {
    xe_free_val(r);
    xe_free_val(wide);
    return r ? xe_fail(e, ZT_STATUS_INTERNAL, "2-D reduction result layout") : NULL;
  }
  char idt[48];
  identity_text(rk->identity, k, idt, sizeof idt);
#define ROW(out, bi, bj, rr) xe_block_row(e, s, bi, bj, rr, out)
  if (s->narrow) {
    zt_status_t st = reduce_narrow(e, rk, s, axis, r);
    if (st || e->error) {
      xe_free_val(r);
      xe_free_val(wide);
      return st;
    }
  } else if (axis == 0) {
    xe_name_t nan_v;
    if (nan_check) {
      char text[128];
      snprintf(text, sizeof text, "%s", float_bits(k, 2));
      xe_vconst(e, text, et, nan_v);
    }
    // Across subgroups: this subgroup's partials first, then the exchange.
    xe_name_t* part = across ? calloc((size_t)s->nbc, sizeof(xe_name_t)) : NULL;
    if (across && !part) {
      xe_free_val(r);
      xe_free_val(wide);
      return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
    }
    for (int32_t bj = 0; across && bj < s->nbc; ++bj) xe_fresh(e, part[bj]);
    for (int32_t bj = 0; bj < s->nbc; ++bj) {
      xe_name_t* dst = across ? &part[bj] : &r->names[bj];
      xe_name_t acc = "", any = "";
      for (int32_t bi = 0; bi < s->nbr; ++bi)
        for (int rr = 0; rr < s->br; ++rr) {
          xe_name_t row, n;
          ROW(row, bi, bj, rr);
          if (nan_check) {
            xe_name_t u;
            xe_vbinary(e, "arith.cmpf uno,", row, row, et, u);
            if (any[0]) {
              xe_name_t o;
              xe_fresh(e, o);
              xe_line(e);
              zt_strbuf_printf(&e->body,
                               "%s = arith.ori %s, %s {layout_result_0 = " XE_LAYOUT_ATTR
                               "} : vector<16xi1>%s\n", o, any, u, loc(e));
              memcpy(any, o, sizeof any);
            } else {
              memcpy(any, u, sizeof any);
            }
          }
          if (!acc[0]) {
            memcpy(acc, row, sizeof acc);
            continue;
          }
          xe_vbinary(e, rk->combine, acc, row, et, n);
          memcpy(acc, n, sizeof acc);
        }
      if (nan_check) {
        xe_line(e);
        zt_strbuf_printf(&e->body,
                         "%s = arith.select %s, %s, %s {layout_result_0 = " XE_LAYOUT_ATTR
                         "} : vector<16xi1>, vector<16x%s>%s\n",
                         *dst, any, nan_v, acc, et, loc(e));
      } else {
        memcpy(*dst, acc, sizeof acc);
      }
    }
    if (across) {
      zt_status_t st = cols_across_subgroups(e, rk, s, part, nan_check, r);
      free(part);
      if (st || e->error) {
        xe_free_val(r);
        xe_free_val(wide);
        return st;
      }
    }
  } else {
    xe_name_t id;
    xe_vconst(e, idt, et, id);
    // Across subgroups: this subgroup's row partials (lane i: its row 16c +
    // i) first, then the exchange.
    int32_t nout = across ? (s->tr + 15) / 16 : r->nchunks;
    xe_name_t* outn = across ? calloc((size_t)nout, sizeof(xe_name_t)) : r->names;
    if (!outn) {
      xe_free_val(r);
      xe_free_val(wide);
      return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
    }
    for (int32_t c = 0; c < nout; ++c) {
      xe_name_t acc;
      memcpy(acc, id, sizeof acc);
      for (int i = 0; i < 16 && 16 * c + i < s->tr; ++i) {
        int row = 16 * c + i, bi = row / s->br, rr = row % s->br;
        // This row over all its column blocks: elementwise, then one chunk.
        // (With a NaN check every chunk goes to reduce_row16 as it is.)
        xe_name_t part = "";
        for (int32_t bj = 0; bj < s->nbc && !nan_check; ++bj) {
          xe_name_t v, n;
          ROW(v, bi, bj, rr);
          if (!part[0]) {
            memcpy(part, v, sizeof part);
          } else {
            xe_vbinary(e, rk->combine, part, v, et, n);
            memcpy(part, n, sizeof part);
          }
        }
        if (!nan_check) {
          // The row's 16 lanes by xor shuffles (every lane ends with the
          // total), then lane i of the output takes it: vector ops only.
          // (A vector.reduction per row makes a uniform scalar per row, and
          // upstream's distribution slows down sharply with those once they
          // feed other rows' work: tl.sort's ranks.)
          xe_name_t sel;
          for (int d = 8; d >= 1; d /= 2) {
            xe_name_t p, n;
            xe_lane_shuffle(e, k, part, "xor", d, p);
            xe_vbinary(e, rk->combine, part, p, et, n);
            memcpy(part, n, sizeof part);
          }
          xe_take_lane(e, part, i, acc, et, sel);
          memcpy(acc, sel, sizeof acc);
          if (i == 15 || 16 * c + i + 1 >= s->tr) memcpy(outn[c], sel, sizeof sel);
          continue;
        }
        xe_val_t tmp = {.layout = XE_LAYOUT_ROW16, .numel = 16, .nchunks = 1};
        xe_name_t names[64];
        tmp.type = zt_type_tensor(zt_type_scalar(k), 1, (int64_t[]){16});
        if (nan_check) {
          int32_t nb = s->nbc < 64 ? s->nbc : 64;
          for (int32_t bj = 0; bj < nb; ++bj) ROW(names[bj], bi, bj, rr);
          tmp.nchunks = nb;
          tmp.numel = 16 * nb;
          tmp.type.shape[0] = tmp.numel;
        } else {
          memcpy(names[0], part, sizeof names[0]);
        }
        tmp.names = names;
        zt_status_t st = reduce_into_lane(e, rk, &tmp, i, acc);
        if (st || e->error) {
          if (across) free(outn);
          xe_free_val(r);
          xe_free_val(wide);
          return st;
        }
        if (i == 15 || 16 * c + i + 1 >= s->tr) memcpy(outn[c], acc, sizeof acc);
      }
    }
    if (across) {
      zt_status_t st = rows_across_subgroups(e, rk, s, outn, nout, nan_check, r);
      free(outn);
      if (st || e->error) {
        xe_free_val(r);
        xe_free_val(wide);
        return st;
      }
    }
  }
#undef ROW
  if (wide) {
    xe_free_val(wide);
    xe_val_t* r16 = xe_f32_to_bf16(e, r);
    xe_free_val(r);
    if (!r16) return NULL;
    r = r16;
  }
  xe_bind(e, res, r);
  return NULL;
}

// --- scans -------------------------------------------------------------------
//
// tile.scan (cumsum, cumprod, associative_scan with a built-in combiner).
// Along the lanes (1-D tensors, axis 1 of 2-D tiles) each 16-lane row is
// scanned by lane shuffles (scan_row); across rows (axis 0) the running
// value is combined elementwise. Rows longer than 16 carry the previous
// chunks' total; lines split across subgroups start from the totals of the
// subgroups before them (scan_prefix_across, the 1-D exchange below).

// Inclusive scan of the first n lanes of row x; carry (or "") is combined
// in; *total gets the combination of all n lanes (and the carry). Hillis-
// Steele steps 1, 2, 4, 8: lane j combines lane j - d's running value (j + d
// reversed, lanes past n never taken), moved by marked shuffles that become
// gpu.shuffle up/down after distribution (xe_lane_shuffle, as the user-
// combiner scans); then the carry, and the total from the last lane (lane 0
// reversed). Lanes past n are left at the identity. (Was one
// vector.reduction per lane: 16 butterflies a row, ~10x the instructions.)
static void scan_row(xe_emitter_t* e, const reduce_kind_t* rk, zt_scalar_kind_t k, const char* x,
                     int n, bool rev, const char* carry, xe_name_t out, xe_name_t total) {
  const char* et = xe_elem(k);
  char idt[48], cv[16];
  identity_text(rk->identity, k, idt, sizeof idt);
  xe_name_t lane, id, acc;
  xe_lane_i32(e, lane);
  xe_vconst(e, idt, et, id);
  memcpy(acc, x, sizeof acc);
  for (int d = 1; d < n; d *= 2) {
    xe_name_t p, lim, ok, c, sel;
    xe_lane_shuffle(e, k, acc, rev ? "down" : "up", d, p);
    snprintf(cv, sizeof cv, "%d", rev ? n - d : d);
    xe_vconst(e, cv, "i32", lim);
    xe_vbinary(e, rev ? "arith.cmpi slt," : "arith.cmpi sge,", lane, lim, "i32", ok);
    xe_vbinary(e, rk->combine, p, acc, et, c);
    xe_vselect(e, ok, c, acc, et, sel);
    memcpy(acc, sel, sizeof acc);
  }
  if (carry && carry[0]) {
    xe_name_t cb, c;
    xe_vsplat(e, carry, et, cb);
    xe_vbinary(e, rk->combine, cb, acc, et, c);
    memcpy(acc, c, sizeof acc);
  }
  if (n < 16) {
    xe_name_t pad, sel;
    xe_pad_mask(e, n, pad);
    xe_vselect(e, pad, acc, id, et, sel);
    memcpy(acc, sel, sizeof acc);
  }
  xe_name_t last, one;
  xe_take_lane(e, acc, rev ? 0 : n - 1, id, et, one);
  xe_fresh(e, last);
  xe_line(e);
  zt_strbuf_printf(&e->body, "%s = vector.reduction <%s>, %s : vector<16x%s> into %s%s\n", last,
                   rk->kind, one, et, et, loc(e));
  memcpy(total, last, XE_NAME_MAX);
  memcpy(out, acc, XE_NAME_MAX);
}

// out = lane i of v as a uniform scalar: the other lanes set to the
// identity, then reduced (the upstream-distributable way, as scan_row).
static void lane_scalar(xe_emitter_t* e, const reduce_kind_t* rk, zt_scalar_kind_t k,
                        const char* v, int i, xe_name_t out) {
  const char* et = xe_elem(k);
  char idt[48];
  identity_text(rk->identity, k, idt, sizeof idt);
  xe_name_t id, sel;
  xe_vconst(e, idt, et, id);
  xe_take_lane(e, v, i, id, et, sel);
  xe_fresh(e, out);
  xe_line(e);
  zt_strbuf_printf(&e->body, "%s = vector.reduction <%s>, %s : vector<16x%s> into %s%s\n", out,
                   rk->kind, sel, et, et, loc(e));
}

// A scan of a narrow tile (by columns, xe_val_t.narrow). Down the rows
// (axis 0) column j is a 1-D sequence: row j of each block, scanned like a
// 1-D tensor's chunks. Along a row (axis 1) the running value goes from one
// block row to the next, lane by lane.
static zt_status_t scan_narrow(xe_emitter_t* e, const reduce_kind_t* rk, const xe_val_t* s,
                               int axis, bool rev, MlirValue res) {
  zt_scalar_kind_t k = s->type.kind;
  const char* et = xe_elem(k);
  if (axis != 0 && axis != 1)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "a 2-D scan along axis %d", axis);
  xe_val_t* r = xe_alloc_for(e, res, s->type, XE_ROLE_C);
  if (!r) return NULL;
  if (!r->narrow || r->nbr != s->nbr || r->br != s->br) {
    xe_free_val(r);
    return xe_fail(e, ZT_STATUS_INTERNAL, "narrow scan result layout");
  }
  xe_name_t zero;
  xe_zero_block(e, k, et, s->br, "#zt_a", zero);
  for (int32_t bi = 0; bi < s->nbr; ++bi) memcpy(r->names[bi], zero, sizeof zero);
  for (int32_t j = 0; axis == 0 && j < s->br; ++j) {
    xe_name_t carry = "";
    for (int32_t q = 0; q < s->nbr; ++q) {
      int32_t bi = rev ? s->nbr - 1 - q : q;
      int64_t n = s->tr - 16LL * bi;
      xe_name_t row, out, total;
      xe_block_row(e, s, bi, 0, j, row);
      scan_row(e, rk, k, row, n < 16 ? (int)n : 16, rev, carry, out, total);
      memcpy(carry, total, sizeof carry);
      xe_block_insert_row(e, out, r->names[bi], j, et, s->br, "#zt_a");
    }
  }
  for (int32_t bi = 0; axis == 1 && bi < s->nbr; ++bi) {
    xe_name_t acc = "";
    for (int32_t q = 0; q < s->br; ++q) {
      int32_t j = rev ? s->br - 1 - q : q;
      xe_name_t row, n;
      xe_block_row(e, s, bi, 0, j, row);
      if (acc[0]) {
        // Later elements on the right (reversed: on the left).
        if (rev) xe_vbinary(e, rk->combine, row, acc, et, n);
        else xe_vbinary(e, rk->combine, acc, row, et, n);
        memcpy(acc, n, sizeof acc);
      } else {
        memcpy(acc, row, sizeof acc);
      }
      xe_block_insert_row(e, acc, r->names[bi], j, et, s->br, "#zt_a");
    }
  }
  xe_bind(e, res, r);
  return NULL;
}

void xe_sg_before_mask(xe_emitter_t* e, const char* mine, int i, bool rev, xe_name_t out) {
  xe_name_t c, cmp;
  char text[160];
  snprintf(text, sizeof text, "arith.constant %d : index", i);
  xe_hoist(e, text, false, c);
  snprintf(text, sizeof text, "arith.cmpi %s, %s, %s : index", rev ? "ugt" : "ult", c, mine);
  xe_hoist(e, text, false, cmp);
  snprintf(text, sizeof text,
           "vector.broadcast %s {layout_result_0 = " XE_LAYOUT_ATTR "} : i1 to vector<16xi1>",
           cmp);
  xe_hoist(e, text, true, out);
}

// A 2-D scan along an axis split across subgroups (axis 0 with sg_m > 1,
// axis 1 with sg_n > 1), before each subgroup scans its own part: every
// subgroup's line totals (axis 0: per column, 16 columns a vector; axis 1:
// per row, lane i = its row 16c + i) go to SLM, slot [grid index along the
// axis][line of the whole tile], as the column and row reductions across
// subgroups lay them out; after a barrier each subgroup combines, in grid
// order, the totals of the subgroups before it (after it, reversed; the
// others count as the identity: the kinds here commute) into pre[] (nbc
// vectors for axis 0, ceil(tr / 16) for axis 1), the carry its own scan
// starts from. A second barrier lets the next exchange reuse the buffer.
static zt_status_t scan_prefix_across(xe_emitter_t* e, const reduce_kind_t* rk,
                                      const xe_val_t* s, int axis, bool rev, xe_name_t* pre) {
  zt_scalar_kind_t k = s->type.kind;
  const char* et = xe_elem(k);
  int sm = e->sg_m, sn = e->sg_n;
  int parts = axis == 0 ? sm : sn;
  int64_t R = s->type.shape[0], Rp = (R + 15) / 16 * 16, T = s->type.shape[1] / 16;
  int32_t nout = axis == 0 ? s->nbc : (s->tr + 15) / 16;
  if (s->type.shape[1] % 16 || T != (int64_t)sn * s->nbc || R != (int64_t)sm * s->tr)
    return xe_fail(e, ZT_STATUS_INTERNAL, "scan across subgroups: layouts");
  int64_t n = axis == 0 ? (int64_t)sm * T * 16 : (int64_t)sn * Rp;
  if (n * zt_scalar_kind_bits(k) / 8 > 65536)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "a 2-D scan along axis %d across %d subgroups of a %lldx%lld tile needs %lld "
                   "bytes of shared local memory on Xe (64 KB at most)",
                   axis, parts, (long long)R, (long long)s->type.shape[1],
                   (long long)(n * zt_scalar_kind_bits(k) / 8));
  char idt[48];
  identity_text(rk->identity, k, idt, sizeof idt);
  xe_name_t id, all, slm;
  xe_vconst(e, idt, et, id);
  xe_all_true(e, all);
  if (!xe_slm_buffer(e, k, (int)n, slm)) return NULL;
  xe_name_t* part = calloc((size_t)nout, sizeof *part);
  if (!part) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
  // This subgroup's totals, its lines in the same order as its scan.
  if (axis == 0) {
    for (int32_t bj = 0; bj < s->nbc; ++bj) {
      for (int32_t q = 0; q < s->tr; ++q) {
        xe_name_t x, c;
        xe_block_row(e, s, q / s->br, bj, q % s->br, x);
        if (q == 0) {
          memcpy(part[bj], x, sizeof x);
          continue;
        }
        xe_vbinary(e, rk->combine, part[bj], x, et, c);
        memcpy(part[bj], c, sizeof c);
      }
    }
  } else {
    for (int32_t c = 0; c < nout; ++c) memcpy(part[c], id, sizeof id);
    for (int32_t q = 0; q < s->tr; ++q) {
      xe_name_t acc, t, p;
      for (int32_t bj = 0; bj < s->nbc; ++bj) {
        xe_name_t x, c;
        xe_block_row(e, s, q / s->br, bj, q % s->br, x);
        if (bj == 0) {
          memcpy(acc, x, sizeof x);
          continue;
        }
        xe_vbinary(e, rk->combine, acc, x, et, c);
        memcpy(acc, c, sizeof c);
      }
      xe_fresh(e, t);
      xe_line(e);
      zt_strbuf_printf(&e->body, "%s = vector.reduction <%s>, %s : vector<16x%s> into %s%s\n", t,
                       rk->kind, acc, et, et, loc(e));
      xe_put_lane(e, t, q % 16, part[q / 16], et, p);
      memcpy(part[q / 16], p, sizeof p);
    }
  }
  // Slots: axis 0 [grid row][column of the tile], axis 1 [grid column][row].
  xe_name_t wrow, wcol, wbase, mine;
  if (axis == 0) {
    sg_index(e, sn, sm, T * 16, wrow);
    sg_index(e, 1, sn, (int64_t)s->nbc * 16, wcol);
    sg_index(e, sn, sm, 1, mine);
  } else {
    sg_index(e, 1, sn, Rp, wcol);
    sg_index(e, sn, sm, s->tr, wrow);
    sg_index(e, 1, sn, 1, mine);
  }
  add_index(e, wrow, wcol, wbase);
  for (int32_t c = 0; c < nout; ++c) {
    xe_name_t offs, mask;
    slm_offsets(e, wbase, 16LL * c, offs);
    if (axis == 0 || s->tr - 16LL * c >= 16) memcpy(mask, all, sizeof mask);
    else xe_pad_mask(e, s->tr - 16LL * c, mask);
    xe_slm_store(e, part[c], slm, offs, mask, et, n);
  }
  free(part);
  xe_line(e);
  zt_strbuf_printf(&e->body, "gpu.barrier%s\n", loc(e));
  // The other subgroups' slots of this subgroup's own lines.
  const char* own = axis == 0 ? wcol : wrow;
  int64_t stride = axis == 0 ? T * 16 : Rp;
  for (int32_t c = 0; c < nout; ++c) {
    xe_name_t mask, acc = "";
    if (axis == 0 || s->tr - 16LL * c >= 16) memcpy(mask, all, sizeof mask);
    else xe_pad_mask(e, s->tr - 16LL * c, mask);
    for (int i = 0; i < parts; ++i) {
      xe_name_t offs, v, before, sel, nv;
      slm_offsets(e, own, i * stride + 16LL * c, offs);
      xe_slm_load(e, slm, offs, mask, et, n, v);
      xe_sg_before_mask(e, mine, i, rev, before);
      xe_vselect(e, before, v, id, et, sel);
      if (!acc[0]) {
        memcpy(acc, sel, sizeof acc);
        continue;
      }
      xe_vbinary(e, rk->combine, acc, sel, et, nv);
      memcpy(acc, nv, sizeof acc);
    }
    memcpy(pre[c], acc, sizeof acc);
  }
  xe_line(e);
  zt_strbuf_printf(&e->body, "gpu.barrier%s\n", loc(e));
  return NULL;
}

zt_status_t xe_emit_scan(xe_emitter_t* e, MlirOperation op) {
  if (!xe_reduce_is_builtin(e, op)) return xe_emit_scan_user(e, op);
  const reduce_kind_t* rk;
  ZT_RETURN_IF_ERROR(reduce_kind_of(e, op, &rk));
  xe_val_t* s = xe_lookup(e, mlirOperationGetOperand(op, 0));
  if (!s) return NULL;
  zt_scalar_kind_t k = s->type.kind;
  // NaN-propagating max/min: the combiner's path, whose body gets the NaN
  // form (xe_emit_elementwise); the lane and SLM steps here have no NaN flag.
  if (rk->nan_propagating && zt_scalar_kind_is_float(k) && k != ZT_BF16)
    return xe_emit_scan_user(e, op);
  if (k == ZT_BF16 || k == ZT_I1 || (rk->nan_propagating && zt_scalar_kind_is_float(k)))
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "scans of %s with this combiner on Xe (bf16 and i1 are not supported "
                   "yet)", zt_scalar_kind_name(k));
  MlirAttribute ax = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("axis"));
  MlirAttribute rv = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("reverse"));
  int axis = mlirAttributeIsNull(ax) || !mlirAttributeIsAInteger(ax)
                 ? 0 : (int)mlirIntegerAttrGetValueInt(ax);
  bool rev = !mlirAttributeIsNull(rv) && mlirAttributeIsABool(rv) && mlirBoolAttrGetValue(rv);
  MlirValue res = mlirOperationGetResult(op, 0);
  const char* et = xe_elem(k);
  if (s->layout == XE_LAYOUT_ROW16) {
    bool cross = s->dist && e->nsg > 1;
    if (cross && (e->nsg > XE_SUBGROUP || s->numel % XE_SUBGROUP))
      return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                     "scans of a 1-D tensor split across more than 16 subgroups on Xe");
    xe_val_t* r = xe_alloc_for(e, res, s->type, XE_ROLE_C);
    if (!r) return NULL;
    xe_name_t carry = "";
    for (int32_t q = 0; q < s->nchunks; ++q) {
      int32_t c = rev ? s->nchunks - 1 - q : q;
      int64_t n = cross ? 16 : s->numel - 16 * (int64_t)c;
      xe_name_t total;
      scan_row(e, rk, k, s->names[c], n < 16 ? (int)n : 16, rev, carry, r->names[c], total);
      memcpy(carry, total, sizeof carry);
    }
    if (cross) {
      // Split across subgroups (subgroup g holds the g-th part): every
      // subgroup's total meets in SLM; g's parts then combine with the
      // totals of the subgroups before it (after it, reversed). The kinds
      // here are commutative: the identity stands for the others.
      xe_name_t v[XE_MAX_SUBGROUPS / XE_SUBGROUP], sg, sgv, lane, before, id, sel, prefix, pv;
      char idt[48];
      identity_text(rk->identity, k, idt, sizeof idt);
      xe_cross_sg_gather(e, k, carry, v);
      xe_sg_id_i32(e, sg);
      xe_vsplat(e, sg, "i32", sgv);
      xe_lane_i32(e, lane);
      xe_vbinary(e, rev ? "arith.cmpi sgt," : "arith.cmpi slt,", lane, sgv, "i32", before);
      xe_vconst(e, idt, et, id);
      xe_vselect(e, before, v[0], id, et, sel);
      xe_fresh(e, prefix);
      xe_line(e);
      zt_strbuf_printf(&e->body, "%s = vector.reduction <%s>, %s : vector<16x%s> into %s%s\n",
                       prefix, rk->kind, sel, et, et, loc(e));
      xe_vsplat(e, prefix, et, pv);
      for (int32_t c = 0; c < r->nchunks; ++c) {
        xe_name_t nc;
        xe_vbinary(e, rk->combine, pv, r->names[c], et, nc);
        memcpy(r->names[c], nc, sizeof nc);
      }
    }
    xe_bind(e, res, r);
    return NULL;
  }
  if (s->layout == XE_LAYOUT_BLOCK2D && s->narrow) return scan_narrow(e, rk, s, axis, rev, res);
  if (s->layout != XE_LAYOUT_BLOCK2D || s->role != XE_ROLE_C || s->bc != 16)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "a scan of this value on Xe");
  if (axis != 0 && axis != 1)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "a 2-D scan along axis %d", axis);
  // Lines split across subgroups start from the totals before them.
  bool across = axis == 0 ? e->sg_m > 1 : e->sg_n > 1;
  xe_name_t* pre = NULL;
  if (across) {
    pre = calloc((size_t)(s->nbc > s->tr ? s->nbc : s->tr), sizeof *pre);
    if (!pre) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
    zt_status_t st = scan_prefix_across(e, rk, s, axis, rev, pre);
    if (st || e->error) {
      free(pre);
      return st;
    }
  }
  xe_val_t* r = xe_alloc_for(e, res, s->type, XE_ROLE_C);
  if (!r) {
    free(pre);
    return NULL;
  }
  // Result blocks are built row by row into a zero block.
  char text[160];
  xe_name_t zero;
  snprintf(text, sizeof text, "arith.constant {layout_result_0 = #zt_a} dense<%s> : vector<%dx16x%s>",
           zt_scalar_kind_is_float(k) ? "0.0" : "0", s->br, et);
  xe_hoist(e, text, true, zero);
  xe_name_t* cur = calloc((size_t)r->nchunks, sizeof *cur);
  if (!cur) {
    free(pre);
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
  }
  for (int32_t i = 0; i < r->nchunks; ++i) memcpy(cur[i], zero, sizeof cur[i]);
  int32_t rows = s->tr;
#define ROW(out, bi, bj, rr) xe_block_row(e, s, bi, bj, rr, out)
#define PUT(bi, bj, rr, val)                                                                \
  do {                                                                                     \
    xe_name_t nb_;                                                                         \
    xe_fresh(e, nb_);                                                                      \
    xe_line(e);                                                                            \
    zt_strbuf_printf(&e->body,                                                             \
                     "%s = vector.insert %s, %s [%d] {layout_result_0 = #zt_a} : "          \
                     "vector<16x%s> into vector<%dx16x%s>%s\n",                              \
                     nb_, val, cur[(bi) * s->nbc + (bj)], (int)(rr), et, s->br, et, loc(e)); \
    memcpy(cur[(bi) * s->nbc + (bj)], nb_, sizeof nb_);                                     \
  } while (0)
  if (axis == 0) {
    for (int32_t bj = 0; bj < s->nbc; ++bj) {
      xe_name_t acc = "";
      if (pre) memcpy(acc, pre[bj], sizeof acc);
      for (int32_t q = 0; q < rows; ++q) {
        int32_t row = rev ? rows - 1 - q : q, bi = row / s->br, rr = row % s->br;
        xe_name_t x, n;
        ROW(x, bi, bj, rr);
        if (acc[0]) {
          // Later rows combine onto the running value (the kinds commute).
          xe_vbinary(e, rk->combine, acc, x, et, n);
          memcpy(acc, n, sizeof acc);
        } else {
          memcpy(acc, x, sizeof acc);
        }
        PUT(bi, bj, rr, acc);
      }
    }
  } else if (axis == 1) {
    for (int32_t row = 0; row < rows; ++row) {
      int32_t bi = row / s->br, rr = row % s->br;
      xe_name_t carry = "";
      if (pre) lane_scalar(e, rk, k, pre[row / 16], row % 16, carry);
      for (int32_t q = 0; q < s->nbc; ++q) {
        int32_t bj = rev ? s->nbc - 1 - q : q;
        xe_name_t x, o, total;
        ROW(x, bi, bj, rr);
        scan_row(e, rk, k, x, 16, rev, carry, o, total);
        memcpy(carry, total, sizeof carry);
        PUT(bi, bj, rr, o);
      }
    }
  }
#undef ROW
#undef PUT
  memcpy(r->names, cur, (size_t)r->nchunks * sizeof *cur);
  free(cur);
  free(pre);
  xe_bind(e, res, r);
  return NULL;
}

const char* xe_reduction_combiner(const char* kind, bool fl) {
  static const struct {
    const char* kind;
    const char* f;
    const char* i;
  } map[] = {{"add", "arith.addf", "arith.addi"},  {"mul", "arith.mulf", "arith.muli"},
             {"maxnumf", "arith.maxnumf", NULL},   {"minnumf", "arith.minnumf", NULL},
             {"maximumf", "arith.maximumf", NULL}, {"minimumf", "arith.minimumf", NULL},
             {"maxsi", NULL, "arith.maxsi"},       {"minsi", NULL, "arith.minsi"},
             {"maxui", NULL, "arith.maxui"},       {"minui", NULL, "arith.minui"},
             {"and", NULL, "arith.andi"},          {"or", NULL, "arith.ori"},
             {"xor", NULL, "arith.xori"}};
  for (size_t i = 0; i < sizeof map / sizeof *map; ++i)
    if (strcmp(kind, map[i].kind) == 0) return fl ? map[i].f : map[i].i;
  return NULL;
}
