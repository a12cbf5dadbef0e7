// scf.for / scf.if and tile.reduce of the dg2 lowering.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>

#include "dg2_internal.h"

// A tensor carried through control flow lives in registers: its layout is
// the hint, else the incoming value's, else the blocked one.
static zt_status_t carried_layout(dg2_t* c, MlirValue key, const dg2_val_t* init,
                                  const zt_type_t* t, int32_t* out) {
  int32_t h = dg2_hint_get(c, key);
  if (h >= 0) {
    *out = h;
    return NULL;
  }
  if (init && init->kind == DV_DIST) {
    *out = init->layout;
    return NULL;
  }
  return dg2_blocked(c, t->rank, t->shape, out);
}

// Flattened names and types of one carried value (1 scalar or E elements).
typedef struct carried_s {
  zt_type_t type;
  int32_t layout;  // -1 for scalars, -2 for advanced pointer tensors
  int32_t count;
  // layout -2: a lazy pointer tensor that the loop advances by a uniform
  // step (`p = p + splat(s)`, Triton's `a_ptrs += BLOCK_K * stride`): only
  // the i64 byte offset is carried; the elements stay lazy.
  const dg2_val_t* init;
  MlirOperation step;  // the tile.splat of the step
} carried_t;

static bool advanced_ptr(MlirBlock body, intptr_t j, const dg2_val_t* init,
                         const zt_type_t* t, MlirOperation* step);

static zt_status_t flat_names(dg2_t* c, const dg2_val_t* v, const carried_t* cr,
                              zt_strbuf_t* names, zt_strbuf_t* types, bool* first) {
  if (cr->layout == -2) {
    zt_strbuf_printf(names, "%s%s", *first ? "" : ", ", v->name);
    zt_strbuf_printf(types, "%si64", *first ? "" : ", ");
    *first = false;
    return NULL;
  }
  if (cr->layout < 0) {
    if (v->kind != DV_SCALAR)
      return zt_make_status(ZT_STATUS_INTERNAL, "dg2: scalar carried value is a tensor");
    zt_strbuf_printf(names, "%s%s", *first ? "" : ", ", v->name);
    zt_strbuf_printf(types, "%s%s", *first ? "" : ", ", dg2_reg(cr->type.kind));
    *first = false;
    return NULL;
  }
  dg2_val_t d;
  ZT_RETURN_IF_ERROR(dg2_to_layout(c, v, cr->layout, &d));
  for (int32_t k = 0; k < cr->count; ++k) {
    zt_strbuf_printf(names, "%s%s", *first ? "" : ", ", d.el[k]);
    zt_strbuf_printf(types, "%s%s", *first ? "" : ", ", dg2_reg(cr->type.kind));
    *first = false;
  }
  return NULL;
}

// Maps value key to `count` consecutive names produced by fmt(base, i).
static zt_status_t bind(dg2_t* c, MlirValue key, const carried_t* cr, const char* base,
                        int32_t first_index, int32_t total, bool hash_names) {
  dg2_val_t v;
  memset(&v, 0, sizeof v);
  v.type = cr->type;
  if (cr->layout == -2) {
    char off[DG2_NAME];
    if (hash_names && total > 1)
      snprintf(off, DG2_NAME, "%s#%d", base, first_index);
    else if (hash_names)
      snprintf(off, DG2_NAME, "%s", base);
    else
      snprintf(off, DG2_NAME, "%s_%d", base, first_index);
    v = *cr->init;
    if (cr->init->delta[0]) {
      dg2_fresh(c, v.delta);
      dg2_line(c, "%s = arith.addi %s, %s : i64", v.delta, cr->init->delta, off);
    } else {
      snprintf(v.delta, DG2_NAME, "%s", off);
    }
    return dg2_put(c, key, &v);
  }
  if (cr->layout < 0) {
    v.kind = DV_SCALAR;
    if (hash_names && total > 1)
      snprintf(v.name, DG2_NAME, "%s#%d", base, first_index);
    else if (hash_names)
      snprintf(v.name, DG2_NAME, "%s", base);
    else
      snprintf(v.name, DG2_NAME, "%s_%d", base, first_index);
    return dg2_put(c, key, &v);
  }
  v.kind = DV_DIST;
  v.layout = cr->layout;
  v.el = dg2_alloc_names(c, cr->count);
  if (!v.el) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "dg2 values");
  for (int32_t k = 0; k < cr->count; ++k) {
    if (hash_names && total > 1)
      snprintf(v.el[k], DG2_NAME, "%s#%d", base, first_index + k);
    else if (hash_names)
      snprintf(v.el[k], DG2_NAME, "%s", base);
    else
      snprintf(v.el[k], DG2_NAME, "%s_%d", base, first_index + k);
  }
  return dg2_put(c, key, &v);
}

