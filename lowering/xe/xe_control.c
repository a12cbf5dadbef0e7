// scf.for / scf.if / scf.while in the Xe lowering. Every carried tile value
// becomes its flat list of SSA values (chunks; base + offsets for pointer
// tensors), and every vector result carries its layout attribute.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>

#include "xe/xe_internal.h"

static const char* loc(xe_emitter_t* e) { return e->loc.data ? e->loc.data : ""; }

// A flattened list of values: names, types, which are vectors.
typedef struct flat_s {
  zt_strbuf_t names, types;
  int count;
  int cap;
  bool* is_vec;
  const char** attr;  ///< layout attribute of each vector entry
} flat_t;

static void flat_init(flat_t* f) {
  memset(f, 0, sizeof *f);
  zt_strbuf_init(&f->names);
  zt_strbuf_init(&f->types);
}

static void flat_deinit(flat_t* f) {
  zt_strbuf_deinit(&f->names);
  zt_strbuf_deinit(&f->types);
  free(f->is_vec);
  free(f->attr);
}

// Appends v's flat values; with_base false leaves out a pointer tensor's
// base (loops keep it invariant).
static bool flat_add2(flat_t* f, const xe_val_t* v, bool with_base) {
  int n = xe_flat_count(v);
  int first = (!with_base && v->layout == XE_LAYOUT_ROW16 && v->type.kind == ZT_PTR);
  if (f->count + n > f->cap) {
    int nc = (f->count + n) * 2;
    bool* nv = realloc(f->is_vec, (size_t)nc * sizeof *nv);
    if (!nv) return false;
    f->is_vec = nv;
    const char** na = realloc(f->attr, (size_t)nc * sizeof *na);
    if (!na) return false;
    f->attr = na;
    f->cap = nc;
  }
  for (int i = first; i < n; ++i) {
    const char* nm;
    if (f->count) {
      zt_strbuf_puts(&f->names, ", ");
      zt_strbuf_puts(&f->types, ", ");
    }
    xe_flat_entry(v, i, &nm, &f->types, &f->is_vec[f->count]);
    f->attr[f->count] = xe_layout_attr(v);
    zt_strbuf_puts(&f->names, nm);
    ++f->count;
  }
  return !f->names.failed && !f->types.failed;
}

static bool flat_add(flat_t* f, const xe_val_t* v) { return flat_add2(f, v, true); }

static const char* s_or_empty(const zt_strbuf_t* sb) { return sb->data ? sb->data : ""; }

static void layout_attrs(zt_strbuf_t* sb, const flat_t* f) {
  int n = 0;
  for (int i = 0; i < f->count; ++i) {
    if (!f->is_vec[i]) continue;
    zt_strbuf_printf(sb, "%slayout_result_%d = %s", n++ ? ", " : "{", i, f->attr[i]);
  }
  if (n) zt_strbuf_puts(sb, "}");
}

// Binds the results of a region op to names "<prefix>#<i>".
static zt_status_t bind_results(xe_emitter_t* e, MlirOperation op, const char* base) {
  char prefix[XE_NAME_MAX];
  snprintf(prefix, sizeof prefix, "%s#", base);
  int idx = 0;
  for (intptr_t j = 0; j < mlirOperationGetNumResults(op); ++j) {
    MlirValue res = mlirOperationGetResult(op, j);
    zt_type_t t;
    ZT_RETURN_IF_ERROR(xe_tile_type(e, mlirValueGetType(res), &t));
    xe_val_t* r = xe_alloc_for(e, res, t, XE_ROLE_C);
    if (!r) return NULL;
    xe_flat_assign(r, prefix, idx);
    idx += xe_flat_count(r);
    xe_bind(e, res, r);
  }
  return NULL;
}

// Binds block arguments [first, n) of `b` to names "<prefix><i>" and appends
// "name: type" pairs (for ^bb headers) when decl is given.
static zt_status_t bind_args(xe_emitter_t* e, MlirBlock b, intptr_t first,
                             const char* prefix, flat_t* out) {
  int idx = 0;
  for (intptr_t j = first; j < mlirBlockGetNumArguments(b); ++j) {
    MlirValue a = mlirBlockGetArgument(b, j);
    zt_type_t t;
    ZT_RETURN_IF_ERROR(xe_tile_type(e, mlirValueGetType(a), &t));
    xe_val_t* r = xe_alloc_for(e, a, t, XE_ROLE_C);
    if (!r) return NULL;
    xe_flat_assign(r, prefix, idx);
    idx += xe_flat_count(r);
    if (out && !flat_add(out, r)) {
      xe_free_val(r);
      return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
    }
    xe_bind(e, a, r);
  }
  return NULL;
}

