// The stdlib templates from C, without Python: the specializations exported
// to stdlib-kernels/prebuilt/ (python -m zetile.ops.export; NAME.tile is the
// tile IR, NAME.args the run-time arguments in launch order) are compiled
// with zt_compile_cached, launched on the CPU device and checked against
// plain C references. Skips (loudly) when libzetile_compiler is not built.
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zetile/zetile.h"

#define OK(expr)                                                                   \
  do {                                                                             \
    zt_status_t s_ = (expr);                                                       \
    ck_assert_msg(s_ == NULL, "%s: %s", #expr, zt_status_message(s_));             \
  } while (0)

#define MAX_ARGS 64

static char dir[256];

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/zt-stdlib-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  setenv("ZETILE_CACHE_DIR", dir, 1);
}

static void teardown(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static bool compiler_missing(const char* test) {
  zt_status_t s = zt_compiler_available();
  if (!s) return false;
  fprintf(stderr, "SKIP %s: %s\n", test, zt_status_message(s));
  zt_status_free(s);
  return true;
}

static char* read_file(const char* name, const char* ext, size_t* size) {
  char path[512];
  snprintf(path, sizeof path, "%s/stdlib-kernels/prebuilt/%s.%s", ZT_SOURCE_DIR, name, ext);
  FILE* f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* buf = malloc((size_t)n + 1);
  ck_assert_int_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
  buf[n] = 0;
  fclose(f);
  if (size) *size = (size_t)n;
  return buf;
}

// One exported launch: its arguments by name, grid from the header line.
typedef struct {
  int n;
  char names[MAX_ARGS][32];
  zt_arg_t args[MAX_ARGS];
  uint32_t grid[3];
} launch_t;

static void read_args(const char* name, launch_t* l) {
  char* text = read_file(name, "args", NULL);
  memset(l, 0, sizeof *l);
  l->grid[2] = 1;
  char* save = NULL;
  for (char* line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    if (line[0] == '#') {
      char* g = strstr(line, "grid ");
      ck_assert_ptr_nonnull(g);
      ck_assert_int_eq(sscanf(g, "grid %u %u", &l->grid[0], &l->grid[1]), 2);
      continue;
    }
    char kind[16];
    double value = 0;
    ck_assert_int_lt(l->n, MAX_ARGS);
    ck_assert_int_eq(sscanf(line, "%31s %15s %lf", l->names[l->n], kind, &value), 3);
    zt_arg_t* a = &l->args[l->n++];
    if (!strcmp(kind, "ptr")) {
      a->kind = ZT_PTR;
    } else if (!strcmp(kind, "int32")) {
      a->kind = ZT_I32;
      a->value.i = (int64_t)value;
    } else if (!strcmp(kind, "int64")) {
      a->kind = ZT_I64;
      a->value.i = (int64_t)value;
    } else if (!strcmp(kind, "fp32")) {
      a->kind = ZT_F32;
      a->value.f = value;
    } else {
      ck_abort_msg("%s: unknown argument kind %s", name, kind);
    }
  }
  free(text);
}

static zt_arg_t* arg(launch_t* l, const char* name) {
  for (int i = 0; i < l->n; ++i)
    if (!strcmp(l->names[i], name)) return &l->args[i];
  ck_abort_msg("argument %s not in the manifest", name);
  return NULL;
}

static int64_t iarg(launch_t* l, const char* name) { return arg(l, name)->value.i; }

static zt_executable_t* build(zt_device_t* d, const char* name) {
  size_t size = 0;
  char* ir = read_file(name, "tile", &size);
  zt_compile_options_t o = {.target = "cpu"};
  zt_artifact_t* a = NULL;
  bool hit = false;
  OK(zt_compile_cached(ir, size, &o, &a, &hit));
  zt_executable_t* e = NULL;
  OK(zt_executable_create(d, a, &e));
  zt_artifact_release(a);
  free(ir);
  return e;
}

static float frand(unsigned* s) {
  *s = *s * 1664525u + 1013904223u;
  return (float)((*s >> 8) & 0xFFFF) / 32768.0f - 1.0f;
}

static zt_buffer_t* upload(zt_device_t* d, const float* h, size_t n) {
  zt_buffer_t* b = NULL;
  OK(zt_buffer_alloc(d, n * sizeof(float), &b));
  if (h) OK(zt_buffer_write(b, 0, h, n * sizeof(float)));
  return b;
}

START_TEST(test_gemm_f32) {
  if (compiler_missing(__func__)) return;
  launch_t l;
  read_args("gemm_f32", &l);
  int64_t M = iarg(&l, "M"), N = iarg(&l, "N"), K = iarg(&l, "K");
  ck_assert_int_eq(iarg(&l, "s_am"), K);  // row-major A, B, C as exported
  ck_assert_int_eq(iarg(&l, "s_bk"), N);
  float* a = malloc(sizeof(float) * (size_t)(M * K));
  float* b = malloc(sizeof(float) * (size_t)(K * N));
  float* c = malloc(sizeof(float) * (size_t)(M * N));
  unsigned seed = 1;
  for (int64_t i = 0; i < M * K; ++i) a[i] = frand(&seed);
  for (int64_t i = 0; i < K * N; ++i) b[i] = frand(&seed);
  zt_device_t* d = NULL;
  OK(zt_device_open("cpu", &d));
  zt_executable_t* e = build(d, "gemm_f32");
  zt_buffer_t* ba = upload(d, a, (size_t)(M * K));
  zt_buffer_t* bb = upload(d, b, (size_t)(K * N));
  zt_buffer_t* bc = upload(d, NULL, (size_t)(M * N));
  arg(&l, "A")->value.ptr = zt_buffer_address(ba);
  arg(&l, "B")->value.ptr = zt_buffer_address(bb);
  arg(&l, "OUT")->value.ptr = zt_buffer_address(bc);
  OK(zt_launch(e, l.grid, l.n, l.args));
  OK(zt_device_synchronize(d));
  OK(zt_buffer_read(bc, 0, c, sizeof(float) * (size_t)(M * N)));
  double worst = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double ref = 0;
      for (int64_t k = 0; k < K; ++k) ref += (double)a[i * K + k] * b[k * N + j];
      worst = fmax(worst, fabs(ref - c[i * N + j]));
    }
  ck_assert_msg(worst < 1e-4, "gemm: max abs error %g", worst);
  zt_buffer_release(ba);
  zt_buffer_release(bb);
  zt_buffer_release(bc);
  zt_executable_release(e);
  zt_device_release(d);
  free(a);
  free(b);
  free(c);
}
END_TEST

