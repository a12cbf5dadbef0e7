// Internal to the dg2 lowering (Arc A-series, Xe-HPG): tile IR -> work-item
// (SIMT) MLIR text on scalars (arith/scf + llvm calls of OpenCL builtins)
// -> LLVM dialect -> LLVM IR -> SPIR-V through LLVM's SPIR-V backend.
//
// One program is one workgroup of `num_warps` subgroups of 8 work-items
// (intel_reqd_sub_group_size = 8). A tensor value is one of:
//   DV_SCALAR  a scalar SSA value (uniform across the workgroup),
//   DV_LAZY    a tensor computed per element where it is read, from its
//              defining op (make_range, splat, shape ops, elementwise ops
//              and addptr over lazy/scalar operands): it can be produced in
//              any layout at no data-movement cost,
//   DV_DIST    a tensor held in registers, E elements per work-item, in one
//              of the layouts below (loads, dots, loop-carried values, ...).
// A layout says, for work-item tid and slot k < E, which element it holds:
// coordinate d = base[d] (an SSA value computed once at kernel entry from the
// subgroup id and lane) + off[k][d] (a constant). Layouts:
//   BLOCKED  canonical: threads along the last dim first, cyclic
//            (coalesced), replicated when the tensor has fewer elements
//            than the workgroup has work-items;
//   DPAS_A/B/C operand layouts of intel_sub_group_*_matrix_mad_k16/_k32
//            in SIMD8 (see dg2_dot.c); A and B depend on how many
//            elements one 32-bit register holds (2 for 16-bit data, 4 for
//            8-bit data).
// Values in different layouts meet through shared local memory.
#ifndef ZETILE_LOWERING_DG2_DG2_INTERNAL_H_
#define ZETILE_LOWERING_DG2_DG2_INTERNAL_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lowering.h"
#include "xe/xe_target.h"

#define DG2_NAME 32
#define DG2_SIMD 8
#define DG2_MAX_DEPTH 64

typedef enum { DV_SCALAR, DV_LAZY, DV_DIST } dg2_vkind_t;

typedef struct dg2_val_s {
  dg2_vkind_t kind;
  zt_type_t type;
  char name[DG2_NAME];  // DV_SCALAR
  MlirOperation op;     // DV_LAZY
  int32_t res;          // DV_LAZY: which result of op (arith.mului_extended has two)
  char delta[DG2_NAME];  // DV_LAZY pointers: i64 byte offset added ("" none)
  int32_t layout;       // DV_DIST
  char (*el)[DG2_NAME]; // DV_DIST: element SSA names, in slot order
} dg2_val_t;

typedef enum { DL_BLOCKED, DL_DPAS_A, DL_DPAS_B, DL_DPAS_C } dg2_lkind_t;

typedef struct dg2_layout_s {
  dg2_lkind_t kind;
  int32_t rank;
  int64_t shape[ZT_MAX_RANK];
  int32_t e;                       // elements per work-item
  char base[ZT_MAX_RANK][DG2_NAME];  // i32 SSA names (kernel entry)
  int32_t* off;                    // e * rank constants
  // DPAS layouts: the dot's M, N, K, the subgroup grid wm x wn, and the
  // packing of A and B (elements per 32 bits: 2 or 4; 1 for C, which does
  // not depend on it). One DPAS covers K = 8 * pack.
  int64_t m, n, k;
  int32_t wm, wn;
  int32_t pack;
  // A and B of a dot whose K is split over subgroups (dg2_dot_ksplit): the
  // slice of K each holds, wk slices over wk groups of wm x wn subgroups
  // (1: whole K, each subgroup of the grid).
  int32_t wk;
} dg2_layout_t;

typedef struct dg2_entry_s {
  uintptr_t key;
  int32_t index;
} dg2_entry_t;

typedef struct dg2_intern_s {
  uint64_t hash;
  uint32_t id;  // 0: empty slot
  char name[DG2_NAME];
} dg2_intern_t;

