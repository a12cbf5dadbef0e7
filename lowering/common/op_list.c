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

typedef struct {
  bool (*want)(MlirOperation);
  MlirOperation* ops;
  size_t n, cap;
  bool oom;
} collect_t;

static MlirWalkResult collect_cb(MlirOperation op, void* user) {
  collect_t* c = user;
  if (!c->want(op)) return MlirWalkResultAdvance;
  if (!zt_op_list_push(&c->ops, &c->n, &c->cap, op)) {
    c->oom = true;
    return MlirWalkResultInterrupt;
  }
  return MlirWalkResultAdvance;
}

bool zt_op_list_collect(MlirOperation root, bool (*want)(MlirOperation), MlirOperation** ops,
                        size_t* n) {
  collect_t c = {.want = want};
  mlirOperationWalk(root, collect_cb, &c, MlirWalkPreOrder);
  if (c.oom) {
    free(c.ops);
    c.ops = NULL;
    c.n = 0;
  }
  *ops = c.ops;
  *n = c.n;
  return !c.oom;
}