static MlirOperation block_terminator(MlirBlock b) {
  MlirOperation last = {NULL};
  for (MlirOperation op = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    last = op;
  return last;
}

zt_status_t dg2_emit_for(dg2_t* c, MlirOperation op) {
  intptr_t nres = mlirOperationGetNumResults(op);
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
  if (nres > 64) return dg2_op_error(op, ZT_STATUS_UNSUPPORTED, "too many loop values");
  carried_t cr[64];
  int32_t total = 0;
  zt_strbuf_t inits, types;
  zt_strbuf_init(&inits);
  zt_strbuf_init(&types);
  bool first = true;
  zt_status_t s = NULL;
  for (intptr_t j = 0; j < nres && !s; ++j) {
    MlirValue arg = mlirBlockGetArgument(body, j + 1);
    s = dg2_value_type(arg, &cr[j].type);
    const dg2_val_t* init = NULL;
    if (!s) s = dg2_get_checked(c, mlirOperationGetOperand(op, 3 + j), &init);
    if (s) break;
    cr[j].init = init;
    if (cr[j].type.rank == 0) {
      cr[j].layout = -1;
      cr[j].count = 1;
    } else if (advanced_ptr(body, j, init, &cr[j].type, &cr[j].step)) {
      cr[j].layout = -2;
      cr[j].count = 1;
      dg2_val_t zero = {.kind = DV_SCALAR};
      dg2_const(c, "i64", 0, zero.name);
      total += 1;
      s = flat_names(c, &zero, &cr[j], &inits, &types, &first);
      continue;
    } else {
      s = carried_layout(c, arg, init, &cr[j].type, &cr[j].layout);
      if (s) break;
      cr[j].count = c->layouts[cr[j].layout].e;
    }
    total += cr[j].count;
    s = flat_names(c, init, &cr[j], &inits, &types, &first);
  }
  const dg2_val_t *lb = NULL, *ub = NULL, *st = NULL;
  if (!s) s = dg2_get_checked(c, mlirOperationGetOperand(op, 0), &lb);
  if (!s) s = dg2_get_checked(c, mlirOperationGetOperand(op, 1), &ub);
  if (!s) s = dg2_get_checked(c, mlirOperationGetOperand(op, 2), &st);
  zt_type_t ivt;
  if (!s) s = dg2_value_type(mlirOperationGetOperand(op, 0), &ivt);
  if (s) {
    zt_strbuf_deinit(&inits);
    zt_strbuf_deinit(&types);
    return s;
  }
  char res[DG2_NAME], iv[DG2_NAME], argb[DG2_NAME];
  dg2_fresh(c, res);
  dg2_fresh(c, iv);
  dg2_fresh(c, argb);
  // Loop-carried block arguments are named <argb>_<i>.
  zt_strbuf_t head;
  zt_strbuf_init(&head);
  if (total == 1) zt_strbuf_printf(&head, "%s = ", res);
  if (total > 1) zt_strbuf_printf(&head, "%s:%d = ", res, total);
  zt_strbuf_printf(&head, "scf.for %s = %s to %s step %s", iv, lb->name, ub->name, st->name);
  if (total) {
    zt_strbuf_puts(&head, " iter_args(");
    // Pair each block argument with its init.
    const char* p = inits.data;
    for (int32_t i = 0; i < total; ++i) {
      const char* q = strchr(p, ',');
      size_t n = q ? (size_t)(q - p) : strlen(p);
      zt_strbuf_printf(&head, "%s%s_%d = %.*s", i ? ", " : "", argb, i, (int)n, p);
      p = q ? q + 2 : p + n;
    }
    zt_strbuf_printf(&head, ") -> (%s)", types.data);
  }
  zt_strbuf_printf(&head, " : %s {", dg2_reg(ivt.kind));
  dg2_line(c, "%s", head.data);
  zt_strbuf_deinit(&head);
  zt_strbuf_deinit(&inits);
  zt_strbuf_deinit(&types);
  // Body.
  dg2_val_t ivv = {.kind = DV_SCALAR, .type = ivt};
  snprintf(ivv.name, DG2_NAME, "%s", iv);
  ZT_RETURN_IF_ERROR(dg2_put(c, mlirBlockGetArgument(body, 0), &ivv));
  int32_t idx = 0;
  c->indent++;
  ++c->loop_epoch;
  for (intptr_t j = 0; j < nres; ++j) {
    ZT_RETURN_IF_ERROR(bind(c, mlirBlockGetArgument(body, j + 1), &cr[j], argb, idx, total, false));
    idx += cr[j].count;
  }
  ZT_RETURN_IF_ERROR(dg2_emit_block(c, body));
  MlirOperation y = block_terminator(body);
  if (total) {
    zt_strbuf_t names, ytypes;
    zt_strbuf_init(&names);
    zt_strbuf_init(&ytypes);
    first = true;
    int32_t ai = 0;
    for (intptr_t j = 0; j < nres && !s; ++j) {
      if (cr[j].layout == -2) {
        // offset + step * sizeof(pointee)
        const dg2_val_t* st;
        zt_type_t stt;
        dg2_val_t next = {.kind = DV_SCALAR};
        char arg[DG2_NAME];
        snprintf(arg, DG2_NAME, "%s_%d", argb, ai);
        s = dg2_get_checked(c, mlirOperationGetOperand(cr[j].step, 0), &st);
        if (!s) s = dg2_value_type(mlirOperationGetOperand(cr[j].step, 0), &stt);
        if (!s && st->kind != DV_SCALAR)
          s = zt_make_status(ZT_STATUS_INTERNAL, "dg2: pointer step is not a scalar");
        if (!s)
          s = dg2_addptr_scalar(c, arg, st->name, stt.kind, cr[j].type.pointee, next.name);
        if (!s) s = flat_names(c, &next, &cr[j], &names, &ytypes, &first);
        ai += 1;
        continue;
      }
      const dg2_val_t* v;
      s = dg2_get_checked(c, mlirOperationGetOperand(y, j), &v);
      if (!s) s = flat_names(c, v, &cr[j], &names, &ytypes, &first);
      ai += cr[j].count;
    }
    if (!s) dg2_line(c, "scf.yield %s : %s", names.data, ytypes.data);
    zt_strbuf_deinit(&names);
    zt_strbuf_deinit(&ytypes);
    if (s) return s;
  }
  c->indent--;
  ++c->loop_epoch;
  dg2_line(c, "}");
  idx = 0;
  for (intptr_t j = 0; j < nres; ++j) {
    ZT_RETURN_IF_ERROR(bind(c, mlirOperationGetResult(op, j), &cr[j], res, idx, total, true));
    idx += cr[j].count;
  }
  return NULL;
}

static bool advanced_ptr(MlirBlock body, intptr_t j, const dg2_val_t* init,
                         const zt_type_t* t, MlirOperation* step) {
  if (t->kind != ZT_PTR || init->kind != DV_LAZY) return false;
  MlirOperation y = block_terminator(body);
  if (mlirOperationIsNull(y) || mlirOperationGetNumOperands(y) <= j) return false;
  MlirValue yv = mlirOperationGetOperand(y, j);
  if (!mlirValueIsAOpResult(yv)) return false;
  MlirOperation def = mlirOpResultGetOwner(yv);
  if (!dg2_op_is(def, "tile.addptr")) return false;
  if (!mlirValueEqual(mlirOperationGetOperand(def, 0), mlirBlockGetArgument(body, j + 1)))
    return false;
  MlirValue off = mlirOperationGetOperand(def, 1);
  if (!mlirValueIsAOpResult(off)) return false;
  MlirOperation sp = mlirOpResultGetOwner(off);
  if (!dg2_op_is(sp, "tile.splat")) return false;
  *step = sp;
  return true;
}

// Types of n carried values, flattened ("i32, f32, ...") into out.
static void carried_types(const carried_t* cr, intptr_t n, zt_strbuf_t* out) {
  bool first = true;
  for (intptr_t j = 0; j < n; ++j)
    for (int32_t k = 0; k < cr[j].count; ++k) {
      zt_strbuf_printf(out, "%s%s", first ? "" : ", ", dg2_reg(cr[j].type.kind));
      first = false;
    }
}

// How each value of `vals` (n of them) is carried: scalars as one name,
// tensors in registers in the hinted or the incoming layout (inits may be
// NULL: then the hint or the blocked layout).
static zt_status_t plan_carried(dg2_t* c, MlirValue (*key)(void*, intptr_t), void* key_arg,
                                const dg2_val_t** inits, intptr_t n, carried_t* cr,
                                int32_t* total) {
  *total = 0;
  for (intptr_t j = 0; j < n; ++j) {
    MlirValue k = key(key_arg, j);
    memset(&cr[j], 0, sizeof cr[j]);
    ZT_RETURN_IF_ERROR(dg2_value_type(k, &cr[j].type));
    cr[j].init = inits ? inits[j] : NULL;
    if (cr[j].type.rank == 0) {
      cr[j].layout = -1;
      cr[j].count = 1;
    } else {
      ZT_RETURN_IF_ERROR(carried_layout(c, k, cr[j].init, &cr[j].type, &cr[j].layout));
      cr[j].count = c->layouts[cr[j].layout].e;
    }
    *total += cr[j].count;
  }
  return NULL;
}

static MlirValue block_arg_of(void* b, intptr_t j) {
  return mlirBlockGetArgument(*(MlirBlock*)b, j);
}
static MlirValue result_of(void* op, intptr_t j) {
  return mlirOperationGetResult(*(MlirOperation*)op, j);
}

// scf.while: the "before" region computes the condition and the values it
// forwards, the "do" region the next iteration's values. Both regions'
// arguments are carried like scf.for's (scalars, or tensors in registers).
zt_status_t dg2_emit_while(dg2_t* c, MlirOperation op) {
  intptr_t nin = mlirOperationGetNumOperands(op), nres = mlirOperationGetNumResults(op);
  if (nin > 64 || nres > 64) return dg2_op_error(op, ZT_STATUS_UNSUPPORTED, "too many loop values");
  MlirBlock before = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
  MlirBlock after = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 1));
  const dg2_val_t* inits[64];
  for (intptr_t j = 0; j < nin; ++j)
    ZT_RETURN_IF_ERROR(dg2_get_checked(c, mlirOperationGetOperand(op, j), &inits[j]));
  carried_t cb[64], ca[64];
  int32_t tb, ta;
  ZT_RETURN_IF_ERROR(plan_carried(c, block_arg_of, &before, inits, nin, cb, &tb));
  // The results (= the "do" region's arguments): hinted or blocked layouts.
  ZT_RETURN_IF_ERROR(plan_carried(c, result_of, &op, NULL, nres, ca, &ta));
  zt_strbuf_t inames, itypes, rtypes;
  zt_strbuf_init(&inames);
  zt_strbuf_init(&itypes);
  zt_strbuf_init(&rtypes);
  bool first = true;
  zt_status_t s = NULL;
  for (intptr_t j = 0; j < nin && !s; ++j) s = flat_names(c, inits[j], &cb[j], &inames, &itypes, &first);
  carried_types(ca, nres, &rtypes);
  char res[DG2_NAME], argb[DG2_NAME], arga[DG2_NAME];
  dg2_fresh(c, res);
  dg2_fresh(c, argb);
  dg2_fresh(c, arga);
  zt_strbuf_t head;
  zt_strbuf_init(&head);
  if (ta == 1) zt_strbuf_printf(&head, "%s = ", res);
  if (ta > 1) zt_strbuf_printf(&head, "%s:%d = ", res, ta);
  zt_strbuf_puts(&head, "scf.while (");
  const char* p = inames.data ? inames.data : "";
  for (int32_t i = 0; i < tb && !s; ++i) {
    const char* q = strchr(p, ',');
    size_t n = q ? (size_t)(q - p) : strlen(p);
    zt_strbuf_printf(&head, "%s%s_%d = %.*s", i ? ", " : "", argb, i, (int)n, p);
    p = q ? q + 2 : p + n;
  }
  zt_strbuf_printf(&head, ") : (%s) -> (%s) {", itypes.data ? itypes.data : "",
                   rtypes.data ? rtypes.data : "");
  if (!s) dg2_line(c, "%s", head.data);
  zt_strbuf_deinit(&head);
  zt_strbuf_deinit(&inames);
  zt_strbuf_deinit(&itypes);
  if (s) {
    zt_strbuf_deinit(&rtypes);
    return s;
  }
  // Before region.
  c->indent++;
  ++c->loop_epoch;
  int32_t idx = 0;
  for (intptr_t j = 0; j < nin && !s; ++j) {
    s = bind(c, mlirBlockGetArgument(before, j), &cb[j], argb, idx, tb, false);
    idx += cb[j].count;
  }
  if (!s) s = dg2_emit_block(c, before);
  MlirOperation cond = block_terminator(before);
  const dg2_val_t* cv = NULL;
  if (!s) s = dg2_get_checked(c, mlirOperationGetOperand(cond, 0), &cv);
  if (!s && cv->kind != DV_SCALAR)
    s = dg2_op_error(op, ZT_STATUS_UNSUPPORTED, "dg2: scf.while on a tensor condition");
  zt_strbuf_t names, ytypes;
  zt_strbuf_init(&names);
  zt_strbuf_init(&ytypes);
  first = true;
  for (intptr_t j = 0; j < nres && !s; ++j) {
    const dg2_val_t* v;
    s = dg2_get_checked(c, mlirOperationGetOperand(cond, j + 1), &v);
    if (!s) s = flat_names(c, v, &ca[j], &names, &ytypes, &first);
  }
  if (!s)
    dg2_line(c, "scf.condition(%s)%s%s%s%s", cv->name, ta ? " " : "", names.data ? names.data : "",
             ta ? " : " : "", ytypes.data ? ytypes.data : "");
  zt_strbuf_deinit(&names);
  zt_strbuf_deinit(&ytypes);
  c->indent--;
  if (s) {
    zt_strbuf_deinit(&rtypes);
    return s;
  }
  // Do region: its block header names the forwarded values.
  zt_strbuf_t hdr;
  zt_strbuf_init(&hdr);
  zt_strbuf_puts(&hdr, "} do {\n");
  for (int i = 0; i < c->indent; ++i) zt_strbuf_puts(&hdr, "  ");
  zt_strbuf_puts(&hdr, "^bb0(");
  {
    int32_t i = 0;
    for (intptr_t j = 0; j < nres; ++j)
      for (int32_t k = 0; k < ca[j].count; ++k, ++i)
        zt_strbuf_printf(&hdr, "%s%s_%d: %s", i ? ", " : "", arga, i, dg2_reg(ca[j].type.kind));
  }
  zt_strbuf_puts(&hdr, "):");
  dg2_line(c, "%s", hdr.data);
  zt_strbuf_deinit(&hdr);
  zt_strbuf_deinit(&rtypes);
  c->indent++;
  idx = 0;
  for (intptr_t j = 0; j < nres; ++j) {
    ZT_RETURN_IF_ERROR(bind(c, mlirBlockGetArgument(after, j), &ca[j], arga, idx, ta, false));
    idx += ca[j].count;
  }
  ZT_RETURN_IF_ERROR(dg2_emit_block(c, after));
  MlirOperation y = block_terminator(after);
  zt_strbuf_init(&names);
  zt_strbuf_init(&ytypes);
  first = true;
  for (intptr_t j = 0; j < nin && !s; ++j) {
    const dg2_val_t* v;
    s = dg2_get_checked(c, mlirOperationGetOperand(y, j), &v);
    if (!s) s = flat_names(c, v, &cb[j], &names, &ytypes, &first);
  }
  if (!s) {
    if (tb)
      dg2_line(c, "scf.yield %s : %s", names.data, ytypes.data);
    else
      dg2_line(c, "scf.yield");
  }
  zt_strbuf_deinit(&names);
  zt_strbuf_deinit(&ytypes);
  if (s) return s;
  c->indent--;
  ++c->loop_epoch;
  dg2_line(c, "}");
  idx = 0;
  for (intptr_t j = 0; j < nres; ++j) {
    ZT_RETURN_IF_ERROR(bind(c, mlirOperationGetResult(op, j), &ca[j], res, idx, ta, true));
    idx += ca[j].count;
  }
  return NULL;
}

