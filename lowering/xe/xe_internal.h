// Internal to the Xe lowering (lowering/xe): how tile values are represented
// in the subgroup-level XeGPU text we emit, and the emitter state.
//
// The lowering writes MLIR text (a gpu.module with one gpu.func) from a walk
// of the parsed tile module; jit/compiler.c's helpers parse it and run
// upstream's passes on it. One program = one workgroup of `nsg` subgroups
// of 16 lanes (Triton's num_warps). Every value has a *layout*, the record of
// how its elements sit in the subgroups:
//   XE_LAYOUT_SCALAR  one SSA value, uniform across the lanes and subgroups;
//   XE_LAYOUT_ROW16   a 1-D tensor of N elements as T = ceil(N/16) chunks of
//                     vector<16xT> (element i in chunk i/16, lane i%16; when
//                     N < 16 lanes N..15 are padding). When T >= nsg > 1 the
//                     tensor is *distributed*: subgroup s holds chunks
//                     s*T/nsg .. (s+1)*T/nsg - 1 (the record's nchunks is
//                     T/nsg); smaller tensors are *replicated*: every
//                     subgroup holds (and computes) all T chunks, and only
//                     subgroup 0 stores them.
// Upstream's xegpu-subgroup-distribute slows down sharply with the number of
// chunks in one subgroup (a 64-chunk fused softmax row: minutes), so zetile
// picks nsg to keep a few chunks per subgroup. Reductions of distributed
// tensors combine per-subgroup results through shared local memory
// (xegpu.store/xegpu.load on an addrspace-3 memref.global, gpu.barrier), and
// every subgroup gets the scalar result.
//   (next milestone: XE_LAYOUT_BLOCK2D for 2-D tensors in DPAS-sized tiles.)
// Tensors of pointers keep a scalar i64 base address plus, per chunk, the
// element offsets as vector<16xi64>, cast to the vector<16xindex> that
// xegpu.load/store take at each access (loops carrying index vectors break
// xegpu-subgroup-distribute in 22.1).
#ifndef ZETILE_LOWERING_XE_INTERNAL_H_
#define ZETILE_LOWERING_XE_INTERNAL_H_

#include <stdbool.h>
#include <stdint.h>

#include <mlir-c/IR.h>

#include "lowering.h"
#include "xe/xe_layout.h"
#include "xe/xe_target.h"

#define XE_SUBGROUP 16
// SSA names we make are short: "%v123_45", "%f12#300".
#define XE_NAME_MAX 24

typedef enum xe_layout_kind_e {
  XE_LAYOUT_SCALAR,
  XE_LAYOUT_ROW16,
  /// 2-D float tensors: per-subgroup tiles of instruction-sized blocks
  /// (xe_matrix.c). Role A (dot lhs): 8x16 blocks, rows split over the
  /// subgroup grid's rows, all columns; role B (dot rhs, 16-bit): 16x16
  /// blocks in the VNNI layout (lane_data [2, 1]), columns split over the
  /// grid's columns; role C (everything else): 8x16 blocks, both dims split.
  XE_LAYOUT_BLOCK2D,
  /// 2-D integer, i1 and pointer tensors (addresses and masks) are not
  /// materialized: the record names the tile value whose def chain
  /// (make_range, splat, broadcast, expand_dims, elementwise, addptr) is
  /// re-evaluated per row at each load/store (xe_matrix.c), plus, for
  /// pointers, a uniform offset in elements (`names[0]`, i64) that loops
  /// carry instead of the tensor.
  XE_LAYOUT_LAZY,
} xe_layout_kind_t;

/// XE_ROLE_BW is asked of the allocators only: a B operand's places for a
/// 16-bit dot held one element per register slot whatever the element width
/// (int8/int32 weights on their way to fp16, xe_val_t.b16); the record gets
/// role B and b16. XE_ROLE_AW likewise: a 16-bit dot's A places (8x16, lane
/// j column j) for int8 bits on their way to it (int8 or fp8 -> fp16); the
/// record gets role A, and b16 when its elements are int8 (8x16 blocks, not
/// the int8 dot's 8x32).
enum { XE_ROLE_C = 0, XE_ROLE_A = 1, XE_ROLE_B = 2, XE_ROLE_BW = 3, XE_ROLE_AW = 4 };

typedef char xe_name_t[XE_NAME_MAX];

/// How one tile value is held in the emitted code.
typedef struct xe_val_s {
  xe_layout_kind_t layout;
  zt_type_t type;    ///< its tile type (rank 0 or 1)
  int64_t numel;     ///< logical elements (1 for scalars)
  int32_t nchunks;   ///< chunks held by one subgroup (1 for scalars)
  bool dist;         ///< ROW16 split across the subgroups (see above)
  // BLOCK2D: role, per-subgroup tile rows x cols, block rows (8 or 16; block
  // columns are 16), blocks nbr x nbc (names row-major).
  int role;
  int32_t tr, tc, br, nbr, nbc;
  int32_t bc;        ///< block columns: 16, or 32 for int8 A blocks (8x32)
  /// Narrow tiles (2, 4 or 8 columns: tl.join's pairs, thin transposes),
  /// held in one subgroup *by columns*: block bi is vector<tc x 16>, its row
  /// j column j of tile rows 16*bi .. 16*bi + 15 (lane = row; lanes past the
  /// last row are padding). br = tc, nbr = ceil(tr / 16), nbc = 1. A column
  /// is then a 1-D chunk: tl.split, tl.join and reductions along rows need
  /// no lane moves, and transposes to and from 16-column tiles are whole
  /// vectors (xe_reshape.c).
  bool narrow;
  /// Role B blocks of 16x16 with lane j holding column j, rows in order, one
  /// element per slot (#zt_a): a 16-bit dot's B operand places for values of
  /// another width (int8 weights, their int32/fp32 dequantization), so the
  /// dequantization stays in each lane and its fp16 result is the VNNI B
  /// block in the same registers (the layout assignment's register tier).
  /// With role A: int8 bits in a 16-bit dot's 8x16 A blocks (XE_ROLE_AW).
  bool b16;
  /// 16-bit A blocks at 8 lanes (dg2's SIMD8 DPAS) read in pair order:
  /// chunk element i holds column 2i (i < 8) or 2(i - 8) + 1, so after the
  /// 8-lane distribution (lane j: elements j, j + 8) lane j holds columns
  /// 2j, 2j + 1 of each row, the dword the SIMD8 DPAS takes (fix_dpas8 then
  /// moves nothing). Only for values read by dots alone (a_pairs8_ok).
  bool pairs8;
  /// Columns replicated (role B, tc == the tile's columns): fewer 16-column
  /// blocks than the grid has columns (the 64x16 K^T of an attention
  /// backward's S^T on an 8x2 grid), so every grid column holds all of
  /// them. Read by dots and elementwise ops only (xe_grids.c refuses the
  /// rest: a store or reduction would count each copy).
  bool col_rep;
  // LAZY: the tile value to re-evaluate.
  MlirValue root;
  xe_name_t* names;  ///< nchunks SSA names (pointer tensors: the offsets)
  xe_name_t base;    ///< pointer tensors: the i64 base address
  /// ROW16 values an elementwise tile op wrote whole (xe_wide.c): `wide`
  /// names one vector<nchunks*16 x T> (lane j: elements j, j + 16, ...,
  /// i.e. element k of the lane is chunk k's), valid in scope wide_scope
  /// and the scopes inside it. names[] then hold the chunks only where
  /// chunk_scope sees (xe_lookup writes them when a reader needs them);
  /// chunk_scope -1: nowhere yet. Other records: wide empty, chunk_scope 0
  /// (the kernel's scope: everywhere).
  xe_name_t wide;
  int wide_scope, chunk_scope;
} xe_val_t;

