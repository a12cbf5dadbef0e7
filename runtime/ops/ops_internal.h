// zetile ops (include/zetile/ops.h): what the GEMM and attention planners
// share. A plan is one exported specialization (SPEC.tile, SPEC.args from
// the prebuilt folder), compiled through the cache, with its run-time
// arguments kept by name so the planners fill them without knowing the
// launch order (the .args manifest gives it).
#ifndef ZT_RUNTIME_OPS_INTERNAL_H_
#define ZT_RUNTIME_OPS_INTERNAL_H_

#include <stdint.h>

#include "zetile/ops.h"

#define ZT_OPS_MAX_ARGS 80
#define ZT_OPS_SPEC_MAX 160

typedef enum {
  ZT_OPS_GEMM,
  ZT_OPS_SDPA,
  ZT_OPS_FLEX,
  ZT_OPS_SDPA_BWD,
  ZT_OPS_FLEX_BWD
} zt_ops_family_t;

struct zt_ops_plan_s {
  zt_ops_family_t family;
  char spec[ZT_OPS_SPEC_MAX];
  zt_device_t* device;
  zt_executable_t* exe;
  bool cache_hit;
  bool aligned16;  // compiled with 16-byte alignment hints on its operands
  int32_t nargs;
  char names[ZT_OPS_MAX_ARGS][24];
  zt_arg_t args[ZT_OPS_MAX_ARGS];
  uint64_t arg_bytes[ZT_OPS_MAX_ARGS];
  uint32_t grid[3];
  zt_buffer_t* zero;    // gemm: one zero element standing for absent epilogue operands;
                        // flex: zero full-block counts when the caller has none
  zt_buffer_t* lse;     // attention: where the lse goes when the caller wants none
  zt_buffer_t* params;  // flex: the mods' fp32 parameters (B3)
  // attention with split_kv > 1: the shares' fp32 workspaces (acc, max,
  // sum) and the plan of the kernel that merges them (attncombine-...).
  zt_buffer_t* ws[3];
  struct zt_ops_plan_s* combine;
  // SDPA backward: this plan is the delta kernel (ws[0] delta, ws[1] the
  // lse in log2 units); bwd[0] the dk/dv kernel, bwd[1] the dq kernel.
  struct zt_ops_plan_s* bwd[2];
  // FlexAttention backward: the block mask as the kernels read it, rebuilt
  // from the caller's tables at each run (ops_attention_bwd.c): [0] the
  // dense int8 state, [1]/[2] dq's walk lists (num, idx), [3]/[4] dk/dv's.
  zt_buffer_t* blk[5];
  union {
    zt_ops_gemm_desc_t gemm;
    zt_ops_sdpa_desc_t sdpa;
    zt_ops_flex_desc_t flex;
    zt_ops_sdpa_bwd_desc_t sdpa_bwd;
    zt_ops_flex_bwd_desc_t flex_bwd;
  } d;
};

// "f32", "f16", "bf16"; NULL for other kinds.
const char* zt_ops__dtype_name(zt_scalar_kind_t k);
size_t zt_ops__dtype_bytes(zt_scalar_kind_t k);

// Changes the exported tile IR before it is compiled (`text` is malloc'ed;
// replace it to change it). `args_text` is the .args file as read.
typedef zt_status_t (*zt_ops_transform_t)(zt_ops_plan_t* p, char** text,
                                          const char* args_text, void* user);

// Reads SPEC.tile / SPEC.args, applies `transform` (may be NULL), compiles
// (cached) for the device's target and loads it; a missing spec is
// NOT_FOUND naming the export command.
zt_status_t zt_ops__plan_create(zt_device_t* device, zt_ops_family_t family,
                                const char* spec, zt_ops_transform_t transform, void* user,
                                zt_ops_plan_t** out_plan);
// ... compiled at num_warps subgroups per workgroup on Xe (0: zetile picks).
zt_status_t zt_ops__plan_create_nw(zt_device_t* device, zt_ops_family_t family,
                                   const char* spec, int32_t num_warps,
                                   zt_ops_transform_t transform, void* user,
                                   zt_ops_plan_t** out_plan);

// ops_gemm_tiles.c: the tiles and subgroups zetile.ops.gemm's config_for
// picks for target row `row` (NULL: none, the CPU) when the caller left
// desc->block_m/n/k at 0; fills them in and *num_warps (0: zetile picks),
// or leaves the descriptor as it is. true when it chose.
bool zt_ops__gemm_target_tiles(const zt_target_info_t* row, zt_ops_gemm_desc_t* d,
                               int32_t* num_warps);
