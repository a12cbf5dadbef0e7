// Pointers and memory in the Xe lowering. A pointer tensor is an i64 base
// address plus per-chunk element offsets (vector<16xindex>), which is what
// xegpu.load/xegpu.store gather and scatter with (offsets count elements).
// Scalar loads and stores are subgroup ops too: upstream's subgroup
// distribution cannot move ops it does not know (llvm.load/llvm.store) out
// of the region it builds, so a scalar load is a gather of one address by
// every lane, made uniform by a reduction, and a scalar store is lane 0's
// scatter.
#include <stdio.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>

#include "xe/xe_atomic.h"
#include "xe/xe_internal.h"

static const char* loc(xe_emitter_t* e) { return e->loc.data ? e->loc.data : ""; }

static void const_i64(xe_emitter_t* e, int64_t v, xe_name_t out) {
  char text[64];
  snprintf(text, sizeof text, "arith.constant %lld : i64", (long long)v);
  xe_hoist(e, text, false, out);
}

// Element offsets of an int tensor chunk as vector<16xi64> (sign-extended,
// as tile.addptr defines them).
static void to_i64(xe_emitter_t* e, const xe_val_t* o, int32_t k, xe_name_t out) {
  bool wide = o->type.kind == ZT_I64;
  if (o->layout == XE_LAYOUT_SCALAR) {
    xe_name_t x;
    if (wide) {
      memcpy(x, o->names[0], sizeof x);
    } else {
      xe_fresh(e, x);
      xe_line(e);
      zt_strbuf_printf(&e->body, "%s = arith.extsi %s : %s to i64%s\n", x,
                       o->names[0], xe_elem(o->type.kind), loc(e));
    }
    xe_fresh(e, out);
    xe_line(e);
    zt_strbuf_printf(&e->body,
                     "%s = vector.broadcast %s {layout_result_0 = " XE_LAYOUT_ATTR
                     "} : i64 to vector<16xi64>%s\n",
                     out, x, loc(e));
    return;
  }
  if (wide) {
    memcpy(out, o->names[k], XE_NAME_MAX);
    return;
  }
  xe_fresh(e, out);
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "%s = arith.extsi %s {layout_result_0 = " XE_LAYOUT_ATTR
                   "} : vector<16x%s> to vector<16xi64>%s\n",
                   out, o->names[k], xe_elem(o->type.kind), loc(e));
}

// The vector<16xindex> offsets xegpu.load/store take.
static void to_index(xe_emitter_t* e, const char* off64, xe_name_t out) {
  xe_fresh(e, out);
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "%s = arith.index_cast %s {layout_result_0 = " XE_LAYOUT_ATTR
                   "} : vector<16xi64> to vector<16xindex>%s\n",
                   out, off64, loc(e));
}

