// cl_intel_subgroup_matrix_multiply_accumulate, subgroup size 16 (the DPAS
// of PVC and BMG), emulated with subgroup broadcasts and scalar fma. Written
// from the OpenCL C extension specification (its description of the
// operands and its coding sample, whose order of accumulation is followed:
// k ascending, one fma per product, accumulator first).
//
// result = acc + a x b, with M = vector width of a/acc/result (1, 2, 4, 8),
// N = 16 (one column per work-item), K from the name:
//  - a (short<M>/ushort<M>): row m of A is spread over the work-items; each
//    contributes 16 bits per row: for fp16/bf16 (K = 16) work-item j holds
//    A[m][j]; for 8-bit data (K = 32) it holds A[m][2j] (low byte) and
//    A[m][2j+1] (high byte).
//  - b (int8/uint8): work-item n holds column n of B, K values packed into
//    eight 32-bit values, lower k in lower bits: for 16-bit data
//    b[i] = B[2i][n] | B[2i+1][n] << 16; for 8-bit data b[i] = B[4i][n] |
//    B[4i+1][n] << 8 | B[4i+2][n] << 16 | B[4i+3][n] << 24 (the VNNI layout
//    of the 2D block transform reads).
//  - acc / result: work-item n holds column n: result[m] = C[m][n].
// fp32 accumulators are exact IEEE fma chains here; the hardware's internal
// precision differs, so compare with a tolerance. fp16/bf16 accumulators
// are computed in fp32 and rounded once, to nearest even.
// Subgroup size 8 (the DPAS of DG2, Xe-HPG): N = 8, and each work-item
// contributes 32 bits per row of A (a: int<M>/uint<M>): work-item j holds
// A[m][2j], A[m][2j+1] (16-bit types, K = 16) or A[m][4j .. 4j+3] (8-bit,
// K = 32), lower k in lower bits (the spec's coding sample: as_char4 of
// sub_group_broadcast(a, k / 4) times as_char4(b.s<k/4>)); b and acc as
// above. At subgroup size 8 the spec has fp32 accumulators only for fp16 and
// bf16.
// Not emulated: the 4-bit (k64) forms, and names outside the specification
// (e.g. the s8_s8 spelling XeVM emits for int8, which real drivers do not
// resolve either: emulating it would hide that bug).
#pragma OPENCL EXTENSION cl_khr_fp16 : enable

#define OVL __attribute__((overloadable))

static inline float zt_f16(uint bits) { return (float)as_half((ushort)bits); }
static inline float zt_bf16(uint bits) { return as_float((bits & 0xffffu) << 16); }
static inline short zt_to_bf16(float f) {
  uint u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (short)((u >> 16) | 0x40);  // NaN stays NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return (short)(u >> 16);
}

// Row m of A times column n of B for 16-bit types; a_row is this
// work-item's 16 bits of row m.
#define ZT_DOT16(NAME, CVT)                                                    \
  static inline float NAME(ushort a_row, int8 b, float acc) {                  \
    const uint bw[8] = {b.s0, b.s1, b.s2, b.s3, b.s4, b.s5, b.s6, b.s7};       \
    float r = acc;                                                             \
    for (int k = 0; k < 16; ++k) {                                             \
      uint ak = sub_group_broadcast((uint)a_row, (uint)k);                     \
      uint bk = bw[k / 2] >> (16 * (k % 2));                                   \
      r = fma(CVT(ak), CVT(bk), r);                                            \
    }                                                                          \
    return r;                                                                  \
  }
ZT_DOT16(zt_dot_f16, zt_f16)
ZT_DOT16(zt_dot_bf16, zt_bf16)

