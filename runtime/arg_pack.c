// Kernel arguments as the bytes Level Zero and OpenCL set-argument calls take.
#include "backend.h"

size_t zt_arg_pack(const zt_arg_t* a, zt_packed_arg_t* v) {
  switch (a->kind) {
    case ZT_I1: v->i8 = (int8_t)(a->value.i != 0); return 1;
    case ZT_I8: v->i8 = (int8_t)a->value.i; return 1;
    case ZT_I16: v->i16 = (int16_t)a->value.i; return 2;
    case ZT_I32: v->i32 = (int32_t)a->value.i; return 4;
    case ZT_I64: v->i64 = a->value.i; return 8;
    case ZT_F16:
    case ZT_BF16: v->u16 = a->value.bits; return 2;
    case ZT_F32: v->f32 = (float)a->value.f; return 4;
    case ZT_F64: v->f64 = a->value.f; return 8;
    default: v->u64 = a->value.ptr; return 8;  // pointers: device (or USM) address
  }
}
