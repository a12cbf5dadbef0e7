// tile.dot on f32 accumulators as a register-blocked micro-kernel in MLIR's
// vector dialect.
//
// Why: the scalar form (cpu_control.c) loads and stores every accumulator
// element on every k step (two loads and a store per FMA). Here a block of
// mr rows x nv vectors of columns stays in vector registers (scf.for
// iter_args) for the whole k loop: per k, nv vector loads of b, mr
// broadcasts of a, mr * nv FMAs (dot_block below picks the sizes). Each
// result element is still fma(a[m,k], b[k,n], acc) in increasing k, so the
// results equal the scalar form's bit for bit, whatever the block.
#include <stdio.h>
#include <stdlib.h>

#include "cpu_lower.h"

// At most 8 rows per register block (on AVX-512: 16 accumulators of 16
// lanes with 2 vectors of columns, enough independent FMAs to cover the FMA
// latency on both ports, where 4 rows gave 8). With the vectorized block
// loads (cpu_block.c), 1024^3 fp32 through descriptors with 64x64x32 tiles,
// one thread: 33 -> 27 ms (torch.mm 14.4 ms in the same run).
#define DOT_MR 8

static bool vec_input_kind(zt_scalar_kind_t k) { return k == ZT_F32 || k == ZT_F16; }

// Element of kind k (f32 or f16) at idx in `v`'s buffer as f32, broadcast to
// a vector of `lanes`; or the vector of `lanes` starting there (vec).
static void load_f32(cpu_t* c, const cpu_val_t* v, const char* idx, int lanes, bool vec,
                     char out[ZT_CPU_NAME]) {
  char ty[96], x[ZT_CPU_NAME];
  const char* et = cpu_elem(v->type.kind);
  cpu_fresh(c, x);
  if (vec)
    cpu_line(c, "%s = vector.load %s[%s] : %s, vector<%dx%s>", x, v->name, idx,
             cpu_buf_type(c, v->buf, ty, sizeof ty), lanes, et);
  else
    cpu_line(c, "%s = memref.load %s[%s] : %s", x, v->name, idx,
             cpu_buf_type(c, v->buf, ty, sizeof ty));
  char f[ZT_CPU_NAME];
  snprintf(f, sizeof f, "%s", x);
  if (v->type.kind != ZT_F32) {
    cpu_fresh(c, f);
    if (vec)
      cpu_line(c, "%s = arith.extf %s : vector<%dx%s> to vector<%dxf32>", f, x, lanes, et,
               lanes);
    else
      cpu_line(c, "%s = arith.extf %s : %s to f32", f, x, et);
  }
  if (vec) {
    snprintf(out, ZT_CPU_NAME, "%s", f);
    return;
  }
  cpu_fresh(c, out);
  cpu_line(c, "%s = vector.broadcast %s : f32 to vector<%dxf32>", out, f, lanes);
}

// `a` read in place (issue 16: the tutorial matmul's `tl.load(a_ptrs)`
// feeding `tl.dot`): the load copied each row into a stack buffer on every
// k step (with b's, 28% of 512^3), then the dot read the buffer. When the load's rows
// are consecutive in memory and its mask is all true (rows_ok, computed by
// emit_row_load in cpu_ops.c), the load copies nothing and the dot reads row
// r from its first address instead; otherwise from the buffer, which the
// load filled. Row r's start is a select of the two, so one micro-kernel
// serves both and reads the same values in the same order.
static void buf_ptr(cpu_t* c, const cpu_val_t* v, char out[ZT_CPU_NAME]) {
  char ty[96], i[ZT_CPU_NAME], i64[ZT_CPU_NAME];
  cpu_fresh(c, i);
  cpu_line(c, "%s = memref.extract_aligned_pointer_as_index %s : %s -> index", i, v->name,
           cpu_buf_type(c, v->buf, ty, sizeof ty));
  cpu_fresh(c, i64);
  cpu_line(c, "%s = arith.index_cast %s : index to i64", i64, i);
  cpu_fresh(c, out);
  cpu_line(c, "%s = llvm.inttoptr %s : i64 to !llvm.ptr", out, i64);
}