zt_status_t xe_emit_addptr(xe_emitter_t* e, MlirOperation op) {
  xe_val_t* p = xe_lookup(e, mlirOperationGetOperand(op, 0));
  xe_val_t* o = xe_lookup(e, mlirOperationGetOperand(op, 1));
  if (!p || !o) return NULL;
  int64_t size = zt_scalar_kind_bits(p->type.pointee) / 8;
  if (size < 1) size = 1;  // i1 is stored in a byte
  xe_val_t* r = xe_alloc(e, p->type);
  if (!r) return NULL;
  if (p->layout == XE_LAYOUT_SCALAR) {
    xe_name_t o64, bytes, sz;
    if (o->type.kind == ZT_I64) {
      memcpy(o64, o->names[0], sizeof o64);
    } else {
      xe_fresh(e, o64);
      xe_line(e);
      zt_strbuf_printf(&e->body, "%s = arith.extsi %s : %s to i64%s\n", o64,
                       o->names[0], xe_elem(o->type.kind), loc(e));
    }
    const_i64(e, size, sz);
    xe_fresh(e, bytes);
    xe_line(e);
    zt_strbuf_printf(&e->body, "%s = arith.muli %s, %s : i64%s\n", bytes, o64, sz,
                     loc(e));
    xe_line(e);
    zt_strbuf_printf(&e->body, "%s = arith.addi %s, %s : i64%s\n", r->names[0],
                     p->names[0], bytes, loc(e));
  } else {
    memcpy(r->base, p->base, sizeof r->base);
    xe_name_t zero;
    xe_zero_offsets64(e, zero);
    xe_name_t ix;
    for (int32_t k = 0; k < r->nchunks; ++k) {
      // A scalar offset is broadcast once for all chunks.
      if (k == 0 || o->layout != XE_LAYOUT_SCALAR) to_i64(e, o, k, ix);
      if (strcmp(p->names[k], zero) == 0) {
        memcpy(r->names[k], ix, sizeof ix);
        continue;
      }
      xe_line(e);
      zt_strbuf_printf(&e->body,
                       "%s = arith.addi %s, %s {layout_result_0 = " XE_LAYOUT_ATTR
                       "} : vector<16xi64>%s\n",
                       r->names[k], p->names[k], ix, loc(e));
    }
  }
  xe_bind(e, mlirOperationGetResult(op, 0), r);
  return NULL;
}

zt_status_t xe_emit_ptr_conv(xe_emitter_t* e, MlirOperation op, const char* name) {
  xe_val_t* s = xe_lookup(e, mlirOperationGetOperand(op, 0));
  if (!s) return NULL;
  zt_type_t t;
  ZT_RETURN_IF_ERROR(
      xe_tile_type(e, mlirValueGetType(mlirOperationGetResult(op, 0)), &t));
  MlirValue res = mlirOperationGetResult(op, 0);
  if (s->layout == XE_LAYOUT_SCALAR) {
    // Scalar pointers already are i64 addresses.
    xe_val_t* r = xe_alloc(e, t);
    if (!r) return NULL;
    memcpy(r->names[0], s->names[0], sizeof r->names[0]);
    xe_bind(e, res, r);
    return NULL;
  }
  if (strcmp(name, "ptr_cast") == 0 &&
      zt_scalar_kind_bits(s->type.pointee) == zt_scalar_kind_bits(t.pointee)) {
    xe_val_t* r = xe_alloc(e, t);
    if (!r) return NULL;
    memcpy(r->base, s->base, sizeof r->base);
    memcpy(r->names, s->names, (size_t)s->nchunks * sizeof(xe_name_t));
    xe_bind(e, res, r);
    return NULL;
  }
  if (strcmp(name, "ptr_to_int") == 0) {
    xe_val_t* r = xe_alloc(e, t);
    if (!r) return NULL;
    xe_name_t b, sz;
    xe_fresh(e, b);
    xe_line(e);
    zt_strbuf_printf(&e->body,
                     "%s = vector.broadcast %s {layout_result_0 = " XE_LAYOUT_ATTR
                     "} : i64 to vector<16xi64>%s\n",
                     b, s->base, loc(e));
    char text[160];
    snprintf(text, sizeof text,
             "arith.constant {layout_result_0 = " XE_LAYOUT_ATTR
             "} dense<%d> : vector<16xi64>",
             zt_scalar_kind_bits(s->type.pointee) < 8
                 ? 1
                 : zt_scalar_kind_bits(s->type.pointee) / 8);
    xe_hoist(e, text, true, sz);
    for (int32_t k = 0; k < r->nchunks; ++k) {
      xe_name_t m;
      const char* o = s->names[k];
      xe_fresh(e, m);
      xe_line(e);
      zt_strbuf_printf(&e->body,
                       "%s = arith.muli %s, %s {layout_result_0 = " XE_LAYOUT_ATTR
                       "} : vector<16xi64>%s\n",
                       m, o, sz, loc(e));
      xe_line(e);
      zt_strbuf_printf(&e->body,
                       "%s = arith.addi %s, %s {layout_result_0 = " XE_LAYOUT_ATTR
                       "} : vector<16xi64>%s\n",
                       r->names[k], b, m, loc(e));
    }
    xe_bind(e, res, r);
    return NULL;
  }
  return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                 "tile.%s on pointer tensors (only pointers of the form "
                 "base + offsets are supported on Xe)",
                 name);
}

