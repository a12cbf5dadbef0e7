// KernelBase: the fast path of `kernel[grid](*args, **kwargs)`, the base
// class of jit.JITFunction (issue 16: a launch from Python cost 14-21 us,
// nearly all of it in Python: binding, specialization, pointer conversion).
//
// A launch computes, in C, a specialization key from its arguments: for each
// parameter a code (the kind of value, the integer class and Triton's hints,
// an array's element type and 16-byte alignment) or, for constexprs and the
// launch options, the value itself. The key is only ever finer than the one
// jit.py specializes on, so a key seen before names the same compiled kernel
// and the same argument packing, which jit.py registers after its first
// (slow) launch with that key (_fast_register). Anything the C path does not
// recognize (tuples, descriptors, strided or byte-swapped arrays, unusual
// tensors, unknown keywords, a device= option, a grid it cannot read) takes
// the slow path, jit.JITFunction._launch_slow, which keeps every check and
// its messages; so does any key not registered yet.
//
// Arrays: numpy's through __array_struct__ (one capsule, no dict), torch
// tensors through DLPack's C exchange table (a DLTensor filled on our stack)
// or, in older torch, to_dlpack, plus is_neg; tensors DLPack cannot describe
// through their C-level methods (is_cpu, dtype, is_contiguous, is_neg,
// data_ptr). Both types are registered by jit.py when it first sees them so
// that this file imports neither library.
#include <stdint.h>
#include <string.h>

#include "zetile_py.h"

#define MAX_PARAMS 64

// Py_XSETREF is not in the limited API.
#define ZPY_SET(dst, v)     \
  do {                      \
    PyObject* old_ = (dst); \
    (dst) = (v);            \
    Py_XDECREF(old_);       \
  } while (0)
#define NUM_OPTIONS 5

static const char* const option_names[NUM_OPTIONS] = {"num_warps", "num_stages", "num_ctas",
                                                     "grf_mode", "compat"};

// Per-parameter codes. Constexprs and options are compared by value.
enum {
  CODE_CONSTEXPR = 1,
  CODE_NONE = 2,
  CODE_BOOL = 3,
  CODE_FLOAT = 4,
  CODE_INT = 0x100,     // | class << 2 | (v == 1) << 1 | (v > 0 && v % 16 == 0)
  CODE_NUMPY = 0x1000,  // | typekind << 8 | itemsize << 1 | aligned16  (<< 4 below)
  CODE_TORCH = 0x2000000,
  CODE_ZT_TENSOR = 0x4000000,  // | dtype code << 1 | aligned16
};

typedef struct entry_s {
  int64_t codes[MAX_PARAMS];
  PyObject* values[MAX_PARAMS];  // constexpr values (strong), else NULL
  PyObject* options[NUM_OPTIONS];
  PyObject* device;
  PyObject* compiled;    // what run() returns (jit.CompiledKernel)
  PyObject* executable;  // its _zetile.Executable
  int32_t num_values;    // run-time arguments, in kernel order
  int8_t param[MAX_PARAMS];
  int8_t kind[MAX_PARAMS];
} entry_t;

typedef struct {
  PyObject_HEAD
  int32_t num_params;  // 0 until _fast_setup
  PyObject* names;     // tuple of parameter names
  PyObject* defaults;  // tuple: default or None, with has_default
  uint8_t is_constexpr[MAX_PARAMS];
  uint8_t has_default[MAX_PARAMS];
  // Entries are only appended, and freed with the kernel: a launch may run
  // Python code (a constexpr's __eq__, a grid function) while it holds one,
  // and another thread may register or retire entries meanwhile. Retired
  // ones (_fast_clear) sit below live_from.
  entry_t** entries;
  int32_t num_entries, cap_entries, mru, live_from;
  PyObject* last_grid;   // kernel[grid] of the last grid object, reused
  PyObject* last_bound;
} KernelObject;

static PyTypeObject* g_kernel_type;
static int g_disabled;  // ZETILE_LAUNCH_C=0: every launch takes the slow path (to compare)

// The default device as jit.py last resolved it (runtime.get_device(None)):
// valid while set_device's choice stands (explicit) or $ZETILE_DEVICE still
// reads the same.
static PyObject* g_device;
static int g_device_explicit;
static char* g_device_env;  // NULL: unset
static int g_device_env_set;

// Types and dtypes jit.py registered (identity compared).
#define MAX_TYPES 8
static PyTypeObject* g_numpy_types[MAX_TYPES];
static int g_num_numpy_types;
// DLPack's C exchange table (dlpack.h 1.2+, `__dlpack_c_exchange_api__` on
// the tensor type, a capsule named "dlpack_exchange_api"; torch 2.10+):
// dltensor_from_py_object_no_sync fills a DLTensor the caller owns, without
// the capsule, allocation and deleter of to_dlpack (~0.5 us a tensor, most
// of a torch launch). Only the fields up to that function are read.
typedef struct dl_tensor_s dl_tensor_t;
typedef struct {
  uint32_t major, minor;
  void* prev_api;
  void* managed_tensor_allocator;
  void* managed_tensor_from_py_object_no_sync;
  void* managed_tensor_to_py_object_no_sync;
  int (*dltensor_from_py_object_no_sync)(void* py_object, dl_tensor_t* out);
} dl_exchange_api_t;

typedef struct {
  PyTypeObject* type;
  PyObject *is_contiguous, *is_neg, *data_ptr;  // the type's methods
  // From the type's exchange table, or NULL (older torch): to_dlpack then.
  int (*dl_from)(void* py_object, dl_tensor_t* out);
} torch_type_t;
static torch_type_t g_torch_types[MAX_TYPES];
static int g_num_torch_types;
static PyObject* g_torch_dtypes;  // dict: torch.dtype -> small int
static PyObject* g_to_dlpack;     // torch.utils.dlpack.to_dlpack
static PyObject* g_value_types;   // tuple of types whose instances are immutable constexprs
static PyTypeObject* g_zt_tensor_type;  // zetile.Tensor
static PyObject* g_zt_dtypes;           // dict: zetile dtype -> small int
static PyObject *g_str_device, *g_str_buffer;
static PyObject* g_str_array_struct;

