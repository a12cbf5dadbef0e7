// Value map, buffers, constants and loop helpers of the CPU lowering.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_lower.h"

static size_t hash_ptr(uintptr_t p) {
  uint64_t x = (uint64_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (size_t)x;
}

static zt_status_t map_grow(cpu_t* c) {
  size_t cap = c->map_cap ? c->map_cap * 2 : 256;
  cpu_map_entry_t* m = calloc(cap, sizeof *m);
  if (!m) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "cpu lowering map");
  for (size_t i = 0; i < c->map_cap; ++i) {
    if (!c->map[i].key) continue;
    size_t j = hash_ptr(c->map[i].key) & (cap - 1);
    while (m[j].key) j = (j + 1) & (cap - 1);
    m[j] = c->map[i];
  }
  free(c->map);
  c->map = m;
  c->map_cap = cap;
  return NULL;
}

static cpu_val_t* val_at(cpu_t* c, int32_t i) {
  return &c->chunks[i / CPU_VAL_CHUNK][i % CPU_VAL_CHUNK];
}

static zt_status_t new_val(cpu_t* c, int32_t* out) {
  if (c->num_vals % CPU_VAL_CHUNK == 0) {
    int32_t k = c->num_vals / CPU_VAL_CHUNK;
    if (k == c->cap_chunks) {
      int32_t cap = c->cap_chunks ? c->cap_chunks * 2 : 16;
      cpu_val_t** p = realloc(c->chunks, (size_t)cap * sizeof *p);
      if (!p) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "cpu values");
      c->chunks = p;
      c->cap_chunks = cap;
    }
    c->chunks[k] = malloc(CPU_VAL_CHUNK * sizeof(cpu_val_t));
    if (!c->chunks[k]) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "cpu values");
  }
  *out = c->num_vals++;
  return NULL;
}

void cpu_values_free(cpu_t* c) {
  for (int32_t k = 0; k * CPU_VAL_CHUNK < c->num_vals; ++k) free(c->chunks[k]);
  free(c->chunks);
}

zt_status_t cpu_map_put(cpu_t* c, MlirValue v, const cpu_val_t* val) {
  if ((c->map_count + 1) * 2 > c->map_cap) ZT_RETURN_IF_ERROR(map_grow(c));
  uintptr_t key = (uintptr_t)v.ptr;
  size_t j = hash_ptr(key) & (c->map_cap - 1);
  while (c->map[j].key && c->map[j].key != key) j = (j + 1) & (c->map_cap - 1);
  if (!c->map[j].key) {
    ZT_RETURN_IF_ERROR(new_val(c, &c->map[j].index));
    ++c->map_count;
    c->map[j].key = key;
  }
  *val_at(c, c->map[j].index) = *val;
  return NULL;
}

const cpu_val_t* cpu_map_get(cpu_t* c, MlirValue v) {
  if (!c->map_cap) return NULL;
  uintptr_t key = (uintptr_t)v.ptr;
  size_t j = hash_ptr(key) & (c->map_cap - 1);
  while (c->map[j].key) {
    if (c->map[j].key == key) return val_at(c, c->map[j].index);
    j = (j + 1) & (c->map_cap - 1);
  }
  return NULL;
}

zt_status_t cpu_get(cpu_t* c, MlirValue v, const cpu_val_t** out) {
  *out = cpu_map_get(c, v);
  if (!*out)
    return zt_make_status(ZT_STATUS_INTERNAL,
                          "cpu lowering: use of a value that was not lowered");
  return NULL;
}

void cpu_fresh(cpu_t* c, char out[ZT_CPU_NAME]) {
  snprintf(out, ZT_CPU_NAME, "%%t%d", c->next_id++);
}

const char* cpu_elem(zt_scalar_kind_t k) {
  return k == ZT_PTR ? "i64" : zt_tile_kind_spelling(k);
}

