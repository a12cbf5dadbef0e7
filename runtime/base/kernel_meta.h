// Kernel metadata carried in an artifact's "meta" section: what a backend
// needs to launch a kernel without looking at its code. Text, one
// `key=value` per line, so that it is readable in `zetile compile` output:
//   kernel=add_kernel
//   target=pvc
//   args=ptr:f32,ptr:f32,i32          (scalar kinds; pointers name the pointee)
//   local_size=16,1,1                 (Xe: work-items per workgroup)
//   subgroup_size=16
//   igc_options=-ze-opt-large-register-file
#ifndef ZETILE_BASE_KERNEL_META_H_
#define ZETILE_BASE_KERNEL_META_H_

#include <stdint.h>

#include "base/strbuf.h"
#include "zetile/builder.h"
#include "zetile/status.h"

#define ZT_MAX_KERNEL_ARGS 128

typedef struct zt_kernel_meta_s {
  char kernel[256];
  char target[32];
  int32_t num_args;
  zt_scalar_kind_t arg_kinds[ZT_MAX_KERNEL_ARGS];
  zt_scalar_kind_t arg_pointees[ZT_MAX_KERNEL_ARGS];
  int32_t local_size[3];
  int32_t subgroup_size;
  char igc_options[256];
} zt_kernel_meta_t;

void zt_kernel_meta_init(zt_kernel_meta_t* meta);
/// Appends the text form to sb.
void zt_kernel_meta_format(const zt_kernel_meta_t* meta, zt_strbuf_t* sb);
/// Parses the text form; unknown keys are ignored (forward compatible).
zt_status_t zt_kernel_meta_parse(const char* text, size_t size,
                                 zt_kernel_meta_t* out_meta);
/// "f32" -> ZT_F32 etc.; returns false for an unknown spelling.
bool zt_scalar_kind_parse(const char* s, size_t n, zt_scalar_kind_t* out);
const char* zt_scalar_kind_name(zt_scalar_kind_t k);

#endif  // ZETILE_BASE_KERNEL_META_H_