static zt_status_t operands_flat(xe_emitter_t* e, MlirOperation op, intptr_t first,
                                 flat_t* f) {
  for (intptr_t i = first; i < mlirOperationGetNumOperands(op); ++i) {
    xe_val_t* v = xe_lookup(e, mlirOperationGetOperand(op, i));
    if (!v) return NULL;
    if (!flat_add(f, v)) return zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
  }
  return NULL;
}

zt_status_t xe_emit_terminator(xe_emitter_t* e, MlirOperation op) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  bool cond = n.length == 13 && memcmp(n.data, "scf.condition", 13) == 0;
  flat_t f;
  flat_init(&f);
  zt_status_t s = NULL;
  if (!cond && e->yield_skip) {
    for (intptr_t i = 0; i < mlirOperationGetNumOperands(op) && !s; ++i) {
      if (i >= e->yield_n || e->yield_skip[i]) continue;
      xe_val_t* v = xe_lookup(e, mlirOperationGetOperand(op, i));
      if (!v) break;
      xe_val_t* init = e->yield_init[i];
      if (v->layout == XE_LAYOUT_LAZY && !mlirValueEqual(v->root, init->root))
        s = xe_fail(e, ZT_STATUS_UNSUPPORTED,
                    "a 2-D pointer tensor carried by a loop must be advanced by a "
                    "uniform amount (p += scalar) on Xe");
      else if (v->layout == XE_LAYOUT_ROW16 && v->type.kind == ZT_PTR &&
          strcmp(v->base, init->base) != 0)
        s = xe_fail(e, ZT_STATUS_UNSUPPORTED,
                    "a pointer tensor carried by a loop must keep its base "
                    "pointer (advance it with tile.addptr)");
      else if (!flat_add2(&f, v, false))
        s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
    }
  } else {
    s = operands_flat(e, op, cond ? 1 : 0, &f);
  }
  if (!s && !e->error) {
    xe_line(e);
    if (cond) {
      xe_val_t* c = xe_lookup(e, mlirOperationGetOperand(op, 0));
      if (c) zt_strbuf_printf(&e->body, "scf.condition(%s)", c->names[0]);
    } else {
      zt_strbuf_puts(&e->body, "scf.yield");
    }
    if (f.count)
      zt_strbuf_printf(&e->body, " %s : %s", s_or_empty(&f.names), s_or_empty(&f.types));
    zt_strbuf_printf(&e->body, "%s\n", loc(e));
  }
  flat_deinit(&f);
  return s;
}

// Whether a yielded value is the iteration argument itself, also through
// `arg + 0` (block pointers advanced by (0, K) do that): the greedy folding
// inside xegpu-subgroup-distribute turns it into an unchanged yield, on
// which that pass crashes (22.1.8).
static bool yields_unchanged(MlirValue y, MlirValue arg) {
  if (mlirValueEqual(y, arg)) return true;
  if (!mlirValueIsAOpResult(y)) return false;
  MlirOperation op = mlirOpResultGetOwner(y);
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  bool add = n.length == 10 && memcmp(n.data, "arith.addi", 10) == 0;
  bool sub = n.length == 10 && memcmp(n.data, "arith.subi", 10) == 0;
  if (!add && !sub) return false;
  for (int i = 0; i < 2; ++i) {
    if (sub && i == 0) continue;
    MlirValue c = mlirOperationGetOperand(op, i);
    MlirValue x = mlirOperationGetOperand(op, 1 - i);
    if (!mlirValueEqual(x, arg) || !mlirValueIsAOpResult(c)) continue;
    MlirOperation co = mlirOpResultGetOwner(c);
    MlirStringRef cn = mlirIdentifierStr(mlirOperationGetName(co));
    if (cn.length != 14 || memcmp(cn.data, "arith.constant", 14) != 0) continue;
    MlirAttribute a =
        mlirOperationGetAttributeByName(co, mlirStringRefCreateFromCString("value"));
    if (!mlirAttributeIsNull(a) && mlirAttributeIsAInteger(a) &&
        mlirIntegerAttrGetValueInt(a) == 0)
      return true;
  }
  return false;
}

