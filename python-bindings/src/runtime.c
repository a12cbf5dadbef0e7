// Devices, buffers and executables (runtime.h). Each Python object owns one
// handle and keeps alive what that handle needs: a Buffer and an Executable
// hold their Device, an Executable its Artifact. Calls that may wait on a
// device or a driver (open, synchronize, copies, loads, launches) run
// without the GIL.
#include <string.h>

#include "zetile_py.h"

typedef struct {
  PyObject_HEAD
  zt_device_t* d;
} DeviceObject;

typedef struct {
  PyObject_HEAD
  zt_buffer_t* buf;  // NULL after release()
  PyObject* device;
  int busy;  // copies running without the GIL; release() must wait for 0
} BufferObject;

typedef struct {
  PyObject_HEAD
  zt_executable_t* exe;
  PyObject* device;
  PyObject* artifact;
} ExecutableObject;

static PyTypeObject* g_device_type;
static PyTypeObject* g_buffer_type;
static PyTypeObject* g_executable_type;

static PyObject* info_dict(const zt_device_info_t* i) {
  return Py_BuildValue(
      "{sssssssssssssisKsOsO}", "name", i->name, "backend", i->backend,
      "description", i->description, "target", i->target, "target_why", i->target_why,
      "driver_version",
      i->driver_version, "compute_units", (int)i->compute_units, "memory_bytes",
      (unsigned long long)i->memory_bytes, "host_memory",
      i->host_memory ? Py_True : Py_False, "compat",
      i->compat ? Py_True : Py_False);
}

static PyObject* py_devices(PyObject* m, PyObject* unused) {
  int32_t count = 0, cap = 8;
  zt_device_info_t* infos = NULL;
  for (;;) {
    zt_device_info_t* grown = PyMem_Realloc(infos, (size_t)cap * sizeof *infos);
    if (!grown) {
      PyMem_Free(infos);
      return PyErr_NoMemory();
    }
    infos = grown;
    memset(infos, 0, (size_t)cap * sizeof *infos);
    zt_status_t s;
    Py_BEGIN_ALLOW_THREADS  // the first call initializes the drivers
    s = zt_device_enumerate(infos, cap, &count);
    Py_END_ALLOW_THREADS
    if (s) {
      PyMem_Free(infos);
      return zpy_raise(s);
    }
    if (count <= cap) break;
    cap = count;
  }
  PyObject* list = PyList_New(count);
  for (int32_t i = 0; list && i < count; ++i) {
    PyObject* d = info_dict(&infos[i]);
    if (!d) {
      Py_CLEAR(list);
      break;
    }
    PyList_SetItem(list, i, d);
  }
  PyMem_Free(infos);
  return list;
}

// ---------------------------------------------------------------------------
// Device

#define DEV(o) (((DeviceObject*)(o))->d)

static PyObject* device_new(PyTypeObject* type, PyObject* args, PyObject* kw) {
  static char* kwlist[] = {"name", NULL};
  const char* name = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|z:Device", kwlist, &name))
    return NULL;
  zt_device_t* d = NULL;
  zt_status_t s;
  Py_BEGIN_ALLOW_THREADS
  s = zt_device_open(name, &d);
  Py_END_ALLOW_THREADS
  if (s) return zpy_raise(s);
  DeviceObject* self = (DeviceObject*)zpy_alloc(type);
  if (!self) {
    zt_device_release(d);
    return NULL;
  }
  self->d = d;
  return (PyObject*)self;
}

static void device_dealloc(PyObject* self) {
  zt_device_release(DEV(self));
  zpy_free(self);
}

static PyObject* device_info(PyObject* self, void* unused) {
  return info_dict(zt_device_info(DEV(self)));
}

static PyObject* device_name(PyObject* self, void* unused) {
  return PyUnicode_FromString(zt_device_info(DEV(self))->name);
}

static PyObject* device_repr(PyObject* self) {
  const zt_device_info_t* i = zt_device_info(DEV(self));
  return PyUnicode_FromFormat("<zetile Device %s (%s)>", i->name,
                              i->description);
}

static PyObject* device_synchronize(PyObject* self, PyObject* unused) {
  zt_status_t s;
  Py_BEGIN_ALLOW_THREADS
  s = zt_device_synchronize(DEV(self));
  Py_END_ALLOW_THREADS
  if (s) return zpy_raise(s);
  Py_RETURN_NONE;
}