// Start of row `row` (an index SSA name) of v, a tile with `cols` columns.
static void row_ptr(cpu_t* c, const cpu_val_t* v, const char* bufp, const char* row,
                    int64_t cols, char out[ZT_CPU_NAME]) {
  char ty[96], cc[ZT_CPU_NAME], off[ZT_CPU_NAME], pa[ZT_CPU_NAME], pp[ZT_CPU_NAME],
      o64[ZT_CPU_NAME], pb[ZT_CPU_NAME];
  cpu_fresh(c, off);
  cpu_line(c, "%s = arith.muli %s, %s : index", off, row, cpu_index(c, cols, cc));
  cpu_fresh(c, pa);
  cpu_line(c, "%s = memref.load %s[%s] : %s", pa, v->rows_ptr, off,
           cpu_buf_type(c, v->rows_ptr_buf, ty, sizeof ty));
  cpu_fresh(c, pp);
  cpu_line(c, "%s = llvm.inttoptr %s : i64 to !llvm.ptr", pp, pa);
  cpu_fresh(c, o64);
  cpu_line(c, "%s = arith.index_cast %s : index to i64", o64, off);
  cpu_fresh(c, pb);
  cpu_line(c, "%s = llvm.getelementptr %s[%s] : (!llvm.ptr, i64) -> !llvm.ptr, %s", pb, bufp,
           o64, cpu_elem(v->type.kind));
  cpu_fresh(c, out);
  cpu_line(c, "%s = llvm.select %s, %s, %s : i1, !llvm.ptr", out, v->rows_ok, pp, pb);
}

// Element at column `col` (an index) of the row starting at rp, as stored.
static void load_elem_at(cpu_t* c, zt_scalar_kind_t kind, const char* rp, const char* col,
                         char x[ZT_CPU_NAME]) {
  char c64[ZT_CPU_NAME], g[ZT_CPU_NAME];
  const char* e = cpu_elem(kind);
  cpu_fresh(c, c64);
  cpu_line(c, "%s = arith.index_cast %s : index to i64", c64, col);
  cpu_fresh(c, g);
  cpu_line(c, "%s = llvm.getelementptr %s[%s] : (!llvm.ptr, i64) -> !llvm.ptr, %s", g, rp, c64,
           e);
  cpu_fresh(c, x);
  cpu_line(c, "%s = llvm.load %s {alignment = %d : i64} : !llvm.ptr -> %s", x, g,
           zt_tile_kind_bytes(kind), e);
}

// That element as f32, broadcast to a vector of `lanes`.
static void load_f32_at(cpu_t* c, zt_scalar_kind_t kind, const char* rp, const char* col,
                        int lanes, char out[ZT_CPU_NAME]) {
  char x[ZT_CPU_NAME];
  const char* e = cpu_elem(kind);
  load_elem_at(c, kind, rp, col, x);
  char f[ZT_CPU_NAME];
  snprintf(f, sizeof f, "%s", x);
  if (kind != ZT_F32) {
    cpu_fresh(c, f);
    cpu_line(c, "%s = arith.extf %s : %s to f32", f, x, e);
  }
  cpu_fresh(c, out);
  cpu_line(c, "%s = vector.broadcast %s : f32 to vector<%dxf32>", out, f, lanes);
}

