// cl_intel_subgroup_2d_block_io, emulated with per-work-item loads and
// stores, for executors without 2D block messages (Intel's OpenCL CPU
// runtime). Written from the published specifications: the OpenCL C
// extension cl_intel_subgroup_2d_block_io (names, signatures, which
// variants exist) and SPV_INTEL_2d_block_io ("Mapping Block Data to
// Invocations", "Out-of-Bounds Behavior"), which the OpenCL C text refers to
// for the assignment of block elements to work-items.
//
// Operands (all variants): the region is `height` rows of `width` bytes,
// rows `pitch` bytes apart from `base`; coord.x counts elements, coord.y
// rows. A block is <rows> x <cols> elements of <b> bits; "x<n>c" reads n
// blocks side by side (block k starts at coord.x + k*cols). Subgroup size 16.
//
// Layout (SPV_INTEL_2d_block_io, for subgroup size 16), with W = cols padded
// to a power of two:
//  - plain reads/writes: every block row is spread over the work-items,
//    lower columns to lower work-items:
//      W == 16: work-item i holds column i of every row: dst[r] = M[r][i];
//      W  > 16 (8b_*r32x*): work-item i holds W/16 consecutive columns of
//               every row, packed low column first: dst[r] = M[r][2i] |
//               M[r][2i+1] << 8 for 8-bit 32-column blocks;
//      W  < 16 (32b_*r8x*): 16/W rows per "pass": work-items 0-7 hold
//               rows 0,2,4,..., work-items 8-15 rows 1,3,5,...: dst[r] =
//               M[2r + i/8][i%8] (with one row, work-items 8-15 get zero).
//    With n blocks, dst holds block 0's elements, then block 1's, ...
//  - transform (VNNI) reads: 4/bytes rows are packed into one 32-bit value,
//    lower rows in lower bits; then as W == 16 above: dst[r] (uint) of
//    work-item i = M[2r][i] | M[2r+1][i] << 16 for 16-bit data,
//    M[4r][i] | M[4r+1][i] << 8 | M[4r+2][i] << 16 | M[4r+3][i] << 24 for 8-bit.
//  - transpose reads (32b_<R>r8x1c): the R x 8 block is transposed to
//    8 x R, then spread as above: R = 16: dst[j] = M[i][j] (work-item i holds
//    source row i); R = 32: dst[2j + e] = M[2i + e][j].
//  - out of bounds (x < 0, y < 0, (x+1)*bytes > width, y >= height): reads
//    give zero, writes and prefetches are dropped. Padding reads as zero.
//  - prefetches only affect performance: no-ops here.
//
// Pointers to the per-work-item data are `private` explicitly: the mangled
// names must be the spec's (Pt/Pj/Ph), whatever OpenCL C version this file
// is compiled with (in OpenCL C 2.0+ an unqualified pointer parameter is
// generic and mangles as PU3AS4t, which no kernel imports).
//
// Operand rules (ZT_EMU_CHECK_RULES, defined by zt_emu.cl for E5 only: the
// Xe compat library includes this file for GPUs and must not carry it). The
// spec's section 6.13.X.6 "Restrictions": "Behavior is undefined unless: ...
// the first component of coord is a multiple of four for 8-bit data, or a
// multiple of two for 16-bit data; the per-subgroup base_address is
// cache-line aligned (64 Bytes); the width is greater than or equal 64 Bytes
// and less than or equal to 2^24 bytes; the width is a multiple of four for
// 8-bit or 16-bit data, or a multiple of the data size otherwise; the height
// is greater than zero and less than or equal to 2^24; the pitch is greater
// than or equal to the width and a multiple of 16 bytes." (so the pitch is at
// least 64 bytes too). A GPU may give a silently wrong result for such a
// call, the per-lane emulation a right one: so every call checks them and the
// first violating call's builtin and operands are kept in
// zt_emu_block2d_fault, which the OpenCL backend reads after each launch
// (through the kernel zt_emu_block2d_faults) and turns into an error.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable

#define OVL __attribute__((overloadable))

static inline int zt_lane(void) { return (int)get_sub_group_local_id(); }

static inline bool zt_in_bounds(int x, int y, int width, int height, int bytes) {
  return x >= 0 && y >= 0 && y < height && (long)(x + 1) * bytes <= (long)width;
}

// Element (x, y) of the region as raw bits, zero when out of bounds.
static inline uint zt_load_elem(global const uchar* base, int width, int height, int pitch,
                                int x, int y, int bytes) {
  if (!zt_in_bounds(x, y, width, height, bytes)) return 0;
  global const uchar* p = base + (long)y * pitch + (long)x * bytes;
  if (bytes == 1) return *p;
  if (bytes == 2) return *(global const ushort*)p;
  return *(global const uint*)p;
}

