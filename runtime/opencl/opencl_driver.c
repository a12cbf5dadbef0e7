// Loading OpenCL libraries and listing the devices zetile can use. Runs once
// per process.
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opencl/opencl.h"
#include "xe_detect.h"

static zt_cl_state_t state;
static pthread_once_t state_once = PTHREAD_ONCE_INIT;

#define CPU_RUNTIME_LIB "libintelocl.so"

static bool file_exists(const char* p) { return access(p, R_OK) == 0; }

static bool env_is(const char* name, const char* value) {
  const char* v = getenv(name);
  return v && strcmp(v, value) == 0;
}

// Opens `path` and resolves the symbol table; on failure fills why_not.
static bool load_library(zt_cl_library_t* lib, const char* path) {
  zt_cl_syms_t* s = &lib->syms;
  snprintf(lib->path, sizeof lib->path, "%s", path);
  s->library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!s->library) {
    snprintf(lib->why_not, sizeof lib->why_not, "cannot load %s: %s", path, dlerror());
    return false;
  }
#define ZT_REQUIRED_(name)                                                         \
  s->name = (__typeof__(name)*)dlsym(s->library, #name);                           \
  if (!s->name) {                                                                  \
    snprintf(lib->why_not, sizeof lib->why_not, "%s lacks %s", path, #name);      \
    dlclose(s->library);                                                           \
    s->library = NULL;                                                             \
    return false;                                                                  \
  }
#define ZT_OPTIONAL_(name) s->name = (__typeof__(name)*)dlsym(s->library, #name);
  ZT_CL_SYMBOLS(ZT_REQUIRED_, ZT_OPTIONAL_)
#undef ZT_REQUIRED_
#undef ZT_OPTIONAL_
  lib->loaded = true;
  return true;
}

// Where pip puts Intel's CPU runtime: <venv>/lib/libintelocl.so. Looked for
// in $ZETILE_OPENCL_CPU_RUNTIME (a file), $VIRTUAL_ENV/lib, and beside every
// folder above libzetile.so (<dir>/.venv/lib or <dir>/lib), which covers the
// in-place package (python-bindings/zetile), build folders and a package
// installed into a venv's site-packages; then the dynamic linker's path
// (e.g. after oneAPI's setvars.sh).
static bool find_cpu_runtime(char* out, size_t cap, char* tried, size_t tried_cap) {
  const char* env = getenv("ZETILE_OPENCL_CPU_RUNTIME");
  if (env && env[0]) {
    snprintf(out, cap, "%s", env);
    return true;
  }
  size_t used = 0;
  tried[0] = 0;
#define TRY_(path)                                                                   \
  do {                                                                               \
    if (file_exists(path)) {                                                         \
      snprintf(out, cap, "%s", path);                                                \
      return true;                                                                   \
    }                                                                                \
    if (used < tried_cap)                                                            \
      used += (size_t)snprintf(tried + used, tried_cap - used, "%s%s", used ? ", " : "", path); \
  } while (0)
  char p[PATH_MAX + 64];
  const char* venv = getenv("VIRTUAL_ENV");
  if (venv && venv[0]) {
    snprintf(p, sizeof p, "%s/lib/%s", venv, CPU_RUNTIME_LIB);
    TRY_(p);
  }
  Dl_info info;
  char dir[PATH_MAX];
  if (dladdr((void*)&zt_cl_state, &info) && info.dli_fname && realpath(info.dli_fname, dir)) {
    for (char* slash = strrchr(dir, '/'); slash && slash != dir; slash = strrchr(dir, '/')) {
      *slash = 0;
      snprintf(p, sizeof p, "%s/.venv/lib/%s", dir, CPU_RUNTIME_LIB);
      TRY_(p);
      snprintf(p, sizeof p, "%s/lib/%s", dir, CPU_RUNTIME_LIB);
      TRY_(p);
    }
  }
#undef TRY_
  snprintf(out, cap, "%s", CPU_RUNTIME_LIB);  // LD_LIBRARY_PATH, ld.so.cache
  return true;
}

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

static bool has_subgroup_size_16(const zt_cl_syms_t* s, cl_device_id dev) {
  size_t sizes[32], n = 0;
  if (s->clGetDeviceInfo(dev, CL_DEVICE_SUB_GROUP_SIZES_INTEL, sizeof sizes, sizes, &n) !=
      CL_SUCCESS)
    return false;
  for (size_t i = 0; i < n / sizeof(size_t); ++i)
    if (sizes[i] == 16) return true;
  return false;
}

// The target row of an Intel GPU from what the OpenCL driver reports
// (runtime/xe_detect.c): cl_intel_device_attribute_query's PCI id, IP
// version and DP4A/DPAS flags where the driver has them, subgroup sizes.
static const char* gpu_target(const zt_cl_syms_t* s, cl_device_id dev, const char* name,
                              char* why, size_t why_cap) {
  zt_xe_props_t xp = {.name = name, .dp4a = -1, .xmx = -1};
  cl_uint v = 0;
  if (s->clGetDeviceInfo(dev, CL_DEVICE_ID_INTEL, sizeof v, &v, NULL) == CL_SUCCESS)
    xp.device_id = v;
  if (s->clGetDeviceInfo(dev, CL_DEVICE_IP_VERSION_INTEL, sizeof v, &v, NULL) == CL_SUCCESS)
    xp.ip_version = v;
  cl_device_feature_capabilities_intel f = 0;
  if (s->clGetDeviceInfo(dev, CL_DEVICE_FEATURE_CAPABILITIES_INTEL, sizeof f, &f, NULL) ==
      CL_SUCCESS) {
    xp.dp4a = (f & CL_DEVICE_FEATURE_FLAG_DP4A_INTEL) != 0;
    xp.xmx = (f & CL_DEVICE_FEATURE_FLAG_DPAS_INTEL) != 0;
  }
  size_t sizes[32], n = 0;
  if (s->clGetDeviceInfo(dev, CL_DEVICE_SUB_GROUP_SIZES_INTEL, sizeof sizes, sizes, &n) ==
      CL_SUCCESS)
    for (size_t i = 0; i < n / sizeof(size_t) && i < 7; ++i) xp.subgroup_sizes[i] = (int)sizes[i];
  return zt_xe_detect(&xp, why, why_cap);
}

static bool takes_spirv(const zt_cl_syms_t* s, cl_device_id dev) {
  char il[256] = {0};
  return s->clGetDeviceInfo(dev, CL_DEVICE_IL_VERSION, sizeof il - 1, il, NULL) == CL_SUCCESS &&
         strstr(il, "SPIR-V") != NULL;
}

static void fill_info(const zt_cl_syms_t* s, cl_device_id dev, const char* name,
                      const char* target, const char* suffix, zt_device_info_t* info) {
  memset(info, 0, sizeof *info);
  snprintf(info->name, sizeof info->name, "%s", name);
  snprintf(info->backend, sizeof info->backend, "opencl");
  char dn[200] = {0};
  s->clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof dn - 1, dn, NULL);
  snprintf(info->description, sizeof info->description, "%s%s", dn, suffix);
  snprintf(info->target, sizeof info->target, "%s", target);
  s->clGetDeviceInfo(dev, CL_DRIVER_VERSION, sizeof info->driver_version - 1,
                     info->driver_version, NULL);
  cl_uint cu = 0;
  if (s->clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cu, &cu, NULL) == CL_SUCCESS)
    info->compute_units = (int32_t)cu;
  cl_ulong mem = 0;
  if (s->clGetDeviceInfo(dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL) == CL_SUCCESS)
    info->memory_bytes = mem;
}

