// Every 2D block builtin of cl_intel_subgroup_2d_block_io with its
// per-work-item element type and count: shared by the OpenCL C test kernels
// and the C reference (tests/c/test_opencl_emu.c), which defines
//   READ(bits, rows, cols, count, T, N)      plain reads
//   TRANSFORM(bits, rows, cols, count, N)    VNNI reads (uint)
//   TRANSPOSE(rows, cols, N)                 32-bit transposed reads (uint)
//   WRITE(bits, rows, cols, T, N)            writes
//   PREFETCH(bits, rows, cols, count)        prefetches
// In OpenCL C the kernels are generated from the same list.
#ifndef ZT_EMU_LIST_C
#define READ(BI, RO, CO, NB, T, N) \
  TR(intel_sub_group_2d_block_read_##BI##b_##RO##r##CO##x##NB##c, T, N)
#define TRANSFORM(BI, RO, CO, NB, N) \
  TR(intel_sub_group_2d_block_read_transform_##BI##b_##RO##r##CO##x##NB##c, uint, N)
#define TRANSPOSE(RO, CO, N) \
  TR(intel_sub_group_2d_block_read_transpose_32b_##RO##r##CO##x1c, uint, N)
#define WRITE(BI, RO, CO, T, N) TW(intel_sub_group_2d_block_write_##BI##b_##RO##r##CO##x1c, T, N)
#define PREFETCH(BI, RO, CO, NB) TP(intel_sub_group_2d_block_prefetch_##BI##b_##RO##r##CO##x##NB##c)
#endif

// 8-bit, 32 columns (two bytes per work-item and row, packed in a ushort)
READ(8, 1, 32, 1, ushort, 1) READ(8, 2, 32, 1, ushort, 2) READ(8, 4, 32, 1, ushort, 4)
READ(8, 8, 32, 1, ushort, 8) READ(8, 16, 32, 1, ushort, 16) READ(8, 32, 32, 1, ushort, 32)
READ(8, 1, 32, 2, ushort, 2) READ(8, 2, 32, 2, ushort, 4) READ(8, 4, 32, 2, ushort, 8)
READ(8, 8, 32, 2, ushort, 16) READ(8, 16, 32, 2, ushort, 32) READ(8, 32, 32, 2, ushort, 64)
// 8-bit, 16 columns x 4 blocks
READ(8, 8, 16, 4, uchar, 32) READ(8, 16, 16, 4, uchar, 64) READ(8, 32, 16, 4, uchar, 128)
// 16-bit, 16 columns
READ(16, 1, 16, 1, ushort, 1) READ(16, 2, 16, 1, ushort, 2) READ(16, 4, 16, 1, ushort, 4)
READ(16, 8, 16, 1, ushort, 8) READ(16, 16, 16, 1, ushort, 16) READ(16, 32, 16, 1, ushort, 32)
READ(16, 1, 16, 2, ushort, 2) READ(16, 2, 16, 2, ushort, 4) READ(16, 4, 16, 2, ushort, 8)
READ(16, 8, 16, 2, ushort, 16) READ(16, 16, 16, 2, ushort, 32) READ(16, 32, 16, 2, ushort, 64)
// 32-bit, 8 columns (half a subgroup per row)
READ(32, 1, 8, 1, uint, 1) READ(32, 2, 8, 1, uint, 1) READ(32, 4, 8, 1, uint, 2)
READ(32, 8, 8, 1, uint, 4) READ(32, 16, 8, 1, uint, 8) READ(32, 32, 8, 1, uint, 16)
READ(32, 1, 8, 2, uint, 2) READ(32, 2, 8, 2, uint, 2) READ(32, 4, 8, 2, uint, 4)
READ(32, 8, 8, 2, uint, 8) READ(32, 16, 8, 2, uint, 16) READ(32, 32, 8, 2, uint, 32)
// 32-bit, 16 columns
READ(32, 1, 16, 1, uint, 1) READ(32, 2, 16, 1, uint, 2) READ(32, 4, 16, 1, uint, 4)
READ(32, 8, 16, 1, uint, 8) READ(32, 16, 16, 1, uint, 16) READ(32, 32, 16, 1, uint, 32)
// transform (VNNI)
TRANSFORM(8, 32, 16, 1, 8) TRANSFORM(8, 32, 16, 2, 16) TRANSFORM(8, 32, 16, 4, 32)
TRANSFORM(16, 16, 16, 1, 8) TRANSFORM(16, 16, 16, 2, 16)
TRANSFORM(16, 32, 16, 1, 16) TRANSFORM(16, 32, 16, 2, 32)
// transpose
TRANSPOSE(16, 8, 8) TRANSPOSE(32, 8, 16)
// writes
WRITE(8, 1, 16, uchar, 1) WRITE(8, 2, 16, uchar, 2) WRITE(8, 4, 16, uchar, 4) WRITE(8, 8, 16, uchar, 8)
WRITE(8, 1, 32, ushort, 1) WRITE(8, 2, 32, ushort, 2) WRITE(8, 4, 32, ushort, 4) WRITE(8, 8, 32, ushort, 8)
WRITE(16, 1, 16, ushort, 1) WRITE(16, 2, 16, ushort, 2) WRITE(16, 4, 16, ushort, 4) WRITE(16, 8, 16, ushort, 8)
WRITE(32, 1, 16, uint, 1) WRITE(32, 2, 16, uint, 2) WRITE(32, 4, 16, uint, 4) WRITE(32, 8, 16, uint, 8)
// prefetches (no effect on results; must exist and not fault, even out of bounds)
PREFETCH(8, 1, 32, 1) PREFETCH(8, 2, 32, 1) PREFETCH(8, 4, 32, 1) PREFETCH(8, 8, 32, 1)
PREFETCH(8, 16, 32, 1) PREFETCH(8, 32, 32, 1) PREFETCH(8, 1, 32, 2) PREFETCH(8, 2, 32, 2)
PREFETCH(8, 4, 32, 2) PREFETCH(8, 8, 32, 2) PREFETCH(8, 16, 32, 2) PREFETCH(8, 32, 32, 2)
PREFETCH(8, 32, 16, 1) PREFETCH(8, 32, 16, 2) PREFETCH(8, 8, 16, 4) PREFETCH(8, 16, 16, 4)
PREFETCH(8, 32, 16, 4)
PREFETCH(16, 1, 16, 1) PREFETCH(16, 2, 16, 1) PREFETCH(16, 4, 16, 1) PREFETCH(16, 8, 16, 1)
PREFETCH(16, 16, 16, 1) PREFETCH(16, 32, 16, 1) PREFETCH(16, 1, 16, 2) PREFETCH(16, 2, 16, 2)
PREFETCH(16, 4, 16, 2) PREFETCH(16, 8, 16, 2) PREFETCH(16, 16, 16, 2) PREFETCH(16, 32, 16, 2)
PREFETCH(32, 1, 8, 1) PREFETCH(32, 2, 8, 1) PREFETCH(32, 4, 8, 1) PREFETCH(32, 8, 8, 1)
PREFETCH(32, 16, 8, 1) PREFETCH(32, 32, 8, 1) PREFETCH(32, 1, 16, 1) PREFETCH(32, 2, 16, 1)
PREFETCH(32, 4, 16, 1) PREFETCH(32, 8, 16, 1) PREFETCH(32, 16, 16, 1) PREFETCH(32, 32, 16, 1)
PREFETCH(32, 1, 8, 2) PREFETCH(32, 2, 8, 2) PREFETCH(32, 4, 8, 2) PREFETCH(32, 8, 8, 2)
PREFETCH(32, 16, 8, 2) PREFETCH(32, 32, 8, 2)
