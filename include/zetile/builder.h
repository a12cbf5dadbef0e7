// zetile: C builder API for tile IR.
//
// A builder writes one tile IR module (MLIR text, see docs/TILE_IR.md) holding
// one kernel and the helper functions it needs (reduction combiners). It
// checks shapes and types as ops are added and reports the source location
// given by zt_builder_set_loc, so front ends get errors that name their line.
// The builder needs no MLIR: a warm process hashes the text to find cached
// kernels without loading the compiler (docs/ARCHITECTURE.md).
//
// Values are small integer handles valid for the builder that made them.
// Types are plain structs. Integers are signless as in MLIR: ops that care
// about signedness come in signed and unsigned variants, so a front end with
// unsigned types (Triton's uint32) picks the variant.
#ifndef ZETILE_BUILDER_H_
#define ZETILE_BUILDER_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zetile/api.h"
#include "zetile/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/// The highest tensor rank. Triton has no limit; 10 covers the ranks its
/// language tests use (a 9-D reshape, 5-D and 6-D batched dots) with room.
/// Every array a type carries is this long.
#define ZT_MAX_RANK 10

/// Element kinds. X(NAME, mlir spelling, size in bits).
#define ZT_SCALAR_KINDS(X) \
  X(I1, "i1", 1)           \
  X(I8, "i8", 8)           \
  X(I16, "i16", 16)        \
  X(I32, "i32", 32)        \
  X(I64, "i64", 64)        \
  X(F16, "f16", 16)        \
  X(BF16, "bf16", 16)      \
  X(F32, "f32", 32)        \
  X(F64, "f64", 64)        \
  X(PTR, "ptr", 64)

typedef enum zt_scalar_kind_e {
#define ZT_X_(name, spelling, bits) ZT_##name,
  ZT_SCALAR_KINDS(ZT_X_)
#undef ZT_X_
  ZT_SCALAR_KIND_COUNT
} zt_scalar_kind_t;

/// A scalar (rank 0) or ranked tensor type. For ZT_PTR, `pointee` is the
/// element kind pointed to (not ZT_PTR).
typedef struct zt_type_s {
  zt_scalar_kind_t kind;
  zt_scalar_kind_t pointee;
  int32_t rank;
  int64_t shape[ZT_MAX_RANK];
} zt_type_t;

/// A value handle; ZT_NO_VALUE marks an absent optional operand.
typedef int32_t zt_value_t;
#define ZT_NO_VALUE ((zt_value_t)-1)

typedef struct zt_builder_s zt_builder_t;

/// Binary elementwise ops (operands of the same type; the front end inserts
/// casts and broadcasts). X(NAME, mlir op).
#define ZT_BINARY_OPS(X)      \
  X(ADDF, "arith.addf")       \
  X(SUBF, "arith.subf")       \
  X(MULF, "arith.mulf")       \
  X(DIVF, "arith.divf")       \
  X(REMF, "arith.remf")       \
  X(MAXNUMF, "arith.maxnumf") \
  X(MINNUMF, "arith.minnumf") \
  X(MAXIMUMF, "arith.maximumf") \
  X(MINIMUMF, "arith.minimumf") \
  X(POWF, "math.powf")        \
  X(ATAN2, "math.atan2")      \
  X(ADDI, "arith.addi")       \
  X(SUBI, "arith.subi")       \
  X(MULI, "arith.muli")       \
  X(DIVSI, "arith.divsi")     \
  X(DIVUI, "arith.divui")     \
  X(REMSI, "arith.remsi")     \
  X(REMUI, "arith.remui")     \
  X(MAXSI, "arith.maxsi")     \
  X(MINSI, "arith.minsi")     \
  X(MAXUI, "arith.maxui")     \
  X(MINUI, "arith.minui")     \
  X(ANDI, "arith.andi")       \
  X(ORI, "arith.ori")         \
  X(XORI, "arith.xori")       \
  X(SHLI, "arith.shli")       \
  X(SHRSI, "arith.shrsi")     \
  X(SHRUI, "arith.shrui")     \
  X(MULHIUI, "tile.mulhiui")

