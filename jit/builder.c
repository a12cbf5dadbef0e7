// The tile IR builder: writes MLIR text for one kernel while checking types.
//
// Why text and not MLIR's C API: the builder lives in the runtime library,
// which must not load MLIR (a warm process only hashes the text to find its
// cached binary). The compiler parses the text and verifies it against the
// IRDL dialect on a cache miss.
//
// Regions (for/if/while bodies, reduction combiners) are written into their
// own buffers and spliced into the parent when they close, since an op's
// result types must be printed before its body.
#include "zetile/builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"

typedef struct value_s {
  zt_type_t type;
  char name[24];  // "%v12" or "%v12#3"
  int32_t region;  // id of the region that defines it
} value_t;

typedef enum region_kind_e {
  REGION_KERNEL,
  REGION_FOR,
  REGION_IF_THEN,
  REGION_IF_ELSE,
  REGION_WHILE_BEFORE,
  REGION_WHILE_AFTER,
  REGION_COMBINER,
} region_kind_t;

typedef struct region_s {
  region_kind_t kind;
  int32_t id;
  zt_strbuf_t text;
  int indent;
  // for: header values; if: condition and the saved then-text; while: inits.
  zt_value_t cond;
  zt_value_t iv, lb, ub, step;
  int32_t n;
  zt_value_t* inits;   // owned copy (for, while)
  zt_value_t* args;    // iter args / before args / combiner args
  zt_value_t* srcs;    // combiner sources
  int axis;
  zt_strbuf_t saved;   // if: finished then-text; while: finished before-text
  zt_value_t* after_args;
  zt_value_t while_cond;
  char loc[600];
} region_t;

struct zt_builder_s {
  value_t* values;
  int32_t num_values, cap_values;
  int32_t next_ssa;
  region_t* regions;  // stack
  int32_t depth, cap_regions;
  int32_t next_region_id;
  int32_t next_combiner;
  zt_strbuf_t funcs;   // helper functions (combiners)
  zt_strbuf_t header;  // kernel signature
  zt_strbuf_t module;  // final text
  bool in_kernel, finished;
  bool bounds_check;   // zt_builder_set_bounds_check
  char loc[600];       // ` loc("file":line:col)` or ""
  char kernel_name[256];
};

// ---------------------------------------------------------------------------
// Types

static const char* kind_spelling(zt_scalar_kind_t k) {
  switch (k) {
#define ZT_X_(name, spelling, bits) \
  case ZT_##name:                   \
    return spelling;
    ZT_SCALAR_KINDS(ZT_X_)
#undef ZT_X_
    default:
      return "?";
  }
}

int zt_scalar_kind_bits(zt_scalar_kind_t k) {
  switch (k) {
#define ZT_X_(name, spelling, bits) \
  case ZT_##name:                   \
    return bits;
    ZT_SCALAR_KINDS(ZT_X_)
#undef ZT_X_
    default:
      return 0;
  }
}

bool zt_scalar_kind_is_float(zt_scalar_kind_t k) {
  return k == ZT_F16 || k == ZT_BF16 || k == ZT_F32 || k == ZT_F64;
}

bool zt_scalar_kind_is_int(zt_scalar_kind_t k) {
  return k == ZT_I1 || k == ZT_I8 || k == ZT_I16 || k == ZT_I32 || k == ZT_I64;
}

zt_type_t zt_type_scalar(zt_scalar_kind_t kind) {
  zt_type_t t;
  memset(&t, 0, sizeof t);
  t.kind = kind;
  t.pointee = ZT_I8;
  return t;
}

zt_type_t zt_type_ptr(zt_scalar_kind_t pointee) {
  zt_type_t t = zt_type_scalar(ZT_PTR);
  t.pointee = pointee;
  return t;
}

zt_type_t zt_type_tensor(zt_type_t elem, int32_t rank, const int64_t* shape) {
  zt_type_t t = elem;
  // A rank outside [0, ZT_MAX_RANK] or a missing shape cannot be described:
  // the result is marked invalid (rank -1), which every builder call refuses
  // (kernel arguments must have rank 0; values get their types from ops).
  if (rank < 0 || rank > ZT_MAX_RANK || (rank > 0 && !shape)) {
    t.rank = -1;
    memset(t.shape, 0, sizeof t.shape);
    return t;
  }
  t.rank = rank;
  for (int i = 0; i < t.rank; ++i) t.shape[i] = shape[i];
  for (int i = t.rank; i < ZT_MAX_RANK; ++i) t.shape[i] = 0;
  return t;
}

zt_type_t zt_type_element(zt_type_t t) {
  zt_type_t e = t;
  e.rank = 0;
  memset(e.shape, 0, sizeof e.shape);
  return e;
}

int64_t zt_type_numel(zt_type_t t) {
  int64_t n = 1;
  for (int i = 0; i < t.rank; ++i) n *= t.shape[i];
  return n;
}

bool zt_type_equal(zt_type_t a, zt_type_t b) {
  if (a.kind != b.kind || a.rank != b.rank) return false;
  if (a.kind == ZT_PTR && a.pointee != b.pointee) return false;
  for (int i = 0; i < a.rank; ++i)
    if (a.shape[i] != b.shape[i]) return false;
  return true;
}

static bool same_shape(zt_type_t a, zt_type_t b) {
  if (a.rank != b.rank) return false;
  for (int i = 0; i < a.rank; ++i)
    if (a.shape[i] != b.shape[i]) return false;
  return true;
}

size_t zt_type_format(zt_type_t t, char* buf, size_t size) {
  char elem[64];
  if (t.rank < 0 || t.rank > ZT_MAX_RANK) return (size_t)snprintf(buf, size, "<invalid type>");
  if (t.kind == ZT_PTR)
    snprintf(elem, sizeof elem, "!tile.ptr<%s>", kind_spelling(t.pointee));
  else
    snprintf(elem, sizeof elem, "%s", kind_spelling(t.kind));
  if (t.rank == 0) return (size_t)snprintf(buf, size, "%s", elem);
  char dims[128] = "";
  size_t off = 0;
  for (int i = 0; i < t.rank; ++i)
    off += (size_t)snprintf(dims + off, sizeof dims - off, "%lldx",
                            (long long)t.shape[i]);
  return (size_t)snprintf(buf, size, "tensor<%s%s>", dims, elem);
}

// A type spelled into a rotating static-free buffer owned by the caller.
typedef struct {
  char s[192];
} tstr_t;
static tstr_t tstr(zt_type_t t) {
  tstr_t r;
  zt_type_format(t, r.s, sizeof r.s);
  return r;
}

// ---------------------------------------------------------------------------
// Builder state

static region_t* cur(zt_builder_t* b) {
  return b->depth ? &b->regions[b->depth - 1] : NULL;
}

static zt_status_t err(zt_builder_t* b, zt_status_code_t code, const char* fmt,
                       ...) __attribute__((format(printf, 3, 4)));
static zt_status_t err(zt_builder_t* b, zt_status_code_t code, const char* fmt,
                       ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  // b->loc is ` loc("file":line:col)`; show it as file:line:col.
  const char* l = strstr(b->loc, "loc(\"");
  if (l) {
    char where[600];
    snprintf(where, sizeof where, "%s", l + 5);
    char* q = strrchr(where, ')');
    if (q) *q = 0;
    char* quote = strchr(where, '"');
    if (quote) memmove(quote, quote + 1, strlen(quote));
    return zt_make_status(code, "%s: %s", where, msg);
  }
  return zt_make_status(code, "%s", msg);
}

// Every public call that takes a builder checks it first: a NULL handle is
// a status, never a crash (err() itself reads the builder's location).
static zt_status_t null_builder(const char* fn) {
  return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: NULL builder", fn);
}

// n values read from `in` and/or written to `out` (either may be unused):
// a negative count, or a NULL array that n > 0 needs, is a status.
static zt_status_t check_list(zt_builder_t* b, const char* fn, int32_t n, bool has_in,
                              const void* in, bool has_out, const void* out) {
  if (n < 0 || n > (1 << 20))
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "%s: count %d is out of range", fn, (int)n);
  if (n > 0 && ((has_in && !in) || (has_out && !out)))
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "%s: NULL array for %d value%s", fn, (int)n,
               n == 1 ? "" : "s");
  return NULL;
}

zt_status_t zt_builder_create(zt_builder_t** out) {
  if (!out) return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_builder_create: NULL out_builder");
  *out = NULL;
  zt_builder_t* b = calloc(1, sizeof *b);
  if (!b) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "builder");
  zt_strbuf_init(&b->funcs);
  zt_strbuf_init(&b->header);
  zt_strbuf_init(&b->module);
  *out = b;
  return NULL;
}

static void region_free(region_t* r) {
  zt_strbuf_deinit(&r->text);
  zt_strbuf_deinit(&r->saved);
  free(r->inits);
  free(r->args);
  free(r->srcs);
  free(r->after_args);
}

void zt_builder_release(zt_builder_t* b) {
  if (!b) return;
  for (int i = 0; i < b->depth; ++i) region_free(&b->regions[i]);
  free(b->regions);
  free(b->values);
  zt_strbuf_deinit(&b->funcs);
  zt_strbuf_deinit(&b->header);
  zt_strbuf_deinit(&b->module);
  free(b);
}

zt_status_t zt_builder_set_bounds_check(zt_builder_t* b, bool on) {
  if (!b) return null_builder("zt_builder_set_bounds_check");
  if (b->in_kernel || b->finished)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "set_bounds_check after begin_kernel");
  b->bounds_check = on;
  return NULL;
}

void zt_builder_set_loc(zt_builder_t* b, const char* file, int line, int col) {
  if (!b) return;
  char esc[512];
  size_t j = 0;
  for (const char* p = file ? file : "?"; *p && j + 3 < sizeof esc; ++p) {
    if (*p == '"' || *p == '\\') esc[j++] = '\\';
    esc[j++] = *p;
  }
  esc[j] = 0;
  snprintf(b->loc, sizeof b->loc, " loc(\"%s\":%d:%d)", esc, line, col);
}

static zt_status_t push_region(zt_builder_t* b, region_kind_t kind,
                               region_t** out) {
  if (b->depth == b->cap_regions) {
    int32_t cap = b->cap_regions ? b->cap_regions * 2 : 8;
    region_t* r = realloc(b->regions, (size_t)cap * sizeof *r);
    if (!r) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "builder regions");
    b->regions = r;
    b->cap_regions = cap;
  }
  region_t* r = &b->regions[b->depth++];
  memset(r, 0, sizeof *r);
  r->kind = kind;
  r->id = b->next_region_id++;
  r->indent = b->depth == 1 ? 4 : b->regions[b->depth - 2].indent + 2;
  if (kind == REGION_COMBINER) r->indent = 4;
  zt_strbuf_init(&r->text);
  zt_strbuf_init(&r->saved);
  snprintf(r->loc, sizeof r->loc, "%s", b->loc);
  *out = r;
  return NULL;
}

