// Lane code rewritten into forms upstream's conversions lower in one op each
// (xe_lane_tidy.c).
#ifndef ZT_XE_LANE_TIDY_H
#define ZT_XE_LANE_TIDY_H

#include <stdbool.h>

#include <mlir-c/IR.h>

#include "zetile/status.h"

/// Rewrites the one-lane module `m` (after xe_distribute_lanes) in place:
/// inserts of a vector<1xT> into a vector whose last dimension is 1 become
/// an extract of the element and a scalar insert. `out_rewritten` (may be
/// NULL) gets the count. Errors: out of memory only.
zt_status_t xe_tidy_lanes(MlirContext ctx, MlirModule m, int* out_rewritten);

/// Lane shuffles marked by the emitter (zt.shfl_*) become gpu.shuffle and
/// SLM gathers/scatters become masked memref.load/store, in place
/// (xe_lane_moves.c), as xe_lower_atomics does on the module's text. Sets
/// *out_done; false (module untouched) when the module holds atomics or an
/// op in another form, for xe_lower_atomics to take.
zt_status_t xe_lane_moves(MlirContext ctx, MlirModule m, bool* out_done);

/// Runs of one-element elementwise ops (one per 16-column chunk of a tile
/// op) become one op on vector<NxT> (xe_lane_pack.c); ZETILE_XE_PACK=0 skips
/// it. `out_packed` (may be NULL) gets the number of ops packed. Errors: out
/// of memory only.
zt_status_t xe_pack_lanes(MlirContext ctx, MlirModule m, int* out_packed);

/// Masked one-element global loads and stores of the lane code become calls
/// of one private func.func per form holding the op (xe_mask_calls.c), so
/// the branch upstream lowers each to is made once per form;
/// ZETILE_XE_MASK_CALLS=0 skips it. `out_calls` (may be NULL) gets the
/// number of ops replaced. Errors: out of memory only.
zt_status_t xe_mask_calls(MlirContext ctx, MlirModule m, int* out_calls);

/// True when the one-lane module `m` holds a vector of rank 2 or more or a
/// vector op other than extract, insert, extract_strided_slice,
/// from_elements, a broadcast of a scalar and a shuffle of one vector with
/// itself: then xegpu-vector-linearize has work to do (xe_linearize_need.c).
/// Reads `m` only.
bool xe_needs_linearize(MlirModule m);

/// True when xe_needs_linearize(m) or `m` holds a vector.extract_strided_slice:
/// then convert-vector-to-llvm's greedy vector lowerings have work to do,
/// otherwise convert-to-llvm converts every vector op (xe_linearize_need.c).
bool xe_needs_vector_lowering(MlirModule m);

#endif
