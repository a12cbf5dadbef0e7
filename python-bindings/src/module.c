// zetile._zetile: the CPython extension over libzetile (limited API, abi3).
// Module-level state lives in a few static pointers (exception classes,
// types): the module is initialized once per process, like libzetile.
#include "zetile_py.h"

static struct PyModuleDef zetile_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "zetile._zetile",
    .m_doc = "Thin bindings over zetile's C API: the tile IR builder, the "
             "compiler, the cache and the device runtime.",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__zetile(void) {
  PyObject* m = PyModule_Create(&zetile_module);
  if (!m) return NULL;
  if (PyModule_AddStringConstant(m, "__version__", ZT_VERSION_STRING) < 0 ||
      PyModule_AddIntConstant(m, "VERSION_MAJOR", ZT_VERSION_MAJOR) < 0 ||
      PyModule_AddIntConstant(m, "VERSION_MINOR", ZT_VERSION_MINOR) < 0 ||
      PyModule_AddIntConstant(m, "VERSION_PATCH", ZT_VERSION_PATCH) < 0 ||
      zpy_errors_init(m) < 0 || zpy_constants_init(m) < 0 ||
      zpy_builder_init(m) < 0 || zpy_artifact_init(m) < 0 ||
      zpy_compiler_init(m) < 0 || zpy_runtime_init(m) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
