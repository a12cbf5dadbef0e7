// zetile._zetile.Builder: one method per zt_builder_* call. Values are the
// builder's int handles; types are (kind, pointee, shape) tuples; every
// error status becomes the matching zetile.Error subclass, whose message
// names the location given to set_loc.
#include <string.h>

#include "zetile_py.h"

typedef struct {
  PyObject_HEAD
  zt_builder_t* b;
  // while_cond writes as many values as the innermost while carries, which
  // its C signature does not repeat: remember the counts of open whiles.
  int32_t* while_n;
  int32_t while_depth, while_cap;
  int32_t while_max;  // the largest count ever opened (sizes the output)
} BuilderObject;

#define B(self) (((BuilderObject*)(self))->b)

static PyObject* builder_new(PyTypeObject* type, PyObject* args, PyObject* kw) {
  if (PyTuple_Size(args) != 0 || (kw && PyDict_Size(kw) != 0)) {
    PyErr_SetString(PyExc_TypeError, "Builder() takes no arguments");
    return NULL;
  }
  BuilderObject* self = (BuilderObject*)zpy_alloc(type);
  if (!self) return NULL;
  zt_status_t s = zt_builder_create(&self->b);
  if (s) {
    Py_DECREF(self);
    return zpy_raise(s);
  }
  return (PyObject*)self;
}

static void builder_dealloc(PyObject* self) {
  BuilderObject* o = (BuilderObject*)self;
  zt_builder_release(o->b);
  PyMem_Free(o->while_n);
  zpy_free(self);
}

// ---------------------------------------------------------------------------
// Kernel and module

static PyObject* set_loc(PyObject* self, PyObject* args, PyObject* kw) {
  static char* kwlist[] = {"file", "line", "col", NULL};
  const char* file;
  int line = 0, col = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|ii:set_loc", kwlist, &file,
                                   &line, &col))
    return NULL;
  zt_builder_set_loc(B(self), file, line, col);
  Py_RETURN_NONE;
}

static PyObject* set_bounds_check(PyObject* self, PyObject* arg) {
  int on = PyObject_IsTrue(arg);
  if (on < 0) return NULL;
  ZPY_TRY(zt_builder_set_bounds_check(B(self), on != 0));
  Py_RETURN_NONE;
}

static PyObject* begin_kernel(PyObject* self, PyObject* args, PyObject* kw) {
  static char* kwlist[] = {"name", "arg_types", "divisibility", NULL};
  const char* name;
  PyObject *types_obj, *div_obj = Py_None;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "sO|O:begin_kernel", kwlist, &name,
                                   &types_obj, &div_obj))
    return NULL;
  if (!PySequence_Check(types_obj) || PyUnicode_Check(types_obj)) {
    zpy_type_error("arg_types", "a sequence of types", types_obj);
    return NULL;
  }
  Py_ssize_t n = PySequence_Size(types_obj);
  if (n < 0) return NULL;
  if (n > 4096) return PyErr_Format(PyExc_ValueError, "%zd kernel arguments", n);
  if (div_obj != Py_None) {
    if (!PySequence_Check(div_obj) || PyUnicode_Check(div_obj)) {
      zpy_type_error("divisibility", "a sequence of ints or None", div_obj);
      return NULL;
    }
    Py_ssize_t nd = PySequence_Size(div_obj);
    if (nd < 0) return NULL;
    if (nd != n)
      return PyErr_Format(PyExc_ValueError,
                          "divisibility has %zd entries for %zd arguments", nd, n);
  }
  size_t count = n ? (size_t)n : 1;
  zt_type_t* types = PyMem_Calloc(count, sizeof *types);
  int32_t* div = PyMem_Calloc(count, sizeof *div);
  zt_value_t* out = PyMem_Calloc(count, sizeof *out);
  PyObject* result = NULL;
  if (!types || !div || !out) {
    PyErr_NoMemory();
    goto cleanup;
  }
  for (Py_ssize_t i = 0; i < n; ++i) {
    char what[48];
    snprintf(what, sizeof what, "arg_types[%zd]", i);
    PyObject* item = PySequence_GetItem(types_obj, i);
    int rc = item ? zpy_type_from_py(item, what, &types[i]) : -1;
    Py_XDECREF(item);
    if (rc < 0) goto cleanup;
    if (div_obj == Py_None) continue;
    snprintf(what, sizeof what, "divisibility[%zd]", i);
    item = PySequence_GetItem(div_obj, i);
    rc = !item ? -1 : item == Py_None ? 0 : zpy_int32(item, what, &div[i]);
    Py_XDECREF(item);
    if (rc < 0) goto cleanup;
  }
  zt_status_t s = zt_builder_begin_kernel(B(self), name, (int32_t)n, types,
                                          div_obj == Py_None ? NULL : div, out);
  if (s) {
    zpy_raise(s);
    goto cleanup;
  }
  result = zpy_values_to_list(out, (int32_t)n);
cleanup:
  PyMem_Free(types);
  PyMem_Free(div);
  PyMem_Free(out);
  return result;
}

static PyObject* end_kernel(PyObject* self, PyObject* unused) {
  ZPY_TRY(zt_builder_end_kernel(B(self)));
  Py_RETURN_NONE;
}