static zt_status_t check_elem(xe_emitter_t* e, zt_scalar_kind_t k) {
  if (k == ZT_I1 || k == ZT_PTR)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "loads and stores of %s elements", zt_scalar_kind_name(k));
  return NULL;
}

// The mask of chunk k: the tile mask (if any) and the padding lanes.
static void chunk_mask(xe_emitter_t* e, const xe_val_t* shape, const xe_val_t* m,
                       int32_t k, xe_name_t out) {
  bool padded = shape->numel < XE_SUBGROUP;
  xe_name_t pad;
  if (padded) xe_pad_mask(e, shape->numel, pad);
  if (!m) {
    if (padded) memcpy(out, pad, XE_NAME_MAX);
    else xe_all_true(e, out);
    return;
  }
  if (!padded) {
    memcpy(out, m->names[k], XE_NAME_MAX);
    return;
  }
  xe_fresh(e, out);
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "%s = arith.andi %s, %s {layout_result_0 = " XE_LAYOUT_ATTR
                   "} : vector<16xi1>%s\n",
                   out, m->names[k], pad, loc(e));
}

static void broadcast(xe_emitter_t* e, const char* s, const char* ty, xe_name_t out) {
  xe_fresh(e, out);
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "%s = vector.broadcast %s {layout_result_0 = " XE_LAYOUT_ATTR
                   "} : %s to vector<16x%s>%s\n",
                   out, s, ty, ty, loc(e));
}

// The lane-0 mask of a scalar access, and'ed with the scalar mask m if any.
static void lane0_and(xe_emitter_t* e, const xe_val_t* m, xe_name_t out) {
  xe_name_t lane0;
  xe_lane0_mask(e, lane0);
  if (!m) {
    memcpy(out, lane0, XE_NAME_MAX);
    return;
  }
  xe_name_t mb;
  broadcast(e, m->names[0], "i1", mb);
  xe_vbinary(e, "arith.andi", mb, lane0, "i1", out);
}

