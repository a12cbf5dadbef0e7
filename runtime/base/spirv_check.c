#include "base/spirv_check.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "base/spirv_words.h"

#define OP_ENTRY_POINT 15
#define MAX_BOUND (1u << 22)

zt_status_t zt_spirv_check(const void* data, size_t size, const char* kernel) {
  zt_spirv_walk_t it;
  if (!zt_spirv_walk_begin(&it, data, size, MAX_BOUND)) {
    if (!data || size < 4 * ZT_SPIRV_HEADER_WORDS || size % 4)
      return zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                            "SPIR-V: %zu bytes is not a whole module", size);
    if (zt_spirv_word(&it, 0) != ZT_SPIRV_MAGIC)
      return zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                            "SPIR-V: bad magic number 0x%08x (expected 0x%08x)",
                            zt_spirv_word(&it, 0), ZT_SPIRV_MAGIC);
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "SPIR-V: bad id bound %u", it.bound);
  }
  bool found = kernel == NULL;
  size_t i;
  uint32_t op, wc;
  while (zt_spirv_walk_next(&it, &i, &op, &wc)) {
    if (op == OP_ENTRY_POINT && wc >= 4 && !found) {
      // OpEntryPoint model id "name" interface...
      const char* name = (const char*)(it.bytes + 4 * (i + 3));
      size_t max = 4 * (size_t)(wc - 3);
      if (strnlen(name, max) == strlen(kernel) && strncmp(name, kernel, max) == 0)
        found = true;
    }
  }
  if (it.cut) {
    uint32_t w = zt_spirv_word(&it, it.at);
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                          "SPIR-V: instruction at word %zu (opcode %u) has a bad "
                          "word count %u",
                          it.at, w & 0xffffu, w >> 16);
  }
  if (!found)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                          "SPIR-V: no entry point named '%s'", kernel);
  return NULL;
}