START_TEST(test_sdpa_f32_causal) {
  if (compiler_missing(__func__)) return;
  launch_t l;
  read_args("sdpa_f32_causal", &l);
  int64_t H = iarg(&l, "H"), L = iarg(&l, "Lq"), S = iarg(&l, "Lk"), E = iarg(&l, "D");
  int64_t B = (int64_t)l.grid[1] / H;
  float scale = (float)arg(&l, "sm_scale")->value.f;
  size_t nq = (size_t)(B * H * L * E), nk = (size_t)(B * H * S * E);
  float* q = malloc(sizeof(float) * nq);
  float* k = malloc(sizeof(float) * nk);
  float* v = malloc(sizeof(float) * nk);
  float* o = malloc(sizeof(float) * nq);
  float* lse = malloc(sizeof(float) * (size_t)(B * H * L));
  unsigned seed = 7;
  for (size_t i = 0; i < nq; ++i) q[i] = frand(&seed);
  for (size_t i = 0; i < nk; ++i) k[i] = frand(&seed);
  for (size_t i = 0; i < nk; ++i) v[i] = frand(&seed);
  zt_device_t* d = NULL;
  OK(zt_device_open("cpu", &d));
  zt_executable_t* e = build(d, "sdpa_f32_causal");
  zt_buffer_t *bq = upload(d, q, nq), *bk = upload(d, k, nk), *bv = upload(d, v, nk);
  zt_buffer_t *bo = upload(d, NULL, nq), *bl = upload(d, NULL, (size_t)(B * H * L));
  arg(&l, "Q")->value.ptr = zt_buffer_address(bq);
  arg(&l, "K")->value.ptr = zt_buffer_address(bk);
  arg(&l, "V")->value.ptr = zt_buffer_address(bv);
  arg(&l, "O")->value.ptr = zt_buffer_address(bo);
  arg(&l, "LSE")->value.ptr = zt_buffer_address(bl);
  OK(zt_launch(e, l.grid, l.n, l.args));
  OK(zt_device_synchronize(d));
  OK(zt_buffer_read(bo, 0, o, sizeof(float) * nq));
  OK(zt_buffer_read(bl, 0, lse, sizeof(float) * (size_t)(B * H * L)));
  // Reference: softmax(q k^T * scale) v with torch's top-left causal mask;
  // the lse is in natural log (the export recorded lse_scale = ln 2, as
  // zetile.ops' SDPA passes it).
  double worst = 0, worst_lse = 0;
  double* p = malloc(sizeof(double) * (size_t)S);
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t i = 0; i < L; ++i) {
      const float* qi = q + (bh * L + i) * E;
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j <= i && j < S; ++j) {
        double s = 0;
        for (int64_t x = 0; x < E; ++x) s += (double)qi[x] * k[(bh * S + j) * E + x];
        p[j] = s * scale;
        mx = fmax(mx, p[j]);
      }
      for (int64_t j = 0; j <= i && j < S; ++j) sum += exp(p[j] - mx);
      for (int64_t x = 0; x < E; ++x) {
        double acc = 0;
        for (int64_t j = 0; j <= i && j < S; ++j) acc += exp(p[j] - mx) / sum * v[(bh * S + j) * E + x];
        worst = fmax(worst, fabs(acc - o[(bh * L + i) * E + x]));
      }
      double ref_lse = mx + log(sum);
      worst_lse = fmax(worst_lse, fabs(ref_lse - lse[bh * L + i]));
    }
  ck_assert_msg(worst < 1e-4, "sdpa: max abs error %g", worst);
  ck_assert_msg(worst_lse < 1e-4, "sdpa: lse max abs error %g", worst_lse);
  free(p);
  zt_buffer_release(bq);
  zt_buffer_release(bk);
  zt_buffer_release(bv);
  zt_buffer_release(bo);
  zt_buffer_release(bl);
  zt_executable_release(e);
  zt_device_release(d);
  free(q);
  free(k);
  free(v);
  free(o);
  free(lse);
}
END_TEST

int main(void) {
  Suite* s = suite_create("stdlib_templates");
  TCase* tc = tcase_create("cpu");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_gemm_f32);
  tcase_add_test(tc, test_sdpa_f32_causal);
  suite_add_tcase(s, tc);
  SRunner* r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? 1 : 0;
}
