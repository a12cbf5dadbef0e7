// Internal interface of libzetile_compiler: what jit/compiler.c hands each
// lowering, and the shared MLIR helpers (parsing and pipelines with MLIR
// diagnostics turned into statuses).
#ifndef ZETILE_LOWERING_LOWERING_H_
#define ZETILE_LOWERING_LOWERING_H_

#include <mlir-c/IR.h>

#include "base/kernel_meta.h"
#include "base/strbuf.h"
#include "zetile/compiler.h"
#include "zetile/status.h"

typedef struct zt_lower_ctx_s {
  MlirContext ctx;              ///< every dialect loaded, tile dialect included
  MlirModule tile;              ///< the parsed, verified tile module
  MlirOperation kernel;         ///< its func.func marked zt.kernel
  const zt_compile_options_t* options;  ///< target etc. (never NULL)
  zt_artifact_t* artifact;      ///< the lowering adds its sections here
} zt_lower_ctx_t;

/// CPU target: adds "mlir" (zetile's lowering), "llvm" (LLVM dialect, what
/// cpu_load JIT-compiles) and "meta".
zt_status_t zt_lower_cpu(zt_lower_ctx_t* lc);
/// Xe targets (pvc, bmg): adds "mlir" (subgroup-level XeGPU in a gpu.module),
/// "spirv" (binary) and "meta" (local_size, subgroup_size=16).
zt_status_t zt_lower_xe(zt_lower_ctx_t* lc);

/// Parses `text` in ctx; errors carry MLIR's diagnostics (with locations).
/// CPU target: optimizes the LLVM-dialect module `m` for this host and stores
/// its object code in the artifact ("obj", and "obj_host" naming the CPU it
/// was built for), so that loading it later needs no code generation
/// (jit/compiler_cpu_object.c).
zt_status_t zt_cpu_object_emit(MlirModule m, zt_artifact_t* artifact);

zt_status_t zt_mlir_parse(MlirContext ctx, const char* text, size_t size,
                          const char* what, MlirModule* out_module);
/// Runs a textual pass pipeline ("builtin.module(...)") on the module;
/// errors carry the diagnostics that the passes emitted.
zt_status_t zt_mlir_run_pipeline(MlirContext ctx, MlirModule module,
                                 const char* pipeline, const char* what);
/// The same, with MLIR's verifier run once on the result instead of after
/// every pass (it cost ~17% of an Xe compile); ZETILE_DEBUG=verify restores
/// the verifier after every pass.
zt_status_t zt_mlir_run_pipeline_verify_end(MlirContext ctx, MlirModule module,
                                            const char* pipeline, const char* what);
zt_status_t zt_mlir_parse_untimed(MlirContext ctx, const char* text, size_t size,
                                  const char* what, MlirModule* out_module);
zt_status_t zt_mlir_run_pipeline_untimed(MlirContext ctx, MlirModule module,
                                         const char* pipeline, const char* what);
/// Stage timings of the current compile (see jit/compiler_mlir.c): parses
/// and pipelines record themselves; lowerings may add their own stages.
void zt_timing_reset(void);
void zt_timing_record(const char* what, double ms);
/// Marks the start of a stage (streamed by the compile worker; see
/// ZETILE_COMPILE_TIMEOUT): lets a timed-out compile say where it was.
void zt_stage_begin(const char* what);
const char* zt_timing_log(size_t* out_size);
double zt_timing_now_ms(void);
/// LLVM's SPIR-V backend keeps module state in a static member
/// (llvm/llvm-project#160613): compiles run in parallel, but every use of
/// that backend (emission) holds this lock. zt_mlir_run_pipeline takes it
/// by itself for pipelines with gpu-module-to-binary; lowerings that drive
/// the backend through LLVM's C API take it around the emission.
void zt_spirv_emission_lock(void);
void zt_spirv_emission_unlock(void);
/// An object a lowering keeps for later compiles in the same MLIR context
/// (jit/compiler_context_cache.c: one context per compile in flight, used
/// by one thread at a time), found by `key`'s address; NULL if none.
void* zt_context_kept(MlirContext ctx, const char* key);
/// Keeps obj under key for as long as ctx lives (release(obj) then); false
/// when it cannot (no cache for ctx, or its slots are full): obj stays the
/// caller's.
bool zt_context_keep(MlirContext ctx, const char* key, void* obj, void (*release)(void*));
/// Appends op to the array *ops of *n operations (room for *cap), growing
/// it; false when memory ran out (the array is left as it was).
bool zt_op_list_push(MlirOperation** ops, size_t* n, size_t* cap, MlirOperation op);
/// The ops under root (pre-order) that want picks, as a new array (*ops, free
/// it) of *n ops, to rewrite after the walk; false (nothing collected) when
/// memory ran out.
bool zt_op_list_collect(MlirOperation root, bool (*want)(MlirOperation), MlirOperation** ops,
                        size_t* n);
