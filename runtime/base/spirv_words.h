// Walking a SPIR-V module's instruction stream word by word: the header
// check and the word-count stepping that every reader of raw SPIR-V in the
// runtime needs (the structural check before a driver sees a module, the
// OpenCL backend's linkage and local-pointer scans, its fneg rewrite).
// Readers that need operand kinds use SPIRV-Tools' parser instead
// (lowering/common/spirv_check.c).
#ifndef ZETILE_BASE_SPIRV_WORDS_H_
#define ZETILE_BASE_SPIRV_WORDS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ZT_SPIRV_MAGIC 0x07230203u
#define ZT_SPIRV_HEADER_WORDS 5u

typedef struct zt_spirv_walk_t {
  const uint8_t* bytes;  // the module; read through memcpy, so any alignment
  size_t n;              // its size in words
  size_t at;             // the next instruction's first word
  uint32_t bound;        // the header's id bound
  bool cut;              // the walk stopped at an instruction running past the end
} zt_spirv_walk_t;

/// Word i of the module being walked.
static inline uint32_t zt_spirv_word(const zt_spirv_walk_t* it, size_t i) {
  uint32_t w;
  memcpy(&w, it->bytes + 4 * i, 4);
  return w;
}

/// Starts a walk after the header. False when data is not a whole module:
/// a size that is no multiple of 4 or shorter than the header, a wrong magic
/// number, or an id bound of 0 or above max_bound (a bound that large is a
/// corrupt header, and per-id tables of the readers would be huge).
static inline bool zt_spirv_walk_begin(zt_spirv_walk_t* it, const void* data, size_t size,
                                       uint32_t max_bound) {
  *it = (zt_spirv_walk_t){data, size / 4, ZT_SPIRV_HEADER_WORDS, 0, false};
  if (!data || size % 4 || size < 4 * ZT_SPIRV_HEADER_WORDS) return false;
  it->bound = zt_spirv_word(it, 3);
  return zt_spirv_word(it, 0) == ZT_SPIRV_MAGIC && it->bound != 0 && it->bound <= max_bound;
}

/// The next instruction: the index of its first word (*first), its opcode
/// and word count. False at the end of the module, and also, with it->cut
/// set, at an instruction whose word count is 0 or runs past the end.
static inline bool zt_spirv_walk_next(zt_spirv_walk_t* it, size_t* first, uint32_t* op,
                                      uint32_t* count) {
  if (it->at >= it->n) return false;
  uint32_t w = zt_spirv_word(it, it->at);
  *op = w & 0xffffu;
  *count = w >> 16;
  if (*count == 0 || it->at + *count > it->n) {
    it->cut = true;
    return false;
  }
  *first = it->at;
  it->at += *count;
  return true;
}

#endif  // ZETILE_BASE_SPIRV_WORDS_H_
