#include "base/spirv_check.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define SPIRV_MAGIC 0x07230203u
#define OP_ENTRY_POINT 15

zt_status_t zt_spirv_check(const void* data, size_t size, const char* kernel) {
  if (!data || size < 20 || size % 4)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                          "SPIR-V: %zu bytes is not a whole module", size);
  const uint8_t* bytes = data;
  size_t n = size / 4;
  uint32_t w0;
  memcpy(&w0, bytes, 4);
  if (w0 != SPIRV_MAGIC)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                          "SPIR-V: bad magic number 0x%08x (expected 0x%08x)", w0,
                          SPIRV_MAGIC);
  uint32_t bound;
  memcpy(&bound, bytes + 12, 4);
  if (bound == 0 || bound > (1u << 22))
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "SPIR-V: bad id bound %u", bound);
  bool found = kernel == NULL;
  for (size_t i = 5; i < n;) {
    uint32_t w;
    memcpy(&w, bytes + 4 * i, 4);
    uint32_t wc = w >> 16, op = w & 0xffff;
    if (wc == 0 || i + wc > n)
      return zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                            "SPIR-V: instruction at word %zu (opcode %u) has a bad "
                            "word count %u",
                            i, op, wc);
    if (op == OP_ENTRY_POINT && wc >= 4 && !found) {
      // OpEntryPoint model id "name" interface...
      const char* name = (const char*)(bytes + 4 * (i + 3));
      size_t max = 4 * (size_t)(wc - 3);
      if (strnlen(name, max) == strlen(kernel) && strncmp(name, kernel, max) == 0)
        found = true;
    }
    i += wc;
  }
  if (!found)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                          "SPIR-V: no entry point named '%s'", kernel);
  return NULL;
}