static PyObject* device_timing_begin(PyObject* self, PyObject* unused) {
  zt_status_t s;
  Py_BEGIN_ALLOW_THREADS  // the first call creates the driver's timestamp events
  s = zt_device_timing_begin(DEV(self));
  Py_END_ALLOW_THREADS
  if (s) return zpy_raise(s);
  Py_RETURN_NONE;
}

static PyObject* device_timing_end(PyObject* self, PyObject* unused) {
  zt_device_timing_t t;
  zt_status_t s;
  Py_BEGIN_ALLOW_THREADS  // waits for the timed launches
  s = zt_device_timing_end(DEV(self), &t);
  Py_END_ALLOW_THREADS
  if (s) return zpy_raise(s);
  return Py_BuildValue("{sLsdsdsdsL}", "kernels", (long long)t.kernels, "kernel_ns", t.kernel_ns,
                       "span_ns", t.span_ns, "tick_ns", t.tick_ns, "missing",
                       (long long)t.missing);
}

static PyObject* device_alloc(PyObject* self, PyObject* arg) {
  Py_ssize_t nbytes = PyNumber_AsSsize_t(arg, PyExc_OverflowError);
  if (nbytes == -1 && PyErr_Occurred()) return NULL;
  if (nbytes < 0)
    return PyErr_Format(PyExc_ValueError, "alloc: nbytes is negative (%zd)",
                        nbytes);
  zt_buffer_t* buf = NULL;
  zt_status_t s;
  Py_BEGIN_ALLOW_THREADS
  s = zt_buffer_alloc(DEV(self), (size_t)nbytes, &buf);
  Py_END_ALLOW_THREADS
  if (s) return zpy_raise(s);
  BufferObject* b = (BufferObject*)zpy_alloc(g_buffer_type);
  if (!b) {
    zt_buffer_release(buf);
    return NULL;
  }
  b->buf = buf;
  b->device = self;
  Py_INCREF(self);
  return (PyObject*)b;
}

static PyObject* device_load(PyObject* self, PyObject* arg) {
  const zt_artifact_t* a = zpy_artifact_handle(arg);
  if (!a) return NULL;
  zt_executable_t* exe = NULL;
  zt_status_t s;
  Py_BEGIN_ALLOW_THREADS  // the driver may build SPIR-V, the CPU may JIT
  s = zt_executable_create(DEV(self), a, &exe);
  Py_END_ALLOW_THREADS
  if (s) return zpy_raise(s);
  ExecutableObject* e = (ExecutableObject*)zpy_alloc(g_executable_type);
  if (!e) {
    zt_executable_release(exe);
    return NULL;
  }
  e->exe = exe;
  e->device = self;
  e->artifact = arg;
  Py_INCREF(self);
  Py_INCREF(arg);
  return (PyObject*)e;
}

