// Structured control flow, reductions and dot of the CPU lowering.
//
// Lowered scf ops carry only scalars; a carried tensor lives in a dedicated
// buffer that the init, the yields (and scf.condition) copy into, and the
// op's results read afterwards.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>

#include "cpu_lower.h"

#define MAX_CARRIED 64

static MlirOperation terminator(MlirBlock b) { return mlirBlockGetTerminator(b); }

// Carried-value bookkeeping of one scf op: which positions are tensors (and
// their buffers) and the scalar names.
typedef struct carried_s {
  int32_t n;
  bool tensor[MAX_CARRIED];
  int32_t buf[MAX_CARRIED];
  zt_type_t type[MAX_CARRIED];
} carried_t;

static zt_status_t carried_init(cpu_t* c, MlirOperation op, int32_t n,
                                MlirValue (*get)(MlirOperation, intptr_t),
                                carried_t* cv) {
  if (n > MAX_CARRIED)
    return cpu_op_error(op, ZT_STATUS_UNSUPPORTED, "more than %d carried values",
                        MAX_CARRIED);
  cv->n = n;
  for (int32_t i = 0; i < n; ++i) {
    ZT_RETURN_IF_ERROR(cpu_value_type(get(op, i), &cv->type[i]));
    cv->tensor[i] = cv->type[i].rank > 0;
    cv->buf[i] = -1;
    if (cv->tensor[i]) ZT_RETURN_IF_ERROR(cpu_new_buf(c, cv->type[i], &cv->buf[i]));
  }
  return NULL;
}

static int32_t count_scalars(const carried_t* cv) {
  int32_t k = 0;
  for (int32_t i = 0; i < cv->n; ++i) k += !cv->tensor[i];
  return k;
}

static cpu_val_t buf_val(const carried_t* cv, int32_t i) {
  cpu_val_t v = {.kind = CPU_BUFFER, .type = cv->type[i], .buf = cv->buf[i]};
  snprintf(v.name, ZT_CPU_NAME, "%%b%d", cv->buf[i]);
  return v;
}

// Copies the tensor operands [first, first+cv->n) of `op` into cv's buffers
// and appends the scalar ones (names, then ": types") to `sb`.
static zt_status_t pass_values(cpu_t* c, MlirOperation op, intptr_t first,
                               const carried_t* cv, zt_strbuf_t* names,
                               zt_strbuf_t* types) {
  const cpu_val_t* srcs[MAX_CARRIED];
  int32_t dsts[MAX_CARRIED];
  int32_t nt = 0, ns = 0;
  for (int32_t i = 0; i < cv->n; ++i) {
    const cpu_val_t* v;
    ZT_RETURN_IF_ERROR(cpu_get(c, mlirOperationGetOperand(op, first + i), &v));
    if (cv->tensor[i]) {
      srcs[nt] = v;
      dsts[nt++] = cv->buf[i];
    } else {
      zt_strbuf_printf(names, "%s%s", ns ? ", " : "", v->name);
      zt_strbuf_printf(types, "%s%s", ns ? ", " : "", cpu_elem(cv->type[i].kind));
      ++ns;
    }
  }
  return cpu_parallel_copy(c, nt, srcs, dsts);
}

static void scalar_types(const carried_t* cv, zt_strbuf_t* sb) {
  int32_t k = 0;
  for (int32_t i = 0; i < cv->n; ++i)
    if (!cv->tensor[i])
      zt_strbuf_printf(sb, "%s%s", k++ ? ", " : "", cpu_elem(cv->type[i].kind));
}

// Maps values (results or block arguments) i of a carried set: tensors to
// their buffers, scalars to `base` (`%r`, `%r#k`) or `names[k]`.
static zt_status_t map_carried(cpu_t* c, const carried_t* cv, MlirValue* vals,
                               const char* base, char (*names)[ZT_CPU_NAME]) {
  int32_t ns = count_scalars(cv), k = 0;
  for (int32_t i = 0; i < cv->n; ++i) {
    cpu_val_t v;
    if (cv->tensor[i]) {
      v = buf_val(cv, i);
    } else {
      memset(&v, 0, sizeof v);
      v.kind = CPU_SCALAR;
      v.type = cv->type[i];
      if (names)
        snprintf(v.name, ZT_CPU_NAME, "%s", names[k]);
      else if (ns == 1)
        snprintf(v.name, ZT_CPU_NAME, "%s", base);
      else
        snprintf(v.name, ZT_CPU_NAME, "%s#%d", base, k);
      ++k;
    }
    ZT_RETURN_IF_ERROR(cpu_map_put(c, vals[i], &v));
  }
  return NULL;
}

static void result_prefix(cpu_t* c, const carried_t* cv, char base[ZT_CPU_NAME],
                          zt_strbuf_t* line) {
  int32_t ns = count_scalars(cv);
  cpu_fresh(c, base);
  if (ns == 1) zt_strbuf_printf(line, "%s = ", base);
  if (ns > 1) zt_strbuf_printf(line, "%s:%d = ", base, ns);
}

static zt_status_t finish_line(cpu_t* c, zt_strbuf_t* line) {
  bool failed = line->failed;
  if (!failed) cpu_line(c, "%s", line->data ? line->data : "");
  zt_strbuf_deinit(line);
  return failed ? zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "cpu lowering") : NULL;
}

// Emits a region's block (args already mapped) and its terminator's values.
static zt_status_t emit_body_and_yield(cpu_t* c, MlirBlock b, intptr_t first,
                                       const carried_t* cv, const char* keyword,
                                       const char* cond) {
  ZT_RETURN_IF_ERROR(cpu_emit_block(c, b));
  MlirOperation t = terminator(b);
  zt_strbuf_t names, types;
  zt_strbuf_init(&names);
  zt_strbuf_init(&types);
  zt_status_t s = pass_values(c, t, first, cv, &names, &types);
  if (!s) {
    if (names.size)
      cpu_line(c, "%s%s %s : %s", keyword, cond ? cond : "", names.data, types.data);
    else
      cpu_line(c, "%s%s", keyword, cond ? cond : "");
  }
  zt_strbuf_deinit(&names);
  zt_strbuf_deinit(&types);
  return s;
}

static MlirValue op_operand_from(MlirOperation op, intptr_t i);
static _Thread_local intptr_t g_operand_offset;  // offset for op_operand_from (per compiling thread)
static MlirValue op_operand_from(MlirOperation op, intptr_t i) {
  return mlirOperationGetOperand(op, g_operand_offset + i);
}

// The value `v` is a splat, possibly broadcast or reshaped: the same for
// every element.
static bool is_uniform(MlirValue v) {
  for (int depth = 0; depth < 8 && mlirValueIsAOpResult(v); ++depth) {
    MlirOperation d = mlirOpResultGetOwner(v);
    if (cpu_op_is(d, "tile.splat")) return true;
    if (!cpu_op_is(d, "tile.broadcast") && !cpu_op_is(d, "tile.expand_dims") &&
        !cpu_op_is(d, "tile.reshape"))
      return false;
    v = mlirOperationGetOperand(d, 0);
  }
  return false;
}

