// tile.block_load / tile.block_store on the CPU against a C reference: ranks
// 1..4, every element kind, every boundary_check subset of a 2-D view, zero
// and NaN padding, blocks hanging over every edge (and wholly outside). The
// viewed tensor sits flush against a PROT_NONE page (before it, then after
// it), so any access outside the checked bounds faults.
#include <math.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cpu_test_util.h"

enum { MAXR = ZT_MAX_RANK };

typedef struct cfg_s {
  zt_scalar_kind_t kind;
  int32_t rank;
  int64_t shape[MAXR];   // of the viewed tensor
  int64_t block[MAXR];
  bool transposed;       // strides in reverse (column-major) order
  uint32_t check;
  bool nan;
} cfg_t;

static int esize(zt_scalar_kind_t k) {
  return k == ZT_I1 ? 1 : zt_scalar_kind_bits(k) / 8;
}

static bool is_float(zt_scalar_kind_t k) { return zt_scalar_kind_is_float(k); }

static bool is_nan_bits(zt_scalar_kind_t k, const uint8_t* p) {
  uint16_t h;
  memcpy(&h, p, 2);
  switch (k) {
    case ZT_F16: return (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
    case ZT_BF16: return (h & 0x7f80) == 0x7f80 && (h & 0x7f);
    case ZT_F32: {
      float f;
      memcpy(&f, p, 4);
      return isnan(f);
    }
    case ZT_F64: {
      double d;
      memcpy(&d, p, 8);
      return isnan(d);
    }
    default: return false;
  }
}

// A value of kind k for element i, as bytes (finite floats, 0/1 booleans).
static void fill_elem(zt_scalar_kind_t k, int64_t i, uint8_t* p) {
  double v = (double)(i % 97) * 0.5 - 20.0;
  switch (k) {
    case ZT_I1: p[0] = (uint8_t)((i * 7 + 3) % 3 == 0); break;
    case ZT_F16: {
      _Float16 h = (_Float16)v;
      memcpy(p, &h, 2);
      break;
    }
    case ZT_BF16: {
      float f = (float)v;
      uint32_t u;
      memcpy(&u, &f, 4);
      uint16_t b = (uint16_t)(u >> 16);  // exact: v has few mantissa bits
      memcpy(p, &b, 2);
      break;
    }
    case ZT_F32: {
      float f = (float)v;
      memcpy(p, &f, 4);
      break;
    }
    case ZT_F64: memcpy(p, &v, 8); break;
    default: {
      uint64_t u = (uint64_t)(i + 1) * 0x9e3779b97f4a7c15ull;
      memcpy(p, &u, (size_t)esize(k));
    }
  }
}

// Memory of `bytes` ending (at_end) or starting at a page boundary next to
// a PROT_NONE page. Returns the data pointer; *map/*map_len to unmap.
static uint8_t* guarded(size_t bytes, bool at_end, void** map, size_t* map_len) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t data_pages = (bytes + page - 1) / page;
  *map_len = (data_pages + 2) * page;
  uint8_t* m = mmap(NULL, *map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                    -1, 0);
  ck_assert_ptr_ne(m, MAP_FAILED);
  ck_assert_int_eq(mprotect(m, page, PROT_NONE), 0);
  ck_assert_int_eq(mprotect(m + (data_pages + 1) * page, page, PROT_NONE), 0);
  *map = m;
  return at_end ? m + (data_pages + 1) * page - bytes : m + page;
}

static void strides_of(const cfg_t* c, int64_t* st) {
  int64_t s = 1;
  if (c->transposed) {
    for (int32_t d = 0; d < c->rank; ++d) {
      st[d] = s;
      s *= c->shape[d];
    }
  } else {
    for (int32_t d = c->rank - 1; d >= 0; --d) {
      st[d] = s;
      s *= c->shape[d];
    }
  }
}

