// Scalar, elementwise, shape and memory ops of the dg2 lowering.
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>

#include "dg2_internal.h"

#define MAX_OPERANDS 8

bool dg2_op_is(MlirOperation op, const char* name) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  size_t l = strlen(name);
  return n.length == l && memcmp(n.data, name, l) == 0;
}

bool dg2_op_prefix(MlirOperation op, const char* prefix) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  size_t l = strlen(prefix);
  return n.length > l && memcmp(n.data, prefix, l) == 0;
}

static void append_cb(MlirStringRef s, void* user) {
  zt_strbuf_append((zt_strbuf_t*)user, s.data, s.length);
}

static void op_where(MlirOperation op, char* where, size_t size) {
  zt_strbuf_t loc;
  zt_strbuf_init(&loc);
  mlirLocationPrint(mlirOperationGetLocation(op), append_cb, &loc);
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

zt_status_t dg2_op_error(MlirOperation op, zt_status_code_t code, const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  char where[512];
  op_where(op, where, sizeof where);
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  if (where[0])
    return zt_make_status(code, "%s: %.*s: %s", where, (int)n.length, n.data, msg);
  return zt_make_status(code, "%.*s: %s", (int)n.length, n.data, msg);
}

zt_status_t dg2_value_type(MlirValue v, zt_type_t* out) {
  return zt_tile_type_from_mlir(mlirValueGetType(v), out);
}

int64_t dg2_int_attr(MlirOperation op, const char* name, int64_t dflt) {
  MlirAttribute a = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(name));
  if (mlirAttributeIsNull(a) || !mlirAttributeIsAInteger(a)) return dflt;
  return mlirIntegerAttrGetValueInt(a);
}

static zt_status_t unsupported(MlirOperation op) {
  return dg2_op_error(op, ZT_STATUS_UNSUPPORTED, "not supported by the dg2 lowering");
}

zt_status_t dg2_addptr_scalar(dg2_t* c, const char* base, const char* off,
                              zt_scalar_kind_t off_kind, zt_scalar_kind_t pointee,
                              char out[DG2_NAME]) {
  char o64[DG2_NAME], sz[DG2_NAME], m[DG2_NAME];
  // The scaled offset is memoized per (offset name, kinds): a column
  // offset added to each row's pointer is extended and scaled once.
  int64_t bytes = zt_tile_kind_bytes(pointee);
  uint32_t id = bytes < 256 ? dg2_intern(c, off) : 0;
  uint64_t k1 = ((uint64_t)6 << 56) | ((uint64_t)off_kind << 8) | (uint64_t)bytes;
  const char* hit = id ? dg2_memo_get(c, k1, id) : NULL;
  if (hit) {
    dg2_fresh(c, out);
    dg2_line(c, "%s = arith.addi %s, %s : i64", out, base, hit);
    return NULL;
  }
  if (off_kind == ZT_I64) {
    snprintf(o64, DG2_NAME, "%s", off);
  } else {
    dg2_fresh(c, o64);
    dg2_line(c, "%s = arith.%s %s : %s to i64", o64, off_kind == ZT_I1 ? "extui" : "extsi",
             off, dg2_reg(off_kind));
  }
  dg2_const(c, "i64", bytes, sz);
  dg2_fresh(c, m);
  dg2_line(c, "%s = arith.muli %s, %s : i64", m, o64, sz);
  if (id) dg2_memo_put(c, k1, id, m);
  dg2_fresh(c, out);
  dg2_line(c, "%s = arith.addi %s, %s : i64", out, base, m);
  return NULL;
}

// --- scalar ops -------------------------------------------------------------------

static const char* mangle_float(zt_scalar_kind_t k) {
  return k == ZT_F32 ? "f" : k == ZT_F16 ? "Dh" : k == ZT_F64 ? "d" : NULL;
}

// math.* as OpenCL builtins (the SPIR-V backend turns them into OpenCL.std
// instructions).
static zt_status_t math_op(dg2_t* c, MlirOperation op, zt_scalar_kind_t k,
                           char ins[][DG2_NAME], char out[DG2_NAME]) {
  static const struct { const char* op; const char* cl; int n; } tab[] = {
      {"math.exp", "exp", 1},     {"math.exp2", "exp2", 1},   {"math.log", "log", 1},
      {"math.log2", "log2", 1},   {"math.sqrt", "sqrt", 1},   {"math.rsqrt", "rsqrt", 1},
      {"math.sin", "sin", 1},     {"math.cos", "cos", 1},     {"math.tanh", "tanh", 1},
      {"math.erf", "erf", 1},     {"math.floor", "floor", 1}, {"math.ceil", "ceil", 1},
      {"math.absf", "fabs", 1},   {"math.fma", "fma", 3},     {"math.powf", "pow", 2},
      {"math.atan2", "atan2", 2},
  };
  const char* ty = dg2_reg(k);
  if (dg2_op_is(op, "math.absi")) {
    char z[DG2_NAME], n[DG2_NAME], lt[DG2_NAME];
    dg2_const(c, ty, 0, z);
    dg2_fresh(c, n);
    dg2_line(c, "%s = arith.subi %s, %s : %s", n, z, ins[0], ty);
    dg2_fresh(c, lt);
    dg2_line(c, "%s = arith.cmpi slt, %s, %s : %s", lt, ins[0], z, ty);
    dg2_fresh(c, out);
    dg2_line(c, "%s = arith.select %s, %s, %s : %s", out, lt, n, ins[0], ty);
    return NULL;
  }
  const char* m = mangle_float(k);
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; ++i) {
    if (!dg2_op_is(op, tab[i].op)) continue;
    if (!m) return dg2_op_error(op, ZT_STATUS_UNSUPPORTED, "dg2: math on %s", ty);
    char name[64], sig[96], args[160] = "", targs[64] = "";
    int len = (int)strlen(tab[i].cl);
    snprintf(name, sizeof name, "_Z%d%s", len, tab[i].cl);
    for (int j = 0; j < tab[i].n; ++j) {
      strcat(name, m);
      snprintf(args + strlen(args), sizeof args - strlen(args), "%s%s", j ? ", " : "", ins[j]);
      snprintf(targs + strlen(targs), sizeof targs - strlen(targs), "%s%s", j ? ", " : "", ty);
    }
    snprintf(sig, sizeof sig, "(%s) -> %s", targs, ty);
    dg2_declare(c, name, sig);
    dg2_fresh(c, out);
    dg2_line(c, "%s = llvm.call @%s(%s) : (%s) -> %s", out, name, args, targs, ty);
    return NULL;
  }
  return unsupported(op);
}

