// The CPU backend: buffers are aligned host memory; kernels are the machine
// code cached in their artifacts, loaded by libzetile itself (cpu_object.c),
// else linked or JIT-compiled by libzetile_compiler, and called once per program id through
// libffi, the grid spread over the thread pool in chunks handed out by an
// atomic counter. Launches are synchronous. Each thread passes the kernel a
// program context (hidden last argument, jit/compiler_api.h) through which a
// failed tile.assert ends its program and fails the launch.
#include "cpu/cpu_backend.h"

#include <ffi.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "backend.h"
#include "compiler_api.h"
#include "cpu/cpu_object.h"
#include "cpu/kernel_call.h"
#include "cpu/thread_pool.h"
#include "debug_flags.h"

#define CPU_ALIGNMENT 64
#define MAX_FFI_ARGS (ZT_MAX_KERNEL_ARGS + 7)  // + grid ints + context

// Nanoseconds per program of the last three timed launches of one kind, read
// as their median: one launch that lost its CPU (a busy machine) does not
// move it, two do. Updates from concurrent launches may interleave; it is an
// estimate either way.
typedef struct pace_s {
  _Atomic uint64_t ns[3];
  atomic_uint count;
} pace_t;

static uint64_t pace_get(pace_t* p) {
  unsigned n = atomic_load_explicit(&p->count, memory_order_relaxed);
  if (n == 0) return 0;
  uint64_t a = atomic_load_explicit(&p->ns[0], memory_order_relaxed);
  if (n < 3) return atomic_load_explicit(&p->ns[(n - 1) % 3], memory_order_relaxed);
  uint64_t b = atomic_load_explicit(&p->ns[1], memory_order_relaxed);
  uint64_t c = atomic_load_explicit(&p->ns[2], memory_order_relaxed);
  uint64_t lo = a < b ? a : b, hi = a < b ? b : a;
  return c < lo ? lo : c > hi ? hi : c;
}

static void pace_add(pace_t* p, uint64_t ns) {
  unsigned n = atomic_fetch_add_explicit(&p->count, 1, memory_order_relaxed);
  atomic_store_explicit(&p->ns[n % 3], ns ? ns : 1, memory_order_relaxed);
  if (n >= 0x40000000u) atomic_store_explicit(&p->count, 3 + (n + 1) % 3, memory_order_relaxed);
}

typedef struct cpu_executable_s {
  zt_executable_t base;
  void* fn;
  void* engine;                     // from cpu_load(_object); NULL for test functions
  bool engine_is_object;            // from cpu_load_object: released by cpu_unload_object
  zt_elf_image_t* image;            // from libzetile's own loader (no engine then)
  const zt_compiler_api_t* api;     // to unload the engine
  ffi_cif cif;
  ffi_type* arg_types[MAX_FFI_ARGS];
  bool direct;             // called through kplan (kernel_call.h), else libffi
  zt_kcall_plan_t kplan;
  // Wall time per program of launches on the caller alone and on the pool.
  pace_t alone, pool;
  atomic_uint eligible;     // launches long enough for the pool (probe count)
  atomic_uint probe_every;  // the other way runs every this many of them
} cpu_executable_t;

// A grid whose programs would take less than this in all on one thread runs
// on the caller alone: waking and waiting for pool threads costs a few
// microseconds (more on a busy machine) and would make such a launch slower
// (2 CPUs with nothing else running: 64 programs of 5 us in all took 3.5 us
// alone, 3.8 on the pool; of 10 us, 11.3 alone and 6.2 on the pool).
#define POOL_MIN_NS 10000
// Longer grids go to the pool only while its launches are measured to be
// faster (by 10%) than the caller's alone: on a machine whose CPUs are busy
// with other processes, a woken worker takes the caller's CPU or waits for
// one, and pool launches ran 1.5-5x slower than one thread (median, load 6 on
// 2 CPUs). Every probe_every-th such launch runs the other way, so that a
// change (the load going away, a longer kernel) is seen; the interval doubles
// (up to PROBE_MAX) while probes confirm the choice, which bounds what they
// cost when the other way is much slower.
#define PROBE_MIN 8
#define PROBE_MAX 1024

