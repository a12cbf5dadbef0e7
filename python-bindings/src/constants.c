// Module constants generated from builder.h's X-macros: one int per enum
// member (I32, BINARY_ADDF, CMP_SLT, ...) and a dict per enum for
// introspection (SCALAR_KINDS = {"I32": 3, ...}).
#include "zetile_py.h"

static int add_const(PyObject* m, PyObject* dict, const char* prefix,
                     const char* name, long value) {
  char full[64];
  snprintf(full, sizeof full, "%s%s", prefix, name);
  if (PyModule_AddIntConstant(m, full, value) < 0) return -1;
  return zpy_dict_set(dict, name, PyLong_FromLong(value));
}

static int add_dict(PyObject* m, const char* name, PyObject* dict) {
  if (!dict) return -1;
  if (PyModule_AddObject(m, name, dict) < 0) {
    Py_DECREF(dict);
    return -1;
  }
  return 0;
}

static int add_fact(PyObject* bits, PyObject* spell, int kind, int nbits,
                    const char* spelling) {
  PyObject* key = PyLong_FromLong(kind);
  PyObject* nb = PyLong_FromLong(nbits);
  PyObject* sp = PyUnicode_FromString(spelling);
  int rc = key && nb && sp && PyDict_SetItem(bits, key, nb) == 0 &&
                   PyDict_SetItem(spell, key, sp) == 0
               ? 0
               : -1;
  Py_XDECREF(key);
  Py_XDECREF(nb);
  Py_XDECREF(sp);
  return rc;
}

#define ZPY_BEGIN(dict_name)          \
  do {                                \
    PyObject* d_ = PyDict_New();      \
    if (!d_) return -1;               \
    const char* dname_ = dict_name;
#define ZPY_END()                                        \
    if (add_dict(m, dname_, d_) < 0) return -1;          \
  } while (0)
#define ZPY_ADD(prefix, name, value)                                   \
  if (add_const(m, d_, prefix, name, (long)(value)) < 0) {             \
    Py_DECREF(d_);                                                     \
    return -1;                                                         \
  }

int zpy_constants_init(PyObject* m) {
  ZPY_BEGIN("SCALAR_KINDS");
#define ZT_X_(name, spelling, bits) ZPY_ADD("", #name, ZT_##name)
  ZT_SCALAR_KINDS(ZT_X_)
#undef ZT_X_
  ZPY_END();

  ZPY_BEGIN("BINARY_OPS");
#define ZT_X_(name, op) ZPY_ADD("BINARY_", #name, ZT_BINARY_##name)
  ZT_BINARY_OPS(ZT_X_)
#undef ZT_X_
  ZPY_END();

  ZPY_BEGIN("UNARY_OPS");
#define ZT_X_(name, op, fonly) ZPY_ADD("UNARY_", #name, ZT_UNARY_##name)
  ZT_UNARY_OPS(ZT_X_)
#undef ZT_X_
  ZPY_END();

  ZPY_BEGIN("CMP_PREDICATES");
#define ZT_X_(name, op, pred) ZPY_ADD("CMP_", #name, ZT_CMP_##name)
  ZT_CMP_PREDICATES(ZT_X_)
#undef ZT_X_
  ZPY_END();

  ZPY_BEGIN("CAST_OPS");
#define ZT_X_(name, op) ZPY_ADD("CAST_", #name, ZT_CAST_##name)
  ZT_CAST_OPS(ZT_X_)
#undef ZT_X_
  ZPY_END();

  // zt_reduce_kind_t has no X-macro; keep this list in step with builder.h.
  ZPY_BEGIN("REDUCE_KINDS");
  ZPY_ADD("REDUCE_", "ADD", ZT_REDUCE_ADD)
  ZPY_ADD("REDUCE_", "MUL", ZT_REDUCE_MUL)
  ZPY_ADD("REDUCE_", "MAX", ZT_REDUCE_MAX)
  ZPY_ADD("REDUCE_", "MIN", ZT_REDUCE_MIN)
  ZPY_ADD("REDUCE_", "MAXNUM", ZT_REDUCE_MAXNUM)
  ZPY_ADD("REDUCE_", "MINNUM", ZT_REDUCE_MINNUM)
  ZPY_ADD("REDUCE_", "UMAX", ZT_REDUCE_UMAX)
  ZPY_ADD("REDUCE_", "UMIN", ZT_REDUCE_UMIN)
  ZPY_ADD("REDUCE_", "AND", ZT_REDUCE_AND)
  ZPY_ADD("REDUCE_", "OR", ZT_REDUCE_OR)
  ZPY_ADD("REDUCE_", "XOR", ZT_REDUCE_XOR)
  ZPY_END();

  ZPY_BEGIN("ATOMIC_KINDS");
#define ZT_X_(name, sp) ZPY_ADD("ATOMIC_", #name, ZT_ATOMIC_##name)
  ZT_ATOMIC_KINDS(ZT_X_)
#undef ZT_X_
  ZPY_END();

  ZPY_BEGIN("PADDINGS");
  ZPY_ADD("PADDING_", "ZERO", ZT_PADDING_ZERO)
  ZPY_ADD("PADDING_", "NAN", ZT_PADDING_NAN)
  ZPY_END();

  // Per-kind facts the front end needs for promotion rules and messages.
  PyObject* bits = PyDict_New();
  PyObject* spell = PyDict_New();
  int rc = bits && spell ? 0 : -1;
#define ZT_X_(name, spelling, nbits)                                     \
  if (rc == 0) rc = add_fact(bits, spell, ZT_##name, nbits, spelling);
  ZT_SCALAR_KINDS(ZT_X_)
#undef ZT_X_
  if (rc < 0) {
    Py_XDECREF(bits);
    Py_XDECREF(spell);
    return -1;
  }
  if (add_dict(m, "SCALAR_KIND_BITS", bits) < 0) {
    Py_DECREF(spell);
    return -1;
  }
  if (add_dict(m, "SCALAR_KIND_SPELLINGS", spell) < 0) return -1;

  if (PyModule_AddIntConstant(m, "MAX_RANK", ZT_MAX_RANK) < 0 ||
      PyModule_AddIntConstant(m, "NO_VALUE", ZT_NO_VALUE) < 0)
    return -1;
  return 0;
}
