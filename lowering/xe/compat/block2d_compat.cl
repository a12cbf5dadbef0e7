// The Xe compat library: OpenCL C definitions of the cl_intel_subgroup_2d_block_io
// builtins that XeVM's load_nd/store_nd/prefetch_nd lowering calls, for drivers
// whose IGC lacks them (Debian 12's IGC 1.0.12504: ocloc "succeeds" with
// `calla` to unresolved symbols, zeKernelCreate fails UNLINKED). Compiled to
// LLVM bitcode at build time, embedded into libzetile_compiler and linked
// into the device module through xevm-attach-target{l=...} (xe_lower.c).
//
// Base: runtime/opencl/emu/block2d.cl (written from the spec, unit-tested on
// Intel's OpenCL CPU runtime), included unchanged. The variants the matmul
// and attention kernels use are replaced by faster forms here; the emu
// versions of those names are renamed (zt_emu_*) by the #defines below,
// which apply to the names the emu's macros paste together.
//
// Faster forms: one 1-D subgroup block read/write (IGC's native
// intel_sub_group_block_read_us / _ui, which IGC 2022 has; called through
// IGC's own builtin names, since LLVM's SPIR-V backend turns the OpenCL
// names into OpSubgroupBlockReadINTEL and stops with a fatal error when
// SPV_INTEL_subgroups is not enabled, as in MLIR's XeVM serializer) per block
// row when the row lies inside the region and is aligned (4 bytes for reads,
// 16 for writes, as cl_intel_subgroups requires); otherwise per-work-item
// loads/stores with the spec's out-of-bounds rules (reads give zero, writes
// are dropped). Every branch condition is subgroup-uniform (the builtin's
// operands are). The layout is the spec's for 16 columns: work-item i holds
// column i of every row (plain), or rows 2r and 2r+1 of column i packed in
// one uint (transform, 16-bit). See block2d.cl for the full description.
//
// -DZT_COMPAT_CPU_TEST builds the same code for Intel's OpenCL CPU runtime
// (unit tests): the 1-D block reads/writes become their per-work-item
// definition (work-item i reads/writes p[i]).

#define intel_sub_group_2d_block_read_16b_1r16x1c zt_emu_read_16b_1r16x1c
#define intel_sub_group_2d_block_read_16b_2r16x1c zt_emu_read_16b_2r16x1c
#define intel_sub_group_2d_block_read_16b_4r16x1c zt_emu_read_16b_4r16x1c
#define intel_sub_group_2d_block_read_16b_8r16x1c zt_emu_read_16b_8r16x1c
#define intel_sub_group_2d_block_read_16b_16r16x1c zt_emu_read_16b_16r16x1c
#define intel_sub_group_2d_block_read_16b_32r16x1c zt_emu_read_16b_32r16x1c
#define intel_sub_group_2d_block_read_16b_1r16x2c zt_emu_read_16b_1r16x2c
#define intel_sub_group_2d_block_read_16b_2r16x2c zt_emu_read_16b_2r16x2c
#define intel_sub_group_2d_block_read_16b_4r16x2c zt_emu_read_16b_4r16x2c
#define intel_sub_group_2d_block_read_16b_8r16x2c zt_emu_read_16b_8r16x2c
#define intel_sub_group_2d_block_read_16b_16r16x2c zt_emu_read_16b_16r16x2c
#define intel_sub_group_2d_block_read_16b_32r16x2c zt_emu_read_16b_32r16x2c
#define intel_sub_group_2d_block_read_32b_1r16x1c zt_emu_read_32b_1r16x1c
#define intel_sub_group_2d_block_read_32b_2r16x1c zt_emu_read_32b_2r16x1c
#define intel_sub_group_2d_block_read_32b_4r16x1c zt_emu_read_32b_4r16x1c
#define intel_sub_group_2d_block_read_32b_8r16x1c zt_emu_read_32b_8r16x1c
#define intel_sub_group_2d_block_read_32b_16r16x1c zt_emu_read_32b_16r16x1c
#define intel_sub_group_2d_block_read_32b_32r16x1c zt_emu_read_32b_32r16x1c
#define intel_sub_group_2d_block_read_transform_16b_16r16x1c zt_emu_read_transform_16b_16r16x1c
#define intel_sub_group_2d_block_read_transform_16b_16r16x2c zt_emu_read_transform_16b_16r16x2c
#define intel_sub_group_2d_block_read_transform_16b_32r16x1c zt_emu_read_transform_16b_32r16x1c
#define intel_sub_group_2d_block_read_transform_16b_32r16x2c zt_emu_read_transform_16b_32r16x2c
#define intel_sub_group_2d_block_read_transpose_32b_16r8x1c zt_emu_read_transpose_32b_16r8x1c
#define intel_sub_group_2d_block_write_16b_1r16x1c zt_emu_write_16b_1r16x1c
#define intel_sub_group_2d_block_write_16b_2r16x1c zt_emu_write_16b_2r16x1c
#define intel_sub_group_2d_block_write_16b_4r16x1c zt_emu_write_16b_4r16x1c
#define intel_sub_group_2d_block_write_16b_8r16x1c zt_emu_write_16b_8r16x1c
#define intel_sub_group_2d_block_write_32b_1r16x1c zt_emu_write_32b_1r16x1c
#define intel_sub_group_2d_block_write_32b_2r16x1c zt_emu_write_32b_2r16x1c
#define intel_sub_group_2d_block_write_32b_4r16x1c zt_emu_write_32b_4r16x1c
#define intel_sub_group_2d_block_write_32b_8r16x1c zt_emu_write_32b_8r16x1c