static inline void zt_store_elem(global uchar* base, int width, int height, int pitch, int x,
                                 int y, int bytes, uint v) {
  if (!zt_in_bounds(x, y, width, height, bytes)) return;
  global uchar* p = base + (long)y * pitch + (long)x * bytes;
  if (bytes == 1) *p = (uchar)v;
  else if (bytes == 2) *(global ushort*)p = (ushort)v;
  else *(global uint*)p = v;
}

static inline void zt_put(private uchar* dst, int k, int bytes, uint v) {
  for (int b = 0; b < bytes; ++b) dst[k * bytes + b] = (uchar)(v >> (8 * b));
}

static inline uint zt_get(const private uchar* src, int k, int bytes) {
  uint v = 0;
  for (int b = 0; b < bytes; ++b) v |= (uint)src[k * bytes + b] << (8 * b);
  return v;
}

static inline int zt_pow2(int n) {
  int p = 1;
  while (p < n) p <<= 1;
  return p;
}

// Plain read or write of `count` blocks of rows x cols elements of `bytes`
// bytes; `data` is this work-item's elements in the order given above.
static inline void zt_block_rw(global uchar* base, int width, int height, int pitch, int2 coord,
                               int bytes, int rows, int cols, int count, private uchar* data,
                               bool write) {
  const int lane = zt_lane();
  const int w = zt_pow2(cols);
  int k = 0;
  for (int blk = 0; blk < count; ++blk) {
    const int x0 = coord.x + blk * cols;
    if (w >= 16) {
      const int per = w / 16;
      for (int r = 0; r < rows; ++r)
        for (int e = 0; e < per; ++e, ++k) {
          const int c = lane * per + e;
          if (write) {
            if (c < cols) zt_store_elem(base, width, height, pitch, x0 + c, coord.y + r, bytes,
                                        zt_get(data, k, bytes));
          } else {
            zt_put(data, k, bytes,
                   c < cols ? zt_load_elem(base, width, height, pitch, x0 + c, coord.y + r, bytes)
                            : 0);
          }
        }
    } else {
      const int per_pass = 16 / w;
      const int passes = (rows + per_pass - 1) / per_pass;
      for (int pass = 0; pass < passes; ++pass, ++k) {
        const int r = pass * per_pass + lane / w, c = lane % w;
        const bool inside = r < rows && c < cols;
        if (write) {
          if (inside) zt_store_elem(base, width, height, pitch, x0 + c, coord.y + r, bytes,
                                    zt_get(data, k, bytes));
        } else {
          zt_put(data, k, bytes,
                 inside ? zt_load_elem(base, width, height, pitch, x0 + c, coord.y + r, bytes) : 0);
        }
      }
    }
  }
}

// Transform (VNNI) read: 16 columns per block, 4/bytes rows per uint.
static inline void zt_block_read_transform(global const uchar* base, int width, int height,
                                           int pitch, int2 coord, int bytes, int rows, int cols,
                                           int count, private uint* dst) {
  const int lane = zt_lane(), pack = 4 / bytes;
  const int packed_rows = (rows + pack - 1) / pack;
  int k = 0;
  for (int blk = 0; blk < count; ++blk) {
    const int x = coord.x + blk * cols + lane;
    for (int r = 0; r < packed_rows; ++r, ++k) {
      uint v = 0;
      for (int q = 0; q < pack; ++q) {
        const int row = r * pack + q;
        if (lane < cols && row < rows)
          v |= zt_load_elem(base, width, height, pitch, x, coord.y + row, bytes) << (8 * bytes * q);
      }
      dst[k] = v;
    }
  }
}

// Transpose read of one rows x cols block of 32-bit data: transposed, it is
// cols rows of pow2(rows) elements, spread as a plain block.
static inline void zt_block_read_transpose(global const uchar* base, int width, int height,
                                           int pitch, int2 coord, int rows, int cols,
                                           private uint* dst) {
  const int lane = zt_lane();
  const int w = zt_pow2(rows), per = w / 16;
  int k = 0;
  for (int j = 0; j < cols; ++j)      // row j of the transposed block = source column j
    for (int e = 0; e < per; ++e, ++k) {
      const int src_row = lane * per + e;
      dst[k] = src_row < rows
                   ? zt_load_elem(base, width, height, pitch, coord.x + j, coord.y + src_row, 4)
                   : 0;
    }
}

#ifdef ZT_EMU_CHECK_RULES
// [0]: the violated rules (bits below; 0 = none), [1]: kind (0 read, 1 write,
// 2 transform read, 3 transpose read, 4 prefetch), [2..5]: element bits,
// rows, columns, blocks, [6..7]: base address low and high 32 bits,
// [8..12]: width, height, pitch, coord.x, coord.y.
global uint zt_emu_block2d_fault[13];

