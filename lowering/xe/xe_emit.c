// Op dispatch of the Xe lowering and the ops that need no memory or control
// flow: constants, program ids, ranges, splats, elementwise arith/math.
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>

#include "xe/xe_internal.h"

static bool name_is(MlirStringRef n, const char* s) {
  size_t l = strlen(s);
  return n.length == l && memcmp(n.data, s, l) == 0;
}

static bool name_has_prefix(MlirStringRef n, const char* s) {
  size_t l = strlen(s);
  return n.length >= l && memcmp(n.data, s, l) == 0;
}

static int64_t int_attr(MlirOperation op, const char* name, int64_t dflt) {
  MlirAttribute a =
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(name));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAInteger(a)) return dflt;
  return mlirIntegerAttrGetValueInt(a);
}

// Inherent attributes of arith/math ops that change their meaning; copied
// into the generic form we emit.
void xe_op_props(MlirOperation op, zt_strbuf_t* sb) {
  static const char* const names[] = {"predicate", "fastmath", "overflowFlags",
                                      "roundingmode", "exact"};
  int n = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) {
    MlirAttribute a = mlirOperationGetAttributeByName(
        op, mlirStringRefCreateFromCString(names[i]));
    if (mlirAttributeIsNull(a)) continue;
    size_t at = sb->size;
    zt_strbuf_puts(sb, n++ ? ", " : "<{");
    zt_strbuf_printf(sb, "%s = ", names[i]);
    size_t value = sb->size;
    mlirAttributePrint(a, zt_strbuf_mlir_cb, sb);
    // fastmath<none> is the property's default: left out, the parser
    // gives the same op. Parsing it cost 12% of the 200-op chain's parse
    // (16 chunks of every op; callgrind, issue 22).
    // The same for overflowFlags = #arith.overflow<none> on integer ops.
    const char* none = strcmp(names[i], "fastmath") == 0        ? "#arith.fastmath<none>"
                       : strcmp(names[i], "overflowFlags") == 0 ? "#arith.overflow<none>"
                                                                : NULL;
    if (none && !sb->failed && sb->size - value == strlen(none) &&
        memcmp(sb->data + value, none, strlen(none)) == 0) {
      sb->size = at;
      sb->data[at] = 0;  // the buffer stays NUL-terminated
      --n;
    }
  }
  if (n) zt_strbuf_puts(sb, "}>");
}

// Broadcasts a scalar record to one vector<16xT> name.
static void splat_scalar(xe_emitter_t* e, const xe_val_t* s, xe_name_t out) {
  xe_fresh(e, out);
  const char* t = xe_elem(s->type.kind);
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "%s = vector.broadcast %s {layout_result_0 = " XE_LAYOUT_ATTR
                   "} : %s to vector<16x%s>%s\n",
                   out, s->names[0], t, t, e->loc.data ? e->loc.data : "");
}

// --- bf16 on 1-D tensors and scalars: i16 bits, arithmetic in f32 --------

static const char* lc(xe_emitter_t* e) { return e->loc.data ? e->loc.data : ""; }

// A vector (16 lanes) or scalar constant of type t, hoisted.
static void hoist_const(xe_emitter_t* e, bool vec, const char* t, long long v, xe_name_t out) {
  char text[160];
  if (vec)
    snprintf(text, sizeof text,
             "arith.constant {layout_result_0 = " XE_LAYOUT_ATTR "} dense<%lld> : vector<16x%s>",
             v, t);
  else
    snprintf(text, sizeof text, "arith.constant %lld : %s", v, t);
  xe_hoist(e, text, vec, out);
}

// One unary/binary op on a chunk: out = op(a[, b]) : from -> to.
static void chunk_op(xe_emitter_t* e, bool vec, const char* op, const char* a, const char* b,
                     const char* from, const char* to, xe_name_t out) {
  xe_fresh(e, out);
  xe_line(e);
  const char* lay = vec ? " {layout_result_0 = " XE_LAYOUT_ATTR "}" : "";
  char tf[40], tt[40];
  snprintf(tf, sizeof tf, vec ? "vector<16x%s>" : "%s", from);
  snprintf(tt, sizeof tt, vec ? "vector<16x%s>" : "%s", to);
  if (b)
    zt_strbuf_printf(&e->body, "%s = %s %s, %s%s : %s%s\n", out, op, a, b, lay, tf, lc(e));
  else if (strcmp(from, to) == 0)
    zt_strbuf_printf(&e->body, "%s = %s %s%s : %s%s\n", out, op, a, lay, tf, lc(e));
  else
    zt_strbuf_printf(&e->body, "%s = %s %s%s : %s to %s%s\n", out, op, a, lay, tf, tt, lc(e));
}

