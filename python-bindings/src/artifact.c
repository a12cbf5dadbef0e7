// zetile._zetile.Artifact: a compiled kernel's named byte sections
// (zt_artifact_t): "tile", "mlir", "llvm" or "spirv", and "meta".
#include "zetile_py.h"

typedef struct {
  PyObject_HEAD
  zt_artifact_t* a;
  PyObject* cache_hit;  // True/False from compile(cached=True), else None
} ArtifactObject;

PyTypeObject* zpy_artifact_type;

#define A(self) (((ArtifactObject*)(self))->a)

const zt_artifact_t* zpy_artifact_handle(PyObject* o) {
  int ok = PyObject_IsInstance(o, (PyObject*)zpy_artifact_type);
  if (ok < 0) return NULL;
  if (!ok) {
    zpy_type_error("artifact", "a zetile Artifact", o);
    return NULL;
  }
  return A(o);
}

PyObject* zpy_artifact_wrap(zt_artifact_t* a, PyObject* cache_hit) {
  ArtifactObject* self = (ArtifactObject*)zpy_alloc(zpy_artifact_type);
  if (!self) {
    zt_artifact_release(a);
    return NULL;
  }
  self->a = a;
  self->cache_hit = cache_hit ? cache_hit : Py_None;
  Py_INCREF(self->cache_hit);
  return (PyObject*)self;
}

static PyObject* artifact_new(PyTypeObject* type, PyObject* args, PyObject* kw) {
  if (PyTuple_Size(args) != 0 || (kw && PyDict_Size(kw) != 0)) {
    PyErr_SetString(PyExc_TypeError,
                    "Artifact() takes no arguments (use Artifact.deserialize "
                    "or compile)");
    return NULL;
  }
  zt_artifact_t* a;
  ZPY_TRY(zt_artifact_create(&a));
  ArtifactObject* self = (ArtifactObject*)zpy_alloc(type);
  if (!self) {
    zt_artifact_release(a);
    return NULL;
  }
  self->a = a;
  self->cache_hit = Py_None;
  Py_INCREF(Py_None);
  return (PyObject*)self;
}

static void artifact_dealloc(PyObject* self) {
  ArtifactObject* o = (ArtifactObject*)self;
  zt_artifact_release(o->a);
  Py_XDECREF(o->cache_hit);
  zpy_free(self);
}

static PyObject* section_bytes(const zt_artifact_t* a, const char* name) {
  const void* data;
  size_t size;
  ZPY_TRY(zt_artifact_get(a, name, &data, &size));
  return PyBytes_FromStringAndSize(data, (Py_ssize_t)size);
}

static PyObject* artifact_get(PyObject* self, PyObject* args) {
  const char* name;
  if (!PyArg_ParseTuple(args, "s:get", &name)) return NULL;
  return section_bytes(A(self), name);
}

static PyObject* artifact_set(PyObject* self, PyObject* args) {
  const char* name;
  PyObject* data_obj;
  if (!PyArg_ParseTuple(args, "sO:set", &name, &data_obj)) return NULL;
  zpy_span_t span;
  if (zpy_span_get(data_obj, false, "data", &span) < 0) return NULL;
  zt_status_t s = zt_artifact_set(A(self), name, span.data, (size_t)span.size);
  zpy_span_release(&span);
  if (s) return zpy_raise(s);
  Py_RETURN_NONE;
}

static PyObject* artifact_sections(PyObject* self, PyObject* unused) {
  PyObject* d = PyDict_New();
  if (!d) return NULL;
  int32_t n = zt_artifact_section_count(A(self));
  for (int32_t i = 0; i < n; ++i) {
    const char* name = zt_artifact_section_name(A(self), i);
    if (!name || zpy_dict_set(d, name, section_bytes(A(self), name)) < 0) {
      Py_DECREF(d);
      if (!PyErr_Occurred())
        PyErr_Format(PyExc_SystemError, "artifact section %d has no name", i);
      return NULL;
    }
  }
  return d;
}