// ---------------------------------------------------------------------------
// Keys

// numpy's array interface struct (the __array_struct__ protocol).
typedef struct {
  int two;
  int nd;
  char typekind;
  int itemsize;
  int flags;
  Py_intptr_t* shape;
  Py_intptr_t* strides;
  void* data;
  PyObject* descr;
} array_interface_t;
#define NPY_C_CONTIGUOUS 0x0001
#define NPY_ALIGNED 0x0100
#define NPY_NOTSWAPPED 0x0200
#define NPY_HAS_DESCR 0x0800

// 1: key code and address set; 0: not an array this path takes; -1: error.
static int numpy_code(PyObject* o, int64_t* code, uint64_t* addr) {
  PyObject* cap = PyObject_GetAttr(o, g_str_array_struct);
  if (!cap) {
    PyErr_Clear();
    return 0;
  }
  array_interface_t* ai = PyCapsule_GetPointer(cap, NULL);
  int rc = 0;
  if (!ai) {
    PyErr_Clear();
  } else if (ai->two == 2 && (ai->flags & NPY_C_CONTIGUOUS) && (ai->flags & NPY_ALIGNED) &&
             (ai->flags & NPY_NOTSWAPPED) && !(ai->flags & NPY_HAS_DESCR) &&
             strchr("biuf", ai->typekind) && ai->typekind && ai->itemsize > 0 &&
             ai->itemsize <= 16) {
    uint64_t a = (uint64_t)(uintptr_t)ai->data;
    *addr = a;
    *code = CODE_NUMPY | ((int64_t)(unsigned char)ai->typekind << 12) |
            ((int64_t)ai->itemsize << 4) | (a % 16 == 0);
    rc = 1;
  }
  Py_DECREF(cap);
  return rc;
}

static PyObject* call1(PyObject* fn, PyObject* o) {
  return PyObject_CallFunctionObjArgs(fn, o, NULL);
}

// Interned attribute names of torch tensors.
static PyObject *g_str_is_cpu, *g_str_dtype;

// DLPack's tensor (dlpack.h, ABI-stable since v0.2; what to_dlpack's
// "dltensor" capsule holds). One call gives address, device, element type,
// shape and strides, where the tensor's own methods take five.
struct dl_tensor_s {
  void* data;
  int32_t device_type, device_id;
  int32_t ndim;
  uint8_t code, bits;
  uint16_t lanes;
  int64_t* shape;
  int64_t* strides;  // in elements; NULL: compact row-major
  uint64_t byte_offset;
};
#define DL_CPU 1

static bool dl_contiguous(const dl_tensor_t* t) {
  if (!t->strides) return true;
  int64_t expect = 1;
  for (int32_t d = t->ndim - 1; d >= 0; --d) {
    if (t->shape[d] == 0) return true;
    if (t->shape[d] != 1 && t->strides[d] != expect) return false;
    expect *= t->shape[d];
  }
  return true;
}

// A tensor's DLPack description: 1, 0 (slow path) or 2 (ask the tensor).
static int dl_code(const dl_tensor_t* dl, int64_t* code, uint64_t* addr) {
  if (dl->lanes != 1 || !(dl->code <= 1 || (dl->code == 2 && dl->bits >= 16) || dl->code == 4 ||
                          dl->code == 6))
    // Element types whose DLPack code does not tell them apart (8-bit
    // floats of several formats): the tensor's dtype decides.
    return 2;
  if (dl->device_type != DL_CPU || !dl_contiguous(dl)) return 0;
  uint64_t a = (uint64_t)(uintptr_t)dl->data + dl->byte_offset;
  *addr = a;
  *code = CODE_TORCH | ((int64_t)dl->code << 12) | ((int64_t)dl->bits << 1) | (a % 16 == 0);
  return 1;
}

// Through DLPack: 1, 0 (slow path) or 2 (DLPack refused it: ask the tensor).
static int torch_code_dlpack(const torch_type_t* t, PyObject* o, int64_t* code, uint64_t* addr) {
  int rc;
  if (t->dl_from) {
    // The DLTensor is valid until we return to Python; the data lives as
    // long as the tensor, which the caller holds for the whole launch.
    dl_tensor_t dl;
    if (t->dl_from(o, &dl) != 0) {
      PyErr_Clear();  // no storage (sparse, meta): the tensor's methods decide
      return 2;
    }
    rc = dl_code(&dl, code, addr);
  } else {
    PyObject* cap = call1(g_to_dlpack, o);
    if (!cap) {
      PyErr_Clear();  // requires_grad, unusual dtypes: the tensor's own methods decide
      return 2;
    }
    const dl_tensor_t* dl = PyCapsule_GetPointer(cap, "dltensor");
    if (!dl) PyErr_Clear();
    rc = dl ? dl_code(dl, code, addr) : 2;
    Py_DECREF(cap);  // its destructor calls the tensor's deleter
  }
  if (rc != 1) return rc;
  // A pending negation (a lazy view, `x.conj().imag`) is not in DLPack's
  // description.
  PyObject* r = call1(t->is_neg, o);
  if (!r) return -1;
  rc = r == Py_False;
  Py_DECREF(r);
  return rc;
}