enum {
  ZT_RULE_BASE = 1,      // base 64-byte aligned
  ZT_RULE_WIDTH = 2,     // 64 <= width <= 2^24 bytes
  ZT_RULE_WIDTH_MUL = 4, // width a multiple of max(4, element bytes)
  ZT_RULE_HEIGHT = 8,    // 0 < height <= 2^24
  ZT_RULE_PITCH = 16,    // pitch >= width, a multiple of 16 bytes
  ZT_RULE_X = 32,        // coord.x a multiple of 4 (8-bit) or 2 (16-bit)
};

static void zt_check_rules(int kind, int bits, int rows, int cols, int count, global void* base,
                           int width, int height, int pitch, int2 coord) {
  const int bytes = bits / 8;
  uint why = 0;
  if ((ulong)base % 64) why |= ZT_RULE_BASE;
  if (width < 64 || width > (1 << 24)) why |= ZT_RULE_WIDTH;
  if (width % (bytes < 4 ? 4 : bytes)) why |= ZT_RULE_WIDTH_MUL;
  if (height <= 0 || height > (1 << 24)) why |= ZT_RULE_HEIGHT;
  if (pitch < width || pitch % 16) why |= ZT_RULE_PITCH;
  if ((bytes == 1 && coord.x % 4) || (bytes == 2 && coord.x % 2)) why |= ZT_RULE_X;
  if (!why || atomic_cmpxchg((volatile global uint*)&zt_emu_block2d_fault[0], 0, why) != 0)
    return;
  const uint v[12] = {(uint)kind, (uint)bits, (uint)rows, (uint)cols, (uint)count,
                      (uint)(ulong)base, (uint)((ulong)base >> 32), (uint)width, (uint)height,
                      (uint)pitch, (uint)coord.x, (uint)coord.y};
  for (int i = 0; i < 12; ++i) zt_emu_block2d_fault[i + 1] = v[i];
}

// Copies the first violation to the 13 uints at `out_address` and clears it.
// An integer address, as zetile's kernels take theirs: the host sets it with
// clSetKernelArg, which cannot pass a USM pointer as a pointer argument.
kernel void zt_emu_block2d_faults(ulong out_address) {
  global uint* out = (global uint*)out_address;
  for (int i = 0; i < 13; ++i) out[i] = zt_emu_block2d_fault[i];
  for (int i = 0; i < 13; ++i) zt_emu_block2d_fault[i] = 0;
}
#define ZT_CHECK(KIND, BITS, ROWS, COLS, COUNT) \
  zt_check_rules(KIND, BITS, ROWS, COLS, COUNT, base, width, height, pitch, coord);
#else
#define ZT_CHECK(KIND, BITS, ROWS, COLS, COUNT)
#endif

#define ZT_READ(BITS, ROWS, COLS, COUNT, T)                                                   \
  void OVL intel_sub_group_2d_block_read_##BITS##b_##ROWS##r##COLS##x##COUNT##c(              \
      global void* base, int width, int height, int pitch, int2 coord, private T* dst) {      \
    ZT_CHECK(0, BITS, ROWS, COLS, COUNT)                                                      \
    zt_block_rw((global uchar*)base, width, height, pitch, coord, BITS / 8, ROWS, COLS, COUNT, \
                (private uchar*)dst, false);                                                  \
  }
#define ZT_WRITE(BITS, ROWS, COLS, COUNT, T)                                                  \
  void OVL intel_sub_group_2d_block_write_##BITS##b_##ROWS##r##COLS##x##COUNT##c(             \
      global void* base, int width, int height, int pitch, int2 coord, private T* src) {      \
    ZT_CHECK(1, BITS, ROWS, COLS, COUNT)                                                      \
    zt_block_rw((global uchar*)base, width, height, pitch, coord, BITS / 8, ROWS, COLS, COUNT, \
                (private uchar*)src, true);                                                   \
  }
#define ZT_TRANSFORM(BITS, ROWS, COLS, COUNT)                                                 \
  void OVL intel_sub_group_2d_block_read_transform_##BITS##b_##ROWS##r##COLS##x##COUNT##c(    \
      global void* base, int width, int height, int pitch, int2 coord, private uint* dst) {   \
    ZT_CHECK(2, BITS, ROWS, COLS, COUNT)                                                      \
    zt_block_read_transform((global const uchar*)base, width, height, pitch, coord, BITS / 8, \
                            ROWS, COLS, COUNT, dst);                                          \
  }
