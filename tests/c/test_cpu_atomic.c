// tile.atomic_rmw / tile.atomic_cas on the CPU: every kind on every element
// type against C (masked lanes untouched, results = old values), and real
// atomicity under contention: a histogram from 1000 programs, float adds to
// one counter, and a spin lock built from cas/xchg guarding a plain
// read-modify-write. Launches run on 8 threads (ZETILE_NUM_THREADS).
#include <math.h>

#include "cpu_test_util.h"

enum { B = 32 };

static int esize(zt_scalar_kind_t k) { return k == ZT_I1 ? 1 : zt_scalar_kind_bits(k) / 8; }

static double getf(zt_scalar_kind_t k, const void* p, int i) {
  switch (k) {
    case ZT_F16: return (double)((const _Float16*)p)[i];
    case ZT_BF16: {
      uint32_t u = (uint32_t)((const uint16_t*)p)[i] << 16;
      float f;
      memcpy(&f, &u, 4);
      return f;
    }
    case ZT_F32: return ((const float*)p)[i];
    default: return ((const double*)p)[i];
  }
}

static void putf(zt_scalar_kind_t k, void* p, int i, double v) {
  switch (k) {
    case ZT_F16: ((_Float16*)p)[i] = (_Float16)v; break;
    case ZT_BF16: {
      float f = (float)v;
      uint32_t u;
      memcpy(&u, &f, 4);
      ((uint16_t*)p)[i] = (uint16_t)(u >> 16);  // values below are exact in bf16
      break;
    }
    case ZT_F32: ((float*)p)[i] = (float)v; break;
    default: ((double*)p)[i] = v; break;
  }
}

static int64_t geti(zt_scalar_kind_t k, const void* p, int i) {
  switch (k) {
    case ZT_I1:
    case ZT_I8: return ((const int8_t*)p)[i];
    case ZT_I16: return ((const int16_t*)p)[i];
    case ZT_I32: return ((const int32_t*)p)[i];
    default: return ((const int64_t*)p)[i];
  }
}

static void puti(zt_scalar_kind_t k, void* p, int i, int64_t v) {
  switch (k) {
    case ZT_I1: ((int8_t*)p)[i] = (int8_t)(v & 1); break;
    case ZT_I8: ((int8_t*)p)[i] = (int8_t)v; break;
    case ZT_I16: ((int16_t*)p)[i] = (int16_t)v; break;
    case ZT_I32: ((int32_t*)p)[i] = (int32_t)v; break;
    default: ((int64_t*)p)[i] = v; break;
  }
}

static int64_t wrap(zt_scalar_kind_t k, int64_t v) {
  uint8_t tmp[8];
  puti(k, tmp, 0, v);
  return geti(k, tmp, 0);
}

static int64_t ref_int(zt_scalar_kind_t k, zt_atomic_kind_t op, int64_t a, int64_t v) {
  int bits = k == ZT_I1 ? 1 : zt_scalar_kind_bits(k);
  uint64_t m = bits == 64 ? ~0ull : (1ull << bits) - 1;
  uint64_t ua = (uint64_t)a & m, uv = (uint64_t)v & m;
  switch (op) {
    case ZT_ATOMIC_ADD: return wrap(k, (int64_t)((uint64_t)a + (uint64_t)v));
    case ZT_ATOMIC_MAX: return a > v ? a : v;
    case ZT_ATOMIC_MIN: return a < v ? a : v;
    case ZT_ATOMIC_UMAX: return ua > uv ? a : v;
    case ZT_ATOMIC_UMIN: return ua < uv ? a : v;
    case ZT_ATOMIC_AND: return a & v;
    case ZT_ATOMIC_OR: return a | v;
    case ZT_ATOMIC_XOR: return wrap(k, a ^ v);
    default: return v;
  }
}

