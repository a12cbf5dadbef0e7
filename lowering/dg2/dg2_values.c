// Value map, layouts, lazy elements and layout conversions of the dg2
// lowering.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>

#include "dg2_internal.h"

#define CHUNK 256

static size_t hash_ptr(uintptr_t p) {
  uint64_t x = (uint64_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (size_t)x;
}

// Open-addressing map MlirValue -> int32.
static zt_status_t map_grow(dg2_entry_t** map, size_t* cap_io) {
  size_t old = *cap_io, cap = old ? old * 2 : 256;
  dg2_entry_t* m = calloc(cap, sizeof *m);
  if (!m) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "dg2 lowering map");
  for (size_t i = 0; i < old; ++i) {
    if (!(*map)[i].key) continue;
    size_t j = hash_ptr((*map)[i].key) & (cap - 1);
    while (m[j].key) j = (j + 1) & (cap - 1);
    m[j] = (*map)[i];
  }
  free(*map);
  *map = m;
  *cap_io = cap;
  return NULL;
}

static dg2_entry_t* map_slot(dg2_entry_t* map, size_t cap, uintptr_t key) {
  if (!cap) return NULL;
  size_t j = hash_ptr(key) & (cap - 1);
  while (map[j].key && map[j].key != key) j = (j + 1) & (cap - 1);
  return &map[j];
}

static dg2_val_t* val_at(dg2_t* c, int32_t i) { return &c->chunks[i / CHUNK][i % CHUNK]; }

zt_status_t dg2_put(dg2_t* c, MlirValue v, const dg2_val_t* val) {
  if ((c->map_count + 1) * 2 > c->map_cap) ZT_RETURN_IF_ERROR(map_grow(&c->map, &c->map_cap));
  uintptr_t key = (uintptr_t)v.ptr;
  dg2_entry_t* e = map_slot(c->map, c->map_cap, key);
  if (!e->key) {
    if (c->num_vals % CHUNK == 0) {
      int32_t k = c->num_vals / CHUNK;
      if (k == c->cap_chunks) {
        int32_t cap = c->cap_chunks ? c->cap_chunks * 2 : 16;
        dg2_val_t** p = realloc(c->chunks, (size_t)cap * sizeof *p);
        if (!p) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "dg2 values");
        c->chunks = p;
        c->cap_chunks = cap;
      }
      c->chunks[k] = malloc(CHUNK * sizeof(dg2_val_t));
      if (!c->chunks[k]) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "dg2 values");
    }
    e->key = key;
    e->index = c->num_vals++;
    ++c->map_count;
  }
  *val_at(c, e->index) = *val;
  return NULL;
}

const dg2_val_t* dg2_get(dg2_t* c, MlirValue v) {
  dg2_entry_t* e = map_slot(c->map, c->map_cap, (uintptr_t)v.ptr);
  return e && e->key ? val_at(c, e->index) : NULL;
}

zt_status_t dg2_get_checked(dg2_t* c, MlirValue v, const dg2_val_t** out) {
  *out = dg2_get(c, v);
  if (!*out) return zt_make_status(ZT_STATUS_INTERNAL, "dg2 lowering: operand not lowered");
  return NULL;
}

zt_status_t dg2_hint_put(dg2_t* c, MlirValue v, int32_t layout) {
  if ((c->hint_count + 1) * 2 > c->hint_cap)
    ZT_RETURN_IF_ERROR(map_grow(&c->hints, &c->hint_cap));
  dg2_entry_t* e = map_slot(c->hints, c->hint_cap, (uintptr_t)v.ptr);
  if (!e->key) ++c->hint_count;
  e->key = (uintptr_t)v.ptr;
  e->index = layout;
  return NULL;
}

int32_t dg2_hint_get(dg2_t* c, MlirValue v) {
  dg2_entry_t* e = map_slot(c->hints, c->hint_cap, (uintptr_t)v.ptr);
  return e && e->key ? e->index : -1;
}

// --- memo of printed values --------------------------------------------------------

typedef struct dg2_memo_s {
  uint64_t k1, k2;  // k1 == 0: empty slot
  int32_t depth;    // indent the value was printed at (0: kernel entry)
  uint32_t scope;   // c->scope[depth] then
  uint32_t epoch;   // c->loop_epoch then
  char name[DG2_NAME];
} dg2_memo_t;

static size_t hash_key(uint64_t k1, uint64_t k2) {
  return hash_ptr((uintptr_t)(k1 * 0x9e3779b97f4a7c15ULL ^ k2));
}

// Slot of (k1, k2), or NULL when the map cannot grow.
static dg2_memo_t* memo_slot(dg2_t* c, uint64_t k1, uint64_t k2) {
  if ((c->memo_count + 1) * 2 > c->memo_cap) {
    size_t old = c->memo_cap, cap = old ? old * 2 : 1024;
    dg2_memo_t* m = calloc(cap, sizeof *m);
    if (!m) return NULL;
    for (size_t i = 0; i < old; ++i) {
      if (!c->memo[i].k1) continue;
      size_t j = hash_key(c->memo[i].k1, c->memo[i].k2) & (cap - 1);
      while (m[j].k1) j = (j + 1) & (cap - 1);
      m[j] = c->memo[i];
    }
    free(c->memo);
    c->memo = m;
    c->memo_cap = cap;
  }
  size_t j = hash_key(k1, k2) & (c->memo_cap - 1);
  while (c->memo[j].k1 && (c->memo[j].k1 != k1 || c->memo[j].k2 != k2))
    j = (j + 1) & (c->memo_cap - 1);
  return &c->memo[j];
}