// No use at all (a loop result nothing reads after the loop).
static bool unused(MlirValue v) { return mlirOpOperandIsNull(mlirValueGetFirstUse(v)); }

// The carried pointer tensor i (argument `arg`, stepped by `step`) may have
// its yield move column 0 alone (cpu_copy_to's copy_col0) if its readers in
// the loop are tile.loads of it as the address operand, the step's result
// goes to the yield alone, and the loop's result is unused. Whether every
// such load then read rows through rows_ok[k] is counted as they are
// emitted (emit_row_load), and checked when the yield copies.
static void col0_candidate(cpu_t* c, MlirOperation loop, MlirBlock body, int32_t i, int32_t k,
                           MlirOperation step, int32_t buf) {
  if (c->num_col0 == 16 || !unused(mlirOperationGetResult(loop, i))) return;
  MlirValue arg = mlirBlockGetArgument(body, i + 1);
  MlirValue sv = mlirOperationGetResult(step, 0);
  MlirOpOperand su = mlirValueGetFirstUse(sv);
  if (mlirOpOperandIsNull(su) || !mlirOpOperandIsNull(mlirOpOperandGetNextUse(su)) ||
      !mlirOperationEqual(mlirOpOperandGetOwner(su), terminator(body)))
    return;
  int32_t loads = 0;
  for (MlirOpOperand u = mlirValueGetFirstUse(arg); !mlirOpOperandIsNull(u);
       u = mlirOpOperandGetNextUse(u)) {
    MlirOperation o = mlirOpOperandGetOwner(u);
    if (mlirOperationEqual(o, step)) continue;
    if (!cpu_op_is(o, "tile.load") || mlirOpOperandGetOperandNumber(u) != 0) return;
    ++loads;
  }
  if (!loads) return;
  c->rows_loads[k] = 0;
  c->col0_buf[c->num_col0] = buf;
  c->col0_k[c->num_col0] = k;
  c->col0_loads[c->num_col0++] = loads;
}

// op is `loop` or nested in it.
static bool within(MlirOperation op, MlirOperation loop) {
  for (int depth = 0; depth < 64 && !mlirOperationIsNull(op); ++depth) {
    if (mlirOperationEqual(op, loop)) return true;
    op = mlirOperationGetParentOperation(op);
  }
  return false;
}

// The integer scalar v as an i64 computed here, before `loop`: a value
// defined outside the loop (already lowered), or integer constants, adds,
// subtracts, multiplies and sign extensions of such values inside it (the
// tutorial's `b_ptrs += BLOCK_K * stride_bk` computes its step in the body).
// False when v is anything else (nothing useful is emitted then).
static bool hoist_i64(cpu_t* c, MlirOperation loop, MlirValue v, int depth,
                      char out[ZT_CPU_NAME]) {
  if (depth > 6) return false;
  MlirOperation d = mlirValueIsAOpResult(v) ? mlirOpResultGetOwner(v) : (MlirOperation){NULL};
  bool inside = mlirValueIsAOpResult(v)
                    ? within(d, loop)
                    : within(mlirBlockGetParentOperation(mlirBlockArgumentGetOwner(v)), loop);
  if (!inside) return cpu_scalar_i64(c, cpu_map_get(c, v), out);
  if (mlirOperationIsNull(d)) return false;
  if (cpu_op_is(d, "arith.constant")) {
    MlirAttribute a = mlirOperationGetAttributeByName(d, mlirStringRefCreateFromCString("value"));
    if (mlirAttributeIsNull(a) || !mlirAttributeIsAInteger(a)) return false;
    cpu_fresh(c, out);
    cpu_line(c, "%s = arith.constant %lld : i64", out, (long long)mlirIntegerAttrGetValueInt(a));
    return true;
  }
  if (cpu_op_is(d, "arith.extsi")) return hoist_i64(c, loop, mlirOperationGetOperand(d, 0), depth + 1, out);
  const char* name = cpu_op_is(d, "arith.muli")   ? "arith.muli"
                     : cpu_op_is(d, "arith.addi") ? "arith.addi"
                     : cpu_op_is(d, "arith.subi") ? "arith.subi"
                                                  : NULL;
  if (!name) return false;
  char x[ZT_CPU_NAME], y[ZT_CPU_NAME];
  if (!hoist_i64(c, loop, mlirOperationGetOperand(d, 0), depth + 1, x) ||
      !hoist_i64(c, loop, mlirOperationGetOperand(d, 1), depth + 1, y))
    return false;
  cpu_fresh(c, out);
  cpu_line(c, "%s = %s %s, %s : i64", out, name, x, y);
  return true;
}

// The step of a carried pointer tensor in bytes (`step` adds the uniform
// offset operand 1, a splat, possibly broadcast, of a scalar), computed
// before the loop; "" when that scalar is not loop-invariant arithmetic.
static void hoist_step(cpu_t* c, MlirOperation loop, MlirOperation step, int64_t bytes,
                       char out[ZT_CPU_NAME]) {
  out[0] = 0;
  MlirValue v = mlirOperationGetOperand(step, 1);
  for (int depth = 0; depth < 8 && mlirValueIsAOpResult(v); ++depth) {
    MlirOperation d = mlirOpResultGetOwner(v);
    if (cpu_op_is(d, "tile.splat")) {
      char s[ZT_CPU_NAME], b[ZT_CPU_NAME];
      if (!hoist_i64(c, loop, mlirOperationGetOperand(d, 0), 0, s)) return;
      cpu_fresh(c, b);
      cpu_line(c, "%s = arith.constant %lld : i64", b, (long long)bytes);
      cpu_fresh(c, out);
      cpu_line(c, "%s = arith.muli %s, %s : i64", out, s, b);
      return;
    }
    if (!cpu_op_is(d, "tile.broadcast") && !cpu_op_is(d, "tile.expand_dims") &&
        !cpu_op_is(d, "tile.reshape"))
      return;
    v = mlirOperationGetOperand(d, 0);
  }
}

