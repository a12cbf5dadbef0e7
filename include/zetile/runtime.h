// zetile: devices, memory and kernel launches.
//
// Every device is a backend behind one vtable (runtime/backend.h): "cpu"
// (the CPU target, always present), "level_zero:N" (Intel GPUs), and others
// as they are added. The runtime never needs MLIR to launch a cached
// Xe kernel; the CPU backend JIT-compiles through libzetile_compiler.
#ifndef ZETILE_RUNTIME_H_
#define ZETILE_RUNTIME_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zetile/api.h"
#include "zetile/builder.h"
#include "zetile/compiler.h"
#include "zetile/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct zt_device_s zt_device_t;
typedef struct zt_buffer_s zt_buffer_t;
typedef struct zt_executable_s zt_executable_t;

typedef struct zt_device_info_s {
  char name[64];          ///< "cpu", "level_zero:0", ...
  char backend[32];       ///< "cpu", "level_zero", ...
  char description[256];  ///< human-readable device name
  char target[32];        ///< compile target: "cpu", "pvc", "bmg", "dg2", "tgllp", ...
  char driver_version[64];
  int32_t compute_units;  ///< cores / EUs
  uint64_t memory_bytes;
  bool host_memory;       ///< buffers are plain host memory (the CPU target)
  bool compat;            ///< the driver lacks 2D block IO: compile with compat
  /// Why the device got its target (an Intel GPU's row: "PCI id 0x9a49:
  /// Tiger Lake (Gen12LP)", "ZETILE_TARGET=...", the properties it was
  /// matched by); empty for the CPU.
  char target_why[192];
} zt_device_info_t;

/// What a compile target offers, for sizing tiles without naming targets
/// (the templates' configuration choice): one row of the Intel GPU target
/// table (lowering/xe/xe_target.c). Published figures, not measured here.
typedef struct zt_target_info_s {
  char name[32];              ///< the target ("tgllp")
  char arch[96];              ///< its generation ("Gen12LP / Xe-LP (...)")
  int32_t subgroup_size;      ///< lanes the kernels run at (8 or 16)
  bool xmx;                   ///< DPAS; false: dots are FMAs (and DP4A)
  bool dp4a;                  ///< 4-way int8 dot products
  bool block_io_2d;           ///< 2D block loads/stores
  int32_t grf;                ///< registers per hardware thread (default mode)
  int32_t grf_large;          ///< in the large-register mode, 0 if none
  int32_t grf_bytes;          ///< bytes per register
  int64_t slm_per_workgroup;  ///< shared local memory per workgroup, 0: not recorded
  /// Kernels build through zetile's own SIMD8 lowering now (dg2's default;
  /// false under ZETILE_DG2_LOWERING=shared*, which routes them through the
  /// shared Xe lowering): plans sized for that lowering ask this, never the
  /// variable.
  bool simd8_lowering;
} zt_target_info_t;

/// The row of an Intel GPU target ("pvc", "tgllp", ...). NOT_FOUND for
/// "cpu" and names without a row.
ZT_API zt_status_t zt_target_info(const char* target, zt_target_info_t* out);

/// Lists every device that can be opened now (never crashes on machines
/// without a GPU). Writes up to `capacity` entries; out_count gets the total.
ZT_API zt_status_t zt_device_enumerate(zt_device_info_t* out_infos,
                                       int32_t capacity, int32_t* out_count);
/// Opens a device by name ("cpu", "level_zero", "level_zero:1"). NULL, ""
/// or "default" opens $ZETILE_DEVICE if set, else the first Intel GPU, else
/// the CPU. Devices are reference counted; release with zt_device_release.
ZT_API zt_status_t zt_device_open(const char* name, zt_device_t** out_device);
ZT_API void zt_device_retain(zt_device_t* device);
ZT_API void zt_device_release(zt_device_t* device);
/// Borrowed info, valid while the device lives.
ZT_API const zt_device_info_t* zt_device_info(const zt_device_t* device);
/// Waits for every launch on the device to finish.
ZT_API zt_status_t zt_device_synchronize(zt_device_t* device);

/// Device-side timing of kernels (Level Zero kernel timestamps): between
/// zt_device_timing_begin and zt_device_timing_end every launch on the device
/// records its start and end on the device's own clock; _end waits for those
/// launches and sums them. Host launch overhead and copies are not counted.
/// UNSUPPORTED on devices without such a timer (the CPU, OpenCL): time them
/// with a host clock. One timing region per device at a time.
typedef struct zt_device_timing_s {
  int64_t kernels;   ///< launches timed
  double kernel_ns;  ///< the sum of their execution times (device clock)
  double span_ns;    ///< the first one's start to the last one's end (device clock)
  double tick_ns;    ///< one tick of the device timer
  /// Launches whose timestamps the device never wrote (counted as 0 ns): a
  /// simulated device (NEO in AUB mode executes nothing) has all of them.
  int64_t missing;
} zt_device_timing_t;
ZT_API zt_status_t zt_device_timing_begin(zt_device_t* device);
ZT_API zt_status_t zt_device_timing_end(zt_device_t* device, zt_device_timing_t* out);

