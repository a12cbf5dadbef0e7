// zetile: the stdlib templates (GEMM, SDPA, FlexAttention) from C.
//
// Each call plans one template specialization from a descriptor (shapes,
// strides, dtypes, epilogue, masks, mods), compiles it through the compile
// cache (zt_compile_cached) and launches it on any zetile device. No Python
// runs: the specializations are tile IR exported ahead of time by
// `python -m zetile.ops.export DIR [SPEC...]` (stdlib-kernels/prebuilt/ holds
// the default set, docs/TEMPLATES.md "The C API" lists it). A descriptor whose
// specialization is not in the folder gets ZT_STATUS_NOT_FOUND naming the spec
// and the command that exports it. The folder is $ZETILE_OPS_DIR if set,
// else one beside the library (P/share/zetile/prebuilt for P/lib), else the
// source tree's. FlexAttention mods are the exported ones or scalar mods
// built with the C builder (zt_ops_flex_desc_t).
//
// Strides are in elements, never negative; a stride of 0 broadcasts. A
// layout whose strides are all zero means "contiguous" (see each field).
// Every argument is checked before anything runs: a bad shape, dtype,
// stride or buffer too small for its view is INVALID_ARGUMENT naming the
// argument, never a crash.
#ifndef ZETILE_OPS_H_
#define ZETILE_OPS_H_

#include <stdbool.h>
#include <stdint.h>

#include "zetile/api.h"
#include "zetile/builder.h"
#include "zetile/runtime.h"
#include "zetile/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/// A planned template launch: the compiled specialization, its argument
/// list and scratch buffers, bound to one device. Not thread-safe; plans
/// may be used from different threads one at a time.
typedef struct zt_ops_plan_s zt_ops_plan_t;

/// Strides of a (batch, rows, cols) operand, in elements.
typedef struct zt_ops_strides3_s {
  int64_t batch, row, col;
} zt_ops_strides3_t;

/// Strides of a (batch, heads, seq, dim) operand, in elements.
typedef struct zt_ops_strides4_s {
  int64_t batch, head, seq, dim;
} zt_ops_strides4_t;

typedef enum zt_ops_activation_e {
  ZT_OPS_ACT_NONE = 0,
  ZT_OPS_ACT_RELU = 1,
  ZT_OPS_ACT_GELU = 2,       ///< erf form
  ZT_OPS_ACT_GELU_TANH = 3,  ///< tanh approximation
  ZT_OPS_ACT_SILU = 4,
} zt_ops_activation_t;