// scf.for. Two things are not carried, because xegpu-subgroup-distribute
// (22.1) crashes on loops that yield an iteration argument unchanged and
// used in the body: iteration arguments the body yields unchanged (bound to
// their initial values) and the base addresses of pointer tensors (only
// their offsets move).
zt_status_t xe_emit_for(xe_emitter_t* e, MlirOperation op) {
  xe_val_t* lb = xe_lookup(e, mlirOperationGetOperand(op, 0));
  xe_val_t* ub = xe_lookup(e, mlirOperationGetOperand(op, 1));
  xe_val_t* st = xe_lookup(e, mlirOperationGetOperand(op, 2));
  if (e->error) return NULL;
  int id = e->next_id++;
  char prefix[XE_NAME_MAX], rprefix[XE_NAME_MAX], iv[XE_NAME_MAX], args[XE_NAME_MAX];
  snprintf(prefix, sizeof prefix, "%%f%d", id);
  snprintf(rprefix, sizeof rprefix, "%%f%d#", id);
  snprintf(iv, sizeof iv, "%%f%d_iv", id);
  snprintf(args, sizeof args, "%%f%d_a", id);
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
  MlirOperation term = mlirBlockGetTerminator(body);
  int n = (int)mlirOperationGetNumOperands(op) - 3;
  bool* skip = calloc((size_t)(n > 0 ? n : 1), sizeof *skip);
  xe_val_t** inits = calloc((size_t)(n > 0 ? n : 1), sizeof *inits);
  flat_t init;
  flat_init(&init);
  zt_status_t s = NULL;
  if (!skip || !inits) s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
  for (int j = 0; j < n && !s; ++j) {
    inits[j] = xe_lookup(e, mlirOperationGetOperand(op, 3 + j));
    if (!inits[j]) break;
    skip[j] = yields_unchanged(mlirOperationGetOperand(term, j),
                               mlirBlockGetArgument(body, 1 + j));
    if (!skip[j] && !flat_add2(&init, inits[j], false))
      s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
  }
  // Block arguments and results: carried values get "<prefix><i>" names.
  int idx = 0;
  for (int j = 0; j < n && !s && !e->error; ++j) {
    MlirValue a = mlirBlockGetArgument(body, 1 + j);
    MlirValue res = mlirOperationGetResult(op, j);
    if (skip[j]) {
      xe_alias(e, a, inits[j]);
      xe_alias(e, res, inits[j]);
      continue;
    }
    xe_val_t* ra = xe_alloc_for(e, a, inits[j]->type, inits[j]->role);
    xe_val_t* rr = xe_alloc_for(e, res, inits[j]->type, inits[j]->role);
    if (!ra || !rr) {
      xe_free_val(ra);
      xe_free_val(rr);
      break;
    }
    ra->root = rr->root = inits[j]->root;
    bool ptr = ra->layout == XE_LAYOUT_ROW16 && ra->type.kind == ZT_PTR;
    xe_flat_assign(ra, args, idx - ptr);
    xe_flat_assign(rr, rprefix, idx - ptr);
    if (ptr) {
      memcpy(ra->base, inits[j]->base, sizeof ra->base);
      memcpy(rr->base, inits[j]->base, sizeof rr->base);
    }
    idx += xe_flat_count(ra) - ptr;
    xe_bind(e, a, ra);
    xe_bind(e, res, rr);
  }
  if (!s && !e->error) {
    xe_val_t* ivr = xe_alloc(e, lb->type);
    if (ivr) {
      snprintf(ivr->names[0], XE_NAME_MAX, "%s", iv);
      xe_bind(e, mlirBlockGetArgument(body, 0), ivr);
    }
  }
  if (!s && !e->error) {
    xe_line(e);
    if (init.count) zt_strbuf_printf(&e->body, "%s:%d = ", prefix, init.count);
    zt_strbuf_printf(&e->body, "scf.for %s = %s to %s step %s", iv, lb->names[0],
                     ub->names[0], st->names[0]);
    if (init.count) {
      zt_strbuf_puts(&e->body, " iter_args(");
      // "%f_a<i> = init<i>" pairs from the flat name list.
      const char* p = s_or_empty(&init.names);
      for (int i = 0; i < init.count; ++i) {
        const char* q = strstr(p, ", ");
        size_t l = q ? (size_t)(q - p) : strlen(p);
        zt_strbuf_printf(&e->body, "%s%s%d = %.*s", i ? ", " : "", args, i, (int)l, p);
        p = q ? q + 2 : p + l;
      }
      zt_strbuf_printf(&e->body, ") -> (%s)", s_or_empty(&init.types));
    }
    zt_strbuf_printf(&e->body, " : %s {\n", xe_elem(lb->type.kind));
    const bool* save_skip = e->yield_skip;
    xe_val_t** save_init = e->yield_init;
    int save_n = e->yield_n;
    e->yield_skip = skip;
    e->yield_init = inits;
    e->yield_n = n;
    ++e->indent;
    // Nested if/while bodies must not see this loop's filter.
    s = xe_emit_block(e, body);
    --e->indent;
    e->yield_skip = save_skip;
    e->yield_init = save_init;
    e->yield_n = save_n;
    if (!s) {
      xe_set_cur(e, op);
      xe_line(e);
      zt_strbuf_puts(&e->body, "} ");
      layout_attrs(&e->body, &init);
      zt_strbuf_printf(&e->body, "%s\n", loc(e));
    }
  }
  if (!s && e->error) {
    s = e->error;
    e->error = NULL;
  }
  flat_deinit(&init);
  free(skip);
  free(inits);
  return s;
}