static zt_status_t new_value(zt_builder_t* b, zt_type_t t, const char* name,
                             zt_value_t* out) {
  // Every op's result goes through here: a NULL output pointer is a status.
  if (!out) return err(b, ZT_STATUS_INVALID_ARGUMENT, "NULL output value pointer");
  if (b->num_values == b->cap_values) {
    int32_t cap = b->cap_values ? b->cap_values * 2 : 64;
    value_t* v = realloc(b->values, (size_t)cap * sizeof *v);
    if (!v) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "builder values");
    b->values = v;
    b->cap_values = cap;
  }
  value_t* v = &b->values[b->num_values];
  v->type = t;
  snprintf(v->name, sizeof v->name, "%s", name);
  v->region = cur(b) ? cur(b)->id : -1;
  *out = b->num_values++;
  return NULL;
}

// A fresh single-result SSA value.
static zt_status_t fresh(zt_builder_t* b, zt_type_t t, zt_value_t* out) {
  char name[24];
  snprintf(name, sizeof name, "%%v%d", b->next_ssa++);
  return new_value(b, t, name, out);
}

// Checks that v is a value visible from the current region.
static zt_status_t check(zt_builder_t* b, zt_value_t v, const char* what) {
  if (!b->in_kernel || b->finished)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "no kernel is open");
  if (v < 0 || v >= b->num_values)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "%s: invalid value handle %d",
               what, v);
  int32_t rid = b->values[v].region;
  for (int i = b->depth - 1; i >= 0; --i) {
    if (b->regions[i].id == rid) return NULL;
    // A combiner is its own function: nothing outside is visible.
    if (b->regions[i].kind == REGION_COMBINER) break;
  }
  return err(b, ZT_STATUS_INVALID_ARGUMENT,
             "%s: value %s is not visible here (defined in another region)",
             what, b->values[v].name);
}

static const char* N(zt_builder_t* b, zt_value_t v) { return b->values[v].name; }
static zt_type_t T(zt_builder_t* b, zt_value_t v) { return b->values[v].type; }

zt_type_t zt_builder_value_type(zt_builder_t* b, zt_value_t v) {
  if (!b || v < 0 || v >= b->num_values) return zt_type_scalar(ZT_I1);
  return b->values[v].type;
}

static void line(zt_builder_t* b, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void line(zt_builder_t* b, const char* fmt, ...) {
  region_t* r = cur(b);
  for (int i = 0; i < r->indent; ++i) zt_strbuf_append(&r->text, " ", 1);
  va_list ap;
  va_start(ap, fmt);
  zt_strbuf_vprintf(&r->text, fmt, ap);
  va_end(ap);
  zt_strbuf_puts(&r->text, b->loc);
  zt_strbuf_append(&r->text, "\n", 1);
}

// ---------------------------------------------------------------------------
// Kernel

zt_status_t zt_builder_begin_kernel(zt_builder_t* b, const char* name,
                                    int32_t num_args, const zt_type_t* types,
                                    const int32_t* divisibility,
                                    zt_value_t* out_args) {
  if (!b) return null_builder("zt_builder_begin_kernel");
  ZT_RETURN_IF_ERROR(check_list(b, "zt_builder_begin_kernel", num_args, true, types, false, NULL));
  ZT_RETURN_IF_ERROR(check_list(b, "zt_builder_begin_kernel", num_args, false, NULL, true, out_args));
  if (!name) return err(b, ZT_STATUS_INVALID_ARGUMENT, "begin_kernel: NULL name");
  if (b->in_kernel || b->finished)
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "a builder holds one kernel; %s was already started", name);
  if (!name[0] || strlen(name) >= sizeof b->kernel_name)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "kernel name of %zu characters", strlen(name));
  for (const char* p = name; *p; ++p)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
          (*p >= '0' && *p <= '9') || *p == '_'))
      return err(b, ZT_STATUS_INVALID_ARGUMENT,
                 "kernel name '%s' must be an identifier", name);
  snprintf(b->kernel_name, sizeof b->kernel_name, "%s", name);
  region_t* r;
  ZT_RETURN_IF_ERROR(push_region(b, REGION_KERNEL, &r));
  b->in_kernel = true;
  zt_strbuf_printf(&b->header, "  func.func @%s(", name);
  for (int32_t i = 0; i < num_args; ++i) {
    if (types[i].rank != 0)
      return err(b, ZT_STATUS_INVALID_ARGUMENT,
                 "kernel argument %d must be a scalar or pointer", i);
    ZT_RETURN_IF_ERROR(fresh(b, types[i], &out_args[i]));
    zt_strbuf_printf(&b->header, "%s%s: %s", i ? ", " : "", N(b, out_args[i]),
                     tstr(types[i]).s);
  }
  zt_strbuf_puts(&b->header, ") attributes {zt.kernel");
  if (b->bounds_check) zt_strbuf_puts(&b->header, ", zt.bounds_check");
  if (num_args > 0) {
    zt_strbuf_puts(&b->header, ", zt.divisibility = array<i32");
    for (int32_t i = 0; i < num_args; ++i)
      zt_strbuf_printf(&b->header, "%s %d", i ? "," : ":",
                       divisibility ? divisibility[i] : 0);
    zt_strbuf_puts(&b->header, ">");
  }
  zt_strbuf_puts(&b->header, "} {\n");
  return NULL;
}

zt_status_t zt_builder_end_kernel(zt_builder_t* b) {
  if (!b) return null_builder("zt_builder_end_kernel");
  if (!b->in_kernel || b->finished)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "no kernel is open");
  if (b->depth != 1)
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "kernel ended with %d unclosed region(s)", b->depth - 1);
  line(b, "return");
  region_t* r = cur(b);
  zt_strbuf_t* m = &b->module;
  zt_strbuf_puts(m, "module {\n");
  zt_strbuf_append(m, b->funcs.data ? b->funcs.data : "", b->funcs.size);
  zt_strbuf_append(m, b->header.data, b->header.size);
  zt_strbuf_append(m, r->text.data ? r->text.data : "", r->text.size);
  zt_strbuf_puts(m, "  }\n}\n");
  region_free(r);
  b->depth = 0;
  b->finished = true;
  if (m->failed) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "module text");
  return NULL;
}

zt_status_t zt_builder_module_text(zt_builder_t* b, const char** out_text,
                                   size_t* out_size) {
  if (!b) return null_builder("zt_builder_module_text");
  if (!out_text)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_builder_module_text: NULL out_text");
  if (!b->finished)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                          "module text is only available after end_kernel");
  *out_text = b->module.data;
  if (out_size) *out_size = b->module.size;
  return NULL;
}

// ---------------------------------------------------------------------------
// Constants and ids

// IEEE binary16 / bfloat16 bit patterns with round-to-nearest-even.
static uint16_t f32_to_bf16_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static uint16_t f64_to_f16_bits(double d) {
  float f = (float)d;  // double rounding is harmless for literals we emit
  uint32_t u;
  memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
  if (abs >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  // overflow
  if (abs < 0x38800000u) {  // subnormal or zero in half
    int e = (int)(abs >> 23);
    if (e < 102) return (uint16_t)sign;
    uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
    int shift = 126 - e;
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return (uint16_t)(sign | half);
  }
  uint32_t h = ((abs - 0x38000000u) >> 13);
  uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
  return (uint16_t)(sign | h);
}

zt_status_t zt_builder_const_int(zt_builder_t* b, zt_scalar_kind_t kind,
                                 int64_t value, zt_value_t* out) {
  if (!b) return null_builder("zt_builder_const_int");
  if (!zt_scalar_kind_is_int(kind))
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "integer constant of type %s",
               kind_spelling(kind));
  if (!b->in_kernel || b->finished)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "no kernel is open");
  ZT_RETURN_IF_ERROR(fresh(b, zt_type_scalar(kind), out));
  if (kind == ZT_I1)
    line(b, "%s = arith.constant %s", N(b, *out), value ? "true" : "false");
  else
    line(b, "%s = arith.constant %lld : %s", N(b, *out), (long long)value,
         kind_spelling(kind));
  return NULL;
}

zt_status_t zt_builder_const_float(zt_builder_t* b, zt_scalar_kind_t kind,
                                   double value, zt_value_t* out) {
  if (!b) return null_builder("zt_builder_const_float");
  if (!zt_scalar_kind_is_float(kind))
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "float constant of type %s",
               kind_spelling(kind));
  if (!b->in_kernel || b->finished)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "no kernel is open");
  ZT_RETURN_IF_ERROR(fresh(b, zt_type_scalar(kind), out));
  // Hexadecimal bit patterns keep the value exact (and spell inf/nan).
  unsigned long long bits;
  int digits;
  if (kind == ZT_F64) {
    memcpy(&bits, &value, 8);
    digits = 16;
  } else if (kind == ZT_F32) {
    float f = (float)value;
    uint32_t u;
    memcpy(&u, &f, 4);
    bits = u;
    digits = 8;
  } else if (kind == ZT_BF16) {
    bits = f32_to_bf16_bits((float)value);
    digits = 4;
  } else {
    bits = f64_to_f16_bits(value);
    digits = 4;
  }
  line(b, "%s = arith.constant 0x%0*llX : %s", N(b, *out), digits, bits,
       kind_spelling(kind));
  return NULL;
}

static zt_status_t axis_op(zt_builder_t* b, const char* op, int axis,
                           zt_value_t* out) {
  if (!b->in_kernel || b->finished)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "no kernel is open");
  if (axis < 0 || axis > 2)
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "%s axis must be 0, 1 or 2, got %d", op, axis);
  ZT_RETURN_IF_ERROR(fresh(b, zt_type_scalar(ZT_I32), out));
  line(b, "%s = \"tile.%s\"() {axis = %d : i32} : () -> i32", N(b, *out), op,
       axis);
  return NULL;
}

zt_status_t zt_builder_program_id(zt_builder_t* b, int axis, zt_value_t* out) {
  if (!b) return null_builder("zt_builder_program_id");
  return axis_op(b, "program_id", axis, out);
}

zt_status_t zt_builder_num_programs(zt_builder_t* b, int axis, zt_value_t* out) {
  if (!b) return null_builder("zt_builder_num_programs");
  return axis_op(b, "num_programs", axis, out);
}

zt_status_t zt_builder_make_range(zt_builder_t* b, int32_t start, int32_t end,
                                  zt_value_t* out) {
  if (!b) return null_builder("zt_builder_make_range");
  if (!b->in_kernel || b->finished)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "no kernel is open");
  int64_t n = (int64_t)end - start;
  if (n <= 0 || (n & (n - 1)) != 0)
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "arange's range must be a positive power of 2, got %d..%d",
               start, end);
  zt_type_t t = zt_type_tensor(zt_type_scalar(ZT_I32), 1, &n);
  ZT_RETURN_IF_ERROR(fresh(b, t, out));
  line(b,
       "%s = \"tile.make_range\"() {start = %d : i32, end = %d : i32} : () -> "
       "%s",
       N(b, *out), start, end, tstr(t).s);
  return NULL;
}

// ---------------------------------------------------------------------------
// Shape ops

static zt_status_t check_shape(zt_builder_t* b, int32_t rank,
                               const int64_t* shape, const char* what) {
  if (rank < 1)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "%s: rank %d", what, rank);
  if (rank > ZT_MAX_RANK)
    return err(b, ZT_STATUS_UNSUPPORTED, "%s: rank %d (supported: 1..%d)", what,
               rank, ZT_MAX_RANK);
  if (!shape) return err(b, ZT_STATUS_INVALID_ARGUMENT, "%s: NULL shape", what);
  for (int i = 0; i < rank; ++i)
    if (shape[i] <= 0)
      return err(b, ZT_STATUS_INVALID_ARGUMENT, "%s: dimension %d is %lld",
                 what, i, (long long)shape[i]);
  return NULL;
}

