// The backend registry and the public device, buffer, executable and launch
// calls. Everything a backend can take for granted (sizes within bounds,
// arguments matching the kernel's signature) is checked here, once.
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>

#include "backend.h"

// --- registry: adding a backend is one folder plus one line here -----------
// Each X(name) refers to `const zt_backend_t zt_<name>_backend` in
// runtime/<name>/. Order matters for the default device: the first GPU wins,
// the CPU is last among the default candidates; opencl (Intel's CPU runtime,
// an executor for checking Xe SPIR-V) only when named.
#define ZT_BACKENDS(X) \
  X(level_zero)        \
  X(cpu)               \
  X(opencl)

#define ZT_X_(name) extern const zt_backend_t zt_##name##_backend;
ZT_BACKENDS(ZT_X_)
#undef ZT_X_

static const zt_backend_t* const backends[] = {
#define ZT_X_(name) &zt_##name##_backend,
    ZT_BACKENDS(ZT_X_)
#undef ZT_X_
};
#define NUM_BACKENDS ((int)(sizeof backends / sizeof backends[0]))

void zt_device_initialize(zt_device_t* device, const zt_backend_vtable_t* vtable) {
  atomic_init(&device->ref_count, 1);
  device->vtable = vtable;
}

zt_status_t zt_device_enumerate(zt_device_info_t* out_infos, int32_t capacity,
                                int32_t* out_count) {
  if (!out_count || capacity < 0 || (capacity > 0 && !out_infos))
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_device_enumerate: bad arguments");
  int32_t total = 0;
  for (int b = 0; b < NUM_BACKENDS; ++b) {
    int32_t room = capacity > total ? capacity - total : 0;
    int32_t n = 0;
    ZT_RETURN_IF_ERROR(backends[b]->enumerate(room ? out_infos + total : NULL, room, &n));
    total += n;
  }
  *out_count = total;
  return NULL;
}

static zt_status_t open_named(const char* name, zt_device_t** out) {
  const char* colon = strchr(name, ':');
  size_t prefix = colon ? (size_t)(colon - name) : strlen(name);
  int32_t index = 0;
  bool by_name = false;  // "opencl:cpu": a device's full name, not an index
  if (colon) {
    char* end = NULL;
    long v = strtol(colon + 1, &end, 10);
    if (colon[1] && *end && !(colon[1] >= '0' && colon[1] <= '9'))
      by_name = true;
    else if (!colon[1] || *end || v < 0 || v > 1 << 20)
      return zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                            "bad device name '%s' (expected backend[:index])", name);
    index = (int32_t)v;
  }
  for (int b = 0; b < NUM_BACKENDS; ++b) {
    const zt_backend_t* be = backends[b];
    if (strlen(be->name) != prefix || strncmp(be->name, name, prefix) != 0) continue;
    int32_t n = 0;
    ZT_RETURN_IF_ERROR(be->enumerate(NULL, 0, &n));
    if (by_name) {
      zt_device_info_t infos[64];
      int32_t m = n < 64 ? n : 64;
      if (m) ZT_RETURN_IF_ERROR(be->enumerate(infos, m, &n));
      for (int32_t i = 0; i < m; ++i)
        if (strcmp(infos[i].name, name) == 0) return be->open(i, out);
      // Opening one past the last index gives the backend's own reason.
      zt_status_t why = be->open(n, out);
      if (!why) {  // a device appeared since enumerate: not the one named
        zt_device_release(*out);
        *out = NULL;
      }
      return zt_status_annotate(
          why ? why : zt_make_status(ZT_STATUS_NOT_FOUND, "not listed"), "no device '%s'", name);
    }
    if (index >= n)
      return zt_make_status(ZT_STATUS_NOT_FOUND,
                            "no device '%s' (%s has %d device%s)", name, be->name,
                            n, n == 1 ? "" : "s");
    return be->open(index, out);
  }
  zt_strbuf_t known;
  zt_strbuf_init(&known);
  for (int b = 0; b < NUM_BACKENDS; ++b)
    zt_strbuf_printf(&known, "%s%s", b ? ", " : "", backends[b]->name);
  zt_status_t s = zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                                 "unknown device '%s' (backends: %s)", name,
                                 known.data ? known.data : "");
  zt_strbuf_deinit(&known);
  return s;
}

