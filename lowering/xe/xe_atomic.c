// Atomics on Xe, second half (the first is xe_emit_atomic in xe_memory.c):
// after xegpu-subgroup-distribute, each marked scatter holds one element per
// lane (vector<1xT>); here every marked pair becomes
//   old = llvm.call @zt_atomic_<kind>_<T>_<sem>_<scope>(address, [cmp,] value, mask)
// with the helper written in LLVM dialect (atomicrmw / cmpxchg under the
// lane's mask), and the marked gather becomes a broadcast of `old`.
//
// The same pass also turns lane shuffles into gpu.shuffle: a user-combiner
// reduction or scan (xe_reduce_user.c) marks `x = addi v, v {zt.shfl_xor =
// d}` (or shfl_up / shfl_down; an op distribution carries over unchanged and
// nothing folds); here the lane's element of v becomes `gpu.shuffle xor v,
// d, 16` (up, down), which
// convert-gpu-to-llvm-spv lowers to a subgroup shuffle. Upstream's
// distribution has no cross-lane move of its own besides reductions, and
// moving lanes through SLM needs fences, which make it give up.
//
// SLM accesses too (slm_access below): an xegpu gather or scatter on a
// workgroup-memory memref becomes the lane's memref.load / memref.store, so
// that no workgroup address passes through a 32-bit integer (Intel's OpenCL
// CPU runtime, E5, has 64-bit local memory).
//
// xe_lower_atomics works on the printed module (the marked ops print in one
// line each) and parses the result back; it serves upstream's distribution
// and ZETILE_XE_MOVES=text. After zetile's own distribution the atomics are
// rewritten in place instead (xe_atomics_in_place, at the end of this file),
// and the shuffles and SLM accesses by xe_lane_moves.c.
//
// f32 add/max/min are compare-and-swap loops on the bits: LLVM's SPIR-V
// backend rejects float atomicrmw without SPV_EXT_shader_atomic_float_add /
// _min_max (a fatal error, not a diagnostic), and XeVM enables no
// extensions. max/min use maxnum/minnum, so a NaN operand is skipped, as the
// tile dialect says.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>

#include "xe/xe_atomic.h"
#include "xe/xe_internal.h"

static void append_cb(MlirStringRef s, void* user) {
  zt_strbuf_t* sb = user;
  zt_strbuf_printf(sb, "%.*s", (int)s.length, s.data);
}

// An SSA name (or type token) starting at s: [%A-Za-z0-9_#.$-]+.
static size_t name_len(const char* s) {
  size_t n = 0;
  while (s[n] && (s[n] == '%' || s[n] == '_' || s[n] == '#' || s[n] == '.' || s[n] == '$' ||
                  s[n] == '-' || (s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'z') ||
                  (s[n] >= 'A' && s[n] <= 'Z')))
    ++n;
  return n;
}

// The k-th SSA operand (k = 0, 1, ...) after `from` in a line.
static bool operand(const char* from, const char* end, int k, char* out, size_t n) {
  const char* p = from;
  for (int i = 0; p < end; ++p) {
    if (*p != '%') continue;
    size_t l = name_len(p);
    if (i++ == k) {
      if (l + 1 > n) return false;
      memcpy(out, p, l);
      out[l] = 0;
      return true;
    }
    p += l - 1;
  }
  return false;
}

// The element type of "vector<1xT>" (or a bare T) at s.
static bool elem_type(const char* s, char* out, size_t n) {
  while (*s == ' ') ++s;
  if (strncmp(s, "vector<1x", 9) == 0) s += 9;
  size_t l = 0;
  while (s[l] && s[l] != '>' && s[l] != ',' && s[l] != ' ') ++l;
  if (l == 0 || l + 1 > n) return false;
  memcpy(out, s, l);
  out[l] = 0;
  return true;
}

