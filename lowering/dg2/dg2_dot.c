// tile.dot on DG2's XMX through the SIMD8 builtins of
// cl_intel_subgroup_matrix_multiply_accumulate:
//   float8 intel_sub_group_f16_f16_matrix_mad_k16(int8 a, int8 b, float8 acc)
//   float8 intel_sub_group_bf16_bf16_matrix_mad_k16(int8 a, int8 b, float8 acc)
//   int8   intel_sub_group_i8_i8_matrix_mad_k32(int8 a, int8 b, int8 acc)
// (IGC 2022 turns each into one `dpas.8x8 (8|M0)` on acm-g10). One call is
// an 8xK A block times a Kx8 B block, K = 8 * pack where pack = elements per
// 32 bits (2 for fp16/bf16, K 16; 4 for int8, K 32); in a subgroup of 8:
//   A: component i of lane j = A[i][pack*j .. pack*j + pack-1] (lowest
//      column in the lowest bits)
//   B: component i of lane j = B[pack*i .. pack*i + pack-1][j] (VNNI)
//   C: component i of lane j = C[i][j] (f32, or i32 for int8).
// fp32 dots are bf16 dots on pieces of the operands (dg2_dot_f32.c). Rows
// without XMX keep these layouts and put the products on FMAs (dg2_dot_fma.c).
// The dot's [M,N] tile is split over a wm x wn grid of subgroups; each
// subgroup computes its (M/wm) x (N/wn) part as 8x8 blocks, K in steps of
// 8 * pack. Layout hints (dg2_plan) make the loads feeding a dot produce its
// operand layouts directly, so no data moves between registers.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dg2_internal.h"

static bool same_shape(const zt_type_t* a, const dg2_layout_t* l) {
  if (a->rank != l->rank) return false;
  for (int32_t d = 0; d < a->rank; ++d)
    if (a->shape[d] != l->shape[d]) return false;
  return true;
}

static zt_status_t propagate(dg2_t* c, MlirValue v, int32_t l, int depth);

static zt_status_t propagate_operands(dg2_t* c, MlirOperation op, int32_t l, int depth) {
  intptr_t n = mlirOperationGetNumOperands(op);
  for (intptr_t i = 0; i < n; ++i)
    ZT_RETURN_IF_ERROR(propagate(c, mlirOperationGetOperand(op, i), l, depth + 1));
  return NULL;
}

