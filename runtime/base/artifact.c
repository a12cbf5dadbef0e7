// Artifacts: named byte sections, and their self-checking serialized form
// used by the cache. Shared by libzetile and libzetile_compiler.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "zetile/compiler.h"

typedef struct section_s {
  char* name;
  uint8_t* data;  // always one extra NUL byte after size
  size_t size;
} section_t;

struct zt_artifact_s {
  section_t* sections;
  int32_t count;
};

zt_status_t zt_artifact_create(zt_artifact_t** out) {
  if (!out) return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_artifact_create: NULL out_artifact");
  *out = calloc(1, sizeof(zt_artifact_t));
  return *out ? NULL : zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "artifact");
}

void zt_artifact_release(zt_artifact_t* a) {
  if (!a) return;
  for (int32_t i = 0; i < a->count; ++i) {
    free(a->sections[i].name);
    free(a->sections[i].data);
  }
  free(a->sections);
  free(a);
}

zt_status_t zt_artifact_set(zt_artifact_t* a, const char* name,
                            const void* data, size_t size) {
  if (!a || !name || (size && !data))
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_artifact_set: NULL %s",
                          !a ? "artifact" : !name ? "section name" : "data");
  // size + 1 below must not wrap (a wrapped size would copy past a 0-byte block).
  if (size >= SIZE_MAX / 2)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_artifact_set: section '%s' of %zu bytes",
                          name, size);
  uint8_t* copy = malloc(size + 1);
  if (!copy) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "artifact section");
  if (size) memcpy(copy, data, size);
  copy[size] = 0;
  for (int32_t i = 0; i < a->count; ++i) {
    if (strcmp(a->sections[i].name, name) == 0) {
      free(a->sections[i].data);
      a->sections[i].data = copy;
      a->sections[i].size = size;
      return NULL;
    }
  }
  section_t* s = realloc(a->sections, (size_t)(a->count + 1) * sizeof *s);
  char* nm = strdup(name);
  if (!s || !nm) {
    free(copy);
    free(nm);
    if (s) a->sections = s;
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "artifact section");
  }
  a->sections = s;
  s[a->count].name = nm;
  s[a->count].data = copy;
  s[a->count].size = size;
  a->count++;
  return NULL;
}

zt_status_t zt_artifact_get(const zt_artifact_t* a, const char* name,
                            const void** out_data, size_t* out_size) {
  if (!a || !name || !out_data)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_artifact_get: NULL %s",
                          !a ? "artifact" : !name ? "section name" : "out_data");
  for (int32_t i = 0; a && i < a->count; ++i) {
    if (strcmp(a->sections[i].name, name) == 0) {
      *out_data = a->sections[i].data;
      if (out_size) *out_size = a->sections[i].size;
      return NULL;
    }
  }
  return zt_make_status(ZT_STATUS_NOT_FOUND, "artifact has no '%s' section",
                        name);
}

int32_t zt_artifact_section_count(const zt_artifact_t* a) {
  return a ? a->count : 0;
}

const char* zt_artifact_section_name(const zt_artifact_t* a, int32_t i) {
  return (a && i >= 0 && i < a->count) ? a->sections[i].name : NULL;
}

// Blob: "ZTA1" | u32 count | { u32 name_len | name | u64 size | data }... |
// u64 XXH3-64 of everything before it. Little-endian hosts only (x86/arm64).
#define MAGIC "ZTA1"

static void put(uint8_t** p, const void* src, size_t n) {
  memcpy(*p, src, n);
  *p += n;
}

zt_status_t zt_artifact_serialize(const zt_artifact_t* a, void** out_data,
                                  size_t* out_size) {
  if (!a || !out_data || !out_size)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_artifact_serialize: NULL argument");
  size_t total = 4 + 4 + 8;
  for (int32_t i = 0; i < a->count; ++i)
    total += 4 + strlen(a->sections[i].name) + 8 + a->sections[i].size;
  uint8_t* buf = malloc(total);
  if (!buf) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "artifact blob");
  uint8_t* p = buf;
  put(&p, MAGIC, 4);
  uint32_t count = (uint32_t)a->count;
  put(&p, &count, 4);
  for (int32_t i = 0; i < a->count; ++i) {
    uint32_t nl = (uint32_t)strlen(a->sections[i].name);
    uint64_t sz = a->sections[i].size;
    put(&p, &nl, 4);
    put(&p, a->sections[i].name, nl);
    put(&p, &sz, 8);
    put(&p, a->sections[i].data, sz);
  }
  uint64_t h = XXH3_64bits(buf, (size_t)(p - buf));
  put(&p, &h, 8);
  *out_data = buf;
  *out_size = total;
  return NULL;
}

zt_status_t zt_artifact_deserialize(const void* data, size_t size,
                                    zt_artifact_t** out) {
  if (!out) return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_artifact_deserialize: NULL out");
  *out = NULL;
  if (!data && size)
    return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_artifact_deserialize: NULL data");
  const uint8_t* b = data;
  if (size < 16 || memcmp(b, MAGIC, 4) != 0)
    return zt_make_status(ZT_STATUS_IO_ERROR, "not a zetile artifact");
  uint64_t h;
  memcpy(&h, b + size - 8, 8);
  if (XXH3_64bits(b, size - 8) != h)
    return zt_make_status(ZT_STATUS_IO_ERROR, "artifact checksum mismatch");
  const uint8_t* p = b + 4;
  const uint8_t* end = b + size - 8;
  uint32_t count;
  memcpy(&count, p, 4);
  p += 4;
  zt_artifact_t* a;
  ZT_RETURN_IF_ERROR(zt_artifact_create(&a));
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t nl;
    uint64_t sz;
    if (end - p < 4) goto corrupt;
    memcpy(&nl, p, 4);
    p += 4;
    if ((uint64_t)(end - p) < (uint64_t)nl + 8 || nl > 255) goto corrupt;
    char name[256];
    memcpy(name, p, nl);
    name[nl] = 0;
    p += nl;
    memcpy(&sz, p, 8);
    p += 8;
    if ((uint64_t)(end - p) < sz) goto corrupt;
    zt_status_t s = zt_artifact_set(a, name, p, (size_t)sz);
    if (s) {
      zt_artifact_release(a);
      return s;
    }
    p += sz;
  }
  if (p != end) goto corrupt;
  *out = a;
  return NULL;
corrupt:
  zt_artifact_release(a);
  return zt_make_status(ZT_STATUS_IO_ERROR, "artifact blob is malformed");
}
