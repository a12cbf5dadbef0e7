// Compiles under a time budget. MLIR's pass manager cannot be interrupted
// through its C API, and a compile can run for minutes (issue 17: tl.sort
// of a cumsum for pvc, 200-320 s inside upstream's XeGPU distribution), so
// the bound is a process: zetile-compile-worker (jit/compile_worker.c)
// compiles and streams the stages it begins and finishes; past the deadline
// it is killed and the stages become the error message. A worker serves
// one compile after another, so only a process's first compile (and the
// first of each parallel one) pays for starting it and loading MLIR, about
// 45 ms; the calling process itself then never loads MLIR.
#include "compile_budget.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/strbuf.h"

extern char** environ;

#define WORKER_NAME "zetile-compile-worker"

double zt_compile_budget_seconds(void) {
  const char* e = getenv("ZETILE_COMPILE_TIMEOUT");
  if (!e || !e[0]) return ZT_COMPILE_TIMEOUT_DEFAULT;
  if (strcmp(e, "off") == 0 || strcmp(e, "none") == 0) return 0;
  char* end = NULL;
  double s = strtod(e, &end);
  if (end == e) return ZT_COMPILE_TIMEOUT_DEFAULT;  // not a number: the default
  return s > 0 ? s : 0;
}

bool zt_compile_budget_explicit(void) {
  const char* e = getenv("ZETILE_COMPILE_TIMEOUT");
  return e && e[0] && zt_compile_budget_seconds() > 0;
}

// Why no worker ran a compile: for the error when the limit was asked for,
// and the warning when the default limit is dropped. `installed` is false
// when there is simply no worker beside libzetile (a static link, a C
// install without it): documented, so no warning.
typedef struct {
  char text[768];
  bool installed;
} why_t;

static bool find_worker(char* out, size_t size, why_t* why) {
  const char* env = getenv("ZETILE_COMPILE_WORKER");
  why->installed = true;
  if (env && env[0]) {
    snprintf(out, size, "%s", env);
    if (access(out, X_OK) == 0) return true;
    snprintf(why->text, sizeof why->text, "ZETILE_COMPILE_WORKER=%s is not executable (%s)",
             out, strerror(errno));
    return false;
  }
  Dl_info info;
  if (dladdr((void*)zt_compile_budgeted, &info) && info.dli_fname) {
    const char* slash = strrchr(info.dli_fname, '/');
    if (slash) {
      snprintf(out, size, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname,
               WORKER_NAME);
      if (access(out, X_OK) == 0) return true;
      snprintf(why->text, sizeof why->text, "no executable %s (%s)", out, strerror(errno));
      why->installed = false;
      return false;
    }
  }
  snprintf(why->text, sizeof why->text, "libzetile's folder is unknown, so is its %s",
           WORKER_NAME);
  why->installed = false;
  return false;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// --- the process's workers -----------------------------------------------
// A pool: a compile takes an idle worker or starts one, and gives it back
// after, so independent compiles run in parallel, each in a worker of its
// own, up to one per core (at most MAX_LIVE, at least 2); past that a
// compile waits for a worker (each holds MLIR's memory, ~120 MB here). An
// idle worker exits by itself after a while (jit/compile_worker.c).
typedef struct {
  pid_t pid;  // 0: free slot; -1: being started
  int to;     // its stdin
  int from;   // its stdout and stderr
  bool busy;
  char* path;  // its executable (ZETILE_COMPILE_WORKER may change)
} worker_t;

#define MAX_LIVE 8
static worker_t g_pool[MAX_LIVE];
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_freed = PTHREAD_COND_INITIALIZER;  // a worker given back or gone
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_max_live = 2;

// A forked child does not share its parent's workers (two processes talking
// on one pipe would mix their requests): it closes its copies of their
// pipes and starts its own.
static void forget_workers_in_child(void) {
  pthread_mutex_init(&g_lock, NULL);
  pthread_cond_init(&g_freed, NULL);
  for (int i = 0; i < MAX_LIVE; ++i) {
    if (g_pool[i].pid > 0) {
      close(g_pool[i].to);
      close(g_pool[i].from);
    }
    free(g_pool[i].path);
    g_pool[i] = (worker_t){0, -1, -1, false, NULL};
  }
}

static void init_once(void) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  g_max_live = cores < 2 ? 2 : cores > MAX_LIVE ? MAX_LIVE : (int)cores;
  pthread_atfork(NULL, NULL, forget_workers_in_child);
}

