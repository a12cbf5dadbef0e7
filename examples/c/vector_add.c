// zetile from C, against an installed zetile (no Python): builds Triton's
// tutorial-01 vector add with the builder, compiles it for the CPU target
// (cached on disk), launches it and checks the result.
//   cmake -S examples/c -B build-example -DCMAKE_PREFIX_PATH=<prefix>   or
//   cc vector_add.c $(pkg-config --cflags --libs zetile)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zetile/zetile.h>

#define CHECK(expr)                                                      \
  do {                                                                   \
    zt_status_t s_ = (expr);                                             \
    if (s_) {                                                            \
      fprintf(stderr, "%s: %s\n", #expr, zt_status_message(s_));         \
      zt_status_free(s_);                                                \
      exit(1);                                                           \
    }                                                                    \
  } while (0)

enum { BLOCK = 256 };

// out[i] = x[i] + y[i] for i < n, BLOCK elements per program.
static char* build_vector_add(void) {
  zt_builder_t* b = NULL;
  CHECK(zt_builder_create(&b));
  zt_type_t types[4] = {zt_type_ptr(ZT_F32), zt_type_ptr(ZT_F32), zt_type_ptr(ZT_F32),
                        zt_type_scalar(ZT_I32)};
  zt_value_t a[4], pid, c, start, r, offs, n, mask, px, x, py, y, sum, pz;
  int64_t shape[1] = {BLOCK};
  CHECK(zt_builder_begin_kernel(b, "add_kernel", 4, types, NULL, a));
  CHECK(zt_builder_program_id(b, 0, &pid));
  CHECK(zt_builder_const_int(b, ZT_I32, BLOCK, &c));
  CHECK(zt_builder_binary(b, ZT_BINARY_MULI, pid, c, &start));
  CHECK(zt_builder_make_range(b, 0, BLOCK, &r));
  CHECK(zt_builder_splat(b, start, 1, shape, &offs));
  CHECK(zt_builder_binary(b, ZT_BINARY_ADDI, offs, r, &offs));
  CHECK(zt_builder_splat(b, a[3], 1, shape, &n));
  CHECK(zt_builder_cmp(b, ZT_CMP_SLT, offs, n, &mask));
  CHECK(zt_builder_splat(b, a[0], 1, shape, &px));
  CHECK(zt_builder_addptr(b, px, offs, &px));
  CHECK(zt_builder_load(b, px, mask, ZT_NO_VALUE, &x));
  CHECK(zt_builder_splat(b, a[1], 1, shape, &py));
  CHECK(zt_builder_addptr(b, py, offs, &py));
  CHECK(zt_builder_load(b, py, mask, ZT_NO_VALUE, &y));
  CHECK(zt_builder_binary(b, ZT_BINARY_ADDF, x, y, &sum));
  CHECK(zt_builder_splat(b, a[2], 1, shape, &pz));
  CHECK(zt_builder_addptr(b, pz, offs, &pz));
  CHECK(zt_builder_store(b, pz, sum, mask));
  CHECK(zt_builder_end_kernel(b));
  const char* text = NULL;
  size_t size = 0;
  CHECK(zt_builder_module_text(b, &text, &size));
  char* ir = strndup(text, size);
  zt_builder_release(b);
  return ir;
}

int main(void) {
  printf("zetile %s\n", zt_version());
  char* ir = build_vector_add();
  zt_compile_options_t opts = {.target = "cpu"};
  zt_artifact_t* art = NULL;
  bool hit = false;
  CHECK(zt_compile_cached(ir, strlen(ir), &opts, &art, &hit));
  free(ir);

  const int32_t count = 1000;
  size_t bytes = (size_t)count * sizeof(float);
  float* hx = malloc(bytes);
  float* hy = malloc(bytes);
  float* ho = malloc(bytes);
  for (int32_t i = 0; i < count; ++i) {
    hx[i] = (float)i;
    hy[i] = 0.5f * (float)i;
  }
  zt_device_t* dev = NULL;
  zt_executable_t* exe = NULL;
  zt_buffer_t *bx = NULL, *by = NULL, *bo = NULL;
  CHECK(zt_device_open("cpu", &dev));
  CHECK(zt_executable_create(dev, art, &exe));
  CHECK(zt_buffer_alloc(dev, bytes, &bx));
  CHECK(zt_buffer_alloc(dev, bytes, &by));
  CHECK(zt_buffer_alloc(dev, bytes, &bo));
  CHECK(zt_buffer_write(bx, 0, hx, bytes));
  CHECK(zt_buffer_write(by, 0, hy, bytes));
  zt_arg_t args[4] = {{ZT_PTR, {.ptr = zt_buffer_address(bx)}},
                      {ZT_PTR, {.ptr = zt_buffer_address(by)}},
                      {ZT_PTR, {.ptr = zt_buffer_address(bo)}},
                      {ZT_I32, {.i = count}}};
  uint32_t grid[3] = {(count + BLOCK - 1) / BLOCK, 1, 1};
  CHECK(zt_launch(exe, grid, 4, args));
  CHECK(zt_device_synchronize(dev));
  CHECK(zt_buffer_read(bo, 0, ho, bytes));
  int bad = 0;
  for (int32_t i = 0; i < count; ++i) bad += ho[i] != hx[i] + hy[i];
  printf("vector add of %d floats on the CPU target (%s): %d wrong\n", count,
         hit ? "from the cache" : "compiled", bad);
  zt_buffer_release(bx);
  zt_buffer_release(by);
  zt_buffer_release(bo);
  zt_executable_release(exe);
  zt_device_release(dev);
  zt_artifact_release(art);
  free(hx);
  free(hy);
  free(ho);
  return bad != 0;
}