static PyObject* module_text(PyObject* self, PyObject* unused) {
  const char* text;
  size_t size;
  ZPY_TRY(zt_builder_module_text(B(self), &text, &size));
  return PyUnicode_DecodeUTF8(text, (Py_ssize_t)size, "replace");
}

static PyObject* value_type(PyObject* self, PyObject* arg) {
  zt_value_t v;
  if (zpy_value(arg, "value", false, &v) < 0) return NULL;
  return zpy_type_to_py(zt_builder_value_type(B(self), v));
}

// ---------------------------------------------------------------------------
// Ops with one result

// Takes a pointer: the call that fills *v is another argument of the same
// call expression, and C leaves the order of argument evaluation unspecified.
static PyObject* value_result(zt_status_t s, const zt_value_t* v) {
  if (s) return zpy_raise(s);
  return PyLong_FromLong(*v);
}

static PyObject* const_int(PyObject* self, PyObject* args) {
  PyObject *kind_obj, *value_obj;
  int kind;
  if (!PyArg_ParseTuple(args, "OO:const_int", &kind_obj, &value_obj) ||
      zpy_enum(kind_obj, ZT_SCALAR_KIND_COUNT, "kind", &kind) < 0)
    return NULL;
  PyObject* idx = PyNumber_Index(value_obj);
  if (!idx) return NULL;
  // Accept the full unsigned 64-bit range too (uint64 constants): the bits
  // are what ends up in the IR.
  int overflow = 0;
  long long value = PyLong_AsLongLongAndOverflow(idx, &overflow);
  if (overflow > 0) {
    unsigned long long u = PyLong_AsUnsignedLongLong(idx);
    if (!PyErr_Occurred()) value = (long long)u;
  } else if (overflow < 0) {
    PyErr_SetString(PyExc_OverflowError, "const_int: value below -2**63");
  }
  Py_DECREF(idx);
  if (PyErr_Occurred()) return NULL;
  zt_value_t out;
  return value_result(
      zt_builder_const_int(B(self), (zt_scalar_kind_t)kind, value, &out), &out);
}

static PyObject* const_float(PyObject* self, PyObject* args) {
  PyObject* kind_obj;
  double value;
  int kind;
  if (!PyArg_ParseTuple(args, "Od:const_float", &kind_obj, &value) ||
      zpy_enum(kind_obj, ZT_SCALAR_KIND_COUNT, "kind", &kind) < 0)
    return NULL;
  zt_value_t out;
  return value_result(
      zt_builder_const_float(B(self), (zt_scalar_kind_t)kind, value, &out), &out);
}

static PyObject* program_id(PyObject* self, PyObject* arg) {
  int32_t axis;
  zt_value_t out;
  if (zpy_int32(arg, "axis", &axis) < 0) return NULL;
  return value_result(zt_builder_program_id(B(self), axis, &out), &out);
}

static PyObject* num_programs(PyObject* self, PyObject* arg) {
  int32_t axis;
  zt_value_t out;
  if (zpy_int32(arg, "axis", &axis) < 0) return NULL;
  return value_result(zt_builder_num_programs(B(self), axis, &out), &out);
}

static PyObject* make_range(PyObject* self, PyObject* args) {
  int32_t start, end;
  zt_value_t out;
  if (!PyArg_ParseTuple(args, "ii:make_range", &start, &end)) return NULL;
  return value_result(zt_builder_make_range(B(self), start, end, &out), &out);
}

typedef zt_status_t (*shape_fn)(zt_builder_t*, zt_value_t, int32_t,
                                const int64_t*, zt_value_t*);

static PyObject* shape_op(PyObject* self, PyObject* args, const char* fmt,
                          shape_fn fn) {
  PyObject *v_obj, *shape_obj;
  zt_value_t v, out;
  int32_t rank;
  int64_t shape[ZT_MAX_RANK];
  if (!PyArg_ParseTuple(args, fmt, &v_obj, &shape_obj) ||
      zpy_value(v_obj, "value", false, &v) < 0 ||
      zpy_shape(shape_obj, "shape", &rank, shape) < 0)
    return NULL;
  return value_result(fn(B(self), v, rank, shape, &out), &out);
}

static PyObject* splat(PyObject* self, PyObject* args) {
  return shape_op(self, args, "OO:splat", zt_builder_splat);
}
static PyObject* broadcast(PyObject* self, PyObject* args) {
  return shape_op(self, args, "OO:broadcast", zt_builder_broadcast);
}
static PyObject* reshape(PyObject* self, PyObject* args) {
  return shape_op(self, args, "OO:reshape", zt_builder_reshape);
}

static PyObject* expand_dims(PyObject* self, PyObject* args) {
  PyObject* v_obj;
  int axis;
  zt_value_t v, out;
  if (!PyArg_ParseTuple(args, "Oi:expand_dims", &v_obj, &axis) ||
      zpy_value(v_obj, "value", false, &v) < 0)
    return NULL;
  return value_result(zt_builder_expand_dims(B(self), v, axis, &out), &out);
}

static PyObject* hint(PyObject* self, PyObject* args) {
  PyObject *v_obj, *values_obj;
  const char* kind;
  zt_value_t v, out;
  int32_t n;
  int64_t values[ZT_MAX_RANK];
  if (!PyArg_ParseTuple(args, "OsO:hint", &v_obj, &kind, &values_obj) ||
      zpy_value(v_obj, "value", false, &v) < 0 ||
      zpy_shape(values_obj, "values", &n, values) < 0)
    return NULL;
  return value_result(zt_builder_hint(B(self), v, kind, values, n, &out), &out);
}

