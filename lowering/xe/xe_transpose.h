#ifndef ZT_XE_TRANSPOSE_H
#define ZT_XE_TRANSPOSE_H

#include "xe/xe_internal.h"

/// tile.trans of a tile of 8x16 role-C blocks into such blocks (record r,
/// allocated, names to fill): xor-shuffle butterflies when every subgroup
/// holds the whole tile (sides multiples of 16), else through shared local
/// memory (xe_transpose.c). False (nothing emitted) where it does not
/// serve; ZETILE_XE_TRANS_BLOCKS=0: never (to compare).
bool xe_emit_trans_blocks(xe_emitter_t* e, const xe_val_t* s, xe_val_t* r);

#endif