/// The role to ask the allocators for a record like v (b16 kept).
static inline int xe_alloc_role_like(const struct xe_val_s* v) {
  return v->b16 ? (v->role == XE_ROLE_A ? XE_ROLE_AW : XE_ROLE_BW) : v->role;
}

/// Emitter state for one kernel.
typedef struct xe_emitter_s {
  zt_lower_ctx_t* lc;
  MlirOperation cur;     ///< the tile op being lowered (error locations)
  zt_strbuf_t pre;       ///< constants hoisted to the kernel entry
  zt_strbuf_t body;      ///< the kernel body
  zt_strbuf_t loc;       ///< " loc(...)" of the current tile op
  // Location aliases: every distinct location is written once above the
  // module ("#zlN = loc(...)", `locs`) and each op names it (" loc(#zlN)").
  // The 16 chunks of a tile op all carry its location; parsing it once per
  // line was ~8% of parsing the 200-op chain's text (issue 22).
  zt_strbuf_t locs;
  const void** loc_keys;  ///< MlirLocation.ptr, open addressing
  int* loc_ids;
  size_t loc_cap, loc_count;
  bool loc_plain;  ///< ZETILE_XE_LOC_ALIAS=0: locations written out (to measure against)
  int indent;
  int next_id;
  // Value map: open addressing on MlirValue.ptr.
  const void** keys;
  xe_val_t** vals;
  size_t cap, count;
  // Hoisted constants, deduplicated by their text.
  char** const_text;
  xe_name_t* const_name;
  int num_consts, cap_consts;
  zt_status_t error;     ///< first error (sticky)
  int nsg;               ///< subgroups per workgroup (power of two)
  int sg_m, sg_n;        ///< 2-D subgroup grid (sg_m * sg_n == nsg)
  /// The kernel's grid while sg_m/sg_n follow a dot with a grid of its own
  /// (xe_grids.c; 0 until the first op is emitted).
  int kg_m, kg_n;
  /// Lazy-evaluation cache of the current tile op (xe_matrix.c).
  void* lazy_cache;
  unsigned slm_kinds;    ///< bit k: the SLM exchange buffer of kind k is used
  /// Larger SLM exchange buffers (xe_slm_buffer): one per (kind, elements).
  struct {
    int kind, n;
  } slm_bufs[8];
  int nslm_bufs;
  bool used_shuffles;    ///< marked lane shuffles (xe_reduce_user.c, xe_atomic.c)
  /// While lowering an scf.for body: which yield operands are not carried
  /// (loop-invariant) and the init records whose pointer bases stay put.
  const bool* yield_skip;
  xe_val_t** yield_init;
  int yield_n;
  /// 2-D integer values that hold data (int8 dot operands, int32
  /// accumulators and results), found by xe_matrix_plan: BLOCK2D like
  /// floats, where other 2-D integers (addresses, masks) are LAZY.
  const void** data_vals;
  int ndata, cap_data;
  /// What the module imports from the driver: 2-D block IO (compat path
  /// on drivers without it) and int8 DPAS (XeVM's name needs a shim).
  bool used_block_io, used_int8_dpas;
  /// The int8 dots read their operands as unsigned (one signedness per
  /// module: the shim maps XeVM's one builtin name onto i8_i8 or u8_u8).
  bool used_uint8_dpas;
  /// Math ops upstream cannot lower (erf): the module goes through libm
  /// calls renamed to OpenCL builtins (xe_libm.c).
  bool used_libm;
  /// Atomics (marked scatters, xe_memory.c) and the next atomic's id.
  bool used_atomics;
  int next_atomic;
  /// An argmin/argmax was refused because its tile is split across subgroups
  /// along the axis: xe_emit_module rewrites it as two built-in reductions
  /// (lowering/common/arg_split.c) and emits the kernel again.
  bool arg_split;
  /// 1-D data split across subgroups that 2-D index arithmetic reads by row
  /// (a gathered MoE GEMM's token ids, `offs[:, None]`): a whole copy in
  /// every subgroup, gathered where the value is made (xe_gather_index_rows),
  /// keyed by the value.
  const void* whole_keys[8];
  struct xe_val_s* whole_vals[8];
  int nwholes;
  /// The target's row (xe_target.c) and the layouts the assignment stage
  /// gave the kernel's values (xe_layout.c; NULL until xe_matrix_plan).
  const xe_target_t* target;
  xe_assign_t* layouts;
  /// Scopes (xe_wide.c): the region being emitted (0: the kernel) and each
  /// scope's parent; wide: elementwise tile ops may be written as one wide
  /// op (16 lanes, ZETILE_XE_WIDE not 0, zetile's own distribution).
  int scope, nscopes;
  int* scope_parent;
  bool wide, used_wide;
  bool wide_all;    ///< ZETILE_XE_WIDE=all: every run whole (to test the form)
  void* wide_runs;  ///< which runs are written whole (xe_wide.c)
  /// Lanes of the subgroup the emitted code runs at (xe_emit_lanes): the
  /// lane_layout of the #zt_* layouts and intel_reqd_sub_group_size. A
  /// chunk stays XE_SUBGROUP elements; at 8 lanes each lane holds two of
  /// them (j and j + 8), which xe_distribute.c gives it.
  int lanes;
  // The block row (bi, bj, rr) of a blocks-shaped value (br rows a block,
  // nbr x nbc blocks) that a row-by-row lazy evaluation is building, so that
  // a 2-D data value met inside a mask expression (`x >= 0` in
  // `tl.where(x >= 0, x, 0.01 * x)`) is read as its own row there.
  struct {
    bool set;
    int32_t bi, bj, rr, br, nbr, nbc;
  } lazy_at;
} xe_emitter_t;

