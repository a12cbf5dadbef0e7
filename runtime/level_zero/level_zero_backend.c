// The Level Zero backend: one context and one in-order immediate command
// list per opened device; device-memory buffers; executables built from the
// artifact's SPIR-V (or from a cached native binary) with the build log on
// failure.
//
// Launches are asynchronous: they are appended without events, and
// synchronize appends a barrier that signals the device's one host-visible
// event and waits for it (the list is in order, so that covers everything
// before it; zeCommandListHostSynchronize is newer than this driver).
// Blocking copies signal and wait the same event. ZETILE_ZE_SYNC=1 makes the
// list synchronous instead.
//
// Device timing (zt_device_timing_*): while it is on, each launch signals an
// event of a kernel-timestamp pool. Harvesting (at the region's end, or when
// the pool is full) appends zeCommandListAppendQueryKernelTimestamps, which
// waits on those events on the device and copies their start/end ticks into
// host memory, then waits once on the host and converts ticks with the
// device's timer frequency. The host memory is filled with a marker first:
// ticks the device did not write (NEO in AUB mode runs no command) are
// counted as missing, not as times. Without that entry point each event is
// waited for and read with zeEventQueryKernelTimestamp instead.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include "base/spirv_check.h"
#include "level_zero/level_zero.h"
#include "zetile/cache.h"

#define NATIVE_ENTRY "native"
// Timestamp events per device: launches timed between two waits.
#define TS_EVENTS 64

typedef struct ze_device_s {
  zt_device_t base;
  const zt_ze_syms_t* syms;
  ze_driver_handle_t driver;
  ze_device_handle_t device;
  uint32_t device_id;
  ze_context_handle_t context;
  ze_command_list_handle_t list;
  ze_event_pool_handle_t event_pool;
  ze_event_handle_t event;  // host-visible; signalled by barriers and copies
  bool synchronous;         // the list itself blocks: no event needed
  bool pending;             // launches appended since the last wait
  pthread_mutex_t list_mu;  // guards list, event, pending and the ts_ fields
  // Kernel timestamps, created on the first timing_begin.
  ze_event_pool_handle_t ts_pool;
  ze_event_handle_t ts_events[TS_EVENTS];
  ze_kernel_timestamp_result_t* ts_host;  // host memory the device copies ticks to
  bool timing;              // launches signal ts_events
  int ts_used;              // events signalled since the last harvest
  double tick_ns;           // one timer tick
  uint64_t ts_mask;         // the valid bits of a kernel timestamp
  bool ts_have_first;
  uint64_t ts_first;        // the region's first kernel start (ticks)
  uint64_t ts_span;         // ticks from ts_first to the latest end
  uint64_t ts_ticks;        // summed kernel ticks
  int64_t ts_kernels;
  int64_t ts_missing;
} ze_device_t;

typedef struct ze_buffer_s {
  zt_buffer_t base;
  void* ptr;
} ze_buffer_t;

typedef struct ze_executable_s {
  zt_executable_t base;
  ze_module_handle_t module;
  ze_kernel_handle_t kernel;
  ze_kernel_properties_t props;
  pthread_mutex_t args_mu;  // argument setting + append is one critical section
} ze_executable_t;

static ze_device_t* as_ze(zt_device_t* d) { return (ze_device_t*)d; }

// --- device ------------------------------------------------------------------

// Appends a barrier signalling the event and waits for it. list_mu held.
static zt_status_t wait_locked(ze_device_t* d, ze_event_handle_t signalled) {
  const zt_ze_syms_t* s = d->syms;
  zt_status_t st = NULL;
  if (!d->synchronous) {
    if (!signalled) {
      st = ZT_ZE_STATUS(s, zeCommandListAppendBarrier, d->list, d->event, 0, NULL);
      if (st) return st;
    }
    st = ZT_ZE_STATUS(s, zeEventHostSynchronize, d->event, UINT64_MAX);
    zt_status_t r = ZT_ZE_STATUS(s, zeEventHostReset, d->event);
    if (!st) st = r;
    else zt_status_free(r);
  }
  if (!st) d->pending = false;
  return st;
}