static PyObject* trans(PyObject* self, PyObject* args) {
  PyObject *v_obj, *order_obj;
  zt_value_t v, out;
  int32_t rank;
  int64_t order64[ZT_MAX_RANK];
  if (!PyArg_ParseTuple(args, "OO:trans", &v_obj, &order_obj) ||
      zpy_value(v_obj, "value", false, &v) < 0 ||
      zpy_shape(order_obj, "order", &rank, order64) < 0)
    return NULL;
  // The C call reads as many entries as v has dims.
  zt_type_t t = zt_builder_value_type(B(self), v);
  if (rank != t.rank)
    return PyErr_Format(PyExc_ValueError,
                        "trans: order has %d entries but the value has rank %d",
                        (int)rank, (int)t.rank);
  int32_t order[ZT_MAX_RANK] = {0};
  for (int i = 0; i < rank; ++i) order[i] = (int32_t)order64[i];
  return value_result(zt_builder_trans(B(self), v, order, &out), &out);
}

static PyObject* binary(PyObject* self, PyObject* args) {
  PyObject *op_obj, *a_obj, *b_obj;
  int op;
  zt_value_t a, b, out;
  if (!PyArg_ParseTuple(args, "OOO:binary", &op_obj, &a_obj, &b_obj) ||
      zpy_enum(op_obj, ZT_BINARY_OP_COUNT, "binary op", &op) < 0 ||
      zpy_value(a_obj, "lhs", false, &a) < 0 ||
      zpy_value(b_obj, "rhs", false, &b) < 0)
    return NULL;
  return value_result(
      zt_builder_binary(B(self), (zt_binary_op_t)op, a, b, &out), &out);
}

static PyObject* unary(PyObject* self, PyObject* args) {
  PyObject *op_obj, *v_obj;
  int op;
  zt_value_t v, out;
  if (!PyArg_ParseTuple(args, "OO:unary", &op_obj, &v_obj) ||
      zpy_enum(op_obj, ZT_UNARY_OP_COUNT, "unary op", &op) < 0 ||
      zpy_value(v_obj, "value", false, &v) < 0)
    return NULL;
  return value_result(zt_builder_unary(B(self), (zt_unary_op_t)op, v, &out),
                      &out);
}

typedef zt_status_t (*ternary_fn)(zt_builder_t*, zt_value_t, zt_value_t,
                                  zt_value_t, zt_value_t*);

static PyObject* ternary_op(PyObject* self, PyObject* args, const char* fmt,
                            const char* n0, const char* n1, const char* n2,
                            ternary_fn fn) {
  PyObject *o0, *o1, *o2;
  zt_value_t v0, v1, v2, out;
  if (!PyArg_ParseTuple(args, fmt, &o0, &o1, &o2) ||
      zpy_value(o0, n0, false, &v0) < 0 || zpy_value(o1, n1, false, &v1) < 0 ||
      zpy_value(o2, n2, false, &v2) < 0)
    return NULL;
  return value_result(fn(B(self), v0, v1, v2, &out), &out);
}

static PyObject* fma_op(PyObject* self, PyObject* args) {
  return ternary_op(self, args, "OOO:fma", "a", "b", "c", zt_builder_fma);
}
static PyObject* select_op(PyObject* self, PyObject* args) {
  return ternary_op(self, args, "OOO:select", "cond", "x", "y",
                    zt_builder_select);
}

static PyObject* cmp(PyObject* self, PyObject* args) {
  PyObject *p_obj, *a_obj, *b_obj;
  int pred;
  zt_value_t a, b, out;
  if (!PyArg_ParseTuple(args, "OOO:cmp", &p_obj, &a_obj, &b_obj) ||
      zpy_enum(p_obj, ZT_CMP_PREDICATE_COUNT, "predicate", &pred) < 0 ||
      zpy_value(a_obj, "lhs", false, &a) < 0 ||
      zpy_value(b_obj, "rhs", false, &b) < 0)
    return NULL;
  return value_result(
      zt_builder_cmp(B(self), (zt_cmp_predicate_t)pred, a, b, &out), &out);
}

static PyObject* cast(PyObject* self, PyObject* args) {
  PyObject *op_obj, *v_obj, *to_obj;
  int op, to;
  zt_value_t v, out;
  if (!PyArg_ParseTuple(args, "OOO:cast", &op_obj, &v_obj, &to_obj) ||
      zpy_enum(op_obj, ZT_CAST_OP_COUNT, "cast op", &op) < 0 ||
      zpy_value(v_obj, "value", false, &v) < 0 ||
      zpy_enum(to_obj, ZT_SCALAR_KIND_COUNT, "to_kind", &to) < 0)
    return NULL;
  return value_result(zt_builder_cast(B(self), (zt_cast_op_t)op, v,
                                      (zt_scalar_kind_t)to, &out),
                      &out);
}

