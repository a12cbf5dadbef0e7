// tile.hint ops (Triton's tl.multiple_of / max_contiguous / max_constancy)
// become facts on the hinted value's producer, before any lowering: the op
// is the identity, so lowerings never see it, and analyses that follow def
// chains (lowering/xe/xe_axis.c) find the fact where they look anyway.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>

#include "lowering.h"

static bool is_hint(MlirOperation op) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  return n.length == 9 && memcmp(n.data, "tile.hint", 9) == 0;
}

typedef struct hints_s {
  MlirOperation* ops;
  size_t n, cap;
} hints_t;

static MlirWalkResult collect(MlirOperation op, void* user) {
  hints_t* h = user;
  if (!is_hint(op)) return MlirWalkResultAdvance;
  if (h->n == h->cap) {
    size_t cap = h->cap ? 2 * h->cap : 16;
    MlirOperation* g = realloc(h->ops, cap * sizeof *g);
    if (!g) return MlirWalkResultInterrupt;
    h->ops = g;
    h->cap = cap;
  }
  h->ops[h->n++] = op;
  return MlirWalkResultAdvance;
}

// zt.<hint> on the producer: per dimension the larger of an existing fact
// and the new one (both are claims about the same value).
static void attach(MlirOperation producer, MlirStringRef hint, MlirAttribute values) {
  char name[40];
  snprintf(name, sizeof name, "zt.%.*s", (int)hint.length, hint.data);
  MlirStringRef key = mlirStringRefCreateFromCString(name);
  MlirAttribute old = mlirOperationGetAttributeByName(producer, key);
  intptr_t n = mlirDenseArrayGetNumElements(values);
  if (!mlirAttributeIsNull(old) && mlirAttributeIsADenseI64Array(old) &&
      mlirDenseArrayGetNumElements(old) == n && n <= 8) {
    int64_t merged[8];
    for (intptr_t i = 0; i < n; ++i) {
      int64_t a = mlirDenseI64ArrayGetElement(old, i), b = mlirDenseI64ArrayGetElement(values, i);
      merged[i] = a > b ? a : b;
    }
    values = mlirDenseI64ArrayGet(mlirAttributeGetContext(values), n, merged);
  }
  mlirOperationSetAttributeByName(producer, key, values);
}

zt_status_t zt_fold_hints(MlirOperation kernel) {
  hints_t h = {0};
  mlirOperationWalk(kernel, collect, &h, MlirWalkPostOrder);
  for (size_t i = 0; i < h.n; ++i) {
    MlirOperation op = h.ops[i];
    MlirValue src = mlirOperationGetOperand(op, 0), res = mlirOperationGetResult(op, 0);
    MlirAttribute kind = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("hint"));
    MlirAttribute values =
        mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("values"));
    // A block argument (a kernel parameter, a loop-carried value) has no
    // producer to hold the fact: the hint is dropped.
    if (mlirValueIsAOpResult(src) && !mlirAttributeIsNull(kind) && mlirAttributeIsAString(kind) &&
        !mlirAttributeIsNull(values) && mlirAttributeIsADenseI64Array(values))
      attach(mlirOpResultGetOwner(src), mlirStringAttrGetValue(kind), values);
    mlirValueReplaceAllUsesOfWith(res, src);
    mlirOperationRemoveFromParent(op);
    mlirOperationDestroy(op);
  }
  free(h.ops);
  return NULL;
}
