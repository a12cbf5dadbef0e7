// zt_launch's own cost on the CPU backend, for bench/launch.py: a kernel
// that does nothing (a C function with the vector-add kernel's arguments,
// loaded through zt_cpu_executable_create_from_function), launched in a
// loop, against calling that function directly. Prints one line per grid:
// "<name> <ns per call>" (minimum over rounds).
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cpu/cpu_backend.h"
#include "zetile/zetile.h"

#define META "kernel=noop\ntarget=cpu\nargs=ptr:f32,ptr:f32,ptr:f32,i32\nlocal_size=1,1,1\nsubgroup_size=1\n"

// The kernel ABI: the arguments, program id and grid size, a context pointer.
static __attribute__((noinline)) void noop(uint64_t x, uint64_t y, uint64_t out, int32_t n,
                                           int32_t px, int32_t py, int32_t pz, int32_t nx,
                                           int32_t ny, int32_t nz, void* ctx) {
  (void)y, (void)out, (void)py, (void)pz, (void)nx, (void)ny, (void)nz, (void)ctx;
  // Keeps the call from being optimized away without writing shared memory
  // (which would bounce a cache line between the pool's threads).
  __asm__ __volatile__("" : : "r"(x), "r"(n), "r"(px));
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void check(zt_status_t s) {
  if (!s) return;
  fprintf(stderr, "launch_c: %s\n", zt_status_message(s));
  exit(1);
}

int main(int argc, char** argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 100000;
  int rounds = 7;
  zt_device_t* d;
  check(zt_device_open("cpu", &d));
  zt_executable_t* e;
  check(zt_cpu_executable_create_from_function(d, META, (void*)noop, &e));
  zt_arg_t args[4] = {{ZT_PTR, {.ptr = 64}}, {ZT_PTR, {.ptr = 128}}, {ZT_PTR, {.ptr = 192}},
                      {ZT_I32, {.i = 16}}};
  double best = 1e9;
  for (int r = 0; r < rounds; ++r) {
    double t0 = now();
    for (int i = 0; i < reps; ++i) noop(64, 128, 192, 16, 0, 0, 0, 1, 1, 1, NULL);
    double t = (now() - t0) / reps;
    if (t < best) best = t;
  }
  printf("direct %.1f\n", best * 1e9);
  uint32_t grids[3] = {1, 2, 64};
  for (int g = 0; g < 3; ++g) {
    uint32_t grid[3] = {grids[g], 1, 1};
    check(zt_launch(e, grid, 4, args));  // starts the pool
    best = 1e9;
    for (int r = 0; r < rounds; ++r) {
      int n = grids[g] > 1 ? reps / 10 : reps;
      double t0 = now();
      for (int i = 0; i < n; ++i) check(zt_launch(e, grid, 4, args));
      double t = (now() - t0) / n;
      if (t < best) best = t;
    }
    printf("grid%u %.1f\n", grids[g], best * 1e9);
  }
  zt_executable_release(e);
  zt_device_release(d);
  return 0;
}