typedef enum zt_binary_op_e {
#define ZT_X_(name, op) ZT_BINARY_##name,
  ZT_BINARY_OPS(ZT_X_)
#undef ZT_X_
  ZT_BINARY_OP_COUNT
} zt_binary_op_t;

/// Unary elementwise ops. X(NAME, mlir op, float-only?).
#define ZT_UNARY_OPS(X)        \
  X(NEGF, "arith.negf", 1)     \
  X(ABSF, "math.absf", 1)      \
  X(ABSI, "math.absi", 0)      \
  X(EXP, "math.exp", 1)        \
  X(EXP2, "math.exp2", 1)      \
  X(LOG, "math.log", 1)        \
  X(LOG2, "math.log2", 1)      \
  X(SQRT, "math.sqrt", 1)      \
  X(RSQRT, "math.rsqrt", 1)    \
  X(SIN, "math.sin", 1)        \
  X(COS, "math.cos", 1)        \
  X(TANH, "math.tanh", 1)      \
  X(ERF, "math.erf", 1)        \
  X(FLOOR, "math.floor", 1)    \
  X(CEIL, "math.ceil", 1)

typedef enum zt_unary_op_e {
#define ZT_X_(name, op, fonly) ZT_UNARY_##name,
  ZT_UNARY_OPS(ZT_X_)
#undef ZT_X_
  ZT_UNARY_OP_COUNT
} zt_unary_op_t;

/// Comparison predicates: integer ones map to arith.cmpi, float ones to
/// arith.cmpf. X(NAME, "cmpi"|"cmpf", predicate spelling).
#define ZT_CMP_PREDICATES(X) \
  X(EQ, "cmpi", "eq")        \
  X(NE, "cmpi", "ne")        \
  X(SLT, "cmpi", "slt")      \
  X(SLE, "cmpi", "sle")      \
  X(SGT, "cmpi", "sgt")      \
  X(SGE, "cmpi", "sge")      \
  X(ULT, "cmpi", "ult")      \
  X(ULE, "cmpi", "ule")      \
  X(UGT, "cmpi", "ugt")      \
  X(UGE, "cmpi", "uge")      \
  X(OEQ, "cmpf", "oeq")      \
  X(ONE, "cmpf", "one")      \
  X(OLT, "cmpf", "olt")      \
  X(OLE, "cmpf", "ole")      \
  X(OGT, "cmpf", "ogt")      \
  X(OGE, "cmpf", "oge")      \
  X(UNE, "cmpf", "une")      \
  X(UNO, "cmpf", "uno")      \
  X(ORD, "cmpf", "ord")

typedef enum zt_cmp_predicate_e {
#define ZT_X_(name, op, pred) ZT_CMP_##name,
  ZT_CMP_PREDICATES(ZT_X_)
#undef ZT_X_
  ZT_CMP_PREDICATE_COUNT
} zt_cmp_predicate_t;

/// Element type conversions. X(NAME, mlir op).
#define ZT_CAST_OPS(X)         \
  X(EXTSI, "arith.extsi")      \
  X(EXTUI, "arith.extui")      \
  X(TRUNCI, "arith.trunci")    \
  X(SITOFP, "arith.sitofp")    \
  X(UITOFP, "arith.uitofp")    \
  X(FPTOSI, "arith.fptosi")    \
  X(FPTOUI, "arith.fptoui")    \
  X(EXTF, "arith.extf")        \
  X(TRUNCF, "arith.truncf")    \
  X(BITCAST, "arith.bitcast")

typedef enum zt_cast_op_e {
#define ZT_X_(name, op) ZT_CAST_##name,
  ZT_CAST_OPS(ZT_X_)
#undef ZT_X_
  ZT_CAST_OP_COUNT
} zt_cast_op_t;

/// Built-in reduction combiners (zt_builder_reduce makes the combiner
/// function). User combiners use zt_builder_reduce_begin/_end.
typedef enum zt_reduce_kind_e {
  ZT_REDUCE_ADD,
  ZT_REDUCE_MUL,
  ZT_REDUCE_MAX,  // float: NaN-propagating maximumf; int: signed
  ZT_REDUCE_MIN,
  ZT_REDUCE_MAXNUM,  // float: NaN-ignoring maxnumf
  ZT_REDUCE_MINNUM,
  ZT_REDUCE_UMAX,
  ZT_REDUCE_UMIN,
  ZT_REDUCE_AND,
  ZT_REDUCE_OR,
  ZT_REDUCE_XOR,
} zt_reduce_kind_t;

