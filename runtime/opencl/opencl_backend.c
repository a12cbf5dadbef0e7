// The OpenCL backend: one context and one in-order queue per opened device;
// USM buffers (host allocations on the CPU runtime, so kernels and numpy
// share memory; device allocations on GPUs); executables from the artifact's
// SPIR-V, byte for byte what Level Zero gets, linked here (and only here)
// with the emulation library of Intel GPU-only builtins when the device has
// no such builtins (Intel's CPU runtime).
//
// Pointer arguments are i64 addresses in zetile's kernels, so they are set
// with clSetKernelArg as 8-byte values: USM addresses are raw device
// addresses. Launches are asynchronous; synchronize is clFinish.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opencl/opencl.h"

typedef struct cl_device_s {
  zt_device_t base;
  const zt_cl_device_entry_t* entry;
  const zt_cl_syms_t* syms;
  cl_context context;
  cl_command_queue queue;
  pthread_mutex_t mu;      // queue, pending, emu
  bool pending;            // launches enqueued since the last clFinish
  cl_program emu;          // compiled (not linked) emulation library, lazily
  char* emu_exports;       // '\n'-separated names the library defines
} cl_device_t;

typedef struct cl_buffer_s {
  zt_buffer_t base;
  void* ptr;
} cl_buffer_t;

typedef struct cl_executable_s {
  zt_executable_t base;
  cl_program program;
  cl_kernel kernel;
  pthread_mutex_t args_mu;  // argument setting + enqueue is one critical section
  // Programs linked with the emulation library: its kernel that reports the
  // first 2D block call with operands outside the spec's rules (emu/block2d.cl),
  // run after every launch, and its 13-word host buffer. NULL unless
  // ZETILE_OPENCL_BLOCK2D_CHECK=1.
  cl_kernel faults;
  uint32_t* fault_words;
} cl_executable_t;

static cl_device_t* as_cl(zt_device_t* d) { return (cl_device_t*)d; }

static bool getenv_is_one(const char* name) {
  const char* v = getenv(name);
  return v && strcmp(v, "1") == 0;
}

// --- device ------------------------------------------------------------------

static zt_status_t finish_locked(cl_device_t* d) {
  if (!d->pending) return NULL;
  zt_status_t st = ZT_CL_STATUS(d->syms, clFinish, d->queue);
  if (!st) d->pending = false;
  return st;
}

static zt_status_t cl_synchronize(zt_device_t* base) {
  cl_device_t* d = as_cl(base);
  pthread_mutex_lock(&d->mu);
  zt_status_t st = finish_locked(d);
  pthread_mutex_unlock(&d->mu);
  return st;
}

static void drain(cl_device_t* d) { zt_status_free(cl_synchronize(&d->base)); }

static pthread_mutex_t open_mu = PTHREAD_MUTEX_INITIALIZER;
static cl_device_t* opened[ZT_CL_MAX_DEVICES];

static void cl_destroy(zt_device_t* base) {
  cl_device_t* d = as_cl(base);
  pthread_mutex_lock(&open_mu);
  for (int i = 0; i < ZT_CL_MAX_DEVICES; ++i)
    if (opened[i] == d) opened[i] = NULL;
  pthread_mutex_unlock(&open_mu);
  if (d->queue) {
    drain(d);
    d->syms->clReleaseCommandQueue(d->queue);
  }
  if (d->emu) d->syms->clReleaseProgram(d->emu);
  free(d->emu_exports);
  if (d->context) d->syms->clReleaseContext(d->context);
  pthread_mutex_destroy(&d->mu);
  free(d);
}

// --- buffers -----------------------------------------------------------------

static zt_status_t cl_buffer_alloc(zt_device_t* base, size_t size, zt_buffer_t** out) {
  cl_device_t* d = as_cl(base);
  const zt_cl_usm_t* usm = &d->entry->usm;
  cl_buffer_t* b = calloc(1, sizeof *b);
  if (!b) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "buffer");
  cl_int err = CL_SUCCESS;
  size_t n = size ? size : 1;
  if (base->info.host_memory)
    b->ptr = usm->host_alloc(d->context, NULL, n, 64, &err);
  else
    b->ptr = usm->device_alloc(d->context, d->entry->device, NULL, n, 64, &err);
  if (!b->ptr || err != CL_SUCCESS) {
    free(b);
    zt_status_t st = zt_cl_make_status(err != CL_SUCCESS ? err : CL_OUT_OF_RESOURCES,
                                       base->info.host_memory ? "clHostMemAllocINTEL"
                                                              : "clDeviceMemAllocINTEL");
    return zt_status_annotate(st, "allocating %zu bytes", size);
  }
  b->base.address = (uint64_t)(uintptr_t)b->ptr;
  b->base.host_ptr = base->info.host_memory ? b->ptr : NULL;
  *out = &b->base;
  return NULL;
}