zt_status_t dg2_emit_if(dg2_t* c, MlirOperation op) {
  intptr_t nres = mlirOperationGetNumResults(op);
  if (nres > 64) return dg2_op_error(op, ZT_STATUS_UNSUPPORTED, "too many results");
  const dg2_val_t* cond;
  ZT_RETURN_IF_ERROR(dg2_get_checked(c, mlirOperationGetOperand(op, 0), &cond));
  if (cond->kind != DV_SCALAR)
    return dg2_op_error(op, ZT_STATUS_UNSUPPORTED, "dg2: tensor condition");
  carried_t cr[64];
  int32_t total = 0;
  zt_strbuf_t types;
  zt_strbuf_init(&types);
  for (intptr_t j = 0; j < nres; ++j) {
    MlirValue r = mlirOperationGetResult(op, j);
    ZT_RETURN_IF_ERROR(dg2_value_type(r, &cr[j].type));
    if (cr[j].type.rank == 0) {
      cr[j].layout = -1;
      cr[j].count = 1;
    } else {
      ZT_RETURN_IF_ERROR(carried_layout(c, r, NULL, &cr[j].type, &cr[j].layout));
      cr[j].count = c->layouts[cr[j].layout].e;
    }
    for (int32_t k = 0; k < cr[j].count; ++k)
      zt_strbuf_printf(&types, "%s%s", total + k ? ", " : "", dg2_reg(cr[j].type.kind));
    total += cr[j].count;
  }
  char res[DG2_NAME];
  dg2_fresh(c, res);
  if (total == 0)
    dg2_line(c, "scf.if %s {", cond->name);
  else if (total == 1)
    dg2_line(c, "%s = scf.if %s -> (%s) {", res, cond->name, types.data);
  else
    dg2_line(c, "%s:%d = scf.if %s -> (%s) {", res, total, cond->name, types.data);
  zt_strbuf_deinit(&types);
  for (int region = 0; region < 2; ++region) {
    MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, region));
    if (region == 1) {
      if (mlirBlockIsNull(b) && total == 0) break;
      dg2_line(c, "} else {");
    }
    c->indent++;
    if (!mlirBlockIsNull(b)) {
      ZT_RETURN_IF_ERROR(dg2_emit_block(c, b));
      if (total) {
        MlirOperation y = block_terminator(b);
        zt_strbuf_t names, yt;
        zt_strbuf_init(&names);
        zt_strbuf_init(&yt);
        bool first = true;
        zt_status_t s = NULL;
        for (intptr_t j = 0; j < nres && !s; ++j) {
          const dg2_val_t* v;
          s = dg2_get_checked(c, mlirOperationGetOperand(y, j), &v);
          if (!s) s = flat_names(c, v, &cr[j], &names, &yt, &first);
        }
        if (!s) dg2_line(c, "scf.yield %s : %s", names.data, yt.data);
        zt_strbuf_deinit(&names);
        zt_strbuf_deinit(&yt);
        if (s) return s;
      }
    }
    c->indent--;
  }
  dg2_line(c, "}");
  int32_t idx = 0;
  for (intptr_t j = 0; j < nres; ++j) {
    ZT_RETURN_IF_ERROR(bind(c, mlirOperationGetResult(op, j), &cr[j], res, idx, total, true));
    idx += cr[j].count;
  }
  return NULL;
}

