// Intel GPU targets as rows of one table: what the Xe lowerings need to know
// about a device instead of comparing target names. Adding a target is a
// row here (and, when its code differs, a lowering that reads the row).
//
// The figures are the hardware's published ones (Intel's DPAS and 2D block
// IO extension specs, the PVC/BMG rows of upstream MLIR's XeGPU uArch
// tables); nothing here was measured on hardware (no Intel GPU here).
#ifndef ZETILE_LOWERING_XE_TARGET_H_
#define ZETILE_LOWERING_XE_TARGET_H_

#include <stdbool.h>
#include <stdint.h>

/// Which lowering builds code for a target.
typedef enum xe_lowering_e {
  /// Not yet: the row documents the device; compiles for it are refused.
  XE_LOWERING_NONE = 0,
  /// Subgroup-level XeGPU -> XeVM (lowering/xe): SIMD16 DPAS, 2D block IO.
  XE_LOWERING_XEVM,
  /// zetile's own SIMD8 work-item lowering (lowering/dg2).
  XE_LOWERING_SIMD8,
} xe_lowering_t;

/// How the rows whose lowering is XE_LOWERING_SIMD8 (dg2) are built now:
/// ZETILE_DG2_LOWERING, read by xe_simd8_route() and nowhere else (the
/// compiler's routing, the Xe lowering's lane count, zt_target_info's
/// simd8_lowering that the GEMM plans read).
typedef enum xe_simd8_route_e {
  XE_SIMD8_ROUTE_FOLDER = 0,  ///< unset or empty: zetile's SIMD8 lowering (lowering/dg2)
  XE_SIMD8_ROUTE_SHARED,      ///< =shared: the shared Xe lowering at 16 lanes
  XE_SIMD8_ROUTE_SHARED8,     ///< =shared8: the same, kernels with a dot at the row's 8 lanes
  XE_SIMD8_ROUTE_SHARED8_ALL, ///< =shared8all: every kernel at 8 lanes
  XE_SIMD8_ROUTE_INVALID,     ///< any other value: compiles for such rows are refused
} xe_simd8_route_t;

/// One Intel GPU target.
typedef struct xe_target_s {
  const char* name;         ///< zetile's target name ("pvc")
  const char* arch;         ///< architecture generation ("Xe-HPC")
  xe_lowering_t lowering;
  /// Chip string given to XeVM (`xevm-attach-target{chip=...}`); XeVM has
  /// hardware tables for "pvc" and "bmg" only and accepts any other string
  /// silently, so only rows whose lowering is XEVM set it.
  const char* xevm_chip;
  /// `ocloc -device` name for offline builds (E2).
  const char* ocloc_device;
  int subgroup_size;        ///< lanes of the subgroup the kernels run at
  /// Every subgroup size the hardware offers (zero-terminated), what a
  /// driver reports and device detection matches an unknown GPU against.
  int subgroup_sizes[4];
  /// DP4A: a 4-way int8 dot product with 32-bit accumulation per lane
  /// (Gen12LP and later; OpenCL's cl_khr_integer_dot_product).
  bool dp4a;
  /// DPAS (XMX), all four 0 when the GPU has none (its dots are FMAs,
  /// lowering/dg2/dg2_dot_fma.c): execution size (N of one instruction:
  /// lanes), systolic depth (K steps of one instruction), largest repeat
  /// count (M rows), and bits per channel (a channel holds 32 bits: 2
  /// fp16/bf16 or 4 int8 values, Intel's "ops per channel" = 32 / element
  /// bits).
  int dpas_exec_size, dpas_systolic_depth, dpas_repeat_count, dpas_channel_bits;
  bool dpas_tf32;           ///< tf32 DPAS exists (Xe-HPG has none)
  bool block_io_2d;         ///< 2D block loads/stores/prefetches
  /// General registers per hardware thread: the default mode and the large
  /// one (0 if none); each register is grf_bytes wide.
  int grf_default, grf_large, grf_bytes;
  /// IGC option selecting the large register file ("" if none).
  const char* grf_large_option;
  /// Shared local memory: per Xe core, and the most one workgroup may use
  /// (0: not recorded here; the driver reports it).
  int64_t slm_per_core, slm_per_workgroup;
  /// No fp64 hardware: Debian's ocloc refuses any double on the device
  /// ("Double type is not supported on this platform"), so kernels with
  /// float64 values are refused by name before emission (xe_fp64.c). False
  /// where ocloc builds doubles (pvc, skl) and where it knows no such device
  /// (bmg, lnl, ptl, mtl, arl-h: left to the driver).
  bool no_fp64;
  /// Why a row without a lowering has none (shown in the error message).
  const char* not_yet;
} xe_target_t;

/// ZETILE_DG2_LOWERING's route (read at each call: tests change it).
xe_simd8_route_t xe_simd8_route(void);
/// The lowering that builds `t`'s kernels now: its row's, except that a
/// SIMD8 row under a shared route takes XE_LOWERING_XEVM.
xe_lowering_t xe_target_lowering_now(const xe_target_t* t);

/// The row of a target name, or NULL (names are the lower-case ones above).
const xe_target_t* xe_target_find(const char* name);
/// Number of rows, and row i (0 <= i < count).
int xe_target_count(void);
const xe_target_t* xe_target_at(int i);
/// Whether the GPU has XMX (DPAS); rows without it have zero DPAS fields.
bool xe_target_has_xmx(const xe_target_t* t);
/// Elements of `bits`-bit type a DPAS channel holds (Intel's ops per channel).
int xe_target_ops_per_channel(const xe_target_t* t, int bits);
/// K of one DPAS instruction for a `bits`-bit input: systolic depth x ops
/// per channel (16 for fp16 at depth 8, 32 for int8).
int xe_target_dpas_k(const xe_target_t* t, int bits);

#endif  // ZETILE_LOWERING_XE_TARGET_H_