static long long attr_int(const char* line, const char* key) {
  const char* p = strstr(line, key);
  return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

typedef struct site_s {
  long long id;
  char ty[16];
  char cmp[64];     // atomic_cas: the compare value's name (vector<1xT>)
  char result[64];  // the scalar old value, once the atomic is rewritten
} site_t;

typedef struct helpers_s {
  char names[32][96];
  int n;
} helpers_t;

static const char* ordering(const char* sem) {
  if (strcmp(sem, "relaxed") == 0) return "monotonic";
  if (strcmp(sem, "acquire") == 0) return "acquire";
  if (strcmp(sem, "release") == 0) return "release";
  return "acq_rel";
}

// LLVM syncscope of a Triton scope ("" is the whole system).
static const char* syncscope(const char* scope) {
  if (strcmp(scope, "cta") == 0) return "syncscope(\"workgroup\") ";
  if (strcmp(scope, "gpu") == 0) return "syncscope(\"device\") ";
  return "";
}

// cmpxchg takes no release-only or acquire-only failure ordering stronger
// than its success ordering; the failure side never needs release.
static const char* failure_ordering(const char* sem) {
  return strcmp(sem, "relaxed") == 0 || strcmp(sem, "release") == 0 ? "monotonic" : "acquire";
}

// Appends the definition of one helper to sb (declared in xe_atomic.h: the
// dg2 lowering calls the same helpers, so both targets share one meaning of
// each atomic).
zt_status_t xe_atomic_helper(zt_strbuf_t* sb, const char* name, const char* kind,
                             const char* ty, const char* sem, const char* scope,
                             bool always_inline) {
  bool fl = strcmp(ty, "f32") == 0;
  const char* it = fl ? "i32" : ty;  // integer type of the bits
  bool cas = strcmp(kind, "cas") == 0;
  const char* ord = ordering(sem);
  const char* ss = syncscope(scope);
  char cparam[24] = "";
  if (cas) snprintf(cparam, sizeof cparam, "%%c: %s, ", ty);
  zt_strbuf_printf(sb, "  llvm.func internal @%s(%%a: i64, %s%%v: %s, %%m: i1) -> %s%s {\n", name,
                   cparam, ty, ty, always_inline ? " attributes {always_inline}" : "");
  zt_strbuf_printf(sb, "    %%z = llvm.mlir.constant(0 : %s) : %s\n", it, it);
  zt_strbuf_printf(sb, "    llvm.cond_br %%m, ^go, ^done(%%z : %s)\n", it);
  zt_strbuf_puts(sb, "  ^go:\n    %p = llvm.inttoptr %a : i64 to !llvm.ptr<1>\n");
  if (fl) zt_strbuf_puts(sb, "    %vb = llvm.bitcast %v : f32 to i32\n");
  const char* vb = fl ? "%vb" : "%v";
  if (cas) {
    if (fl) zt_strbuf_puts(sb, "    %cb = llvm.bitcast %c : f32 to i32\n");
    zt_strbuf_printf(sb,
                     "    %%pair = llvm.cmpxchg %%p, %s, %s %s%s %s : !llvm.ptr<1>, %s\n"
                     "    %%old = llvm.extractvalue %%pair[0] : !llvm.struct<(%s, i1)>\n"
                     "    llvm.br ^done(%%old : %s)\n",
                     fl ? "%cb" : "%c", vb, ss, ord, failure_ordering(sem), it, it, it);
  } else if (fl && strcmp(kind, "xchg") != 0) {
    const char* f = strcmp(kind, "add") == 0   ? "llvm.fadd %cf, %v : f32"
                    : strcmp(kind, "max") == 0 ? "llvm.intr.maxnum(%cf, %v) : (f32, f32) -> f32"
                                               : "llvm.intr.minnum(%cf, %v) : (f32, f32) -> f32";
    if (strcmp(kind, "add") && strcmp(kind, "max") && strcmp(kind, "min"))
      return zt_make_status(ZT_STATUS_UNSUPPORTED, "Xe: atomic %s on f32", kind);
    zt_strbuf_printf(sb,
                     "    %%init = llvm.load %%p atomic %smonotonic {alignment = 4 : i64} : "
                     "!llvm.ptr<1> -> i32\n"
                     "    llvm.br ^loop(%%init : i32)\n"
                     "  ^loop(%%cur: i32):\n"
                     "    %%cf = llvm.bitcast %%cur : i32 to f32\n"
                     "    %%nf = %s\n"
                     "    %%ni = llvm.bitcast %%nf : f32 to i32\n"
                     "    %%pair = llvm.cmpxchg %%p, %%cur, %%ni %s%s %s : !llvm.ptr<1>, i32\n"
                     "    %%got = llvm.extractvalue %%pair[0] : !llvm.struct<(i32, i1)>\n"
                     "    %%ok = llvm.extractvalue %%pair[1] : !llvm.struct<(i32, i1)>\n"
                     "    llvm.cond_br %%ok, ^done(%%cur : i32), ^loop(%%got : i32)\n",
                     ss, f, ss, ord, failure_ordering(sem));
  } else {
    static const char* const ok[] = {"add", "max", "min", "umax", "umin",
                                     "and", "or",  "xor", "xchg"};
    bool known = false;
    for (size_t i = 0; i < sizeof ok / sizeof *ok; ++i) known |= strcmp(kind, ok[i]) == 0;
    if (!known) return zt_make_status(ZT_STATUS_UNSUPPORTED, "Xe: atomic %s", kind);
    // The LLVM dialect spells the bitwise ones _and, _or, _xor.
    const char* op = strcmp(kind, "and") == 0   ? "_and"
                     : strcmp(kind, "or") == 0  ? "_or"
                     : strcmp(kind, "xor") == 0 ? "_xor"
                                                : kind;
    zt_strbuf_printf(sb,
                     "    %%old = llvm.atomicrmw %s %%p, %s %s%s : !llvm.ptr<1>, %s\n"
                     "    llvm.br ^done(%%old : %s)\n",
                     op, vb, ss, ord, it, it);
  }
  zt_strbuf_printf(sb, "  ^done(%%r: %s):\n", it);
  if (fl) {
    zt_strbuf_puts(sb, "    %rf = llvm.bitcast %r : i32 to f32\n    llvm.return %rf : f32\n");
  } else {
    zt_strbuf_printf(sb, "    llvm.return %%r : %s\n", ty);
  }
  zt_strbuf_puts(sb, "  }\n");
  return NULL;
}

static site_t* find_site(site_t* s, int n, long long id) {
  for (int i = 0; i < n; ++i)
    if (s[i].id == id) return &s[i];
  return NULL;
}

static int elem_bytes(const char* ty) { return strcmp(ty, "i64") == 0 ? 8 : 4; }

// An SLM gather or scatter (xegpu.load/store on a memref in address space
// 3, one element per lane once distributed) becomes a memref.load/store of
// the lane's element under its mask. Upstream's lowering of the xegpu op
// keeps the workgroup address in a 32-bit integer (OpConvertPtrToU), which
// is right on Intel GPUs, whose SLM addresses have 32 bits, but Intel's
// OpenCL CPU runtime gives local memory 64-bit addresses, so such SPIR-V
// cannot run there (E5); memref.load lowers to a pointer GEP instead, the
// same access on the GPU. Masked-off lanes read zero.
//   %r = xegpu.load %slm[%off], %m : memref<NxT, 3>, vector<1xindex>, vector<1xi1> -> vector<1xT>
//   xegpu.store %v, %slm[%off], %m : vector<1xT>, memref<NxT, 3>, vector<1xindex>, vector<1xi1>
static zt_status_t slm_access(const char* l, const char* st, const char* ld, const char* mty,
                              int f, zt_strbuf_t* out) {
  const char* from = st ? st : ld;
  const char* colon = strstr(from, " : ");
  char v[64] = "", mem[64] = "", off[64] = "", mask[64] = "", memref[96] = "", ty[16] = "";
  const char* close = strchr(mty, '>');
  const char* x = strchr(mty, 'x');
  bool ok = colon && close && x && x < close && (size_t)(close - mty) + 2 <= sizeof memref;
  if (ok) {
    snprintf(memref, sizeof memref, "%.*s", (int)(close - mty + 1), mty);
    size_t tl = strcspn(x + 1, ",>");
    ok = tl > 0 && tl < sizeof ty && strstr(memref, ", 3>") != NULL;
    if (ok) snprintf(ty, sizeof ty, "%.*s", (int)tl, x + 1);
  }
  int k = 0;
  if (ok && st) ok = operand(from, colon, k++, v, sizeof v);
  if (ok && ld) ok = operand(l, ld, 0, v, sizeof v);
  ok = ok && operand(from, colon, k, mem, sizeof mem) && operand(from, colon, k + 1, off, sizeof off) &&
       operand(from, colon, k + 2, mask, sizeof mask);
  // One element per lane: vector<1x...> operands (or bare scalars).
  bool vec = ok && strstr(colon, "vector<1xindex>") != NULL;
  bool vec_val = ok && strstr(colon, "vector<1x") != NULL &&
                 (st ? strncmp(colon + 3, "vector<1x", 9) == 0 : strstr(colon, "-> vector<1x") != NULL);
  if (!ok || (!vec && strstr(colon, "vector<")))
    return zt_make_status(ZT_STATUS_INTERNAL, "Xe SLM access: cannot read the distributed op '%s'", l);
  char o[48], m[48], val[48];
  snprintf(o, sizeof o, "%%ztl%d_o", f);
  snprintf(m, sizeof m, "%%ztl%d_m", f);
  if (vec) {
    zt_strbuf_printf(out, "    %s = vector.extract %s[0] : index from vector<1xindex>\n", o, off);
    zt_strbuf_printf(out, "    %s = vector.extract %s[0] : i1 from vector<1xi1>\n", m, mask);
  } else {
    snprintf(o, sizeof o, "%s", off);
    snprintf(m, sizeof m, "%s", mask);
  }
  if (st) {
    if (vec_val) {
      snprintf(val, sizeof val, "%%ztl%d_v", f);
      zt_strbuf_printf(out, "    %s = vector.extract %s[0] : %s from vector<1x%s>\n", val, v, ty, ty);
    } else {
      snprintf(val, sizeof val, "%s", v);
    }
    zt_strbuf_printf(out,
                     "    scf.if %s {\n"
                     "      memref.store %s, %s[%s] : %s\n"
                     "    }\n",
                     m, val, mem, o, memref);
    return NULL;
  }
  bool fl = ty[0] == 'f' || ty[0] == 'b';
  char r[48];
  if (vec_val) snprintf(r, sizeof r, "%%ztl%d_r", f);
  else snprintf(r, sizeof r, "%s", v);
  zt_strbuf_printf(out,
                   "    %s = scf.if %s -> (%s) {\n"
                   "      %%ztl%d_x = memref.load %s[%s] : %s\n"
                   "      scf.yield %%ztl%d_x : %s\n"
                   "    } else {\n"
                   "      %%ztl%d_z = arith.constant %s : %s\n"
                   "      scf.yield %%ztl%d_z : %s\n"
                   "    }\n",
                   r, m, ty, f, mem, o, memref, f, ty, f, fl ? "0.0" : "0", ty, f, ty);
  if (vec_val) zt_strbuf_printf(out, "    %s = vector.broadcast %s : %s to vector<1x%s>\n", v, r, ty, ty);
  return NULL;
}

zt_status_t xe_lower_atomics(MlirContext ctx, MlirModule* m) {
  zt_strbuf_t in, out, helpers;
  zt_strbuf_init(&in);
  zt_strbuf_init(&out);
  zt_strbuf_init(&helpers);
  MlirOpPrintingFlags flags = mlirOpPrintingFlagsCreate();
  mlirOpPrintingFlagsEnableDebugInfo(flags, true, false);
  mlirOperationPrintWithFlags(mlirModuleGetOperation(*m), flags, append_cb, &in);
  mlirOpPrintingFlagsDestroy(flags);
  zt_status_t s = NULL;
  site_t* sites = NULL;
  int nsites = 0, cap = 0, fresh = 0;
  helpers_t hs = {.n = 0};
  const char* gpu_module_line = NULL;  // where the helpers go
  size_t gpu_module_at = 0;
  for (const char* line = in.data; line && *line && !s;) {
    const char* nl = strchr(line, '\n');
    const char* end = nl ? nl : line + strlen(line);
    size_t len = (size_t)(end - line);
    char* l = malloc(len + 1);
    if (!l) {
      s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe atomics");
      break;
    }
    memcpy(l, line, len);
    l[len] = 0;
    const char* st = strstr(l, "xegpu.store");
    const char* ld = strstr(l, "xegpu.load");
    bool is_cmp = st && strstr(l, "zt.atomic_cmp = ");
    bool is_rmw = st && strstr(l, "zt.atomic = \"");
    bool is_res = ld && strstr(l, "zt.atomic_result = ");
    static const char* const modes[] = {"xor", "up", "down", "idx"};
    const char* shfl = NULL;
    const char* mode = NULL;
    char key[24] = "";
    for (size_t i = 0; i < sizeof modes / sizeof *modes && !shfl; ++i) {
      snprintf(key, sizeof key, "zt.shfl_%s = ", modes[i]);
      if ((shfl = strstr(l, key))) mode = modes[i];
    }
    if (shfl) {
      // %r = arith.addi %v, %v {zt.shfl_<mode> = D : i32} : vector<1xT>
      const char* eq = strstr(l, " = arith.add");
      const char* colon = strstr(shfl, "} : ");
      char r[64] = "", v[64] = "", ty[16] = "";
      long long d = attr_int(l, key);
      // (idx: every lane reads lane d, 0 included.)
      bool ok = eq && colon && (d > 0 || (d == 0 && strcmp(mode, "idx") == 0)) &&
                operand(l, eq, 0, r, sizeof r) &&
                operand(eq, colon, 0, v, sizeof v) && elem_type(colon + 4, ty, sizeof ty);
      if (!ok) {
        s = zt_make_status(ZT_STATUS_INTERNAL, "Xe shuffles: cannot read '%s'", l);
        free(l);
        break;
      }
      bool vec = strncmp(colon + 4, "vector<1x", 9) == 0;
      int f = fresh++;
      // One element per lane: vector<1xT> (extract, shuffle, broadcast) or T.
      char src[80], dst[80];
      if (vec) {
        snprintf(src, sizeof src, "%%zts%d_e", f);
        snprintf(dst, sizeof dst, "%%zts%d_s", f);
      } else {
        snprintf(src, sizeof src, "%s", v);
        snprintf(dst, sizeof dst, "%s", r);
      }
      if (vec)
        zt_strbuf_printf(&out, "    %s = vector.extract %s[0] : %s from vector<1x%s>\n", src, v,
                         ty, ty);
      zt_strbuf_printf(&out,
                       "    %%zts%d_d = arith.constant %lld : i32\n"
                       "    %%zts%d_w = arith.constant 16 : i32\n"
                       "    %s, %%zts%d_ok = gpu.shuffle %s %s, %%zts%d_d, %%zts%d_w : %s\n",
                       f, d, f, dst, f, mode, src, f, f, ty);
      if (vec)
        zt_strbuf_printf(&out, "    %s = vector.broadcast %s : %s to vector<1x%s>\n", r, dst, ty,
                         ty);
      free(l);
      line = nl ? nl + 1 : end;
      continue;
    }
    const char* slm_ty = strstr(l, "memref<");
    if ((st || ld) && slm_ty && !is_cmp && !is_rmw && !is_res) {
      s = slm_access(l, st, ld, slm_ty, fresh++, &out);
      free(l);
      if (s) break;
      line = nl ? nl + 1 : end;
      continue;
    }
    if (!gpu_module_line && strstr(l, "gpu.module @")) {
      gpu_module_line = line;
      gpu_module_at = out.size + len + 1;
    }
    if (is_cmp || is_rmw || is_res) {
      long long id = attr_int(l, is_cmp ? "zt.atomic_cmp = "
                                 : is_rmw ? "zt.atomic_id = "
                                          : "zt.atomic_result = ");
      const char* colon = strstr(l, "} : ");
      const char* ops_from = is_res ? ld : st;
      char v[64] = "", base[64] = "", off[64] = "", mask[64] = "", ty[16] = "";
      bool ok = colon && id >= 0;
      if (ok && !is_res)
        ok = operand(ops_from, colon, 0, v, sizeof v) && operand(ops_from, colon, 1, base, sizeof base) &&
             operand(ops_from, colon, 2, off, sizeof off) &&
             operand(ops_from, colon, 3, mask, sizeof mask) && elem_type(colon + 4, ty, sizeof ty);
      if (ok && is_res) {
        const char* arrow = strstr(colon, "-> ");
        ok = operand(l, ld, 0, v, sizeof v) && arrow && elem_type(arrow + 3, ty, sizeof ty);
      }
      if (!ok) {
        s = zt_make_status(ZT_STATUS_INTERNAL, "Xe atomics: cannot read the distributed op '%s'",
                           l);
        free(l);
        break;
      }
      site_t* site = find_site(sites, nsites, id);
      if (!site) {
        if (nsites == cap) {
          cap = cap ? 2 * cap : 16;
          site_t* g = realloc(sites, (size_t)cap * sizeof *g);
          if (!g) {
            s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe atomics");
            free(l);
            break;
          }
          sites = g;
        }
        site = &sites[nsites++];
        memset(site, 0, sizeof *site);
        site->id = id;
      }
      bool vec = strstr(colon + 4, "vector<1x") == colon + 4 ||
                 (is_res && strstr(colon, "-> vector<1x") != NULL);
      if (is_cmp) {
        snprintf(site->cmp, sizeof site->cmp, "%s", v);
      } else if (is_rmw) {
        char spec[48] = "", kind[16] = "", sem[16] = "", scope[16] = "";
        const char* q = strstr(l, "zt.atomic = \"") + strlen("zt.atomic = \"");
        size_t ql = strcspn(q, "\"");
        snprintf(spec, sizeof spec, "%.*s", (int)ql, q);
        if (sscanf(spec, "%15[^:]:%15[^:]:%15s", kind, sem, scope) != 3) {
          s = zt_make_status(ZT_STATUS_INTERNAL, "Xe atomics: bad mark '%s'", spec);
          free(l);
          break;
        }
        char hname[96];
        snprintf(hname, sizeof hname, "zt_atomic_%s_%s_%s_%s", kind, ty, sem, scope);
        bool have = false;
        for (int i = 0; i < hs.n; ++i) have |= strcmp(hs.names[i], hname) == 0;
        if (!have && hs.n < 32) {
          snprintf(hs.names[hs.n++], sizeof hs.names[0], "%s", hname);
          s = xe_atomic_helper(&helpers, hname, kind, ty, sem, scope, false);
          if (s) {
            free(l);
            break;
          }
        }
        int f = fresh++;
        const char* vt = ty;
        if (vec) {
          zt_strbuf_printf(&out, "    %%zta%d_v = vector.extract %s[0] : %s from vector<1x%s>\n", f,
                           v, vt, vt);
          zt_strbuf_printf(&out, "    %%zta%d_o = vector.extract %s[0] : index from vector<1xindex>\n",
                           f, off);
          zt_strbuf_printf(&out, "    %%zta%d_m = vector.extract %s[0] : i1 from vector<1xi1>\n", f,
                           mask);
          if (site->cmp[0])
            zt_strbuf_printf(&out, "    %%zta%d_c = vector.extract %s[0] : %s from vector<1x%s>\n",
                             f, site->cmp, vt, vt);
        } else {
          s = zt_make_status(ZT_STATUS_INTERNAL,
                             "Xe atomics: a distributed atomic without one element per lane");
          free(l);
          break;
        }
        zt_strbuf_printf(&out,
                         "    %%zta%d_oi = arith.index_cast %%zta%d_o : index to i64\n"
                         "    %%zta%d_sz = arith.constant %d : i64\n"
                         "    %%zta%d_ob = arith.muli %%zta%d_oi, %%zta%d_sz : i64\n"
                         "    %%zta%d_a = arith.addi %s, %%zta%d_ob : i64\n",
                         f, f, f, elem_bytes(ty), f, f, f, f, base, f);
        if (site->cmp[0])
          zt_strbuf_printf(&out,
                           "    %%zta%d_r = llvm.call @%s(%%zta%d_a, %%zta%d_c, %%zta%d_v, "
                           "%%zta%d_m) : (i64, %s, %s, i1) -> %s\n",
                           f, hname, f, f, f, f, ty, ty, ty);
        else
          zt_strbuf_printf(&out,
                           "    %%zta%d_r = llvm.call @%s(%%zta%d_a, %%zta%d_v, %%zta%d_m) : "
                           "(i64, %s, i1) -> %s\n",
                           f, hname, f, f, f, ty, ty);
        snprintf(site->result, sizeof site->result, "%%zta%d_r", f);
        snprintf(site->ty, sizeof site->ty, "%s", ty);
      } else {
        if (!site->result[0]) {
          s = zt_make_status(ZT_STATUS_INTERNAL, "Xe atomics: result %lld before its atomic", id);
          free(l);
          break;
        }
        zt_strbuf_printf(&out, "    %s = vector.broadcast %s : %s to vector<1x%s>\n", v,
                         site->result, ty, ty);
      }
    } else {
      zt_strbuf_printf(&out, "%s\n", l);
    }
    free(l);
    line = nl ? nl + 1 : end;
  }
  if (!s && !gpu_module_line)
    s = zt_make_status(ZT_STATUS_INTERNAL, "Xe atomics: no gpu.module in the module");
  if (!s && (out.failed || helpers.failed))
    s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe atomics");
  if (!s) {
    // The helpers go right after the gpu.module line.
    zt_strbuf_t all;
    zt_strbuf_init(&all);
    zt_strbuf_printf(&all, "%.*s", (int)gpu_module_at, out.data);
    if (helpers.data) zt_strbuf_puts(&all, helpers.data);
    zt_strbuf_puts(&all, out.data + gpu_module_at);
    MlirModule nm;
    s = zt_mlir_parse(ctx, all.data, all.size, "Xe module with atomics", &nm);
    zt_strbuf_deinit(&all);
    if (!s) {
      mlirModuleDestroy(*m);
      *m = nm;
    }
  }
  free(sites);
  zt_strbuf_deinit(&in);
  zt_strbuf_deinit(&out);
  zt_strbuf_deinit(&helpers);
  return s;
}

static void attr_string(MlirOperation op, const char* name, const char* dflt, char* out,
                        size_t n) {
  MlirAttribute a = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(name));
  if (!mlirAttributeIsNull(a) && mlirAttributeIsAString(a)) {
    MlirStringRef s = mlirStringAttrGetValue(a);
    snprintf(out, n, "%.*s", (int)s.length, s.data);
  } else {
    snprintf(out, n, "%s", dflt);
  }
}