static PyMethodDef device_methods[] = {
    {"synchronize", device_synchronize, METH_NOARGS,
     "synchronize()\nWaits for every launch on the device (GIL released)."},
    {"timing_begin", device_timing_begin, METH_NOARGS,
     "timing_begin()\nFrom now on launches record device timestamps (Level Zero kernel "
     "timestamps); zetile.Error (unsupported) on devices without a device timer."},
    {"timing_end", device_timing_end, METH_NOARGS,
     "timing_end() -> {kernels, kernel_ns, span_ns, tick_ns, missing}\nWaits for the launches "
     "since timing_begin and returns their summed device time (GIL released)."},
    {"alloc", device_alloc, METH_O, "alloc(nbytes) -> Buffer"},
    {"load", device_load, METH_O,
     "load(artifact) -> Executable\nLoads a compiled artifact (GIL released; "
     "the driver may compile)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef device_getset[] = {
    {"info", device_info, NULL,
     "dict: name, backend, description, target, target_why, driver_version, "
     "compute_units, memory_bytes, host_memory, compat",
     NULL},
    {"name", device_name, NULL, "The device's name (\"cpu\", \"level_zero:0\").",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot device_slots[] = {
    {Py_tp_new, device_new},
    {Py_tp_dealloc, device_dealloc},
    {Py_tp_repr, device_repr},
    {Py_tp_methods, device_methods},
    {Py_tp_getset, device_getset},
    {Py_tp_doc,
     "Device(name=None)\n\nOpens a device: \"cpu\", \"level_zero\", "
     "\"level_zero:1\"; None or \"default\" opens $ZETILE_DEVICE, else the "
     "first Intel GPU, else the CPU."},
    {0, NULL},
};

// ---------------------------------------------------------------------------
// Buffer

static zt_buffer_t* live_buffer(PyObject* self) {
  zt_buffer_t* b = ((BufferObject*)self)->buf;
  if (!b) PyErr_SetString(PyExc_ValueError, "the buffer has been released");
  return b;
}

static void buffer_dealloc(PyObject* self) {
  BufferObject* o = (BufferObject*)self;
  zt_buffer_release(o->buf);
  Py_XDECREF(o->device);
  zpy_free(self);
}

static PyObject* buffer_release(PyObject* self, PyObject* unused) {
  BufferObject* o = (BufferObject*)self;
  if (o->busy) {
    PyErr_SetString(PyExc_RuntimeError,
                    "the buffer is being copied by another thread");
    return NULL;
  }
  zt_buffer_release(o->buf);
  o->buf = NULL;
  Py_RETURN_NONE;
}

static PyObject* buffer_address(PyObject* self, void* unused) {
  zt_buffer_t* b = live_buffer(self);
  return b ? PyLong_FromUnsignedLongLong(zt_buffer_address(b)) : NULL;
}

static PyObject* buffer_size(PyObject* self, void* unused) {
  zt_buffer_t* b = live_buffer(self);
  return b ? PyLong_FromSize_t(zt_buffer_size(b)) : NULL;
}

static PyObject* buffer_device(PyObject* self, void* unused) {
  PyObject* d = ((BufferObject*)self)->device;
  Py_INCREF(d);
  return d;
}

// Checks [offset, offset + n) against the buffer's size.
static int check_range(zt_buffer_t* b, Py_ssize_t offset, Py_ssize_t n,
                       const char* what) {
  size_t size = zt_buffer_size(b);
  if (offset < 0 || n < 0 || (size_t)offset > size ||
      (size_t)n > size - (size_t)offset) {
    PyErr_Format(PyExc_ValueError,
                 "%s: %zd bytes at offset %zd do not fit a buffer of %zu bytes",
                 what, n, offset, size);
    return -1;
  }
  return 0;
}

// Buffer.write(data) and Buffer.read_into(dst): one copy between a Python
// buffer and device memory, the GIL released while it runs.
static PyObject* buffer_copy(PyObject* self, PyObject* args, PyObject* kw, bool to_device) {
  static char* write_kw[] = {"data", "offset", NULL};
  static char* read_kw[] = {"dst", "offset", NULL};
  PyObject* obj;
  Py_ssize_t offset = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, to_device ? "O|n:write" : "O|n:read_into",
                                   to_device ? write_kw : read_kw, &obj, &offset))
    return NULL;
  zt_buffer_t* b = live_buffer(self);
  if (!b) return NULL;
  zpy_span_t span;
  if (zpy_span_get(obj, !to_device, to_device ? "data" : "dst", &span) < 0) return NULL;
  if (check_range(b, offset, span.size, to_device ? "write" : "read_into") < 0) {
    zpy_span_release(&span);
    return NULL;
  }
  zt_status_t s = NULL;
  if (span.size) {
    ((BufferObject*)self)->busy++;
    Py_BEGIN_ALLOW_THREADS
    s = to_device ? zt_buffer_write(b, (size_t)offset, span.data, (size_t)span.size)
                  : zt_buffer_read(b, (size_t)offset, span.data, (size_t)span.size);
    Py_END_ALLOW_THREADS
    ((BufferObject*)self)->busy--;
  }
  zpy_span_release(&span);
  if (s) return zpy_raise(s);
  Py_RETURN_NONE;
}

static PyObject* buffer_write(PyObject* self, PyObject* args, PyObject* kw) {
  return buffer_copy(self, args, kw, true);
}

static PyObject* buffer_read(PyObject* self, PyObject* args, PyObject* kw) {
  static char* kwlist[] = {"nbytes", "offset", NULL};
  PyObject* n_obj = Py_None;
  Py_ssize_t offset = 0, n;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|On:read", kwlist, &n_obj, &offset))
    return NULL;
  zt_buffer_t* b = live_buffer(self);
  if (!b) return NULL;
  if (n_obj == Py_None) {
    n = (Py_ssize_t)zt_buffer_size(b) - offset;
  } else {
    n = PyNumber_AsSsize_t(n_obj, PyExc_OverflowError);
    if (n == -1 && PyErr_Occurred()) return NULL;
  }
  if (check_range(b, offset, n, "read") < 0) return NULL;
  // The new bytes object is not shared yet: filling it without the GIL is
  // safe.
  PyObject* out = PyBytes_FromStringAndSize(NULL, n);
  if (!out) return NULL;
  char* dst = PyBytes_AsString(out);
  zt_status_t s = NULL;
  if (n) {
    ((BufferObject*)self)->busy++;
    Py_BEGIN_ALLOW_THREADS
    s = zt_buffer_read(b, (size_t)offset, dst, (size_t)n);
    Py_END_ALLOW_THREADS
    ((BufferObject*)self)->busy--;
  }
  if (s) {
    Py_DECREF(out);
    return zpy_raise(s);
  }
  return out;
}

static PyObject* buffer_read_into(PyObject* self, PyObject* args, PyObject* kw) {
  return buffer_copy(self, args, kw, false);
}

static PyObject* buffer_repr(PyObject* self) {
  BufferObject* o = (BufferObject*)self;
  if (!o->buf) return PyUnicode_FromString("<zetile Buffer (released)>");
  return PyUnicode_FromFormat("<zetile Buffer %zu bytes at 0x%llx>",
                              zt_buffer_size(o->buf),
                              (unsigned long long)zt_buffer_address(o->buf));
}

#define KW (METH_VARARGS | METH_KEYWORDS)
#define FN(f) (PyCFunction)(void (*)(void))(f)

static PyMethodDef buffer_methods[] = {
    {"write", FN(buffer_write), KW,
     "write(data, offset=0)\nCopies bytes-like data into the buffer."},
    {"read", FN(buffer_read), KW,
     "read(nbytes=None, offset=0) -> bytes\nnbytes defaults to the rest of "
     "the buffer."},
    {"read_into", FN(buffer_read_into), KW,
     "read_into(dst, offset=0)\nFills a writable C-contiguous bytes-like "
     "object (bytearray, numpy array) from the buffer."},
    {"release", buffer_release, METH_NOARGS,
     "release()\nFrees the device memory now; later use raises ValueError."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef buffer_getset[] = {
    {"address", buffer_address, NULL,
     "Device address to pass as a pointer argument.", NULL},
    {"size", buffer_size, NULL, "Size in bytes.", NULL},
    {"device", buffer_device, NULL, "The Device it lives on.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot buffer_slots[] = {
    {Py_tp_dealloc, buffer_dealloc},
    {Py_tp_repr, buffer_repr},
    {Py_tp_methods, buffer_methods},
    {Py_tp_getset, buffer_getset},
    {Py_tp_doc, "Device memory (from Device.alloc)."},
    {0, NULL},
};

// ---------------------------------------------------------------------------
// Executable

static void executable_dealloc(PyObject* self) {
  ExecutableObject* o = (ExecutableObject*)self;
  zt_executable_release(o->exe);
  Py_XDECREF(o->artifact);
  Py_XDECREF(o->device);
  zpy_free(self);
}

static int parse_grid(PyObject* o, uint32_t grid[3]) {
  grid[0] = grid[1] = grid[2] = 1;
  if (PyLong_Check(o)) {
    PyObject* t = PyTuple_Pack(1, o);
    if (!t) return -1;
    int rc = parse_grid(t, grid);
    Py_DECREF(t);
    return rc;
  }
  if (!PySequence_Check(o) || PyUnicode_Check(o)) {
    zpy_type_error("grid", "a tuple of 1 to 3 ints", o);
    return -1;
  }
  Py_ssize_t n = PySequence_Size(o);
  if (n < 0) return -1;
  if (n < 1 || n > 3) {
    PyErr_Format(PyExc_ValueError, "grid must have 1 to 3 dims, got %zd", n);
    return -1;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PySequence_GetItem(o, i);
    if (!item) return -1;
    PyObject* idx = PyNumber_Index(item);
    Py_DECREF(item);
    if (!idx) return -1;
    long long v = PyLong_AsLongLong(idx);
    Py_DECREF(idx);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < 0 || v > (long long)UINT32_MAX) {
      PyErr_Format(PyExc_ValueError, "grid[%zd] = %lld is out of range", i, v);
      return -1;
    }
    grid[i] = (uint32_t)v;
  }
  return 0;
}

// One (kind, value) pair. Pointers take an int address or a Buffer.
static int parse_arg(PyObject* item, Py_ssize_t i, zt_arg_t* out) {
  char what[48];
  snprintf(what, sizeof what, "args[%zd]", i);
  if (!PyTuple_Check(item) || PyTuple_Size(item) != 2) {
    zpy_type_error(what, "a (kind, value) tuple", item);
    return -1;
  }
  int kind;
  if (zpy_enum(PyTuple_GetItem(item, 0), ZT_SCALAR_KIND_COUNT, what, &kind) < 0)
    return -1;
  PyObject* v = PyTuple_GetItem(item, 1);
  memset(out, 0, sizeof *out);
  out->kind = (zt_scalar_kind_t)kind;
  switch (kind) {
    case ZT_F32:
    case ZT_F64: {
      double d = PyFloat_AsDouble(v);
      if (d == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return zpy_type_error(what, "a float", v);
      }
      out->value.f = d;
      return 0;
    }
    case ZT_PTR: {
      PyObject* addr = NULL;
      int is_buf = PyObject_IsInstance(v, (PyObject*)g_buffer_type);
      if (is_buf < 0) return -1;
      if (is_buf) {
        zt_buffer_t* b = live_buffer(v);
        if (!b) return -1;
        out->value.ptr = zt_buffer_address(b);
        return 0;
      }
      addr = PyNumber_Index(v);
      if (!addr) {
        PyErr_Clear();
        return zpy_type_error(what, "a Buffer or an int address", v);
      }
      unsigned long long p = PyLong_AsUnsignedLongLong(addr);
      Py_DECREF(addr);
      if (p == (unsigned long long)-1 && PyErr_Occurred()) return -1;
      out->value.ptr = p;
      return 0;
    }
    default: {
      PyObject* idx = PyNumber_Index(v);
      if (!idx) {
        PyErr_Clear();
        return zpy_type_error(what, "an int", v);
      }
      int overflow = 0;
      long long x = PyLong_AsLongLongAndOverflow(idx, &overflow);
      if (overflow > 0) {  // uint64 values above 2**63: keep the bits
        unsigned long long u = PyLong_AsUnsignedLongLong(idx);
        if (!PyErr_Occurred()) x = (long long)u;
      } else if (overflow < 0) {
        PyErr_Format(PyExc_OverflowError, "%s: value below -2**63", what);
      }
      Py_DECREF(idx);
      if (PyErr_Occurred()) return -1;
      if (kind == ZT_F16 || kind == ZT_BF16) {
        if (x < 0 || x > 0xFFFF) {
          PyErr_Format(PyExc_ValueError,
                       "%s: f16/bf16 arguments are raw 16-bit patterns "
                       "(0..65535), got %lld",
                       what, x);
          return -1;
        }
        out->value.bits = (uint16_t)x;
      } else {
        out->value.i = x;
      }
      return 0;
    }
  }
}

// Ctrl-C during a long launch: the launching thread (which released the
// GIL) takes it back now and then to run Python's signal handlers; a
// KeyboardInterrupt (or any exception they raise) stops the launch.
typedef struct interrupt_state_s {
  PyThreadState* saved;
  bool raised;
} interrupt_state_t;

static bool check_signals(void* user) {
  interrupt_state_t* st = user;
  if (st->raised) return true;
  PyEval_RestoreThread(st->saved);
  st->raised = PyErr_CheckSignals() < 0;
  st->saved = PyEval_SaveThread();
  return st->raised;
}

int zpy_launch(zt_executable_t* exe, const uint32_t grid[3], int32_t n, const zt_arg_t* args,
               const uint64_t* sizes) {
  interrupt_state_t ist = {NULL, false};
  ist.saved = PyEval_SaveThread();
  zt_set_interrupt_check(check_signals, &ist);
  zt_status_t s = zt_launch_checked(exe, grid, n, args, sizes);
  zt_set_interrupt_check(NULL, NULL);
  PyEval_RestoreThread(ist.saved);
  if (ist.raised && PyErr_Occurred()) {
    // The signal handler's exception (KeyboardInterrupt) wins, even if the
    // launch finished before it noticed.
    zt_status_free(s);
    return -1;
  }
  if (s) return zpy_raise_int(s);
  return 0;
}

int zpy_buffer_address(PyObject* o, uint64_t* address) {
  if (!PyObject_TypeCheck(o, g_buffer_type) || !((BufferObject*)o)->buf) return 0;
  *address = zt_buffer_address(((BufferObject*)o)->buf);
  return 1;
}

zt_executable_t* zpy_executable_handle(PyObject* o) {
  if (!PyObject_TypeCheck(o, g_executable_type)) {
    zpy_type_error("executable", "an Executable", o);
    return NULL;
  }
  return ((ExecutableObject*)o)->exe;
}

static PyObject* executable_launch(PyObject* self, PyObject* args, PyObject* kw) {
  static char* kwlist[] = {"grid", "args", "sizes", NULL};
  PyObject *grid_obj, *args_obj, *sizes_obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O:launch", kwlist, &grid_obj,
                                   &args_obj, &sizes_obj))
    return NULL;
  uint32_t grid[3];
  if (parse_grid(grid_obj, grid) < 0) return NULL;
  if (!PySequence_Check(args_obj) || PyUnicode_Check(args_obj)) {
    zpy_type_error("args", "a sequence of (kind, value) tuples", args_obj);
    return NULL;
  }
  Py_ssize_t n = PySequence_Size(args_obj);
  if (n < 0) return NULL;
  if (n > INT32_MAX) return PyErr_Format(PyExc_ValueError, "too many args");
  zt_arg_t small[16];
  zt_arg_t* zargs = n <= 16 ? small : PyMem_Malloc((size_t)n * sizeof *zargs);
  if (!zargs) return PyErr_NoMemory();
  PyObject* r = NULL;
  uint64_t* sizes = NULL;  // bounds mode: bytes behind each argument
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* item = PySequence_GetItem(args_obj, i);
    int rc = item ? parse_arg(item, i, &zargs[i]) : -1;
    Py_XDECREF(item);
    if (rc < 0) goto cleanup;
  }
  if (sizes_obj != Py_None) {
    if (!PySequence_Check(sizes_obj) || PySequence_Size(sizes_obj) != n) {
      PyErr_Format(PyExc_ValueError, "sizes must be a sequence of %zd ints (bytes per argument)",
                   n);
      goto cleanup;
    }
    sizes = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *sizes);
    if (!sizes) {
      PyErr_NoMemory();
      goto cleanup;
    }
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* item = PySequence_GetItem(sizes_obj, i);
      unsigned long long v = item ? PyLong_AsUnsignedLongLong(item) : 0;
      Py_XDECREF(item);
      if (PyErr_Occurred()) goto cleanup;
      sizes[i] = v;
    }
  }
  if (zpy_launch(((ExecutableObject*)self)->exe, grid, (int32_t)n, zargs, sizes) < 0)
    goto cleanup;
  Py_INCREF(Py_None);
  r = Py_None;
