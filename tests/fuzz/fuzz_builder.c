// libFuzzer: the C builder driven by arbitrary call sequences. Each input
// byte picks an entry point and its operands (value handles, kinds, ranks,
// shapes, counts, NULL or not); the builder must answer every call with a
// status or a value and never read or write out of bounds (ASan/UBSan).
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zetile/builder.h"

typedef struct {
  const uint8_t* p;
  size_t n;
} in_t;

static uint8_t u8(in_t* in) {
  if (!in->n) return 0;
  --in->n;
  return *in->p++;
}
static int32_t small(in_t* in) { return (int32_t)(int8_t)u8(in); }  // -128..127
static zt_value_t val(in_t* in, int32_t nvals) {
  uint8_t b = u8(in);
  if (b == 255) return ZT_NO_VALUE;
  if (b == 254) return -5;
  return nvals ? (zt_value_t)(b % (nvals + 2)) : (zt_value_t)b;
}

#define DROP(expr) zt_status_free(expr)

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  in_t in = {data, size};
  zt_builder_t* b = NULL;
  if (zt_builder_create(&b)) return 0;
  int32_t nvals = 0;
  zt_value_t out[8], args[4];
  zt_type_t types[4] = {zt_type_ptr(ZT_F32), zt_type_ptr(ZT_I32), zt_type_scalar(ZT_I32),
                        zt_type_scalar(ZT_F32)};
  int32_t nargs = u8(&in) % 5;
  if (u8(&in) & 1) DROP(zt_builder_set_bounds_check(b, true));
  if (zt_builder_begin_kernel(b, "k", nargs, types, NULL, args) == NULL) nvals = nargs;
  while (in.n) {
    uint8_t op = u8(&in) % 24;
    int64_t shape[ZT_MAX_RANK] = {1 << (u8(&in) % 6), 1 << (u8(&in) % 4), 2, 2};
    int32_t rank = small(&in) % 6;
    zt_value_t a = val(&in, nvals), c = val(&in, nvals), d = val(&in, nvals);
    zt_value_t v = 0;
    zt_status_t s = NULL;
    switch (op) {
      case 0: s = zt_builder_const_int(b, (zt_scalar_kind_t)(u8(&in) % 12), small(&in), &v); break;
      case 1: s = zt_builder_const_float(b, (zt_scalar_kind_t)(u8(&in) % 12), 1.5, &v); break;
      case 2: s = zt_builder_program_id(b, small(&in), &v); break;
      case 3: s = zt_builder_make_range(b, small(&in), small(&in), &v); break;
      case 4: s = zt_builder_splat(b, a, rank, shape, &v); break;
      case 5: s = zt_builder_broadcast(b, a, rank, shape, &v); break;
      case 6: s = zt_builder_expand_dims(b, a, small(&in), &v); break;
      case 7: s = zt_builder_reshape(b, a, rank, shape, &v); break;
      case 8: {
        int32_t order[ZT_MAX_RANK] = {small(&in), small(&in), small(&in), small(&in)};
        s = zt_builder_trans(b, a, order, &v);
        break;
      }
      case 9: s = zt_builder_binary(b, (zt_binary_op_t)(u8(&in) % (ZT_BINARY_OP_COUNT + 2)), a, c, &v); break;
      case 10: s = zt_builder_unary(b, (zt_unary_op_t)(u8(&in) % (ZT_UNARY_OP_COUNT + 2)), a, &v); break;
      case 11: s = zt_builder_cmp(b, (zt_cmp_predicate_t)(u8(&in) % (ZT_CMP_PREDICATE_COUNT + 2)), a, c, &v); break;
      case 12: s = zt_builder_select(b, a, c, d, &v); break;
      case 13: s = zt_builder_cast(b, (zt_cast_op_t)(u8(&in) % (ZT_CAST_OP_COUNT + 2)), a, (zt_scalar_kind_t)(u8(&in) % 12), &v); break;
      case 14: s = zt_builder_addptr(b, a, c, &v); break;
      case 15: s = zt_builder_load(b, a, c, d, &v); break;
      case 16: s = zt_builder_store(b, a, c, d); break;
      case 17: s = zt_builder_reduce(b, (zt_reduce_kind_t)(u8(&in) % 12), a, small(&in), &v); break;
      case 18: s = zt_builder_dot(b, a, c, d, (u8(&in) & 1) ? "tf32" : NULL, &v); break;
      case 19: {
        zt_value_t inits[2] = {a, c};
        zt_value_t iv;
        s = zt_builder_for_begin(b, a, c, d, small(&in) % 3, inits, &iv, out);
        break;
      }
      case 20: {
        zt_value_t ys[2] = {a, c};
        s = zt_builder_for_end(b, small(&in) % 3, ys, out);
        break;
      }
      case 21: s = zt_builder_if_begin(b, a); break;
      case 22: s = (u8(&in) & 1) ? zt_builder_if_else(b) : zt_builder_if_end(b, 0, NULL, NULL, out); break;
      case 23: {
        int64_t hv[ZT_MAX_RANK] = {16, 16, 16, 16};
        s = zt_builder_hint(b, a, (u8(&in) & 1) ? "multiple_of" : "bogus", hv, small(&in) % 5, &v);
        break;
      }
    }
    if (s) {
      zt_status_free(s);
    } else if (op != 16 && op != 20 && op != 21 && op != 22 && op != 19) {
      nvals = v + 1 > nvals ? v + 1 : nvals;
      (void)zt_builder_value_type(b, v);
    }
  }
  zt_status_t s = zt_builder_end_kernel(b);
  if (!s) {
    const char* text;
    size_t n;
    zt_status_t t = zt_builder_module_text(b, &text, &n);
    if (!t && strlen(text) != n) abort();
    zt_status_free(t);
  }
  zt_status_free(s);
  zt_builder_release(b);
  return 0;
}