static bool load_usm(const zt_cl_syms_t* s, cl_platform_id p, zt_cl_usm_t* usm) {
#define GET_(field, fn) usm->field = (fn##_fn)s->clGetExtensionFunctionAddressForPlatform(p, #fn)
  GET_(host_alloc, clHostMemAllocINTEL);
  GET_(device_alloc, clDeviceMemAllocINTEL);
  GET_(blocking_free, clMemBlockingFreeINTEL);
  GET_(memcpy, clEnqueueMemcpyINTEL);
#undef GET_
  return usm->host_alloc && usm->device_alloc && usm->blocking_free && usm->memcpy;
}

// Intel's CPU runtime: one CPU device that runs pvc SPIR-V with emulated
// GPU-only builtins.
static void add_cpu_device(void) {
  zt_cl_library_t* lib = &state.cpu_lib;
  char path[PATH_MAX], tried[1024];
  find_cpu_runtime(path, sizeof path, tried, sizeof tried);
  if (!load_library(lib, path)) {
    snprintf(state.why_no_cpu, sizeof state.why_no_cpu,
             "Intel's OpenCL CPU runtime (pip package intel-opencl-rt) not found: %s%s%s",
             lib->why_not, tried[0] ? "; looked in " : "", tried);
    return;
  }
  const zt_cl_syms_t* s = &lib->syms;
  cl_platform_id plats[8];
  cl_uint np = 0;
  cl_int err = s->clGetPlatformIDs(8, plats, &np);
  if (err != CL_SUCCESS || np == 0) {
    snprintf(state.why_no_cpu, sizeof state.why_no_cpu, "%s: clGetPlatformIDs gave %s, %u platforms",
             path, zt_cl_error_name(err), np);
    return;
  }
  if (np > 8) np = 8;
  for (cl_uint p = 0; p < np && state.num_devices < ZT_CL_MAX_DEVICES; ++p) {
    cl_device_id dev;
    cl_uint nd = 0;
    if (s->clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_CPU, 1, &dev, &nd) != CL_SUCCESS || !nd)
      continue;
    zt_cl_device_entry_t* e = &state.devices[state.num_devices];
    memset(e, 0, sizeof *e);
    if (!takes_spirv(s, dev)) {
      snprintf(state.why_no_cpu, sizeof state.why_no_cpu, "%s: the CPU device takes no SPIR-V", path);
      continue;
    }
    if (!has_subgroup_size_16(s, dev)) {
      snprintf(state.why_no_cpu, sizeof state.why_no_cpu,
               "%s: the CPU device has no subgroup size 16", path);
      continue;
    }
    if (!load_usm(s, plats[p], &e->usm)) {
      snprintf(state.why_no_cpu, sizeof state.why_no_cpu,
               "%s: no cl_intel_unified_shared_memory entry points", path);
      continue;
    }
    e->lib = lib;
    e->platform = plats[p];
    e->device = dev;
    e->emulate = true;
    const char* target = getenv("ZETILE_OPENCL_TARGET");
    fill_info(s, dev, "opencl:cpu", target && target[0] ? target : "pvc",
              " (Intel OpenCL CPU runtime)", &e->info);
    snprintf(e->info.target_why, sizeof e->info.target_why,
             "runs a GPU target's SPIR-V on the CPU: %s%s",
             target && target[0] ? "ZETILE_OPENCL_TARGET=" : "pvc unless ZETILE_OPENCL_TARGET says",
             target && target[0] ? target : "");
    e->info.host_memory = true;  // USM host allocations; kernels read any host address
    // ZETILE_COMPAT=1 runs the compat path's SPIR-V (no 2D block IO) here too.
    e->info.compat = env_is("ZETILE_COMPAT", "1");
    ++state.num_devices;
    return;
  }
}

