// Internals of the OpenCL backend shared by its files.
//
// Two sources of devices, each loaded once per process:
//  - "opencl:cpu": Intel's OpenCL CPU runtime (libintelocl.so from PyPI's
//    intel-opencl-rt), opened directly with dlopen: it exports the whole
//    OpenCL API, so neither the system ICD list nor the loader's environment
//    (OCL_ICD_VENDORS / OCL_ICD_FILENAMES) is touched. It runs zetile's pvc
//    SPIR-V with the GPU-only builtins linked from emu/ (zt_cl_emu_*).
//  - "opencl:gpu", "opencl:gpu1", ...: Intel GPUs through the ICD loader
//    (libOpenCL.so.1) and Intel's OpenCL driver, only when an Intel render
//    node exists or ZETILE_OPENCL_GPU=1 (NEO's ICD is not trusted without a
//    GPU), and only devices that take SPIR-V and subgroups of 16.
#ifndef ZETILE_RUNTIME_OPENCL_OPENCL_H_
#define ZETILE_RUNTIME_OPENCL_OPENCL_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "opencl/cl_status.h"

#define ZT_CL_MAX_DEVICES 16

typedef struct zt_cl_library_s {
  zt_cl_syms_t syms;
  bool loaded;
  char path[512];     // what was opened
  char why_not[512];  // when not loaded: the reason
} zt_cl_library_t;

typedef struct zt_cl_device_entry_s {
  const zt_cl_library_t* lib;
  cl_platform_id platform;
  cl_device_id device;
  zt_cl_usm_t usm;
  bool emulate;  // link zetile's emulation library (emu/) into programs
  zt_device_info_t info;
} zt_cl_device_entry_t;

typedef struct zt_cl_state_s {
  zt_cl_library_t cpu_lib;  // Intel's CPU runtime
  zt_cl_library_t gpu_lib;  // the ICD loader (GPUs)
  int32_t num_devices;
  zt_cl_device_entry_t devices[ZT_CL_MAX_DEVICES];
  char why_no_cpu[512];
  char why_no_gpu[512];
} zt_cl_state_t;

/// Loads the libraries and lists devices on first call. Never fails; an
/// absent runtime gives no device (why_no_cpu says why for opencl:cpu).
const zt_cl_state_t* zt_cl_state(void);

/// The emulation library for Intel GPU-only builtins (emu/*.cl compiled to
/// SPIR-V at build time by clang-22); size 0 when it was not built.
extern const unsigned char zt_cl_emu_spv[];
extern const unsigned long zt_cl_emu_spv_size;  // cmake/embed_file.cmake

/// Names a SPIR-V module declares with LinkageAttributes of the given kind
/// (0 = Export, 1 = Import), '\n'-separated into sb (appends). Names of
/// SPIR-V builtin variables (__spirv_*) are skipped.
zt_status_t zt_cl_spirv_linkage_names(const void* spirv, size_t size, int kind,
                                      zt_strbuf_t* sb);
/// Whether the module converts Workgroup pointers to integers narrower than
/// 64 bits (valid for Intel GPUs' 32-bit SLM addresses, a crash on Intel's
/// CPU runtime, whose local memory has 64-bit addresses).
bool zt_cl_spirv_narrows_local_pointers(const void* spirv, size_t size);
/// For Intel's CPU runtime only: a copy of the module with each OpFNegate
/// that a work-group barrier separates from its first use in the same block
/// moved down to just before that use (the runtime keeps such a negation
/// once per work-group: spirv_fneg_sink.c). NULL and *moved = 0 when none
/// moves; else malloc'd, size unchanged, *moved = how many moved.
void* zt_cl_spirv_sink_fneg(const void* spirv, size_t size, size_t* moved);
/// Whether `name` is a line of the '\n'-separated list.
bool zt_cl_name_in_list(const char* list, const char* name, size_t name_len);

#endif  // ZETILE_RUNTIME_OPENCL_OPENCL_H_