// --- tile.reduce -------------------------------------------------------------------

// Emits the combiner on scalars: out[i] = f(lhs..., rhs...).
zt_status_t dg2_combine(dg2_t* c, MlirOperation fn, int32_t n, char lhs[][DG2_NAME],
                           char rhs[][DG2_NAME], char out[][DG2_NAME]) {
  MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(fn, 0));
  for (int32_t i = 0; i < 2 * n; ++i) {
    MlirValue a = mlirBlockGetArgument(b, i);
    dg2_val_t v = {.kind = DV_SCALAR};
    ZT_RETURN_IF_ERROR(dg2_value_type(a, &v.type));
    snprintf(v.name, DG2_NAME, "%s", i < n ? lhs[i] : rhs[i - n]);
    ZT_RETURN_IF_ERROR(dg2_put(c, a, &v));
  }
  ZT_RETURN_IF_ERROR(dg2_emit_block(c, b));
  MlirOperation ret = block_terminator(b);
  for (int32_t i = 0; i < n; ++i) {
    const dg2_val_t* v;
    ZT_RETURN_IF_ERROR(dg2_get_checked(c, mlirOperationGetOperand(ret, i), &v));
    if (v->kind != DV_SCALAR) return zt_make_status(ZT_STATUS_INTERNAL, "dg2: combiner");
    snprintf(out[i], DG2_NAME, "%s", v->name);
  }
  return NULL;
}