// bf16 bits -> f32: the bits are the high half of the f32.
xe_val_t* xe_bf16_to_f32(xe_emitter_t* e, const xe_val_t* x) {
  zt_type_t t = x->type;
  t.kind = ZT_F32;
  xe_val_t* r = xe_alloc(e, t);
  if (!r) return NULL;
  bool vec = x->layout != XE_LAYOUT_SCALAR;
  xe_name_t c16, w, sh;
  hoist_const(e, vec, "i32", 16, c16);
  for (int32_t k = 0; k < r->nchunks; ++k) {
    chunk_op(e, vec, "arith.extui", x->names[k], NULL, "i16", "i32", w);
    chunk_op(e, vec, "arith.shli", w, c16, "i32", "i32", sh);
    xe_line(e);
    zt_strbuf_printf(&e->body, vec ? "%s = arith.bitcast %s {layout_result_0 = " XE_LAYOUT_ATTR
                                     "} : vector<16xi32> to vector<16xf32>%s\n"
                                   : "%s = arith.bitcast %s : i32 to f32%s\n",
                     r->names[k], sh, lc(e));
  }
  return r;
}

// f32 -> bf16 bits, rounding to nearest even; NaN stays a quiet NaN.
xe_val_t* xe_f32_to_bf16(xe_emitter_t* e, const xe_val_t* x) {
  zt_type_t t = x->type;
  t.kind = ZT_BF16;
  xe_val_t* r = xe_alloc(e, t);
  if (!r) return NULL;
  bool vec = x->layout != XE_LAYOUT_SCALAR;
  xe_name_t c16, c1, c7fff, cnan;
  hoist_const(e, vec, "i32", 16, c16);
  hoist_const(e, vec, "i32", 1, c1);
  hoist_const(e, vec, "i32", 0x7fff, c7fff);
  hoist_const(e, vec, "i32", 0x7fc0, cnan);
  for (int32_t k = 0; k < r->nchunks; ++k) {
    xe_name_t bits, sh, lsb, bias, sum, rnd, isnan, sel;
    chunk_op(e, vec, "arith.bitcast", x->names[k], NULL, "f32", "i32", bits);
    chunk_op(e, vec, "arith.shrui", bits, c16, "i32", "i32", sh);
    chunk_op(e, vec, "arith.andi", sh, c1, "i32", "i32", lsb);
    chunk_op(e, vec, "arith.addi", c7fff, lsb, "i32", "i32", bias);
    chunk_op(e, vec, "arith.addi", bits, bias, "i32", "i32", sum);
    chunk_op(e, vec, "arith.shrui", sum, c16, "i32", "i32", rnd);
    chunk_op(e, vec, "arith.cmpf uno,", x->names[k], x->names[k], "f32", "f32", isnan);
    xe_fresh(e, sel);
    xe_line(e);
    zt_strbuf_printf(&e->body,
                     vec ? "%s = arith.select %s, %s, %s {layout_result_0 = " XE_LAYOUT_ATTR
                           "} : vector<16xi1>, vector<16xi32>%s\n"
                         : "%s = arith.select %s, %s, %s : i32%s\n",
                     sel, isnan, cnan, rnd, lc(e));
    xe_line(e);
    zt_strbuf_printf(&e->body,
                     vec ? "%s = arith.trunci %s {layout_result_0 = " XE_LAYOUT_ATTR
                           "} : vector<16xi32> to vector<16xi16>%s\n"
                         : "%s = arith.trunci %s : i32 to i16%s\n",
                     r->names[k], sel, lc(e));
  }
  return r;
}

static zt_status_t emit_plain_elementwise(xe_emitter_t* e, const char* opname,
                                          const char* props, xe_val_t** ops, int nops,
                                          zt_type_t rt, xe_val_t** out);

// A shallow copy of a record with another element kind (same SSA names).
static xe_val_t* retyped(xe_emitter_t* e, const xe_val_t* x, zt_scalar_kind_t k) {
  zt_type_t t = x->type;
  t.kind = k;
  xe_val_t* r = xe_alloc(e, t);
  if (r) memcpy(r->names, x->names, (size_t)x->nchunks * sizeof(xe_name_t));
  return r;
}