// 1: code and address set; 0: slow path; -1: error.
static int torch_code(const torch_type_t* t, PyObject* o, int64_t* code, uint64_t* addr) {
  if (t->dl_from || g_to_dlpack) {
    int rc = torch_code_dlpack(t, o, code, addr);
    if (rc != 2) return rc;
  }
  PyObject* r = PyObject_GetAttr(o, g_str_is_cpu);
  if (!r) return -1;
  int ok = r == Py_True;
  Py_DECREF(r);
  if (!ok) return 0;  // xpu tensors: the slow path checks the device
  PyObject* dt = PyObject_GetAttr(o, g_str_dtype);
  if (!dt) return -1;
  PyObject* dcode = PyDict_GetItem(g_torch_dtypes, dt);  // borrowed
  Py_DECREF(dt);
  if (!dcode) return 0;
  long dc = PyLong_AsLong(dcode);
  r = call1(t->is_contiguous, o);
  if (!r) return -1;
  ok = r == Py_True;
  Py_DECREF(r);
  if (!ok) return 0;
  r = call1(t->is_neg, o);
  if (!r) return -1;
  ok = r == Py_False;
  Py_DECREF(r);
  if (!ok) return 0;
  r = call1(t->data_ptr, o);
  if (!r) {
    PyErr_Clear();  // no storage (sparse, meta): the slow path says why
    return 0;
  }
  uint64_t a = PyLong_AsUnsignedLongLong(r);
  Py_DECREF(r);
  if (PyErr_Occurred()) return -1;
  *addr = a;
  *code = CODE_TORCH | ((int64_t)dc << 1) | (a % 16 == 0);
  return 1;
}

// zetile.Tensor: its buffer's address, if it lives on the launch's device
// (another device, even of the same name, is the slow path's to judge).
static int zt_tensor_code(PyObject* o, PyObject* device, int64_t* code, uint64_t* addr) {
  PyObject* d = PyObject_GetAttr(o, g_str_device);
  if (!d) return -1;
  int same = d == device;
  Py_DECREF(d);
  if (!same) return 0;
  PyObject* dt = PyObject_GetAttr(o, g_str_dtype);
  if (!dt) return -1;
  PyObject* dcode = g_zt_dtypes ? PyDict_GetItem(g_zt_dtypes, dt) : NULL;
  Py_DECREF(dt);
  if (!dcode) return 0;
  long dc = PyLong_AsLong(dcode);
  PyObject* buf = PyObject_GetAttr(o, g_str_buffer);
  if (!buf) return -1;
  int ok = zpy_buffer_address(buf, addr);
  Py_DECREF(buf);
  if (!ok) return 0;
  *code = CODE_ZT_TENSOR | ((int64_t)dc << 1) | (*addr % 16 == 0);
  return 1;
}

// A constexpr or option value the fast path can compare: immutable.
static int simple_value(PyObject* v) {
  if (v == Py_None || PyBool_Check(v)) return 1;
  PyTypeObject* t = Py_TYPE(v);
  if (t == &PyLong_Type || t == &PyFloat_Type || t == &PyUnicode_Type) return 1;
  if (PyObject_TypeCheck(v, g_kernel_type)) return 1;  // @jit functions, by identity
  if (g_value_types) {
    Py_ssize_t n = PyTuple_Size(g_value_types);
    for (Py_ssize_t i = 0; i < n; ++i)
      if (PyObject_TypeCheck(v, (PyTypeObject*)PyTuple_GetItem(g_value_types, i))) return 1;
  }
  return 0;
}

// What one launch's arguments are, before an entry is chosen.
typedef struct {
  PyObject* vals[MAX_PARAMS];  // borrowed
  PyObject* options[NUM_OPTIONS];
  int64_t codes[MAX_PARAMS];
  uint64_t addrs[MAX_PARAMS];
  int64_t ints[MAX_PARAMS];
} call_t;

// Whether argument i is the object an earlier run-time argument already read
// as an array; its code and address are copied then.
static bool same_array_before(const KernelObject* k, call_t* c, int32_t i) {
  for (int32_t j = 0; j < i; ++j) {
    if (c->vals[j] != c->vals[i] || k->is_constexpr[j]) continue;
    int64_t code = c->codes[j];
    if (code < CODE_NUMPY) continue;  // array codes are the only ones this large
    c->codes[i] = code;
    c->addrs[i] = c->addrs[j];
    return true;
  }
  return false;
}