zt_status_t zt_device_open(const char* name, zt_device_t** out_device) {
  if (!out_device)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_device_open: out_device is NULL");
  *out_device = NULL;
  if (name && name[0] && strcmp(name, "default") != 0) return open_named(name, out_device);
  const char* env = getenv("ZETILE_DEVICE");
  if (env && env[0] && strcmp(env, "default") != 0)
    return zt_status_annotate(open_named(env, out_device), "ZETILE_DEVICE");
  // First device of the first backend that has one (GPUs come first).
  for (int b = 0; b < NUM_BACKENDS; ++b) {
    int32_t n = 0;
    ZT_RETURN_IF_ERROR(backends[b]->enumerate(NULL, 0, &n));
    if (n > 0) return backends[b]->open(0, out_device);
  }
  return zt_make_status(ZT_STATUS_NOT_FOUND, "no device available");
}

// --- a lost device ----------------------------------------------------------
// A backend reports DEVICE_LOST (Level Zero's ZE_RESULT_ERROR_DEVICE_LOST: a
// hang or fault the driver reset the device for) on the call that met it.
// The device is then unusable in this process: every later call on it fails
// at once, naming the first report, instead of handing work to a context
// that can no longer run it.
static zt_status_t watch(zt_device_t* d, zt_status_t s) {
  if (zt_status_code(s) == ZT_STATUS_DEVICE_LOST) {
    char* msg = strdup(zt_status_message(s));
    char* none = NULL;
    if (msg && !atomic_compare_exchange_strong(&d->lost, &none, msg)) free(msg);
  }
  return s;
}

static zt_status_t unusable(const zt_device_t* d, const char* what) {
  char* m = atomic_load(&((zt_device_t*)d)->lost);
  if (!m) return NULL;
  return zt_make_status(ZT_STATUS_DEVICE_LOST,
                        "%s: device %s is unusable: it was lost earlier (%s); its buffers "
                        "and kernels are gone, open the device again in a new process",
                        what, d->info.name, m);
}

void zt_device_retain(zt_device_t* device) {
  if (device) atomic_fetch_add(&device->ref_count, 1);
}

void zt_device_release(zt_device_t* device) {
  if (device && atomic_fetch_sub(&device->ref_count, 1) == 1) {
    free(atomic_load(&device->lost));
    device->vtable->destroy(device);
  }
}

const zt_device_info_t* zt_device_info(const zt_device_t* device) {
  return device ? &device->info : NULL;
}

zt_status_t zt_device_synchronize(zt_device_t* device) {
  if (!device)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_device_synchronize: NULL device");
  ZT_RETURN_IF_ERROR(unusable(device, "zt_device_synchronize"));
  return device->vtable->synchronize ? watch(device, device->vtable->synchronize(device)) : NULL;
}

zt_status_t zt_device_timing_begin(zt_device_t* device) {
  if (!device)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_device_timing_begin: NULL device");
  if (!device->vtable->timing_begin)
    return zt_make_status(ZT_STATUS_UNSUPPORTED, "%s has no device timer (time it on the host)",
                          device->info.name);
  ZT_RETURN_IF_ERROR(unusable(device, "zt_device_timing_begin"));
  return watch(device, device->vtable->timing_begin(device));
}

zt_status_t zt_device_timing_end(zt_device_t* device, zt_device_timing_t* out) {
  if (!device || !out)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_device_timing_end: NULL argument");
  memset(out, 0, sizeof *out);
  if (!device->vtable->timing_end)
    return zt_make_status(ZT_STATUS_UNSUPPORTED, "%s has no device timer (time it on the host)",
                          device->info.name);
  ZT_RETURN_IF_ERROR(unusable(device, "zt_device_timing_end"));
  return watch(device, device->vtable->timing_end(device, out));
}

