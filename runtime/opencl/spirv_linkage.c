// Reads the LinkageAttributes decorations of a SPIR-V module: which functions
// a kernel imports (and so needs from the emulation library) and which the
// emulation library exports.
#include <string.h>

#include "opencl/opencl.h"

#define SPV_MAGIC 0x07230203u
#define SPV_OP_DECORATE 71u
#define SPV_DECORATION_LINKAGE_ATTRIBUTES 41u

zt_status_t zt_cl_spirv_linkage_names(const void* spirv, size_t size, int kind,
                                      zt_strbuf_t* sb) {
  if (size % 4 || size < 20)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "SPIR-V of %zu bytes is malformed", size);
  const uint32_t* w = spirv;
  size_t n = size / 4;
  if (w[0] != SPV_MAGIC)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "not SPIR-V (magic 0x%08x)", w[0]);
  for (size_t i = 5; i < n;) {
    uint32_t count = w[i] >> 16, op = w[i] & 0xffff;
    if (count == 0 || i + count > n)
      return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "SPIR-V instruction %zu is cut", i);
    // OpDecorate <target> LinkageAttributes "<name>" <Export|Import>
    if (op == SPV_OP_DECORATE && count >= 5 && w[i + 2] == SPV_DECORATION_LINKAGE_ATTRIBUTES) {
      const char* name = (const char*)&w[i + 3];
      size_t max = (count - 4) * 4;
      size_t len = strnlen(name, max);
      if (len < max && w[i + count - 1] == (uint32_t)kind &&
          strncmp(name, "__spirv_", 8) != 0) {
        zt_strbuf_append(sb, name, len);
        zt_strbuf_append(sb, "\n", 1);
      }
    }
    i += count;
  }
  return sb->failed ? zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "linkage names") : NULL;
}

bool zt_cl_name_in_list(const char* list, const char* name, size_t len) {
  for (const char* p = list; p && *p;) {
    const char* nl = strchr(p, '\n');
    size_t l = nl ? (size_t)(nl - p) : strlen(p);
    if (l == len && memcmp(p, name, len) == 0) return true;
    p = nl ? nl + 1 : p + l;
  }
  return false;
}