// ---------------------------------------------------------------------------
// Types

/// A scalar type of `kind` (use zt_type_ptr for pointers).
ZT_API zt_type_t zt_type_scalar(zt_scalar_kind_t kind);
/// A scalar pointer type to elements of `pointee`.
ZT_API zt_type_t zt_type_ptr(zt_scalar_kind_t pointee);
/// A tensor of `rank` dims with the element type of `elem` (a scalar type).
/// A rank outside [0, ZT_MAX_RANK], or a NULL shape with rank > 0, gives an
/// invalid type (rank -1) that every builder call refuses.
ZT_API zt_type_t zt_type_tensor(zt_type_t elem, int32_t rank,
                                const int64_t* shape);
/// The element (scalar) type of `t`.
ZT_API zt_type_t zt_type_element(zt_type_t t);
/// Number of elements (1 for scalars).
ZT_API int64_t zt_type_numel(zt_type_t t);
ZT_API bool zt_type_equal(zt_type_t a, zt_type_t b);
ZT_API bool zt_scalar_kind_is_float(zt_scalar_kind_t k);
ZT_API bool zt_scalar_kind_is_int(zt_scalar_kind_t k);
/// Size in bits of one element (1 for i1, 64 for pointers).
ZT_API int zt_scalar_kind_bits(zt_scalar_kind_t k);
/// MLIR spelling of a type ("tensor<16x!tile.ptr<f32>>") into buf; returns
/// the length that the full string needs (snprintf-like).
ZT_API size_t zt_type_format(zt_type_t t, char* buf, size_t buf_size);

// ---------------------------------------------------------------------------
// Builder lifetime

/// Creates an empty builder. Not thread-safe; use one per thread.
ZT_API zt_status_t zt_builder_create(zt_builder_t** out_builder);
/// Frees the builder and its text; NULL is a no-op.
ZT_API void zt_builder_release(zt_builder_t* builder);

/// Bounds mode (before zt_builder_begin_kernel): marks the kernel
/// zt.bounds_check, so that the CPU target checks every load, store and
/// atomic against the buffers given at launch (zt_launch_checked). Other
/// targets ignore the mark. INVALID_ARGUMENT after begin_kernel.
ZT_API zt_status_t zt_builder_set_bounds_check(zt_builder_t* b, bool on);

/// Location attached to the ops added from now on (file is copied).
ZT_API void zt_builder_set_loc(zt_builder_t* b, const char* file, int line,
                               int col);

/// Starts the kernel function `name` with `num_args` arguments and writes
/// their value handles to out_args (caller storage of num_args entries).
/// Pointer arguments may carry a divisibility hint (bytes, 0 = none) used by
/// the lowering: `arg_divisibility` may be NULL.
ZT_API zt_status_t zt_builder_begin_kernel(zt_builder_t* b, const char* name,
                                           int32_t num_args,
                                           const zt_type_t* arg_types,
                                           const int32_t* arg_divisibility,
                                           zt_value_t* out_args);
/// Ends the kernel (adds the return) and closes the module. After this the
/// module text is final.
ZT_API zt_status_t zt_builder_end_kernel(zt_builder_t* b);
/// The module text, borrowed until the builder is released. Only valid
/// after zt_builder_end_kernel.
ZT_API zt_status_t zt_builder_module_text(zt_builder_t* b, const char** out_text,
                                          size_t* out_size);

/// Type of a value.
ZT_API zt_type_t zt_builder_value_type(zt_builder_t* b, zt_value_t v);

// ---------------------------------------------------------------------------
// Ops. Each returns a status naming the current location on a type error.
// Every call that returns a status gives INVALID_ARGUMENT (never a crash)
// for a NULL builder, a NULL output pointer, a negative count, or a NULL
// array where the count needs one.