zt_status_t cpu_new_buf(cpu_t* c, zt_type_t t, int32_t* out_buf) {
  if (c->num_bufs == c->cap_bufs) {
    int32_t cap = c->cap_bufs ? c->cap_bufs * 2 : 32;
    cpu_buf_t* b = realloc(c->bufs, (size_t)cap * sizeof *b);
    if (!b) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "cpu buffers");
    c->bufs = b;
    c->cap_bufs = cap;
  }
  int64_t n = 1;
  for (int i = 0; i < t.rank; ++i) n *= t.shape[i];
  c->bufs[c->num_bufs].kind = t.kind;
  c->bufs[c->num_bufs].numel = n;
  *out_buf = c->num_bufs++;
  return NULL;
}

zt_status_t cpu_new_buf_val(cpu_t* c, zt_type_t t, cpu_val_t* out) {
  memset(out, 0, sizeof *out);
  out->kind = CPU_BUFFER;
  out->type = t;
  ZT_RETURN_IF_ERROR(cpu_new_buf(c, t, &out->buf));
  snprintf(out->name, ZT_CPU_NAME, "%%b%d", out->buf);
  return NULL;
}

// Buffers of i1 hold a byte per element: LLVM loads and stores memrefs of
// i1 one element at a time (a mask read from an i1 buffer in a vector loop
// was ~6 mask-register instructions per lane), bytes as vectors.
const char* cpu_buf_type(cpu_t* c, int32_t buf, char* tmp, size_t n) {
  zt_scalar_kind_t k = c->bufs[buf].kind;
  snprintf(tmp, n, "memref<%lldx%s>", (long long)c->bufs[buf].numel,
           k == ZT_I1 ? "i8" : cpu_elem(k));
  return tmp;
}

const char* cpu_index(cpu_t* c, int64_t v, char out[ZT_CPU_NAME]) {
  if (v < 0)
    snprintf(out, ZT_CPU_NAME, "%%cm%lld", (long long)-v);
  else
    snprintf(out, ZT_CPU_NAME, "%%c%lld", (long long)v);
  for (int32_t i = 0; i < c->num_index_consts; ++i)
    if (c->index_consts[i] == v) return out;
  if (c->num_index_consts == c->cap_index_consts) {
    int32_t cap = c->cap_index_consts ? c->cap_index_consts * 2 : 32;
    int64_t* p = realloc(c->index_consts, (size_t)cap * sizeof *p);
    if (!p) {
      c->entry.failed = true;
      return out;
    }
    c->index_consts = p;
    c->cap_index_consts = cap;
  }
  c->index_consts[c->num_index_consts++] = v;
  zt_strbuf_printf(&c->entry, "    %s = arith.constant %lld : index\n", out,
                   (long long)v);
  return out;
}

const char* cpu_zero(cpu_t* c, zt_scalar_kind_t k, char out[ZT_CPU_NAME]) {
  snprintf(out, ZT_CPU_NAME, "%%zero_%s", zt_tile_kind_spelling(k));
  if (!(c->zero_consts & (1u << k))) {
    c->zero_consts |= 1u << k;
    bool f = k == ZT_F16 || k == ZT_BF16 || k == ZT_F32 || k == ZT_F64;
    if (k == ZT_I1)  // a bool literal carries its type
      zt_strbuf_printf(&c->entry, "    %s = arith.constant false\n", out);
    else
      zt_strbuf_printf(&c->entry, "    %s = arith.constant %s : %s\n", out,
                       f ? "0.0" : "0", cpu_elem(k));
  }
  return out;
}

bool cpu_scalar_i64(cpu_t* c, const cpu_val_t* s, char out[ZT_CPU_NAME]) {
  if (!s || s->kind != CPU_SCALAR) return false;
  if (s->type.kind == ZT_I64) {
    snprintf(out, ZT_CPU_NAME, "%s", s->name);
    return true;
  }
  if (s->type.kind != ZT_I32) return false;
  cpu_fresh(c, out);
  cpu_line(c, "%s = arith.extsi %s : i32 to i64", out, s->name);
  return true;
}