// Elementwise ops with bf16 operands or result: bitcasts and selects work
// on the bits; everything else converts to f32, computes, and rounds back
// (to nearest even) when the result is bf16. Ops whose exact result needs
// more than f32 then rounds twice (f64 -> f32 -> bf16, int -> f32 -> bf16 for
// magnitudes past 2^24): within one bf16 ulp, and rare.
static zt_status_t emit_bf16_elementwise(xe_emitter_t* e, const char* opname,
                                         const char* props, xe_val_t** ops, int nops,
                                         zt_type_t rt, xe_val_t** out) {
  *out = NULL;
  if (strcmp(opname, "arith.bitcast") == 0) {
    // bf16 <-> i16: the bits themselves.
    xe_val_t* r = retyped(e, ops[0], rt.kind);
    if (!r) return NULL;
    *out = r;
    return NULL;
  }
  xe_val_t* tmp[4] = {NULL};
  xe_val_t* use[4];
  zt_status_t s = NULL;
  if (strcmp(opname, "arith.select") == 0) {
    for (int i = 0; i < nops; ++i) {
      use[i] = ops[i];
      if (ops[i]->type.kind == ZT_BF16) use[i] = tmp[i] = retyped(e, ops[i], ZT_I16);
    }
    zt_type_t it = rt;
    it.kind = ZT_I16;
    xe_val_t* r = NULL;
    s = emit_plain_elementwise(e, opname, props, use, nops, it, &r);
    if (!s && r) r->type.kind = ZT_BF16;
    *out = r;
  } else {
    for (int i = 0; i < nops && !e->error; ++i) {
      use[i] = ops[i];
      if (ops[i]->type.kind == ZT_BF16) use[i] = tmp[i] = xe_bf16_to_f32(e, ops[i]);
    }
    zt_type_t ft = rt;
    if (ft.kind == ZT_BF16) ft.kind = ZT_F32;
    xe_val_t* f = NULL;
    const char* op = opname;
    if (strcmp(opname, "arith.extf") == 0 && use[0]->type.kind == ft.kind) {
      op = NULL;  // bf16 -> f32: the conversion is the result
    } else if (strcmp(opname, "arith.truncf") == 0 && rt.kind == ZT_BF16) {
      zt_scalar_kind_t sk = use[0]->type.kind;
      op = sk == ZT_F32 ? NULL : sk == ZT_F64 ? "arith.truncf" : "arith.extf";
    }
    if (e->error) {
      s = NULL;
    } else if (!op) {
      f = use[0];
      for (int i = 0; i < nops; ++i)
        if (tmp[i] == f) tmp[i] = NULL;  // f is the result now
      if (f == ops[0]) f = retyped(e, ops[0], ops[0]->type.kind);
    } else {
      s = emit_plain_elementwise(e, op, props, use, nops, ft, &f);
    }
    if (!s && f && rt.kind == ZT_BF16) {
      xe_val_t* r = xe_f32_to_bf16(e, f);
      xe_free_val(f);
      f = r;
    }
    *out = f;
  }
  for (int i = 0; i < nops; ++i) xe_free_val(tmp[i]);
  return s;
}

static zt_status_t nan_minmax_vals(xe_emitter_t* e, bool is_max, xe_val_t** ops,
                                   zt_type_t rt, xe_val_t** out);

zt_status_t xe_emit_elementwise(xe_emitter_t* e, const char* opname,
                                const char* props, xe_val_t** ops, int nops,
                                zt_type_t rt, xe_val_t** out) {
  // Here too, not only in the op dispatch: a user combiner's body
  // (xe_reduce_user.c) reaches the emitter through this entry.
  if (nops == 2 && (!strcmp(opname, "arith.maximumf") || !strcmp(opname, "arith.minimumf")))
    return nan_minmax_vals(e, opname[7] == 'a', ops, rt, out);
  bool bf = rt.kind == ZT_BF16;
  for (int i = 0; i < nops; ++i) bf |= ops[i]->type.kind == ZT_BF16;
  if (bf) return emit_bf16_elementwise(e, opname, props, ops, nops, rt, out);
  return emit_plain_elementwise(e, opname, props, ops, nops, rt, out);
}