#include "block2d.cl"

#undef intel_sub_group_2d_block_read_16b_1r16x1c
#undef intel_sub_group_2d_block_read_16b_2r16x1c
#undef intel_sub_group_2d_block_read_16b_4r16x1c
#undef intel_sub_group_2d_block_read_16b_8r16x1c
#undef intel_sub_group_2d_block_read_16b_16r16x1c
#undef intel_sub_group_2d_block_read_16b_32r16x1c
#undef intel_sub_group_2d_block_read_16b_1r16x2c
#undef intel_sub_group_2d_block_read_16b_2r16x2c
#undef intel_sub_group_2d_block_read_16b_4r16x2c
#undef intel_sub_group_2d_block_read_16b_8r16x2c
#undef intel_sub_group_2d_block_read_16b_16r16x2c
#undef intel_sub_group_2d_block_read_16b_32r16x2c
#undef intel_sub_group_2d_block_read_32b_1r16x1c
#undef intel_sub_group_2d_block_read_32b_2r16x1c
#undef intel_sub_group_2d_block_read_32b_4r16x1c
#undef intel_sub_group_2d_block_read_32b_8r16x1c
#undef intel_sub_group_2d_block_read_32b_16r16x1c
#undef intel_sub_group_2d_block_read_32b_32r16x1c
#undef intel_sub_group_2d_block_read_transform_16b_16r16x1c
#undef intel_sub_group_2d_block_read_transform_16b_16r16x2c
#undef intel_sub_group_2d_block_read_transform_16b_32r16x1c
#undef intel_sub_group_2d_block_read_transform_16b_32r16x2c
#undef intel_sub_group_2d_block_read_transpose_32b_16r8x1c
#undef intel_sub_group_2d_block_write_16b_1r16x1c
#undef intel_sub_group_2d_block_write_16b_2r16x1c
#undef intel_sub_group_2d_block_write_16b_4r16x1c
#undef intel_sub_group_2d_block_write_16b_8r16x1c
#undef intel_sub_group_2d_block_write_32b_1r16x1c
#undef intel_sub_group_2d_block_write_32b_2r16x1c
#undef intel_sub_group_2d_block_write_32b_4r16x1c
#undef intel_sub_group_2d_block_write_32b_8r16x1c

#ifdef ZT_COMPAT_CPU_TEST
#define ZT_BR16(p) ((p)[zt_lane()])
#define ZT_BR32(p) ((p)[zt_lane()])
#define ZT_BW16(p, v) ((p)[zt_lane()] = (v))
#define ZT_BW32(p, v) ((p)[zt_lane()] = (v))
// IGC's 2D transposed read, as runtime/opencl/emu/subgroup_block.cl defines
// it for Intel's OpenCL CPU runtime.
static inline uint8 zt_igc_read_transpose_u32_k8(long base, int wm1, int hm1, int pm1, int2 c) {
  uint d[8];
  zt_block_read_transpose((global const uchar*)base, wm1 + 1, hm1 + 1, pm1 + 1, c, 16, 8, d);
  return (uint8)(d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]);
}
#define ZT_TR32(b, w, h, p, c) zt_igc_read_transpose_u32_k8((b), (w), (h), (p), (c))
#else
// IGC's builtins behind intel_sub_group_block_read_us / intel_sub_group_block_read
// and the matching writes (cl_intel_subgroups(_short)): work-item i gets/puts p[i].
ushort __builtin_IB_simd_block_read_1_global_h(const global ushort* p);
uint __builtin_IB_simd_block_read_1_global(const global uint* p);
void __builtin_IB_simd_block_write_1_global_h(global ushort* p, ushort v);
void __builtin_IB_simd_block_write_1_global(global uint* p, uint v);
#define ZT_BR16(p) __builtin_IB_simd_block_read_1_global_h(p)
#define ZT_BR32(p) __builtin_IB_simd_block_read_1_global(p)
#define ZT_BW16(p, v) __builtin_IB_simd_block_write_1_global_h((p), (v))
#define ZT_BW32(p, v) __builtin_IB_simd_block_write_1_global((p), (v))
// IGC's internal 2D block read, transposed, 32-bit: 16 rows x 8 dwords at
// coord (x in dwords, y in rows), row i to work-item i (uint8). Debian's
// IGC 1.0.12504 compiles it into one load_block2d.ugm.d32t.a64 send
// (../shared/XEGPU_NOTES.md, probed with ocloc + iga64).
uint8 __builtin_IB_subgroup_block_read_flat_transpose_u32_k8(long base, int width_minus_one,
                                                             int height_minus_one,
                                                             int pitch_minus_one, int2 coord);