cleanup:
  if (zargs != small) PyMem_Free(zargs);
  PyMem_Free(sizes);
  return r;
}

static PyObject* executable_stats(PyObject* self, PyObject* unused) {
  zt_kernel_stats_t st;
  memset(&st, 0xff, sizeof st);  // -1 everywhere a backend stays silent
  ZPY_TRY(zt_executable_stats(((ExecutableObject*)self)->exe, &st));
  return Py_BuildValue("{sLsLsLsisi}", "spill_bytes", (long long)st.spill_bytes,
                       "private_bytes", (long long)st.private_bytes,
                       "local_bytes", (long long)st.local_bytes,
                       "max_subgroup_size", (int)st.max_subgroup_size,
                       "num_grf", (int)st.num_grf);
}

static PyObject* executable_device(PyObject* self, void* unused) {
  PyObject* d = ((ExecutableObject*)self)->device;
  Py_INCREF(d);
  return d;
}

static PyObject* executable_artifact(PyObject* self, void* unused) {
  PyObject* a = ((ExecutableObject*)self)->artifact;
  Py_INCREF(a);
  return a;
}

static PyMethodDef executable_methods[] = {
    {"launch", FN(executable_launch), KW,
     "launch(grid, args)\ngrid: 1 to 3 ints; args: (kind, value) per kernel "
     "argument: ints, floats, pointers as Buffers or int addresses, f16/bf16 "
     "as raw 16-bit patterns. Runs without the GIL; may return before the "
     "kernel finishes (Device.synchronize waits)."},
    {"stats", executable_stats, METH_NOARGS,
     "stats() -> dict\nspill_bytes, private_bytes, local_bytes, "
     "max_subgroup_size, num_grf (-1 when unknown)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef executable_getset[] = {
    {"device", executable_device, NULL, "The Device it was loaded on.", NULL},
    {"artifact", executable_artifact, NULL, "The Artifact it was loaded from.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot executable_slots[] = {
    {Py_tp_dealloc, executable_dealloc},
    {Py_tp_methods, executable_methods},
    {Py_tp_getset, executable_getset},
    {Py_tp_doc, "A kernel loaded on a device (from Device.load)."},
    {0, NULL},
};

// ---------------------------------------------------------------------------

static PyType_Spec device_spec = {
    .name = "zetile._zetile.Device",
    .basicsize = sizeof(DeviceObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = device_slots,
};
static PyType_Spec buffer_spec = {
    .name = "zetile._zetile.Buffer",
    .basicsize = sizeof(BufferObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = buffer_slots,
};
static PyType_Spec executable_spec = {
    .name = "zetile._zetile.Executable",
    .basicsize = sizeof(ExecutableObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = executable_slots,
};

// target_info(name) -> dict or None: the Intel GPU target table's row
// (zt_target_info), None for "cpu" and names without a row.
static PyObject* py_target_info(PyObject* self, PyObject* arg) {
  const char* name = NULL;
  if (!PyArg_Parse(arg, "s:target_info", &name)) return NULL;
  zt_target_info_t t;
  zt_status_t s = zt_target_info(name, &t);
  if (s) {
    if (zt_status_code(s) == ZT_STATUS_NOT_FOUND) {
      zt_status_free(s);
      Py_RETURN_NONE;
    }
    return zpy_raise(s);
  }
  return Py_BuildValue("{s:s,s:s,s:i,s:O,s:O,s:O,s:i,s:i,s:i,s:L,s:O}", "name", t.name, "arch",
                       t.arch, "subgroup_size", (int)t.subgroup_size, "xmx",
                       t.xmx ? Py_True : Py_False, "dp4a", t.dp4a ? Py_True : Py_False,
                       "block_io_2d", t.block_io_2d ? Py_True : Py_False, "grf", (int)t.grf,
                       "grf_large", (int)t.grf_large, "grf_bytes", (int)t.grf_bytes,
                       "slm_per_workgroup", (long long)t.slm_per_workgroup, "simd8_lowering",
                       t.simd8_lowering ? Py_True : Py_False);
}

static PyMethodDef runtime_functions[] = {
    {"devices", py_devices, METH_NOARGS,
     "devices() -> list[dict]\nEvery device that can be opened now (see "
     "Device.info for the keys)."},
    {"target_info", py_target_info, METH_O,
     "target_info(name) -> dict | None\nThe Intel GPU target's row (subgroup_size, xmx, "
     "dp4a, block_io_2d, grf, grf_large, grf_bytes, slm_per_workgroup, simd8_lowering); None "
     "for cpu."},
    {NULL, NULL, 0, NULL},
};

static int add_type(PyObject* m, const char* name, PyType_Spec* spec,
                    PyTypeObject** out) {
  PyObject* type = PyType_FromSpec(spec);
  if (!type) return -1;
  *out = (PyTypeObject*)type;
  Py_INCREF(type);  // the static pointer keeps one reference
  if (PyModule_AddObject(m, name, type) < 0) {
    Py_DECREF(type);
    return -1;
  }
  return 0;
}

int zpy_runtime_init(PyObject* m) {
  if (add_type(m, "Device", &device_spec, &g_device_type) < 0 ||
      add_type(m, "Buffer", &buffer_spec, &g_buffer_type) < 0 ||
      add_type(m, "Executable", &executable_spec, &g_executable_type) < 0 ||
      zpy_launcher_init(m) < 0)
    return -1;
  return PyModule_AddFunctions(m, runtime_functions);
}