static zt_status_t ze_synchronize(zt_device_t* base) {
  ze_device_t* d = as_ze(base);
  pthread_mutex_lock(&d->list_mu);
  zt_status_t st = d->pending ? wait_locked(d, NULL) : NULL;
  pthread_mutex_unlock(&d->list_mu);
  return st;
}

// Freeing memory or a kernel that a queued launch may still use is undefined:
// wait first (cheap when nothing is pending).
static void drain(ze_device_t* d) { zt_status_free(ze_synchronize(&d->base)); }

// Opened devices, one per index: opening "level_zero:0" twice gives the same
// object, so buffers and kernels from either share one context.
static pthread_mutex_t open_mu = PTHREAD_MUTEX_INITIALIZER;
static ze_device_t* opened[ZT_ZE_MAX_DEVICES];

static void destroy_ts_events(ze_device_t* d);

static void ze_destroy(zt_device_t* base) {
  ze_device_t* d = as_ze(base);
  pthread_mutex_lock(&open_mu);
  for (int i = 0; i < ZT_ZE_MAX_DEVICES; ++i)
    if (opened[i] == d) opened[i] = NULL;
  pthread_mutex_unlock(&open_mu);
  if (d->list && d->pending) drain(d);
  destroy_ts_events(d);
  if (d->event) d->syms->zeEventDestroy(d->event);
  if (d->event_pool) d->syms->zeEventPoolDestroy(d->event_pool);
  if (d->list) d->syms->zeCommandListDestroy(d->list);
  if (d->context) d->syms->zeContextDestroy(d->context);
  pthread_mutex_destroy(&d->list_mu);
  free(d);
}

// --- buffers -----------------------------------------------------------------

static zt_status_t ze_buffer_alloc(zt_device_t* base, size_t size, zt_buffer_t** out) {
  ze_device_t* d = as_ze(base);
  ze_buffer_t* b = calloc(1, sizeof *b);
  if (!b) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "buffer");
  ze_device_mem_alloc_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC};
  zt_status_t s = ZT_ZE_STATUS(d->syms, zeMemAllocDevice, d->context, &desc,
                               size ? size : 1, 64, d->device, &b->ptr);
  if (s) {
    free(b);
    return zt_status_annotate(s, "allocating %zu bytes", size);
  }
  b->base.address = (uint64_t)(uintptr_t)b->ptr;
  *out = &b->base;
  return NULL;
}

static void ze_buffer_free(zt_buffer_t* base) {
  ze_buffer_t* b = (ze_buffer_t*)base;
  ze_device_t* d = as_ze(base->device);
  drain(d);
  d->syms->zeMemFree(d->context, b->ptr);
  free(b);
}

// A blocking copy: it follows every queued launch (in-order list) and
// returns once the data has moved, so host memory can be reused at once.
static zt_status_t copy(ze_device_t* d, void* dst, const void* src, size_t size) {
  pthread_mutex_lock(&d->list_mu);
  zt_status_t s = ZT_ZE_STATUS(d->syms, zeCommandListAppendMemoryCopy, d->list, dst, src,
                               size, d->synchronous ? NULL : d->event, 0, NULL);
  if (!s) s = wait_locked(d, d->event);
  pthread_mutex_unlock(&d->list_mu);
  return s;
}

static zt_status_t ze_buffer_write(zt_buffer_t* base, size_t offset, const void* src,
                                   size_t size) {
  ze_buffer_t* b = (ze_buffer_t*)base;
  return copy(as_ze(base->device), (char*)b->ptr + offset, src, size);
}

static zt_status_t ze_buffer_read(const zt_buffer_t* base, size_t offset, void* dst,
                                  size_t size) {
  const ze_buffer_t* b = (const ze_buffer_t*)base;
  return copy(as_ze(base->device), dst, (const char*)b->ptr + offset, size);
}

