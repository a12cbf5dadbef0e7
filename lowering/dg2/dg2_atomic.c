// Atomics on dg2 (tile.atomic_rmw, tile.atomic_cas), with the meaning the
// Xe lowering gives them (xe_memory.c, xe_atomic.c):
//   - each element's atomic is one call of the helper xe_atomic_helper
//     writes (atomicrmw / cmpxchg under a mask; f32 add/max/min as
//     compare-and-swap loops), the same helper the Xe path calls;
//   - a scalar atomic happens once per program: Triton's program is one
//     thread of control, and here it is a workgroup of num_warps subgroups.
//     Work-item 0 does it after a barrier (so it follows every work-item's
//     earlier stores, as a lock's release must), and its old value reaches
//     every work-item through local memory after a second barrier (so a
//     spin loop `while atomic_cas(lock, 0, 1) == 1` runs alike in all of
//     them, and every access after a successful acquire follows it);
//   - a tensor atomic runs in the blocked layout, one call per element and
//     work-item; where that layout replicates the tensor (fewer elements
//     than work-items) only the first holder of each element does it, and
//     the old values reach the others through local memory.
// The barriers fence global memory too (barrier(CLK_LOCAL_MEM_FENCE |
// CLK_GLOBAL_MEM_FENCE)). Scalar control flow is uniform across the
// workgroup, so every work-item reaches them.
#include <stdio.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>

#include "dg2_internal.h"
#include "xe/xe_atomic.h"

// barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE).
static void global_barrier(dg2_t* c) {
  char three[DG2_NAME];
  dg2_const(c, "i32", 3, three);
  dg2_declare(c, "_Z7barrierj", "(i32)");
  dg2_line(c, "llvm.call @_Z7barrierj(%s) : (i32) -> ()", three);
}

// The helper's name; its definition is added to the module once.
static zt_status_t helper(dg2_t* c, const char* kind, const char* ty, const char* sem,
                          const char* scope, char out[80]) {
  snprintf(out, 80, "zt_atomic_%s_%s_%s_%s", kind, ty, sem, scope);
  for (int32_t i = 0; i < c->num_declared; ++i)
    if (strcmp(c->declared[i], out) == 0) return NULL;
  if (c->num_declared >= (int32_t)(sizeof c->declared / sizeof c->declared[0]))
    return zt_make_status(ZT_STATUS_UNSUPPORTED, "dg2: too many kinds of atomics in one kernel");
  snprintf(c->declared[c->num_declared++], sizeof c->declared[0], "%s", out);
  return xe_atomic_helper(&c->decls, out, kind, ty, sem, scope, true);
}

// old = helper(addr, [cmp,] val, mask).
static void call(dg2_t* c, const char* h, const char* ty, const char* addr, const char* cmp,
                 const char* val, const char* mask, char old[DG2_NAME]) {
  dg2_fresh(c, old);
  if (cmp)
    dg2_line(c, "%s = llvm.call @%s(%s, %s, %s, %s) : (i64, %s, %s, i1) -> %s", old, h, addr, cmp,
             val, mask, ty, ty, ty);
  else
    dg2_line(c, "%s = llvm.call @%s(%s, %s, %s) : (i64, %s, i1) -> %s", old, h, addr, val, mask,
             ty, ty);
}

static void and_i1(dg2_t* c, const char* a, const char* b, char out[DG2_NAME]) {
  dg2_fresh(c, out);
  dg2_line(c, "%s = arith.andi %s, %s : i1", out, a, b);
}