// The name memoized for (k1, k2) when it is visible at the current line.
static const char* memo_get(dg2_t* c, uint64_t k1, uint64_t k2) {
  if (!c->memo_cap) return NULL;
  size_t j = hash_key(k1, k2) & (c->memo_cap - 1);
  while (c->memo[j].k1) {
    dg2_memo_t* e = &c->memo[j];
    if (e->k1 == k1 && e->k2 == k2) {
      if (e->depth == 0) return e->name;
      // Not across a loop's boundary (c->loop_epoch changes at a body's
      // start and end): a value computed before a loop and reused in it or
      // after it would live through the loop (more registers), where cse
      // would have erased the first copy when only a lazy read needed it.
      if (e->epoch != c->loop_epoch) return NULL;
      if (e->depth <= c->indent && e->depth < DG2_MAX_DEPTH && c->scope[e->depth] == e->scope)
        return e->name;
      return NULL;
    }
    j = (j + 1) & (c->memo_cap - 1);
  }
  return NULL;
}

// Records name for (k1, k2), printed at `depth` (0: kernel entry).
static void memo_put(dg2_t* c, uint64_t k1, uint64_t k2, int32_t depth, const char* name) {
  if (depth >= DG2_MAX_DEPTH) return;
  dg2_memo_t* e = memo_slot(c, k1, k2);
  if (!e) return;  // out of memory: the value is printed again next time
  if (!e->k1) ++c->memo_count;
  e->k1 = k1;
  e->k2 = k2;
  e->depth = depth;
  e->scope = depth ? c->scope[depth] : 0;
  e->epoch = c->loop_epoch;
  snprintf(e->name, DG2_NAME, "%s", name);
}

const char* dg2_memo_get(dg2_t* c, uint64_t k1, uint64_t k2) { return memo_get(c, k1, k2); }

void dg2_memo_put(dg2_t* c, uint64_t k1, uint64_t k2, const char* name) {
  memo_put(c, k1, k2, c->indent, name);
}

char (*dg2_alloc_names(dg2_t* c, int32_t n))[DG2_NAME] {
  if (c->num_allocs == c->cap_allocs) {
    int32_t cap = c->cap_allocs ? c->cap_allocs * 2 : 64;
    void** p = realloc(c->allocs, (size_t)cap * sizeof *p);
    if (!p) return NULL;
    c->allocs = p;
    c->cap_allocs = cap;
  }
  char(*el)[DG2_NAME] = calloc((size_t)(n > 0 ? n : 1), DG2_NAME);
  if (el) c->allocs[c->num_allocs++] = el;
  return el;
}

void dg2_free(dg2_t* c) {
  for (int32_t i = 0; i < c->num_allocs; ++i) free(c->allocs[i]);
  free(c->allocs);
  for (int32_t k = 0; k * CHUNK < c->num_vals; ++k) free(c->chunks[k]);
  free(c->chunks);
  free(c->map);
  free(c->hints);
  free(c->memo);
  free(c->interned);
  for (int32_t i = 0; i < c->num_layouts; ++i) free(c->layouts[i].off);
  free(c->layouts);
  free(c->packed);
}

void dg2_fresh(dg2_t* c, char out[DG2_NAME]) { snprintf(out, DG2_NAME, "%%t%d", c->next_id++); }
int32_t dg2_fresh_id(dg2_t* c) { return c->next_id++; }

void dg2_line(dg2_t* c, const char* fmt, ...) {
  if (c->indent < c->last_indent)
    // The regions deeper than this line are closed: what they memoized is
    // out of scope from now on.
    for (int32_t d = c->indent + 1; d <= c->last_indent && d < DG2_MAX_DEPTH; ++d)
      c->scope[d] = ++c->scope_serial;
  c->last_indent = c->indent;
  for (int i = 0; i < c->indent; ++i) zt_strbuf_append(&c->body, "  ", 2);
  va_list ap;
  va_start(ap, fmt);
  zt_strbuf_vprintf(&c->body, fmt, ap);
  va_end(ap);
  zt_strbuf_append(&c->body, "\n", 1);
}

void dg2_entry_line(dg2_t* c, const char* fmt, ...) {
  zt_strbuf_append(&c->entry, "    ", 4);
  va_list ap;
  va_start(ap, fmt);
  zt_strbuf_vprintf(&c->entry, fmt, ap);
  va_end(ap);
  zt_strbuf_append(&c->entry, "\n", 1);
}

const char* dg2_reg(zt_scalar_kind_t k) {
  switch (k) {
    case ZT_PTR: return "i64";
    case ZT_BF16: return "i16";
    default: return zt_tile_kind_spelling(k);
  }
}

const char* dg2_mem(zt_scalar_kind_t k) { return k == ZT_I1 ? "i8" : dg2_reg(k); }

void dg2_declare(dg2_t* c, const char* name, const char* sig) {
  for (int32_t i = 0; i < c->num_declared; ++i)
    if (strcmp(c->declared[i], name) == 0) return;
  if (c->num_declared < (int32_t)(sizeof c->declared / sizeof c->declared[0]))
    snprintf(c->declared[c->num_declared++], sizeof c->declared[0], "%s", name);
  zt_strbuf_printf(&c->decls, "  llvm.func @%s%s\n", name, sig);
}