// Carried pointer tensors (rank >= 2) that the loop yields as
// addptr(themselves, uniform offset): every iteration adds the same number
// to each address, so whether their rows are consecutive (emit_row_load's
// run-time check) is decided once, on the init, before the loop.
static void check_rows_once(cpu_t* c, MlirOperation op, MlirBlock body, const carried_t* cv) {
  MlirOperation y = terminator(body);
  for (int32_t i = 0; i < cv->n; ++i) {
    const zt_type_t* t = &cv->type[i];
    if (!cv->tensor[i] || t->kind != ZT_PTR || t->rank < 2 ||
        t->shape[t->rank - 1] < CPU_ROW_LOAD_MIN || c->num_rows_ok == 16 ||
        i >= mlirOperationGetNumOperands(y))
      continue;
    MlirValue arg = mlirBlockGetArgument(body, i + 1);
    MlirValue yv = mlirOperationGetOperand(y, i);
    if (!mlirValueIsAOpResult(yv)) continue;
    MlirOperation step = mlirOpResultGetOwner(yv);
    if (!cpu_op_is(step, "tile.addptr") ||
        !mlirValueEqual(mlirOperationGetOperand(step, 0), arg) ||
        !is_uniform(mlirOperationGetOperand(step, 1)))
      continue;
    // A block lowered again (none is today) re-records its argument: the
    // name in the table is always the one computed before this emission.
    int32_t k = 0;
    while (k < c->num_rows_ok && !mlirValueEqual(c->rows_arg[k], arg)) ++k;
    if (k == c->num_rows_ok) ++c->num_rows_ok;
    cpu_val_t b = buf_val(cv, i);
    c->rows_arg[k] = arg;
    cpu_rows_check(c, &b, cpu_pointee_bytes(t), c->rows_ok[k]);
    hoist_step(c, op, step, cpu_pointee_bytes(t), c->rows_step[k]);
    col0_candidate(c, op, body, i, k, step, cv->buf[i]);
  }
}

// The first iteration of an scf.for peeled (issue 16): when a carried
// tensor starts as a splat (layer norm's `_mean = tl.zeros([BLOCK])`), the
// peeled body reads the splat itself, so `_mean += a` writes 0 + a into the
// carried buffer in one pass, where the loop filled the buffer with zeros
// (a 4 KB store per row and accumulator for BLOCK 1024) and then read it
// back. The same ops in the same order: results are bit for bit the same.
// Only plain bodies (no region-holding op, no dot: each would be emitted
// twice) without carried pointer tensors (their row checks and column-0
// steps are set up for one emission).
static bool peel_ok(cpu_t* c, MlirOperation op, MlirBlock body, const carried_t* cv) {
  bool splat = false;
  for (int32_t i = 0; i < cv->n; ++i) {
    if (!cv->tensor[i]) continue;
    if (cv->type[i].kind == ZT_PTR) return false;
    const cpu_val_t* v = cpu_map_get(c, mlirOperationGetOperand(op, 3 + i));
    if (v && (v->kind == CPU_SPLAT || v->kind == CPU_SCALAR)) splat = true;  // a splat maps to its scalar
  }
  if (!splat) return false;
  int32_t ops = 0;
  for (MlirOperation o = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(o);
       o = mlirOperationGetNextInBlock(o)) {
    if (mlirOperationGetNumRegions(o) || cpu_op_is(o, "tile.dot") || ++ops > 200) return false;
  }
  return true;
}

// Emits `scf.if lb < ub` running the body once with iv = lb and the inits
// read directly, else copying the inits; tensors end in cv's buffers and the
// scalars in `res` (names for the loop's iter_args, `inames`/`itypes`).
static zt_status_t emit_peeled(cpu_t* c, MlirOperation op, MlirBlock body, const carried_t* cv,
                               const cpu_val_t* lb, const cpu_val_t* ub, zt_strbuf_t* inames,
                               zt_strbuf_t* itypes) {
  zt_type_t ivt;
  ZT_RETURN_IF_ERROR(cpu_value_type(mlirBlockGetArgument(body, 0), &ivt));
  char cond[ZT_CPU_NAME], base[ZT_CPU_NAME];
  cpu_fresh(c, cond);
  cpu_line(c, "%s = arith.cmpi slt, %s, %s : %s", cond, lb->name, ub->name, cpu_elem(ivt.kind));
  zt_strbuf_t line;
  zt_strbuf_init(&line);
  result_prefix(c, cv, base, &line);
  zt_strbuf_printf(&line, "scf.if %s", cond);
  int32_t ns = count_scalars(cv);
  if (ns) {
    zt_strbuf_puts(&line, " -> (");
    scalar_types(cv, &line);
    zt_strbuf_puts(&line, ")");
  }
  zt_strbuf_puts(&line, " {");
  ZT_RETURN_IF_ERROR(finish_line(c, &line));
  ++c->indent;
  cpu_val_t ivv = {.kind = CPU_SCALAR, .type = ivt};
  snprintf(ivv.name, ZT_CPU_NAME, "%s", lb->name);
  ZT_RETURN_IF_ERROR(cpu_map_put(c, mlirBlockGetArgument(body, 0), &ivv));
  for (int32_t i = 0; i < cv->n; ++i) {
    const cpu_val_t* v;
    ZT_RETURN_IF_ERROR(cpu_get(c, mlirOperationGetOperand(op, 3 + i), &v));
    cpu_val_t copy = *v;
    // Opaque: with the splat a known constant, LLVM folded `0 + other` in
    // the masked-off part of a split loop into a fill and that into a
    // memset call (rep stosb's start-up cost, every row).
    if (cv->tensor[i] && (v->kind == CPU_SPLAT || v->kind == CPU_SCALAR))
      cpu_opaque_splat(c, v, &copy);
    ZT_RETURN_IF_ERROR(cpu_map_put(c, mlirBlockGetArgument(body, i + 1), &copy));
  }
  ZT_RETURN_IF_ERROR(emit_body_and_yield(c, body, 0, cv, "scf.yield", NULL));
  --c->indent;
  cpu_line(c, "} else {");
  ++c->indent;
  zt_strbuf_t names, types;
  zt_strbuf_init(&names);
  zt_strbuf_init(&types);
  zt_status_t s = pass_values(c, op, 3, cv, &names, &types);
  if (!s && ns) cpu_line(c, "scf.yield %s : %s", names.data, types.data);
  zt_strbuf_deinit(&names);
  zt_strbuf_deinit(&types);
  --c->indent;
  cpu_line(c, "}");
  for (int32_t k = 0; k < ns && !s; ++k) {
    if (ns == 1) zt_strbuf_printf(inames, "%s", base);
    else zt_strbuf_printf(inames, "%s%s#%d", k ? ", " : "", base, k);
  }
  if (!s && ns) scalar_types(cv, itypes);
  return s;
}