zt_status_t dg2_emit_atomic(dg2_t* c, MlirOperation op) {
  bool cas = dg2_op_is(op, "tile.atomic_cas");
  intptr_t no = mlirOperationGetNumOperands(op);
  char kind[16], sem[16], scope[16];
  xe_atomic_attrs(op, kind, sem, scope);
  MlirValue res = mlirOperationGetResult(op, 0);
  zt_type_t rt;
  ZT_RETURN_IF_ERROR(dg2_value_type(res, &rt));
  zt_scalar_kind_t k = rt.kind;
  if (k != ZT_I32 && k != ZT_I64 && k != ZT_F32)
    return dg2_op_error(op, ZT_STATUS_UNSUPPORTED,
                        "atomics on %s elements on dg2 (i32, i64 and f32 are supported)",
                        zt_scalar_kind_name(k));
  if (k == ZT_F32 && strcmp(kind, "add") && strcmp(kind, "max") && strcmp(kind, "min") &&
      strcmp(kind, "xchg") && strcmp(kind, "cas"))
    return dg2_op_error(op, ZT_STATUS_UNSUPPORTED, "atomic %s on f32", kind);
  const char* ty = dg2_reg(k);
  char h[80];
  zt_status_t s = helper(c, kind, ty, sem, scope, h);
  if (s) {
    zt_status_t e = dg2_op_error(op, ZT_STATUS_UNSUPPORTED, "%s", zt_status_message(s));
    zt_status_free(s);
    return e;
  }
  bool used = !mlirOpOperandIsNull(mlirValueGetFirstUse(res));
  // Operands: ptr, value, [mask] (rmw) or ptr, cmp, value (cas).
  MlirValue ops[3];
  int nops = (int)(no < 3 ? no : 3);
  for (int i = 0; i < nops; ++i) ops[i] = mlirOperationGetOperand(op, i);
  int vi = cas ? 2 : 1, ci = cas ? 1 : -1, mi = !cas && no > 2 ? 2 : -1;

  if (rt.rank == 0) {
    const dg2_val_t* v[3] = {NULL, NULL, NULL};
    for (int i = 0; i < nops; ++i) ZT_RETURN_IF_ERROR(dg2_get_checked(c, ops[i], &v[i]));
    for (int i = 0; i < nops; ++i)
      if (v[i]->kind != DV_SCALAR)
        return dg2_op_error(op, ZT_STATUS_INTERNAL, "dg2: scalar atomic with a tensor operand");
    global_barrier(c);
    char own[DG2_NAME], mask[DG2_NAME], old[DG2_NAME];
    dg2_fresh(c, own);
    dg2_line(c, "%s = arith.cmpi eq, %%tid, %%c0_i32 : i32", own);
    if (mi >= 0) and_i1(c, own, v[mi]->name, mask);
    else snprintf(mask, DG2_NAME, "%s", own);
    call(c, h, ty, v[0]->name, ci >= 0 ? v[ci]->name : NULL, v[vi]->name, mask, old);
    dg2_val_t r = {.kind = DV_SCALAR, .type = rt};
    if (!used) {
      snprintf(r.name, DG2_NAME, "%s", old);
      return dg2_put(c, res, &r);
    }
    // Work-item 0's old value to every work-item (slot 0 of local memory;
    // every writer of local memory starts with a barrier, so the slot
    // is not overwritten before all have read it).
    zt_type_t one = {.rank = 0, .kind = k};
    char coords[ZT_MAX_RANK][DG2_NAME];
    snprintf(coords[0], DG2_NAME, "%%c0_i32");
    dg2_need_smem(c, zt_tile_kind_bytes(k));
    dg2_line(c, "scf.if %s {", own);
    c->indent++;
    dg2_smem_store_elem(c, &one, coords, old);
    c->indent--;
    dg2_line(c, "}");
    global_barrier(c);
    dg2_smem_load_elem(c, &one, coords, r.name);
    return dg2_put(c, res, &r);
  }

  int32_t l;
  ZT_RETURN_IF_ERROR(dg2_blocked(c, rt.rank, rt.shape, &l));
  dg2_val_t in[3];
  for (int i = 0; i < nops; ++i) {
    const dg2_val_t* x;
    ZT_RETURN_IF_ERROR(dg2_get_checked(c, ops[i], &x));
    if (x->kind == DV_DIST && x->layout != l) ZT_RETURN_IF_ERROR(dg2_to_layout(c, x, l, &in[i]));
    else in[i] = *x;
  }
  int32_t e = c->layouts[l].e;
  int64_t holders = zt_type_numel(rt) / e;  // work-items holding distinct elements
  bool replicated = holders < c->threads;
  char own[DG2_NAME] = "";
  if (replicated) {
    char p[DG2_NAME];
    dg2_const(c, "i32", holders, p);
    dg2_fresh(c, own);
    dg2_line(c, "%s = arith.cmpi ult, %%tid, %s : i32", own, p);
    global_barrier(c);
  }
  dg2_val_t r = {.kind = DV_DIST, .type = rt, .layout = l};
  r.el = dg2_alloc_names(c, e);
  if (!r.el) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "dg2 values");
  char tru[DG2_NAME];
  dg2_const(c, "i1", 1, tru);
  for (int32_t j = 0; j < e; ++j) {
    char a[DG2_NAME], v[DG2_NAME], cm[DG2_NAME], m[DG2_NAME];
    ZT_RETURN_IF_ERROR(dg2_elem(c, &in[0], l, j, a));
    ZT_RETURN_IF_ERROR(dg2_elem(c, &in[vi], l, j, v));
    if (ci >= 0) ZT_RETURN_IF_ERROR(dg2_elem(c, &in[ci], l, j, cm));
    if (mi >= 0) {
      ZT_RETURN_IF_ERROR(dg2_elem(c, &in[mi], l, j, m));
      if (replicated) {
        char t[DG2_NAME];
        and_i1(c, m, own, t);
        snprintf(m, DG2_NAME, "%s", t);
      }
    } else {
      snprintf(m, DG2_NAME, "%s", replicated ? own : tru);
    }
    call(c, h, ty, a, ci >= 0 ? cm : NULL, v, m, r.el[j]);
  }
  if (used && replicated) {
    // The holders' old values to the replicas, through local memory.
    dg2_need_smem(c, zt_type_numel(rt) * zt_tile_kind_bytes(k));
    global_barrier(c);
    dg2_line(c, "scf.if %s {", own);
    c->indent++;
    for (int32_t j = 0; j < e; ++j) {
      char coords[ZT_MAX_RANK][DG2_NAME];
      dg2_coords(c, l, j, coords);
      dg2_smem_store_elem(c, &rt, coords, r.el[j]);
    }
    c->indent--;
    dg2_line(c, "}");
    global_barrier(c);
    for (int32_t j = 0; j < e; ++j) {
      char coords[ZT_MAX_RANK][DG2_NAME];
      dg2_coords(c, l, j, coords);
      dg2_smem_load_elem(c, &rt, coords, r.el[j]);
    }
  }
  return dg2_put(c, res, &r);
}
