// zt_compile from many threads at once (issue 22): compiles of different
// kernels run in parallel (one MLIR context each), and each gives what a
// compile on one thread gives: the same SPIR-V for pvc, the same LLVM text
// for the CPU target, and a failing compile its own diagnostic. Skips
// (loudly) when libzetile_compiler is not built.
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_run.h"
#include "zetile/zetile.h"

#define OK(expr)                                                                   \
  do {                                                                             \
    zt_status_t s_ = (expr);                                                       \
    ck_assert_msg(s_ == NULL, "%s: %s", #expr, zt_status_message(s_));             \
  } while (0)

#define TRY(expr)                  \
  do {                             \
    zt_status_t t_ = (expr);       \
    if (t_) {                      \
      zt_builder_release(b);       \
      return t_;                   \
    }                              \
  } while (0)

#define NJOBS 8

// out[i] = x[i] * k for i < BLOCK: a different kernel text for each (block, k).
static zt_status_t scale_kernel(int64_t block, double k, char** out_text) {
  zt_builder_t* b = NULL;
  ZT_RETURN_IF_ERROR(zt_builder_create(&b));
  zt_type_t types[2] = {zt_type_ptr(ZT_F32), zt_type_ptr(ZT_F32)};
  zt_value_t a[2], r, px, x, c, y, pz;
  int64_t shape[1] = {block};
  TRY(zt_builder_begin_kernel(b, "scale_kernel", 2, types, NULL, a));
  TRY(zt_builder_make_range(b, 0, (int32_t)block, &r));
  TRY(zt_builder_splat(b, a[0], 1, shape, &px));
  TRY(zt_builder_addptr(b, px, r, &px));
  TRY(zt_builder_load(b, px, ZT_NO_VALUE, ZT_NO_VALUE, &x));
  TRY(zt_builder_const_float(b, ZT_F32, k, &c));
  TRY(zt_builder_splat(b, c, 1, shape, &c));
  TRY(zt_builder_binary(b, ZT_BINARY_MULF, x, c, &y));
  TRY(zt_builder_splat(b, a[1], 1, shape, &pz));
  TRY(zt_builder_addptr(b, pz, r, &pz));
  TRY(zt_builder_store(b, pz, y, ZT_NO_VALUE));
  TRY(zt_builder_end_kernel(b));
  const char* text = NULL;
  size_t size = 0;
  TRY(zt_builder_module_text(b, &text, &size));
  *out_text = strndup(text, size);
  zt_builder_release(b);
  return NULL;
}

typedef struct {
  const char* text;
  const char* target;
  const char* section;
  zt_artifact_t* artifact;  // out
  char message[512];        // out: the status message of a failing compile
  pthread_barrier_t* start;
} job_t;

static void* run_job(void* p) {
  job_t* j = p;
  pthread_barrier_wait(j->start);
  zt_compile_options_t o = {.target = j->target};
  zt_status_t s = zt_compile(j->text, strlen(j->text), &o, &j->artifact);
  if (s) snprintf(j->message, sizeof j->message, "%s", zt_status_message(s));
  zt_status_free(s);
  return NULL;
}

static bool same_section(const zt_artifact_t* a, const zt_artifact_t* b, const char* name) {
  const void *da, *db;
  size_t na, nb;
  if (zt_artifact_get(a, name, &da, &na) || zt_artifact_get(b, name, &db, &nb)) return false;
  return na == nb && na > 0 && memcmp(da, db, na) == 0;
}

static bool compiler_missing(void) {
  zt_status_t s = zt_compiler_available();
  if (!s) return false;
  fprintf(stderr, "SKIP test_compile_threads: %s\n", zt_status_message(s));
  zt_status_free(s);
  return true;
}

START_TEST(threads_give_the_sequential_bytes) {
  if (compiler_missing()) return;
  char* texts[NJOBS];
  job_t jobs[NJOBS];
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, NJOBS);
  for (int i = 0; i < NJOBS; ++i) {
    OK(scale_kernel(16 << (i % 4), 1.5 + i, &texts[i]));
    jobs[i] = (job_t){.text = texts[i], .target = i % 2 ? "cpu" : "pvc",
                      .section = i % 2 ? "llvm" : "spirv", .start = &start};
  }
  zt_artifact_t* seq[NJOBS];
  for (int i = 0; i < NJOBS; ++i) {
    zt_compile_options_t o = {.target = jobs[i].target};
    OK(zt_compile(texts[i], strlen(texts[i]), &o, &seq[i]));
  }
  pthread_t th[NJOBS];
  for (int i = 0; i < NJOBS; ++i) ck_assert_int_eq(pthread_create(&th[i], NULL, run_job, &jobs[i]), 0);
  for (int i = 0; i < NJOBS; ++i) pthread_join(th[i], NULL);
  for (int i = 0; i < NJOBS; ++i) {
    ck_assert_msg(jobs[i].artifact, "job %d (%s): %s", i, jobs[i].target, jobs[i].message);
    ck_assert_msg(same_section(seq[i], jobs[i].artifact, jobs[i].section),
                  "job %d (%s): the %s section differs from the sequential compile's", i,
                  jobs[i].target, jobs[i].section);
    zt_artifact_release(seq[i]);
    zt_artifact_release(jobs[i].artifact);
    free(texts[i]);
  }
  pthread_barrier_destroy(&start);
}
END_TEST

START_TEST(failing_compiles_keep_their_own_diagnostics) {
  if (compiler_missing()) return;
  char texts[NJOBS][256];
  job_t jobs[NJOBS];
  pthread_barrier_t start;
  pthread_barrier_init(&start, NULL, NJOBS);
  for (int round = 0; round < 20; ++round) {
    for (int i = 0; i < NJOBS; ++i) {
      snprintf(texts[i], sizeof texts[i],
               "module {\n  func.func @k() {\n    func.call @missing_%d() : () -> ()\n"
               "    return\n  }\n}\n", round * 100 + i);
      jobs[i] = (job_t){.text = texts[i], .target = i % 2 ? "cpu" : "pvc", .start = &start};
    }
    pthread_t th[NJOBS];
    for (int i = 0; i < NJOBS; ++i) ck_assert_int_eq(pthread_create(&th[i], NULL, run_job, &jobs[i]), 0);
    for (int i = 0; i < NJOBS; ++i) pthread_join(th[i], NULL);
    for (int i = 0; i < NJOBS; ++i) {
      ck_assert_ptr_null(jobs[i].artifact);
      char want[64];
      snprintf(want, sizeof want, "'missing_%d' does not reference", round * 100 + i);
      ck_assert_msg(strstr(jobs[i].message, want), "job %d: %s", i, jobs[i].message);
      // No other job's symbol in this message.
      const char* m = jobs[i].message;
      for (const char* p = m; (p = strstr(p, "missing_")); p += 8)
        ck_assert_msg(atoi(p + 8) == round * 100 + i, "job %d: %s", i, m);
    }
  }
  pthread_barrier_destroy(&start);
}
END_TEST

int main(void) {
  Suite* s = suite_create("compile_threads");
  TCase* tc = tcase_create("core");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, threads_give_the_sequential_bytes);
  tcase_add_test(tc, failing_compiles_keep_their_own_diagnostics);
  suite_add_tcase(s, tc);
  return ct_run_suite(s);
}