// ------------------------------------------------------------------ GEMM
/// out = act(alpha * A @ B + beta * C + bias) + residual, per batch.
/// A is (batch, m, k), B (batch, k, n), out and the epilogue operands
/// (batch, m, n), all of `dtype`; fp32 accumulation.
/// ZT_I8: A and B int8, out int32, accumulated exactly in int32 (no
/// epilogue: activation none, alpha 1, no bias/residual/c).
/// Weight-only quantization (the LLM decode case; fp16/bf16/fp32 `dtype`
/// activations, out of `dtype`): with weight_bits 8, B holds int8 weights
/// (batch, k, n); with 4, two int4 weights per byte packed along K (low
/// nibble = even k, weight = nibble - 8), B's strides then over the
/// (batch, k / 2, n) bytes. Weights are dequantized as
/// w * scales[k / group_size, n] (scales of `dtype`, shared by the batches).
typedef struct zt_ops_gemm_desc_s {
  zt_scalar_kind_t dtype;  ///< ZT_F32, ZT_F16, ZT_BF16 or ZT_I8
  int64_t batch, m, n, k;  ///< batch >= 1; m, n, k >= 1
  /// A stored as (k, m) / B as (n, k) (used for the default strides only).
  bool trans_a, trans_b;
  /// Strides of the logical A (m x k), B (k x n), out (m x n). All zero:
  /// contiguous in the stored layout (trans_*), batches one after another.
  zt_ops_strides3_t a, b, out;
  zt_ops_activation_t activation;
  float alpha, beta;  ///< zt_ops_gemm_desc_init sets 1 and 0
  /// Optional epilogue operands with their strides over (batch, m, n); all
  /// zero means contiguous (batch, m, n). A bias added to every row is
  /// {0, 0, 1}; one per row (an (m, 1) column) {0, 1, 0}. `c` is read only
  /// when beta != 0 (beta = 0 ignores it, NaN included, as torch's addmm).
  bool has_bias, has_residual, has_c;
  zt_ops_strides3_t bias, residual, c;
  /// Tiles, part of the spec name. All 0: the plan picks them as
  /// zetile.ops.gemm does for the device's target: 64, 64, 32, except on
  /// rows with XMX but no 2D block IO (dg2) a K step of 16 over 16
  /// subgroups (64x64x16 plain fp16/bf16, 32x64x16 otherwise, 32x32x32
  /// int8), which do not spill there; falling back to 64, 64, 32 when the
  /// prebuilt folder lacks those exports.
  int32_t block_m, block_n, block_k;
  /// Weight-only quantization: 0 (none), 4 or 8 bits (see above).
  int32_t weight_bits;
  /// Rows of K per scale (k a multiple of it; it and block_k divide one
  /// another): part of the spec name (prebuilt: 128). Needed with weight_bits.
  int64_t group_size;
  /// Strides of scales over (k / group_size, n); both zero: contiguous.
  int64_t scales_row, scales_col;
} zt_ops_gemm_desc_t;

/// Defaults: fp32, batch 1, alpha 1, everything else zero/absent.
ZT_API void zt_ops_gemm_desc_init(zt_ops_gemm_desc_t* desc);

typedef struct zt_ops_gemm_buffers_s {
  zt_buffer_t *a, *b, *out;
  zt_buffer_t *bias, *residual, *c;  ///< needed when has_* says so
  zt_buffer_t* scales;  ///< weight-only quantization's scales (desc.weight_bits != 0)
} zt_ops_gemm_buffers_t;

ZT_API zt_status_t zt_ops_gemm_plan(zt_device_t* device, const zt_ops_gemm_desc_t* desc,
                                    zt_ops_plan_t** out_plan);
ZT_API zt_status_t zt_ops_gemm_run(zt_ops_plan_t* plan, const zt_ops_gemm_buffers_t* buffers);

// ------------------------------------------------------------ attention
/// What SDPA and FlexAttention share. q is (batch, q_heads, q_len,
/// head_dim), k and v (batch, kv_heads, kv_len, head_dim), out like q, all
/// of `dtype`. GQA/MQA: q_heads a multiple of kv_heads (query head h reads
/// kv head h / (q_heads / kv_heads)).
typedef struct zt_ops_attention_s {
  zt_scalar_kind_t dtype;  ///< ZT_F32, ZT_F16 or ZT_BF16
  int64_t batch, q_heads, kv_heads, q_len, kv_len, head_dim;
  /// All zero: contiguous (batch, heads, seq, dim).
  zt_ops_strides4_t q, k, v, out;
  float scale;  ///< 0: 1 / sqrt(head_dim)
  /// Tiles (0: 32, 32): part of the spec name.
  int32_t block_m, block_n;
  /// The units of buffers.lse: false (the default) natural log, as torch's
  /// SDPA ops and flex_attention(..., return_lse=True) return it; true log2,
  /// as torch's flex HOP returns it (what its backward reads). Same spec.
  bool lse_log2;
  /// The decode path (FlashDecoding; short queries over long keys, where
  /// batch * q_heads * ceil(q_len / block_m) programs leave the device idle):
  /// 0 or 1 one pass over the keys; n > 1 (at most 64) cuts each row's KV
  /// tiles (or listed blocks' tiles) into n shares run as a third grid axis,
  /// each writing fp32 partial results to a workspace the plan holds, and a
  /// second kernel (spec attncombine-DT-dHD-BM) merges them into out and
  /// lse. Spec suffix -split (one export serves every n); with dropout
  /// -drop-split (the same keep flags as one pass: they depend on the
  /// position only; exported for d64 SDPA without masks).
  /// ZT_OPS_SPLIT_KV_AUTO: the plan picks n as zetile.ops does (one query
  /// tile, fewer than 2 programs per compute unit of the device: up to 16
  /// shares of at least 4 KV tiles; else 1; 1 with dropout or when the
  /// -split spec is not exported); zt_ops_plan_spec tells which was taken.
  int32_t split_kv;
} zt_ops_attention_t;

