// End to end on the CPU device: builder → zt_compile_cached → executable →
// parallel launch → results, then the same program from the cache without
// a compile. Skips (loudly) when libzetile_compiler is not built.
#include <check.h>
#include <elf.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_run.h"
#include "cpu/elf_load.h"
#include "zetile/zetile.h"

#define OK(expr)                                                                   \
  do {                                                                             \
    zt_status_t s_ = (expr);                                                       \
    ck_assert_msg(s_ == NULL, "%s: %s", #expr, zt_status_message(s_));             \
  } while (0)

static char dir[256];

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/zt-rt-compile-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  setenv("ZETILE_CACHE_DIR", dir, 1);
}

static void teardown(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
}

#define TRY(expr)                  \
  do {                             \
    zt_status_t t_ = (expr);       \
    if (t_) {                      \
      zt_builder_release(b);       \
      return t_;                   \
    }                              \
  } while (0)

// Triton's tutorial 01: out[i] = x[i] + y[i] for i < n, BLOCK per program.
static zt_status_t vector_add(int64_t block, char** out_text) {
  zt_builder_t* b = NULL;
  ZT_RETURN_IF_ERROR(zt_builder_create(&b));
  zt_type_t types[4] = {zt_type_ptr(ZT_F32), zt_type_ptr(ZT_F32), zt_type_ptr(ZT_F32),
                        zt_type_scalar(ZT_I32)};
  zt_value_t a[4], pid, c, start, r, offs, n, mask, px, x, py, y, sum, pz;
  int64_t shape[1] = {block};
  TRY(zt_builder_begin_kernel(b, "add_kernel", 4, types, NULL, a));
  TRY(zt_builder_program_id(b, 0, &pid));
  TRY(zt_builder_const_int(b, ZT_I32, block, &c));
  TRY(zt_builder_binary(b, ZT_BINARY_MULI, pid, c, &start));
  TRY(zt_builder_make_range(b, 0, (int32_t)block, &r));
  TRY(zt_builder_splat(b, start, 1, shape, &offs));
  TRY(zt_builder_binary(b, ZT_BINARY_ADDI, offs, r, &offs));
  TRY(zt_builder_splat(b, a[3], 1, shape, &n));
  TRY(zt_builder_cmp(b, ZT_CMP_SLT, offs, n, &mask));
  TRY(zt_builder_splat(b, a[0], 1, shape, &px));
  TRY(zt_builder_addptr(b, px, offs, &px));
  TRY(zt_builder_load(b, px, mask, ZT_NO_VALUE, &x));
  TRY(zt_builder_splat(b, a[1], 1, shape, &py));
  TRY(zt_builder_addptr(b, py, offs, &py));
  TRY(zt_builder_load(b, py, mask, ZT_NO_VALUE, &y));
  TRY(zt_builder_binary(b, ZT_BINARY_ADDF, x, y, &sum));
  TRY(zt_builder_splat(b, a[2], 1, shape, &pz));
  TRY(zt_builder_addptr(b, pz, offs, &pz));
  TRY(zt_builder_store(b, pz, sum, mask));
  TRY(zt_builder_end_kernel(b));
  const char* text = NULL;
  size_t size = 0;
  TRY(zt_builder_module_text(b, &text, &size));
  *out_text = strndup(text, size);
  zt_builder_release(b);
  return NULL;
}

static bool compiler_missing(const char* test) {
  zt_status_t s = zt_compiler_available();
  if (!s) return false;
  fprintf(stderr, "SKIP %s: %s\n", test, zt_status_message(s));
  zt_status_free(s);
  return true;
}

