// The CPU backend's persistent thread pool. One process-wide pool: workers
// wait for a new job, spinning briefly first (back-to-back launches then
// start without a futex wake-up, which costs tens of microseconds) and then
// sleeping on a condition variable. ZETILE_SPIN=0 disables spinning.
// Workers run as SCHED_BATCH (see worker_main).
//
// A job is open while its caller runs its own share; a worker enters it only
// while it is open (one compare-and-swap on `job`), so the caller closes it
// when its work function returns and then waits only for the workers that
// entered: a worker that is slow to wake (asleep, or descheduled on a busy
// machine) no longer holds up a short launch, and never touches a job whose
// caller has returned. Wake-ups and the caller's wait use the mutex and a
// system call only when someone sleeps.
#include "cpu/thread_pool.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_STACK_MIB 64
#define DEFAULT_SPIN 4000  // iterations of a pause loop: roughly 20-200 us

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

// Kernels may write large outputs with streaming (non-temporal) stores
// (lowering/cpu/cpu_store_nt.c), which x86 orders weakly: another thread
// could see the launch finished before the data. Each participant fences
// once after its share of programs (one sfence per thread and launch; one per
// program cost ~10% of a streamed vector add on the AVX2 EPYC).
#if defined(__x86_64__) || defined(__i386__)
#define fence_streaming_stores() __builtin_ia32_sfence()
#else
#define fence_streaming_stores() atomic_thread_fence(memory_order_seq_cst)
#endif

// `job` packs the job's sequence number (high 32 bits), whether it is open
// (bit 31) and how many workers are inside it (low 31 bits).
#define JOB_OPEN ((uint64_t)1 << 31)
#define JOB_ACTIVE_MASK (JOB_OPEN - 1)
#define JOB_SEQ(j) ((j) >> 32)

typedef struct pool_s {
  pthread_mutex_t mu;
  pthread_cond_t wake;      // workers sleep here for a new job
  pthread_cond_t done;      // the caller sleeps here for the workers inside a job
  _Atomic uint64_t job;
  atomic_int sleepers;      // workers asleep (or about to sleep) on `wake`
  atomic_int caller_waits;  // the caller asleep (or about to) on `done`
  zt_pool_fn_t fn;
  void* ctx;
  atomic_int participants;  // threads the current job may use, caller included
  int32_t num_workers;
  int32_t spin;
  pthread_t* threads;
} pool_t;

typedef struct worker_arg_s {
  pool_t* pool;
  int32_t index;  // 1-based
} worker_arg_t;

// Serializes jobs and pool creation. Reinitialized in a forked child, which
// inherits neither the workers nor a consistent lock state.
static pthread_mutex_t run_mu = PTHREAD_MUTEX_INITIALIZER;
static pool_t* the_pool;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static atomic_int affinity_cpus;  // 0 until counted (sched_getaffinity, once)

static void atfork_child(void) {
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  memcpy(&run_mu, &fresh, sizeof fresh);
  the_pool = NULL;  // its threads do not exist here; leak the struct
  atomic_store(&affinity_cpus, 0);  // the child may run with another mask
}

static void register_atfork(void) { pthread_atfork(NULL, NULL, atfork_child); }

// The CPUs this process may run on, counted once: launches ask on every
// call, and the system call was a tenth of a short launch's cost.
static int32_t cpus_available(void) {
  int n = atomic_load_explicit(&affinity_cpus, memory_order_relaxed);
  if (n > 0) return n;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) n = CPU_COUNT(&set);
  if (n <= 0) {
    long c = sysconf(_SC_NPROCESSORS_ONLN);
    n = c > 0 ? (int)c : 1;
  }
  atomic_store_explicit(&affinity_cpus, n, memory_order_relaxed);
  return n;
}

bool zt_pool_threads_forced(void) {
  const char* env = getenv("ZETILE_NUM_THREADS");
  return env && atoi(env) > 0;
}

int32_t zt_pool_concurrency(void) {
  // getenv stays per call (no system call; tests and tools change it).
  const char* env = getenv("ZETILE_NUM_THREADS");
  if (env && env[0]) {
    int v = atoi(env);
    if (v > 0) return v > 1024 ? 1024 : v;
  }
  return cpus_available();
}

// Enters job `seq` if it is still open; false if it closed or moved on.
static bool enter_job(pool_t* pool, uint64_t seq) {
  uint64_t j = atomic_load(&pool->job);
  while (JOB_SEQ(j) == seq && (j & JOB_OPEN)) {
    if (atomic_compare_exchange_weak(&pool->job, &j, j + 1)) return true;
  }
  return false;
}

static void leave_job(pool_t* pool) {
  uint64_t prev = atomic_fetch_sub(&pool->job, 1);
  // The last worker out of a closed job wakes a caller that went to sleep.
  if ((prev & JOB_ACTIVE_MASK) == 1 && !(prev & JOB_OPEN) &&
      atomic_load(&pool->caller_waits)) {
    pthread_mutex_lock(&pool->mu);
    pthread_cond_signal(&pool->done);
    pthread_mutex_unlock(&pool->mu);
  }
}

