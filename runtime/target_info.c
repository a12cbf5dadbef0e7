// zt_target_info: one row of the Intel GPU target table for front ends
// (the templates size their tiles by it, zetile info shows it), so that
// nothing outside the table has to know which target has XMX or how many
// registers.
#include <stdio.h>
#include <string.h>

#include "xe/xe_target.h"
#include "zetile/runtime.h"

zt_status_t zt_target_info(const char* target, zt_target_info_t* out) {
  if (!out) return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_target_info: out is NULL");
  memset(out, 0, sizeof *out);
  const xe_target_t* t = xe_target_find(target);
  if (!t)
    return zt_make_status(ZT_STATUS_NOT_FOUND, "zt_target_info: no Intel GPU target '%s'",
                          target ? target : "(null)");
  snprintf(out->name, sizeof out->name, "%s", t->name);
  snprintf(out->arch, sizeof out->arch, "%s", t->arch ? t->arch : "");
  out->subgroup_size = t->subgroup_size;
  out->xmx = xe_target_has_xmx(t);
  out->dp4a = t->dp4a;
  out->block_io_2d = t->block_io_2d;
  out->grf = t->grf_default;
  out->grf_large = t->grf_large;
  out->grf_bytes = t->grf_bytes;
  out->slm_per_workgroup = t->slm_per_workgroup;
  out->simd8_lowering = xe_target_lowering_now(t) == XE_LOWERING_SIMD8;
  return NULL;
}
