// Value records of the Xe lowering: the map from tile values to the SSA
// names that hold them, fresh names, hoisted constants, error statuses.
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinTypes.h>

#include "xe/xe_internal.h"

void xe_emitter_init(xe_emitter_t* e, zt_lower_ctx_t* lc) {
  memset(e, 0, sizeof *e);
  e->lc = lc;
  e->target = xe_target_find(lc->options->target);
  e->lanes = xe_emit_lanes(e->target, lc->kernel);
  zt_strbuf_init(&e->pre);
  zt_strbuf_init(&e->body);
  zt_strbuf_init(&e->loc);
  zt_strbuf_init(&e->locs);
  const char* plain = getenv("ZETILE_XE_LOC_ALIAS");
  e->loc_plain = plain && strcmp(plain, "0") == 0;
  e->indent = 2;
}

void xe_emitter_deinit(xe_emitter_t* e) {
  for (size_t i = 0; i < e->cap; ++i)
    if (e->keys[i]) xe_free_val(e->vals[i]);
  free(e->keys);
  free(e->vals);
  free(e->data_vals);
  free(e->scope_parent);
  xe_wide_free(e);
  xe_assign_free(e->layouts);
  for (int i = 0; i < e->num_consts; ++i) free(e->const_text[i]);
  free(e->const_text);
  free(e->const_name);
  zt_strbuf_deinit(&e->pre);
  zt_strbuf_deinit(&e->body);
  zt_strbuf_deinit(&e->loc);
  zt_strbuf_deinit(&e->locs);
  free(e->loc_keys);
  free(e->loc_ids);
  zt_status_free(e->error);
  e->error = NULL;
  xe_matrix_cache_clear(e);
  for (int i = 0; i < e->nwholes; ++i) xe_free_val(e->whole_vals[i]);
  e->nwholes = 0;
}

static void append_cb(MlirStringRef s, void* user) {
  zt_strbuf_append((zt_strbuf_t*)user, s.data, s.length);
}

static bool format_loc(MlirLocation loc, zt_strbuf_t* sb, int depth) {
  if (mlirLocationIsNull(loc) || depth > 8) return false;
  if (mlirLocationIsAFileLineColRange(loc)) {
    MlirStringRef fs =
        mlirIdentifierStr(mlirLocationFileLineColRangeGetFilename(loc));
    zt_strbuf_append(sb, fs.data, fs.length);
    zt_strbuf_printf(sb, ":%d:%d", mlirLocationFileLineColRangeGetStartLine(loc),
                     mlirLocationFileLineColRangeGetStartColumn(loc));
    return true;
  }
  if (mlirLocationIsAName(loc))
    return format_loc(mlirLocationNameGetChildLoc(loc), sb, depth + 1);
  if (mlirLocationIsACallSite(loc))
    return format_loc(mlirLocationCallSiteGetCallee(loc), sb, depth + 1);
  if (mlirLocationIsAFused(loc)) {
    intptr_t n = mlirLocationFusedGetNumLocations(loc);
    if (n > 0 && n <= 16) {
      MlirLocation locs[16];
      mlirLocationFusedGetLocations(loc, locs);
      for (intptr_t i = 0; i < n; ++i)
        if (format_loc(locs[i], sb, depth + 1)) return true;
    }
  }
  return false;
}

void xe_format_loc(MlirLocation loc, zt_strbuf_t* sb) {
  if (!format_loc(loc, sb, 0)) zt_strbuf_puts(sb, "?");
}

zt_status_t xe_fail(xe_emitter_t* e, zt_status_code_t code, const char* fmt, ...) {
  zt_strbuf_t sb;
  zt_strbuf_init(&sb);
  if (!mlirOperationIsNull(e->cur)) {
    xe_format_loc(mlirOperationGetLocation(e->cur), &sb);
    MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(e->cur));
    zt_strbuf_printf(&sb, ": %.*s: ", (int)n.length, n.data);
  }
  zt_strbuf_puts(&sb, "Xe lowering (");
  zt_strbuf_puts(&sb, e->lc->options->target ? e->lc->options->target : "xe");
  zt_strbuf_puts(&sb, "): ");
  va_list ap;
  va_start(ap, fmt);
  zt_strbuf_vprintf(&sb, fmt, ap);
  va_end(ap);
  zt_status_t s = zt_make_status(code, "%s", sb.failed ? fmt : sb.data);
  zt_strbuf_deinit(&sb);
  return s;
}