/// Device memory. On host-memory devices the address is a host pointer.
/// Sizes above PTRDIFF_MAX are refused (OUT_OF_MEMORY) rather than rounded.
ZT_API zt_status_t zt_buffer_alloc(zt_device_t* device, size_t size,
                                   zt_buffer_t** out_buffer);
ZT_API void zt_buffer_release(zt_buffer_t* buffer);
/// Address to pass as a pointer argument.
ZT_API uint64_t zt_buffer_address(const zt_buffer_t* buffer);
ZT_API size_t zt_buffer_size(const zt_buffer_t* buffer);
/// Blocking copies between host memory and the buffer.
ZT_API zt_status_t zt_buffer_write(zt_buffer_t* buffer, size_t offset,
                                   const void* src, size_t size);
ZT_API zt_status_t zt_buffer_read(const zt_buffer_t* buffer, size_t offset,
                                  void* dst, size_t size);

/// A kernel argument: `kind` is the scalar kind from the kernel's signature
/// (ZT_PTR for pointers, given as a device address).
typedef struct zt_arg_s {
  zt_scalar_kind_t kind;
  union {
    int64_t i;     ///< integer kinds (i1..i64), truncated to the kind
    double f;      ///< f32, f64 (converted); f16/bf16 pass `bits`
    uint64_t ptr;  ///< ZT_PTR
    uint16_t bits; ///< f16 / bf16 raw bits
  } value;
} zt_arg_t;

/// Loads an artifact (from zt_compile*) on a device. For Level Zero this
/// builds the SPIR-V (or reuses a cached native binary). Errors carry the
/// driver's build log. The artifact's metadata is checked against its code
/// (CPU: the kernel's signature; Xe: the SPIR-V entry point) before loading:
/// a mismatch is INVALID_ARGUMENT, not a crash at launch.
ZT_API zt_status_t zt_executable_create(zt_device_t* device,
                                        const zt_artifact_t* artifact,
                                        zt_executable_t** out_executable);
ZT_API void zt_executable_release(zt_executable_t* executable);
/// Launches grid[0] x grid[1] x grid[2] programs. Arguments must match the
/// kernel's signature (count and kinds), else INVALID_ARGUMENT. May return
/// before the kernel finishes on asynchronous devices. On the CPU a memory
/// fault inside a program (SIGSEGV/SIGBUS/SIGILL) ends the launch with
/// DEVICE_FAULT naming the kernel, program and address instead of killing
/// the process; what the kernel wrote before the fault stays written.
ZT_API zt_status_t zt_launch(zt_executable_t* executable, const uint32_t grid[3],
                             int32_t num_args, const zt_arg_t* args);

/// zt_launch plus the size in bytes of the buffer behind each argument
/// (`arg_bytes[i]`, 0 for scalars and unknown sizes; NULL is zt_launch).
/// Kernels built with zt_builder_set_bounds_check on the CPU check every
/// load, store and atomic against [address, address + size) of the pointer
/// arguments and fail with DEVICE_FAULT naming the op's source line, the
/// program, the access and the nearest argument (`argument #i`); other
/// kernels and devices ignore the sizes.
ZT_API zt_status_t zt_launch_checked(zt_executable_t* executable, const uint32_t grid[3],
                                     int32_t num_args, const zt_arg_t* args,
                                     const uint64_t* arg_bytes);

/// A check for interrupting long launches (Ctrl-C): while a launch runs on
/// a synchronous device (the CPU), the launching thread calls it about every
/// 20 ms between programs; when it returns true no further program starts
/// and zt_launch returns ZT_STATUS_LAUNCH_INTERRUPTED (programs already running
/// finish). Per thread; NULL clears it. It runs on the launching thread only.
typedef bool (*zt_interrupt_check_t)(void* user);
ZT_API void zt_set_interrupt_check(zt_interrupt_check_t check, void* user);

/// Per-kernel statistics reported by the device (-1 when unknown).
typedef struct zt_kernel_stats_s {
  int64_t spill_bytes;
  int64_t private_bytes;
  int64_t local_bytes;
  int32_t max_subgroup_size;
  int32_t num_grf;  ///< register file mode if known
} zt_kernel_stats_t;
ZT_API zt_status_t zt_executable_stats(const zt_executable_t* executable,
                                       zt_kernel_stats_t* out_stats);

#ifdef __cplusplus
}
#endif
#endif  // ZETILE_RUNTIME_H_
