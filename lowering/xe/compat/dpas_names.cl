// DPAS builtins under the names upstream MLIR 22 calls, defined by the names
// Intel's compiler provides (cl_intel_subgroup_matrix_multiply_accumulate).
//
// XeVM lowers an int8 xegpu.dpas (xevm.mma with s8 operands) to a call of
// intel_sub_group_s8_s8_matrix_mad_k32; the extension and IGC name the
// signed-int8 variant i8_i8, so without this file the call stays unresolved
// and no DPAS is generated (../shared/XEGPU_NOTES.md, a10). Linked into the
// device module through xevm-attach-target{l=...} when a kernel has an int8
// dot, on every driver; IGC inlines the wrapper into one `dpas`.

//
// Built twice: with ZT_DPAS_UNSIGNED the same name maps onto u8_u8, for
// kernels whose int8 dots read uint8 operands (XeVM has one name for both;
// a kernel has one signedness, checked by the emitter).

#ifdef ZT_DPAS_UNSIGNED
int8 __attribute__((overloadable)) intel_sub_group_u8_u8_matrix_mad_k32(ushort8 a, uint8 b,
                                                                       int8 acc);

int8 __attribute__((overloadable)) intel_sub_group_s8_s8_matrix_mad_k32(short8 a, int8 b,
                                                                       int8 acc) {
  return intel_sub_group_u8_u8_matrix_mad_k32(as_ushort8(a), as_uint8(b), acc);
}
#else
int8 __attribute__((overloadable)) intel_sub_group_i8_i8_matrix_mad_k32(short8 a, int8 b,
                                                                       int8 acc);

int8 __attribute__((overloadable)) intel_sub_group_s8_s8_matrix_mad_k32(short8 a, int8 b,
                                                                       int8 acc) {
  return intel_sub_group_i8_i8_matrix_mad_k32(a, b, acc);
}
#endif