static zt_status_t unary_shape_op(zt_builder_t* b, const char* op, zt_value_t v,
                                  zt_type_t rt, const char* attrs,
                                  zt_value_t* out) {
  ZT_RETURN_IF_ERROR(fresh(b, rt, out));
  line(b, "%s = \"tile.%s\"(%s)%s : (%s) -> %s", N(b, *out), op, N(b, v), attrs,
       tstr(T(b, v)).s, tstr(rt).s);
  return NULL;
}

zt_status_t zt_builder_splat(zt_builder_t* b, zt_value_t v, int32_t rank,
                             const int64_t* shape, zt_value_t* out) {
  if (!b) return null_builder("zt_builder_splat");
  ZT_RETURN_IF_ERROR(check(b, v, "splat"));
  ZT_RETURN_IF_ERROR(check_shape(b, rank, shape, "splat"));
  if (T(b, v).rank != 0)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "splat of a non-scalar %s",
               tstr(T(b, v)).s);
  return unary_shape_op(b, "splat", v, zt_type_tensor(T(b, v), rank, shape), "",
                        out);
}

zt_status_t zt_builder_broadcast(zt_builder_t* b, zt_value_t v, int32_t rank,
                                 const int64_t* shape, zt_value_t* out) {
  if (!b) return null_builder("zt_builder_broadcast");
  ZT_RETURN_IF_ERROR(check(b, v, "broadcast"));
  ZT_RETURN_IF_ERROR(check_shape(b, rank, shape, "broadcast"));
  zt_type_t t = T(b, v);
  if (t.rank != rank)
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "broadcast from rank %d to rank %d", t.rank, rank);
  for (int i = 0; i < rank; ++i)
    if (t.shape[i] != shape[i] && t.shape[i] != 1)
      return err(b, ZT_STATUS_INVALID_ARGUMENT,
                 "cannot broadcast dimension %d of size %lld to %lld", i,
                 (long long)t.shape[i], (long long)shape[i]);
  return unary_shape_op(b, "broadcast", v,
                        zt_type_tensor(zt_type_element(t), rank, shape), "",
                        out);
}

zt_status_t zt_builder_expand_dims(zt_builder_t* b, zt_value_t v, int axis,
                                   zt_value_t* out) {
  if (!b) return null_builder("zt_builder_expand_dims");
  ZT_RETURN_IF_ERROR(check(b, v, "expand_dims"));
  zt_type_t t = T(b, v);
  if (axis < 0) axis += t.rank + 1;
  if (axis < 0 || axis > t.rank || t.rank + 1 > ZT_MAX_RANK)
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "expand_dims axis %d invalid for rank %d", axis, t.rank);
  int64_t shape[ZT_MAX_RANK];
  for (int i = 0, j = 0; i <= t.rank; ++i)
    shape[i] = i == axis ? 1 : t.shape[j++];
  char attrs[64];
  snprintf(attrs, sizeof attrs, " {axis = %d : i32}", axis);
  return unary_shape_op(b, "expand_dims", v,
                        zt_type_tensor(zt_type_element(t), t.rank + 1, shape),
                        attrs, out);
}

zt_status_t zt_builder_hint(zt_builder_t* b, zt_value_t v, const char* hint,
                            const int64_t* values, int32_t n, zt_value_t* out) {
  if (!b) return null_builder("zt_builder_hint");
  ZT_RETURN_IF_ERROR(check_list(b, "zt_builder_hint", n, true, values, false, NULL));
  ZT_RETURN_IF_ERROR(check(b, v, "hint"));
  zt_type_t t = T(b, v);
  if (!hint || (strcmp(hint, "multiple_of") != 0 && strcmp(hint, "max_contiguous") != 0 &&
                strcmp(hint, "max_constancy") != 0))
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "unknown hint '%s' (multiple_of, max_contiguous, max_constancy)",
               hint ? hint : "(null)");
  int32_t want = t.rank ? t.rank : 1;
  if (n != want || !values)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "%s: %d values for a value of rank %d", hint,
               (int)n, (int)t.rank);
  char attrs[160];
  int len = snprintf(attrs, sizeof attrs, " {hint = \"%s\", values = array<i64", hint);
  for (int32_t i = 0; i < n; ++i) {
    int64_t x = values[i];
    if (x < 1 || (x & (x - 1)))
      return err(b, ZT_STATUS_INVALID_ARGUMENT, "%s: %lld is not a power of two >= 1", hint,
                 (long long)x);
    len += snprintf(attrs + len, sizeof attrs - (size_t)len, "%s %lld", i ? "," : ":",
                    (long long)x);
  }
  snprintf(attrs + len, sizeof attrs - (size_t)len, ">}");
  return unary_shape_op(b, "hint", v, t, attrs, out);
}

zt_status_t zt_builder_reshape(zt_builder_t* b, zt_value_t v, int32_t rank,
                               const int64_t* shape, zt_value_t* out) {
  if (!b) return null_builder("zt_builder_reshape");
  ZT_RETURN_IF_ERROR(check(b, v, "reshape"));
  ZT_RETURN_IF_ERROR(check_shape(b, rank, shape, "reshape"));
  zt_type_t t = T(b, v);
  zt_type_t rt = zt_type_tensor(zt_type_element(t), rank, shape);
  if (zt_type_numel(rt) != zt_type_numel(t))
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "reshape from %s to %s changes the number of elements",
               tstr(t).s, tstr(rt).s);
  return unary_shape_op(b, "reshape", v, rt, "", out);
}

zt_status_t zt_builder_trans(zt_builder_t* b, zt_value_t v,
                             const int32_t* order, zt_value_t* out) {
  if (!b) return null_builder("zt_builder_trans");
  ZT_RETURN_IF_ERROR(check(b, v, "trans"));
  zt_type_t t = T(b, v);
  if (t.rank < 1)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "trans of a scalar");
  if (!order) return err(b, ZT_STATUS_INVALID_ARGUMENT, "trans: NULL order");
  int seen[ZT_MAX_RANK] = {0};
  int64_t shape[ZT_MAX_RANK];
  char attrs[128];
  size_t off = (size_t)snprintf(attrs, sizeof attrs, " {order = array<i32");
  for (int i = 0; i < t.rank; ++i) {
    if (order[i] < 0 || order[i] >= t.rank || seen[order[i]]++)
      return err(b, ZT_STATUS_INVALID_ARGUMENT,
                 "trans order is not a permutation of 0..%d", t.rank - 1);
    shape[i] = t.shape[order[i]];
    off += (size_t)snprintf(attrs + off, sizeof attrs - off, "%s %d",
                            i ? "," : ":", order[i]);
  }
  snprintf(attrs + off, sizeof attrs - off, ">}");
  return unary_shape_op(b, "trans", v,
                        zt_type_tensor(zt_type_element(t), t.rank, shape),
                        attrs, out);
}

// ---------------------------------------------------------------------------
// Elementwise

static const char* binary_op_name(zt_binary_op_t op) {
  switch (op) {
#define ZT_X_(name, mlir) \
  case ZT_BINARY_##name:  \
    return mlir;
    ZT_BINARY_OPS(ZT_X_)
#undef ZT_X_
    default:
      return NULL;
  }
}

zt_status_t zt_builder_binary(zt_builder_t* b, zt_binary_op_t op,
                              zt_value_t lhs, zt_value_t rhs, zt_value_t* out) {
  if (!b) return null_builder("zt_builder_binary");
  const char* name = binary_op_name(op);
  if (!name) return err(b, ZT_STATUS_INVALID_ARGUMENT, "bad binary op %d", op);
  ZT_RETURN_IF_ERROR(check(b, lhs, name));
  ZT_RETURN_IF_ERROR(check(b, rhs, name));
  zt_type_t t = T(b, lhs);
  if (!zt_type_equal(t, T(b, rhs)))
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "%s: operand types differ: %s vs %s",
               name, tstr(t).s, tstr(T(b, rhs)).s);
  bool is_float_op = op <= ZT_BINARY_ATAN2;
  if (is_float_op && !zt_scalar_kind_is_float(t.kind))
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "%s needs float operands, got %s",
               name, tstr(t).s);
  if (!is_float_op && !zt_scalar_kind_is_int(t.kind))
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "%s needs integer operands, got %s", name, tstr(t).s);
  if (op == ZT_BINARY_MULHIUI) {
    // The high half of the unsigned product: the second result of
    // arith.mului_extended.
    char base[24];
    snprintf(base, sizeof base, "%%v%d", b->next_ssa++);
    line(b, "%s:2 = arith.mului_extended %s, %s : %s", base, N(b, lhs),
         N(b, rhs), tstr(t).s);
    char name2[32];
    snprintf(name2, sizeof name2, "%s#1", base);
    return new_value(b, t, name2, out);
  }
  ZT_RETURN_IF_ERROR(fresh(b, t, out));
  line(b, "%s = %s %s, %s : %s", N(b, *out), name, N(b, lhs), N(b, rhs),
       tstr(t).s);
  return NULL;
}

zt_status_t zt_builder_unary(zt_builder_t* b, zt_unary_op_t op, zt_value_t v,
                             zt_value_t* out) {
  if (!b) return null_builder("zt_builder_unary");
  const char* name = NULL;
  int fonly = 0;
  switch (op) {
#define ZT_X_(nm, mlir, f) \
  case ZT_UNARY_##nm:      \
    name = mlir;           \
    fonly = f;             \
    break;
    ZT_UNARY_OPS(ZT_X_)
#undef ZT_X_
    default:
      return err(b, ZT_STATUS_INVALID_ARGUMENT, "bad unary op %d", op);
  }
  ZT_RETURN_IF_ERROR(check(b, v, name));
  zt_type_t t = T(b, v);
  if (fonly && !zt_scalar_kind_is_float(t.kind))
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "%s needs a float operand, got %s",
               name, tstr(t).s);
  if (!fonly && !zt_scalar_kind_is_int(t.kind))
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "%s needs an integer operand, got %s", name, tstr(t).s);
  ZT_RETURN_IF_ERROR(fresh(b, t, out));
  line(b, "%s = %s %s : %s", N(b, *out), name, N(b, v), tstr(t).s);
  return NULL;
}

zt_status_t zt_builder_fma(zt_builder_t* b, zt_value_t a, zt_value_t x,
                           zt_value_t c, zt_value_t* out) {
  if (!b) return null_builder("zt_builder_fma");
  ZT_RETURN_IF_ERROR(check(b, a, "fma"));
  ZT_RETURN_IF_ERROR(check(b, x, "fma"));
  ZT_RETURN_IF_ERROR(check(b, c, "fma"));
  zt_type_t t = T(b, a);
  if (!zt_type_equal(t, T(b, x)) || !zt_type_equal(t, T(b, c)) ||
      !zt_scalar_kind_is_float(t.kind))
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "fma needs three float operands of one type");
  ZT_RETURN_IF_ERROR(fresh(b, t, out));
  line(b, "%s = math.fma %s, %s, %s : %s", N(b, *out), N(b, a), N(b, x),
       N(b, c), tstr(t).s);
  return NULL;
}