// Integer constants are printed once, in the kernel entry (where
// canonicalize would move them anyway).
void dg2_const(dg2_t* c, const char* ty, long long v, char out[DG2_NAME]) {
  static const char* const types[] = {"i1", "i8", "i16", "i32", "i64"};
  uint64_t k1 = 0;
  for (size_t i = 0; i < sizeof types / sizeof types[0]; ++i)
    if (strcmp(ty, types[i]) == 0) k1 = ((uint64_t)1 << 56) | (i + 1);
  const char* hit = k1 ? memo_get(c, k1, (uint64_t)v) : NULL;
  if (hit) {
    snprintf(out, DG2_NAME, "%s", hit);
    return;
  }
  dg2_fresh(c, out);
  if (!k1) {
    dg2_line(c, "%s = arith.constant %lld : %s", out, v, ty);
    return;
  }
  dg2_entry_line(c, "%s = arith.constant %lld : %s", out, v, ty);
  memo_put(c, k1, (uint64_t)v, 0, out);
}

// --- layouts -------------------------------------------------------------------

static zt_status_t new_layout(dg2_t* c, dg2_layout_t** out, int32_t* idx) {
  if (c->num_layouts == c->cap_layouts) {
    int32_t cap = c->cap_layouts ? c->cap_layouts * 2 : 16;
    dg2_layout_t* p = realloc(c->layouts, (size_t)cap * sizeof *p);
    if (!p) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "dg2 layouts");
    c->layouts = p;
    c->cap_layouts = cap;
  }
  *idx = c->num_layouts++;
  *out = &c->layouts[*idx];
  memset(*out, 0, sizeof **out);
  return NULL;
}

zt_status_t dg2_blocked(dg2_t* c, int32_t rank, const int64_t* shape, int32_t* out) {
  for (int32_t i = 0; i < c->num_layouts; ++i) {
    dg2_layout_t* l = &c->layouts[i];
    if (l->kind == DL_BLOCKED && l->rank == rank &&
        memcmp(l->shape, shape, (size_t)rank * sizeof(int64_t)) == 0) {
      *out = i;
      return NULL;
    }
  }
  int64_t n[ZT_MAX_RANK], st[ZT_MAX_RANK], q[ZT_MAX_RANK];
  int64_t rem = c->threads, e = 1;
  for (int32_t d = rank - 1; d >= 0; --d) {
    n[d] = shape[d] < rem ? shape[d] : rem;
    if (n[d] < 1) n[d] = 1;
    if (shape[d] % n[d] != 0)
      return zt_make_status(ZT_STATUS_UNSUPPORTED,
                            "dg2: dimension %lld does not split over %lld work-items",
                            (long long)shape[d], (long long)n[d]);
    rem /= n[d];
    q[d] = shape[d] / n[d];
    e *= q[d];
  }
  if (e > 4096)
    return zt_make_status(ZT_STATUS_UNSUPPORTED,
                          "dg2: %lld elements per work-item (tile too large for "
                          "%d subgroups)",
                          (long long)e, c->num_warps);
  for (int32_t d = rank - 1; d >= 0; --d) st[d] = d == rank - 1 ? 1 : st[d + 1] * n[d + 1];
  dg2_layout_t* l;
  int32_t idx;
  ZT_RETURN_IF_ERROR(new_layout(c, &l, &idx));
  l->kind = DL_BLOCKED;
  l->rank = rank;
  memcpy(l->shape, shape, (size_t)rank * sizeof(int64_t));
  l->e = (int32_t)e;
  l->off = calloc((size_t)e * (size_t)rank, sizeof(int32_t));
  if (!l->off) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "dg2 layout");
  for (int32_t d = 0; d < rank; ++d) {
    if (n[d] == 1) {
      snprintf(l->base[d], DG2_NAME, "%%c0_i32");
      continue;
    }
    char a[DG2_NAME];
    snprintf(a, DG2_NAME, "%%L%dd%da", idx, d);
    snprintf(l->base[d], DG2_NAME, "%%L%dd%d", idx, d);
    dg2_entry_line(c, "%s = arith.constant %lld : i32", a, (long long)st[d]);
    dg2_entry_line(c, "%sq = arith.divui %%tid, %s : i32", a, a);
    dg2_entry_line(c, "%sn = arith.constant %lld : i32", a, (long long)n[d]);
    dg2_entry_line(c, "%s = arith.remui %sq, %sn : i32", l->base[d], a, a);
  }
  for (int64_t k = 0; k < e; ++k) {
    int64_t r = k;
    for (int32_t d = rank - 1; d >= 0; --d) {
      l->off[k * rank + d] = (int32_t)((r % q[d]) * n[d]);
      r /= q[d];
    }
  }
  *out = idx;
  return NULL;
}

void dg2_dpas_grid(dg2_t* c, int64_t m, int64_t n, int32_t* wm, int32_t* wn) {
  int32_t a = 1, b = 1;
  while (a * b < c->num_warps) {
    bool can_m = (m / 8) % (a * 2) == 0, can_n = (n / 8) % (b * 2) == 0;
    if (can_m && (!can_n || (m / a) >= (n / b))) a *= 2;
    else if (can_n) b *= 2;
    else break;
  }
  *wm = a;
  *wn = b;
}

zt_status_t dg2_dpas_layout(dg2_t* c, dg2_lkind_t which, int64_t m, int64_t n,
                            int64_t k, int32_t pack, int32_t* out) {
  return dg2_dpas_layout_k(c, which, m, n, k, pack, 1, out);
}

