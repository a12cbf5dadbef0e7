// CPU target: a memory fault inside a program becomes DEVICE_FAULT naming
// the kernel and program (the process survives, the device keeps working,
// on the calling thread and on pool workers alike), and an interrupt check
// stops a long launch at the next program (issue 17). The "kernels" are C
// functions with the CPU kernel ABI, run through the real thread pool and
// libffi path (zt_cpu_executable_create_from_function).
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check_run.h"
#include "cpu/cpu_backend.h"
#include "zetile/zetile.h"

#define OK(expr)                                                                    \
  do {                                                                              \
    zt_status_t s_ = (expr);                                                        \
    ck_assert_msg(s_ == NULL, "%s: %s", #expr, zt_status_message(s_));              \
  } while (0)

#define META "kernel=k\ntarget=cpu\nargs=ptr:i32,i32\n"

static atomic_int programs_run;
// Never mapped; volatile so that the compiler does not reason about it.
static volatile uintptr_t unmapped = 0x10;

// Program `bad` reads an unmapped address; every program counts itself.
static void faulting(uint64_t counts, int32_t bad, int32_t px, int32_t py, int32_t pz,
                     int32_t nx, int32_t ny, int32_t nz, void* ctx) {
  (void)py, (void)pz, (void)nx, (void)ny, (void)nz, (void)ctx;
  atomic_fetch_add(&programs_run, 1);
  ((atomic_int*)(uintptr_t)counts)[px] = 1;
  if (px == bad) {
    ((atomic_int*)(uintptr_t)counts)[px] = *(volatile int*)unmapped;
  }
}

// Each program sleeps 2 ms: a launch of 5000 programs takes seconds.
static void slow(uint64_t counts, int32_t unused, int32_t px, int32_t py, int32_t pz,
                 int32_t nx, int32_t ny, int32_t nz, void* ctx) {
  (void)counts, (void)unused, (void)px, (void)py, (void)pz, (void)nx, (void)ny, (void)nz;
  (void)ctx;
  atomic_fetch_add(&programs_run, 1);
  usleep(2000);
}

static zt_status_t launch(zt_executable_t* e, uint32_t programs, int32_t* counts,
                          int32_t bad) {
  zt_arg_t args[2] = {{ZT_PTR, {.ptr = (uint64_t)(uintptr_t)counts}}, {ZT_I32, {.i = bad}}};
  uint32_t grid[3] = {programs, 1, 1};
  return zt_launch(e, grid, 2, args);
}

static void expect_fault(zt_executable_t* e, int32_t bad) {
  int32_t counts[64] = {0};
  zt_status_t s = launch(e, 64, counts, bad);
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(zt_status_code(s), ZT_STATUS_DEVICE_FAULT);
  char want[64];
  snprintf(want, sizeof want, "program (%d, 0, 0)", bad);
  const char* msg = zt_status_message(s);
  ck_assert_msg(strstr(msg, "kernel k") && strstr(msg, want) && strstr(msg, "SIGSEGV") &&
                    strstr(msg, "0x10"),
                "%s", msg);
  zt_status_free(s);
}

START_TEST(test_fault_is_a_status) {
  setenv("ZETILE_NUM_THREADS", "3", 1);
  zt_device_t* d;
  OK(zt_device_open("cpu", &d));
  zt_executable_t* e;
  OK(zt_cpu_executable_create_from_function(d, META, (void*)faulting, &e));
  // The first program runs on the calling thread; later ones mostly on
  // workers. Several faults in a row: each launch recovers.
  for (int i = 0; i < 5; ++i) {
    expect_fault(e, 0);
    expect_fault(e, 63);
    expect_fault(e, 17);
  }
  // The device and the executable still work: a launch without a fault
  // runs every program exactly once.
  int32_t counts[64] = {0};
  atomic_store(&programs_run, 0);
  OK(launch(e, 64, counts, -1));
  ck_assert_int_eq(atomic_load(&programs_run), 64);
  for (int i = 0; i < 64; ++i) ck_assert_int_eq(counts[i], 1);
  zt_executable_release(e);
  zt_device_release(d);
}
END_TEST

static void* faulting_thread(void* p) {
  zt_executable_t* e = p;
  for (int i = 0; i < 10; ++i) expect_fault(e, i % 2 ? 5 : 40);
  return NULL;
}

START_TEST(test_faults_from_several_threads) {
  setenv("ZETILE_NUM_THREADS", "2", 1);
  zt_device_t* d;
  OK(zt_device_open("cpu", &d));
  zt_executable_t* e;
  OK(zt_cpu_executable_create_from_function(d, META, (void*)faulting, &e));
  pthread_t t[3];
  for (int i = 0; i < 3; ++i) pthread_create(&t[i], NULL, faulting_thread, e);
  for (int i = 0; i < 3; ++i) pthread_join(t[i], NULL);
  zt_executable_release(e);
  zt_device_release(d);
}
END_TEST

// A fault outside any program still ends the process as before (the
// previous disposition runs): checked in a child (under ASan, ASan's report
// of that SEGV in the log is expected).
START_TEST(test_fault_outside_kernels_is_not_swallowed) {
  zt_device_t* d;
  OK(zt_device_open("cpu", &d));
  zt_executable_t* e;
  OK(zt_cpu_executable_create_from_function(d, META, (void*)faulting, &e));
  expect_fault(e, 3);  // the handler is installed now
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    // The child inherited zetile's handler, whose previous action is the
    // default: outside a program it restores that, and the fault kills.
    _exit(*(volatile int*)unmapped);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  // Killed by the default action; under ASan the previous handler is
  // ASan's, which reports the SEGV and exits with an error instead.
  ck_assert_msg((WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV) ||
                    (WIFEXITED(status) && WEXITSTATUS(status) != 0),
                "the child survived a fault outside any kernel (status %d)", status);
  zt_executable_release(e);
  zt_device_release(d);
}
END_TEST

static atomic_int polls;
static bool stop_after_some(void* user) {
  (void)user;
  return atomic_fetch_add(&polls, 1) >= 2;
}

START_TEST(test_interrupt_stops_a_long_launch) {
  setenv("ZETILE_NUM_THREADS", "2", 1);
  zt_device_t* d;
  OK(zt_device_open("cpu", &d));
  zt_executable_t* e;
  OK(zt_cpu_executable_create_from_function(d, META, (void*)slow, &e));
  atomic_store(&programs_run, 0);
  atomic_store(&polls, 0);
  zt_set_interrupt_check(stop_after_some, NULL);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int32_t counts[1];
  zt_status_t s = launch(e, 5000, counts, 0);  // ~5 s uninterrupted on 2 threads
  clock_gettime(CLOCK_MONOTONIC, &t1);
  zt_set_interrupt_check(NULL, NULL);
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(zt_status_code(s), ZT_STATUS_LAUNCH_INTERRUPTED);
  ck_assert_ptr_nonnull(strstr(zt_status_message(s), "kernel k"));
  zt_status_free(s);
  double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
  ck_assert_msg(secs < 2.0, "the interrupted launch still took %.2f s", secs);
  ck_assert_int_lt(atomic_load(&programs_run), 5000);
  ck_assert_int_ge(atomic_load(&polls), 3);
  // Without the check the same executable runs a short launch in full.
  atomic_store(&programs_run, 0);
  OK(launch(e, 10, counts, 0));
  ck_assert_int_eq(atomic_load(&programs_run), 10);
  zt_executable_release(e);
  zt_device_release(d);
}
END_TEST

int main(void) {
  Suite* s = suite_create("cpu_faults");
  TCase* tc = tcase_create("faults");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_fault_is_a_status);
  tcase_add_test(tc, test_faults_from_several_threads);
  tcase_add_test(tc, test_fault_outside_kernels_is_not_swallowed);
  tcase_add_test(tc, test_interrupt_stops_a_long_launch);
  suite_add_tcase(s, tc);
  return ct_run_suite(s);
}
