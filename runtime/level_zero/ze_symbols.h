// The Level Zero entry points zetile uses, as one X-macro table: the loader
// (libze_loader.so.1) is opened with dlopen so that libzetile loads, and
// simply lists no level_zero devices, on machines without it.
//   REQUIRED(name): the backend is unavailable without it.
//   OPTIONAL(name): may be NULL (newer spec versions); check before calling.
#ifndef ZETILE_RUNTIME_LEVEL_ZERO_ZE_SYMBOLS_H_
#define ZETILE_RUNTIME_LEVEL_ZERO_ZE_SYMBOLS_H_

#include <level_zero/ze_api.h>

#define ZT_ZE_SYMBOLS(REQUIRED, OPTIONAL)       \
  REQUIRED(zeInit)                              \
  REQUIRED(zeDriverGet)                         \
  REQUIRED(zeDriverGetProperties)               \
  REQUIRED(zeDeviceGet)                         \
  REQUIRED(zeDeviceGetProperties)               \
  REQUIRED(zeDeviceGetMemoryProperties)         \
  REQUIRED(zeDeviceGetCommandQueueGroupProperties) \
  REQUIRED(zeContextCreate)                     \
  REQUIRED(zeContextDestroy)                    \
  REQUIRED(zeCommandListCreateImmediate)        \
  REQUIRED(zeCommandListDestroy)                \
  REQUIRED(zeCommandListAppendMemoryCopy)       \
  REQUIRED(zeCommandListAppendLaunchKernel)     \
  REQUIRED(zeMemAllocDevice)                    \
  REQUIRED(zeMemFree)                           \
  REQUIRED(zeModuleCreate)                      \
  REQUIRED(zeModuleDestroy)                     \
  REQUIRED(zeModuleBuildLogGetString)           \
  REQUIRED(zeModuleBuildLogDestroy)             \
  REQUIRED(zeModuleGetNativeBinary)             \
  REQUIRED(zeKernelCreate)                      \
  REQUIRED(zeKernelDestroy)                     \
  REQUIRED(zeKernelSetGroupSize)                \
  REQUIRED(zeKernelSetArgumentValue)            \
  REQUIRED(zeKernelGetProperties)               \
  REQUIRED(zeCommandListAppendBarrier)          \
  REQUIRED(zeEventPoolCreate)                   \
  REQUIRED(zeEventPoolDestroy)                  \
  REQUIRED(zeEventCreate)                       \
  REQUIRED(zeEventDestroy)                      \
  REQUIRED(zeEventHostSynchronize)              \
  REQUIRED(zeEventHostReset)                    \
  OPTIONAL(zeDriverGetApiVersion)               \
  OPTIONAL(zeDeviceGetComputeProperties)        \
  OPTIONAL(zeDeviceGetModuleProperties)         \
  OPTIONAL(zeEventQueryKernelTimestamp)         \
  OPTIONAL(zeCommandListAppendQueryKernelTimestamps) \
  OPTIONAL(zeMemAllocHost)

typedef struct zt_ze_syms_s {
  void* library;
#define ZT_ZE_FIELD_(name) __typeof__(name)* name;
  ZT_ZE_SYMBOLS(ZT_ZE_FIELD_, ZT_ZE_FIELD_)
#undef ZT_ZE_FIELD_
} zt_ze_syms_t;

#endif  // ZETILE_RUNTIME_LEVEL_ZERO_ZE_SYMBOLS_H_
