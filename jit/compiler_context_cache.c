// What a compile leaves behind for the next compile in the same MLIR
// context: parsed pass managers and objects the lowerings keep (issue 22,
// the fixed cost per kernel).
//
// Why per context: contexts are the pool's unit (jit/compiler.c), one per
// compile in flight, and a context is used by one thread at a time, so what
// hangs on it needs no lock, and parallel compiles never share it. A pass
// manager belongs to its context anyway.
//
// How a stage finds its context's cache: the compile binds it while it holds
// the context, and a lookup by context walks the bound caches under a mutex
// (a few lookups per compile). Not a thread-local binding: one more
// _Thread_local in this dlopen'ed library took its TLS past glibc's static
// TLS surplus into dynamic TLS, where LeakSanitizer's scan of the forked
// Check tests crashed ("Tracer caught signal 11", a garbage DTLS range: the
// CI's ASan run of 567d9fa).
//
// Why pass managers: each compile parsed the same pipeline texts again and
// built their passes, and MLIR then initialized every pass on its first run
// (canonicalize's and the conversions' pattern sets, ~1 M instructions per
// compile, callgrind). MLIR's PassManager is made to run again: it
// initializes its passes again by itself when the context's loaded dialects
// changed (MLIRContext::getRegistryHash), and passes keep no state between
// runs on different operations (a nested pass manager runs one pass
// instance on many functions).
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "compiler_internal.h"
#include "lowering.h"

// Pipeline variants a context keeps (the Xe lowering has a few per target:
// linearize or not, the vector conversion or not, the emission's own); the
// least recently used goes.
#define KEPT_PIPELINES 12
#define KEPT_OBJECTS 4

typedef struct {
  char* text;  // NULL: free
  MlirPassManager pm;
  unsigned long used;  // tick of the last use
} kept_pm_t;

typedef struct {
  const char* key;  // NULL: free (compared by address: a lowering's static string)
  void* obj;
  void (*release)(void*);
} kept_obj_t;

struct zt_context_cache_s {
  MlirContext ctx;
  kept_pm_t pms[KEPT_PIPELINES];
  kept_obj_t objs[KEPT_OBJECTS];
  unsigned long tick;
  zt_context_cache_t* next_bound;  // the list of bound caches
  bool bound;
};

// The caches bound now (one per compile in flight).
static pthread_mutex_t g_bound_lock = PTHREAD_MUTEX_INITIALIZER;
static zt_context_cache_t* g_bound;

zt_context_cache_t* zt_context_cache_create(MlirContext ctx) {
  zt_context_cache_t* c = calloc(1, sizeof *c);
  if (c) c->ctx = ctx;
  return c;  // NULL (out of memory): compiles just keep nothing
}

void zt_context_cache_release(zt_context_cache_t* c) {
  if (!c) return;
  zt_context_cache_unbind(c);
  for (int i = 0; i < KEPT_PIPELINES; ++i) {
    if (!c->pms[i].text) continue;
    mlirPassManagerDestroy(c->pms[i].pm);
    free(c->pms[i].text);
  }
  for (int i = 0; i < KEPT_OBJECTS; ++i)
    if (c->objs[i].key && c->objs[i].release) c->objs[i].release(c->objs[i].obj);
  free(c);
}

void zt_context_cache_bind(zt_context_cache_t* c) {
  if (!c) return;
  pthread_mutex_lock(&g_bound_lock);
  if (!c->bound) {
    c->bound = true;
    c->next_bound = g_bound;
    g_bound = c;
  }
  pthread_mutex_unlock(&g_bound_lock);
}

void zt_context_cache_unbind(zt_context_cache_t* c) {
  if (!c) return;
  pthread_mutex_lock(&g_bound_lock);
  for (zt_context_cache_t** p = &g_bound; *p; p = &(*p)->next_bound) {
    if (*p != c) continue;
    *p = c->next_bound;
    break;
  }
  c->bound = false;
  c->next_bound = NULL;
  pthread_mutex_unlock(&g_bound_lock);
}

static zt_context_cache_t* bound_to(MlirContext ctx) {
  pthread_mutex_lock(&g_bound_lock);
  zt_context_cache_t* c = g_bound;
  while (c && c->ctx.ptr != ctx.ptr) c = c->next_bound;
  pthread_mutex_unlock(&g_bound_lock);
  return c;
}

MlirPassManager zt_context_cache_take_pm(MlirContext ctx, const char* pipeline) {
  zt_context_cache_t* c = bound_to(ctx);
  if (!c) return (MlirPassManager){NULL};
  for (int i = 0; i < KEPT_PIPELINES; ++i) {
    kept_pm_t* k = &c->pms[i];
    if (!k->text || strcmp(k->text, pipeline) != 0) continue;
    MlirPassManager pm = k->pm;
    free(k->text);
    *k = (kept_pm_t){0};
    return pm;
  }
  return (MlirPassManager){NULL};
}

bool zt_context_cache_keep_pm(MlirContext ctx, const char* pipeline, MlirPassManager pm) {
  zt_context_cache_t* c = bound_to(ctx);
  if (!c) return false;
  char* text = strdup(pipeline);
  if (!text) return false;
  kept_pm_t* slot = &c->pms[0];
  for (int i = 0; i < KEPT_PIPELINES; ++i) {
    kept_pm_t* k = &c->pms[i];
    if (!k->text) {
      slot = k;
      break;
    }
    if (k->used < slot->used) slot = k;
  }
  if (slot->text) {
    mlirPassManagerDestroy(slot->pm);
    free(slot->text);
  }
  *slot = (kept_pm_t){text, pm, ++c->tick};
  return true;
}

void* zt_context_kept(MlirContext ctx, const char* key) {
  zt_context_cache_t* c = bound_to(ctx);
  if (!c) return NULL;
  for (int i = 0; i < KEPT_OBJECTS; ++i)
    if (c->objs[i].key == key) return c->objs[i].obj;
  return NULL;
}

bool zt_context_keep(MlirContext ctx, const char* key, void* obj, void (*release)(void*)) {
  zt_context_cache_t* c = bound_to(ctx);
  if (!c) return false;
  for (int i = 0; i < KEPT_OBJECTS; ++i) {
    if (c->objs[i].key) continue;
    c->objs[i] = (kept_obj_t){key, obj, release};
    return true;
  }
  return false;
}