// ... and the attention forward's (zetile.ops.attention's DG2_FWD) when the
// caller left a->block_m/n at 0: 16x16 on dg2's row, over 8 subgroups for
// head dims up to 64, 16 up to 128. true when it chose.
bool zt_ops__attn_target_tiles(const zt_target_info_t* row, zt_ops_attention_t* a,
                               int32_t* num_warps);

// Attention's row-major variant (export.py "-rm16"): a view qualifies when
// its head-dim stride is 1 and its other strides are multiples of 16
// (sequence strides positive).
bool zt_ops__rm16_view(const zt_ops_strides4_t* s);

// zt_ops__plan_create of SPEC-rm16 when `rm16` (the plan marked aligned16),
// falling back to SPEC when the folder lacks that file.
zt_status_t zt_ops__plan_create_rm16(zt_device_t* device, zt_ops_family_t family,
                                     const char* spec, bool rm16, zt_ops_transform_t transform,
                                     void* user, zt_ops_plan_t** out_plan);
// ... compiled at num_warps subgroups per workgroup on Xe (0: zetile picks).
zt_status_t zt_ops__plan_create_rm16_nw(zt_device_t* device, zt_ops_family_t family,
                                        const char* spec, bool rm16, int32_t num_warps,
                                        zt_ops_transform_t transform, void* user,
                                        zt_ops_plan_t** out_plan);

// INVALID_ARGUMENT naming the first of `n` buffers not 16-byte aligned,
// which an aligned16 plan was compiled for.
zt_status_t zt_ops__check_aligned16(const char* op, const zt_ops_plan_t* p, int n,
                                    const char* const names[], const zt_buffer_t* const bufs[]);

// ops_splice.c: builder-made flex mods into an "ext" export. The mods run
// over a rows x cols tile whose rows are queries (transposed: keys, as in
// the backward's dk/dv kernel); bufs name the kernel arguments holding the
// score and mask mods' tensors and the score mod's derivative's (the
// forward's B0/B2, the backward's S0/M2/G0). `score_grad` (the backward
// only) is spliced where the export's ext_score_grad placeholder is.
typedef struct {
  int rows, cols;
  bool transposed;
  const char* bufs[3];
} zt_ops_splice_t;
zt_status_t zt_ops__splice_mods(zt_ops_plan_t* p, char** text, const char* args_text,
                                zt_builder_t* score, zt_builder_t* mask,
                                zt_builder_t* score_grad, const zt_ops_splice_t* where);

// Argument setters by manifest name (INTERNAL if the manifest lacks it:
// the exported files and the planner disagree).
zt_status_t zt_ops__set_int(zt_ops_plan_t* p, const char* name, int64_t v);
zt_status_t zt_ops__set_f32(zt_ops_plan_t* p, const char* name, double v);
zt_status_t zt_ops__set_buffer(zt_ops_plan_t* p, const char* name, const zt_buffer_t* b);

// Strides: none negative, and the view's furthest element addressable with
// the kernels' int32 offsets. `what` names the argument in the message.
zt_status_t zt_ops__check_strides(const char* op, const char* what, int rank,
                                  const int64_t* dims, const int64_t* strides);
// A buffer present and large enough for the view.
zt_status_t zt_ops__check_view(const char* op, const char* what, const zt_buffer_t* buf,
                               size_t elem_bytes, int rank, const int64_t* dims,
                               const int64_t* strides);

// ops_attention.c, shared with the backward (ops_attention_bwd.c): an SDPA
// descriptor checked with its defaults filled (split_kv as given), and
// (batch, heads, seq, dim) strides and views checked.
zt_status_t zt_ops__resolve_sdpa(const char* op, zt_ops_sdpa_desc_t* d);
// The same for a flex descriptor (block sizes, mask broadcast, tiles
// clamped to the blocks; split_kv as given).
zt_status_t zt_ops__resolve_flex(const char* op, zt_ops_flex_desc_t* d);
zt_status_t zt_ops__check4(const char* op, const char* what, int64_t b, int64_t h, int64_t l,
                           int64_t e, const zt_ops_strides4_t* s);
zt_status_t zt_ops__view4(const char* op, const char* what, const zt_buffer_t* b, size_t eb,
                          int64_t d0, int64_t d1, int64_t d2, int64_t d3, zt_ops_strides4_t s);

zt_status_t zt_ops__launch(zt_ops_plan_t* p);
int64_t zt_ops__cdiv(int64_t a, int64_t b);

#endif  // ZT_RUNTIME_OPS_INTERNAL_H_
