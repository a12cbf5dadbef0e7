// OpenCL results as zetile statuses: every cl_int goes through ZT_CL_STATUS,
// which names the call and the error.
#ifndef ZETILE_RUNTIME_OPENCL_CL_STATUS_H_
#define ZETILE_RUNTIME_OPENCL_CL_STATUS_H_

#include "opencl/cl_symbols.h"
#include "zetile/status.h"

/// "CL_BUILD_PROGRAM_FAILURE" etc.; static storage.
const char* zt_cl_error_name(cl_int err);
/// NULL for CL_SUCCESS, else a status naming `call` and the error.
zt_status_t zt_cl_make_status(cl_int err, const char* call);

/// Calls syms->fn(...) and converts its result.
#define ZT_CL_STATUS(syms, fn, ...) zt_cl_make_status((syms)->fn(__VA_ARGS__), #fn)

#endif  // ZETILE_RUNTIME_OPENCL_CL_STATUS_H_
