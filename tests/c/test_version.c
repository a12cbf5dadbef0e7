// The version is written once (include/zetile/api.h): the numbers agree with
// the string, and the library reports the header's version.
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "zetile/zetile.h"

START_TEST(test_version_agrees) {
  char want[32];
  snprintf(want, sizeof want, "%d.%d.%d", ZT_VERSION_MAJOR, ZT_VERSION_MINOR, ZT_VERSION_PATCH);
  ck_assert_str_eq(want, ZT_VERSION_STRING);
  ck_assert_str_eq(zt_version(), ZT_VERSION_STRING);
}
END_TEST

int main(void) {
  Suite* s = suite_create("version");
  TCase* tc = tcase_create("version");
  tcase_add_test(tc, test_version_agrees);
  suite_add_tcase(s, tc);
  SRunner* r = srunner_create(s);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed != 0;
}