// Runs the vector add of n elements on the CPU device and checks it. Returns
// NULL or what went wrong (no Check asserts: the warm child runs it outside
// a test).
static char failure[1024];
#define RUN_TRY(expr)                                                             \
  do {                                                                            \
    zt_status_t r_ = (expr);                                                      \
    if (r_) {                                                                     \
      snprintf(failure, sizeof failure, "%s: %s", #expr, zt_status_message(r_));  \
      zt_status_free(r_);                                                         \
      goto done;                                                                  \
    }                                                                             \
  } while (0)

static const char* run_vector_add_checked(const zt_artifact_t* artifact, int32_t n,
                                          int64_t block) {
  failure[0] = 0;
  zt_device_t* d = NULL;
  zt_executable_t* e = NULL;
  zt_buffer_t *x = NULL, *y = NULL, *o = NULL;
  size_t bytes = (size_t)n * sizeof(float);
  float* hx = malloc(bytes);
  float* hy = malloc(bytes);
  float* ho = malloc(bytes);
  float sentinel[1024];
  for (int32_t i = 0; i < n; ++i) {
    hx[i] = (float)i * 0.5f;
    hy[i] = 1000.0f - (float)i;
  }
  for (int i = 0; i < 1024; ++i) sentinel[i] = -7.0f;
  RUN_TRY(zt_device_open("cpu", &d));
  RUN_TRY(zt_executable_create(d, artifact, &e));
  RUN_TRY(zt_buffer_alloc(d, bytes, &x));
  RUN_TRY(zt_buffer_alloc(d, bytes, &y));
  RUN_TRY(zt_buffer_alloc(d, bytes + 4096, &o));  // room to see that the mask holds
  RUN_TRY(zt_buffer_write(x, 0, hx, bytes));
  RUN_TRY(zt_buffer_write(y, 0, hy, bytes));
  RUN_TRY(zt_buffer_write(o, bytes, sentinel, 4096));
  zt_arg_t args[4] = {{ZT_PTR, {.ptr = zt_buffer_address(x)}},
                      {ZT_PTR, {.ptr = zt_buffer_address(y)}},
                      {ZT_PTR, {.ptr = zt_buffer_address(o)}},
                      {ZT_I32, {.i = n}}};
  uint32_t grid[3] = {(uint32_t)((n + block - 1) / block), 1, 1};
  RUN_TRY(zt_launch(e, grid, 4, args));
  RUN_TRY(zt_device_synchronize(d));
  RUN_TRY(zt_buffer_read(o, 0, ho, bytes));
  for (int32_t i = 0; i < n && !failure[0]; ++i)
    if (ho[i] != hx[i] + hy[i])
      snprintf(failure, sizeof failure, "out[%d] = %g, expected %g", i, ho[i],
               hx[i] + hy[i]);
  RUN_TRY(zt_buffer_read(o, bytes, sentinel, 4096));
  for (int i = 0; i < 1024 && !failure[0]; ++i)
    if (sentinel[i] != -7.0f) snprintf(failure, sizeof failure, "store past n at %d", i);
done:
  free(hx);
  free(hy);
  free(ho);
  zt_buffer_release(x);
  zt_buffer_release(y);
  zt_buffer_release(o);
  zt_executable_release(e);
  zt_device_release(d);
  return failure[0] ? failure : NULL;
}

static void run_vector_add(const zt_artifact_t* artifact, int32_t n, int64_t block) {
  const char* why = run_vector_add_checked(artifact, n, block);
  ck_assert_msg(why == NULL, "%s", why);
}

static bool maps_mention(const char* needle) {
  FILE* f = fopen("/proc/self/maps", "r");
  if (!f) return false;
  char line[1024];
  bool found = false;
  while (!found && fgets(line, sizeof line, f)) found = strstr(line, needle) != NULL;
  fclose(f);
  return found;
}

START_TEST(test_vector_add_compiled_and_cached) {
  if (compiler_missing(__func__)) return;
  char* ir = NULL;
  OK(vector_add(64, &ir));
  zt_compile_options_t o = {.target = "cpu"};
  zt_artifact_t* a = NULL;
  bool hit = true;
  OK(zt_compile_cached(ir, strlen(ir), &o, &a, &hit));
  ck_assert(!hit);
  run_vector_add(a, 10000, 64);  // 157 programs, masked tail
  run_vector_add(a, 64, 64);     // one program
  zt_artifact_release(a);

  // A new process (exec'd, so nothing is inherited): from the cache, with no
  // compile and without loading the compiler to compute the key.
  pid_t pid = fork();
  if (pid == 0) {
    char* argv[] = {"test_runtime_compile_cpu", "--warm-child", NULL};
    execv("/proc/self/exe", argv);
    _exit(3);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "warm child: status %d",
                status);
  zt_cache_stats_t st;
  zt_cache_get_stats(&st);
  ck_assert_int_eq(st.compiles, 1);
  free(ir);
}
END_TEST

static bool has_section(const zt_artifact_t* a, const char* name) {
  const void* d = NULL;
  size_t n = 0;
  zt_status_t s = zt_artifact_get(a, name, &d, &n);
  bool found = s == NULL;
  zt_status_free(s);
  return found && n > 0;
}

// CPU artifacts carry machine code for the host ("obj", "obj_host"), linked
// at load without recompiling; code for another CPU is not used (the LLVM
// text is compiled instead), and damaged code is an error, not a crash.
START_TEST(test_machine_code_in_the_artifact) {
  if (compiler_missing(__func__)) return;
  char* ir = NULL;
  OK(vector_add(64, &ir));
  zt_compile_options_t o = {.target = "cpu"};
  zt_artifact_t* a = NULL;
  OK(zt_compile(ir, strlen(ir), &o, &a));
  ck_assert(has_section(a, "obj"));
  ck_assert(has_section(a, "obj_host"));
  const void* host = NULL;
  size_t host_size = 0;
  OK(zt_artifact_get(a, "obj_host", &host, &host_size));
  ck_assert(strncmp(host, "cpu=", 4) == 0);
  run_vector_add(a, 1000, 64);

  const char* other = "cpu=another-cpu;features=+sse2";
  OK(zt_artifact_set(a, "obj_host", other, strlen(other)));
  run_vector_add(a, 1000, 64);  // from the LLVM text

  zt_artifact_t* b = NULL;
  OK(zt_compile(ir, strlen(ir), &o, &b));
  const char junk[64] = "not an object file";
  OK(zt_artifact_set(b, "obj", junk, sizeof junk));
  zt_device_t* d = NULL;
  zt_executable_t* e = NULL;
  OK(zt_device_open("cpu", &d));
  zt_status_t s = zt_executable_create(d, b, &e);
  ck_assert_msg(s != NULL, "damaged machine code was accepted");
  ck_assert_msg(strstr(zt_status_message(s), "add_kernel"), "%s", zt_status_message(s));
  zt_status_free(s);
  zt_device_release(d);

  setenv("ZETILE_CPU_OBJECT", "0", 1);  // LLVM text only
  zt_artifact_t* c = NULL;
  OK(zt_compile(ir, strlen(ir), &o, &c));
  unsetenv("ZETILE_CPU_OBJECT");
  ck_assert(!has_section(c, "obj"));
  run_vector_add(c, 1000, 64);
  zt_artifact_release(a);
  zt_artifact_release(b);
  zt_artifact_release(c);
  free(ir);
}
END_TEST

// Under ZETILE_CPU_LOADER=own, loading `a` fails with a message holding
// `want` and `also` (`code` is the status code expected, or -1 for any).
static void own_loader_refuses(const zt_artifact_t* a, int code, const char* want, const char* also) {
  setenv("ZETILE_CPU_LOADER", "own", 1);
  zt_device_t* d = NULL;
  zt_executable_t* e = NULL;
  OK(zt_device_open("cpu", &d));
  zt_status_t s = zt_executable_create(d, a, &e);
  ck_assert_msg(s != NULL, "the own loader accepted it");
  if (code >= 0) ck_assert_int_eq(zt_status_code(s), code);
  ck_assert_msg(strstr(zt_status_message(s), want) && strstr(zt_status_message(s), also), "%s",
                zt_status_message(s));
  zt_status_free(s);
  zt_device_release(d);
  unsetenv("ZETILE_CPU_LOADER");
}

// ZETILE_CPU_LOADER: "own" loads the object with libzetile's loader or fails
// saying why; "orc" links it with the compiler; by default a decline of the
// own loader goes to ORC (and on to the LLVM text for another CPU's code).
START_TEST(test_cpu_loader_modes) {
  if (compiler_missing(__func__)) return;
  char* ir = NULL;
  OK(vector_add(64, &ir));
  zt_compile_options_t o = {.target = "cpu"};
  zt_artifact_t* a = NULL;
  OK(zt_compile(ir, strlen(ir), &o, &a));
  setenv("ZETILE_CPU_LOADER", "own", 1);
  run_vector_add(a, 1000, 64);
  setenv("ZETILE_CPU_LOADER", "orc", 1);
  run_vector_add(a, 1000, 64);

  // An object the own loader declines (writable code, which it never maps)
  // but ORC links: an error under "own", run through ORC by default.
  const void* obj = NULL;
  size_t obj_size = 0;
  OK(zt_artifact_get(a, "obj", &obj, &obj_size));
  unsigned char* wide = malloc(obj_size);
  memcpy(wide, obj, obj_size);
  Elf64_Ehdr eh;
  memcpy(&eh, wide, sizeof eh);
  bool found = false;
  for (int i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    memcpy(&sh, wide + eh.e_shoff + (size_t)i * sizeof sh, sizeof sh);
    if (!(sh.sh_flags & SHF_EXECINSTR) || sh.sh_size == 0) continue;
    sh.sh_flags |= SHF_WRITE;
    memcpy(wide + eh.e_shoff + (size_t)i * sizeof sh, &sh, sizeof sh);
    found = true;
  }
  ck_assert(found);
  zt_artifact_t* w = NULL;
  OK(zt_compile(ir, strlen(ir), &o, &w));
  OK(zt_artifact_set(w, "obj", wide, obj_size));
  free(wide);
  own_loader_refuses(w, ZT_STATUS_UNSUPPORTED, "writable code section", "");
  run_vector_add(w, 1000, 64);  // ORC
  zt_artifact_release(w);

  // Code from before obj_host named the CPUID (or from another CPU).
  const void* host = NULL;
  size_t host_size = 0;
  OK(zt_artifact_get(a, "obj_host", &host, &host_size));
  char* old = strndup(host, host_size);
  char* cut = strstr(old, ";cpuid=");
  ck_assert_ptr_nonnull(cut);
  *cut = 0;
  OK(zt_artifact_set(a, "obj_host", old, strlen(old)));
  free(old);
  own_loader_refuses(a, ZT_STATUS_UNSUPPORTED, "add_kernel", "another CPU");
  run_vector_add(a, 1000, 64);  // the LLVM text

  const char junk[64] = "not an object file";
  OK(zt_artifact_set(a, "obj", junk, sizeof junk));
  OK(zt_artifact_set(a, "obj_host", "x;cpuid=0", 9));
  own_loader_refuses(a, -1, "add_kernel", "ZETILE_CPU_LOADER=own");
  zt_artifact_release(a);
  free(ir);
}
END_TEST

static int dummy_import(void) { return 0; }

static void* resolve_any(const char* name, void* ctx) {
  (void)name;
  (void)ctx;
  return (void*)dummy_import;
}

// One damaged copy: loads or is refused, never crashes (the ASan job runs
// this); returns whether it loaded.
static bool try_load(const unsigned char* bytes, size_t size) {
  zt_elf_image_t* img = NULL;
  void* fn = NULL;
  zt_status_t s = zt_elf_image_load(bytes, size, "add_kernel", resolve_any, NULL, &img, &fn);
  ck_assert_msg((s == NULL) == (img != NULL && fn != NULL), "status and outputs disagree");
  zt_status_free(s);
  zt_elf_image_release(img);
  return img != NULL;
}

// The own loader on damaged copies of a real kernel object: truncated at
// every length, each byte of the ELF header, the section headers, the
// relocations and the symbols set to 0, 0xff and flipped, then random
// damage anywhere. Also a relocation type it does not handle and a missing
// entry point: refused by name.
START_TEST(test_own_loader_refuses_damage) {
  if (compiler_missing(__func__)) return;
  char* ir = NULL;
  OK(vector_add(64, &ir));
  zt_compile_options_t o = {.target = "cpu"};
  zt_artifact_t* a = NULL;
  OK(zt_compile(ir, strlen(ir), &o, &a));
  const void* obj = NULL;
  size_t size = 0;
  OK(zt_artifact_get(a, "obj", &obj, &size));
  unsigned char* copy = malloc(size);
  memcpy(copy, obj, size);
  ck_assert_msg(try_load(copy, size), "the undamaged object did not load");
  int loaded = 0, refused = 0;
  for (size_t n = 0; n < size; n += n < 256 ? 1 : 13) try_load(copy, n) ? ++loaded : ++refused;
  ck_assert_int_eq(loaded, 0);  // every section the loader needs ends near the end

  // The regions whose bytes the loader interprets.
  Elf64_Ehdr eh;
  memcpy(&eh, copy, sizeof eh);
  size_t regions[8][2] = {{0, sizeof eh}, {eh.e_shoff, (size_t)eh.e_shnum * sizeof(Elf64_Shdr)}};
  int nregions = 2;
  for (int i = 0; i < eh.e_shnum && nregions < 8; ++i) {
    Elf64_Shdr sh;
    memcpy(&sh, copy + eh.e_shoff + (size_t)i * sizeof sh, sizeof sh);
    if (sh.sh_type == SHT_RELA || sh.sh_type == SHT_SYMTAB) {
      regions[nregions][0] = sh.sh_offset;
      regions[nregions++][1] = sh.sh_size;
    }
  }
  ck_assert_int_ge(nregions, 4);
  for (int r = 0; r < nregions; ++r) {
    for (size_t i = regions[r][0]; i < regions[r][0] + regions[r][1]; ++i) {
      unsigned char was = copy[i];
      const unsigned char values[3] = {0, 0xff, (unsigned char)(was ^ 0x80)};
      for (int v = 0; v < 3; ++v) {
        copy[i] = values[v];
        try_load(copy, size) ? ++loaded : ++refused;
      }
      copy[i] = was;
    }
  }
  uint64_t seed = 16;
  for (int t = 0; t < 3000; ++t) {
    unsigned char* m = malloc(size);
    memcpy(m, copy, size);
    int k = 1 + t % 4;
    for (int j = 0; j < k; ++j) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      m[(seed >> 33) % size] = (unsigned char)(seed >> 13);
    }
    try_load(m, size) ? ++loaded : ++refused;
    free(m);
  }
  ck_assert_int_gt(refused, 1000);
  ck_assert_int_gt(loaded, 100);  // damage the loader does not read (names, padding)

  // A relocation type it does not handle; an entry point it lacks.
  for (int i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    memcpy(&sh, copy + eh.e_shoff + (size_t)i * sizeof sh, sizeof sh);
    if (sh.sh_type != SHT_RELA || sh.sh_size == 0) continue;
    Elf64_Rela rel;
    memcpy(&rel, copy + sh.sh_offset, sizeof rel);
    Elf64_Rela abs64 = rel;
    abs64.r_info = ELF64_R_INFO(ELF64_R_SYM(rel.r_info), R_X86_64_64);
    memcpy(copy + sh.sh_offset, &abs64, sizeof abs64);
    zt_elf_image_t* img = NULL;
    void* fn = NULL;
    zt_status_t s = zt_elf_image_load(copy, size, "add_kernel", resolve_any, NULL, &img, &fn);
    ck_assert_int_eq(zt_status_code(s), ZT_STATUS_UNSUPPORTED);
    ck_assert_msg(strstr(zt_status_message(s), "relocation type 1"), "%s", zt_status_message(s));
    zt_status_free(s);
    memcpy(copy + sh.sh_offset, &rel, sizeof rel);
    break;
  }
  zt_elf_image_t* img = NULL;
  void* fn = NULL;
  zt_status_t s = zt_elf_image_load(copy, size, "no_such_kernel", resolve_any, NULL, &img, &fn);
  ck_assert_int_eq(zt_status_code(s), ZT_STATUS_NOT_FOUND);
  zt_status_free(s);
  free(copy);
  zt_artifact_release(a);
  free(ir);
}
END_TEST