#define ZT_TR32(b, w, h, p, c) \
  __builtin_IB_subgroup_block_read_flat_transpose_u32_k8((b), (w), (h), (p), (c))
#endif

// Whether rows of `cols` elements starting at column x can go through 1-D
// block IO: every column inside the region and every row address aligned.
static inline bool zt_rows_ok(global const uchar* base, int width, int pitch, int x, int bytes,
                              int cols, int align) {
  return x >= 0 && (long)(x + cols) * bytes <= (long)width && (pitch % align) == 0 &&
         (((ulong)base + (ulong)((long)x * bytes)) % (ulong)align) == 0;
}

static inline global const uchar* zt_row(global const uchar* base, int pitch, int x, int y,
                                         int bytes) {
  return base + (long)y * pitch + (long)x * bytes;
}

// Slow path, one 16-column row of 16-bit (B = 2) or 32-bit (B = 4) elements
// at (x, y): work-item i gets element (x + i, y), zero out of bounds. The
// address adds the lane's offset to the row's instead of converting
// x + lane to 64 bits: that sign extension of an add, promoted by LLVM's
// CodeGenPrepare in the address, made LLVM 22's SPIR-V backend emit an
// OpBitwiseAnd of a 64-bit operand into a 32-bit result (invalid SPIR-V,
// the K-loop batched GEMM, compat, 4 warps: the kernel fell back to -O0).
#define ZT_ROW_GATHER(B, T)                                                                    \
  static inline T zt_row_gather##B(global const uchar* base, int width, int height, int pitch,  \
                                   int x, int y) {                                             \
    const int c = x + zt_lane();                                                               \
    return zt_in_bounds(c, y, width, height, B)                                                \
               ? *(global const T*)(zt_row(base, pitch, x, y, B) + (long)zt_lane() * B)        \
               : (T)0;                                                                         \
  }
ZT_ROW_GATHER(2, ushort)
ZT_ROW_GATHER(4, uint)

// Whether the whole block (rows x cols at coord) takes the fast path: one
// uniform branch per call, straight-line block reads inside.
#define ZT_FAST_BLOCK(B, ROWS, COLS, ALIGN)                                                    \
  (zt_rows_ok(base, width, pitch, coord.x, B, COLS, ALIGN) && coord.y >= 0 &&                  \
   (long)coord.y + ROWS <= (long)height)

// Every write to the destination (and read of a write's source) is at a
// constant index: XeVM passes a private array, which SROA keeps in registers
// only then (xe_hoist_allocas.c moves it where SROA sees it). Fast paths are
// unrolled; slow paths, taken by edge blocks only, gather 8 rows in a loop
// (kept rolled: small code) into a vector that moves down one element per
// row, the new row entering last, stored at constant indices after it. A
// row loop writing dst[r] made IGC keep the array in scratch (.ss sends,
// issue 12; unrolled instead, the gathers and their branches cost +20-40%
// instructions).

