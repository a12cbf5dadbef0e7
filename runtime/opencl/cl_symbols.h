// The OpenCL entry points zetile uses, as one X-macro table. The library is
// opened with dlopen (Intel's CPU runtime directly, or the ICD loader for
// GPUs), so libzetile loads, and simply lists no opencl devices, without it.
//   REQUIRED(name): the backend is unavailable without it.
//   OPTIONAL(name): may be NULL; check before calling.
// Extension entry points (USM) are looked up per platform, see zt_cl_usm_t.
#ifndef ZETILE_RUNTIME_OPENCL_CL_SYMBOLS_H_
#define ZETILE_RUNTIME_OPENCL_CL_SYMBOLS_H_

#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <CL/cl_ext.h>

#define ZT_CL_SYMBOLS(REQUIRED, OPTIONAL)      \
  REQUIRED(clGetPlatformIDs)                   \
  REQUIRED(clGetPlatformInfo)                  \
  REQUIRED(clGetDeviceIDs)                     \
  REQUIRED(clGetDeviceInfo)                    \
  REQUIRED(clCreateContext)                    \
  REQUIRED(clReleaseContext)                   \
  REQUIRED(clCreateCommandQueueWithProperties) \
  REQUIRED(clReleaseCommandQueue)              \
  REQUIRED(clCreateProgramWithIL)              \
  REQUIRED(clBuildProgram)                     \
  REQUIRED(clCompileProgram)                   \
  REQUIRED(clLinkProgram)                      \
  REQUIRED(clGetProgramBuildInfo)              \
  REQUIRED(clReleaseProgram)                   \
  REQUIRED(clCreateKernel)                     \
  REQUIRED(clReleaseKernel)                    \
  REQUIRED(clSetKernelArg)                     \
  REQUIRED(clGetKernelInfo)                    \
  REQUIRED(clGetKernelWorkGroupInfo)           \
  REQUIRED(clEnqueueNDRangeKernel)             \
  REQUIRED(clFinish)                           \
  REQUIRED(clGetExtensionFunctionAddressForPlatform) \
  OPTIONAL(clGetKernelSubGroupInfo)

typedef struct zt_cl_syms_s {
  void* library;
#define ZT_CL_FIELD_(name) __typeof__(name)* name;
  ZT_CL_SYMBOLS(ZT_CL_FIELD_, ZT_CL_FIELD_)
#undef ZT_CL_FIELD_
} zt_cl_syms_t;

/// cl_intel_unified_shared_memory, per platform.
typedef struct zt_cl_usm_s {
  clHostMemAllocINTEL_fn host_alloc;
  clDeviceMemAllocINTEL_fn device_alloc;
  clMemBlockingFreeINTEL_fn blocking_free;
  clEnqueueMemcpyINTEL_fn memcpy;
} zt_cl_usm_t;

#endif  // ZETILE_RUNTIME_OPENCL_CL_SYMBOLS_H_
