// IGC's internal 1-D subgroup block read/write builtins, which the Xe compat
// library (lowering/xe/compat/block2d_compat.cl) calls for whole aligned rows.
// IGC resolves them natively on GPUs; on Intel's OpenCL CPU runtime they are
// defined here as cl_intel_subgroups specifies the 1-D block IO: work-item i
// of the subgroup reads or writes element i starting at p.
ushort __builtin_IB_simd_block_read_1_global_h(const global ushort* p) {
  return p[get_sub_group_local_id()];
}
uint __builtin_IB_simd_block_read_1_global(const global uint* p) {
  return p[get_sub_group_local_id()];
}
void __builtin_IB_simd_block_write_1_global_h(global ushort* p, ushort v) {
  p[get_sub_group_local_id()] = v;
}
void __builtin_IB_simd_block_write_1_global(global uint* p, uint v) {
  p[get_sub_group_local_id()] = v;
}
