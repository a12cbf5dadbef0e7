// zetile._zetile: declarations shared by the extension's files.
//
// The extension is written against the limited API (abi3, Python 3.10+):
// heap types from PyType_FromSpec, no buffer protocol, no macros that reach
// into object internals. Every object type holds one zetile handle and the
// Python objects that handle depends on (a Buffer its Device, an Executable
// its Device and Artifact), so nothing is freed while still in use.
#ifndef ZETILE_PY_ZETILE_PY_H_
#define ZETILE_PY_ZETILE_PY_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "zetile/zetile.h"

// --- errors.c ----------------------------------------------------------------
/// Creates zetile.Error and one subclass per status code; adds them to m.
int zpy_errors_init(PyObject* m);
/// Raises the exception for `status` and frees it. Returns NULL so that
/// callers can `return zpy_raise(s);`. status must not be OK.
PyObject* zpy_raise(zt_status_t status);
/// zpy_raise for functions returning int (-1).
int zpy_raise_int(zt_status_t status);

/// Evaluates a zt_status_t expression; on error raises and returns NULL.
#define ZPY_TRY(expr)                        \
  do {                                       \
    zt_status_t zpy_s_ = (expr);             \
    if (zpy_s_) return zpy_raise(zpy_s_);    \
  } while (0)

// --- convert.c ---------------------------------------------------------------
/// Raises TypeError "<what> must be <expected>, not <type of got>"; returns -1.
int zpy_type_error(const char* what, const char* expected, PyObject* got);
/// An int in [0, count) naming an enum member; ValueError/TypeError naming
/// `what` otherwise.
int zpy_enum(PyObject* o, int count, const char* what, int* out);
/// A Python int that fits int32 (value handles, axes).
int zpy_int32(PyObject* o, const char* what, int32_t* out);
/// A value handle: an int, or None for ZT_NO_VALUE when allow_none.
int zpy_value(PyObject* o, const char* what, bool allow_none, zt_value_t* out);
/// A sequence of value handles into PyMem_Malloc'ed storage (*out is NULL
/// for an empty sequence; free with PyMem_Free).
int zpy_values(PyObject* seq, const char* what, zt_value_t** out, int32_t* n);
PyObject* zpy_values_to_list(const zt_value_t* v, int32_t n);
/// A shape: a sequence of at most ZT_MAX_RANK non-negative ints.
int zpy_shape(PyObject* seq, const char* what, int32_t* rank,
              int64_t shape[ZT_MAX_RANK]);
/// Types as (kind, pointee, shape) tuples. from_py also takes a bare kind
/// (a scalar) and (kind, pointee).
int zpy_type_from_py(PyObject* o, const char* what, zt_type_t* out);
PyObject* zpy_type_to_py(zt_type_t t);

/// A span of bytes borrowed from a Python object without the buffer
/// protocol (not in the limited API before 3.11): bytes directly, any other
/// C-contiguous bytes-like object through ctypes' from_buffer, which holds
/// the export (so the object cannot be resized) until zpy_span_release.
typedef struct zpy_span_s {
  char* data;
  Py_ssize_t size;
  PyObject* keep;  // owns the export or the bytes
} zpy_span_t;
/// writable: the span must be writable in place (read_into); otherwise a
/// read-only or non-contiguous object is copied into bytes first.
int zpy_span_get(PyObject* o, bool writable, const char* what, zpy_span_t* out);
void zpy_span_release(zpy_span_t* span);

// --- constants.c ---------------------------------------------------------------
/// Adds the enum constants and name->value dicts.
int zpy_constants_init(PyObject* m);

// --- builder.c ----------------------------------------------------------------
int zpy_builder_init(PyObject* m);

// --- artifact.c ---------------------------------------------------------------
int zpy_artifact_init(PyObject* m);
extern PyTypeObject* zpy_artifact_type;
/// The handle of an Artifact (borrowed); TypeError and NULL for other objects.
const zt_artifact_t* zpy_artifact_handle(PyObject* o);
/// Wraps a new artifact (ownership passes; released on failure). cache_hit:
/// Py_True/Py_False or NULL for None.
PyObject* zpy_artifact_wrap(zt_artifact_t* a, PyObject* cache_hit);

// --- compiler.c ---------------------------------------------------------------
/// compile(), compile_cache_key(), compiler_*() and the cache functions.
int zpy_compiler_init(PyObject* m);

// --- runtime.c -----------------------------------------------------------------
int zpy_runtime_init(PyObject* m);
/// The handle of an Executable (borrowed); TypeError and NULL otherwise.
zt_executable_t* zpy_executable_handle(PyObject* o);
/// 1 and the device address if o is a live Buffer, else 0 (no exception).
int zpy_buffer_address(PyObject* o, uint64_t* address);
/// zt_launch_checked without the GIL, Ctrl-C stopping it; raises on error
/// and returns -1.
int zpy_launch(zt_executable_t* exe, const uint32_t grid[3], int32_t n, const zt_arg_t* args,
               const uint64_t* sizes);

// --- launcher.c -----------------------------------------------------------------
/// KernelBase: the C fast path of `kernel[grid](*args)` (jit.JITFunction's base).
int zpy_launcher_init(PyObject* m);

// --- helpers --------------------------------------------------------------------
/// Allocates an instance of a heap type whose tp_new is disabled.
PyObject* zpy_alloc(PyTypeObject* type);
/// Frees an instance of a heap type and drops its reference to the type.
void zpy_free(PyObject* self);
/// d[key] = value, stealing value; returns -1 on error (value is released).
int zpy_dict_set(PyObject* d, const char* key, PyObject* value);

#endif  // ZETILE_PY_ZETILE_PY_H_
