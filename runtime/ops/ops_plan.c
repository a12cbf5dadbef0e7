// zetile ops: finding, compiling and launching an exported specialization.
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ops/ops_internal.h"

const char* zt_ops__dtype_name(zt_scalar_kind_t k) {
  switch (k) {
    case ZT_F32: return "f32";
    case ZT_F16: return "f16";
    case ZT_BF16: return "bf16";
    default: return NULL;
  }
}

size_t zt_ops__dtype_bytes(zt_scalar_kind_t k) { return k == ZT_F32 ? 4 : 2; }

int64_t zt_ops__cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

static bool is_dir(const char* path) {
  struct stat st;
  return path && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

// $ZETILE_OPS_DIR, else a folder beside this library (an install:
// P/lib/libzetile.so -> P/share/zetile/prebuilt; the wheel: zetile/ ->
// zetile/stdlib-kernels/prebuilt), found from the library's own path so
// installs stay relocatable, else the source tree's (a build used in place).
static char g_found[4096];
static pthread_once_t g_found_once = PTHREAD_ONCE_INIT;

static void find_beside_library(void) {
  Dl_info info;
  if (!dladdr((void*)&find_beside_library, &info) || !info.dli_fname) return;
  char lib[4096];
  snprintf(lib, sizeof lib, "%s", info.dli_fname);
  char* slash = strrchr(lib, '/');
  if (!slash) return;
  *slash = 0;
  const char* rel[] = {"/../share/zetile/prebuilt", "/stdlib-kernels/prebuilt"};
  for (int i = 0; i < 2; ++i) {
    char cand[4200];
    snprintf(cand, sizeof cand, "%s%s", lib, rel[i]);
    if (is_dir(cand)) {
      snprintf(g_found, sizeof g_found, "%s", cand);
      return;
    }
  }
}

static const char* prebuilt_dir(void) {
  const char* env = getenv("ZETILE_OPS_DIR");
  if (env && *env) return env;
  pthread_once(&g_found_once, find_beside_library);  // plans may start on many threads
  if (g_found[0]) return g_found;
#ifdef ZT_OPS_SOURCE_DIR
  return ZT_OPS_SOURCE_DIR;
#else
  return "stdlib-kernels/prebuilt";
#endif
}

static zt_status_t read_text(const char* dir, const char* spec, const char* ext, char** out,
                             size_t* out_size) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.%s", dir, spec, ext);
  FILE* f = fopen(path, "rb");
  if (!f) {
    if (errno == ENOENT)
      return zt_make_status(ZT_STATUS_NOT_FOUND,
                            "no exported specialization '%s' in %s (%s.%s missing); export it "
                            "with: python -m zetile.ops.export %s %s",
                            spec, dir, spec, ext, dir, spec);
    return zt_make_status(ZT_STATUS_IO_ERROR, "cannot open %s: %s", path, strerror(errno));
  }
  zt_status_t s = NULL;
  char* buf = NULL;
  long n = -1;
  if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
  if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
    s = zt_make_status(ZT_STATUS_IO_ERROR, "cannot read %s", path);
  } else if (!(buf = malloc((size_t)n + 1))) {
    s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "reading %s", path);
  } else if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
    s = zt_make_status(ZT_STATUS_IO_ERROR, "short read of %s", path);
  }
  fclose(f);
  if (s) {
    free(buf);
    return s;
  }
  buf[n] = 0;
  *out = buf;
  if (out_size) *out_size = (size_t)n;
  return NULL;
}

// NAME.args: "# comment" lines, then "name kind value" per run-time argument
// in launch order (export.py).
static zt_status_t parse_args(zt_ops_plan_t* p, char* text, const char* dir) {
  char* save = NULL;
  for (char* line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    if (line[0] == '#' || line[0] == 0) continue;
    char name[24], kind[16];
    if (sscanf(line, "%23s %15s", name, kind) != 2 || p->nargs >= ZT_OPS_MAX_ARGS)
      return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s/%s.args: bad line '%s'", dir,
                            p->spec, line);
    zt_arg_t* a = &p->args[p->nargs];
    memset(a, 0, sizeof *a);
    if (!strcmp(kind, "ptr")) a->kind = ZT_PTR;
    else if (!strcmp(kind, "int32")) a->kind = ZT_I32;
    else if (!strcmp(kind, "int64")) a->kind = ZT_I64;
    else if (!strcmp(kind, "fp32")) a->kind = ZT_F32;
    else
      return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s/%s.args: unknown kind '%s'", dir,
                            p->spec, kind);
    snprintf(p->names[p->nargs], sizeof p->names[0], "%s", name);
    p->nargs++;
  }
  return NULL;
}

