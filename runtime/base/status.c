// Status objects: a code plus an owned message. NULL is OK.
#include "zetile/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct zt_status_s {
  zt_status_code_t code;
  char message[];  // flexible: allocated with the object
};

// Returned when we cannot allocate a status: never freed.
static struct {
  zt_status_code_t code;
  char message[32];
} oom_status = {ZT_STATUS_OUT_OF_MEMORY, "out of memory"};

static int is_static(zt_status_t s) { return (void*)s == (void*)&oom_status; }

zt_status_t zt_make_status_v(zt_status_code_t code, const char* fmt, va_list ap) {
  if (code == ZT_STATUS_OK) return NULL;
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) n = 0;
  struct zt_status_s* s = malloc(sizeof(*s) + (size_t)n + 1);
  if (!s) return (zt_status_t)&oom_status;
  s->code = code;
  vsnprintf(s->message, (size_t)n + 1, fmt, ap);
  return s;
}

zt_status_t zt_make_status(zt_status_code_t code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  zt_status_t s = zt_make_status_v(code, fmt, ap);
  va_end(ap);
  return s;
}

zt_status_t zt_status_annotate(zt_status_t status, const char* fmt, ...) {
  if (!status) return NULL;
  va_list ap;
  va_start(ap, fmt);
  char prefix[1024];
  vsnprintf(prefix, sizeof prefix, fmt, ap);
  va_end(ap);
  zt_status_t s = zt_make_status(status->code, "%s: %s", prefix, status->message);
  zt_status_free(status);
  return s;
}

zt_status_code_t zt_status_code(zt_status_t status) {
  return status ? status->code : ZT_STATUS_OK;
}

const char* zt_status_message(zt_status_t status) {
  return status ? status->message : "";
}

void zt_status_free(zt_status_t status) {
  if (status && !is_static(status)) free(status);
}

const char* zt_status_code_name(zt_status_code_t code) {
  switch (code) {
#define ZT_X_(name, value, desc) \
  case ZT_STATUS_##name:         \
    return #name;
    ZT_STATUS_CODES(ZT_X_)
#undef ZT_X_
    default:
      return "UNKNOWN";
  }
}