// --- device ------------------------------------------------------------------

static void cpu_destroy(zt_device_t* device) { free(device); }

static zt_status_t cpu_buffer_alloc(zt_device_t* device, size_t size, zt_buffer_t** out) {
  zt_buffer_t* b = calloc(1, sizeof *b);
  if (!b) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "buffer");
  // Round up so that vector loads at the tail stay inside the allocation
  // (zt_buffer_alloc refused sizes where this would wrap).
  if (size > SIZE_MAX - CPU_ALIGNMENT) {
    free(b);
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "cpu buffer of %zu bytes", size);
  }
  size_t padded = (size + CPU_ALIGNMENT - 1) / CPU_ALIGNMENT * CPU_ALIGNMENT;
  void* p = aligned_alloc(CPU_ALIGNMENT, padded ? padded : CPU_ALIGNMENT);
  if (!p) {
    free(b);
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "cpu buffer of %zu bytes", size);
  }
  b->host_ptr = p;
  b->address = (uint64_t)(uintptr_t)p;
  *out = b;
  return NULL;
}

static void cpu_buffer_free(zt_buffer_t* b) {
  free(b->host_ptr);
  free(b);
}

static zt_status_t cpu_buffer_write(zt_buffer_t* b, size_t offset, const void* src,
                                    size_t size) {
  memcpy((char*)b->host_ptr + offset, src, size);
  return NULL;
}

static zt_status_t cpu_buffer_read(const zt_buffer_t* b, size_t offset, void* dst,
                                   size_t size) {
  memcpy(dst, (const char*)b->host_ptr + offset, size);
  return NULL;
}

// --- executables -------------------------------------------------------------

static ffi_type* ffi_type_of(zt_scalar_kind_t k) {
  switch (k) {
    case ZT_I1:
    case ZT_I8: return &ffi_type_sint8;
    case ZT_I16: return &ffi_type_sint16;
    case ZT_I32: return &ffi_type_sint32;
    case ZT_I64: return &ffi_type_sint64;
    case ZT_F16:
    case ZT_BF16: return &ffi_type_uint16;
    case ZT_F32: return &ffi_type_float;
    case ZT_F64: return &ffi_type_double;
    case ZT_PTR: return &ffi_type_uint64;
    default: return NULL;
  }
}

static zt_status_t prep_cif(cpu_executable_t* e, const zt_kernel_meta_t* meta) {
  int32_t n = meta->num_args;
  for (int32_t i = 0; i < n; ++i) {
    e->arg_types[i] = ffi_type_of(meta->arg_kinds[i]);
    if (!e->arg_types[i])
      return zt_make_status(ZT_STATUS_UNSUPPORTED, "argument %d has kind %s", i,
                            zt_scalar_kind_name(meta->arg_kinds[i]));
  }
  for (int32_t i = 0; i < 6; ++i) e->arg_types[n + i] = &ffi_type_sint32;
  e->arg_types[n + 6] = &ffi_type_pointer;
  ffi_status fs = ffi_prep_cif(&e->cif, FFI_DEFAULT_ABI, (unsigned)(n + 7),
                               &ffi_type_void, e->arg_types);
  if (fs != FFI_OK)
    return zt_make_status(ZT_STATUS_INTERNAL, "ffi_prep_cif failed (%d)", (int)fs);
  // ZETILE_CPU_FFI=1 keeps libffi (to compare the two calls).
  const char* ffi_env = getenv("ZETILE_CPU_FFI");
  e->direct = !(ffi_env && ffi_env[0] == '1') && zt_kcall_plan(&e->kplan, meta->arg_kinds, n);
  return NULL;
}

// The LLVM type each argument kind takes in the CPU kernel ABI (what libffi
// will pass; see ffi_type_of).
static const char* abi_type_of(zt_scalar_kind_t k) {
  switch (k) {
    case ZT_I1:
    case ZT_I8: return "i8";
    case ZT_I16:
    case ZT_F16:
    case ZT_BF16: return "i16";
    case ZT_I32: return "i32";
    case ZT_I64:
    case ZT_PTR: return "i64";
    case ZT_F32: return "f32";
    case ZT_F64: return "f64";
    default: return "?";
  }
}