// bf16 bits (i16) <-> f32.
static void bf16_to_f32(dg2_t* c, const char* x, char out[DG2_NAME]) {
  char a[DG2_NAME], s[DG2_NAME], b[DG2_NAME];
  dg2_fresh(c, a);
  dg2_line(c, "%s = arith.extui %s : i16 to i32", a, x);
  dg2_const(c, "i32", 16, s);
  dg2_fresh(c, b);
  dg2_line(c, "%s = arith.shli %s, %s : i32", b, a, s);
  dg2_fresh(c, out);
  dg2_line(c, "%s = arith.bitcast %s : i32 to f32", out, b);
}

// Round to nearest even; NaN stays a (quiet) NaN.
static void f32_to_bf16(dg2_t* c, const char* x, char out[DG2_NAME]) {
  char b[DG2_NAME], s16[DG2_NAME], one[DG2_NAME], r7[DG2_NAME], hi[DG2_NAME], lsb[DG2_NAME],
      add[DG2_NAME], sum[DG2_NAME], sh[DG2_NAME], t[DG2_NAME], nan[DG2_NAME], qn[DG2_NAME];
  dg2_fresh(c, b);
  dg2_line(c, "%s = arith.bitcast %s : f32 to i32", b, x);
  dg2_const(c, "i32", 16, s16);
  dg2_const(c, "i32", 1, one);
  dg2_const(c, "i32", 0x7fff, r7);
  dg2_fresh(c, hi);
  dg2_line(c, "%s = arith.shrui %s, %s : i32", hi, b, s16);
  dg2_fresh(c, lsb);
  dg2_line(c, "%s = arith.andi %s, %s : i32", lsb, hi, one);
  dg2_fresh(c, add);
  dg2_line(c, "%s = arith.addi %s, %s : i32", add, r7, lsb);
  dg2_fresh(c, sum);
  dg2_line(c, "%s = arith.addi %s, %s : i32", sum, b, add);
  dg2_fresh(c, sh);
  dg2_line(c, "%s = arith.shrui %s, %s : i32", sh, sum, s16);
  dg2_fresh(c, t);
  dg2_line(c, "%s = arith.trunci %s : i32 to i16", t, sh);
  dg2_fresh(c, nan);
  dg2_line(c, "%s = arith.cmpf uno, %s, %s : f32", nan, x, x);
  dg2_const(c, "i16", 0x7fc0, qn);
  dg2_fresh(c, out);
  dg2_line(c, "%s = arith.select %s, %s, %s : i16", out, nan, qn, t);
}

