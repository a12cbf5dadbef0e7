// Layouts as values, and the stage that assigns them (xe_layout.c).
//
// The Xe lowering runs analysis -> layout assignment -> emission. A layout
// says where each element of a tensor lives: which subgroup of the
// workgroup, which lane of it, which register. Kinds, as in Triton's
// TritonGPU encodings and Intel's DPAS encoding:
//   uniform   one value every lane and subgroup holds (scalars);
//   blocked   a tile cut into instruction blocks (8x16 for 2-D, 16 for 1-D),
//             lane j holding column j of a block, blocks spread over a grid
//             of subgroups (grid[d] subgroups along dim d);
//   dpas      a DPAS operand (A, B) or accumulator (C) on a subgroup grid:
//             A 8x16 (16-bit; 8x32 int8) blocks split by rows over the
//             grid's rows and shared by its columns, B 16x16 (VNNI pairs:
//             lane_data [2, 1]) split by columns, C 8x16 split both ways;
//   slice     a parent layout with one dimension reduced away (the row max
//             of an accumulator is slice<dim=1, dpas<C>>): element i lives
//             where row i of the parent lives;
//   lazy      2-D index arithmetic, masks and pointer tensors: no storage,
//             re-evaluated where a load or store needs them.
// Assignment anchors layouts at dots (each dot its own grid: a dot whose
// accumulator feeds a row reduction or another dot's A operand gets a grid
// of rows only, so those stay inside subgroups), block IO, reductions and
// stores, and propagates them forward and backward; where a value's layout
// is not the one its user needs, it records a conversion and its cost tier.
#ifndef ZETILE_LOWERING_XE_LAYOUT_H_
#define ZETILE_LOWERING_XE_LAYOUT_H_

#include <stdbool.h>

#include <mlir-c/IR.h>

#include "base/strbuf.h"
#include "xe/xe_target.h"
#include "zetile/status.h"

typedef enum xe_lkind_e {
  XE_LK_NONE = 0,
  XE_LK_UNIFORM,
  XE_LK_BLOCKED,
  XE_LK_DPAS,
  XE_LK_SLICE,
  XE_LK_LAZY,
} xe_lkind_t;

/// DPAS operand index of a dpas layout.
enum { XE_DPAS_A = 0, XE_DPAS_B = 1, XE_DPAS_C = 2 };

/// One layout. For a slice, the fields other than kind/slice_dim describe
/// the parent (its kind in parent_kind).
typedef struct xe_layout_s {
  xe_lkind_t kind;
  xe_lkind_t parent_kind;  ///< slice: the parent's kind (blocked or dpas)
  int slice_dim;           ///< slice: the parent's dimension reduced away
  int operand;             ///< dpas: XE_DPAS_A, _B or _C
  int rank;                ///< of the tensor (the parent's for a slice)
  int grid[2];             ///< subgroups along each dim
  int lanes[2];            ///< lanes along each dim inside a block
  int lane_data[2];        ///< consecutive elements one lane holds per dim
  int block[2];            ///< instruction block shape
  /// dpas (and what follows a dot's operands and result): the dot's whole
  /// subgroup grid (A's grid[1] and B's grid[0] are 1: their parts are
  /// shared along that dim, but which subgroup holds which part depends on
  /// the whole grid). 0: the kernel's grid. Emission switches to it.
  int ctx[2];
} xe_layout_t;

/// How far data moves in a conversion between two layouts.
typedef enum xe_conv_tier_e {
  XE_CONV_NONE = 0,   ///< the same layout
  XE_CONV_REGISTERS,  ///< every element stays in its lane (register renaming/repacking)
  XE_CONV_LANES,      ///< across lanes of one subgroup (shuffles)
  XE_CONV_SLM,        ///< across subgroups (shared local memory)
} xe_conv_tier_t;

typedef struct xe_assign_s xe_assign_t;

/// Runs the assignment on the kernel (a func.func of tile IR) for target tg
/// with num_warps subgroups (0: zetile picks). default_grid: the subgroup
/// grid of tiles no dot constrains (the planner's, xe_matrix.c). *out is
/// owned by the caller (xe_assign_free).
zt_status_t xe_assign_layouts(MlirOperation kernel, const xe_target_t* tg, int num_warps,
                              const int default_grid[2], xe_assign_t** out);
void xe_assign_free(xe_assign_t* a);
/// The layout of a value (NULL if none: e.g. values of combiner functions).
const xe_layout_t* xe_assign_get(const xe_assign_t* a, MlirValue v);
/// The subgroup grid the dots of the kernel asked for (rows x cols), and
/// whether some dot asked for a grid of rows only; false if it has no dot.
bool xe_assign_dot_grid(const xe_assign_t* a, int grid[2], bool* rows_only);
/// The conversion recorded at operand i of op (XE_CONV_NONE if none); *from
/// and *to (may be NULL) receive the two layouts.
xe_conv_tier_t xe_assign_conversion(const xe_assign_t* a, MlirOperation op, int i,
                                    const xe_layout_t** from, const xe_layout_t** to);
/// How far data moves from layout `from` to `to` for a tensor of `shape`.
xe_conv_tier_t xe_layout_conv_tier(const xe_layout_t* from, const xe_layout_t* to,
                                   const int64_t* shape);
/// Layout text, as the dump prints it ("dpas<C, grid=[8, 1], ...>").
void xe_layout_print(const xe_layout_t* l, zt_strbuf_t* sb);
/// The kernel's tile IR with every op's result layouts (`zt.layout`) and
/// conversions (`zt.convert`) as attributes: what ZETILE_DUMP=layouts prints.
void xe_assign_dump(const xe_assign_t* a, MlirOperation kernel, zt_strbuf_t* sb);

#endif  // ZETILE_LOWERING_XE_LAYOUT_H_