void xe_atomic_attrs(MlirOperation op, char kind[16], char sem[16], char scope[16]) {
  if (zt_op_named(op, "tile.atomic_cas")) snprintf(kind, 16, "cas");
  else attr_string(op, "kind", "add", kind, 16);
  attr_string(op, "sem", "acq_rel", sem, 16);
  attr_string(op, "scope", "gpu", scope, 16);
}

// --- The atomics in place (after zetile's own lane distribution) -----------
//
// xe_lower_atomics above prints the module, edits the marked lines and
// parses the result back. After zetile's distribution every marked op is in
// the one form it expects (one element per lane), so here the same ops are
// built where the marked ones stand, through the C API, and only the
// helpers' text is parsed (a few lines): the SPIR-V is byte for byte the
// text route's (tests/python/test_xe_emit_llvm_passes.py). Any op in
// another form leaves the module untouched and the text route takes it.

typedef struct inplace_s {
  MlirOperation* ops;
  size_t n, cap;
  bool oom, refuse;
} inplace_t;

static MlirAttribute op_attr(MlirOperation op, const char* name) {
  return mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString(name));
}

// vector<1xT>: one element per lane.
static bool one_lane(MlirType t) {
  return mlirTypeIsAVector(t) && mlirShapedTypeGetRank(t) == 1 &&
         mlirShapedTypeGetDimSize(t, 0) == 1;
}

