// Loading Level Zero, deciding whether it is safe to initialize, and
// enumerating Intel GPUs. Runs once per process.
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "level_zero/level_zero.h"
#include "xe_detect.h"
#include "zetile/cache.h"

extern const unsigned char zt_ze_block_io_probe_spv[];
extern const size_t zt_ze_block_io_probe_spv_size;

static zt_ze_state_t state;
static pthread_once_t state_once = PTHREAD_ONCE_INIT;

static bool env_set(const char* name) {
  const char* v = getenv(name);
  return v && v[0];
}

// A DRM render node whose PCI vendor is Intel.
static bool intel_render_node_present(void) {
  DIR* d = opendir("/sys/class/drm");
  if (!d) return false;
  bool found = false;
  struct dirent* e;
  while (!found && (e = readdir(d))) {
    if (strncmp(e->d_name, "renderD", 7) != 0) continue;
    char path[512], buf[32] = {0};
    snprintf(path, sizeof path, "/sys/class/drm/%s/device/vendor", e->d_name);
    FILE* f = fopen(path, "r");
    if (!f) continue;
    if (fgets(buf, sizeof buf, f) && strtoul(buf, NULL, 16) == 0x8086) found = true;
    fclose(f);
  }
  closedir(d);
  return found;
}

// NEO's simulation modes (AUB file / TBX): a device without hardware. They
// only take effect with NEOReadDebugKeys=1.
static bool neo_simulation_requested(void) {
  const char* keys = getenv("NEOReadDebugKeys");
  return keys && strcmp(keys, "1") == 0 && env_set("SetCommandStreamReceiver") &&
         strcmp(getenv("SetCommandStreamReceiver"), "0") != 0;
}

static void fill_info(int32_t index, ze_driver_handle_t driver, ze_device_handle_t dev,
                      const ze_device_properties_t* p, zt_device_info_t* info) {
  const zt_ze_syms_t* s = &state.syms;
  memset(info, 0, sizeof *info);
  snprintf(info->name, sizeof info->name, "level_zero:%d", index);
  snprintf(info->backend, sizeof info->backend, "level_zero");
  snprintf(info->description, sizeof info->description, "%s", p->name);
  // The target row: by id, name, or the closest by what the driver reports
  // (runtime/xe_detect.c); ZETILE_TARGET overrides.
  zt_xe_props_t xp = {.device_id = p->deviceId, .name = p->name, .dp4a = -1, .xmx = -1};
  if (neo_simulation_requested()) xp.simulated = getenv("ProductFamilyOverride");
  if (s->zeDeviceGetComputeProperties) {
    ze_device_compute_properties_t cp = {.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES};
    if (s->zeDeviceGetComputeProperties(dev, &cp) == ZE_RESULT_SUCCESS)
      for (uint32_t i = 0; i < cp.numSubGroupSizes && i < ZE_SUBGROUPSIZE_COUNT && i < 7; ++i)
        xp.subgroup_sizes[i] = (int)cp.subGroupSizes[i];
  }
  if (s->zeDeviceGetModuleProperties) {
    ze_device_module_properties_t mp = {.stype = ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES};
    if (s->zeDeviceGetModuleProperties(dev, &mp) == ZE_RESULT_SUCCESS)
      xp.dp4a = (mp.flags & ZE_DEVICE_MODULE_FLAG_DP4A) != 0;
  }
  const char* forced = getenv("ZETILE_TARGET");
  if (forced && forced[0]) {
    snprintf(info->target, sizeof info->target, "%s", forced);
    snprintf(info->target_why, sizeof info->target_why, "ZETILE_TARGET=%s", forced);
  } else {
    snprintf(info->target, sizeof info->target, "%s",
             zt_xe_detect(&xp, info->target_why, sizeof info->target_why));
  }
  ze_driver_properties_t dp = {.stype = ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES};
  if (s->zeDriverGetProperties(driver, &dp) == ZE_RESULT_SUCCESS) {
    uint32_t v = dp.driverVersion;
    // NEO packs its version as major << 24 | minor << 16 | build.
    snprintf(info->driver_version, sizeof info->driver_version, "%u.%u.%u", v >> 24,
             (v >> 16) & 0xff, v & 0xffff);
  }
  info->compute_units =
      (int32_t)(p->numSlices * p->numSubslicesPerSlice * p->numEUsPerSubslice);
  uint32_t n = 0;
  if (s->zeDeviceGetMemoryProperties(dev, &n, NULL) == ZE_RESULT_SUCCESS && n) {
    ze_device_memory_properties_t mp[8];
    if (n > 8) n = 8;
    for (uint32_t i = 0; i < n; ++i) {
      memset(&mp[i], 0, sizeof mp[i]);
      mp[i].stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES;
    }
    if (s->zeDeviceGetMemoryProperties(dev, &n, mp) == ZE_RESULT_SUCCESS)
      for (uint32_t i = 0; i < n; ++i) info->memory_bytes += mp[i].totalSize;
  }
  info->host_memory = false;
}