/// zt_ops_attention_t.split_kv: let the plan choose (decode shapes split).
#define ZT_OPS_SPLIT_KV_AUTO (-1)

typedef enum zt_ops_mask_kind_e {
  ZT_OPS_MASK_NONE = 0,
  ZT_OPS_MASK_ADDITIVE = 1,  ///< float mask of `dtype`, added to the scores
  ZT_OPS_MASK_BOOL = 2,      ///< int8 0/1, 1 = attend
} zt_ops_mask_kind_t;

/// torch's scaled_dot_product_attention forward.
typedef struct zt_ops_sdpa_desc_s {
  zt_ops_attention_t attn;
  bool causal;  ///< torch's top-left causal mask
  zt_ops_mask_kind_t mask_kind;
  /// The mask's strides over (batch, q_heads, q_len, kv_len); 0 broadcasts.
  /// All zero with a mask: contiguous (batch, q_heads, q_len, kv_len).
  zt_ops_strides4_t mask;
  /// Dropout in [0, 1) (0: none): softmax weights zeroed with probability
  /// dropout_p and the kept ones scaled by 1 / (1 - dropout_p), as torch's
  /// SDPA; the lse is the undropped one. The keep flags are a philox draw
  /// keyed by dropout_seed (its low 31 bits) and the flat (b * q_heads + h,
  /// q, kv) position: the same seed gives the same mask as
  /// zetile.ops.scaled_dot_product_attention(..., dropout_seed=seed) and
  /// its backward regenerates (torch's distribution, not torch's bits).
  /// Spec suffix -drop.
  float dropout_p;
  uint32_t dropout_seed;
} zt_ops_sdpa_desc_t;

/// Score mods exported with the template (stdlib-kernels/mods.py), or one
/// built with the C builder.
typedef enum zt_ops_score_mod_e {
  ZT_OPS_SCORE_NONE = 0,
  ZT_OPS_SCORE_ALIBI = 1,    ///< score + slope[h] * (kv - q); slopes: buffers.score_tensor, (q_heads,) fp32
  ZT_OPS_SCORE_SOFTCAP = 2,  ///< softcap * tanh(score / softcap)
  /// desc.score_builder: a finished builder (zt_builder_end_kernel) holding
  /// the mod as torch writes one, on scalars, as a kernel
  ///   (f32 score, i32 b, i32 h, i32 q_idx, i32 kv_idx, ptr<f32> out, ptr<f32> t)
  /// that stores its result to `out` (its last store; `t` is
  /// buffers.score_tensor). Elementwise arith/math ops and loads only.
  ZT_OPS_SCORE_BUILDER = 3,
} zt_ops_score_mod_t;