static PyObject* addptr(PyObject* self, PyObject* args) {
  PyObject *p_obj, *o_obj;
  zt_value_t p, off, out;
  if (!PyArg_ParseTuple(args, "OO:addptr", &p_obj, &o_obj) ||
      zpy_value(p_obj, "ptr", false, &p) < 0 ||
      zpy_value(o_obj, "offset", false, &off) < 0)
    return NULL;
  return value_result(zt_builder_addptr(B(self), p, off, &out), &out);
}

static PyObject* ptr_to_int(PyObject* self, PyObject* arg) {
  zt_value_t p, out;
  if (zpy_value(arg, "ptr", false, &p) < 0) return NULL;
  return value_result(zt_builder_ptr_to_int(B(self), p, &out), &out);
}

typedef zt_status_t (*pointee_fn)(zt_builder_t*, zt_value_t, zt_scalar_kind_t,
                                  zt_value_t*);

static PyObject* pointee_op(PyObject* self, PyObject* args, const char* fmt,
                            pointee_fn fn) {
  PyObject *v_obj, *k_obj;
  int kind;
  zt_value_t v, out;
  if (!PyArg_ParseTuple(args, fmt, &v_obj, &k_obj) ||
      zpy_value(v_obj, "value", false, &v) < 0 ||
      zpy_enum(k_obj, ZT_SCALAR_KIND_COUNT, "pointee", &kind) < 0)
    return NULL;
  return value_result(fn(B(self), v, (zt_scalar_kind_t)kind, &out), &out);
}

static PyObject* int_to_ptr(PyObject* self, PyObject* args) {
  return pointee_op(self, args, "OO:int_to_ptr", zt_builder_int_to_ptr);
}
static PyObject* ptr_cast(PyObject* self, PyObject* args) {
  return pointee_op(self, args, "OO:ptr_cast", zt_builder_ptr_cast);
}

static PyObject* load(PyObject* self, PyObject* args, PyObject* kw) {
  static char* kwlist[] = {"ptr", "mask", "other", NULL};
  PyObject *p_obj, *m_obj = Py_None, *o_obj = Py_None;
  zt_value_t p, mask, other, out;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "O|OO:load", kwlist, &p_obj,
                                   &m_obj, &o_obj) ||
      zpy_value(p_obj, "ptr", false, &p) < 0 ||
      zpy_value(m_obj, "mask", true, &mask) < 0 ||
      zpy_value(o_obj, "other", true, &other) < 0)
    return NULL;
  return value_result(zt_builder_load(B(self), p, mask, other, &out), &out);
}

static PyObject* store(PyObject* self, PyObject* args, PyObject* kw) {
  static char* kwlist[] = {"ptr", "value", "mask", NULL};
  PyObject *p_obj, *v_obj, *m_obj = Py_None;
  zt_value_t p, v, mask;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O:store", kwlist, &p_obj,
                                   &v_obj, &m_obj) ||
      zpy_value(p_obj, "ptr", false, &p) < 0 ||
      zpy_value(v_obj, "value", false, &v) < 0 ||
      zpy_value(m_obj, "mask", true, &mask) < 0)
    return NULL;
  ZPY_TRY(zt_builder_store(B(self), p, v, mask));
  Py_RETURN_NONE;
}

static PyObject* reduce(PyObject* self, PyObject* args) {
  PyObject *k_obj, *v_obj;
  int kind, axis;
  zt_value_t v, out;
  if (!PyArg_ParseTuple(args, "OOi:reduce", &k_obj, &v_obj, &axis) ||
      zpy_enum(k_obj, ZT_REDUCE_XOR + 1, "reduce kind", &kind) < 0 ||
      zpy_value(v_obj, "value", false, &v) < 0)
    return NULL;
  return value_result(
      zt_builder_reduce(B(self), (zt_reduce_kind_t)kind, v, axis, &out), &out);
}

static PyObject* dot(PyObject* self, PyObject* args, PyObject* kw) {
  static char* kwlist[] = {"a", "b", "acc", "input_precision", NULL};
  PyObject *a_obj, *b_obj, *c_obj;
  const char* prec = "ieee";
  zt_value_t a, b, c, out;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|z:dot", kwlist, &a_obj, &b_obj,
                                   &c_obj, &prec) ||
      zpy_value(a_obj, "a", false, &a) < 0 ||
      zpy_value(b_obj, "b", false, &b) < 0 ||
      zpy_value(c_obj, "acc", false, &c) < 0)
    return NULL;
  return value_result(zt_builder_dot(B(self), a, b, c, prec, &out), &out);
}

// Block IO, atomics, scans, debugging (docs/TILE_IR.md)

// The shape/strides/offsets lists of a block view, all of length `rank`.
static int view_lists(PyObject* sh, PyObject* st, PyObject* of, zt_value_t** shape,
                      zt_value_t** strides, zt_value_t** offsets, int32_t* rank) {
  int32_t n1 = 0, n2 = 0, n3 = 0;
  *shape = *strides = *offsets = NULL;
  if (zpy_values(sh, "shape", shape, &n1) < 0 || zpy_values(st, "strides", strides, &n2) < 0 ||
      zpy_values(of, "offsets", offsets, &n3) < 0)
    return -1;
  if (n1 != n2 || n1 != n3) {
    PyErr_SetString(PyExc_ValueError, "shape, strides and offsets need one length");
    return -1;
  }
  *rank = n1;
  return 0;
}