zt_status_t dg2_dpas_layout_k(dg2_t* c, dg2_lkind_t which, int64_t m, int64_t n, int64_t k,
                              int32_t pack, int32_t wk, int32_t* out) {
  if (which == DL_DPAS_C) pack = 1, wk = 1;  // C's layout is the same for every input type
  if (pack != 1 && pack != 2 && pack != 4)
    return zt_make_status(ZT_STATUS_INTERNAL, "dg2: DPAS packing %d", pack);
  if (wk < 1 || k % (8 * (int64_t)pack * wk))
    return zt_make_status(ZT_STATUS_INTERNAL, "dg2: K %lld in %d slices", (long long)k, wk);
  for (int32_t i = 0; i < c->num_layouts; ++i) {
    dg2_layout_t* l = &c->layouts[i];
    if (l->kind == which && l->m == m && l->n == n && l->k == k && l->pack == pack &&
        l->wk == wk) {
      *out = i;
      return NULL;
    }
  }
  int32_t wm, wn;
  dg2_dpas_grid(c, m, n, &wm, &wn);
  // kl: the K columns (A) or rows (B) one subgroup holds, from k0.
  int64_t tm = m / wm, tn = n / wn, ks = 8 * (int64_t)pack, kl = k / wk;  // ks: K per DPAS
  dg2_layout_t* l;
  int32_t idx;
  ZT_RETURN_IF_ERROR(new_layout(c, &l, &idx));
  l->kind = which;
  l->rank = 2;
  l->m = m;
  l->n = n;
  l->k = k;
  l->wm = wm;
  l->wn = wn;
  l->wk = wk;
  l->pack = pack;
  // Subgroup position in the wm x wn grid (extra subgroups repeat it); with
  // K in wk slices, the next wm x wn subgroups hold the next K slice.
  char p[DG2_NAME];
  snprintf(p, DG2_NAME, "%%L%d", idx);
  dg2_entry_line(c, "%sg = arith.constant %d : i32", p, wm * wn);
  dg2_entry_line(c, "%ss = arith.remui %%sg, %sg : i32", p, p);
  if (wk > 1) {
    dg2_entry_line(c, "%skq = arith.divui %%sg, %sg : i32", p, p);
    dg2_entry_line(c, "%skw = arith.constant %d : i32", p, wk);
    dg2_entry_line(c, "%skk = arith.remui %skq, %skw : i32", p, p, p);
    dg2_entry_line(c, "%skl = arith.constant %lld : i32", p, (long long)kl);
    dg2_entry_line(c, "%sk0 = arith.muli %skk, %skl : i32", p, p, p);
  }
  dg2_entry_line(c, "%swn = arith.constant %d : i32", p, wn);
  dg2_entry_line(c, "%ssm = arith.divui %ss, %swn : i32", p, p, p);
  dg2_entry_line(c, "%ssn = arith.remui %ss, %swn : i32", p, p, p);
  dg2_entry_line(c, "%stm = arith.constant %lld : i32", p, (long long)tm);
  dg2_entry_line(c, "%stn = arith.constant %lld : i32", p, (long long)tn);
  dg2_entry_line(c, "%smb = arith.muli %ssm, %stm : i32", p, p, p);
  dg2_entry_line(c, "%snb0 = arith.muli %ssn, %stn : i32", p, p, p);
  dg2_entry_line(c, "%snb = arith.addi %snb0, %%lane : i32", p, p);
  int64_t e;
  if (which == DL_DPAS_A) {
    l->shape[0] = m;
    l->shape[1] = k;
    e = tm * kl / 8;
    snprintf(l->base[0], DG2_NAME, "%smb", p);
    // Lane j's first column in each K step: pack * j (+ k0).
    dg2_entry_line(c, "%spk = arith.constant %d : i32", p, pack);
    dg2_entry_line(c, "%slk = arith.muli %%lane, %spk : i32", p, p);
    if (wk > 1) dg2_entry_line(c, "%slkk = arith.addi %slk, %sk0 : i32", p, p, p);
    if (wk > 1) snprintf(l->base[1], DG2_NAME, "%slkk", p);
    else snprintf(l->base[1], DG2_NAME, "%slk", p);
  } else if (which == DL_DPAS_B) {
    l->shape[0] = k;
    l->shape[1] = n;
    e = kl * tn / 8;
    if (wk > 1) snprintf(l->base[0], DG2_NAME, "%sk0", p);
    else snprintf(l->base[0], DG2_NAME, "%%c0_i32");
    snprintf(l->base[1], DG2_NAME, "%snb", p);
  } else {
    l->shape[0] = m;
    l->shape[1] = n;
    e = tm * tn / 8;
    snprintf(l->base[0], DG2_NAME, "%smb", p);
    snprintf(l->base[1], DG2_NAME, "%snb", p);
  }
  l->e = (int32_t)e;
  l->off = calloc((size_t)e * 2, sizeof(int32_t));
  if (!l->off) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "dg2 layout");
  int32_t s = 0;
  if (which == DL_DPAS_A) {
    // Block (bm, bk): component i (row bm*8+i) of lane j holds columns
    // bk*ks + pack*j + q, q = 0 .. pack-1 from the lowest bits up.
    for (int64_t bm = 0; bm < tm / 8; ++bm)
      for (int64_t bk = 0; bk < kl / ks; ++bk)
        for (int i = 0; i < 8; ++i)
          for (int q = 0; q < pack; ++q, ++s) {
            l->off[s * 2] = (int32_t)(bm * 8 + i);
            l->off[s * 2 + 1] = (int32_t)(bk * ks + q);
          }
  } else if (which == DL_DPAS_B) {
    // Block (bk, bn), VNNI: component i of lane j holds rows
    // bk*ks + pack*i + q of column bn*8 + j, q from the lowest bits up.
    for (int64_t bk = 0; bk < kl / ks; ++bk)
      for (int64_t bn = 0; bn < tn / 8; ++bn)
        for (int i = 0; i < 8; ++i)
          for (int q = 0; q < pack; ++q, ++s) {
            l->off[s * 2] = (int32_t)(bk * ks + pack * i + q);
            l->off[s * 2 + 1] = (int32_t)(bn * 8);
          }
  } else {
    // Block (bm, bn): component i of lane j is C[bm*8 + i][bn*8 + j].
    for (int64_t bm = 0; bm < tm / 8; ++bm)
      for (int64_t bn = 0; bn < tn / 8; ++bn)
        for (int i = 0; i < 8; ++i, ++s) {
          l->off[s * 2] = (int32_t)(bm * 8 + i);
          l->off[s * 2 + 1] = (int32_t)(bn * 8);
        }
  }
  *out = idx;
  return NULL;
}

