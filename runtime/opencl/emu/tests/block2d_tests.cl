// One test kernel per emulated 2D block IO builtin (tests/c/test_opencl_emu.c
// compares what every work-item gets or writes with a C reference of the
// spec's layout). Arguments: src/dst region address, out (per-work-item
// results: out[lane * N + k]), width/height/pitch in the builtin's units,
// coordinate.
#define OVL __attribute__((overloadable))
#define SG __attribute__((intel_reqd_sub_group_size(16)))

#define TR(NAME, T, N)                                                                  \
  void OVL NAME(global void*, int, int, int, int2, private T*);                         \
  kernel SG void t_##NAME(ulong src, ulong out, int w, int h, int p, int cx, int cy) {  \
    T d[N];                                                                             \
    for (int k = 0; k < N; ++k) d[k] = (T)0x5A;                                         \
    NAME((global void*)src, w, h, p, (int2)(cx, cy), d);                                \
    global T* o = (global T*)out;                                                       \
    int lane = get_sub_group_local_id();                                                \
    for (int k = 0; k < N; ++k) o[lane * N + k] = d[k];                                 \
  }
// Writes: work-item `lane` stores value (lane * N + k + 1) * 0x9E3779B1 (truncated).
#define TW(NAME, T, N)                                                                  \
  void OVL NAME(global void*, int, int, int, int2, private T*);                         \
  kernel SG void t_##NAME(ulong dst, ulong out, int w, int h, int p, int cx, int cy) {  \
    T d[N];                                                                             \
    int lane = get_sub_group_local_id();                                                \
    for (int k = 0; k < N; ++k) d[k] = (T)((uint)(lane * N + k + 1) * 0x9E3779B1u);     \
    NAME((global void*)dst, w, h, p, (int2)(cx, cy), d);                                \
  }
#define TP(NAME)                                                                        \
  void OVL NAME(global void*, int, int, int, int2);                                     \
  kernel SG void t_##NAME(ulong src, ulong out, int w, int h, int p, int cx, int cy) {  \
    NAME((global void*)src, w, h, p, (int2)(cx, cy));                                   \
    ((global uint*)out)[get_sub_group_local_id()] = 1;                                  \
  }

#include "block2d_list.h"