static zt_status_t emit_plain_elementwise(xe_emitter_t* e, const char* opname,
                                          const char* props, xe_val_t** ops, int nops,
                                          zt_type_t rt, xe_val_t** out) {
  *out = NULL;
  xe_val_t* r = xe_alloc(e, rt);
  if (!r) return NULL;
  bool vec = rt.rank == 1;
  // Scalar operands of a tensor op (select's condition) become vectors.
  xe_name_t bcast[4];
  if (nops > 4) return xe_fail(e, ZT_STATUS_INTERNAL, "too many operands");
  for (int i = 0; i < nops; ++i)
    if (vec && ops[i]->layout == XE_LAYOUT_SCALAR) splat_scalar(e, ops[i], bcast[i]);
  // Everything after the operand names is the same for every chunk: written
  // once, then appended (the chunks of the 200-op chain spent ~10% of its
  // compile in printf, issue 22).
  zt_strbuf_t tail;
  zt_strbuf_init(&tail);
  zt_strbuf_printf(&tail, ") %s", props ? props : "");
  if (vec) zt_strbuf_puts(&tail, " {layout_result_0 = " XE_LAYOUT_ATTR "}");
  zt_strbuf_puts(&tail, " : (");
  for (int i = 0; i < nops; ++i) {
    if (i) zt_strbuf_puts(&tail, ", ");
    if (vec)
      zt_strbuf_printf(&tail, "vector<16x%s>", xe_elem(ops[i]->type.kind));
    else
      zt_strbuf_puts(&tail, xe_elem(ops[i]->type.kind));
  }
  if (vec)
    zt_strbuf_printf(&tail, ") -> vector<16x%s>", xe_elem(rt.kind));
  else
    zt_strbuf_printf(&tail, ") -> %s", xe_elem(rt.kind));
  zt_strbuf_printf(&tail, "%s\n", e->loc.data ? e->loc.data : "");
  if (tail.failed) {
    zt_strbuf_deinit(&tail);
    xe_free_val(r);
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
  }
  for (int32_t k = 0; k < r->nchunks; ++k) {
    xe_line(e);
    zt_strbuf_puts(&e->body, r->names[k]);
    zt_strbuf_puts(&e->body, " = \"");
    zt_strbuf_puts(&e->body, opname);
    zt_strbuf_puts(&e->body, "\"(");
    for (int i = 0; i < nops; ++i) {
      const char* nm = vec && ops[i]->layout == XE_LAYOUT_SCALAR
                           ? bcast[i]
                           : ops[i]->names[ops[i]->nchunks == 1 ? 0 : k];
      if (i) zt_strbuf_puts(&e->body, ", ");
      zt_strbuf_puts(&e->body, nm);
    }
    zt_strbuf_append(&e->body, tail.data, tail.size);
  }
  zt_strbuf_deinit(&tail);
  *out = r;
  return NULL;
}

// Operand and result records of an op whose values are all lowered.
static zt_status_t operands(xe_emitter_t* e, MlirOperation op, xe_val_t** ops,
                            int max, int* n) {
  intptr_t no = mlirOperationGetNumOperands(op);
  if (no > max) return xe_fail(e, ZT_STATUS_UNSUPPORTED, "%d operands", (int)no);
  for (intptr_t i = 0; i < no; ++i) {
    ops[i] = xe_lookup(e, mlirOperationGetOperand(op, i));
    if (!ops[i]) return e->error ? NULL : xe_fail(e, ZT_STATUS_INTERNAL, "operand");
  }
  *n = (int)no;
  return NULL;
}

static zt_status_t result_type(xe_emitter_t* e, MlirOperation op, intptr_t i,
                               zt_type_t* t) {
  return xe_tile_type(e, mlirValueGetType(mlirOperationGetResult(op, i)), t);
}

// The scalar record a tile.splat operand was made from (NULL otherwise).
static xe_val_t* splat_source(xe_emitter_t* e, MlirValue v) {
  if (!mlirValueIsAOpResult(v)) return NULL;
  MlirOperation def = mlirOpResultGetOwner(v);
  if (!name_is(mlirIdentifierStr(mlirOperationGetName(def)), "tile.splat")) return NULL;
  xe_val_t* s = xe_find_raw(e, mlirOperationGetOperand(def, 0));
  return s && s->layout == XE_LAYOUT_SCALAR ? s : NULL;
}

// The op as one op on whole vectors (xe_wide.c) where it can be: *out NULL
// otherwise.
static zt_status_t emit_arith_wide(xe_emitter_t* e, MlirOperation op, const char* opname,
                                   xe_val_t** out) {
  *out = NULL;
  intptr_t no = mlirOperationGetNumOperands(op);
  if (!e->wide || no < 1 || no > 4) return NULL;
  xe_val_t *ops[4], *splat[4];
  for (intptr_t i = 0; i < no; ++i) {
    MlirValue v = mlirOperationGetOperand(op, i);
    ops[i] = xe_find_raw(e, v);
    if (!ops[i]) return NULL;
    splat[i] = splat_source(e, v);
  }
  zt_type_t rt;
  ZT_RETURN_IF_ERROR(result_type(e, op, 0, &rt));
  zt_strbuf_t props;
  zt_strbuf_init(&props);
  xe_op_props(op, &props);
  zt_status_t s = xe_wide_elementwise(e, op, opname, props.data, ops, splat, (int)no, rt, out);
  zt_strbuf_deinit(&props);
  return s;
}