zt_status_t xe_emit_if(xe_emitter_t* e, MlirOperation op) {
  xe_val_t* c = xe_lookup(e, mlirOperationGetOperand(op, 0));
  if (!c) return NULL;
  int id = e->next_id++;
  char prefix[XE_NAME_MAX];
  snprintf(prefix, sizeof prefix, "%%i%d", id);
  // Result layout: flatten records built from the result types.
  flat_t res;
  flat_init(&res);
  zt_status_t s = NULL;
  const bool* save_skip = NULL;
  for (intptr_t j = 0; j < mlirOperationGetNumResults(op) && !s; ++j) {
    zt_type_t t;
    s = xe_tile_type(e, mlirValueGetType(mlirOperationGetResult(op, j)), &t);
    if (s) break;
    xe_val_t* r = xe_alloc_for(e, mlirOperationGetResult(op, j), t, XE_ROLE_C);
    if (!r) break;
    if (!flat_add(&res, r)) s = zt_make_status(ZT_STATUS_OUT_OF_MEMORY, "xe lowering");
    xe_free_val(r);
  }
  if (!s && !e->error) {
    xe_line(e);
    if (res.count) zt_strbuf_printf(&e->body, "%s:%d = ", prefix, res.count);
    zt_strbuf_printf(&e->body, "scf.if %s", c->names[0]);
    if (res.count) zt_strbuf_printf(&e->body, " -> (%s)", s_or_empty(&res.types));
    zt_strbuf_puts(&e->body, " {\n");
    save_skip = e->yield_skip;
    e->yield_skip = NULL;
    ++e->indent;
    s = xe_emit_block(e, mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0)));
    --e->indent;
    MlirBlock eb = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 1));
    if (!s && !mlirBlockIsNull(eb)) {
      xe_line(e);
      zt_strbuf_puts(&e->body, "} else {\n");
      ++e->indent;
      s = xe_emit_block(e, eb);
      --e->indent;
    }
    e->yield_skip = save_skip;
    if (!s) {
      xe_set_cur(e, op);
      xe_line(e);
      zt_strbuf_puts(&e->body, "} ");
      layout_attrs(&e->body, &res);
      zt_strbuf_printf(&e->body, "%s\n", loc(e));
      s = bind_results(e, op, prefix);
    }
  }
  flat_deinit(&res);
  return s;
}

