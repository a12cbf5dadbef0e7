// Block loads sunk to their first use in the emitted text (issue 12).
//
// The emitter writes a tile load where the tile op stands: every block of a
// dot's A and B tiles is read before the first DPAS. With a large tile per
// subgroup (Intel's 256x256x32 matmul on 32 subgroups: 128 accumulator
// registers, A 32 and B 64 more per k step) they are all live at once, and
// Debian's IGC spills rather than reorder them. Moved down to just before
// the first op that reads them, each block is live from its read to its last
// DPAS only.
//
// A load moves only past ops that neither write memory nor open or close a
// region: other block loads and prefetches, DPAS, descriptor creation and
// arith/vector/index arithmetic. Anything else (a store, a barrier, a call,
// an scf op, a region's end) first places every load held back, in their
// original order. Reads keep their order relative to every write, so the
// values are the same. ZETILE_XE_SINK_LOADS=0 leaves the text as written.
#include <stdlib.h>
#include <string.h>

#include "xe/xe_internal.h"

// Whether a line is `%x = xegpu.load_nd ...` (one result, no region); the
// result name goes to out.
static bool load_line(const char* s, size_t n, char* out, size_t cap) {
  size_t i = 0;
  while (i < n && s[i] == ' ') ++i;
  if (i >= n || s[i] != '%') return false;
  size_t b = i;
  while (i < n && s[i] != ' ' && s[i] != ':' && s[i] != ',') ++i;
  if (i - b + 1 > cap || i + 3 > n || memcmp(s + i, " = ", 3) != 0) return false;
  static const char op[] = "xegpu.load_nd ";
  if (n - (i + 3) < sizeof op - 1 || memcmp(s + i + 3, op, sizeof op - 1) != 0) return false;
  memcpy(out, s + b, i - b);
  out[i - b] = '\0';
  return true;
}

// A region opens at the end of its line and closes at the start of one;
// braces elsewhere are attributes (`{layout_a = ...}` on a DPAS).
static bool opens_region(const char* s, size_t n) {
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\n')) --n;
  return n > 0 && s[n - 1] == '{';
}

static bool closes_region(const char* s, size_t n) {
  size_t b = 0;
  while (b < n && s[b] == ' ') ++b;
  return b < n && s[b] == '}';
}

// The first occurrence of pat inside the line s[0..n), or NULL. (strstr
// would run on to the next occurrence anywhere below: once per line, that
// made a scan of the body quadratic.)
static const char* find_in_line(const char* s, size_t n, const char* pat) {
  size_t l = strlen(pat);
  const char* end = s + n;
  for (const char* p = s; (size_t)(end - p) >= l; ++p) {
    p = memchr(p, pat[0], (size_t)(end - p) - l + 1);
    if (!p) return NULL;
    if (memcmp(p, pat, l) == 0) return p;
  }
  return NULL;
}

// Whether a held-back load may move past this line.
static bool movable_past(const char* s, size_t n) {
  if (opens_region(s, n) || closes_region(s, n)) return false;
  static const char* const ok[] = {"= xegpu.load_nd ", "xegpu.prefetch_nd ", "= xegpu.dpas ",
                                   "= xegpu.create_nd_tdesc ", "= arith.", "= vector.",
                                   "= index.", "= \"arith.", "= \"vector."};
  // Every pattern starts with '=' or 'x': only those positions are compared
  // (a memcmp of each pattern at every position was most of this pass).
  for (size_t j = 0; j < n; ++j) {
    if (s[j] != '=' && s[j] != 'x') continue;
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; ++i) {
      size_t l = strlen(ok[i]);
      if (ok[i][0] == s[j] && j + l <= n && memcmp(s + j, ok[i], l) == 0) return true;
    }
  }
  return false;
}

// Whether the line reads SSA name `name` (followed by a non-name character).
static bool uses(const char* s, size_t n, const char* name) {
  size_t l = strlen(name);
  // Past the result: `%x = ...` reads nothing before " = ".
  const char* eq = NULL;
  for (size_t j = 0; j + 3 <= n; ++j)
    if (memcmp(s + j, " = ", 3) == 0) {
      eq = s + j + 3;
      break;
    }
  const char* p = eq ? eq : s;
  const char* end = s + n;
  for (; p + l <= end; ++p) {
    if (*p != '%' || memcmp(p, name, l) != 0) continue;
    char c = p + l < end ? p[l] : ' ';
    bool more = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                c == '_' || c == '.' || c == '$';
    if (!more) return true;
  }
  return false;
}