static double ref_float(zt_atomic_kind_t op, double a, double v) {
  switch (op) {
    case ZT_ATOMIC_ADD: return a + v;
    case ZT_ATOMIC_MAX: return fmax(a, v);
    case ZT_ATOMIC_MIN: return fmin(a, v);
    default: return v;
  }
}

// rmw(P, V, O): old = atomic_op(P + r, load(V + r), mask = r % 3 != 0);
// store(O + r, old, mask).
static ct_kernel_t build_rmw(zt_scalar_kind_t k, zt_atomic_kind_t op, const char* sem) {
  zt_type_t t[3] = {zt_type_ptr(k), zt_type_ptr(k), zt_type_ptr(k)};
  zt_value_t a[3], r, v, old, mask, rem;
  int64_t n = B;
  zt_builder_t* b = ct_begin("rmw", 3, t, a);
  zt_value_t pp = ct_ptrs(b, a[0], B, &r);
  OK(zt_builder_load(b, ct_ptrs(b, a[1], B, NULL), ZT_NO_VALUE, ZT_NO_VALUE, &v));
  rem = ct_bin(b, ZT_BINARY_REMSI, r, ct_splat(b, ct_cint(b, ZT_I32, 3), 1, &n));
  OK(zt_builder_cmp(b, ZT_CMP_NE, rem, ct_splat(b, ct_cint(b, ZT_I32, 0), 1, &n), &mask));
  OK(zt_builder_atomic_rmw(b, op, pp, v, mask, sem, NULL, &old));
  OK(zt_builder_store(b, ct_ptrs(b, a[2], B, NULL), old, mask));
  return ct_build(b, "rmw");
}

static const zt_scalar_kind_t k_kinds[] = {ZT_I1,  ZT_I8,   ZT_I16, ZT_I32, ZT_I64,
                                           ZT_F16, ZT_BF16, ZT_F32, ZT_F64};
static const char* const k_sems[] = {"relaxed", "acquire", "release", "acq_rel"};

START_TEST(test_rmw_kinds) {
  zt_scalar_kind_t k = k_kinds[_i];
  bool f = zt_scalar_kind_is_float(k);
  for (int op = 0; op < ZT_ATOMIC_KIND_COUNT; ++op) {
    if (f && op != ZT_ATOMIC_ADD && op != ZT_ATOMIC_MAX && op != ZT_ATOMIC_MIN &&
        op != ZT_ATOMIC_XCHG)
      continue;
    if (k == ZT_I1 && op != ZT_ATOMIC_AND && op != ZT_ATOMIC_OR && op != ZT_ATOMIC_XOR &&
        op != ZT_ATOMIC_XCHG && op != ZT_ATOMIC_UMAX && op != ZT_ATOMIC_UMIN)
      continue;
    ct_kernel_t kern = build_rmw(k, (zt_atomic_kind_t)op, k_sems[op % 4]);
    uint8_t P[B * 8], P0[B * 8], V[B * 8], O[B * 8];
    for (int i = 0; i < B; ++i) {
      if (f) {
        putf(k, P, i, (i % 7) * 1.5 - 4);
        putf(k, V, i, 3.5 - (i % 5) * 1.25);
      } else if (k == ZT_I1) {
        puti(k, P, i, i & 1);
        puti(k, V, i, (i >> 1) & 1);
      } else {
        puti(k, P, i, wrap(k, (int64_t)(i * 37 - 500) * 1000003));
        puti(k, V, i, wrap(k, (int64_t)(i % 5 - 2) * 77777 + i));
      }
    }
    memcpy(P0, P, sizeof P);
    memset(O, 0x7b, sizeof O);
    zt_arg_t args[3] = {ct_ptr(P), ct_ptr(V), ct_ptr(O)};
    OK(ct_launch(&kern, 1, 1, 1, 3, args));
    for (int i = 0; i < B; ++i) {
      bool on = i % 3 != 0;
      if (f) {
        double p0 = getf(k, P0, i), v = getf(k, V, i);
        double want = on ? ref_float((zt_atomic_kind_t)op, p0, v) : p0;
        ck_assert_msg(getf(k, P, i) == want, "kind %d op %d lane %d: %g, want %g", k, op,
                      i, getf(k, P, i), want);
        if (on) ck_assert_msg(getf(k, O, i) == p0, "old value kind %d op %d lane %d", k,
                              op, i);
      } else {
        int64_t p0 = geti(k, P0, i), v = geti(k, V, i);
        int64_t want = on ? ref_int(k, (zt_atomic_kind_t)op, p0, v) : p0;
        ck_assert_msg(geti(k, P, i) == want, "kind %d op %d lane %d: %lld, want %lld", k,
                      op, i, (long long)geti(k, P, i), (long long)want);
        if (on) ck_assert_msg(geti(k, O, i) == p0, "old value kind %d op %d lane %d", k,
                              op, i);
      }
      if (!on) {
        uint8_t junk[8];
        memset(junk, 0x7b, 8);
        ck_assert_msg(memcmp(O + i * esize(k), junk, (size_t)esize(k)) == 0,
                      "masked lane %d stored", i);
      }
    }
    ct_release(&kern);
  }
}
END_TEST