/// Mask mods exported with the template, or one built with the C builder.
typedef enum zt_ops_mask_mod_e {
  ZT_OPS_MASK_MOD_NONE = 0,
  ZT_OPS_MASK_MOD_CAUSAL = 1,    ///< q >= kv
  ZT_OPS_MASK_MOD_SLIDING = 2,   ///< q - window < kv <= q
  ZT_OPS_MASK_MOD_DOCUMENT = 3,  ///< doc[q] == doc[kv]; doc: buffers.mask_tensor, (document_len,) int32
  /// desc.mask_builder: a kernel (i32 b, i32 h, i32 q_idx, i32 kv_idx,
  /// ptr<i1> out, ptr<i32> t) storing an i1 (true = attend) to `out`; `t` is
  /// buffers.mask_tensor. As ZT_OPS_SCORE_BUILDER otherwise.
  ZT_OPS_MASK_MOD_BUILDER = 4,
} zt_ops_mask_mod_t;

/// FlexAttention forward with torch's BlockMask semantics: for each
/// (batch, head, query block) the kernel visits kv_num_blocks[b, h, qb]
/// partial blocks listed in kv_indices[b, h, qb, :] (mask mod applied), then
/// the full ones (full_kv_*; mask mod skipped); unlisted blocks are masked.
/// The tables are contiguous int32: num (mask_batch, mask_heads, q_blocks),
/// indices (mask_batch, mask_heads, q_blocks, kv_blocks), q_blocks =
/// ceil(q_len / q_block), kv_blocks = ceil(kv_len / kv_block); a
/// mask_batch / mask_heads of 1 broadcasts. Scale applies before the score
/// mod, which sees the query head.
typedef struct zt_ops_flex_desc_s {
  zt_ops_attention_t attn;
  zt_ops_score_mod_t score_mod;
  float softcap;  ///< ZT_OPS_SCORE_SOFTCAP: > 0
  zt_ops_mask_mod_t mask_mod;
  /// ZT_OPS_SCORE_BUILDER / ZT_OPS_MASK_MOD_BUILDER: the mods' builders
  /// (read by the plan call only; each distinct mod is its own cache entry).
  zt_builder_t *score_builder, *mask_builder;
  /// The FlexAttention backward with ZT_OPS_SCORE_BUILDER: the score mod's
  /// derivative d score_mod / d score, a second builder kernel of the score
  /// mod's signature (its `t` is the same buffers.score_tensor) storing the
  /// derivative at that score to `out` (torch's flex differentiates its mods
  /// by autograd; a builder mod's derivative is the caller's). Unused by the
  /// forward.
  zt_builder_t* score_grad_builder;
  int32_t window;        ///< ZT_OPS_MASK_MOD_SLIDING: >= 1
  int64_t document_len;  ///< ZT_OPS_MASK_MOD_DOCUMENT: >= max(q_len, kv_len)
  int64_t q_block, kv_block;  ///< torch's BLOCK_SIZE (0: 128 both)
  int64_t mask_batch, mask_heads;  ///< 0 counts as 1
  bool has_full_blocks;  ///< false: every listed block is partial (mask mod applied)
} zt_ops_flex_desc_t;

typedef struct zt_ops_attention_buffers_s {
  zt_buffer_t *q, *k, *v, *out;
  /// Optional: (batch, q_heads, q_len) fp32 log-sum-exp of the scaled (and
  /// modded, masked) scores, in natural log unless attn.lse_log2. Rows with
  /// every score masked give out 0 and lse -inf.
  zt_buffer_t* lse;
  zt_buffer_t* mask;  ///< SDPA with a mask
  /// FlexAttention block mask tables.
  zt_buffer_t *kv_num_blocks, *kv_indices, *full_kv_num_blocks, *full_kv_indices;
  zt_buffer_t* score_tensor;  ///< the score mod's tensor (ALiBi slopes; a builder mod's `t`)
  zt_buffer_t* mask_tensor;   ///< the mask mod's tensor (document ids; a builder mod's `t`)
} zt_ops_attention_buffers_t;

ZT_API zt_status_t zt_ops_sdpa_plan(zt_device_t* device, const zt_ops_sdpa_desc_t* desc,
                                    zt_ops_plan_t** out_plan);
ZT_API zt_status_t zt_ops_flex_plan(zt_device_t* device, const zt_ops_flex_desc_t* desc,
                                    zt_ops_plan_t** out_plan);
