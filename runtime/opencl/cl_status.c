#include "opencl/cl_status.h"

#define ZT_CL_ERRORS(X)                        \
  X(CL_SUCCESS)                                \
  X(CL_DEVICE_NOT_FOUND)                       \
  X(CL_DEVICE_NOT_AVAILABLE)                   \
  X(CL_COMPILER_NOT_AVAILABLE)                 \
  X(CL_MEM_OBJECT_ALLOCATION_FAILURE)          \
  X(CL_OUT_OF_RESOURCES)                       \
  X(CL_OUT_OF_HOST_MEMORY)                     \
  X(CL_BUILD_PROGRAM_FAILURE)                  \
  X(CL_INVALID_VALUE)                          \
  X(CL_INVALID_DEVICE)                         \
  X(CL_INVALID_PLATFORM)                       \
  X(CL_INVALID_CONTEXT)                        \
  X(CL_INVALID_COMMAND_QUEUE)                  \
  X(CL_INVALID_BINARY)                         \
  X(CL_INVALID_BUILD_OPTIONS)                  \
  X(CL_INVALID_PROGRAM)                        \
  X(CL_INVALID_PROGRAM_EXECUTABLE)             \
  X(CL_INVALID_KERNEL_NAME)                    \
  X(CL_INVALID_KERNEL_DEFINITION)              \
  X(CL_INVALID_KERNEL)                         \
  X(CL_INVALID_ARG_INDEX)                      \
  X(CL_INVALID_ARG_VALUE)                      \
  X(CL_INVALID_ARG_SIZE)                       \
  X(CL_INVALID_KERNEL_ARGS)                    \
  X(CL_INVALID_WORK_DIMENSION)                 \
  X(CL_INVALID_WORK_GROUP_SIZE)                \
  X(CL_INVALID_WORK_ITEM_SIZE)                 \
  X(CL_INVALID_GLOBAL_OFFSET)                  \
  X(CL_INVALID_OPERATION)                      \
  X(CL_INVALID_BUFFER_SIZE)                    \
  X(CL_INVALID_GLOBAL_WORK_SIZE)               \
  X(CL_INVALID_PROPERTY)                       \
  X(CL_INVALID_COMPILER_OPTIONS)               \
  X(CL_INVALID_LINKER_OPTIONS)                 \
  X(CL_COMPILE_PROGRAM_FAILURE)                \
  X(CL_LINKER_NOT_AVAILABLE)                   \
  X(CL_LINK_PROGRAM_FAILURE)                   \
  X(CL_PLATFORM_NOT_FOUND_KHR)

const char* zt_cl_error_name(cl_int err) {
  switch (err) {
#define ZT_X_(name) \
  case name:        \
    return #name;
    ZT_CL_ERRORS(ZT_X_)
#undef ZT_X_
    default:
      return "CL_(unknown)";
  }
}

zt_status_t zt_cl_make_status(cl_int err, const char* call) {
  if (err == CL_SUCCESS) return NULL;
  zt_status_code_t code = ZT_STATUS_DRIVER_ERROR;
  switch (err) {
    case CL_OUT_OF_HOST_MEMORY:
    case CL_OUT_OF_RESOURCES:
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
      code = ZT_STATUS_OUT_OF_MEMORY;
      break;
    case CL_BUILD_PROGRAM_FAILURE:
    case CL_COMPILE_PROGRAM_FAILURE:
    case CL_LINK_PROGRAM_FAILURE:
      code = ZT_STATUS_COMPILE_ERROR;
      break;
    default:
      break;
  }
  return zt_make_status(code, "%s failed: %s (%d)", call, zt_cl_error_name(err), (int)err);
}
