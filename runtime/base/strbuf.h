// A growable string buffer used wherever we write text (tile IR, lowered MLIR,
// manifests). Allocation failure is sticky: `failed` is set and further
// appends are dropped, so callers check once at the end.
#ifndef ZETILE_BASE_STRBUF_H_
#define ZETILE_BASE_STRBUF_H_

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct zt_strbuf_s {
  char* data;
  size_t size;
  size_t capacity;
  bool failed;
} zt_strbuf_t;

void zt_strbuf_init(zt_strbuf_t* sb);
void zt_strbuf_deinit(zt_strbuf_t* sb);
void zt_strbuf_clear(zt_strbuf_t* sb);
void zt_strbuf_append(zt_strbuf_t* sb, const char* s, size_t n);
void zt_strbuf_puts(zt_strbuf_t* sb, const char* s);
void zt_strbuf_printf(zt_strbuf_t* sb, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
void zt_strbuf_vprintf(zt_strbuf_t* sb, const char* fmt, va_list ap);
/// Takes the NUL-terminated contents; the buffer is left empty.
char* zt_strbuf_take(zt_strbuf_t* sb);

#endif  // ZETILE_BASE_STRBUF_H_