zt_status_t xe_emit_load(xe_emitter_t* e, MlirOperation op) {
  intptr_t no = mlirOperationGetNumOperands(op);
  xe_val_t* p = xe_lookup(e, mlirOperationGetOperand(op, 0));
  xe_val_t* m = no > 1 ? xe_lookup(e, mlirOperationGetOperand(op, 1)) : NULL;
  xe_val_t* o = no > 2 ? xe_lookup(e, mlirOperationGetOperand(op, 2)) : NULL;
  if (e->error) return NULL;
  zt_type_t t;
  ZT_RETURN_IF_ERROR(
      xe_tile_type(e, mlirValueGetType(mlirOperationGetResult(op, 0)), &t));
  ZT_RETURN_IF_ERROR(check_elem(e, t.kind));
  const char* et = xe_elem(t.kind);
  xe_val_t* r = xe_alloc(e, t);
  if (!r) return NULL;
  if (p->layout == XE_LAYOUT_SCALAR) {
    xe_name_t zero, mask, v, raw;
    xe_zero_offsets(e, zero);
    if (m) broadcast(e, m->names[0], "i1", mask);
    else xe_all_true(e, mask);
    xe_fresh(e, v);
    xe_line(e);
    zt_strbuf_printf(&e->body,
                     "%s = xegpu.load %s[%s], %s <{layout = " XE_LAYOUT_ATTR
                     "}> : i64, vector<16xindex>, vector<16xi1> -> vector<16x%s>%s\n",
                     v, p->names[0], zero, mask, et, loc(e));
    // Every lane read the same address: any lane's value will do, and a
    // reduction is the one cross-lane op upstream distributes for us
    // (vector.extract of lane 0 crashes xegpu-subgroup-distribute in 22.1).
    xe_name_t* dst = o ? &raw : &r->names[0];
    if (o) xe_fresh(e, raw);
    xe_line(e);
    zt_strbuf_printf(&e->body, "%s = vector.reduction <%s>, %s : vector<16x%s> into %s%s\n",
                     *dst, zt_scalar_kind_is_float(t.kind) && t.kind != ZT_BF16 ? "maxnumf" : "or", v,
                     et, et, loc(e));
    if (o) {
      xe_line(e);
      zt_strbuf_printf(&e->body, "%s = arith.select %s, %s, %s : %s%s\n",
                       r->names[0], m->names[0], raw, o->names[0], et, loc(e));
    }
    xe_bind(e, mlirOperationGetResult(op, 0), r);
    return NULL;
  }
  xe_name_t other_b;
  if (o && o->layout == XE_LAYOUT_SCALAR) broadcast(e, o->names[0], et, other_b);
  for (int32_t k = 0; k < r->nchunks; ++k) {
    xe_name_t mask;
    chunk_mask(e, p, m, k, mask);
    xe_name_t* dst = &r->names[k];
    xe_name_t raw;
    if (o) {
      xe_fresh(e, raw);
      dst = &raw;
    }
    xe_name_t ix;
    to_index(e, p->names[k], ix);
    xe_line(e);
    zt_strbuf_printf(&e->body,
                     "%s = xegpu.load %s[%s], %s <{layout = " XE_LAYOUT_ATTR
                     "}> : i64, vector<16xindex>, vector<16xi1> -> vector<16x%s>%s\n",
                     *dst, p->base, ix, mask, et, loc(e));
    if (o) {
      // Masked-off lanes read nothing; `other` fills them.
      xe_line(e);
      zt_strbuf_printf(&e->body,
                       "%s = arith.select %s, %s, %s {layout_result_0 = " XE_LAYOUT_ATTR
                       "} : vector<16xi1>, vector<16x%s>%s\n",
                       r->names[k], m->names[k], raw,
                       o->layout == XE_LAYOUT_SCALAR ? other_b : o->names[k], et,
                       loc(e));
    }
  }
  xe_bind(e, mlirOperationGetResult(op, 0), r);
  return NULL;
}

zt_status_t xe_emit_store(xe_emitter_t* e, MlirOperation op) {
  intptr_t no = mlirOperationGetNumOperands(op);
  xe_val_t* p = xe_lookup(e, mlirOperationGetOperand(op, 0));
  xe_val_t* v = xe_lookup(e, mlirOperationGetOperand(op, 1));
  xe_val_t* m = no > 2 ? xe_lookup(e, mlirOperationGetOperand(op, 2)) : NULL;
  if (e->error) return NULL;
  ZT_RETURN_IF_ERROR(check_elem(e, v->type.kind));
  const char* et = xe_elem(v->type.kind);
  if (p->layout == XE_LAYOUT_SCALAR) {
    xe_name_t zero, val, mask;
    xe_zero_offsets(e, zero);
    broadcast(e, v->names[0], et, val);
    lane0_and(e, m, mask);
    // Every subgroup holds the scalar: subgroup 0 stores it.
    xe_name_t once;
    xe_once_mask(e, mask, once);
    memcpy(mask, once, sizeof mask);
    xe_line(e);
    zt_strbuf_printf(&e->body,
                     "xegpu.store %s, %s[%s], %s <{layout = " XE_LAYOUT_ATTR
                     "}> : vector<16x%s>, i64, vector<16xindex>, vector<16xi1>%s\n",
                     val, p->names[0], zero, mask, et, loc(e));
    return NULL;
  }
  xe_name_t vb;
  if (v->layout == XE_LAYOUT_SCALAR) broadcast(e, v->names[0], et, vb);
  for (int32_t k = 0; k < p->nchunks; ++k) {
    xe_name_t mask;
    chunk_mask(e, p, m, k, mask);
    if (!p->dist && e->nsg > 1) {
      // A replicated tensor: subgroup 0 stores it.
      xe_name_t once;
      xe_once_mask(e, mask, once);
      memcpy(mask, once, sizeof mask);
    }
    xe_name_t ix;
    to_index(e, p->names[k], ix);
    xe_line(e);
    zt_strbuf_printf(&e->body,
                     "xegpu.store %s, %s[%s], %s <{layout = " XE_LAYOUT_ATTR
                     "}> : vector<16x%s>, i64, vector<16xindex>, vector<16xi1>%s\n",
                     v->layout == XE_LAYOUT_SCALAR ? vb : v->names[k], p->base,
                     ix, mask, et, loc(e));
  }
  return NULL;
}