void cpu_line(cpu_t* c, const char* fmt, ...) {
  for (int i = 0; i < c->indent; ++i) zt_strbuf_append(&c->body, "  ", 2);
  va_list ap;
  va_start(ap, fmt);
  zt_strbuf_vprintf(&c->body, fmt, ap);
  va_end(ap);
  zt_strbuf_append(&c->body, "\n", 1);
}

void cpu_read(cpu_t* c, const cpu_val_t* v, const char* idx,
              char out[ZT_CPU_NAME]) {
  if (v->kind == CPU_LAZY) {
    cpu_read_lazy(c, v, idx, out);
    return;
  }
  if (v->kind != CPU_BUFFER) {
    snprintf(out, ZT_CPU_NAME, "%s", v->name);
    return;
  }
  char ty[96];
  cpu_fresh(c, out);
  cpu_line(c, "%s = memref.load %s[%s] : %s", out, v->name, idx,
           cpu_buf_type(c, v->buf, ty, sizeof ty));
  if (c->bufs[v->buf].kind == ZT_I1) {
    char byte[ZT_CPU_NAME];
    snprintf(byte, sizeof byte, "%s", out);
    cpu_fresh(c, out);
    cpu_line(c, "%s = arith.trunci %s : i8 to i1", out, byte);
  }
}

void cpu_write(cpu_t* c, int32_t buf, const char* idx, const char* x) {
  char ty[96], byte[ZT_CPU_NAME];
  if (c->bufs[buf].kind == ZT_I1) {
    cpu_fresh(c, byte);
    cpu_line(c, "%s = arith.extui %s : i1 to i8", byte, x);
    x = byte;
  }
  cpu_line(c, "memref.store %s, %%b%d[%s] : %s", x, buf, idx,
           cpu_buf_type(c, buf, ty, sizeof ty));
}

void cpu_loop_begin(cpu_t* c, int64_t n, char iv[ZT_CPU_NAME]) {
  char c0[ZT_CPU_NAME], cn[ZT_CPU_NAME], c1[ZT_CPU_NAME];
  cpu_index(c, 0, c0);
  cpu_index(c, n, cn);
  cpu_index(c, 1, c1);
  snprintf(iv, ZT_CPU_NAME, "%%i%d", c->next_id++);
  cpu_line(c, "scf.for %s = %s to %s step %s {", iv, c0, cn, c1);
  ++c->indent;
}

void cpu_loop_end(cpu_t* c) {
  --c->indent;
  cpu_line(c, "}");
}

// Lane loops are not unrolled: with AVX-512 the loop vectorizer turns the
// 16 lanes into one vector op. Without it (ymm: 8 f32 lanes) the vector
// loop ran twice per 16 lanes, one half after the other; interleaved by 2 it
// is both halves side by side, straight-line code whose two dependency
// chains overlap (exp's 13-deep chain, the accumulator's load-add-store).
// On the AVX2 EPYC (issue 16, session 18), one thread: softmax 4096x781
// 10.5-10.8 -> 9.1-9.3 ms, layer norm 2048x1531 4.9 -> 3.95 ms.
void cpu_loop_end_lanes(cpu_t* c) {
  --c->indent;
  if (cpu_host_avx512())
    cpu_line(c, "} {llvm.loop_annotation = #llvm.loop_annotation<unroll = "
                "#llvm.loop_unroll<disable = true>>}");
  else
    cpu_line(c, "} {llvm.loop_annotation = #llvm.loop_annotation<unroll = "
                "#llvm.loop_unroll<disable = true>, interleave = "
                "#llvm.loop_interleave<count = 2>>}");
}

void cpu_nest_begin(cpu_t* c, int32_t rank, const int64_t* shape,
                    char ivs[][ZT_CPU_NAME]) {
  for (int32_t d = 0; d < rank; ++d) cpu_loop_begin(c, shape[d], ivs[d]);
}