// i32, i64 or f32 spelled as the helpers' names spell them.
static const char* lane_elem(MlirType vt) {
  MlirType t = mlirShapedTypeGetElementType(vt);
  if (mlirTypeIsAF32(t)) return "f32";
  if (mlirTypeIsAInteger(t) && mlirIntegerTypeGetWidth(t) == 32) return "i32";
  if (mlirTypeIsAInteger(t) && mlirIntegerTypeGetWidth(t) == 64) return "i64";
  return NULL;
}

// 1: the atomic's value scatter, 2: a cas's compare scatter, 3: the result
// gather, 0: none of them.
static int atomic_role(MlirOperation op) {
  if (!mlirAttributeIsNull(op_attr(op, "zt.atomic_cmp"))) return 2;
  if (!mlirAttributeIsNull(op_attr(op, "zt.atomic"))) return 1;
  if (!mlirAttributeIsNull(op_attr(op, "zt.atomic_result"))) return 3;
  return 0;
}

// The forms the text route reads: xegpu.store %v, %base[%off], %mask with
// %base an i64 and the rest vector<1x..>; xegpu.load %base[%off], %mask ->
// vector<1xT>.
static bool atomic_form_ok(MlirOperation op, int role) {
  bool st = role != 3;
  if (!zt_op_named(op, st ? "xegpu.store" : "xegpu.load")) return false;
  intptr_t b = st ? 1 : 0;
  if (mlirOperationGetNumOperands(op) != b + 3) return false;
  MlirType base = mlirValueGetType(mlirOperationGetOperand(op, b));
  if (!mlirTypeIsAInteger(base) || mlirIntegerTypeGetWidth(base) != 64) return false;
  if (!one_lane(mlirValueGetType(mlirOperationGetOperand(op, b + 1))) ||
      !one_lane(mlirValueGetType(mlirOperationGetOperand(op, b + 2))))
    return false;
  MlirType vt = st ? mlirValueGetType(mlirOperationGetOperand(op, 0))
                   : (mlirOperationGetNumResults(op) == 1
                          ? mlirValueGetType(mlirOperationGetResult(op, 0))
                          : (MlirType){NULL});
  if (mlirTypeIsNull(vt) || !one_lane(vt) || !lane_elem(vt)) return false;
  const char* key = role == 1 ? "zt.atomic_id" : role == 2 ? "zt.atomic_cmp" : "zt.atomic_result";
  if (!mlirAttributeIsAInteger(op_attr(op, key))) return false;
  if (role == 1) {
    MlirAttribute spec = op_attr(op, "zt.atomic");
    if (!mlirAttributeIsAString(spec)) return false;
  }
  return true;
}

