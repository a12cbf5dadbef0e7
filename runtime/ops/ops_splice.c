// zetile ops: FlexAttention mods built with the C builder, spliced into the
// exported attention kernel.
//
// A mod is written as torch writes one, on scalars: a builder kernel
//   score mod: (f32 score, i32 b, i32 h, i32 q_idx, i32 kv_idx, ptr<f32> out, ptr<f32> B0)
//   mask mod:  (i32 b, i32 h, i32 q_idx, i32 kv_idx, ptr<i1> out, ptr<i32> B2)
// whose last act is storing its result to `out`. The "ext" exports hold a
// placeholder mod (stdlib-kernels/mods.py ext_score / ext_mask) on source
// lines their .args file records ("# splice score L1 L2 L3"). Each place the
// template inlined the placeholder, the op defining its result is replaced
// by the caller's ops made elementwise over the (BLOCK_M, BLOCK_N) tile:
// every scalar type becomes a tile of it, arguments are splatted or
// broadcast to the tile, constants are splatted, and the value stored to
// `out` takes the placeholder result's name (the placeholder's other ops
// are left dead). Only arith, math and tile.load/addptr/ptr_cast ops are
// taken: anything else is refused with the op named.
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "ops/ops_internal.h"

#define MAX_MOD_ARGS 8
#define MAX_NAME 64

typedef struct {
  const char* kind;  // "score" or "mask"
  int nargs;
  const char* types[MAX_MOD_ARGS];
  int out_arg;  // index of the result pointer
  char arg[MAX_MOD_ARGS][MAX_NAME];
  zt_strbuf_t body;  // the mod's lines, trimmed, one per line
} mod_t;

static zt_status_t bad(const char* kind, const char* fmt, const char* detail) {
  char msg[512];
  snprintf(msg, sizeof msg, fmt, detail);
  return zt_make_status(ZT_STATUS_INVALID_ARGUMENT, "zt_ops_flex_plan: the %s mod: %s", kind,
                        msg);
}

// Parses the builder's module text: the one function's arguments (types
// checked) and its body lines up to the return.
static zt_status_t parse_mod(const char* text, mod_t* m) {
  const char* f = strstr(text, "func.func @");
  if (!f) return bad(m->kind, "%s", "no function in the builder's module");
  if (strstr(f + 1, "func.func @"))
    return bad(m->kind, "%s", "the module holds more than one function (reductions are not "
                              "taken in a mod)");
  const char* p = strchr(f, '(');
  const char* close = p ? strchr(p, ')') : NULL;
  if (!p || !close) return bad(m->kind, "%s", "unreadable function header");
  int n = 0;
  ++p;
  while (p < close) {
    while (*p == ' ' || *p == ',') ++p;
    if (p >= close) break;
    const char* colon = strchr(p, ':');
    const char* end = colon ? strpbrk(colon, ",)") : NULL;
    if (!colon || !end || n >= MAX_MOD_ARGS) return bad(m->kind, "%s", "unreadable arguments");
    // A pointer type holds '<' '>' but no ',' or ')': end is right.
    snprintf(m->arg[n], MAX_NAME, "%.*s", (int)(colon - p), p);
    char type[64];
    const char* t = colon + 1;
    while (*t == ' ') ++t;
    snprintf(type, sizeof type, "%.*s", (int)(end - t), t);
    if (n < m->nargs && strcmp(type, m->types[n])) {
      char d[160];
      snprintf(d, sizeof d, "argument %d is %s, expected %s", n, type, m->types[n]);
      return bad(m->kind, "%s", d);
    }
    ++n;
    p = end;
  }
  if (n != m->nargs) {
    char d[64];
    snprintf(d, sizeof d, "%d arguments, expected %d", n, m->nargs);
    return bad(m->kind, "%s", d);
  }
  const char* line = strchr(close, '\n');
  zt_strbuf_init(&m->body);
  while (line && *line) {
    ++line;
    const char* eol = strchr(line, '\n');
    size_t len = eol ? (size_t)(eol - line) : strlen(line);
    while (len && isspace((unsigned char)*line)) ++line, --len;
    if (len >= 6 && !strncmp(line, "return", 6)) return NULL;
    if (len) {
      zt_strbuf_append(&m->body, line, len);
      zt_strbuf_append(&m->body, "\n", 1);
    }
    line = eol;
  }
  return bad(m->kind, "%s", "the function has no return");
}