void cpu_nest_end(cpu_t* c, int32_t rank) {
  for (int32_t d = 0; d < rank; ++d) cpu_loop_end(c);
}

void cpu_strides(int32_t rank, const int64_t* shape, int64_t* strides) {
  int64_t s = 1;
  for (int32_t d = rank - 1; d >= 0; --d) {
    strides[d] = s;
    s *= shape[d];
  }
}

void cpu_linear(cpu_t* c, int32_t rank, char ivs[][ZT_CPU_NAME],
                const int64_t* strides, char out[ZT_CPU_NAME]) {
  char acc[ZT_CPU_NAME] = "";
  for (int32_t d = 0; d < rank; ++d) {
    if (strides[d] == 0) continue;
    char term[ZT_CPU_NAME];
    if (strides[d] == 1) {
      snprintf(term, sizeof term, "%s", ivs[d]);
    } else {
      char k[ZT_CPU_NAME];
      cpu_index(c, strides[d], k);
      cpu_fresh(c, term);
      cpu_line(c, "%s = arith.muli %s, %s : index", term, ivs[d], k);
    }
    if (!acc[0]) {
      snprintf(acc, sizeof acc, "%s", term);
    } else {
      char sum[ZT_CPU_NAME];
      cpu_fresh(c, sum);
      cpu_line(c, "%s = arith.addi %s, %s : index", sum, acc, term);
      snprintf(acc, sizeof acc, "%s", sum);
    }
  }
  if (!acc[0]) cpu_index(c, 0, acc);
  snprintf(out, ZT_CPU_NAME, "%s", acc);
}

typedef struct copy_body_s {
  const cpu_val_t* v;
  int32_t dst;
} copy_body_t;

static zt_status_t copy_body(cpu_t* c, void* user, const char* iv) {
  copy_body_t* cb = user;
  char x[ZT_CPU_NAME];
  cpu_read(c, cb->v, iv, x);
  cpu_write(c, cb->dst, iv, x);
  return NULL;
}

// A splat filled into a buffer goes through an empty inline asm first: LLVM
// then cannot see that it stores zeros and keeps the vector stores, instead
// of calling libc's memset (issue 16: layer norm's two 4 KB accumulators
// per row, zeroed by `rep stosb` at a start-up cost of ~100 cycles each,
// were 12% of its time).
void cpu_opaque_splat(cpu_t* c, const cpu_val_t* v, cpu_val_t* out) {
  *out = *v;
  zt_scalar_kind_t k = v->type.kind;
  const char* ity = k == ZT_F32 || k == ZT_I32 ? "i32"
                    : k == ZT_F64 || k == ZT_I64 || k == ZT_PTR ? "i64" : NULL;
  if (!ity) return;
  bool f = k == ZT_F32 || k == ZT_F64;
  char bits[ZT_CPU_NAME], o[ZT_CPU_NAME];
  if (f) {
    cpu_fresh(c, bits);
    cpu_line(c, "%s = arith.bitcast %s : %s to %s", bits, v->name, cpu_elem(k), ity);
  } else {
    snprintf(bits, sizeof bits, "%s", v->name);
  }
  cpu_fresh(c, o);
  cpu_line(c, "%s = llvm.inline_asm \"\", \"=r,0\" %s : (%s) -> %s", o, bits, ity, ity);
  if (f) {
    cpu_fresh(c, out->name);
    cpu_line(c, "%s = arith.bitcast %s : %s to %s", out->name, o, ity, cpu_elem(k));
  } else {
    snprintf(out->name, ZT_CPU_NAME, "%s", o);
  }
}