static MlirWalkResult inplace_cb(MlirOperation op, void* user) {
  inplace_t* w = user;
  int role = atomic_role(op);
  if (!role) return MlirWalkResultAdvance;
  if (!atomic_form_ok(op, role)) {
    w->refuse = true;
    return MlirWalkResultInterrupt;
  }
  if (!zt_op_list_push(&w->ops, &w->n, &w->cap, op)) {
    w->oom = true;
    return MlirWalkResultInterrupt;
  }
  return MlirWalkResultAdvance;
}

static MlirNamedAttribute nattr(MlirContext ctx, const char* name, MlirAttribute a) {
  return mlirNamedAttributeGet(mlirIdentifierGet(ctx, mlirStringRefCreateFromCString(name)), a);
}

// Creates `name` before `before` and returns its first result (or a null value).
static MlirValue build_before(MlirOperation before, const char* name, intptr_t nops,
                              const MlirValue* ops, MlirType* res, intptr_t nattr_,
                              const MlirNamedAttribute* attrs) {
  MlirOperationState st = mlirOperationStateGet(mlirStringRefCreateFromCString(name),
                                                mlirOperationGetLocation(before));
  if (nops) mlirOperationStateAddOperands(&st, nops, ops);
  if (res) mlirOperationStateAddResults(&st, 1, res);
  if (nattr_) mlirOperationStateAddAttributes(&st, nattr_, attrs);
  MlirOperation o = mlirOperationCreate(&st);
  mlirBlockInsertOwnedOperationBefore(mlirOperationGetBlock(before), before, o);
  return res ? mlirOperationGetResult(o, 0) : (MlirValue){NULL};
}