typedef struct held_s {
  const char* s;
  size_t n;
  char name[XE_NAME_MAX];
} held_t;

static void place(zt_strbuf_t* out, held_t* h, int* nh, const char* s, size_t n, bool all) {
  int k = 0;
  for (int i = 0; i < *nh; ++i) {
    if (all || uses(s, n, h[i].name)) zt_strbuf_append(out, h[i].s, h[i].n);
    else h[k++] = h[i];
  }
  *nh = k;
}

// The most dots (DPAS ops of distinct source locations) in one region body.
// Returns max_dots + 1 when it finds more than fit its table.
enum { SINK_MAX_DOTS = 2, DOT_TABLE = 64, REGION_DEPTH = 32 };
static int dots_per_region(const char* s) {
  struct {
    int region;
    char loc[24];
  } seen[DOT_TABLE];
  int nseen = 0, stack[REGION_DEPTH] = {0}, depth = 0, next = 1, most = 0;
  while (*s) {
    const char* nl = strchr(s, '\n');
    size_t n = nl ? (size_t)(nl - s + 1) : strlen(s);
    if (closes_region(s, n) && depth > 0) --depth;
    const char* d = find_in_line(s, n, "= xegpu.dpas ");
    const char* l = d ? find_in_line(d, (size_t)(s + n - d), "loc(#") : NULL;
    if (l) {
      size_t ll = strcspn(l, ")\n");
      if (ll >= sizeof seen[0].loc) ll = sizeof seen[0].loc - 1;
      int r = stack[depth], count = 0, found = 0;
      for (int i = 0; i < nseen; ++i) {
        if (seen[i].region != r) continue;
        ++count;
        if (strncmp(seen[i].loc, l, ll) == 0 && seen[i].loc[ll] == '\0') found = 1;
      }
      if (!found) {
        if (nseen == DOT_TABLE) return SINK_MAX_DOTS + 1;
        seen[nseen].region = r;
        memcpy(seen[nseen].loc, l, ll);
        seen[nseen].loc[ll] = '\0';
        ++nseen;
        ++count;
      }
      if (count > most) most = count;
    }
    if (opens_region(s, n)) {
      if (depth + 1 == REGION_DEPTH) return SINK_MAX_DOTS + 1;
      stack[++depth] = next++;
    }
    s += n;
  }
  return most;
}

void xe_sink_loads(zt_strbuf_t* body) {
  const char* env = getenv("ZETILE_XE_SINK_LOADS");
  if ((env && strcmp(env, "0") == 0) || !body->data) return;
  // No block load, nothing to move (softmax, layer norm, elementwise code):
  // the scan below was 28% of the 200-op chain's compile (callgrind, issue 22).
  if (!strstr(body->data, " = xegpu.load_nd ")) return;
  // A loop body with more than two dots (attention's backward: four in the
  // dk/dv loop, three in the dq loop) is left as written: tutorial 06's
  // backward w4 d64 spilled 1194 registers on pvc with its loads moved, 641
  // without (issue 12), and no rule tried for which loads to move helped
  // it without costing the forward (docs/ARCHITECTURE.md). The forward's
  // two dots and a matmul's one keep the sink.
  if (dots_per_region(body->data) > SINK_MAX_DOTS) return;
  size_t cap = 64;
  held_t* h = malloc(cap * sizeof *h);
  if (!h) return;
  int nh = 0;
  zt_strbuf_t out;
  zt_strbuf_init(&out);
  const char* s = body->data;
  while (*s) {
    const char* nl = strchr(s, '\n');
    size_t n = nl ? (size_t)(nl - s + 1) : strlen(s);
    char name[XE_NAME_MAX];
    if (load_line(s, n, name, sizeof name)) {
      // A load reading a held-back load's result (none today) places it first.
      place(&out, h, &nh, s, n, false);
      if ((size_t)nh == cap) {
        held_t* g = realloc(h, 2 * cap * sizeof *h);
        if (!g) {
          place(&out, h, &nh, s, n, true);
        } else {
          h = g;
          cap *= 2;
        }
      }
      if ((size_t)nh < cap) {
        h[nh].s = s;
        h[nh].n = n;
        memcpy(h[nh].name, name, sizeof name);
        ++nh;
        s += n;
        continue;
      }
    }
    place(&out, h, &nh, s, n, !movable_past(s, n));
    zt_strbuf_append(&out, s, n);
    s += n;
  }
  place(&out, h, &nh, "", 0, true);
  free(h);
  if (out.failed) {
    zt_strbuf_deinit(&out);
    return;  // the text as written
  }
  zt_strbuf_deinit(body);
  *body = out;
}
