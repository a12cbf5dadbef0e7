// zetile.Error and one subclass per status code, generated from the same
// X-macro as the codes themselves (ZT_STATUS_CODES), so a new code gets an
// exception class without touching this file.
#include <ctype.h>
#include <string.h>

#include "zetile_py.h"

static PyObject* g_error;  // zetile.Error
static PyObject* g_by_code[ZT_STATUS_CODE_COUNT];

// INVALID_ARGUMENT -> InvalidArgumentError; COMPILE_ERROR -> CompileError.
// IO_ERROR becomes IOFailure so that `from zetile._zetile import *` never
// shadows the builtin IOError (an alias of OSError).
static void class_name(const char* code_name, char* out, size_t cap) {
  if (strcmp(code_name, "IO_ERROR") == 0) {
    snprintf(out, cap, "IOFailure");
    return;
  }
  size_t j = 0;
  bool upper = true;
  for (const char* p = code_name; *p && j + 1 < cap; ++p) {
    if (*p == '_') {
      upper = true;
      continue;
    }
    out[j++] = upper ? (char)toupper((unsigned char)*p)
                     : (char)tolower((unsigned char)*p);
    upper = false;
  }
  out[j] = 0;
  if (j < 5 || strcmp(out + j - 5, "Error") != 0)
    snprintf(out + j, cap - j, "Error");
}

static int add_class(PyObject* m, PyObject* codes, zt_status_code_t code,
                     const char* name, const char* desc) {
  char cls[64], qual[96], doc[160];
  class_name(name, cls, sizeof cls);
  snprintf(qual, sizeof qual, "zetile._zetile.%s", cls);
  snprintf(doc, sizeof doc, "zetile status %s (%d): %s.", name, (int)code, desc);
  PyObject* type = PyErr_NewExceptionWithDoc(qual, doc, g_error, NULL);
  if (!type) return -1;
  PyObject* value = PyLong_FromLong(code);
  if (!value || PyObject_SetAttrString(type, "code", value) < 0 ||
      PyDict_SetItemString(codes, name, value) < 0) {
    Py_XDECREF(value);
    Py_DECREF(type);
    return -1;
  }
  Py_DECREF(value);
  g_by_code[code] = type;  // the module keeps a second reference
  Py_INCREF(type);
  return PyModule_AddObject(m, cls, type) < 0 ? (Py_DECREF(type), -1) : 0;
}

int zpy_errors_init(PyObject* m) {
  g_error = PyErr_NewExceptionWithDoc(
      "zetile._zetile.Error",
      "Base of every error zetile reports; `.code` is the status code.",
      PyExc_Exception, NULL);
  if (!g_error) return -1;
  if (PyObject_SetAttrString(g_error, "code", Py_None) < 0) return -1;
  Py_INCREF(g_error);
  if (PyModule_AddObject(m, "Error", g_error) < 0) {
    Py_DECREF(g_error);
    return -1;
  }
  PyObject* codes = PyDict_New();
  if (!codes) return -1;
#define ZT_X_(name, value, desc)                                        \
  if (value != ZT_STATUS_OK &&                                          \
      add_class(m, codes, ZT_STATUS_##name, #name, desc) < 0) {         \
    Py_DECREF(codes);                                                   \
    return -1;                                                          \
  }
  ZT_STATUS_CODES(ZT_X_)
#undef ZT_X_
  if (PyModule_AddObject(m, "STATUS_CODES", codes) < 0) {
    Py_DECREF(codes);
    return -1;
  }
  return 0;
}

PyObject* zpy_raise(zt_status_t status) {
  zt_status_code_t code = zt_status_code(status);
  PyObject* type = (code > 0 && code < ZT_STATUS_CODE_COUNT && g_by_code[code])
                       ? g_by_code[code]
                       : g_error;
  const char* msg = zt_status_message(status);
  if (!msg || !*msg) msg = zt_status_code_name(code);
  PyObject* text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace");
  zt_status_free(status);
  if (!text) return NULL;
  PyErr_SetObject(type, text);
  Py_DECREF(text);
  return NULL;
}

int zpy_raise_int(zt_status_t status) {
  zpy_raise(status);
  return -1;
}
