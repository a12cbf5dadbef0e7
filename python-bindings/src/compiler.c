// compile(), the compiler's identity and the on-disk cache. Compiles run
// without the GIL: they can take seconds and other threads (a second JIT,
// a launch) should keep going.
#include "zetile_py.h"

// libzetile, exported for front ends (jit/compile_report.h): the next
// compile on this thread counts `ms` as its front end in its timings.
ZT_API void zt_compile_note_front_end(double ms);

typedef struct {
  const char* ir;
  Py_ssize_t size;
  zt_compile_options_t options;
  double front_end_ms;  // < 0: not given
} compile_args_t;

static char* compile_kwlist[] = {"tile_ir",     "target", "num_warps",    "compat",
                                 "igc_options", "cached", "front_end_ms", NULL};

// Parses (tile_ir, target="cpu", num_warps=0, compat=False, igc_options=None
// [, cached=True, front_end_ms=None]); None is accepted for target ("cpu")
// and num_warps (0). The strings stay valid while `args`/`kw` live.
static int parse_compile_args(PyObject* args, PyObject* kw, bool with_cached,
                              compile_args_t* out, int* cached) {
  const char* target = "cpu";
  PyObject* warps_obj = Py_None;  // None means 0: let zetile pick
  PyObject* fe_obj = Py_None;
  int32_t num_warps = 0;
  int compat = 0;
  const char* igc = NULL;
  *cached = 1;
  char* kwlist[8];
  for (int i = 0; i < 8; ++i) kwlist[i] = compile_kwlist[i];
  if (!with_cached) kwlist[5] = NULL;
  if (!PyArg_ParseTupleAndKeywords(
          args, kw, with_cached ? "s#|zOpzpO:compile" : "s#|zOpz:compile_cache_key",
          kwlist, &out->ir, &out->size, &target, &warps_obj, &compat, &igc,
          cached, &fe_obj))
    return -1;
  out->front_end_ms = -1;
  if (fe_obj != Py_None) {
    // The Python front end's time (AST -> tile IR), for the timings.
    out->front_end_ms = PyFloat_AsDouble(fe_obj);
    if (out->front_end_ms == -1.0 && PyErr_Occurred()) return -1;
    if (out->front_end_ms < 0) {
      PyErr_SetString(PyExc_ValueError, "front_end_ms must be >= 0");
      return -1;
    }
  }
  if (warps_obj != Py_None && zpy_int32(warps_obj, "num_warps", &num_warps) < 0)
    return -1;
  if (num_warps < 0) {
    PyErr_Format(PyExc_ValueError, "num_warps must be >= 0, got %d",
                 (int)num_warps);
    return -1;
  }
  out->options.target = target;
  out->options.num_warps = num_warps;
  out->options.compat = compat != 0;
  out->options.igc_options = igc;
  return 0;
}

static PyObject* py_compile(PyObject* m, PyObject* args, PyObject* kw) {
  compile_args_t c = {0};
  int cached;
  if (parse_compile_args(args, kw, true, &c, &cached) < 0) return NULL;
  zt_artifact_t* a = NULL;
  bool hit = false;
  zt_status_t s;
  Py_BEGIN_ALLOW_THREADS
  if (c.front_end_ms >= 0) zt_compile_note_front_end(c.front_end_ms);
  s = cached ? zt_compile_cached(c.ir, (size_t)c.size, &c.options, &a, &hit)
             : zt_compile(c.ir, (size_t)c.size, &c.options, &a);
  Py_END_ALLOW_THREADS
  if (s) return zpy_raise(s);
  return zpy_artifact_wrap(a, cached ? (hit ? Py_True : Py_False) : NULL);
}

static PyObject* py_compile_cache_key(PyObject* m, PyObject* args, PyObject* kw) {
  compile_args_t c = {0};
  int cached;
  if (parse_compile_args(args, kw, false, &c, &cached) < 0) return NULL;
  char key[33];
  zt_compile_cache_key(c.ir, (size_t)c.size, &c.options, key);
  return PyUnicode_FromString(key);
}

static PyObject* py_compiler_version(PyObject* m, PyObject* unused) {
  const char* v = zt_compiler_version();
  return PyUnicode_FromString(v ? v : "");
}

static PyObject* py_compiler_available(PyObject* m, PyObject* unused) {
  zt_status_t s;
  Py_BEGIN_ALLOW_THREADS  // the first call dlopens MLIR and LLVM
  s = zt_compiler_available();
  Py_END_ALLOW_THREADS
  if (!s) return Py_BuildValue("(Os)", Py_True, "");
  PyObject* r = Py_BuildValue("(Os)", Py_False, zt_status_message(s));
  zt_status_free(s);
  return r;
}

static PyObject* py_cache_dir(PyObject* m, PyObject* unused) {
  const char* d = zt_cache_dir();
  if (!d) Py_RETURN_NONE;
  return PyUnicode_DecodeFSDefault(d);
}

static PyObject* py_cache_stats(PyObject* m, PyObject* unused) {
  zt_cache_stats_t st = {0};
  zt_cache_get_stats(&st);
  return Py_BuildValue(
      "{sLsLsLsLsLsLsL}", "hits", (long long)st.hits, "misses",
      (long long)st.misses, "corrupt", (long long)st.corrupt, "writes",
      (long long)st.writes, "compiles", (long long)st.compiles, "native_hits",
      (long long)st.native_hits, "native_builds", (long long)st.native_builds);
}

static PyObject* py_hash_hex(PyObject* m, PyObject* arg) {
  zpy_span_t span;
  if (zpy_span_get(arg, false, "data", &span) < 0) return NULL;
  char hex[33];
  zt_hash_hex(span.data, (size_t)span.size, hex);
  zpy_span_release(&span);
  return PyUnicode_FromString(hex);
}

#define KW (METH_VARARGS | METH_KEYWORDS)
#define FN(f) (PyCFunction)(void (*)(void))(f)

static PyMethodDef compiler_functions[] = {
    {"compile", FN(py_compile), KW,
     "compile(tile_ir, target='cpu', num_warps=0, compat=False, "
     "igc_options=None, cached=True, front_end_ms=None) -> Artifact\n"
     "Compiles tile IR text (zt_compile_cached, or zt_compile when cached is "
     "False) without holding the GIL; compiles on other threads run at the "
     "same time. CompileError carries MLIR's diagnostics. front_end_ms: "
     "the time that made tile_ir, recorded as the \"front end\" stage of "
     "the artifact's timings (ZETILE_DEBUG=time prints them)."},
    {"compile_cache_key", FN(py_compile_cache_key), KW,
     "compile_cache_key(tile_ir, target='cpu', num_warps=0, compat=False, "
     "igc_options=None) -> str\nThe 32-hex-digit key compile(cached=True) "
     "uses."},
    {"compiler_version", py_compiler_version, METH_NOARGS,
     "compiler_version() -> str"},
    {"compiler_available", py_compiler_available, METH_NOARGS,
     "compiler_available() -> (bool, str)\nWhether libzetile_compiler loads; "
     "the message says why not."},
    {"cache_dir", py_cache_dir, METH_NOARGS, "cache_dir() -> str"},
    {"cache_stats", py_cache_stats, METH_NOARGS,
     "cache_stats() -> dict\nThis process's cache counters."},
    {"hash_hex", py_hash_hex, METH_O,
     "hash_hex(data) -> str\n128-bit XXH3 of bytes-like data, 32 hex digits."},
    {NULL, NULL, 0, NULL},
};

int zpy_compiler_init(PyObject* m) {
  return PyModule_AddFunctions(m, compiler_functions);
}