static PyObject* block_load(PyObject* self, PyObject* args) {
  PyObject *b_obj, *sh, *st, *of, *bs_obj;
  unsigned int mask;
  int padding;
  zt_value_t base, out;
  zt_value_t *shape = NULL, *strides = NULL, *offsets = NULL;
  int32_t rank = 0, brank = 0;
  int64_t bs[ZT_MAX_RANK];
  PyObject* r = NULL;
  if (!PyArg_ParseTuple(args, "OOOOOIi:block_load", &b_obj, &sh, &st, &of, &bs_obj, &mask,
                        &padding) ||
      zpy_value(b_obj, "base", false, &base) < 0 ||
      view_lists(sh, st, of, &shape, &strides, &offsets, &rank) < 0 ||
      zpy_shape(bs_obj, "block_shape", &brank, bs) < 0)
    goto done;
  if (brank != rank) {
    PyErr_SetString(PyExc_ValueError, "block_shape has another rank than the view");
    goto done;
  }
  r = value_result(zt_builder_block_load(B(self), base, rank, shape, strides, offsets, bs,
                                         mask, (zt_padding_t)padding, &out),
                   &out);
done:
  PyMem_Free(shape);
  PyMem_Free(strides);
  PyMem_Free(offsets);
  return r;
}

static PyObject* block_store(PyObject* self, PyObject* args) {
  PyObject *b_obj, *sh, *st, *of, *v_obj;
  unsigned int mask;
  zt_value_t base, value;
  zt_value_t *shape = NULL, *strides = NULL, *offsets = NULL;
  int32_t rank = 0;
  PyObject* r = NULL;
  if (!PyArg_ParseTuple(args, "OOOOOI:block_store", &b_obj, &sh, &st, &of, &v_obj, &mask) ||
      zpy_value(b_obj, "base", false, &base) < 0 ||
      zpy_value(v_obj, "value", false, &value) < 0 ||
      view_lists(sh, st, of, &shape, &strides, &offsets, &rank) < 0)
    goto done;
  zt_status_t s = zt_builder_block_store(B(self), base, rank, shape, strides, offsets, value, mask);
  if (s)
    zpy_raise(s);
  else
    r = Py_NewRef(Py_None);
done:
  PyMem_Free(shape);
  PyMem_Free(strides);
  PyMem_Free(offsets);
  return r;
}

static PyObject* atomic_rmw(PyObject* self, PyObject* args) {
  PyObject *k_obj, *p_obj, *v_obj, *m_obj = Py_None;
  const char *sem = NULL, *scope = NULL;
  int kind;
  zt_value_t p, v, mask, out;
  if (!PyArg_ParseTuple(args, "OOO|Ozz:atomic_rmw", &k_obj, &p_obj, &v_obj, &m_obj, &sem,
                        &scope) ||
      zpy_enum(k_obj, ZT_ATOMIC_KIND_COUNT, "atomic kind", &kind) < 0 ||
      zpy_value(p_obj, "ptr", false, &p) < 0 || zpy_value(v_obj, "value", false, &v) < 0 ||
      zpy_value(m_obj, "mask", true, &mask) < 0)
    return NULL;
  return value_result(
      zt_builder_atomic_rmw(B(self), (zt_atomic_kind_t)kind, p, v, mask, sem, scope, &out),
      &out);
}

static PyObject* atomic_cas(PyObject* self, PyObject* args) {
  PyObject *p_obj, *c_obj, *v_obj;
  const char *sem = NULL, *scope = NULL;
  zt_value_t p, c, v, out;
  if (!PyArg_ParseTuple(args, "OOO|zz:atomic_cas", &p_obj, &c_obj, &v_obj, &sem, &scope) ||
      zpy_value(p_obj, "ptr", false, &p) < 0 || zpy_value(c_obj, "cmp", false, &c) < 0 ||
      zpy_value(v_obj, "value", false, &v) < 0)
    return NULL;
  return value_result(zt_builder_atomic_cas(B(self), p, c, v, sem, scope, &out), &out);
}

static PyObject* scan_begin(PyObject* self, PyObject* args) {
  PyObject* srcs_obj;
  int axis, reverse = 0;
  zt_value_t* srcs;
  int32_t n;
  if (!PyArg_ParseTuple(args, "Oi|p:scan_begin", &srcs_obj, &axis, &reverse) ||
      zpy_values(srcs_obj, "srcs", &srcs, &n) < 0)
    return NULL;
  zt_value_t* out = PyMem_Calloc((size_t)(2 * n > 0 ? 2 * n : 1), sizeof *out);
  PyObject* r = NULL;
  if (!out) {
    PyErr_NoMemory();
  } else {
    zt_status_t s = zt_builder_scan_begin(B(self), n, srcs, axis, reverse != 0, out);
    r = s ? zpy_raise(s) : zpy_values_to_list(out, 2 * n);
  }
  PyMem_Free(srcs);
  PyMem_Free(out);
  return r;
}

static PyObject* scan_end(PyObject* self, PyObject* arg) {
  zt_value_t* vals;
  int32_t n;
  if (zpy_values(arg, "values", &vals, &n) < 0) return NULL;
  zt_value_t* out = PyMem_Calloc((size_t)(n > 0 ? n : 1), sizeof *out);
  PyObject* r = NULL;
  if (!out) {
    PyErr_NoMemory();
  } else {
    zt_status_t s = zt_builder_scan_end(B(self), n, vals, out);
    r = s ? zpy_raise(s) : zpy_values_to_list(out, n);
  }
  PyMem_Free(vals);
  PyMem_Free(out);
  return r;
}

