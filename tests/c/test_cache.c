// The on-disk cache: round trips, damage detection, sharing between
// processes, concurrent writers, debug logging, compile cache keys.
#include <check.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_run.h"
#include "zetile/zetile.h"

#define KEY "0123456789abcdef0123456789abcdef"

// Each test runs in its own forked process (Check's default), so the cache
// directory, resolved once per process, can be set per test.
static char dir[256];

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/zt-cache-test-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  setenv("ZETILE_CACHE_DIR", dir, 1);
  unsetenv("ZETILE_DEBUG");
}

static void teardown(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

static void entry_path(const char* key, const char* name, char* out, size_t n) {
  snprintf(out, n, "%s/%.2s/%s/%s", dir, key, key, name);
}

#define OK(expr)                                                                   \
  do {                                                                             \
    zt_status_t s_ = (expr);                                                       \
    ck_assert_msg(s_ == NULL, "%s: %s", #expr, zt_status_message(s_));             \
  } while (0)

START_TEST(test_dir_from_env) {
  ck_assert_str_eq(zt_cache_dir(), dir);
}
END_TEST

START_TEST(test_round_trip) {
  const char payload[] = "hello, cache";
  OK(zt_cache_put(KEY, "artifact", payload, sizeof payload));
  char path[512];
  entry_path(KEY, "artifact", path, sizeof path);
  ck_assert_int_eq(access(path, R_OK), 0);
  void* data = NULL;
  size_t size = 0;
  OK(zt_cache_get(KEY, "artifact", &data, &size));
  ck_assert_uint_eq(size, sizeof payload);
  ck_assert_mem_eq(data, payload, size);
  free(data);
  // Empty payloads are entries too.
  OK(zt_cache_put(KEY, "empty", "", 0));
  OK(zt_cache_get(KEY, "empty", &data, &size));
  ck_assert_uint_eq(size, 0);
  free(data);
  zt_cache_stats_t st;
  zt_cache_get_stats(&st);
  ck_assert_int_eq(st.hits, 2);
  ck_assert_int_eq(st.writes, 2);
  ck_assert_int_eq(st.misses, 0);
  ck_assert_int_eq(st.corrupt, 0);
}
END_TEST

START_TEST(test_miss_and_bad_names) {
  void* data = (void*)1;
  size_t size = 7;
  zt_status_t s = zt_cache_get(KEY, "nothing", &data, &size);
  ck_assert_int_eq(zt_status_code(s), ZT_STATUS_NOT_FOUND);
  zt_status_free(s);
  ck_assert_ptr_null(data);
  zt_cache_stats_t st;
  zt_cache_get_stats(&st);
  ck_assert_int_eq(st.misses, 1);
  s = zt_cache_put("../../etc", "x", "a", 1);
  ck_assert_int_eq(zt_status_code(s), ZT_STATUS_INVALID_ARGUMENT);
  zt_status_free(s);
  s = zt_cache_put(KEY, "a/b", "a", 1);
  ck_assert_int_eq(zt_status_code(s), ZT_STATUS_INVALID_ARGUMENT);
  zt_status_free(s);
}
END_TEST

static void expect_corrupt_then_rebuild(const char* path) {
  void* data = NULL;
  size_t size = 0;
  zt_status_t s = zt_cache_get(KEY, "artifact", &data, &size);
  ck_assert_int_eq(zt_status_code(s), ZT_STATUS_NOT_FOUND);
  ck_assert_msg(strstr(zt_status_message(s), "corrupt"), "%s", zt_status_message(s));
  zt_status_free(s);
  ck_assert_int_ne(access(path, F_OK), 0);  // removed
  // A rebuild writes it again and it reads back.
  OK(zt_cache_put(KEY, "artifact", "rebuilt", 7));
  OK(zt_cache_get(KEY, "artifact", &data, &size));
  ck_assert_mem_eq(data, "rebuilt", 7);
  free(data);
}

START_TEST(test_truncated_entry) {
  char payload[1000];
  memset(payload, 'x', sizeof payload);
  OK(zt_cache_put(KEY, "artifact", payload, sizeof payload));
  char path[512];
  entry_path(KEY, "artifact", path, sizeof path);
  ck_assert_int_eq(truncate(path, 500), 0);
  expect_corrupt_then_rebuild(path);
  // Shorter than a header.
  ck_assert_int_eq(truncate(path, 5), 0);
  expect_corrupt_then_rebuild(path);
  zt_cache_stats_t st;
  zt_cache_get_stats(&st);
  ck_assert_int_eq(st.corrupt, 2);
  ck_assert_int_eq(st.misses, 2);
}
END_TEST

START_TEST(test_flipped_byte) {
  char payload[256];
  for (int i = 0; i < 256; ++i) payload[i] = (char)i;
  OK(zt_cache_put(KEY, "artifact", payload, sizeof payload));
  char path[512];
  entry_path(KEY, "artifact", path, sizeof path);
  for (int where = 0; where < 2; ++where) {
    // First the payload, then the header's magic.
    off_t off = where == 0 ? 24 + 100 : 1;
    int fd = open(path, O_RDWR);
    ck_assert_int_ge(fd, 0);
    unsigned char c;
    ck_assert_int_eq(pread(fd, &c, 1, off), 1);
    c ^= 0x10;
    ck_assert_int_eq(pwrite(fd, &c, 1, off), 1);
    close(fd);
    expect_corrupt_then_rebuild(path);
    OK(zt_cache_put(KEY, "artifact", payload, sizeof payload));
  }
  zt_cache_stats_t st;
  zt_cache_get_stats(&st);
  ck_assert_int_eq(st.corrupt, 2);
}
END_TEST

START_TEST(test_two_processes_share_entries) {
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    zt_status_t s = zt_cache_put(KEY, "artifact", "from the child", 14);
    _exit(s ? 1 : 0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  void* data = NULL;
  size_t size = 0;
  OK(zt_cache_get(KEY, "artifact", &data, &size));
  ck_assert_uint_eq(size, 14);
  ck_assert_mem_eq(data, "from the child", 14);
  free(data);
}
END_TEST

// Writers put payloads whose bytes all equal their length mod 251, so that
// a reader can tell a whole payload from a mix of two.
typedef struct writer_arg_s {
  int id;
  int bad;
} writer_arg_t;

static int check_payload(const unsigned char* p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (p[i] != (unsigned char)(n % 251)) return 0;
  return 1;
}

static void* writer(void* p) {
  writer_arg_t* a = p;
  unsigned char buf[8192];
  for (int i = 0; i < 40; ++i) {
    size_t n = 1000 + (size_t)((a->id * 131 + i * 17) % 7000);
    memset(buf, (int)(n % 251), n);
    zt_status_t s = zt_cache_put(KEY, "shared", buf, n);
    if (s) a->bad++;
    zt_status_free(s);
    void* data = NULL;
    size_t size = 0;
    s = zt_cache_get(KEY, "shared", &data, &size);
    if (s || !check_payload(data, size)) a->bad++;
    zt_status_free(s);
    free(data);
  }
  return NULL;
}

START_TEST(test_concurrent_writers) {
  enum { THREADS = 6, PROCS = 3 };
  pid_t pids[PROCS];
  for (int p = 0; p < PROCS; ++p) {
    pids[p] = fork();
    ck_assert_int_ge(pids[p], 0);
    if (pids[p] == 0) {
      writer_arg_t a = {100 + p, 0};
      writer(&a);
      zt_cache_stats_t st;
      zt_cache_get_stats(&st);
      _exit(a.bad || st.corrupt ? 1 : 0);
    }
  }
  pthread_t t[THREADS];
  writer_arg_t args[THREADS];
  for (int i = 0; i < THREADS; ++i) {
    args[i] = (writer_arg_t){i, 0};
    pthread_create(&t[i], NULL, writer, &args[i]);
  }
  for (int i = 0; i < THREADS; ++i) {
    pthread_join(t[i], NULL);
    ck_assert_int_eq(args[i].bad, 0);
  }
  for (int p = 0; p < PROCS; ++p) {
    int status = 0;
    waitpid(pids[p], &status, 0);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer process %d", p);
  }
  zt_cache_stats_t st;
  zt_cache_get_stats(&st);
  ck_assert_int_eq(st.corrupt, 0);
  ck_assert_int_eq(st.writes, THREADS * 40);
  // No temporary files are left behind.
  char cmd[400];
  snprintf(cmd, sizeof cmd, "test -z \"$(find '%s' -name '.*tmp*')\"", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(test_debug_log_goes_to_stderr) {
  setenv("ZETILE_DEBUG", "cache", 1);
  fflush(stdout);
  fflush(stderr);
  char out_path[300], err_path[300];
  snprintf(out_path, sizeof out_path, "%s/stdout.txt", dir);
  snprintf(err_path, sizeof err_path, "%s/stderr.txt", dir);
  int saved_out = dup(1), saved_err = dup(2);
  int fo = open(out_path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  int fe = open(err_path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  dup2(fo, 1);
  dup2(fe, 2);
  void* data = NULL;
  size_t size = 0;
  zt_status_free(zt_cache_get(KEY, "artifact", &data, &size));
  zt_status_free(zt_cache_put(KEY, "artifact", "x", 1));
  zt_status_free(zt_cache_get(KEY, "artifact", &data, &size));
  free(data);
  fflush(stdout);
  fflush(stderr);
  dup2(saved_out, 1);
  dup2(saved_err, 2);
  close(fo);
  close(fe);
  struct stat so;
  ck_assert_int_eq(stat(out_path, &so), 0);
  ck_assert_int_eq(so.st_size, 0);
  FILE* f = fopen(err_path, "r");
  char text[2000] = {0};
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  ck_assert_msg(strstr(text, "miss") && strstr(text, "write") && strstr(text, "hit"), "%s",
                text);
}
END_TEST

START_TEST(test_hash_and_keys) {
  char a[33], b[33];
  zt_hash_hex("abc", 3, a);
  zt_hash_hex("abc", 3, b);
  ck_assert_int_eq(strlen(a), 32);
  ck_assert_str_eq(a, b);
  zt_hash_hex("abd", 3, b);
  ck_assert_str_ne(a, b);

  const char* ir = "module {}";
  zt_compile_options_t o = {.target = "pvc", .num_warps = 4};
  char base[33], k[33];
  zt_compile_cache_key(ir, strlen(ir), &o, base);
  zt_compile_cache_key(ir, strlen(ir), &o, k);
  ck_assert_str_eq(base, k);
  zt_compile_options_t v = o;
  v.target = "bmg";
  zt_compile_cache_key(ir, strlen(ir), &v, k);
  ck_assert_str_ne(base, k);
  v = o;
  v.num_warps = 8;
  zt_compile_cache_key(ir, strlen(ir), &v, k);
  ck_assert_str_ne(base, k);
  v = o;
  v.compat = true;
  zt_compile_cache_key(ir, strlen(ir), &v, k);
  ck_assert_str_ne(base, k);
  v = o;
  v.igc_options = "-ze-opt-large-register-file";
  zt_compile_cache_key(ir, strlen(ir), &v, k);
  ck_assert_str_ne(base, k);
  zt_compile_cache_key("module { }", 10, &o, k);
  ck_assert_str_ne(base, k);
  // NULL options mean the CPU target with defaults.
  zt_compile_options_t cpu = {.target = "cpu"};
  zt_compile_cache_key(ir, strlen(ir), NULL, base);
  zt_compile_cache_key(ir, strlen(ir), &cpu, k);
  ck_assert_str_eq(base, k);
}
END_TEST

// A cached artifact is used without calling the compiler, also by another
// process. The entry is planted under the key zt_compile_cached computes,
// so this runs whether or not the compiler is built.
START_TEST(test_compile_cached_hit_without_compiler) {
  const char* ir = "// some tile IR\n";
  zt_compile_options_t o = {.target = "pvc"};
  char key[33];
  zt_compile_cache_key(ir, strlen(ir), &o, key);
  zt_artifact_t* a = NULL;
  OK(zt_artifact_create(&a));
  OK(zt_artifact_set(a, "spirv", "\x03\x02\x23\x07", 4));
  OK(zt_artifact_set(a, "meta", "kernel=k\n", 9));
  void* blob = NULL;
  size_t size = 0;
  OK(zt_artifact_serialize(a, &blob, &size));
  OK(zt_cache_put(key, "artifact", blob, size));
  free(blob);
  zt_artifact_release(a);

  for (int proc = 0; proc < 2; ++proc) {
    pid_t pid = proc ? fork() : 0;
    if (proc && pid > 0) {
      int status = 0;
      waitpid(pid, &status, 0);
      ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed");
      break;
    }
    bool hit = false;
    zt_artifact_t* got = NULL;
    zt_cache_stats_t before;
    zt_cache_get_stats(&before);  // a child inherits its parent's counters
    zt_status_t s = zt_compile_cached(ir, strlen(ir), &o, &got, &hit);
    int ok = s == NULL && hit;
    const void* spv = NULL;
    size_t n = 0;
    ok = ok && zt_artifact_get(got, "spirv", &spv, &n) == NULL && n == 4;
    zt_cache_stats_t st;
    zt_cache_get_stats(&st);
    ok = ok && st.compiles == 0 && st.hits == before.hits + 1;
    zt_artifact_release(got);
    zt_status_free(s);
    if (pid == 0 && proc) _exit(ok ? 0 : 1);
    ck_assert(ok);
  }
}
END_TEST

// With the compiler: compile once, then a second process hits the cache.
START_TEST(test_compile_cached_two_processes) {
  zt_status_t avail = zt_compiler_available();
  if (avail) {
    fprintf(stderr, "SKIP test_compile_cached_two_processes: %s\n",
            zt_status_message(avail));
    zt_status_free(avail);
    return;
  }
  const char* ir =
      "module {\n"
      "  func.func @k(%x: !tile.ptr<f32>) attributes {zt.kernel} {\n"
      "    return\n"
      "  }\n"
      "}\n";
  zt_compile_options_t o = {.target = "cpu"};
  zt_artifact_t* a = NULL;
  bool hit = true;
  zt_status_t s = zt_compile_cached(ir, strlen(ir), &o, &a, &hit);
  if (s) {
    // The compiler's IR contract may differ from this sketch: the point of the
    // test is the cache, so do not fail on the compile itself.
    fprintf(stderr, "SKIP test_compile_cached_two_processes: %s\n", zt_status_message(s));
    zt_status_free(s);
    return;
  }
  ck_assert(!hit);
  zt_artifact_release(a);
  pid_t pid = fork();
  if (pid == 0) {
    zt_artifact_t* b = NULL;
    bool h = false;
    zt_status_t s2 = zt_compile_cached(ir, strlen(ir), &o, &b, &h);
    zt_cache_stats_t st;
    zt_cache_get_stats(&st);
    int ok = !s2 && h && st.compiles == 1;  // the parent's compile only
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
END_TEST

START_TEST(test_compile_cached_corrupt_entry_recompiles) {
  const char* ir = "// other tile IR\n";
  zt_compile_options_t o = {.target = "cpu"};
  char key[33];
  zt_compile_cache_key(ir, strlen(ir), &o, key);
  OK(zt_cache_put(key, "artifact", "not an artifact blob", 20));
  zt_artifact_t* a = NULL;
  bool hit = true;
  zt_status_t s = zt_compile_cached(ir, strlen(ir), &o, &a, &hit);
  // Whatever the compiler says about this IR, it was asked (not the cache).
  zt_cache_stats_t st;
  zt_cache_get_stats(&st);
  ck_assert_int_eq(st.compiles, 1);
  ck_assert_int_eq(st.corrupt, 1);
  ck_assert(!hit);
  zt_status_free(s);
  zt_artifact_release(a);
}
END_TEST

int main(void) {
  Suite* suite = suite_create("cache");
  TCase* tc = tcase_create("cache");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_dir_from_env);
  tcase_add_test(tc, test_round_trip);
  tcase_add_test(tc, test_miss_and_bad_names);
  tcase_add_test(tc, test_truncated_entry);
  tcase_add_test(tc, test_flipped_byte);
  tcase_add_test(tc, test_two_processes_share_entries);
  tcase_add_test(tc, test_concurrent_writers);
  tcase_add_test(tc, test_debug_log_goes_to_stderr);
  tcase_add_test(tc, test_hash_and_keys);
  tcase_add_test(tc, test_compile_cached_hit_without_compiler);
  tcase_add_test(tc, test_compile_cached_two_processes);
  tcase_add_test(tc, test_compile_cached_corrupt_entry_recompiles);
  suite_add_tcase(suite, tc);
  return ct_run_suite(suite);
}
