// Compiles under a time budget. MLIR's pass manager cannot be interrupted
// through its C API, and a compile can run for minutes (issue 17: tl.sort
// of a cumsum for pvc, 200-320 s inside upstream's XeGPU distribution), so
// the bound is a process: zetile-compile-worker compiles and streams the
// stages it begins and finishes; past the deadline it is killed and the
// stages become the error message.
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
  if (!e || !e[0]) return 0;
  double s = strtod(e, NULL);
  return s > 0 ? s : 0;
}

static bool find_worker(char* out, size_t size) {
  const char* env = getenv("ZETILE_COMPILE_WORKER");
  if (env && env[0]) {
    snprintf(out, size, "%s", env);
    return access(out, X_OK) == 0;
  }
  Dl_info info;
  if (dladdr((void*)zt_compile_budgeted, &info) && info.dli_fname) {
    const char* slash = strrchr(info.dli_fname, '/');
    if (slash) {
      snprintf(out, size, "%.*s/%s", (int)(slash - info.dli_fname), info.dli_fname,
               WORKER_NAME);
      return access(out, X_OK) == 0;
    }
  }
  return false;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

// "where the time went" from the worker's stage lines: finished stages with
// their times, and the stage begun but not finished.
static void describe_stages(const char* err, double stage_start_elapsed, double elapsed,
                            zt_strbuf_t* sb) {
  char open_stage[200] = "";
  zt_strbuf_t done;
  zt_strbuf_init(&done);
  for (const char* p = err; p && *p;) {
    const char* nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    if (n > 21 && strncmp(p, "zetile-stage: begin ", 20) == 0) {
      snprintf(open_stage, sizeof open_stage, "%.*s", (int)(n - 20), p + 20);
    } else if (n > 20 && strncmp(p, "zetile-stage: done ", 19) == 0) {
      zt_strbuf_printf(&done, "%s%.*s ms", done.size ? ", " : "", (int)(n - 19), p + 19);
      open_stage[0] = 0;
    }
    p = nl ? nl + 1 : NULL;
  }
  if (open_stage[0])
    zt_strbuf_printf(sb, "%.1f s of it in %s (still running)", elapsed - stage_start_elapsed,
                     open_stage);
  else
    zt_strbuf_printf(sb, "the time ran out in a stage without a label (zetile's lowering or "
                         "code generation) after the last one below");
  zt_strbuf_printf(sb, "; stages finished before: %s",
                   done.size ? done.data : "none (the compiler was still loading)");
  zt_strbuf_deinit(&done);
}

zt_status_t zt_compile_budgeted(const char* tile_ir, size_t size,
                                const zt_compile_options_t* options, double seconds,
                                zt_artifact_t** out_artifact, bool* out_ran) {
  *out_artifact = NULL;
  *out_ran = false;
  char worker[4096];
  if (!find_worker(worker, sizeof worker)) return NULL;
  zt_compile_options_t defaults = {0};
  const zt_compile_options_t* o = options ? options : &defaults;
  char warps[16];
  snprintf(warps, sizeof warps, "%d", (int)o->num_warps);
  char* argv[] = {worker, (char*)(o->target ? o->target : "cpu"), warps,
                  (char*)(o->compat ? "1" : "0"), (char*)(o->igc_options ? o->igc_options : ""),
                  NULL};
  if (!o->igc_options) argv[4] = NULL;
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
    return zt_make_status(ZT_STATUS_IO_ERROR, "compile worker: pipe: %s", strerror(errno));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  // The worker's environment: ours plus the stage stream.
  size_t ne = 0;
  while (environ[ne]) ++ne;
  char** env = calloc(ne + 2, sizeof *env);
  if (!env) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "compile worker environment");
  for (size_t i = 0; i < ne; ++i) env[i] = environ[i];
  env[ne] = "ZETILE_STAGE_STREAM=1";
  pid_t pid;
  int rc = posix_spawn(&pid, worker, &fa, NULL, argv, env);
  posix_spawn_file_actions_destroy(&fa);
  free(env);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    close(err[0]);
    return NULL;  // could not start: compile in process
  }
  *out_ran = true;
  double t0 = now_s();
  // The worker reads all of its input before it writes anything. If it
  // died early the write fails with EPIPE: keep SIGPIPE from this thread
  // meanwhile (the process's disposition is the caller's business).
  sigset_t pipe_set, old_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  bool pipe_failed = false;
  for (size_t off = 0; off < size;) {
    ssize_t w = write(in[1], tile_ir + off, size - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      pipe_failed = errno == EPIPE;
      break;
    }
    off += (size_t)w;
  }
  close(in[1]);
  if (pipe_failed) {
    struct timespec zero = {0, 0};
    sigtimedwait(&pipe_set, NULL, &zero);  // drop the pending SIGPIPE
  }
  pthread_sigmask(SIG_SETMASK, &old_set, NULL);
  zt_strbuf_t blob, errs;
  zt_strbuf_init(&blob);
  zt_strbuf_init(&errs);
  double stage_start = 0;
  bool timed_out = false;
  struct pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    double left = seconds - (now_s() - t0);
    if (left <= 0) {
      timed_out = true;
      break;
    }
    int n = poll(fds, 2, (int)(left * 1000) + 1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t r = read(fds[i].fd, buf, sizeof buf);
      if (r <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      if (i == 0) {
        zt_strbuf_append(&blob, buf, (size_t)r);
      } else {
        // Note when the last stage began (for "x s of it in <stage>").
        if (memmem(buf, (size_t)r, "zetile-stage: begin ", 20)) stage_start = now_s() - t0;
        zt_strbuf_append(&errs, buf, (size_t)r);
      }
    }
  }
  double elapsed = now_s() - t0;
  int wstatus = 0;
  if (timed_out) kill(pid, SIGKILL);
  while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  for (int i = 0; i < 2; ++i)
    if (fds[i].fd >= 0) close(fds[i].fd);
  zt_status_t s = NULL;
  if (timed_out) {
    zt_strbuf_t why;
    zt_strbuf_init(&why);
    describe_stages(errs.data, stage_start, elapsed, &why);
    s = zt_make_status(ZT_STATUS_COMPILE_ERROR,
                       "compile stopped after %.1f s (ZETILE_COMPILE_TIMEOUT=%g): %s. Raise "
                       "ZETILE_COMPILE_TIMEOUT, or 0 for no limit",
                       elapsed, seconds, why.data ? why.data : "");
    zt_strbuf_deinit(&why);
  } else if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) {
    s = zt_artifact_deserialize(blob.data, blob.size, out_artifact);
    if (s) s = zt_status_annotate(s, "compile worker output");
  } else {
    // The worker's own status line, else how it ended.
    const char* line = errs.data ? strstr(errs.data, "zetile-status: ") : NULL;
    if (line) {
      int code = atoi(line + 15);
      const char* msg = strchr(line + 15, ' ');
      zt_strbuf_t m;
      zt_strbuf_init(&m);
      for (const char* p = msg ? msg + 1 : ""; *p && *p != '\n'; ++p) {
        if (p[0] == '\\' && p[1] == 'n') {
          zt_strbuf_append(&m, "\n", 1);
          ++p;
        } else if (p[0] == '\\' && p[1] == '\\') {
          zt_strbuf_append(&m, "\\", 1);
          ++p;
        } else {
          zt_strbuf_append(&m, p, 1);
        }
      }
      s = zt_make_status(code > 0 && code < ZT_STATUS_CODE_COUNT ? (zt_status_code_t)code
                                                                  : ZT_STATUS_INTERNAL,
                         "%s", m.data ? m.data : "");
      zt_strbuf_deinit(&m);
    } else {
      s = zt_make_status(ZT_STATUS_INTERNAL, "compile worker %s %d",
                         WIFSIGNALED(wstatus) ? "killed by signal" : "exited with",
                         WIFSIGNALED(wstatus) ? WTERMSIG(wstatus) : WEXITSTATUS(wstatus));
    }
  }
  zt_strbuf_deinit(&blob);
  zt_strbuf_deinit(&errs);
  return s;
}