// --- Atomics.
//
// Upstream 22.1.8 cannot distribute xegpu.atomic_rmw (it needs scattered
// tensor descriptors, which xegpu-subgroup-distribute does not handle). So
// an atomic is emitted as a *marked* scatter, which distributes like any
// store, and its result as a marked gather at the same place; after
// distribution, when each lane holds one element, xe_atomic.c turns each
// marked pair into a call of a per-lane atomic (LLVM atomicrmw / cmpxchg).
// The marks: zt.atomic = "<kind>:<sem>:<scope>" and zt.atomic_id on the
// store of the value, zt.atomic_cmp on the store of atomic_cas's compare
// value, zt.atomic_result on the gather that stands for the old values.

static zt_status_t atomic_kind_ok(xe_emitter_t* e, zt_scalar_kind_t k, const char* kind) {
  bool fl = k == ZT_F32;
  bool in = k == ZT_I32 || k == ZT_I64;
  if (!fl && !in)
    return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                   "atomics on %s elements on Xe (i32, i64 and f32 are supported)",
                   zt_scalar_kind_name(k));
  if (fl && strcmp(kind, "add") && strcmp(kind, "max") && strcmp(kind, "min") &&
      strcmp(kind, "xchg") && strcmp(kind, "cas"))
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "atomic %s on f32", kind);
  return NULL;
}

// A scatter carrying the discardable attributes `mark`.
static void marked_store(xe_emitter_t* e, const char* val, const char* base, const char* ix,
                         const char* mask, const char* mark, const char* et) {
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "xegpu.store %s, %s[%s], %s <{layout = " XE_LAYOUT_ATTR
                   "}> {%s} : vector<16x%s>, i64, vector<16xindex>, vector<16xi1>%s\n",
                   val, base, ix, mask, mark, et, loc(e));
}