static int64_t numel(int32_t rank, const int64_t* shape) {
  int64_t n = 1;
  for (int32_t d = 0; d < rank; ++d) n *= shape[d];
  return n;
}

// Kernel arguments after the two pointers: shape[r], strides[r] (i64),
// offsets[r] (i32).
static void view_args(zt_builder_t* b, const zt_value_t* a, int32_t r, zt_value_t* shape,
                      zt_value_t* strides, zt_value_t* offs) {
  for (int32_t d = 0; d < r; ++d) {
    shape[d] = a[2 + d];
    strides[d] = a[2 + r + d];
    offs[d] = a[2 + 2 * r + d];
  }
  (void)b;
}

// The dense view of a block (no checks): shape = block, row-major, at 0.
static void dense_view(zt_builder_t* b, const cfg_t* c, zt_value_t* shape,
                       zt_value_t* strides, zt_value_t* offs) {
  int64_t s = 1;
  for (int32_t d = c->rank - 1; d >= 0; --d) {
    shape[d] = ct_cint(b, ZT_I64, c->block[d]);
    strides[d] = ct_cint(b, ZT_I64, s);
    offs[d] = ct_cint(b, ZT_I32, 0);
    s *= c->block[d];
  }
}

static void signature(const cfg_t* c, zt_type_t* t) {
  t[0] = zt_type_ptr(c->kind);
  t[1] = zt_type_ptr(c->kind);
  for (int32_t d = 0; d < c->rank; ++d) {
    t[2 + d] = zt_type_scalar(ZT_I64);
    t[2 + c->rank + d] = zt_type_scalar(ZT_I64);
    t[2 + 2 * c->rank + d] = zt_type_scalar(ZT_I32);
  }
}

// bload(X, O, view...): O (dense block) = block_load(X view, check, padding).
static ct_kernel_t build_load(const cfg_t* c) {
  zt_type_t t[2 + 3 * MAXR];
  zt_value_t a[2 + 3 * MAXR], sh[MAXR], st[MAXR], of[MAXR], dsh[MAXR], dst[MAXR],
      dof[MAXR], v;
  signature(c, t);
  zt_builder_t* b = ct_begin("bload", 2 + 3 * c->rank, t, a);
  view_args(b, a, c->rank, sh, st, of);
  OK(zt_builder_block_load(b, a[0], c->rank, sh, st, of, c->block, c->check,
                           c->nan ? ZT_PADDING_NAN : ZT_PADDING_ZERO, &v));
  dense_view(b, c, dsh, dst, dof);
  OK(zt_builder_block_store(b, a[1], c->rank, dsh, dst, dof, v, 0));
  return ct_build(b, "bload");
}

// bstore(I, D, view...): block_store(D view, check) of the dense block I.
static ct_kernel_t build_store(const cfg_t* c) {
  zt_type_t t[2 + 3 * MAXR];
  zt_value_t a[2 + 3 * MAXR], sh[MAXR], st[MAXR], of[MAXR], dsh[MAXR], dst[MAXR],
      dof[MAXR], v;
  signature(c, t);
  zt_builder_t* b = ct_begin("bstore", 2 + 3 * c->rank, t, a);
  view_args(b, a, c->rank, sh, st, of);
  dense_view(b, c, dsh, dst, dof);
  OK(zt_builder_block_load(b, a[0], c->rank, dsh, dst, dof, c->block, 0, ZT_PADDING_ZERO,
                           &v));
  OK(zt_builder_block_store(b, a[1], c->rank, sh, st, of, v, c->check));
  return ct_build(b, "bstore");
}

static void make_args(const cfg_t* c, const void* p0, const void* p1, const int64_t* st,
                      const int32_t* offs, zt_arg_t* args) {
  args[0] = ct_ptr(p0);
  args[1] = ct_ptr(p1);
  for (int32_t d = 0; d < c->rank; ++d) {
    args[2 + d] = ct_int(ZT_I64, c->shape[d]);
    args[2 + c->rank + d] = ct_int(ZT_I64, st[d]);
    args[2 + 2 * c->rank + d] = ct_int(ZT_I32, offs[d]);
  }
}