// An artifact's metadata decides how libffi calls the code: if they
// disagree (a tampered or mismatched artifact), the kernel would read its
// hidden context pointer from garbage and crash at launch. Checks the
// kernel's llvm.func signature against the metadata before loading it.
static zt_status_t check_signature(const char* llvm, size_t size, const zt_kernel_meta_t* m) {
  char pat[300];
  snprintf(pat, sizeof pat, "llvm.func @%s(", m->kernel);
  const char* p = llvm ? strstr(llvm, pat) : NULL;
  if (!p)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                          "the artifact's code has no function '%s' named by its metadata",
                          m->kernel);
  p += strlen(pat);
  const char* end = llvm + size;
  int32_t count = 0;
  while (p < end && *p != ')') {
    // One "%argN: type" at a time; types here have no commas at depth 0.
    const char* colon = memchr(p, ':', (size_t)(end - p));
    if (!colon) break;
    const char* t = colon + 1;
    while (t < end && *t == ' ') ++t;
    const char* te = t;
    int depth = 0;
    while (te < end && (depth > 0 || (*te != ',' && *te != ')'))) {
      if (*te == '<' || *te == '(') ++depth;
      if (*te == '>' || *te == ')') --depth;
      ++te;
    }
    if (count < m->num_args) {
      const char* want = abi_type_of(m->arg_kinds[count]);
      if ((size_t)(te - t) != strlen(want) || strncmp(t, want, (size_t)(te - t)) != 0)
        return zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                              "kernel '%s': argument %d is %.*s in the code but %s in the "
                              "metadata", m->kernel, count, (int)(te - t), t,
                              zt_scalar_kind_name(m->arg_kinds[count]));
    }
    ++count;
    p = te;
    if (p < end && *p == ',') ++p;
    while (p < end && *p == ' ') ++p;
  }
  if (count != m->num_args + 7)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                          "kernel '%s' takes %d arguments in the code but its metadata lists "
                          "%d (+7 hidden)", m->kernel, count, m->num_args);
  return NULL;
}

// An optional section: true and its bytes if the artifact has it.
static bool artifact_has(const zt_artifact_t* a, const char* name, const void** data,
                         size_t* size) {
  zt_status_t s = zt_artifact_get(a, name, data, size);
  bool found = s == NULL;
  zt_status_free(s);
  return found;
}

static void cpu_engine_release(cpu_executable_t* e) {
  zt_elf_image_release(e->image);
  e->image = NULL;
  if (!e->engine || !e->api) return;
  if (e->engine_is_object)
    e->api->cpu_unload_object(e->engine);
  else if (e->api->cpu_unload)
    e->api->cpu_unload(e->engine);
}