zt_status_t zt_builder_cmp(zt_builder_t* b, zt_cmp_predicate_t pred,
                           zt_value_t lhs, zt_value_t rhs, zt_value_t* out) {
  if (!b) return null_builder("zt_builder_cmp");
  const char *op = NULL, *p = NULL;
  switch (pred) {
#define ZT_X_(name, o, s) \
  case ZT_CMP_##name:     \
    op = o;               \
    p = s;                \
    break;
    ZT_CMP_PREDICATES(ZT_X_)
#undef ZT_X_
    default:
      return err(b, ZT_STATUS_INVALID_ARGUMENT, "bad predicate %d", pred);
  }
  ZT_RETURN_IF_ERROR(check(b, lhs, "compare"));
  ZT_RETURN_IF_ERROR(check(b, rhs, "compare"));
  zt_type_t t = T(b, lhs);
  if (!zt_type_equal(t, T(b, rhs)))
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "comparison operand types differ: %s vs %s", tstr(t).s,
               tstr(T(b, rhs)).s);
  bool is_f = zt_scalar_kind_is_float(t.kind);
  if (is_f != (op[3] == 'f') || t.kind == ZT_PTR)
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "predicate %s does not apply to %s", p, tstr(t).s);
  zt_type_t rt = t;
  rt.kind = ZT_I1;
  ZT_RETURN_IF_ERROR(fresh(b, rt, out));
  line(b, "%s = arith.%s %s, %s, %s : %s", N(b, *out), op, p, N(b, lhs),
       N(b, rhs), tstr(t).s);
  return NULL;
}

zt_status_t zt_builder_select(zt_builder_t* b, zt_value_t cond, zt_value_t x,
                              zt_value_t y, zt_value_t* out) {
  if (!b) return null_builder("zt_builder_select");
  ZT_RETURN_IF_ERROR(check(b, cond, "select"));
  ZT_RETURN_IF_ERROR(check(b, x, "select"));
  ZT_RETURN_IF_ERROR(check(b, y, "select"));
  zt_type_t ct = T(b, cond), t = T(b, x);
  if (!zt_type_equal(t, T(b, y)))
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "select operand types differ: %s vs %s", tstr(t).s,
               tstr(T(b, y)).s);
  if (ct.kind != ZT_I1 || (ct.rank != 0 && !same_shape(ct, t)))
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "select condition %s does not match %s", tstr(ct).s, tstr(t).s);
  ZT_RETURN_IF_ERROR(fresh(b, t, out));
  line(b, "%s = arith.select %s, %s, %s : %s, %s", N(b, *out), N(b, cond),
       N(b, x), N(b, y), tstr(ct).s, tstr(t).s);
  return NULL;
}

zt_status_t zt_builder_cast(zt_builder_t* b, zt_cast_op_t op, zt_value_t v,
                            zt_scalar_kind_t to, zt_value_t* out) {
  if (!b) return null_builder("zt_builder_cast");
  const char* name = NULL;
  switch (op) {
#define ZT_X_(nm, mlir) \
  case ZT_CAST_##nm:    \
    name = mlir;        \
    break;
    ZT_CAST_OPS(ZT_X_)
#undef ZT_X_
    default:
      return err(b, ZT_STATUS_INVALID_ARGUMENT, "bad cast op %d", op);
  }
  ZT_RETURN_IF_ERROR(check(b, v, name));
  zt_type_t t = T(b, v);
  zt_scalar_kind_t from = t.kind;
  int fb = zt_scalar_kind_bits(from), tb = zt_scalar_kind_bits(to);
  bool fi = zt_scalar_kind_is_int(from), ff = zt_scalar_kind_is_float(from);
  bool ti = zt_scalar_kind_is_int(to), tf = zt_scalar_kind_is_float(to);
  bool ok = false;
  switch (op) {
    case ZT_CAST_EXTSI:
    case ZT_CAST_EXTUI: ok = fi && ti && tb > fb; break;
    case ZT_CAST_TRUNCI: ok = fi && ti && tb < fb; break;
    case ZT_CAST_SITOFP:
    case ZT_CAST_UITOFP: ok = fi && tf; break;
    case ZT_CAST_FPTOSI:
    case ZT_CAST_FPTOUI: ok = ff && ti; break;
    case ZT_CAST_EXTF: ok = ff && tf && tb > fb; break;
    case ZT_CAST_TRUNCF: ok = ff && tf && tb < fb; break;
    case ZT_CAST_BITCAST:
      ok = (fi || ff) && (ti || tf) && tb == fb && from != to;
      break;
    default: break;
  }
  // bf16 <-> f16 have equal widths: the front end goes through f32.
  if (!ok)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "%s from %s to %s is not valid",
               name, kind_spelling(from), kind_spelling(to));
  zt_type_t rt = t;
  rt.kind = to;
  ZT_RETURN_IF_ERROR(fresh(b, rt, out));
  line(b, "%s = %s %s : %s to %s", N(b, *out), name, N(b, v), tstr(t).s,
       tstr(rt).s);
  return NULL;
}

// ---------------------------------------------------------------------------
// Pointers and memory

zt_status_t zt_builder_addptr(zt_builder_t* b, zt_value_t ptr, zt_value_t offset,
                              zt_value_t* out) {
  if (!b) return null_builder("zt_builder_addptr");
  ZT_RETURN_IF_ERROR(check(b, ptr, "addptr"));
  ZT_RETURN_IF_ERROR(check(b, offset, "addptr"));
  zt_type_t pt = T(b, ptr), ot = T(b, offset);
  if (pt.kind != ZT_PTR)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "addptr on a non-pointer %s",
               tstr(pt).s);
  if (!zt_scalar_kind_is_int(ot.kind) || ot.kind == ZT_I1 || !same_shape(pt, ot))
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "addptr offset %s must be an integer of the pointer's shape %s",
               tstr(ot).s, tstr(pt).s);
  ZT_RETURN_IF_ERROR(fresh(b, pt, out));
  line(b, "%s = \"tile.addptr\"(%s, %s) : (%s, %s) -> %s", N(b, *out),
       N(b, ptr), N(b, offset), tstr(pt).s, tstr(ot).s, tstr(pt).s);
  return NULL;
}

zt_status_t zt_builder_ptr_to_int(zt_builder_t* b, zt_value_t ptr,
                                  zt_value_t* out) {
  if (!b) return null_builder("zt_builder_ptr_to_int");
  ZT_RETURN_IF_ERROR(check(b, ptr, "ptr_to_int"));
  zt_type_t pt = T(b, ptr);
  if (pt.kind != ZT_PTR)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "ptr_to_int of %s", tstr(pt).s);
  zt_type_t rt = pt;
  rt.kind = ZT_I64;
  return unary_shape_op(b, "ptr_to_int", ptr, rt, "", out);
}

zt_status_t zt_builder_int_to_ptr(zt_builder_t* b, zt_value_t v,
                                  zt_scalar_kind_t pointee, zt_value_t* out) {
  if (!b) return null_builder("zt_builder_int_to_ptr");
  ZT_RETURN_IF_ERROR(check(b, v, "int_to_ptr"));
  zt_type_t t = T(b, v);
  if (t.kind != ZT_I64 || pointee == ZT_PTR)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "int_to_ptr of %s", tstr(t).s);
  zt_type_t rt = t;
  rt.kind = ZT_PTR;
  rt.pointee = pointee;
  return unary_shape_op(b, "int_to_ptr", v, rt, "", out);
}

zt_status_t zt_builder_ptr_cast(zt_builder_t* b, zt_value_t ptr,
                                zt_scalar_kind_t pointee, zt_value_t* out) {
  if (!b) return null_builder("zt_builder_ptr_cast");
  ZT_RETURN_IF_ERROR(check(b, ptr, "ptr_cast"));
  zt_type_t t = T(b, ptr);
  if (t.kind != ZT_PTR || pointee == ZT_PTR)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "pointer cast of %s", tstr(t).s);
  zt_type_t rt = t;
  rt.pointee = pointee;
  return unary_shape_op(b, "ptr_cast", ptr, rt, "", out);
}

zt_status_t zt_builder_load(zt_builder_t* b, zt_value_t ptr, zt_value_t mask,
                            zt_value_t other, zt_value_t* out) {
  if (!b) return null_builder("zt_builder_load");
  ZT_RETURN_IF_ERROR(check(b, ptr, "load"));
  zt_type_t pt = T(b, ptr);
  if (pt.kind != ZT_PTR)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "load from a non-pointer %s",
               tstr(pt).s);
  zt_type_t rt = pt;
  rt.kind = pt.pointee;
  if (mask != ZT_NO_VALUE) {
    ZT_RETURN_IF_ERROR(check(b, mask, "load mask"));
    zt_type_t mt = T(b, mask);
    if (mt.kind != ZT_I1 || !same_shape(mt, pt))
      return err(b, ZT_STATUS_INVALID_ARGUMENT,
                 "load mask %s does not match pointer %s", tstr(mt).s,
                 tstr(pt).s);
  }
  if (other != ZT_NO_VALUE) {
    if (mask == ZT_NO_VALUE)
      return err(b, ZT_STATUS_INVALID_ARGUMENT, "load 'other' needs a mask");
    ZT_RETURN_IF_ERROR(check(b, other, "load other"));
    if (!zt_type_equal(T(b, other), rt))
      return err(b, ZT_STATUS_INVALID_ARGUMENT,
                 "load 'other' is %s but the loaded value is %s",
                 tstr(T(b, other)).s, tstr(rt).s);
  }
  ZT_RETURN_IF_ERROR(fresh(b, rt, out));
  int nm = mask != ZT_NO_VALUE, no = other != ZT_NO_VALUE;
  char operands[128], types[512];
  snprintf(operands, sizeof operands, "%s%s%s%s%s", N(b, ptr), nm ? ", " : "",
           nm ? N(b, mask) : "", no ? ", " : "", no ? N(b, other) : "");
  snprintf(types, sizeof types, "%s%s%s%s%s", tstr(pt).s, nm ? ", " : "",
           nm ? tstr(T(b, mask)).s : "", no ? ", " : "",
           no ? tstr(T(b, other)).s : "");
  line(b,
       "%s = \"tile.load\"(%s) {operandSegmentSizes = array<i32: 1, %d, %d>} "
       ": (%s) -> %s",
       N(b, *out), operands, nm, no, types, tstr(rt).s);
  return NULL;
}

zt_status_t zt_builder_store(zt_builder_t* b, zt_value_t ptr, zt_value_t value,
                             zt_value_t mask) {
  if (!b) return null_builder("zt_builder_store");
  ZT_RETURN_IF_ERROR(check(b, ptr, "store"));
  ZT_RETURN_IF_ERROR(check(b, value, "store"));
  zt_type_t pt = T(b, ptr), vt = T(b, value);
  if (pt.kind != ZT_PTR)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "store to a non-pointer %s",
               tstr(pt).s);
  zt_type_t want = pt;
  want.kind = pt.pointee;
  if (!zt_type_equal(vt, want))
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "store of %s through pointer %s (expected %s)", tstr(vt).s,
               tstr(pt).s, tstr(want).s);
  int nm = mask != ZT_NO_VALUE;
  if (nm) {
    ZT_RETURN_IF_ERROR(check(b, mask, "store mask"));
    zt_type_t mt = T(b, mask);
    if (mt.kind != ZT_I1 || !same_shape(mt, pt))
      return err(b, ZT_STATUS_INVALID_ARGUMENT,
                 "store mask %s does not match pointer %s", tstr(mt).s,
                 tstr(pt).s);
  }
  line(b, "\"tile.store\"(%s, %s%s%s) {operandSegmentSizes = array<i32: 1, 1, %d>} : (%s, %s%s%s) -> ()",
       N(b, ptr), N(b, value), nm ? ", " : "", nm ? N(b, mask) : "", nm,
       tstr(pt).s, tstr(vt).s, nm ? ", " : "", nm ? tstr(T(b, mask)).s : "");
  return NULL;
}