static zt_status_t scalar_kind(xe_emitter_t* e, MlirType t, zt_type_t* out) {
  out->pointee = ZT_I8;
  if (mlirTypeIsAInteger(t)) {
    switch (mlirIntegerTypeGetWidth(t)) {
      case 1: out->kind = ZT_I1; return NULL;
      case 8: out->kind = ZT_I8; return NULL;
      case 16: out->kind = ZT_I16; return NULL;
      case 32: out->kind = ZT_I32; return NULL;
      case 64: out->kind = ZT_I64; return NULL;
      default: break;
    }
  } else if (mlirTypeIsAF16(t)) {
    out->kind = ZT_F16;
    return NULL;
  } else if (mlirTypeIsAF32(t)) {
    out->kind = ZT_F32;
    return NULL;
  } else if (mlirTypeIsAF64(t)) {
    out->kind = ZT_F64;
    return NULL;
  }
  zt_strbuf_t sb;
  zt_strbuf_init(&sb);
  mlirTypePrint(t, append_cb, &sb);
  const char* s = sb.data ? sb.data : "?";
  zt_status_t st = NULL;
  const char* pfx = "!tile.ptr<";
  size_t pl = strlen(pfx);
  if (mlirTypeIsABF16(t)) {
    // The SPIR-V backend rejects bf16 arithmetic without SPV_KHR_bfloat16
    // and IGC 2022 would mistake it for half (XEGPU_NOTES.md).
    st = xe_fail(e, ZT_STATUS_UNSUPPORTED,
                 "bf16 values are not supported on Xe yet (convert to f32 "
                 "through integer bits in the front end)");
  } else if (sb.size > pl + 1 && strncmp(s, pfx, pl) == 0 &&
             s[sb.size - 1] == '>' &&
             zt_scalar_kind_parse(s + pl, sb.size - pl - 1, &out->pointee) &&
             out->pointee != ZT_PTR) {
    out->kind = ZT_PTR;
  } else {
    st = xe_fail(e, ZT_STATUS_UNSUPPORTED, "element type %s", s);
  }
  zt_strbuf_deinit(&sb);
  return st;
}

zt_status_t xe_tile_type(xe_emitter_t* e, MlirType t, zt_type_t* out) {
  memset(out, 0, sizeof *out);
  MlirType elem = t;
  if (mlirTypeIsARankedTensor(t)) {
    int64_t rank = mlirShapedTypeGetRank(t);
    if (rank != 1 && rank != 2)
      return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                     "%lld-D tensors are not supported on Xe yet (1-D and 2-D only)",
                     (long long)rank);
    out->rank = (int32_t)rank;
    for (int64_t d = 0; d < rank; ++d) {
      out->shape[d] = mlirShapedTypeGetDimSize(t, d);
      if (out->shape[d] <= 0 || (out->shape[d] & (out->shape[d] - 1)))
        return xe_fail(e, ZT_STATUS_UNSUPPORTED,
                       "tensor dimension of %lld elements (powers of two only)",
                       (long long)out->shape[d]);
    }
    elem = mlirShapedTypeGetElementType(t);
    if (rank == 2 && mlirTypeIsABF16(elem)) {
      // 2-D bf16 tiles: block loads/stores and DPAS operands (xe_matrix.c).
      out->kind = ZT_BF16;
      out->pointee = ZT_I8;
      return NULL;
    }
  } else if (mlirTypeIsATensor(t) || mlirTypeIsAVector(t)) {
    return xe_fail(e, ZT_STATUS_UNSUPPORTED, "unranked or vector type");
  }
  if (mlirTypeIsABF16(elem)) {
    // bf16 scalars and 1-D tensors travel as i16 bits (xe_elem); arithmetic
    // on them runs in f32 (xe_emit.c).
    out->kind = ZT_BF16;
    return NULL;
  }
  return scalar_kind(e, elem, out);
}

void xe_fresh(xe_emitter_t* e, xe_name_t out) {
  snprintf(out, XE_NAME_MAX, "%%v%d", e->next_id++);
}

const char* xe_layout_attr(const xe_val_t* v) {
  if (v->layout == XE_LAYOUT_BLOCK2D && v->b16) return "#zt_a";
  if (v->layout == XE_LAYOUT_BLOCK2D && v->type.kind == ZT_I8 && v->role != XE_ROLE_C)
    return v->role == XE_ROLE_B ? "#zt_b8" : "#zt_a8";
  // fp32 B blocks load without VNNI (xe_dot_f32.c makes the bf16 pieces).
  if (v->layout == XE_LAYOUT_BLOCK2D)
    return v->role == XE_ROLE_B && v->type.kind != ZT_F32 ? "#zt_b" : "#zt_a";
  return XE_LAYOUT_ATTR;
}