static MlirValue lane_of(MlirContext ctx, MlirOperation before, MlirValue v) {
  MlirType et = mlirShapedTypeGetElementType(mlirValueGetType(v));
  int64_t zero = 0;
  MlirNamedAttribute pos = nattr(ctx, "static_position", mlirDenseI64ArrayGet(ctx, 1, &zero));
  return build_before(before, "vector.extract", 1, &v, &et, 1, &pos);
}

typedef struct inplace_site_s {
  long long id;
  MlirValue cmp;     // a cas's compare value (vector<1xT>)
  MlirValue result;  // the scalar old value, once the atomic is rewritten
} inplace_site_t;

zt_status_t xe_atomics_in_place(MlirContext ctx, MlirModule m, bool* out_done) {
  *out_done = false;
  inplace_t w = {0};
  mlirOperationWalk(mlirModuleGetOperation(m), inplace_cb, &w, MlirWalkPreOrder);
  if (w.oom) {
    free(w.ops);
    return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe atomics");
  }
  if (w.refuse || !w.n) {
    free(w.ops);
    *out_done = !w.refuse;
    return NULL;
  }
  // The gpu.module: the helpers go at the start of its body, in the order
  // their atomics come (as the text route puts them).
  MlirOperation gm = zt_op_in_block(mlirModuleGetBody(m), "gpu.module");
  if (mlirOperationIsNull(gm)) {
    free(w.ops);
    return zt_make_status(ZT_STATUS_INTERNAL, "Xe atomics: no gpu.module in the module");
  }
  // First pass: the helpers' text; nothing is changed before it parses.
  zt_strbuf_t helpers;
  zt_strbuf_init(&helpers);
  helpers_t hs = {.n = 0};
  zt_status_t s = NULL;
  for (size_t i = 0; i < w.n && !s; ++i) {
    if (atomic_role(w.ops[i]) != 1) continue;
    MlirStringRef spec = mlirStringAttrGetValue(op_attr(w.ops[i], "zt.atomic"));
    char buf[48] = "", kind[16] = "", sem[16] = "", scope[16] = "", hname[96];
    snprintf(buf, sizeof buf, "%.*s", (int)spec.length, spec.data);
    if (sscanf(buf, "%15[^:]:%15[^:]:%15s", kind, sem, scope) != 3) {
      s = zt_make_status(ZT_STATUS_INTERNAL, "Xe atomics: bad mark '%s'", buf);
      break;
    }
    const char* ty = lane_elem(mlirValueGetType(mlirOperationGetOperand(w.ops[i], 0)));
    snprintf(hname, sizeof hname, "zt_atomic_%s_%s_%s_%s", kind, ty, sem, scope);
    bool have = false;
    for (int j = 0; j < hs.n; ++j) have |= strcmp(hs.names[j], hname) == 0;
    if (!have && hs.n < 32) {
      snprintf(hs.names[hs.n++], sizeof hs.names[0], "%s", hname);
      s = xe_atomic_helper(&helpers, hname, kind, ty, sem, scope, false);
    }
  }
  MlirModule hm = {NULL};
  if (!s && helpers.failed) s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe atomics");
  if (!s && helpers.data) {
    zt_strbuf_t text;
    zt_strbuf_init(&text);
    zt_strbuf_printf(&text, "module {\n%s}\n", helpers.data);
    s = text.failed ? zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe atomics")
                    : zt_mlir_parse(ctx, text.data, text.size, "Xe atomic helpers", &hm);
    zt_strbuf_deinit(&text);
  }
  zt_strbuf_deinit(&helpers);
  if (s) {
    free(w.ops);
    return s;
  }
  if (!mlirModuleIsNull(hm)) {
    MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(gm, 0));
    MlirOperation first = mlirBlockGetFirstOperation(body);
    for (MlirOperation f = mlirBlockGetFirstOperation(mlirModuleGetBody(hm));
         !mlirOperationIsNull(f);) {
      MlirOperation next = mlirOperationGetNextInBlock(f);
      if (mlirOperationIsNull(first)) mlirOperationMoveAfter(f, mlirBlockGetTerminator(body));
      else mlirOperationMoveBefore(f, first);
      f = next;
    }
    mlirModuleDestroy(hm);
  }
  // Second pass: the rewrite, op by op in the module's order.
  inplace_site_t* sites = calloc(w.n, sizeof *sites);
  int nsites = 0;
  if (!sites) s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "Xe atomics");
  MlirType i64 = mlirIntegerTypeGet(ctx, 64);
  for (size_t i = 0; i < w.n && !s; ++i) {
    MlirOperation op = w.ops[i];
    int role = atomic_role(op);
    const char* key = role == 1 ? "zt.atomic_id" : role == 2 ? "zt.atomic_cmp" : "zt.atomic_result";
    long long id = mlirIntegerAttrGetValueInt(op_attr(op, key));
    inplace_site_t* site = NULL;
    for (int j = 0; j < nsites && !site; ++j)
      if (sites[j].id == id) site = &sites[j];
    if (!site) {
      site = &sites[nsites++];
      site->id = id;
    }
    if (role == 2) {
      site->cmp = mlirOperationGetOperand(op, 0);
      mlirOperationDestroy(op);
      continue;
    }
    if (role == 3) {
      if (mlirValueIsNull(site->result)) {
        s = zt_make_status(ZT_STATUS_INTERNAL, "Xe atomics: result %lld before its atomic", id);
        break;
      }
      MlirType rt = mlirValueGetType(mlirOperationGetResult(op, 0));
      MlirValue b = build_before(op, "vector.broadcast", 1, &site->result, &rt, 0, NULL);
      mlirValueReplaceAllUsesOfWith(mlirOperationGetResult(op, 0), b);
      mlirOperationDestroy(op);
      continue;
    }
    MlirType vt = mlirValueGetType(mlirOperationGetOperand(op, 0));
    MlirType et = mlirShapedTypeGetElementType(vt);
    const char* ty = lane_elem(vt);
    MlirStringRef spec = mlirStringAttrGetValue(op_attr(op, "zt.atomic"));
    char buf[48] = "", kind[16] = "", sem[16] = "", scope[16] = "", hname[96];
    snprintf(buf, sizeof buf, "%.*s", (int)spec.length, spec.data);
    sscanf(buf, "%15[^:]:%15[^:]:%15s", kind, sem, scope);
    snprintf(hname, sizeof hname, "zt_atomic_%s_%s_%s_%s", kind, ty, sem, scope);
    // The same ops in the same order as the text route writes them.
    MlirValue v = lane_of(ctx, op, mlirOperationGetOperand(op, 0));
    MlirValue o = lane_of(ctx, op, mlirOperationGetOperand(op, 2));
    MlirValue mk = lane_of(ctx, op, mlirOperationGetOperand(op, 3));
    MlirValue c = mlirValueIsNull(site->cmp) ? site->cmp : lane_of(ctx, op, site->cmp);
    MlirValue oi = build_before(op, "arith.index_cast", 1, &o, &i64, 0, NULL);
    MlirNamedAttribute sz = nattr(ctx, "value", mlirIntegerAttrGet(i64, elem_bytes(ty)));
    MlirValue szv = build_before(op, "arith.constant", 0, NULL, &i64, 1, &sz);
    MlirValue mul[2] = {oi, szv};
    MlirValue ob = build_before(op, "arith.muli", 2, mul, &i64, 0, NULL);
    MlirValue add[2] = {mlirOperationGetOperand(op, 1), ob};
    MlirValue a = build_before(op, "arith.addi", 2, add, &i64, 0, NULL);
    MlirValue args[4];
    int na = 0;
    args[na++] = a;
    if (!mlirValueIsNull(c)) args[na++] = c;
    args[na++] = v;
    args[na++] = mk;
    int32_t seg[2] = {na, 0};
    MlirNamedAttribute call_attrs[3] = {
        nattr(ctx, "callee",
              mlirFlatSymbolRefAttrGet(ctx, mlirStringRefCreateFromCString(hname))),
        nattr(ctx, "operandSegmentSizes", mlirDenseI32ArrayGet(ctx, 2, seg)),
        nattr(ctx, "op_bundle_sizes", mlirDenseI32ArrayGet(ctx, 0, NULL))};
    site->result = build_before(op, "llvm.call", na, args, &et, 3, call_attrs);
    mlirOperationDestroy(op);
  }
  free(sites);
  free(w.ops);
  if (!s) *out_done = true;
  return s;
}