// ---------------------------------------------------------------------------
// Reductions

// tile.reduce/tile.scan have up to 4 operand and result slots, each its own
// optional (IRDL unifies the types of one variadic's operands).
#define ZT_MAX_REDUCE_OPERANDS 4
static void segment_sizes(zt_strbuf_t* sb, int32_t n) {
  zt_strbuf_puts(sb, ", operandSegmentSizes = array<i32");
  for (int i = 0; i < ZT_MAX_REDUCE_OPERANDS; ++i)
    zt_strbuf_printf(sb, "%s %d", i ? "," : ":", i < n ? 1 : 0);
  zt_strbuf_puts(sb, ">, resultSegmentSizes = array<i32");
  for (int i = 0; i < ZT_MAX_REDUCE_OPERANDS; ++i)
    zt_strbuf_printf(sb, "%s %d", i ? "," : ":", i < n ? 1 : 0);
  zt_strbuf_puts(sb, ">");
}

static zt_status_t reduce_result_type(zt_builder_t* b, zt_type_t t, int axis,
                                      zt_type_t* out) {
  if (t.rank < 1)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "reduction of a scalar");
  if (axis < 0 || axis >= t.rank)
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "reduction axis %d out of range for rank %d", axis, t.rank);
  int64_t shape[ZT_MAX_RANK];
  for (int i = 0, j = 0; i < t.rank; ++i)
    if (i != axis) shape[j++] = t.shape[i];
  *out = zt_type_tensor(zt_type_element(t), t.rank - 1, shape);
  return NULL;
}

zt_status_t zt_builder_reduce_begin(zt_builder_t* b, int32_t n,
                                    const zt_value_t* srcs, int axis,
                                    zt_value_t* out_args) {
  if (!b) return null_builder("zt_builder_reduce_begin");
  ZT_RETURN_IF_ERROR(check_list(b, "zt_builder_reduce_begin", n, true, srcs, false, NULL));
  ZT_RETURN_IF_ERROR(check_list(b, "zt_builder_reduce_begin", n, false, NULL, true, out_args));
  if (n < 1) return err(b, ZT_STATUS_INVALID_ARGUMENT, "reduce of 0 values");
  if (n > ZT_MAX_REDUCE_OPERANDS)
    return err(b, ZT_STATUS_UNSUPPORTED, "reductions and scans of more than %d values",
               ZT_MAX_REDUCE_OPERANDS);
  for (int32_t i = 0; i < n; ++i) ZT_RETURN_IF_ERROR(check(b, srcs[i], "reduce"));
  zt_type_t t0 = T(b, srcs[0]);
  if (axis < 0) axis += t0.rank;
  for (int32_t i = 1; i < n; ++i)
    if (!same_shape(T(b, srcs[i]), t0))
      return err(b, ZT_STATUS_INVALID_ARGUMENT,
                 "reduce operands have different shapes");
  zt_type_t rt;
  ZT_RETURN_IF_ERROR(reduce_result_type(b, t0, axis, &rt));
  region_t* r;
  ZT_RETURN_IF_ERROR(push_region(b, REGION_COMBINER, &r));
  r->n = n;
  r->axis = axis;
  r->srcs = malloc((size_t)n * sizeof(zt_value_t));
  r->args = malloc((size_t)2 * n * sizeof(zt_value_t));
  if (!r->srcs || !r->args)
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "reduce");
  memcpy(r->srcs, srcs, (size_t)n * sizeof(zt_value_t));
  for (int32_t i = 0; i < 2 * n; ++i) {
    ZT_RETURN_IF_ERROR(
        fresh(b, zt_type_element(T(b, srcs[i % n])), &out_args[i]));
    r->args[i] = out_args[i];
  }
  return NULL;
}

// Closes a combiner region (reduce or scan): writes the combiner function
// and the op using it, and writes the op's results.
static void names_list(zt_builder_t* b, zt_strbuf_t* sb, int32_t n, const zt_value_t* v);
static void types_list(zt_builder_t* b, zt_strbuf_t* sb, int32_t n, const zt_value_t* v);
static void result_prefix(zt_strbuf_t* sb, const char* base, int32_t n);
static zt_status_t op_results(zt_builder_t* b, const char* base, int32_t n,
                              const zt_value_t* typed_like, zt_value_t* out);

static zt_status_t combiner_end(zt_builder_t* b, bool scan, int32_t n,
                                const zt_value_t* combined, zt_value_t* out_results) {
  const char* what = scan ? "scan" : "reduce";
  region_t* r = cur(b);
  if (!r || r->kind != REGION_COMBINER || (r->iv == 1) != scan || r->n != n)
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "%s_end without a matching %s_begin of %d values", what, what, n);
  for (int32_t i = 0; i < n; ++i) {
    ZT_RETURN_IF_ERROR(check(b, combined[i], "combiner result"));
    if (!zt_type_equal(T(b, combined[i]), T(b, r->args[i])))
      return err(b, ZT_STATUS_INVALID_ARGUMENT, "combiner result %d is %s, expected %s", i,
                 tstr(T(b, combined[i])).s, tstr(T(b, r->args[i])).s);
  }
  int id = b->next_combiner++;
  zt_strbuf_t* f = &b->funcs;
  zt_strbuf_printf(f, "  func.func private @zt_combine_%d(", id);
  for (int32_t i = 0; i < 2 * n; ++i)
    zt_strbuf_printf(f, "%s%s: %s", i ? ", " : "", N(b, r->args[i]), tstr(T(b, r->args[i])).s);
  zt_strbuf_puts(f, ") -> (");
  types_list(b, f, n, r->args);
  zt_strbuf_puts(f, ") {\n");
  zt_strbuf_append(f, r->text.data ? r->text.data : "", r->text.size);
  zt_strbuf_puts(f, "    return ");
  names_list(b, f, n, combined);
  zt_strbuf_puts(f, " : ");
  types_list(b, f, n, combined);
  zt_strbuf_puts(f, "\n  }\n");

  // Pop the combiner and write the op in the parent region.
  int axis = r->axis;
  bool reverse = r->cond == 1;
  zt_value_t srcs[ZT_MAX_REDUCE_OPERANDS];
  memcpy(srcs, r->srcs, (size_t)n * sizeof(zt_value_t));
  region_free(r);
  b->depth--;
  zt_type_t rt[ZT_MAX_REDUCE_OPERANDS];
  for (int32_t i = 0; i < n; ++i) {
    rt[i] = T(b, srcs[i]);
    if (!scan) ZT_RETURN_IF_ERROR(reduce_result_type(b, T(b, srcs[i]), axis, &rt[i]));
  }
  char base[24];
  snprintf(base, sizeof base, "%%v%d", b->next_ssa++);
  zt_strbuf_t ln;
  zt_strbuf_init(&ln);
  result_prefix(&ln, base, n);
  zt_strbuf_printf(&ln, "\"tile.%s\"(", what);
  names_list(b, &ln, n, srcs);
  zt_strbuf_printf(&ln, ") {axis = %d : i32, combiner = @zt_combine_%d", axis, id);
  if (scan) zt_strbuf_printf(&ln, ", reverse = %s", reverse ? "true" : "false");
  segment_sizes(&ln, n);
  zt_strbuf_puts(&ln, "} : (");
  types_list(b, &ln, n, srcs);
  zt_strbuf_puts(&ln, ") -> (");
  for (int32_t i = 0; i < n; ++i) zt_strbuf_printf(&ln, "%s%s", i ? ", " : "", tstr(rt[i]).s);
  zt_strbuf_puts(&ln, ")");
  line(b, "%s", ln.data);
  zt_strbuf_deinit(&ln);
  for (int32_t i = 0; i < n; ++i) {
    char nm[32];
    if (n == 1)
      snprintf(nm, sizeof nm, "%s", base);
    else
      snprintf(nm, sizeof nm, "%s#%d", base, i);
    ZT_RETURN_IF_ERROR(new_value(b, rt[i], nm, &out_results[i]));
  }
  return NULL;
}

zt_status_t zt_builder_reduce_end(zt_builder_t* b, int32_t n, const zt_value_t* combined,
                                  zt_value_t* out_results) {
  if (!b) return null_builder("zt_builder_reduce_end");
  ZT_RETURN_IF_ERROR(check_list(b, "zt_builder_reduce_end", n, true, combined, false, NULL));
  ZT_RETURN_IF_ERROR(check_list(b, "zt_builder_reduce_end", n, false, NULL, true, out_results));
  return combiner_end(b, false, n, combined, out_results);
}

zt_status_t zt_builder_reduce(zt_builder_t* b, zt_reduce_kind_t kind,
                              zt_value_t v, int axis, zt_value_t* out) {
  if (!b) return null_builder("zt_builder_reduce");
  ZT_RETURN_IF_ERROR(check(b, v, "reduce"));
  zt_scalar_kind_t k = T(b, v).kind;
  bool f = zt_scalar_kind_is_float(k);
  zt_binary_op_t op;
  switch (kind) {
    case ZT_REDUCE_ADD: op = f ? ZT_BINARY_ADDF : ZT_BINARY_ADDI; break;
    case ZT_REDUCE_MUL: op = f ? ZT_BINARY_MULF : ZT_BINARY_MULI; break;
    case ZT_REDUCE_MAX: op = f ? ZT_BINARY_MAXIMUMF : ZT_BINARY_MAXSI; break;
    case ZT_REDUCE_MIN: op = f ? ZT_BINARY_MINIMUMF : ZT_BINARY_MINSI; break;
    case ZT_REDUCE_MAXNUM: op = f ? ZT_BINARY_MAXNUMF : ZT_BINARY_MAXSI; break;
    case ZT_REDUCE_MINNUM: op = f ? ZT_BINARY_MINNUMF : ZT_BINARY_MINSI; break;
    case ZT_REDUCE_UMAX: op = ZT_BINARY_MAXUI; break;
    case ZT_REDUCE_UMIN: op = ZT_BINARY_MINUI; break;
    case ZT_REDUCE_AND: op = ZT_BINARY_ANDI; break;
    case ZT_REDUCE_OR: op = ZT_BINARY_ORI; break;
    case ZT_REDUCE_XOR: op = ZT_BINARY_XORI; break;
    default:
      return err(b, ZT_STATUS_INVALID_ARGUMENT, "bad reduce kind %d", kind);
  }
  zt_value_t args[2], c;
  ZT_RETURN_IF_ERROR(zt_builder_reduce_begin(b, 1, &v, axis, args));
  ZT_RETURN_IF_ERROR(zt_builder_binary(b, op, args[0], args[1], &c));
  return zt_builder_reduce_end(b, 1, &c, out);
}