// Per-subgroup geometry of a 2-D tile of the given role.
static bool block_geometry(xe_emitter_t* e, xe_val_t* v, int role) {
  int64_t r = v->type.shape[0], c = v->type.shape[1];
  int sm = e->sg_m > 0 ? e->sg_m : 1, sn = e->sg_n > 0 ? e->sg_n : 1;
  // XE_ROLE_BW: role B places of a 16-bit dot, one element per slot.
  bool i8 = v->type.kind == ZT_I8;
  v->b16 = role == XE_ROLE_BW || (role == XE_ROLE_AW && i8);
  if (role == XE_ROLE_BW) role = XE_ROLE_B;
  if (role == XE_ROLE_AW) role = XE_ROLE_A;
  v->role = role;
  // DPAS operands: fp16/bf16 A 8x16, B 16x16 (VNNI pairs); int8 A 8x32,
  // B 32x16 (VNNI quads); accumulators 8x16.
  v->br = role == XE_ROLE_B ? (i8 && !v->b16 ? 32 : 16) : 8;
  // Tiles of 1, 2 or 4 rows (no dot takes them: emit_dot checks) use blocks
  // of that many rows.
  if ((role == XE_ROLE_C || role == XE_ROLE_A) && r < 8 && (r == 1 || r == 2 || r == 4) && sm == 1)
    v->br = (int32_t)r;
  v->bc = role == XE_ROLE_A && i8 && !v->b16 ? 32 : 16;
  v->tr = (int32_t)(role == XE_ROLE_B ? r : r / sm);
  v->tc = (int32_t)(role == XE_ROLE_A ? c : c / sn);
  // Fewer 16-column blocks than grid columns: each grid column a copy.
  v->col_rep = false;
  if (role == XE_ROLE_B && sn > 1 && c % 16 == 0 && c < (int64_t)sn * 16 && !i8) {
    v->tc = (int32_t)c;
    v->col_rep = true;
  }
  // Narrow tiles (see xe_val_t.narrow), in one subgroup.
  if (role == XE_ROLE_C && sm == 1 && sn == 1 && (c == 2 || c == 4 || c == 8) && !i8) {
    v->narrow = true;
    v->br = (int32_t)c;
    v->nbr = (int32_t)((r + 15) / 16);
    v->nbc = 1;
    v->nchunks = v->nbr;
    return true;
  }
  if (v->tr < v->br || v->tc < v->bc || v->tr % v->br || v->tc % v->bc) return false;
  if (role != XE_ROLE_B && r % sm) return false;
  if (role != XE_ROLE_A && c % sn) return false;
  v->nbr = v->tr / v->br;
  v->nbc = v->tc / v->bc;
  v->nchunks = v->nbr * v->nbc;
  return true;
}

xe_val_t* xe_alloc(xe_emitter_t* e, zt_type_t t) { return xe_alloc_role(e, t, XE_ROLE_C); }

bool xe_is_data(const xe_emitter_t* e, MlirValue v) {
  for (int i = 0; i < e->ndata; ++i)
    if (e->data_vals[i] == v.ptr) return true;
  return false;
}

bool xe_mark_data(xe_emitter_t* e, MlirValue v) {
  if (xe_is_data(e, v)) return false;
  if (e->ndata == e->cap_data) {
    int nc = e->cap_data ? 2 * e->cap_data : 32;
    const void** nv = realloc(e->data_vals, (size_t)nc * sizeof *nv);
    if (!nv) return false;
    e->data_vals = nv;
    e->cap_data = nc;
  }
  e->data_vals[e->ndata++] = v.ptr;
  return true;
}

static xe_val_t* alloc_impl(xe_emitter_t* e, zt_type_t t, int role, bool data);

xe_val_t* xe_alloc_role(xe_emitter_t* e, zt_type_t t, int role) {
  return alloc_impl(e, t, role, false);
}

xe_val_t* xe_alloc_blocks(xe_emitter_t* e, zt_type_t t, int role) {
  return alloc_impl(e, t, role, t.rank == 2);
}

xe_val_t* xe_alloc_for(xe_emitter_t* e, MlirValue v, zt_type_t t, int role) {
  return alloc_impl(e, t, role, t.rank == 2 && xe_is_data(e, v));
}