static zt_status_t cpu_executable_create(zt_device_t* device, const zt_artifact_t* artifact,
                                         const zt_kernel_meta_t* meta,
                                         zt_executable_t** out) {
  const void* llvm = NULL;
  size_t llvm_size = 0;
  ZT_RETURN_IF_ERROR(zt_artifact_get(artifact, "llvm", &llvm, &llvm_size));
  ZT_RETURN_IF_ERROR(check_signature(llvm, llvm_size, meta));
  cpu_executable_t* e = calloc(1, sizeof *e);
  if (!e) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "cpu executable");
  zt_status_t s = prep_cif(e, meta);
  if (s) goto cleanup;
  const void *obj = NULL, *host = NULL;
  size_t obj_size = 0, host_size = 0;
  bool has_obj = artifact_has(artifact, "obj", &obj, &obj_size) &&
                 artifact_has(artifact, "obj_host", &host, &host_size);
  // Machine code built for this CPU is loaded here, without the compiler;
  // what this loader does not handle is linked by ORC below, as before.
  zt_cpu_loader_t mode = zt_cpu_loader_mode();
  if (mode != ZT_CPU_LOADER_ORC) {
    if (has_obj)
      s = zt_cpu_object_load_own(obj, obj_size, host, host_size, meta->kernel, &e->image,
                                 &e->fn);
    else
      s = zt_make_status(ZT_STATUS_UNSUPPORTED, "the artifact holds no machine code");
    if (!s) {
      *out = &e->base;
      return NULL;
    }
    if (mode == ZT_CPU_LOADER_OWN) {
      s = zt_status_annotate(s, "kernel %s (ZETILE_CPU_LOADER=own)", meta->kernel);
      goto cleanup;
    }
    if (zt_debug_enabled("load"))
      fprintf(stderr, "zetile load: kernel %s: %s; loading it with libzetile_compiler\n",
              meta->kernel, zt_status_message(s));
    zt_status_free(s);
    s = NULL;
  }
  s = zt_compiler_load(&e->api);
  if (s) {
    s = zt_status_annotate(s, "the CPU backend JIT-compiles kernels with libzetile_compiler");
    goto cleanup;
  }
  if (!e->api->cpu_load) {
    s = zt_make_status(ZT_STATUS_UNSUPPORTED, "this compiler cannot load CPU kernels");
    goto cleanup;
  }
  // Machine code built at compile time for this CPU links in about a
  // millisecond; without it (or built for another CPU) the LLVM text is
  // optimized and compiled again here.
  if (has_obj) {
    s = e->api->cpu_load_object(obj, obj_size, host, host_size, meta->kernel, &e->fn,
                                &e->engine);
    if (!s) e->engine_is_object = true;
    if (s && zt_status_code(s) == ZT_STATUS_UNSUPPORTED) {
      zt_status_free(s);  // another CPU's code: load the LLVM text below
      s = NULL;
    }
    if (s) goto cleanup;
  }
  if (!e->fn) s = e->api->cpu_load(llvm, llvm_size, meta->kernel, &e->fn, &e->engine);
  if (s) goto cleanup;
  if (!e->fn) {
    s = zt_make_status(ZT_STATUS_INTERNAL, "cpu_load returned no function");
    goto cleanup;
  }
  *out = &e->base;
  return NULL;
cleanup:
  cpu_engine_release(e);
  free(e);
  return s;
}

static void cpu_executable_destroy(zt_executable_t* base) {
  cpu_executable_t* e = (cpu_executable_t*)base;
  cpu_engine_release(e);
  free(e);
}

// --- launch ------------------------------------------------------------------


typedef struct launch_s {
  cpu_executable_t* exe;
  const zt_packed_arg_t* values;
  int32_t num_args;
  uint32_t grid[3];
  uint64_t total;
  uint64_t chunk;
  atomic_uint_fast64_t next;
  zt_cpu_launch_error_t error;
  const uint64_t (*bounds)[2];  // bounds mode: per argument (address, bytes)
  int32_t num_bounds;
  atomic_int stop;      // set on an interrupt: start no more programs
  atomic_int faulted;   // the first fault wins the fields below
  int fault_signal;
  int fault_write;      // 1 write, 0 read, -1 unknown
  uintptr_t fault_address;
  int32_t fault_program[3];
} launch_t;

// --- faults inside kernels ----------------------------------------------------
//
// A program that touches memory it must not (an address out of its
// buffers) raises SIGSEGV or SIGBUS on the thread running it. The handler
// jumps back to that program's start (the same exit a failed assertion
// uses: kernel and libffi frames hold no resources), the program counts as
// failed and the launch returns DEVICE_FAULT. SA_NODEFER keeps the signal
// unblocked after the jump (setjmp here does not save the signal mask, and
// saving it would cost a system call per program); SA_ONSTACK with a
// per-thread alternate stack lets a stack overflow be caught too. A fault
// on a thread that is not running a program goes to the previous handler.

static _Thread_local zt_cpu_program_ctx_t* volatile tl_program;
static _Thread_local volatile int tl_fault_signal, tl_fault_write;
static _Thread_local volatile uintptr_t tl_fault_address;
static _Thread_local bool tl_altstack;

#define NUM_FAULT_SIGNALS 3
static const int fault_signals[NUM_FAULT_SIGNALS] = {SIGSEGV, SIGBUS, SIGILL};
static struct sigaction previous[NUM_FAULT_SIGNALS];
static pthread_once_t handlers_once = PTHREAD_ONCE_INIT;