static uint16_t bf16_bits(double d) {
  float f = (float)d;
  uint32_t u;
  memcpy(&u, &f, 4);
  if (isnan(f)) return 0x7fc0;
  u += 0x7fff + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

static bool is_float_arith(MlirOperation op) {
  static const char* const names[] = {
      "arith.addf",    "arith.subf",    "arith.mulf",     "arith.divf",
      "arith.remf",    "arith.maxnumf", "arith.minnumf",  "arith.maximumf",
      "arith.minimumf", "arith.negf",   "arith.cmpf"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
    if (dg2_op_is(op, names[i])) return true;
  return dg2_op_prefix(op, "math.");
}

// Generic-form print of op with the given operand/result type spellings.
static void generic_print(dg2_t* c, MlirOperation op, char ins[][DG2_NAME],
                          const char* const* in_ty, const char* const* out_ty,
                          char outs[][DG2_NAME]) {
  intptr_t nin = mlirOperationGetNumOperands(op);
  intptr_t nout = mlirOperationGetNumResults(op);
  zt_strbuf_t* b = &c->body;
  char base[DG2_NAME];
  dg2_fresh(c, base);
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
  for (intptr_t i = 0; i < nin; ++i) zt_strbuf_printf(b, "%s%s", i ? ", " : "", in_ty[i]);
  zt_strbuf_puts(b, ") -> (");
  for (intptr_t i = 0; i < nout; ++i) {
    zt_strbuf_printf(b, "%s%s", i ? ", " : "", out_ty[i]);
    if (nout == 1)
      snprintf(outs[i], DG2_NAME, "%s", base);
    else
      snprintf(outs[i], DG2_NAME, "%s#%d", base, (int)i);
  }
  zt_strbuf_puts(b, ")\n");
}

zt_status_t dg2_scalar_op(dg2_t* c, MlirOperation op, char ins[][DG2_NAME],
                          char outs[][DG2_NAME]) {
  intptr_t nin = mlirOperationGetNumOperands(op);
  intptr_t nout = mlirOperationGetNumResults(op);
  if (nin > MAX_OPERANDS || nout > MAX_OPERANDS) return unsupported(op);
  zt_scalar_kind_t ik[MAX_OPERANDS], ok[MAX_OPERANDS];
  bool bf = false;
  for (intptr_t i = 0; i < nin; ++i) {
    zt_type_t t;
    ZT_RETURN_IF_ERROR(dg2_value_type(mlirOperationGetOperand(op, i), &t));
    ik[i] = t.kind;
    bf |= t.kind == ZT_BF16;
  }
  for (intptr_t i = 0; i < nout; ++i) {
    zt_type_t t;
    ZT_RETURN_IF_ERROR(dg2_value_type(mlirOperationGetResult(op, i), &t));
    ok[i] = t.kind;
    bf |= t.kind == ZT_BF16;
  }
  if (dg2_op_is(op, "arith.constant")) {
    MlirAttribute a = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("value"));
    if (ok[0] == ZT_BF16 && mlirAttributeIsAFloat(a)) {
      dg2_const(c, "i16", (int16_t)bf16_bits(mlirFloatAttrGetValueDouble(a)), outs[0]);
      return NULL;
    }
  }
  if (dg2_op_prefix(op, "math.") && !bf) return math_op(c, op, ok[0], ins, outs[0]);
  if (bf) {
    // bf16 lives in i16 registers: conversions by bit manipulation, float
    // arithmetic in f32 (rounded back after each op).
    if (dg2_op_is(op, "arith.extf") && ik[0] == ZT_BF16) {
      char f[DG2_NAME];
      bf16_to_f32(c, ins[0], f);
      if (ok[0] == ZT_F32) {
        snprintf(outs[0], DG2_NAME, "%s", f);
      } else {
        dg2_fresh(c, outs[0]);
        dg2_line(c, "%s = arith.extf %s : f32 to %s", outs[0], f, dg2_reg(ok[0]));
      }
      return NULL;
    }
    if (dg2_op_is(op, "arith.truncf") && ok[0] == ZT_BF16) {
      char f[DG2_NAME];
      snprintf(f, DG2_NAME, "%s", ins[0]);
      if (ik[0] == ZT_F64) {
        dg2_fresh(c, f);
        dg2_line(c, "%s = arith.truncf %s : f64 to f32", f, ins[0]);
      }
      f32_to_bf16(c, f, outs[0]);
      return NULL;
    }
    if (dg2_op_is(op, "arith.bitcast")) {
      snprintf(outs[0], DG2_NAME, "%s", ins[0]);
      return NULL;
    }
    bool conv = dg2_op_is(op, "arith.sitofp") || dg2_op_is(op, "arith.uitofp") ||
                dg2_op_is(op, "arith.fptosi") || dg2_op_is(op, "arith.fptoui");
    if (is_float_arith(op) || conv) {
      char fin[MAX_OPERANDS][DG2_NAME];
      const char* it[MAX_OPERANDS];
      const char* ot[MAX_OPERANDS];
      for (intptr_t i = 0; i < nin; ++i) {
        if (ik[i] == ZT_BF16) {
          bf16_to_f32(c, ins[i], fin[i]);
          it[i] = "f32";
        } else {
          snprintf(fin[i], DG2_NAME, "%s", ins[i]);
          it[i] = dg2_reg(ik[i]);
        }
      }
      for (intptr_t i = 0; i < nout; ++i) ot[i] = ok[i] == ZT_BF16 ? "f32" : dg2_reg(ok[i]);
      char fo[MAX_OPERANDS][DG2_NAME];
      if (dg2_op_prefix(op, "math."))
        ZT_RETURN_IF_ERROR(math_op(c, op, ZT_F32, fin, fo[0]));
      else
        generic_print(c, op, fin, it, ot, fo);
      for (intptr_t i = 0; i < nout; ++i) {
        if (ok[i] == ZT_BF16)
          f32_to_bf16(c, fo[i], outs[i]);
        else
          snprintf(outs[i], DG2_NAME, "%s", fo[i]);
      }
      return NULL;
    }
    // select, integer ops on the bits: fall through with i16 types.
  }
  const char* it[MAX_OPERANDS];
  const char* ot[MAX_OPERANDS];
  for (intptr_t i = 0; i < nin; ++i) it[i] = dg2_reg(ik[i]);
  for (intptr_t i = 0; i < nout; ++i) ot[i] = dg2_reg(ok[i]);
  if (!dg2_op_prefix(op, "arith.")) return unsupported(op);
  generic_print(c, op, ins, it, ot, outs);
  return NULL;
}

// --- tensor ops ----------------------------------------------------------------------

static zt_status_t result_type(MlirOperation op, intptr_t i, zt_type_t* t) {
  zt_status_t s = dg2_value_type(mlirOperationGetResult(op, i), t);
  if (s) {
    zt_status_t e = dg2_op_error(op, ZT_STATUS_UNSUPPORTED, "%s", zt_status_message(s));
    zt_status_free(s);
    return e;
  }
  return NULL;
}

// Layout for an op whose result is a register tensor: the hint, else the
// layout of the first register-tensor operand of the same shape, else the
// blocked layout.
static zt_status_t pick_layout(dg2_t* c, MlirOperation op, const zt_type_t* rt,
                               int32_t* out) {
  int32_t h = mlirOperationGetNumResults(op) ? dg2_hint_get(c, mlirOperationGetResult(op, 0)) : -1;
  if (h >= 0) {
    *out = h;
    return NULL;
  }
  intptr_t nin = mlirOperationGetNumOperands(op);
  for (intptr_t i = 0; i < nin; ++i) {
    const dg2_val_t* v = dg2_get(c, mlirOperationGetOperand(op, i));
    if (v && v->kind == DV_DIST && v->type.rank == rt->rank &&
        memcmp(v->type.shape, rt->shape, (size_t)rt->rank * sizeof(int64_t)) == 0) {
      *out = v->layout;
      return NULL;
    }
  }
  return dg2_blocked(c, rt->rank, rt->shape, out);
}

static bool any_dist(dg2_t* c, MlirOperation op) {
  intptr_t nin = mlirOperationGetNumOperands(op);
  for (intptr_t i = 0; i < nin; ++i) {
    const dg2_val_t* v = dg2_get(c, mlirOperationGetOperand(op, i));
    if (v && v->kind == DV_DIST) return true;
  }
  return false;
}

// Operands of op as values in layout l (tensors) or scalars.
static zt_status_t operands_in(dg2_t* c, MlirOperation op, int32_t l, dg2_val_t* vals) {
  intptr_t nin = mlirOperationGetNumOperands(op);
  for (intptr_t i = 0; i < nin; ++i) {
    const dg2_val_t* v;
    ZT_RETURN_IF_ERROR(dg2_get_checked(c, mlirOperationGetOperand(op, i), &v));
    if (v->kind == DV_DIST && v->layout != l) {
      ZT_RETURN_IF_ERROR(dg2_to_layout(c, v, l, &vals[i]));
    } else {
      vals[i] = *v;
    }
  }
  return NULL;
}

static zt_status_t new_dist(dg2_t* c, const zt_type_t* t, int32_t l, dg2_val_t* out) {
  memset(out, 0, sizeof *out);
  out->kind = DV_DIST;
  out->type = *t;
  out->layout = l;
  out->el = dg2_alloc_names(c, c->layouts[l].e);
  if (!out->el) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "dg2 values");
  return NULL;
}