// Block element i (linear) -> its position in the view, and whether every
// checked dim is in bounds. Unchecked dims are in bounds by construction.
static bool position(const cfg_t* c, int64_t i, const int32_t* offs, const int64_t* st,
                     int64_t* lin) {
  bool inb = true;
  *lin = 0;
  for (int32_t d = c->rank - 1; d >= 0; --d) {
    int64_t id = i % c->block[d];
    i /= c->block[d];
    int64_t pos = offs[d] + id;
    if ((c->check >> d) & 1) inb = inb && pos >= 0 && pos < c->shape[d];
    *lin += pos * st[d];
  }
  return inb;
}

// Offsets tried per dim: flush at both ends, over both edges, inside, and
// wholly outside (checked dims only).
static int offsets_for(const cfg_t* c, int32_t d, int32_t* out) {
  int64_t s = c->shape[d], bl = c->block[d];
  int n = 0;
  out[n++] = 0;
  out[n++] = (int32_t)(s - bl);
  if ((c->check >> d) & 1) {
    out[n++] = (int32_t)-1;
    out[n++] = (int32_t)(s - bl + 1);
    out[n++] = (int32_t)(-bl);
    out[n++] = (int32_t)(s + 3);
  }
  return n;
}

static void run_cfg(const cfg_t* c) {
  int es = esize(c->kind);
  int64_t st[MAXR];
  strides_of(c, st);
  int64_t n = numel(c->rank, c->shape), bn = numel(c->rank, c->block);
  size_t bytes = (size_t)(n * es);
  uint8_t* src = malloc(bytes);
  for (int64_t i = 0; i < n; ++i) fill_elem(c->kind, i, src + i * es);
  uint8_t* blk = malloc((size_t)(bn * es));
  uint8_t* out = malloc((size_t)(bn * es));
  for (int64_t i = 0; i < bn; ++i) fill_elem(c->kind, i + 1000, blk + i * es);
  ct_kernel_t kl = build_load(c), ks = build_store(c);
  int32_t choices[MAXR][8], counts[MAXR];
  int64_t combos = 1;
  for (int32_t d = 0; d < c->rank; ++d) {
    counts[d] = offsets_for(c, d, choices[d]);
    combos *= counts[d];
  }
  for (int at_end = 0; at_end < 2; ++at_end) {
    void* map;
    size_t map_len;
    uint8_t* x = guarded(bytes, at_end, &map, &map_len);
    for (int64_t combo = 0; combo < combos; ++combo) {
      int32_t offs[MAXR];
      int64_t r = combo;
      for (int32_t d = 0; d < c->rank; ++d) {
        offs[d] = choices[d][r % counts[d]];
        r /= counts[d];
      }
      zt_arg_t args[2 + 3 * MAXR];
      // Load.
      memcpy(x, src, bytes);
      memset(out, 0xa5, (size_t)(bn * es));
      make_args(c, x, out, st, offs, args);
      OK(ct_launch(&kl, 1, 1, 1, 2 + 3 * c->rank, args));
      for (int64_t i = 0; i < bn; ++i) {
        int64_t lin;
        bool inb = position(c, i, offs, st, &lin);
        const uint8_t* got = out + i * es;
        if (inb) {
          ck_assert_msg(memcmp(got, src + lin * es, (size_t)es) == 0,
                        "load kind %d rank %d check %u combo %lld elem %lld", c->kind,
                        c->rank, c->check, (long long)combo, (long long)i);
        } else if (c->nan) {
          ck_assert_msg(is_nan_bits(c->kind, got), "NaN padding at elem %lld",
                        (long long)i);
        } else {
          static const uint8_t zero[8];
          ck_assert_msg(memcmp(got, zero, (size_t)es) == 0,
                        "zero padding: kind %d rank %d combo %lld elem %lld", c->kind,
                        c->rank, (long long)combo, (long long)i);
        }
      }
      // Store: in-bounds elements written, everything else untouched.
      memset(x, 0x5a, bytes);
      make_args(c, blk, x, st, offs, args);
      OK(ct_launch(&ks, 1, 1, 1, 2 + 3 * c->rank, args));
      uint8_t* want = malloc(bytes);
      memset(want, 0x5a, bytes);
      for (int64_t i = 0; i < bn; ++i) {
        int64_t lin;
        if (position(c, i, offs, st, &lin))
          memcpy(want + lin * es, blk + i * es, (size_t)es);
      }
      for (int64_t i = 0; i < n; ++i)
        ck_assert_msg(memcmp(x + i * es, want + i * es, (size_t)es) == 0,
                      "store kind %d rank %d check %u combo %lld: element %lld", c->kind,
                      c->rank, c->check, (long long)combo, (long long)i);
      free(want);
    }
    munmap(map, map_len);
  }
  ct_release(&kl);
  ct_release(&ks);
  free(src);
  free(blk);
  free(out);
}