static void fault_handler(int sig, siginfo_t* info, void* uctx) {
  zt_cpu_program_ctx_t* p = tl_program;
  if (p) {
    tl_program = NULL;
    tl_fault_signal = sig;
    tl_fault_address = (uintptr_t)info->si_addr;
    tl_fault_write = -1;
#if defined(__x86_64__)
    // Page-fault error code: bit 1 set for a write.
    if (sig == SIGSEGV && uctx)
      tl_fault_write = (((ucontext_t*)uctx)->uc_mcontext.gregs[REG_ERR] & 2) ? 1 : 0;
#endif
    longjmp(p->exit, 2);
  }
  for (int i = 0; i < NUM_FAULT_SIGNALS; ++i) {
    if (fault_signals[i] != sig) continue;
    struct sigaction* old = &previous[i];
    if (old->sa_flags & SA_SIGINFO) {
      old->sa_sigaction(sig, info, uctx);
      return;
    }
    if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
      old->sa_handler(sig);
      return;
    }
    // Default action: restore it; the faulting instruction runs again and
    // the process ends as it would have without zetile.
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    return;
  }
}

static void install_fault_handlers(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = fault_handler;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  for (int i = 0; i < NUM_FAULT_SIGNALS; ++i) sigaction(fault_signals[i], &sa, &previous[i]);
}

// A stack overflow leaves no stack for the handler: give each thread that
// runs programs an alternate one (kept for the thread's life; a thread that
// already has one, such as Python's main thread under faulthandler, keeps it).
static void ensure_altstack(void) {
  if (tl_altstack) return;
  tl_altstack = true;
  stack_t cur;
  if (sigaltstack(NULL, &cur) == 0 && !(cur.ss_flags & SS_DISABLE)) return;
  size_t size = 64 * 1024;
  void* mem = malloc(size);
  if (!mem) return;
  stack_t ss = {.ss_sp = mem, .ss_size = size, .ss_flags = 0};
  if (sigaltstack(&ss, NULL) != 0) free(mem);
}

// One program. setjmp lives in a function of its own so that nothing of the
// caller's changes between it and a longjmp back from a failed assertion
// (which skips the kernel's and libffi's frames; neither holds resources)
// or from a fault (returns true then).
static __attribute__((noinline)) bool call_program(cpu_executable_t* e, void** avalues,
                                                   const zt_kcall_frame_t* frame,
                                                   zt_cpu_program_ctx_t* pctx) {
  switch (setjmp(pctx->exit)) {
    case 0: break;
    case 1: tl_program = NULL; return false;  // a failed assertion, already recorded
    default: return true;                     // a fault (fault_handler cleared it)
  }
  tl_program = pctx;
  if (e->direct) {
    zt_kcall(&e->kplan, e->fn, frame);
  } else {
    ffi_arg ret;
    ffi_call(&e->cif, FFI_FN(e->fn), &ret, avalues);
  }
  tl_program = NULL;
  return false;
}