static void cl_buffer_free(zt_buffer_t* base) {
  cl_buffer_t* b = (cl_buffer_t*)base;
  cl_device_t* d = as_cl(base->device);
  drain(d);
  d->entry->usm.blocking_free(d->context, b->ptr);
  free(b);
}

// Blocking copies after every queued launch.
static zt_status_t copy(cl_device_t* d, void* dst, const void* src, size_t size) {
  pthread_mutex_lock(&d->mu);
  zt_status_t st = finish_locked(d);
  if (!st) {
    if (d->base.info.host_memory) {
      memcpy(dst, src, size);
    } else {
      cl_int err = d->entry->usm.memcpy(d->queue, CL_TRUE, dst, src, size, 0, NULL, NULL);
      st = zt_cl_make_status(err, "clEnqueueMemcpyINTEL");
    }
  }
  pthread_mutex_unlock(&d->mu);
  return st;
}

static zt_status_t cl_buffer_write(zt_buffer_t* base, size_t offset, const void* src,
                                   size_t size) {
  cl_buffer_t* b = (cl_buffer_t*)base;
  return copy(as_cl(base->device), (char*)b->ptr + offset, src, size);
}

static zt_status_t cl_buffer_read(const zt_buffer_t* base, size_t offset, void* dst,
                                  size_t size) {
  const cl_buffer_t* b = (const cl_buffer_t*)base;
  return copy(as_cl(base->device), dst, (const char*)b->ptr + offset, size);
}

// --- programs ----------------------------------------------------------------

// Appends the build log of `program` to a failed status.
static zt_status_t with_log(cl_device_t* d, cl_program program, zt_status_t st) {
  if (!st || !program) return st;
  size_t n = 0;
  const zt_cl_syms_t* s = d->syms;
  if (s->clGetProgramBuildInfo(program, d->entry->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) !=
          CL_SUCCESS ||
      n <= 1)
    return st;
  char* log = calloc(1, n + 1);
  if (log && s->clGetProgramBuildInfo(program, d->entry->device, CL_PROGRAM_BUILD_LOG, n, log,
                                      NULL) == CL_SUCCESS) {
    size_t len = strlen(log);
    while (len && (log[len - 1] == '\n' || log[len - 1] == ' ')) log[--len] = 0;
    if (len) {
      zt_status_t full = zt_make_status(zt_status_code(st), "%s\nbuild log:\n%s",
                                        zt_status_message(st), log);
      zt_status_free(st);
      st = full;
    }
  }
  free(log);
  return st;
}

// The emulation library, compiled once per device (mu held).
static zt_status_t emu_program_locked(cl_device_t* d) {
  if (d->emu) return NULL;
  if (!zt_cl_emu_spv_size)
    return zt_make_status(ZT_STATUS_UNAVAILABLE,
                          "zetile was built without its OpenCL emulation library (clang-22 "
                          "was not found at build time)");
  const zt_cl_syms_t* s = d->syms;
  zt_strbuf_t names;
  zt_strbuf_init(&names);
  zt_status_t st = zt_cl_spirv_linkage_names(zt_cl_emu_spv, zt_cl_emu_spv_size, 0, &names);
  if (st) {
    zt_strbuf_deinit(&names);
    return zt_status_annotate(st, "emulation library");
  }
  cl_int err = CL_SUCCESS;
  cl_program p = s->clCreateProgramWithIL(d->context, zt_cl_emu_spv, zt_cl_emu_spv_size, &err);
  st = zt_cl_make_status(err, "clCreateProgramWithIL");
  if (!st) {
    st = ZT_CL_STATUS(s, clCompileProgram, p, 1, &d->entry->device, "", 0, NULL, NULL, NULL,
                      NULL);
    st = with_log(d, p, st);
  }
  if (st) {
    if (p) s->clReleaseProgram(p);
    zt_strbuf_deinit(&names);
    return zt_status_annotate(st, "compiling the emulation library");
  }
  d->emu = p;
  d->emu_exports = zt_strbuf_take(&names);
  return NULL;
}