// cas(P + r, load(C + r), load(V + r)) stores where *p == cmp (bitwise).
START_TEST(test_cas_kinds) {
  zt_scalar_kind_t k = k_kinds[_i];
  bool f = zt_scalar_kind_is_float(k);
  zt_type_t t[4] = {zt_type_ptr(k), zt_type_ptr(k), zt_type_ptr(k), zt_type_ptr(k)};
  zt_value_t a[4], cmp, val, old;
  zt_builder_t* b = ct_begin("cas", 4, t, a);
  zt_value_t pp = ct_ptrs(b, a[0], B, NULL);
  OK(zt_builder_load(b, ct_ptrs(b, a[1], B, NULL), ZT_NO_VALUE, ZT_NO_VALUE, &cmp));
  OK(zt_builder_load(b, ct_ptrs(b, a[2], B, NULL), ZT_NO_VALUE, ZT_NO_VALUE, &val));
  OK(zt_builder_atomic_cas(b, pp, cmp, val, k_sems[_i % 4], NULL, &old));
  OK(zt_builder_store(b, ct_ptrs(b, a[3], B, NULL), old, ZT_NO_VALUE));
  ct_kernel_t kern = ct_build(b, "cas");
  uint8_t P[B * 8], P0[B * 8], C[B * 8], V[B * 8], O[B * 8];
  for (int i = 0; i < B; ++i) {
    bool same = i % 2 == 0;
    if (f) {
      putf(k, P, i, i * 0.5);
      putf(k, C, i, same ? i * 0.5 : i * 0.5 + 1);
      putf(k, V, i, -i - 1.0);
    } else {
      int64_t p = k == ZT_I1 ? (i >> 1) & 1 : wrap(k, i * 1000003);
      puti(k, P, i, p);
      puti(k, C, i, same ? p : p ^ 1);
      puti(k, V, i, k == ZT_I1 ? !p : wrap(k, -i * 77));
    }
  }
  memcpy(P0, P, sizeof P);
  zt_arg_t args[4] = {ct_ptr(P), ct_ptr(C), ct_ptr(V), ct_ptr(O)};
  OK(ct_launch(&kern, 1, 1, 1, 4, args));
  int es = esize(k);
  for (int i = 0; i < B; ++i) {
    bool same = i % 2 == 0;
    ck_assert_msg(memcmp(O + i * es, P0 + i * es, (size_t)es) == 0, "old lane %d", i);
    ck_assert_msg(memcmp(P + i * es, (same ? V : P0) + i * es, (size_t)es) == 0,
                  "kind %d lane %d: cas %s", k, i, same ? "did not store" : "stored");
  }
  ct_release(&kern);
}
END_TEST