// A coordinate is base + offset: memoized per (layout, dimension, offset).
void dg2_coords(dg2_t* c, int32_t li, int32_t k, char coords[][DG2_NAME]) {
  dg2_layout_t* l = &c->layouts[li];
  for (int32_t d = 0; d < l->rank; ++d) {
    int32_t o = l->off[k * l->rank + d];
    if (o == 0) {
      snprintf(coords[d], DG2_NAME, "%s", l->base[d]);
      continue;
    }
    if (strcmp(l->base[d], "%c0_i32") == 0) {
      // A dimension no work-item splits: the coordinate is the constant
      // itself (one name for it across layouts, for the lazy memo).
      dg2_const(c, "i32", o, coords[d]);
      continue;
    }
    uint64_t k1 = ((uint64_t)2 << 56) | ((uint64_t)(uint32_t)li << 8) | (uint64_t)d;
    const char* hit = memo_get(c, k1, (uint64_t)(uint32_t)o);
    if (hit) {
      snprintf(coords[d], DG2_NAME, "%s", hit);
      continue;
    }
    char cst[DG2_NAME];
    dg2_const(c, "i32", o, cst);
    dg2_fresh(c, coords[d]);
    dg2_line(c, "%s = arith.addi %s, %s : i32", coords[d], l->base[d], cst);
    memo_put(c, k1, (uint64_t)(uint32_t)o, c->indent, coords[d]);
  }
}

// --- lazy elements ----------------------------------------------------------------

static zt_status_t operand_at(dg2_t* c, MlirOperation op, intptr_t i,
                              char coords[][DG2_NAME], char out[DG2_NAME]) {
  const dg2_val_t* v;
  ZT_RETURN_IF_ERROR(dg2_get_checked(c, mlirOperationGetOperand(op, i), &v));
  return dg2_lazy_at(c, v, coords, out);
}

// Source coordinates of a shape op's result element (broadcast, expand_dims,
// reshape, trans); used by lazy values and by SLM gathers alike.
zt_status_t dg2_shape_src_coords(dg2_t* c, MlirOperation op, const zt_type_t* rt,
                                 const zt_type_t* st, char coords[][DG2_NAME],
                                 char sc[][DG2_NAME]) {
  if (dg2_op_is(op, "tile.broadcast")) {
    for (int32_t d = 0; d < st->rank; ++d)
      snprintf(sc[d], DG2_NAME, "%s",
               st->shape[d] == 1 && rt->shape[d] != 1 ? "%c0_i32" : coords[d]);
    return NULL;
  }
  if (dg2_op_is(op, "tile.expand_dims")) {
    int64_t axis = dg2_int_attr(op, "axis", 0);
    int32_t j = 0;
    for (int32_t d = 0; d < rt->rank; ++d)
      if (d != axis) snprintf(sc[j++], DG2_NAME, "%s", coords[d]);
    return NULL;
  }
  if (dg2_op_is(op, "tile.trans")) {
    MlirAttribute a = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("order"));
    if (mlirAttributeIsNull(a) || !mlirAttributeIsADenseI32Array(a))
      return dg2_op_error(op, ZT_STATUS_UNSUPPORTED, "dg2: trans without an i32 order array");
    for (int32_t d = 0; d < rt->rank; ++d) {
      int32_t o = mlirDenseI32ArrayGetElement(a, d);
      snprintf(sc[o], DG2_NAME, "%s", coords[d]);
    }
    return NULL;
  }
  if (dg2_op_is(op, "tile.reshape")) {
    // (Starting from coords[0], not 0 * shape[0] + coords[0]: the same
    // value under one name, which the lazy memo can then recognize.)
    char lin[DG2_NAME];
    snprintf(lin, DG2_NAME, "%s", coords[0]);
    for (int32_t d = 1; d < rt->rank; ++d) {
      char cst[DG2_NAME], t[DG2_NAME], u[DG2_NAME];
      dg2_const(c, "i32", rt->shape[d], cst);
      dg2_fresh(c, t);
      dg2_line(c, "%s = arith.muli %s, %s : i32", t, lin, cst);
      dg2_fresh(c, u);
      dg2_line(c, "%s = arith.addi %s, %s : i32", u, t, coords[d]);
      snprintf(lin, DG2_NAME, "%s", u);
    }
    for (int32_t d = st->rank - 1; d >= 0; --d) {
      char cst[DG2_NAME], q[DG2_NAME];
      dg2_const(c, "i32", st->shape[d], cst);
      dg2_fresh(c, sc[d]);
      dg2_line(c, "%s = arith.remui %s, %s : i32", sc[d], lin, cst);
      dg2_fresh(c, q);
      dg2_line(c, "%s = arith.divui %s, %s : i32", q, lin, cst);
      snprintf(lin, DG2_NAME, "%s", q);
    }
    return NULL;
  }
  return dg2_op_error(op, ZT_STATUS_INTERNAL, "dg2: not a shape op");
}