// 8-bit: A_SIGNED / B_SIGNED select sign extension of the bytes.
static inline int zt_dot8(ushort a_row, uint8 b, int acc, bool a_signed, bool b_signed) {
  const uint bw[8] = {b.s0, b.s1, b.s2, b.s3, b.s4, b.s5, b.s6, b.s7};
  int r = acc;
  for (int k = 0; k < 32; ++k) {
    uint ab = sub_group_broadcast((uint)a_row, (uint)(k / 2)) >> (8 * (k % 2)) & 0xffu;
    uint bb = bw[k / 4] >> (8 * (k % 4)) & 0xffu;
    int av = a_signed ? (int)(char)ab : (int)ab;
    int bv = b_signed ? (int)(char)bb : (int)bb;
    r += av * bv;
  }
  return r;
}

#define ZT_LANES(v, i) (((const private TA_*)&(v))[i])

// Subgroup size 8: a_row is this work-item's 32 bits of row m (two 16-bit
// or four 8-bit elements).
#define ZT_DOT16_SG8(NAME, CVT)                                                \
  static inline float NAME(uint a_row, int8 b, float acc) {                    \
    const uint bw[8] = {b.s0, b.s1, b.s2, b.s3, b.s4, b.s5, b.s6, b.s7};       \
    float r = acc;                                                             \
    for (int k = 0; k < 16; ++k) {                                             \
      uint ak = sub_group_broadcast(a_row, (uint)(k / 2)) >> (16 * (k % 2));   \
      uint bk = bw[k / 2] >> (16 * (k % 2));                                   \
      r = fma(CVT(ak), CVT(bk), r);                                            \
    }                                                                          \
    return r;                                                                  \
  }
ZT_DOT16_SG8(zt_dot8_f16, zt_f16)
ZT_DOT16_SG8(zt_dot8_bf16, zt_bf16)

static inline int zt_dot8_8bit(uint a_row, uint8 b, int acc, bool a_signed, bool b_signed) {
  const uint bw[8] = {b.s0, b.s1, b.s2, b.s3, b.s4, b.s5, b.s6, b.s7};
  int r = acc;
  for (int k = 0; k < 32; ++k) {
    uint ab = sub_group_broadcast(a_row, (uint)(k / 4)) >> (8 * (k % 4)) & 0xffu;
    uint bb = bw[k / 4] >> (8 * (k % 4)) & 0xffu;
    int av = a_signed ? (int)(char)ab : (int)ab;
    int bv = b_signed ? (int)(char)bb : (int)bb;
    r += av * bv;
  }
  return r;
}


// fp16 / bf16 with fp32 accumulator.
#define ZT_MAD16_F32(TYPE, DOT, M, TA, TR)                                       \
  TR OVL intel_sub_group_##TYPE##_##TYPE##_matrix_mad_k16(TA a, int8 b, TR acc) { \
    TR out;                                                                      \
    for (int m = 0; m < M; ++m)                                                  \
      ((private float*)&out)[m] =                                                \
          DOT((ushort)((const private short*)&a)[m], b, ((const private float*)&acc)[m]); \
    return out;                                                                  \
  }
// fp16 with fp16 accumulator.
#define ZT_MAD16_F16(M, TA, TR)                                                  \
  TR OVL intel_sub_group_f16_f16_matrix_mad_k16(TA a, int8 b, TR acc) {          \
    TR out;                                                                      \
    for (int m = 0; m < M; ++m)                                                  \
      ((private half*)&out)[m] = convert_half_rte(zt_dot_f16(                    \
          (ushort)((const private short*)&a)[m], b, (float)((const private half*)&acc)[m])); \
    return out;                                                                  \
  }
// bf16 with bf16 accumulator (bits in short).
#define ZT_MAD16_BF16(M, TA)                                                     \
  TA OVL intel_sub_group_bf16_bf16_matrix_mad_k16(TA a, int8 b, TA acc) {        \
    TA out;                                                                      \
    for (int m = 0; m < M; ++m)                                                  \
      ((private short*)&out)[m] = zt_to_bf16(zt_dot_bf16(                        \
          (ushort)((const private short*)&a)[m], b,                              \
          zt_bf16((ushort)((const private short*)&acc)[m])));                    \
    return out;                                                                  \
  }
