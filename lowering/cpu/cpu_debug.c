// tile.print and tile.assert on the CPU: per element, a call to a helper
// function in libzetile_compiler (cpu_helpers.c, registered with the JIT).
// print passes the program id, the element's index, the operand number and
// the value (as i64 and f64; the kind says which); assert passes, where the
// condition is false, the message, the op's source location, the program id
// and the index, plus the kernel's hidden context argument, and does not
// return when a launch context is present (docs in jit/compiler_api.h).
#include <stdio.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>

#include "cpu_helpers.h"
#include "cpu_lower.h"

// Index arguments (i32) of the helpers: rank + 4 indices (+ 4 dims for print).
static const char* const k_print_sig =
    "(!llvm.ptr, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, i32, "
    "i32, i32, i64, f64)";
static const char* const k_assert_sig =
    "(!llvm.ptr, !llvm.ptr, !llvm.ptr, i32, i32, i32, i32, i32, i32, i32, i32)";
static const char* const k_bounds_sig = "(!llvm.ptr, i64, i32, i32, !llvm.ptr, i32, i32, i32)";

const char* cpu_declare(cpu_t* c, cpu_helper_t h) {
  const char* name = h == CPU_HELPER_PRINT    ? ZT_CPU_PRINT_SYMBOL
                     : h == CPU_HELPER_ASSERT ? ZT_CPU_ASSERT_SYMBOL
                                              : ZT_CPU_BOUNDS_SYMBOL;
  if (!(c->declared & (1u << h))) {
    c->declared |= 1u << h;
    zt_strbuf_printf(&c->globals, "  llvm.func @%s%s\n", name,
                     h == CPU_HELPER_PRINT    ? k_print_sig
                     : h == CPU_HELPER_ASSERT ? k_assert_sig
                                              : k_bounds_sig);
  }
  return name;
}

void cpu_check_access(cpu_t* c, MlirOperation op, const char* addr, zt_scalar_kind_t k,
                      int write) {
  if (!c->bounds) return;
  const char* fn = cpu_declare(c, CPU_HELPER_BOUNDS);
  char a64[ZT_CPU_NAME], where[512], loc[ZT_CPU_NAME], cb[ZT_CPU_NAME], cw[ZT_CPU_NAME];
  if (c->addr_is_ptr) {
    cpu_fresh(c, a64);
    cpu_line(c, "%s = llvm.ptrtoint %s : !llvm.ptr to i64", a64, addr);
  } else {
    snprintf(a64, sizeof a64, "%s", addr);
  }
  cpu_op_where(op, where, sizeof where);
  cpu_global_string(c, where, loc);
  cpu_fresh(c, cb);
  cpu_line(c, "%s = arith.constant %d : i32", cb, k == ZT_I1 ? 1 : zt_tile_kind_bytes(k));
  cpu_fresh(c, cw);
  cpu_line(c, "%s = arith.constant %d : i32", cw, write);
  cpu_line(c, "llvm.call @%s(%%zt_ctx, %s, %s, %s, %s, %%pidx, %%pidy, %%pidz) : %s -> ()", fn,
           a64, cb, cw, loc, k_bounds_sig);
}

void cpu_global_string(cpu_t* c, const char* s, char out[ZT_CPU_NAME]) {
  int32_t id = c->num_globals++;
  size_t n = strlen(s);
  zt_strbuf_printf(&c->globals, "  llvm.mlir.global internal constant @zt_str_%d(\"", id);
  for (const unsigned char* p = (const unsigned char*)s; *p; ++p) {
    if (*p == '"' || *p == '\\' || *p < 0x20 || *p >= 0x7f)
      zt_strbuf_printf(&c->globals, "\\%02X", *p);
    else
      zt_strbuf_append(&c->globals, (const char*)p, 1);
  }
  zt_strbuf_printf(&c->globals, "\\00\") {addr_space = 0 : i32} : !llvm.array<%zu x i8>\n",
                   n + 1);
  cpu_fresh(c, out);
  cpu_line(c, "%s = llvm.mlir.addressof @zt_str_%d : !llvm.ptr", out, id);
}

static const char* i32_const(cpu_t* c, int64_t v, char out[ZT_CPU_NAME]) {
  cpu_fresh(c, out);
  cpu_line(c, "%s = arith.constant %lld : i32", out, (long long)v);
  return out;
}

// zt_cpu_print and zt_cpu_assert_fail (cpu_helpers.c) take four indices:
// print and assert refuse tensors of higher rank rather than report a
// wrong index.
enum { CPU_DEBUG_RANK = 4 };

// The four index arguments (i32; unused ones 0) from loop variables.
static void index_args(cpu_t* c, int32_t rank, char ivs[][ZT_CPU_NAME],
                       char idx[ZT_MAX_RANK][ZT_CPU_NAME]) {
  for (int32_t d = 0; d < ZT_MAX_RANK; ++d) {
    if (d < rank) {
      cpu_fresh(c, idx[d]);
      cpu_line(c, "%s = arith.index_cast %s : index to i32", idx[d], ivs[d]);
    } else {
      cpu_zero(c, ZT_I32, idx[d]);
    }
  }
}

