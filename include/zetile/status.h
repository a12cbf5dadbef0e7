// zetile: status objects returned by every fallible call.
#ifndef ZETILE_STATUS_H_
#define ZETILE_STATUS_H_

#include <stdarg.h>
#include <stddef.h>

#include "zetile/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Status codes, generated from one X-macro so that names, numbers and the
/// Python exception classes never drift apart: X(NAME, value, "description").
#define ZT_STATUS_CODES(X)                                                    \
  X(OK, 0, "ok")                                                              \
  X(INVALID_ARGUMENT, 1, "invalid argument")                                  \
  X(NOT_FOUND, 2, "not found")                                                \
  X(UNSUPPORTED, 3, "unsupported")                                            \
  X(COMPILE_ERROR, 4, "compile error")                                        \
  X(DRIVER_ERROR, 5, "driver error")                                          \
  X(OUT_OF_MEMORY, 6, "out of memory")                                        \
  X(IO_ERROR, 7, "i/o error")                                                 \
  X(UNAVAILABLE, 8, "unavailable")                                            \
  X(INTERNAL, 9, "internal error")                                            \
  X(DEVICE_ASSERT, 10, "device assertion failed")                             \
  X(DEVICE_FAULT, 11, "kernel memory fault")                                  \
  X(LAUNCH_INTERRUPTED, 12, "launch interrupted")                            \
  X(DEVICE_LOST, 13, "device lost")

typedef enum zt_status_code_e {
#define ZT_X_(name, value, desc) ZT_STATUS_##name = value,
  ZT_STATUS_CODES(ZT_X_)
#undef ZT_X_
  ZT_STATUS_CODE_COUNT
} zt_status_code_t;

/// A status: NULL means OK; otherwise a heap object holding a code and a
/// message, owned by whoever received it and freed with zt_status_free.
typedef struct zt_status_s* zt_status_t;

#define zt_ok_status() ((zt_status_t)NULL)

/// Creates a status with a printf-style message. Returns NULL for ZT_STATUS_OK.
/// Never fails: if memory runs out a static out-of-memory status is returned.
ZT_API zt_status_t zt_make_status(zt_status_code_t code, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));
ZT_API zt_status_t zt_make_status_v(zt_status_code_t code, const char* fmt,
                                    va_list ap);
/// Prefixes more context to an existing status (ownership passes through).
ZT_API zt_status_t zt_status_annotate(zt_status_t status, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

/// Code of a status; ZT_STATUS_OK for NULL.
ZT_API zt_status_code_t zt_status_code(zt_status_t status);
/// Message of a status, borrowed until zt_status_free; "" for NULL.
ZT_API const char* zt_status_message(zt_status_t status);
/// Frees a status; NULL is a no-op.
ZT_API void zt_status_free(zt_status_t status);
/// Upper-case name of a code ("INVALID_ARGUMENT"); static storage.
ZT_API const char* zt_status_code_name(zt_status_code_t code);

#define ZT_RETURN_IF_ERROR(expr)          \
  do {                                    \
    zt_status_t zt_status_tmp_ = (expr);  \
    if (zt_status_tmp_) return zt_status_tmp_; \
  } while (0)

#define zt_status_is_ok(s) ((s) == NULL)

#ifdef __cplusplus
}
#endif
#endif  // ZETILE_STATUS_H_