// arith/math/addptr/pointer casts on tensors.
static zt_status_t emit_elementwise(dg2_t* c, MlirOperation op) {
  zt_type_t rt;
  ZT_RETURN_IF_ERROR(result_type(op, 0, &rt));
  intptr_t nout = mlirOperationGetNumResults(op);
  // Several results (arith.mului_extended: low and high halves) share the
  // operands; each result is its own value.
  if (nout > MAX_OPERANDS) return unsupported(op);
  if (!any_dist(c, op)) {
    for (intptr_t i = 0; i < nout; ++i) {
      dg2_val_t v = {.kind = DV_LAZY, .op = op, .res = (int32_t)i};
      ZT_RETURN_IF_ERROR(result_type(op, i, &v.type));
      ZT_RETURN_IF_ERROR(dg2_put(c, mlirOperationGetResult(op, i), &v));
    }
    return NULL;
  }
  int32_t l;
  ZT_RETURN_IF_ERROR(pick_layout(c, op, &rt, &l));
  dg2_val_t ins[MAX_OPERANDS];
  intptr_t nin = mlirOperationGetNumOperands(op);
  if (nin > MAX_OPERANDS) return unsupported(op);
  ZT_RETURN_IF_ERROR(operands_in(c, op, l, ins));
  dg2_val_t r, rs[MAX_OPERANDS];
  for (intptr_t i = 1; i < nout; ++i) {
    zt_type_t t;
    ZT_RETURN_IF_ERROR(result_type(op, i, &t));
    ZT_RETURN_IF_ERROR(new_dist(c, &t, l, &rs[i]));
  }
  ZT_RETURN_IF_ERROR(new_dist(c, &rt, l, &r));
  bool addptr = dg2_op_is(op, "tile.addptr");
  bool cast = dg2_op_is(op, "tile.ptr_to_int") || dg2_op_is(op, "tile.int_to_ptr") ||
              dg2_op_is(op, "tile.ptr_cast");
  zt_type_t ot = {0};
  if (addptr) ZT_RETURN_IF_ERROR(dg2_value_type(mlirOperationGetOperand(op, 1), &ot));
  for (int32_t k = 0; k < c->layouts[l].e; ++k) {
    char in[MAX_OPERANDS][DG2_NAME], out[MAX_OPERANDS][DG2_NAME];
    for (intptr_t i = 0; i < nin; ++i) ZT_RETURN_IF_ERROR(dg2_elem(c, &ins[i], l, k, in[i]));
    if (addptr) {
      ZT_RETURN_IF_ERROR(dg2_addptr_scalar(c, in[0], in[1], ot.kind, rt.pointee, r.el[k]));
    } else if (cast) {
      snprintf(r.el[k], DG2_NAME, "%s", in[0]);
    } else {
      ZT_RETURN_IF_ERROR(dg2_scalar_op(c, op, in, out));
      snprintf(r.el[k], DG2_NAME, "%s", out[0]);
      for (intptr_t i = 1; i < nout; ++i) snprintf(rs[i].el[k], DG2_NAME, "%s", out[i]);
    }
  }
  for (intptr_t i = 1; i < nout; ++i)
    ZT_RETURN_IF_ERROR(dg2_put(c, mlirOperationGetResult(op, i), &rs[i]));
  return dg2_put(c, mlirOperationGetResult(op, 0), &r);
}

// broadcast / expand_dims / reshape / trans.
static zt_status_t emit_shape(dg2_t* c, MlirOperation op) {
  zt_type_t rt, st;
  ZT_RETURN_IF_ERROR(result_type(op, 0, &rt));
  ZT_RETURN_IF_ERROR(dg2_value_type(mlirOperationGetOperand(op, 0), &st));
  const dg2_val_t* src;
  ZT_RETURN_IF_ERROR(dg2_get_checked(c, mlirOperationGetOperand(op, 0), &src));
  if (src->kind != DV_DIST) {
    dg2_val_t v = {.kind = DV_LAZY, .type = rt, .op = op};
    return dg2_put(c, mlirOperationGetResult(op, 0), &v);
  }
  // Through local memory: the source row-major, every result element read
  // back at its source coordinates.
  int32_t l = dg2_hint_get(c, mlirOperationGetResult(op, 0));
  if (l < 0) ZT_RETURN_IF_ERROR(dg2_blocked(c, rt.rank, rt.shape, &l));
  ZT_RETURN_IF_ERROR(dg2_smem_write(c, src));
  dg2_val_t r;
  ZT_RETURN_IF_ERROR(new_dist(c, &rt, l, &r));
  for (int32_t k = 0; k < c->layouts[l].e; ++k) {
    char coords[ZT_MAX_RANK][DG2_NAME], sc[ZT_MAX_RANK][DG2_NAME];
    dg2_coords(c, l, k, coords);
    ZT_RETURN_IF_ERROR(dg2_shape_src_coords(c, op, &rt, &st, coords, sc));
    dg2_smem_load_elem(c, &st, sc, r.el[k]);
  }
  return dg2_put(c, mlirOperationGetResult(op, 0), &r);
}