// --- executables -------------------------------------------------------------

static void native_key(const ze_device_t* d, const void* spirv, size_t size,
                       const char* flags, char out[33]) {
  XXH3_state_t st;
  XXH3_128bits_reset(&st);
  const zt_device_info_t* info = &d->base.info;
  const char* parts[] = {"zetile-native-1", flags, info->description, info->driver_version,
                         info->target};
  for (size_t i = 0; i < sizeof parts / sizeof parts[0]; ++i)
    XXH3_128bits_update(&st, parts[i], strlen(parts[i]) + 1);
  XXH3_128bits_update(&st, &d->device_id, sizeof d->device_id);
  uint64_t n = size;
  XXH3_128bits_update(&st, &n, sizeof n);
  XXH3_128bits_update(&st, spirv, size);
  XXH128_hash_t h = XXH3_128bits_digest(&st);
  snprintf(out, 33, "%016llx%016llx", (unsigned long long)h.high64,
           (unsigned long long)h.low64);
}

static bool native_cache_enabled(void) {
  const char* v = getenv("ZETILE_NATIVE_CACHE");
  return !(v && strcmp(v, "0") == 0);
}

// Builds a module; on a build failure the status carries the driver's log.
static zt_status_t create_module(ze_device_t* d, ze_module_format_t format,
                                 const void* data, size_t size, const char* flags,
                                 ze_module_handle_t* out) {
  const zt_ze_syms_t* s = d->syms;
  ze_module_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC};
  desc.format = format;
  desc.inputSize = size;
  desc.pInputModule = data;
  desc.pBuildFlags = flags;
  ze_module_build_log_handle_t log = NULL;
  ze_result_t r = s->zeModuleCreate(d->context, d->device, &desc, out, &log);
  zt_status_t st = zt_ze_make_status(r, "zeModuleCreate");
  if (st && log) {
    size_t n = 0;
    char* text = NULL;
    if (s->zeModuleBuildLogGetString(log, &n, NULL) == ZE_RESULT_SUCCESS && n &&
        (text = calloc(1, n + 1)) &&
        s->zeModuleBuildLogGetString(log, &n, text) == ZE_RESULT_SUCCESS && text[0]) {
      zt_status_t full = zt_make_status(zt_status_code(st), "%s\nbuild log:\n%s",
                                        zt_status_message(st), text);
      zt_status_free(st);
      st = full;
    }
    free(text);
  }
  if (log) s->zeModuleBuildLogDestroy(log);
  if (st) *out = NULL;
  return st;
}

static void store_native(ze_device_t* d, ze_module_handle_t module, const char* key) {
  size_t n = 0;
  if (d->syms->zeModuleGetNativeBinary(module, &n, NULL) != ZE_RESULT_SUCCESS || !n) return;
  uint8_t* bin = malloc(n);
  if (bin && d->syms->zeModuleGetNativeBinary(module, &n, bin) == ZE_RESULT_SUCCESS)
    zt_status_free(zt_cache_put(key, NATIVE_ENTRY, bin, n));  // best effort
  free(bin);
}