// --- xe_values.c ------------------------------------------------------------
void xe_emitter_init(xe_emitter_t* e, zt_lower_ctx_t* lc);
void xe_emitter_deinit(xe_emitter_t* e);
/// UNSUPPORTED/INTERNAL status naming the current op and its source location.
zt_status_t xe_fail(xe_emitter_t* e, zt_status_code_t code, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
/// `file:line:col` of an op's location into sb ("?" if it has none).
void xe_format_loc(MlirLocation loc, zt_strbuf_t* sb);
/// Reads the tile type of an MLIR type (rank 0 or 1 only; 2-D and bf16 are
/// UNSUPPORTED here for this milestone).
zt_status_t xe_tile_type(xe_emitter_t* e, MlirType t, zt_type_t* out);
/// Whether a 2-D record's reduction along `axis` stays inside each subgroup
/// and its 1-D result lands in the 1-D layout's place (see xe_matrix_plan).
bool xe_axis_local(const xe_emitter_t* e, const xe_val_t* t, int axis);
/// A new record for type t with fresh names ("%v<id>_<k>"), not bound.
/// 2-D float tensors get role C (xe_alloc_role for others).
xe_val_t* xe_alloc(xe_emitter_t* e, zt_type_t t);
xe_val_t* xe_alloc_role(xe_emitter_t* e, zt_type_t t, int role);
/// Like xe_alloc_role, but 2-D integer and i1 tensors get blocks too.
xe_val_t* xe_alloc_blocks(xe_emitter_t* e, zt_type_t t, int role);
/// Layout attribute text of the vectors of a record ("#zt_l", "#zt_a", ...).
const char* xe_layout_attr(const xe_val_t* v);
void xe_free_val(xe_val_t* v);
/// Binds a tile value to a record (the map takes ownership; records never
/// move, so pointers stay valid). NULL on out-of-memory (e->error set).
xe_val_t* xe_bind(xe_emitter_t* e, MlirValue v, xe_val_t* rec);
/// xe_alloc_role for the value v: a 2-D integer value that holds data
/// (xe_is_data) gets BLOCK2D blocks instead of LAZY.
xe_val_t* xe_alloc_for(xe_emitter_t* e, MlirValue v, zt_type_t t, int role);
bool xe_is_data(const xe_emitter_t* e, MlirValue v);
/// Adds v to the data values; false if it was there already.
bool xe_mark_data(xe_emitter_t* e, MlirValue v);
/// xe_alloc + xe_bind.
xe_val_t* xe_define(xe_emitter_t* e, MlirValue v, zt_type_t t);
/// Binds v to the same SSA names as src (ops that change nothing here).
xe_val_t* xe_alias(xe_emitter_t* e, MlirValue v, const xe_val_t* src);
/// The record of a tile value, or NULL (sets e->error) if it has none.
xe_val_t* xe_lookup(xe_emitter_t* e, MlirValue v);
/// A fresh SSA name.
void xe_fresh(xe_emitter_t* e, xe_name_t out);
/// MLIR spelling of the element type a chunk holds ("f32", "i64" for ptrs).
/// bf16 scalars and 1-D tensors are held as their i16 bits ("i16"): LLVM's
/// SPIR-V backend needs SPV_KHR_bfloat16 for bf16 values, which IGC 2022
/// reads as half (XEGPU_NOTES b2/b3); their arithmetic runs in f32.
const char* xe_elem(zt_scalar_kind_t k);
/// The element type of 2-D blocks: bf16 stays bf16 there (block IO and
/// DPAS take it; elementwise ops convert explicitly, xe_matrix.c).
const char* xe_block_elem(zt_scalar_kind_t k);
/// Type of chunk k: "vector<16xT>" or the scalar type; pointer tensors'
/// chunks are "vector<16xi64>", scalar pointers "i64".
void xe_chunk_type(const xe_val_t* v, zt_strbuf_t* sb);
/// Number of flat SSA values (loop-carried etc.) a record takes, and entry i
/// (name and type) of that flattening: pointer tensors are (base, offsets).
int xe_flat_count(const xe_val_t* v);
void xe_flat_entry(const xe_val_t* v, int i, const char** name, zt_strbuf_t* ty,
                   bool* is_vector);
/// Names a record's flat values "<prefix><first>", "<prefix><first+1>", ...
void xe_flat_assign(xe_val_t* v, const char* prefix, int first);
/// Makes op the current op (error locations, the loc() of emitted ops).
void xe_set_cur(xe_emitter_t* e, MlirOperation op);
/// Type aliases for the vector types written in out[from..], defined at from.
void xe_alias_vector_types(zt_strbuf_t* out, size_t from);
/// Moves each `xegpu.load_nd` of the kernel body down to just before its
/// first reader, past ops that neither write memory nor open or close a
/// region (xe_sink_loads.c); ZETILE_XE_SINK_LOADS=0 keeps the text. A body
/// with a region of more than XE_SINK_MAX_DOTS dots is left as written.
void xe_sink_loads(zt_strbuf_t* body);
enum { XE_SINK_MAX_DOTS = 2 };
/// Emits `text` at the entry (once per distinct text) and writes its name:
/// `text` is the right-hand side, e.g. "arith.constant dense<0> : vector<16xindex>".
void xe_hoist(xe_emitter_t* e, const char* text, bool vector, xe_name_t out);
/// Writes the current indentation.
void xe_line(xe_emitter_t* e);
/// Prints an attribute into sb.
void xe_print_attr(MlirAttribute a, zt_strbuf_t* sb);
/// The record of v if it has one (no error otherwise).
xe_val_t* xe_find(xe_emitter_t* e, MlirValue v);

// Common hoisted values.
void xe_lane_index(xe_emitter_t* e, xe_name_t out);      // vector<16xindex> 0..15
void xe_lane_i32(xe_emitter_t* e, xe_name_t out);        // vector<16xi32> 0..15
void xe_zero_offsets(xe_emitter_t* e, xe_name_t out);    // vector<16xindex> 0
void xe_zero_offsets64(xe_emitter_t* e, xe_name_t out);  // vector<16xi64> 0
void xe_all_true(xe_emitter_t* e, xe_name_t out);        // vector<16xi1> true
/// Mask of the lanes that hold elements of a tensor of n < 16 elements.
void xe_pad_mask(xe_emitter_t* e, int64_t n, xe_name_t out);
void xe_lane0_mask(xe_emitter_t* e, xe_name_t out);
/// gpu.subgroup_id as index and as i32 (hoisted).
void xe_sg_id(xe_emitter_t* e, xe_name_t out);
void xe_sg_id_i32(xe_emitter_t* e, xe_name_t out);
/// vector<16xi1>: every lane true in subgroup 0 only (hoisted).
void xe_sg0_mask(xe_emitter_t* e, xe_name_t out);
/// The mask `m` (vector<16xi1>) restricted to subgroup 0 when nsg > 1:
/// stores of values every subgroup holds happen once.
void xe_once_mask(xe_emitter_t* e, const char* m, xe_name_t out);
/// 16-lane vector ops with the #zt_l layout: a hoisted splat constant
/// (`value` as MLIR prints it), `out = op a, b`, `out = select m, a, b`.
void xe_vconst(xe_emitter_t* e, const char* value, const char* et, xe_name_t out);
void xe_vbinary(xe_emitter_t* e, const char* op, const char* a, const char* b, const char* et,
                xe_name_t out);
void xe_vselect(xe_emitter_t* e, const char* m, const char* a, const char* b, const char* et,
                xe_name_t out);
/// `out` = the uniform `scalar` in every lane.
void xe_vsplat(xe_emitter_t* e, const char* scalar, const char* et, xe_name_t out);
/// `out` = `vec` with lane i replaced by the uniform `scalar` (a select on the
/// lane index: how a scalar moves into one lane).
void xe_put_lane(xe_emitter_t* e, const char* scalar, int i, const char* vec, const char* et,
                 xe_name_t out);
/// `out` = `vec` with lane i taken from the 16-lane vector `from`.
void xe_take_lane(xe_emitter_t* e, const char* from, int i, const char* vec, const char* et,
                  xe_name_t out);
/// A hoisted all-zero (false for i1) block vector<br x 16 x et> of kind k,
/// layout attribute attr ("#zt_a", xe_layout_attr(...)).
void xe_zero_block(xe_emitter_t* e, zt_scalar_kind_t k, const char* et, int32_t br,
                   const char* attr, xe_name_t out);
/// Row rr of block (bi, bj) of a BLOCK2D record as a 16-lane vector.
void xe_block_row(xe_emitter_t* e, const xe_val_t* s, int32_t bi, int32_t bj, int32_t rr,
                  xe_name_t out);
/// block[rr] = row (a 16-lane vector) in the block vector<br x 16 x et>
/// named `block` (layout attribute attr); `block` is renamed to the result.
void xe_block_insert_row(xe_emitter_t* e, const char* row, xe_name_t block, int rr,
                         const char* et, int32_t br, const char* attr);
/// Lane j of `out` = lane j ^ d ("xor"), j - d ("up"), j + d ("down") or d
/// ("idx": lane d in every lane) of the 16-lane vector v (a marked op that
/// becomes gpu.shuffle after distribution, xe_atomic.c); lanes without a
/// partner are undefined.
void xe_lane_shuffle(xe_emitter_t* e, zt_scalar_kind_t k, const char* v, const char* mode,
                     int d, xe_name_t out);
/// A lazy 2-D integer/mask value as blocks laid out like `like` (a new
/// record, not bound; NULL with e->error set on failure).
xe_val_t* xe_materialize_lazy(xe_emitter_t* e, MlirValue v, const xe_val_t* like);
/// tile.reshape / tile.trans of small tiles held in one subgroup: elements
/// moved between registers by lane shuffles (xe_reshape.c).
zt_status_t xe_emit_permute(xe_emitter_t* e, MlirOperation op);
/// Sets e->sg_m/sg_n to the grid op's values live on (the kernel's, or a
/// dot's own from the layout assignment); refuses data crossing grids.
zt_status_t xe_op_grid(xe_emitter_t* e, MlirOperation op);
/// Largest number of SLM exchange slots (subgroups) we support.
#define XE_MAX_SUBGROUPS 64

// --- xe_libm.c --------------------------------------------------------------
/// Renames the libm declarations convert-math-to-libm made (erff, ...) to
/// the OpenCL builtins of the same meaning (_Z3erff, ...).
zt_status_t xe_libm_to_opencl(MlirModule m);

// --- xe_emit.c --------------------------------------------------------------
/// Lowers the ops of a block in order (the terminator is handled by the
/// caller through `on_terminator`).
zt_status_t xe_emit_block(xe_emitter_t* e, MlirBlock block);
/// Lowers one op (dispatch on its name).
zt_status_t xe_emit_op(xe_emitter_t* e, MlirOperation op);
/// Emits an elementwise op chunk by chunk in generic form: operands are
/// records (a scalar operand of a tensor op is broadcast), result type `rt`.
zt_status_t xe_emit_elementwise(xe_emitter_t* e, const char* opname,
                                const char* props, xe_val_t** ops, int nops,
                                zt_type_t rt, xe_val_t** out);
/// The arith properties of op (predicate, fastmath, ...) as "<{...}>" text.
void xe_op_props(MlirOperation op, zt_strbuf_t* sb);

/// bf16 (i16 bits) <-> f32 copies of a scalar or 1-D record (new records,
/// not bound; NULL on out-of-memory).
xe_val_t* xe_bf16_to_f32(xe_emitter_t* e, const xe_val_t* x);
xe_val_t* xe_f32_to_bf16(xe_emitter_t* e, const xe_val_t* x);
/// Math ops upstream cannot lower for Xe (rejected with a message).
/// Records that op `name` needs the libm route (math.erf/erfc, xe_libm.c).
void xe_note_libm(xe_emitter_t* e, MlirStringRef name);

// --- xe_control.c -----------------------------------------------------------
zt_status_t xe_emit_for(xe_emitter_t* e, MlirOperation op);
zt_status_t xe_emit_if(xe_emitter_t* e, MlirOperation op);
zt_status_t xe_emit_while(xe_emitter_t* e, MlirOperation op);
/// scf.yield / scf.condition of the region being lowered.
zt_status_t xe_emit_terminator(xe_emitter_t* e, MlirOperation op);

// --- xe_memory.c ------------------------------------------------------------
zt_status_t xe_emit_load(xe_emitter_t* e, MlirOperation op);
zt_status_t xe_emit_store(xe_emitter_t* e, MlirOperation op);
zt_status_t xe_emit_addptr(xe_emitter_t* e, MlirOperation op);
zt_status_t xe_emit_ptr_conv(xe_emitter_t* e, MlirOperation op, const char* name);
/// tile.atomic_rmw / tile.atomic_cas on scalars and 1-D tensors: marked
/// scatters and gathers that xe_lower_atomics rewrites after distribution.
zt_status_t xe_emit_atomic(xe_emitter_t* e, MlirOperation op);
/// tile.atomic_rmw on a 2-D tile: the row scatters of a 2-D store, each
/// marked as an atomic (xe_scatter_2d), and its old values if used.
zt_status_t xe_emit_atomic_2d(xe_emitter_t* e, MlirOperation op);
/// Row scatters of the 2-D tile `val` through the 2-D pointer tensor p under
/// mask m (may be null); with `atomic` ("<kind>:<sem>:<scope>") marked as
/// atomic number atomic_id (xe_matrix.c), cmp (may be null) an atomic_cas's
/// compare values; `old` (may be null) receives the atomic's old values.
zt_status_t xe_scatter_2d(xe_emitter_t* e, MlirValue p, MlirValue val, MlirValue m,
                          MlirValue cmp, const char* atomic, int atomic_id, xe_val_t* old);

// --- xe_atomic.c ------------------------------------------------------------
/// Rewrites the marked scatter/gather pairs of a distributed module (one
/// element per lane) into per-lane atomics; *m is replaced by the result.
zt_status_t xe_lower_atomics(MlirContext ctx, MlirModule* m);

/// The arith op combining two partial results of a vector.reduction kind
/// ("add", "maxnumf", ...) on floats or integers; NULL if none (xe_reduce.c).
const char* xe_reduction_combiner(const char* kind, bool fl);

/// Whether v is the constant 1 (through integer extensions and casts, or a
/// loop-invariant scf.for argument starting at 1): a unit stride (xe_matrix.c).
bool xe_value_is_one(MlirValue v);

/// tile.trans of a 2-D tile.block_load becomes a block load of the
/// transposed view, and (num_warps > 1) tile.trans of a 2-D tile.load into
/// a dot a load of the transposed addresses (xe_trans_load.c); *out_count:
/// how many.
/// e: the emitter (its divisibility facts decide where transposed 2D
/// block reads serve; such loads are marked for xe_emit_trans_read).
zt_status_t xe_transpose_block_loads(xe_emitter_t* e, MlirOperation kernel, int num_warps,
                                     int* out_count);
/// Whether a tile.block_load of a transposed view is read with transposed
/// 2D block reads (marked by xe_transpose_block_loads).
bool xe_is_trans_read(MlirOperation op);
/// Emits such a load into v (a dot's B blocks): addr the i64 base, s0/s1
/// the view's extents (K, N), pitch the memory rows' stride, o0/o1 the
/// block's first (K, N) element, all index names.
zt_status_t xe_emit_trans_read(xe_emitter_t* e, xe_val_t* v, zt_type_t t, const char* addr,
                               const char* s0, const char* s1, const char* pitch,
                               const char* o0, const char* o1);

/// Whether transposed 2D block reads may be emitted (xe_trans_load.c):
/// not with ZETILE_XE_TRANS_READ=0 nor ZETILE_XE_DISTRIBUTE=upstream.
bool xe_trans_reads_enabled(void);
struct xe_axis_s;
/// Whether a 2-D pointer load (facts ax of its addresses) is a transposed
/// view (rows one element apart, columns a stride apart) feeding only dots'
/// B operands that transposed 2D block reads serve exactly (xe_trans_load.c;
/// the emitter reads it with xe_emit_trans_read from the tile's first
/// element).
bool xe_ptr_trans_read_ok(xe_emitter_t* e, MlirOperation op, const struct xe_axis_s* ax);
struct xe_bound_s;
/// Whether mask term b of such a load, a bound along K (axis 0), can be the
/// transposed read's width: x counts up over the whole tile's K, and for
/// 16-bit data bound - x is provably even (whole dword pairs).
bool xe_ptr_trans_k_bound_ok(xe_emitter_t* e, MlirOperation op, const struct xe_bound_s* b);

/// The bytes of the first object of the module's gpu.binary (what
/// gpu-module-to-binary produced: SPIR-V, or bitcode with format=llvm);
/// false if there is none (xe_lower.c).
bool xe_binary_object(MlirModule m, MlirStringRef* out);

/// SPIR-V of an LLVM-dialect module whose -O2 SPIR-V came out invalid: the
/// optimized LLVM IR with instruction selection at -O0 (xe_spirv_o0.c);
/// validated, then set as lc's "spirv" artifact.
zt_status_t xe_emit_spirv_o0(zt_lower_ctx_t* lc, MlirModule m);
/// SPIR-V of an LLVM-dialect module through LLVM's C API: the module's LLVM
/// IR (linked, not optimized), LLVM's new pass manager running `passes`,
/// selection at -O2 (xe_spirv_o0.c). Valid SPIR-V is set as lc's "spirv";
/// an invalid module returns NULL with the validator's status in *invalid.
zt_status_t xe_emit_spirv_passes(zt_lower_ctx_t* lc, MlirModule m, const char* passes,
                                 zt_status_t* invalid);

/// The LLVM IR of m's gpu.module translated straight into ctx, as
/// gpu-module-to-binary{format=llvm} at O=0 would have written it as bitcode
/// (xe_llvm_handoff.c). *declined (and NULL, *out NULL) for modules that take
/// the bitcode route: bitcode libraries to link, or
/// ZETILE_XE_LLVM_HANDOFF=bitcode. Sets the kernel's subgroup size in m.
/// The SPIR-V backend's target machine for spirv64-unknown-unknown with no CPU
/// name, at code generation level `level` (an LLVMCodeGenOptLevel), the SPIR-V
/// target initialized first (xe_spirv_o0.c). Both the bitcode route and the
/// direct hand-off take their data layout and triple from it.
#define XE_SPIRV_TRIPLE "spirv64-unknown-unknown"
struct LLVMOpaqueTargetMachine;  // LLVMTargetMachineRef
zt_status_t xe_spirv_target_machine(int level, struct LLVMOpaqueTargetMachine** out);
struct LLVMOpaqueContext;  // LLVMContextRef
struct LLVMOpaqueModule;   // LLVMModuleRef
zt_status_t xe_llvm_translate(MlirModule m, struct LLVMOpaqueContext* ctx,
                              struct LLVMOpaqueModule** out, bool* declined);

/// Rewrites what LLVM's optimization makes that the SPIR-V backend cannot
/// select in a Kernel module (xe_llvm_legalize.c): llvm.bitreverse calls
/// become shifts, ands and ors. Returns how many calls were rewritten.
struct LLVMOpaqueModule;  // LLVMModuleRef, without llvm-c/Core.h here
int xe_expand_bitreverse(struct LLVMOpaqueModule* mod);
/// The accumulator rescale of an online softmax (`acc * alpha` read by a
/// DPAS as C) in a branch taken when some alpha is not 1, through an
/// identity DPAS (xe_lazy_rescale.c). Returns how many loops were
/// rewritten; their modules are optimized without loop rotation.
int xe_lazy_rescale(struct LLVMOpaqueModule* mod);
/// Elementwise instructions on vectors of more than 16 elements narrower
/// than 32 bits (8 lanes: 32 a lane), which the SPIR-V backend cannot
/// legalize, become instructions on 16 (xe_llvm_legalize.c). Returns how
/// many were split, -1 out of memory.
int xe_split_wide_narrow(struct LLVMOpaqueModule* mod);
/// One-element shufflevectors become an extractelement and an
/// insertelement (xe_llvm_legalize.c: beside a cmpxchg's extractvalue the
/// SPIR-V backend gave OpCompositeExtract a garbage index). Returns how
/// many were rewritten.
int xe_unshuffle_single(struct LLVMOpaqueModule* mod);
/// XeVM's private arrays (the 2D block builtins' destinations and sources)
/// moved from their loop blocks to the entry block when the compat library
/// defines the builtin, so that SROA keeps the rows in registers
/// (xe_hoist_allocas.c). Returns how many were moved.
int xe_hoist_allocas(struct LLVMOpaqueModule* mod);

/// zetile's own lane distribution (xe_distribute.c): the emitted
/// subgroup-level module rewritten in place into one lane's code, in place
/// of upstream's xegpu-subgroup-distribute. Sets *done when it applied; when
/// the module holds something outside what it handles it changes nothing,
/// leaves *done false and says what in why (the caller then runs upstream's
/// pass). uint8_dpas: the kernel's int8 dots are unsigned (at 8 lanes the
/// SIMD8 builtin is named here).
zt_status_t xe_distribute_lanes(MlirContext ctx, MlirModule m, bool uint8_dpas, bool* done,
                                char* why, size_t why_size);

// --- xe_matrix.c ------------------------------------------------------------
/// Chooses the subgroup grid for 2-D tiles (sets e->nsg, sg_m, sg_n) when
/// the kernel has 2-D tensors; false if it has none.
zt_status_t xe_matrix_plan(xe_emitter_t* e, bool* has_2d);
/// Ops on 2-D values; return false in *handled when op is not theirs.
zt_status_t xe_matrix_op(xe_emitter_t* e, MlirOperation op, bool* handled);
/// The role a 2-D value's producer gives it (dot operands are A/B).
int xe_matrix_role(xe_emitter_t* e, MlirValue v);
void xe_matrix_cache_clear(xe_emitter_t* e);

// --- xe_axis.c --------------------------------------------------------------
/// The 2-D block message's minimum surface pitch, in bytes.
#define XE_BLOCK_MIN_PITCH 64
/// A per-axis step inside an affine group: coef * sym (sym null: coef).
typedef struct xe_step_s {
  bool known;
  MlirValue sym;  ///< a rank-0 integer value (a stride), or null
  int64_t coef;
} xe_step_t;

/// Static facts about an integer or pointer tensor (rank 1 or 2): along axis
/// d, in groups of lin[d] elements starting at multiples of lin[d], the
/// value moves by step[d] per element; div: the power of two dividing every
/// group's first value. Pointer tensors: the same facts about their offsets
/// in elements. lin 1 with an unknown step: nothing known.
typedef struct xe_axis_s {
  int rank;
  int64_t lin[2];
  xe_step_t step[2];
  int64_t div;
} xe_axis_t;
void xe_axis_info(xe_emitter_t* e, MlirValue v, xe_axis_t* out);
/// Power of two known to divide a scalar integer (hints, constants, products).
int64_t xe_scalar_div(xe_emitter_t* e, MlirValue v);
/// A kernel argument (through sign extensions) with the divisible-by-16
/// hint, which zetile's launcher gives to positive values only.
bool xe_hinted_arg(xe_emitter_t* e, MlirValue v);
/// Whether a row step s (in elements of esz bytes) can be a 2-D block
/// message's surface pitch: positive, a constant or a hinted argument times
/// a positive constant, a multiple of 16 bytes, and (constant) at least 64
/// bytes, the message's minimum (a smaller pitch is rejected by the
/// hardware, so such a tile is read or written with gathers instead).
bool xe_block_pitch_ok(xe_emitter_t* e, const xe_step_t* s, int esz);
/// The scalar a tensor splats (through broadcasts), or the value if scalar.
bool xe_uniform_scalar(MlirValue v, MlirValue* out);

/// A mask that is a conjunction of `x < bound` (or <=) terms, each x
/// counting up by one along one axis (in groups of `lin`) and constant
/// along the other: a block IO bound per axis.
#define XE_MAX_BOUNDS 4
typedef struct xe_bound_s {
  int axis;
  MlirValue x, bound;  ///< bound: a scalar
  bool inclusive;
  int64_t lin;
  bool trans;  ///< under a 2-D tile.trans: x is read at the swapped index
} xe_bound_t;
typedef struct xe_mask_bounds_s {
  int n;
  xe_bound_t b[XE_MAX_BOUNDS];
} xe_mask_bounds_t;
/// true (and the terms) when m is null or has that form.
bool xe_mask_bounds(xe_emitter_t* e, MlirValue m, xe_mask_bounds_t* out);

// --- xe_igc_vnni.c ----------------------------------------------------------
/// Whether a pointer load's 16x16 VNNI B blocks v (element type t, address
/// facts ax, mask terms mb, `cols` columns a descriptor) are read on the
/// compat path with IGC's internal 2D transform read (8x16 A blocks: its
/// plain read; ZETILE_XE_IGC_PLAIN=0 not), issued unconditionally:
/// the 2D message's rules hold by construction there (see the file). The
/// emitter marks such load_nd ops `zt.igc_vnni`; xe_distribute.c calls the
/// builtin for them.
bool xe_igc_vnni_read_ok(xe_emitter_t* e, MlirOperation load, const xe_val_t* v, zt_type_t t,
                         const xe_axis_t* ax, const xe_mask_bounds_t* mb, int64_t cols);
/// The same for a tensor descriptor's (block pointer's) 2-D block load, whose
/// base, width (columns), row pitch and column offset are these scalars.
bool xe_igc_vnni_desc_ok(xe_emitter_t* e, MlirOperation load, const xe_val_t* v, zt_type_t t,
                         MlirValue base, MlirValue width, MlirValue pitch, MlirValue col);
/// Whether 16-bit pointer tensor p is 4-byte aligned at every group's first
/// element: the argument's specialized alignment, even element offsets and
/// even loop advances (xe_trans_load.c).
bool xe_ptr_dword_aligned(xe_emitter_t* e, MlirValue p);
/// At lane level (xe_distribute.c): a load_nd marked `zt.igc_vnni` becomes
/// a call of IGC's builtin (*done, op destroyed); unmarked or of another
/// form, it is left for XeVM (mark removed).
zt_status_t xe_igc_vnni_call(MlirContext ctx, MlirOperation op, bool* done);

// --- xe_reload_loops.c ------------------------------------------------------
/// A 2-D load read only inside two or more following loops, with nothing
/// writing memory from it to the last of them, is loaded again at the top
/// of each loop (*out_count: how many loads); the load sink then places each
/// copy at its first reader. ZETILE_XE_RELOAD_PER_LOOP=0: none.
zt_status_t xe_reload_per_loop(MlirOperation kernel, int* out_count);

// --- xe_dot_f32.c -----------------------------------------------------------
/// fp32 tile.dot of A/B/C blocks into r's names (bf16 pieces, 3 or 6 DPAS
/// per block by input_precision).
// 2D block IO needs a 64-byte aligned base: emits the aligned base (i64)
// of byte address `addr` and the difference in elements of kind k (index).
void xe_align_base(xe_emitter_t* e, const char* addr, zt_scalar_kind_t k, xe_name_t base,
                   xe_name_t delta);
zt_status_t xe_emit_dot_f32(xe_emitter_t* e, MlirOperation op, const xe_val_t* a,
                            const xe_val_t* b, const xe_val_t* c, xe_val_t* r);

// --- xe_reduce.c ------------------------------------------------------------
zt_status_t xe_emit_reduce(xe_emitter_t* e, MlirOperation op);
/// tile.reduce of a 2-D tile along one axis (one subgroup, built-in kinds).
zt_status_t xe_emit_reduce_2d(xe_emitter_t* e, MlirOperation op);
/// tile.reduce of (values, positions) with argmax/argmin's combiner (1-D, or
/// 2-D along either axis; one subgroup): xe_argreduce.c.
zt_status_t xe_emit_argreduce(xe_emitter_t* e, MlirOperation op);
/// After op: its 1-D results split across subgroups that index arithmetic
/// reads row by row (an expand_dims to (M, 1) of integers) gathered whole
/// through SLM, for lazy_eval (xe_matrix.c).
zt_status_t xe_gather_index_rows(xe_emitter_t* e, MlirOperation op);
/// Whether xe_emit_argreduce handles op (its combiner is argmax/argmin's).
bool xe_argreduce_matches(xe_emitter_t* e, MlirOperation op);
/// Whether op's combiner is a built-in kind xe_emit_reduce(_2d) handles.
bool xe_reduce_is_builtin(xe_emitter_t* e, MlirOperation op);
/// tile.reduce of 1..8 tensors with a user combiner (1-D, or 2-D along a
/// local axis; one subgroup): xe_reduce_user.c.
zt_status_t xe_emit_reduce_user(xe_emitter_t* e, MlirOperation op);
/// tile.scan of 1-D tensors (one subgroup) with a user combiner.
zt_status_t xe_emit_scan_user(xe_emitter_t* e, MlirOperation op);
/// The reduce lowering for op: argreduce, built-in or user combiner.
zt_status_t xe_emit_any_reduce(xe_emitter_t* e, MlirOperation op);
/// tile.scan of a 1-D or 2-D tensor (one subgroup, built-in kinds).
zt_status_t xe_emit_scan(xe_emitter_t* e, MlirOperation op);
/// Combines a per-subgroup scalar `in` of kind k across the nsg subgroups
/// through SLM (vector.reduction kind `kind`, e.g. "add", "maxnumf"); every
/// subgroup gets the result in `out`. identity: text of the kind's neutral
/// element. i1 values travel as i32.
/// Every subgroup's uniform scalar `in` (kind k, not i1) into SLM slot s,
/// then all of them back, 16 per vector (out[j] lane i: subgroup 16j + i;
/// lanes past nsg undefined); returns how many vectors. Barriers around.
int xe_cross_sg_gather(xe_emitter_t* e, zt_scalar_kind_t k, const char* in, xe_name_t* out);
void xe_cross_sg_reduce(xe_emitter_t* e, const char* kind, const char* identity,
                        zt_scalar_kind_t k, const char* in, xe_name_t out);
/// A workgroup-memory buffer of n elements of kind k (memref<n x T, 3>,
/// memref.get_global hoisted into out), declared once per (kind, n) by
/// xe_emit_module; false (e->error set) past the table's size.
bool xe_slm_buffer(xe_emitter_t* e, zt_scalar_kind_t k, int n, xe_name_t out);
/// Hoisted SLM indexing (xe_reduce.c): `out` = lane index + base + k as
/// vector<16xindex> (base "" for none); `out` = sg_id / div % mod * mul as
/// an index ("" when always 0); `out` = a + b ("" operands are 0).
void xe_slm_offsets(xe_emitter_t* e, const char* base, int64_t k, xe_name_t out);
void xe_sg_index(xe_emitter_t* e, int div, int mod, int64_t mul, xe_name_t out);
/// One 16-lane row v (element type et) stored to / loaded from the SLM
/// buffer slm (memref<n x et, 3>) at offsets offs under mask.
void xe_slm_store(xe_emitter_t* e, const char* v, const char* slm, const char* offs,
                  const char* mask, const char* et, int64_t n);
void xe_slm_load(xe_emitter_t* e, const char* slm, const char* offs, const char* mask,
                 const char* et, int64_t n, xe_name_t out);
void xe_add_index(xe_emitter_t* e, const char* a, const char* b, xe_name_t out);
/// Hoisted vector<16xi1>: grid index i comes before the uniform index `mine`
/// (after it, reversed): the subgroups whose totals enter a split scan's
/// prefix (xe_reduce.c).
void xe_sg_before_mask(xe_emitter_t* e, const char* mine, int i, bool rev, xe_name_t out);
/// Whether xe_convert_blocks can move record s into blocks of `role`, and
/// the move itself: a new record (not bound) of s's type in that role,
/// through shared local memory with barriers around (xe_convert.c); NULL
/// with e->error set when it cannot (over the target's SLM per workgroup).
bool xe_convert_servable(const xe_val_t* s, int role);
xe_val_t* xe_convert_blocks(xe_emitter_t* e, const xe_val_t* s, int role);
/// Chunk ch of n (a 16-lane vector of kind k) as subgroup 0 holds it, into
/// `out` in every subgroup: subgroup 0 writes it to SLM, barriers around.
void xe_slm_from_sg0(xe_emitter_t* e, zt_scalar_kind_t k, const char* v, int ch, int n,
                     xe_name_t out);

/// The layout attribute alias every vector value carries (declared once at
/// the top of the module): upstream's layout propagation in 22.1.8 does not
/// reach values whose only users are reductions or loop-carried values, so
/// we state every layout ourselves and leave that pass out of the pipeline.
#define XE_LAYOUT_ATTR "#zt_l"

// --- xe_lower.c -------------------------------------------------------------
/// What xe_emit_module tells its caller besides the text.
typedef struct xe_module_info_s {
  int nsg;              ///< subgroups per workgroup
  bool block_io;        ///< 2-D block IO (create_nd_tdesc and its loads/stores)
  bool int8_dpas;       ///< int8 DPAS
  bool uint8_dpas;      ///< ... reading the operands as unsigned
  bool libm;            ///< math ops through libm calls (xe_libm.c)
  bool atomics;         ///< marked atomics to rewrite after distribution
  bool shuffles;        ///< marked lane shuffles to rewrite after distribution
  bool slm;             ///< SLM exchanges to rewrite after distribution (xe_atomic.c)
  int lanes;            ///< lanes of the subgroup the code was emitted for
  bool wide;            ///< some tile op was written whole (xe_wide.c)
  bool no_wide;         ///< in: write no wide ops (upstream's distribution follows)
} xe_module_info_t;
/// Lanes the shared lowering emits for a row: XE_SUBGROUP (16), or the row's
/// own subgroup size for a SIMD8 row asked for it (ZETILE_DG2_LOWERING=shared8)
/// when the kernel has a tl.dot (=shared8all: every kernel).
int xe_emit_lanes(const xe_target_t* tg, MlirOperation kernel);
// --- xe_wide.c ---------------------------------------------------------
/// Enters a new scope (a region's body) / returns to its parent.
zt_status_t xe_scope_push(xe_emitter_t* e, int* saved);
void xe_scope_pop(xe_emitter_t* e, int saved);
/// The record of v without writing its chunks (NULL if it has none).
xe_val_t* xe_find_raw(xe_emitter_t* e, MlirValue v);
/// A tile.splat op of the scalar record `scalar` to the 1-D type t as one
/// broadcast of the whole vector, when every reader of it is written whole
/// (a new record, not bound), else NULL with nothing written.
xe_val_t* xe_wide_splat(xe_emitter_t* e, MlirOperation op, const xe_val_t* scalar, zt_type_t t);
/// Frees what xe_wide.c keeps in the emitter.
void xe_wide_free(xe_emitter_t* e);
/// Writes a wide record's chunks (vector.shuffle of 16 lanes each) where
/// the current scope cannot see them yet; every other record: nothing.
void xe_wide_chunks(xe_emitter_t* e, xe_val_t* r);
/// One elementwise tile op as a single op on whole vectors where its
/// operands allow (ops[] from xe_find_raw; splat_of[i]: the scalar record
/// a splatted operand was made from, or NULL). *out: the result's record
/// (not bound), or NULL when not taken (nothing written).
zt_status_t xe_wide_elementwise(xe_emitter_t* e, MlirOperation op, const char* opname,
                                const char* props, xe_val_t** ops, xe_val_t** splat_of,
                                int nops, zt_type_t rt, xe_val_t** out);

/// The lowered module text for the kernel (used by zt_lower_xe and tests);
/// info (may be NULL) receives what the module needs from the driver.
zt_status_t xe_emit_module(zt_lower_ctx_t* lc, zt_strbuf_t* out, xe_module_info_t* info);

#endif  // ZETILE_LOWERING_XE_INTERNAL_H_