zt_status_t xe_emit_atomic(xe_emitter_t* e, MlirOperation op) {
  MlirStringRef opname = mlirIdentifierStr(mlirOperationGetName(op));
  bool cas = opname.length == strlen("tile.atomic_cas") &&
             memcmp(opname.data, "tile.atomic_cas", opname.length) == 0;
  intptr_t no = mlirOperationGetNumOperands(op);
  xe_val_t* p = xe_lookup(e, mlirOperationGetOperand(op, 0));
  xe_val_t* c = cas ? xe_lookup(e, mlirOperationGetOperand(op, 1)) : NULL;
  xe_val_t* v = xe_lookup(e, mlirOperationGetOperand(op, cas ? 2 : 1));
  xe_val_t* m = !cas && no > 2 ? xe_lookup(e, mlirOperationGetOperand(op, 2)) : NULL;
  if (e->error) return NULL;
  char kind[16], sem[16], scope[16];
  xe_atomic_attrs(op, kind, sem, scope);
  zt_scalar_kind_t k = v->type.kind;
  ZT_RETURN_IF_ERROR(atomic_kind_ok(e, k, kind));
  const char* et = xe_elem(k);
  MlirValue res = mlirOperationGetResult(op, 0);
  bool used = !mlirOpOperandIsNull(mlirValueGetFirstUse(res));
  bool scalar = p->layout == XE_LAYOUT_SCALAR;
  bool replicated = !scalar && !p->dist && e->nsg > 1;
  if (e->nsg > 1 && (scalar || replicated)) {
    // A scalar atomic (and one on a tensor every subgroup holds) happens
    // once per program, in subgroup 0, after everything before it (Triton's
    // program is one thread of control): a lock's release must follow every
    // subgroup's stores under the lock. The barrier's fence covers global
    // memory too (XeVM: workgroup and cross-workgroup semantics). Scalar
    // control flow is uniform across the subgroups, so all of them reach it.
    xe_line(e);
    zt_strbuf_printf(&e->body, "gpu.barrier%s\n", loc(e));
  }
  e->used_atomics = true;
  int id = e->next_atomic++;
  zt_type_t rt;
  ZT_RETURN_IF_ERROR(xe_tile_type(e, mlirValueGetType(res), &rt));
  xe_val_t* r = xe_alloc(e, rt);
  if (!r) return NULL;
  int32_t nch = scalar ? 1 : p->nchunks;
  xe_name_t vb = {0}, cb = {0};
  if (v->layout == XE_LAYOUT_SCALAR) broadcast(e, v->names[0], et, vb);
  if (c && c->layout == XE_LAYOUT_SCALAR) broadcast(e, c->names[0], et, cb);
  for (int32_t ch = 0; ch < nch; ++ch) {
    xe_name_t mask, ix;
    if (scalar) {
      // Lane 0 of subgroup 0 does it, as a scalar store would.
      lane0_and(e, m, mask);
      xe_zero_offsets(e, ix);
    } else {
      chunk_mask(e, p, m, ch, mask);
      to_index(e, p->names[ch], ix);
    }
    if (scalar || (!p->dist && e->nsg > 1)) {
      xe_name_t once;
      xe_once_mask(e, mask, once);
      memcpy(mask, once, sizeof mask);
    }
    const char* base = scalar ? p->names[0] : p->base;
    const char* val = v->layout == XE_LAYOUT_SCALAR ? vb : v->names[ch];
    int sid = id * 1024 + ch;
    char mark[96];
    if (cas) {
      snprintf(mark, sizeof mark, "zt.atomic_cmp = %d : i64", sid);
      marked_store(e, c->layout == XE_LAYOUT_SCALAR ? cb : c->names[ch], base, ix, mask, mark,
                   et);
    }
    snprintf(mark, sizeof mark, "zt.atomic = \"%s:%s:%s\", zt.atomic_id = %d : i64", kind, sem,
             scope, sid);
    marked_store(e, val, base, ix, mask, mark, et);
    if (!used) continue;
    xe_name_t old;
    xe_fresh(e, old);
    xe_line(e);
    zt_strbuf_printf(&e->body,
                     "%s = xegpu.load %s[%s], %s <{layout = " XE_LAYOUT_ATTR
                     "}> {zt.atomic_result = %d : i64} : i64, vector<16xindex>, vector<16xi1> "
                     "-> vector<16x%s>%s\n",
                     old, base, ix, mask, sid, et, loc(e));
    if (!scalar) {
      if (replicated) {
        // Subgroup 0's old values, to every subgroup through SLM.
        xe_name_t got;
        xe_slm_from_sg0(e, k, old, ch, nch, got);
        memcpy(old, got, sizeof old);
      }
      memcpy(r->names[ch], old, sizeof old);
      continue;
    }
    // Only lane 0 holds the old value (the others hold zero bits): an `or`
    // of the bits makes it uniform.
    const char* it = k == ZT_F32 ? "i32" : et;
    xe_name_t bits, red;
    if (k == ZT_F32) {
      xe_fresh(e, bits);
      xe_line(e);
      zt_strbuf_printf(&e->body,
                       "%s = arith.bitcast %s {layout_result_0 = " XE_LAYOUT_ATTR
                       "} : vector<16xf32> to vector<16xi32>%s\n",
                       bits, old, loc(e));
    } else {
      memcpy(bits, old, sizeof bits);
    }
    bool across = e->nsg > 1;
    xe_name_t* dst = k == ZT_F32 || across ? &red : &r->names[0];
    if (dst == &red) xe_fresh(e, red);
    xe_line(e);
    zt_strbuf_printf(&e->body, "%s = vector.reduction <or>, %s : vector<16x%s> into %s%s\n", *dst,
                     bits, it, it, loc(e));
    if (across) {
      // Subgroup 0 did it; the others hold zero bits: an `or` across the
      // subgroups (through SLM, barriers around) gives every subgroup the
      // old value, so a spin loop on it runs alike in all of them.
      xe_name_t all;
      xe_cross_sg_reduce(e, "or", "0", k == ZT_F32 ? ZT_I32 : k, red, all);
      if (k == ZT_F32) memcpy(red, all, sizeof red);
      else memcpy(r->names[0], all, sizeof all);
    }
    if (k == ZT_F32) {
      xe_line(e);
      zt_strbuf_printf(&e->body, "%s = arith.bitcast %s : i32 to f32%s\n", r->names[0], red,
                       loc(e));
    }
  }
  xe_bind(e, res, r);
  return NULL;
}

