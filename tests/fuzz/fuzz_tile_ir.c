// libFuzzer: tile IR text -> zt_compile for the CPU target (and pvc/dg2
// when ZT_FUZZ_TARGET names them). Parse, verification and lowering errors
// are statuses; a crash or hang is a bug. The compiler is the shared
// libzetile_compiler (not instrumented: libFuzzer guides by the harness and
// the runtime library only; the corpus in tests/fuzz/corpus/tile_ir seeds
// real kernels).
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zetile/compiler.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 16384) return 0;
  const char* target = getenv("ZT_FUZZ_TARGET");
  zt_compile_options_t o = {.target = target && target[0] ? target : "cpu"};
  zt_artifact_t* a = NULL;
  zt_status_t s = zt_compile((const char*)data, size, &o, &a);
  zt_status_free(s);
  zt_artifact_release(a);
  return 0;
}