/// Prints an operation (generic form off) into sb.
void zt_mlir_print(MlirOperation op, zt_strbuf_t* sb);
/// An MlirStringCallback appending to the zt_strbuf_t at user (for
/// mlirAttributePrint, mlirTypePrint and the like).
void zt_strbuf_mlir_cb(MlirStringRef s, void* user);
/// Fills the argument part of `meta` from the kernel's signature.
zt_status_t zt_kernel_meta_from_func(MlirOperation kernel,
                                     zt_kernel_meta_t* meta);

/// The tile type of an MLIR type: scalars (i1..i64, f16, bf16, f32, f64,
/// !tile.ptr<T>) and ranked tensors of them (rank <= ZT_MAX_RANK). Rank 0
/// for scalars. UNSUPPORTED for anything else (the message names the type).
zt_status_t zt_tile_type_from_mlir(MlirType type, zt_type_t* out_type);
/// MLIR spelling of a scalar kind ("f32"; "ptr" for ZT_PTR).
const char* zt_tile_kind_spelling(zt_scalar_kind_t kind);
/// Size in bytes of one element in memory (i1 is one byte, pointers 8).
int zt_tile_kind_bytes(zt_scalar_kind_t kind);
/// The kernel op's symbol name (borrowed from the context).
MlirStringRef zt_kernel_name(MlirOperation kernel);

/// Whether op's name is `name` / starts with `prefix` ("arith.").
bool zt_op_named(MlirOperation op, const char* name);
bool zt_op_name_has_prefix(MlirOperation op, const char* prefix);
/// The op of `block` whose sym_name is `name` (a module's function or
/// declaration), or a null op: a scan, cheaper than a symbol table for the
/// one or two lookups a lowering makes.
MlirOperation zt_symbol_in_block(MlirBlock block, MlirStringRef name);
/// The first op of `block` named `name` ("gpu.module"), or a null op.
MlirOperation zt_op_in_block(MlirBlock block, const char* name);

/// Whether v is a tile.splat of an arith.constant 0 (integer or float): a
/// zero accumulator, a zero `other` (lowering/common/tile_type.c).
bool zt_is_zero_splat(MlirValue v);
/// Whether a tile.dot reads its integer operands as unsigned
/// (input_precision = "unsigned"; see zt_builder_dot).
bool zt_dot_is_unsigned(MlirOperation dot);

/// Replaces each tile.hint by its operand, recording the hint as a
/// zt.multiple_of / zt.max_contiguous / zt.max_constancy attribute (i64 per
/// dimension) on the operand's producer (lowering/common/hints.c).
zt_status_t zt_fold_hints(MlirOperation kernel);

/// Rewrites elementwise code on (M, 1) / (1, N) tensors into 1-D code where
/// every producer and consumer allows it (lowering/common/unit_dims.c);
/// loaded chains ending in a broadcast too, for (M, 1) columns and, with
/// `rows`, for (1, N) rows; *out_count: ops changed.
zt_status_t zt_squeeze_unit_dims(MlirOperation kernel, bool rows, int* out_count);

/// Refuses a kernel holding float64 values (an op result, a block or kernel
/// argument) on an Intel GPU row without fp64 hardware (xe_target_t's
/// no_fp64), naming the first such op's source line; NULL otherwise
/// (lowering/xe/xe_fp64.c).
struct xe_target_s;
zt_status_t xe_check_fp64(const struct xe_target_s* tg, MlirOperation kernel);

