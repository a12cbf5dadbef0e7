// Unit tests of zetile's emulation library of Intel GPU-only builtins
// (runtime/opencl/emu), one OpenCL C test kernel per builtin
// (runtime/opencl/emu/tests/*.cl, compiled to SPIR-V at build time), run on
// Intel's OpenCL CPU runtime and compared, work-item by work-item, with a C
// reference written from the specifications' descriptions of the layouts:
// cl_intel_subgroup_2d_block_io / SPV_INTEL_2d_block_io ("Mapping Block Data
// to Invocations", out-of-bounds behaviour) and
// cl_intel_subgroup_matrix_multiply_accumulate (operand layouts).
//
// The test drives OpenCL directly (same symbol table as the backend) and
// links exactly as the backend does: clCompileProgram on both SPIR-V
// modules, then clLinkProgram. Skips when the CPU runtime is not installed.
#include <check.h>
#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "opencl/cl_symbols.h"

static zt_cl_syms_t S;
static cl_platform_id plat;
static cl_device_id dev;
static cl_context ctx;
static cl_command_queue queue;
static clHostMemAllocINTEL_fn host_alloc;
static clMemBlockingFreeINTEL_fn usm_free;

static const char* runtime_path(void) {
  const char* e = getenv("ZETILE_OPENCL_CPU_RUNTIME");
  return e && e[0] ? e : ZT_SOURCE_DIR "/.venv/lib/libintelocl.so";
}

// NULL when ready, else why not (the test then skips).
static const char* open_runtime(void) {
#if defined(__SANITIZE_ADDRESS__)
  return "sanitizer build (Intel's closed runtime brings its own allocator and threads)";
#endif
  S.library = dlopen(runtime_path(), RTLD_NOW | RTLD_LOCAL);
  if (!S.library) return "Intel's OpenCL CPU runtime (pip intel-opencl-rt) is not installed";
#define ZT_SYM_(name) S.name = (__typeof__(name)*)dlsym(S.library, #name);
  ZT_CL_SYMBOLS(ZT_SYM_, ZT_SYM_)
#undef ZT_SYM_
  cl_uint n = 0;
  if (S.clGetPlatformIDs(1, &plat, &n) != CL_SUCCESS || !n) return "no OpenCL platform";
  if (S.clGetDeviceIDs(plat, CL_DEVICE_TYPE_CPU, 1, &dev, &n) != CL_SUCCESS || !n)
    return "no CPU device";
  cl_int err;
  ctx = S.clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  queue = S.clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  host_alloc = (clHostMemAllocINTEL_fn)S.clGetExtensionFunctionAddressForPlatform(
      plat, "clHostMemAllocINTEL");
  usm_free = (clMemBlockingFreeINTEL_fn)S.clGetExtensionFunctionAddressForPlatform(
      plat, "clMemBlockingFreeINTEL");
  ck_assert_ptr_nonnull(host_alloc);
  return NULL;
}

#define REQUIRE_RUNTIME()                                  \
  do {                                                     \
    const char* why_ = open_runtime();                     \
    if (why_) {                                            \
      fprintf(stderr, "SKIP %s: %s\n", __func__, why_);    \
      return;                                              \
    }                                                      \
  } while (0)

static void* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s (built by the zt_opencl_test_kernels target)", path);
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  rewind(f);
  void* b = malloc(*size);
  ck_assert_uint_eq(fread(b, 1, *size, f), *size);
  fclose(f);
  return b;
}

static void check_build(cl_int err, cl_program p, const char* what) {
  if (err == CL_SUCCESS) return;
  char log[8192] = {0};
  if (p) S.clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, sizeof log - 1, log, NULL);
  ck_abort_msg("%s failed (%d): %s", what, err, log);
}

// Another implementation can be checked with the same references:
// ZT_EMU_TEST_LIB=<library.spv> ZT_EMU_TEST_KERNELS=<test kernels.spv> (a
// subset of the test kernels: builtins without a kernel are skipped).
static bool other_impl(void) {
  const char* l = getenv("ZT_EMU_TEST_LIB");
  return l && l[0];
}