void cpu_dot_fill_rows(cpu_t* c, const cpu_val_t* v) {
  if (v->kind != CPU_BUFFER || !v->rows_ok[0]) return;
  int64_t cols = v->type.shape[v->type.rank - 1], rows = 1;
  for (int d = 0; d + 1 < v->type.rank; ++d) rows *= v->type.shape[d];
  char bufp[ZT_CPU_NAME], r[ZT_CPU_NAME], j[ZT_CPU_NAME], cc[ZT_CPU_NAME], rb[ZT_CPU_NAME],
      rp[ZT_CPU_NAME], idx[ZT_CPU_NAME], x[ZT_CPU_NAME], ty[96];
  cpu_line(c, "scf.if %s {", v->rows_ok);
  ++c->indent;
  buf_ptr(c, v, bufp);
  cpu_loop_begin(c, rows, r);
  row_ptr(c, v, bufp, r, cols, rp);
  cpu_fresh(c, rb);
  cpu_line(c, "%s = arith.muli %s, %s : index", rb, r, cpu_index(c, cols, cc));
  cpu_loop_begin(c, cols, j);
  load_elem_at(c, v->type.kind, rp, j, x);
  cpu_fresh(c, idx);
  cpu_line(c, "%s = arith.addi %s, %s : index", idx, rb, j);
  cpu_line(c, "memref.store %s, %s[%s] : %s", x, v->name, idx,
           cpu_buf_type(c, v->buf, ty, sizeof ty));
  cpu_loop_end_lanes(c);
  cpu_loop_end(c);
  --c->indent;
  cpu_line(c, "}");
}

// Index constant expression base + k (base an index SSA name or NULL).
static void offset(cpu_t* c, const char* base, int64_t k, char out[ZT_CPU_NAME]) {
  char kc[ZT_CPU_NAME];
  if (!base) {
    cpu_index(c, k, out);
    return;
  }
  if (!k) {
    snprintf(out, ZT_CPU_NAME, "%s", base);
    return;
  }
  cpu_fresh(c, out);
  cpu_line(c, "%s = arith.addi %s, %s : index", out, base, cpu_index(c, k, kc));
}

// The register block: `lanes` f32 per vector, `nv` vectors of columns and
// `mr` rows, so mr * nv accumulators. They, the nv vectors of b's row k
// and a's broadcast must fit the vector registers, or LLVM spills the
// accumulators inside the k loop (issue 16, session 17: on an AVX2 host the
// AVX-512 block, 8 rows x 2 vector<16xf32>, was 32 ymm accumulators for
// 16 registers, and the k loop stored and reloaded 20 of them per step).
// The lanes follow the code's vector width (ZETILE_CPU_VECTOR_BITS, part of
// the compile key, else 512 bits with AVX-512F, else 256 bits), the
// registers the host (32 with AVX-512F, else 16): 8 x 2 x 16 lanes on
// AVX-512, 6 x 2 x 8 lanes on AVX2 (BLIS's Haswell shape: 12 accumulators).
typedef struct dot_block_s {
  int lanes, nv, mr;
} dot_block_t;

static dot_block_t dot_block(int64_t N) {
  const bool avx512 = cpu_host_avx512();
  const char* w = getenv("ZETILE_CPU_VECTOR_BITS");
  int bits = w && *w ? atoi(w) : avx512 ? 512 : 256;
  if (bits < 128) bits = 128;
  if (bits > 512) bits = 512;
  const int regs = avx512 ? 32 : 16;
  dot_block_t d;
  d.lanes = bits / 32;
  d.nv = N % (2 * d.lanes) == 0 ? 2 : 1;
  d.mr = (regs - d.nv - 1) / d.nv;
  if (d.mr > DOT_MR) d.mr = DOT_MR;
  return d;
}