/// Runs an SDPA or FlexAttention plan.
ZT_API zt_status_t zt_ops_attention_run(zt_ops_plan_t* plan,
                                        const zt_ops_attention_buffers_t* buffers);

// ------------------------------------------------------- SDPA backward
/// The gradients of torch's scaled_dot_product_attention (dq, dk, dv) from
/// the forward's inputs, its out and lse, and out's gradient, as
/// FlashAttention-2 computes them (stdlib-kernels/attention_bwd.py): delta =
/// rowsum(out * grad_out) per query row, then one kernel per KV tile for dk
/// and dv (it walks every query head of its GQA group, so the group's
/// contributions are summed without atomics) and one per query tile for dq.
/// Probabilities are recomputed from the lse; masked positions and rows
/// whose every score was masked (lse -inf) give zero gradients.
/// `fwd` is the forward's descriptor: the same causal, mask, scale, tiles,
/// dropout_p and dropout_seed (the dropout mask is regenerated from the
/// seed, not stored); out's strides are fwd.attn.out; the lse is read in the
/// units fwd.attn.lse_log2 names; fwd.attn.split_kv is ignored (the
/// backward makes one pass). Specs attnbwd-delta-DT-dHD-BM and
/// attnbwd-dkdv|dq-DT-dHD-BMxBN-CAUSAL-MASK[-drop] (three launches, in
/// order on the device); zt_ops_plan_spec gives attnbwd-DT-dHD-BMxBN-CAUSAL-
/// MASK[-drop].
typedef struct zt_ops_sdpa_bwd_desc_s {
  zt_ops_sdpa_desc_t fwd;
  /// Strides of grad_out (shaped like out), grad_q (like q), grad_k and
  /// grad_v (like k and v); all zero: contiguous. The gradients need an
  /// address per element (no zero strides where the dimension is > 1).
  zt_ops_strides4_t grad_out, grad_q, grad_k, grad_v;
  /// A gradient of the loss with respect to the forward's lse is given
  /// (buffers.grad_lse): it adds p * grad_lse to each score's gradient (d lse
  /// / d score = p), through the delta kernel's attnbwd-delta-...-dlse export.
  bool has_grad_lse;
} zt_ops_sdpa_bwd_desc_t;

typedef struct zt_ops_sdpa_bwd_buffers_s {
  zt_buffer_t *q, *k, *v;  ///< the forward's inputs
  zt_buffer_t* out;        ///< the forward's output
  zt_buffer_t* lse;        ///< the forward's (batch, q_heads, q_len) fp32 lse: required
  zt_buffer_t* grad_out;
  zt_buffer_t* mask;       ///< with fwd.mask_kind != ZT_OPS_MASK_NONE
  zt_buffer_t *grad_q, *grad_k, *grad_v;  ///< written (of fwd.attn.dtype)
  /// With desc.has_grad_lse (else NULL): (batch, q_heads, q_len) fp32,
  /// contiguous, the gradient with respect to the lse in its units
  /// (fwd.attn.lse_log2: per log2 unit).
  zt_buffer_t* grad_lse;
} zt_ops_sdpa_bwd_buffers_t;

ZT_API zt_status_t zt_ops_sdpa_bwd_plan(zt_device_t* device, const zt_ops_sdpa_bwd_desc_t* desc,
                                        zt_ops_plan_t** out_plan);
ZT_API zt_status_t zt_ops_sdpa_bwd_run(zt_ops_plan_t* plan,
                                       const zt_ops_sdpa_bwd_buffers_t* buffers);