zt_status_t zt_builder_dot(zt_builder_t* b, zt_value_t a, zt_value_t x,
                           zt_value_t acc, const char* input_precision,
                           zt_value_t* out) {
  if (!b) return null_builder("zt_builder_dot");
  ZT_RETURN_IF_ERROR(check(b, a, "dot"));
  ZT_RETURN_IF_ERROR(check(b, x, "dot"));
  ZT_RETURN_IF_ERROR(check(b, acc, "dot"));
  zt_type_t at = T(b, a), bt = T(b, x), ct = T(b, acc);
  // Rank 3: a batched dot ([B, M, K] @ [B, K, N] + [B, M, N]), as Triton's.
  int32_t r = at.rank;
  bool batch_ok = r == 2 || (r == 3 && bt.shape[0] == at.shape[0] &&
                             ct.shape[0] == at.shape[0]);
  if ((r != 2 && r != 3) || bt.rank != r || ct.rank != r || !batch_ok ||
      at.shape[r - 1] != bt.shape[r - 2] || ct.shape[r - 2] != at.shape[r - 2] ||
      ct.shape[r - 1] != bt.shape[r - 1])
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "dot shapes do not fit: %s @ %s + %s", tstr(at).s, tstr(bt).s,
               tstr(ct).s);
  if (at.kind != bt.kind)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "dot operands differ: %s vs %s",
               tstr(at).s, tstr(bt).s);
  const char* prec = input_precision ? input_precision : "ieee";
  // Integer inputs have no precision to choose; "unsigned" says how they are
  // read (the tile types are signless).
  bool is_int = at.kind == ZT_I8 || at.kind == ZT_I16 || at.kind == ZT_I32 ||
                at.kind == ZT_I64;
  if (!strcmp(prec, "unsigned") && !is_int)
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "input_precision 'unsigned' needs integer operands, got %s",
               tstr(at).s);
  if (strcmp(prec, "ieee") && strcmp(prec, "tf32") && strcmp(prec, "tf32x3") &&
      strcmp(prec, "unsigned"))
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "unknown input_precision '%s'",
               prec);
  ZT_RETURN_IF_ERROR(fresh(b, ct, out));
  line(b,
       "%s = \"tile.dot\"(%s, %s, %s) {input_precision = \"%s\"} : (%s, %s, "
       "%s) -> %s",
       N(b, *out), N(b, a), N(b, x), N(b, acc), prec, tstr(at).s, tstr(bt).s,
       tstr(ct).s, tstr(ct).s);
  return NULL;
}

// ---------------------------------------------------------------------------
// Control flow

static zt_value_t* dup_values(const zt_value_t* v, int32_t n) {
  zt_value_t* p = malloc((size_t)(n ? n : 1) * sizeof *p);
  if (p && n) memcpy(p, v, (size_t)n * sizeof *p);
  return p;
}

// "%a, %b" and "T1, T2" lists.
static void names_list(zt_builder_t* b, zt_strbuf_t* sb, int32_t n,
                       const zt_value_t* v) {
  for (int32_t i = 0; i < n; ++i)
    zt_strbuf_printf(sb, "%s%s", i ? ", " : "", N(b, v[i]));
}
static void types_list(zt_builder_t* b, zt_strbuf_t* sb, int32_t n,
                       const zt_value_t* v) {
  for (int32_t i = 0; i < n; ++i)
    zt_strbuf_printf(sb, "%s%s", i ? ", " : "", tstr(T(b, v[i])).s);
}

static void indent(zt_strbuf_t* sb, int n) {
  for (int i = 0; i < n; ++i) zt_strbuf_append(sb, " ", 1);
}

// "<indent>scf.yield %a, %b : T1, T2\n" (or just "scf.yield").
static void write_yield(zt_builder_t* b, zt_strbuf_t* t, int ind, int32_t n,
                        const zt_value_t* vals) {
  indent(t, ind);
  zt_strbuf_puts(t, "scf.yield");
  if (n) {
    zt_strbuf_puts(t, " ");
    names_list(b, t, n, vals);
    zt_strbuf_puts(t, " : ");
    types_list(b, t, n, vals);
  }
  zt_strbuf_puts(t, "\n");
}

// Results of a multi-result op named %vK / %vK#i.
static zt_status_t op_results(zt_builder_t* b, const char* base, int32_t n,
                              const zt_value_t* typed_like, zt_value_t* out) {
  for (int32_t i = 0; i < n; ++i) {
    char nm[32];
    if (n == 1)
      snprintf(nm, sizeof nm, "%s", base);
    else
      snprintf(nm, sizeof nm, "%s#%d", base, i);
    ZT_RETURN_IF_ERROR(new_value(b, T(b, typed_like[i]), nm, &out[i]));
  }
  return NULL;
}

static void result_prefix(zt_strbuf_t* sb, const char* base, int32_t n) {
  if (n == 1)
    zt_strbuf_printf(sb, "%s = ", base);
  else if (n > 1)
    zt_strbuf_printf(sb, "%s:%d = ", base, n);
}

// Checks n carried values against the types they started with.
static zt_status_t check_carried(zt_builder_t* b, const char* what, int32_t n,
                                 const zt_value_t* yields, const zt_value_t* inits) {
  for (int32_t i = 0; i < n; ++i) {
    ZT_RETURN_IF_ERROR(check(b, yields[i], what));
    if (!zt_type_equal(T(b, yields[i]), T(b, inits[i])))
      return err(b, ZT_STATUS_INVALID_ARGUMENT,
                 "%s %d changes type in the loop: %s before, %s at the end of the body", what,
                 i, tstr(T(b, inits[i])).s, tstr(T(b, yields[i])).s);
  }
  return NULL;
}

zt_status_t zt_builder_for_begin(zt_builder_t* b, zt_value_t lb, zt_value_t ub,
                                 zt_value_t step, int32_t n,
                                 const zt_value_t* inits, zt_value_t* out_iv,
                                 zt_value_t* out_iter_args) {
  if (!b) return null_builder("zt_builder_for_begin");
  ZT_RETURN_IF_ERROR(check_list(b, "zt_builder_for_begin", n, true, inits, false, NULL));
  ZT_RETURN_IF_ERROR(check_list(b, "zt_builder_for_begin", n, false, NULL, true, out_iter_args));
  ZT_RETURN_IF_ERROR(check(b, lb, "for lower bound"));
  ZT_RETURN_IF_ERROR(check(b, ub, "for upper bound"));
  ZT_RETURN_IF_ERROR(check(b, step, "for step"));
  zt_type_t it = T(b, lb);
  if (it.rank != 0 || !zt_scalar_kind_is_int(it.kind) || it.kind == ZT_I1 ||
      !zt_type_equal(it, T(b, ub)) || !zt_type_equal(it, T(b, step)))
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "for bounds must be integer scalars of one type (got %s, %s, %s)",
               tstr(it).s, tstr(T(b, ub)).s, tstr(T(b, step)).s);
  for (int32_t i = 0; i < n; ++i)
    ZT_RETURN_IF_ERROR(check(b, inits[i], "loop-carried value"));
  region_t* r;
  ZT_RETURN_IF_ERROR(push_region(b, REGION_FOR, &r));
  r->lb = lb;
  r->ub = ub;
  r->step = step;
  r->n = n;
  r->inits = dup_values(inits, n);
  r->args = dup_values(inits, n);
  if (!r->inits || !r->args) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "for");
  ZT_RETURN_IF_ERROR(fresh(b, it, out_iv));
  r->iv = *out_iv;
  for (int32_t i = 0; i < n; ++i) {
    ZT_RETURN_IF_ERROR(fresh(b, T(b, inits[i]), &out_iter_args[i]));
    r->args[i] = out_iter_args[i];
  }
  return NULL;
}

zt_status_t zt_builder_for_end(zt_builder_t* b, int32_t n,
                               const zt_value_t* yields,
                               zt_value_t* out_results) {
  if (!b) return null_builder("zt_builder_for_end");
  ZT_RETURN_IF_ERROR(check_list(b, "zt_builder_for_end", n, true, yields, false, NULL));
  ZT_RETURN_IF_ERROR(check_list(b, "zt_builder_for_end", n, false, NULL, true, out_results));
  region_t* r = cur(b);
  if (!r || r->kind != REGION_FOR || r->n != n)
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "for_end without a matching for_begin carrying %d values", n);
  ZT_RETURN_IF_ERROR(check_carried(b, "loop-carried value", n, yields, r->inits));
  write_yield(b, &r->text, r->indent, n, yields);  // body terminator
  region_t rr = *r;
  b->depth--;
  region_t* p = cur(b);
  char base[24];
  snprintf(base, sizeof base, "%%v%d", b->next_ssa++);
  zt_strbuf_t* t = &p->text;
  indent(t, p->indent);
  result_prefix(t, base, n);
  zt_strbuf_printf(t, "scf.for %s = %s to %s step %s", N(b, rr.iv),
                   N(b, rr.lb), N(b, rr.ub), N(b, rr.step));
  if (n) {
    zt_strbuf_puts(t, " iter_args(");
    for (int32_t i = 0; i < n; ++i)
      zt_strbuf_printf(t, "%s%s = %s", i ? ", " : "", N(b, rr.args[i]),
                       N(b, rr.inits[i]));
    zt_strbuf_puts(t, ") -> (");
    types_list(b, t, n, rr.inits);
    zt_strbuf_puts(t, ")");
  }
  zt_strbuf_printf(t, " : %s {\n", tstr(T(b, rr.lb)).s);
  zt_strbuf_append(t, rr.text.data ? rr.text.data : "", rr.text.size);
  indent(t, p->indent);
  zt_strbuf_printf(t, "}%s\n", rr.loc);
  zt_status_t s = op_results(b, base, n, rr.inits, out_results);
  region_free(&rr);
  return s;
}

zt_status_t zt_builder_if_begin(zt_builder_t* b, zt_value_t cond) {
  if (!b) return null_builder("zt_builder_if_begin");
  ZT_RETURN_IF_ERROR(check(b, cond, "if condition"));
  zt_type_t ct = T(b, cond);
  if (ct.kind != ZT_I1 || ct.rank != 0)
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "if condition must be a scalar i1, got %s", tstr(ct).s);
  region_t* r;
  ZT_RETURN_IF_ERROR(push_region(b, REGION_IF_THEN, &r));
  r->cond = cond;
  return NULL;
}

zt_status_t zt_builder_if_else(zt_builder_t* b) {
  if (!b) return null_builder("zt_builder_if_else");
  region_t* r = cur(b);
  if (!r || r->kind != REGION_IF_THEN)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "if_else without if_begin");
  // Values of the then region must not be visible in the else region: give
  // the else region a new id and keep the then text aside.
  zt_strbuf_t then_text = r->text;
  zt_strbuf_init(&r->text);
  r->saved = then_text;
  r->kind = REGION_IF_ELSE;
  r->n = r->id;  // remember the then-region id for if_end's checks
  r->id = b->next_region_id++;
  return NULL;
}