// Rows [m_lo, m_hi) of work += a @ b in blocks of mr rows (m_hi - m_lo a
// multiple of mr): per block and column block, the accumulators are loaded
// from work, carried through the k loop and stored back.
static zt_status_t emit_rows(cpu_t* c, const cpu_val_t* a, const cpu_val_t* b,
                             const cpu_val_t* work, const char* abuf, int64_t m_lo,
                             int64_t m_hi, int mr, const dot_block_t* d, int64_t K,
                             int64_t N) {
  const int nv = d->nv, lanes = d->lanes, nacc = mr * nv;
  const bool a_in = abuf[0] != 0;
  char vt[32], wty[96];
  snprintf(vt, sizeof vt, "vector<%dxf32>", lanes);
  cpu_buf_type(c, work->buf, wty, sizeof wty);
  char c0[ZT_CPU_NAME], c1[ZT_CPU_NAME], clo[ZT_CPU_NAME], chi[ZT_CPU_NAME],
      cn[ZT_CPU_NAME], ck[ZT_CPU_NAME], smr[ZT_CPU_NAME], snb[ZT_CPU_NAME], m0[ZT_CPU_NAME],
      n0[ZT_CPU_NAME];
  cpu_index(c, 0, c0);
  cpu_index(c, 1, c1);
  cpu_index(c, m_lo, clo);
  cpu_index(c, m_hi, chi);
  cpu_index(c, N, cn);
  cpu_index(c, K, ck);
  cpu_index(c, mr, smr);
  cpu_index(c, (int64_t)nv * lanes, snb);
  snprintf(m0, sizeof m0, "%%i%d", c->next_id++);
  cpu_line(c, "scf.for %s = %s to %s step %s {", m0, clo, chi, smr);
  ++c->indent;
  snprintf(n0, sizeof n0, "%%i%d", c->next_id++);
  cpu_line(c, "scf.for %s = %s to %s step %s {", n0, c0, cn, snb);
  ++c->indent;
  // Row starts in a and in the result: (m0 + i) * K and (m0 + i) * N + n0;
  // in place, a's rows start at arow[i] (an !llvm.ptr).
  char arow[DOT_MR][ZT_CPU_NAME], wpos[DOT_MR][2][ZT_CPU_NAME], init[DOT_MR][2][ZT_CPU_NAME];
  for (int i = 0; i < mr; ++i) {
    char mi[ZT_CPU_NAME], t[ZT_CPU_NAME], kk[ZT_CPU_NAME], nn[ZT_CPU_NAME], wr[ZT_CPU_NAME];
    offset(c, m0, i, mi);
    if (a_in) {
      row_ptr(c, a, abuf, mi, K, arow[i]);
    } else {
      cpu_fresh(c, t);
      cpu_line(c, "%s = arith.muli %s, %s : index", t, mi, cpu_index(c, K, kk));
      snprintf(arow[i], ZT_CPU_NAME, "%s", t);
    }
    cpu_fresh(c, t);
    cpu_line(c, "%s = arith.muli %s, %s : index", t, mi, cpu_index(c, N, nn));
    cpu_fresh(c, wr);
    cpu_line(c, "%s = arith.addi %s, %s : index", wr, t, n0);
    for (int j = 0; j < nv; ++j) {
      offset(c, wr, (int64_t)j * lanes, wpos[i][j]);
      cpu_fresh(c, init[i][j]);
      cpu_line(c, "%s = vector.load %s[%s] : %s, %s", init[i][j], work->name, wpos[i][j], wty,
               vt);
    }
  }
  char loop[ZT_CPU_NAME], k[ZT_CPU_NAME], args[DOT_MR][2][ZT_CPU_NAME];
  cpu_fresh(c, loop);
  cpu_fresh(c, k);
  zt_strbuf_t line;
  zt_strbuf_init(&line);
  zt_strbuf_printf(&line, "%s:%d = scf.for %s = %s to %s step %s iter_args(", loop, nacc, k, c0,
                   ck, c1);
  for (int i = 0; i < mr; ++i)
    for (int j = 0; j < nv; ++j) {
      cpu_fresh(c, args[i][j]);
      zt_strbuf_printf(&line, "%s%s = %s", i || j ? ", " : "", args[i][j], init[i][j]);
    }
  zt_strbuf_puts(&line, ") -> (");
  for (int q = 0; q < nacc; ++q) zt_strbuf_printf(&line, "%s%s", q ? ", " : "", vt);
  zt_strbuf_puts(&line, ") {");
  bool failed = line.failed;
  if (!failed) cpu_line(c, "%s", line.data);
  zt_strbuf_deinit(&line);
  if (failed) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "cpu dot");
  ++c->indent;
  // b[k, n0 + lanes j]
  char bv[2][ZT_CPU_NAME], brow[ZT_CPU_NAME], nn[ZT_CPU_NAME];
  cpu_fresh(c, brow);
  cpu_line(c, "%s = arith.muli %s, %s : index", brow, k, cpu_index(c, N, nn));
  char bpos[ZT_CPU_NAME];
  cpu_fresh(c, bpos);
  cpu_line(c, "%s = arith.addi %s, %s : index", bpos, brow, n0);
  for (int j = 0; j < nv; ++j) {
    char p[ZT_CPU_NAME];
    offset(c, bpos, (int64_t)j * lanes, p);
    load_f32(c, b, p, lanes, true, bv[j]);
  }
  char next[DOT_MR][2][ZT_CPU_NAME];
  for (int i = 0; i < mr; ++i) {
    char p[ZT_CPU_NAME], av[ZT_CPU_NAME];
    if (a_in) {
      load_f32_at(c, a->type.kind, arow[i], k, lanes, av);
    } else {
      cpu_fresh(c, p);
      cpu_line(c, "%s = arith.addi %s, %s : index", p, arow[i], k);
      load_f32(c, a, p, lanes, false, av);
    }
    for (int j = 0; j < nv; ++j) {
      cpu_fresh(c, next[i][j]);
      cpu_line(c, "%s = math.fma %s, %s, %s : %s", next[i][j], av, bv[j], args[i][j], vt);
    }
  }
  zt_strbuf_init(&line);
  zt_strbuf_puts(&line, "scf.yield ");
  for (int i = 0; i < mr; ++i)
    for (int j = 0; j < nv; ++j)
      zt_strbuf_printf(&line, "%s%s", i || j ? ", " : "", next[i][j]);
  zt_strbuf_puts(&line, " : ");
  for (int q = 0; q < nacc; ++q) zt_strbuf_printf(&line, "%s%s", q ? ", " : "", vt);
  failed = line.failed;
  if (!failed) cpu_line(c, "%s", line.data);
  zt_strbuf_deinit(&line);
  if (failed) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "cpu dot");
  --c->indent;
  cpu_line(c, "}");
  for (int i = 0; i < mr; ++i)
    for (int j = 0; j < nv; ++j)
      cpu_line(c, "vector.store %s#%d, %s[%s] : %s, %s", loop, i * nv + j, work->name,
               wpos[i][j], wty, vt);
  --c->indent;
  cpu_line(c, "}");
  --c->indent;
  cpu_line(c, "}");
  return NULL;
}