// Triton's histogram: 1000 programs of 64 elements add 1 to H[x] (16 bins,
// masked tail); old values must be 0..count-1 per bin, each exactly once.
START_TEST(test_histogram) {
  enum { BLOCK = 64, PROGRAMS = 1000, BINS = 16, N = BLOCK * PROGRAMS - 17 };
  zt_type_t t[4] = {zt_type_ptr(ZT_I32), zt_type_ptr(ZT_I32), zt_type_ptr(ZT_I32),
                    zt_type_scalar(ZT_I32)};
  zt_value_t a[4], pid, r, mask, x, old;
  int64_t n = BLOCK;
  zt_builder_t* b = ct_begin("hist", 4, t, a);
  OK(zt_builder_program_id(b, 0, &pid));
  OK(zt_builder_make_range(b, 0, BLOCK, &r));
  zt_value_t offs = ct_bin(
      b, ZT_BINARY_ADDI, r,
      ct_splat(b, ct_bin(b, ZT_BINARY_MULI, pid, ct_cint(b, ZT_I32, BLOCK)), 1, &n));
  OK(zt_builder_cmp(b, ZT_CMP_SLT, offs, ct_splat(b, a[3], 1, &n), &mask));
  zt_value_t px, ph, po;
  OK(zt_builder_addptr(b, ct_splat(b, a[0], 1, &n), offs, &px));
  OK(zt_builder_load(b, px, mask, ZT_NO_VALUE, &x));
  OK(zt_builder_addptr(b, ct_splat(b, a[1], 1, &n), x, &ph));
  OK(zt_builder_atomic_rmw(b, ZT_ATOMIC_ADD, ph, ct_splat(b, ct_cint(b, ZT_I32, 1), 1, &n),
                           mask, "relaxed", NULL, &old));
  OK(zt_builder_addptr(b, ct_splat(b, a[2], 1, &n), offs, &po));
  OK(zt_builder_store(b, po, old, mask));
  ct_kernel_t kern = ct_build(b, "hist");
  int32_t* X = malloc(N * 4);
  int32_t* O = malloc(N * 4);
  int32_t H[BINS] = {0}, want[BINS] = {0};
  for (int i = 0; i < N; ++i) {
    X[i] = (int32_t)(((uint32_t)i * 2654435761u) >> 7) % BINS;
    want[X[i]]++;
  }
  zt_arg_t args[4] = {ct_ptr(X), ct_ptr(H), ct_ptr(O), ct_int(ZT_I32, N)};
  for (int rep = 0; rep < 3; ++rep) {
    memset(H, 0, sizeof H);
    OK(ct_launch(&kern, PROGRAMS, 1, 1, 4, args));
    for (int j = 0; j < BINS; ++j) ck_assert_int_eq(H[j], want[j]);
    char* seen = calloc(N, 1);
    for (int i = 0; i < N; ++i) {
      ck_assert_int_ge(O[i], 0);
      ck_assert_int_lt(O[i], want[X[i]]);
      // Each old value of a bin occurs once: mark (bin, old) pairs.
      int64_t slot = 0;
      for (int j = 0; j < X[i]; ++j) slot += want[j];
      slot += O[i];
      ck_assert_msg(!seen[slot], "bin %d old value %d twice", X[i], O[i]);
      seen[slot] = 1;
    }
    free(seen);
  }
  free(X);
  free(O);
  ct_release(&kern);
}
END_TEST

