// An E5-only rewrite: OpFNegate moved below a work-group barrier to its
// first use in the same block.
//
// Why: Intel's OpenCL CPU runtime keeps values that live across a barrier
// in per-work-item storage only when its barrier analysis (WIRelatedValue)
// calls them work-item related, and that analysis has no case for LLVM's
// UnaryOperator: an `fneg` stays "uniform" and is saved once per work-group,
// so every subgroup reads the last one's negation (session 17, issue 12;
// runtime/opencl/README.md has a reproducer). Intel GPUs are not affected
// (IGC handles fneg). Rewriting the negation as `-0.0 - x` or a sign-bit
// xor does not help: the runtime's LLVM folds both back into `fneg`. Moving
// the instruction down within its block changes no value (its operand is
// defined above it, its users stay below it), so E5 runs the same program.
// Not covered: an fneg used only in later blocks across a barrier there.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/spirv_words.h"
#include "opencl/opencl.h"

enum {
  OP_LABEL = 248, OP_FNEGATE = 127, OP_CONTROL_BARRIER = 224, OP_LOOP_MERGE = 246,
  OP_SELECTION_MERGE = 247,
  OP_BRANCH = 249, OP_BRANCH_CONDITIONAL = 250, OP_SWITCH = 251, OP_KILL = 252,
  OP_RETURN = 253, OP_RETURN_VALUE = 254, OP_UNREACHABLE = 255,
};

static bool ends_block(uint32_t op) {
  return op >= OP_BRANCH && op <= OP_UNREACHABLE;
}

// A merge instruction must stay right before its block's terminator, so
// the block's end counts from it.
static bool ends_block_at(uint32_t op) {
  return ends_block(op) || op == OP_LOOP_MERGE || op == OP_SELECTION_MERGE;
}

// Whether instruction words w[0..count) name id among their operands. Any
// word counts (literals too): a false hit only stops the move earlier,
// which is still below the definition and above every real use.
static bool mentions(const uint32_t* w, uint32_t count, uint32_t id) {
  for (uint32_t k = 1; k < count; ++k)
    if (w[k] == id) return true;
  return false;
}

void* zt_cl_spirv_sink_fneg(const void* spirv, size_t size, size_t* moved) {
  *moved = 0;
  zt_spirv_walk_t it;
  if (!zt_spirv_walk_begin(&it, spirv, size, UINT32_MAX)) return NULL;
  const uint32_t* w = spirv;  // an artifact section: its own allocation, so aligned
  size_t n = it.n;
  // Instruction starts; for a moved negation the index of the instruction
  // it moves before (else 0: index 0 is the first instruction, never a
  // target); per target the moved ones in order (head/next lists).
  size_t* at = malloc(n * sizeof *at);
  size_t* target = calloc(n, sizeof *target);
  size_t* head = malloc(n * sizeof *head);
  size_t* next = malloc(n * sizeof *next);
  size_t* tail = malloc(n * sizeof *tail);
  uint32_t* out = malloc(size);
  if (!at || !target || !head || !next || !tail || !out) goto fail;
  size_t ni = 0, first;
  uint32_t op0, count0;
  while (zt_spirv_walk_next(&it, &first, &op0, &count0)) at[ni++] = first;
  if (it.cut) goto fail;
  for (size_t a = 0; a < ni; ++a) head[a] = next[a] = tail[a] = SIZE_MAX;
  for (size_t a = 0; a < ni; ++a) {
    const uint32_t* fi = &w[at[a]];
    if ((fi[0] & 0xffff) != OP_FNEGATE || (fi[0] >> 16) != 4) continue;
    uint32_t id = fi[2];
    bool barrier = false;
    for (size_t b = a + 1; b < ni; ++b) {
      const uint32_t* u = &w[at[b]];
      uint32_t op = u[0] & 0xffff, count = u[0] >> 16;
      if (op == OP_LABEL) break;  // malformed: a block without terminator
      if (mentions(u, count, id) || ends_block_at(op)) {
        // Its first use, or the block's end (uses in later blocks): below
        // the barriers passed so far.
        if (barrier) {
          target[a] = b;
          if (head[b] == SIZE_MAX) head[b] = a;
          else next[tail[b]] = a;
          tail[b] = a;
          ++*moved;
        }
        break;
      }
      if (op == OP_CONTROL_BARRIER) barrier = true;
    }
  }
  if (*moved == 0) goto fail;
  memcpy(out, w, 5 * sizeof *w);
  size_t o = 5;
  for (size_t a = 0; a < ni; ++a) {
    for (size_t m = head[a]; m != SIZE_MAX; m = next[m]) {
      memcpy(&out[o], &w[at[m]], 4 * sizeof *w);
      o += 4;
    }
    if (target[a]) continue;
    uint32_t count = w[at[a]] >> 16;
    memcpy(&out[o], &w[at[a]], count * sizeof *w);
    o += count;
  }
  free(at);
  free(target);
  free(head);
  free(next);
  free(tail);
  return out;
fail:
  *moved = 0;
  free(at);
  free(target);
  free(head);
  free(next);
  free(tail);
  free(out);
  return NULL;
}