static void global_ptr(dg2_t* c, const char* addr, char out[DG2_NAME]) {
  dg2_fresh(c, out);
  dg2_line(c, "%s = llvm.inttoptr %s : i64 to !llvm.ptr<1>", out, addr);
}

// Masked element loads and stores call small functions, one per type,
// which IGC inlines (emit_spirv in dg2_lower.c; ZETILE_DG2_INLINE=1 has
// LLVM inline them before the SPIR-V emission, for the same ISA): the
// branch each needs is then made once per type in MLIR and in the SPIR-V
// backend instead of once per element, where convert-scf-to-cf splits the
// block around every scf.if (time growing with elements x block length:
// 0.6 s of CPU for tutorial 06's forward). Inlined, the LLVM IR has the
// same branches as scf.if gave. i1 elements (stored as i8) keep the scf.if.
static void mask_helpers(dg2_t* c, const char* ty) {
  char name[48];
  snprintf(name, sizeof name, "zt_mload_%s", ty);
  for (int32_t i = 0; i < c->num_declared; ++i)
    if (strcmp(c->declared[i], name) == 0) return;
  if (c->num_declared < (int32_t)(sizeof c->declared / sizeof c->declared[0]))
    snprintf(c->declared[c->num_declared++], sizeof c->declared[0], "%s", name);
  zt_strbuf_printf(&c->decls,
                   "  llvm.func internal @zt_mload_%s(%%m: i1, %%a: i64, %%o: %s) -> %s "
                   "attributes {always_inline} {\n"
                   "    llvm.cond_br %%m, ^bb1, ^bb2(%%o : %s)\n"
                   "  ^bb1:\n"
                   "    %%p = llvm.inttoptr %%a : i64 to !llvm.ptr<1>\n"
                   "    %%x = llvm.load %%p : !llvm.ptr<1> -> %s\n"
                   "    llvm.br ^bb2(%%x : %s)\n"
                   "  ^bb2(%%r: %s):\n"
                   "    llvm.return %%r : %s\n"
                   "  }\n",
                   ty, ty, ty, ty, ty, ty, ty, ty);
  zt_strbuf_printf(&c->decls,
                   "  llvm.func internal @zt_mstore_%s(%%m: i1, %%a: i64, %%v: %s) "
                   "attributes {always_inline} {\n"
                   "    llvm.cond_br %%m, ^bb1, ^bb2\n"
                   "  ^bb1:\n"
                   "    %%p = llvm.inttoptr %%a : i64 to !llvm.ptr<1>\n"
                   "    llvm.store %%v, %%p : %s, !llvm.ptr<1>\n"
                   "    llvm.br ^bb2\n"
                   "  ^bb2:\n"
                   "    llvm.return\n"
                   "  }\n",
                   ty, ty, ty);
}

// One element load, under `if mask` when there is a mask.
static void load_elem(dg2_t* c, zt_scalar_kind_t k, const char* addr, const char* mask,
                      const char* other, char out[DG2_NAME]) {
  const char* rty = dg2_reg(k);
  char zero[DG2_NAME];
  if (mask && !other) {
    dg2_fresh(c, zero);
    if (zt_scalar_kind_is_float(k) && k != ZT_BF16)
      dg2_line(c, "%s = arith.constant 0.0 : %s", zero, rty);
    else
      dg2_line(c, "%s = arith.constant 0 : %s", zero, rty);
    other = zero;
  }
  if (mask && k != ZT_I1) {
    mask_helpers(c, rty);
    dg2_fresh(c, out);
    dg2_line(c, "%s = llvm.call @zt_mload_%s(%s, %s, %s) : (i1, i64, %s) -> %s", out, rty, mask,
             addr, other, rty, rty);
    return;
  }
  if (mask) {
    dg2_fresh(c, out);
    dg2_line(c, "%s = scf.if %s -> (%s) {", out, mask, rty);
    c->indent++;
  }
  char p[DG2_NAME], x[DG2_NAME];
  global_ptr(c, addr, p);
  dg2_fresh(c, x);
  dg2_line(c, "%s = llvm.load %s : !llvm.ptr<1> -> %s", x, p, dg2_mem(k));
  if (k == ZT_I1) {
    char z[DG2_NAME], b[DG2_NAME];
    dg2_const(c, "i8", 0, z);
    dg2_fresh(c, b);
    dg2_line(c, "%s = arith.cmpi ne, %s, %s : i8", b, x, z);
    snprintf(x, DG2_NAME, "%s", b);
  }
  if (mask) {
    dg2_line(c, "scf.yield %s : %s", x, rty);
    c->indent--;
    dg2_line(c, "} else {");
    dg2_line(c, "  scf.yield %s : %s", other, rty);
    dg2_line(c, "}");
  } else {
    snprintf(out, DG2_NAME, "%s", x);
  }
}

static void store_elem(dg2_t* c, zt_scalar_kind_t k, const char* addr, const char* val,
                       const char* mask) {
  if (mask && k != ZT_I1) {
    const char* ty = dg2_mem(k);
    mask_helpers(c, ty);
    dg2_line(c, "llvm.call @zt_mstore_%s(%s, %s, %s) : (i1, i64, %s) -> ()", ty, mask, addr, val,
             ty);
    return;
  }
  if (mask) {
    dg2_line(c, "scf.if %s {", mask);
    c->indent++;
  }
  char p[DG2_NAME], v[DG2_NAME];
  global_ptr(c, addr, p);
  snprintf(v, DG2_NAME, "%s", val);
  if (k == ZT_I1) {
    dg2_fresh(c, v);
    dg2_line(c, "%s = arith.extui %s : i1 to i8", v, val);
  }
  dg2_line(c, "llvm.store %s, %s : %s, !llvm.ptr<1>", v, p, dg2_mem(k));
  if (mask) {
    c->indent--;
    dg2_line(c, "}");
  }
}