// Scalar float atomic adds to one address from 2000 programs: exact sums
// (small integers are exact in every float kind up to 256 in bf16).
START_TEST(test_float_add_contention) {
  static const zt_scalar_kind_t kinds[4] = {ZT_F16, ZT_BF16, ZT_F32, ZT_F64};
  zt_scalar_kind_t k = kinds[_i];
  zt_type_t t[1] = {zt_type_ptr(k)};
  zt_value_t a[1], one, old, pid, c3, slot, pp;
  zt_builder_t* b = ct_begin("fadd", 1, t, a);
  OK(zt_builder_program_id(b, 0, &pid));
  OK(zt_builder_const_float(b, k, 1.0, &one));
  // Four counters, programs spread over them: each ends at programs / 4.
  OK(zt_builder_const_int(b, ZT_I32, 3, &c3));
  slot = ct_bin(b, ZT_BINARY_ANDI, pid, c3);
  OK(zt_builder_addptr(b, a[0], slot, &pp));
  OK(zt_builder_atomic_rmw(b, ZT_ATOMIC_ADD, pp, one, ZT_NO_VALUE, NULL, NULL, &old));
  ct_kernel_t kern = ct_build(b, "fadd");
  int programs = k == ZT_BF16 ? 1000 : 2000;  // bf16: 250 per counter stays exact
  uint8_t P[32] = {0};
  zt_arg_t args[1] = {ct_ptr(P)};
  OK(ct_launch(&kern, (uint32_t)programs, 1, 1, 1, args));
  for (int j = 0; j < 4; ++j)
    ck_assert_msg(getf(k, P, j) == programs / 4, "kind %d counter %d: %g", k, j,
                  getf(k, P, j));
  ct_release(&kern);
}
END_TEST

// A spin lock: while (cas(L, 0, 1, acquire) != 0) {}; C = C + 1 (plain load
// and store); xchg(L, 0, release). 3000 programs: C == 3000 only if the
// atomics are atomic and ordered.
START_TEST(test_spin_lock) {
  zt_type_t t[2] = {zt_type_ptr(ZT_I32), zt_type_ptr(ZT_I32)};
  zt_value_t a[2], before, after, res, old, busy, v, x;
  zt_builder_t* b = ct_begin("locked", 2, t, a);
  zt_value_t z = ct_cint(b, ZT_I32, 0), one = ct_cint(b, ZT_I32, 1);
  OK(zt_builder_while_begin(b, 1, &z, &before));
  OK(zt_builder_atomic_cas(b, a[0], z, one, "acquire", NULL, &old));
  OK(zt_builder_cmp(b, ZT_CMP_NE, old, z, &busy));
  OK(zt_builder_while_cond(b, busy, &after));
  OK(zt_builder_while_end(b, 1, &after, &res));
  OK(zt_builder_load(b, a[1], ZT_NO_VALUE, ZT_NO_VALUE, &v));
  OK(zt_builder_store(b, a[1], ct_bin(b, ZT_BINARY_ADDI, v, one), ZT_NO_VALUE));
  OK(zt_builder_atomic_rmw(b, ZT_ATOMIC_XCHG, a[0], z, ZT_NO_VALUE, "release", NULL, &x));
  ct_kernel_t kern = ct_build(b, "locked");
  int32_t L = 0, C = 0;
  zt_arg_t args[2] = {ct_ptr(&L), ct_ptr(&C)};
  OK(ct_launch(&kern, 3000, 1, 1, 2, args));
  ck_assert_int_eq(L, 0);
  ck_assert_int_eq(C, 3000);
  ct_release(&kern);
}
END_TEST

int main(void) {
  // More threads than cores: contention even on a small machine.
  setenv("ZETILE_NUM_THREADS", "8", 0);
  Suite* s = suite_create("cpu_atomic");
  TCase* tc = tcase_create("atomic");
  tcase_set_timeout(tc, 300);
  int nk = (int)(sizeof k_kinds / sizeof k_kinds[0]);
  tcase_add_loop_test(tc, test_rmw_kinds, 0, nk);
  tcase_add_loop_test(tc, test_cas_kinds, 0, nk);
  tcase_add_test(tc, test_histogram);
  tcase_add_loop_test(tc, test_float_add_contention, 0, 4);
  tcase_add_test(tc, test_spin_lock);
  suite_add_tcase(s, tc);
  return ct_run_suite(s);
}