// 8-bit with int32 accumulator.
#define ZT_MAD8(AT, BT, AS, BS, M, TA, TB, TR)                                   \
  TR OVL intel_sub_group_##AT##_##BT##_matrix_mad_k32(TA a, TB b, TR acc) {      \
    TR out;                                                                      \
    for (int m = 0; m < M; ++m)                                                  \
      ((private int*)&out)[m] = zt_dot8((ushort)((const private short*)&a)[m], as_uint8(b), \
                                        ((const private int*)&acc)[m], AS, BS);  \
    return out;                                                                  \
  }

#define ZT_FOR_M(X, ...) \
  X(__VA_ARGS__, 1, , ) X(__VA_ARGS__, 2, 2, ) X(__VA_ARGS__, 4, 4, ) X(__VA_ARGS__, 8, 8, )

#define F32_(TYPE, DOT, M, V, _) ZT_MAD16_F32(TYPE, DOT, M, short##V, float##V)
ZT_FOR_M(F32_, f16, zt_dot_f16)
ZT_FOR_M(F32_, bf16, zt_dot_bf16)
#define F16_(U, M, V, _) ZT_MAD16_F16(M, short##V, half##V)
ZT_FOR_M(F16_, 0)
#define BF16_(U, M, V, _) ZT_MAD16_BF16(M, short##V)
ZT_FOR_M(BF16_, 0)
#define I8_(AT, BT, AS, BS, TA, TB, M, V, _) ZT_MAD8(AT, BT, AS, BS, M, TA##V, TB, int##V)
ZT_FOR_M(I8_, i8, i8, true, true, short, int8)
ZT_FOR_M(I8_, i8, u8, true, false, short, uint8)
ZT_FOR_M(I8_, u8, i8, false, true, ushort, int8)
ZT_FOR_M(I8_, u8, u8, false, false, ushort, uint8)

// Subgroup size 8 forms (a: int<M> / uint<M>).
#define ZT_MAD16_F32_SG8(TYPE, DOT, M, TA, TR)                                   \
  TR OVL intel_sub_group_##TYPE##_##TYPE##_matrix_mad_k16(TA a, int8 b, TR acc) { \
    TR out;                                                                      \
    for (int m = 0; m < M; ++m)                                                  \
      ((private float*)&out)[m] =                                                \
          DOT((uint)((const private int*)&a)[m], b, ((const private float*)&acc)[m]); \
    return out;                                                                  \
  }
#define ZT_MAD8_SG8(AT, BT, AS, BS, M, TA, TB, TR)                               \
  TR OVL intel_sub_group_##AT##_##BT##_matrix_mad_k32(TA a, TB b, TR acc) {      \
    TR out;                                                                      \
    for (int m = 0; m < M; ++m)                                                  \
      ((private int*)&out)[m] = zt_dot8_8bit((uint)((const private int*)&a)[m],  \
                                             as_uint8(b), ((const private int*)&acc)[m], AS, BS); \
    return out;                                                                  \
  }
#define F32_SG8_(TYPE, DOT, M, V, _) ZT_MAD16_F32_SG8(TYPE, DOT, M, int##V, float##V)
ZT_FOR_M(F32_SG8_, f16, zt_dot8_f16)
ZT_FOR_M(F32_SG8_, bf16, zt_dot8_bf16)
#define I8_SG8_(AT, BT, AS, BS, TA, TB, M, V, _) ZT_MAD8_SG8(AT, BT, AS, BS, M, TA##V, TB, int##V)
ZT_FOR_M(I8_SG8_, i8, i8, true, true, int, int8)
ZT_FOR_M(I8_SG8_, i8, u8, true, false, int, uint8)
ZT_FOR_M(I8_SG8_, u8, i8, false, true, uint, int8)
ZT_FOR_M(I8_SG8_, u8, u8, false, false, uint, uint8)