static MlirOperation terminator(MlirBlock b) {
  MlirOperation last = {NULL};
  for (MlirOperation op = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    last = op;
  return last;
}

// Backwards from a dot operand: loads, elementwise ops and loop-carried
// values that produce it take its layout.
static zt_status_t propagate(dg2_t* c, MlirValue v, int32_t l, int depth) {
  if (depth > 200 || dg2_hint_get(c, v) >= 0) return NULL;
  zt_type_t t;
  zt_status_t s = dg2_value_type(v, &t);
  if (s) {
    zt_status_free(s);
    return NULL;
  }
  if (!same_shape(&t, &c->layouts[l])) return NULL;
  ZT_RETURN_IF_ERROR(dg2_hint_put(c, v, l));
  if (mlirValueIsABlockArgument(v)) {
    MlirBlock b = mlirBlockArgumentGetOwner(v);
    MlirOperation parent = mlirBlockGetParentOperation(b);
    intptr_t idx = mlirBlockArgumentGetArgNumber(v);
    if (!mlirOperationIsNull(parent) && dg2_op_is(parent, "scf.for") && idx >= 1) {
      ZT_RETURN_IF_ERROR(propagate(c, mlirOperationGetOperand(parent, 3 + idx - 1), l, depth + 1));
      ZT_RETURN_IF_ERROR(propagate(c, mlirOperationGetResult(parent, idx - 1), l, depth + 1));
      MlirOperation y = terminator(b);
      if (!mlirOperationIsNull(y))
        ZT_RETURN_IF_ERROR(propagate(c, mlirOperationGetOperand(y, idx - 1), l, depth + 1));
    }
    return NULL;
  }
  MlirOperation op = mlirOpResultGetOwner(v);
  if (dg2_op_is(op, "scf.for")) {
    intptr_t r = mlirOpResultGetResultNumber(v);
    MlirBlock b = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
    return propagate(c, mlirBlockGetArgument(b, r + 1), l, depth + 1);
  }
  if (dg2_op_is(op, "tile.block_load")) return NULL;  // its scalars keep no layout
  if (dg2_op_is(op, "tile.load") || dg2_op_is(op, "tile.addptr") ||
      dg2_op_prefix(op, "arith.") || dg2_op_prefix(op, "math."))
    return propagate_operands(c, op, l, depth);
  return NULL;
}

static zt_status_t dot_shapes(MlirOperation op, zt_type_t* a, zt_type_t* b, zt_type_t* acc) {
  ZT_RETURN_IF_ERROR(dg2_value_type(mlirOperationGetOperand(op, 0), a));
  ZT_RETURN_IF_ERROR(dg2_value_type(mlirOperationGetOperand(op, 1), b));
  ZT_RETURN_IF_ERROR(dg2_value_type(mlirOperationGetOperand(op, 2), acc));
  return NULL;
}

// How a dot maps onto a builtin.
typedef struct dot_kind_s {
  int32_t pack;     // elements of A and B per 32 bits
  const char* ety;  // register type of a packed element
  const char* fn;   // the builtin's mangled name
  const char* acc;  // accumulator element type
  int32_t pieces;   // fp32 operands: bf16 pieces each (0: none, the inputs are used)
  bool fma;         // the row has no XMX: FMA products (dg2_dot_fma.c)
} dot_kind_t;

// A dot on a row without XMX: the same layouts with one element per
// channel (four int8 with DP4A), the products on FMAs (dg2_dot_fma.c).
static const char* fma_kind(dg2_t* c, const zt_type_t* a, const zt_type_t* b,
                            const zt_type_t* acc, dot_kind_t* k) {
  bool fl = a->kind == ZT_F16 || a->kind == ZT_BF16 || a->kind == ZT_F32;
  if (a->kind != b->kind || (!fl && a->kind != ZT_I8))
    return "only fp16 x fp16, bf16 x bf16, fp32 x fp32 and int8 x int8 inputs (FMA dots: this "
           "GPU has no XMX)";
  if (fl && acc->kind != ZT_F32) return "only fp32 accumulation of float dots";
  if (!fl && acc->kind != ZT_I32) return "only int32 accumulation of int8 dots";
  *k = (dot_kind_t){dg2_fma_pack(c, a->kind, a->shape[1]), "", "", fl ? "f32" : "i32", 0, true};
  if (a->shape[0] % 8 || b->shape[1] % 8 || a->shape[1] % 8)
    return "M, N and K must be multiples of 8 (FMA dots: this GPU has no XMX)";
  return NULL;
}

// Why a dot cannot use the DPAS path (NULL when it can; then *k says how).
static const char* dot_kind(dg2_t* c, MlirOperation op, const zt_type_t* a, const zt_type_t* b,
                            const zt_type_t* acc, dot_kind_t* k) {
  if (a->rank != 2 || b->rank != 2 || acc->rank != 2) return "only 2-D dots";
  if (c->target && !xe_target_has_xmx(c->target)) return fma_kind(c, a, b, acc, k);
  static const char* const f16 = "_Z38intel_sub_group_f16_f16_matrix_mad_k16Dv8_iS_Dv8_f";
  static const char* const bf16 = "_Z40intel_sub_group_bf16_bf16_matrix_mad_k16Dv8_iS_Dv8_f";
  static const char* const i8 = "_Z36intel_sub_group_i8_i8_matrix_mad_k32Dv8_iS_S_";
  static const char* const u8 = "_Z36intel_sub_group_u8_u8_matrix_mad_k32Dv8_jS_Dv8_i";
  if (a->kind == ZT_F16 && b->kind == ZT_F16) {
    *k = (dot_kind_t){2, "f16", f16, "f32", 0};
  } else if (a->kind == ZT_BF16 && b->kind == ZT_BF16) {
    *k = (dot_kind_t){2, "i16", bf16, "f32", 0};  // bf16 lives in i16 registers
  } else if (a->kind == ZT_F32 && b->kind == ZT_F32) {
    *k = (dot_kind_t){2, "i16", bf16, "f32", dg2_f32_pieces(op)};
  } else if (a->kind == ZT_I8 && b->kind == ZT_I8) {
    if (acc->kind != ZT_I32) return "only int32 accumulation of int8 dots";
    *k = (dot_kind_t){4, "i8", zt_dot_is_unsigned(op) ? u8 : i8, "i32", 0};
  } else {
    return "only fp16 x fp16, bf16 x bf16, fp32 x fp32 (as bf16 pieces) and int8 x int8 "
           "inputs";
  }
  if (k->pack == 2 && acc->kind != ZT_F32) return "only fp32 accumulation of float dots";
  if (a->shape[0] % 8 || b->shape[1] % 8 || a->shape[1] % (8 * k->pack))
    return k->pack == 4 ? "M and N must be multiples of 8 and K a multiple of 32 (int8)"
                        : "M and N must be multiples of 8 and K a multiple of 16";
  return NULL;
}

// K over the subgroups that would repeat a dot's blocks (session 21). A
// dot with fewer 8x8 output blocks than the grid has places gets them
// computed again by the extra subgroups (dg2_dpas_grid), each holding all of
// A and B. When the kernel's dots hold more operand registers together than
// the register file has (dot_regs, summed by dg2_plan), those subgroups take
// a slice of K each instead and the partial products are summed through
// local memory (emit_ksum), so a subgroup holds 1/wk of A and B.
// Attention's score dot at head dim 128 (16x16 tiles over 16 subgroups: 2 x
// 2 places) held the query, 8 rows x 128 halves a subgroup, across the KV
// loop in 64 registers and loaded the key in as many: the whole file of 128
// (316 scratch sends in its ISA for bf16). The d64 forward (64 + 24
// registers, no scratch send already) keeps whole K: the sum costs two
// barriers. ZETILE_DG2_KSPLIT=0 turns the split off, =R splits above R
// registers instead of the file's (to measure it).
static int32_t dot_ksplit(dg2_t* c, const dot_kind_t* dk, int64_t m, int64_t n, int64_t k) {
  if (dk->fma) return 1;
  const char* env = getenv("ZETILE_DG2_KSPLIT");
  long limit = env && *env ? strtol(env, NULL, 10) : 128;
  if (limit <= 0 || c->dot_regs <= limit) return 1;
  int32_t wm, wn;
  dg2_dpas_grid(c, m, n, &wm, &wn);
  int32_t wk = c->num_warps / (wm * wn);
  int64_t kb = k / (8 * dk->pack);
  while (wk > 1 && kb % wk) wk /= 2;
  return wk;
}

// Operand registers a lane of one dot with whole K (A and B; fp32 counts
// its elements, not its bf16 pieces).
static int64_t dot_operand_regs(dg2_t* c, const zt_type_t* a, const dot_kind_t* dk, int64_t m,
                                int64_t n, int64_t k) {
  if (dk->fma) return 0;
  int32_t wm, wn;
  dg2_dpas_grid(c, m, n, &wm, &wn);
  int64_t el = (m / wm) * k / 8 + k * (n / wn) / 8;
  return el * zt_tile_kind_bytes(a->kind) / 4;
}

static zt_status_t plan_block(dg2_t* c, MlirBlock b);

static zt_status_t plan_op(dg2_t* c, MlirOperation op) {
  intptr_t nr = mlirOperationGetNumRegions(op);
  for (intptr_t r = 0; r < nr; ++r) {
    MlirRegion reg = mlirOperationGetRegion(op, r);
    for (MlirBlock b = mlirRegionGetFirstBlock(reg); !mlirBlockIsNull(b);
         b = mlirBlockGetNextInRegion(b))
      ZT_RETURN_IF_ERROR(plan_block(c, b));
  }
  if (!dg2_op_is(op, "tile.dot")) return NULL;
  c->uses_dot = true;
  zt_type_t a, b, acc;
  dot_kind_t dk;
  zt_status_t s = dot_shapes(op, &a, &b, &acc);
  if (s || dot_kind(c, op, &a, &b, &acc, &dk)) {
    zt_status_free(s);
    return NULL;  // reported when the dot is lowered
  }
  int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  if (c->dot_regs < 0) {  // the sizing walk (dg2_plan's first)
    c->dot_regs_sum += dot_operand_regs(c, &a, &dk, m, n, k);
    return NULL;
  }
  int32_t la, lb, lc, wk = dot_ksplit(c, &dk, m, n, k);
  ZT_RETURN_IF_ERROR(dg2_dpas_layout_k(c, DL_DPAS_A, m, n, k, dk.pack, wk, &la));
  ZT_RETURN_IF_ERROR(dg2_dpas_layout_k(c, DL_DPAS_B, m, n, k, dk.pack, wk, &lb));
  ZT_RETURN_IF_ERROR(dg2_dpas_layout(c, DL_DPAS_C, m, n, k, dk.pack, &lc));
  ZT_RETURN_IF_ERROR(propagate(c, mlirOperationGetResult(op, 0), lc, 0));
  ZT_RETURN_IF_ERROR(propagate(c, mlirOperationGetOperand(op, 2), lc, 0));
  ZT_RETURN_IF_ERROR(propagate(c, mlirOperationGetOperand(op, 0), la, 0));
  ZT_RETURN_IF_ERROR(propagate(c, mlirOperationGetOperand(op, 1), lb, 0));
  return NULL;
}

static zt_status_t plan_block(dg2_t* c, MlirBlock b) {
  for (MlirOperation op = mlirBlockGetFirstOperation(b); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op))
    ZT_RETURN_IF_ERROR(plan_op(c, op));
  return NULL;
}

