// argmax / argmin on Xe: tile.reduce of (values, positions) whose combiner is
// the one zetile's front end writes for tl.argmax/argmin/max(...,
// return_indices=True): "better (strict) or (equal and lower index)". The
// positions operand must be the element's position along the axis (a
// make_range, expanded and broadcast); the lowering computes positions from
// lanes and block offsets instead of reading it.
//
//  1-D, and 2-D along axis 1: the best value is one vector.reduction; the
//  index is the smallest position holding it (a second, masked min
//  reduction), the largest one when tie_break_left is off. NaN values never
//  win (maxnumf/minnumf); a row of NaN only gives index INT32_MAX.
//  2-D along axis 0: a running (best, position) pair per lane, updated with
//  the strict comparison row by row, so ties keep the earlier row.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>

#include "xe/xe_internal.h"

typedef zt_arg_spec_t arg_spec_t;

static bool sname_is(MlirStringRef n, const char* s) {
  size_t l = strlen(s);
  return n.length == l && memcmp(n.data, s, l) == 0;
}

static bool op_named(MlirOperation op, const char* s) {
  return !mlirOperationIsNull(op) && sname_is(mlirIdentifierStr(mlirOperationGetName(op)), s);
}

static const char* loc(xe_emitter_t* e) { return e->loc.data ? e->loc.data : ""; }

// The combiner function @name as argmax/argmin, or false.
static bool match_combiner(xe_emitter_t* e, MlirStringRef name, arg_spec_t* spec) {
  MlirOperation mod = mlirModuleGetOperation(e->lc->tile);
  return zt_argreduce_combiner(mlirRegionGetFirstBlock(mlirOperationGetRegion(mod, 0)), name,
                               spec);
}

// Whether v is the position along `axis`: make_range(0, n) (1-D), or that
// range expanded (expand_dims / reshape to (n, 1) or (1, n)) and broadcast.
static bool is_positions(MlirValue v, int axis, int rank) {
  if (!mlirValueIsAOpResult(v)) return false;
  MlirOperation op = mlirOpResultGetOwner(v);
  if (rank == 2) {
    if (!op_named(op, "tile.broadcast")) return false;
    MlirValue x = mlirOperationGetOperand(op, 0);
    if (!mlirValueIsAOpResult(x)) return false;
    MlirOperation ex = mlirOpResultGetOwner(x);
    if (!op_named(ex, "tile.expand_dims") && !op_named(ex, "tile.reshape")) return false;
    MlirType t = mlirValueGetType(x);
    // The expanded dim (size 1) must be the other axis.
    if (mlirShapedTypeGetDimSize(t, 1 - axis) != 1) return false;
    return is_positions(mlirOperationGetOperand(ex, 0), 0, 1);
  }
  if (!op_named(op, "tile.make_range")) return false;
  MlirAttribute a = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("start"));
  return !mlirAttributeIsNull(a) && mlirAttributeIsAInteger(a) && mlirIntegerAttrGetValueInt(a) == 0;
}

typedef struct argk_s {
  const char* et;       // value element type
  const char* red;      // vector.reduction kind for values
  const char* comb;     // elementwise combine for values
  const char* strict;   // strict "better" comparison, e.g. "arith.cmpf ogt,"
  const char* eq;       // equality, e.g. "arith.cmpf oeq,"
  char ident[48];       // identity of the value reduction
} argk_t;

static void vreduce(xe_emitter_t* e, const char* kind, const char* x, const char* et,
                    xe_name_t out) {
  xe_fresh(e, out);
  xe_line(e);
  zt_strbuf_printf(&e->body, "%s = vector.reduction <%s>, %s : vector<16x%s> into %s%s\n", out,
                   kind, x, et, et, loc(e));
}