// Generic elementwise arith/math op (one result).
static zt_status_t emit_arith(xe_emitter_t* e, MlirOperation op,
                              const char* opname) {
  xe_val_t* w;
  ZT_RETURN_IF_ERROR(emit_arith_wide(e, op, opname, &w));
  if (w) {
    xe_bind(e, mlirOperationGetResult(op, 0), w);
    return NULL;
  }
  xe_val_t* ops[4];
  int n;
  ZT_RETURN_IF_ERROR(operands(e, op, ops, 4, &n));
  if (e->error) return NULL;
  zt_type_t rt;
  ZT_RETURN_IF_ERROR(result_type(e, op, 0, &rt));
  zt_strbuf_t props;
  zt_strbuf_init(&props);
  xe_op_props(op, &props);
  xe_val_t* r;
  zt_status_t s = xe_emit_elementwise(e, opname, props.data, ops, n, rt, &r);
  zt_strbuf_deinit(&props);
  ZT_RETURN_IF_ERROR(s);
  xe_bind(e, mlirOperationGetResult(op, 0), r);
  return NULL;
}

// umulhi (arith.mului_extended's high half) on 32-bit lanes: widen to i64,
// multiply, shift. 64-bit operands would need i128 lanes: unsupported.
static zt_status_t emit_mului_extended(xe_emitter_t* e, MlirOperation op) {
  xe_val_t* ops[2];
  int n;
  ZT_RETURN_IF_ERROR(operands(e, op, ops, 2, &n));
  if (e->error) return NULL;
  zt_type_t rt;
  ZT_RETURN_IF_ERROR(result_type(e, op, 0, &rt));
  if (rt.kind != ZT_I32)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "umulhi on Xe supports 32-bit integers only");
  zt_type_t wt = rt;
  wt.kind = ZT_I64;
  zt_type_t ct = zt_type_scalar(ZT_I64);
  xe_val_t *a64 = NULL, *b64 = NULL, *p = NULL, *sh = NULL, *hi = NULL, *lo = NULL;
  xe_val_t* c32 = xe_alloc(e, ct);
  if (!c32) return NULL;
  xe_line(e);
  zt_strbuf_printf(&e->body, "%s = arith.constant 32 : i64%s\n", c32->names[0],
                   e->loc.data ? e->loc.data : "");
  zt_status_t s = xe_emit_elementwise(e, "arith.extui", NULL, &ops[0], 1, wt, &a64);
  if (!s) s = xe_emit_elementwise(e, "arith.extui", NULL, &ops[1], 1, wt, &b64);
  xe_val_t* mul_ops[2] = {a64, b64};
  if (!s) s = xe_emit_elementwise(e, "arith.muli", NULL, mul_ops, 2, wt, &p);
  xe_val_t* sh_ops[2] = {p, c32};
  if (!s) s = xe_emit_elementwise(e, "arith.shrui", NULL, sh_ops, 2, wt, &sh);
  if (!s) s = xe_emit_elementwise(e, "arith.trunci", NULL, &sh, 1, rt, &hi);
  if (!s) s = xe_emit_elementwise(e, "arith.muli", NULL, ops, 2, rt, &lo);
  xe_free_val(c32);
  xe_free_val(a64);
  xe_free_val(b64);
  xe_free_val(p);
  xe_free_val(sh);
  ZT_RETURN_IF_ERROR(s);
  xe_bind(e, mlirOperationGetResult(op, 0), lo);
  xe_bind(e, mlirOperationGetResult(op, 1), hi);
  return NULL;
}

// maximumf/minimumf propagate NaN; OpenCL's fmax/fmin (what IGC gives for
// them) return the other operand. maxnumf plus a NaN select keeps
// the tile IR's meaning: x + y is NaN when either is.
static zt_status_t nan_minmax_vals(xe_emitter_t* e, bool is_max, xe_val_t** ops,
                                   zt_type_t rt, xe_val_t** out) {
  *out = NULL;
  xe_val_t *m, *u, *sum;
  ZT_RETURN_IF_ERROR(xe_emit_elementwise(
      e, is_max ? "arith.maxnumf" : "arith.minnumf", NULL, ops, 2, rt, &m));
  zt_type_t bt = rt;
  bt.kind = ZT_I1;
  ZT_RETURN_IF_ERROR(xe_emit_elementwise(e, "arith.cmpf", "<{predicate = 14 : i64}>",
                                         ops, 2, bt, &u));
  ZT_RETURN_IF_ERROR(xe_emit_elementwise(e, "arith.addf", NULL, ops, 2, rt, &sum));
  xe_val_t* sel[3] = {u, sum, m};
  zt_status_t s = xe_emit_elementwise(e, "arith.select", NULL, sel, 3, rt, out);
  xe_free_val(m);
  xe_free_val(u);
  xe_free_val(sum);
  return s;
}

static zt_status_t emit_nan_minmax(xe_emitter_t* e, MlirOperation op, bool is_max) {
  xe_val_t* ops[2];
  int n;
  ZT_RETURN_IF_ERROR(operands(e, op, ops, 2, &n));
  if (e->error) return NULL;
  zt_type_t rt;
  ZT_RETURN_IF_ERROR(result_type(e, op, 0, &rt));
  xe_val_t* r;
  ZT_RETURN_IF_ERROR(nan_minmax_vals(e, is_max, ops, rt, &r));
  if (r) xe_bind(e, mlirOperationGetResult(op, 0), r);
  return NULL;
}