// A carried pointer tensor's yield `addptr(p, uniform)` when every reader
// of p in the loop is a row load under the hoisted check rows_ok: while the
// check holds those loads read p[i][0] alone, so only column 0 moves (the
// tutorial matmul's a_ptrs/b_ptrs: 2 x 2048 addresses per k step, ~12% of
// its time at 64x64x32 tiles, became 2 x 64); otherwise every address.
static bool copy_col0(cpu_t* c, const cpu_val_t* v, int32_t dst) {
  if (v->kind != CPU_LAZY || v->type.rank < 2) return false;
  int32_t t = 0;
  while (t < c->num_col0 && c->col0_buf[t] != dst) ++t;
  if (t == c->num_col0) return false;
  int32_t k = c->col0_k[t];
  if (c->rows_loads[k] != c->col0_loads[t]) return false;  // a load took another path
  int64_t cols = v->type.shape[v->type.rank - 1];
  int64_t rows = c->bufs[dst].numel / cols;
  copy_body_t cb = {v, dst};
  char ri[ZT_CPU_NAME], cc[ZT_CPU_NAME], idx[ZT_CPU_NAME], iv[ZT_CPU_NAME];
  cpu_line(c, "scf.if %s {", c->rows_ok[k]);
  ++c->indent;
  cpu_index(c, cols, cc);
  cpu_loop_begin(c, rows, ri);
  cpu_fresh(c, idx);
  cpu_line(c, "%s = arith.muli %s, %s : index", idx, ri, cc);
  zt_status_t s = copy_body(c, &cb, idx);
  cpu_loop_end(c);
  --c->indent;
  cpu_line(c, "} else {");
  ++c->indent;
  cpu_loop_begin(c, c->bufs[dst].numel, iv);
  if (!s) s = copy_body(c, &cb, iv);
  cpu_loop_end(c);
  --c->indent;
  cpu_line(c, "}");
  if (s) {
    zt_status_free(s);
    c->body.failed = true;
  }
  return true;
}

void cpu_copy_to(cpu_t* c, const cpu_val_t* v, int32_t dst) {
  if (v->kind == CPU_BUFFER && v->buf == dst) return;
  if (copy_col0(c, v, dst)) return;
  cpu_val_t opaque;
  if (v->kind == CPU_SPLAT || v->kind == CPU_SCALAR) {
    cpu_opaque_splat(c, v, &opaque);
    v = &opaque;
  }
  copy_body_t cb = {v, dst};
  // A lazy 1-D chain reading a mask `s + arange < n` (layer norm's
  // `acc += tl.load(..., mask=cols < N)`): two loops, split at its end.
  zt_status_t s;
  if (v->kind == CPU_LAZY && v->type.rank == 1) {
    s = cpu_split_loop(c, NULL, 0, v, c->bufs[dst].numel, (MlirValue){NULL}, copy_body, &cb);
  } else {
    char iv[ZT_CPU_NAME];
    cpu_loop_begin(c, c->bufs[dst].numel, iv);
    s = copy_body(c, &cb, iv);
    cpu_loop_end(c);
  }
  if (s) {  // cannot happen (lazy reads were checked when first lowered)
    zt_status_free(s);
    c->body.failed = true;
  }
}

zt_status_t cpu_materialize(cpu_t* c, const cpu_val_t* v, const cpu_val_t** out) {
  *out = v;
  if (v->kind != CPU_LAZY) return NULL;
  // Kept in a value slot of its own so the pointer stays valid.
  int32_t slot;
  ZT_RETURN_IF_ERROR(new_val(c, &slot));
  cpu_val_t* m = val_at(c, slot);
  ZT_RETURN_IF_ERROR(cpu_new_buf_val(c, v->type, m));
  cpu_copy_to(c, v, m->buf);
  *out = m;
  return NULL;
}

// v reads buffer `buf`: it is that buffer, or a lazy chain reading it (or
// too deep to tell).
static bool lazy_reads_buf(cpu_t* c, const cpu_val_t* v, int32_t buf, int depth) {
  if (v->kind == CPU_BUFFER) return v->buf == buf;
  if (v->kind != CPU_LAZY) return false;
  if (depth > 32) return true;
  for (intptr_t i = 0; i < mlirOperationGetNumOperands(v->op); ++i) {
    const cpu_val_t* x = cpu_map_get(c, mlirOperationGetOperand(v->op, i));
    if (!x || lazy_reads_buf(c, x, buf, depth + 1)) return true;
  }
  return false;
}

