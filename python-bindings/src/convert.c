// Conversions between Python objects and zetile's C types, with errors that
// say which argument was wrong and why.
#include <limits.h>
#include <string.h>

#include "zetile_py.h"

int zpy_type_error(const char* what, const char* expected, PyObject* got) {
  PyObject* name = PyObject_GetAttrString((PyObject*)Py_TYPE(got), "__name__");
  if (!name) return -1;
  PyErr_Format(PyExc_TypeError, "%s must be %s, not %S", what, expected, name);
  Py_DECREF(name);
  return -1;
}

int zpy_enum(PyObject* o, int count, const char* what, int* out) {
  if (!PyLong_Check(o)) {
    return zpy_type_error(what, "an int constant", o);
  }
  long v = PyLong_AsLong(o);
  if (v == -1 && PyErr_Occurred()) return -1;
  if (v < 0 || v >= count) {
    PyErr_Format(PyExc_ValueError, "%s %ld is out of range [0, %d)", what, v,
                 count);
    return -1;
  }
  *out = (int)v;
  return 0;
}

int zpy_int32(PyObject* o, const char* what, int32_t* out) {
  PyObject* idx = PyNumber_Index(o);
  if (!idx) {
    PyErr_Clear();
    return zpy_type_error(what, "an int", o);
  }
  long long v = PyLong_AsLongLong(idx);
  Py_DECREF(idx);
  if (v == -1 && PyErr_Occurred()) return -1;
  if (v < INT32_MIN || v > INT32_MAX) {
    PyErr_Format(PyExc_ValueError, "%s %lld does not fit in 32 bits", what, v);
    return -1;
  }
  *out = (int32_t)v;
  return 0;
}

int zpy_value(PyObject* o, const char* what, bool allow_none, zt_value_t* out) {
  if (o == Py_None) {
    if (allow_none) {
      *out = ZT_NO_VALUE;
      return 0;
    }
    PyErr_Format(PyExc_TypeError, "%s must be a value handle (int), not None",
                 what);
    return -1;
  }
  return zpy_int32(o, what, out);
}

int zpy_values(PyObject* seq, const char* what, zt_value_t** out, int32_t* n) {
  *out = NULL;
  *n = 0;
  if (seq == NULL || seq == Py_None) return 0;
  if (!PySequence_Check(seq) || PyUnicode_Check(seq)) {
    return zpy_type_error(what, "a sequence of value handles", seq);
  }
  Py_ssize_t len = PySequence_Size(seq);
  if (len < 0) return -1;
  if (len > INT32_MAX / 2) {
    PyErr_Format(PyExc_ValueError, "%s: too many values", what);
    return -1;
  }
  if (len == 0) return 0;
  zt_value_t* v = PyMem_Malloc((size_t)len * sizeof *v);
  if (!v) {
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < len; ++i) {
    PyObject* item = PySequence_GetItem(seq, i);
    int rc = item ? zpy_value(item, what, false, &v[i]) : -1;
    Py_XDECREF(item);
    if (rc < 0) {
      PyMem_Free(v);
      return -1;
    }
  }
  *out = v;
  *n = (int32_t)len;
  return 0;
}

PyObject* zpy_values_to_list(const zt_value_t* v, int32_t n) {
  PyObject* list = PyList_New(n);
  if (!list) return NULL;
  for (int32_t i = 0; i < n; ++i) {
    PyObject* item = PyLong_FromLong(v[i]);
    if (!item) {
      Py_DECREF(list);
      return NULL;
    }
    PyList_SetItem(list, i, item);  // steals item
  }
  return list;
}

int zpy_shape(PyObject* seq, const char* what, int32_t* rank,
              int64_t shape[ZT_MAX_RANK]) {
  memset(shape, 0, ZT_MAX_RANK * sizeof shape[0]);
  if (!PySequence_Check(seq) || PyUnicode_Check(seq)) {
    return zpy_type_error(what, "a sequence of ints", seq);
  }
  Py_ssize_t len = PySequence_Size(seq);
  if (len < 0) return -1;
  if (len > ZT_MAX_RANK) {
    PyErr_Format(PyExc_ValueError, "%s has rank %zd; zetile supports at most %d",
                 what, len, ZT_MAX_RANK);
    return -1;
  }
  for (Py_ssize_t i = 0; i < len; ++i) {
    PyObject* item = PySequence_GetItem(seq, i);
    if (!item) return -1;
    PyObject* idx = PyNumber_Index(item);
    Py_DECREF(item);
    if (!idx) {
      PyErr_Format(PyExc_TypeError, "%s[%zd] must be an int", what, i);
      return -1;
    }
    long long d = PyLong_AsLongLong(idx);
    Py_DECREF(idx);
    if (d == -1 && PyErr_Occurred()) return -1;
    if (d < 0) {
      PyErr_Format(PyExc_ValueError, "%s[%zd] is negative (%lld)", what, i, d);
      return -1;
    }
    shape[i] = d;
  }
  *rank = (int32_t)len;
  return 0;
}