// 1: every parameter has a code; 0: slow path; -1: error.
static int compute_codes(KernelObject* k, call_t* c, PyObject* device) {
  for (int32_t i = 0; i < k->num_params; ++i) {
    PyObject* v = c->vals[i];
    if (k->is_constexpr[i]) {
      if (!simple_value(v)) return 0;
      c->codes[i] = CODE_CONSTEXPR;
      continue;
    }
    PyTypeObject* t = Py_TYPE(v);
    if (v == Py_None) {
      c->codes[i] = CODE_NONE;
    } else if (v == Py_True || v == Py_False) {
      c->codes[i] = CODE_BOOL;
      c->ints[i] = v == Py_True;
    } else if (t == &PyLong_Type) {
      int overflow = 0;
      long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
      if (overflow || (x == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;  // beyond int64: the slow path takes uint64 or raises
      }
      int cls = x >= INT32_MIN && x <= INT32_MAX ? 0 : x >= 0 && x <= (long long)UINT32_MAX ? 1 : 2;
      c->codes[i] = CODE_INT | (cls << 2) | ((x == 1) << 1) | (x > 0 && x % 16 == 0);
      c->ints[i] = x;
    } else if (t == &PyFloat_Type) {
      c->codes[i] = CODE_FLOAT;
    } else if (same_array_before(k, c, i)) {
      // The same array object as an earlier argument (a kernel writing in
      // place): read once. Each read of a torch tensor is ~350 ns of torch's
      // own calls (DLPack's exchange and is_neg, each taking or releasing
      // the GIL); the object cannot change between two reads in one launch
      // that its first read would not also have missed.
    } else {
      int rc = 0;
      for (int j = 0; j < g_num_numpy_types; ++j)
        if (t == g_numpy_types[j]) rc = numpy_code(v, &c->codes[i], &c->addrs[i]);
      if (t == g_zt_tensor_type) rc = zt_tensor_code(v, device, &c->codes[i], &c->addrs[i]);
      for (int j = 0; rc == 0 && j < g_num_torch_types; ++j)
        if (t == g_torch_types[j].type) {
          rc = torch_code(&g_torch_types[j], v, &c->codes[i], &c->addrs[i]);
          break;
        }
      if (rc <= 0) return rc;
    }
  }
  return 1;
}

// Same value for a constexpr or an option: the same object, or equal values
// of the same type (1 and True and 1.0 compile differently).
static int same_value(PyObject* a, PyObject* b) {
  if (a == b) return 1;
  if (!a || !b || Py_TYPE(a) != Py_TYPE(b)) return 0;
  int eq = PyObject_RichCompareBool(a, b, Py_EQ);
  if (eq < 0) PyErr_Clear();
  return eq > 0;
}

static int entry_matches(const KernelObject* k, const entry_t* e, const call_t* c,
                         PyObject* device) {
  if (e->device != device) return 0;
  if (memcmp(e->codes, c->codes, (size_t)k->num_params * sizeof c->codes[0]) != 0) return 0;
  for (int32_t i = 0; i < k->num_params; ++i)
    if (k->is_constexpr[i] && !same_value(e->values[i], c->vals[i])) return 0;
  for (int i = 0; i < NUM_OPTIONS; ++i)
    if (!same_value(e->options[i], c->options[i])) return 0;
  return 1;
}

// ---------------------------------------------------------------------------
// Binding

// 1: bound; 0: slow path (it raises the binding errors).
static int bind(KernelObject* k, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames,
                call_t* c) {
  if (nargs > k->num_params) return 0;
  memset(c->vals, 0, sizeof(PyObject*) * (size_t)k->num_params);
  memset(c->options, 0, sizeof c->options);
  for (Py_ssize_t i = 0; i < nargs; ++i) c->vals[i] = args[i];
  Py_ssize_t nkw = kwnames ? PyTuple_Size(kwnames) : 0;
  for (Py_ssize_t j = 0; j < nkw; ++j) {
    PyObject* name = PyTuple_GetItem(kwnames, j);
    PyObject* v = args[nargs + j];
    int32_t found = -1;
    for (int32_t i = 0; i < k->num_params && found < 0; ++i)
      if (PyTuple_GetItem(k->names, i) == name) found = i;  // interned: identity first
    for (int32_t i = 0; i < k->num_params && found < 0; ++i)
      if (PyUnicode_Compare(PyTuple_GetItem(k->names, i), name) == 0) found = i;
    if (found >= 0) {
      if (c->vals[found]) return 0;  // given twice
      c->vals[found] = v;
      continue;
    }
    int opt = -1;
    for (int i = 0; i < NUM_OPTIONS && opt < 0; ++i)
      if (PyUnicode_CompareWithASCIIString(name, option_names[i]) == 0) opt = i;
    if (opt < 0 || !simple_value(v)) return 0;  // device=, unknown names
    c->options[opt] = v == Py_None ? NULL : v;  // None: the option's default
  }
  if (PyErr_Occurred()) PyErr_Clear();
  for (int32_t i = 0; i < k->num_params; ++i) {
    if (c->vals[i]) continue;
    if (!k->has_default[i]) return 0;
    c->vals[i] = PyTuple_GetItem(k->defaults, i);
  }
  return 1;
}

static PyObject* current_device(void) {
  if (!g_device) return NULL;
  if (g_device_explicit) return g_device;
  const char* env = getenv("ZETILE_DEVICE");
  if (!env || !env[0]) env = NULL;
  if (!env != !g_device_env_set) return NULL;
  if (env && strcmp(env, g_device_env) != 0) return NULL;
  return g_device;
}

// 1: grid read (a tuple or list of 1-3 ints, or an int); 0: slow path.
static int read_grid(PyObject* g, uint32_t grid[3]) {
  grid[0] = grid[1] = grid[2] = 1;
  PyObject* const* items;
  Py_ssize_t n;
  PyObject* one[1];
  if (PyLong_CheckExact(g)) {
    one[0] = g;
    items = one;
    n = 1;
  } else if (PyTuple_CheckExact(g)) {
    n = PyTuple_Size(g);
    if (n < 1 || n > 3) return 0;
    items = NULL;  // read with PyTuple_GetItem
  } else {
    return 0;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* v = items ? items[i] : PyTuple_GetItem(g, i);
    if (!PyLong_CheckExact(v)) return 0;
    long long x = PyLong_AsLongLong(v);
    if (x == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return 0;
    }
    if (x < 0 || x > INT32_MAX) return 0;  // the slow path's message
    grid[i] = (uint32_t)x;
  }
  return 1;
}

// ---------------------------------------------------------------------------
// Launching

static PyObject* launch_slow(KernelObject* k, PyObject* grid, PyObject* key,
                             PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  PyObject* targs = PyTuple_New(nargs);
  PyObject* kw = PyDict_New();
  if (!targs || !kw) goto fail;
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    Py_INCREF(args[i]);
    PyTuple_SetItem(targs, i, args[i]);
  }
  Py_ssize_t nkw = kwnames ? PyTuple_Size(kwnames) : 0;
  for (Py_ssize_t j = 0; j < nkw; ++j)
    if (PyDict_SetItem(kw, PyTuple_GetItem(kwnames, j), args[nargs + j]) < 0) goto fail;
  PyObject* r = PyObject_CallMethod((PyObject*)k, "_launch_slow", "OOOO", grid,
                                    key ? key : Py_None, targs, kw);
  Py_DECREF(targs);
  Py_DECREF(kw);
  return r;
fail:
  Py_XDECREF(targs);
  Py_XDECREF(kw);
  return NULL;
}