zt_status_t cpu_emit_for(cpu_t* c, MlirOperation op) {
  int32_t n = (int32_t)mlirOperationGetNumResults(op);
  carried_t cv;
  ZT_RETURN_IF_ERROR(carried_init(c, op, n, mlirOperationGetResult, &cv));
  const cpu_val_t *lb, *ub, *st;
  ZT_RETURN_IF_ERROR(cpu_get(c, mlirOperationGetOperand(op, 0), &lb));
  ZT_RETURN_IF_ERROR(cpu_get(c, mlirOperationGetOperand(op, 1), &ub));
  ZT_RETURN_IF_ERROR(cpu_get(c, mlirOperationGetOperand(op, 2), &st));
  zt_strbuf_t inames, itypes;
  zt_strbuf_init(&inames);
  zt_strbuf_init(&itypes);
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
  bool peel = peel_ok(c, op, body, &cv);
  zt_status_t s = peel ? emit_peeled(c, op, body, &cv, lb, ub, &inames, &itypes)
                       : pass_values(c, op, 3, &cv, &inames, &itypes);
  const char* from = lb->name;
  char next[ZT_CPU_NAME];
  if (!s && peel) {
    zt_type_t ivt;
    s = cpu_value_type(mlirBlockGetArgument(body, 0), &ivt);
    cpu_fresh(c, next);
    if (!s) cpu_line(c, "%s = arith.addi %s, %s : %s", next, lb->name, st->name, cpu_elem(ivt.kind));
    from = next;
  }
  int32_t col0_before = c->num_col0;
  if (!s) check_rows_once(c, op, body, &cv);
  char base[ZT_CPU_NAME], iv[ZT_CPU_NAME];
  char(*argn)[ZT_CPU_NAME] = calloc((size_t)(n ? n : 1), ZT_CPU_NAME);
  if (!argn && !s) s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "cpu for");
  zt_strbuf_t line;
  zt_strbuf_init(&line);
  if (!s) {
    result_prefix(c, &cv, base, &line);
    cpu_fresh(c, iv);
    zt_strbuf_printf(&line, "scf.for %s = %s to %s step %s", iv, from, ub->name,
                     st->name);
    if (inames.size) {
      // iter_args(%a = %init, ...) -> (types)
      zt_strbuf_puts(&line, " iter_args(");
      const char* p = inames.data;
      for (int32_t i = 0, k = 0; i < n; ++i) {
        if (cv.tensor[i]) continue;
        cpu_fresh(c, argn[k]);
        const char* comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        zt_strbuf_printf(&line, "%s%s = %.*s", k ? ", " : "", argn[k], (int)len, p);
        p = comma ? comma + 2 : p + len;
        ++k;
      }
      zt_strbuf_printf(&line, ") -> (%s)", itypes.data);
    }
    zt_type_t ivt;
    s = cpu_value_type(mlirBlockGetArgument(body, 0), &ivt);
    if (!s) zt_strbuf_printf(&line, " : %s {", cpu_elem(ivt.kind));
  }
  zt_strbuf_deinit(&inames);
  zt_strbuf_deinit(&itypes);
  if (!s) s = finish_line(c, &line);
  else zt_strbuf_deinit(&line);
  if (!s) {
    cpu_val_t ivv = {.kind = CPU_SCALAR};
    snprintf(ivv.name, ZT_CPU_NAME, "%s", iv);
    s = cpu_value_type(mlirBlockGetArgument(body, 0), &ivv.type);
    if (!s) s = cpu_map_put(c, mlirBlockGetArgument(body, 0), &ivv);
  }
  MlirValue vals[MAX_CARRIED];
  if (!s) {
    for (int32_t i = 0; i < n; ++i) vals[i] = mlirBlockGetArgument(body, i + 1);
    s = map_carried(c, &cv, vals, NULL, argn);
  }
  if (!s) {
    ++c->indent;
    s = emit_body_and_yield(c, body, 0, &cv, "scf.yield", NULL);
    --c->indent;
    cpu_line(c, "}");
  }
  c->num_col0 = col0_before;  // the yield was the only copy that may take column 0
  if (!s) {
    for (int32_t i = 0; i < n; ++i) vals[i] = mlirOperationGetResult(op, i);
    s = map_carried(c, &cv, vals, base, NULL);
  }
  free(argn);
  return s;
}

zt_status_t cpu_emit_if(cpu_t* c, MlirOperation op) {
  int32_t n = (int32_t)mlirOperationGetNumResults(op);
  carried_t cv;
  ZT_RETURN_IF_ERROR(carried_init(c, op, n, mlirOperationGetResult, &cv));
  const cpu_val_t* cond;
  ZT_RETURN_IF_ERROR(cpu_get(c, mlirOperationGetOperand(op, 0), &cond));
  char base[ZT_CPU_NAME];
  zt_strbuf_t line;
  zt_strbuf_init(&line);
  result_prefix(c, &cv, base, &line);
  zt_strbuf_printf(&line, "scf.if %s", cond->name);
  if (count_scalars(&cv)) {
    zt_strbuf_puts(&line, " -> (");
    scalar_types(&cv, &line);
    zt_strbuf_puts(&line, ")");
  }
  zt_strbuf_puts(&line, " {");
  ZT_RETURN_IF_ERROR(finish_line(c, &line));
  for (int r = 0; r < 2; ++r) {
    MlirRegion region = mlirOperationGetRegion(op, r);
    MlirBlock b = mlirRegionGetFirstBlock(region);
    ++c->indent;
    zt_status_t s = NULL;
    if (!mlirBlockIsNull(b)) s = emit_body_and_yield(c, b, 0, &cv, "scf.yield", NULL);
    --c->indent;
    if (s) return s;
    cpu_line(c, r == 0 ? "} else {" : "}");
  }
  MlirValue vals[MAX_CARRIED];
  for (int32_t i = 0; i < n; ++i) vals[i] = mlirOperationGetResult(op, i);
  return map_carried(c, &cv, vals, base, NULL);
}