static zt_status_t ze_executable_create(zt_device_t* base, const zt_artifact_t* artifact,
                                        const zt_kernel_meta_t* meta,
                                        zt_executable_t** out) {
  ze_device_t* d = as_ze(base);
  const zt_ze_syms_t* s = d->syms;
  const void* spirv = NULL;
  size_t spirv_size = 0;
  ZT_RETURN_IF_ERROR(zt_artifact_get(artifact, "spirv", &spirv, &spirv_size));
  // IGC exits the process on some malformed modules: check before building.
  ZT_RETURN_IF_ERROR(zt_spirv_check(spirv, spirv_size, meta->kernel));
  ze_executable_t* e = calloc(1, sizeof *e);
  if (!e) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "executable");
  pthread_mutex_init(&e->args_mu, NULL);
  zt_status_t st = NULL;
  const char* flags = meta->igc_options;

  // Native binary first: the driver's build of this exact SPIR-V and flags.
  char key[33];
  bool use_cache = native_cache_enabled();
  native_key(d, spirv, spirv_size, flags, key);
  if (use_cache) {
    void* bin = NULL;
    size_t bin_size = 0;
    zt_status_t g = zt_cache_get(key, NATIVE_ENTRY, &bin, &bin_size);
    if (!g) {
      // A binary the driver refuses (e.g. stale) falls back to a rebuild.
      zt_status_t m = create_module(d, ZE_MODULE_FORMAT_NATIVE, bin, bin_size, "",
                                    &e->module);
      if (!m) zt_cache_count(ZT_CACHE_NATIVE_HITS, 1);
      zt_status_free(m);
      free(bin);
    }
    zt_status_free(g);
  }
  if (!e->module) {
    st = create_module(d, ZE_MODULE_FORMAT_IL_SPIRV, spirv, spirv_size, flags, &e->module);
    if (st) goto cleanup;
    zt_cache_count(ZT_CACHE_NATIVE_BUILDS, 1);
    if (use_cache) store_native(d, e->module, key);
  }

  ze_kernel_desc_t kd = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC};
  kd.pKernelName = meta->kernel;
  ze_result_t r = s->zeKernelCreate(e->module, &kd, &e->kernel);
  if (r == ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED) {
    st = zt_make_status(ZT_STATUS_DRIVER_ERROR,
                        "zeKernelCreate failed: %s: the driver lacks a builtin this kernel "
                        "imports (2D block IO?): use the compat path",
                        zt_ze_result_name(r));
    goto cleanup;
  }
  st = zt_ze_make_status(r, "zeKernelCreate");
  if (st) goto cleanup;
  st = ZT_ZE_STATUS(s, zeKernelSetGroupSize, e->kernel, (uint32_t)meta->local_size[0],
                    (uint32_t)meta->local_size[1], (uint32_t)meta->local_size[2]);
  if (st) {
    st = zt_status_annotate(st, "local size %d,%d,%d", meta->local_size[0],
                            meta->local_size[1], meta->local_size[2]);
    goto cleanup;
  }
  e->props.stype = ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES;
  st = ZT_ZE_STATUS(s, zeKernelGetProperties, e->kernel, &e->props);
  if (st) goto cleanup;
  if (e->props.numKernelArgs != (uint32_t)meta->num_args) {
    st = zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                        "the SPIR-V kernel takes %u arguments but its meta lists %d",
                        e->props.numKernelArgs, meta->num_args);
    goto cleanup;
  }
  *out = &e->base;
  return NULL;

cleanup:
  if (e->kernel) s->zeKernelDestroy(e->kernel);
  if (e->module) s->zeModuleDestroy(e->module);
  pthread_mutex_destroy(&e->args_mu);
  free(e);
  return st;
}

static void ze_executable_destroy(zt_executable_t* base) {
  ze_executable_t* e = (ze_executable_t*)base;
  drain(as_ze(base->device));
  const zt_ze_syms_t* s = as_ze(base->device)->syms;
  s->zeKernelDestroy(e->kernel);
  s->zeModuleDestroy(e->module);
  pthread_mutex_destroy(&e->args_mu);
  free(e);
}

static zt_status_t ze_executable_stats(const zt_executable_t* base, zt_kernel_stats_t* out) {
  const ze_executable_t* e = (const ze_executable_t*)base;
  out->spill_bytes = e->props.spillMemSize;
  out->private_bytes = e->props.privateMemSize;
  out->local_bytes = e->props.localMemSize;
  out->max_subgroup_size = (int32_t)e->props.maxSubgroupSize;
  out->num_grf = strstr(base->meta.igc_options, "large-register-file") ? 256 : 128;
  return NULL;
}

// --- device timing ---------------------------------------------------------------