// The key handed to the slow path for registration: codes and values as a
// capsule-free tuple (codes..., constexpr values..., options...).
static PyObject* key_tuple(KernelObject* k, const call_t* c, PyObject* device) {
  PyObject* t = PyTuple_New(2 * k->num_params + NUM_OPTIONS + 1);
  if (!t) return NULL;
  for (int32_t i = 0; i < k->num_params; ++i) {
    PyObject* code = PyLong_FromLongLong(c->codes[i]);
    if (!code) {
      Py_DECREF(t);
      return NULL;
    }
    PyTuple_SetItem(t, i, code);
    PyObject* v = k->is_constexpr[i] ? c->vals[i] : Py_None;
    Py_INCREF(v);
    PyTuple_SetItem(t, k->num_params + i, v);
  }
  for (int i = 0; i < NUM_OPTIONS; ++i) {
    PyObject* v = c->options[i] ? c->options[i] : Py_None;
    Py_INCREF(v);
    PyTuple_SetItem(t, 2 * k->num_params + i, v);
  }
  Py_INCREF(device);
  PyTuple_SetItem(t, 2 * k->num_params + NUM_OPTIONS, device);
  return t;
}

static PyObject* kernel_launch(KernelObject* k, PyObject* grid, PyObject* const* args,
                               Py_ssize_t nargs, PyObject* kwnames) {
  call_t c;
  PyObject* device = current_device();
  if (g_disabled || !k->num_params || !device || !bind(k, args, nargs, kwnames, &c))
    return launch_slow(k, grid, NULL, args, nargs, kwnames);
  int rc = compute_codes(k, &c, device);
  if (rc < 0) return NULL;
  if (rc == 0) return launch_slow(k, grid, NULL, args, nargs, kwnames);
  entry_t* e = NULL;
  if (k->mru >= k->live_from && k->mru < k->num_entries &&
      entry_matches(k, k->entries[k->mru], &c, device)) {
    e = k->entries[k->mru];
  } else {
    for (int32_t i = k->live_from; i < k->num_entries && !e; ++i)
      if (entry_matches(k, k->entries[i], &c, device)) {
        e = k->entries[i];
        k->mru = i;
      }
  }
  uint32_t g[3];
  int have_grid = e ? read_grid(grid, g) : 0;
  if (e && !have_grid && !PyTuple_Check(grid) && !PyList_Check(grid) && PyCallable_Check(grid)) {
    // grid(meta): meta maps every parameter to its value, as in the slow path.
    PyObject* meta = PyDict_New();
    if (!meta) return NULL;
    for (int32_t i = 0; i < k->num_params; ++i)
      if (PyDict_SetItem(meta, PyTuple_GetItem(k->names, i), c.vals[i]) < 0) {
        Py_DECREF(meta);
        return NULL;
      }
    PyObject* r = PyObject_CallFunctionObjArgs(grid, meta, NULL);
    Py_DECREF(meta);
    if (!r) return NULL;
    have_grid = read_grid(r, g);
    Py_DECREF(r);
  }
  if (!e || !have_grid) {
    PyObject* key = e ? NULL : key_tuple(k, &c, device);
    if (!e && !key) return NULL;
    PyObject* r = launch_slow(k, grid, key, args, nargs, kwnames);
    Py_XDECREF(key);
    return r;
  }
  PyObject* compiled = e->compiled;
  Py_INCREF(compiled);
  if (g[0] && g[1] && g[2]) {
    zt_arg_t zargs[MAX_PARAMS];
    for (int32_t j = 0; j < e->num_values; ++j) {
      int32_t i = e->param[j];
      zt_arg_t* a = &zargs[j];
      a->kind = (zt_scalar_kind_t)e->kind[j];
      a->value.i = 0;
      if (a->kind == ZT_PTR) {
        a->value.ptr = c.addrs[i];
      } else if (a->kind == ZT_F32 || a->kind == ZT_F64) {
        a->value.f = PyFloat_AsDouble(c.vals[i]);
      } else {
        a->value.i = c.ints[i];
      }
    }
    // The entry may be freed by another thread while the GIL is released.
    PyObject* exe_obj = e->executable;
    Py_INCREF(exe_obj);
    zt_executable_t* exe = zpy_executable_handle(exe_obj);
    rc = exe ? zpy_launch(exe, g, e->num_values, zargs, NULL) : -1;
    Py_DECREF(exe_obj);
    if (rc < 0) {
      Py_DECREF(compiled);
      return NULL;
    }
  }
  return compiled;
}

// kernel[grid] returns a builtin method whose self is (kernel, grid): called
// with vectorcall's arguments, no tuple or dict built.
static PyObject* bound_launch(PyObject* self, PyObject* const* args, Py_ssize_t nargsf,
                              PyObject* kwnames) {
  KernelObject* k = (KernelObject*)PyTuple_GetItem(self, 0);
  PyObject* grid = PyTuple_GetItem(self, 1);
  return kernel_launch(k, grid, args, nargsf, kwnames);  // METH_FASTCALL: a plain count
}

static PyMethodDef bound_launch_def = {
    "launch", (PyCFunction)(void (*)(void))bound_launch, METH_FASTCALL | METH_KEYWORDS,
    "Launches the kernel on the grid given to kernel[grid]."};

// Two grids of the same ints (a grid computed per call, `(cdiv(n, B),)`).
static int same_int_tuple(PyObject* a, PyObject* b) {
  if (!PyTuple_CheckExact(a) || !PyTuple_CheckExact(b)) return 0;
  Py_ssize_t n = PyTuple_Size(a);
  if (n != PyTuple_Size(b) || n < 1 || n > 3) return 0;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject *x = PyTuple_GetItem(a, i), *y = PyTuple_GetItem(b, i);
    if (x == y) continue;
    if (!PyLong_CheckExact(x) || !PyLong_CheckExact(y)) return 0;
    int eq = PyObject_RichCompareBool(x, y, Py_EQ);
    if (eq <= 0) {
      PyErr_Clear();
      return 0;
    }
  }
  return 1;
}

