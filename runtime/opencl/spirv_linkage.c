// Reads the LinkageAttributes decorations of a SPIR-V module: which functions
// a kernel imports (and so needs from the emulation library) and which the
// emulation library exports.
#include <stdlib.h>
#include <string.h>

#include "base/spirv_words.h"
#include "opencl/opencl.h"

#define SPV_OP_DECORATE 71u
#define SPV_DECORATION_LINKAGE_ATTRIBUTES 41u

zt_status_t zt_cl_spirv_linkage_names(const void* spirv, size_t size, int kind,
                                      zt_strbuf_t* sb) {
  zt_spirv_walk_t it;
  if (!zt_spirv_walk_begin(&it, spirv, size, UINT32_MAX))
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "not a SPIR-V module (%zu bytes)", size);
  size_t i;
  uint32_t op, count;
  while (zt_spirv_walk_next(&it, &i, &op, &count)) {
    // OpDecorate <target> LinkageAttributes "<name>" <Export|Import>
    if (op == SPV_OP_DECORATE && count >= 5 &&
        zt_spirv_word(&it, i + 2) == SPV_DECORATION_LINKAGE_ATTRIBUTES) {
      const char* name = (const char*)(it.bytes + 4 * (i + 3));
      size_t max = (count - 4) * 4;
      size_t len = strnlen(name, max);
      if (len < max && zt_spirv_word(&it, i + count - 1) == (uint32_t)kind &&
          strncmp(name, "__spirv_", 8) != 0) {
        zt_strbuf_append(sb, name, len);
        zt_strbuf_append(sb, "\n", 1);
      }
    }
  }
  if (it.cut)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "SPIR-V instruction %zu is cut", it.at);
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

// Whether the module turns a Workgroup (local memory) pointer into an
// integer narrower than 64 bits (OpConvertPtrToU, or its OpSpecConstantOp
// form on a module-scope variable). Intel GPUs address SLM with 32 bits, so
// upstream's XeGPU lowering does that; Intel's CPU runtime gives local
// memory 64-bit host addresses, and the truncated pointer faults.
bool zt_cl_spirv_narrows_local_pointers(const void* spirv, size_t size) {
  enum { OP_TYPE_INT = 21, OP_TYPE_POINTER = 32, OP_SPEC_CONSTANT_OP = 52, OP_VARIABLE = 59,
         OP_ACCESS_CHAIN = 65, OP_IN_BOUNDS_ACCESS_CHAIN = 66, OP_PTR_ACCESS_CHAIN = 67,
         OP_IN_BOUNDS_PTR_ACCESS_CHAIN = 70, OP_CONVERT_PTR_TO_U = 117,
         OP_CONVERT_U_TO_PTR = 120, OP_BITCAST = 124, SC_WORKGROUP = 4 };
  zt_spirv_walk_t it;
  if (!zt_spirv_walk_begin(&it, spirv, size, 1u << 24)) return false;
  uint32_t bound = it.bound;
  // Per id: integer width (int types), 1 for Workgroup pointer types, and the
  // type of values we track.
  uint8_t* int_width = calloc(bound, 1);
  uint8_t* wg_ptr_type = calloc(bound, 1);
  uint32_t* type_of = calloc(bound, sizeof *type_of);
  bool found = false;
  if (!int_width || !wg_ptr_type || !type_of) goto done;
  size_t i;
  uint32_t op, count, a[4] = {0};
  while (!found && zt_spirv_walk_next(&it, &i, &op, &count)) {
    // The first operand words (those the cases below read; 0 past the end).
    for (uint32_t k = 0; k < 4; ++k) a[k] = k + 1 < count ? zt_spirv_word(&it, i + 1 + k) : 0;
    switch (op) {
      case OP_TYPE_INT:
        if (count >= 3 && a[0] < bound) int_width[a[0]] = (uint8_t)(a[1] > 255 ? 255 : a[1]);
        break;
      case OP_TYPE_POINTER:
        if (count >= 4 && a[0] < bound && a[1] == SC_WORKGROUP) wg_ptr_type[a[0]] = 1;
        break;
      case OP_VARIABLE:
      case OP_ACCESS_CHAIN:
      case OP_IN_BOUNDS_ACCESS_CHAIN:
      case OP_PTR_ACCESS_CHAIN:
      case OP_IN_BOUNDS_PTR_ACCESS_CHAIN:
      case OP_CONVERT_U_TO_PTR:
      case OP_BITCAST:
        if (count >= 3 && a[1] < bound) type_of[a[1]] = a[0];
        break;
      case OP_CONVERT_PTR_TO_U:  // result type, result, pointer
        if (count >= 4 && a[0] < bound && a[2] < bound && type_of[a[2]] < bound &&
            wg_ptr_type[type_of[a[2]]] && int_width[a[0]] && int_width[a[0]] < 64)
          found = true;
        break;
      case OP_SPEC_CONSTANT_OP:  // result type, result, opcode, operands
        if (count >= 5 && a[2] == OP_CONVERT_PTR_TO_U && a[0] < bound && a[3] < bound &&
            type_of[a[3]] < bound && wg_ptr_type[type_of[a[3]]] && int_width[a[0]] &&
            int_width[a[0]] < 64)
          found = true;
        break;
      default:
        break;
    }
  }
done:
  free(int_width);
  free(wg_ptr_type);
  free(type_of);
  return found;
}
