// A growing array of operations, the shape every "collect the ops a walk
// finds, then rewrite them" pass shares (rewriting during the walk would
// invalidate it).
#include <stdlib.h>

#include "lowering.h"

bool zt_op_list_push(MlirOperation** ops, size_t* n, size_t* cap, MlirOperation op) {
  if (*n == *cap) {
    size_t c = *cap ? 2 * *cap : 16;
    MlirOperation* grown = realloc(*ops, c * sizeof *grown);
    if (!grown) return false;
    *ops = grown;
    *cap = c;
  }
  (*ops)[(*n)++] = op;
  return true;
}
