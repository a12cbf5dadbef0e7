// libFuzzer: artifact blobs (what the cache stores) -> zt_artifact_deserialize,
// then what a load reads from them: the "meta" section through the kernel
// metadata parser and a "spirv" section through the structural SPIR-V check.
// A blob that parses must serialize back to the same bytes.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/kernel_meta.h"
#include "base/spirv_check.h"
#include "zetile/compiler.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  zt_artifact_t* a = NULL;
  zt_status_t s = zt_artifact_deserialize(data, size, &a);
  if (s) {
    zt_status_free(s);
    return 0;
  }
  void* blob = NULL;
  size_t n = 0;
  s = zt_artifact_serialize(a, &blob, &n);
  // Sections are unique after a load (a repeated name replaces the earlier
  // one), so only blobs without repeats must round-trip exactly.
  if (!s && n == size && memcmp(blob, data, n) != 0) abort();
  zt_status_free(s);
  free(blob);
  const void* text = NULL;
  size_t tn = 0;
  s = zt_artifact_get(a, "meta", &text, &tn);
  if (!s) {
    zt_kernel_meta_t* m = malloc(sizeof *m);
    if (m) {
      zt_status_free(zt_kernel_meta_parse(text, tn, m));
      free(m);
    }
  }
  zt_status_free(s);
  s = zt_artifact_get(a, "spirv", &text, &tn);
  if (!s) zt_status_free(zt_spirv_check(text, tn, "k"));
  zt_status_free(s);
  for (int32_t i = 0; i < zt_artifact_section_count(a); ++i)
    (void)zt_artifact_section_name(a, i);
  zt_artifact_release(a);
  return 0;
}
