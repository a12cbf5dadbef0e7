// What a compile leaves for the next one in the same MLIR context
// (jit/compiler_context_cache.c, issue 22): a pass manager kept for a
// pipeline text comes back for that text only, in that context only, on the
// thread that bound it, and runs again on a new module; kept objects are
// found by key and released with the cache.
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <mlir-c/Dialect/Arith.h>
#include <mlir-c/Dialect/Func.h>
#include <mlir-c/IR.h>
#include <mlir-c/Pass.h>
#include <mlir-c/Transforms.h>

#include "check_run.h"
#include "compiler_internal.h"
#include "lowering.h"

static const char kCanon[] = "builtin.module(canonicalize)";
static const char kCse[] = "builtin.module(cse)";
// Folds to a constant: a pass manager that runs does something visible.
static const char kModule[] =
    "func.func @f() -> i32 {\n"
    "  %a = arith.constant 2 : i32\n"
    "  %b = arith.constant 3 : i32\n"
    "  %c = arith.addi %a, %b : i32\n"
    "  return %c : i32\n"
    "}\n";

static MlirContext new_context(void) {
  MlirContext ctx = mlirContextCreate();
  mlirContextSetAllowUnregisteredDialects(ctx, false);
  mlirDialectHandleLoadDialect(mlirGetDialectHandle__func__(), ctx);
  mlirDialectHandleLoadDialect(mlirGetDialectHandle__arith__(), ctx);
  return ctx;
}

static MlirPassManager parsed(MlirContext ctx, const char* pipeline) {
  MlirPassManager pm = mlirPassManagerCreate(ctx);
  MlirLogicalResult r = mlirParsePassPipeline(mlirPassManagerGetAsOpPassManager(pm),
                                              mlirStringRefCreateFromCString(pipeline), NULL,
                                              NULL);
  ck_assert(mlirLogicalResultIsSuccess(r));
  return pm;
}

// Runs pm on a fresh copy of kModule; returns how many arith ops are left.
static int run_and_count(MlirContext ctx, MlirPassManager pm) {
  MlirModule m = mlirModuleCreateParse(ctx, mlirStringRefCreateFromCString(kModule));
  ck_assert(!mlirModuleIsNull(m));
  ck_assert(mlirLogicalResultIsSuccess(mlirPassManagerRunOnOp(pm, mlirModuleGetOperation(m))));
  MlirOperation f = mlirBlockGetFirstOperation(mlirModuleGetBody(m));
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(f, 0));
  int n = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    MlirStringRef name = mlirIdentifierStr(mlirOperationGetName(op));
    if (name.length > 6 && strncmp(name.data, "arith.", 6) == 0) ++n;
  }
  mlirModuleDestroy(m);
  return n;
}

static void setup(void) { mlirRegisterTransformsPasses(); }

START_TEST(nothing_is_kept_without_a_bound_cache) {
  MlirContext ctx = new_context();
  MlirPassManager pm = parsed(ctx, kCanon);
  ck_assert(!zt_context_cache_keep_pm(ctx, kCanon, pm));
  ck_assert_ptr_null(zt_context_cache_take_pm(ctx, kCanon).ptr);
  ck_assert(!zt_context_keep(ctx, "k", &pm, NULL));
  ck_assert_ptr_null(zt_context_kept(ctx, "k"));
  mlirPassManagerDestroy(pm);
  mlirContextDestroy(ctx);
}
END_TEST

START_TEST(a_kept_pass_manager_comes_back_for_its_text_and_runs_again) {
  MlirContext ctx = new_context();
  zt_context_cache_t* c = zt_context_cache_create(ctx);
  ck_assert_ptr_nonnull(c);
  zt_context_cache_bind(c);
  MlirPassManager pm = parsed(ctx, kCanon);
  ck_assert_int_eq(run_and_count(ctx, pm), 1);  // 2 + 3 folded: one constant
  ck_assert(zt_context_cache_keep_pm(ctx, kCanon, pm));
  ck_assert_ptr_null(zt_context_cache_take_pm(ctx, kCse).ptr);
  MlirPassManager again = zt_context_cache_take_pm(ctx, kCanon);
  ck_assert_ptr_eq(again.ptr, pm.ptr);
  // Taken out: a second compile at the same time would parse its own.
  ck_assert_ptr_null(zt_context_cache_take_pm(ctx, kCanon).ptr);
  ck_assert_int_eq(run_and_count(ctx, again), 1);
  ck_assert(zt_context_cache_keep_pm(ctx, kCanon, again));
  zt_context_cache_unbind(c);
  zt_context_cache_release(c);  // destroys the kept pass manager
  mlirContextDestroy(ctx);
}
END_TEST

START_TEST(another_context_does_not_see_them) {
  MlirContext a = new_context(), b = new_context();
  zt_context_cache_t* ca = zt_context_cache_create(a);
  zt_context_cache_t* cb = zt_context_cache_create(b);
  zt_context_cache_bind(ca);
  ck_assert(zt_context_cache_keep_pm(a, kCanon, parsed(a, kCanon)));
  // b's pass manager cannot go into a's cache, nor come out of it.
  MlirPassManager pb = parsed(b, kCanon);
  ck_assert(!zt_context_cache_keep_pm(b, kCanon, pb));
  ck_assert_ptr_null(zt_context_cache_take_pm(b, kCanon).ptr);
  zt_context_cache_unbind(ca);
  zt_context_cache_bind(cb);
  ck_assert_ptr_null(zt_context_cache_take_pm(a, kCanon).ptr);  // a's cache is not bound now
  ck_assert_ptr_null(zt_context_cache_take_pm(b, kCanon).ptr);
  mlirPassManagerDestroy(pb);
  zt_context_cache_unbind(cb);
  zt_context_cache_release(ca);
  zt_context_cache_release(cb);
  mlirContextDestroy(a);
  mlirContextDestroy(b);
}
END_TEST