ZT_API zt_status_t zt_builder_const_int(zt_builder_t* b, zt_scalar_kind_t kind,
                                        int64_t value, zt_value_t* out);
ZT_API zt_status_t zt_builder_const_float(zt_builder_t* b, zt_scalar_kind_t kind,
                                          double value, zt_value_t* out);
ZT_API zt_status_t zt_builder_program_id(zt_builder_t* b, int axis,
                                         zt_value_t* out);
ZT_API zt_status_t zt_builder_num_programs(zt_builder_t* b, int axis,
                                           zt_value_t* out);
/// A 1-D i32 tensor [start, end).
ZT_API zt_status_t zt_builder_make_range(zt_builder_t* b, int32_t start,
                                         int32_t end, zt_value_t* out);
/// A scalar repeated into a tensor of `shape`.
ZT_API zt_status_t zt_builder_splat(zt_builder_t* b, zt_value_t v, int32_t rank,
                                    const int64_t* shape, zt_value_t* out);
/// Size-1 dims of v stretched to `shape` (same rank).
ZT_API zt_status_t zt_builder_broadcast(zt_builder_t* b, zt_value_t v,
                                        int32_t rank, const int64_t* shape,
                                        zt_value_t* out);
ZT_API zt_status_t zt_builder_expand_dims(zt_builder_t* b, zt_value_t v,
                                          int axis, zt_value_t* out);
ZT_API zt_status_t zt_builder_reshape(zt_builder_t* b, zt_value_t v,
                                      int32_t rank, const int64_t* shape,
                                      zt_value_t* out);
/// Result dim i is v's dim order[i].
ZT_API zt_status_t zt_builder_trans(zt_builder_t* b, zt_value_t v,
                                    const int32_t* order, zt_value_t* out);

/// The value v with a fact about it, as Triton's hints state them: hint is
/// "multiple_of", "max_contiguous" or "max_constancy"; n values, one per
/// dimension of v (one for a scalar), each a power of two >= 1. The result
/// is v; lowerings may use the fact (the Xe target turns pointer tensors it
/// proves contiguous into 2D block IO).
ZT_API zt_status_t zt_builder_hint(zt_builder_t* b, zt_value_t v, const char* hint,
                                   const int64_t* values, int32_t n, zt_value_t* out);

ZT_API zt_status_t zt_builder_binary(zt_builder_t* b, zt_binary_op_t op,
                                     zt_value_t lhs, zt_value_t rhs,
                                     zt_value_t* out);
ZT_API zt_status_t zt_builder_unary(zt_builder_t* b, zt_unary_op_t op,
                                    zt_value_t v, zt_value_t* out);
/// A fused multiply-add a*b+c (math.fma) on floats.
ZT_API zt_status_t zt_builder_fma(zt_builder_t* b, zt_value_t a, zt_value_t x,
                                  zt_value_t c, zt_value_t* out);
ZT_API zt_status_t zt_builder_cmp(zt_builder_t* b, zt_cmp_predicate_t pred,
                                  zt_value_t lhs, zt_value_t rhs,
                                  zt_value_t* out);
/// cond ? x : y, elementwise; cond is i1 of the same shape (or a scalar).
ZT_API zt_status_t zt_builder_select(zt_builder_t* b, zt_value_t cond,
                                     zt_value_t x, zt_value_t y, zt_value_t* out);
/// Element type conversion to `to` (shape kept).
ZT_API zt_status_t zt_builder_cast(zt_builder_t* b, zt_cast_op_t op,
                                   zt_value_t v, zt_scalar_kind_t to,
                                   zt_value_t* out);

ZT_API zt_status_t zt_builder_addptr(zt_builder_t* b, zt_value_t ptr,
                                     zt_value_t offset, zt_value_t* out);
/// Pointer (tensor) to i64 (tensor) and back; ptr_cast changes the pointee.
ZT_API zt_status_t zt_builder_ptr_to_int(zt_builder_t* b, zt_value_t ptr,
                                         zt_value_t* out);
ZT_API zt_status_t zt_builder_int_to_ptr(zt_builder_t* b, zt_value_t v,
                                         zt_scalar_kind_t pointee,
                                         zt_value_t* out);