// Whether the driver resolves the 2D block IO builtins XeVM emits: build a
// kernel that imports them and see whether zeKernelCreate links it. Costs one
// IGC build (~0.1 s), so the answer is cached per device and driver version.
// Returns 1 if the builtins are missing, 0 if present, -1 if unknown.
static int probe_lacks_block_io(ze_driver_handle_t driver, ze_device_handle_t dev,
                                uint32_t device_id, const zt_device_info_t* info) {
  const zt_ze_syms_t* s = &state.syms;
  char id[512], key[33];
  snprintf(id, sizeof id, "zetile-block-io-probe-1|%s|%s|%u", info->description,
           info->driver_version, device_id);
  zt_hash_hex(id, strlen(id), key);
  void* data = NULL;
  size_t size = 0;
  zt_status_t st = zt_cache_get(key, "block_io_probe", &data, &size);
  if (!st && size == 1 && (((char*)data)[0] == '0' || ((char*)data)[0] == '1')) {
    int r = ((char*)data)[0] == '1';
    free(data);
    return r;
  }
  free(data);
  zt_status_free(st);

  int result = -1;
  ze_context_handle_t ctx = NULL;
  ze_module_handle_t module = NULL;
  ze_kernel_handle_t kernel = NULL;
  ze_context_desc_t cd = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
  if (s->zeContextCreate(driver, &cd, &ctx) != ZE_RESULT_SUCCESS) return -1;
  ze_module_desc_t md = {.stype = ZE_STRUCTURE_TYPE_MODULE_DESC};
  md.format = ZE_MODULE_FORMAT_IL_SPIRV;
  md.inputSize = zt_ze_block_io_probe_spv_size;
  md.pInputModule = zt_ze_block_io_probe_spv;
  md.pBuildFlags = "";
  if (s->zeModuleCreate(ctx, dev, &md, &module, NULL) == ZE_RESULT_SUCCESS) {
    ze_kernel_desc_t kd = {.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC};
    kd.pKernelName = "eltwise";
    ze_result_t r = s->zeKernelCreate(module, &kd, &kernel);
    if (r == ZE_RESULT_SUCCESS) result = 0;
    else if (r == ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED) result = 1;
  }
  if (kernel) s->zeKernelDestroy(kernel);
  if (module) s->zeModuleDestroy(module);
  s->zeContextDestroy(ctx);
  if (result >= 0) zt_status_free(zt_cache_put(key, "block_io_probe", result ? "1" : "0", 1));
  return result;
}

// compat: DG2 has no SIMD16 DPAS, and drivers without the 2D block IO
// builtins (Debian 12's NEO 22.43) cannot link XeVM's kernels.
// ZETILE_COMPAT=0/1 overrides; ZETILE_BLOCK_IO_PROBE=0 skips the probe.
static void decide_compat(ze_driver_handle_t driver, ze_device_handle_t dev,
                          uint32_t device_id, zt_device_info_t* info) {
  const char* compat = getenv("ZETILE_COMPAT");
  if (compat && compat[0]) {
    info->compat = strcmp(compat, "0") != 0;
    return;
  }
  if (strcmp(info->target, "dg2") == 0) {
    info->compat = true;
    return;
  }
  const char* probe = getenv("ZETILE_BLOCK_IO_PROBE");
  if (probe && strcmp(probe, "0") == 0) return;
  info->compat = probe_lacks_block_io(driver, dev, device_id, info) == 1;
}