static const char* shuffle_mangle(zt_scalar_kind_t k) {
  switch (k) {
    case ZT_F32: return "f";
    case ZT_F16: return "Dh";
    case ZT_F64: return "d";
    case ZT_I8: return "c";
    case ZT_I16: case ZT_BF16: return "s";
    case ZT_I32: return "i";
    case ZT_I64: case ZT_PTR: return "l";
    default: return NULL;
  }
}

static void shuffle_xor(dg2_t* c, zt_scalar_kind_t k, const char* x, int mask,
                        char out[DG2_NAME]) {
  char v[DG2_NAME], m[DG2_NAME], name[64], sig[64];
  zt_scalar_kind_t sk = k == ZT_I1 ? ZT_I32 : k;
  snprintf(v, DG2_NAME, "%s", x);
  if (k == ZT_I1) {
    dg2_fresh(c, v);
    dg2_line(c, "%s = arith.extui %s : i1 to i32", v, x);
  }
  const char* ty = dg2_reg(sk);
  snprintf(name, sizeof name, "_Z21sub_group_shuffle_xor%sj", shuffle_mangle(sk));
  snprintf(sig, sizeof sig, "(%s, i32) -> %s", ty, ty);
  dg2_declare(c, name, sig);
  dg2_const(c, "i32", mask, m);
  dg2_fresh(c, out);
  dg2_line(c, "%s = llvm.call @%s(%s, %s) : (%s, i32) -> %s", out, name, v, m, ty, ty);
  if (k == ZT_I1) {
    char z[DG2_NAME], b[DG2_NAME];
    dg2_const(c, "i32", 0, z);
    dg2_fresh(c, b);
    dg2_line(c, "%s = arith.cmpi ne, %s, %s : i32", b, out, z);
    snprintf(out, DG2_NAME, "%s", b);
  }
}