ZT_API zt_status_t zt_builder_ptr_cast(zt_builder_t* b, zt_value_t ptr,
                                       zt_scalar_kind_t pointee,
                                       zt_value_t* out);
/// Loads *ptr; `mask` and `other` may be ZT_NO_VALUE (other needs mask).
ZT_API zt_status_t zt_builder_load(zt_builder_t* b, zt_value_t ptr,
                                   zt_value_t mask, zt_value_t other,
                                   zt_value_t* out);
ZT_API zt_status_t zt_builder_store(zt_builder_t* b, zt_value_t ptr,
                                    zt_value_t value, zt_value_t mask);

/// Reduces v along `axis` with a built-in combiner.
ZT_API zt_status_t zt_builder_reduce(zt_builder_t* b, zt_reduce_kind_t kind,
                                     zt_value_t v, int axis, zt_value_t* out);
/// A reduction with a user combiner: writes 2*n scalar block arguments
/// (lhs..., rhs...) to out_args; then add the combiner's ops and call
/// zt_builder_reduce_end with its n results.
ZT_API zt_status_t zt_builder_reduce_begin(zt_builder_t* b, int32_t n,
                                           const zt_value_t* srcs, int axis,
                                           zt_value_t* out_args);
ZT_API zt_status_t zt_builder_reduce_end(zt_builder_t* b, int32_t n,
                                         const zt_value_t* combined,
                                         zt_value_t* out_results);

/// acc + a @ b. a: [M,K], b: [K,N], acc: [M,N]. input_precision: "ieee"
/// (NULL), "tf32" or "tf32x3" for float inputs; for integer inputs "ieee"
/// reads them as signed, "unsigned" as unsigned (integer types are signless).
ZT_API zt_status_t zt_builder_dot(zt_builder_t* b, zt_value_t a, zt_value_t x,
                                  zt_value_t acc, const char* input_precision,
                                  zt_value_t* out);

/// Out-of-bounds value of a block load.
typedef enum zt_padding_e {
  ZT_PADDING_ZERO,
  ZT_PADDING_NAN,
} zt_padding_t;

/// A block of `rank` dims (block_shape) of a strided view of memory: element
/// i = (i_0, ..., i_{rank-1}) lives at base + sum_d (offsets[d] + i_d) *
/// strides[d] elements. Dims whose bit is set in `boundary_mask` are checked
/// (0 <= offsets[d] + i_d < shape[d]); out-of-bounds elements read `padding`
/// and are not written by block_store. shape and strides are i64 scalars,
/// offsets i32 scalars. This is what Triton's tensor descriptors and block
/// pointers are, and what Intel's 2D block loads do in hardware.
ZT_API zt_status_t zt_builder_block_load(zt_builder_t* b, zt_value_t base,
                                         int32_t rank, const zt_value_t* shape,
                                         const zt_value_t* strides,
                                         const zt_value_t* offsets,
                                         const int64_t* block_shape,
                                         uint32_t boundary_mask,
                                         zt_padding_t padding,
                                         zt_value_t* out);
ZT_API zt_status_t zt_builder_block_store(zt_builder_t* b, zt_value_t base,
                                          int32_t rank, const zt_value_t* shape,
                                          const zt_value_t* strides,
                                          const zt_value_t* offsets,
                                          zt_value_t value,
                                          uint32_t boundary_mask);

/// Atomic read-modify-write kinds. X(NAME, spelling).
#define ZT_ATOMIC_KINDS(X) \
  X(ADD, "add")            \
  X(MAX, "max")            \
  X(MIN, "min")            \
  X(UMAX, "umax")          \
  X(UMIN, "umin")          \
  X(AND, "and")            \
  X(OR, "or")              \
  X(XOR, "xor")            \
  X(XCHG, "xchg")

typedef enum zt_atomic_kind_e {
#define ZT_X_(name, s) ZT_ATOMIC_##name,
  ZT_ATOMIC_KINDS(ZT_X_)
#undef ZT_X_
  ZT_ATOMIC_KIND_COUNT
} zt_atomic_kind_t;

