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
// IGC's internal 2D transposed read (the compat library's fast form of
// intel_sub_group_2d_block_read_transpose_32b_16r8x1c): 16 rows x 8 dwords
// at coord (x in dwords, y in rows) of a surface given as width/height/pitch
// minus one, row i to work-item i, zero outside the surface; the spec layout
// of the 16r8x1c transpose read (block2d.cl).
uint8 __builtin_IB_subgroup_block_read_flat_transpose_u32_k8(long base, int width_minus_one,
                                                             int height_minus_one,
                                                             int pitch_minus_one, int2 coord) {
  uint d[8];
  zt_block_read_transpose((global const uchar*)base, width_minus_one + 1, height_minus_one + 1,
                          pitch_minus_one + 1, coord, 16, 8, d);
  return (uint8)(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]);
}
// IGC's internal 2D VNNI-transform read of 16-bit data (what the compat
// path calls for a dot's 16x16 B blocks where the message's rules hold,
// lowering/xe/xe_igc_vnni.c): 16 rows x 16 columns at coord (x in
// elements, y in rows), work-item i gets column i, rows 2r and 2r + 1
// packed in dword r (lower row in the low half), zero outside the surface;
// the spec layout of the transform_16b_16r16x1c read (block2d.cl).
uint8 __builtin_IB_subgroup_block_read_flat_transform_u16_k16(long base, int width_minus_one,
                                                              int height_minus_one,
                                                              int pitch_minus_one, int2 coord) {
  uint d[8];
  zt_block_read_transform((global const uchar*)base, width_minus_one + 1, height_minus_one + 1,
                          pitch_minus_one + 1, coord, 2, 16, 16, 1, d);
  return (uint8)(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]);
}
// IGC's internal 2D plain read of 16-bit data (what the compat path calls
// for a dot's 8x16 A blocks where the message's rules hold,
// lowering/xe/xe_igc_vnni.c): 8 rows x 16 columns at coord (x in elements,
// y in rows), work-item i gets column i of rows 0-7, zero outside the
// surface; the spec layout of the 16b_8r16x1c read (block2d.cl).
ushort8 __builtin_IB_subgroup_block_read_flat_u16_m8k16v1(long base, int width_minus_one,
                                                          int height_minus_one,
                                                          int pitch_minus_one, int2 coord) {
  ushort d[8];
  zt_block_rw((global uchar*)base, width_minus_one + 1, height_minus_one + 1,
              pitch_minus_one + 1, coord, 2, 8, 16, 1, (private uchar*)d, false);
  return (ushort8)(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]);
}
