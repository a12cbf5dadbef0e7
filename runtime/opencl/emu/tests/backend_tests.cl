// Kernels for tests/c/test_opencl_backend.c: pointer arguments are ulong
// addresses, as in zetile's SPIR-V.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define SG __attribute__((intel_reqd_sub_group_size(16)))

kernel SG void scale(ulong x, ulong y, float a, int n) {
  int i = get_global_id(0);
  if (i < n) ((global float*)y)[i] = a * ((global float*)x)[i] + get_sub_group_size();
}

kernel SG void arg_kinds(ulong out, char a, short b, int c, long d, float e, double f, half g) {
  if (get_global_id(0) != 0) return;
  global double* o = (global double*)out;
  o[0] = a; o[1] = b; o[2] = c; o[3] = d; o[4] = e; o[5] = f; o[6] = g;
}

// Imports an emulated builtin: built through clCompileProgram + clLinkProgram.
float8 __attribute__((overloadable)) intel_sub_group_f16_f16_matrix_mad_k16(short8, int8, float8);
kernel SG void uses_mad(ulong out) {
  short8 a = (short8)(0x3c00);  // 1.0h in every row and column of A
  int8 b = (int8)(0x40004000);  // 2.0h in every row of B
  float8 r = intel_sub_group_f16_f16_matrix_mad_k16(a, b, (float8)(1.0f));
  ((global float*)out)[get_global_id(0)] = r.s7;  // 1 + 16 * 2
}
