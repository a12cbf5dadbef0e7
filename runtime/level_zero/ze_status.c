#include "level_zero/ze_status.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define ZT_ZE_RESULTS(X)                         \
  X(ZE_RESULT_SUCCESS)                           \
  X(ZE_RESULT_NOT_READY)                         \
  X(ZE_RESULT_ERROR_DEVICE_LOST)                 \
  X(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY)          \
  X(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)        \
  X(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE)        \
  X(ZE_RESULT_ERROR_MODULE_LINK_FAILURE)         \
  X(ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET)       \
  X(ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE)   \
  X(ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS)    \
  X(ZE_RESULT_ERROR_NOT_AVAILABLE)               \
  X(ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE)      \
  X(ZE_RESULT_ERROR_UNINITIALIZED)               \
  X(ZE_RESULT_ERROR_UNSUPPORTED_VERSION)         \
  X(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE)         \
  X(ZE_RESULT_ERROR_INVALID_ARGUMENT)            \
  X(ZE_RESULT_ERROR_INVALID_NULL_HANDLE)         \
  X(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE)        \
  X(ZE_RESULT_ERROR_INVALID_NULL_POINTER)        \
  X(ZE_RESULT_ERROR_INVALID_SIZE)                \
  X(ZE_RESULT_ERROR_UNSUPPORTED_SIZE)            \
  X(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT)       \
  X(ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT) \
  X(ZE_RESULT_ERROR_INVALID_ENUMERATION)         \
  X(ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION)     \
  X(ZE_RESULT_ERROR_UNSUPPORTED_IMAGE_FORMAT)    \
  X(ZE_RESULT_ERROR_INVALID_NATIVE_BINARY)       \
  X(ZE_RESULT_ERROR_INVALID_GLOBAL_NAME)         \
  X(ZE_RESULT_ERROR_INVALID_KERNEL_NAME)         \
  X(ZE_RESULT_ERROR_INVALID_FUNCTION_NAME)       \
  X(ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION) \
  X(ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION) \
  X(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX) \
  X(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE) \
  X(ZE_RESULT_ERROR_INVALID_KERNEL_ATTRIBUTE_VALUE) \
  X(ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED)     \
  X(ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE)   \
  X(ZE_RESULT_ERROR_OVERLAPPING_REGIONS)         \
  X(ZE_RESULT_ERROR_UNKNOWN)

const char* zt_ze_result_name(ze_result_t r) {
  switch (r) {
#define ZT_X_(name) \
  case name:        \
    return #name;
    ZT_ZE_RESULTS(ZT_X_)
#undef ZT_X_
    default:
      return "ZE_RESULT_(unknown)";
  }
}

// ZETILE_ZE_INJECT_DEVICE_LOST=<call>: that Level Zero call reports
// ZE_RESULT_ERROR_DEVICE_LOST after it ran (fault injection for the tests of
// the device-lost path, which no driver here produces on request).
static bool inject_lost(const char* call) {
  const char* v = getenv("ZETILE_ZE_INJECT_DEVICE_LOST");
  return v && *v && strcmp(v, call) == 0;
}

zt_status_t zt_ze_make_status(ze_result_t r, const char* call) {
  if (r == ZE_RESULT_SUCCESS && inject_lost(call)) r = ZE_RESULT_ERROR_DEVICE_LOST;
  if (r == ZE_RESULT_SUCCESS) return NULL;
  zt_status_code_t code = ZT_STATUS_DRIVER_ERROR;
  switch (r) {
    case ZE_RESULT_ERROR_DEVICE_LOST:
      code = ZT_STATUS_DEVICE_LOST;
      break;
    case ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY:
    case ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY:
      code = ZT_STATUS_OUT_OF_MEMORY;
      break;
    case ZE_RESULT_ERROR_UNSUPPORTED_VERSION:
    case ZE_RESULT_ERROR_UNSUPPORTED_FEATURE:
    case ZE_RESULT_ERROR_UNSUPPORTED_SIZE:
    case ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT:
    case ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION:
    case ZE_RESULT_ERROR_UNSUPPORTED_IMAGE_FORMAT:
      code = ZT_STATUS_UNSUPPORTED;
      break;
    default:
      break;
  }
  if ((unsigned)r > 0xffff)
    return zt_make_status(code, "%s failed: %s (0x%x)", call, zt_ze_result_name(r),
                          (unsigned)r);
  return zt_make_status(code, "%s failed: %s (%d)", call, zt_ze_result_name(r), (int)r);
}
