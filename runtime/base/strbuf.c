#include "base/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void zt_strbuf_init(zt_strbuf_t* sb) { memset(sb, 0, sizeof(*sb)); }

void zt_strbuf_deinit(zt_strbuf_t* sb) {
  free(sb->data);
  memset(sb, 0, sizeof(*sb));
}

void zt_strbuf_clear(zt_strbuf_t* sb) {
  sb->size = 0;
  if (sb->data) sb->data[0] = 0;
}

static bool reserve(zt_strbuf_t* sb, size_t extra) {
  if (sb->failed) return false;
  size_t need = sb->size + extra + 1;
  if (need <= sb->capacity) return true;
  size_t cap = sb->capacity ? sb->capacity : 256;
  while (cap < need) cap *= 2;
  char* p = realloc(sb->data, cap);
  if (!p) {
    sb->failed = true;
    return false;
  }
  sb->data = p;
  sb->capacity = cap;
  return true;
}

void zt_strbuf_append(zt_strbuf_t* sb, const char* s, size_t n) {
  if (!reserve(sb, n)) return;
  memcpy(sb->data + sb->size, s, n);
  sb->size += n;
  sb->data[sb->size] = 0;
}

void zt_strbuf_puts(zt_strbuf_t* sb, const char* s) {
  zt_strbuf_append(sb, s, strlen(s));
}

void zt_strbuf_vprintf(zt_strbuf_t* sb, const char* fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0 || !reserve(sb, (size_t)n)) return;
  vsnprintf(sb->data + sb->size, (size_t)n + 1, fmt, ap);
  sb->size += (size_t)n;
}

void zt_strbuf_printf(zt_strbuf_t* sb, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  zt_strbuf_vprintf(sb, fmt, ap);
  va_end(ap);
}

char* zt_strbuf_take(zt_strbuf_t* sb) {
  if (!sb->data) {
    char* e = malloc(1);
    if (e) e[0] = 0;
    return e;
  }
  char* p = sb->data;
  memset(sb, 0, sizeof(*sb));
  return p;
}