// Best value and its position over chunks (positions 16 c + lane; lanes at
// or past n are padding): scalars val and idx (i32).
static void arg_of_chunks(xe_emitter_t* e, const argk_t* k, const arg_spec_t* sp,
                          char (*chunks)[XE_NAME_MAX], int nchunks, int64_t n, xe_name_t val,
                          xe_name_t idx) {
  xe_name_t lane, id, big, acc = "", pacc = "";
  xe_lane_i32(e, lane);
  xe_vconst(e, k->ident, k->et, id);
  xe_vconst(e, sp->tie_left ? "2147483647" : "-1", "i32", big);
  // Values with padding lanes at the identity.
  xe_name_t* v = calloc((size_t)nchunks, sizeof *v);
  if (!v) return;
  for (int c = 0; c < nchunks; ++c) {
    memcpy(v[c], chunks[c], sizeof v[c]);
    int64_t valid = n - 16 * (int64_t)c;
    if (valid < 16) {
      xe_name_t pad;
      xe_pad_mask(e, valid, pad);
      xe_vselect(e, pad, chunks[c], id, k->et, v[c]);
    }
    if (!acc[0]) memcpy(acc, v[c], sizeof acc);
    else {
      xe_name_t t;
      xe_vbinary(e, k->comb, acc, v[c], k->et, t);
      memcpy(acc, t, sizeof acc);
    }
  }
  vreduce(e, k->red, acc, k->et, val);
  xe_name_t bv;
  xe_vsplat(e, val, k->et, bv);
  for (int c = 0; c < nchunks; ++c) {
    xe_name_t eq, pos, cand, off;
    char cv[24];
    snprintf(cv, sizeof cv, "%d", 16 * c);
    xe_vconst(e, cv, "i32", off);
    xe_vbinary(e, "arith.addi", lane, off, "i32", pos);
    xe_vbinary(e, k->eq, v[c], bv, k->et, eq);
    int64_t valid = n - 16 * (int64_t)c;
    if (valid < 16) {
      xe_name_t pad, both;
      xe_pad_mask(e, valid, pad);
      xe_vbinary(e, "arith.andi", eq, pad, "i1", both);
      memcpy(eq, both, sizeof eq);
    }
    xe_vselect(e, eq, pos, big, "i32", cand);
    if (!pacc[0]) memcpy(pacc, cand, sizeof pacc);
    else {
      xe_name_t t;
      xe_vbinary(e, sp->tie_left ? "arith.minsi" : "arith.maxsi", pacc, cand, "i32", t);
      memcpy(pacc, t, sizeof pacc);
    }
  }
  vreduce(e, sp->tie_left ? "minsi" : "maxsi", pacc, "i32", idx);
  free(v);
}

bool xe_argreduce_matches(xe_emitter_t* e, MlirOperation op) {
  MlirAttribute comb = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("combiner"));
  arg_spec_t sp = {0};
  return mlirOperationGetNumOperands(op) == 2 && !mlirAttributeIsNull(comb) &&
         mlirAttributeIsAFlatSymbolRef(comb) &&
         match_combiner(e, mlirFlatSymbolRefAttrGetValue(comb), &sp);
}