#define MAXN 8

zt_status_t dg2_emit_reduce(dg2_t* c, MlirOperation op) {
  intptr_t n = mlirOperationGetNumResults(op);
  if (n < 1 || n > MAXN || mlirOperationGetNumOperands(op) != n)
    return dg2_op_error(op, ZT_STATUS_UNSUPPORTED, "dg2: reduce of %d values", (int)n);
  MlirAttribute ca = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("combiner"));
  if (mlirAttributeIsNull(ca) || !mlirAttributeIsAFlatSymbolRef(ca))
    return dg2_op_error(op, ZT_STATUS_INVALID_ARGUMENT, "reduce without a combiner");
  MlirOperation fn = mlirSymbolTableLookup(c->symbols, mlirFlatSymbolRefAttrGetValue(ca));
  if (mlirOperationIsNull(fn))
    return dg2_op_error(op, ZT_STATUS_INVALID_ARGUMENT, "combiner not found");
  zt_type_t st;
  ZT_RETURN_IF_ERROR(dg2_value_type(mlirOperationGetOperand(op, 0), &st));
  int64_t axis = dg2_int_attr(op, "axis", 0);
  int64_t len = st.shape[axis];
  zt_type_t ets[MAXN];
  for (intptr_t i = 0; i < n; ++i) {
    ZT_RETURN_IF_ERROR(dg2_value_type(mlirOperationGetOperand(op, i), &ets[i]));
    if (!shuffle_mangle(ets[i].kind) && ets[i].kind != ZT_I1)
      return dg2_op_error(op, ZT_STATUS_UNSUPPORTED, "dg2: reduce of this element type");
  }
  int64_t numel = zt_type_numel(st);
  if (st.rank == 1 && numel % c->threads == 0) {
    // Work-item, then subgroup (xor shuffles), then across subgroups
    // through local memory.
    int32_t l;
    ZT_RETURN_IF_ERROR(dg2_blocked(c, 1, st.shape, &l));
    dg2_val_t v[MAXN];
    for (intptr_t i = 0; i < n; ++i) {
      const dg2_val_t* x;
      ZT_RETURN_IF_ERROR(dg2_get_checked(c, mlirOperationGetOperand(op, i), &x));
      ZT_RETURN_IF_ERROR(dg2_to_layout(c, x, l, &v[i]));
    }
    char acc[MAXN][DG2_NAME], rhs[MAXN][DG2_NAME], out[MAXN][DG2_NAME];
    for (intptr_t i = 0; i < n; ++i) snprintf(acc[i], DG2_NAME, "%s", v[i].el[0]);
    for (int32_t k = 1; k < c->layouts[l].e; ++k) {
      for (intptr_t i = 0; i < n; ++i) snprintf(rhs[i], DG2_NAME, "%s", v[i].el[k]);
      ZT_RETURN_IF_ERROR(dg2_combine(c, fn, (int32_t)n, acc, rhs, out));
      memcpy(acc, out, sizeof acc);
    }
    for (int mask = DG2_SIMD / 2; mask >= 1; mask /= 2) {
      for (intptr_t i = 0; i < n; ++i) shuffle_xor(c, ets[i].kind, acc[i], mask, rhs[i]);
      ZT_RETURN_IF_ERROR(dg2_combine(c, fn, (int32_t)n, acc, rhs, out));
      memcpy(acc, out, sizeof acc);
    }
    if (c->num_warps > 1) {
      int32_t w = c->num_warps;
      dg2_need_smem(c, (int64_t)n * w * 8);
      dg2_barrier(c);
      dg2_line(c, "scf.if %%isl0 {");
      c->indent++;
      for (intptr_t i = 0; i < n; ++i) {
        zt_type_t t = {.kind = ets[i].kind, .rank = 1, .shape = {(int64_t)n * w * 8 /
                                                                  zt_tile_kind_bytes(ets[i].kind)}};
        char co[1][DG2_NAME], off[DG2_NAME];
        dg2_const(c, "i32", (long long)i * w * 8 / zt_tile_kind_bytes(ets[i].kind), off);
        dg2_fresh(c, co[0]);
        dg2_line(c, "%s = arith.addi %s, %%sg : i32", co[0], off);
        dg2_smem_store_elem(c, &t, co, acc[i]);
      }
      c->indent--;
      dg2_line(c, "}");
      dg2_barrier(c);
      for (int32_t s = 0; s < w; ++s) {
        for (intptr_t i = 0; i < n; ++i) {
          zt_type_t t = {.kind = ets[i].kind, .rank = 1, .shape = {(int64_t)n * w * 8}};
          char co[1][DG2_NAME];
          dg2_const(c, "i32", (long long)i * w * 8 / zt_tile_kind_bytes(ets[i].kind) + s, co[0]);
          dg2_smem_load_elem(c, &t, co, s == 0 ? acc[i] : rhs[i]);
        }
        if (s == 0) continue;
        ZT_RETURN_IF_ERROR(dg2_combine(c, fn, (int32_t)n, acc, rhs, out));
        memcpy(acc, out, sizeof acc);
      }
    }
    for (intptr_t i = 0; i < n; ++i) {
      dg2_val_t r = {.kind = DV_SCALAR};
      ZT_RETURN_IF_ERROR(dg2_value_type(mlirOperationGetResult(op, i), &r.type));
      snprintf(r.name, DG2_NAME, "%s", acc[i]);
      ZT_RETURN_IF_ERROR(dg2_put(c, mlirOperationGetResult(op, i), &r));
    }
    return NULL;
  }
  // General case (one value): the tensor through local memory, then every
  // work-item folds the elements along the axis of each result element it
  // holds.
  if (n != 1)
    return dg2_op_error(op, ZT_STATUS_UNSUPPORTED,
                        "dg2: multi-value reduce of a tile this small or of rank > 1");
  ZT_RETURN_IF_ERROR(dg2_stage_in_smem(c, mlirOperationGetOperand(op, 0), &st));
  zt_type_t rt;
  ZT_RETURN_IF_ERROR(dg2_value_type(mlirOperationGetResult(op, 0), &rt));
  int32_t rl = -1, e = 1;
  if (rt.rank > 0) {
    rl = dg2_hint_get(c, mlirOperationGetResult(op, 0));
    if (rl < 0) ZT_RETURN_IF_ERROR(dg2_blocked(c, rt.rank, rt.shape, &rl));
    e = c->layouts[rl].e;
  }
  dg2_val_t r = {.kind = rt.rank ? DV_DIST : DV_SCALAR, .type = rt, .layout = rl};
  if (rt.rank) {
    r.el = dg2_alloc_names(c, e);
    if (!r.el) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "dg2 values");
  }
  const char* ty = dg2_reg(st.kind);
  for (int32_t k = 0; k < e; ++k) {
    char rc[ZT_MAX_RANK][DG2_NAME], sc[ZT_MAX_RANK][DG2_NAME];
    if (rt.rank) dg2_coords(c, rl, k, rc);
    for (int32_t dd = 0, j = 0; dd < st.rank; ++dd)
      if (dd != axis) snprintf(sc[dd], DG2_NAME, "%s", rc[j++]);
    snprintf(sc[axis], DG2_NAME, "%%c0_i32");
    char acc[1][DG2_NAME], rhs[1][DG2_NAME], out[1][DG2_NAME], res[DG2_NAME], iv[DG2_NAME],
        arg[DG2_NAME], ub[DG2_NAME];
    dg2_smem_load_elem(c, &st, sc, acc[0]);
    dg2_const(c, "i32", len, ub);
    dg2_fresh(c, res);
    dg2_fresh(c, iv);
    dg2_fresh(c, arg);
    dg2_line(c, "%s = scf.for %s = %%c1_i32 to %s step %%c1_i32 iter_args(%s = %s) -> (%s) : i32 {",
             res, iv, ub, arg, acc[0], ty);
    c->indent++;
    ++c->loop_epoch;
    snprintf(sc[axis], DG2_NAME, "%s", iv);
    dg2_smem_load_elem(c, &st, sc, rhs[0]);
    snprintf(acc[0], DG2_NAME, "%s", arg);
    ZT_RETURN_IF_ERROR(dg2_combine(c, fn, 1, acc, rhs, out));
    dg2_line(c, "scf.yield %s : %s", out[0], ty);
    c->indent--;
    ++c->loop_epoch;
    dg2_line(c, "}");
    if (rt.rank)
      snprintf(r.el[k], DG2_NAME, "%s", res);
    else
      snprintf(r.name, DG2_NAME, "%s", res);
  }
  return dg2_put(c, mlirOperationGetResult(op, 0), &r);
}