static void initialize(void) {
  zt_ze_syms_t* s = &state.syms;
  const char* force = getenv("ZETILE_LEVEL_ZERO");
  if (force && strcmp(force, "0") == 0) {
    snprintf(state.why_not, sizeof state.why_not, "disabled by ZETILE_LEVEL_ZERO=0");
    return;
  }
  bool forced = force && strcmp(force, "1") == 0;
  if (!forced && !neo_simulation_requested() && !intel_render_node_present()) {
    snprintf(state.why_not, sizeof state.why_not,
             "no Intel render node (set ZETILE_LEVEL_ZERO=1 to try anyway)");
    return;
  }
  const char* lib = getenv("ZETILE_ZE_LOADER");
  s->library = dlopen(lib && lib[0] ? lib : "libze_loader.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!s->library) {
    snprintf(state.why_not, sizeof state.why_not,
             "cannot load the Level Zero loader: %s (on Debian 12: apt-get install libze1 "
             "intel-opencl-icd, which bring the loader and Intel's NEO driver)",
             dlerror());
    return;
  }
#define ZT_REQUIRED_(name)                                                        \
  s->name = (__typeof__(name)*)dlsym(s->library, #name);                          \
  if (!s->name) {                                                                 \
    snprintf(state.why_not, sizeof state.why_not, "the loader lacks %s", #name); \
    goto fail;                                                                    \
  }
#define ZT_OPTIONAL_(name) s->name = (__typeof__(name)*)dlsym(s->library, #name);
  ZT_ZE_SYMBOLS(ZT_REQUIRED_, ZT_OPTIONAL_)
#undef ZT_REQUIRED_
#undef ZT_OPTIONAL_

  ze_result_t r = s->zeInit(ZE_INIT_FLAG_GPU_ONLY);
  if (r != ZE_RESULT_SUCCESS) {
    snprintf(state.why_not, sizeof state.why_not, "zeInit failed: %s", zt_ze_result_name(r));
    goto fail;
  }
  uint32_t num_drivers = 0;
  if (s->zeDriverGet(&num_drivers, NULL) != ZE_RESULT_SUCCESS || !num_drivers) {
    snprintf(state.why_not, sizeof state.why_not, "no Level Zero driver");
    goto fail;
  }
  ze_driver_handle_t drivers[8];
  if (num_drivers > 8) num_drivers = 8;
  if (s->zeDriverGet(&num_drivers, drivers) != ZE_RESULT_SUCCESS) goto fail;
  for (uint32_t d = 0; d < num_drivers; ++d) {
    uint32_t n = 0;
    if (s->zeDeviceGet(drivers[d], &n, NULL) != ZE_RESULT_SUCCESS || !n) continue;
    ze_device_handle_t devs[ZT_ZE_MAX_DEVICES];
    if (n > ZT_ZE_MAX_DEVICES) n = ZT_ZE_MAX_DEVICES;
    if (s->zeDeviceGet(drivers[d], &n, devs) != ZE_RESULT_SUCCESS) continue;
    for (uint32_t i = 0; i < n && state.num_devices < ZT_ZE_MAX_DEVICES; ++i) {
      ze_device_properties_t p = {.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES};
      if (s->zeDeviceGetProperties(devs[i], &p) != ZE_RESULT_SUCCESS) continue;
      if (p.type != ZE_DEVICE_TYPE_GPU || p.vendorId != 0x8086) continue;
      int32_t k = state.num_devices++;
      state.drivers[k] = drivers[d];
      state.devices[k] = devs[i];
      state.device_ids[k] = p.deviceId;
      fill_info(k, drivers[d], devs[i], &p, &state.infos[k]);
      decide_compat(drivers[d], devs[i], p.deviceId, &state.infos[k]);
    }
  }
  state.available = true;
  return;
fail:
  // Keep the library loaded once zeInit may have run: the driver may have
  // registered handlers that point into it.
  state.num_devices = 0;
}

const zt_ze_state_t* zt_ze_state(void) {
  pthread_once(&state_once, initialize);
  return &state;
}