zt_status_t zt_ops__plan_create(zt_device_t* device, zt_ops_family_t family, const char* spec,
                                zt_ops_transform_t transform, void* user,
                                zt_ops_plan_t** out_plan) {
  return zt_ops__plan_create_nw(device, family, spec, 0, transform, user, out_plan);
}

zt_status_t zt_ops__plan_create_nw(zt_device_t* device, zt_ops_family_t family, const char* spec,
                                   int32_t num_warps, zt_ops_transform_t transform, void* user,
                                   zt_ops_plan_t** out_plan) {
  zt_ops_plan_t* p = calloc(1, sizeof *p);
  if (!p) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "zt_ops plan");
  p->family = family;
  snprintf(p->spec, sizeof p->spec, "%s", spec);
  p->grid[0] = p->grid[1] = p->grid[2] = 1;
  const char* dir = prebuilt_dir();
  char *ir = NULL, *args = NULL;
  size_t ir_size = 0;
  zt_artifact_t* art = NULL;
  zt_status_t s = read_text(dir, spec, "tile", &ir, &ir_size);
  if (!s) s = read_text(dir, spec, "args", &args, NULL);
  char* lines = NULL;  // parse_args cuts its text up; the transform reads it whole
  if (!s && !(lines = strdup(args))) s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "%s", spec);
  if (!s) s = parse_args(p, lines, dir);
  free(lines);
  if (!s && transform) {
    s = transform(p, &ir, args, user);
    if (!s) ir_size = strlen(ir);
  }
  if (!s) {
    const zt_device_info_t* info = zt_device_info(device);
    zt_compile_options_t o = {.target = info->target, .compat = info->compat,
                              .num_warps = num_warps};
    s = zt_compile_cached(ir, ir_size, &o, &art, &p->cache_hit);
    if (s) s = zt_status_annotate(s, "compiling %s", spec);
  }
  if (!s) s = zt_executable_create(device, art, &p->exe);
  zt_artifact_release(art);
  free(ir);
  free(args);
  if (s) {
    zt_ops_plan_release(p);
    return s;
  }
  zt_device_retain(device);
  p->device = device;
  *out_plan = p;
  return NULL;
}

static int find_arg(const zt_ops_plan_t* p, const char* name) {
  for (int i = 0; i < p->nargs; ++i)
    if (!strcmp(p->names[i], name)) return i;
  return -1;
}

static zt_status_t missing(const zt_ops_plan_t* p, const char* name) {
  return zt_make_status(ZT_STATUS_INTERNAL,
                        "%s.args has no argument '%s': the exported files do not match this "
                        "library (re-export them with python -m zetile.ops.export)",
                        p->spec, name);
}

zt_status_t zt_ops__set_int(zt_ops_plan_t* p, const char* name, int64_t v) {
  int i = find_arg(p, name);
  if (i < 0 || (p->args[i].kind != ZT_I32 && p->args[i].kind != ZT_I64)) return missing(p, name);
  p->args[i].value.i = v;
  return NULL;
}

zt_status_t zt_ops__set_f32(zt_ops_plan_t* p, const char* name, double v) {
  int i = find_arg(p, name);
  if (i < 0 || p->args[i].kind != ZT_F32) return missing(p, name);
  p->args[i].value.f = v;
  return NULL;
}

zt_status_t zt_ops__set_buffer(zt_ops_plan_t* p, const char* name, const zt_buffer_t* b) {
  int i = find_arg(p, name);
  if (i < 0 || p->args[i].kind != ZT_PTR) return missing(p, name);
  p->args[i].value.ptr = zt_buffer_address(b);
  p->arg_bytes[i] = zt_buffer_size(b);
  return NULL;
}

// The furthest element of a view (strides checked non-negative), or -1 on
// overflow.
static int64_t last_offset(int rank, const int64_t* dims, const int64_t* strides) {
  int64_t off = 0;
  for (int i = 0; i < rank; ++i) {
    if (dims[i] <= 0) return 0;
    int64_t t;
    if (__builtin_mul_overflow(dims[i] - 1, strides[i], &t) || __builtin_add_overflow(off, t, &off))
      return -1;
  }
  return off;
}

