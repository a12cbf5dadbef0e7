// tile.dot on f32 accumulators as a register-blocked micro-kernel in MLIR's
// vector dialect.
//
// Why: the scalar form (cpu_control.c) loads and stores every accumulator
// element on every k step (two loads and a store per FMA). Here a block of
// DOT_MR rows x DOT_NV vectors of 16 columns stays in vector registers
// (scf.for iter_args) for the whole k loop: per k, DOT_NV vector loads of
// b, DOT_MR broadcasts of a, DOT_MR * DOT_NV FMAs. Each result element is
// still fma(a[m,k], b[k,n], acc) in increasing k, so the results equal the
// scalar form's bit for bit.
#include <stdio.h>

#include "cpu_lower.h"

// Rows per register block: 8 when the tile allows (16 accumulators of 16
// lanes with 2 vectors of columns: enough independent FMAs to cover the FMA
// latency on both ports, where 4 rows gave 8), else 4. With the vectorized
// block loads (cpu_block.c), 1024^3 fp32 through descriptors with 64x64x32
// tiles, one thread: 33 -> 27 ms (torch.mm 14.4 ms in the same run).
#define DOT_MR 8
#define DOT_LANES 16

static bool vec_input_kind(zt_scalar_kind_t k) { return k == ZT_F32 || k == ZT_F16; }

// Element of kind k (f32 or f16) at idx in `v`'s buffer as f32, broadcast to
// a vector; or a vector of 16 starting there (vec).
static void load_f32(cpu_t* c, const cpu_val_t* v, const char* idx, bool vec,
                     char out[ZT_CPU_NAME]) {
  char ty[96], x[ZT_CPU_NAME];
  const char* et = cpu_elem(v->type.kind);
  cpu_fresh(c, x);
  if (vec)
    cpu_line(c, "%s = vector.load %s[%s] : %s, vector<%dx%s>", x, v->name, idx,
             cpu_buf_type(c, v->buf, ty, sizeof ty), DOT_LANES, et);
  else
    cpu_line(c, "%s = memref.load %s[%s] : %s", x, v->name, idx,
             cpu_buf_type(c, v->buf, ty, sizeof ty));
  char f[ZT_CPU_NAME];
  snprintf(f, sizeof f, "%s", x);
  if (v->type.kind != ZT_F32) {
    cpu_fresh(c, f);
    if (vec)
      cpu_line(c, "%s = arith.extf %s : vector<%dx%s> to vector<%dxf32>", f, x, DOT_LANES, et,
               DOT_LANES);
    else
      cpu_line(c, "%s = arith.extf %s : %s to f32", f, x, et);
  }
  if (vec) {
    snprintf(out, ZT_CPU_NAME, "%s", f);
    return;
  }
  cpu_fresh(c, out);
  cpu_line(c, "%s = vector.broadcast %s : f32 to vector<%dxf32>", out, f, DOT_LANES);
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

zt_status_t cpu_emit_dot_vector(cpu_t* c, const cpu_val_t* a, const cpu_val_t* b,
                                const cpu_val_t* work, int64_t M, int64_t K, int64_t N,
                                bool* done) {
  *done = false;
  if (a->kind != CPU_BUFFER || b->kind != CPU_BUFFER || work->kind != CPU_BUFFER ||
      work->type.kind != ZT_F32 || !vec_input_kind(a->type.kind) ||
      !vec_input_kind(b->type.kind) || M % 4 || N % DOT_LANES || K < 1)
    return NULL;
  const int nv = N % (2 * DOT_LANES) == 0 ? 2 : 1;  // vectors of columns per block
  const int mr = M % DOT_MR == 0 ? DOT_MR : 4;       // rows per block
  const int nacc = mr * nv;
  char vt[32], wty[96];
  snprintf(vt, sizeof vt, "vector<%dxf32>", DOT_LANES);
  cpu_buf_type(c, work->buf, wty, sizeof wty);
  char c0[ZT_CPU_NAME], c1[ZT_CPU_NAME], cm[ZT_CPU_NAME], cn[ZT_CPU_NAME], ck[ZT_CPU_NAME],
      smr[ZT_CPU_NAME], snb[ZT_CPU_NAME], m0[ZT_CPU_NAME], n0[ZT_CPU_NAME];
  cpu_index(c, 0, c0);
  cpu_index(c, 1, c1);
  cpu_index(c, M, cm);
  cpu_index(c, N, cn);
  cpu_index(c, K, ck);
  cpu_index(c, mr, smr);
  cpu_index(c, (int64_t)nv * DOT_LANES, snb);
  snprintf(m0, sizeof m0, "%%i%d", c->next_id++);
  cpu_line(c, "scf.for %s = %s to %s step %s {", m0, c0, cm, smr);
  ++c->indent;
  snprintf(n0, sizeof n0, "%%i%d", c->next_id++);
  cpu_line(c, "scf.for %s = %s to %s step %s {", n0, c0, cn, snb);
  ++c->indent;
  // Row starts in a and in the result: (m0 + i) * K and (m0 + i) * N + n0.
  char arow[DOT_MR][ZT_CPU_NAME], wpos[DOT_MR][2][ZT_CPU_NAME], init[DOT_MR][2][ZT_CPU_NAME];
  for (int i = 0; i < mr; ++i) {
    char mi[ZT_CPU_NAME], t[ZT_CPU_NAME], kk[ZT_CPU_NAME], nn[ZT_CPU_NAME], wr[ZT_CPU_NAME];
    offset(c, m0, i, mi);
    cpu_fresh(c, t);
    cpu_line(c, "%s = arith.muli %s, %s : index", t, mi, cpu_index(c, K, kk));
    snprintf(arow[i], ZT_CPU_NAME, "%s", t);
    cpu_fresh(c, t);
    cpu_line(c, "%s = arith.muli %s, %s : index", t, mi, cpu_index(c, N, nn));
    cpu_fresh(c, wr);
    cpu_line(c, "%s = arith.addi %s, %s : index", wr, t, n0);
    for (int j = 0; j < nv; ++j) {
      offset(c, wr, (int64_t)j * DOT_LANES, wpos[i][j]);
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
  // b[k, n0 + 16 j]
  char bv[2][ZT_CPU_NAME], brow[ZT_CPU_NAME], nn[ZT_CPU_NAME];
  cpu_fresh(c, brow);
  cpu_line(c, "%s = arith.muli %s, %s : index", brow, k, cpu_index(c, N, nn));
  char bpos[ZT_CPU_NAME];
  cpu_fresh(c, bpos);
  cpu_line(c, "%s = arith.addi %s, %s : index", bpos, brow, n0);
  for (int j = 0; j < nv; ++j) {
    char p[ZT_CPU_NAME];
    offset(c, bpos, (int64_t)j * DOT_LANES, p);
    load_f32(c, b, p, true, bv[j]);
  }
  char next[DOT_MR][2][ZT_CPU_NAME];
  for (int i = 0; i < mr; ++i) {
    char p[ZT_CPU_NAME], av[ZT_CPU_NAME];
    cpu_fresh(c, p);
    cpu_line(c, "%s = arith.addi %s, %s : index", p, arow[i], k);
    load_f32(c, a, p, false, av);
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
  *done = true;
  return NULL;
}