// ------------------------------------------------- FlexAttention backward
/// The gradients of FlexAttention (dq, dk, dv), as the SDPA backward computes
/// them (three launches: delta, dk/dv, dq), with the forward's score mod,
/// mask mod and block mask. The score mod is differentiated with respect to
/// the score by its exported derivative (stdlib-kernels/mods.py: ALiBi's is
/// 1, softcap's 1 - tanh^2(score / softcap)); gradients of the mods' tensors
/// (ALiBi slopes, document ids) are not computed. Builder-made mods
/// (ZT_OPS_SCORE_BUILDER, ZT_OPS_MASK_MOD_BUILDER) are UNSUPPORTED here.
/// The block tables are the forward's (torch's BlockMask semantics: listed
/// partial blocks apply the mask mod, listed full blocks do not, unlisted
/// blocks are masked); each run reads them back to the host, checks them
/// and derives the dense block table and the per-program walk lists the
/// kernels read (small: one entry per block), after waiting for the device
/// (an earlier run may still read the previous lists). Probabilities are
/// recomputed from the lse, so masked positions and fully masked rows give
/// zero gradients. `fwd` is the forward's descriptor (split_kv is ignored).
/// Specs attnbwd-delta-DT-dHD-BM (SDPA's), attnbwd-dkdv-DT-dHD-BMxBN-full-
/// nomask-SCORE-MASKMOD-sparseQB and attnbwd-dq-...-sparseKVB (the block
/// length along the axis each walks); zt_ops_plan_spec gives
/// attnbwd-DT-dHD-BMxBN-SCORE-MASKMOD-sparseQBxKVB.
typedef struct zt_ops_flex_bwd_desc_s {
  zt_ops_flex_desc_t fwd;
  /// As zt_ops_sdpa_bwd_desc_t's: all zero contiguous, no zero strides in
  /// the gradients.
  zt_ops_strides4_t grad_out, grad_q, grad_k, grad_v;
  /// As zt_ops_sdpa_bwd_desc_t's (grad_lse in the lse's units,
  /// fwd.attn.lse_log2).
  bool has_grad_lse;
} zt_ops_flex_bwd_desc_t;

typedef struct zt_ops_flex_bwd_buffers_s {
  zt_buffer_t *q, *k, *v;  ///< the forward's inputs
  zt_buffer_t* out;        ///< the forward's output
  zt_buffer_t* lse;        ///< the forward's (batch, q_heads, q_len) fp32 lse: required
  zt_buffer_t* grad_out;
  /// The forward's block mask tables (full_* when fwd.has_full_blocks).
  zt_buffer_t *kv_num_blocks, *kv_indices, *full_kv_num_blocks, *full_kv_indices;
  zt_buffer_t* score_tensor;  ///< ALiBi slopes, as the forward's
  zt_buffer_t* mask_tensor;   ///< document ids, as the forward's
  zt_buffer_t *grad_q, *grad_k, *grad_v;  ///< written (of fwd.attn.dtype)
  zt_buffer_t* grad_lse;  ///< as zt_ops_sdpa_bwd_buffers_t's
} zt_ops_flex_bwd_buffers_t;

ZT_API zt_status_t zt_ops_flex_bwd_plan(zt_device_t* device, const zt_ops_flex_bwd_desc_t* desc,
                                        zt_ops_plan_t** out_plan);
ZT_API zt_status_t zt_ops_flex_bwd_run(zt_ops_plan_t* plan,
                                       const zt_ops_flex_bwd_buffers_t* buffers);

// ------------------------------------------------------------- common
/// The spec name of the plan's specialization (borrowed, plan lifetime),
/// e.g. "gemm-f16-relu-epi-64x64x32".
ZT_API const char* zt_ops_plan_spec(const zt_ops_plan_t* plan);
/// Whether the compile came from the on-disk cache.
ZT_API bool zt_ops_plan_cache_hit(const zt_ops_plan_t* plan);
/// Frees a plan (its scratch buffers, executable, device reference); NULL is a no-op.
ZT_API void zt_ops_plan_release(zt_ops_plan_t* plan);

#ifdef __cplusplus
}
#endif
#endif  // ZETILE_OPS_H_