static xe_val_t* alloc_impl(xe_emitter_t* e, zt_type_t t, int role, bool data) {
  xe_val_t* v = calloc(1, sizeof *v);
  if (v && t.rank == 2) {
    v->type = t;
    v->numel = t.shape[0] * t.shape[1];
    v->nchunks = 1;
    if (!data && (t.kind == ZT_I1 || t.kind == ZT_PTR || zt_scalar_kind_is_int(t.kind))) {
      v->layout = XE_LAYOUT_LAZY;
    } else {
      v->layout = XE_LAYOUT_BLOCK2D;
      // A tile too narrow for the kernel's grid (64x32 over 1x4 subgroups:
      // 8 columns each) is held like a dot's A operand instead: rows split
      // over the grid's rows, every column in each subgroup of a grid row
      // (replicated, as A blocks are). A dot reading it takes the blocks as
      // they are or through shared local memory (xe_convert.c).
      bool ok = block_geometry(e, v, role);
      if (!ok && role == XE_ROLE_C && t.kind != ZT_I8 && e->sg_n > 1) {
        xe_val_t w = *v;
        ok = block_geometry(e, &w, XE_ROLE_A);
        if (ok) *v = w;
      }
      if (!ok) {
        free(v);
        bool narrow = (t.shape[1] == 2 || t.shape[1] == 4 || t.shape[1] == 8) &&
                      role == XE_ROLE_C && t.kind != ZT_I8 && e->sg_m * e->sg_n > 1;
        if (!e->error && narrow)
          e->error = xe_fail(e, ZT_STATUS_UNSUPPORTED,
                             "2-D tile %lldx%lld: tiles of 2, 4 or 8 columns sit in one "
                             "subgroup on Xe, and num_warps asks for %d (use num_warps=1)",
                             (long long)t.shape[0], (long long)t.shape[1], e->sg_m * e->sg_n);
        if (!e->error)
          e->error = xe_fail(e, ZT_STATUS_UNSUPPORTED,
                             "2-D tile %lldx%lld does not split into %s blocks "
                             "over the %dx%d subgroup grid",
                             (long long)t.shape[0], (long long)t.shape[1],
                             t.kind == ZT_I8 ? "8x32 (A) / 32x16 (B) int8" : "8x16",
                             e->sg_m, e->sg_n);
        return NULL;
      }
    }
    v->names = calloc((size_t)v->nchunks, sizeof(xe_name_t));
    if (!v->names) {
      free(v);
      v = NULL;
    }
  } else if (v) {
    v->type = t;
    v->layout = t.rank == 0 ? XE_LAYOUT_SCALAR : XE_LAYOUT_ROW16;
    v->numel = t.rank == 0 ? 1 : t.shape[0];
    v->nchunks =
        t.rank == 0 ? 1 : (int32_t)((v->numel + XE_SUBGROUP - 1) / XE_SUBGROUP);
    if (t.rank == 1 && e->nsg > 1 && v->nchunks >= e->nsg) {
      v->dist = true;
      v->nchunks /= e->nsg;
    }
    v->names = calloc((size_t)v->nchunks, sizeof(xe_name_t));
  }
  if (!v || !v->names) {
    if (v) free(v);
    if (!e->error) e->error = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
    return NULL;
  }
  int id = e->next_id++;
  if (v->layout == XE_LAYOUT_LAZY) {
    // A fresh lazy value: no uniform offset yet.
    xe_hoist(e, "arith.constant 0 : i64", false, v->names[0]);
    return v;
  }
  for (int32_t k = 0; k < v->nchunks; ++k)
    snprintf(v->names[k], XE_NAME_MAX, v->nchunks == 1 ? "%%v%d" : "%%v%d_%d", id, k);
  if (t.kind == ZT_PTR && t.rank == 1) snprintf(v->base, XE_NAME_MAX, "%%v%d_b", id);
  return v;
}

void xe_free_val(xe_val_t* v) {
  if (!v) return;
  free(v->names);
  free(v);
}

static size_t hash_ptr(const void* p) {
  uintptr_t x = (uintptr_t)p;
  x ^= x >> 17;
  x *= 0x9E3779B97F4A7C15ull;
  return (size_t)(x >> 7);
}

static bool grow(xe_emitter_t* e) {
  size_t ncap = e->cap ? e->cap * 2 : 256;
  const void** nk = calloc(ncap, sizeof *nk);
  xe_val_t** nv = calloc(ncap, sizeof *nv);
  if (!nk || !nv) {
    free(nk);
    free(nv);
    return false;
  }
  for (size_t i = 0; i < e->cap; ++i) {
    if (!e->keys[i]) continue;
    size_t j = hash_ptr(e->keys[i]) & (ncap - 1);
    while (nk[j]) j = (j + 1) & (ncap - 1);
    nk[j] = e->keys[i];
    nv[j] = e->vals[i];
  }
  free(e->keys);
  free(e->vals);
  e->keys = nk;
  e->vals = nv;
  e->cap = ncap;
  return true;
}

xe_val_t* xe_bind(xe_emitter_t* e, MlirValue v, xe_val_t* rec) {
  if (!rec) return NULL;
  if ((e->count + 1) * 2 > e->cap && !grow(e)) {
    xe_free_val(rec);
    if (!e->error) e->error = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
    return NULL;
  }
  size_t j = hash_ptr(v.ptr) & (e->cap - 1);
  while (e->keys[j] && e->keys[j] != v.ptr) j = (j + 1) & (e->cap - 1);
  if (e->keys[j]) {
    xe_free_val(e->vals[j]);
  } else {
    e->keys[j] = v.ptr;
    ++e->count;
  }
  e->vals[j] = rec;
  return rec;
}

xe_val_t* xe_define(xe_emitter_t* e, MlirValue v, zt_type_t t) {
  return xe_bind(e, v, xe_alloc_for(e, v, t, XE_ROLE_C));
}