// Two compiles in flight, on two threads in two contexts: each finds only
// its own context's cache, and one's unbinding leaves the other's.
typedef struct {
  MlirContext ctx;
  zt_context_cache_t* cache;
  bool found_other;
  bool kept_own;
  bool took_own;
} worker_arg_t;

static void* other_thread(void* p) {
  worker_arg_t* w = p;
  zt_context_cache_bind(w->cache);
  // a's pass manager is a's; this thread's context has none for kCanon.
  w->found_other = zt_context_cache_take_pm(w->ctx, kCanon).ptr != NULL;
  w->kept_own = zt_context_cache_keep_pm(w->ctx, kCse, parsed(w->ctx, kCse));
  MlirPassManager own = zt_context_cache_take_pm(w->ctx, kCse);
  w->took_own = own.ptr != NULL;
  if (own.ptr) mlirPassManagerDestroy(own);
  zt_context_cache_unbind(w->cache);
  return NULL;
}

START_TEST(two_compiles_in_flight_find_their_own) {
  MlirContext a = new_context(), b = new_context();
  zt_context_cache_t* ca = zt_context_cache_create(a);
  zt_context_cache_t* cb = zt_context_cache_create(b);
  zt_context_cache_bind(ca);
  ck_assert(zt_context_cache_keep_pm(a, kCanon, parsed(a, kCanon)));
  worker_arg_t w = {b, cb, false, false, false};
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, other_thread, &w), 0);
  pthread_join(t, NULL);
  ck_assert(!w.found_other);
  ck_assert(w.kept_own && w.took_own);
  MlirPassManager own = zt_context_cache_take_pm(a, kCanon);  // still here
  ck_assert_ptr_nonnull(own.ptr);
  mlirPassManagerDestroy(own);
  zt_context_cache_unbind(ca);
  MlirPassManager pa = parsed(a, kCse);
  ck_assert(!zt_context_cache_keep_pm(a, kCse, pa));  // unbound: the caller keeps it
  mlirPassManagerDestroy(pa);
  zt_context_cache_release(ca);
  zt_context_cache_release(cb);
  mlirContextDestroy(a);
  mlirContextDestroy(b);
}
END_TEST

START_TEST(many_pipelines_keep_the_latest) {
  MlirContext ctx = new_context();
  zt_context_cache_t* c = zt_context_cache_create(ctx);
  zt_context_cache_bind(c);
  char texts[40][64];
  for (int i = 0; i < 40; ++i) {
    snprintf(texts[i], sizeof texts[i], "builtin.module(canonicalize{max-iterations=%d})", i + 1);
    ck_assert(zt_context_cache_keep_pm(ctx, texts[i], parsed(ctx, texts[i])));
  }
  MlirPassManager last = zt_context_cache_take_pm(ctx, texts[39]);
  ck_assert_ptr_nonnull(last.ptr);
  mlirPassManagerDestroy(last);
  ck_assert_ptr_null(zt_context_cache_take_pm(ctx, texts[0]).ptr);  // the oldest went
  zt_context_cache_unbind(c);
  zt_context_cache_release(c);
  mlirContextDestroy(ctx);
}
END_TEST

static int g_released;
static void count_release(void* p) {
  (void)p;
  ++g_released;
}

START_TEST(kept_objects_are_found_by_key_and_released_with_the_cache) {
  static const char key[] = "a machine";
  MlirContext ctx = new_context();
  zt_context_cache_t* c = zt_context_cache_create(ctx);
  zt_context_cache_bind(c);
  int obj = 7;
  g_released = 0;
  ck_assert_ptr_null(zt_context_kept(ctx, key));
  ck_assert(zt_context_keep(ctx, key, &obj, count_release));
  ck_assert_ptr_eq(zt_context_kept(ctx, key), &obj);
  char same_text[sizeof key];
  memcpy(same_text, key, sizeof key);
  ck_assert_ptr_null(zt_context_kept(ctx, same_text));  // keys are addresses
  zt_context_cache_unbind(c);
  ck_assert_ptr_null(zt_context_kept(ctx, key));  // not bound now
  zt_context_cache_release(c);
  ck_assert_int_eq(g_released, 1);
  mlirContextDestroy(ctx);
}
END_TEST

int main(void) {
  Suite* s = suite_create("context_cache");
  TCase* tc = tcase_create("core");
  tcase_add_unchecked_fixture(tc, setup, NULL);
  tcase_add_test(tc, nothing_is_kept_without_a_bound_cache);
  tcase_add_test(tc, a_kept_pass_manager_comes_back_for_its_text_and_runs_again);
  tcase_add_test(tc, another_context_does_not_see_them);
  tcase_add_test(tc, two_compiles_in_flight_find_their_own);
  tcase_add_test(tc, many_pipelines_keep_the_latest);
  tcase_add_test(tc, kept_objects_are_found_by_key_and_released_with_the_cache);
  suite_add_tcase(s, tc);
  return ct_run_suite(s);
}