// A DPAS operand packed where it was loaded (dg2_prepack): the words of
// the element array `el` in layout `layout`, pack_all's order.
typedef struct dg2_packed_s {
  const void* el;
  int32_t layout;
  int32_t n;
  char (*words)[DG2_NAME];
} dg2_packed_t;

typedef struct dg2_s {
  zt_lower_ctx_t* lc;
  const xe_target_t* target;  // the row compiled for: XMX (DPAS) or FMA dots, DP4A
  int32_t num_warps;
  int32_t threads;  // 8 * num_warps
  zt_strbuf_t entry;    // kernel entry: ids, layout bases
  zt_strbuf_t body;
  zt_strbuf_t decls;    // llvm.func declarations of builtins
  char declared[64][80];
  int32_t num_declared;
  int indent;
  int32_t next_id;
  // value map (MlirValue -> dg2_val_t)
  dg2_entry_t* map;
  size_t map_cap, map_count;
  dg2_val_t** chunks;  // values, in chunks of 256 (stable addresses)
  int32_t num_vals, cap_chunks;
  void** allocs;       // element name arrays, freed at the end
  int32_t num_allocs, cap_allocs;
  // layout hints (MlirValue -> layout index)
  dg2_entry_t* hints;
  size_t hint_cap, hint_count;
  dg2_layout_t* layouts;
  int32_t num_layouts, cap_layouts;
  // Values the emitter would otherwise print again for every use (each
  // print costs parse, cse and conversion time downstream): integer
  // constants, printed once in the kernel entry, and layout coordinates,
  // reused in the region that computed them and the regions inside it.
  // A region is a run of lines at one indent: a line printed at a smaller
  // indent closes the deeper ones (scope[d] gets a new serial).
  struct dg2_memo_s* memo;
  size_t memo_cap, memo_count;
  int32_t last_indent;
  uint32_t loop_epoch;  // changes where a loop body starts or ends
  uint32_t scope_serial;
  uint32_t scope[DG2_MAX_DEPTH];
  // SSA names interned for the lazy-element memo's keys (dg2_values.c).
  dg2_intern_t* interned;
  size_t intern_cap, intern_count;
  char smem_base[DG2_NAME];  // @zt_smem's address, printed once ("" not yet)
  int64_t smem_bytes;  // size of the shared local memory buffer
  MlirSymbolTable symbols;
  bool uses_dot;
  // Operand registers a lane of all the kernel's dots with whole K (-1
  // while dg2_plan sums them into dot_regs_sum): when they exceed the
  // register file, dots whose blocks repeat split K (dg2_dot.c, dot_ksplit).
  int64_t dot_regs, dot_regs_sum;
  dg2_packed_t* packed;  // DPAS operands packed at their loads
  int32_t num_packed, cap_packed;
} dg2_t;