xe_val_t* xe_alias(xe_emitter_t* e, MlirValue v, const xe_val_t* src) {
  xe_val_t* c = alloc_impl(e, src->type, xe_alloc_role_like(src),
                           src->layout == XE_LAYOUT_BLOCK2D);
  if (!c) return NULL;
  if (c->nchunks != src->nchunks) {
    xe_free_val(c);
    if (!e->error) e->error = xe_fail(e, ZT_STATUS_INTERNAL, "alias of another layout");
    return NULL;
  }
  memcpy(c->names, src->names, (size_t)src->nchunks * sizeof(xe_name_t));
  memcpy(c->base, src->base, sizeof c->base);
  c->root = src->root;
  return xe_bind(e, v, c);
}

void xe_print_attr(MlirAttribute a, zt_strbuf_t* sb) { mlirAttributePrint(a, append_cb, sb); }

xe_val_t* xe_find_raw(xe_emitter_t* e, MlirValue v) {
  if (e->cap) {
    size_t j = hash_ptr(v.ptr) & (e->cap - 1);
    while (e->keys[j]) {
      if (e->keys[j] == v.ptr) return e->vals[j];
      j = (j + 1) & (e->cap - 1);
    }
  }
  return NULL;
}

// Readers of a record read its chunks: a wide one (xe_wide.c) writes them
// here first where they are not in scope.
xe_val_t* xe_find(xe_emitter_t* e, MlirValue v) {
  xe_val_t* r = xe_find_raw(e, v);
  xe_wide_chunks(e, r);
  return r;
}

xe_val_t* xe_lookup(xe_emitter_t* e, MlirValue v) {
  xe_val_t* r = xe_find(e, v);
  if (r) return r;
  if (!e->error)
    e->error = xe_fail(e, ZT_STATUS_INTERNAL, "operand has not been lowered");
  return NULL;
}

const char* xe_elem(zt_scalar_kind_t k) {
  if (k == ZT_BF16) return "i16";  // bits: see xe_internal.h
  return k == ZT_PTR ? "i64" : zt_scalar_kind_name(k);
}

const char* xe_block_elem(zt_scalar_kind_t k) {
  return k == ZT_BF16 ? "bf16" : xe_elem(k);
}

void xe_chunk_type(const xe_val_t* v, zt_strbuf_t* sb) {
  if (v->layout == XE_LAYOUT_LAZY)
    zt_strbuf_puts(sb, "i64");
  else if (v->layout == XE_LAYOUT_BLOCK2D)
    zt_strbuf_printf(sb, "vector<%dx%dx%s>", v->br, v->bc, xe_block_elem(v->type.kind));
  else if (v->layout == XE_LAYOUT_SCALAR)
    zt_strbuf_puts(sb, xe_elem(v->type.kind));
  else if (v->type.kind == ZT_PTR)
    zt_strbuf_puts(sb, "vector<16xi64>");
  else
    zt_strbuf_printf(sb, "vector<16x%s>", xe_elem(v->type.kind));
}

int xe_flat_count(const xe_val_t* v) {
  return v->nchunks + (v->layout == XE_LAYOUT_ROW16 && v->type.kind == ZT_PTR);
}

void xe_flat_entry(const xe_val_t* v, int i, const char** name, zt_strbuf_t* ty,
                   bool* is_vector) {
  bool ptr_tensor = v->layout == XE_LAYOUT_ROW16 && v->type.kind == ZT_PTR;
  if (ptr_tensor && i == 0) {
    *name = v->base;
    if (ty) zt_strbuf_puts(ty, "i64");
    *is_vector = false;
    return;
  }
  *name = v->names[i - ptr_tensor];
  if (ty) xe_chunk_type(v, ty);
  *is_vector = v->layout != XE_LAYOUT_SCALAR && v->layout != XE_LAYOUT_LAZY;
}

void xe_flat_assign(xe_val_t* v, const char* prefix, int first) {
  bool ptr_tensor = v->layout == XE_LAYOUT_ROW16 && v->type.kind == ZT_PTR;
  int i = first;
  if (ptr_tensor) snprintf(v->base, XE_NAME_MAX, "%s%d", prefix, i++);
  for (int32_t k = 0; k < v->nchunks; ++k)
    snprintf(v->names[k], XE_NAME_MAX, "%s%d", prefix, i++);
}