zt_status_t dg2_plan(dg2_t* c) {
  // First the operand registers of every dot (dot_ksplit's measure), then
  // the layouts.
  c->dot_regs = -1;
  c->dot_regs_sum = 0;
  ZT_RETURN_IF_ERROR(plan_op(c, c->lc->kernel));
  c->dot_regs = c->dot_regs_sum;
  c->uses_dot = false;
  return plan_op(c, c->lc->kernel);
}

// 8 * pack consecutive elements (el[first ..]) as the builtin's vector of
// eight i32 (OpenCL int8): element q of component i at bits q * 32/pack.
static void pack_operand(dg2_t* c, const dot_kind_t* dk, char (*el)[DG2_NAME], int32_t first,
                         char out[DG2_NAME]) {
  int32_t n = 8 * dk->pack;
  char v[DG2_NAME];
  dg2_fresh(c, v);
  dg2_line(c, "%s = llvm.mlir.undef : vector<%dx%s>", v, n, dk->ety);
  for (int32_t i = 0; i < n; ++i) {
    char idx[DG2_NAME], nv[DG2_NAME];
    dg2_const(c, "i32", i, idx);
    dg2_fresh(c, nv);
    dg2_line(c, "%s = llvm.insertelement %s, %s[%s : i32] : vector<%dx%s>", nv, el[first + i],
             v, idx, n, dk->ety);
    snprintf(v, DG2_NAME, "%s", nv);
  }
  dg2_fresh(c, out);
  dg2_line(c, "%s = llvm.bitcast %s : vector<%dx%s> to vector<8xi32>", out, v, n, dk->ety);
}