// f32 -> bf16 bits, rounding to nearest even (NaN stays a quiet NaN).
static uint16_t bf16_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static zt_status_t emit_constant(xe_emitter_t* e, MlirOperation op) {
  MlirType rty = mlirValueGetType(mlirOperationGetResult(op, 0));
  if (mlirTypeIsABF16(rty)) {
    // A bf16 scalar constant (a load's `other`, a splat into a bf16 tile)
    // is held as its i16 bits: bf16 arithmetic does not reach IGC 2022
    // (XEGPU_NOTES b2/b3), and the 2-D bf16 tiles it meets travel as bits.
    MlirAttribute a =
        mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("value"));
    if (mlirAttributeIsNull(a) || !mlirAttributeIsAFloat(a))
      return xe_fail(e, ZT_STATUS_INTERNAL, "bf16 constant without a float value");
    xe_val_t* r = xe_define(e, mlirOperationGetResult(op, 0), zt_type_scalar(ZT_BF16));
    if (!r) return NULL;
    xe_line(e);
    zt_strbuf_printf(&e->body, "%s = arith.constant %d : i16%s\n", r->names[0],
                     (int)(int16_t)bf16_bits((float)mlirFloatAttrGetValueDouble(a)),
                     e->loc.data);
    return NULL;
  }
  zt_type_t t;
  ZT_RETURN_IF_ERROR(result_type(e, op, 0, &t));
  if (t.rank != 0)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "tensor constants (use tile.splat)");
  MlirAttribute a =
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("value"));
  if (mlirAttributeIsNull(a)) return xe_fail(e, ZT_STATUS_INTERNAL, "constant without value");
  xe_val_t* r = xe_define(e, mlirOperationGetResult(op, 0), t);
  if (!r) return NULL;
  xe_line(e);
  zt_strbuf_printf(&e->body, "%s = arith.constant ", r->names[0]);
  mlirAttributePrint(a, zt_strbuf_mlir_cb, &e->body);
  zt_strbuf_printf(&e->body, "%s\n", e->loc.data);
  return NULL;
}

static zt_status_t emit_grid_query(xe_emitter_t* e, MlirOperation op,
                                   const char* gpu_op) {
  int64_t axis = int_attr(op, "axis", -1);
  if (axis < 0 || axis > 2) return xe_fail(e, ZT_STATUS_INVALID_ARGUMENT, "axis %lld", (long long)axis);
  char text[96];
  xe_name_t idx;
  snprintf(text, sizeof text, "%s %c", gpu_op, "xyz"[axis]);
  xe_hoist(e, text, false, idx);
  snprintf(text, sizeof text, "arith.index_cast %s : index to i32", idx);
  zt_type_t t = zt_type_scalar(ZT_I32);
  xe_val_t* r = xe_alloc(e, t);
  if (!r) return NULL;
  xe_hoist(e, text, false, r->names[0]);
  xe_bind(e, mlirOperationGetResult(op, 0), r);
  return NULL;
}

static zt_status_t emit_make_range(xe_emitter_t* e, MlirOperation op) {
  zt_type_t t;
  ZT_RETURN_IF_ERROR(result_type(e, op, 0, &t));
  int64_t start = int_attr(op, "start", 0);
  xe_val_t* r = xe_alloc(e, t);
  if (!r) return NULL;
  xe_name_t lane;
  xe_lane_i32(e, lane);
  if (r->dist) {
    // Subgroup s holds chunks s*nchunks ..: lane + (start + (s*nchunks + k)*16).
    char text[192];
    xe_name_t sg, span, sgoff;
    xe_sg_id_i32(e, sg);
    snprintf(text, sizeof text, "arith.constant %lld : i32",
             (long long)r->nchunks * XE_SUBGROUP);
    xe_hoist(e, text, false, span);
    snprintf(text, sizeof text, "arith.muli %s, %s : i32", sg, span);
    xe_hoist(e, text, false, sgoff);
    for (int32_t k = 0; k < r->nchunks; ++k) {
      int64_t off = start + (int64_t)k * XE_SUBGROUP;
      xe_name_t c, sum, b;
      if (off != 0) {
        snprintf(text, sizeof text, "arith.constant %lld : i32", (long long)off);
        xe_hoist(e, text, false, c);
        snprintf(text, sizeof text, "arith.addi %s, %s : i32", sgoff, c);
        xe_hoist(e, text, false, sum);
      } else {
        memcpy(sum, sgoff, sizeof sum);
      }
      snprintf(text, sizeof text,
               "vector.broadcast %s {layout_result_0 = " XE_LAYOUT_ATTR
               "} : i32 to vector<16xi32>",
               sum);
      xe_hoist(e, text, true, b);
      snprintf(text, sizeof text,
               "arith.addi %s, %s {layout_result_0 = " XE_LAYOUT_ATTR
               "} : vector<16xi32>",
               lane, b);
      xe_hoist(e, text, true, r->names[k]);
    }
    xe_bind(e, mlirOperationGetResult(op, 0), r);
    return NULL;
  }
  for (int32_t k = 0; k < r->nchunks; ++k) {
    int64_t off = start + (int64_t)k * XE_SUBGROUP;
    if (off == 0) {
      memcpy(r->names[k], lane, sizeof lane);
      continue;
    }
    char text[192];
    xe_name_t c;
    snprintf(text, sizeof text,
             "arith.constant {layout_result_0 = " XE_LAYOUT_ATTR
             "} dense<%lld> : vector<16xi32>",
             (long long)off);
    xe_hoist(e, text, true, c);
    snprintf(text, sizeof text,
             "arith.addi %s, %s {layout_result_0 = " XE_LAYOUT_ATTR
             "} : vector<16xi32>",
             lane, c);
    xe_hoist(e, text, true, r->names[k]);
  }
  xe_bind(e, mlirOperationGetResult(op, 0), r);
  return NULL;
}

