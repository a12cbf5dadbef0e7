// Where a compile's time went: the artifact's "timings" section, printed on
// stderr under ZETILE_DEBUG=time (jit/compile_cached.c). Internal to
// libzetile, but for zt_compile_note_front_end, which the Python extension
// calls (exported, not public).
#ifndef ZETILE_JIT_COMPILE_REPORT_H_
#define ZETILE_JIT_COMPILE_REPORT_H_

#include "zetile/compiler.h"

/// The next compile on this thread (zt_compile or zt_compile_cached) counts
/// `ms` as its front end (source -> tile IR): "front end" in its timings and
/// its ZETILE_DEBUG=time report.
ZT_API void zt_compile_note_front_end(double ms);

/// Adds the front end noted on this thread (if any) to the artifact's
/// timings and, under ZETILE_DEBUG=time, prints the timings as one block:
/// "zetile time: KERNEL for TARGET, HOW: N ms", one stage per line.
void zt_compile_report(zt_artifact_t* a, const zt_compile_options_t* options,
                       const char* how, double wall_ms);

/// zt_compile without the report (zt_compile_cached reports after its
/// cache write). jit/compiler_loader.c.
zt_status_t zt_compile_unreported(const char* tile_ir, size_t size,
                                  const zt_compile_options_t* options,
                                  zt_artifact_t** out_artifact);

#endif  // ZETILE_JIT_COMPILE_REPORT_H_
