// A structural check of SPIR-V modules before they reach a driver. Intel's
// compiler (IGC 1.0.12504, Debian 12) calls exit(1) on some malformed
// modules (a wrong magic number, an id beyond the bound), which would kill
// the process that loads zetile: reject what we can recognise cheaply.
#ifndef ZETILE_BASE_SPIRV_CHECK_H_
#define ZETILE_BASE_SPIRV_CHECK_H_

#include <stddef.h>

#include "zetile/status.h"

/// Checks the header, the instruction stream (word counts within the
/// module) and that an OpEntryPoint named `kernel` exists (skipped when
/// kernel is NULL). Not a validator: a dangling id still reaches IGC.
/// INVALID_ARGUMENT with a description when the module is malformed.
zt_status_t zt_spirv_check(const void* data, size_t size, const char* kernel);

#endif  // ZETILE_BASE_SPIRV_CHECK_H_