zt_status_t zt_ops__check_strides(const char* op, const char* what, int rank,
                                  const int64_t* dims, const int64_t* strides) {
  for (int i = 0; i < rank; ++i)
    if (strides[i] < 0)
      return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: %s has a negative stride (%lld in "
                            "dimension %d)", op, what, (long long)strides[i], i);
  int64_t last = last_offset(rank, dims, strides);
  // The templates compute offsets in int32 (as Triton's do for 32-bit
  // arguments): a view reaching further is refused rather than wrapped.
  if (last < 0 || last > INT32_MAX)
    return zt_make_status(ZT_STATUS_UNSUPPORTED, "%s: %s spans more than 2^31 elements, which "
                          "the exported (int32-offset) specializations do not address", op, what);
  return NULL;
}

zt_status_t zt_ops__check_view(const char* op, const char* what, const zt_buffer_t* buf,
                               size_t elem_bytes, int rank, const int64_t* dims,
                               const int64_t* strides) {
  if (!buf)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: buffer '%s' is NULL", op, what);
  int64_t last = last_offset(rank, dims, strides);
  uint64_t need = ((uint64_t)last + 1) * elem_bytes;
  if (last < 0 || need > zt_buffer_size(buf))
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                          "%s: buffer '%s' holds %zu bytes but its view reaches %llu", op, what,
                          zt_buffer_size(buf), (unsigned long long)need);
  return NULL;
}

zt_status_t zt_ops__launch(zt_ops_plan_t* p) {
  if (p->grid[0] == 0 || p->grid[1] == 0 || p->grid[2] == 0) return NULL;
  zt_status_t s = zt_launch_checked(p->exe, p->grid, p->nargs, p->args, p->arg_bytes);
  return s ? zt_status_annotate(s, "%s", p->spec) : NULL;
}

const char* zt_ops_plan_spec(const zt_ops_plan_t* plan) { return plan ? plan->spec : ""; }

bool zt_ops_plan_cache_hit(const zt_ops_plan_t* plan) { return plan && plan->cache_hit; }

void zt_ops_plan_release(zt_ops_plan_t* plan) {
  if (!plan) return;
  zt_buffer_release(plan->zero);
  zt_buffer_release(plan->lse);
  zt_buffer_release(plan->params);
  for (int i = 0; i < 3; ++i) zt_buffer_release(plan->ws[i]);
  for (int i = 0; i < 5; ++i) zt_buffer_release(plan->blk[i]);
  zt_ops_plan_release(plan->combine);
  zt_ops_plan_release(plan->bwd[0]);
  zt_ops_plan_release(plan->bwd[1]);
  zt_executable_release(plan->exe);
  if (plan->device) zt_device_release(plan->device);
  free(plan);
}

bool zt_ops__rm16_view(const zt_ops_strides4_t* s) {
  return s->dim == 1 && s->seq > 0 && s->seq % 16 == 0 && s->head % 16 == 0 &&
         s->batch % 16 == 0;
}

zt_status_t zt_ops__plan_create_rm16(zt_device_t* device, zt_ops_family_t family,
                                     const char* spec, bool rm16, zt_ops_transform_t transform,
                                     void* user, zt_ops_plan_t** out_plan) {
  return zt_ops__plan_create_rm16_nw(device, family, spec, rm16, 0, transform, user, out_plan);
}

zt_status_t zt_ops__plan_create_rm16_nw(zt_device_t* device, zt_ops_family_t family,
                                        const char* spec, bool rm16, int32_t num_warps,
                                        zt_ops_transform_t transform, void* user,
                                        zt_ops_plan_t** out_plan) {
  if (rm16) {
    char name[ZT_OPS_SPEC_MAX];
    snprintf(name, sizeof name, "%s-rm16", spec);
    zt_status_t s =
        zt_ops__plan_create_nw(device, family, name, num_warps, transform, user, out_plan);
    if (!s) {
      (*out_plan)->aligned16 = true;
      return NULL;
    }
    if (zt_status_code(s) != ZT_STATUS_NOT_FOUND) return s;
    zt_status_free(s);  // not exported: the generic specialization serves too
  }
  return zt_ops__plan_create_nw(device, family, spec, num_warps, transform, user, out_plan);
}

zt_status_t zt_ops__check_aligned16(const char* op, const zt_ops_plan_t* p, int n,
                                    const char* const names[], const zt_buffer_t* const bufs[]) {
  if (!p->aligned16) return NULL;
  for (int i = 0; i < n; ++i)
    if (bufs[i] && zt_buffer_address(bufs[i]) % 16)
      return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "%s: buffer '%s' is not 16-byte "
                            "aligned, which plan %s was compiled for", op, names[i], p->spec);
  return NULL;
}
