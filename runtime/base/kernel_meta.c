#include "base/kernel_meta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void zt_kernel_meta_init(zt_kernel_meta_t* m) {
  memset(m, 0, sizeof *m);
  m->local_size[0] = m->local_size[1] = m->local_size[2] = 1;
  m->subgroup_size = 1;
}

static const char* const kind_names[] = {
#define ZT_X_(name, spelling, bits) spelling,
    ZT_SCALAR_KINDS(ZT_X_)
#undef ZT_X_
};

const char* zt_scalar_kind_name(zt_scalar_kind_t k) {
  return (k >= 0 && k < ZT_SCALAR_KIND_COUNT) ? kind_names[k] : "?";
}

bool zt_scalar_kind_parse(const char* s, size_t n, zt_scalar_kind_t* out) {
  for (int k = 0; k < ZT_SCALAR_KIND_COUNT; ++k) {
    if (strlen(kind_names[k]) == n && strncmp(kind_names[k], s, n) == 0) {
      *out = (zt_scalar_kind_t)k;
      return true;
    }
  }
  return false;
}

void zt_kernel_meta_format(const zt_kernel_meta_t* m, zt_strbuf_t* sb) {
  zt_strbuf_printf(sb, "kernel=%s\ntarget=%s\nargs=", m->kernel, m->target);
  for (int32_t i = 0; i < m->num_args; ++i) {
    zt_strbuf_printf(sb, "%s%s", i ? "," : "", zt_scalar_kind_name(m->arg_kinds[i]));
    if (m->arg_kinds[i] == ZT_PTR)
      zt_strbuf_printf(sb, ":%s", zt_scalar_kind_name(m->arg_pointees[i]));
  }
  zt_strbuf_printf(sb, "\nlocal_size=%d,%d,%d\nsubgroup_size=%d\n",
                   m->local_size[0], m->local_size[1], m->local_size[2],
                   m->subgroup_size);
  if (m->igc_options[0]) zt_strbuf_printf(sb, "igc_options=%s\n", m->igc_options);
}

zt_status_t zt_kernel_meta_parse(const char* text, size_t size,
                                 zt_kernel_meta_t* m) {
  zt_kernel_meta_init(m);
  const char* p = text;
  const char* end = text + size;
  while (p < end) {
    const char* nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) nl = end;
    const char* eq = memchr(p, '=', (size_t)(nl - p));
    if (eq) {
      size_t kl = (size_t)(eq - p);
      const char* v = eq + 1;
      size_t vl = (size_t)(nl - v);
      char val[1024];
      if (vl >= sizeof val)
        return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "meta line too long");
      memcpy(val, v, vl);
      val[vl] = 0;
#define KEY(s) (kl == strlen(s) && strncmp(p, s, kl) == 0)
      if (KEY("kernel")) {
        snprintf(m->kernel, sizeof m->kernel, "%s", val);
      } else if (KEY("target")) {
        snprintf(m->target, sizeof m->target, "%s", val);
      } else if (KEY("args")) {
        m->num_args = 0;
        char* save = NULL;
        for (char* tok = strtok_r(val, ",", &save); tok;
             tok = strtok_r(NULL, ",", &save)) {
          if (m->num_args >= ZT_MAX_KERNEL_ARGS)
            return zt_make_status(ZT_STATUS_UNSUPPORTED, "too many kernel arguments");
          char* colon = strchr(tok, ':');
          size_t tl = colon ? (size_t)(colon - tok) : strlen(tok);
          zt_scalar_kind_t k, pk = ZT_I8;
          if (!zt_scalar_kind_parse(tok, tl, &k) ||
              (colon && !zt_scalar_kind_parse(colon + 1, strlen(colon + 1), &pk)))
            return zt_make_status(ZT_STATUS_INVALID_ARGUMENT,
                                  "meta: unknown argument kind '%s'", tok);
          m->arg_kinds[m->num_args] = k;
          m->arg_pointees[m->num_args] = pk;
          m->num_args++;
        }
      } else if (KEY("local_size")) {
        if (sscanf(val, "%d,%d,%d", &m->local_size[0], &m->local_size[1],
                   &m->local_size[2]) != 3)
          return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "meta: bad local_size");
      } else if (KEY("subgroup_size")) {
        m->subgroup_size = atoi(val);
      } else if (KEY("igc_options")) {
        snprintf(m->igc_options, sizeof m->igc_options, "%s", val);
      }
#undef KEY
    }
    p = nl + 1;
  }
  if (!m->kernel[0])
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "meta: no kernel name");
  return NULL;
}