// The operand's elements packed for the builtin, one vector of eight i32 per
// (block, K step) in slot order, for each bf16 piece (fp32) or once:
// out[p * nw + w].
static zt_status_t pack_all(dg2_t* c, const dot_kind_t* dk, const dg2_val_t* v, int32_t e,
                            char (**out)[DG2_NAME]) {
  int32_t np = dk->pieces ? dk->pieces : 1, per = 8 * dk->pack, nw = e / per;
  char(*words)[DG2_NAME] = dg2_alloc_names(c, np * nw);
  if (!words) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "dg2 dot");
  if (!dk->pieces) {
    for (int32_t w = 0; w < nw; ++w) pack_operand(c, dk, v->el, w * per, words[w]);
    *out = words;
    return NULL;
  }
  // Each element is split once; piece p of slot s goes to pieces[p * e + s].
  char(*pieces)[DG2_NAME] = dg2_alloc_names(c, np * e);
  if (!pieces) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "dg2 dot");
  for (int32_t s = 0; s < e; ++s) {
    char ps[3][DG2_NAME];
    dg2_split_bf16(c, v->el[s], np, ps);
    for (int32_t p = 0; p < np; ++p) memcpy(pieces[p * e + s], ps[p], DG2_NAME);
  }
  for (int32_t p = 0; p < np; ++p)
    for (int32_t w = 0; w < nw; ++w)
      pack_operand(c, dk, pieces + (size_t)p * e, w * per, words[p * nw + w]);
  *out = words;
  return NULL;
}