int zpy_type_from_py(PyObject* o, const char* what, zt_type_t* out) {
  int kind, pointee = ZT_I8;
  int32_t rank = 0;
  int64_t shape[ZT_MAX_RANK] = {0};
  if (PyLong_Check(o)) {
    if (zpy_enum(o, ZT_SCALAR_KIND_COUNT, what, &kind) < 0) return -1;
  } else if (PyTuple_Check(o) &&
             (PyTuple_Size(o) == 2 || PyTuple_Size(o) == 3)) {
    if (zpy_enum(PyTuple_GetItem(o, 0), ZT_SCALAR_KIND_COUNT, what, &kind) < 0 ||
        zpy_enum(PyTuple_GetItem(o, 1), ZT_SCALAR_KIND_COUNT, what, &pointee) < 0)
      return -1;
    if (PyTuple_Size(o) == 3 &&
        zpy_shape(PyTuple_GetItem(o, 2), what, &rank, shape) < 0)
      return -1;
  } else {
    return zpy_type_error(
        what, "a type tuple (kind, pointee, shape) or a scalar kind", o);
  }
  if (kind == ZT_PTR && pointee == ZT_PTR) {
    PyErr_Format(PyExc_ValueError, "%s: pointers to pointers are not supported",
                 what);
    return -1;
  }
  zt_type_t t = kind == ZT_PTR ? zt_type_ptr((zt_scalar_kind_t)pointee)
                               : zt_type_scalar((zt_scalar_kind_t)kind);
  *out = rank ? zt_type_tensor(t, rank, shape) : t;
  return 0;
}

PyObject* zpy_type_to_py(zt_type_t t) {
  PyObject* shape = PyTuple_New(t.rank);
  if (!shape) return NULL;
  for (int32_t i = 0; i < t.rank; ++i) {
    PyObject* d = PyLong_FromLongLong(t.shape[i]);
    if (!d) {
      Py_DECREF(shape);
      return NULL;
    }
    PyTuple_SetItem(shape, i, d);
  }
  return Py_BuildValue("(iiN)", (int)t.kind, (int)t.pointee, shape);
}

// ---------------------------------------------------------------------------
// Byte spans

static PyObject* g_c_char;     // ctypes.c_char
static PyObject* g_addressof;  // ctypes.addressof

static int load_ctypes(void) {
  if (g_c_char) return 0;
  PyObject* ctypes = PyImport_ImportModule("ctypes");
  if (!ctypes) return -1;
  g_c_char = PyObject_GetAttrString(ctypes, "c_char");
  g_addressof = PyObject_GetAttrString(ctypes, "addressof");
  Py_DECREF(ctypes);
  if (!g_c_char || !g_addressof) {
    Py_CLEAR(g_c_char);
    Py_CLEAR(g_addressof);
    return -1;
  }
  return 0;
}

static int span_from_bytes(PyObject* bytes, zpy_span_t* out) {
  char* data;
  Py_ssize_t size;
  if (PyBytes_AsStringAndSize(bytes, &data, &size) < 0) return -1;
  out->data = data;
  out->size = size;
  out->keep = bytes;  // the caller's reference passes to the span
  return 0;
}

int zpy_span_get(PyObject* o, bool writable, const char* what, zpy_span_t* out) {
  memset(out, 0, sizeof *out);
  if (PyBytes_Check(o) && !writable) {
    Py_INCREF(o);
    return span_from_bytes(o, out);
  }
  PyObject* view = PyMemoryView_FromObject(o);
  if (!view) {
    PyErr_Clear();
    return zpy_type_error(what, "a bytes-like object", o);
  }
  PyObject* nbytes = PyObject_GetAttrString(view, "nbytes");
  Py_ssize_t size = nbytes ? PyLong_AsSsize_t(nbytes) : -1;
  Py_XDECREF(nbytes);
  if (size < 0) {
    Py_DECREF(view);
    return -1;
  }
  if (size == 0) {
    out->keep = view;
    return 0;
  }
  if (load_ctypes() < 0) {
    Py_DECREF(view);
    return -1;
  }
  // c_char.from_buffer keeps a memoryview of `view`: the export lasts as
  // long as the ctypes object, so the data can be used without the GIL.
  PyObject* cobj = PyObject_CallMethod(g_c_char, "from_buffer", "O", view);
  if (!cobj) {
    if (writable) {
      Py_DECREF(view);
      PyErr_Clear();
      return zpy_type_error(what,
                            "a writable C-contiguous bytes-like object "
                            "(bytearray, numpy array, memoryview)",
                            o);
    }
    // Read-only or strided: copy its bytes in C order.
    PyErr_Clear();
    PyObject* bytes = PyObject_CallMethod(view, "tobytes", NULL);
    Py_DECREF(view);
    if (!bytes) return -1;
    return span_from_bytes(bytes, out);
  }
  Py_DECREF(view);
  PyObject* addr = PyObject_CallFunctionObjArgs(g_addressof, cobj, NULL);
  void* p = addr ? PyLong_AsVoidPtr(addr) : NULL;
  Py_XDECREF(addr);
  if (!p) {
    Py_DECREF(cobj);
    if (!PyErr_Occurred())
      PyErr_SetString(PyExc_SystemError, "ctypes.addressof returned NULL");
    return -1;
  }
  out->data = p;
  out->size = size;
  out->keep = cobj;
  return 0;
}

void zpy_span_release(zpy_span_t* span) {
  Py_CLEAR(span->keep);
  span->data = NULL;
  span->size = 0;
}

// ---------------------------------------------------------------------------
// Object helpers

PyObject* zpy_alloc(PyTypeObject* type) {
  allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
  return alloc(type, 0);
}

void zpy_free(PyObject* self) {
  PyTypeObject* type = Py_TYPE(self);
  freefunc free_fn = (freefunc)PyType_GetSlot(type, Py_tp_free);
  free_fn(self);
  Py_DECREF(type);
}

int zpy_dict_set(PyObject* d, const char* key, PyObject* value) {
  if (!value) return -1;
  int rc = PyDict_SetItemString(d, key, value);
  Py_DECREF(value);
  return rc;
}
