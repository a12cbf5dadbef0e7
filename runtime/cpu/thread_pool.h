// A persistent pool of worker threads for the CPU backend. Workers have big
// stacks (CPU kernels keep their tensors on the stack); a job runs on every
// participating worker and on the calling thread, which blocks until all are
// done. Jobs from different threads are serialized.
#ifndef ZETILE_RUNTIME_CPU_THREAD_POOL_H_
#define ZETILE_RUNTIME_CPU_THREAD_POOL_H_

#include <stdbool.h>
#include <stdint.h>

#include "zetile/status.h"

/// A job body: `worker` is 0 for the calling thread, 1..n for workers.
typedef void (*zt_pool_fn_t)(void* ctx, int32_t worker);

/// Number of threads a job can use (workers + the caller): $ZETILE_NUM_THREADS
/// or the CPUs this process may run on.
int32_t zt_pool_concurrency(void);

/// Whether $ZETILE_NUM_THREADS sets the thread count (else it is automatic).
bool zt_pool_threads_forced(void);

/// Runs fn on min(participants, concurrency) threads, the caller included,
/// and returns when every one has returned. Starts the pool on first use
/// (and again in a forked child, which inherits no threads).
zt_status_t zt_pool_run(zt_pool_fn_t fn, void* ctx, int32_t participants);

#endif  // ZETILE_RUNTIME_CPU_THREAD_POOL_H_