static bool is_scalar_type(const char* s, size_t n) {
  static const char* const k[] = {"i1", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"};
  for (size_t i = 0; i < sizeof k / sizeof k[0]; ++i)
    if (strlen(k[i]) == n && !strncmp(s, k[i], n)) return true;
  return false;
}

// Every scalar type of a signature as a (bm, bn) tile of it.
static void retype(zt_strbuf_t* out, const char* s, size_t n, int bm, int bn) {
  size_t i = 0;
  while (i < n) {
    if (!strncmp(s + i, "!tile.ptr<", 10)) {
      const char* gt = memchr(s + i, '>', n - i);
      size_t len = gt ? (size_t)(gt - (s + i)) + 1 : n - i;
      zt_strbuf_printf(out, "tensor<%dx%dx%.*s>", bm, bn, (int)len, s + i);
      i += len;
    } else if (isalnum((unsigned char)s[i])) {
      size_t j = i;
      while (j < n && isalnum((unsigned char)s[j])) ++j;
      if (is_scalar_type(s + i, j - i))
        zt_strbuf_printf(out, "tensor<%dx%dx%.*s>", bm, bn, (int)(j - i), s + i);
      else
        zt_strbuf_append(out, s + i, j - i);
      i = j;
    } else {
      zt_strbuf_append(out, s + i, 1);
      ++i;
    }
  }
}

// Copies `s` (n bytes) renaming %names: the mod's arguments to `argmap`,
// the result to `result`, any other %x to %<prefix>x.
static void rename_values(zt_strbuf_t* out, const char* s, size_t n, const mod_t* m,
                          char argmap[][MAX_NAME], const char* result_src,
                          const char* result, const char* prefix) {
  size_t i = 0;
  while (i < n) {
    if (s[i] != '%') {
      zt_strbuf_append(out, s + i, 1);
      ++i;
      continue;
    }
    size_t j = i + 1;
    while (j < n && (isalnum((unsigned char)s[j]) || s[j] == '_')) ++j;
    char name[MAX_NAME];
    snprintf(name, sizeof name, "%.*s", (int)(j - i), s + i);
    const char* to = NULL;
    for (int a = 0; a < m->nargs && !to; ++a)
      if (!strcmp(name, m->arg[a])) to = argmap[a];
    if (!to && !strcmp(name, result_src)) to = result;
    if (to) zt_strbuf_puts(out, to);
    else zt_strbuf_printf(out, "%%%s%s", prefix, name + 1);
    i = j;
  }
}

// The mod's ops made elementwise, for one occurrence. `argmap` holds the
// tile-shaped names of its arguments; the stored value becomes `result`.
static zt_status_t emit_mod(zt_strbuf_t* out, const mod_t* m, char argmap[][MAX_NAME],
                            const char* result, const char* prefix, int bm, int bn) {
  // The value stored to `out`, found first so every use can be renamed.
  char stored[MAX_NAME] = "";
  const char* body = m->body.data ? m->body.data : "";
  for (const char* l = body; *l;) {
    const char* eol = strchr(l, '\n');
    if (!strncmp(l, "\"tile.store\"(", 13)) {
      char ptr[MAX_NAME], val[MAX_NAME];
      if (sscanf(l + 13, "%63[^,], %63[^),]", ptr, val) != 2 || strcmp(ptr, m->arg[m->out_arg]))
        return bad(m->kind, "%s", "a mod may store only its result, to its out argument");
      if (stored[0]) return bad(m->kind, "%s", "the result is stored twice");
      snprintf(stored, sizeof stored, "%s", val);
    }
    l = eol ? eol + 1 : l + strlen(l);
  }
  if (!stored[0]) return bad(m->kind, "%s", "the result is never stored to the out argument");
  for (int a = 0; a < m->nargs; ++a)
    if (!strcmp(stored, m->arg[a])) {
      // The mod returns an argument as it is: an identity op names it.
      bool f = m->kind[0] == 's';
      zt_strbuf_printf(out, "      %s = %s %s, %s : tensor<%dx%dx%s>\n", result,
                       f ? "arith.maximumf" : "arith.andi", argmap[a], argmap[a], bm, bn,
                       f ? "f32" : "i1");
    }
  for (const char* l = body; *l;) {
    const char* eol = strchr(l, '\n');
    size_t len = eol ? (size_t)(eol - l) : strlen(l);
    const char* next = eol ? eol + 1 : l + len;
    if (!strncmp(l, "\"tile.store\"(", 13)) {
      l = next;
      continue;
    }
    const char* eq = strstr(l, " = ");
    if (!eq || eq > l + len) {
      char d[200];
      snprintf(d, sizeof d, "%.*s", (int)(len > 120 ? 120 : len), l);
      return bad(m->kind, "op not taken in a mod: %s", d);
    }
    const char* op = eq + 3;
    size_t oplen = strcspn(op, " (");
    char opname[64];
    snprintf(opname, sizeof opname, "%.*s", (int)oplen, op);
    bool ok = !strncmp(opname, "arith.", 6) || !strncmp(opname, "math.", 5) ||
              !strcmp(opname, "\"tile.load\"") || !strcmp(opname, "\"tile.addptr\"") ||
              !strcmp(opname, "\"tile.ptr_cast\"");
    if (!ok) return bad(m->kind, "op %s is not taken in a mod (elementwise arith, math and "
                                 "tile.load/addptr/ptr_cast only)", opname);
    const char* loc = strstr(l, " loc(");
    size_t code = loc && loc < l + len ? (size_t)(loc - l) : len;
    if (!strcmp(opname, "arith.constant")) {
      // A scalar constant, splatted to the tile under the original name.
      const char* colon = strstr(op, " : ");
      char type[32] = "i1";
      if (colon && colon < l + code)
        snprintf(type, sizeof type, "%.*s", (int)(l + code - colon - 3), colon + 3);
      zt_strbuf_append(out, "      ", 6);
      char cname[MAX_NAME];
      snprintf(cname, sizeof cname, "%%%sc%.*s", prefix, (int)(eq - l - 1), l + 1);
      zt_strbuf_puts(out, cname);
      zt_strbuf_append(out, eq, (size_t)(l + len - eq));
      zt_strbuf_append(out, "\n      ", 7);
      rename_values(out, l, (size_t)(eq - l), m, argmap, stored, result, prefix);
      zt_strbuf_printf(out, " = \"tile.splat\"(%s) : (%s) -> tensor<%dx%dx%s>\n", cname, type,
                       bm, bn, type);
      l = next;
      continue;
    }
    // The signature follows the last " : " before the location.
    const char* sig = NULL;
    for (const char* q = l; q + 3 <= l + code; ++q)
      if (!strncmp(q, " : ", 3)) sig = q;
    if (!sig) return bad(m->kind, "unreadable op: %s", opname);
    zt_strbuf_append(out, "      ", 6);
    rename_values(out, l, (size_t)(sig + 3 - l), m, argmap, stored, result, prefix);
    retype(out, sig + 3, (size_t)(l + code - sig - 3), bm, bn);
    zt_strbuf_append(out, l + code, len - code);
    zt_strbuf_append(out, "\n", 1);
    l = next;
  }
  return NULL;
}

// "%vN" from a kernel line's text at `p` (a '%' start).
static void take_name(const char* p, char out[MAX_NAME]) {
  size_t n = 1;
  while (isalnum((unsigned char)p[n]) || p[n] == '_') ++n;
  snprintf(out, MAX_NAME, "%.*s", (int)n, p);
}

static int loc_line(const char* line, size_t len) {
  const char* l = strstr(line, "loc(\"stdlib-kernels/mods.py\":");
  if (!l || l > line + len) return -1;
  return atoi(l + strlen("loc(\"stdlib-kernels/mods.py\":"));
}

// The name of kernel argument `arg` (from the .args order).
static zt_status_t kernel_arg(const zt_ops_plan_t* p, const char* text, const char* arg,
                              char out[MAX_NAME]) {
  int idx = -1;
  for (int i = 0; i < p->nargs; ++i)
    if (!strcmp(p->names[i], arg)) idx = i;
  const char* h = strstr(text, "func.func @");
  const char* q = h ? strchr(h, '(') : NULL;
  for (int i = 0; q && idx >= 0; ++i) {
    q = strchr(q, '%');
    if (!q) break;
    if (i == idx) {
      take_name(q, out);
      return NULL;
    }
    ++q;
  }
  return zt_make_status(ZT_STATUS_INTERNAL, "%s: kernel argument %s not found", p->spec, arg);
}

typedef struct {
  mod_t* mod;
  int lines[3];
  char buf[MAX_NAME];  // the kernel's tensor pointer for the mod's buffer
} splice_t;

zt_status_t zt_ops__splice_mods(zt_ops_plan_t* p, char** text, const char* args_text,
                                zt_builder_t* score, zt_builder_t* mask,
                                zt_builder_t* score_grad, const zt_ops_splice_t* where) {
  // The tile the mods run over (rows x cols) and where q_idx and kv_idx
  // come from: (rows, 1) and (1, cols), or, transposed (the backward's
  // dk/dv walks keys x queries), (1, cols) and (rows, 1).
  int bm = where->rows, bn = where->cols;
  bool tr = where->transposed;
  mod_t ms = {.kind = "score", .nargs = 7, .out_arg = 5,
              .types = {"f32", "i32", "i32", "i32", "i32", "!tile.ptr<f32>", "!tile.ptr<f32>"}};
  mod_t mm = {.kind = "mask", .nargs = 6, .out_arg = 4,
              .types = {"i32", "i32", "i32", "i32", "!tile.ptr<i1>", "!tile.ptr<i32>"}};
  // The score mod's derivative (the backward's SCORE_GRAD): a score mod's
  // signature, its tensor the score mod's.
  mod_t mg = {.kind = "score_grad", .nargs = 7, .out_arg = 5,
              .types = {"f32", "i32", "i32", "i32", "i32", "!tile.ptr<f32>", "!tile.ptr<f32>"}};
  splice_t sp[3] = {{.mod = score ? &ms : NULL}, {.mod = mask ? &mm : NULL},
                    {.mod = score_grad ? &mg : NULL}};
  zt_builder_t* builders[3] = {score, mask, score_grad};
  static const char tags[3] = {'s', 'm', 'g'};  // value-name prefixes, one per mod
  zt_status_t s = NULL;
  for (int k = 0; k < 3 && !s; ++k) {
    if (!sp[k].mod) continue;
    const char* mt = NULL;
    size_t n = 0;
    s = zt_builder_module_text(builders[k], &mt, &n);
    if (s) s = zt_status_annotate(s, "zt_ops_flex_plan: the %s mod's builder", sp[k].mod->kind);
    if (!s) s = parse_mod(mt, sp[k].mod);
    char key[32];
    snprintf(key, sizeof key, "# splice %s ", sp[k].mod->kind);
    const char* note = s ? NULL : strstr(args_text, key);
    if (!s && (!note || sscanf(note + strlen(key), "%d %d %d", &sp[k].lines[0],
                               &sp[k].lines[1], &sp[k].lines[2]) != 3))
      s = zt_make_status(ZT_STATUS_INTERNAL, "%s.args has no '%s' line", p->spec, key);
    if (!s) s = kernel_arg(p, *text, where->bufs[k], sp[k].buf);
  }
  zt_strbuf_t out;
  zt_strbuf_init(&out);
  int occurrence = 0;
  // Names seen on the placeholder's first two lines, per occurrence.
  char b[MAX_NAME] = "", h[MAX_NAME] = "", q[MAX_NAME] = "", kv[MAX_NAME] = "";
  const char* t = *text;
  while (!s && *t) {
    const char* eol = strchr(t, '\n');
    size_t len = eol ? (size_t)(eol - t) + 1 : strlen(t);
    int ln = loc_line(t, len);
    splice_t* cur = NULL;
    for (int k = 0; k < 3; ++k)
      if (sp[k].mod && ln >= 0 && (ln == sp[k].lines[0] || ln == sp[k].lines[1] ||
                                   ln == sp[k].lines[2]))
        cur = &sp[k];
    bool last = false;
    if (cur && ln == cur->lines[2]) {
      // The last op of the third line: the next line is not on it.
      const char* nt = t + len;
      const char* neol = strchr(nt, '\n');
      last = loc_line(nt, neol ? (size_t)(neol - nt) : strlen(nt)) != ln;
    }
    char lb[1024] = "";  // this line alone, so searches stay on it
    if (cur) snprintf(lb, sizeof lb, "%.*s", (int)len, t);
    const char* add = cur && ln == cur->lines[0] ? strstr(lb, "arith.addi %") : NULL;
    if (add && strstr(lb, " : i32 ") && strchr(add, ',')) {
      take_name(add + 11, b);
      take_name(strchr(add, ',') + 2, h);
    } else if (cur && ln == cur->lines[1] && strstr(lb, "\"tile.broadcast\"(")) {
      char one[32];
      snprintf(one, sizeof one, "(tensor<%dx1xi32>)", bm);
      take_name(strchr(lb, '(') + 1, (strstr(lb, one) != NULL) != tr ? q : kv);
    }
    if (!last) {
      zt_strbuf_append(&out, t, len);
      t += len;
      continue;
    }
    // Replace the op defining the placeholder's result.
    if (!b[0] || !q[0] || !kv[0]) {
      s = zt_make_status(ZT_STATUS_INTERNAL, "%s: the %s placeholder's operands were not "
                         "found", p->spec, cur->mod->kind);
      break;
    }
    char result[MAX_NAME], score_tile[MAX_NAME] = "";
    take_name(strchr(lb, '%'), result);
    if (cur->mod != &mm) {  // "%R = arith.addf %score, %x"
      const char* a = strstr(lb, "arith.addf ");
      if (!a) {
        s = zt_make_status(ZT_STATUS_INTERNAL, "%s: the score placeholder ends unexpectedly",
                           p->spec);
        break;
      }
      take_name(a + 11, score_tile);
    }
    char prefix[32], argmap[MAX_MOD_ARGS][MAX_NAME];
    snprintf(prefix, sizeof prefix, "zt%c%d_", tags[cur - sp], occurrence++);
    const mod_t* m = cur->mod;
    int o = m != &mm ? 1 : 0;  // index of b among the mod's arguments
    if (m != &mm) snprintf(argmap[0], MAX_NAME, "%s", score_tile);
    const char* src[4] = {b, h, q, kv};
    for (int i = 0; i < 4; ++i) {
      snprintf(argmap[o + i], MAX_NAME, "%%%sa%d", prefix, o + i);
      if (i < 2)
        zt_strbuf_printf(&out, "      %s = \"tile.splat\"(%s) : (i32) -> tensor<%dx%dxi32>\n",
                         argmap[o + i], src[i], bm, bn);
      else  // q_idx (i = 2) is a column, kv_idx a row, or the other way round
        zt_strbuf_printf(&out, "      %s = \"tile.broadcast\"(%s) : (tensor<%dx%dxi32>) -> "
                         "tensor<%dx%dxi32>\n", argmap[o + i], src[i],
                         (i == 2) != tr ? bm : 1, (i == 2) != tr ? 1 : bn, bm, bn);
    }
    snprintf(argmap[m->out_arg], MAX_NAME, "%%%sout", prefix);  // never emitted
    int bi = m->out_arg + 1;
    const char* pt = m != &mm ? "!tile.ptr<f32>" : "!tile.ptr<i32>";
    snprintf(argmap[bi], MAX_NAME, "%%%sa%d", prefix, bi);
    zt_strbuf_printf(&out, "      %s = \"tile.splat\"(%s) : (%s) -> tensor<%dx%dx%s>\n",
                     argmap[bi], cur->buf, pt, bm, bn, pt);
    s = emit_mod(&out, m, argmap, result, prefix, bm, bn);
    b[0] = h[0] = q[0] = kv[0] = 0;
    t += len;
  }
  zt_strbuf_deinit(&ms.body);
  zt_strbuf_deinit(&mm.body);
  zt_strbuf_deinit(&mg.body);
  if (!s && out.failed) s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "splicing mods");
  if (!s && occurrence == 0)
    s = zt_make_status(ZT_STATUS_INTERNAL, "%s: no placeholder mod to replace", p->spec);
  if (s) {
    zt_strbuf_deinit(&out);
    return s;
  }
  free(*text);
  *text = zt_strbuf_take(&out);
  return *text ? NULL : zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "splicing mods");
}