static zt_status_t emit_load(dg2_t* c, MlirOperation op) {
  zt_type_t rt;
  ZT_RETURN_IF_ERROR(result_type(op, 0, &rt));
  intptr_t nin = mlirOperationGetNumOperands(op);
  bool has_mask = nin >= 2, has_other = nin >= 3;
  if (rt.rank == 0) {
    dg2_val_t v[3];
    for (intptr_t i = 0; i < nin && i < 3; ++i) {
      const dg2_val_t* x;
      ZT_RETURN_IF_ERROR(dg2_get_checked(c, mlirOperationGetOperand(op, i), &x));
      v[i] = *x;
    }
    dg2_val_t r = {.kind = DV_SCALAR, .type = rt};
    load_elem(c, rt.kind, v[0].name, has_mask ? v[1].name : NULL,
              has_other ? v[2].name : NULL, r.name);
    return dg2_put(c, mlirOperationGetResult(op, 0), &r);
  }
  int32_t l;
  ZT_RETURN_IF_ERROR(pick_layout(c, op, &rt, &l));
  dg2_val_t ins[3];
  ZT_RETURN_IF_ERROR(operands_in(c, op, l, ins));
  dg2_val_t r;
  ZT_RETURN_IF_ERROR(new_dist(c, &rt, l, &r));
  for (int32_t k = 0; k < c->layouts[l].e; ++k) {
    char a[DG2_NAME], m[DG2_NAME], o[DG2_NAME];
    ZT_RETURN_IF_ERROR(dg2_elem(c, &ins[0], l, k, a));
    if (has_mask) ZT_RETURN_IF_ERROR(dg2_elem(c, &ins[1], l, k, m));
    if (has_other) ZT_RETURN_IF_ERROR(dg2_elem(c, &ins[2], l, k, o));
    load_elem(c, rt.kind, a, has_mask ? m : NULL, has_other ? o : NULL, r.el[k]);
    ZT_RETURN_IF_ERROR(dg2_prepack(c, &r, k + 1));
  }
  return dg2_put(c, mlirOperationGetResult(op, 0), &r);
}

static zt_status_t emit_store(dg2_t* c, MlirOperation op) {
  zt_type_t vt;
  ZT_RETURN_IF_ERROR(dg2_value_type(mlirOperationGetOperand(op, 1), &vt));
  intptr_t nin = mlirOperationGetNumOperands(op);
  bool has_mask = nin >= 3;
  if (vt.rank == 0) {
    const dg2_val_t *p, *v, *m = NULL;
    ZT_RETURN_IF_ERROR(dg2_get_checked(c, mlirOperationGetOperand(op, 0), &p));
    ZT_RETURN_IF_ERROR(dg2_get_checked(c, mlirOperationGetOperand(op, 1), &v));
    if (has_mask) ZT_RETURN_IF_ERROR(dg2_get_checked(c, mlirOperationGetOperand(op, 2), &m));
    store_elem(c, vt.kind, p->name, v->name, m ? m->name : NULL);
    return NULL;
  }
  // The value's layout when it lives in registers, else the pointers'.
  int32_t l = -1;
  for (intptr_t i = 1; i >= 0 && l < 0; --i) {
    const dg2_val_t* v = dg2_get(c, mlirOperationGetOperand(op, i));
    if (v && v->kind == DV_DIST) l = v->layout;
  }
  if (l < 0) ZT_RETURN_IF_ERROR(dg2_blocked(c, vt.rank, vt.shape, &l));
  dg2_val_t ins[3];
  ZT_RETURN_IF_ERROR(operands_in(c, op, l, ins));
  for (int32_t k = 0; k < c->layouts[l].e; ++k) {
    char a[DG2_NAME], v[DG2_NAME], m[DG2_NAME];
    ZT_RETURN_IF_ERROR(dg2_elem(c, &ins[0], l, k, a));
    ZT_RETURN_IF_ERROR(dg2_elem(c, &ins[1], l, k, v));
    if (has_mask) ZT_RETURN_IF_ERROR(dg2_elem(c, &ins[2], l, k, m));
    store_elem(c, vt.kind, a, v, has_mask ? m : NULL);
  }
  return NULL;
}

