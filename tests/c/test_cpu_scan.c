// tile.scan on the CPU against C: inclusive scans along every axis of
// ranks 1..3, forward and reverse, with a non-commutative combiner
// (acc * 3 + x) that pins the argument order to Triton's (reverse = flip,
// scan, flip), sums in f32, and a two-operand running argmax.
#include "cpu_test_util.h"

enum { MAXR = 3 };

typedef enum combine_e { C_POLY, C_SUM_F32, C_ARGMAX } combine_t;

typedef struct cfg_s {
  int32_t rank;
  int64_t shape[MAXR];
  int axis;
  bool reverse;
  combine_t comb;
} cfg_t;

static int64_t numel(const cfg_t* c) {
  int64_t n = 1;
  for (int32_t d = 0; d < c->rank; ++d) n *= c->shape[d];
  return n;
}

// Dense N-D load/store through a block view of the whole tensor.
static void dense(zt_builder_t* b, const cfg_t* c, zt_value_t* sh, zt_value_t* st,
                  zt_value_t* of) {
  int64_t s = 1;
  for (int32_t d = c->rank - 1; d >= 0; --d) {
    sh[d] = ct_cint(b, ZT_I64, c->shape[d]);
    st[d] = ct_cint(b, ZT_I64, s);
    of[d] = ct_cint(b, ZT_I32, 0);
    s *= c->shape[d];
  }
}

// scan(X, Y, O, P): O (, P) = scan(X (, Y)).
static ct_kernel_t build(const cfg_t* c) {
  zt_scalar_kind_t k = c->comb == C_POLY ? ZT_I32 : ZT_F32;
  zt_type_t t[4] = {zt_type_ptr(k), zt_type_ptr(ZT_I32), zt_type_ptr(k),
                    zt_type_ptr(ZT_I32)};
  zt_value_t a[4], sh[MAXR], st[MAXR], of[MAXR], src[2], args[4], comb[2], res[2];
  zt_builder_t* b = ct_begin("scan", 4, t, a);
  dense(b, c, sh, st, of);
  int n = c->comb == C_ARGMAX ? 2 : 1;
  OK(zt_builder_block_load(b, a[0], c->rank, sh, st, of, c->shape, 0, ZT_PADDING_ZERO,
                           &src[0]));
  if (n == 2)
    OK(zt_builder_block_load(b, a[1], c->rank, sh, st, of, c->shape, 0, ZT_PADDING_ZERO,
                             &src[1]));
  OK(zt_builder_scan_begin(b, n, src, c->axis, c->reverse, args));
  if (c->comb == C_POLY) {
    comb[0] = ct_bin(b, ZT_BINARY_ADDI, ct_bin(b, ZT_BINARY_MULI, args[0], ct_cint(b, ZT_I32, 3)),
                     args[1]);
  } else if (c->comb == C_SUM_F32) {
    comb[0] = ct_bin(b, ZT_BINARY_ADDF, args[0], args[1]);
  } else {
    // (v, i) of the larger value; ties keep the running one.
    zt_value_t gt;
    OK(zt_builder_cmp(b, ZT_CMP_OGT, args[2], args[0], &gt));
    OK(zt_builder_select(b, gt, args[2], args[0], &comb[0]));
    OK(zt_builder_select(b, gt, args[3], args[1], &comb[1]));
  }
  OK(zt_builder_scan_end(b, n, comb, res));
  OK(zt_builder_block_store(b, a[2], c->rank, sh, st, of, res[0], 0));
  if (n == 2) OK(zt_builder_block_store(b, a[3], c->rank, sh, st, of, res[1], 0));
  return ct_build(b, "scan");
}

static void run(const cfg_t* c) {
  int64_t n = numel(c);
  int32_t* xi = malloc((size_t)n * 4);
  float* xf = malloc((size_t)n * 4);
  int32_t* y = malloc((size_t)n * 4);
  int32_t* oi = malloc((size_t)n * 4);
  float* of = malloc((size_t)n * 4);
  int32_t* op = malloc((size_t)n * 4);
  for (int64_t i = 0; i < n; ++i) {
    xi[i] = (int32_t)((i * 7919) % 23) - 11;
    xf[i] = (float)((i * 37) % 19) - 9.0f;
    if (c->comb == C_ARGMAX) xf[i] = (float)((i * 53) % 29);
    y[i] = (int32_t)i;
  }
  ct_kernel_t k = build(c);
  bool fl = c->comb != C_POLY;
  zt_arg_t args[4] = {ct_ptr(fl ? (void*)xf : (void*)xi), ct_ptr(y),
                      ct_ptr(fl ? (void*)of : (void*)oi), ct_ptr(op)};
  OK(ct_launch(&k, 1, 1, 1, 4, args));
  // Reference: walk every line along the axis in scan order.
  int64_t st[MAXR], s = 1;
  for (int32_t d = c->rank - 1; d >= 0; --d) {
    st[d] = s;
    s *= c->shape[d];
  }
  int64_t len = c->shape[c->axis], astr = st[c->axis];
  for (int64_t i = 0; i < n; ++i) {
    if ((i / astr) % len != 0) continue;  // i starts a line
    uint32_t acc = 0;
    float facc = 0, best = 0;
    int32_t bi = 0;
    for (int64_t j = 0; j < len; ++j) {
      int64_t pos = c->reverse ? len - 1 - j : j;
      int64_t e = i + pos * astr;
      if (c->comb == C_POLY) {
        acc = j ? acc * 3u + (uint32_t)xi[e] : (uint32_t)xi[e];
        ck_assert_msg(oi[e] == (int32_t)acc, "poly rank %d axis %d rev %d elem %lld: %d want %d",
                      c->rank, c->axis, c->reverse, (long long)e, oi[e], (int32_t)acc);
      } else if (c->comb == C_SUM_F32) {
        facc = j ? facc + xf[e] : xf[e];
        ck_assert_msg(of[e] == facc, "sum elem %lld: %g want %g", (long long)e, of[e], facc);
      } else {
        if (!j || xf[e] > best) {
          best = xf[e];
          bi = y[e];
        }
        ck_assert_msg(of[e] == best && op[e] == bi, "argmax elem %lld: (%g, %d) want (%g, %d)",
                      (long long)e, of[e], op[e], best, bi);
      }
    }
  }
  ct_release(&k);
  free(xi);
  free(xf);
  free(y);
  free(oi);
  free(of);
  free(op);
}

// Every axis of ranks 1..3, both directions, each combiner.
START_TEST(test_scan) {
  static const cfg_t shapes[] = {
      {.rank = 1, .shape = {64}},     {.rank = 1, .shape = {1}},
      {.rank = 2, .shape = {8, 16}},  {.rank = 2, .shape = {1, 4}},
      {.rank = 3, .shape = {4, 8, 2}},
  };
  cfg_t c = shapes[_i];
  for (int comb = 0; comb < 3; ++comb)
    for (int axis = 0; axis < c.rank; ++axis)
      for (int rev = 0; rev < 2; ++rev) {
        c.axis = axis;
        c.reverse = rev;
        c.comb = (combine_t)comb;
        run(&c);
      }
}
END_TEST

int main(void) {
  Suite* s = suite_create("cpu_scan");
  TCase* tc = tcase_create("scan");
  tcase_set_timeout(tc, 300);
  tcase_add_loop_test(tc, test_scan, 0, 5);
  suite_add_tcase(s, tc);
  return ct_run_suite(s);
}
