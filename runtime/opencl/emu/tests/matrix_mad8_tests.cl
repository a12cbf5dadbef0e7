// One test kernel per emulated matrix_mad builtin at subgroup size 8 (the
// SIMD8 forms of DG2): work-item `lane` passes a = a_in[lane * M + m] (32
// bits), b = b_in[lane * 8 + i] (32 bits), acc = acc_in[lane * M + m], and
// stores the result at out[lane * M + m]. tests/c/test_opencl_emu.c builds
// A, B, C in the spec's layout and compares with a scalar matrix product.
#define OVL __attribute__((overloadable))
#define SG __attribute__((intel_reqd_sub_group_size(8)))

#define TM(NAME, TAG, M, TA, SA, TB, TR, SR)                                            \
  TR##M OVL NAME(TA##M, TB, TR##M);                                                     \
  kernel SG void t_##NAME##_##TAG##M(ulong a_in, ulong b_in, ulong acc_in, ulong out) { \
    int lane = get_sub_group_local_id();                                                \
    TA##M a;                                                                            \
    TR##M acc;                                                                          \
    for (int m = 0; m < M; ++m) {                                                       \
      ((private SA*)&a)[m] = ((global SA*)a_in)[lane * M + m];                          \
      ((private SR*)&acc)[m] = ((global SR*)acc_in)[lane * M + m];                      \
    }                                                                                   \
    TB b = vload8(lane, (global TB##_elem*)b_in);                                       \
    TR##M r = NAME(a, b, acc);                                                          \
    for (int m = 0; m < M; ++m) ((global SR*)out)[lane * M + m] = ((private SR*)&r)[m]; \
  }
typedef int int1;
typedef uint uint1;
typedef float float1;
#define int8_elem int
#define uint8_elem uint

#define ALL_M(X, ...) X(__VA_ARGS__, 1) X(__VA_ARGS__, 2) X(__VA_ARGS__, 4) X(__VA_ARGS__, 8)
#define F32_(NAME, M) TM(NAME, f32acc, M, int, int, int8, float, float)
ALL_M(F32_, intel_sub_group_f16_f16_matrix_mad_k16)
ALL_M(F32_, intel_sub_group_bf16_bf16_matrix_mad_k16)
#define I8_(NAME, TA, TB, M) TM(NAME, i32acc, M, TA, TA, TB, int, int)
ALL_M(I8_, intel_sub_group_i8_i8_matrix_mad_k32, int, int8)
ALL_M(I8_, intel_sub_group_i8_u8_matrix_mad_k32, int, uint8)
ALL_M(I8_, intel_sub_group_u8_i8_matrix_mad_k32, uint, int8)
ALL_M(I8_, intel_sub_group_u8_u8_matrix_mad_k32, uint, uint8)
