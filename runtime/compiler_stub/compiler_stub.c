// Stand-in for jit/compiler_loader.c, built into libzetile only while that
// file does not exist, so that the runtime links and its tests run before
// the compiler lands. Every call reports that no compiler is available.
#include "compiler_api.h"

static zt_status_t unavailable(void) {
  return zt_make_status(ZT_STATUS_UNAVAILABLE,
                        "libzetile was built without a compiler loader");
}

zt_status_t zt_compiler_load(const zt_compiler_api_t** out_api) {
  *out_api = NULL;
  return unavailable();
}

zt_status_t zt_compile(const char* tile_ir, size_t size,
                       const zt_compile_options_t* options,
                       zt_artifact_t** out_artifact) {
  *out_artifact = NULL;
  return unavailable();
}

const char* zt_compiler_version(void) { return "none"; }

zt_status_t zt_compiler_available(void) { return unavailable(); }