static PyObject* print_op(PyObject* self, PyObject* args) {
  const char* prefix;
  PyObject* vals_obj;
  int hex = 0;
  zt_value_t* vals;
  int32_t n;
  if (!PyArg_ParseTuple(args, "sO|p:print_", &prefix, &vals_obj, &hex) ||
      zpy_values(vals_obj, "values", &vals, &n) < 0)
    return NULL;
  zt_status_t s = zt_builder_print(B(self), prefix, n, vals, hex != 0);
  PyMem_Free(vals);
  if (s) return zpy_raise(s);
  Py_RETURN_NONE;
}

static PyObject* assert_op(PyObject* self, PyObject* args) {
  PyObject* c_obj;
  const char* msg;
  zt_value_t c;
  if (!PyArg_ParseTuple(args, "Os:assert_", &c_obj, &msg) ||
      zpy_value(c_obj, "cond", false, &c) < 0)
    return NULL;
  ZPY_TRY(zt_builder_assert(B(self), c, msg));
  Py_RETURN_NONE;
}

// ---------------------------------------------------------------------------
// Ops with several results and regions

static PyObject* list_or_raise(zt_status_t s, const zt_value_t* v, int32_t n) {
  if (s) return zpy_raise(s);
  return zpy_values_to_list(v, n);
}

static zt_value_t* alloc_values(int32_t n) {
  zt_value_t* v = PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof *v);
  if (!v) PyErr_NoMemory();
  return v;
}

static PyObject* reduce_begin(PyObject* self, PyObject* args) {
  PyObject* srcs_obj;
  int axis;
  zt_value_t* srcs;
  int32_t n;
  if (!PyArg_ParseTuple(args, "Oi:reduce_begin", &srcs_obj, &axis) ||
      zpy_values(srcs_obj, "srcs", &srcs, &n) < 0)
    return NULL;
  zt_value_t* out = alloc_values(2 * n);
  PyObject* r = NULL;
  if (out)
    r = list_or_raise(zt_builder_reduce_begin(B(self), n, srcs, axis, out), out,
                      2 * n);
  PyMem_Free(srcs);
  PyMem_Free(out);
  return r;
}

// For calls shaped (b, n, values, out_results): reduce_end, for_end,
// while_end.
typedef zt_status_t (*end_fn)(zt_builder_t*, int32_t, const zt_value_t*,
                              zt_value_t*);

static PyObject* end_op(PyObject* self, PyObject* values_obj, const char* what,
                        end_fn fn, bool* out_ok) {
  zt_value_t* vals;
  int32_t n;
  if (zpy_values(values_obj, what, &vals, &n) < 0) return NULL;
  zt_value_t* out = alloc_values(n);
  PyObject* r = NULL;
  if (out) {
    zt_status_t s = fn(B(self), n, vals, out);
    if (out_ok) *out_ok = s == NULL;
    r = list_or_raise(s, out, n);
  }
  PyMem_Free(vals);
  PyMem_Free(out);
  return r;
}

static PyObject* reduce_end(PyObject* self, PyObject* arg) {
  return end_op(self, arg, "values", zt_builder_reduce_end, NULL);
}

static PyObject* for_begin(PyObject* self, PyObject* args, PyObject* kw) {
  static char* kwlist[] = {"lb", "ub", "step", "inits", NULL};
  PyObject *lb_obj, *ub_obj, *st_obj, *inits_obj = Py_None;
  zt_value_t lb, ub, step, iv, *inits;
  int32_t n;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|O:for_begin", kwlist, &lb_obj,
                                   &ub_obj, &st_obj, &inits_obj) ||
      zpy_value(lb_obj, "lb", false, &lb) < 0 ||
      zpy_value(ub_obj, "ub", false, &ub) < 0 ||
      zpy_value(st_obj, "step", false, &step) < 0 ||
      zpy_values(inits_obj, "inits", &inits, &n) < 0)
    return NULL;
  zt_value_t* out = alloc_values(n);
  PyObject* r = NULL;
  if (out) {
    zt_status_t s =
        zt_builder_for_begin(B(self), lb, ub, step, n, inits, &iv, out);
    if (s) {
      zpy_raise(s);
    } else {
      PyObject* list = zpy_values_to_list(out, n);
      if (list) r = Py_BuildValue("(iN)", (int)iv, list);
    }
  }
  PyMem_Free(inits);
  PyMem_Free(out);
  return r;
}

static PyObject* for_end(PyObject* self, PyObject* args) {
  PyObject* yields = Py_None;
  if (!PyArg_ParseTuple(args, "|O:for_end", &yields)) return NULL;
  return end_op(self, yields, "yields", zt_builder_for_end, NULL);
}

static PyObject* if_begin(PyObject* self, PyObject* arg) {
  zt_value_t cond;
  if (zpy_value(arg, "cond", false, &cond) < 0) return NULL;
  ZPY_TRY(zt_builder_if_begin(B(self), cond));
  Py_RETURN_NONE;
}