zt_status_t cpu_emit_while(cpu_t* c, MlirOperation op) {
  int32_t nb = (int32_t)mlirOperationGetNumOperands(op);
  int32_t na = (int32_t)mlirOperationGetNumResults(op);
  carried_t before, after;
  g_operand_offset = 0;
  ZT_RETURN_IF_ERROR(carried_init(c, op, nb, op_operand_from, &before));
  ZT_RETURN_IF_ERROR(carried_init(c, op, na, mlirOperationGetResult, &after));
  MlirBlock bb = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
  MlirBlock ab = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 1));
  zt_strbuf_t inames, itypes, line;
  zt_strbuf_init(&inames);
  zt_strbuf_init(&itypes);
  zt_strbuf_init(&line);
  zt_status_t s = pass_values(c, op, 0, &before, &inames, &itypes);
  char base[ZT_CPU_NAME];
  char(*bn)[ZT_CPU_NAME] = calloc((size_t)(nb ? nb : 1), ZT_CPU_NAME);
  char(*an)[ZT_CPU_NAME] = calloc((size_t)(na ? na : 1), ZT_CPU_NAME);
  if ((!bn || !an) && !s) s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "cpu while");
  if (!s) {
    result_prefix(c, &after, base, &line);
    zt_strbuf_puts(&line, "scf.while (");
    const char* p = inames.data ? inames.data : "";
    for (int32_t i = 0, k = 0; i < nb; ++i) {
      if (before.tensor[i]) continue;
      cpu_fresh(c, bn[k]);
      const char* comma = strchr(p, ',');
      size_t len = comma ? (size_t)(comma - p) : strlen(p);
      zt_strbuf_printf(&line, "%s%s = %.*s", k ? ", " : "", bn[k], (int)len, p);
      p = comma ? comma + 2 : p + len;
      ++k;
    }
    zt_strbuf_printf(&line, ") : (%s) -> (", itypes.data ? itypes.data : "");
    scalar_types(&after, &line);
    zt_strbuf_puts(&line, ") {");
    s = finish_line(c, &line);
  } else {
    zt_strbuf_deinit(&line);
  }
  zt_strbuf_deinit(&inames);
  zt_strbuf_deinit(&itypes);
  MlirValue vals[MAX_CARRIED];
  if (!s) {
    for (int32_t i = 0; i < nb; ++i) vals[i] = mlirBlockGetArgument(bb, i);
    s = map_carried(c, &before, vals, NULL, bn);
  }
  if (!s) {
    ++c->indent;
    MlirOperation cond_op = terminator(bb);
    const cpu_val_t* cond = NULL;
    s = cpu_emit_block(c, bb);
    if (!s) s = cpu_get(c, mlirOperationGetOperand(cond_op, 0), &cond);
    char kw[ZT_CPU_NAME + 16];
    if (!s) {
      snprintf(kw, sizeof kw, "scf.condition(%s)", cond->name);
      zt_strbuf_t names, types;
      zt_strbuf_init(&names);
      zt_strbuf_init(&types);
      s = pass_values(c, cond_op, 1, &after, &names, &types);
      if (!s) {
        if (names.size)
          cpu_line(c, "%s %s : %s", kw, names.data, types.data);
        else
          cpu_line(c, "%s", kw);
      }
      zt_strbuf_deinit(&names);
      zt_strbuf_deinit(&types);
    }
    --c->indent;
  }
  if (!s) {
    zt_strbuf_t hdr;
    zt_strbuf_init(&hdr);
    zt_strbuf_puts(&hdr, "} do {");
    cpu_line(c, "%s", hdr.data);
    zt_strbuf_deinit(&hdr);
    zt_strbuf_init(&line);
    zt_strbuf_puts(&line, "^bb0(");
    for (int32_t i = 0, k = 0; i < na; ++i) {
      if (after.tensor[i]) continue;
      cpu_fresh(c, an[k]);
      zt_strbuf_printf(&line, "%s%s: %s", k ? ", " : "", an[k],
                       cpu_elem(after.type[i].kind));
      ++k;
    }
    zt_strbuf_puts(&line, "):");
    s = finish_line(c, &line);
  }
  if (!s) {
    for (int32_t i = 0; i < na; ++i) vals[i] = mlirBlockGetArgument(ab, i);
    s = map_carried(c, &after, vals, NULL, an);
  }
  if (!s) {
    ++c->indent;
    s = emit_body_and_yield(c, ab, 0, &before, "scf.yield", NULL);
    --c->indent;
    cpu_line(c, "}");
  }
  if (!s) {
    for (int32_t i = 0; i < na; ++i) vals[i] = mlirOperationGetResult(op, i);
    s = map_carried(c, &after, vals, base, NULL);
  }
  free(bn);
  free(an);
  return s;
}

// ---------------------------------------------------------------------------
// tile.reduce: for every position of the kept dims, a loop along the axis
// whose body is the combiner's ops, re-emitted on scalars (built-in
// combiners go in blocked tree order instead: cpu_reduce_tree.c).

zt_status_t cpu_inline_combiner(cpu_t* c, MlirOperation fn, int32_t n,
                                char (*lhs)[ZT_CPU_NAME], char (*rhs)[ZT_CPU_NAME],
                                char (*out)[ZT_CPU_NAME]) {
  MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(fn, 0));
  if (mlirBlockIsNull(b) || mlirBlockGetNumArguments(b) != 2 * n)
    return cpu_op_error(fn, ZT_STATUS_INVALID_ARGUMENT,
                        "combiner must take %d scalar arguments", 2 * n);
  for (int32_t i = 0; i < 2 * n; ++i) {
    cpu_val_t v = {.kind = CPU_SCALAR};
    MlirValue a = mlirBlockGetArgument(b, i);
    ZT_RETURN_IF_ERROR(cpu_value_type(a, &v.type));
    snprintf(v.name, ZT_CPU_NAME, "%s", i < n ? lhs[i] : rhs[i - n]);
    ZT_RETURN_IF_ERROR(cpu_map_put(c, a, &v));
  }
  ZT_RETURN_IF_ERROR(cpu_emit_block(c, b));
  MlirOperation ret = terminator(b);
  if (mlirOperationGetNumOperands(ret) != n)
    return cpu_op_error(fn, ZT_STATUS_INVALID_ARGUMENT,
                        "combiner must return %d values", n);
  for (int32_t i = 0; i < n; ++i) {
    const cpu_val_t* v;
    ZT_RETURN_IF_ERROR(cpu_get(c, mlirOperationGetOperand(ret, i), &v));
    snprintf(out[i], ZT_CPU_NAME, "%s", v->name);
  }
  return NULL;
}