// Plain reads, 16 columns, `count` blocks side by side: dst[b * rows + r] of
// work-item i = M[y + r][x + 16 b + i].
#define ZT_FAST_READ(BITS, B, T, BR, ROWS, COUNT)                                              \
  void OVL intel_sub_group_2d_block_read_##BITS##b_##ROWS##r16x##COUNT##c(                     \
      global void* base_, int width, int height, int pitch, int2 coord, private T* dst) {      \
    global const uchar* base = (global const uchar*)base_;                                     \
    if (ZT_FAST_BLOCK(B, ROWS, 16 * COUNT, 4)) {                                               \
      _Pragma("unroll") for (int b = 0; b < COUNT; ++b)                                        \
        _Pragma("unroll") for (int r = 0; r < ROWS; ++r)                                       \
          dst[b * ROWS + r] =                                                                  \
              BR((global const T*)zt_row(base, pitch, coord.x + 16 * b, coord.y + r, B));      \
    } else {                                                                                   \
      _Pragma("unroll") for (int b = 0; b < COUNT; ++b) {                                      \
        const int x = coord.x + 16 * b;                                                        \
        _Pragma("unroll") for (int c = 0; c < (ROWS + 7) / 8; ++c) {                           \
          const int y = coord.y + 8 * c;                                                       \
          private T* o = dst + b * ROWS + 8 * c;                                               \
          if (ROWS < 8) {                                                                      \
            _Pragma("unroll") for (int k = 0; k < ROWS % 8; ++k) o[k] =                        \
                zt_row_gather##B(base, width, height, pitch, x, y + k);                        \
          } else {                                                                             \
            T##8 v = (T##8)(0);                                                                \
            _Pragma("nounroll") for (int k = 0; k < 8; ++k) v =                                \
                (T##8)(v.s1234, v.s567, zt_row_gather##B(base, width, height, pitch, x, y + k));    \
            o[0] = v.s0; o[1] = v.s1; o[2] = v.s2; o[3] = v.s3;                                \
            o[4] = v.s4; o[5] = v.s5; o[6] = v.s6; o[7] = v.s7;                                \
          }                                                                                    \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
  }

// Transform (VNNI) reads of 16-bit data: dst[b * rows/2 + r] of work-item i =
// M[y + 2r][x + 16 b + i] | M[y + 2r + 1][x + 16 b + i] << 16.
static inline uint zt_pair_gather(global const uchar* base, int width, int height, int pitch,
                                  int x, int y) {
  return (uint)zt_row_gather2(base, width, height, pitch, x, y) |
         (uint)zt_row_gather2(base, width, height, pitch, x, y + 1) << 16;
}
#define ZT_FAST_TRANSFORM(ROWS, COUNT)                                                         \
  void OVL intel_sub_group_2d_block_read_transform_16b_##ROWS##r16x##COUNT##c(                 \
      global void* base_, int width, int height, int pitch, int2 coord, private uint* dst) {   \
    global const uchar* base = (global const uchar*)base_;                                     \
    if (ZT_FAST_BLOCK(2, ROWS, 16 * COUNT, 4)) {                                               \
      _Pragma("unroll") for (int b = 0; b < COUNT; ++b)                                        \
        _Pragma("unroll") for (int r = 0; r < ROWS / 2; ++r) {                                 \
          const int x = coord.x + 16 * b, y = coord.y + 2 * r;                                 \
          const uint lo = ZT_BR16((global const ushort*)zt_row(base, pitch, x, y, 2));         \
          const uint hi = ZT_BR16((global const ushort*)zt_row(base, pitch, x, y + 1, 2));     \
          dst[b * (ROWS / 2) + r] = lo | hi << 16;                                             \
        }                                                                                      \
    } else {                                                                                   \
      _Pragma("unroll") for (int b = 0; b < COUNT; ++b) {                                      \
        const int x = coord.x + 16 * b;                                                        \
        _Pragma("unroll") for (int c = 0; c < ROWS / 16; ++c) {                                \
          const int y = coord.y + 16 * c;                                                      \
          private uint* o = dst + b * (ROWS / 2) + 8 * c;                                      \
          uint8 v = (uint8)(0);                                                                \
          _Pragma("nounroll") for (int k = 0; k < 8; ++k) v =                                  \
              (uint8)(v.s1234, v.s567, zt_pair_gather(base, width, height, pitch, x, y + 2 * k));   \
          o[0] = v.s0; o[1] = v.s1; o[2] = v.s2; o[3] = v.s3;                                  \
          o[4] = v.s4; o[5] = v.s5; o[6] = v.s6; o[7] = v.s7;                                  \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
  }

// Writes, 16 columns, one block: element (x + i, y + r) = src[r] of work-item
// i; out-of-bounds elements are dropped.
#define ZT_FAST_WRITE(BITS, B, T, BW, ROWS)                                                    \
  void OVL intel_sub_group_2d_block_write_##BITS##b_##ROWS##r16x1c(                            \
      global void* base_, int width, int height, int pitch, int2 coord, private T* src) {      \
    global uchar* base = (global uchar*)base_;                                                 \
    if (ZT_FAST_BLOCK(B, ROWS, 16, 16)) {                                                      \
      _Pragma("unroll") for (int r = 0; r < ROWS; ++r)                                         \
        BW((global T*)zt_row(base, pitch, coord.x, coord.y + r, B), src[r]);                   \
    } else {                                                                                   \
      const int c = coord.x + zt_lane();                                                       \
      if (ROWS < 8) {                                                                          \
        _Pragma("unroll") for (int r = 0; r < ROWS % 8; ++r)                                   \
          if (zt_in_bounds(c, coord.y + r, width, height, B))                                  \
            *(global T*)zt_row(base, pitch, c, coord.y + r, B) = src[r];                       \
      } else {                                                                                 \
        T##8 v = (T##8)(src[0], src[1], src[2], src[3], src[4], src[5], src[6], src[7]);       \
        _Pragma("nounroll") for (int r = 0; r < 8; ++r) {                                      \
          if (zt_in_bounds(c, coord.y + r, width, height, B))                                  \
            *(global T*)zt_row(base, pitch, c, coord.y + r, B) = v.s0;                         \
          v = (T##8)(v.s1234, v.s567, v.s0);                                                   \
        }                                                                                      \
      }                                                                                        \
    }                                                                                          \
  }

#define ZT_EACH_ROWS(X, ...) \
  X(__VA_ARGS__, 1) X(__VA_ARGS__, 2) X(__VA_ARGS__, 4) X(__VA_ARGS__, 8) X(__VA_ARGS__, 16) X(__VA_ARGS__, 32)
#define ZT_R1(BITS, B, T, BR, ROWS) ZT_FAST_READ(BITS, B, T, BR, ROWS, 1)
#define ZT_R2(BITS, B, T, BR, ROWS) ZT_FAST_READ(BITS, B, T, BR, ROWS, 2)
ZT_EACH_ROWS(ZT_R1, 16, 2, ushort, ZT_BR16)
ZT_EACH_ROWS(ZT_R2, 16, 2, ushort, ZT_BR16)
ZT_EACH_ROWS(ZT_R1, 32, 4, uint, ZT_BR32)
ZT_FAST_TRANSFORM(16, 1)
ZT_FAST_TRANSFORM(16, 2)
ZT_FAST_TRANSFORM(32, 1)
ZT_FAST_TRANSFORM(32, 2)
ZT_FAST_WRITE(16, 2, ushort, ZT_BW16, 1)
ZT_FAST_WRITE(16, 2, ushort, ZT_BW16, 2)
ZT_FAST_WRITE(16, 2, ushort, ZT_BW16, 4)
ZT_FAST_WRITE(16, 2, ushort, ZT_BW16, 8)
ZT_FAST_WRITE(32, 4, uint, ZT_BW32, 1)
ZT_FAST_WRITE(32, 4, uint, ZT_BW32, 2)
ZT_FAST_WRITE(32, 4, uint, ZT_BW32, 4)
ZT_FAST_WRITE(32, 4, uint, ZT_BW32, 8)


// Transposed 32-bit reads, 16 rows x 8 dwords (the B operand of a dot read
// from a row-major [N, K] tile: xe_trans_load.c): always one 2D block
// message (load_block2d.ugm.d32t), with the rules the native path's
// XeVM read has too: the base 64-byte aligned (the emitter aligns it), the
// pitch a multiple of 16 bytes (the emitter proves it), width and pitch at
// least 64 bytes (not checked on either path). Reads outside the surface
// are zero-filled by the hardware, as the spec's read does.
// No per-work-item fallback: Debian's IGC drops this builtin silently (no
// send, no call, no error, the result undefined) whenever its result may be
// replaced by another value on some path (a fallback branch, or a select of
// the two), as it drops the block writes (XEGPU_NOTES.md); issued on every
// path, it compiles into the send (checked with ocloc + iga64 in
// tests/python/test_xe_trans_block_read.py).
void OVL intel_sub_group_2d_block_read_transpose_32b_16r8x1c(global void* base, int width,
                                                              int height, int pitch, int2 coord,
                                                              private uint* dst) {
  const uint8 v = ZT_TR32((long)base, width - 1, height - 1, pitch - 1, coord);
  dst[0] = v.s0;
  dst[1] = v.s1;
  dst[2] = v.s2;
  dst[3] = v.s3;
  dst[4] = v.s4;
  dst[5] = v.s5;
  dst[6] = v.s6;
  dst[7] = v.s7;
}
