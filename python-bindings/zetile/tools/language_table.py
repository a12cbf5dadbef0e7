"""docs/LANGUAGE.md: every public name of triton.language, and whether
zetile.language has it (tests/conformance/test_language_table.py checks that
the file matches this generator, so it cannot drift).

    python -m zetile.tools.language_table            print the table
    python -m zetile.tools.language_table --names    print triton.language's names (needs triton)
"""
from __future__ import annotations

import os
import sys
import types

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
NAMES_FILE = os.path.join(ROOT, "tests", "conformance", "triton_language_names.txt")

# Supported, but not exactly as Triton does it: what differs.
DIFFERENCES = {
    "dot": "fp32 inputs are multiplied exactly on the CPU target whatever input_precision says, "
           "as bf16 pieces on pvc/bmg/dg2 (3 DPAS per product for tf32, 6 for ieee/tf32x3); "
           "int8 → int32 on the CPU target and dg2, and on pvc/bmg when the operands come through "
           "tensor descriptors, block pointers or pointer tensors proven contiguous; uint8 operands "
           "are read as unsigned (one signedness per kernel on pvc/bmg); bf16x3/bf16x6 are "
           "computed as ieee; an fp16 result (`out_dtype=tl.float16`, an fp16 accumulator) is "
           "accumulated in fp32 and rounded to fp16 once per dot on pvc/bmg/dg2 (DPAS accumulates "
           "in fp32; lowering/common/dot_widen.c), in fp16 on the CPU target as Triton's "
           "interpreter; 3-D (batched) operands on the CPU target, and on pvc/bmg/dg2 with a "
           "constexpr batch of up to 16 in straight-line code, `for` loops and `if` branches (one "
           "2-D dot per batch slice, lowering/common/batch_unroll.c; reductions and scans along "
           "a slice's axes too, a reduction's result used as `m[:, :, None]`; 3-D values in while "
           "loops, reduced along the batch, stored as (B, X) or reshaped stay refused there)",
    "load": "cache_modifier / eviction_policy / volatile accepted and ignored",
    **{f"float8{v}": "emulated: held as bytes, computed in fp32 (conversions RTNE or rtz, "
                     "bit-equal to torch's in range, saturating out of range as Triton); fp8 dots are fp16 products with fp32 accumulation; "
                     "Xe builds the conversions, its dot refuses converted operands"
       for v in ("e4b15", "e4b8", "e4nv", "e5", "e5b16")},
    "dot_scaled": "by upcasting: operands decoded to fp32, scaled, rounded to bf16 (fp16 when "
                  "either is fp16), then tl.dot; fast_math is accepted and ignored; 2-D operands; "
                  "CPU target only (Xe's dot refuses converted operands)",
    "store": "cache_modifier / eviction_policy accepted and ignored",
    "device_assert": "compiled in only for debug kernels (@jit(debug=True), ZETILE_DEBUG=assert or "
                     "TRITON_DEBUG=1), as in Triton",
    "device_print": "one line per element and value (program id, index, prefix, value)",
    "range": "num_stages, loop_unroll_factor and the other scheduling hints are accepted and ignored",
    "multiple_of": "used by the Xe lowering's address analysis (pointer tensors -> 2D block IO); "
                   "the CPU target ignores it",
    "max_contiguous": "used by the Xe lowering's address analysis (pointer tensors -> 2D block IO); "
                      "the CPU target ignores it",
    "max_constancy": "used by the Xe lowering's address analysis; the CPU target ignores it",
    "fdiv": "ieee_rounding accepted; the division is IEEE on the CPU target",
    "div_rn": "as fdiv",
    "sqrt_rn": "as sqrt",
    "math.sqrt_rn": "as sqrt",
    "math.div_rn": "as fdiv",
    "argmax": "tie_break_left=False picks an unspecified index among equal maxima (as Triton)",
    "argmin": "tie_break_left=False picks an unspecified index among equal minima (as Triton)",
    "atomic_add": "sem / scope accepted; the CPU target uses sequentially consistent atomics; "
                  "on Xe: i32/i64/f32 on scalars and 1-D tensors, f32 add/max/min as "
                  "compare-and-swap loops",
    "make_block_ptr": "order accepted and not needed (strides define the layout)",
    "sort": "minor dimension only (as Triton); built from broadcasts and a pick reduction: "
            "O(n^2) work along the dimension",
    "topk": "as sort",
    "gather": "O(n^2) work along the axis (broadcast compare + pick reduction)",
    "flip": "as gather",
    "histogram": "O(n * num_bins) compare-and-sum",
    "cat": "always in order (can_reorder is accepted)",
}


def public_names(mod):
    """Names a module defines for users: not private, not modules, and
    defined by Triton itself (typing/functools helpers it imports are not)."""
    out = []
    for n in dir(mod):
        if n.startswith("_"):
            continue
        o = getattr(mod, n)
        if isinstance(o, types.ModuleType):
            continue
        where = getattr(o, "__module__", None) or getattr(type(o), "__module__", "")
        if isinstance(o, int) or str(where).startswith("triton"):
            out.append(n)
    return sorted(out)


def triton_names():
    with open(NAMES_FILE) as f:
        return [l.strip() for l in f if l.strip() and not l.startswith("#")]


def _zetile_has(name):
    import zetile.language as zl
    obj = zl
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return False
    return True


def table():
    rows = []
    counts = {"supported": 0, "differs": 0, "missing": 0}
    for name in triton_names():
        if not _zetile_has(name):
            status, note = "not yet", ""
            counts["missing"] += 1
        elif name in DIFFERENCES:
            status, note = "supported, with differences", DIFFERENCES[name]
            counts["differs"] += 1
        else:
            status, note = "supported", ""
            counts["supported"] += 1
        rows.append(f"| `{name}` | {status} | {note} |")
    head = [
        "# zetile.language against triton.language",
        "",
        "Generated by `python -m zetile.tools.language_table` from the public names of",
        "`triton.language` (Triton 3.9.0, `tests/conformance/triton_language_names.txt`);",
        "`tests/conformance/test_language_table.py` fails when this file is stale.",
        "Semantics are checked against Triton's interpreter by `tests/conformance`.",
        "",
        f"{counts['supported']} supported, {counts['differs']} supported with differences, "
        f"{counts['missing']} not yet.",
        "",
        "| name | status | differences |",
        "|---|---|---|",
    ]
    from ..language.extra import libdevice, libdevice_doc
    return "\n".join(head + rows) + "\n" + libdevice_doc.section(lambda n: n in vars(libdevice))


def main(argv):
    if "--names" in argv:
        import triton.language as tl
        import triton.language.math as tm
        print("\n".join(public_names(tl) + ["math." + n for n in public_names(tm)]))
        return 0
    sys.stdout.write(table())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