START_TEST(test_wrong_arguments_name_the_kernel) {
  if (compiler_missing(__func__)) return;
  char* ir = NULL;
  OK(vector_add(32, &ir));
  zt_compile_options_t o = {.target = "cpu"};
  zt_artifact_t* a = NULL;
  OK(zt_compile_cached(ir, strlen(ir), &o, &a, NULL));
  zt_device_t* d = NULL;
  OK(zt_device_open("cpu", &d));
  zt_executable_t* e = NULL;
  OK(zt_executable_create(d, a, &e));
  zt_arg_t args[4] = {{ZT_PTR, {.ptr = 0}}, {ZT_PTR, {.ptr = 0}}, {ZT_PTR, {.ptr = 0}},
                      {ZT_F32, {.f = 1.0}}};
  uint32_t grid[3] = {1, 1, 1};
  zt_status_t s = zt_launch(e, grid, 4, args);
  ck_assert_int_eq(zt_status_code(s), ZT_STATUS_INVALID_ARGUMENT);
  ck_assert_msg(strstr(zt_status_message(s), "add_kernel") &&
                    strstr(zt_status_message(s), "argument 3"),
                "%s", zt_status_message(s));
  zt_status_free(s);
  zt_executable_release(e);
  zt_device_release(d);
  zt_artifact_release(a);
  free(ir);
}
END_TEST

