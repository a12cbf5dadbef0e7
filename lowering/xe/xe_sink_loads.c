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
// original order, with two exceptions: the register cast that follows a
// transposed read moves with it, and a load that only a following loop's
// body reads moves into that body when the body writes no memory (see
// enter_region). Reads keep their order relative to every write, so the
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

// A held load, and the cast that reinterprets its registers (a transposed
// read's i32 lanes as the B operand's 16-bit pairs) when one follows it:
// the two move as one, so the load is not placed at the cast.
typedef struct held_s {
  const char* s;
  size_t n;
  char name[XE_NAME_MAX];
  const char* cast;
  size_t ncast;
  char cast_name[XE_NAME_MAX];
} held_t;

static bool held_used(const held_t* h, const char* s, size_t n) {
  return uses(s, n, h->name) || (h->cast && uses(s, n, h->cast_name));
}

static void put(zt_strbuf_t* out, const held_t* h) {
  zt_strbuf_append(out, h->s, h->n);
  if (h->cast) zt_strbuf_append(out, h->cast, h->ncast);
}

static void place(zt_strbuf_t* out, held_t* h, int* nh, const char* s, size_t n, bool all) {
  int k = 0;
  for (int i = 0; i < *nh; ++i) {
    if (all || held_used(&h[i], s, n)) put(out, &h[i]);
    else h[k++] = h[i];
  }
  *nh = k;
}

// `%y = builtin.unrealized_conversion_cast %x : ...` of a held load's %x
// with no other operand: the index of that load, or -1; %y goes to out.
static int cast_of_held(const char* s, size_t n, const held_t* h, int nh, char* out,
                        size_t cap) {
  size_t i = 0;
  while (i < n && s[i] == ' ') ++i;
  if (i >= n || s[i] != '%') return -1;
  size_t b = i;
  while (i < n && s[i] != ' ') ++i;
  static const char op[] = " = builtin.unrealized_conversion_cast %";
  if (i - b + 1 > cap || n - i < sizeof op - 1 || memcmp(s + i, op, sizeof op - 1) != 0)
    return -1;
  const char* x = s + i + sizeof op - 2;
  size_t xl = strcspn(x, " :\n");
  for (int k = 0; k < nh; ++k)
    if (!h[k].cast && strlen(h[k].name) == xl && memcmp(h[k].name, x, xl) == 0) {
      memcpy(out, s + b, i - b);
      out[i - b] = '\0';
      return k;
    }
  return -1;
}

// The text just past the line that closes the region opened at the end of
// line s (its `}`), or the end of the text.
static const char* region_end(const char* s) {
  int depth = 0;
  while (*s) {
    const char* nl = strchr(s, '\n');
    size_t n = nl ? (size_t)(nl - s + 1) : strlen(s);
    if (closes_region(s, n) && --depth == 0) return s + n;
    if (opens_region(s, n)) ++depth;
    s += n;
  }
  return s;
}

// Whether a loop body (from..to) may write memory: a store, an atomic, a
// call. A load held before the loop may move into it only when not.
static bool may_write(const char* from, const char* to) {
  static const char* const w[] = {"store", "atomic", "call", "barrier"};
  for (size_t i = 0; i < sizeof w / sizeof w[0]; ++i)
    if (find_in_line(from, (size_t)(to - from), w[i])) return true;
  return false;
}

// Whether any line of s..to reads the held load (or its cast).
static bool read_in(const held_t* h, const char* s, const char* to) {
  while (s < to) {
    const char* nl = memchr(s, '\n', (size_t)(to - s));
    size_t n = nl ? (size_t)(nl - s + 1) : (size_t)(to - s);
    if (held_used(h, s, n)) return true;
    s += n;
  }
  return false;
}

// At a line opening a region: loads held before an scf.for that only the
// loop body reads (not the for line's operands, nothing after the loop) stay
// held and are placed at their first reader inside the body, so they are
// read again on every step; every other held load is placed here. Only when
// the body writes no memory (a store there could change what they read).
// Attention with head dim 128 on 8 subgroups holds 128 accumulator registers
// across its KV loop and 64 of each step's QK^T: Q's 16x128 (64 registers)
// held beside them spilled 274 registers on pvc's compat path, read per step
// 145 (16 more block reads per step, which the cache serves; issue 12).
// ZETILE_XE_SINK_INTO_LOOPS=0: placed before the loop as before.
static void enter_region(zt_strbuf_t* out, held_t* h, int* nh, const char* s, size_t n) {
  if (*nh == 0) return;
  const char* env = getenv("ZETILE_XE_SINK_INTO_LOOPS");
  if ((env && strcmp(env, "0") == 0) || !find_in_line(s, n, "scf.for ")) {
    place(out, h, nh, s, n, true);
    return;
  }
  const char* end = region_end(s);
  bool writes = may_write(s + n, end);
  int k = 0;
  for (int i = 0; i < *nh; ++i) {
    if (writes || held_used(&h[i], s, n) || read_in(&h[i], end, end + strlen(end)))
      put(out, &h[i]);
    else h[k++] = h[i];
  }
  *nh = k;
}

// The most dots (DPAS ops of distinct source locations) in one region body.
// Returns max_dots + 1 when it finds more than fit its table.
enum { SINK_MAX_DOTS = XE_SINK_MAX_DOTS, DOT_TABLE = 64, REGION_DEPTH = 32 };
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
        h[nh].cast = NULL;
        ++nh;
        s += n;
        continue;
      }
    }
    int c = cast_of_held(s, n, h, nh, name, sizeof name);
    if (c >= 0) {
      h[c].cast = s;
      h[c].ncast = n;
      memcpy(h[c].cast_name, name, sizeof name);
      s += n;
      continue;
    }
    if (opens_region(s, n) && !closes_region(s, n)) enter_region(&out, h, &nh, s, n);
    else place(&out, h, &nh, s, n, !movable_past(s, n));
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
