// DPAS builtins under the names upstream MLIR 22 calls, defined by the names
// Intel's compiler provides (cl_intel_subgroup_matrix_multiply_accumulate).
//
// XeVM lowers an int8 xegpu.dpas (xevm.mma with s8 operands) to a call of
// intel_sub_group_s8_s8_matrix_mad_k32; the extension and IGC name the
// signed-int8 variant i8_i8, so without this file the call stays unresolved
// and no DPAS is generated (../shared/XEGPU_NOTES.md, a10). Linked into the
// device module through xevm-attach-target{l=...} when a kernel has an int8
// dot, on every driver; IGC inlines the wrapper into one `dpas`.

int8 __attribute__((overloadable)) intel_sub_group_i8_i8_matrix_mad_k32(short8 a, int8 b,
                                                                       int8 acc);

int8 __attribute__((overloadable)) intel_sub_group_s8_s8_matrix_mad_k32(short8 a, int8 b,
                                                                       int8 acc) {
  return intel_sub_group_i8_i8_matrix_mad_k32(a, b, acc);
}