static void record_fault(launch_t* l, const int32_t ids[3]) {
  int expected = 0;
  if (!atomic_compare_exchange_strong(&l->faulted, &expected, 1)) return;
  l->fault_signal = tl_fault_signal;
  l->fault_write = tl_fault_write;
  l->fault_address = tl_fault_address;
  memcpy(l->fault_program, ids, sizeof l->fault_program);
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void run_programs(void* ctx, int32_t worker) {
  launch_t* l = ctx;
  int32_t n = l->num_args;
  void* avalues[MAX_FFI_ARGS];
  int32_t ids[6] = {0, 0, 0, (int32_t)l->grid[0], (int32_t)l->grid[1], (int32_t)l->grid[2]};
  zt_cpu_program_ctx_t pctx;
  memset(&pctx, 0, sizeof pctx);
  pctx.error = &l->error;
  pctx.bounds = l->bounds;
  pctx.num_bounds = l->num_bounds;
  zt_cpu_program_ctx_t* pctx_arg = &pctx;
  for (int32_t i = 0; i < n; ++i) avalues[i] = (void*)&l->values[i];
  for (int32_t i = 0; i < 6; ++i) avalues[n + i] = &ids[i];
  avalues[n + 6] = &pctx_arg;
  // The direct call's frame: filled once, then only the program ids change.
  cpu_executable_t* e = l->exe;
  zt_kcall_frame_t frame;
  uint64_t *wx = NULL, *wy = NULL, *wz = NULL;
  if (e->direct) {
    memset(&frame, 0, sizeof frame);  // unused slots are passed too
    const zt_kernel_meta_t* m = &e->base.meta;
    for (int32_t i = 0; i < n; ++i) zt_kcall_set(&e->kplan, &frame, i, m->arg_kinds[i], &l->values[i]);
    for (int32_t i = 0; i < 6; ++i) *zt_kcall_word(&e->kplan, &frame, n + i) = (uint64_t)(int64_t)ids[i];
    *zt_kcall_word(&e->kplan, &frame, n + 6) = (uint64_t)(uintptr_t)pctx_arg;
    wx = zt_kcall_word(&e->kplan, &frame, n);
    wy = zt_kcall_word(&e->kplan, &frame, n + 1);
    wz = zt_kcall_word(&e->kplan, &frame, n + 2);
  }
  uint64_t gx = l->grid[0], gy = l->grid[1];
  ensure_altstack();
  // The launching thread (worker 0) polls for interrupts between programs.
  uint64_t next_poll = worker == 0 ? now_ms() + 20 : UINT64_MAX;
  for (;;) {
    uint64_t begin = atomic_fetch_add(&l->next, l->chunk);
    if (begin >= l->total) break;
    uint64_t end = begin + l->chunk < l->total ? begin + l->chunk : l->total;
    // Program ids counted up from the chunk's first: two divisions a chunk
    // instead of three a program (64-bit divisions; measured ~5 ns of the
    // ~43 ns an empty program cost on the AVX2 EPYC, bench/launch_c.c).
    uint64_t px = begin % gx, pyz = begin / gx;
    uint64_t py = pyz % gy, pz = pyz / gy;
    for (uint64_t p = begin; p < end; ++p) {
      // After a failed assertion, a fault or an interrupt the launch fails:
      // start no more programs.
      if (atomic_load_explicit(&l->error.failed, memory_order_relaxed) ||
          atomic_load_explicit(&l->faulted, memory_order_relaxed) ||
          atomic_load_explicit(&l->stop, memory_order_relaxed))
        return;
      if (next_poll != UINT64_MAX && now_ms() >= next_poll) {
        if (zt_interrupt_requested()) {
          atomic_store(&l->stop, 1);
          return;
        }
        next_poll = now_ms() + 20;
      }
      ids[0] = (int32_t)px;
      ids[1] = (int32_t)py;
      ids[2] = (int32_t)pz;
      if (wx) {
        *wx = px;  // ids are never negative
        *wy = py;
        *wz = pz;
      }
      if (call_program(e, avalues, &frame, &pctx)) record_fault(l, ids);
      if (++px == gx) {
        px = 0;
        if (++py == gy) {
          py = 0;
          ++pz;
        }
      }
    }
  }
}

static const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    default: return "a signal";
  }
}