static PyObject* artifact_serialize(PyObject* self, PyObject* unused) {
  void* data;
  size_t size;
  ZPY_TRY(zt_artifact_serialize(A(self), &data, &size));
  PyObject* r = PyBytes_FromStringAndSize(data, (Py_ssize_t)size);
  free(data);
  return r;
}

static PyObject* artifact_deserialize(PyObject* cls, PyObject* arg) {
  zpy_span_t span;
  if (zpy_span_get(arg, false, "data", &span) < 0) return NULL;
  zt_artifact_t* a;
  zt_status_t s = zt_artifact_deserialize(span.data, (size_t)span.size, &a);
  zpy_span_release(&span);
  if (s) return zpy_raise(s);
  return zpy_artifact_wrap(a, NULL);
}

static PyObject* artifact_meta(PyObject* self, void* unused) {
  const void* data;
  size_t size;
  zt_status_t s = zt_artifact_get(A(self), "meta", &data, &size);
  if (s && zt_status_code(s) == ZT_STATUS_NOT_FOUND) {
    zt_status_free(s);
    Py_RETURN_NONE;
  }
  if (s) return zpy_raise(s);
  return PyUnicode_DecodeUTF8(data, (Py_ssize_t)size, "replace");
}

static PyObject* artifact_cache_hit(PyObject* self, void* unused) {
  PyObject* v = ((ArtifactObject*)self)->cache_hit;
  Py_INCREF(v);
  return v;
}

static PyObject* artifact_repr(PyObject* self) {
  PyObject* names = PyList_New(0);
  if (!names) return NULL;
  int32_t n = zt_artifact_section_count(A(self));
  for (int32_t i = 0; i < n; ++i) {
    PyObject* s = PyUnicode_FromString(zt_artifact_section_name(A(self), i));
    if (!s || PyList_Append(names, s) < 0) {
      Py_XDECREF(s);
      Py_DECREF(names);
      return NULL;
    }
    Py_DECREF(s);
  }
  PyObject* r = PyUnicode_FromFormat("<zetile Artifact sections=%R>", names);
  Py_DECREF(names);
  return r;
}

static PyMethodDef artifact_methods[] = {
    {"get", artifact_get, METH_VARARGS,
     "get(name) -> bytes\nA section; NotFoundError if absent."},
    {"set", artifact_set, METH_VARARGS,
     "set(name, data)\nCopies bytes-like data into a section."},
    {"sections", artifact_sections, METH_NOARGS,
     "sections() -> dict[str, bytes]"},
    {"serialize", artifact_serialize, METH_NOARGS,
     "serialize() -> bytes\nOne self-checking blob."},
    {"deserialize", artifact_deserialize, METH_O | METH_CLASS,
     "Artifact.deserialize(data) -> Artifact"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef artifact_getset[] = {
    {"meta", artifact_meta, NULL,
     "The kernel metadata text (key=value lines), or None.", NULL},
    {"cache_hit", artifact_cache_hit, NULL,
     "True/False if compile(cached=True) found it in the cache, else None.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot artifact_slots[] = {
    {Py_tp_new, artifact_new},
    {Py_tp_dealloc, artifact_dealloc},
    {Py_tp_repr, artifact_repr},
    {Py_tp_methods, artifact_methods},
    {Py_tp_getset, artifact_getset},
    {Py_tp_doc,
     "Artifact()\n\nA compiled kernel: named byte sections (zt_artifact_t)."},
    {0, NULL},
};

static PyType_Spec artifact_spec = {
    .name = "zetile._zetile.Artifact",
    .basicsize = sizeof(ArtifactObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = artifact_slots,
};

int zpy_artifact_init(PyObject* m) {
  PyObject* type = PyType_FromSpec(&artifact_spec);
  if (!type) return -1;
  zpy_artifact_type = (PyTypeObject*)type;
  Py_INCREF(type);  // one for the module, one for zpy_artifact_type
  if (PyModule_AddObject(m, "Artifact", type) < 0) {
    Py_DECREF(type);
    return -1;
  }
  return 0;
}
