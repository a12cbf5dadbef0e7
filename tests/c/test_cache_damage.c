// The on-disk cache under damage a user or another program can cause
// (issue 17): a FIFO, a directory or a symbolic link in place of an entry,
// a key directory that is a link out of the cache, two valid entries
// swapped, an entry of an older format. Each reads as a miss (never a hang,
// never another entry's data), is moved aside as .<name>.bad, and a
// rewrite makes the entry good again.
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_run.h"
#include "zetile/zetile.h"

#define KEY "0123456789abcdef0123456789abcdef"
#define KEY2 "01fedcba9876543210fedcba98765432"  // same 2-digit folder

static char dir[256];

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/zt-cache-damage-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  setenv("ZETILE_CACHE_DIR", dir, 1);
  // A hang is a failure, not a stuck test run.
  alarm(20);
}

static void teardown(void) {
  alarm(0);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

#define OK(expr)                                                                   \
  do {                                                                             \
    zt_status_t s_ = (expr);                                                       \
    ck_assert_msg(s_ == NULL, "%s: %s", #expr, zt_status_message(s_));             \
  } while (0)

static void path_of(const char* key, const char* name, char* out, size_t n) {
  snprintf(out, n, "%s/%.2s/%s/%s", dir, key, key, name);
}

// The entry reads as a damaged miss whose message says why; what was there
// now sits at .<name>.bad; a rewrite reads back.
static void expect_damaged(const char* key, const char* why) {
  void* data = NULL;
  size_t size = 0;
  zt_status_t s = zt_cache_get(key, "artifact", &data, &size);
  ck_assert_msg(zt_status_code(s) == ZT_STATUS_NOT_FOUND, "%s", zt_status_message(s));
  ck_assert_msg(strstr(zt_status_message(s), why), "%s", zt_status_message(s));
  ck_assert_ptr_null(data);
  zt_status_free(s);
  zt_cache_stats_t st;
  zt_cache_get_stats(&st);
  ck_assert_int_ge(st.corrupt, 1);
  OK(zt_cache_put(key, "artifact", "fresh", 5));
  OK(zt_cache_get(key, "artifact", &data, &size));
  ck_assert_uint_eq(size, 5);
  ck_assert_mem_eq(data, "fresh", 5);
  free(data);
}

static void expect_moved_aside(const char* key) {
  char bad[512];
  snprintf(bad, sizeof bad, "%s/%.2s/%s/.artifact.bad", dir, key, key);
  struct stat st;
  ck_assert_msg(lstat(bad, &st) == 0, "%s missing", bad);
}

START_TEST(test_fifo_does_not_block) {
  OK(zt_cache_put(KEY, "artifact", "x", 1));
  char p[512];
  path_of(KEY, "artifact", p, sizeof p);
  ck_assert_int_eq(unlink(p), 0);
  ck_assert_int_eq(mkfifo(p, 0644), 0);  // opening this for reading used to block forever
  expect_damaged(KEY, "not a regular file");
  expect_moved_aside(KEY);
}
END_TEST

START_TEST(test_directory_in_place_of_an_entry) {
  OK(zt_cache_put(KEY, "artifact", "x", 1));
  char p[512];
  path_of(KEY, "artifact", p, sizeof p);
  ck_assert_int_eq(unlink(p), 0);
  ck_assert_int_eq(mkdir(p, 0755), 0);
  expect_damaged(KEY, "not a regular file");
}
END_TEST

START_TEST(test_symlink_entry_is_not_followed) {
  // A link to a valid entry of another key, and one to a file outside.
  OK(zt_cache_put(KEY2, "artifact", "other", 5));
  OK(zt_cache_put(KEY, "artifact", "x", 1));
  char p[512], target[512];
  path_of(KEY, "artifact", p, sizeof p);
  path_of(KEY2, "artifact", target, sizeof target);
  ck_assert_int_eq(unlink(p), 0);
  ck_assert_int_eq(symlink(target, p), 0);
  expect_damaged(KEY, "symbolic link");
  expect_moved_aside(KEY);
  ck_assert_int_eq(unlink(p), 0);
  ck_assert_int_eq(symlink("/etc/hostname", p), 0);
  expect_damaged(KEY, "symbolic link");
  // The other key's entry is intact.
  void* data;
  size_t size;
  OK(zt_cache_get(KEY2, "artifact", &data, &size));
  ck_assert_mem_eq(data, "other", 5);
  free(data);
}
END_TEST

START_TEST(test_key_directory_linked_out_of_the_cache) {
  char outside[] = "/tmp/zt-cache-outside-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(outside));
  char sub[512], keydir[512];
  snprintf(sub, sizeof sub, "%s/%.2s", dir, KEY);
  snprintf(keydir, sizeof keydir, "%s/%s", sub, KEY);
  ck_assert_int_eq(mkdir(sub, 0755), 0);
  ck_assert_int_eq(symlink(outside, keydir), 0);
  // Reading neither follows it nor finds anything; writing does not write
  // through it.
  void* data = NULL;
  size_t size;
  zt_status_t s = zt_cache_get(KEY, "artifact", &data, &size);
  ck_assert_int_eq(zt_status_code(s), ZT_STATUS_NOT_FOUND);
  ck_assert_msg(strstr(zt_status_message(s), "not a directory"), "%s", zt_status_message(s));
  zt_status_free(s);
  // The link was moved aside: a put now makes a real directory.
  OK(zt_cache_put(KEY, "artifact", "x", 1));
  struct stat st;
  ck_assert_int_eq(lstat(keydir, &st), 0);
  ck_assert(S_ISDIR(st.st_mode));
  char leaked[512];
  snprintf(leaked, sizeof leaked, "%s/artifact", outside);
  ck_assert_int_ne(access(leaked, F_OK), 0);
  // With the link put back, a put refuses instead of writing outside.
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", keydir);
  ck_assert_int_eq(system(cmd), 0);
  ck_assert_int_eq(symlink(outside, keydir), 0);
  s = zt_cache_put(KEY, "artifact", "x", 1);
  ck_assert_int_eq(zt_status_code(s), ZT_STATUS_IO_ERROR);
  zt_status_free(s);
  ck_assert_int_ne(access(leaked, F_OK), 0);
  rmdir(outside);
}
END_TEST

START_TEST(test_swapped_entries_do_not_load) {
  // Two valid entries swapped used to run the wrong kernel without an error.
  OK(zt_cache_put(KEY, "artifact", "kernel one", 10));
  OK(zt_cache_put(KEY2, "artifact", "kernel two", 10));
  char a[512], b[512], t[520];
  path_of(KEY, "artifact", a, sizeof a);
  path_of(KEY2, "artifact", b, sizeof b);
  snprintf(t, sizeof t, "%s.swap", a);
  ck_assert_int_eq(rename(a, t), 0);
  ck_assert_int_eq(rename(b, a), 0);
  ck_assert_int_eq(rename(t, b), 0);
  expect_damaged(KEY, "belongs to another key");
  expect_damaged(KEY2, "belongs to another key");
  // Same key, another entry name: also refused.
  char native[512];
  OK(zt_cache_put(KEY, "native", "binary", 6));
  path_of(KEY, "native", native, sizeof native);
  ck_assert_int_eq(rename(native, a), 0);
  expect_damaged(KEY, "belongs to another key");
}
END_TEST

START_TEST(test_entry_of_the_old_format) {
  OK(zt_cache_put(KEY, "artifact", "x", 1));
  char p[512];
  path_of(KEY, "artifact", p, sizeof p);
  // Version 1 headers had no identity field.
  FILE* f = fopen(p, "r+b");
  ck_assert_ptr_nonnull(f);
  uint32_t v1 = 1;
  ck_assert_int_eq(fseek(f, 4, SEEK_SET), 0);
  ck_assert_int_eq(fwrite(&v1, 4, 1, f), 1);
  fclose(f);
  expect_damaged(KEY, "other format version");
}
END_TEST

int main(void) {
  Suite* s = suite_create("cache_damage");
  TCase* tc = tcase_create("damage");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_fifo_does_not_block);
  tcase_add_test(tc, test_directory_in_place_of_an_entry);
  tcase_add_test(tc, test_symlink_entry_is_not_followed);
  tcase_add_test(tc, test_key_directory_linked_out_of_the_cache);
  tcase_add_test(tc, test_swapped_entries_do_not_load);
  tcase_add_test(tc, test_entry_of_the_old_format);
  suite_add_tcase(s, tc);
  return ct_run_suite(s);
}