// op's result (a tensor, or a scalar) holding the scalar `x` everywhere.
static zt_status_t emit_splat_of(xe_emitter_t* e, MlirValue x, MlirOperation op) {
  xe_val_t* s = xe_lookup(e, x);
  if (!s) return NULL;
  zt_type_t t;
  ZT_RETURN_IF_ERROR(result_type(e, op, 0, &t));
  if (t.rank == 0) {
    xe_alias(e, mlirOperationGetResult(op, 0), s);
    return NULL;
  }
  xe_val_t* r = xe_wide_splat(e, op, s, t);
  if (r) {
    xe_bind(e, mlirOperationGetResult(op, 0), r);
    return NULL;
  }
  r = xe_alloc(e, t);
  if (!r) return NULL;
  xe_name_t v;
  if (t.kind == ZT_PTR) {
    // A pointer tensor: the scalar address and zero offsets.
    memcpy(r->base, s->names[0], sizeof r->base);
    xe_zero_offsets64(e, v);
  } else {
    splat_scalar(e, s, v);
  }
  for (int32_t k = 0; k < r->nchunks; ++k) memcpy(r->names[k], v, sizeof v);
  xe_bind(e, mlirOperationGetResult(op, 0), r);
  return NULL;
}

static zt_status_t emit_splat(xe_emitter_t* e, MlirOperation op) {
  return emit_splat_of(e, mlirOperationGetOperand(op, 0), op);
}

// broadcast / reshape between equal 1-D shapes change nothing.
static zt_status_t emit_same_shape(xe_emitter_t* e, MlirOperation op) {
  xe_val_t* s = xe_lookup(e, mlirOperationGetOperand(op, 0));
  if (!s) return NULL;
  zt_type_t t;
  ZT_RETURN_IF_ERROR(result_type(e, op, 0, &t));
  if (!zt_type_equal(t, s->type)) {
    // A one-element tensor broadcast (tl.softmax's max(x, keep_dims=True)):
    // the splat of its element, here of the scalar it was splat from.
    MlirValue src = mlirOperationGetOperand(op, 0);
    MlirOperation def = mlirValueIsAOpResult(src) ? mlirOpResultGetOwner(src)
                                                  : (MlirOperation){NULL};
    if (s->numel == 1 && t.rank == 1 && name_is(mlirIdentifierStr(mlirOperationGetName(op)),
                                                 "tile.broadcast") &&
        !mlirOperationIsNull(def) &&
        name_is(mlirIdentifierStr(mlirOperationGetName(def)), "tile.splat"))
      return emit_splat_of(e, mlirOperationGetOperand(def, 0), op);
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "shape change of a 1-D tensor (%lld -> %lld elements)",
                   (long long)s->numel, (long long)(t.rank ? t.shape[0] : 1));
  }
  xe_alias(e, mlirOperationGetResult(op, 0), s);
  return NULL;
}

void xe_note_libm(xe_emitter_t* e, MlirStringRef n) {
  // Upstream's math-to-XeVM conversion leaves these to LLVM translation,
  // which has no intrinsic for them ("missing LLVMTranslationDialectInterface"):
  // the module then goes through libm calls renamed to OpenCL builtins
  // (xe_libm.c).
  static const char* const ops[] = {"math.erf", "math.erfc"};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; ++i)
    if (name_is(n, ops[i])) e->used_libm = true;
}

