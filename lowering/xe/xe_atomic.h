// One atomic as an LLVM-dialect function, shared by the Xe lowering
// (xe_atomic.c, after subgroup distribution) and the dg2 lowering
// (dg2_atomic.c), so that both give an atomic the same meaning: f32
// add/max/min as compare-and-swap loops on the bits (LLVM's SPIR-V backend
// has no float atomicrmw without extensions), max/min skipping NaN.
#ifndef ZETILE_LOWERING_XE_XE_ATOMIC_H_
#define ZETILE_LOWERING_XE_XE_ATOMIC_H_

#include <stdbool.h>

#include "lowering.h"

/// Appends `llvm.func internal @name(%a: i64, [%c: T,] %v: T, %m: i1) -> T`
/// to sb: the old value at address a after the atomic `kind` (add, max,
/// min, umax, umin, and, or, xor, xchg, cas) with operand v (cas: compare
/// c, new v) under mask m (masked off: no access, returns zero). ty: i32,
/// i64 or f32; sem: relaxed/acquire/release/acq_rel; scope: cta/gpu/sys.
zt_status_t xe_atomic_helper(zt_strbuf_t* sb, const char* name, const char* kind,
                             const char* ty, const char* sem, const char* scope,
                             bool always_inline);

/// A tile.atomic_rmw / tile.atomic_cas op's kind ("cas" for the latter),
/// sem and scope, with the tile dialect's defaults (add, acq_rel, gpu) where
/// an attribute is absent; each written into 16 chars.
void xe_atomic_attrs(MlirOperation op, char kind[16], char sem[16], char scope[16]);

/// xe_lower_atomics' rewrite (xe_internal.h) in place, through the C API,
/// for modules zetile's own lane distribution made: the marked scatters and
/// gathers become per-lane helper calls where they stand, without printing
/// and parsing the module. *out_done false (module untouched) when a marked
/// op is in another form, for xe_lower_atomics to take.
zt_status_t xe_atomics_in_place(MlirContext ctx, MlirModule m, bool* out_done);

#endif  // ZETILE_LOWERING_XE_XE_ATOMIC_H_