static zt_status_t cpu_launch_checked(zt_executable_t* base, const uint32_t grid[3],
                                      const zt_arg_t* args, const uint64_t* arg_bytes) {
  cpu_executable_t* e = (cpu_executable_t*)base;
  zt_packed_arg_t values[ZT_MAX_KERNEL_ARGS];
  uint64_t bounds[ZT_MAX_KERNEL_ARGS][2];
  int32_t n = base->meta.num_args;
  for (int32_t i = 0; i < n; ++i) {
    zt_arg_pack(&args[i], &values[i]);
    if (arg_bytes) {
      bool ptr = args[i].kind == ZT_PTR;
      bounds[i][0] = ptr ? args[i].value.ptr : 0;
      bounds[i][1] = ptr ? arg_bytes[i] : 0;
    }
  }
  // Fields set one by one: an initializer would also clear the 1 KB error
  // message, a tenth of a one-program launch.
  launch_t l;
  l.exe = e;
  l.values = values;
  l.num_args = n;
  l.bounds = arg_bytes ? bounds : NULL;
  l.num_bounds = arg_bytes ? n : 0;
  l.fault_signal = 0;
  l.fault_write = -1;
  l.fault_address = 0;
  memset(l.fault_program, 0, sizeof l.fault_program);
  memcpy(l.grid, grid, sizeof l.grid);
  l.total = (uint64_t)grid[0] * grid[1] * grid[2];
  // One program runs on the caller: no need to ask how many threads exist.
  // Nor do grids measured to be short, unless ZETILE_NUM_THREADS asks for
  // threads (tests of concurrent kernels do); see PROBE_MIN for the rest.
  uint64_t alone = pace_get(&e->alone);
  int32_t threads = 1;
  bool probe = false, pool_better = false;
  if (l.total > 1) {
    if (zt_pool_threads_forced()) {
      threads = zt_pool_concurrency();
    } else if (alone == 0 || alone * l.total >= POOL_MIN_NS) {
      // Unmeasured: the pool first (a long kernel run once should have it),
      // then the caller alone, then whichever was faster.
      uint64_t pool = pace_get(&e->pool);
      pool_better = pool == 0 || (alone != 0 && pool * 10 < alone * 9);
      unsigned every = atomic_load_explicit(&e->probe_every, memory_order_relaxed);
      probe = alone != 0 && pool != 0 &&
              (atomic_fetch_add_explicit(&e->eligible, 1, memory_order_relaxed) + 1) %
                      (every ? every : PROBE_MIN) == 0;
      if (pool_better != probe) threads = zt_pool_concurrency();
    }
  }
  if ((uint64_t)threads > l.total) threads = (int32_t)l.total;
  // ~8 chunks per thread balances uneven programs without much contention.
  l.chunk = l.total / ((uint64_t)threads * 8);
  if (l.chunk == 0) l.chunk = 1;
  atomic_init(&l.next, 0);
  atomic_init(&l.error.failed, 0);
  l.error.out_of_bounds = 0;
  atomic_init(&l.stop, 0);
  atomic_init(&l.faulted, 0);
  l.error.message[0] = 0;
  pthread_once(&handlers_once, install_fault_handlers);
  // Timed while unmeasured and for grids (one clock read costs ~20 ns).
  bool timed = alone == 0 || l.total > 1;
  uint64_t t0 = timed ? now_ns() : 0;
  ZT_RETURN_IF_ERROR(zt_pool_run(run_programs, &l, threads));
  if (timed && !atomic_load(&l.faulted) && !atomic_load(&l.stop)) {
    // Wall time per program, the work and (on the pool) the hand-off: what
    // the choice compares.
    uint64_t took = (now_ns() - t0) / l.total;
    pace_add(threads > 1 ? &e->pool : &e->alone, took);
    if (probe) {
      // A probe that confirms the choice waits twice as long for the next.
      uint64_t a = pace_get(&e->alone), p = pace_get(&e->pool);
      bool still = (p * 10 < a * 9) == pool_better;
      unsigned every = atomic_load_explicit(&e->probe_every, memory_order_relaxed);
      if (!every) every = PROBE_MIN;
      every = still ? (every < PROBE_MAX ? 2 * every : PROBE_MAX) : PROBE_MIN;
      atomic_store_explicit(&e->probe_every, every, memory_order_relaxed);
    }
  }
  if (atomic_load(&l.faulted))
    return zt_make_status(
        ZT_STATUS_DEVICE_FAULT,
        "kernel %s: program (%d, %d, %d) stopped by %s %s address 0x%llx (outside the "
        "memory it may use: an index or pointer out of its buffers' bounds?); writes made "
        "before the fault stay in memory",
        base->meta.kernel, l.fault_program[0], l.fault_program[1], l.fault_program[2],
        signal_name(l.fault_signal),
        l.fault_write == 1 ? "writing" : l.fault_write == 0 ? "reading" : "at",
        (unsigned long long)l.fault_address);
  if (atomic_load(&l.stop))
    return zt_make_status(ZT_STATUS_LAUNCH_INTERRUPTED, "kernel %s: launch interrupted",
                          base->meta.kernel);
  if (atomic_load(&l.error.failed))
    return zt_make_status(l.error.out_of_bounds ? ZT_STATUS_DEVICE_FAULT : ZT_STATUS_DEVICE_ASSERT,
                          "kernel %s: %s", base->meta.kernel, l.error.message);
  return NULL;
}

