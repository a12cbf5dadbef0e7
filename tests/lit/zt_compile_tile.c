// zt-compile-tile: compiles a tile IR file for a target through the public
// zt_compile, for the FileCheck tests of tests/lit (run.sh). Usage:
//   zt-compile-tile FILE TARGET [NUM_WARPS]
// Exits 0 when the compile succeeds or was stopped on purpose
// (ZETILE_STOP_AFTER); what the stages dump (ZETILE_DUMP) goes to stderr.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zetile/compiler.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s FILE TARGET [NUM_WARPS]\n", argv[0]);
    return 2;
  }
  FILE* f = fopen(argv[1], "rb");
  if (!f) {
    fprintf(stderr, "cannot open %s\n", argv[1]);
    return 2;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* text = malloc((size_t)n + 1);
  if (!text || fread(text, 1, (size_t)n, f) != (size_t)n) {
    fclose(f);
    free(text);
    return 2;
  }
  fclose(f);
  text[n] = 0;
  zt_compile_options_t opt = {0};
  opt.target = argv[2];
  opt.num_warps = argc > 3 ? atoi(argv[3]) : 0;
  zt_artifact_t* art = NULL;
  zt_status_t s = zt_compile(text, (size_t)n, &opt, &art);
  free(text);
  zt_artifact_release(art);
  if (!s) return 0;
  const char* stop = getenv("ZETILE_STOP_AFTER");
  bool stopped = stop && strstr(zt_status_message(s), "stopped after");
  fprintf(stderr, "%s\n", zt_status_message(s));
  zt_status_free(s);
  return stopped ? 0 : 1;
}