// The warm process of test_vector_add_compiled_and_cached.
static int warm_child(void) {
  char* ir = NULL;
  zt_status_t s = vector_add(64, &ir);
  zt_compile_options_t o = {.target = "cpu"};
  zt_artifact_t* a = NULL;
  bool hit = false;
  if (!s) s = zt_compile_cached(ir, strlen(ir), &o, &a, &hit);
  zt_cache_stats_t st;
  zt_cache_get_stats(&st);
  int rc = 0;
  if (s || !hit || st.compiles != 0) {
    fprintf(stderr, "warm child: %s hit=%d compiles=%lld\n", zt_status_message(s), hit,
            (long long)st.compiles);
    rc = 1;
  } else if (maps_mention("libzetile_compiler") || maps_mention("libMLIR")) {
    fprintf(stderr, "warm child: a cache hit loaded the compiler\n");
    rc = 2;
  } else {
    // The cached machine code is loaded by libzetile's own loader: the
    // launch does not load the compiler either.
    const char* why = run_vector_add_checked(a, 777, 64);
    if (why) {
      fprintf(stderr, "warm child: %s\n", why);
      rc = 3;
    } else if (maps_mention("libzetile_compiler") || maps_mention("libMLIR")) {
      fprintf(stderr, "warm child: loading the cached kernel loaded the compiler\n");
      rc = 4;
    }
  }
  zt_status_free(s);
  zt_artifact_release(a);
  free(ir);
  return rc;
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "--warm-child") == 0) return warm_child();
  Suite* suite = suite_create("runtime_compile_cpu");
  TCase* tc = tcase_create("compile_cpu");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_vector_add_compiled_and_cached);
  tcase_add_test(tc, test_wrong_arguments_name_the_kernel);
  tcase_add_test(tc, test_machine_code_in_the_artifact);
  tcase_add_test(tc, test_cpu_loader_modes);
  tcase_add_test(tc, test_own_loader_refuses_damage);
  suite_add_tcase(suite, tc);
  return ct_run_suite(suite);
}