zt_status_t xe_emit_argreduce(xe_emitter_t* e, MlirOperation op) {
  MlirAttribute comb = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("combiner"));
  arg_spec_t sp = {0};
  if (mlirAttributeIsNull(comb) || !mlirAttributeIsAFlatSymbolRef(comb) ||
      !match_combiner(e, mlirFlatSymbolRefAttrGetValue(comb), &sp))
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "reductions of 2 tensors at once with this combiner on Xe (argmin/argmax "
                   "are supported; other pair combiners are not yet)");
  MlirValue vals = mlirOperationGetOperand(op, 0), poss = mlirOperationGetOperand(op, 1);
  MlirAttribute ax = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("axis"));
  int axis = mlirAttributeIsNull(ax) || !mlirAttributeIsAInteger(ax)
                 ? 0 : (int)mlirIntegerAttrGetValueInt(ax);
  MlirType vt = mlirValueGetType(vals);
  int rank = mlirTypeIsARankedTensor(vt) ? (int)mlirShapedTypeGetRank(vt) : 0;
  if (!is_positions(poss, axis, rank))
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "argmin/argmax-style reduction whose indices are not the positions along "
                   "the axis, on Xe");
  xe_val_t* s = xe_lookup(e, vals);
  if (!s) return NULL;
  zt_scalar_kind_t kk = s->type.kind;
  if (kk == ZT_BF16 || kk == ZT_I1 || kk == ZT_PTR)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "argmin/argmax of %s on Xe",
                   zt_scalar_kind_name(kk));
  if ((s->layout == XE_LAYOUT_ROW16 && s->dist) ||
      (s->layout == XE_LAYOUT_BLOCK2D && !xe_axis_local(e, s, axis))) {
    // Emitted again as two built-in reductions (xe_emit_module).
    e->arg_split = true;
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "argmin/argmax over a tensor split across subgroups along the axis on Xe");
  }
  bool f = zt_scalar_kind_is_float(kk);
  argk_t k = {.et = xe_elem(kk)};
  if (f) {
    k.red = sp.max ? "maxnumf" : "minnumf";
    k.comb = sp.max ? "arith.maxnumf" : "arith.minnumf";
    k.strict = sp.max ? "arith.cmpf ogt," : "arith.cmpf olt,";
    k.eq = "arith.cmpf oeq,";
    const char* inf32[] = {"0xFF800000", "0x7F800000"};
    const char* inf16[] = {"0xFC00", "0x7C00"};
    const char* inf64[] = {"0xFFF0000000000000", "0x7FF0000000000000"};
    const char** inf = kk == ZT_F16 ? inf16 : kk == ZT_F64 ? inf64 : inf32;
    snprintf(k.ident, sizeof k.ident, "%s", inf[sp.max ? 0 : 1]);
  } else {
    int bits = zt_scalar_kind_bits(kk);
    k.red = sp.max ? (sp.uns ? "maxui" : "maxsi") : (sp.uns ? "minui" : "minsi");
    k.comb = sp.max ? (sp.uns ? "arith.maxui" : "arith.maxsi") : (sp.uns ? "arith.minui" : "arith.minsi");
    k.strict = sp.max ? (sp.uns ? "arith.cmpi ugt," : "arith.cmpi sgt,")
                      : (sp.uns ? "arith.cmpi ult," : "arith.cmpi slt,");
    k.eq = "arith.cmpi eq,";
    long long lo = bits >= 64 ? (long long)INT64_MIN : -(1LL << (bits - 1));
    long long hi = bits >= 64 ? (long long)INT64_MAX : (1LL << (bits - 1)) - 1;
    if (sp.uns) snprintf(k.ident, sizeof k.ident, "%s", sp.max ? "0" : "-1");
    else snprintf(k.ident, sizeof k.ident, "%lld", sp.max ? lo : hi);
  }
  MlirValue rv = mlirOperationGetResult(op, 0), ri = mlirOperationGetResult(op, 1);
  zt_type_t tv, ti;
  ZT_RETURN_IF_ERROR(xe_tile_type(e, mlirValueGetType(rv), &tv));
  ZT_RETURN_IF_ERROR(xe_tile_type(e, mlirValueGetType(ri), &ti));
  if (ti.kind != ZT_I32)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "argmin/argmax with %s positions on Xe",
                   zt_scalar_kind_name(ti.kind));
  xe_val_t* r0 = xe_alloc(e, tv);
  xe_val_t* r1 = xe_alloc(e, ti);
  if (!r0 || !r1) {
    xe_free_val(r0);
    xe_free_val(r1);
    return NULL;
  }
  if (rank == 1 && s->layout == XE_LAYOUT_ROW16) {
    arg_of_chunks(e, &k, &sp, s->names, s->nchunks, s->numel, r0->names[0], r1->names[0]);
  } else if (rank == 2 && s->layout == XE_LAYOUT_BLOCK2D && s->role == XE_ROLE_C && s->bc == 16 &&
             tv.rank == 1 && !s->narrow) {
    xe_name_t row;
    if (axis == 1) {
      xe_name_t idv, idi;
      xe_vconst(e, f ? "0.0" : "0", k.et, idv);
      xe_vconst(e, "0", "i32", idi);
      xe_name_t* rowc = calloc((size_t)s->nbc, sizeof *rowc);
      if (!rowc) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
      xe_name_t accv = "", acci = "";
      for (int32_t r = 0; r < s->tr; ++r) {
        int32_t bi = r / s->br, rr = r % s->br;
        for (int32_t bj = 0; bj < s->nbc; ++bj) {
          xe_block_row(e, s, bi, bj, rr, rowc[bj]);
        }
        xe_name_t sv, si;
        arg_of_chunks(e, &k, &sp, rowc, s->nbc, 16LL * s->nbc, sv, si);
        if (r % 16 == 0) {
          memcpy(accv, idv, sizeof accv);
          memcpy(acci, idi, sizeof acci);
        }
        bool last = r % 16 == 15 || r == s->tr - 1;
        xe_name_t nv, ni;
        xe_put_lane(e, sv, r % 16, accv, k.et, nv);
        xe_put_lane(e, si, r % 16, acci, "i32", ni);
        memcpy(accv, nv, sizeof accv);
        memcpy(acci, ni, sizeof acci);
        if (last) {
          memcpy(r0->names[r / 16], accv, sizeof accv);
          memcpy(r1->names[r / 16], acci, sizeof acci);
        }
      }
      free(rowc);
    } else {
      for (int32_t bj = 0; bj < s->nbc; ++bj) {
        xe_name_t best = "", bidx = "";
        for (int32_t r = 0; r < s->tr; ++r) {
          int32_t bi = r / s->br, rr = r % s->br;
          xe_block_row(e, s, bi, bj, rr, row);
          char cv[24];
          snprintf(cv, sizeof cv, "%d", r);
          xe_name_t rc;
          xe_vconst(e, cv, "i32", rc);
          if (!best[0]) {
            memcpy(best, row, sizeof best);
            memcpy(bidx, rc, sizeof bidx);
            continue;
          }
          // Strictly better rows win; ties keep the earlier row (or, with
          // tie_break_left off, the later one).
          xe_name_t b, nb, ni;
          if (sp.tie_left) xe_vbinary(e, k.strict, row, best, k.et, b);
          else {
            xe_name_t worse;
            xe_vbinary(e, k.strict, best, row, k.et, worse);
            xe_name_t one;
            xe_vconst(e, "true", "i1", one);
            xe_vbinary(e, "arith.xori", worse, one, "i1", b);
          }
          xe_vselect(e, b, row, best, k.et, nb);
          xe_vselect(e, b, rc, bidx, "i32", ni);
          memcpy(best, nb, sizeof best);
          memcpy(bidx, ni, sizeof bidx);
        }
        memcpy(r0->names[bj], best, sizeof best);
        memcpy(r1->names[bj], bidx, sizeof bidx);
      }
    }
  } else {
    xe_free_val(r0);
    xe_free_val(r1);
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "argmin/argmax of this value on Xe");
  }
  xe_bind(e, rv, r0);
  xe_bind(e, ri, r1);
  return NULL;
}