zt_status_t xe_emit_atomic_2d(xe_emitter_t* e, MlirOperation op) {
  MlirStringRef opname = mlirIdentifierStr(mlirOperationGetName(op));
  bool cas = opname.length == strlen("tile.atomic_cas") &&
             memcmp(opname.data, "tile.atomic_cas", opname.length) == 0;
  MlirValue res = mlirOperationGetResult(op, 0);
  bool used = !mlirOpOperandIsNull(mlirValueGetFirstUse(res));
  intptr_t no = mlirOperationGetNumOperands(op);
  // atomic_rmw: (ptr, val[, mask]); atomic_cas: (ptr, cmp, val), no mask.
  MlirValue val = mlirOperationGetOperand(op, cas ? 2 : 1);
  MlirValue cmp = cas ? mlirOperationGetOperand(op, 1) : (MlirValue){NULL};
  MlirValue mask = !cas && no > 2 ? mlirOperationGetOperand(op, 2) : (MlirValue){NULL};
  zt_type_t t;
  ZT_RETURN_IF_ERROR(xe_tile_type(e, mlirValueGetType(val), &t));
  char kind[16], sem[16], scope[16], spec[64];
  xe_atomic_attrs(op, kind, sem, scope);
  ZT_RETURN_IF_ERROR(atomic_kind_ok(e, t.kind, kind));
  // Values and pointers on the same 2-D layout; the per-row scatters do
  // the rest (xe_scatter_2d), one marked atomic per row.
  e->used_atomics = true;
  int id = e->next_atomic++;
  snprintf(spec, sizeof spec, "%s:%s:%s", kind, sem, scope);
  xe_val_t* old = NULL;
  if (used) {
    zt_type_t rt;
    ZT_RETURN_IF_ERROR(xe_tile_type(e, mlirValueGetType(res), &rt));
    old = xe_alloc_for(e, res, rt, XE_ROLE_C);
    if (!old) return NULL;
  }
  zt_status_t s = xe_scatter_2d(e, mlirOperationGetOperand(op, 0), val, mask, cmp, spec, id, old);
  if (!old) return s;
  if (s || e->error) {
    xe_free_val(old);
    return s;
  }
  xe_bind(e, res, old);
  return NULL;
}