static zt_status_t cpu_launch(zt_executable_t* base, const uint32_t grid[3],
                              const zt_arg_t* args) {
  return cpu_launch_checked(base, grid, args, NULL);
}

static const zt_backend_vtable_t cpu_vtable = {
    /* .destroy            = */ cpu_destroy,
    /* .synchronize        = */ NULL,  // launches are synchronous
    /* .buffer_alloc       = */ cpu_buffer_alloc,
    /* .buffer_free        = */ cpu_buffer_free,
    /* .buffer_write       = */ cpu_buffer_write,
    /* .buffer_read        = */ cpu_buffer_read,
    /* .executable_create  = */ cpu_executable_create,
    /* .executable_destroy = */ cpu_executable_destroy,
    /* .executable_stats   = */ NULL,
    /* .launch             = */ cpu_launch,
    /* .launch_checked     = */ cpu_launch_checked,
};

// --- discovery -----------------------------------------------------------------

static void cpu_fill_info(zt_device_info_t* info) {
  memset(info, 0, sizeof *info);
  snprintf(info->name, sizeof info->name, "cpu");
  snprintf(info->backend, sizeof info->backend, "cpu");
  snprintf(info->target, sizeof info->target, "cpu");
  snprintf(info->description, sizeof info->description, "host CPU");
  FILE* f = fopen("/proc/cpuinfo", "r");
  if (f) {
    char line[512];
    while (fgets(line, sizeof line, f)) {
      if (strncmp(line, "model name", 10) != 0) continue;
      char* colon = strchr(line, ':');
      if (!colon) break;
      colon++;
      while (*colon == ' ' || *colon == '\t') colon++;
      colon[strcspn(colon, "\n")] = 0;
      snprintf(info->description, sizeof info->description, "%s", colon);
      break;
    }
    fclose(f);
  }
  snprintf(info->driver_version, sizeof info->driver_version, "zetile %s", ZT_VERSION_STRING);
  info->compute_units = zt_pool_concurrency();
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  info->memory_bytes = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
  info->host_memory = true;
  info->compat = false;
}

static zt_status_t cpu_enumerate(zt_device_info_t* out, int32_t capacity, int32_t* count) {
  *count = 1;
  if (capacity >= 1) cpu_fill_info(&out[0]);
  return NULL;
}

static zt_status_t cpu_open(int32_t index, zt_device_t** out) {
  zt_device_t* d = calloc(1, sizeof *d);
  if (!d) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "cpu device");
  zt_device_initialize(d, &cpu_vtable);
  cpu_fill_info(&d->info);
  *out = d;
  return NULL;
}

const zt_backend_t zt_cpu_backend = {
    /* .api_version = */ ZT_BACKEND_API_VERSION,
    /* .name        = */ "cpu",
    /* .enumerate   = */ cpu_enumerate,
    /* .open        = */ cpu_open,
};

// --- test hook -----------------------------------------------------------------

zt_status_t zt_cpu_executable_create_from_function(zt_device_t* device,
                                                   const char* meta_text, void* fn,
                                                   zt_executable_t** out) {
  if (!device || !meta_text || !fn || !out)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "NULL argument");
  if (device->vtable != &cpu_vtable)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "not a CPU device");
  cpu_executable_t* e = calloc(1, sizeof *e);
  if (!e) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "cpu executable");
  zt_status_t s = zt_kernel_meta_parse(meta_text, strlen(meta_text), &e->base.meta);
  if (!s) s = prep_cif(e, &e->base.meta);
  if (s) {
    free(e);
    return s;
  }
  e->fn = fn;
  atomic_init(&e->base.ref_count, 1);
  e->base.device = device;
  zt_device_retain(device);
  *out = &e->base;
  return NULL;
}