// Interned SSA names (ids from 1), so that the names of a lazy read's
// coordinates can be part of an exact memo key. 0: out of memory.
uint32_t dg2_intern(dg2_t* c, const char* s) {
  if ((c->intern_count + 1) * 2 > c->intern_cap) {
    size_t old = c->intern_cap, cap = old ? old * 2 : 1024;
    dg2_intern_t* m = calloc(cap, sizeof *m);
    if (!m) return 0;
    for (size_t i = 0; i < old; ++i) {
      if (!c->interned[i].id) continue;
      size_t j = c->interned[i].hash & (cap - 1);
      while (m[j].id) j = (j + 1) & (cap - 1);
      m[j] = c->interned[i];
    }
    free(c->interned);
    c->interned = m;
    c->intern_cap = cap;
  }
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const char* p = s; *p; ++p) h = (h ^ (uint8_t)*p) * 0x100000001b3ULL;
  size_t j = h & (c->intern_cap - 1);
  while (c->interned[j].id) {
    if (c->interned[j].hash == h && strcmp(c->interned[j].name, s) == 0) return c->interned[j].id;
    j = (j + 1) & (c->intern_cap - 1);
  }
  dg2_intern_t* e = &c->interned[j];
  e->hash = h;
  e->id = (uint32_t)++c->intern_count;
  snprintf(e->name, DG2_NAME, "%s", s);
  return e->id;
}

static zt_status_t lazy_at(dg2_t* c, const dg2_val_t* v, char coords[][DG2_NAME],
                           char out[DG2_NAME]);

// A lazy element is memoized per (defining op and result, coordinate
// names), visible where the memo's scoping allows (the region that printed
// it and the regions inside it, never across a loop's boundary): every read
// of a tensor at the same coordinates (a row's offset reused by each of its
// columns, the same pointer tensor read by a load and a store) then prints
// its arithmetic once instead of leaving the copies to cse. On tutorial
// 06's backward, whose loads and stores recompute each element's address
// from the coordinates, more than half of the lowering's lines were such
// copies, and parse, cse and every later pass paid for them.
zt_status_t dg2_lazy_at(dg2_t* c, const dg2_val_t* v, char coords[][DG2_NAME],
                        char out[DG2_NAME]) {
  uintptr_t opp = (uintptr_t)v->op.ptr;
  if (v->kind != DV_LAZY || v->delta[0] || v->type.rank > 2 || (opp >> 48) != 0 ||
      v->res < 0 || v->res > 127)
    return lazy_at(c, v, coords, out);
  uint32_t ids[2] = {0, 0};
  for (int32_t d = 0; d < v->type.rank; ++d)
    if (!(ids[d] = dg2_intern(c, coords[d]))) return lazy_at(c, v, coords, out);
  uint64_t k1 = ((uint64_t)4 << 56) | ((uint64_t)v->res << 48) | (uint64_t)opp;
  uint64_t k2 = (uint64_t)ids[0] | ((uint64_t)ids[1] << 32);
  const char* hit = memo_get(c, k1, k2);
  if (hit) {
    snprintf(out, DG2_NAME, "%s", hit);
    return NULL;
  }
  ZT_RETURN_IF_ERROR(lazy_at(c, v, coords, out));
  memo_put(c, k1, k2, c->indent, out);
  return NULL;
}

static zt_status_t lazy_at(dg2_t* c, const dg2_val_t* v, char coords[][DG2_NAME],
                           char out[DG2_NAME]) {
  if (v->kind == DV_SCALAR) {
    snprintf(out, DG2_NAME, "%s", v->name);
    return NULL;
  }
  if (v->kind != DV_LAZY)
    return zt_make_status(ZT_STATUS_INTERNAL, "dg2: lazy read of a register tensor");
  if (v->delta[0]) {
    // A pointer tensor advanced in a loop by uniform steps (dg2_emit_for).
    dg2_val_t base = *v;
    base.delta[0] = 0;
    char b[DG2_NAME];
    ZT_RETURN_IF_ERROR(dg2_lazy_at(c, &base, coords, b));
    dg2_fresh(c, out);
    dg2_line(c, "%s = arith.addi %s, %s : i64", out, b, v->delta);
    return NULL;
  }
  MlirOperation op = v->op;
  if (dg2_op_is(op, "tile.splat") || dg2_op_is(op, "tile.ptr_to_int") ||
      dg2_op_is(op, "tile.int_to_ptr") || dg2_op_is(op, "tile.ptr_cast"))
    return operand_at(c, op, 0, coords, out);
  if (dg2_op_is(op, "tile.make_range")) {
    int64_t start = dg2_int_attr(op, "start", 0);
    if (start == 0) {
      snprintf(out, DG2_NAME, "%s", coords[0]);
      return NULL;
    }
    char cst[DG2_NAME];
    dg2_const(c, "i32", start, cst);
    dg2_fresh(c, out);
    dg2_line(c, "%s = arith.addi %s, %s : i32", out, coords[0], cst);
    return NULL;
  }
  if (dg2_op_is(op, "tile.broadcast") || dg2_op_is(op, "tile.expand_dims") ||
      dg2_op_is(op, "tile.trans") || dg2_op_is(op, "tile.reshape")) {
    zt_type_t st;
    ZT_RETURN_IF_ERROR(dg2_value_type(mlirOperationGetOperand(op, 0), &st));
    char sc[ZT_MAX_RANK][DG2_NAME];
    ZT_RETURN_IF_ERROR(dg2_shape_src_coords(c, op, &v->type, &st, coords, sc));
    return operand_at(c, op, 0, sc, out);
  }
  if (dg2_op_is(op, "tile.addptr")) {
    char b[DG2_NAME], o[DG2_NAME];
    ZT_RETURN_IF_ERROR(operand_at(c, op, 0, coords, b));
    ZT_RETURN_IF_ERROR(operand_at(c, op, 1, coords, o));
    zt_type_t ot;
    ZT_RETURN_IF_ERROR(dg2_value_type(mlirOperationGetOperand(op, 1), &ot));
    return dg2_addptr_scalar(c, b, o, ot.kind, v->type.pointee, out);
  }
  intptr_t nin = mlirOperationGetNumOperands(op);
  if (nin > 8) return dg2_op_error(op, ZT_STATUS_UNSUPPORTED, "too many operands");
  char ins[8][DG2_NAME], outs[8][DG2_NAME];
  for (intptr_t i = 0; i < nin; ++i) ZT_RETURN_IF_ERROR(operand_at(c, op, i, coords, ins[i]));
  ZT_RETURN_IF_ERROR(dg2_scalar_op(c, op, ins, outs));
  snprintf(out, DG2_NAME, "%s", outs[v->res]);
  return NULL;
}