static PyObject* kernel_subscript(PyObject* self, PyObject* grid) {
  KernelObject* k = (KernelObject*)self;
  if (k->last_bound && (k->last_grid == grid || same_int_tuple(k->last_grid, grid))) {
    Py_INCREF(k->last_bound);
    return k->last_bound;
  }
  PyObject* pair = PyTuple_Pack(2, self, grid);
  if (!pair) return NULL;
  PyObject* f = PyCFunction_NewEx(&bound_launch_def, pair, NULL);
  Py_DECREF(pair);
  if (!f) return NULL;
  // Grids written in the launch line (`k[(1,)](...)`) are the same constant
  // object every time: keep the last one's method.
  Py_INCREF(grid);
  ZPY_SET(k->last_grid, grid);
  Py_INCREF(f);
  ZPY_SET(k->last_bound, f);
  return f;
}

// ---------------------------------------------------------------------------
// Set-up and registration (called by jit.py)

static PyObject* kernel_fast_setup(PyObject* self, PyObject* args) {
  KernelObject* k = (KernelObject*)self;
  PyObject *names, *constexpr_flags, *defaults;
  if (!PyArg_ParseTuple(args, "O!O!O!:_fast_setup", &PyTuple_Type, &names, &PyTuple_Type,
                        &constexpr_flags, &PyTuple_Type, &defaults))
    return NULL;
  Py_ssize_t n = PyTuple_Size(names);
  if (PyTuple_Size(constexpr_flags) != n || PyTuple_Size(defaults) != n)
    return PyErr_Format(PyExc_ValueError, "_fast_setup: lengths differ");
  if (n > MAX_PARAMS) n = 0;  // more parameters than the fast path keeps: slow path only
  for (Py_ssize_t i = 0; i < n; ++i) {
    k->is_constexpr[i] = PyObject_IsTrue(PyTuple_GetItem(constexpr_flags, i)) == 1;
    PyObject* d = PyTuple_GetItem(defaults, i);  // (has_default, value)
    if (!PyTuple_Check(d) || PyTuple_Size(d) != 2)
      return PyErr_Format(PyExc_ValueError, "_fast_setup: defaults are (has, value) pairs");
    k->has_default[i] = PyObject_IsTrue(PyTuple_GetItem(d, 0)) == 1;
  }
  PyObject* dvals = PyTuple_New(n);
  if (!dvals) return NULL;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* v = PyTuple_GetItem(PyTuple_GetItem(defaults, i), 1);
    Py_INCREF(v);
    PyTuple_SetItem(dvals, i, v);
  }
  Py_INCREF(names);
  ZPY_SET(k->names, names);
  ZPY_SET(k->defaults, dvals);
  k->num_params = (int32_t)n;
  Py_RETURN_NONE;
}

static void entry_free(entry_t* e) {
  for (int i = 0; i < MAX_PARAMS; ++i) Py_XDECREF(e->values[i]);
  for (int i = 0; i < NUM_OPTIONS; ++i) Py_XDECREF(e->options[i]);
  Py_XDECREF(e->device);
  Py_XDECREF(e->compiled);
  Py_XDECREF(e->executable);
  PyMem_Free(e);
}

static void free_entries(KernelObject* k) {
  entry_t** entries = k->entries;
  int32_t n = k->num_entries;
  k->entries = NULL;
  k->num_entries = k->cap_entries = k->mru = k->live_from = 0;
  for (int32_t i = 0; i < n; ++i) entry_free(entries[i]);
  PyMem_Free(entries);
}

// _fast_register(key, compiled, executable, plan): plan is ((param index,
// kind), ...) for the run-time arguments in kernel order.
static PyObject* kernel_fast_register(PyObject* self, PyObject* args) {
  KernelObject* k = (KernelObject*)self;
  PyObject *key, *compiled, *exe, *plan;
  if (!PyArg_ParseTuple(args, "O!OOO!:_fast_register", &PyTuple_Type, &key, &compiled, &exe,
                        &PyTuple_Type, &plan))
    return NULL;
  int32_t n = k->num_params;
  if (PyTuple_Size(key) != 2 * n + NUM_OPTIONS + 1 || PyTuple_Size(plan) > MAX_PARAMS)
    return PyErr_Format(PyExc_ValueError, "_fast_register: key or plan of the wrong size");
  if (!zpy_executable_handle(exe)) return NULL;
  entry_t* e = PyMem_Calloc(1, sizeof *e);
  if (!e) return PyErr_NoMemory();
  for (int32_t i = 0; i < n; ++i) {
    e->codes[i] = PyLong_AsLongLong(PyTuple_GetItem(key, i));
    if (k->is_constexpr[i]) {
      e->values[i] = PyTuple_GetItem(key, n + i);
      Py_INCREF(e->values[i]);
    }
  }
  for (int i = 0; i < NUM_OPTIONS; ++i) {
    PyObject* v = PyTuple_GetItem(key, 2 * n + i);
    if (v != Py_None) {
      Py_INCREF(v);
      e->options[i] = v;
    }
  }
  e->device = PyTuple_GetItem(key, 2 * n + NUM_OPTIONS);
  Py_INCREF(e->device);
  e->compiled = compiled;
  Py_INCREF(compiled);
  e->executable = exe;
  Py_INCREF(exe);
  e->num_values = (int32_t)PyTuple_Size(plan);
  for (int32_t j = 0; j < e->num_values; ++j) {
    PyObject* p = PyTuple_GetItem(plan, j);
    long idx = -1, kind = -1;
    if (PyTuple_Check(p) && PyTuple_Size(p) == 2) {
      idx = PyLong_AsLong(PyTuple_GetItem(p, 0));
      kind = PyLong_AsLong(PyTuple_GetItem(p, 1));
    }
    if (idx < 0 || idx >= n || kind < 0 || kind >= ZT_SCALAR_KIND_COUNT) {
      entry_free(e);
      if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "_fast_register: bad plan");
      return NULL;
    }
    e->param[j] = (int8_t)idx;
    e->kind[j] = (int8_t)kind;
  }
  if (PyErr_Occurred()) {
    entry_free(e);
    return NULL;
  }
  if (k->num_entries == k->cap_entries) {
    int32_t cap = k->cap_entries ? 2 * k->cap_entries : 4;
    entry_t** grown = PyMem_Realloc(k->entries, (size_t)cap * sizeof *grown);
    if (!grown) {
      entry_free(e);
      return PyErr_NoMemory();
    }
    k->entries = grown;
    k->cap_entries = cap;
  }
  k->mru = k->num_entries;
  k->entries[k->num_entries++] = e;
  Py_RETURN_NONE;
}

