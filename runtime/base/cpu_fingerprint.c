// See cpu_fingerprint.h.
#include "base/cpu_fingerprint.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <xxhash.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

static char g_fingerprint[32];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__)
// Appends leaf/subleaf's registers; a leaf past the maximum reads as zeros
// (its registers would otherwise repeat the highest leaf on Intel parts).
static void add_leaf(uint32_t* w, int* n, uint32_t max, uint32_t leaf, uint32_t sub) {
  uint32_t a = 0, b = 0, c = 0, d = 0;
  if (leaf <= max) __cpuid_count(leaf, sub, a, b, c, d);
  w[(*n)++] = a;
  w[(*n)++] = b;
  w[(*n)++] = c;
  w[(*n)++] = d;
}

static void fingerprint_init(void) {
  uint32_t w[64];
  int n = 0;
  uint32_t max = 0, vendor[3];
  __cpuid(0, max, vendor[0], vendor[2], vendor[1]);
  w[n++] = max;
  w[n++] = vendor[0];
  w[n++] = vendor[1];
  w[n++] = vendor[2];
  uint32_t a, b, c, d;
  __cpuid(1, a, b, c, d);
  // EBX holds this core's APIC id and logical-processor count: left out.
  w[n++] = a;
  w[n++] = c;
  w[n++] = d;
  add_leaf(w, &n, max, 7, 0);
  add_leaf(w, &n, max, 7, 1);
  add_leaf(w, &n, max, 0xd, 1);
  add_leaf(w, &n, max, 0x14, 0);
  add_leaf(w, &n, max, 0x19, 0);
  add_leaf(w, &n, max, 0x24, 0);
  uint32_t ext = __get_cpuid_max(0x80000000u, NULL);
  add_leaf(w, &n, ext, 0x80000001u, 0);
  add_leaf(w, &n, ext, 0x80000008u, 0);
  // Which register states the OS saves (AVX, AVX-512, AMX): LLVM drops the
  // features whose state is not enabled.
  uint32_t xcr0 = 0;
  if (c & (1u << 27)) {
    uint32_t hi;
    __asm__ volatile("xgetbv" : "=a"(xcr0), "=d"(hi) : "c"(0));
  }
  w[n++] = xcr0;
  snprintf(g_fingerprint, sizeof g_fingerprint, "cpuid=%016llx",
           (unsigned long long)XXH3_64bits(w, (size_t)n * sizeof w[0]));
}
#else
static void fingerprint_init(void) { g_fingerprint[0] = 0; }
#endif

const char* zt_cpu_fingerprint(void) {
  pthread_once(&g_once, fingerprint_init);
  return g_fingerprint;
}