// Whether a lazy value's elements depend on their coordinates (a
// make_range below it); splats of scalars do not, and then no coordinates
// are printed for them (dead code the memo above would otherwise reuse).
static bool needs_coords(dg2_t* c, const dg2_val_t* v, int depth) {
  if (v->kind == DV_SCALAR) return false;
  if (v->kind != DV_LAZY || depth > 32) return true;
  MlirOperation op = v->op;
  if (dg2_op_is(op, "tile.make_range") || dg2_op_is(op, "tile.reshape")) return true;
  intptr_t n = mlirOperationGetNumOperands(op);
  for (intptr_t i = 0; i < n; ++i) {
    const dg2_val_t* x = dg2_get(c, mlirOperationGetOperand(op, i));
    if (!x || needs_coords(c, x, depth + 1)) return true;
  }
  return false;
}

zt_status_t dg2_elem(dg2_t* c, const dg2_val_t* v, int32_t l, int32_t slot,
                     char out[DG2_NAME]) {
  if (v->kind == DV_SCALAR) {
    snprintf(out, DG2_NAME, "%s", v->name);
    return NULL;
  }
  if (v->kind == DV_DIST) {
    if (v->layout != l)
      return zt_make_status(ZT_STATUS_INTERNAL, "dg2: element read in the wrong layout");
    snprintf(out, DG2_NAME, "%s", v->el[slot]);
    return NULL;
  }
  char coords[ZT_MAX_RANK][DG2_NAME];
  if (needs_coords(c, v, 0))
    dg2_coords(c, l, slot, coords);
  else
    for (int32_t d = 0; d < ZT_MAX_RANK; ++d) snprintf(coords[d], DG2_NAME, "%%c0_i32");
  return dg2_lazy_at(c, v, coords, out);
}

void dg2_smem_ptr(dg2_t* c, const char* byte_off, char out[DG2_NAME]) {
  if (!c->smem_base[0]) {
    // Once, in the kernel entry (@zt_smem is printed when smem_bytes > 0,
    // which every caller has set).
    dg2_fresh(c, c->smem_base);
    dg2_entry_line(c, "%s = llvm.mlir.addressof @zt_smem : !llvm.ptr<3>", c->smem_base);
  }
  dg2_fresh(c, out);
  dg2_line(c, "%s = llvm.getelementptr %s[%s] : (!llvm.ptr<3>, i32) -> !llvm.ptr<3>, i8",
           out, c->smem_base, byte_off);
}

void dg2_barrier(dg2_t* c) {
  dg2_declare(c, "_Z7barrierj", "(i32)");
  dg2_line(c, "llvm.call @_Z7barrierj(%%c1_i32) : (i32) -> ()");
}

static void smem_elem_ptr_uncached(dg2_t* c, const zt_type_t* t, char coords[][DG2_NAME],
                                   char out[DG2_NAME]);

// Address in local memory of the element at coords of a row-major tensor
// of type t; memoized per (row length, element size, coordinate names) as
// lazy elements are: a layout conversion writes and then reads the same
// coordinates, and several conversions of one shape share them.
static void smem_elem_ptr(dg2_t* c, const zt_type_t* t, char coords[][DG2_NAME],
                          char out[DG2_NAME]) {
  int64_t row = t->rank == 2 ? t->shape[1] : 0;
  int64_t es = zt_tile_kind_bytes(t->kind);
  uint32_t ids[2] = {0, 0};
  bool ok = t->rank >= 1 && t->rank <= 2 && row >= 0 && row < ((int64_t)1 << 40) && es < 16;
  for (int32_t d = 0; ok && d < t->rank; ++d) ok = (ids[d] = dg2_intern(c, coords[d])) != 0;
  if (!ok) {
    smem_elem_ptr_uncached(c, t, coords, out);
    return;
  }
  uint64_t k1 = ((uint64_t)5 << 56) | ((uint64_t)t->rank << 48) | ((uint64_t)es << 44) |
                (uint64_t)row;
  uint64_t k2 = (uint64_t)ids[0] | ((uint64_t)ids[1] << 32);
  const char* hit = memo_get(c, k1, k2);
  if (hit) {
    snprintf(out, DG2_NAME, "%s", hit);
    return;
  }
  smem_elem_ptr_uncached(c, t, coords, out);
  memo_put(c, k1, k2, c->indent, out);
}

