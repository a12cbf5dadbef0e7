// zetile-compile-worker: one compile in a process of its own, so that a
// compile-time budget (ZETILE_COMPILE_TIMEOUT, jit/compile_cached.c) can be
// enforced by ending the process: MLIR's pass manager cannot be stopped
// from inside. Protocol (private to libzetile, which starts it):
//   argv: target num_warps compat(0|1) [igc_options]
//   stdin: the tile IR text, to EOF
//   stdout: the serialized artifact (zt_artifact_serialize); exit 0
//   stderr: with ZETILE_STAGE_STREAM=1, a line per stage begun and done
//           ("zetile-stage: begin|done <label> [ms]"); on failure a last
//           line "zetile-status: <code> <message>" and exit 2
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zetile/compiler.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "zetile-status: 1 usage: %s target num_warps compat [igc_options]\n",
            argv[0]);
    return 2;
  }
  size_t cap = 1 << 16, size = 0;
  char* text = malloc(cap);
  for (;;) {
    if (!text) {
      fprintf(stderr, "zetile-status: 6 out of memory reading the tile IR\n");
      return 2;
    }
    ssize_t r = read(0, text + size, cap - size);
    if (r < 0) {
      fprintf(stderr, "zetile-status: 7 reading the tile IR failed\n");
      return 2;
    }
    if (r == 0) break;
    size += (size_t)r;
    if (size == cap) text = realloc(text, cap *= 2);
  }
  zt_compile_options_t o = {.target = argv[1], .num_warps = atoi(argv[2]),
                            .compat = strcmp(argv[3], "1") == 0,
                            .igc_options = argc > 4 ? argv[4] : NULL};
  zt_artifact_t* a = NULL;
  zt_status_t s = zt_compile(text, size, &o, &a);
  free(text);
  void* blob = NULL;
  size_t n = 0;
  if (!s) s = zt_artifact_serialize(a, &blob, &n);
  zt_artifact_release(a);
  if (s) {
    // One line: newlines in MLIR diagnostics become "\n" escapes.
    fprintf(stderr, "zetile-status: %d ", (int)zt_status_code(s));
    for (const char* p = zt_status_message(s); *p; ++p) {
      if (*p == '\n') fputs("\\n", stderr);
      else if (*p == '\\') fputs("\\\\", stderr);
      else fputc(*p, stderr);
    }
    fputc('\n', stderr);
    zt_status_free(s);
    return 2;
  }
  size_t off = 0;
  while (off < n) {
    ssize_t w = write(1, (char*)blob + off, n - off);
    if (w <= 0) return 3;
    off += (size_t)w;
  }
  free(blob);
  return 0;
}