zt_status_t zt_builder_if_end(zt_builder_t* b, int32_t n,
                              const zt_value_t* then_yields,
                              const zt_value_t* else_yields,
                              zt_value_t* out_results) {
  if (!b) return null_builder("zt_builder_if_end");
  ZT_RETURN_IF_ERROR(check_list(b, "zt_builder_if_end", n, true, then_yields, false, NULL));
  ZT_RETURN_IF_ERROR(check_list(b, "zt_builder_if_end", n, true, else_yields, false, NULL));
  ZT_RETURN_IF_ERROR(check_list(b, "zt_builder_if_end", n, false, NULL, true, out_results));
  region_t* r = cur(b);
  if (!r || (r->kind != REGION_IF_THEN && r->kind != REGION_IF_ELSE))
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "if_end without if_begin");
  if (r->kind == REGION_IF_THEN) {
    if (n)
      return err(b, ZT_STATUS_INVALID_ARGUMENT,
                 "an if without else cannot yield values");
    ZT_RETURN_IF_ERROR(zt_builder_if_else(b));
    r = cur(b);
  }
  int32_t then_id = r->n;
  for (int32_t i = 0; i < n; ++i) {
    ZT_RETURN_IF_ERROR(check(b, else_yields[i], "else yield"));
    // Then-yields: visible from the then region = its id or any ancestor.
    zt_value_t v = then_yields[i];
    if (v < 0 || v >= b->num_values)
      return err(b, ZT_STATUS_INVALID_ARGUMENT, "invalid then yield");
    int32_t rid = b->values[v].region;
    bool visible = rid == then_id;
    for (int d = b->depth - 2; d >= 0 && !visible; --d)
      if (b->regions[d].id == rid) visible = true;
    if (!visible)
      return err(b, ZT_STATUS_INVALID_ARGUMENT,
                 "then yield %s is not visible in the then region", N(b, v));
    if (!zt_type_equal(T(b, v), T(b, else_yields[i])))
      return err(b, ZT_STATUS_INVALID_ARGUMENT,
                 "the two branches of an if give different types: %s vs %s",
                 tstr(T(b, v)).s, tstr(T(b, else_yields[i])).s);
  }
  region_t rr = *r;
  b->depth--;
  region_t* p = cur(b);
  char base[24];
  snprintf(base, sizeof base, "%%v%d", b->next_ssa++);
  zt_strbuf_t* t = &p->text;
  indent(t, p->indent);
  result_prefix(t, base, n);
  zt_strbuf_printf(t, "scf.if %s", N(b, rr.cond));
  if (n) {
    zt_strbuf_puts(t, " -> (");
    types_list(b, t, n, then_yields);
    zt_strbuf_puts(t, ")");
  }
  zt_strbuf_puts(t, " {\n");
  zt_strbuf_append(t, rr.saved.data ? rr.saved.data : "", rr.saved.size);
  write_yield(b, t, rr.indent, n, then_yields);
  indent(t, p->indent);
  zt_strbuf_puts(t, "} else {\n");
  zt_strbuf_append(t, rr.text.data ? rr.text.data : "", rr.text.size);
  write_yield(b, t, rr.indent, n, else_yields);
  indent(t, p->indent);
  zt_strbuf_printf(t, "}%s\n", rr.loc);
  zt_status_t s = op_results(b, base, n, then_yields, out_results);
  region_free(&rr);
  return s;
}

zt_status_t zt_builder_while_begin(zt_builder_t* b, int32_t n,
                                   const zt_value_t* inits,
                                   zt_value_t* out_before_args) {
  if (!b) return null_builder("zt_builder_while_begin");
  ZT_RETURN_IF_ERROR(check_list(b, "zt_builder_while_begin", n, true, inits, false, NULL));
  ZT_RETURN_IF_ERROR(check_list(b, "zt_builder_while_begin", n, false, NULL, true, out_before_args));
  for (int32_t i = 0; i < n; ++i)
    ZT_RETURN_IF_ERROR(check(b, inits[i], "while-carried value"));
  region_t* r;
  ZT_RETURN_IF_ERROR(push_region(b, REGION_WHILE_BEFORE, &r));
  r->n = n;
  r->inits = dup_values(inits, n);
  r->args = dup_values(inits, n);
  r->after_args = dup_values(inits, n);
  if (!r->inits || !r->args || !r->after_args)
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "while");
  for (int32_t i = 0; i < n; ++i) {
    ZT_RETURN_IF_ERROR(fresh(b, T(b, inits[i]), &out_before_args[i]));
    r->args[i] = out_before_args[i];
  }
  return NULL;
}

zt_status_t zt_builder_while_cond(zt_builder_t* b, zt_value_t cond,
                                  zt_value_t* out_after_args) {
  if (!b) return null_builder("zt_builder_while_cond");
  region_t* r = cur(b);
  if (!r || r->kind != REGION_WHILE_BEFORE)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "while_cond without while_begin");
  ZT_RETURN_IF_ERROR(check_list(b, "zt_builder_while_cond", r->n, false, NULL, true,
                                out_after_args));
  ZT_RETURN_IF_ERROR(check(b, cond, "while condition"));
  zt_type_t ct = T(b, cond);
  if (ct.kind != ZT_I1 || ct.rank != 0)
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "while condition must be a scalar i1, got %s", tstr(ct).s);
  zt_strbuf_t* t = &r->text;
  indent(t, r->indent);
  zt_strbuf_printf(t, "scf.condition(%s)", N(b, cond));
  if (r->n) {
    zt_strbuf_puts(t, " ");
    names_list(b, t, r->n, r->args);
    zt_strbuf_puts(t, " : ");
    types_list(b, t, r->n, r->args);
  }
  zt_strbuf_puts(t, "\n");
  r->saved = r->text;
  zt_strbuf_init(&r->text);
  r->kind = REGION_WHILE_AFTER;
  r->while_cond = cond;
  int32_t before_id = r->id;
  r->id = b->next_region_id++;
  (void)before_id;
  for (int32_t i = 0; i < r->n; ++i) {
    ZT_RETURN_IF_ERROR(fresh(b, T(b, r->inits[i]), &out_after_args[i]));
    r->after_args[i] = out_after_args[i];
  }
  return NULL;
}

zt_status_t zt_builder_while_end(zt_builder_t* b, int32_t n,
                                 const zt_value_t* yields,
                                 zt_value_t* out_results) {
  if (!b) return null_builder("zt_builder_while_end");
  ZT_RETURN_IF_ERROR(check_list(b, "zt_builder_while_end", n, true, yields, false, NULL));
  ZT_RETURN_IF_ERROR(check_list(b, "zt_builder_while_end", n, false, NULL, true, out_results));
  region_t* r = cur(b);
  if (!r || r->kind != REGION_WHILE_AFTER || r->n != n)
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "while_end without a matching while_cond carrying %d values", n);
  ZT_RETURN_IF_ERROR(check_carried(b, "while-carried value", n, yields, r->inits));
  region_t rr = *r;
  b->depth--;
  region_t* p = cur(b);
  char base[24];
  snprintf(base, sizeof base, "%%v%d", b->next_ssa++);
  zt_strbuf_t* t = &p->text;
  indent(t, p->indent);
  result_prefix(t, base, n);
  zt_strbuf_puts(t, "scf.while (");
  for (int32_t i = 0; i < n; ++i)
    zt_strbuf_printf(t, "%s%s = %s", i ? ", " : "", N(b, rr.args[i]),
                     N(b, rr.inits[i]));
  zt_strbuf_puts(t, ") : (");
  types_list(b, t, n, rr.inits);
  zt_strbuf_puts(t, ") -> (");
  types_list(b, t, n, rr.inits);
  zt_strbuf_puts(t, ") {\n");
  zt_strbuf_append(t, rr.saved.data ? rr.saved.data : "", rr.saved.size);
  indent(t, p->indent);
  zt_strbuf_puts(t, "} do {\n");
  indent(t, p->indent);
  zt_strbuf_puts(t, "^bb0(");
  for (int32_t i = 0; i < n; ++i)
    zt_strbuf_printf(t, "%s%s: %s", i ? ", " : "", N(b, rr.after_args[i]),
                     tstr(T(b, rr.after_args[i])).s);
  zt_strbuf_puts(t, "):\n");
  zt_strbuf_append(t, rr.text.data ? rr.text.data : "", rr.text.size);
  write_yield(b, t, rr.indent, n, yields);
  indent(t, p->indent);
  zt_strbuf_printf(t, "}%s\n", rr.loc);
  zt_status_t s = op_results(b, base, n, rr.inits, out_results);
  region_free(&rr);
  return s;
}

// ---------------------------------------------------------------------------
// Block IO, atomics, scans, debugging

static zt_status_t check_block_view(zt_builder_t* b, const char* what,
                                    zt_value_t base, int32_t rank,
                                    const zt_value_t* shape,
                                    const zt_value_t* strides,
                                    const zt_value_t* offsets) {
  ZT_RETURN_IF_ERROR(check(b, base, what));
  zt_type_t bt = T(b, base);
  if (bt.kind != ZT_PTR || bt.rank != 0)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "%s: base must be a scalar pointer, got %s",
               what, tstr(bt).s);
  if (rank < 1 || rank > ZT_MAX_RANK)
    return err(b, ZT_STATUS_UNSUPPORTED, "%s: rank %d (supported: 1..%d)", what, rank,
               ZT_MAX_RANK);
  if (!shape || !strides || !offsets)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "%s: NULL shape, strides or offsets", what);
  for (int32_t d = 0; d < rank; ++d) {
    ZT_RETURN_IF_ERROR(check(b, shape[d], what));
    ZT_RETURN_IF_ERROR(check(b, strides[d], what));
    ZT_RETURN_IF_ERROR(check(b, offsets[d], what));
    zt_type_t st = T(b, shape[d]), tt = T(b, strides[d]), ot = T(b, offsets[d]);
    if (st.rank || st.kind != ZT_I64 || tt.rank || tt.kind != ZT_I64)
      return err(b, ZT_STATUS_INVALID_ARGUMENT,
                 "%s: shape and strides must be i64 scalars (dim %d: %s, %s)", what, d,
                 tstr(st).s, tstr(tt).s);
    if (ot.rank || ot.kind != ZT_I32)
      return err(b, ZT_STATUS_INVALID_ARGUMENT,
                 "%s: offsets must be i32 scalars (dim %d: %s)", what, d, tstr(ot).s);
  }
  return NULL;
}

static void view_operands(zt_builder_t* b, zt_strbuf_t* ops, zt_strbuf_t* types,
                          zt_value_t base, int32_t rank, const zt_value_t* shape,
                          const zt_value_t* strides, const zt_value_t* offsets) {
  zt_strbuf_printf(ops, "%s", N(b, base));
  zt_strbuf_printf(types, "%s", tstr(T(b, base)).s);
  const zt_value_t* groups[3] = {shape, strides, offsets};
  for (int g = 0; g < 3; ++g)
    for (int32_t d = 0; d < rank; ++d) {
      zt_strbuf_printf(ops, ", %s", N(b, groups[g][d]));
      zt_strbuf_printf(types, ", %s", tstr(T(b, groups[g][d])).s);
    }
}