// tile.block_load / tile.block_store (block pointers, tensor descriptors):
// per-element loads and stores in the layout the value has or needs, each
// element's address base + (off_d + i_d) * stride_d, masked by the bounds
// of the dims in boundary_check (dg2 has no 2D block IO; cl_intel_subgroups
// block reads would need aligned rows).
static zt_status_t block_elem_addr(dg2_t* c, const dg2_val_t* sc, uint32_t check, int esize,
                                   char coords[][DG2_NAME], char addr[DG2_NAME],
                                   char mask[DG2_NAME]) {
  // sc: base, shape0, shape1, stride0, stride1, off0, off1 (scalars).
  char sum[DG2_NAME] = "";
  mask[0] = 0;
  for (int d = 0; d < 2; ++d) {
    char i32[DG2_NAME], i64[DG2_NAME], prod[DG2_NAME];
    dg2_fresh(c, i32);
    dg2_line(c, "%s = arith.addi %s, %s : i32", i32, sc[5 + d].name, coords[d]);
    dg2_fresh(c, i64);
    dg2_line(c, "%s = arith.extsi %s : i32 to i64", i64, i32);
    dg2_fresh(c, prod);
    dg2_line(c, "%s = arith.muli %s, %s : i64", prod, i64, sc[3 + d].name);
    if (sum[0]) {
      char t[DG2_NAME];
      dg2_fresh(c, t);
      dg2_line(c, "%s = arith.addi %s, %s : i64", t, sum, prod);
      snprintf(sum, DG2_NAME, "%s", t);
    } else {
      snprintf(sum, DG2_NAME, "%s", prod);
    }
    if (check & (1u << d)) {
      char z[DG2_NAME], ge[DG2_NAME], lt[DG2_NAME], in[DG2_NAME];
      dg2_const(c, "i64", 0, z);
      dg2_fresh(c, ge);
      dg2_line(c, "%s = arith.cmpi sge, %s, %s : i64", ge, i64, z);
      dg2_fresh(c, lt);
      dg2_line(c, "%s = arith.cmpi slt, %s, %s : i64", lt, i64, sc[1 + d].name);
      dg2_fresh(c, in);
      dg2_line(c, "%s = arith.andi %s, %s : i1", in, ge, lt);
      if (mask[0]) {
        char t[DG2_NAME];
        dg2_fresh(c, t);
        dg2_line(c, "%s = arith.andi %s, %s : i1", t, mask, in);
        snprintf(mask, DG2_NAME, "%s", t);
      } else {
        snprintf(mask, DG2_NAME, "%s", in);
      }
    }
  }
  char es[DG2_NAME], bytes[DG2_NAME];
  dg2_const(c, "i64", esize, es);
  dg2_fresh(c, bytes);
  dg2_line(c, "%s = arith.muli %s, %s : i64", bytes, sum, es);
  dg2_fresh(c, addr);
  dg2_line(c, "%s = arith.addi %s, %s : i64", addr, sc[0].name, bytes);
  return NULL;
}

static zt_status_t block_scalars(dg2_t* c, MlirOperation op, dg2_val_t sc[7]) {
  if (mlirOperationGetNumOperands(op) < 7)
    return dg2_op_error(op, ZT_STATUS_UNSUPPORTED, "dg2: block loads/stores of rank other than 2");
  for (int i = 0; i < 7; ++i) {
    const dg2_val_t* x;
    ZT_RETURN_IF_ERROR(dg2_get_checked(c, mlirOperationGetOperand(op, i), &x));
    if (x->kind != DV_SCALAR)
      return dg2_op_error(op, ZT_STATUS_UNSUPPORTED, "dg2: a block pointer with tensor operands");
    sc[i] = *x;
  }
  return NULL;
}

static uint32_t check_bits(MlirOperation op) {
  MlirAttribute a =
      mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("boundary_check"));
  return mlirAttributeIsNull(a) || !mlirAttributeIsAInteger(a)
             ? 0u : (uint32_t)mlirIntegerAttrGetValueInt(a);
}

static zt_status_t emit_block_load(dg2_t* c, MlirOperation op) {
  zt_type_t rt;
  ZT_RETURN_IF_ERROR(result_type(op, 0, &rt));
  if (rt.rank != 2) return dg2_op_error(op, ZT_STATUS_UNSUPPORTED, "dg2: 1-D block loads");
  MlirAttribute pad = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("padding"));
  if (!mlirAttributeIsNull(pad) && mlirAttributeIsAString(pad) &&
      mlirStringAttrGetValue(pad).length == 3 &&
      memcmp(mlirStringAttrGetValue(pad).data, "nan", 3) == 0)
    return dg2_op_error(op, ZT_STATUS_UNSUPPORTED, "dg2: NaN padding");
  dg2_val_t sc[7];
  ZT_RETURN_IF_ERROR(block_scalars(c, op, sc));
  int32_t l;
  ZT_RETURN_IF_ERROR(pick_layout(c, op, &rt, &l));
  dg2_val_t r;
  ZT_RETURN_IF_ERROR(new_dist(c, &rt, l, &r));
  uint32_t check = check_bits(op);
  int esize = rt.kind == ZT_I1 ? 1 : zt_scalar_kind_bits(rt.kind) / 8;
  for (int32_t k = 0; k < c->layouts[l].e; ++k) {
    char coords[ZT_MAX_RANK][DG2_NAME], a[DG2_NAME], m[DG2_NAME];
    dg2_coords(c, l, k, coords);
    ZT_RETURN_IF_ERROR(block_elem_addr(c, sc, check, esize, coords, a, m));
    load_elem(c, rt.kind, a, m[0] ? m : NULL, NULL, r.el[k]);
  }
  return dg2_put(c, mlirOperationGetResult(op, 0), &r);
}

static zt_status_t emit_block_store(dg2_t* c, MlirOperation op) {
  MlirValue val = mlirOperationGetOperand(op, mlirOperationGetNumOperands(op) - 1);
  zt_type_t vt;
  ZT_RETURN_IF_ERROR(dg2_value_type(val, &vt));
  if (vt.rank != 2) return dg2_op_error(op, ZT_STATUS_UNSUPPORTED, "dg2: 1-D block stores");
  dg2_val_t sc[7];
  ZT_RETURN_IF_ERROR(block_scalars(c, op, sc));
  const dg2_val_t* v;
  ZT_RETURN_IF_ERROR(dg2_get_checked(c, val, &v));
  int32_t l;
  if (v->kind == DV_DIST) l = v->layout;
  else ZT_RETURN_IF_ERROR(dg2_blocked(c, vt.rank, vt.shape, &l));
  uint32_t check = check_bits(op);
  int esize = vt.kind == ZT_I1 ? 1 : zt_scalar_kind_bits(vt.kind) / 8;
  for (int32_t k = 0; k < c->layouts[l].e; ++k) {
    char coords[ZT_MAX_RANK][DG2_NAME], a[DG2_NAME], m[DG2_NAME], x[DG2_NAME];
    dg2_coords(c, l, k, coords);
    ZT_RETURN_IF_ERROR(dg2_elem(c, v, l, k, x));
    ZT_RETURN_IF_ERROR(block_elem_addr(c, sc, check, esize, coords, a, m));
    store_elem(c, vt.kind, a, x, m[0] ? m : NULL);
  }
  return NULL;
}