// Intel's CPU runtime rejects IGC's own options (-ze-*, -igc_opts): keep
// only standard OpenCL build options there.
static void build_options(const cl_device_t* d, const char* in, char* out, size_t cap) {
  out[0] = 0;
  if (!d->entry->emulate) {
    snprintf(out, cap, "%s", in);
    return;
  }
  size_t used = 0;
  for (const char* p = in; *p;) {
    while (*p == ' ') ++p;
    const char* e = p;
    while (*e && *e != ' ') ++e;
    if (e > p && strncmp(p, "-cl-", 4) == 0 && used + (size_t)(e - p) + 2 < cap) {
      memcpy(out + used, p, (size_t)(e - p));
      used += (size_t)(e - p);
      out[used++] = ' ';
      out[used] = 0;
    }
    p = e;
  }
}

// Builds the kernel's SPIR-V as is; if it imports builtins the emulation
// library defines, compiles it and links it with the library instead.
static zt_status_t build_program(cl_device_t* d, const void* spirv, size_t size,
                                 const char* flags, cl_program* out, bool* linked_emu) {
  const zt_cl_syms_t* s = d->syms;
  *out = NULL;
  *linked_emu = false;
  bool link = false;
  zt_status_t st = NULL;
  if (d->entry->emulate && zt_cl_spirv_narrows_local_pointers(spirv, size) &&
      !getenv_is_one("ZETILE_OPENCL_ALLOW_NARROW_SLM"))
    return zt_make_status(
        ZT_STATUS_UNSUPPORTED,
        "the SPIR-V keeps local-memory (SLM) addresses in 32-bit integers (OpConvertPtrToU of "
        "a Workgroup pointer, from upstream's XeGPU lowering of SLM): right on Intel GPUs, whose "
        "SLM addresses have 32 bits, but Intel's CPU runtime gives local memory 64-bit "
        "addresses and the kernel would fault. Kernels that reduce across subgroups through "
        "SLM cannot run on %s; with num_warps=1 they use no SLM",
        d->base.info.name);
  if (d->entry->emulate) {
    zt_strbuf_t imports;
    zt_strbuf_init(&imports);
    st = zt_cl_spirv_linkage_names(spirv, size, 1, &imports);
    if (!st && imports.size) {
      pthread_mutex_lock(&d->mu);
      st = emu_program_locked(d);
      pthread_mutex_unlock(&d->mu);
      for (const char* p = imports.data; !st && p && *p;) {
        const char* nl = strchr(p, '\n');
        size_t l = nl ? (size_t)(nl - p) : strlen(p);
        if (zt_cl_name_in_list(d->emu_exports, p, l)) link = true;
        p = nl ? nl + 1 : p + l;
      }
    }
    zt_strbuf_deinit(&imports);
    if (st) return st;
  }
  // The CPU runtime loses a negation kept across a barrier: it gets the
  // same module with such negations moved below the barrier
  // (spirv_fneg_sink.c; with the emulation library, as the CPU runtime is
  // the one that needs it); ZETILE_OPENCL_KEEP_FNEG=1 runs the bytes as
  // they are.
  size_t moved = 0;
  void* sunk = d->entry->emulate && !getenv_is_one("ZETILE_OPENCL_KEEP_FNEG")
                   ? zt_cl_spirv_sink_fneg(spirv, size, &moved)
                   : NULL;
  cl_int err = CL_SUCCESS;
  cl_program p = s->clCreateProgramWithIL(d->context, sunk ? sunk : spirv, size, &err);
  free(sunk);
  st = zt_cl_make_status(err, "clCreateProgramWithIL");
  if (st) return st;
  if (!link) {
    st = with_log(d, p, ZT_CL_STATUS(s, clBuildProgram, p, 1, &d->entry->device, flags, NULL,
                                     NULL));
    if (st) {
      s->clReleaseProgram(p);
      return st;
    }
    *out = p;
    return NULL;
  }
  st = with_log(d, p, ZT_CL_STATUS(s, clCompileProgram, p, 1, &d->entry->device, flags, 0,
                                   NULL, NULL, NULL, NULL));
  if (st) {
    s->clReleaseProgram(p);
    return st;
  }
  cl_program inputs[2] = {p, d->emu};
  cl_program linked = s->clLinkProgram(d->context, 1, &d->entry->device, "", 2, inputs, NULL,
                                       NULL, &err);
  st = zt_cl_make_status(err, "clLinkProgram");
  if (st) st = zt_status_annotate(with_log(d, linked, st), "linking with the emulation library");
  s->clReleaseProgram(p);
  if (st) {
    if (linked) s->clReleaseProgram(linked);
    return st;
  }
  *out = linked;
  *linked_emu = true;
  return NULL;
}