static bool is_float(zt_scalar_kind_t k) {
  return k == ZT_F16 || k == ZT_BF16 || k == ZT_F32 || k == ZT_F64;
}

static MlirStringRef print_prefix(MlirOperation op) {
  MlirAttribute pa = mlirOperationGetAttributeByName(
      op, mlirStringRefCreateFromCString("prefix"));
  if (!mlirAttributeIsNull(pa) && mlirAttributeIsAString(pa))
    return mlirStringAttrGetValue(pa);
  return mlirStringRefCreate("", 0);
}

// The builder writes one tile.print per value (IRDL would unify the types of
// a variadic operand): `print("x: ", a, b)` is a print of a with the prefix
// followed directly by prints of b with an empty prefix. Such a run is one
// group, printed as Triton prints one multi-operand device_print: the
// group's prefix on every line, then "(operand k) ". (Triton's front end
// never passes an empty prefix with values, so "" marks continuations.)
static bool is_continuation(MlirOperation op) {
  return !mlirOperationIsNull(op) && cpu_op_is(op, "tile.print") &&
         print_prefix(op).length == 0;
}

zt_status_t cpu_emit_print(cpu_t* c, MlirOperation op) {
  int32_t operand = -1;
  MlirOperation head = op;
  if (is_continuation(op) && !mlirOperationIsNull(c->print_prev) &&
      mlirOperationEqual(mlirOperationGetNextInBlock(c->print_prev), op)) {
    head = c->print_head;
    operand = ++c->print_operand;
  } else if (is_continuation(mlirOperationGetNextInBlock(op))) {
    operand = c->print_operand = 0;
  }
  c->print_prev = op;
  c->print_head = head;
  char prefix_text[1024];
  MlirStringRef ps = print_prefix(head);
  snprintf(prefix_text, sizeof prefix_text, "%.*s", (int)ps.length, ps.data);
  MlirAttribute ha = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("hex"));
  bool hex = !mlirAttributeIsNull(ha) && mlirAttributeIsABool(ha) && mlirBoolAttrGetValue(ha);
  const char* fn = cpu_declare(c, CPU_HELPER_PRINT);
  char prefix[ZT_CPU_NAME], chex[ZT_CPU_NAME], izero[ZT_CPU_NAME], fzero[ZT_CPU_NAME];
  cpu_global_string(c, prefix_text, prefix);
  i32_const(c, hex, chex);
  cpu_zero(c, ZT_I64, izero);
  cpu_zero(c, ZT_F64, fzero);
  intptr_t n = mlirOperationGetNumOperands(op);
  if (n == 0) {  // the prefix alone, once per program (kind -1: no value)
    char crank[ZT_CPU_NAME], cm1[ZT_CPU_NAME], z[ZT_CPU_NAME];
    cpu_zero(c, ZT_I32, z);
    i32_const(c, 0, crank);
    i32_const(c, -1, cm1);
    cpu_line(c,
             "llvm.call @%s(%s, %%pidx, %%pidy, %%pidz, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
             "%s, %s, %s, %s, %s) : %s -> ()",
             fn, prefix, crank, z, z, z, z, z, z, z, z, cm1, cm1, chex, izero, fzero,
             k_print_sig);
    return NULL;
  }
  for (intptr_t i = 0; i < n; ++i) {
    const cpu_val_t* v;
    ZT_RETURN_IF_ERROR(cpu_get(c, mlirOperationGetOperand(op, i), &v));
    zt_type_t t = v->type;
    if (t.rank > CPU_DEBUG_RANK)  // the helper takes four indices
      return cpu_op_error(op, ZT_STATUS_UNSUPPORTED,
                          "device_print of a rank-%d tensor: the CPU target prints tensors of "
                          "rank <= %d",
                          (int)t.rank, CPU_DEBUG_RANK);
    char ivs[ZT_MAX_RANK][ZT_CPU_NAME], lin[ZT_CPU_NAME], x[ZT_CPU_NAME],
        idx[ZT_MAX_RANK][ZT_CPU_NAME], dims[ZT_MAX_RANK][ZT_CPU_NAME], crank[ZT_CPU_NAME],
        coperand[ZT_CPU_NAME], ckind[ZT_CPU_NAME], iv[ZT_CPU_NAME], fv[ZT_CPU_NAME];
    for (int32_t d = 0; d < ZT_MAX_RANK; ++d) i32_const(c, d < t.rank ? t.shape[d] : 0, dims[d]);
    i32_const(c, t.rank, crank);
    i32_const(c, n > 1 ? i : operand, coperand);
    i32_const(c, t.kind, ckind);
    if (t.rank) {
      int64_t strides[ZT_MAX_RANK];
      cpu_strides(t.rank, t.shape, strides);
      cpu_nest_begin(c, t.rank, t.shape, ivs);
      cpu_linear(c, t.rank, ivs, strides, lin);
    } else {
      cpu_index(c, 0, lin);
    }
    index_args(c, t.rank, ivs, idx);
    cpu_read(c, v, lin, x);
    snprintf(iv, sizeof iv, "%s", izero);
    snprintf(fv, sizeof fv, "%s", fzero);
    if (is_float(t.kind)) {
      if (t.kind == ZT_F64) {
        snprintf(fv, sizeof fv, "%s", x);
      } else {
        cpu_fresh(c, fv);
        cpu_line(c, "%s = arith.extf %s : %s to f64", fv, x, cpu_elem(t.kind));
      }
    } else if (t.kind == ZT_I64 || t.kind == ZT_PTR) {
      snprintf(iv, sizeof iv, "%s", x);
    } else {
      cpu_fresh(c, iv);
      cpu_line(c, "%s = arith.%s %s : %s to i64", iv, t.kind == ZT_I1 ? "extui" : "extsi",
               x, cpu_elem(t.kind));
    }
    cpu_line(c,
             "llvm.call @%s(%s, %%pidx, %%pidy, %%pidz, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
             "%s, %s, %s, %s, %s) : %s -> ()",
             fn, prefix, crank, idx[0], idx[1], idx[2], idx[3], dims[0], dims[1], dims[2],
             dims[3], coperand, ckind, chex, iv, fv, k_print_sig);
    if (t.rank) cpu_nest_end(c, t.rank);
  }
  return NULL;
}