static PyObject* kernel_fast_clear(PyObject* self, PyObject* unused) {
  KernelObject* k = (KernelObject*)self;
  k->live_from = k->mru = k->num_entries;  // retired, freed with the kernel
  Py_RETURN_NONE;
}

static PyObject* kernel_fast_entries(PyObject* self, void* unused) {
  KernelObject* k = (KernelObject*)self;
  return PyLong_FromLong(k->num_entries - k->live_from);
}

static int kernel_traverse(PyObject* self, visitproc visit, void* arg) {
  KernelObject* k = (KernelObject*)self;
  Py_VISIT(Py_TYPE(self));  // instances of a heap type hold it
  Py_VISIT(k->names);
  Py_VISIT(k->defaults);
  Py_VISIT(k->last_grid);
  Py_VISIT(k->last_bound);
  for (int32_t i = 0; i < k->num_entries; ++i) {
    entry_t* e = k->entries[i];
    for (int32_t j = 0; j < MAX_PARAMS; ++j) Py_VISIT(e->values[j]);
    for (int j = 0; j < NUM_OPTIONS; ++j) Py_VISIT(e->options[j]);
    Py_VISIT(e->device);
    Py_VISIT(e->compiled);
    Py_VISIT(e->executable);
  }
  return 0;
}

static int kernel_clear(PyObject* self) {
  KernelObject* k = (KernelObject*)self;
  Py_CLEAR(k->last_grid);
  Py_CLEAR(k->last_bound);
  Py_CLEAR(k->names);
  Py_CLEAR(k->defaults);
  free_entries(k);
  k->num_params = 0;
  return 0;
}

static void kernel_dealloc(PyObject* self) {
  PyObject_GC_UnTrack(self);
  kernel_clear(self);
  PyTypeObject* type = Py_TYPE(self);
  freefunc free_fn = (freefunc)PyType_GetSlot(type, Py_tp_free);
  free_fn(self);
  Py_DECREF(type);
}

// ---------------------------------------------------------------------------
// Module-level registration

static PyObject* py_set_default_device(PyObject* m, PyObject* args) {
  PyObject* dev;
  int explicit_;
  const char* env;
  if (!PyArg_ParseTuple(args, "Opz:_fast_default_device", &dev, &explicit_, &env)) return NULL;
  char* copy = NULL;
  if (env && env[0]) {
    copy = PyMem_Malloc(strlen(env) + 1);
    if (!copy) return PyErr_NoMemory();
    strcpy(copy, env);
  }
  PyMem_Free(g_device_env);
  g_device_env = copy;
  g_device_env_set = copy != NULL;
  g_device_explicit = explicit_;
  Py_INCREF(dev);
  ZPY_SET(g_device, dev);
  Py_RETURN_NONE;
}

static PyObject* py_register_numpy_type(PyObject* m, PyObject* type) {
  if (!PyType_Check(type)) return PyErr_Format(PyExc_TypeError, "expected a type");
  for (int i = 0; i < g_num_numpy_types; ++i)
    if (g_numpy_types[i] == (PyTypeObject*)type) Py_RETURN_NONE;
  if (g_num_numpy_types < MAX_TYPES) {
    Py_INCREF(type);
    g_numpy_types[g_num_numpy_types++] = (PyTypeObject*)type;
  }
  Py_RETURN_NONE;
}

// The type's DLPack exchange function, or NULL (no table, another major
// version; ZETILE_LAUNCH_DLPACK_C=0 to compare with to_dlpack).
static int (*exchange_api(PyObject* type))(void*, dl_tensor_t*) {
  const char* env = getenv("ZETILE_LAUNCH_DLPACK_C");
  if (env && env[0] == '0') return NULL;
  PyObject* cap = PyObject_GetAttrString(type, "__dlpack_c_exchange_api__");
  if (!cap) {
    PyErr_Clear();
    return NULL;
  }
  const dl_exchange_api_t* api = PyCapsule_GetPointer(cap, "dlpack_exchange_api");
  if (!api) PyErr_Clear();
  // The table lives as long as the process (dlpack.h); the capsule is the
  // type's attribute, which is not dropped either.
  Py_DECREF(cap);
  return api && api->major == 1 ? api->dltensor_from_py_object_no_sync : NULL;
}

// _fast_torch(type, dtype, code, to_dlpack): a tensor type and one of its
// dtypes that jit.py accepted (code: the dtype's number in the key), and
// torch's to_dlpack (None: ask tensors through their methods).
static PyObject* py_register_torch(PyObject* m, PyObject* args) {
  PyObject *type, *dtype, *code, *to_dlpack;
  if (!PyArg_ParseTuple(args, "O!OO!O:_fast_torch", &PyType_Type, &type, &dtype, &PyLong_Type,
                        &code, &to_dlpack))
    return NULL;
  if (to_dlpack != Py_None && !g_to_dlpack) {
    Py_INCREF(to_dlpack);
    g_to_dlpack = to_dlpack;
  }
  if (!g_torch_dtypes && !(g_torch_dtypes = PyDict_New())) return NULL;
  if (PyDict_SetItem(g_torch_dtypes, dtype, code) < 0) return NULL;
  for (int i = 0; i < g_num_torch_types; ++i)
    if (g_torch_types[i].type == (PyTypeObject*)type) Py_RETURN_NONE;
  if (g_num_torch_types >= MAX_TYPES) Py_RETURN_NONE;
  torch_type_t t = {(PyTypeObject*)type, NULL, NULL, NULL, NULL};
  t.dl_from = exchange_api(type);
  t.is_contiguous = PyObject_GetAttrString(type, "is_contiguous");
  t.is_neg = PyObject_GetAttrString(type, "is_neg");
  t.data_ptr = PyObject_GetAttrString(type, "data_ptr");
  if (!t.is_contiguous || !t.is_neg || !t.data_ptr) {
    Py_XDECREF(t.is_contiguous);
    Py_XDECREF(t.is_neg);
    Py_XDECREF(t.data_ptr);
    return NULL;
  }
  Py_INCREF(type);
  g_torch_types[g_num_torch_types++] = t;
  Py_RETURN_NONE;
}