#define ZT_TRANSPOSE(ROWS, COLS)                                                              \
  void OVL intel_sub_group_2d_block_read_transpose_32b_##ROWS##r##COLS##x1c(                  \
      global void* base, int width, int height, int pitch, int2 coord, private uint* dst) {   \
    ZT_CHECK(3, 32, ROWS, COLS, 1)                                                            \
    zt_block_read_transpose((global const uchar*)base, width, height, pitch, coord, ROWS,     \
                            COLS, dst);                                                       \
  }
#define ZT_PREFETCH(BITS, ROWS, COLS, COUNT)                                                  \
  void OVL intel_sub_group_2d_block_prefetch_##BITS##b_##ROWS##r##COLS##x##COUNT##c(          \
      global void* base, int width, int height, int pitch, int2 coord) {                      \
    ZT_CHECK(4, BITS, ROWS, COLS, COUNT)                                                      \
  }

#define ZT_ROWS_1_32(X, ...) \
  X(__VA_ARGS__, 1) X(__VA_ARGS__, 2) X(__VA_ARGS__, 4) X(__VA_ARGS__, 8) X(__VA_ARGS__, 16) X(__VA_ARGS__, 32)

// Reads (spec: "Add 2d block read functions").
#define R_(BITS, COLS, COUNT, T, ROWS) ZT_READ(BITS, ROWS, COLS, COUNT, T)
ZT_ROWS_1_32(R_, 8, 32, 1, ushort)
ZT_ROWS_1_32(R_, 16, 16, 1, ushort)
ZT_ROWS_1_32(R_, 32, 8, 1, uint)
ZT_ROWS_1_32(R_, 32, 16, 1, uint)
ZT_ROWS_1_32(R_, 8, 32, 2, ushort)
ZT_ROWS_1_32(R_, 16, 16, 2, ushort)
ZT_ROWS_1_32(R_, 32, 8, 2, uint)
ZT_READ(8, 8, 16, 4, uchar)
ZT_READ(8, 16, 16, 4, uchar)
ZT_READ(8, 32, 16, 4, uchar)
ZT_TRANSFORM(8, 32, 16, 1)
ZT_TRANSFORM(8, 32, 16, 2)
ZT_TRANSFORM(8, 32, 16, 4)
ZT_TRANSFORM(16, 16, 16, 1)
ZT_TRANSFORM(16, 16, 16, 2)
ZT_TRANSFORM(16, 32, 16, 1)
ZT_TRANSFORM(16, 32, 16, 2)
ZT_TRANSPOSE(16, 8)
ZT_TRANSPOSE(32, 8)

// XeVM (MLIR 22) declares the 8-bit 8x32 read with a `private uchar*`
// destination (mangled ...iPh) where the specification has `private
// ushort*` (...iPt): the same 16 bytes per work-item (columns 2i and 2i+1 of
// each row), so that spelling is defined too.
void OVL intel_sub_group_2d_block_read_8b_8r32x1c(global void* base, int width, int height,
                                                  int pitch, int2 coord, private uchar* dst) {
  intel_sub_group_2d_block_read_8b_8r32x1c(base, width, height, pitch, coord,
                                           (private ushort*)dst);
}

// Writes (spec: "Add 2d block write functions").
#define W_(BITS, COLS, T, ROWS) ZT_WRITE(BITS, ROWS, COLS, 1, T)
#define ZT_ROWS_1_8(X, ...) X(__VA_ARGS__, 1) X(__VA_ARGS__, 2) X(__VA_ARGS__, 4) X(__VA_ARGS__, 8)
ZT_ROWS_1_8(W_, 8, 16, uchar)
ZT_ROWS_1_8(W_, 8, 32, ushort)
ZT_ROWS_1_8(W_, 16, 16, ushort)
ZT_ROWS_1_8(W_, 32, 16, uint)

// Prefetches (spec: "Add 2d block prefetch functions").
#define P_(BITS, COLS, COUNT, ROWS) ZT_PREFETCH(BITS, ROWS, COLS, COUNT)
ZT_ROWS_1_32(P_, 8, 32, 1)
ZT_ROWS_1_32(P_, 8, 32, 2)
ZT_PREFETCH(8, 32, 16, 1)
ZT_PREFETCH(8, 32, 16, 2)
ZT_PREFETCH(8, 8, 16, 4)
ZT_PREFETCH(8, 16, 16, 4)
ZT_PREFETCH(8, 32, 16, 4)
ZT_ROWS_1_32(P_, 16, 16, 1)
ZT_ROWS_1_32(P_, 16, 16, 2)
ZT_ROWS_1_32(P_, 32, 8, 1)
ZT_ROWS_1_32(P_, 32, 16, 1)
ZT_ROWS_1_32(P_, 32, 8, 2)