/// Rewrites each tile.dot with an fp16/bf16 result into an fp32 dot between
/// arith.extf of its accumulator and arith.truncf of its result, for the Xe
/// lowerings, whose DPAS accumulate in fp32 (lowering/common/dot_widen.c);
/// *out_count: how many.
zt_status_t zt_widen_half_dots(MlirOperation kernel, int* out_count);

/// Unrolls the leading dimension of 3-D tile code (Triton's batched dot) into
/// one 2-D value per batch slice, for the Xe lowerings, which have no 3-D
/// layouts (lowering/common/batch_unroll.c); a kernel with forms it does not
/// handle (3-D values in loops, reductions, a batch over 16) is left as it
/// was, and so is one without a 3-D dot when `dots_only` (dg2's lowering runs
/// other 3-D code itself). *out_batch: the slices made, 0 when unchanged.
zt_status_t zt_unroll_batch_dims(MlirOperation kernel, bool dots_only, int* out_batch);

/// How a tile.reduce's combiner picks its (value, position) pair, when it is
/// the one the front end writes for tl.argmax/argmin: the larger (max) or
/// smaller value, unsigned order (uns), ties to the lower position (tie_left).
typedef struct zt_arg_spec_s {
  bool max, uns, tie_left;
} zt_arg_spec_t;
/// Whether @name in the module block `top` is such a combiner (*spec filled).
bool zt_argreduce_combiner(MlirBlock top, MlirStringRef name, zt_arg_spec_t* spec);
/// A tile.reduce the caller keeps as it is (true) or has rewritten (false).
typedef bool (*zt_arg_keep_fn)(MlirOperation op, void* ud);
/// Rewrites argmin/argmax tile.reduces (i32 positions) into a built-in max/min
/// reduction and a min (max) of the positions holding it, for lowerings that
/// reduce one value along an axis they cannot reduce a pair along
/// (lowering/common/arg_split.c); `keep` (may be NULL) spares some.
/// *out_count: how many were rewritten.
zt_status_t zt_split_argreduces(MlirOperation kernel, zt_arg_keep_fn keep, void* ud,
                                int* out_count);

/// Rewrites rank-1 tile.block_load / block_store (1-D tensor descriptors)
/// into pointer loads / stores under their bound, for the GPU lowerings
/// (lowering/common/block1d.c); *out_count: how many.
zt_status_t zt_block1d_to_pointers(MlirOperation kernel, int* out_count);

/// Erases unused side-effect-free ops (arith, math, most of vector,
/// xegpu.create_nd_tdesc, gpu ids) under root (lowering/common/dce.c);
/// returns how many.
size_t zt_dce(MlirOperation root);

/// Validates a SPIR-V module in process (lowering/common/spirv_check.c);
/// always OK when the compiler was built without SPIRV-Tools.
zt_status_t zt_spirv_validate(const void* data, size_t size);
bool zt_spirv_validator_available(void);

/// Stores a SPIR-V module as the artifact's "spirv" section with its ids
/// renumbered 1, 2, ... in order of first appearance (spirv_check.c: LLVM's
/// backend numbers them by process history); as given without SPIRV-Tools
/// or when the module does not parse.
zt_status_t zt_spirv_set_artifact(zt_artifact_t* artifact, const void* data, size_t size);

/// The process's record of SPIR-V emissions, shared by the Xe and dg2
/// lowerings because LLVM's SPIR-V backend state is process-wide
/// (spirv_check.c): zt_spirv_emission_count() counts this one and returns
/// how many came before it (0: the process's first); once a module from a
/// process that had emitted before came out invalid, the backend is taken as
/// stale and later emissions go to a fresh process (ZT_STALE_SPIRV_BACKEND).
int zt_spirv_emission_count(void);
bool zt_spirv_backend_stale(void);
void zt_spirv_backend_set_stale(void);

#endif  // ZETILE_LOWERING_LOWERING_H_
