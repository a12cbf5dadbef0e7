// Internal to the CPU lowering (tile IR -> scf/memref/arith/math/llvm text).
//
// Every tensor value lives in a flat row-major stack buffer
// (`memref<N x T>`, allocated at function entry) or is a splat (a scalar
// that stands for every element, never materialized unless a loop carries
// it). Scalars stay SSA values. Each tile op becomes a loop (nest) over
// elements; pointers are i64 addresses.
#ifndef ZETILE_LOWERING_CPU_CPU_LOWER_H_
#define ZETILE_LOWERING_CPU_CPU_LOWER_H_

#include <stdbool.h>
#include <stdint.h>

#include <stddef.h>

#include "lowering.h"

#define ZT_CPU_NAME 40

typedef enum cpu_val_kind_e {
  CPU_SCALAR,  // name is an SSA value
  CPU_SPLAT,   // tensor whose elements all equal the SSA value `name`
  CPU_BUFFER,  // tensor in buffer `buf`
  CPU_LAZY,    // tensor recomputed per element from `op` where it is read
} cpu_val_kind_t;

typedef struct cpu_val_s {
  cpu_val_kind_t kind;
  zt_type_t type;
  char name[ZT_CPU_NAME];
  int32_t buf;
  MlirOperation op;  // CPU_LAZY: the elementwise op (result 0)
  int32_t cost;      // CPU_LAZY: ops re-emitted per element read
  // CPU_BUFFER from a row load read only by a tile.dot (emit_row_load,
  // issue 16): where the i1 `rows_ok` holds, the buffer was NOT filled and
  // row r of the tile is in memory from the address rows_ptr[r * cols]
  // (buffer rows_ptr_buf, an i64 address tensor); the dot reads it there.
  char rows_ok[ZT_CPU_NAME];
  char rows_ptr[ZT_CPU_NAME];
  int32_t rows_ptr_buf;
} cpu_val_t;

typedef struct cpu_buf_s {
  zt_scalar_kind_t kind;
  int64_t numel;
} cpu_buf_t;

typedef struct cpu_map_entry_s {
  uintptr_t key;  // MlirValue.ptr; 0 = empty
  int32_t index;  // into the value chunks (stable addresses)
} cpu_map_entry_t;

#define CPU_VAL_CHUNK 256

typedef struct cpu_s {
  zt_lower_ctx_t* lc;
  zt_strbuf_t entry;  // allocas and constants, at function entry
  zt_strbuf_t body;
  int indent;
  int32_t next_id;
  cpu_map_entry_t* map;
  size_t map_cap, map_count;
  cpu_val_t** chunks;
  int32_t num_vals, cap_chunks;
  cpu_buf_t* bufs;
  int32_t num_bufs, cap_bufs;
  // Constants already emitted in the entry block.
  int64_t* index_consts;
  int32_t num_index_consts, cap_index_consts;
  uint32_t zero_consts;  // bit per zt_scalar_kind_t
  zt_strbuf_t globals;  // module-level declarations (strings, helper functions)
  int32_t num_globals;
  uint32_t declared;  // bit per CPU_HELPER_* already declared in `globals`
  MlirSymbolTable symbols;  // of the tile module (combiners)
  // tile.print groups (cpu_debug.c): the last print emitted, the group's
  // first op and the operand number of the last one.
  MlirOperation print_prev, print_head;
  int32_t print_operand;
  bool addr_is_ptr;  // the load/store being emitted got an !llvm.ptr, not i64
  bool bounds;       // the kernel has zt.bounds_check: check every access
  bool no_split;     // emitting a rarely taken path: plain loops (cpu_split_loop)
  // Carried 2-D pointer tensors that each iteration moves by one uniform
  // step (`a_ptrs += BLOCK_K * stride_ak`): whether their rows are
  // consecutive, an i1 computed once before the loop (cpu_emit_for), which
  // their row loads use instead of checking on every iteration.
  MlirValue rows_arg[16];
  char rows_ok[16][ZT_CPU_NAME];
  // Each one's step in bytes (an i64 computed before the loop), "" when it
  // is not loop-invariant arithmetic: row loads prefetch the next
  // iteration's rows with it (emit_row_load).
  char rows_step[16][ZT_CPU_NAME];
  int32_t num_rows_ok;
  int32_t rows_loads[16];  // row loads emitted reading rows_ok[k] (emit_row_load)
  // Carried pointer tensors whose yield may move only each row's first
  // address while rows_ok[k] holds (cpu_emit_for: their only readers are
  // `loads` tile.loads, which then read p[i][0] alone; cpu_copy_to).
  int32_t col0_buf[16], col0_k[16], col0_loads[16];
  int32_t num_col0;
  // While a store's blocked loops are emitted (emit_store): a load it reads
  // whose base moves with the program id (lazy `addptr(splat(P), off)`, P
  // = P0 + pid * s), and the bytes P moves from one program to the next
  // (an i64): each 16-lane block prefetches that block of the next program
  // (cpu_prefetch_next). NULL otherwise.
  const cpu_val_t* pf_ptr;
  char pf_delta[ZT_CPU_NAME];
  // While a tile.store's loops are emitted (emit_store): the store, when its
  // mask-true range may be written by streaming stores (cpu_store_nt.c);
  // NULL otherwise.
  const struct cpu_nt_s* nt;
} cpu_t;