zt_status_t cpu_emit_dot_vector(cpu_t* c, const cpu_val_t* a, const cpu_val_t* b,
                                const cpu_val_t* work, int64_t M, int64_t K, int64_t N,
                                bool* done) {
  *done = false;
  const dot_block_t d = dot_block(N);
  if (a->kind != CPU_BUFFER || b->kind != CPU_BUFFER || work->kind != CPU_BUFFER ||
      work->type.kind != ZT_F32 || !vec_input_kind(a->type.kind) ||
      !vec_input_kind(b->type.kind) || M < 1 || N % d.lanes || K < 1)
    return NULL;
  // Only a is read in place (emit_row_load marks no b): b's row k is read
  // once per block of rows (4 times for M = 32), and read in place those
  // reads missed L1 (rows a page apart at 1024^3: 1.3x slower in all).
  cpu_dot_fill_rows(c, b);
  char abuf[ZT_CPU_NAME] = "";
  if (a->rows_ok[0]) buf_ptr(c, a, abuf);
  // Whole blocks of mr rows, then the M % mr rows left as one smaller block
  // (M = 32 or 64 at 6 rows: 2 or 4 rows left).
  const int64_t tail = M % d.mr, whole = M - tail;
  if (whole) ZT_RETURN_IF_ERROR(emit_rows(c, a, b, work, abuf, 0, whole, d.mr, &d, K, N));
  if (tail) ZT_RETURN_IF_ERROR(emit_rows(c, a, b, work, abuf, whole, M, (int)tail, &d, K, N));
  *done = true;
  return NULL;
}