// Ends a worker taken from the pool (killing it first if asked); returns
// its wait status.
static int stop_worker(worker_t* w, bool kill_it) {
  int wstatus = 0;
  if (kill_it) kill(w->pid, SIGKILL);
  close(w->to);
  close(w->from);
  while (waitpid(w->pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  pthread_mutex_lock(&g_lock);
  free(w->path);
  *w = (worker_t){0, -1, -1, false, NULL};
  pthread_cond_broadcast(&g_freed);
  pthread_mutex_unlock(&g_lock);
  return wstatus;
}

static bool start_worker(worker_t* slot, const char* path, why_t* why) {
  char* path_copy = strdup(path);
  if (!path_copy) {
    snprintf(why->text, sizeof why->text, "out of memory starting %s", path);
    return false;
  }
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC)) {
    snprintf(why->text, sizeof why->text, "no pipe for %s (%s)", path, strerror(errno));
    free(path_copy);
    return false;
  }
  if (pipe2(out, O_CLOEXEC)) {
    snprintf(why->text, sizeof why->text, "no pipe for %s (%s)", path, strerror(errno));
    close(in[0]);
    close(in[1]);
    free(path_copy);
    return false;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, out[1], 2);
  char* argv[] = {path_copy, NULL};
  pid_t pid;
  int rc = posix_spawn(&pid, path_copy, &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(out[1]);
  if (rc != 0) {
    snprintf(why->text, sizeof why->text, "%s could not be started (posix_spawn: %s)", path,
             strerror(rc));
    close(in[1]);
    close(out[0]);
    free(path_copy);
    return false;
  }
  pthread_mutex_lock(&g_lock);
  *slot = (worker_t){pid, in[1], out[0], true, path_copy};
  pthread_mutex_unlock(&g_lock);
  return true;
}

// Whether idle worker p has exited (its idle exit, a kill): then it is
// reaped and its slot freed (called with g_lock held). Without this, a
// compile after a quiet spell met one exited worker after another (the pool
// holds up to one per core) and, out of retries, ran in process without its
// time limit (a 1 ms limit that did not raise in a CI run).
static bool reap_if_gone(worker_t* p) {
  int wstatus;
  pid_t r = waitpid(p->pid, &wstatus, WNOHANG);
  // ECHILD: the caller set SIGCHLD to SIG_IGN, so the kernel reaped it.
  if (r != p->pid && !(r < 0 && errno == ECHILD)) return false;
  close(p->to);
  close(p->from);
  free(p->path);
  *p = (worker_t){0, -1, -1, false, NULL};
  return true;
}

// An idle worker, else a new one (*fresh), else (all busy) the next one
// given back; NULL if none can be started (`why` says why).
static worker_t* take_worker(bool* fresh, why_t* why) {
  char path[4096];
  *fresh = false;
  if (!find_worker(path, sizeof path, why)) return NULL;
  pthread_mutex_lock(&g_lock);
  for (;;) {
    worker_t* w = NULL;
    worker_t* stale = NULL;  // an idle worker of another executable
    worker_t* free_slot = NULL;
    int live = 0;
    for (int i = 0; i < MAX_LIVE; ++i) {
      worker_t* p = &g_pool[i];
      if (p->pid > 0 && !p->busy && reap_if_gone(p)) pthread_cond_broadcast(&g_freed);
      if (p->pid == 0) {
        if (!free_slot) free_slot = p;
        continue;
      }
      ++live;
      if (p->pid > 0 && !p->busy) {
        if (strcmp(p->path, path) == 0) {
          if (!w) w = p;
        } else if (!stale) {
          stale = p;
        }
      }
    }
    if (w) {
      w->busy = true;
      pthread_mutex_unlock(&g_lock);
      return w;
    }
    if (stale) {
      stale->busy = true;
      pthread_mutex_unlock(&g_lock);
      stop_worker(stale, false);
      pthread_mutex_lock(&g_lock);
      continue;
    }
    if (free_slot && live < g_max_live) {
      *free_slot = (worker_t){-1, -1, -1, true, NULL};  // reserved while it starts
      pthread_mutex_unlock(&g_lock);
      if (start_worker(free_slot, path, why)) {
        *fresh = true;
        return free_slot;
      }
      pthread_mutex_lock(&g_lock);
      *free_slot = (worker_t){0, -1, -1, false, NULL};
      pthread_cond_broadcast(&g_freed);
      pthread_mutex_unlock(&g_lock);
      return NULL;
    }
    pthread_cond_wait(&g_freed, &g_lock);
  }
}

static void give_back(worker_t* w) {
  pthread_mutex_lock(&g_lock);
  w->busy = false;
  pthread_cond_broadcast(&g_freed);
  pthread_mutex_unlock(&g_lock);
}

// Writes the request; false if the worker is gone (EPIPE). SIGPIPE is kept
// from this thread meanwhile (the process's disposition is the caller's).
static bool send_request(const worker_t* w, const char* data, size_t n) {
  sigset_t pipe_set, old_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  bool ok = true;
  for (size_t off = 0; off < n;) {
    ssize_t wr = write(w->to, data + off, n - off);
    if (wr < 0 && errno == EINTR) continue;
    if (wr <= 0) {
      ok = false;
      if (errno == EPIPE) {
        struct timespec zero = {0, 0};
        sigtimedwait(&pipe_set, NULL, &zero);  // drop the pending SIGPIPE
      }
      break;
    }
    off += (size_t)wr;
  }
  pthread_sigmask(SIG_SETMASK, &old_set, NULL);
  return ok;
}

static void build_request(const char* tile_ir, size_t size, const zt_compile_options_t* o,
                          zt_strbuf_t* req) {
  const char* target = o->target ? o->target : "cpu";
  char cwd[4096];
  if (!getcwd(cwd, sizeof cwd)) cwd[0] = 0;
  zt_strbuf_t env;
  zt_strbuf_init(&env);
  for (char** e = environ; *e; ++e) zt_strbuf_append(&env, *e, strlen(*e) + 1);
  zt_strbuf_printf(req, "compile %zu %d %d %lld %zu %zu %zu\n", strlen(target),
                   (int)o->num_warps, o->compat ? 1 : 0,
                   o->igc_options ? (long long)strlen(o->igc_options) : -1LL, strlen(cwd),
                   env.size, size);
  zt_strbuf_puts(req, target);
  if (o->igc_options) zt_strbuf_puts(req, o->igc_options);
  zt_strbuf_puts(req, cwd);
  if (env.size) zt_strbuf_append(req, env.data, env.size);
  zt_strbuf_append(req, tile_ir, size);
  zt_strbuf_deinit(&env);
}

// What the worker said about one compile.
typedef struct {
  char open_stage[200];  // begun, not finished
  double open_since;     // when it began (seconds after the request)
  zt_strbuf_t done;      // "label ms, ..."
  zt_strbuf_t other;     // anything else it printed (a crash's last words)
  bool have_result;
  int code;
  size_t need;  // result bytes
} reply_t;

static void reply_reset(reply_t* r) {
  r->open_stage[0] = 0;
  r->open_since = 0;
  zt_strbuf_clear(&r->done);
  zt_strbuf_clear(&r->other);
  r->have_result = false;
  r->code = 0;
  r->need = 0;
}

// Consumes the complete lines at the front of `buf` (and the result once
// all of its bytes are there); returns how many bytes it used.
static size_t parse_reply(const char* buf, size_t n, double t, reply_t* r, bool* complete) {
  size_t used = 0;
  *complete = false;
  while (used < n) {
    if (r->have_result) {
      if (n - used >= r->need) *complete = true;
      return used;
    }
    const char* line = buf + used;
    const char* nl = memchr(line, '\n', n - used);
    if (!nl) return used;
    size_t len = (size_t)(nl - line);
    if (len > 20 && strncmp(line, "zetile-stage: begin ", 20) == 0) {
      snprintf(r->open_stage, sizeof r->open_stage, "%.*s", (int)(len - 20), line + 20);
      r->open_since = t;
    } else if (len > 19 && strncmp(line, "zetile-stage: done ", 19) == 0) {
      zt_strbuf_printf(&r->done, "%s%.*s ms", r->done.size ? ", " : "", (int)(len - 19),
                       line + 19);
      r->open_stage[0] = 0;
    } else if (len > 15 && strncmp(line, "zetile-result: ", 15) == 0) {
      unsigned long long need = 0;
      if (sscanf(line + 15, "%d %llu", &r->code, &need) == 2) {
        r->have_result = true;
        r->need = (size_t)need;
      }
    } else if (r->other.size < 4096) {
      zt_strbuf_append(&r->other, line, len + 1);
    }
    used += len + 1;
  }
  if (r->have_result && r->need == 0) *complete = true;
  return used;
}

// "where the time went": finished stages with their times, and the stage
// begun but not finished.
static void describe_stages(const reply_t* r, double elapsed, zt_strbuf_t* sb) {
  if (r->open_stage[0])
    zt_strbuf_printf(sb, "%.1f s of it in %s (still running)", elapsed - r->open_since,
                     r->open_stage);
  else
    zt_strbuf_printf(sb, "the time ran out in a stage without a label (zetile's lowering or "
                         "code generation) after the last one below");
  zt_strbuf_printf(sb, "; stages finished before: %s",
                   r->done.size ? r->done.data : "none (the compiler was still loading)");
}

typedef enum { RUN_DONE, RUN_TIMEOUT, RUN_DIED, RUN_NOT_SENT } run_end_t;

// One request to a running worker; on RUN_DONE `blob` holds the result.
static run_end_t run_request(const worker_t* w, const zt_strbuf_t* req, double deadline,
                             double t0, reply_t* r, zt_strbuf_t* blob) {
  if (!send_request(w, req->data, req->size)) return RUN_NOT_SENT;
  zt_strbuf_t buf;
  zt_strbuf_init(&buf);
  size_t start = 0;
  run_end_t end = RUN_DIED;
  for (;;) {
    double left = deadline - now_s();
    if (left <= 0) {
      end = RUN_TIMEOUT;
      break;
    }
    struct pollfd pfd = {w->from, POLLIN, 0};
    int n = poll(&pfd, 1, (int)(left * 1000) + 1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    if (n == 0) continue;
    char chunk[65536];
    ssize_t got = read(w->from, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // the worker is gone
    zt_strbuf_append(&buf, chunk, (size_t)got);
    bool complete = false;
    start += parse_reply(buf.data + start, buf.size - start, now_s() - t0, r, &complete);
    if (complete) {
      zt_strbuf_append(blob, buf.data + start, r->need);
      end = RUN_DONE;
      break;
    }
  }
  zt_strbuf_deinit(&buf);
  return end;
}

// What a worker that ended before taking the request printed (the dynamic
// loader's error, say): read up to EOF, for at most a second.
static void drain_output(const worker_t* w, zt_strbuf_t* out) {
  double until = now_s() + 1.0;
  for (;;) {
    double left = until - now_s();
    if (left <= 0 || out->size >= 4096) return;
    struct pollfd pfd = {w->from, POLLIN, 0};
    int n = poll(&pfd, 1, (int)(left * 1000) + 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    char chunk[4096];
    ssize_t got = read(w->from, chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return;
    zt_strbuf_append(out, chunk, (size_t)got);
  }
}

zt_status_t zt_compile_budgeted(const char* tile_ir, size_t size,
                                const zt_compile_options_t* options, double seconds,
                                bool enforce, zt_artifact_t** out_artifact, bool* out_ran,
                                char* why_not, size_t why_not_size) {
  *out_artifact = NULL;
  *out_ran = false;
  if (why_not && why_not_size) why_not[0] = 0;
  pthread_once(&g_once, init_once);
  zt_compile_options_t defaults = {0};
  const zt_compile_options_t* o = options ? options : &defaults;
  zt_strbuf_t req, blob;
  zt_strbuf_init(&req);
  zt_strbuf_init(&blob);
  build_request(tile_ir, size, o, &req);
  if (req.failed) {
    zt_strbuf_deinit(&req);
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "compile worker request");
  }
  double t0 = now_s();  // reset once a worker is taken (waiting for one is not compiling)
  reply_t r = {0};
  zt_strbuf_init(&r.done);
  zt_strbuf_init(&r.other);
  run_end_t end = RUN_NOT_SENT;
  int wstatus = 0;
  why_t why = {"", true};
  // A worker of the pool that went away while idle (a race with its idle
  // exit, a kill) is replaced, each at most once; a worker just started that
  // ends before reading the request twice means none can run here.
  int stale_retries = 0, gone_idle = 0, fresh_failures = 0;
  for (;;) {
    bool fresh = false;
    worker_t* w = take_worker(&fresh, &why);
    if (!w) break;
    t0 = now_s();
    end = run_request(w, &req, t0 + seconds, t0, &r, &blob);
    if (end == RUN_DONE && stale_retries <= MAX_LIVE && r.code == ZT_STATUS_UNAVAILABLE &&
        blob.size >= strlen(ZT_STALE_SPIRV_BACKEND) &&
        memcmp(blob.data, ZT_STALE_SPIRV_BACKEND, strlen(ZT_STALE_SPIRV_BACKEND)) == 0) {
      // The worker's SPIR-V backend is stale (include/zetile/compiler.h) and
      // it exits: once more in a fresh one (another idle worker may be
      // stale too: each says so once and exits).
      stop_worker(w, false);
      ++stale_retries;
      reply_reset(&r);
      zt_strbuf_clear(&blob);
      end = RUN_NOT_SENT;
      continue;
    }
    if (end == RUN_DONE) {
      give_back(w);
      break;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s", w->path ? w->path : WORKER_NAME);
    if (fresh && end == RUN_NOT_SENT) drain_output(w, &r.other);
    wstatus = stop_worker(w, end == RUN_TIMEOUT);
    bool idle_exit = end == RUN_NOT_SENT ||
                     (end == RUN_DIED && !r.have_result && r.done.size == 0 &&
                      !r.open_stage[0] && WIFEXITED(wstatus));
    if (!idle_exit) break;
    end = RUN_NOT_SENT;
    if (fresh) {
      // E.g. the dynamic loader failing (memory pressure, a missing
      // library), or a worker that is no zetile-compile-worker.
      size_t n = r.other.size;
      while (n && (r.other.data[n - 1] == '\n' || r.other.data[n - 1] == 0)) --n;
      snprintf(why.text, sizeof why.text, "%s %s %d before reading the request%s%.*s", path,
               WIFSIGNALED(wstatus) ? "was killed by signal" : "exited with",
               WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : WEXITSTATUS(wstatus),
               n ? "; it printed: " : "", (int)(n > 300 ? 300 : n), n ? r.other.data : "");
      why.installed = true;
      if (++fresh_failures == 2) break;
    } else if (++gone_idle > MAX_LIVE) {
      break;
    }
    reply_reset(&r);
  }
  double elapsed = now_s() - t0;
  zt_status_t s = NULL;
  if (end == RUN_NOT_SENT) {
    // No worker could be started. A limit the user set is not dropped
    // silently: the compile fails saying so. Under the default limit the
    // caller compiles in process (warning when a worker exists but cannot
    // run, jit/compile_cached.c).
    if (enforce)
      s = zt_make_status(ZT_STATUS_UNAVAILABLE,
                         "ZETILE_COMPILE_TIMEOUT=%g cannot be enforced: %s. A compile can be "
                         "stopped at its limit only in a %s process and none could be started; "
                         "set ZETILE_COMPILE_TIMEOUT=0 to compile in this process without a limit",
                         seconds, why.text[0] ? why.text : "no compile worker", WORKER_NAME);
    else if (why_not && why_not_size && why.installed)
      snprintf(why_not, why_not_size, "%s", why.text[0] ? why.text : "no compile worker");
  } else if (end == RUN_TIMEOUT) {
    zt_strbuf_t why;
    zt_strbuf_init(&why);
    describe_stages(&r, elapsed, &why);
    s = zt_make_status(ZT_STATUS_COMPILE_ERROR,
                       "compile stopped after %.1f s (ZETILE_COMPILE_TIMEOUT=%g%s): %s. Raise "
                       "ZETILE_COMPILE_TIMEOUT, or set it to 0 for no limit",
                       elapsed, seconds, getenv("ZETILE_COMPILE_TIMEOUT") ? "" : ", the default",
                       why.data ? why.data : "");
    zt_strbuf_deinit(&why);
  } else if (end == RUN_DIED && WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGINT) {
    // Ctrl-C reaches the worker too (same process group): the user's stop.
    s = zt_make_status(ZT_STATUS_COMPILE_ERROR, "compile interrupted (SIGINT) after %.1f s in %s",
                       elapsed, r.open_stage[0] ? r.open_stage : "a stage without a label");
  } else if (end == RUN_DIED) {
    s = zt_make_status(ZT_STATUS_COMPILE_ERROR,
                       "the compiler crashed (zetile-compile-worker %s %d) after %.1f s in %s%s%s",
                       WIFSIGNALED(wstatus) ? "killed by signal" : "exited with",
                       WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : WEXITSTATUS(wstatus), elapsed,
                       r.open_stage[0] ? r.open_stage : "a stage without a label",
                       r.other.size ? "; it printed: " : "", r.other.size ? r.other.data : "");
  } else if (r.code == 0) {
    s = zt_artifact_deserialize(blob.data, blob.size, out_artifact);
    if (s) s = zt_status_annotate(s, "compile worker output");
  } else {
    s = zt_make_status(r.code > 0 && r.code < ZT_STATUS_CODE_COUNT ? (zt_status_code_t)r.code
                                                                  : ZT_STATUS_INTERNAL,
                       "%.*s", (int)blob.size, blob.data ? blob.data : "");
  }
  *out_ran = end != RUN_NOT_SENT;
  zt_strbuf_deinit(&r.done);
  zt_strbuf_deinit(&r.other);
  zt_strbuf_deinit(&req);
  zt_strbuf_deinit(&blob);
  return s;
}

static bool is_stale(zt_status_t s) {
  return zt_status_code(s) == ZT_STATUS_UNAVAILABLE &&
         strncmp(zt_status_message(s), ZT_STALE_SPIRV_BACKEND, strlen(ZT_STALE_SPIRV_BACKEND)) == 0;
}

zt_status_t zt_compile_if_stale(const char* tile_ir, size_t size,
                                const zt_compile_options_t* options, zt_status_t s,
                                zt_artifact_t** out_artifact, bool* out_ran) {
  *out_ran = false;
  // A worker answers for itself (it exits; its caller starts a fresh one).
  if (!is_stale(s) || getenv(ZT_IN_COMPILE_WORKER)) return s;
  zt_artifact_release(*out_artifact);
  *out_artifact = NULL;
  double t0 = now_s();
  zt_status_t w = zt_compile_budgeted(tile_ir, size, options, ZT_COMPILE_TIMEOUT_DEFAULT,
                                      false, out_artifact, out_ran, NULL, 0);
  double ms = (now_s() - t0) * 1e3;
  if (!*out_ran) return s;  // no worker: the status says why
  zt_status_free(s);
  if (!w && *out_artifact) {
    // Said in the timings (ZETILE_DEBUG=time, CompiledKernel.artifact).
    const void* t = NULL;
    size_t n = 0;
    zt_status_t g = zt_artifact_get(*out_artifact, "timings", &t, &n);
    zt_strbuf_t sb;
    zt_strbuf_init(&sb);
    if (!g) zt_strbuf_append(&sb, t, n);
    zt_strbuf_printf(&sb, "compiled again in a fresh compile worker (stale SPIR-V backend)=%.3f\n",
                     ms);
    if (!sb.failed) w = zt_artifact_set(*out_artifact, "timings", sb.data, sb.size);
    zt_strbuf_deinit(&sb);
    zt_status_free(g);
  }
  return w;
}