static void smem_elem_ptr_uncached(dg2_t* c, const zt_type_t* t, char coords[][DG2_NAME],
                                   char out[DG2_NAME]) {
  char lin[DG2_NAME];
  snprintf(lin, DG2_NAME, "%s", coords[0]);
  for (int32_t d = 1; d < t->rank; ++d) {
    char cst[DG2_NAME], m[DG2_NAME], a[DG2_NAME];
    if (strcmp(lin, "%c0_i32") == 0) {  // 0 * shape[d] + coords[d]
      snprintf(lin, DG2_NAME, "%s", coords[d]);
      continue;
    }
    dg2_const(c, "i32", t->shape[d], cst);
    dg2_fresh(c, m);
    dg2_line(c, "%s = arith.muli %s, %s : i32", m, lin, cst);
    dg2_fresh(c, a);
    dg2_line(c, "%s = arith.addi %s, %s : i32", a, m, coords[d]);
    snprintf(lin, DG2_NAME, "%s", a);
  }
  char cst[DG2_NAME], b[DG2_NAME];
  dg2_const(c, "i32", zt_tile_kind_bytes(t->kind), cst);
  dg2_fresh(c, b);
  dg2_line(c, "%s = arith.muli %s, %s : i32", b, lin, cst);
  dg2_smem_ptr(c, b, out);
}

void dg2_smem_store_elem(dg2_t* c, const zt_type_t* t, char coords[][DG2_NAME],
                         const char* x) {
  char p[DG2_NAME], v[DG2_NAME];
  smem_elem_ptr(c, t, coords, p);
  snprintf(v, DG2_NAME, "%s", x);
  if (t->kind == ZT_I1) {
    dg2_fresh(c, v);
    dg2_line(c, "%s = arith.extui %s : i1 to i8", v, x);
  }
  dg2_line(c, "llvm.store %s, %s : %s, !llvm.ptr<3>", v, p, dg2_mem(t->kind));
}

void dg2_smem_load_elem(dg2_t* c, const zt_type_t* t, char coords[][DG2_NAME],
                        char out[DG2_NAME]) {
  char p[DG2_NAME];
  smem_elem_ptr(c, t, coords, p);
  dg2_fresh(c, out);
  dg2_line(c, "%s = llvm.load %s : !llvm.ptr<3> -> %s", out, p, dg2_mem(t->kind));
  if (t->kind == ZT_I1) {
    char b[DG2_NAME];
    dg2_fresh(c, b);
    dg2_line(c, "%s = arith.trunci %s : i8 to i1", b, out);
    snprintf(out, DG2_NAME, "%s", b);
  }
}

void dg2_need_smem(dg2_t* c, int64_t bytes) {
  if (bytes > c->smem_bytes) c->smem_bytes = bytes;
}

// Writes a DIST value to local memory (row-major), between barriers.
zt_status_t dg2_smem_write(dg2_t* c, const dg2_val_t* v) {
  if (v->kind != DV_DIST) return zt_make_status(ZT_STATUS_INTERNAL, "dg2: smem write");
  dg2_need_smem(c, zt_type_numel(v->type) * zt_tile_kind_bytes(v->type.kind));
  dg2_barrier(c);
  int32_t e = c->layouts[v->layout].e;
  for (int32_t k = 0; k < e; ++k) {
    char coords[ZT_MAX_RANK][DG2_NAME];
    dg2_coords(c, v->layout, k, coords);
    dg2_smem_store_elem(c, &v->type, coords, v->el[k]);
  }
  dg2_barrier(c);
  return NULL;
}

zt_status_t dg2_stage_in_smem(dg2_t* c, MlirValue v, const zt_type_t* st) {
  const dg2_val_t* x;
  ZT_RETURN_IF_ERROR(dg2_get_checked(c, v, &x));
  dg2_val_t d = *x;
  if (d.kind != DV_DIST) {
    int32_t l;
    ZT_RETURN_IF_ERROR(dg2_blocked(c, st->rank, st->shape, &l));
    ZT_RETURN_IF_ERROR(dg2_to_layout(c, x, l, &d));
  }
  return dg2_smem_write(c, &d);
}

zt_status_t dg2_to_layout(dg2_t* c, const dg2_val_t* v, int32_t l, dg2_val_t* out) {
  if (v->kind == DV_DIST && v->layout == l) {
    *out = *v;
    return NULL;
  }
  int32_t e = c->layouts[l].e;
  dg2_val_t r = {.kind = DV_DIST, .type = v->type, .layout = l};
  r.el = dg2_alloc_names(c, e);
  if (!r.el) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "dg2 values");
  if (v->kind == DV_DIST) {
    ZT_RETURN_IF_ERROR(dg2_smem_write(c, v));
    for (int32_t k = 0; k < e; ++k) {
      char coords[ZT_MAX_RANK][DG2_NAME];
      dg2_coords(c, l, k, coords);
      dg2_smem_load_elem(c, &v->type, coords, r.el[k]);
    }
  } else {
    for (int32_t k = 0; k < e; ++k) ZT_RETURN_IF_ERROR(dg2_elem(c, v, l, k, r.el[k]));
  }
  *out = r;
  return NULL;
}
