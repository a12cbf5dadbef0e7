// Level Zero results as zetile statuses: every ze_result_t goes through
// ZT_ZE_STATUS, which names the call and the result.
#ifndef ZETILE_RUNTIME_LEVEL_ZERO_ZE_STATUS_H_
#define ZETILE_RUNTIME_LEVEL_ZERO_ZE_STATUS_H_

#include "level_zero/ze_symbols.h"
#include "zetile/status.h"

/// "ZE_RESULT_ERROR_MODULE_BUILD_FAILURE" etc.; static storage.
const char* zt_ze_result_name(ze_result_t result);
/// NULL for ZE_RESULT_SUCCESS, else a status naming `call` and the result.
zt_status_t zt_ze_make_status(ze_result_t result, const char* call);

/// Calls syms->fn(...) and converts its result.
#define ZT_ZE_STATUS(syms, fn, ...) zt_ze_make_status((syms)->fn(__VA_ARGS__), #fn)
#define ZT_ZE_RETURN_IF_ERROR(syms, fn, ...) \
  ZT_RETURN_IF_ERROR(ZT_ZE_STATUS(syms, fn, __VA_ARGS__))

#endif  // ZETILE_RUNTIME_LEVEL_ZERO_ZE_STATUS_H_