// How v's elements pack for a dot (false: not a DPAS A/B operand of 16- or
// 8-bit elements on an XMX row; fp32 is split into bf16 pieces at the dot).
static bool prepack_kind(dg2_t* c, const dg2_val_t* v, dot_kind_t* dk) {
  if (v->kind != DV_DIST || !c->target || !xe_target_has_xmx(c->target)) return false;
  const dg2_layout_t* l = &c->layouts[v->layout];
  if (l->kind != DL_DPAS_A && l->kind != DL_DPAS_B) return false;
  if (v->type.kind == ZT_F16 && l->pack == 2) *dk = (dot_kind_t){2, "f16", "", "", 0, false};
  else if (v->type.kind == ZT_BF16 && l->pack == 2) *dk = (dot_kind_t){2, "i16", "", "", 0, false};
  else if (v->type.kind == ZT_I8 && l->pack == 4) *dk = (dot_kind_t){4, "i8", "", "", 0, false};
  else return false;
  return l->e % (8 * dk->pack) == 0;
}

zt_status_t dg2_prepack(dg2_t* c, const dg2_val_t* v, int32_t loaded) {
  dot_kind_t dk;
  if (!prepack_kind(c, v, &dk)) return NULL;
  int32_t per = 8 * dk.pack, e = c->layouts[v->layout].e;
  if (loaded % per) return NULL;
  dg2_packed_t* p = NULL;
  if (c->num_packed && c->packed[c->num_packed - 1].el == (const void*)v->el)
    p = &c->packed[c->num_packed - 1];
  if (!p) {
    if (c->num_packed == c->cap_packed) {
      int32_t cap = c->cap_packed ? 2 * c->cap_packed : 16;
      dg2_packed_t* q = realloc(c->packed, (size_t)cap * sizeof *q);
      if (!q) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "dg2 dot");
      c->packed = q;
      c->cap_packed = cap;
    }
    p = &c->packed[c->num_packed];
    p->words = dg2_alloc_names(c, e / per);
    if (!p->words) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "dg2 dot");
    p->el = v->el;
    p->layout = v->layout;
    p->n = 0;  // words packed so far; e / per when complete
    c->num_packed++;
  }
  int32_t w = loaded / per - 1;
  if (w != p->n) return NULL;  // not called in slot order: packed at the dot
  pack_operand(c, &dk, v->el, w * per, p->words[w]);
  p->n++;
  return NULL;
}

// The words dg2_prepack made of v's elements, else pack_all's.
static zt_status_t packed_words(dg2_t* c, const dot_kind_t* dk, const dg2_val_t* v, int32_t e,
                                char (**out)[DG2_NAME]) {
  if (!dk->pieces)
    for (int32_t i = c->num_packed - 1; i >= 0; --i)
      if (c->packed[i].el == (const void*)v->el && c->packed[i].layout == v->layout &&
          c->packed[i].n * 8 * dk->pack == e) {
        *out = c->packed[i].words;
        return NULL;
      }
  return pack_all(c, dk, v, e, out);
}