zt_status_t zt_builder_block_load(zt_builder_t* b, zt_value_t base, int32_t rank,
                                  const zt_value_t* shape, const zt_value_t* strides,
                                  const zt_value_t* offsets, const int64_t* block_shape,
                                  uint32_t boundary_mask, zt_padding_t padding,
                                  zt_value_t* out) {
  if (!b) return null_builder("zt_builder_block_load");
  ZT_RETURN_IF_ERROR(
      check_block_view(b, "block_load", base, rank, shape, strides, offsets));
  ZT_RETURN_IF_ERROR(check_shape(b, rank, block_shape, "block_load"));
  zt_type_t rt = zt_type_tensor(zt_type_scalar(T(b, base).pointee), rank, block_shape);
  if (padding == ZT_PADDING_NAN && !zt_scalar_kind_is_float(rt.kind))
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "NaN padding of integer elements");
  ZT_RETURN_IF_ERROR(fresh(b, rt, out));
  zt_strbuf_t ops, types;
  zt_strbuf_init(&ops);
  zt_strbuf_init(&types);
  view_operands(b, &ops, &types, base, rank, shape, strides, offsets);
  line(b,
       "%s = \"tile.block_load\"(%s) {boundary_check = %u : i32, operandSegmentSizes = "
       "array<i32: 1, %d, %d, %d>, padding = \"%s\"} : (%s) -> %s",
       N(b, *out), ops.data, boundary_mask & ((1u << rank) - 1), rank, rank, rank,
       padding == ZT_PADDING_NAN ? "nan" : "zero", types.data, tstr(rt).s);
  zt_strbuf_deinit(&ops);
  zt_strbuf_deinit(&types);
  return NULL;
}

zt_status_t zt_builder_block_store(zt_builder_t* b, zt_value_t base, int32_t rank,
                                   const zt_value_t* shape, const zt_value_t* strides,
                                   const zt_value_t* offsets, zt_value_t value,
                                   uint32_t boundary_mask) {
  if (!b) return null_builder("zt_builder_block_store");
  ZT_RETURN_IF_ERROR(
      check_block_view(b, "block_store", base, rank, shape, strides, offsets));
  ZT_RETURN_IF_ERROR(check(b, value, "block_store"));
  zt_type_t vt = T(b, value);
  if (vt.rank != rank || vt.kind != T(b, base).pointee)
    return err(b, ZT_STATUS_INVALID_ARGUMENT,
               "block_store of %s through a rank-%d view of %s", tstr(vt).s, rank,
               tstr(T(b, base)).s);
  zt_strbuf_t ops, types;
  zt_strbuf_init(&ops);
  zt_strbuf_init(&types);
  view_operands(b, &ops, &types, base, rank, shape, strides, offsets);
  line(b,
       "\"tile.block_store\"(%s, %s) {boundary_check = %u : i32, operandSegmentSizes = "
       "array<i32: 1, %d, %d, %d, 1>} : (%s, %s) -> ()",
       ops.data, N(b, value), boundary_mask & ((1u << rank) - 1), rank, rank, rank,
       types.data, tstr(vt).s);
  zt_strbuf_deinit(&ops);
  zt_strbuf_deinit(&types);
  return NULL;
}

static zt_status_t check_sem_scope(zt_builder_t* b, const char** sem,
                                   const char** scope) {
  if (!*sem) *sem = "acq_rel";
  if (!*scope) *scope = "gpu";
  if (strcmp(*sem, "relaxed") && strcmp(*sem, "acquire") && strcmp(*sem, "release") &&
      strcmp(*sem, "acq_rel"))
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "unknown atomic sem '%s'", *sem);
  if (strcmp(*scope, "gpu") && strcmp(*scope, "cta") && strcmp(*scope, "sys"))
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "unknown atomic scope '%s'", *scope);
  return NULL;
}

zt_status_t zt_builder_atomic_rmw(zt_builder_t* b, zt_atomic_kind_t kind,
                                  zt_value_t ptr, zt_value_t value, zt_value_t mask,
                                  const char* sem, const char* scope, zt_value_t* out) {
  if (!b) return null_builder("zt_builder_atomic_rmw");
  static const char* const names[] = {
#define ZT_X_(name, s) s,
      ZT_ATOMIC_KINDS(ZT_X_)
#undef ZT_X_
  };
  if ((int)kind < 0 || kind >= ZT_ATOMIC_KIND_COUNT)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "bad atomic kind %d", kind);
  ZT_RETURN_IF_ERROR(check(b, ptr, "atomic"));
  ZT_RETURN_IF_ERROR(check(b, value, "atomic"));
  ZT_RETURN_IF_ERROR(check_sem_scope(b, &sem, &scope));
  zt_type_t pt = T(b, ptr), vt = T(b, value);
  zt_type_t want = pt;
  want.kind = pt.pointee;
  if (pt.kind != ZT_PTR || !zt_type_equal(vt, want))
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "atomic_%s of %s through %s", names[kind],
               tstr(vt).s, tstr(pt).s);
  bool f = zt_scalar_kind_is_float(vt.kind);
  if (f && kind != ZT_ATOMIC_ADD && kind != ZT_ATOMIC_MAX && kind != ZT_ATOMIC_MIN &&
      kind != ZT_ATOMIC_XCHG)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "atomic_%s needs integers, got %s",
               names[kind], tstr(vt).s);
  int nm = mask != ZT_NO_VALUE;
  if (nm) {
    ZT_RETURN_IF_ERROR(check(b, mask, "atomic mask"));
    if (T(b, mask).kind != ZT_I1 || !same_shape(T(b, mask), pt))
      return err(b, ZT_STATUS_INVALID_ARGUMENT, "atomic mask %s does not match %s",
                 tstr(T(b, mask)).s, tstr(pt).s);
  }
  ZT_RETURN_IF_ERROR(fresh(b, vt, out));
  line(b,
       "%s = \"tile.atomic_rmw\"(%s, %s%s%s) {kind = \"%s\", operandSegmentSizes = "
       "array<i32: 1, 1, %d>, scope = \"%s\", sem = \"%s\"} : (%s, %s%s%s) -> %s",
       N(b, *out), N(b, ptr), N(b, value), nm ? ", " : "", nm ? N(b, mask) : "",
       names[kind], nm, scope, sem, tstr(pt).s, tstr(vt).s, nm ? ", " : "",
       nm ? tstr(T(b, mask)).s : "", tstr(vt).s);
  return NULL;
}

zt_status_t zt_builder_atomic_cas(zt_builder_t* b, zt_value_t ptr, zt_value_t cmp,
                                  zt_value_t value, const char* sem, const char* scope,
                                  zt_value_t* out) {
  if (!b) return null_builder("zt_builder_atomic_cas");
  ZT_RETURN_IF_ERROR(check(b, ptr, "atomic_cas"));
  ZT_RETURN_IF_ERROR(check(b, cmp, "atomic_cas"));
  ZT_RETURN_IF_ERROR(check(b, value, "atomic_cas"));
  ZT_RETURN_IF_ERROR(check_sem_scope(b, &sem, &scope));
  zt_type_t pt = T(b, ptr), vt = T(b, value);
  zt_type_t want = pt;
  want.kind = pt.pointee;
  if (pt.kind != ZT_PTR || !zt_type_equal(vt, want) || !zt_type_equal(T(b, cmp), vt))
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "atomic_cas of %s/%s through %s",
               tstr(T(b, cmp)).s, tstr(vt).s, tstr(pt).s);
  ZT_RETURN_IF_ERROR(fresh(b, vt, out));
  line(b,
       "%s = \"tile.atomic_cas\"(%s, %s, %s) {scope = \"%s\", sem = \"%s\"} : (%s, %s, "
       "%s) -> %s",
       N(b, *out), N(b, ptr), N(b, cmp), N(b, value), scope, sem, tstr(pt).s,
       tstr(vt).s, tstr(vt).s, tstr(vt).s);
  return NULL;
}

zt_status_t zt_builder_scan_begin(zt_builder_t* b, int32_t n, const zt_value_t* srcs,
                                  int axis, bool reverse, zt_value_t* out_args) {
  if (!b) return null_builder("zt_builder_scan_begin");
  ZT_RETURN_IF_ERROR(check_list(b, "zt_builder_scan_begin", n, true, srcs, false, NULL));
  ZT_RETURN_IF_ERROR(check_list(b, "zt_builder_scan_begin", n, false, NULL, true, out_args));
  ZT_RETURN_IF_ERROR(zt_builder_reduce_begin(b, n, srcs, axis, out_args));
  region_t* r = cur(b);
  r->cond = reverse ? 1 : 0;  // the combiner region remembers reverse
  r->iv = 1;                  // ... and that it belongs to a scan
  return NULL;
}

// Escapes s as the body of an MLIR string literal.
static void mlir_string(zt_strbuf_t* sb, const char* s) {
  for (const unsigned char* p = (const unsigned char*)s; *p; ++p) {
    if (*p == '"' || *p == '\\')
      zt_strbuf_printf(sb, "\\%c", *p);
    else if (*p < 0x20 || *p >= 0x7f)
      zt_strbuf_printf(sb, "\\%02X", *p);
    else
      zt_strbuf_append(sb, (const char*)p, 1);
  }
}

zt_status_t zt_builder_scan_end(zt_builder_t* b, int32_t n, const zt_value_t* combined,
                                zt_value_t* out_results) {
  if (!b) return null_builder("zt_builder_scan_end");
  ZT_RETURN_IF_ERROR(check_list(b, "zt_builder_scan_end", n, true, combined, false, NULL));
  ZT_RETURN_IF_ERROR(check_list(b, "zt_builder_scan_end", n, false, NULL, true, out_results));
  return combiner_end(b, true, n, combined, out_results);
}

zt_status_t zt_builder_print(zt_builder_t* b, const char* prefix, int32_t n,
                             const zt_value_t* values, bool hex) {
  if (!b) return null_builder("zt_builder_print");
  ZT_RETURN_IF_ERROR(check_list(b, "zt_builder_print", n, true, values, false, NULL));
  if (!b->in_kernel || b->finished)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "no kernel is open");
  for (int32_t i = 0; i < n; ++i) ZT_RETURN_IF_ERROR(check(b, values[i], "print"));
  // One op per value (IRDL would unify the types of a variadic operand); the
  // prefix goes with the first, the others print as continuations.
  for (int32_t i = 0; i < (n ? n : 1); ++i) {
    zt_strbuf_t ln;
    zt_strbuf_init(&ln);
    zt_strbuf_printf(&ln, "\"tile.print\"(%s) {hex = %s, prefix = \"", n ? N(b, values[i]) : "",
                     hex ? "true" : "false");
    mlir_string(&ln, i == 0 && prefix ? prefix : "");
    zt_strbuf_printf(&ln, "\"} : (%s) -> ()", n ? tstr(T(b, values[i])).s : "");
    line(b, "%s", ln.data);
    zt_strbuf_deinit(&ln);
  }
  return NULL;
}

zt_status_t zt_builder_assert(zt_builder_t* b, zt_value_t cond, const char* message) {
  if (!b) return null_builder("zt_builder_assert");
  ZT_RETURN_IF_ERROR(check(b, cond, "assert"));
  if (T(b, cond).kind != ZT_I1)
    return err(b, ZT_STATUS_INVALID_ARGUMENT, "assert condition must be i1, got %s",
               tstr(T(b, cond)).s);
  zt_strbuf_t ln;
  zt_strbuf_init(&ln);
  zt_strbuf_printf(&ln, "\"tile.assert\"(%s) {message = \"", N(b, cond));
  mlir_string(&ln, message ? message : "");
  zt_strbuf_printf(&ln, "\"} : (%s) -> ()", tstr(T(b, cond)).s);
  line(b, "%s", ln.data);
  zt_strbuf_deinit(&ln);
  return NULL;
}