// The timer's tick and the valid bits of kernel timestamps. Level Zero 1.2
// reports the frequency (cycles/s) when asked with DEVICE_PROPERTIES_1_2;
// before, timerResolution is whole nanoseconds per tick (too coarse for a
// 38.4 MHz timer: 26.04 ns), so the newer form is preferred.
static zt_status_t timer_properties(ze_device_t* d) {
  const zt_ze_syms_t* s = d->syms;
  ze_api_version_t api = ZE_API_VERSION_1_0;
  if (s->zeDriverGetApiVersion) s->zeDriverGetApiVersion(d->driver, &api);
  bool hz = api >= ZE_MAKE_VERSION(1, 2);
  ze_device_properties_t p = {.stype = hz ? ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2
                                          : ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
  ZT_RETURN_IF_ERROR(ZT_ZE_STATUS(s, zeDeviceGetProperties, d->device, &p));
  if (!p.timerResolution)
    return zt_make_status(ZT_STATUS_UNSUPPORTED, "the driver reports no timer resolution");
  d->tick_ns = hz ? 1e9 / (double)p.timerResolution : (double)p.timerResolution;
  uint32_t bits = p.kernelTimestampValidBits;
  d->ts_mask = bits == 0 || bits >= 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
  return NULL;
}

static void destroy_ts_events(ze_device_t* d) {
  for (int i = 0; i < TS_EVENTS; ++i)
    if (d->ts_events[i]) d->syms->zeEventDestroy(d->ts_events[i]);
  memset(d->ts_events, 0, sizeof d->ts_events);
  if (d->ts_pool) d->syms->zeEventPoolDestroy(d->ts_pool);
  if (d->ts_host) d->syms->zeMemFree(d->context, d->ts_host);
  d->ts_pool = NULL;
  d->ts_host = NULL;
}

static zt_status_t create_ts_events_once(ze_device_t* d) {
  const zt_ze_syms_t* s = d->syms;
  if (!s->zeEventQueryKernelTimestamp)
    return zt_make_status(ZT_STATUS_UNSUPPORTED, "the Level Zero loader lacks "
                                                 "zeEventQueryKernelTimestamp");
  ZT_RETURN_IF_ERROR(timer_properties(d));
  ze_event_pool_desc_t pd = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC};
  pd.flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE | ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP;
  pd.count = TS_EVENTS;
  ZT_RETURN_IF_ERROR(
      ZT_ZE_STATUS(s, zeEventPoolCreate, d->context, &pd, 1, &d->device, &d->ts_pool));
  for (uint32_t i = 0; i < TS_EVENTS; ++i) {
    ze_event_desc_t ed = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC};
    ed.index = i;
    ed.signal = ZE_EVENT_SCOPE_FLAG_HOST;
    ed.wait = ZE_EVENT_SCOPE_FLAG_HOST;
    ZT_RETURN_IF_ERROR(ZT_ZE_STATUS(s, zeEventCreate, d->ts_pool, &ed, &d->ts_events[i]));
  }
  // ZETILE_ZE_TIMESTAMP_QUERY=1 takes the per-event host query (to compare).
  const char* query = getenv("ZETILE_ZE_TIMESTAMP_QUERY");
  if (s->zeCommandListAppendQueryKernelTimestamps && s->zeMemAllocHost &&
      !(query && strcmp(query, "1") == 0)) {
    ze_host_mem_alloc_desc_t hd = {.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC};
    ZT_RETURN_IF_ERROR(ZT_ZE_STATUS(s, zeMemAllocHost, d->context, &hd,
                                    TS_EVENTS * sizeof *d->ts_host, 64, (void**)&d->ts_host));
  }
  return NULL;
}

// All or nothing: a failure leaves no half-made pool for the next try.
static zt_status_t create_ts_events(ze_device_t* d) {
  zt_status_t st = create_ts_events_once(d);
  if (st) destroy_ts_events(d);
  return st;
}