static zt_status_t emit_grid(dg2_t* c, MlirOperation op, const char* fn) {
  int64_t axis = dg2_int_attr(op, "axis", 0);
  char name[40], ax[DG2_NAME], w[DG2_NAME];
  snprintf(name, sizeof name, "_Z%zu%sj", strlen(fn), fn);
  dg2_declare(c, name, "(i32) -> i64");
  dg2_const(c, "i32", axis, ax);
  dg2_fresh(c, w);
  dg2_line(c, "%s = llvm.call @%s(%s) : (i32) -> i64", w, name, ax);
  dg2_val_t r = {.kind = DV_SCALAR};
  ZT_RETURN_IF_ERROR(result_type(op, 0, &r.type));
  dg2_fresh(c, r.name);
  dg2_line(c, "%s = arith.trunci %s : i64 to i32", r.name, w);
  return dg2_put(c, mlirOperationGetResult(op, 0), &r);
}

zt_status_t dg2_emit_op(dg2_t* c, MlirOperation op) {
  if (dg2_op_is(op, "tile.program_id")) return emit_grid(c, op, "get_group_id");
  if (dg2_op_is(op, "tile.num_programs")) return emit_grid(c, op, "get_num_groups");
  if (dg2_op_is(op, "scf.for")) return dg2_emit_for(c, op);
  if (dg2_op_is(op, "scf.if")) return dg2_emit_if(c, op);
  if (dg2_op_is(op, "scf.while")) return dg2_emit_while(c, op);
  if (dg2_op_is(op, "tile.reduce")) return dg2_emit_reduce(c, op);
  if (dg2_op_is(op, "tile.scan")) return dg2_emit_scan(c, op);
  if (dg2_op_is(op, "tile.dot")) return dg2_emit_dot(c, op);
  if (dg2_op_is(op, "tile.atomic_rmw") || dg2_op_is(op, "tile.atomic_cas"))
    return dg2_emit_atomic(c, op);
  if (dg2_op_is(op, "tile.load")) return emit_load(c, op);
  if (dg2_op_is(op, "tile.block_load")) return emit_block_load(c, op);
  if (dg2_op_is(op, "tile.block_store")) return emit_block_store(c, op);
  if (dg2_op_is(op, "tile.store")) return emit_store(c, op);
  if (dg2_op_is(op, "tile.make_range") || dg2_op_is(op, "tile.splat")) {
    dg2_val_t v = {.kind = DV_LAZY, .op = op};
    ZT_RETURN_IF_ERROR(result_type(op, 0, &v.type));
    return dg2_put(c, mlirOperationGetResult(op, 0), &v);
  }
  if (dg2_op_is(op, "tile.broadcast") || dg2_op_is(op, "tile.expand_dims") ||
      dg2_op_is(op, "tile.reshape") || dg2_op_is(op, "tile.trans"))
    return emit_shape(c, op);
  bool ew = dg2_op_is(op, "tile.addptr") || dg2_op_is(op, "tile.ptr_to_int") ||
            dg2_op_is(op, "tile.int_to_ptr") || dg2_op_is(op, "tile.ptr_cast") ||
            dg2_op_prefix(op, "arith.") || dg2_op_prefix(op, "math.");
  if (!ew) return unsupported(op);
  intptr_t nout = mlirOperationGetNumResults(op);
  if (nout < 1) return unsupported(op);
  zt_type_t rt;
  ZT_RETURN_IF_ERROR(result_type(op, 0, &rt));
  if (rt.rank > 0) return emit_elementwise(c, op);
  // Scalars.
  intptr_t nin = mlirOperationGetNumOperands(op);
  if (nin > MAX_OPERANDS || nout > MAX_OPERANDS) return unsupported(op);
  char ins[MAX_OPERANDS][DG2_NAME], outs[MAX_OPERANDS][DG2_NAME];
  for (intptr_t i = 0; i < nin; ++i) {
    const dg2_val_t* v;
    ZT_RETURN_IF_ERROR(dg2_get_checked(c, mlirOperationGetOperand(op, i), &v));
    if (v->kind != DV_SCALAR) return unsupported(op);
    snprintf(ins[i], DG2_NAME, "%s", v->name);
  }
  if (dg2_op_is(op, "tile.addptr")) {
    zt_type_t ot;
    ZT_RETURN_IF_ERROR(dg2_value_type(mlirOperationGetOperand(op, 1), &ot));
    ZT_RETURN_IF_ERROR(dg2_addptr_scalar(c, ins[0], ins[1], ot.kind, rt.pointee, outs[0]));
  } else if (dg2_op_prefix(op, "tile.")) {
    snprintf(outs[0], DG2_NAME, "%s", ins[0]);
  } else {
    ZT_RETURN_IF_ERROR(dg2_scalar_op(c, op, ins, outs));
  }
  for (intptr_t i = 0; i < nout; ++i) {
    dg2_val_t r = {.kind = DV_SCALAR};
    ZT_RETURN_IF_ERROR(result_type(op, i, &r.type));
    snprintf(r.name, DG2_NAME, "%s", outs[i]);
    ZT_RETURN_IF_ERROR(dg2_put(c, mlirOperationGetResult(op, i), &r));
  }
  return NULL;
}

zt_status_t dg2_emit_block(dg2_t* c, MlirBlock block) {
  for (MlirOperation op = mlirBlockGetFirstOperation(block); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    if (dg2_op_is(op, "scf.yield") || dg2_op_is(op, "func.return") ||
        dg2_op_is(op, "scf.condition"))
      break;
    ZT_RETURN_IF_ERROR(dg2_emit_op(c, op));
  }
  return NULL;
}