// The partial products of a dot with K in wk slices (dot_ksplit): each
// subgroup writes its C blocks to local memory as slice kk of a [wk * M, N]
// fp32 (int32) array, then every subgroup, the repeats of its place included,
// adds the wk partials of its blocks to the accumulator in slice order (the
// same order everywhere: the repeats agree bit for bit). r: the partial
// (overwritten with the sum); acc: the dot's C operand in C's layout.
static zt_status_t emit_ksum(dg2_t* c, int32_t lb, int32_t lc, dg2_val_t* r,
                             const dg2_val_t* acc) {
  const dg2_layout_t* L = &c->layouts[lc];
  int32_t wk = c->layouts[lb].wk, e = L->e;
  zt_type_t t = {.kind = r->type.kind, .rank = 2, .shape = {wk * L->m, L->n}};
  dg2_need_smem(c, zt_type_numel(t) * zt_tile_kind_bytes(t.kind));
  // This slice's first row: kk * M (kk from B's layout bases: k0 / kl).
  char kk[DG2_NAME], kl[DG2_NAME], mm[DG2_NAME], row0[DG2_NAME];
  dg2_fresh(c, kk);
  dg2_const(c, "i32", c->layouts[lb].k / wk, kl);
  dg2_line(c, "%s = arith.divui %s, %s : i32", kk, c->layouts[lb].base[0], kl);
  dg2_const(c, "i32", L->m, mm);
  dg2_fresh(c, row0);
  dg2_line(c, "%s = arith.muli %s, %s : i32", row0, kk, mm);
  bool fl = r->type.kind == ZT_F32;
  // Subgroups past wm * wn * wk repeat the first ones: only those write.
  int32_t writers = L->wm * L->wn * wk;
  char own[DG2_NAME] = "";
  if (writers < c->num_warps) {
    char w[DG2_NAME];
    dg2_const(c, "i32", writers, w);
    dg2_fresh(c, own);
    dg2_line(c, "%s = arith.cmpi ult, %%sg, %s : i32", own, w);
  }
  dg2_barrier(c);
  if (own[0]) {
    dg2_line(c, "scf.if %s {", own);
    c->indent++;
  }
  for (int32_t s = 0; s < e; ++s) {
    char co[ZT_MAX_RANK][DG2_NAME], at[2][DG2_NAME];
    dg2_coords(c, lc, s, co);
    dg2_fresh(c, at[0]);
    dg2_line(c, "%s = arith.addi %s, %s : i32", at[0], co[0], row0);
    memcpy(at[1], co[1], DG2_NAME);
    dg2_smem_store_elem(c, &t, at, r->el[s]);
  }
  if (own[0]) {
    c->indent--;
    dg2_line(c, "}");
  }
  dg2_barrier(c);
  for (int32_t s = 0; s < e; ++s) {
    char co[ZT_MAX_RANK][DG2_NAME], sum[DG2_NAME];
    dg2_coords(c, lc, s, co);
    memcpy(sum, acc->el[s], DG2_NAME);
    for (int32_t j = 0; j < wk; ++j) {
      char at[2][DG2_NAME], off[DG2_NAME], x[DG2_NAME], nsum[DG2_NAME];
      if (j == 0) {
        memcpy(at[0], co[0], DG2_NAME);
      } else {
        dg2_const(c, "i32", (long long)j * L->m, off);
        dg2_fresh(c, at[0]);
        dg2_line(c, "%s = arith.addi %s, %s : i32", at[0], co[0], off);
      }
      memcpy(at[1], co[1], DG2_NAME);
      dg2_smem_load_elem(c, &t, at, x);
      dg2_fresh(c, nsum);
      dg2_line(c, "%s = arith.add%s %s, %s : %s", nsum, fl ? "f" : "i", sum, x,
               fl ? "f32" : "i32");
      memcpy(sum, nsum, DG2_NAME);
    }
    memcpy(r->el[s], sum, DG2_NAME);
  }
  return NULL;
}