static void add_timestamp(ze_device_t* d, const ze_kernel_timestamp_result_t* r) {
  // Global (wall-clock) ticks; each value may wrap at ts_mask.
  uint64_t start = r->global.kernelStart & d->ts_mask;
  uint64_t end = r->global.kernelEnd & d->ts_mask;
  uint64_t ticks = (end - start) & d->ts_mask;
  if (!d->ts_have_first) {
    d->ts_first = start;
    d->ts_have_first = true;
  }
  uint64_t reach = ((start - d->ts_first) & d->ts_mask) + ticks;
  if (reach > d->ts_span) d->ts_span = reach;
  d->ts_ticks += ticks;
}

// The device copies the events' timestamps to ts_host once they are
// signalled (it waits on them), then the host waits for the copy.
static zt_status_t harvest_by_copy(ze_device_t* d) {
  const zt_ze_syms_t* s = d->syms;
  size_t n = (size_t)d->ts_used;
  memset(d->ts_host, 0xff, n * sizeof *d->ts_host);  // the "not written" marker
  ZT_RETURN_IF_ERROR(ZT_ZE_STATUS(s, zeCommandListAppendQueryKernelTimestamps, d->list,
                                  (uint32_t)n, d->ts_events, d->ts_host, NULL, NULL,
                                  (uint32_t)n, d->ts_events));
  d->pending = !d->synchronous;
  ZT_RETURN_IF_ERROR(wait_locked(d, NULL));
  for (size_t i = 0; i < n; ++i) {
    const ze_kernel_timestamp_result_t* r = &d->ts_host[i];
    if (r->global.kernelStart == UINT64_MAX && r->global.kernelEnd == UINT64_MAX)
      d->ts_missing++;
    else
      add_timestamp(d, r);
    d->ts_kernels++;
  }
  return NULL;
}

// Each event is waited for and read on the host.
static zt_status_t harvest_by_query(ze_device_t* d) {
  const zt_ze_syms_t* s = d->syms;
  ZT_RETURN_IF_ERROR(wait_locked(d, NULL));
  for (int i = 0; i < d->ts_used; ++i) {
    ze_kernel_timestamp_result_t r;
    memset(&r, 0, sizeof r);
    ZT_RETURN_IF_ERROR(ZT_ZE_STATUS(s, zeEventHostSynchronize, d->ts_events[i], UINT64_MAX));
    ze_result_t q = s->zeEventQueryKernelTimestamp(d->ts_events[i], &r);
    if (q == ZE_RESULT_NOT_READY) {
      d->ts_missing++;  // NEO in AUB mode: the wait returns, nothing was written
    } else {
      ZT_RETURN_IF_ERROR(zt_ze_make_status(q, "zeEventQueryKernelTimestamp"));
      add_timestamp(d, &r);
    }
    d->ts_kernels++;
  }
  return NULL;
}

// Waits for the timed launches, adds their timestamps up and resets their
// events for reuse. list_mu held.
static zt_status_t harvest_locked(ze_device_t* d) {
  if (!d->ts_used) return NULL;
  zt_status_t st = d->ts_host ? harvest_by_copy(d) : harvest_by_query(d);
  for (int i = 0; i < d->ts_used; ++i) {
    zt_status_t r = ZT_ZE_STATUS(d->syms, zeEventHostReset, d->ts_events[i]);
    if (!st) st = r;
    else zt_status_free(r);
  }
  d->ts_used = 0;
  return st;
}

static zt_status_t ze_timing_begin(zt_device_t* base) {
  ze_device_t* d = as_ze(base);
  pthread_mutex_lock(&d->list_mu);
  zt_status_t st = NULL;
  if (d->timing)
    st = zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: a timing region is already open",
                        base->info.name);
  else if (!d->ts_pool)
    st = create_ts_events(d);
  if (!st) {
    d->timing = true;
    d->ts_used = 0;
    d->ts_have_first = false;
    d->ts_first = d->ts_span = d->ts_ticks = 0;
    d->ts_kernels = d->ts_missing = 0;
  }
  pthread_mutex_unlock(&d->list_mu);
  return st;
}