// The alias number of location l, defined in e->locs the first time it is
// seen; -1 when out of memory (the caller then writes l itself).
static int loc_alias(xe_emitter_t* e, MlirLocation l) {
  if (2 * (e->loc_count + 1) > e->loc_cap) {
    size_t cap = e->loc_cap ? 2 * e->loc_cap : 64;
    const void** keys = calloc(cap, sizeof *keys);
    int* ids = calloc(cap, sizeof *ids);
    if (!keys || !ids) {
      free(keys);
      free(ids);
      return -1;
    }
    for (size_t i = 0; i < e->loc_cap; ++i) {
      if (!e->loc_keys[i]) continue;
      size_t h = ((uintptr_t)e->loc_keys[i] >> 4) & (cap - 1);
      while (keys[h]) h = (h + 1) & (cap - 1);
      keys[h] = e->loc_keys[i];
      ids[h] = e->loc_ids[i];
    }
    free(e->loc_keys);
    free(e->loc_ids);
    e->loc_keys = keys;
    e->loc_ids = ids;
    e->loc_cap = cap;
  }
  // Locations are uniqued by the context: equal pointers, equal locations.
  size_t h = ((uintptr_t)l.ptr >> 4) & (e->loc_cap - 1);
  while (e->loc_keys[h] && e->loc_keys[h] != l.ptr) h = (h + 1) & (e->loc_cap - 1);
  if (e->loc_keys[h]) return e->loc_ids[h];
  int id = (int)e->loc_count++;
  e->loc_keys[h] = l.ptr;
  e->loc_ids[h] = id;
  zt_strbuf_printf(&e->locs, "#zl%d = ", id);
  mlirLocationPrint(l, append_cb, &e->locs);
  zt_strbuf_puts(&e->locs, "\n");
  return id;
}

void xe_set_cur(xe_emitter_t* e, MlirOperation op) {
  e->cur = op;
  zt_strbuf_clear(&e->loc);
  MlirLocation l = mlirOperationGetLocation(op);
  int id = e->loc_plain ? -1 : loc_alias(e, l);
  if (id >= 0) {
    zt_strbuf_printf(&e->loc, " loc(#zl%d)", id);
  } else {
    zt_strbuf_puts(&e->loc, " ");
    mlirLocationPrint(l, append_cb, &e->loc);
  }
}

void xe_line(xe_emitter_t* e) {
  for (int i = 0; i < e->indent; ++i) zt_strbuf_puts(&e->body, "  ");
}

void xe_hoist(xe_emitter_t* e, const char* text, bool vector, xe_name_t out) {
  for (int i = 0; i < e->num_consts; ++i) {
    if (strcmp(e->const_text[i], text) == 0) {
      memcpy(out, e->const_name[i], XE_NAME_MAX);
      return;
    }
  }
  snprintf(out, XE_NAME_MAX, "%%k%d", e->num_consts);
  if (e->num_consts == e->cap_consts) {
    int nc = e->cap_consts ? e->cap_consts * 2 : 32;
    char** nt = realloc(e->const_text, (size_t)nc * sizeof *nt);
    if (nt) e->const_text = nt;
    xe_name_t* nn = realloc(e->const_name, (size_t)nc * sizeof *nn);
    if (nn) e->const_name = nn;
    if (!nt || !nn) {
      if (!e->error) e->error = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
      return;
    }
    e->cap_consts = nc;
  }
  e->const_text[e->num_consts] = strdup(text);
  memcpy(e->const_name[e->num_consts], out, XE_NAME_MAX);
  ++e->num_consts;
  // Layout attributes must follow the op's inherent syntax: we write the
  // hoisted ops in generic form where that matters (see callers).
  zt_strbuf_printf(&e->pre, "    %s = %s", out, text);
  (void)vector;
  zt_strbuf_puts(&e->pre, "\n");
}

void xe_lane_index(xe_emitter_t* e, xe_name_t out) {
  xe_hoist(e, "vector.step {layout_result_0 = " XE_LAYOUT_ATTR "} : vector<16xindex>",
           true, out);
}

void xe_lane_i32(xe_emitter_t* e, xe_name_t out) {
  xe_name_t step;
  xe_lane_index(e, step);
  char text[160];
  snprintf(text, sizeof text,
           "arith.index_cast %s {layout_result_0 = " XE_LAYOUT_ATTR
           "} : vector<16xindex> to vector<16xi32>",
           step);
  xe_hoist(e, text, true, out);
}

void xe_zero_offsets(xe_emitter_t* e, xe_name_t out) {
  xe_hoist(e, "arith.constant {layout_result_0 = " XE_LAYOUT_ATTR
              "} dense<0> : vector<16xindex>",
           true, out);
}

void xe_zero_offsets64(xe_emitter_t* e, xe_name_t out) {
  xe_hoist(e, "arith.constant {layout_result_0 = " XE_LAYOUT_ATTR
              "} dense<0> : vector<16xi64>",
           true, out);
}

void xe_all_true(xe_emitter_t* e, xe_name_t out) {
  xe_hoist(e, "arith.constant {layout_result_0 = " XE_LAYOUT_ATTR
              "} dense<true> : vector<16xi1>",
           true, out);
}

void xe_pad_mask(xe_emitter_t* e, int64_t n, xe_name_t out) {
  xe_name_t step, lim;
  xe_lane_index(e, step);
  char text[160];
  snprintf(text, sizeof text,
           "arith.constant {layout_result_0 = " XE_LAYOUT_ATTR
           "} dense<%lld> : vector<16xindex>",
           (long long)n);
  xe_hoist(e, text, true, lim);
  snprintf(text, sizeof text,
           "arith.cmpi ult, %s, %s {layout_result_0 = " XE_LAYOUT_ATTR
           "} : vector<16xindex>",
           step, lim);
  xe_hoist(e, text, true, out);
}