static PyObject* if_else(PyObject* self, PyObject* unused) {
  ZPY_TRY(zt_builder_if_else(B(self)));
  Py_RETURN_NONE;
}

static PyObject* if_end(PyObject* self, PyObject* args, PyObject* kw) {
  static char* kwlist[] = {"then_yields", "else_yields", NULL};
  PyObject *then_obj = Py_None, *else_obj = Py_None;
  zt_value_t *tv = NULL, *ev = NULL, *out = NULL;
  int32_t tn, en;
  PyObject* r = NULL;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO:if_end", kwlist, &then_obj,
                                   &else_obj) ||
      zpy_values(then_obj, "then_yields", &tv, &tn) < 0)
    return NULL;
  if (zpy_values(else_obj, "else_yields", &ev, &en) < 0) goto cleanup;
  if (tn != en) {
    PyErr_Format(PyExc_ValueError,
                 "if_end: then region yields %d values, else region %d",
                 (int)tn, (int)en);
    goto cleanup;
  }
  out = alloc_values(tn);
  if (out) r = list_or_raise(zt_builder_if_end(B(self), tn, tv, ev, out), out, tn);
cleanup:
  PyMem_Free(tv);
  PyMem_Free(ev);
  PyMem_Free(out);
  return r;
}

static PyObject* while_begin(PyObject* self, PyObject* args) {
  BuilderObject* o = (BuilderObject*)self;
  PyObject* inits_obj = Py_None;
  zt_value_t* inits;
  int32_t n;
  if (!PyArg_ParseTuple(args, "|O:while_begin", &inits_obj) ||
      zpy_values(inits_obj, "inits", &inits, &n) < 0)
    return NULL;
  PyObject* r = NULL;
  zt_value_t* out = NULL;
  if (o->while_depth == o->while_cap) {
    int32_t cap = o->while_cap ? 2 * o->while_cap : 8;
    int32_t* grown = PyMem_Realloc(o->while_n, (size_t)cap * sizeof *grown);
    if (!grown) {
      PyErr_NoMemory();
      goto cleanup;
    }
    o->while_n = grown;
    o->while_cap = cap;
  }
  // Raised before the call so that a failure below cannot leave the C
  // builder with a region whose count exceeds while_max.
  if (n > o->while_max) o->while_max = n;
  out = alloc_values(n);
  if (!out) goto cleanup;
  zt_status_t s = zt_builder_while_begin(o->b, n, inits, out);
  if (s) {
    zpy_raise(s);
    goto cleanup;
  }
  o->while_n[o->while_depth++] = n;
  r = zpy_values_to_list(out, n);
cleanup:
  PyMem_Free(inits);
  PyMem_Free(out);
  return r;
}

static PyObject* while_cond(PyObject* self, PyObject* arg) {
  BuilderObject* o = (BuilderObject*)self;
  zt_value_t cond;
  if (zpy_value(arg, "cond", false, &cond) < 0) return NULL;
  // Sized for any while the C builder may have open.
  zt_value_t* out = alloc_values(o->while_max);
  if (!out) return NULL;
  int32_t n = o->while_depth ? o->while_n[o->while_depth - 1] : 0;
  PyObject* r = list_or_raise(zt_builder_while_cond(o->b, cond, out), out, n);
  PyMem_Free(out);
  return r;
}

static PyObject* while_end(PyObject* self, PyObject* args) {
  BuilderObject* o = (BuilderObject*)self;
  PyObject* yields = Py_None;
  if (!PyArg_ParseTuple(args, "|O:while_end", &yields)) return NULL;
  bool ok = false;
  PyObject* r = end_op(self, yields, "yields", zt_builder_while_end, &ok);
  if (ok && o->while_depth > 0) o->while_depth--;
  return r;
}

// ---------------------------------------------------------------------------

#define M(name, fn, flags, doc) {name, (PyCFunction)(void (*)(void))fn, flags, doc}
#define KW (METH_VARARGS | METH_KEYWORDS)