// --- interrupts ----------------------------------------------------------------

static _Thread_local zt_interrupt_check_t tl_check;
static _Thread_local void* tl_check_user;

void zt_set_interrupt_check(zt_interrupt_check_t check, void* user) {
  tl_check = check;
  tl_check_user = user;
}

bool zt_interrupt_requested(void) { return tl_check && tl_check(tl_check_user); }

// --- buffers -----------------------------------------------------------------

zt_status_t zt_buffer_alloc(zt_device_t* device, size_t size, zt_buffer_t** out_buffer) {
  if (!device || !out_buffer)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_buffer_alloc: NULL argument");
  *out_buffer = NULL;
  // No allocation can exceed PTRDIFF_MAX, and refusing here keeps every
  // backend's rounding up (cpu: to 64 bytes) from wrapping to a tiny block.
  if (size > (size_t)PTRDIFF_MAX)
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY,
                          "zt_buffer_alloc: %zu bytes is more than any device can hold", size);
  zt_buffer_t* b = NULL;
  ZT_RETURN_IF_ERROR(unusable(device, "zt_buffer_alloc"));
  ZT_RETURN_IF_ERROR(watch(device, device->vtable->buffer_alloc(device, size, &b)));
  b->device = device;
  b->size = size;
  zt_device_retain(device);
  *out_buffer = b;
  return NULL;
}

void zt_buffer_release(zt_buffer_t* buffer) {
  if (!buffer) return;
  zt_device_t* d = buffer->device;
  d->vtable->buffer_free(buffer);
  zt_device_release(d);
}

uint64_t zt_buffer_address(const zt_buffer_t* buffer) {
  return buffer ? buffer->address : 0;
}

size_t zt_buffer_size(const zt_buffer_t* buffer) { return buffer ? buffer->size : 0; }

static zt_status_t check_range(const char* what, const zt_buffer_t* b, size_t offset,
                               const void* host, size_t size) {
  if (!b) return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: NULL buffer", what);
  if (size && !host)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: NULL host pointer", what);
  if (offset > b->size || size > b->size - offset)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                          "%s: range [%zu, %zu) is outside the %zu-byte buffer", what,
                          offset, offset + size, b->size);
  return NULL;
}

zt_status_t zt_buffer_write(zt_buffer_t* buffer, size_t offset, const void* src,
                            size_t size) {
  ZT_RETURN_IF_ERROR(check_range("zt_buffer_write", buffer, offset, src, size));
  if (!size) return NULL;
  ZT_RETURN_IF_ERROR(unusable(buffer->device, "zt_buffer_write"));
  return watch(buffer->device, buffer->device->vtable->buffer_write(buffer, offset, src, size));
}

zt_status_t zt_buffer_read(const zt_buffer_t* buffer, size_t offset, void* dst,
                           size_t size) {
  ZT_RETURN_IF_ERROR(check_range("zt_buffer_read", buffer, offset, dst, size));
  if (!size) return NULL;
  ZT_RETURN_IF_ERROR(unusable(buffer->device, "zt_buffer_read"));
  return watch(buffer->device, buffer->device->vtable->buffer_read(buffer, offset, dst, size));
}

// --- executables -------------------------------------------------------------