void xe_lane0_mask(xe_emitter_t* e, xe_name_t out) { xe_pad_mask(e, 1, out); }

void xe_sg_id(xe_emitter_t* e, xe_name_t out) {
  xe_hoist(e, "gpu.subgroup_id : index", false, out);
}

void xe_sg_id_i32(xe_emitter_t* e, xe_name_t out) {
  xe_name_t sg;
  xe_sg_id(e, sg);
  char text[96];
  snprintf(text, sizeof text, "arith.index_cast %s : index to i32", sg);
  xe_hoist(e, text, false, out);
}

void xe_sg0_mask(xe_emitter_t* e, xe_name_t out) {
  xe_name_t sg, zero, c;
  xe_sg_id(e, sg);
  xe_hoist(e, "arith.constant 0 : index", false, zero);
  char text[160];
  snprintf(text, sizeof text, "arith.cmpi eq, %s, %s : index", sg, zero);
  xe_hoist(e, text, false, c);
  snprintf(text, sizeof text,
           "vector.broadcast %s {layout_result_0 = " XE_LAYOUT_ATTR
           "} : i1 to vector<16xi1>",
           c);
  xe_hoist(e, text, true, out);
}

void xe_once_mask(xe_emitter_t* e, const char* m, xe_name_t out) {
  if (e->nsg <= 1) {
    snprintf(out, XE_NAME_MAX, "%s", m);
    return;
  }
  xe_name_t sg0;
  xe_sg0_mask(e, sg0);
  xe_fresh(e, out);
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "%s = arith.andi %s, %s {layout_result_0 = " XE_LAYOUT_ATTR
                   "} : vector<16xi1>%s\n",
                   out, m, sg0, e->loc.data ? e->loc.data : "");
}

bool xe_axis_local(const xe_emitter_t* e, const xe_val_t* t, int axis) {
  if (e->nsg <= 1) return true;
  // Reducing along axis 1 (rows' results): whole rows per subgroup, and a
  // distributed 1-D layout over the rows that matches the split.
  int64_t len = t->type.shape[axis == 1 ? 0 : 1];
  int32_t part = axis == 1 ? t->tr : t->tc;
  bool whole = axis == 1 ? e->sg_n == 1 : e->sg_m == 1;
  return whole && part % 16 == 0 && len / 16 >= e->nsg;
}

// --- 16-lane vector helpers (xe_reduce.c, xe_argreduce.c) -------------------

static const char* vloc(xe_emitter_t* e) { return e->loc.data ? e->loc.data : ""; }

void xe_vconst(xe_emitter_t* e, const char* value, const char* et, xe_name_t out) {
  char text[192];
  snprintf(text, sizeof text,
           "arith.constant {layout_result_0 = " XE_LAYOUT_ATTR "} dense<%s> : vector<16x%s>",
           value, et);
  xe_hoist(e, text, true, out);
}

void xe_vbinary(xe_emitter_t* e, const char* op, const char* a, const char* b, const char* et,
                xe_name_t out) {
  xe_fresh(e, out);
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "%s = %s %s, %s {layout_result_0 = " XE_LAYOUT_ATTR "} : vector<16x%s>%s\n",
                   out, op, a, b, et, vloc(e));
}

void xe_vselect(xe_emitter_t* e, const char* m, const char* a, const char* b, const char* et,
                xe_name_t out) {
  xe_fresh(e, out);
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "%s = arith.select %s, %s, %s {layout_result_0 = " XE_LAYOUT_ATTR
                   "} : vector<16xi1>, vector<16x%s>%s\n",
                   out, m, a, b, et, vloc(e));
}

void xe_zero_block(xe_emitter_t* e, zt_scalar_kind_t k, const char* et, int32_t br,
                   const char* attr, xe_name_t out) {
  char text[192];
  snprintf(text, sizeof text, "arith.constant {layout_result_0 = %s} dense<%s> : vector<%dx16x%s>",
           attr, k == ZT_I1 ? "false" : zt_scalar_kind_is_float(k) ? "0.0" : "0", (int)br, et);
  xe_hoist(e, text, true, out);
}

void xe_block_row(xe_emitter_t* e, const xe_val_t* s, int32_t bi, int32_t bj, int32_t rr,
                  xe_name_t out) {
  const char* et = xe_elem(s->type.kind);
  xe_fresh(e, out);
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "%s = vector.extract %s[%d] {layout_result_0 = " XE_LAYOUT_ATTR
                   "} : vector<16x%s> from vector<%dx16x%s>%s\n",
                   out, s->names[bi * s->nbc + bj], (int)rr, et, s->br, et, vloc(e));
}

void xe_vsplat(xe_emitter_t* e, const char* scalar, const char* et, xe_name_t out) {
  xe_fresh(e, out);
  xe_line(e);
  zt_strbuf_printf(&e->body,
                   "%s = vector.broadcast %s {layout_result_0 = " XE_LAYOUT_ATTR
                   "} : %s to vector<16x%s>%s\n",
                   out, scalar, et, et, vloc(e));
}