static zt_status_t ze_timing_end(zt_device_t* base, zt_device_timing_t* out) {
  ze_device_t* d = as_ze(base);
  pthread_mutex_lock(&d->list_mu);
  zt_status_t st = NULL;
  if (!d->timing) {
    st = zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: no timing region is open",
                        base->info.name);
  } else {
    st = harvest_locked(d);
    d->timing = false;
    out->kernels = d->ts_kernels;
    out->kernel_ns = (double)d->ts_ticks * d->tick_ns;
    out->span_ns = (double)d->ts_span * d->tick_ns;
    out->tick_ns = d->tick_ns;
    out->missing = d->ts_missing;
  }
  pthread_mutex_unlock(&d->list_mu);
  return st;
}

// --- launch ------------------------------------------------------------------

static zt_status_t ze_launch(zt_executable_t* base, const uint32_t grid[3],
                             const zt_arg_t* args) {
  ze_executable_t* e = (ze_executable_t*)base;
  ze_device_t* d = as_ze(base->device);
  const zt_ze_syms_t* s = d->syms;
  zt_status_t st = NULL;
  pthread_mutex_lock(&e->args_mu);
  for (int32_t i = 0; i < base->meta.num_args && !st; ++i) {
    zt_packed_arg_t v;
    const zt_arg_t* a = &args[i];
    size_t size = zt_arg_pack(a, &v);
    st = ZT_ZE_STATUS(s, zeKernelSetArgumentValue, e->kernel, (uint32_t)i, size, &v);
    if (st) st = zt_status_annotate(st, "argument %d (%s)", i, zt_scalar_kind_name(a->kind));
  }
  if (!st) {
    ze_group_count_t groups = {grid[0], grid[1], grid[2]};
    pthread_mutex_lock(&d->list_mu);
    ze_event_handle_t signal = NULL;
    if (d->timing) {
      if (d->ts_used == TS_EVENTS) st = harvest_locked(d);
      if (!st) signal = d->ts_events[d->ts_used];
    }
    if (!st)
      st = ZT_ZE_STATUS(s, zeCommandListAppendLaunchKernel, d->list, e->kernel, &groups,
                        signal, 0, NULL);
    if (!st) {
      d->pending = !d->synchronous;
      if (signal) d->ts_used++;
    }
    pthread_mutex_unlock(&d->list_mu);
  }
  pthread_mutex_unlock(&e->args_mu);
  return st;
}

static const zt_backend_vtable_t ze_vtable = {
    /* .destroy            = */ ze_destroy,
    /* .synchronize        = */ ze_synchronize,
    /* .buffer_alloc       = */ ze_buffer_alloc,
    /* .buffer_free        = */ ze_buffer_free,
    /* .buffer_write       = */ ze_buffer_write,
    /* .buffer_read        = */ ze_buffer_read,
    /* .executable_create  = */ ze_executable_create,
    /* .executable_destroy = */ ze_executable_destroy,
    /* .executable_stats   = */ ze_executable_stats,
    /* .launch             = */ ze_launch,
    /* .launch_checked     = */ NULL,
    /* .timing_begin       = */ ze_timing_begin,
    /* .timing_end         = */ ze_timing_end,
};

// --- discovery -----------------------------------------------------------------

static zt_status_t ze_enumerate(zt_device_info_t* out, int32_t capacity, int32_t* count) {
  const zt_ze_state_t* g = zt_ze_state();
  *count = g->available ? g->num_devices : 0;
  for (int32_t i = 0; i < *count && i < capacity; ++i) out[i] = g->infos[i];
  return NULL;
}