static zt_status_t parallel_copy_rest(cpu_t* c, int32_t n, const cpu_val_t* const* srcs,
                                      const int32_t* dsts, const bool* direct);

zt_status_t cpu_parallel_copy(cpu_t* c, int32_t n, const cpu_val_t* const* in_srcs,
                              const int32_t* dsts) {
  // One carried tensor: a lazy source (an elementwise chain, which reads
  // every input at the index it writes) goes straight into the destination,
  // even when it reads that destination (`acc += x` in a loop): no
  // temporary buffer and second copy per iteration.
  if (n == 1 && in_srcs[0]->kind == CPU_LAZY) {
    cpu_copy_to(c, in_srcs[0], dsts[0]);
    return NULL;
  }
  // Lazy sources read other buffers, which the copies may overwrite:
  // evaluate them all first, except those that go straight into their
  // destination at the end (direct[]): they read no other destination, and
  // no other copy reads theirs (several carried tensors: the tutorial
  // matmul's `a_ptrs += BLOCK_K * stride_ak`, one pass over the addresses
  // instead of a temporary and a copy back).
  const cpu_val_t* srcs[64];
  bool direct[64];
  if (n > 64) return zt_make_status(ZT_STATUS_UNSUPPORTED, "more than 64 carried values");
  for (int32_t i = 0; i < n; ++i) {
    direct[i] = in_srcs[i]->kind == CPU_LAZY;
    for (int32_t j = 0; j < n && direct[i]; ++j) {
      if (j == i) continue;
      if (lazy_reads_buf(c, in_srcs[i], dsts[j], 0) ||
          lazy_reads_buf(c, in_srcs[j], dsts[i], 0))
        direct[i] = false;
    }
  }
  for (int32_t i = 0; i < n; ++i) {
    srcs[i] = in_srcs[i];
    if (!direct[i]) ZT_RETURN_IF_ERROR(cpu_materialize(c, in_srcs[i], &srcs[i]));
  }
  zt_status_t ds = parallel_copy_rest(c, n, srcs, dsts, direct);
  for (int32_t i = 0; i < n && !ds; ++i)
    if (direct[i]) cpu_copy_to(c, srcs[i], dsts[i]);
  return ds;
}

static zt_status_t parallel_copy_rest(cpu_t* c, int32_t n, const cpu_val_t* const* srcs,
                                      const int32_t* dsts, const bool* direct) {
  bool clash = false;
  for (int32_t i = 0; i < n && !clash; ++i) {
    if (direct[i] || srcs[i]->kind != CPU_BUFFER) continue;
    for (int32_t j = 0; j < n; ++j)
      if (j != i && !direct[j] && srcs[i]->buf == dsts[j] &&
          !(srcs[j]->kind == CPU_BUFFER && srcs[j]->buf == dsts[j]))
        clash = true;
  }
  if (!clash) {
    for (int32_t i = 0; i < n; ++i)
      if (!direct[i]) cpu_copy_to(c, srcs[i], dsts[i]);
    return NULL;
  }
  // A permutation of carried buffers (e.g. yielding (b, a) for (a, b)).
  cpu_val_t* tmp = calloc((size_t)n, sizeof *tmp);
  if (!tmp) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "cpu copy");
  zt_status_t s = NULL;
  for (int32_t i = 0; i < n && !s; ++i) {
    if (direct[i]) continue;
    s = cpu_new_buf_val(c, srcs[i]->type, &tmp[i]);
    if (!s) cpu_copy_to(c, srcs[i], tmp[i].buf);
  }
  for (int32_t i = 0; i < n && !s; ++i)
    if (!direct[i]) cpu_copy_to(c, &tmp[i], dsts[i]);
  free(tmp);
  return s;
}