void xe_take_lane(xe_emitter_t* e, const char* from, int i, const char* vec, const char* et,
                  xe_name_t out) {
  xe_name_t lane, ci, eq;
  char v[16];
  snprintf(v, sizeof v, "%d", i);
  xe_lane_i32(e, lane);
  xe_vconst(e, v, "i32", ci);
  xe_vbinary(e, "arith.cmpi eq,", lane, ci, "i32", eq);
  xe_vselect(e, eq, from, vec, et, out);
}

void xe_put_lane(xe_emitter_t* e, const char* scalar, int i, const char* vec, const char* et,
                 xe_name_t out) {
  xe_name_t b;
  xe_vsplat(e, scalar, et, b);
  xe_take_lane(e, b, i, vec, et, out);
}

// Type aliases for the vector types of out[from..]: each distinct
// vector<AxBx..xT> (up to 64 of them) is defined once at `from`
// ("!zvN = vector<...>") and named by its alias. Every chunk op spells its
// operand and result types, so parsing them was ~7% of the 200-op chain's
// parse (mlir-opt-22 under callgrind, issue 22). The parser gives the same
// types: the module is the same.
void xe_alias_vector_types(zt_strbuf_t* out, size_t from) {
  enum { MAX_ALIASES = 64 };
  static const char* const elems[] = {"f16", "bf16", "f32", "f64", "i1",  "i8",
                                      "i16", "i32",  "i64", "index"};
  const char* spelled[MAX_ALIASES];
  size_t lens[MAX_ALIASES];
  char alias[MAX_ALIASES][8];  // "!zvN", written once (printf per use was 4% of the chain)
  int n = 0;
  if (out->failed || !out->data || from > out->size) return;
  zt_strbuf_t body, all;
  zt_strbuf_init(&body);
  const char* s = out->data + from;
  const char* end = out->data + out->size;
  const char* copied = s;
  static const char kw[] = "vector<";
  for (;;) {
    const char* p = s;
    while (p + sizeof kw - 1 <= end && memcmp(p, kw, sizeof kw - 1) != 0) {
      p = memchr(p + 1, 'v', (size_t)(end - p - 1));
      if (!p) break;
    }
    if (!p || p + sizeof kw - 1 > end) break;
    s = p + sizeof kw - 1;
    char before = p > out->data ? p[-1] : ' ';
    if ((before >= 'a' && before <= 'z') || (before >= 'A' && before <= 'Z') ||
        (before >= '0' && before <= '9') || before == '_' || before == '.' || before == '!')
      continue;
    // Static shape: one or more "<digits>x", then an element type, then '>'.
    const char* q = s;
    int dims = 0;
    for (;;) {
      const char* d = q;
      while (q < end && *q >= '0' && *q <= '9') ++q;
      if (q == d || q >= end || *q != 'x') {
        q = d;
        break;
      }
      ++q;
      ++dims;
    }
    const char* t = q;
    while (q < end && ((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9'))) ++q;
    if (!dims || q >= end || *q != '>') continue;
    bool known = false;
    for (size_t i = 0; i < sizeof elems / sizeof elems[0]; ++i)
      if ((size_t)(q - t) == strlen(elems[i]) && memcmp(t, elems[i], (size_t)(q - t)) == 0)
        known = true;
    if (!known) continue;
    size_t len = (size_t)(q + 1 - p);
    int id = -1;
    for (int i = 0; i < n && id < 0; ++i)
      if (lens[i] == len && memcmp(spelled[i], p, len) == 0) id = i;
    if (id < 0 && n < MAX_ALIASES) {
      spelled[n] = p;
      lens[n] = len;
      snprintf(alias[n], sizeof alias[n], "!zv%d", n);
      id = n++;
    }
    if (id < 0) continue;
    zt_strbuf_append(&body, copied, (size_t)(p - copied));
    zt_strbuf_puts(&body, alias[id]);
    copied = s = q + 1;
  }
  if (n == 0 || body.failed) {
    zt_strbuf_deinit(&body);
    return;
  }
  zt_strbuf_append(&body, copied, (size_t)(end - copied));
  zt_strbuf_init(&all);
  zt_strbuf_append(&all, out->data, from);
  for (int i = 0; i < n; ++i) {
    zt_strbuf_printf(&all, "!zv%d = ", i);
    zt_strbuf_append(&all, spelled[i], lens[i]);
    zt_strbuf_puts(&all, "\n");
  }
  zt_strbuf_append(&all, body.data, body.size);
  zt_strbuf_deinit(&body);
  if (all.failed) {  // out stays as it was: the same module, written out
    zt_strbuf_deinit(&all);
    return;
  }
  zt_strbuf_deinit(out);
  *out = all;
}