/// Atomically combines `value` into *ptr where mask is true (mask may be
/// ZT_NO_VALUE) and returns the old values (unspecified where masked off).
/// sem: "relaxed", "acquire", "release", "acq_rel"; scope: "gpu", "cta",
/// "sys" (NULL picks Triton's defaults acq_rel / gpu). max/min on floats
/// compare as floats.
ZT_API zt_status_t zt_builder_atomic_rmw(zt_builder_t* b, zt_atomic_kind_t kind,
                                         zt_value_t ptr, zt_value_t value,
                                         zt_value_t mask, const char* sem,
                                         const char* scope, zt_value_t* out);
/// Atomic compare-and-swap: where *ptr == cmp, stores value; returns the
/// old values.
ZT_API zt_status_t zt_builder_atomic_cas(zt_builder_t* b, zt_value_t ptr,
                                         zt_value_t cmp, zt_value_t value,
                                         const char* sem, const char* scope,
                                         zt_value_t* out);

/// Inclusive scan along `axis` with a user combiner (like reduce_begin/_end;
/// results keep the sources' shapes). `reverse` scans from the end.
ZT_API zt_status_t zt_builder_scan_begin(zt_builder_t* b, int32_t n,
                                         const zt_value_t* srcs, int axis,
                                         bool reverse, zt_value_t* out_args);
ZT_API zt_status_t zt_builder_scan_end(zt_builder_t* b, int32_t n,
                                       const zt_value_t* combined,
                                       zt_value_t* out_results);

/// Debug output: prints `prefix` and the values (per element for tensors)
/// from every program; `hex` prints integers in hexadecimal.
ZT_API zt_status_t zt_builder_print(zt_builder_t* b, const char* prefix,
                                    int32_t n, const zt_value_t* values,
                                    bool hex);
/// Device assertion: where cond is false, reports `message` with the
/// current source location and stops the launch with an error.
ZT_API zt_status_t zt_builder_assert(zt_builder_t* b, zt_value_t cond,
                                     const char* message);

// ---------------------------------------------------------------------------
// Structured control flow (scf). Regions nest; values defined inside a
// region are visible only there.

/// for iv in [lb, ub) step s, carrying n values. lb/ub/step are scalars of
/// one integer type. Writes the induction variable and the n iteration
/// arguments (visible in the body).
ZT_API zt_status_t zt_builder_for_begin(zt_builder_t* b, zt_value_t lb,
                                        zt_value_t ub, zt_value_t step,
                                        int32_t n, const zt_value_t* inits,
                                        zt_value_t* out_iv,
                                        zt_value_t* out_iter_args);
/// Ends the innermost for with the n yielded values (types must match the
/// inits) and writes its n results.
ZT_API zt_status_t zt_builder_for_end(zt_builder_t* b, int32_t n,
                                      const zt_value_t* yields,
                                      zt_value_t* out_results);
/// if cond (an i1 scalar): opens the then region.
ZT_API zt_status_t zt_builder_if_begin(zt_builder_t* b, zt_value_t cond);
/// Closes the then region and opens the else region.
ZT_API zt_status_t zt_builder_if_else(zt_builder_t* b);
/// Closes the if. Each region yields n values of pairwise equal types
/// (then_yields from the then region, else_yields from the else region; the
/// values must have been defined in, or be visible from, their region).
ZT_API zt_status_t zt_builder_if_end(zt_builder_t* b, int32_t n,
                                     const zt_value_t* then_yields,
                                     const zt_value_t* else_yields,
                                     zt_value_t* out_results);
/// while loop: `before` region computes the condition from the n carried
/// values; zt_builder_while_cond ends it; the `after` region is the body.
ZT_API zt_status_t zt_builder_while_begin(zt_builder_t* b, int32_t n,
                                          const zt_value_t* inits,
                                          zt_value_t* out_before_args);
ZT_API zt_status_t zt_builder_while_cond(zt_builder_t* b, zt_value_t cond,
                                         zt_value_t* out_after_args);
ZT_API zt_status_t zt_builder_while_end(zt_builder_t* b, int32_t n,
                                        const zt_value_t* yields,
                                        zt_value_t* out_results);

#ifdef __cplusplus
}
#endif
#endif  // ZETILE_BUILDER_H_