// --- executables -------------------------------------------------------------

static zt_status_t cl_executable_create(zt_device_t* base, const zt_artifact_t* artifact,
                                        const zt_kernel_meta_t* meta,
                                        zt_executable_t** out) {
  cl_device_t* d = as_cl(base);
  const zt_cl_syms_t* s = d->syms;
  const void* spirv = NULL;
  size_t spirv_size = 0;
  ZT_RETURN_IF_ERROR(zt_artifact_get(artifact, "spirv", &spirv, &spirv_size));
  cl_executable_t* e = calloc(1, sizeof *e);
  if (!e) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "executable");
  pthread_mutex_init(&e->args_mu, NULL);
  char flags[sizeof meta->igc_options];
  build_options(d, meta->igc_options, flags, sizeof flags);
  bool linked_emu = false;
  zt_status_t st = build_program(d, spirv, spirv_size, flags, &e->program, &linked_emu);
  if (st) goto cleanup;
  cl_int err = CL_SUCCESS;
  const char* check = getenv("ZETILE_OPENCL_BLOCK2D_CHECK");
  // Opt-in until the findings it reports (docs/ARCHITECTURE.md "2-D block
  // pitch") are fixed: with it on, many E5 tests stop at a violation.
  if (linked_emu && d->base.info.host_memory && check && strcmp(check, "1") == 0) {
    // A library built before the checks has no such kernel: no checks then.
    cl_int ferr = CL_SUCCESS;
    e->faults = s->clCreateKernel(e->program, "zt_emu_block2d_faults", &ferr);
    if (ferr != CL_SUCCESS) e->faults = NULL;
    if (e->faults) {
      e->fault_words = d->entry->usm.host_alloc(d->context, NULL, 13 * sizeof(uint32_t), 64,
                                                &ferr);
      uint64_t addr = (uint64_t)(uintptr_t)e->fault_words;
      if (!e->fault_words || ferr != CL_SUCCESS ||
          s->clSetKernelArg(e->faults, 0, sizeof addr, &addr) != CL_SUCCESS) {
        st = zt_cl_make_status(ferr != CL_SUCCESS ? ferr : CL_OUT_OF_RESOURCES,
                               "the 2D block check's buffer");
        goto cleanup;
      }
    }
  }
  e->kernel = s->clCreateKernel(e->program, meta->kernel, &err);
  st = zt_cl_make_status(err, "clCreateKernel");
  if (st) goto cleanup;
  cl_uint nargs = 0;
  st = ZT_CL_STATUS(s, clGetKernelInfo, e->kernel, CL_KERNEL_NUM_ARGS, sizeof nargs, &nargs,
                    NULL);
  if (st) goto cleanup;
  if (nargs != (cl_uint)meta->num_args) {
    st = zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                        "the SPIR-V kernel takes %u arguments but its meta lists %d", nargs,
                        meta->num_args);
    goto cleanup;
  }
  *out = &e->base;
  return NULL;

cleanup:
  if (e->faults) s->clReleaseKernel(e->faults);
  if (e->fault_words) d->entry->usm.blocking_free(d->context, e->fault_words);
  if (e->kernel) s->clReleaseKernel(e->kernel);
  if (e->program) s->clReleaseProgram(e->program);
  pthread_mutex_destroy(&e->args_mu);
  free(e);
  return st;
}

static void cl_executable_destroy(zt_executable_t* base) {
  cl_executable_t* e = (cl_executable_t*)base;
  cl_device_t* d = as_cl(base->device);
  drain(d);
  if (e->faults) d->syms->clReleaseKernel(e->faults);
  if (e->fault_words) d->entry->usm.blocking_free(d->context, e->fault_words);
  d->syms->clReleaseKernel(e->kernel);
  d->syms->clReleaseProgram(e->program);
  pthread_mutex_destroy(&e->args_mu);
  free(e);
}

