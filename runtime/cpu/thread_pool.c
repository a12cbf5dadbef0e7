// The CPU backend's persistent thread pool. One process-wide pool: workers
// wait for the job generation to change, spinning briefly first (back-to-back
// launches then start without a futex wake-up, which costs tens of
// microseconds) and then sleeping on a condition variable. The caller waits
// for the workers the same way. ZETILE_SPIN=0 disables spinning.
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
#define DEFAULT_SPIN 4000  // iterations of a pause loop: roughly 20-100 us

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define cpu_relax() __asm__ __volatile__("yield")
#else
#define cpu_relax() ((void)0)
#endif

typedef struct pool_s {
  pthread_mutex_t mu;
  pthread_cond_t wake;
  pthread_cond_t done;
  atomic_uint_fast64_t generation;  // bumped (under mu) to publish a job
  zt_pool_fn_t fn;
  void* ctx;
  atomic_int participants;  // threads in the current job, caller included
  atomic_int pending;       // participating workers still running it
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

static void atfork_child(void) {
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  memcpy(&run_mu, &fresh, sizeof fresh);
  the_pool = NULL;  // its threads do not exist here; leak the struct
}

static void register_atfork(void) { pthread_atfork(NULL, NULL, atfork_child); }

int32_t zt_pool_concurrency(void) {
  const char* env = getenv("ZETILE_NUM_THREADS");
  if (env && atoi(env) > 0) return atoi(env) > 1024 ? 1024 : atoi(env);
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int32_t)n : 1;
}

static void* worker_main(void* p) {
  worker_arg_t* arg = p;
  pool_t* pool = arg->pool;
  int32_t index = arg->index;
  free(arg);
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = atomic_load(&pool->generation);
    for (int32_t i = 0; i < pool->spin && g == seen; ++i) {
      cpu_relax();
      g = atomic_load(&pool->generation);
    }
    if (g == seen) {
      pthread_mutex_lock(&pool->mu);
      while ((g = atomic_load(&pool->generation)) == seen)
        pthread_cond_wait(&pool->wake, &pool->mu);
      pthread_mutex_unlock(&pool->mu);
    }
    seen = g;
    if (index >= atomic_load(&pool->participants)) continue;  // not needed this time
    pool->fn(pool->ctx, index);
    if (atomic_fetch_sub(&pool->pending, 1) == 1) {
      pthread_mutex_lock(&pool->mu);
      pthread_cond_signal(&pool->done);
      pthread_mutex_unlock(&pool->mu);
    }
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
  atomic_init(&pool->generation, 0);
  atomic_init(&pool->participants, 0);
  atomic_init(&pool->pending, 0);
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

zt_status_t zt_pool_run(zt_pool_fn_t fn, void* ctx, int32_t participants) {
  pthread_once(&atfork_once, register_atfork);
  pthread_mutex_lock(&run_mu);
  if (!the_pool && participants > 1) {
    zt_status_t s = pool_create(&the_pool);
    if (s) {
      pthread_mutex_unlock(&run_mu);
      return s;
    }
  }
  pool_t* pool = the_pool;
  int32_t workers = participants - 1;
  if (!pool || workers < 0) workers = 0;
  if (pool && workers > pool->num_workers) workers = pool->num_workers;
  if (workers > 0) {
    // Only participants read fn/ctx, and the previous job's participants have
    // all finished (we waited for them), so these plain writes are safe.
    pool->fn = fn;
    pool->ctx = ctx;
    atomic_store(&pool->participants, workers + 1);
    atomic_store(&pool->pending, workers);
    pthread_mutex_lock(&pool->mu);
    atomic_fetch_add(&pool->generation, 1);
    pthread_cond_broadcast(&pool->wake);
    pthread_mutex_unlock(&pool->mu);
  }
  fn(ctx, 0);
  if (workers > 0) {
    for (int32_t i = 0; i < pool->spin && atomic_load(&pool->pending) > 0; ++i) cpu_relax();
    if (atomic_load(&pool->pending) > 0) {
      pthread_mutex_lock(&pool->mu);
      while (atomic_load(&pool->pending) > 0) pthread_cond_wait(&pool->done, &pool->mu);
      pthread_mutex_unlock(&pool->mu);
    }
  }
  pthread_mutex_unlock(&run_mu);
  return NULL;
}
