// In-process SPIR-V validation (SPIRV-Tools' C API, the library behind
// spirv-val): every module the Xe and DG2 lowerings emit is validated before
// it becomes an artifact.
//
// Why: LLVM 22's SPIR-V backend, run inside a long-lived process, now and
// then emits a module with a result id defined twice from the very same
// LLVM input (the same gpu.module gives 1 bad module in ~10 compiles in one
// Python process; never in 20 fresh mlir-opt-22 runs). Intel's compiler
// then aborts (ocloc: SIGABRT) or, worse, a driver could accept it. A bad
// module is caught here and emitted again.
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lowering.h"

#include <stdatomic.h>

static atomic_int g_emissions;
// Set once an emission came out invalid after others: later ones skip the
// in-process attempt (stale state makes more and more modules invalid).
static atomic_bool g_stale;

int zt_spirv_emission_count(void) { return atomic_fetch_add(&g_emissions, 1); }
bool zt_spirv_backend_stale(void) { return atomic_load(&g_stale); }
void zt_spirv_backend_set_stale(void) { atomic_store(&g_stale, true); }

#if defined(ZT_HAVE_SPIRV_TOOLS)
#include <spirv-tools/libspirv.h>

bool zt_spirv_validator_available(void) { return true; }

zt_status_t zt_spirv_validate(const void* data, size_t size) {
  if (size % 4 != 0)
    return zt_make_status(ZT_STATUS_INTERNAL, "SPIR-V of %zu bytes (not whole words)", size);
  spv_context ctx = spvContextCreate(SPV_ENV_UNIVERSAL_1_6);  // spirv-val's default
  if (!ctx) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "SPIR-V validator context");
  spv_const_binary_t bin = {(const uint32_t*)data, size / 4};
  spv_diagnostic diag = NULL;
  // Friendly names (%float_1 for %42 in diagnostics) cost a pass over the
  // module that builds a name for every id: ~1/4 of validation, ~1.5% of a
  // pvc softmax compile (callgrind; issue 22). Valid or not does not depend
  // on them, so validate without, and only when the module is invalid
  // validate again with them for a readable message.
  spv_validator_options opts = spvValidatorOptionsCreate();
  spv_result_t r = SPV_ERROR_OUT_OF_MEMORY;
  if (opts) {
    spvValidatorOptionsSetFriendlyNames(opts, false);
    r = spvValidateWithOptions(ctx, opts, &bin, &diag);
    spvValidatorOptionsDestroy(opts);
  }
  if (r != SPV_SUCCESS) {
    spvDiagnosticDestroy(diag);
    diag = NULL;
    r = spvValidate(ctx, &bin, &diag);
  }
  zt_status_t s = NULL;
  if (r != SPV_SUCCESS)
    s = zt_make_status(ZT_STATUS_INTERNAL, "invalid SPIR-V (SPIRV-Tools): %s",
                       diag && diag->error ? diag->error : "no diagnostic");
  spvDiagnosticDestroy(diag);
  spvContextDestroy(ctx);
  return s;
}
#else
bool zt_spirv_validator_available(void) { return false; }

zt_status_t zt_spirv_validate(const void* data, size_t size) {
  (void)data;
  (void)size;
  return NULL;
}
#endif
