// zetile-compile-worker: compiles in a process of its own, so that a
// compile-time budget (ZETILE_COMPILE_TIMEOUT, jit/compile_budget.c) can be
// enforced by ending the process (MLIR's pass manager cannot be stopped from
// inside), and a crash inside MLIR or LLVM ends this process instead of the
// caller. It serves one compile after another for the process that started
// it: starting a worker per compile cost about 45 ms (loading LLVM and MLIR
// again), a request to a running one costs about a millisecond.
//
// Protocol (private to libzetile, which starts it with stdout and stderr on
// one pipe):
//   stdin, per request, a line
//     "compile <target_len> <num_warps> <compat> <igc_len> <cwd_len> <env_len> <ir_len>\n"
//   then the target, the IGC options (igc_len -1: none), the caller's
//   working directory, its environment (NUL-terminated entries) and the tile
//   IR. The caller's directory and environment are taken for each compile
//   because the compiler reads variables (ZETILE_XE_EMIT, ZETILE_DUMP, ...)
//   as it goes, and the caller may have changed them since the start.
//   out: while compiling, a line per stage begun and done ("zetile-stage:
//   begin|done <label> [ms]", ZETILE_STAGE_STREAM=1, jit/compiler_mlir.c);
//   then "zetile-result: <code> <n>\n" and n bytes: the serialized artifact
//   (code 0) or the status message.
//   EOF on stdin, or no request for ZETILE_COMPILE_WORKER_IDLE seconds
//   (default 120; as set when the worker starts): exit 0. If the caller
//   dies, the worker exits within a second even in the middle of a compile
//   (it is reparented).
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zetile/compiler.h"

#define IDLE_EXIT_S 120  // default of ZETILE_COMPILE_WORKER_IDLE

static pid_t g_parent;

// A compile can run for minutes; an orphaned worker must not.
static void* watch_parent(void* arg) {
  (void)arg;
  for (;;) {
    if (getppid() != g_parent) _exit(0);
    sleep(1);
  }
  return NULL;
}

static int write_all(const void* data, size_t n) {
  const char* p = data;
  while (n > 0) {
    ssize_t w = write(1, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static int reply(int code, const void* data, size_t n) {
  char head[64];
  int len = snprintf(head, sizeof head, "zetile-result: %d %zu\n", code, n);
  fflush(stdout);
  fflush(stderr);
  return write_all(head, (size_t)len) || write_all(data, n) ? -1 : 0;
}

// Reads n bytes (NUL-terminated) from stdin; NULL at EOF or on error.
static char* read_bytes(long long n) {
  if (n < 0 || n > (1LL << 34)) return NULL;
  char* p = malloc((size_t)n + 1);
  if (!p) return NULL;
  if (n > 0 && fread(p, 1, (size_t)n, stdin) != (size_t)n) {
    free(p);
    return NULL;
  }
  p[n] = 0;
  return p;
}

// The caller's environment for this compile (entries stay allocated while
// they are in environ).
static char** g_env;
static void take_environment(char* block, size_t n) {
  clearenv();
  for (size_t i = 0; g_env && g_env[i]; ++i) free(g_env[i]);
  free(g_env);
  size_t count = 0;
  for (size_t i = 0; i < n; ++i) count += block[i] == 0;
  g_env = calloc(count + 2, sizeof *g_env);
  if (!g_env) return;
  size_t k = 0;
  for (size_t i = 0; i < n && k < count;) {
    size_t len = strlen(block + i);
    if (len && strchr(block + i, '=')) {
      g_env[k] = strdup(block + i);
      if (g_env[k]) putenv(g_env[k++]);
    }
    i += len + 1;
  }
  g_env[k] = strdup("ZETILE_STAGE_STREAM=1");
  if (g_env[k]) putenv(g_env[k]);
}

int main(int argc, char** argv) {
  (void)argc;
  (void)argv;
  g_parent = getppid();
  pthread_t watcher;
  if (pthread_create(&watcher, NULL, watch_parent, NULL) == 0) pthread_detach(watcher);
  setvbuf(stdout, NULL, _IONBF, 0);
  const char* idle_env = getenv("ZETILE_COMPILE_WORKER_IDLE");
  double idle_s = idle_env ? strtod(idle_env, NULL) : 0;
  int idle_ms = idle_s > 0 && idle_s < 86400 ? (int)(idle_s * 1000) : IDLE_EXIT_S * 1000;
  char line[512];
  for (;;) {
    // Idle for idle_ms: exit, giving back the memory MLIR holds; the
    // caller starts a new worker for its next compile. (The caller sends a
    // request only after reading the last reply, so stdin's buffer is
    // empty here and poll sees all there is.)
    struct pollfd pfd = {0, POLLIN, 0};
    int ready;
    while ((ready = poll(&pfd, 1, idle_ms)) < 0 && errno == EINTR) {
    }
    if (ready == 0) return 0;
    if (!fgets(line, sizeof line, stdin)) break;
    long long tlen, igc_len, cwd_len, env_len, ir_len;
    int warps, compat;
    if (sscanf(line, "compile %lld %d %d %lld %lld %lld %lld", &tlen, &warps, &compat, &igc_len,
               &cwd_len, &env_len, &ir_len) != 7) {
      static const char msg[] = "compile worker: malformed request";
      reply(ZT_STATUS_INTERNAL, msg, sizeof msg - 1);
      return 2;
    }
    char* target = read_bytes(tlen);
    char* igc = igc_len >= 0 ? read_bytes(igc_len) : NULL;
    char* cwd = read_bytes(cwd_len);
    char* env = read_bytes(env_len);
    char* ir = read_bytes(ir_len);
    if (!target || (igc_len >= 0 && !igc) || !cwd || !env || !ir) {
      static const char msg[] = "compile worker: request cut short";
      reply(ZT_STATUS_IO_ERROR, msg, sizeof msg - 1);
      return 2;
    }
    if (cwd[0] && chdir(cwd) != 0) {
      // Relative paths in the caller's variables may miss; the compile does not.
    }
    take_environment(env, (size_t)env_len);
    // zt_compile must not start a worker of its own from here (jit/compile_budget.h).
    setenv("ZETILE_IN_COMPILE_WORKER", "1", 1);
    zt_compile_options_t o = {.target = target, .num_warps = warps, .compat = compat != 0,
                              .igc_options = igc};
    zt_artifact_t* a = NULL;
    zt_status_t s = zt_compile(ir, (size_t)ir_len, &o, &a);
    void* blob = NULL;
    size_t n = 0;
    if (!s) s = zt_artifact_serialize(a, &blob, &n);
    zt_artifact_release(a);
    int rc;
    bool stale = false;
    if (s) {
      const char* msg = zt_status_message(s);
      stale = zt_status_code(s) == ZT_STATUS_UNAVAILABLE &&
              strncmp(msg, ZT_STALE_SPIRV_BACKEND, strlen(ZT_STALE_SPIRV_BACKEND)) == 0;
      rc = reply((int)zt_status_code(s), msg, strlen(msg));
      zt_status_free(s);
    } else {
      rc = reply(0, blob, n);
    }
    free(blob);
    free(target);
    free(igc);
    free(cwd);
    free(env);
    free(ir);
    if (rc) return 3;  // the caller went away
    // LLVM's SPIR-V backend is stale here: the caller compiles again in a
    // fresh worker, and this one must not take another compile.
    if (stale) return 0;
  }
  return 0;
}