zt_status_t xe_emit_while(xe_emitter_t* e, MlirOperation op) {
  int id = e->next_id++;
  char prefix[XE_NAME_MAX], bpre[XE_NAME_MAX], apre[XE_NAME_MAX];
  snprintf(prefix, sizeof prefix, "%%w%d", id);
  snprintf(bpre, sizeof bpre, "%%w%d_b", id);
  snprintf(apre, sizeof apre, "%%w%d_c", id);
  flat_t init, bargs, aargs;
  flat_init(&init);
  flat_init(&bargs);
  flat_init(&aargs);
  MlirBlock before = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 0));
  MlirBlock after = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, 1));
  zt_status_t s = operands_flat(e, op, 0, &init);
  if (!s && !e->error) s = bind_args(e, before, 0, bpre, &bargs);
  if (!s && !e->error) s = bind_args(e, after, 0, apre, &aargs);
  // xegpu-subgroup-distribute (22.1) finds no layout for the block
  // arguments of scf.while regions: carry tensors through scf.for instead.
  // zetile's own distribution (xe_distribute.c, the default) gives them
  // their lane types like scf.for's; only a forced upstream one refuses.
  // The block arguments are allocated from their types alone (bind_args),
  // so a tensor is carried only where that gives the layout its initial
  // value has, and not lazy: else refused, as before.
  const char* dist = getenv("ZETILE_XE_DISTRIBUTE");
  bool upstream = dist && strcmp(dist, "upstream") == 0;
  intptr_t nb = mlirBlockGetNumArguments(before), na = mlirBlockGetNumArguments(after);
  bool kept = !upstream;
  for (intptr_t j = 0; kept && !s && j < nb; ++j) {
    const xe_val_t* init_j = xe_lookup(e, mlirOperationGetOperand(op, j));
    const xe_val_t* b = xe_lookup(e, mlirBlockGetArgument(before, j));
    const xe_val_t* a = j < na && na == nb ? xe_lookup(e, mlirBlockGetArgument(after, j)) : NULL;
    // Lazy values are re-evaluated from their defining ops, which a block
    // argument has none of (scf.for carries pointer tensors by their root).
    if (!init_j || !b || b->layout != init_j->layout || b->layout == XE_LAYOUT_LAZY ||
        xe_flat_count(b) != xe_flat_count(init_j) ||
        (na == nb && (!a || a->layout != b->layout || xe_flat_count(a) != xe_flat_count(b))))
      kept = false;
  }
  if (na != nb) kept = false;
  // (A lazy tile has no vector among its flat values: look at the types.)
  bool tensors = false;
  for (intptr_t j = 0; j < nb + na; ++j)
    tensors = tensors || mlirTypeIsAShaped(mlirValueGetType(
                             j < nb ? mlirBlockGetArgument(before, j)
                                    : mlirBlockGetArgument(after, j - nb)));
  if (!s && !kept && tensors)
    s = xe_fail(e, ZT_STATUS_UNSUPPORTED,
                "scf.while carrying tensors is not supported on Xe yet (scalars only)%s",
                upstream ? " with ZETILE_XE_DISTRIBUTE=upstream"
                         : ": a carried tile is held lazily (index arithmetic, or an integer "
                           "tile) or its layout changes across the loop");
  const bool* save_skip = e->yield_skip;
  e->yield_skip = NULL;
  if (!s && !e->error) {
    xe_line(e);
    if (aargs.count) zt_strbuf_printf(&e->body, "%s:%d = ", prefix, aargs.count);
    zt_strbuf_puts(&e->body, "scf.while (");
    const char* p = s_or_empty(&init.names);
    for (int i = 0; i < init.count; ++i) {
      const char* q = strstr(p, ", ");
      size_t l = q ? (size_t)(q - p) : strlen(p);
      zt_strbuf_printf(&e->body, "%s%s%d = %.*s", i ? ", " : "", bpre, i, (int)l, p);
      p = q ? q + 2 : p + l;
    }
    zt_strbuf_printf(&e->body, ") : (%s) -> (%s) {\n", s_or_empty(&init.types),
                     s_or_empty(&aargs.types));
    ++e->indent;
    s = xe_emit_block(e, before);
    --e->indent;
    if (!s) {
      xe_line(e);
      zt_strbuf_puts(&e->body, "} do {\n");
      if (aargs.count) {
        xe_line(e);
        zt_strbuf_puts(&e->body, "^bb0(");
        const char* t = s_or_empty(&aargs.types);
        for (int i = 0; i < aargs.count; ++i) {
          // Types may contain ", " only inside <...>: ours never do.
          const char* q = strstr(t, ", ");
          size_t l = q ? (size_t)(q - t) : strlen(t);
          zt_strbuf_printf(&e->body, "%s%s%d: %.*s", i ? ", " : "", apre, i, (int)l, t);
          t = q ? q + 2 : t + l;
        }
        zt_strbuf_puts(&e->body, "):\n");
      }
      ++e->indent;
      s = xe_emit_block(e, after);
      --e->indent;
    }
    if (!s) {
      xe_set_cur(e, op);
      xe_line(e);
      zt_strbuf_puts(&e->body, "}");
      zt_strbuf_t attrs;
      zt_strbuf_init(&attrs);
      layout_attrs(&attrs, &aargs);
      if (attrs.size) zt_strbuf_printf(&e->body, " attributes %s", attrs.data);
      zt_strbuf_deinit(&attrs);
      zt_strbuf_printf(&e->body, "%s\n", loc(e));
      s = bind_results(e, op, prefix);
    }
  }
  e->yield_skip = save_skip;
  flat_deinit(&init);
  flat_deinit(&bargs);
  flat_deinit(&aargs);
  return s;
}