// _fast_zetile_tensor(type, dtype, code): zetile.Tensor and a dtype of it.
static PyObject* py_register_zt_tensor(PyObject* m, PyObject* args) {
  PyObject *type, *dtype, *code;
  if (!PyArg_ParseTuple(args, "O!OO!:_fast_zetile_tensor", &PyType_Type, &type, &dtype,
                        &PyLong_Type, &code))
    return NULL;
  if (!g_zt_dtypes && !(g_zt_dtypes = PyDict_New())) return NULL;
  if (PyDict_SetItem(g_zt_dtypes, dtype, code) < 0) return NULL;
  if (!g_zt_tensor_type) {
    Py_INCREF(type);
    g_zt_tensor_type = (PyTypeObject*)type;
  }
  Py_RETURN_NONE;
}

// _fast_torch_exchange(type): whether launches read tensors of this
// registered type through DLPack's C exchange table (tests).
static PyObject* py_torch_exchange(PyObject* m, PyObject* type) {
  for (int i = 0; i < g_num_torch_types; ++i)
    if (g_torch_types[i].type == (PyTypeObject*)type)
      return PyBool_FromLong(g_torch_types[i].dl_from != NULL);
  Py_RETURN_FALSE;
}

static PyObject* py_register_value_types(PyObject* m, PyObject* types) {
  if (!PyTuple_Check(types)) return PyErr_Format(PyExc_TypeError, "expected a tuple of types");
  Py_INCREF(types);
  ZPY_SET(g_value_types, types);
  Py_RETURN_NONE;
}

static PyMethodDef kernel_methods[] = {
    {"_fast_setup", kernel_fast_setup, METH_VARARGS,
     "_fast_setup(names, constexpr_flags, defaults)\nParameters, whether each is a "
     "constexpr, and (has_default, value) for each."},
    {"_fast_register", kernel_fast_register, METH_VARARGS,
     "_fast_register(key, compiled, executable, plan)\nLaunches whose key is `key` "
     "(handed to _launch_slow) run `executable` with plan's ((param, kind), ...)."},
    {"_fast_clear", kernel_fast_clear, METH_NOARGS, "Forgets every registered launch."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef kernel_getset[] = {
    {"_fast_entries", kernel_fast_entries, NULL, "Registered launch signatures (tests).",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot kernel_slots[] = {
    {Py_tp_dealloc, kernel_dealloc},
    {Py_tp_traverse, kernel_traverse},
    {Py_tp_clear, kernel_clear},
    {Py_mp_subscript, kernel_subscript},
    {Py_tp_methods, kernel_methods},
    {Py_tp_getset, kernel_getset},
    {Py_tp_doc, "Base of zetile.jit kernels: kernel[grid](*args) launches in C when the "
                "arguments' signature was seen before."},
    {0, NULL},
};

static PyType_Spec kernel_spec = {
    .name = "zetile._zetile.KernelBase",
    .basicsize = sizeof(KernelObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .slots = kernel_slots,
};

static PyMethodDef launcher_functions[] = {
    {"_fast_default_device", py_set_default_device, METH_VARARGS,
     "_fast_default_device(device, explicit, env)\nThe device launches without device= "
     "use while set_device's choice stands (explicit) or $ZETILE_DEVICE equals env."},
    {"_fast_numpy_type", py_register_numpy_type, METH_O,
     "_fast_numpy_type(type)\nArrays of this type are read through __array_struct__."},
    {"_fast_torch", py_register_torch, METH_VARARGS,
     "_fast_torch(tensor_type, dtype, code, to_dlpack)\nA tensor type and dtype the launch "
     "accepts; torch's to_dlpack or None."},
    {"_fast_zetile_tensor", py_register_zt_tensor, METH_VARARGS,
     "_fast_zetile_tensor(type, dtype, code)\nzetile.Tensor and one of its dtypes."},
    {"_fast_torch_exchange", py_torch_exchange, METH_O,
     "_fast_torch_exchange(type)\nWhether tensors of this registered type are read through "
     "DLPack's C exchange table."},
    {"_fast_value_types", py_register_value_types, METH_O,
     "_fast_value_types(types)\nImmutable constexpr value types (compared by value)."},
    {NULL, NULL, 0, NULL},
};

int zpy_launcher_init(PyObject* m) {
  const char* env = getenv("ZETILE_LAUNCH_C");
  g_disabled = env && env[0] == '0';
  g_str_array_struct = PyUnicode_InternFromString("__array_struct__");
  g_str_is_cpu = PyUnicode_InternFromString("is_cpu");
  g_str_dtype = PyUnicode_InternFromString("dtype");
  g_str_device = PyUnicode_InternFromString("device");
  g_str_buffer = PyUnicode_InternFromString("buffer");
  if (!g_str_array_struct || !g_str_is_cpu || !g_str_dtype || !g_str_device || !g_str_buffer)
    return -1;
  PyObject* type = PyType_FromSpec(&kernel_spec);
  if (!type) return -1;
  g_kernel_type = (PyTypeObject*)type;
  Py_INCREF(type);
  if (PyModule_AddObject(m, "KernelBase", type) < 0) {
    Py_DECREF(type);
    return -1;
  }
  return PyModule_AddFunctions(m, launcher_functions);
}