static zt_status_t ze_open(int32_t index, zt_device_t** out) {
  const zt_ze_state_t* g = zt_ze_state();
  if (!g->available || index >= g->num_devices)
    return zt_make_status(ZT_STATUS_NOT_FOUND, "no level_zero:%d (%s)", index,
                          g->available ? "index out of range" : g->why_not);
  const zt_ze_syms_t* s = &g->syms;
  pthread_mutex_lock(&open_mu);
  ze_device_t* live = opened[index];
  if (live) {
    // Retain unless its last reference is already gone (being destroyed).
    int n = atomic_load(&live->base.ref_count);
    while (n > 0 && !atomic_compare_exchange_weak(&live->base.ref_count, &n, n + 1)) {
    }
    if (n > 0) {
      pthread_mutex_unlock(&open_mu);
      *out = &live->base;
      return NULL;
    }
  }
  pthread_mutex_unlock(&open_mu);
  ze_device_t* d = calloc(1, sizeof *d);
  if (!d) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "device");
  zt_device_initialize(&d->base, &ze_vtable);
  d->base.info = g->infos[index];
  d->syms = s;
  d->driver = g->drivers[index];
  d->device = g->devices[index];
  d->device_id = g->device_ids[index];
  pthread_mutex_init(&d->list_mu, NULL);
  zt_status_t st = NULL;

  ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
  st = ZT_ZE_STATUS(s, zeContextCreate, d->driver, &cd, &d->context);
  if (st) goto cleanup;

  // The first queue group that takes compute work.
  uint32_t ngroups = 0, ordinal = 0;
  st = ZT_ZE_STATUS(s, zeDeviceGetCommandQueueGroupProperties, d->device, &ngroups, NULL);
  if (st) goto cleanup;
  ze_command_queue_group_properties_t groups[16];
  if (ngroups > 16) ngroups = 16;
  for (uint32_t i = 0; i < ngroups; ++i) {
    memset(&groups[i], 0, sizeof groups[i]);
    groups[i].stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES;
  }
  st = ZT_ZE_STATUS(s, zeDeviceGetCommandQueueGroupProperties, d->device, &ngroups, groups);
  if (st) goto cleanup;
  for (uint32_t i = 0; i < ngroups; ++i) {
    if (groups[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) {
      ordinal = i;
      break;
    }
  }
  ze_command_queue_desc_t qd = {.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC};
  qd.ordinal = ordinal;
  qd.index = 0;
  const char* sync = getenv("ZETILE_ZE_SYNC");
  d->synchronous = sync && strcmp(sync, "1") == 0;
  qd.mode = d->synchronous ? ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS
                           : ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS;
  qd.priority = ZE_COMMAND_QUEUE_PRIORITY_NORMAL;
  st = ZT_ZE_STATUS(s, zeCommandListCreateImmediate, d->context, d->device, &qd, &d->list);
  if (st) goto cleanup;
  if (!d->synchronous) {
    ze_event_pool_desc_t pd = {.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC};
    pd.flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE;
    pd.count = 1;
    st = ZT_ZE_STATUS(s, zeEventPoolCreate, d->context, &pd, 1, &d->device, &d->event_pool);
    if (st) goto cleanup;
    ze_event_desc_t ed = {.stype = ZE_STRUCTURE_TYPE_EVENT_DESC};
    ed.index = 0;
    ed.signal = ZE_EVENT_SCOPE_FLAG_HOST;
    ed.wait = ZE_EVENT_SCOPE_FLAG_HOST;
    st = ZT_ZE_STATUS(s, zeEventCreate, d->event_pool, &ed, &d->event);
    if (st) goto cleanup;
  }
  pthread_mutex_lock(&open_mu);
  if (!opened[index]) opened[index] = d;  // a racing open may have won: keep both
  pthread_mutex_unlock(&open_mu);
  *out = &d->base;
  return NULL;

cleanup:
  ze_destroy(&d->base);
  return zt_status_annotate(st, "opening level_zero:%d", index);
}

const zt_backend_t zt_level_zero_backend = {
    /* .api_version = */ ZT_BACKEND_API_VERSION,
    /* .name        = */ "level_zero",
    /* .enumerate   = */ ze_enumerate,
    /* .open        = */ ze_open,
};
