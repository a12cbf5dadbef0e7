// zetile ops: the GEMM tiles a C plan picks by target, the same choice as
// zetile.ops.gemm's config_for (python-bindings/zetile/ops/gemm.py,
// _gathered_xmx_tiles), so a C program gets the plan a Python caller gets;
// and the attention forward's (zetile.ops.attention's DG2_FWD, at the end).
//
// Why: on rows with XMX but no 2D block IO and at most 4 KB of registers
// (dg2 at SIMD8, zetile's own lowering) every operand element is gathered
// with its own address, and the default 64x64x32 over the 8 subgroups the
// lowering picks spills (acm-g10: 709 scratch sends). A K step of 16 over
// 16 subgroups does not (E2, docs/TEMPLATES.md "dg2 without spills"): 64x64
// for plain fp16/bf16, 32x64 with an epilogue, weight-only scales or fp32,
// and 32x32 with K 32 for int8 (its DPAS take K 32).

#include "ops/ops_internal.h"

static bool gathered_xmx_row(const zt_target_info_t* row) {
  // Only for zetile's SIMD8 lowering: the shared Xe lowering at 8 lanes
  // (ZETILE_DG2_LOWERING=shared*) spills with these tiles too, so Python
  // keeps the defaults there.
  if (!row || !row->xmx || row->block_io_2d || !row->simd8_lowering) return false;
  return (int64_t)row->grf * row->grf_bytes <= 4096;
}

bool zt_ops__gemm_target_tiles(const zt_target_info_t* row, zt_ops_gemm_desc_t* d,
                               int32_t* num_warps) {
  *num_warps = 0;
  if (d->block_m || d->block_n || d->block_k || !gathered_xmx_row(row)) return false;
  bool int8 = d->dtype == ZT_I8;
  // Python's `plain`: fp16/bf16 without an epilogue or weight-only scales
  // (c given counts, as in ops.gemm, whatever beta is).
  bool epi = d->has_bias || d->has_residual || d->has_c || d->activation != ZT_OPS_ACT_NONE ||
             d->alpha != 1.0f;
  bool plain = !(d->weight_bits || epi || d->dtype == ZT_F32);
  d->block_k = int8 ? 32 : 16;
  d->block_m = int8 || !plain ? 32 : 64;
  d->block_n = int8 ? 32 : 64;
  *num_warps = 16;
  return true;
}

// The attention forward on the same rows: 16x16 tiles over 8 subgroups for
// head dims up to 64, over 16 for up to 128, as zetile.ops.attention._config
// plans (DG2_FWD, DG2_FWD_D128): with the SIMD8 lowering's operands packed
// at their loads, SDPA and flex fp16 d64 build there without a scratch send
// (acm-g10; 32x32 at 8 subgroups 1186), and d128 with the score dot's K split
// over the subgroups (bf16: 316 before, 32x32 2140; docs/TEMPLATES.md
// "Attention on dg2").
bool zt_ops__attn_target_tiles(const zt_target_info_t* row, zt_ops_attention_t* a,
                               int32_t* num_warps) {
  *num_warps = 0;
  if (a->block_m || a->block_n || a->head_dim > 128 || !gathered_xmx_row(row)) return false;
  a->block_m = a->block_n = 16;
  *num_warps = a->head_dim > 64 ? 16 : 8;
  // fp32 operands take twice the registers: twice the subgroups, each
  // holding as many bytes of them (d64 at 8: 872 scratch sends, at 16 none;
  // d128 at 16: 139 with the K split, at 32 none; attention.dg2_fwd_config).
  if (a->dtype == ZT_F32) *num_warps *= 2;
  return true;
}