zt_status_t cpu_emit_reduce(cpu_t* c, MlirOperation op) {
  int32_t n = (int32_t)mlirOperationGetNumOperands(op);
  if (n < 1 || n > 16 || mlirOperationGetNumResults(op) != n)
    return cpu_op_error(op, ZT_STATUS_INVALID_ARGUMENT, "reduce of %d values", n);
  MlirAttribute ca = mlirOperationGetAttributeByName(
      op, mlirStringRefCreateFromCString("combiner"));
  MlirAttribute aa = mlirOperationGetAttributeByName(
      op, mlirStringRefCreateFromCString("axis"));
  if (mlirAttributeIsNull(ca) || !mlirAttributeIsAFlatSymbolRef(ca) ||
      mlirAttributeIsNull(aa) || !mlirAttributeIsAInteger(aa))
    return cpu_op_error(op, ZT_STATUS_INVALID_ARGUMENT,
                        "reduce needs axis and combiner attributes");
  MlirOperation fn =
      mlirSymbolTableLookup(c->symbols, mlirFlatSymbolRefAttrGetValue(ca));
  if (mlirOperationIsNull(fn))
    return cpu_op_error(op, ZT_STATUS_INVALID_ARGUMENT, "combiner not found");
  const cpu_val_t* src[16];
  for (int32_t i = 0; i < n; ++i)
    ZT_RETURN_IF_ERROR(cpu_get(c, mlirOperationGetOperand(op, i), &src[i]));
  zt_type_t st = src[0]->type;
  int32_t axis = (int32_t)mlirIntegerAttrGetValueInt(aa);
  if (axis < 0 || axis >= st.rank)
    return cpu_op_error(op, ZT_STATUS_INVALID_ARGUMENT, "bad reduce axis");
  int64_t sstr[ZT_MAX_RANK], kept_shape[ZT_MAX_RANK], kept_sstr[ZT_MAX_RANK];
  cpu_strides(st.rank, st.shape, sstr);
  int32_t kr = 0;
  for (int32_t d = 0; d < st.rank; ++d)
    if (d != axis) {
      kept_shape[kr] = st.shape[d];
      kept_sstr[kr++] = sstr[d];
    }
  int64_t len = st.shape[axis], astr = sstr[axis];
  cpu_val_t res[16];
  for (int32_t i = 0; i < n; ++i) {
    zt_type_t rt;
    ZT_RETURN_IF_ERROR(cpu_value_type(mlirOperationGetResult(op, i), &rt));
    if (kr) {
      ZT_RETURN_IF_ERROR(cpu_new_buf_val(c, rt, &res[i]));
    } else {
      memset(&res[i], 0, sizeof res[i]);
      res[i].kind = CPU_SCALAR;
      res[i].type = rt;
    }
  }
  char ivs[ZT_MAX_RANK][ZT_CPU_NAME], base[ZT_CPU_NAME], didx[ZT_CPU_NAME];
  cpu_nest_begin(c, kr, kept_shape, ivs);
  cpu_linear(c, kr, ivs, kept_sstr, base);
  char acc[16][ZT_CPU_NAME], fin[16][ZT_CPU_NAME];
  bool tree = false;
  if (n == 1)
    ZT_RETURN_IF_ERROR(cpu_emit_tree_reduce(c, fn, src[0], len, astr, base, &tree, fin[0]));
  if (!tree)
    for (int32_t i = 0; i < n; ++i) cpu_read(c, src[i], base, acc[i]);
  if (tree) {
    // fin[0] holds the result (cpu_reduce_tree.c).
  } else if (len > 1) {
    char loop[ZT_CPU_NAME], k[ZT_CPU_NAME], c1[ZT_CPU_NAME], cl[ZT_CPU_NAME],
        cs[ZT_CPU_NAME], args[16][ZT_CPU_NAME];
    cpu_fresh(c, loop);
    cpu_fresh(c, k);
    cpu_index(c, 1, c1);
    cpu_index(c, len, cl);
    zt_strbuf_t line;
    zt_strbuf_init(&line);
    zt_strbuf_printf(&line, n == 1 ? "%s = " : "%s:%d = ", loop, n);
    zt_strbuf_printf(&line, "scf.for %s = %s to %s step %s iter_args(", k, c1, cl, c1);
    for (int32_t i = 0; i < n; ++i) {
      cpu_fresh(c, args[i]);
      zt_strbuf_printf(&line, "%s%s = %s", i ? ", " : "", args[i], acc[i]);
    }
    zt_strbuf_puts(&line, ") -> (");
    for (int32_t i = 0; i < n; ++i)
      zt_strbuf_printf(&line, "%s%s", i ? ", " : "", cpu_elem(src[i]->type.kind));
    zt_strbuf_puts(&line, ") {");
    ZT_RETURN_IF_ERROR(finish_line(c, &line));
    ++c->indent;
    char off[ZT_CPU_NAME], idx[ZT_CPU_NAME], rhs[16][ZT_CPU_NAME], out[16][ZT_CPU_NAME];
    if (astr == 1) {
      snprintf(off, sizeof off, "%s", k);
    } else {
      cpu_index(c, astr, cs);
      cpu_fresh(c, off);
      cpu_line(c, "%s = arith.muli %s, %s : index", off, k, cs);
    }
    cpu_fresh(c, idx);
    cpu_line(c, "%s = arith.addi %s, %s : index", idx, base, off);
    for (int32_t i = 0; i < n; ++i) cpu_read(c, src[i], idx, rhs[i]);
    ZT_RETURN_IF_ERROR(cpu_inline_combiner(c, fn, n, args, rhs, out));
    zt_strbuf_init(&line);
    zt_strbuf_puts(&line, "scf.yield ");
    for (int32_t i = 0; i < n; ++i) zt_strbuf_printf(&line, "%s%s", i ? ", " : "", out[i]);
    zt_strbuf_puts(&line, " : ");
    for (int32_t i = 0; i < n; ++i)
      zt_strbuf_printf(&line, "%s%s", i ? ", " : "", cpu_elem(src[i]->type.kind));
    ZT_RETURN_IF_ERROR(finish_line(c, &line));
    --c->indent;
    cpu_line(c, "}");
    for (int32_t i = 0; i < n; ++i) {
      if (n == 1)
        snprintf(fin[i], ZT_CPU_NAME, "%s", loop);
      else
        snprintf(fin[i], ZT_CPU_NAME, "%s#%d", loop, i);
    }
  } else {
    for (int32_t i = 0; i < n; ++i) snprintf(fin[i], ZT_CPU_NAME, "%s", acc[i]);
  }
  if (kr) {
    int64_t dstr[ZT_MAX_RANK];
    cpu_strides(kr, kept_shape, dstr);
    cpu_linear(c, kr, ivs, dstr, didx);
    for (int32_t i = 0; i < n; ++i) cpu_write(c, res[i].buf, didx, fin[i]);
  } else {
    for (int32_t i = 0; i < n; ++i) snprintf(res[i].name, ZT_CPU_NAME, "%s", fin[i]);
  }
  cpu_nest_end(c, kr);
  for (int32_t i = 0; i < n; ++i)
    ZT_RETURN_IF_ERROR(cpu_map_put(c, mlirOperationGetResult(op, i), &res[i]));
  return NULL;
}

// ---------------------------------------------------------------------------
// tile.dot: R = acc; for m, k: for n: R[m,n] += a[m,k] * b[k,n] (the inner
// loop runs along rows of b and R, which LLVM vectorizes). Narrow float
// accumulators are summed in f32 and rounded once at the end. f32/f16
// operands of suitable shapes go through cpu_dot.c's register-blocked
// vector kernel instead (same FMAs in the same order).

static bool is_float(zt_scalar_kind_t k) {
  return k == ZT_F16 || k == ZT_BF16 || k == ZT_F32 || k == ZT_F64;
}

// `uns`: integers are read as unsigned (widened by zero-extension).
static void convert(cpu_t* c, const char* x, zt_scalar_kind_t from,
                    zt_scalar_kind_t to, bool uns, char out[ZT_CPU_NAME]) {
  if (from == to) {
    snprintf(out, ZT_CPU_NAME, "%s", x);
    return;
  }
  int fb = zt_tile_kind_bytes(from), tb = zt_tile_kind_bytes(to);
  const char* opn;
  if (is_float(from) && is_float(to))
    opn = fb < tb ? "arith.extf" : "arith.truncf";
  else if (is_float(to))
    opn = uns ? "arith.uitofp" : "arith.sitofp";
  else if (is_float(from))
    opn = "arith.fptosi";
  else
    opn = fb < tb ? (uns ? "arith.extui" : "arith.extsi") : "arith.trunci";
  // f16 <-> bf16 have one width: go through f32.
  if (is_float(from) && is_float(to) && fb == tb) {
    char mid[ZT_CPU_NAME];
    convert(c, x, from, ZT_F32, false, mid);
    convert(c, mid, ZT_F32, to, false, out);
    return;
  }
  cpu_fresh(c, out);
  cpu_line(c, "%s = %s %s : %s to %s", out, opn, x, cpu_elem(from), cpu_elem(to));
}