// --- values, layouts (dg2_values.c) ------------------------------------------
zt_status_t dg2_put(dg2_t* c, MlirValue v, const dg2_val_t* val);
const dg2_val_t* dg2_get(dg2_t* c, MlirValue v);
zt_status_t dg2_get_checked(dg2_t* c, MlirValue v, const dg2_val_t** out);
char (*dg2_alloc_names(dg2_t* c, int32_t n))[DG2_NAME];
void dg2_free(dg2_t* c);
void dg2_fresh(dg2_t* c, char out[DG2_NAME]);
int32_t dg2_fresh_id(dg2_t* c);
void dg2_line(dg2_t* c, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void dg2_entry_line(dg2_t* c, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
const char* dg2_reg(zt_scalar_kind_t k);  // register type ("i64" for ptr)
const char* dg2_mem(zt_scalar_kind_t k);  // memory type ("i8" for i1)
/// Declares `llvm.func @name(sig)` once (sig: "(f32, i32) -> f32").
void dg2_declare(dg2_t* c, const char* name, const char* sig);
/// An i32 (or other type) constant as a fresh SSA name.
void dg2_const(dg2_t* c, const char* ty, long long v, char out[DG2_NAME]);

/// Memo of printed values (dg2_values.c): the name recorded for (k1, k2)
/// if it is visible at the current line (same region or one inside it, not
/// across a loop's boundary), else NULL; put records a name printed at the
/// current indent. k1's top byte is a tag: 1 constants, 2 coordinates,
/// 4 lazy elements, 5 local-memory addresses, 6 scaled pointer offsets.
const char* dg2_memo_get(dg2_t* c, uint64_t k1, uint64_t k2);
void dg2_memo_put(dg2_t* c, uint64_t k1, uint64_t k2, const char* name);
/// A small id (from 1) for an SSA name; 0 when out of memory.
uint32_t dg2_intern(dg2_t* c, const char* s);

zt_status_t dg2_hint_put(dg2_t* c, MlirValue v, int32_t layout);
int32_t dg2_hint_get(dg2_t* c, MlirValue v);  // -1: none
/// The canonical blocked layout of a shape (creates it on first use).
zt_status_t dg2_blocked(dg2_t* c, int32_t rank, const int64_t* shape, int32_t* out);
/// DPAS operand layouts of a dot [m,k]x[k,n] (which: DL_DPAS_A/B/C) whose
/// A and B hold `pack` elements per 32 bits (2: fp16/bf16, 4: int8).
zt_status_t dg2_dpas_layout(dg2_t* c, dg2_lkind_t which, int64_t m, int64_t n,
                            int64_t k, int32_t pack, int32_t* out);
/// The same with K in wk slices over subgroups (A and B; C keeps its layout).
zt_status_t dg2_dpas_layout_k(dg2_t* c, dg2_lkind_t which, int64_t m, int64_t n, int64_t k,
                              int32_t pack, int32_t wk, int32_t* out);
void dg2_dpas_grid(dg2_t* c, int64_t m, int64_t n, int32_t* wm, int32_t* wn);
/// Coordinates (i32 SSA names) of slot k of layout l.
void dg2_coords(dg2_t* c, int32_t l, int32_t k, char coords[][DG2_NAME]);
/// Element of v at the given coordinates (v SCALAR or LAZY).
zt_status_t dg2_lazy_at(dg2_t* c, const dg2_val_t* v, char coords[][DG2_NAME],
                        char out[DG2_NAME]);
/// Element `slot` of v in layout l: v SCALAR, LAZY, or DIST in layout l.
zt_status_t dg2_elem(dg2_t* c, const dg2_val_t* v, int32_t l, int32_t slot,
                     char out[DG2_NAME]);
/// v as a DIST value in layout l (converting through local memory when v is
/// DIST in another layout; materializing when lazy or scalar).
zt_status_t dg2_to_layout(dg2_t* c, const dg2_val_t* v, int32_t l, dg2_val_t* out);

/// base + extsi(off) * sizeof(pointee), all i64.
zt_status_t dg2_addptr_scalar(dg2_t* c, const char* base, const char* off,
                              zt_scalar_kind_t off_kind, zt_scalar_kind_t pointee,
                              char out[DG2_NAME]);
/// Source coordinates of a shape op's result element.
zt_status_t dg2_shape_src_coords(dg2_t* c, MlirOperation op, const zt_type_t* rt,
                                 const zt_type_t* st, char coords[][DG2_NAME],
                                 char sc[][DG2_NAME]);
/// Local memory as a row-major tensor of type t.
void dg2_smem_store_elem(dg2_t* c, const zt_type_t* t, char coords[][DG2_NAME],
                         const char* x);
void dg2_smem_load_elem(dg2_t* c, const zt_type_t* t, char coords[][DG2_NAME],
                        char out[DG2_NAME]);
void dg2_need_smem(dg2_t* c, int64_t bytes);
/// barrier; every element of DIST v to local memory; barrier.
zt_status_t dg2_smem_write(dg2_t* c, const dg2_val_t* v);
/// v (of type st) to local memory as a row-major tensor, distributed over
/// the blocked layout first if it is not yet (reductions and scans read
/// their operand back from there).
zt_status_t dg2_stage_in_smem(dg2_t* c, MlirValue v, const zt_type_t* st);

// --- ops (dg2_ops.c, dg2_control.c, dg2_dot.c) -------------------------------
zt_status_t dg2_emit_block(dg2_t* c, MlirBlock block);
zt_status_t dg2_emit_op(dg2_t* c, MlirOperation op);
/// Emits the scalar form of an arith/math op on element names ins;
/// writes result names to outs.
zt_status_t dg2_scalar_op(dg2_t* c, MlirOperation op, char ins[][DG2_NAME],
                          char outs[][DG2_NAME]);
zt_status_t dg2_emit_for(dg2_t* c, MlirOperation op);
zt_status_t dg2_emit_if(dg2_t* c, MlirOperation op);
zt_status_t dg2_emit_while(dg2_t* c, MlirOperation op);
zt_status_t dg2_emit_reduce(dg2_t* c, MlirOperation op);
zt_status_t dg2_emit_scan(dg2_t* c, MlirOperation op);  // dg2_scan.c
/// The combiner function fn on scalars: out[i] = fn(lhs..., rhs...).
zt_status_t dg2_combine(dg2_t* c, MlirOperation fn, int32_t n, char lhs[][DG2_NAME],
                        char rhs[][DG2_NAME], char out[][DG2_NAME]);
zt_status_t dg2_emit_dot(dg2_t* c, MlirOperation op);
/// A value being loaded in a DPAS A or B layout of an XMX row, `loaded` of
/// its slots so far (called after each, in slot order): packs each word of
/// the builtin as soon as its elements are in, so the 16- or 8-bit elements
/// die there and what stays live (across a loop, say) is the packed words;
/// dg2_emit_dot takes them instead of packing again.
zt_status_t dg2_prepack(dg2_t* c, const dg2_val_t* v, int32_t loaded);
/// tile.atomic_rmw / tile.atomic_cas (dg2_atomic.c).
zt_status_t dg2_emit_atomic(dg2_t* c, MlirOperation op);
/// Layout hints: DPAS layouts for dot operands, propagated backwards.
zt_status_t dg2_plan(dg2_t* c);

// --- fp32 dots (dg2_dot_f32.c) -------------------------------------------------
/// bf16 pieces per fp32 operand for the dot's input_precision: 2 ("tf32",
/// the default), 3 ("ieee", "tf32x3").
int32_t dg2_f32_pieces(MlirOperation op);
/// The products (piece of A, piece of B) to accumulate, smallest first;
/// returns their number.
int32_t dg2_f32_terms(int32_t pieces, const int32_t (**out)[2]);
/// Emits the split of f32 x into `pieces` bf16 pieces (i16 bits) out[0..).
void dg2_split_bf16(dg2_t* c, const char* x, int32_t pieces, char out[][DG2_NAME]);

// --- dots without XMX (dg2_dot_fma.c) ------------------------------------------
/// A dot's operands, already in the DPAS layouts of pack dg2_fma_pack().
typedef struct dg2_fma_dot_s {
  const dg2_val_t *A, *B, *C;
  zt_scalar_kind_t in;  // F16, BF16, F32 or I8 (both operands)
  bool is_unsigned;     // int8: unsigned operands
} dg2_fma_dot_t;
/// Elements per 32 bits of the FMA path's A/B layouts: 4 for int8 dots on
/// a DP4A row with K a multiple of 32, else 1.
int32_t dg2_fma_pack(const dg2_t* c, zt_scalar_kind_t in, int64_t k);
/// r: DIST in C's layout with r->el allocated; fills r->el.
zt_status_t dg2_emit_dot_fma(dg2_t* c, const dg2_fma_dot_t* d, dg2_val_t* r);

/// Local memory: byte offset name -> !llvm.ptr<3> name.
void dg2_smem_ptr(dg2_t* c, const char* byte_off, char out[DG2_NAME]);
void dg2_barrier(dg2_t* c);

bool dg2_op_is(MlirOperation op, const char* name);
bool dg2_op_prefix(MlirOperation op, const char* prefix);
zt_status_t dg2_op_error(MlirOperation op, zt_status_code_t code, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
zt_status_t dg2_value_type(MlirValue v, zt_type_t* out);
int64_t dg2_int_attr(MlirOperation op, const char* name, int64_t dflt);

#endif  // ZETILE_LOWERING_DG2_DG2_INTERNAL_H_