// The test kernels of `name` linked with the emulation library.
static cl_program build_tests(const char* name) {
  char path[512];
  size_t n1, n2;
  snprintf(path, sizeof path, ZT_BINARY_DIR "/opencl_tests/%s.spv", name);
  const char* lib = ZT_BINARY_DIR "/generated/zt_opencl_emu.spv";
  if (other_impl()) {
    lib = getenv("ZT_EMU_TEST_LIB");
    snprintf(path, sizeof path, "%s", getenv("ZT_EMU_TEST_KERNELS"));
  }
  void* tests = read_file(path, &n1);
  void* emu = read_file(lib, &n2);
  cl_int err;
  cl_program pt = S.clCreateProgramWithIL(ctx, tests, n1, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  cl_program pe = S.clCreateProgramWithIL(ctx, emu, n2, &err);
  ck_assert_int_eq(err, CL_SUCCESS);
  check_build(S.clCompileProgram(pt, 1, &dev, "", 0, NULL, NULL, NULL, NULL), pt, "compile tests");
  check_build(S.clCompileProgram(pe, 1, &dev, "", 0, NULL, NULL, NULL, NULL), pe, "compile emu");
  cl_program in[2] = {pt, pe};
  cl_program linked = S.clLinkProgram(ctx, 1, &dev, "", 2, in, NULL, NULL, &err);
  check_build(err, linked, "link");
  S.clReleaseProgram(pt);
  S.clReleaseProgram(pe);
  free(tests);
  free(emu);
  return linked;
}

// Runs kernel `name` on one subgroup of `lanes` work-items with 8-byte and
// 4-byte arguments. Returns false (kernel absent) only when checking another
// implementation.
static bool run_sg(cl_program p, const char* name, int lanes, int nargs, const size_t* sizes,
                   const void* const* values) {
  cl_int err;
  cl_kernel k = S.clCreateKernel(p, name, &err);
  if (err == CL_INVALID_KERNEL_NAME && other_impl()) return false;
  ck_assert_msg(err == CL_SUCCESS, "clCreateKernel(%s): %d", name, err);
  for (int i = 0; i < nargs; ++i)
    ck_assert_int_eq(S.clSetKernelArg(k, (cl_uint)i, sizes[i], values[i]), CL_SUCCESS);
  size_t g = (size_t)lanes, l = (size_t)lanes;
  ck_assert_int_eq(S.clEnqueueNDRangeKernel(queue, k, 1, NULL, &g, &l, 0, NULL, NULL),
                   CL_SUCCESS);
  ck_assert_int_eq(S.clFinish(queue), CL_SUCCESS);
  S.clReleaseKernel(k);
  return true;
}

static bool run16(cl_program p, const char* name, int nargs, const size_t* sizes,
                  const void* const* values) {
  return run_sg(p, name, 16, nargs, sizes, values);
}

// --- 2D block IO -------------------------------------------------------------

enum { PITCH = 512, ROWS_ALLOC = 72, GUARD = 4 * PITCH };

typedef struct region_s {
  uint8_t* alloc;  // GUARD bytes before base, GUARD after the rows
  uint8_t* base;
  int width, height, cx, cy;
} region_t;

static uint8_t pattern(int y, int xb) { return (uint8_t)(y * 131 + xb * 7 + 3); }

static void region_init(region_t* r, bool fill) {
  cl_int err;
  size_t size = (size_t)GUARD * 2 + (size_t)PITCH * ROWS_ALLOC;
  r->alloc = host_alloc(ctx, NULL, size, 64, &err);
  ck_assert_ptr_nonnull(r->alloc);
  memset(r->alloc, 0xEE, size);
  r->base = r->alloc + GUARD;
  if (fill)
    for (int y = 0; y < ROWS_ALLOC; ++y)
      for (int x = 0; x < PITCH; ++x) r->base[y * PITCH + x] = pattern(y, x);
}

// Element (x, y) of the region per the spec: zero out of bounds.
static uint32_t elem(const region_t* r, int x, int y, int bytes) {
  if (x < 0 || y < 0 || y >= r->height || (long)(x + 1) * bytes > r->width) return 0;
  uint32_t v = 0;
  for (int b = 0; b < bytes; ++b) v |= (uint32_t)pattern(y, x * bytes + b) << (8 * b);
  return v;
}

// What work-item `lane` holds in slot k, from the spec's description.
static uint32_t expect_read(const region_t* R, int bits, int rows, int cols, int count, int n,
                            int lane, int k) {
  int bytes = bits / 8, cx = R->cx, cy = R->cy;
  if (bits == 8 && cols == 32) {  // two columns per work-item, packed in a ushort
    int blk = k / rows, r = k % rows, x = cx + blk * 32 + 2 * lane;
    return elem(R, x, cy + r, 1) | elem(R, x + 1, cy + r, 1) << 8;
  }
  if (cols == 16) {  // one column per work-item
    int blk = k / rows, r = k % rows;
    return elem(R, cx + blk * 16 + lane, cy + r, bytes);
  }
  // 32-bit, 8 columns: work-items 0-7 rows 0,2,..; 8-15 rows 1,3,...
  int per_block = n / count, blk = k / per_block, j = k % per_block;
  int row = 2 * j + lane / 8;
  return row < rows ? elem(R, cx + blk * 8 + lane % 8, cy + row, 4) : 0;
}

static uint32_t expect_transform(const region_t* R, int bits, int rows, int count, int n,
                                 int lane, int k) {
  int bytes = bits / 8, pack = 4 / bytes, per_block = n / count;
  int blk = k / per_block, j = k % per_block;
  uint32_t v = 0;
  for (int q = 0; q < pack; ++q)
    v |= elem(R, R->cx + blk * 16 + lane, R->cy + j * pack + q, bytes) << (8 * bytes * q);
  (void)rows;
  return v;
}

static uint32_t expect_transpose(const region_t* R, int rows, int lane, int k) {
  if (rows == 16) return elem(R, R->cx + k, R->cy + lane, 4);  // lane i: source row i
  return elem(R, R->cx + k / 2, R->cy + 2 * lane + k % 2, 4);  // lane i: rows 2i, 2i+1
}

typedef struct read_case_s {
  const char* name;
  int bits, rows, cols, count, n, tsize, kind;  // kind 0 plain, 1 transform, 2 transpose
} read_case_t;

#define ZT_EMU_LIST_C
#define READ(b, r, c, k, T, N) \
  {"t_intel_sub_group_2d_block_read_" #b "b_" #r "r" #c "x" #k "c", b, r, c, k, N, sizeof(T), 0},
#define TRANSFORM(b, r, c, k, N) \
  {"t_intel_sub_group_2d_block_read_transform_" #b "b_" #r "r" #c "x" #k "c", b, r, c, k, N, 4, 1},
#define TRANSPOSE(r, c, N) \
  {"t_intel_sub_group_2d_block_read_transpose_32b_" #r "r" #c "x1c", 32, r, c, 1, N, 4, 2},
#define WRITE(b, r, c, T, N)
#define PREFETCH(b, r, c, k)
typedef uint16_t ushort;
typedef uint32_t uint;
typedef uint8_t uchar;
static const read_case_t read_cases[] = {
#include "opencl/emu/tests/block2d_list.h"
};
#undef READ
#undef TRANSFORM
#undef TRANSPOSE
#undef WRITE
#undef PREFETCH

// Three placements: inside, across the right and bottom edges, across the
// left and top edges (coordinates may be negative: out of bounds reads 0).
static void place(region_t* R, int which, int bits, int rows, int cols, int count) {
  int bytes = bits / 8;
  if (which == 0) {
    R->width = 384, R->height = 48, R->cx = 4, R->cy = 3;
  } else if (which == 1) {
    R->width = 256, R->height = 40;
    R->cx = R->width / bytes - (cols * count) / 2;
    R->cy = R->height - (rows + 1) / 2;
  } else {
    R->width = 256, R->height = 40, R->cx = -4, R->cy = -1;
  }
}

static bool call_block(cl_program p, const char* name, const region_t* R, void* out) {
  cl_ulong src = (cl_ulong)(uintptr_t)R->base, o = (cl_ulong)(uintptr_t)out;
  int pitch = PITCH;
  const void* v[] = {&src, &o, &R->width, &R->height, &pitch, &R->cx, &R->cy};
  const size_t s[] = {8, 8, 4, 4, 4, 4, 4};
  return run16(p, name, 7, s, v);
}

START_TEST(test_block_reads_match_the_spec_layout) {
  REQUIRE_RUNTIME();
  cl_program p = build_tests("block2d_tests");
  region_t R;
  region_init(&R, true);
  cl_int err;
  uint8_t* out = host_alloc(ctx, NULL, 16 * 128 * 4, 64, &err);
  int checked = 0, builtins = 0;
  for (size_t c = 0; c < sizeof read_cases / sizeof read_cases[0]; ++c) {
    const read_case_t* t = &read_cases[c];
    for (int which = 0; which < 3; ++which) {
      place(&R, which, t->bits, t->rows, t->cols, t->count);
      memset(out, 0xCD, 16 * 128 * 4);
      if (!call_block(p, t->name, &R, out)) break;
      if (which == 0) ++builtins;
      for (int lane = 0; lane < 16; ++lane)
        for (int k = 0; k < t->n; ++k) {
          uint32_t got = 0;
          memcpy(&got, out + ((size_t)lane * t->n + k) * t->tsize, t->tsize);
          uint32_t want =
              t->kind == 0 ? expect_read(&R, t->bits, t->rows, t->cols, t->count, t->n, lane, k)
              : t->kind == 1 ? expect_transform(&R, t->bits, t->rows, t->count, t->n, lane, k)
                             : expect_transpose(&R, t->rows, lane, k);
          // 32b_1r8x*: "if there is only one row, the data assigned to the last
          // eight work-items is undefined": not compared.
          if (t->kind == 0 && t->bits == 32 && t->cols == 8 && t->rows == 1 && lane >= 8)
            continue;
          ck_assert_msg(got == want,
                        "%s placement %d (x %d, y %d, width %d, height %d): work-item %d "
                        "slot %d = 0x%x, spec layout says 0x%x",
                        t->name + 2, which, R.cx, R.cy, R.width, R.height, lane, k, got, want);
          ++checked;
        }
    }
  }
  // The spec's own example (SPV_INTEL_2d_block_io, width 8 < subgroup size):
  // the second half of the subgroup holds the second row.
  place(&R, 0, 32, 2, 8, 1);
  if (call_block(p, "t_intel_sub_group_2d_block_read_32b_2r8x1c", &R, out)) {
    uint32_t lane8 = 0;
    memcpy(&lane8, out + 8 * 4, 4);
    ck_assert_uint_eq(lane8, elem(&R, R.cx, R.cy + 1, 4));
  }
  fprintf(stderr, "2D block reads: %d builtins, %d work-item slots checked\n", builtins,
          checked);
  usm_free(ctx, out);
  usm_free(ctx, R.alloc);
  S.clReleaseProgram(p);
}
END_TEST

typedef struct write_case_s {
  const char* name;
  int bits, rows, cols, n, tsize;
} write_case_t;

#define READ(b, r, c, k, T, N)
#define TRANSFORM(b, r, c, k, N)
#define TRANSPOSE(r, c, N)
#define WRITE(b, r, c, T, N) \
  {"t_intel_sub_group_2d_block_write_" #b "b_" #r "r" #c "x1c", b, r, c, N, sizeof(T)},
#define PREFETCH(b, r, c, k)
static const write_case_t write_cases[] = {
#include "opencl/emu/tests/block2d_list.h"
};
#undef READ
#undef TRANSFORM
#undef TRANSPOSE
#undef WRITE
#undef PREFETCH

static void put_elem(const region_t* R, uint8_t* mem, int x, int y, int bytes, uint32_t v) {
  if (x < 0 || y < 0 || y >= R->height || (long)(x + 1) * bytes > R->width) return;
  for (int b = 0; b < bytes; ++b) mem[y * PITCH + x * bytes + b] = (uint8_t)(v >> (8 * b));
}

START_TEST(test_block_writes_match_the_spec_layout) {
  REQUIRE_RUNTIME();
  cl_program p = build_tests("block2d_tests");
  size_t size = (size_t)GUARD * 2 + (size_t)PITCH * ROWS_ALLOC;
  uint8_t* want = malloc(size);
  for (size_t c = 0; c < sizeof write_cases / sizeof write_cases[0]; ++c) {
    const write_case_t* t = &write_cases[c];
    for (int which = 0; which < 3; ++which) {
      region_t R;
      region_init(&R, false);
      place(&R, which, t->bits, t->rows, t->cols, 1);
      if (!call_block(p, t->name, &R, R.alloc)) {  // `out` unused by write kernels
        usm_free(ctx, R.alloc);
        break;
      }
      memset(want, 0xEE, size);
      for (int lane = 0; lane < 16; ++lane)
        for (int k = 0; k < t->n; ++k) {
          uint32_t v = (uint32_t)(lane * t->n + k + 1) * 0x9E3779B1u;
          if (t->tsize < 4) v &= (1u << (8 * t->tsize)) - 1;
          uint8_t* base = want + GUARD;
          if (t->bits == 8 && t->cols == 32) {  // two bytes per work-item and row
            put_elem(&R, base, R.cx + 2 * lane, R.cy + k, 1, v & 0xff);
            put_elem(&R, base, R.cx + 2 * lane + 1, R.cy + k, 1, v >> 8);
          } else {  // one element per work-item and row
            put_elem(&R, base, R.cx + lane, R.cy + k, t->bits / 8, v);
          }
        }
      for (size_t i = 0; i < size; ++i)
        ck_assert_msg(R.alloc[i] == want[i],
                      "%s placement %d: byte at row %ld, offset %ld is 0x%02x, expected 0x%02x",
                      t->name + 2, which, ((long)i - GUARD) / PITCH,
                      ((long)i - GUARD) % PITCH, R.alloc[i], want[i]);
      usm_free(ctx, R.alloc);
    }
  }
  free(want);
  S.clReleaseProgram(p);
}
END_TEST

static const char* const prefetch_names[] = {
#define READ(b, r, c, k, T, N)
#define TRANSFORM(b, r, c, k, N)
#define TRANSPOSE(r, c, N)
#define WRITE(b, r, c, T, N)
#define PREFETCH(b, r, c, k) "t_intel_sub_group_2d_block_prefetch_" #b "b_" #r "r" #c "x" #k "c",
#include "opencl/emu/tests/block2d_list.h"
};

START_TEST(test_block_prefetches_exist_and_have_no_effect) {
  REQUIRE_RUNTIME();
  cl_program p = build_tests("block2d_tests");
  region_t R;
  region_init(&R, true);
  cl_int err;
  uint32_t* out = host_alloc(ctx, NULL, 64, 64, &err);
  for (size_t i = 0; i < sizeof prefetch_names / sizeof prefetch_names[0]; ++i) {
    place(&R, 2, 8, 32, 32, 2);  // partly out of bounds: must not fault
    memset(out, 0, 64);
    if (!call_block(p, prefetch_names[i], &R, out)) continue;
    for (int lane = 0; lane < 16; ++lane) ck_assert_uint_eq(out[lane], 1);
    for (int y = 0; y < ROWS_ALLOC; ++y) ck_assert_uint_eq(R.base[y * PITCH + 5], pattern(y, 5));
  }
  usm_free(ctx, out);
  usm_free(ctx, R.alloc);
  S.clReleaseProgram(p);
}
END_TEST

// --- matrix multiply-accumulate -----------------------------------------------

typedef enum { T_F16, T_BF16, T_I8, T_U8 } elt_t;
typedef enum { ACC_F32, ACC_F16, ACC_BF16, ACC_I32 } acc_t;

static uint16_t f16_bits(float f) {
  _Float16 h = (_Float16)f;
  uint16_t b;
  memcpy(&b, &h, 2);
  return b;
}
static float f16_value(uint16_t b) {
  _Float16 h;
  memcpy(&h, &b, 2);
  return (float)h;
}
static uint16_t bf16_bits(float f) {  // round to nearest even
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}
static float bf16_value(uint16_t b) {
  uint32_t u = (uint32_t)b << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// sg: the subgroup size, N (16, or 8 for DG2's SIMD8 forms).
static void check_mad(cl_program p, const char* name, int sg, elt_t ta, elt_t tb, acc_t acc,
                      int M) {
  const int K = (ta == T_I8 || ta == T_U8) ? 32 : 16, N = sg;
  const int ebits = K == 32 ? 8 : 16, per = K / sg;  // A elements per work-item and row
  double A[8][32], B[32][16], C[8][16];
  cl_int err;
  uint32_t* a_in = host_alloc(ctx, NULL, 16 * 8 * 4, 64, &err);
  uint32_t* b_in = host_alloc(ctx, NULL, 16 * 8 * 4, 64, &err);
  uint32_t* acc_in = host_alloc(ctx, NULL, 16 * 8 * 4, 64, &err);
  uint32_t* out = host_alloc(ctx, NULL, 16 * 8 * 4, 64, &err);
  unsigned seed = 12345u + (unsigned)M * 7u + (unsigned)ta * 131u + (unsigned)acc * 17u +
                  (unsigned)sg;
#define RND() (seed = seed * 1103515245u + 12345u, (int)((seed >> 16) & 0x7fff))
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k)
      A[m][k] = ta == T_I8 ? (double)(int8_t)RND() : ta == T_U8 ? (double)(uint8_t)RND()
                                                                : (RND() % 17 - 8) / 4.0;
  for (int k = 0; k < K; ++k)
    for (int n = 0; n < N; ++n)
      B[k][n] = tb == T_I8 ? (double)(int8_t)RND() : tb == T_U8 ? (double)(uint8_t)RND()
                                                                : (RND() % 17 - 8) / 4.0;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n)
      C[m][n] = acc == ACC_I32 ? (double)(RND() - 16384) : (RND() % 33 - 16) / 16.0;
  // Operands in the spec's layout: work-item j holds K / sg elements of each
  // row of A, lower k in lower bits (subgroup 16: A[m][j] for 16-bit types,
  // A[m][2j], A[m][2j+1] for 8-bit; subgroup 8: A[m][2j], A[m][2j+1] for
  // 16-bit, A[m][4j .. 4j+3] for 8-bit), column n of B packed along K in
  // eight 32-bit values, column n of C.
  for (int lane = 0; lane < N; ++lane) {
    for (int m = 0; m < M; ++m) {
      uint32_t a = 0;
      for (int q = 0; q < per; ++q) {
        double x = A[m][per * lane + q];
        uint32_t e = K == 32 ? (uint32_t)(int)x & 0xffu
                             : ta == T_F16 ? f16_bits((float)x) : bf16_bits((float)x);
        a |= e << (ebits * q);
      }
      if (sg == 16) ((uint16_t*)a_in)[lane * M + m] = (uint16_t)a;
      else a_in[lane * M + m] = a;
      uint32_t c;
      if (acc == ACC_I32) c = (uint32_t)(int32_t)C[m][lane];
      else if (acc == ACC_F16) c = f16_bits((float)C[m][lane]);
      else if (acc == ACC_BF16) c = bf16_bits((float)C[m][lane]);
      else {
        float f = (float)C[m][lane];
        memcpy(&c, &f, 4);
      }
      if (acc == ACC_F16 || acc == ACC_BF16) ((uint16_t*)acc_in)[lane * M + m] = (uint16_t)c;
      else acc_in[lane * M + m] = c;
    }
    for (int i = 0; i < 8; ++i) {
      uint32_t w = 0;
      if (K == 32)
        for (int q = 0; q < 4; ++q) w |= ((uint32_t)(int)B[4 * i + q][lane] & 0xff) << (8 * q);
      else
        for (int q = 0; q < 2; ++q)
          w |= (uint32_t)(tb == T_F16 ? f16_bits((float)B[2 * i + q][lane])
                                      : bf16_bits((float)B[2 * i + q][lane]))
               << (16 * q);
      b_in[lane * 8 + i] = w;
    }
  }
  cl_ulong args[4] = {(uintptr_t)a_in, (uintptr_t)b_in, (uintptr_t)acc_in, (uintptr_t)out};
  const void* v[] = {&args[0], &args[1], &args[2], &args[3]};
  const size_t s[] = {8, 8, 8, 8};
  const bool ran = run_sg(p, name, sg, 4, s, v);
  for (int n = 0; ran && n < N; ++n)
    for (int m = 0; m < M; ++m) {
      double want = C[m][n];
      for (int k = 0; k < K; ++k) want += A[m][k] * B[k][n];
      double got;
      if (acc == ACC_I32) got = (int32_t)out[n * M + m];
      else if (acc == ACC_F16) got = f16_value(((uint16_t*)out)[n * M + m]);
      else if (acc == ACC_BF16) {
        got = bf16_value(((uint16_t*)out)[n * M + m]);
        want = bf16_value(bf16_bits((float)want));  // rounded once, to nearest even
      } else {
        float f;
        memcpy(&f, &out[n * M + m], 4);
        got = f;
      }
      // Inputs are chosen so that every product and partial sum is exact.
      ck_assert_msg(got == want, "%s (subgroup %d) M=%d: C[%d][%d] = %.9g, expected %.9g",
                    name + 2, sg, M, m, n, got, want);
    }
  usm_free(ctx, a_in);
  usm_free(ctx, b_in);
  usm_free(ctx, acc_in);
  usm_free(ctx, out);
}

START_TEST(test_matrix_mad_matches_a_scalar_product) {
  REQUIRE_RUNTIME();
  cl_program p = build_tests("matrix_mad_tests");
  static const struct {
    const char* name;
    elt_t a, b;
    acc_t acc;
    const char* tag;
  } cases[] = {
      {"intel_sub_group_f16_f16_matrix_mad_k16", T_F16, T_F16, ACC_F32, "f32acc"},
      {"intel_sub_group_bf16_bf16_matrix_mad_k16", T_BF16, T_BF16, ACC_F32, "f32acc"},
      {"intel_sub_group_f16_f16_matrix_mad_k16", T_F16, T_F16, ACC_F16, "f16acc"},
      {"intel_sub_group_bf16_bf16_matrix_mad_k16", T_BF16, T_BF16, ACC_BF16, "bf16acc"},
      {"intel_sub_group_i8_i8_matrix_mad_k32", T_I8, T_I8, ACC_I32, "i32acc"},
      {"intel_sub_group_i8_u8_matrix_mad_k32", T_I8, T_U8, ACC_I32, "i32acc"},
      {"intel_sub_group_u8_i8_matrix_mad_k32", T_U8, T_I8, ACC_I32, "i32acc"},
      {"intel_sub_group_u8_u8_matrix_mad_k32", T_U8, T_U8, ACC_I32, "i32acc"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c)
    for (int M = 1; M <= 8; M *= 2) {
      char kname[160];
      snprintf(kname, sizeof kname, "t_%s_%s%d", cases[c].name, cases[c].tag, M);
      check_mad(p, kname, 16, cases[c].a, cases[c].b, cases[c].acc, M);
    }
  S.clReleaseProgram(p);
}
END_TEST

// The SIMD8 forms (DG2): fp32 accumulators for fp16/bf16, int32 for 8-bit.
START_TEST(test_simd8_matrix_mad_matches_a_scalar_product) {
  REQUIRE_RUNTIME();
  cl_program p = build_tests("matrix_mad8_tests");
  static const struct {
    const char* name;
    elt_t a, b;
    acc_t acc;
    const char* tag;
  } cases[] = {
      {"intel_sub_group_f16_f16_matrix_mad_k16", T_F16, T_F16, ACC_F32, "f32acc"},
      {"intel_sub_group_bf16_bf16_matrix_mad_k16", T_BF16, T_BF16, ACC_F32, "f32acc"},
      {"intel_sub_group_i8_i8_matrix_mad_k32", T_I8, T_I8, ACC_I32, "i32acc"},
      {"intel_sub_group_i8_u8_matrix_mad_k32", T_I8, T_U8, ACC_I32, "i32acc"},
      {"intel_sub_group_u8_i8_matrix_mad_k32", T_U8, T_I8, ACC_I32, "i32acc"},
      {"intel_sub_group_u8_u8_matrix_mad_k32", T_U8, T_U8, ACC_I32, "i32acc"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c)
    for (int M = 1; M <= 8; M *= 2) {
      char kname[160];
      snprintf(kname, sizeof kname, "t_%s_%s%d", cases[c].name, cases[c].tag, M);
      check_mad(p, kname, 8, cases[c].a, cases[c].b, cases[c].acc, M);
    }
  S.clReleaseProgram(p);
}
END_TEST

int main(void) {
  Suite* s = suite_create("opencl_emu");
  TCase* tc = tcase_create("emu");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_block_reads_match_the_spec_layout);
  tcase_add_test(tc, test_block_writes_match_the_spec_layout);
  tcase_add_test(tc, test_block_prefetches_exist_and_have_no_effect);
  tcase_add_test(tc, test_matrix_mad_matches_a_scalar_product);
  tcase_add_test(tc, test_simd8_matrix_mad_matches_a_scalar_product);
  suite_add_tcase(s, tc);
  return ct_run_suite(s);
}