// `acc = tl.dot(a, b, acc)` in a loop (issue 16: the tutorial matmul): the
// accumulator is a carried tensor whose only reader is this dot. Its buffer
// belongs to the loop (carried buffers are private, filled from the init) and
// nothing else reads it before the yield, so the dot accumulates in it and the
// yield's copy of the result into the same buffer disappears, instead of
// copying it into a work buffer and back on every k step.
static bool acc_in_place(cpu_t* c, MlirValue v, const cpu_val_t* acc) {
  (void)c;
  if (acc->kind != CPU_BUFFER || !mlirValueIsABlockArgument(v)) return false;
  MlirOperation owner = mlirBlockGetParentOperation(mlirBlockArgumentGetOwner(v));
  if (mlirOperationIsNull(owner) || !cpu_op_is(owner, "scf.for")) return false;
  MlirOpOperand u = mlirValueGetFirstUse(v);
  return !mlirOpOperandIsNull(u) && mlirOpOperandIsNull(mlirOpOperandGetNextUse(u));
}

zt_status_t cpu_emit_dot(cpu_t* c, MlirOperation op) {
  const cpu_val_t *a, *b, *acc;
  ZT_RETURN_IF_ERROR(cpu_get(c, mlirOperationGetOperand(op, 0), &a));
  ZT_RETURN_IF_ERROR(cpu_get(c, mlirOperationGetOperand(op, 1), &b));
  ZT_RETURN_IF_ERROR(cpu_get(c, mlirOperationGetOperand(op, 2), &acc));
  // Operands are read many times: compute lazy ones once.
  ZT_RETURN_IF_ERROR(cpu_materialize(c, a, &a));
  ZT_RETURN_IF_ERROR(cpu_materialize(c, b, &b));
  // Rank 3 is Triton's batched dot: one [M, K] @ [K, N] per leading index.
  int32_t r = a->type.rank;
  if ((r != 2 && r != 3) || b->type.rank != r || acc->type.rank != r)
    return cpu_op_error(op, ZT_STATUS_UNSUPPORTED, "dot of rank %d (2, or 3 batched)",
                        (int)r);
  int64_t nb = r == 3 ? a->type.shape[0] : 1;
  int64_t M = a->type.shape[r - 2], K = a->type.shape[r - 1], N = b->type.shape[r - 1];
  zt_scalar_kind_t ak = acc->type.kind, ik = a->type.kind;
  bool uns = zt_dot_is_unsigned(op);
  zt_scalar_kind_t ck = ak;
  if (ak == ZT_F16 || ak == ZT_BF16) ck = ZT_F32;
  if (!is_float(ak) && ak != ZT_I32 && ak != ZT_I64)
    return cpu_op_error(op, ZT_STATUS_UNSUPPORTED, "dot accumulator of %s",
                        zt_tile_kind_spelling(ak));
  cpu_val_t res, work;
  char iv[ZT_CPU_NAME], x[ZT_CPU_NAME], y[ZT_CPU_NAME];
  if (ck == ak && acc_in_place(c, mlirOperationGetOperand(op, 2), acc)) {
    res = *acc;
    work = res;
  } else {
    ZT_RETURN_IF_ERROR(cpu_new_buf_val(c, acc->type, &res));
    work = res;
    if (ck != ak) {
      zt_type_t wt = acc->type;
      wt.kind = ck;
      ZT_RETURN_IF_ERROR(cpu_new_buf_val(c, wt, &work));
    }
    cpu_loop_begin(c, nb * M * N, iv);
    cpu_read(c, acc, iv, x);
    convert(c, x, ak, ck, false, y);
    cpu_write(c, work.buf, iv, y);
    cpu_loop_end(c);
  }
  bool vec = false;  // f32 accumulation in vector registers (cpu_dot.c)
  if (r == 2) ZT_RETURN_IF_ERROR(cpu_emit_dot_vector(c, a, b, &work, M, K, N, &vec));
  if (!vec) {
    // Operands a row load left for the vector kernel to read in place.
    cpu_dot_fill_rows(c, a);
    cpu_dot_fill_rows(c, b);
    char ivs[4][ZT_CPU_NAME], ai[ZT_CPU_NAME], bi[ZT_CPU_NAME], ri[ZT_CPU_NAME],
        av[ZT_CPU_NAME], avc[ZT_CPU_NAME], bv[ZT_CPU_NAME], bvc[ZT_CPU_NAME],
        rv[ZT_CPU_NAME], nv[ZT_CPU_NAME];
    // Loops (batch,) M, K, N; a rank-2 dot starts at d0 = 1 (no batch loop).
    int64_t astr[4] = {M * K, K, 1, 0}, bstr[4] = {K * N, 0, N, 1},
            rstr[4] = {M * N, N, 0, 1};
    int32_t d0 = r == 3 ? 0 : 1, nd = 4 - d0;
    if (r == 3) cpu_loop_begin(c, nb, ivs[0]);
    cpu_loop_begin(c, M, ivs[1]);
    cpu_loop_begin(c, K, ivs[2]);
    cpu_linear(c, nd, ivs + d0, astr + d0, ai);
    cpu_read(c, a, ai, av);
    convert(c, av, ik, ck, uns, avc);
    cpu_loop_begin(c, N, ivs[3]);
    cpu_linear(c, nd, ivs + d0, bstr + d0, bi);
    cpu_linear(c, nd, ivs + d0, rstr + d0, ri);
    cpu_read(c, b, bi, bv);
    convert(c, bv, b->type.kind, ck, uns, bvc);
    cpu_read(c, &work, ri, rv);
    cpu_fresh(c, nv);
    if (is_float(ck)) {
      cpu_line(c, "%s = math.fma %s, %s, %s : %s", nv, avc, bvc, rv, cpu_elem(ck));
    } else {
      char p[ZT_CPU_NAME];
      cpu_fresh(c, p);
      cpu_line(c, "%s = arith.muli %s, %s : %s", p, avc, bvc, cpu_elem(ck));
      cpu_line(c, "%s = arith.addi %s, %s : %s", nv, rv, p, cpu_elem(ck));
    }
    cpu_write(c, work.buf, ri, nv);
    cpu_nest_end(c, nd);
  }
  if (ck != ak) {
    cpu_loop_begin(c, nb * M * N, iv);
    cpu_read(c, &work, iv, x);
    convert(c, x, ck, ak, false, y);
    cpu_write(c, res.buf, iv, y);
    cpu_loop_end(c);
  }
  return cpu_map_put(c, mlirOperationGetResult(op, 0), &res);
}

// ---------------------------------------------------------------------------
// tile.scan (inclusive): for every position of the other dims, a loop along
// the axis carrying the running value, writing each prefix. A reverse scan
// walks from the last element; in both directions the combiner gets
// (running value, next element), as Triton's flip-scan-flip does.