zt_status_t cpu_emit_assert(cpu_t* c, MlirOperation op) {
  if (mlirOperationGetNumOperands(op) != 1)
    return cpu_op_error(op, ZT_STATUS_INVALID_ARGUMENT, "assert takes one condition");
  const cpu_val_t* v;
  ZT_RETURN_IF_ERROR(cpu_get(c, mlirOperationGetOperand(op, 0), &v));
  if (v->type.kind != ZT_I1)
    return cpu_op_error(op, ZT_STATUS_INVALID_ARGUMENT, "condition must be i1");
  if (v->type.rank > CPU_DEBUG_RANK)  // the helper reports four indices
    return cpu_op_error(op, ZT_STATUS_UNSUPPORTED,
                        "device_assert on a rank-%d tensor: the CPU target checks tensors of "
                        "rank <= %d",
                        (int)v->type.rank, CPU_DEBUG_RANK);
  char message[1024] = "", where[512];
  MlirAttribute ma = mlirOperationGetAttributeByName(
      op, mlirStringRefCreateFromCString("message"));
  if (!mlirAttributeIsNull(ma) && mlirAttributeIsAString(ma)) {
    MlirStringRef s = mlirStringAttrGetValue(ma);
    snprintf(message, sizeof message, "%.*s", (int)s.length, s.data);
  }
  cpu_op_where(op, where, sizeof where);
  const char* fn = cpu_declare(c, CPU_HELPER_ASSERT);
  char msg[ZT_CPU_NAME], loc[ZT_CPU_NAME], crank[ZT_CPU_NAME], t[ZT_CPU_NAME];
  cpu_global_string(c, message, msg);
  cpu_global_string(c, where, loc);
  i32_const(c, v->type.rank, crank);
  cpu_fresh(c, t);
  cpu_line(c, "%s = arith.constant true", t);
  zt_type_t ty = v->type;
  char ivs[ZT_MAX_RANK][ZT_CPU_NAME], lin[ZT_CPU_NAME], x[ZT_CPU_NAME], bad[ZT_CPU_NAME],
      idx[ZT_MAX_RANK][ZT_CPU_NAME];
  if (ty.rank) {
    int64_t strides[ZT_MAX_RANK];
    cpu_strides(ty.rank, ty.shape, strides);
    cpu_nest_begin(c, ty.rank, ty.shape, ivs);
    cpu_linear(c, ty.rank, ivs, strides, lin);
  } else {
    cpu_index(c, 0, lin);
  }
  cpu_read(c, v, lin, x);
  cpu_fresh(c, bad);
  cpu_line(c, "%s = arith.xori %s, %s : i1", bad, x, t);
  cpu_line(c, "scf.if %s {", bad);
  ++c->indent;
  index_args(c, ty.rank, ivs, idx);
  cpu_line(c,
           "llvm.call @%s(%%zt_ctx, %s, %s, %%pidx, %%pidy, %%pidz, %s, %s, %s, %s, %s) : "
           "%s -> ()",
           fn, msg, loc, crank, idx[0], idx[1], idx[2], idx[3], k_assert_sig);
  --c->indent;
  cpu_line(c, "}");
  if (ty.rank) cpu_nest_end(c, ty.rank);
  return NULL;
}