static zt_status_t cl_executable_stats(const zt_executable_t* base, zt_kernel_stats_t* out) {
  const cl_executable_t* e = (const cl_executable_t*)base;
  cl_device_t* d = as_cl(base->device);
  const zt_cl_syms_t* s = d->syms;
  cl_ulong v = 0;
  if (s->clGetKernelWorkGroupInfo(e->kernel, d->entry->device, CL_KERNEL_PRIVATE_MEM_SIZE,
                                  sizeof v, &v, NULL) == CL_SUCCESS)
    out->private_bytes = (int64_t)v;
  if (s->clGetKernelWorkGroupInfo(e->kernel, d->entry->device, CL_KERNEL_LOCAL_MEM_SIZE,
                                  sizeof v, &v, NULL) == CL_SUCCESS)
    out->local_bytes = (int64_t)v;
  if (s->clGetKernelSubGroupInfo) {
    size_t local[3] = {(size_t)base->meta.local_size[0], (size_t)base->meta.local_size[1],
                       (size_t)base->meta.local_size[2]};
    size_t sg = 0;
    if (s->clGetKernelSubGroupInfo(e->kernel, d->entry->device,
                                   CL_KERNEL_MAX_SUB_GROUP_SIZE_FOR_NDRANGE, sizeof local, local,
                                   sizeof sg, &sg, NULL) == CL_SUCCESS)
      out->max_subgroup_size = (int32_t)sg;
  }
  return NULL;
}

// --- launch ------------------------------------------------------------------

// After a launch of a program linked with the emulation library (d->mu held):
// runs its fault kernel, waits, and reports the first 2D block call whose
// operands break the spec's rules (emu/block2d.cl) as an error. This makes
// such launches synchronous; E5 runs are slow anyway.
static zt_status_t block2d_faults_locked(cl_device_t* d, cl_executable_t* e) {
  const zt_cl_syms_t* s = d->syms;
  size_t one = 1;
  zt_status_t st = ZT_CL_STATUS(s, clEnqueueNDRangeKernel, d->queue, e->faults, 1, NULL, &one,
                                &one, 0, NULL, NULL);
  if (!st) st = ZT_CL_STATUS(s, clFinish, d->queue);
  if (!st) d->pending = false;
  if (st || !e->fault_words[0]) return st;
  const uint32_t* w = e->fault_words;
  static const char* const kinds[] = {"read", "write", "read_transform", "read_transpose",
                                      "prefetch"};
  static const char* const rules[] = {
      "base not 64-byte aligned", "width not in [64, 2^24] bytes",
      "width not a multiple of max(4, element bytes)", "height not in [1, 2^24]",
      "pitch below the width or not a multiple of 16 bytes",
      "coord.x not a multiple of 4 (8-bit) or 2 (16-bit)"};
  char why[256] = "";
  for (int b = 0; b < 6; ++b)
    if (w[0] & (1u << b)) {
      if (why[0]) strncat(why, "; ", sizeof why - strlen(why) - 1);
      strncat(why, rules[b], sizeof why - strlen(why) - 1);
    }
  return zt_make_status(
      ZT_STATUS_INVALID_ARGUMENT,
      "intel_sub_group_2d_block_%s_%ub_%ur%ux%uc called with operands outside "
      "cl_intel_subgroup_2d_block_io's rules (%s): base 0x%llx width %d height %d pitch %d "
      "coord (%d, %d); an Intel GPU's result is undefined (checked by zetile's emulation "
      "library on %s, ZETILE_OPENCL_BLOCK2D_CHECK=1)",
      w[1] < 5 ? kinds[w[1]] : "?", w[2], w[3], w[4], w[5], why,
      (unsigned long long)w[6] | (unsigned long long)w[7] << 32, (int)w[8], (int)w[9],
      (int)w[10], (int)w[11], (int)w[12], d->base.info.name);
}