// A store whose full lines may be written non-temporally (cpu_store_nt.c).
typedef struct cpu_nt_s {
  MlirOperation op;      // the tile.store
  const cpu_val_t** in;  // its lowered operands: address, value[, mask]
  int64_t numel;
  int32_t bytes;  // element bytes: 4 or 8
  zt_scalar_kind_t kind;
} cpu_nt_t;

// --- values (cpu_values.c) ------------------------------------------------
zt_status_t cpu_map_put(cpu_t* c, MlirValue v, const cpu_val_t* val);
void cpu_values_free(cpu_t* c);
const cpu_val_t* cpu_map_get(cpu_t* c, MlirValue v);
/// The lowered value of an operand, or an INTERNAL status. The pointer stays
/// valid for the whole lowering (later puts of the same key overwrite it).
zt_status_t cpu_get(cpu_t* c, MlirValue v, const cpu_val_t** out);
/// A fresh SSA name "%tN".
void cpu_fresh(cpu_t* c, char out[ZT_CPU_NAME]);
/// A new buffer for elements of `t` (its element kind and count).
zt_status_t cpu_new_buf(cpu_t* c, zt_type_t t, int32_t* out_buf);
/// A buffer value of type t (new buffer).
zt_status_t cpu_new_buf_val(cpu_t* c, zt_type_t t, cpu_val_t* out);
/// "memref<1024xf32>" for a buffer.
const char* cpu_buf_type(cpu_t* c, int32_t buf, char* tmp, size_t n);
/// MLIR spelling of an element of kind k in registers ("i64" for pointers).
const char* cpu_elem(zt_scalar_kind_t k);
/// Name of an index constant, emitted at entry on first use.
const char* cpu_index(cpu_t* c, int64_t v, char out[ZT_CPU_NAME]);
/// Name of a zero of kind k, emitted at entry on first use.
const char* cpu_zero(cpu_t* c, zt_scalar_kind_t k, char out[ZT_CPU_NAME]);
/// The integer scalar s as an i64 (its own name, or a sign extension of an
/// i32 emitted here); false for anything else.
bool cpu_scalar_i64(cpu_t* c, const cpu_val_t* s, char out[ZT_CPU_NAME]);
/// Prefetches into L1 every 64-byte line, first to last byte, of the
/// row_bytes-long row at pointer bp moved by `step` bytes (an i64 name; NULL:
/// not moved) (cpu_ops.c).
void cpu_prefetch_row(cpu_t* c, const char* bp, const char* step, int64_t row_bytes);
/// In a blocked loop, block `iv`: prefetch c->pf_ptr's element iv of the
/// next program (no-op when c->pf_ptr is NULL; cpu_ops.c).
void cpu_prefetch_next(cpu_t* c, const char* iv);
/// Before a blocked loop over roots (and root's operands) when c->pf_ptr is
/// not set: sets it (and c->pf_delta) to a load they read whose base moves
/// with the program id; true if it did (the caller clears it; cpu_ops.c).
bool cpu_prefetch_pick(cpu_t* c, const MlirValue* roots, int nroots, const cpu_val_t* root);
/// Appends one indented line to the body.
void cpu_line(cpu_t* c, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
/// Element `idx` (an index SSA name) of v: the scalar itself for scalars and
/// splats, else a memref.load. Writes the SSA name to out.
void cpu_read(cpu_t* c, const cpu_val_t* v, const char* idx, char out[ZT_CPU_NAME]);
/// memref.store of SSA value `x` into buffer element idx.
void cpu_write(cpu_t* c, int32_t buf, const char* idx, const char* x);
/// Opens `scf.for` over [0, n) (index); writes the induction variable name.
void cpu_loop_begin(cpu_t* c, int64_t n, char iv[ZT_CPU_NAME]);
void cpu_loop_end(cpu_t* c);
/// Closes a loop over vector lanes: LLVM must not fully unroll it (that
/// would leave its loop vectorizer nothing to vectorize).
void cpu_loop_end_lanes(cpu_t* c);
/// Opens a loop nest over shape (rank >= 1); ivs[d] get the names.
void cpu_nest_begin(cpu_t* c, int32_t rank, const int64_t* shape,
                    char ivs[][ZT_CPU_NAME]);
void cpu_nest_end(cpu_t* c, int32_t rank);
/// sum ivs[d] * strides[d] as an index value (strides of 0 are skipped).
void cpu_linear(cpu_t* c, int32_t rank, char ivs[][ZT_CPU_NAME],
                const int64_t* strides, char out[ZT_CPU_NAME]);
/// Row-major strides of a shape.
void cpu_strides(int32_t rank, const int64_t* shape, int64_t* strides);
/// Element idx of a CPU_LAZY value (cpu_ops.c).
void cpu_read_lazy(cpu_t* c, const cpu_val_t* v, const char* idx,
                   char out[ZT_CPU_NAME]);
/// A buffer holding v's elements (v itself unless v is lazy).
zt_status_t cpu_materialize(cpu_t* c, const cpu_val_t* v, const cpu_val_t** out);
/// Copies the elements of v into buffer dst (no-op when v already is dst).
void cpu_copy_to(cpu_t* c, const cpu_val_t* v, int32_t dst);
/// v (a splat or scalar) through an empty inline asm: the same value, which
/// LLVM cannot fold into constants (a fill of it stays vector stores, not
/// memset) (cpu_values.c).
void cpu_opaque_splat(cpu_t* c, const cpu_val_t* v, cpu_val_t* out);
/// Copies srcs[i] into bufs dsts[i] as one parallel assignment (staging
/// through temporaries when a source is another copy's destination).
zt_status_t cpu_parallel_copy(cpu_t* c, int32_t n, const cpu_val_t* const* srcs,
                              const int32_t* dsts);

/// A load of one element of kind k from `addr` (i64, or an !llvm.ptr when
/// c->addr_is_ptr); i1 is a byte in memory.
void cpu_raw_load(cpu_t* c, zt_scalar_kind_t k, const char* addr, char out[ZT_CPU_NAME]);
void cpu_raw_store(cpu_t* c, zt_scalar_kind_t k, const char* addr, const char* v);
/// Integer attribute `name` of op, or dflt.
int64_t cpu_int_attr(MlirOperation op, const char* name, int64_t dflt);
/// "file:line:col" of an op's location ("" when it has none).
void cpu_op_where(MlirOperation op, char* out, size_t n);
/// An i8 array global holding s and a NUL; writes an !llvm.ptr to it (an
/// llvm.mlir.addressof in the body) to out.
void cpu_global_string(cpu_t* c, const char* s, char out[ZT_CPU_NAME]);

/// Helper functions that kernels call (lowering/cpu/cpu_helpers.c; the JIT
/// registers them). cpu_declare adds the llvm.func declaration once.
typedef enum cpu_helper_e {
  CPU_HELPER_PRINT,
  CPU_HELPER_ASSERT,
  CPU_HELPER_BOUNDS,
} cpu_helper_t;
const char* cpu_declare(cpu_t* c, cpu_helper_t h);
/// Bounds mode (c->bounds): a call that checks the access of one element of
/// kind k at addr (i64, or !llvm.ptr when c->addr_is_ptr) by `op` against
/// the launch's buffers; write: 0 load, 1 store, 2 atomic. Emits nothing
/// when the mode is off, so the code of ordinary kernels is unchanged.
void cpu_check_access(cpu_t* c, MlirOperation op, const char* addr, zt_scalar_kind_t k,
                      int write);

/// Run-time bounds (cpu_range.c): i64 SSA values lo and hi bounding every
/// element of an integer tensor (pointers: byte addresses) built from
/// splats, make_range, + - * and addptr; ok gets and-ed with the conditions
/// under which the bounds hold (no i32 wrap-around; "" means none). false
/// when v's form is not understood (the code emitted so far is unused).
bool cpu_value_range(cpu_t* c, const cpu_val_t* v, char lo[ZT_CPU_NAME],
                     char hi[ZT_CPU_NAME], char ok[ZT_CPU_NAME]);
/// ok &&= the bytes of pointer tensors a (abytes per element) and b cannot
/// meet; false when a bound is not understood.
bool cpu_ranges_disjoint(cpu_t* c, const cpu_val_t* a, int32_t abytes,
                         const cpu_val_t* b, int32_t bbytes, char ok[ZT_CPU_NAME]);
/// For a 1-D mask `s + make_range < n`: an index SSA value counting its
/// leading true elements, after which all are false when nowrap (an i1
/// name, or "" when it always holds) is true.
bool cpu_mask_bound(cpu_t* c, const cpu_val_t* mask, char count[ZT_CPU_NAME],
                    char nowrap[ZT_CPU_NAME]);
/// Emits one element's code at index iv (a loop's body).
typedef zt_status_t (*cpu_body_fn)(cpu_t* c, void* user, const char* iv);
/// Whether tile.store `op` (lowered operands in, numel elements) may write
/// its mask-true range with streaming stores: a 1-D store of 4- or 8-byte
/// elements at consecutive addresses from a kernel argument that nothing in
/// the kernel loads from, in a kernel without atomics (cpu_store_nt.c).
bool cpu_nt_eligible(cpu_t* c, MlirOperation op, const cpu_val_t** in, intptr_t nin,
                     int64_t numel, cpu_nt_t* out);
/// For the store c->nt, the range [0, end) of its loop (its mask true, end
/// a multiple of 16): emits `scf.if <large, aligned, consecutive> {` the
/// range with its whole 64-byte lines streamed and the elements before and
/// after stored one at a time `} else {` and returns true; the caller emits
/// the plain loop and closes the `}`. *s gets a status of body. false
/// (nothing emitted) when it cannot.
bool cpu_nt_begin(cpu_t* c, const char* end, cpu_body_fn body, void* user, zt_status_t* s);
/// Element idx of a lazy `addptr(uniform base, offsets)` as a getelementptr
/// (an !llvm.ptr, sets c->addr_is_ptr); false for other pointer values
/// (cpu_ops.c).
bool cpu_gep_address(cpu_t* c, const cpu_val_t* p, const char* idx, char out[ZT_CPU_NAME]);
/// A loop over numel elements running body, split in two at the end of a
/// 1-D mask `s + arange < n` that the lazy chains of roots (values) and of
/// root (a lowered value) read: the mask is a true splat in the first loop
/// and a false one in the second (skipped when skip_tail: a store's masked
/// elements do nothing). One plain loop when there is no such mask.
zt_status_t cpu_split_loop(cpu_t* c, const MlirValue* roots, int nroots,
                           const cpu_val_t* root, int64_t numel, MlirValue skip_mask,
                           cpu_body_fn body, void* user);
/// One block [start, start + V) of a 1-D value of numel elements read by a
/// tree reduction: body (called with start) in two branches, with root's
/// mask `s + arange < n` a true splat (the block below its end) or read.
/// Just body when there is no such mask.
zt_status_t cpu_split_block(cpu_t* c, const cpu_val_t* root, int64_t numel, const char* start,
                            int64_t V, cpu_body_fn body, void* user);

/// Whether the rows of the rank >= 2 pointer tensor p (elements of `bytes`
/// bytes) are consecutive: p[i][j] == p[i][0] + j * bytes for all i, j, as an
/// i1 SSA value (an or of xors over every element; cpu_ops.c).
void cpu_rows_check(cpu_t* c, const cpu_val_t* p, int64_t bytes, char ok[ZT_CPU_NAME]);
/// Element bytes of the pointee of pointer tensor type t (i1: 1).
int64_t cpu_pointee_bytes(const zt_type_t* t);
// Integer (<= 32 bits) quotient or remainder through an exact f64 division
// (vectorizes; cpu_ops.c). d must not be 0.
void cpu_div_f64(cpu_t* c, const char* x, const char* d, const char* ty, bool is_signed,
                 bool rem, char out[ZT_CPU_NAME]);
#define CPU_ROW_LOAD_MIN 8  // shorter rows: the check costs more than it saves

/// e^x of an f32 SSA value as inline arithmetic (cpu_math.c).
void cpu_exp_f32(cpu_t* c, const char* x, char out[ZT_CPU_NAME]);

// --- ops (cpu_ops.c, cpu_control.c, cpu_block.c, cpu_debug.c) ---------------
/// Lowers every op of a block (stopping at its terminator, which the caller
/// handles) .
zt_status_t cpu_emit_block(cpu_t* c, MlirBlock block);
zt_status_t cpu_emit_op(cpu_t* c, MlirOperation op);
zt_status_t cpu_emit_for(cpu_t* c, MlirOperation op);
zt_status_t cpu_emit_if(cpu_t* c, MlirOperation op);
zt_status_t cpu_emit_while(cpu_t* c, MlirOperation op);
zt_status_t cpu_emit_reduce(cpu_t* c, MlirOperation op);
/// The combiner function `fn` (2n scalar arguments) inlined on lhs/rhs;
/// writes its n results' names to out.
zt_status_t cpu_inline_combiner(cpu_t* c, MlirOperation fn, int32_t n,
                                char (*lhs)[ZT_CPU_NAME], char (*rhs)[ZT_CPU_NAME],
                                char (*out)[ZT_CPU_NAME]);
/// tile.reduce of one value along an axis of `len` elements (element k at
/// index base + k * astr) in blocked tree order, when `fn` is a single
/// commutative arith op and len suits (*done set; the result's name in
/// out); else emits nothing and leaves *done false (cpu_reduce_tree.c).
zt_status_t cpu_emit_tree_reduce(cpu_t* c, MlirOperation fn, const cpu_val_t* src,
                                 int64_t len, int64_t astr, const char* base,
                                 bool* done, char out[ZT_CPU_NAME]);
zt_status_t cpu_emit_dot(cpu_t* c, MlirOperation op);
/// Whether the host (the machine code's target) has AVX-512F (cpu_math.c).
bool cpu_host_avx512(void);
/// work (f32 buffer, M x N, holding the accumulator) += a (M x K) @ b (K x N)
/// as a vector micro-kernel when a and b are f32/f16 buffers and the shapes
/// suit (*done set); else emits nothing (cpu_dot.c).
zt_status_t cpu_emit_dot_vector(cpu_t* c, const cpu_val_t* a, const cpu_val_t* b,
                                const cpu_val_t* work, int64_t M, int64_t K, int64_t N,
                                bool* done);
/// Fills v's buffer where its row load left it unfilled for a dot to read
/// the rows in place (v->rows_ok), for a dot that reads the buffer instead.
void cpu_dot_fill_rows(cpu_t* c, const cpu_val_t* v);
zt_status_t cpu_emit_scan(cpu_t* c, MlirOperation op);
zt_status_t cpu_emit_block_load(cpu_t* c, MlirOperation op);
zt_status_t cpu_emit_block_store(cpu_t* c, MlirOperation op);
zt_status_t cpu_emit_print(cpu_t* c, MlirOperation op);
zt_status_t cpu_emit_assert(cpu_t* c, MlirOperation op);

/// Op name helpers.
bool cpu_op_is(MlirOperation op, const char* name);
/// Status naming the op and its source location.
zt_status_t cpu_op_error(MlirOperation op, zt_status_code_t code,
                         const char* fmt, ...) __attribute__((format(printf, 3, 4)));
/// Tile type of an MLIR value.
zt_status_t cpu_value_type(MlirValue v, zt_type_t* out);

#endif  // ZETILE_LOWERING_CPU_CPU_LOWER_H_