static const zt_scalar_kind_t k_kinds[] = {ZT_I1,  ZT_I8,   ZT_I16, ZT_I32,
                                           ZT_I64, ZT_F16,  ZT_BF16, ZT_F32, ZT_F64};

// Every kind through a 2-D view, both boundary dims checked, zero padding
// (and NaN padding for floats).
START_TEST(test_kinds_2d) {
  zt_scalar_kind_t k = k_kinds[_i];
  for (int nan = 0; nan <= (is_float(k) ? 1 : 0); ++nan) {
    cfg_t c = {.kind = k, .rank = 2, .shape = {7, 13}, .block = {4, 8}, .check = 3,
               .nan = nan};
    run_cfg(&c);
  }
}
END_TEST

// Every boundary_check subset of a 2-D view, row- and column-major strides.
START_TEST(test_masks_2d) {
  for (uint32_t check = 0; check < 4; ++check)
    for (int tr = 0; tr < 2; ++tr) {
      cfg_t c = {.kind = ZT_F32, .rank = 2, .shape = {9, 6}, .block = {8, 4},
                 .transposed = tr, .check = check};
      run_cfg(&c);
    }
}
END_TEST

// Ranks 1, 3 and 4, all dims checked, and one partial check per rank.
START_TEST(test_ranks) {
  cfg_t cs[] = {
      {.kind = ZT_I16, .rank = 1, .shape = {37}, .block = {16}, .check = 1},
      {.kind = ZT_F64, .rank = 1, .shape = {5}, .block = {8}, .check = 1, .nan = true},
      {.kind = ZT_F32, .rank = 3, .shape = {3, 5, 6}, .block = {2, 4, 4}, .check = 7},
      {.kind = ZT_I8, .rank = 3, .shape = {3, 5, 6}, .block = {2, 4, 4}, .check = 5,
       .transposed = true},
      {.kind = ZT_BF16, .rank = 4, .shape = {3, 2, 5, 6}, .block = {2, 2, 4, 4},
       .check = 15, .nan = true},
      {.kind = ZT_I32, .rank = 4, .shape = {3, 2, 5, 6}, .block = {2, 2, 4, 4},
       .check = 10},
  };
  run_cfg(&cs[_i]);
}
END_TEST

int main(void) {
  Suite* s = suite_create("cpu_block");
  TCase* tc = tcase_create("block");
  tcase_set_timeout(tc, 300);
  tcase_add_loop_test(tc, test_kinds_2d, 0, (int)(sizeof k_kinds / sizeof k_kinds[0]));
  tcase_add_test(tc, test_masks_2d);
  tcase_add_loop_test(tc, test_ranks, 0, 6);
  suite_add_tcase(s, tc);
  return ct_run_suite(s);
}