zt_status_t xe_emit_op(xe_emitter_t* e, MlirOperation op) {
  xe_set_cur(e, op);
  // The subgroup grid this op's values live on (a dot's own, xe_grids.c).
  ZT_RETURN_IF_ERROR(xe_op_grid(e, op));
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  // Every result must have a type this milestone handles (1-D, no bf16).
  for (intptr_t i = 0; i < mlirOperationGetNumResults(op); ++i) {
    zt_type_t t;
    ZT_RETURN_IF_ERROR(result_type(e, op, i, &t));
  }
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(op); ++i) {
    zt_type_t t;
    ZT_RETURN_IF_ERROR(
        xe_tile_type(e, mlirValueGetType(mlirOperationGetOperand(op, i)), &t));
  }
  // Results bound already (an addition fused into the dot before it).
  if (mlirOperationGetNumResults(op) == 1 && xe_find_raw(e, mlirOperationGetResult(op, 0)))
    return NULL;
  bool matrix = false;
  zt_status_t s = xe_matrix_op(e, op, &matrix);
  if (matrix) {
    if (!s && !e->error) s = xe_gather_index_rows(e, op);
    if (!s && e->error) {
      s = e->error;
      e->error = NULL;
    }
    return s;
  }
  if (name_is(n, "arith.constant")) s = emit_constant(e, op);
  else if (name_is(n, "tile.program_id")) s = emit_grid_query(e, op, "gpu.block_id");
  else if (name_is(n, "tile.num_programs")) s = emit_grid_query(e, op, "gpu.grid_dim");
  else if (name_is(n, "tile.make_range")) s = emit_make_range(e, op);
  else if (name_is(n, "tile.splat")) s = emit_splat(e, op);
  else if (name_is(n, "tile.broadcast") || name_is(n, "tile.reshape"))
    s = emit_same_shape(e, op);
  else if (name_is(n, "tile.addptr")) s = xe_emit_addptr(e, op);
  else if (name_is(n, "tile.ptr_to_int")) s = xe_emit_ptr_conv(e, op, "ptr_to_int");
  else if (name_is(n, "tile.int_to_ptr")) s = xe_emit_ptr_conv(e, op, "int_to_ptr");
  else if (name_is(n, "tile.ptr_cast")) s = xe_emit_ptr_conv(e, op, "ptr_cast");
  else if (name_is(n, "tile.load")) s = xe_emit_load(e, op);
  else if (name_is(n, "tile.store")) s = xe_emit_store(e, op);
  else if (name_is(n, "tile.atomic_rmw") || name_is(n, "tile.atomic_cas"))
    s = xe_emit_atomic(e, op);
  else if (name_is(n, "tile.reduce")) s = xe_emit_any_reduce(e, op);
  else if (name_is(n, "tile.scan")) s = xe_emit_scan(e, op);
  else if (name_is(n, "scf.for")) s = xe_emit_for(e, op);
  else if (name_is(n, "scf.if")) s = xe_emit_if(e, op);
  else if (name_is(n, "scf.while")) s = xe_emit_while(e, op);
  else if (name_is(n, "scf.yield") || name_is(n, "scf.condition"))
    s = xe_emit_terminator(e, op);
  else if (name_is(n, "func.return")) {
    xe_line(e);
    zt_strbuf_printf(&e->body, "gpu.return%s\n", e->loc.data);
  } else if (name_is(n, "arith.maximumf")) s = emit_nan_minmax(e, op, true);
  else if (name_is(n, "arith.minimumf")) s = emit_nan_minmax(e, op, false);
  else if (name_is(n, "arith.mului_extended")) {
    s = emit_mului_extended(e, op);
  } else if ((name_has_prefix(n, "arith.") || name_has_prefix(n, "math.")) &&
             mlirOperationGetNumResults(op) == 1 &&
             mlirOperationGetNumRegions(op) == 0) {
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)n.length, n.data);
    xe_note_libm(e, n);
    s = emit_arith(e, op, name);
  } else {
    s = xe_fail(e, ZT_STATUS_UNSUPPORTED, "operation not supported on Xe yet");
  }
  if (!s && !e->error) s = xe_gather_index_rows(e, op);
  if (!s && e->error) {
    s = e->error;
    e->error = NULL;
  }
  return s;
}

zt_status_t xe_emit_block(xe_emitter_t* e, MlirBlock block) {
  // A block is a scope: what its ops write is not visible after it (xe_wide.c).
  int outer;
  ZT_RETURN_IF_ERROR(xe_scope_push(e, &outer));
  zt_status_t s = NULL;
  for (MlirOperation op = mlirBlockGetFirstOperation(block);
       !s && !mlirOperationIsNull(op); op = mlirOperationGetNextInBlock(op))
    s = xe_emit_op(e, op);
  xe_scope_pop(e, outer);
  return s;
}