static void* worker_main(void* p) {
  worker_arg_t* arg = p;
  pool_t* pool = arg->pool;
  int32_t index = arg->index;
  free(arg);
#ifdef SCHED_BATCH
  // A woken worker whose CPU is busy waits for the next tick instead of
  // preempting what runs there: on a machine whose CPUs other processes
  // keep busy, that was often the launching thread itself, which then
  // waited for its turn while the worker ran every program (pool launches
  // 1.5-6x slower than one thread, median, load 6-10 on 2 CPUs; with batch
  // workers, equal). A free CPU runs a woken worker at once either way.
  // Real-time threads (inherited from the launching thread) keep their
  // policy.
  if (sched_getscheduler(0) == SCHED_OTHER) {
    struct sched_param sp = {0};
    sched_setscheduler(0, SCHED_BATCH, &sp);  // best effort
  }
#endif
  uint64_t seen = 0;  // jobs count from 1: one published before we started is ours too
  for (;;) {
    uint64_t seq = JOB_SEQ(atomic_load(&pool->job));
    for (int32_t i = 0; i < pool->spin && seq == seen; ++i) {
      cpu_relax();
      seq = JOB_SEQ(atomic_load_explicit(&pool->job, memory_order_relaxed));
    }
    if (seq == seen) {
      pthread_mutex_lock(&pool->mu);
      // sleepers before re-reading the job, and the caller publishes before
      // reading sleepers (both sequentially consistent): one of us sees the
      // other, so a job is never published to a worker that sleeps on.
      atomic_fetch_add(&pool->sleepers, 1);
      while ((seq = JOB_SEQ(atomic_load(&pool->job))) == seen)
        pthread_cond_wait(&pool->wake, &pool->mu);
      atomic_fetch_sub(&pool->sleepers, 1);
      pthread_mutex_unlock(&pool->mu);
    }
    seen = seq;
    if (index >= atomic_load(&pool->participants)) continue;  // not needed this time
    if (!enter_job(pool, seq)) continue;  // the caller finished it alone
    pool->fn(pool->ctx, index);
    fence_streaming_stores();
    leave_job(pool);
  }
  return NULL;
}

static zt_status_t pool_create(pool_t** out) {
  int32_t n = zt_pool_concurrency() - 1;
  pool_t* pool = calloc(1, sizeof *pool);
  if (!pool) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "thread pool");
  pthread_mutex_init(&pool->mu, NULL);
  pthread_cond_init(&pool->wake, NULL);
  pthread_cond_init(&pool->done, NULL);
  atomic_init(&pool->job, 0);
  atomic_init(&pool->sleepers, 0);
  atomic_init(&pool->caller_waits, 0);
  atomic_init(&pool->participants, 0);
  const char* spin = getenv("ZETILE_SPIN");
  pool->spin = spin && spin[0] ? atoi(spin) : DEFAULT_SPIN;
  if (pool->spin < 0) pool->spin = 0;
  pool->threads = calloc((size_t)(n > 0 ? n : 1), sizeof(pthread_t));
  if (!pool->threads) {
    free(pool);
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "thread pool");
  }
  size_t stack = (size_t)DEFAULT_STACK_MIB << 20;
  const char* env = getenv("ZETILE_CPU_STACK_MIB");
  if (env && atoi(env) > 0) stack = (size_t)atoi(env) << 20;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, stack);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  for (int32_t i = 0; i < n; ++i) {
    worker_arg_t* arg = malloc(sizeof *arg);
    if (!arg) break;
    arg->pool = pool;
    arg->index = i + 1;
    if (pthread_create(&pool->threads[i], &attr, worker_main, arg) != 0) {
      free(arg);
      break;  // run with the workers we have
    }
    pool->num_workers++;
  }
  pthread_attr_destroy(&attr);
  *out = pool;
  return NULL;
}

// Closes the job (no worker enters it any more) and waits for those inside.
static void finish_job(pool_t* pool) {
  uint64_t j = atomic_fetch_and(&pool->job, ~JOB_OPEN) & ~JOB_OPEN;
  for (int32_t i = 0; i < pool->spin && (j & JOB_ACTIVE_MASK); ++i) {
    cpu_relax();
    j = atomic_load(&pool->job);
  }
  if (!(j & JOB_ACTIVE_MASK)) return;
  pthread_mutex_lock(&pool->mu);
  atomic_store(&pool->caller_waits, 1);
  while (atomic_load(&pool->job) & JOB_ACTIVE_MASK) pthread_cond_wait(&pool->done, &pool->mu);
  atomic_store(&pool->caller_waits, 0);
  pthread_mutex_unlock(&pool->mu);
}

zt_status_t zt_pool_run(zt_pool_fn_t fn, void* ctx, int32_t participants) {
  if (participants <= 1) {
    // One thread: the caller alone, no pool state touched (nor its lock).
    fn(ctx, 0);
    fence_streaming_stores();
    return NULL;
  }
  pthread_once(&atfork_once, register_atfork);
  pthread_mutex_lock(&run_mu);
  if (!the_pool) {
    zt_status_t s = pool_create(&the_pool);
    if (s) {
      pthread_mutex_unlock(&run_mu);
      return s;
    }
  }
  pool_t* pool = the_pool;
  int32_t workers = participants - 1;
  if (workers > pool->num_workers) workers = pool->num_workers;
  if (workers > 0) {
    // Workers read fn/ctx only inside an open job, and the previous job's
    // workers have all left it (finish_job), so these plain writes are safe.
    pool->fn = fn;
    pool->ctx = ctx;
    atomic_store(&pool->participants, workers + 1);
    uint64_t seq = JOB_SEQ(atomic_load(&pool->job)) + 1;
    atomic_store(&pool->job, (seq << 32) | JOB_OPEN);
    if (atomic_load(&pool->sleepers) > 0) {
      pthread_mutex_lock(&pool->mu);
      pthread_cond_broadcast(&pool->wake);
      pthread_mutex_unlock(&pool->mu);
    }
  }
  fn(ctx, 0);
  fence_streaming_stores();
  if (workers > 0) finish_job(pool);
  pthread_mutex_unlock(&run_mu);
  return NULL;
}
