// The device backend interface: every device kind (cpu, level_zero, ...) is a
// folder under runtime/ that fills one zt_backend_t (discovery) and one
// zt_backend_vtable_t (a device's operations). runtime/device.c holds the
// registry and the public zt_device_* / zt_buffer_* / zt_executable_* /
// zt_launch entry points, which check arguments before calling a backend, so
// backends may assume well-formed input.
//
// Objects follow IREE's header convention: every device starts with
// {ref_count, vtable}; buffers and executables start with a pointer to their
// (retained) device and are extended by the backend, which allocates them.
#ifndef ZETILE_RUNTIME_BACKEND_H_
#define ZETILE_RUNTIME_BACKEND_H_

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base/kernel_meta.h"
#include "zetile/runtime.h"

#define ZT_BACKEND_API_VERSION 1

typedef struct zt_backend_vtable_s zt_backend_vtable_t;

struct zt_device_s {
  atomic_int ref_count;
  const zt_backend_vtable_t* vtable;
  zt_device_info_t info;
  // Set (once) by device.c when a backend call reports DEVICE_LOST: every
  // later call on the device fails at once with the first report's message.
  _Atomic(char*) lost;
};

struct zt_buffer_s {
  zt_device_t* device;  // retained
  size_t size;
  uint64_t address;     // what kernels receive for a pointer argument
  void* host_ptr;       // non-NULL when the memory is host-addressable
};

struct zt_executable_s {
  atomic_int ref_count;
  zt_device_t* device;  // retained
  zt_kernel_meta_t meta;
};

/// A device's operations. `destroy` first; slots marked optional may be NULL.
/// The registry checks sizes, offsets and kernel arguments before calling.
struct zt_backend_vtable_s {
  /// Frees the device once its last reference is gone.
  void (*destroy)(zt_device_t* device);
  /// Waits for all submitted work (optional: NULL = launches are synchronous).
  zt_status_t (*synchronize)(zt_device_t* device);

  /// Allocates a buffer object (the backend's extension of zt_buffer_t) and
  /// fills size/address/host_ptr; the registry sets and retains `device`.
  zt_status_t (*buffer_alloc)(zt_device_t* device, size_t size,
                              zt_buffer_t** out_buffer);
  void (*buffer_free)(zt_buffer_t* buffer);
  /// Blocking copies; offset + size is within the buffer.
  zt_status_t (*buffer_write)(zt_buffer_t* buffer, size_t offset,
                              const void* src, size_t size);
  zt_status_t (*buffer_read)(const zt_buffer_t* buffer, size_t offset,
                             void* dst, size_t size);

  /// Loads an artifact whose "meta" section has been parsed into `meta`.
  /// The backend allocates its extension of zt_executable_t; the registry
  /// copies `meta` and sets `device` afterwards.
  zt_status_t (*executable_create)(zt_device_t* device,
                                   const zt_artifact_t* artifact,
                                   const zt_kernel_meta_t* meta,
                                   zt_executable_t** out_executable);
  void (*executable_destroy)(zt_executable_t* executable);
  /// Optional: NULL reports every statistic as unknown (-1).
  zt_status_t (*executable_stats)(const zt_executable_t* executable,
                                  zt_kernel_stats_t* out_stats);

  /// Launches a grid with arguments already checked against the meta
  /// (count and kinds) and a grid with no zero dimension.
  zt_status_t (*launch)(zt_executable_t* executable, const uint32_t grid[3],
                        const zt_arg_t* args);
  /// Optional: a launch that also gets each argument's buffer size in
  /// bytes (0 for scalars), for kernels compiled with bounds checks. NULL:
  /// zt_launch_checked falls back to `launch` (the sizes go unused).
  zt_status_t (*launch_checked)(zt_executable_t* executable, const uint32_t grid[3],
                                const zt_arg_t* args, const uint64_t* arg_bytes);
  /// Optional (NULL: no device timer, the zt_device_timing_* calls return
  /// UNSUPPORTED): from timing_begin on, launches record device timestamps;
  /// timing_end waits for them, fills `out` (zeroed by the caller) and stops.
  zt_status_t (*timing_begin)(zt_device_t* device);
  zt_status_t (*timing_end)(zt_device_t* device, zt_device_timing_t* out);
};

/// Discovery of one backend's devices. Registered in runtime/device.c.
typedef struct zt_backend_s {
  int api_version;
  /// "cpu", "level_zero": the prefix of device names.
  const char* name;
  /// Fills up to `capacity` infos for this backend's devices, in index order,
  /// and the total in out_count. A backend whose library or hardware is
  /// missing reports 0 devices and OK: absence is not an error.
  zt_status_t (*enumerate)(zt_device_info_t* out_infos, int32_t capacity,
                           int32_t* out_count);
  /// Opens device `index` (0-based) of this backend with ref_count 1.
  zt_status_t (*open)(int32_t index, zt_device_t** out_device);
} zt_backend_t;

/// Marks the device info of a device that has been created by a backend.
void zt_device_initialize(zt_device_t* device, const zt_backend_vtable_t* vtable);

/// A kernel argument as the bytes a driver's set-argument call takes (the
/// argument's natural C size; pointers as 8-byte device addresses).
typedef union zt_packed_arg_u {
  int8_t i8;
  int16_t i16;
  int32_t i32;
  int64_t i64;
  uint16_t u16;
  float f32;
  double f64;
  uint64_t u64;
} zt_packed_arg_t;

/// Packs `a` into `out` and returns its size in bytes.
size_t zt_arg_pack(const zt_arg_t* a, zt_packed_arg_t* out);

/// The calling thread's interrupt check (zt_set_interrupt_check), or false.
bool zt_interrupt_requested(void);

#endif  // ZETILE_RUNTIME_BACKEND_H_