// Intel GPUs through the ICD loader. NEO's ICD without a GPU is not trusted
// (its Level Zero side segfaults at init), so only with a render node or an
// explicit ZETILE_OPENCL_GPU=1.
static void add_gpu_devices(void) {
  char* why = state.why_no_gpu;
  const size_t cap = sizeof state.why_no_gpu;
  if (env_is("ZETILE_OPENCL_GPU", "0")) {
    snprintf(why, cap, "disabled by ZETILE_OPENCL_GPU=0");
    return;
  }
  if (!env_is("ZETILE_OPENCL_GPU", "1") && !intel_render_node_present()) {
    snprintf(why, cap, "no Intel render node (ZETILE_OPENCL_GPU=1 probes anyway)");
    return;
  }
  zt_cl_library_t* lib = &state.gpu_lib;
  const char* loader = getenv("ZETILE_OPENCL_LOADER");
  if (!load_library(lib, loader && loader[0] ? loader : "libOpenCL.so.1")) {
    snprintf(why, cap, "%s", lib->why_not);
    return;
  }
  const zt_cl_syms_t* s = &lib->syms;
  cl_platform_id plats[16];
  cl_uint np = 0;
  cl_int perr = s->clGetPlatformIDs(16, plats, &np);
  snprintf(why, cap, "no Intel GPU taking SPIR-V with subgroups of 16 and USM (%s: %u platform%s, %s)",
           lib->path, np, np == 1 ? "" : "s", zt_cl_error_name(perr));
  if (perr != CL_SUCCESS) return;
  if (np > 16) np = 16;
  int gpus = 0;
  for (cl_uint p = 0; p < np; ++p) {
    cl_device_id devs[8];
    cl_uint nd = 0;
    if (s->clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_GPU, 8, devs, &nd) != CL_SUCCESS) continue;
    if (nd > 8) nd = 8;
    for (cl_uint i = 0; i < nd && state.num_devices < ZT_CL_MAX_DEVICES; ++i) {
      cl_uint vendor = 0;
      if (s->clGetDeviceInfo(devs[i], CL_DEVICE_VENDOR_ID, sizeof vendor, &vendor, NULL) !=
              CL_SUCCESS ||
          vendor != 0x8086 || !takes_spirv(s, devs[i]) || !has_subgroup_size_16(s, devs[i]))
        continue;
      zt_cl_device_entry_t* e = &state.devices[state.num_devices];
      memset(e, 0, sizeof *e);
      if (!load_usm(s, plats[p], &e->usm)) continue;
      e->lib = lib;
      e->platform = plats[p];
      e->device = devs[i];
      e->emulate = env_is("ZETILE_OPENCL_EMULATE", "1");
      char name[32], dn[200] = {0};
      if (gpus == 0) snprintf(name, sizeof name, "opencl:gpu");
      else snprintf(name, sizeof name, "opencl:gpu%d", gpus);
      s->clGetDeviceInfo(devs[i], CL_DEVICE_NAME, sizeof dn - 1, dn, NULL);
      const char* forced = getenv("ZETILE_OPENCL_TARGET");
      char why[192];
      const char* t = gpu_target(s, devs[i], dn, why, sizeof why);
      fill_info(s, devs[i], name, forced && forced[0] ? forced : t, "", &e->info);
      if (forced && forced[0])
        snprintf(e->info.target_why, sizeof e->info.target_why, "ZETILE_OPENCL_TARGET=%s", forced);
      else
        snprintf(e->info.target_why, sizeof e->info.target_why, "%s", why);
      e->info.host_memory = false;
      const char* compat = getenv("ZETILE_COMPAT");
      e->info.compat = compat && compat[0] ? strcmp(compat, "0") != 0
                                           : strcmp(e->info.target, "dg2") == 0;
      ++gpus;
      ++state.num_devices;
    }
  }
}

#if defined(__SANITIZE_ADDRESS__)
#define ZT_CL_SANITIZER_BUILD 1
#else
#define ZT_CL_SANITIZER_BUILD 0
#endif

static void initialize(void) {
  if (env_is("ZETILE_OPENCL", "0")) {
    snprintf(state.why_no_cpu, sizeof state.why_no_cpu, "disabled by ZETILE_OPENCL=0");
    return;
  }
  // Intel's runtimes are closed binaries with their own allocators and
  // threads: in a sanitizer build they are loaded only on request, so that
  // listing devices in every test does not pull them in.
  if (ZT_CL_SANITIZER_BUILD && !env_is("ZETILE_OPENCL", "1")) {
    snprintf(state.why_no_cpu, sizeof state.why_no_cpu,
             "sanitizer build: set ZETILE_OPENCL=1 to load OpenCL runtimes");
    return;
  }
  add_cpu_device();
  add_gpu_devices();
  // Libraries stay loaded for the life of the process: runtimes start
  // threads and register handlers that point into them.
}

const zt_cl_state_t* zt_cl_state(void) {
  pthread_once(&state_once, initialize);
  return &state;
}