static zt_status_t cl_launch(zt_executable_t* base, const uint32_t grid[3],
                             const zt_arg_t* args) {
  cl_executable_t* e = (cl_executable_t*)base;
  cl_device_t* d = as_cl(base->device);
  const zt_cl_syms_t* s = d->syms;
  const zt_kernel_meta_t* m = &base->meta;
  zt_status_t st = NULL;
  pthread_mutex_lock(&e->args_mu);
  for (int32_t i = 0; i < m->num_args && !st; ++i) {
    zt_packed_arg_t v;
    const zt_arg_t* a = &args[i];
    size_t size = zt_arg_pack(a, &v);
    st = ZT_CL_STATUS(s, clSetKernelArg, e->kernel, (cl_uint)i, size, &v);
    if (st) st = zt_status_annotate(st, "argument %d (%s)", i, zt_scalar_kind_name(a->kind));
  }
  if (!st) {
    size_t local[3], global[3];
    for (int k = 0; k < 3; ++k) {
      local[k] = m->local_size[k] > 0 ? (size_t)m->local_size[k] : 1;
      global[k] = (size_t)grid[k] * local[k];
    }
    pthread_mutex_lock(&d->mu);
    st = ZT_CL_STATUS(s, clEnqueueNDRangeKernel, d->queue, e->kernel, 3, NULL, global, local,
                      0, NULL, NULL);
    if (!st) d->pending = true;
    pthread_mutex_unlock(&d->mu);
    if (st)
      st = zt_status_annotate(st, "grid %u,%u,%u x local size %zu,%zu,%zu", grid[0], grid[1],
                              grid[2], local[0], local[1], local[2]);
  }
  if (!st && e->faults) {
    pthread_mutex_lock(&d->mu);
    st = block2d_faults_locked(d, e);
    pthread_mutex_unlock(&d->mu);
  }
  pthread_mutex_unlock(&e->args_mu);
  return st;
}

static const zt_backend_vtable_t cl_vtable = {
    /* .destroy            = */ cl_destroy,
    /* .synchronize        = */ cl_synchronize,
    /* .buffer_alloc       = */ cl_buffer_alloc,
    /* .buffer_free        = */ cl_buffer_free,
    /* .buffer_write       = */ cl_buffer_write,
    /* .buffer_read        = */ cl_buffer_read,
    /* .executable_create  = */ cl_executable_create,
    /* .executable_destroy = */ cl_executable_destroy,
    /* .executable_stats   = */ cl_executable_stats,
    /* .launch             = */ cl_launch,
};

// --- discovery -----------------------------------------------------------------

static zt_status_t cl_enumerate(zt_device_info_t* out, int32_t capacity, int32_t* count) {
  const zt_cl_state_t* g = zt_cl_state();
  *count = g->num_devices;
  for (int32_t i = 0; i < *count && i < capacity; ++i) out[i] = g->devices[i].info;
  return NULL;
}

static zt_status_t cl_open(int32_t index, zt_device_t** out) {
  const zt_cl_state_t* g = zt_cl_state();
  if (index < 0 || index >= g->num_devices)
    return zt_make_status(ZT_STATUS_NOT_FOUND, "no opencl device %d (opencl:cpu: %s; opencl:gpu: %s)",
                          index, g->why_no_cpu[0] ? g->why_no_cpu : "listed",
                          g->why_no_gpu[0] ? g->why_no_gpu : "listed");
  pthread_mutex_lock(&open_mu);
  cl_device_t* live = opened[index];
  if (live) {
    int n = atomic_load(&live->base.ref_count);
    while (n > 0 && !atomic_compare_exchange_weak(&live->base.ref_count, &n, n + 1)) {
    }
    if (n > 0) {
      pthread_mutex_unlock(&open_mu);
      *out = &live->base;
      return NULL;
    }
  }
  pthread_mutex_unlock(&open_mu);
  const zt_cl_device_entry_t* entry = &g->devices[index];
  cl_device_t* d = calloc(1, sizeof *d);
  if (!d) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "device");
  zt_device_initialize(&d->base, &cl_vtable);
  d->base.info = entry->info;
  d->entry = entry;
  d->syms = &entry->lib->syms;
  pthread_mutex_init(&d->mu, NULL);
  const zt_cl_syms_t* s = d->syms;
  cl_int err = CL_SUCCESS;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)entry->platform,
                                   0};
  d->context = s->clCreateContext(props, 1, &entry->device, NULL, NULL, &err);
  zt_status_t st = zt_cl_make_status(err, "clCreateContext");
  if (!st) {
    d->queue = s->clCreateCommandQueueWithProperties(d->context, entry->device, NULL, &err);
    st = zt_cl_make_status(err, "clCreateCommandQueueWithProperties");
  }
  if (st) {
    cl_destroy(&d->base);
    return zt_status_annotate(st, "opening %s", entry->info.name);
  }
  pthread_mutex_lock(&open_mu);
  if (!opened[index]) opened[index] = d;
  pthread_mutex_unlock(&open_mu);
  *out = &d->base;
  return NULL;
}

const zt_backend_t zt_opencl_backend = {
    /* .api_version = */ ZT_BACKEND_API_VERSION,
    /* .name        = */ "opencl",
    /* .enumerate   = */ cl_enumerate,
    /* .open        = */ cl_open,
};
