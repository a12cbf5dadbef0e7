// The one main() tail of the C tests: run a Check suite (each test forked,
// so a crash fails that test only), exit status from its failures.
#ifndef ZETILE_TESTS_C_CHECK_RUN_H_
#define ZETILE_TESTS_C_CHECK_RUN_H_

#include <check.h>
#include <stdlib.h>

static inline int ct_run_suite(Suite* s) {
  SRunner* sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif  // ZETILE_TESTS_C_CHECK_RUN_H_