static PyMethodDef builder_methods[] = {
    M("set_loc", set_loc, KW,
      "set_loc(file, line=0, col=0)\nLocation of the ops added from now on."),
    M("set_bounds_check", set_bounds_check, METH_O,
      "set_bounds_check(on)\nBefore begin_kernel: the CPU target checks every access "
      "against the buffers given at launch (Executable.launch(..., sizes=))."),
    M("begin_kernel", begin_kernel, KW,
      "begin_kernel(name, arg_types, divisibility=None) -> list[int]\n"
      "Opens the kernel; returns the argument values. divisibility: one int "
      "(bytes, 0 = none) or None per argument."),
    M("end_kernel", end_kernel, METH_NOARGS, "end_kernel()"),
    M("module_text", module_text, METH_NOARGS,
      "module_text() -> str\nThe tile IR module (after end_kernel)."),
    M("value_type", value_type, METH_O,
      "value_type(v) -> (kind, pointee, shape)\nAn invalid handle reads as "
      "an i1 scalar."),
    M("const_int", const_int, METH_VARARGS, "const_int(kind, value) -> int"),
    M("const_float", const_float, METH_VARARGS,
      "const_float(kind, value) -> int"),
    M("program_id", program_id, METH_O, "program_id(axis) -> int"),
    M("num_programs", num_programs, METH_O, "num_programs(axis) -> int"),
    M("make_range", make_range, METH_VARARGS,
      "make_range(start, end) -> int\nA 1-D i32 tensor [start, end)."),
    M("splat", splat, METH_VARARGS, "splat(v, shape) -> int"),
    M("broadcast", broadcast, METH_VARARGS, "broadcast(v, shape) -> int"),
    M("expand_dims", expand_dims, METH_VARARGS, "expand_dims(v, axis) -> int"),
    M("hint", hint, METH_VARARGS, "hint(v, kind, values) -> int"),
    M("reshape", reshape, METH_VARARGS, "reshape(v, shape) -> int"),
    M("trans", trans, METH_VARARGS,
      "trans(v, order) -> int\nResult dim i is v's dim order[i]."),
    M("binary", binary, METH_VARARGS, "binary(op, a, b) -> int"),
    M("unary", unary, METH_VARARGS, "unary(op, v) -> int"),
    M("fma", fma_op, METH_VARARGS, "fma(a, b, c) -> int\na*b+c on floats."),
    M("cmp", cmp, METH_VARARGS, "cmp(pred, a, b) -> int"),
    M("select", select_op, METH_VARARGS, "select(cond, x, y) -> int"),
    M("cast", cast, METH_VARARGS, "cast(op, v, to_kind) -> int"),
    M("addptr", addptr, METH_VARARGS, "addptr(ptr, offset) -> int"),
    M("ptr_to_int", ptr_to_int, METH_O, "ptr_to_int(ptr) -> int"),
    M("int_to_ptr", int_to_ptr, METH_VARARGS, "int_to_ptr(v, pointee) -> int"),
    M("ptr_cast", ptr_cast, METH_VARARGS, "ptr_cast(ptr, pointee) -> int"),
    M("load", load, KW,
      "load(ptr, mask=None, other=None) -> int\nother needs mask."),
    M("store", store, KW, "store(ptr, value, mask=None)"),
    M("reduce", reduce, METH_VARARGS, "reduce(kind, v, axis) -> int"),
    M("reduce_begin", reduce_begin, METH_VARARGS,
      "reduce_begin(srcs, axis) -> list[int]\nThe combiner's 2*n scalar "
      "arguments (lhs..., rhs...)."),
    M("reduce_end", reduce_end, METH_O,
      "reduce_end(values) -> list[int]\nCloses the combiner with its n "
      "results; returns the reduction's n results."),
    M("dot", dot, KW,
      "dot(a, b, acc, input_precision='ieee') -> int\nacc + a @ b."),
    M("for_begin", for_begin, KW,
      "for_begin(lb, ub, step, inits=()) -> (iv, list[int])"),
    M("for_end", for_end, METH_VARARGS, "for_end(yields=()) -> list[int]"),
    M("if_begin", if_begin, METH_O, "if_begin(cond)"),
    M("if_else", if_else, METH_NOARGS, "if_else()"),
    M("if_end", if_end, KW,
      "if_end(then_yields=(), else_yields=()) -> list[int]"),
    M("while_begin", while_begin, METH_VARARGS,
      "while_begin(inits=()) -> list[int]\nThe before region's arguments."),
    M("while_cond", while_cond, METH_O,
      "while_cond(cond) -> list[int]\nEnds the before region; returns the "
      "body's arguments."),
    M("while_end", while_end, METH_VARARGS,
      "while_end(yields=()) -> list[int]"),
    M("block_load", block_load, METH_VARARGS,
      "block_load(base, shape, strides, offsets, block_shape, boundary_mask, padding) -> int"),
    M("block_store", block_store, METH_VARARGS,
      "block_store(base, shape, strides, offsets, value, boundary_mask)"),
    M("atomic_rmw", atomic_rmw, METH_VARARGS,
      "atomic_rmw(kind, ptr, value, mask=None, sem=None, scope=None) -> int"),
    M("atomic_cas", atomic_cas, METH_VARARGS,
      "atomic_cas(ptr, cmp, value, sem=None, scope=None) -> int"),
    M("scan_begin", scan_begin, METH_VARARGS,
      "scan_begin(srcs, axis, reverse=False) -> list[int] (lhs..., rhs...)"),
    M("scan_end", scan_end, METH_O, "scan_end(values) -> list[int]"),
    M("print_", print_op, METH_VARARGS, "print_(prefix, values, hex=False)"),
    M("assert_", assert_op, METH_VARARGS, "assert_(cond, message)"),
    {NULL, NULL, 0, NULL},
};

static PyType_Slot builder_slots[] = {
    {Py_tp_new, builder_new},
    {Py_tp_dealloc, builder_dealloc},
    {Py_tp_methods, builder_methods},
    {Py_tp_doc,
     "Builder()\n\nWrites one tile IR module holding one kernel (zt_builder_t). "
     "Not thread-safe: use one per thread."},
    {0, NULL},
};

static PyType_Spec builder_spec = {
    .name = "zetile._zetile.Builder",
    .basicsize = sizeof(BuilderObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = builder_slots,
};

int zpy_builder_init(PyObject* m) {
  PyObject* type = PyType_FromSpec(&builder_spec);
  if (!type) return -1;
  if (PyModule_AddObject(m, "Builder", type) < 0) {
    Py_DECREF(type);
    return -1;
  }
  return 0;
}
