// Lane code rewritten into forms upstream's conversions lower in one op each
// (xe_lane_tidy.c).
#ifndef ZT_XE_LANE_TIDY_H
#define ZT_XE_LANE_TIDY_H

#include <mlir-c/IR.h>

#include "zetile/status.h"

/// Rewrites the one-lane module `m` (after xe_distribute_lanes) in place:
/// inserts of a vector<1xT> into a vector whose last dimension is 1 become
/// an extract of the element and a scalar insert. `out_rewritten` (may be
/// NULL) gets the count. Errors: out of memory only.
zt_status_t xe_tidy_lanes(MlirContext ctx, MlirModule m, int* out_rewritten);

#endif