zt_status_t cpu_emit_scan(cpu_t* c, MlirOperation op) {
  int32_t n = (int32_t)mlirOperationGetNumOperands(op);
  if (n < 1 || n > 16 || mlirOperationGetNumResults(op) != n)
    return cpu_op_error(op, ZT_STATUS_INVALID_ARGUMENT, "scan of %d values", n);
  MlirAttribute ca = mlirOperationGetAttributeByName(
      op, mlirStringRefCreateFromCString("combiner"));
  MlirAttribute aa = mlirOperationGetAttributeByName(
      op, mlirStringRefCreateFromCString("axis"));
  MlirAttribute ra = mlirOperationGetAttributeByName(
      op, mlirStringRefCreateFromCString("reverse"));
  if (mlirAttributeIsNull(ca) || !mlirAttributeIsAFlatSymbolRef(ca) ||
      mlirAttributeIsNull(aa) || !mlirAttributeIsAInteger(aa))
    return cpu_op_error(op, ZT_STATUS_INVALID_ARGUMENT,
                        "scan needs axis and combiner attributes");
  bool reverse = !mlirAttributeIsNull(ra) && mlirAttributeIsABool(ra) &&
                 mlirBoolAttrGetValue(ra);
  MlirOperation fn =
      mlirSymbolTableLookup(c->symbols, mlirFlatSymbolRefAttrGetValue(ca));
  if (mlirOperationIsNull(fn))
    return cpu_op_error(op, ZT_STATUS_INVALID_ARGUMENT, "combiner not found");
  const cpu_val_t* src[16];
  for (int32_t i = 0; i < n; ++i)
    ZT_RETURN_IF_ERROR(cpu_get(c, mlirOperationGetOperand(op, i), &src[i]));
  zt_type_t st;
  ZT_RETURN_IF_ERROR(cpu_value_type(mlirOperationGetResult(op, 0), &st));
  int32_t axis = (int32_t)mlirIntegerAttrGetValueInt(aa);
  if (axis < 0 || axis >= st.rank)
    return cpu_op_error(op, ZT_STATUS_INVALID_ARGUMENT, "bad scan axis");
  int64_t sstr[ZT_MAX_RANK], kept_shape[ZT_MAX_RANK], kept_sstr[ZT_MAX_RANK];
  cpu_strides(st.rank, st.shape, sstr);
  int32_t kr = 0;
  for (int32_t d = 0; d < st.rank; ++d)
    if (d != axis) {
      kept_shape[kr] = st.shape[d];
      kept_sstr[kr++] = sstr[d];
    }
  int64_t len = st.shape[axis], astr = sstr[axis];
  cpu_val_t res[16];
  const char* tys[16];
  for (int32_t i = 0; i < n; ++i) {
    zt_type_t rt;
    ZT_RETURN_IF_ERROR(cpu_value_type(mlirOperationGetResult(op, i), &rt));
    ZT_RETURN_IF_ERROR(cpu_new_buf_val(c, rt, &res[i]));
    tys[i] = cpu_elem(rt.kind);
  }
  char ivs[ZT_MAX_RANK][ZT_CPU_NAME], base[ZT_CPU_NAME], first[ZT_CPU_NAME];
  cpu_nest_begin(c, kr, kept_shape, ivs);
  cpu_linear(c, kr, ivs, kept_sstr, base);
  if (reverse && len > 1) {
    char k[ZT_CPU_NAME];
    cpu_fresh(c, first);
    cpu_line(c, "%s = arith.addi %s, %s : index", first, base,
             cpu_index(c, (len - 1) * astr, k));
  } else {
    snprintf(first, sizeof first, "%s", base);
  }
  char acc[16][ZT_CPU_NAME];
  for (int32_t i = 0; i < n; ++i) {
    cpu_read(c, src[i], first, acc[i]);
    cpu_write(c, res[i].buf, first, acc[i]);
  }
  if (len > 1) {
    char loop[ZT_CPU_NAME], k[ZT_CPU_NAME], c1[ZT_CPU_NAME], cl[ZT_CPU_NAME],
        cs[ZT_CPU_NAME], args[16][ZT_CPU_NAME];
    cpu_fresh(c, loop);
    cpu_fresh(c, k);
    cpu_index(c, 1, c1);
    cpu_index(c, len, cl);
    zt_strbuf_t line;
    zt_strbuf_init(&line);
    zt_strbuf_printf(&line, n == 1 ? "%s = " : "%s:%d = ", loop, n);
    zt_strbuf_printf(&line, "scf.for %s = %s to %s step %s iter_args(", k, c1, cl, c1);
    for (int32_t i = 0; i < n; ++i) {
      cpu_fresh(c, args[i]);
      zt_strbuf_printf(&line, "%s%s = %s", i ? ", " : "", args[i], acc[i]);
    }
    zt_strbuf_puts(&line, ") -> (");
    for (int32_t i = 0; i < n; ++i) zt_strbuf_printf(&line, "%s%s", i ? ", " : "", tys[i]);
    zt_strbuf_puts(&line, ") {");
    ZT_RETURN_IF_ERROR(finish_line(c, &line));
    ++c->indent;
    // Position along the axis: k, or len-1-k in reverse.
    char off[ZT_CPU_NAME], idx[ZT_CPU_NAME], rhs[16][ZT_CPU_NAME], out[16][ZT_CPU_NAME];
    snprintf(off, sizeof off, "%s", k);
    if (astr != 1) {
      cpu_index(c, astr, cs);
      cpu_fresh(c, off);
      cpu_line(c, "%s = arith.muli %s, %s : index", off, k, cs);
    }
    cpu_fresh(c, idx);
    cpu_line(c, "%s = arith.%s %s, %s : index", idx, reverse ? "subi" : "addi", first, off);
    for (int32_t i = 0; i < n; ++i) cpu_read(c, src[i], idx, rhs[i]);
    ZT_RETURN_IF_ERROR(cpu_inline_combiner(c, fn, n, args, rhs, out));
    for (int32_t i = 0; i < n; ++i) cpu_write(c, res[i].buf, idx, out[i]);
    zt_strbuf_init(&line);
    zt_strbuf_puts(&line, "scf.yield ");
    for (int32_t i = 0; i < n; ++i) zt_strbuf_printf(&line, "%s%s", i ? ", " : "", out[i]);
    zt_strbuf_puts(&line, " : ");
    for (int32_t i = 0; i < n; ++i) zt_strbuf_printf(&line, "%s%s", i ? ", " : "", tys[i]);
    ZT_RETURN_IF_ERROR(finish_line(c, &line));
    --c->indent;
    cpu_line(c, "}");
  }
  cpu_nest_end(c, kr);
  for (int32_t i = 0; i < n; ++i)
    ZT_RETURN_IF_ERROR(cpu_map_put(c, mlirOperationGetResult(op, i), &res[i]));
  return NULL;
}