zt_status_t dg2_emit_dot(dg2_t* c, MlirOperation op) {
  zt_type_t a, b, acc;
  ZT_RETURN_IF_ERROR(dot_shapes(op, &a, &b, &acc));
  dot_kind_t dk;
  const char* why = dot_kind(c, op, &a, &b, &acc, &dk);
  if (why)
    return dg2_op_error(op, ZT_STATUS_UNSUPPORTED, "%s: %s", c->target ? c->target->name : "dg2",
                        why);
  int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
  int32_t la, lb, lc, wk = dot_ksplit(c, &dk, m, n, k);
  ZT_RETURN_IF_ERROR(dg2_dpas_layout_k(c, DL_DPAS_A, m, n, k, dk.pack, wk, &la));
  ZT_RETURN_IF_ERROR(dg2_dpas_layout_k(c, DL_DPAS_B, m, n, k, dk.pack, wk, &lb));
  ZT_RETURN_IF_ERROR(dg2_dpas_layout(c, DL_DPAS_C, m, n, k, dk.pack, &lc));
  const dg2_val_t *va, *vb, *vc;
  ZT_RETURN_IF_ERROR(dg2_get_checked(c, mlirOperationGetOperand(op, 0), &va));
  ZT_RETURN_IF_ERROR(dg2_get_checked(c, mlirOperationGetOperand(op, 1), &vb));
  ZT_RETURN_IF_ERROR(dg2_get_checked(c, mlirOperationGetOperand(op, 2), &vc));
  dg2_val_t A, B, C;
  ZT_RETURN_IF_ERROR(dg2_to_layout(c, va, la, &A));
  ZT_RETURN_IF_ERROR(dg2_to_layout(c, vb, lb, &B));
  ZT_RETURN_IF_ERROR(dg2_to_layout(c, vc, lc, &C));
  if (dk.fma) {
    dg2_val_t r;
    memset(&r, 0, sizeof r);
    r.kind = DV_DIST;
    ZT_RETURN_IF_ERROR(dg2_value_type(mlirOperationGetResult(op, 0), &r.type));
    r.layout = lc;
    r.el = dg2_alloc_names(c, c->layouts[lc].e);
    if (!r.el) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "dg2 dot");
    dg2_fma_dot_t d = {&A, &B, &C, a.kind, a.kind == ZT_I8 && zt_dot_is_unsigned(op)};
    ZT_RETURN_IF_ERROR(dg2_emit_dot_fma(c, &d, &r));
    return dg2_put(c, mlirOperationGetResult(op, 0), &r);
  }
  int32_t wm = c->layouts[lc].wm, wn = c->layouts[lc].wn;
  int64_t mb = m / wm / 8, nb = n / wn / 8, kb = k / wk / (8 * dk.pack);
  char vacc[32], sig[128];
  snprintf(vacc, sizeof vacc, "vector<8x%s>", dk.acc);
  snprintf(sig, sizeof sig, "(vector<8xi32>, vector<8xi32>, %s) -> %s", vacc, vacc);
  dg2_declare(c, dk.fn, sig);
  // Products to accumulate per K step: (piece of A, piece of B).
  static const int32_t one[][2] = {{0, 0}};
  const int32_t(*terms)[2] = one;
  int32_t nterms = dk.pieces ? dg2_f32_terms(dk.pieces, &terms) : 1;
  char(*pa)[DG2_NAME], (*pb)[DG2_NAME];
  ZT_RETURN_IF_ERROR(packed_words(c, &dk, &A, c->layouts[la].e, &pa));
  ZT_RETURN_IF_ERROR(packed_words(c, &dk, &B, c->layouts[lb].e, &pb));
  int64_t nwa = mb * kb, nwb = kb * nb;  // words per piece
  dg2_val_t r;
  memset(&r, 0, sizeof r);
  r.kind = DV_DIST;
  ZT_RETURN_IF_ERROR(dg2_value_type(mlirOperationGetResult(op, 0), &r.type));
  r.layout = lc;
  r.el = dg2_alloc_names(c, c->layouts[lc].e);
  if (!r.el) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "dg2 dot");
  char zero[DG2_NAME] = "";
  if (wk > 1) {
    dg2_fresh(c, zero);
    dg2_line(c, "%s = arith.constant 0%s : %s", zero, dk.acc[0] == 'f' ? ".0" : "", dk.acc);
  }
  for (int64_t i = 0; i < mb; ++i)
    for (int64_t j = 0; j < nb; ++j) {
      int32_t s0 = (int32_t)((i * nb + j) * 8);
      char v[DG2_NAME];
      dg2_fresh(c, v);
      dg2_line(c, "%s = llvm.mlir.undef : %s", v, vacc);
      for (int e = 0; e < 8; ++e) {
        char idx[DG2_NAME], nv[DG2_NAME];
        dg2_const(c, "i32", e, idx);
        dg2_fresh(c, nv);
        dg2_line(c, "%s = llvm.insertelement %s, %s[%s : i32] : %s", nv,
                 wk > 1 ? zero : C.el[s0 + e], v, idx, vacc);
        snprintf(v, DG2_NAME, "%s", nv);
      }
      for (int64_t q = 0; q < kb; ++q)
        for (int32_t t = 0; t < nterms; ++t) {
          char nv[DG2_NAME];
          dg2_fresh(c, nv);
          dg2_line(c, "%s = llvm.call @%s(%s, %s, %s) : %s", nv, dk.fn,
                   pa[terms[t][0] * nwa + i * kb + q], pb[terms[t][1] * nwb + q * nb + j], v,
                   sig);
          snprintf(v, DG2_NAME, "%s", nv);
        }
      for (int e = 0; e < 8; ++e) {
        char idx[DG2_NAME];
        dg2_const(c, "i32", e, idx);
        dg2_fresh(c, r.el[s0 + e]);
        dg2_line(c, "%s = llvm.extractelement %s[%s : i32] : %s", r.el[s0 + e], v, idx, vacc);
      }
    }
  if (wk > 1) ZT_RETURN_IF_ERROR(emit_ksum(c, lb, lc, &r, &C));
  return dg2_put(c, mlirOperationGetResult(op, 0), &r);
}