zt_status_t zt_executable_create(zt_device_t* device, const zt_artifact_t* artifact,
                                 zt_executable_t** out_executable) {
  if (!device || !artifact || !out_executable)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_executable_create: NULL argument");
  *out_executable = NULL;
  const void* text = NULL;
  size_t size = 0;
  ZT_RETURN_IF_ERROR(zt_artifact_get(artifact, "meta", &text, &size));
  zt_kernel_meta_t* meta = malloc(sizeof *meta);
  if (!meta) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "kernel meta");
  zt_status_t s = zt_kernel_meta_parse(text, size, meta);
  zt_executable_t* e = NULL;
  // CPU artifacts need the CPU backend and Xe ones an Xe executor (a GPU, or
  // Intel's OpenCL CPU runtime, whose buffers are host memory too); an Xe
  // artifact for another chip is left to the driver to accept or refuse.
  if (!s && (strcmp(meta->target, "cpu") == 0) != (strcmp(device->info.target, "cpu") == 0))
    s = zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                       "kernel '%s' was compiled for target '%s', which %s cannot run",
                       meta->kernel, meta->target, device->info.name);
  if (!s) s = unusable(device, "zt_executable_create");
  if (!s) s = watch(device, device->vtable->executable_create(device, artifact, meta, &e));
  if (!s) {
    atomic_init(&e->ref_count, 1);
    e->device = device;
    e->meta = *meta;
    zt_device_retain(device);
    *out_executable = e;
  } else {
    s = zt_status_annotate(s, "kernel '%s' on %s", meta->kernel[0] ? meta->kernel : "?",
                           device->info.name);
  }
  free(meta);
  return s;
}

void zt_executable_release(zt_executable_t* e) {
  if (!e || atomic_fetch_sub(&e->ref_count, 1) != 1) return;
  zt_device_t* d = e->device;
  d->vtable->executable_destroy(e);
  zt_device_release(d);
}

zt_status_t zt_executable_stats(const zt_executable_t* e, zt_kernel_stats_t* out) {
  if (!e || !out)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_executable_stats: NULL argument");
  out->spill_bytes = out->private_bytes = out->local_bytes = -1;
  out->max_subgroup_size = out->num_grf = -1;
  if (!e->device->vtable->executable_stats) return NULL;
  return e->device->vtable->executable_stats(e, out);
}

zt_status_t zt_launch(zt_executable_t* e, const uint32_t grid[3], int32_t num_args,
                      const zt_arg_t* args) {
  return zt_launch_checked(e, grid, num_args, args, NULL);
}

zt_status_t zt_launch_checked(zt_executable_t* e, const uint32_t grid[3], int32_t num_args,
                              const zt_arg_t* args, const uint64_t* arg_bytes) {
  if (!e || !grid)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_launch: NULL executable or grid");
  const zt_kernel_meta_t* m = &e->meta;
  if (num_args != m->num_args)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                          "kernel '%s' takes %d argument%s, %d given", m->kernel,
                          m->num_args, m->num_args == 1 ? "" : "s", num_args);
  if (num_args && !args)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "kernel '%s': NULL argument array",
                          m->kernel);
  for (int32_t i = 0; i < num_args; ++i) {
    if (args[i].kind == m->arg_kinds[i]) continue;
    if (m->arg_kinds[i] == ZT_PTR)
      return zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                            "kernel '%s': argument %d is a pointer to %s, but %s was given",
                            m->kernel, i, zt_scalar_kind_name(m->arg_pointees[i]),
                            zt_scalar_kind_name(args[i].kind));
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                          "kernel '%s': argument %d is %s, but %s was given", m->kernel,
                          i, zt_scalar_kind_name(m->arg_kinds[i]),
                          zt_scalar_kind_name(args[i].kind));
  }
  for (int d = 0; d < 3; ++d) {
    if (grid[d] > INT32_MAX)
      return zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                            "kernel '%s': grid[%d] = %u is too large", m->kernel, d, grid[d]);
  }
  if (!grid[0] || !grid[1] || !grid[2]) return NULL;  // nothing to run
  ZT_RETURN_IF_ERROR(unusable(e->device, "zt_launch"));
  if (arg_bytes && e->device->vtable->launch_checked)
    return watch(e->device, e->device->vtable->launch_checked(e, grid, args, arg_bytes));
  return watch(e->device, e->device->vtable->launch(e, grid, args));
}
