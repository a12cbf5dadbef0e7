// Runtime helpers of JIT'ed CPU kernels (see cpu_helpers.h).
#include "cpu_helpers.h"

#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "zetile/builder.h"

static int digits(int32_t v) {
  int n = 1;
  while (v >= 10) {
    v /= 10;
    ++n;
  }
  return n;
}

// Appends printf output to buf[*len..cap), keeping *len <= cap - 1.
static void add(char* buf, size_t cap, size_t* len, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add(char* buf, size_t cap, size_t* len, const char* fmt, ...) {
  if (*len + 1 >= cap) return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
  va_end(ap);
  if (n > 0) *len = *len + (size_t)n < cap - 1 ? *len + (size_t)n : cap - 1;
}

static void add_index(char* buf, size_t cap, size_t* len, int32_t rank,
                      const int32_t* idx, const int32_t* dims) {
  if (rank <= 0) return;
  add(buf, cap, len, " idx (");
  for (int32_t d = 0; d < rank && d < ZT_MAX_RANK; ++d)
    add(buf, cap, len, "%s%*d", d ? ", " : "", dims ? digits(dims[d] - 1) : 0, idx[d]);
  add(buf, cap, len, ")");
}

// tl.device_print output is the user's own output, not a library message:
// like Triton (printf on the device, shown on stdout) it goes to stdout, one
// whole line per fwrite (stdio locks the stream per call, so lines from the
// launch's threads never interleave), flushed at once so that it is not
// lost or reordered against the user's Python prints.
void zt_cpu_print(const char* prefix, int32_t pidx, int32_t pidy, int32_t pidz,
                  int32_t rank, int32_t i0, int32_t i1, int32_t i2, int32_t i3,
                  int32_t d0, int32_t d1, int32_t d2, int32_t d3, int32_t operand,
                  int32_t kind, int32_t hex, int64_t ival, double fval) {
  char buf[2048];
  size_t len = 0;
  int32_t idx[4] = {i0, i1, i2, i3}, dims[4] = {d0, d1, d2, d3};
  add(buf, sizeof buf, &len, "pid (%d, %d, %d)", pidx, pidy, pidz);
  add_index(buf, sizeof buf, &len, rank, idx, dims);
  add(buf, sizeof buf, &len, "%s", prefix && *prefix ? prefix : kind < 0 ? "" : " ");
  if (operand >= 0) add(buf, sizeof buf, &len, "(operand %d) ", operand);
  zt_scalar_kind_t k = (zt_scalar_kind_t)kind;
  if (kind < 0) {
    // A print without values: the prefix alone.
  } else if (zt_scalar_kind_is_float(k)) {
    add(buf, sizeof buf, &len, hex ? "%a" : "%f", fval);
  } else if (k == ZT_PTR) {
    add(buf, sizeof buf, &len, "0x%" PRIx64, (uint64_t)ival);
  } else if (hex) {
    int bits = zt_scalar_kind_bits(k);
    uint64_t mask = bits >= 64 ? ~0ull : (1ull << bits) - 1;
    add(buf, sizeof buf, &len, "0x%0*" PRIx64, (bits + 3) / 4, (uint64_t)ival & mask);
  } else {
    add(buf, sizeof buf, &len, "%" PRId64, ival);
  }
  buf[len++] = '\n';
  fwrite(buf, 1, len, stdout);
  fflush(stdout);
}

void zt_cpu_check_access(zt_cpu_program_ctx_t* ctx, uint64_t addr, int32_t bytes,
                         int32_t write, const char* where, int32_t pidx, int32_t pidy,
                         int32_t pidz) {
  if (!ctx || !ctx->bounds) return;
  uint64_t end = addr + (uint64_t)bytes;
  int32_t nearest = -1;
  uint64_t best = UINT64_MAX;
  for (int32_t i = 0; i < ctx->num_bounds; ++i) {
    uint64_t b = ctx->bounds[i][0], n = ctx->bounds[i][1];
    if (!n) continue;
    if (addr >= b && end >= addr && end <= b + n) return;
    uint64_t d = addr < b ? b - addr : addr - (b + n);
    if (d < best) {
      best = d;
      nearest = i;
    }
  }
  zt_cpu_launch_error_t* e = ctx->error;
  int expected = 0;
  if (e && atomic_compare_exchange_strong(&e->failed, &expected, 1)) {
    e->out_of_bounds = 1;
    size_t len = 0, cap = sizeof e->message;
    static const char* const what[] = {"load", "store", "atomic"};
    add(e->message, cap, &len, "%s: program (%d, %d, %d): out-of-bounds %s of %d bytes at 0x%" PRIx64,
        where && *where ? where : "<unknown location>", pidx, pidy, pidz,
        what[write >= 0 && write <= 2 ? write : 0], bytes, addr);
    if (nearest >= 0) {
      int64_t off = (int64_t)(addr - ctx->bounds[nearest][0]);
      add(e->message, cap, &len,
          ": byte offset %" PRId64 " from the start of argument #%d, a buffer of %" PRIu64
          " bytes",
          off, nearest, ctx->bounds[nearest][1]);
    } else {
      add(e->message, cap, &len, ": the kernel has no buffer arguments");
    }
  }
  longjmp(ctx->exit, 1);
}

void zt_cpu_assert_fail(zt_cpu_program_ctx_t* ctx, const char* message,
                        const char* where, int32_t pidx, int32_t pidy, int32_t pidz,
                        int32_t rank, int32_t i0, int32_t i1, int32_t i2, int32_t i3) {
  // Called directly (no launch): nothing to report to, and no way to stop
  // the program; the kernel goes on.
  if (!ctx) return;
  zt_cpu_launch_error_t* e = ctx->error;
  int expected = 0;
  if (e && atomic_compare_exchange_strong(&e->failed, &expected, 1)) {
    size_t len = 0, cap = sizeof e->message;
    int32_t idx[4] = {i0, i1, i2, i3};
    add(e->message, cap, &len, "%s: program (%d, %d, %d)",
        where && *where ? where : "<unknown location>", pidx, pidy, pidz);
    add_index(e->message, cap, &len, rank, idx, NULL);
    add(e->message, cap, &len, ": Assertion `%s` failed", message ? message : "");
  }
  longjmp(ctx->exit, 1);
}
