"""zetile against Triton's own interpreter, kernel by kernel.

Every kernel of kernels.py runs twice on the same random inputs: through
Triton's interpreter (TRITON_INTERPRET=1, triton from PyPI) and through
zetile on the CPU target, loaded from the same file with only its two import
lines changed. Integers must match exactly, floats to a tolerance; a program
both reject (e.g. `//` between int8 and uint8) counts as agreement.
Without triton installed, every case is skipped, loudly.
"""
import os

import numpy as np
import pytest

import zetile

from conformance_support import (ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, Case, load_kernels,
                                 run_case, xe_check, xe_selected)

triton_mod = load_kernels("triton")
zetile_mod = load_kernels("zetile")

N = 203  # not a multiple of any block
BLOCK = 64

BINARY_OPS = ["add", "sub", "mul", "truediv", "floordiv", "mod", "and", "or", "xor", "lt", "le",
              "gt", "ge", "eq", "ne", "maximum", "minimum", "shl", "shr"]
MIXED_PAIRS = [("int8", "int32"), ("int16", "uint8"), ("int8", "uint8"), ("uint32", "int32"),
               ("int32", "int64"), ("int8", "float16"), ("int32", "float32"), ("float16", "float32"),
               ("bfloat16", "float16"), ("bfloat16", "float32"), ("float32", "float64"),
               ("uint8", "float16")]


def _binary_cases():
    for op in BINARY_OPS:
        for dt in ALL_DTYPES:
            yield Case("binary", f"{op}-{dt}", "binary_op", ["X", "Y"], [dt, dt], op=op,
                       scalars={"N": N}, constexprs={"OP": op, "BLOCK": BLOCK},
                       grid=(-(-N // BLOCK),), out_dtype=None)
        for a, b in MIXED_PAIRS:
            yield Case("promotion", f"{op}-{a}-{b}", "binary_op", ["X", "Y"], [a, b], op=op,
                       scalars={"N": N}, constexprs={"OP": op, "BLOCK": BLOCK},
                       grid=(-(-N // BLOCK),), out_dtype=None)
    # xor / == / != of two compares: boolean operands
    for op in ["mask_xor", "mask_eq", "mask_ne"]:
        for dt in ["int32", "float32"]:
            yield Case("binary", f"{op}-{dt}", "binary_op", ["X", "Y"], [dt, dt], op=op,
                       scalars={"N": N}, constexprs={"OP": op, "BLOCK": BLOCK},
                       grid=(-(-N // BLOCK),), out_dtype=None)


def _scalar_cases():
    for op in ["add_lit", "mul_flit", "sub_scalar", "rsub_lit", "div_lit", "neg"]:
        for dt in ["int8", "int32", "int64", "uint8", "float16", "bfloat16", "float32", "float64"]:
            yield Case("scalar", f"{op}-{dt}", "scalar_op", ["X"], [dt], op=op,
                       scalars={"N": N, "S": 5}, constexprs={"OP": op, "BLOCK": BLOCK},
                       grid=(-(-N // BLOCK),), out_dtype=None)


def _unary_cases():
    for op in ["exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "abs", "floor", "ceil",
               "sigmoid", "erf", "fma", "where", "clamp"]:
        for dt in FLOAT_DTYPES:
            yield Case("math", f"{op}-{dt}", "unary_math", ["X"], [dt], op=op,
                       scalars={"N": N}, constexprs={"OP": op, "BLOCK": BLOCK},
                       grid=(-(-N // BLOCK),), out_dtype=None)


def _cast_cases():
    for src in ALL_DTYPES:
        for dst in ALL_DTYPES:
            if src != dst:
                yield Case("cast", f"{src}-to-{dst}", "cast_kernel", ["X"], [src], op="cast",
                           scalars={"N": N}, constexprs={"BLOCK": BLOCK},
                           grid=(-(-N // BLOCK),), out_dtype=dst)
    for src, dst in [("float32", "int32"), ("int32", "float32"), ("float16", "int16"),
                     ("int16", "bfloat16"), ("float64", "int64"), ("uint32", "float32")]:
        yield Case("bitcast", f"{src}-to-{dst}", "bitcast_kernel", ["X"], [src], op="bitcast",
                   scalars={"N": N}, constexprs={"BLOCK": BLOCK},
                   grid=(-(-N // BLOCK),), out_dtype=dst)


def _reduce_cases():
    for op in ["sum", "max", "min", "xor_sum"]:
        for dt in (["int8", "int32", "int64", "uint8", "float16", "float32", "bfloat16"]
                   if op != "xor_sum" else ["int8", "int32", "uint32", "int64"]):
            for axis in (0, 1):
                for keep in (False, True):
                    yield Case("reduce", f"{op}-{dt}-axis{axis}{'-keep' if keep else ''}",
                               "reduce_2d", ["X"], [dt], op=op, scalars={},
                               constexprs={"M": 8, "N": 32, "AXIS": axis, "OP": op, "KEEP": keep},
                               grid=(1,), out_dtype=None, in_sizes=[8 * 32],
                               out_size=32 if axis == 0 else 8)
        if op != "xor_sum":
            for dt in ["int32", "float32", "float16"]:
                yield Case("reduce", f"{op}-{dt}-all", "reduce_all", ["X"], [dt], op=op,
                           scalars={"N": 100}, constexprs={"OP": op, "BLOCK": 128}, grid=(1,),
                           out_dtype=None, in_sizes=[128], out_size=1)


def _shape_cases():
    for op in ["trans", "permute", "reshape", "ravel", "broadcast_to", "expand_dims", "hints"]:
        for dt in ["int32", "float32", "float16"]:
            yield Case("shape", f"{op}-{dt}", "shapes_kernel", ["X"], [dt], op=op, scalars={},
                       constexprs={"M": 8, "N": 16, "OP": op}, grid=(1,), out_dtype=dt,
                       in_sizes=[128], out_size=128)
    for op in ["zeros", "full", "zeros_like", "arange"]:
        for dt in ["int32", "float32", "float16", "int8"]:
            yield Case("creation", f"{op}-{dt}", "creation_kernel", [], [], op=op,
                       scalars={"N": 50}, constexprs={"OP": op, "BLOCK": 64}, grid=(1,),
                       out_dtype=dt, out_size=64)


def _control_cases():
    for mode in ["for", "for_step", "while", "if", "if_elif", "nested", "static_range"]:
        for dt in ["int32", "float32"]:
            yield Case("control", f"{mode}-{dt}", "control_flow", ["X"], [dt], op=mode,
                       scalars={"N": 7}, constexprs={"MODE": mode}, grid=(16,), out_dtype=dt,
                       in_sizes=[16], out_size=16)
    for dt in ["int32", "float32", "float16"]:
        yield Case("control", f"calls-{dt}", "calls_kernel", ["X"], [dt], op="calls",
                   scalars={"N": 50}, constexprs={"BLOCK": 64}, grid=(1,), out_dtype=None,
                   in_sizes=[64], out_size=64)
    yield Case("control", "grid3d", "grid3d_kernel", [], [], op="grid", scalars={}, constexprs={},
               grid=(3, 4, 5), out_dtype="int32", out_size=60)


def _index_reduce_cases():
    for op in ["argmax", "argmin", "argmax_fast", "max_idx", "user_max", "user_pair"]:
        for dt in ["int32", "float32", "int8", "float16"]:
            for axis in (0, 1):
                yield Case("argreduce", f"{op}-{dt}-axis{axis}", "index_reduce_kernel", ["X"], [dt],
                           op=op, scalars={}, constexprs={"M": 8, "N": 16, "AXIS": axis, "OP": op},
                           grid=(1,), out_dtype="int32" if op != "user_max" else dt,
                           in_sizes=[128], out_size=16 if axis == 0 else 8)


def _random_cases():
    for op, dt in [("randint", "int32"), ("rand", "float32"), ("randn", "float32"),
                   ("randint4x", "int32")]:
        for seed in (0, 1234, 2**31 + 5):
            yield Case("random", f"{op}-seed{seed}", "random_kernel", [], [], op=op,
                       scalars={"N": N, "seed": seed}, constexprs={"OP": op, "BLOCK": BLOCK},
                       grid=(-(-N // BLOCK),), out_dtype=dt, out_size=N)


def _scan_atomic_block_cases():
    for op in ["cumsum", "cumprod", "user_scan", "fill_scan", "pair_scan"]:
        for dt in ["int32", "float32"]:
            for axis in (0, 1):
                for rev in (False, True):
                    yield Case("scan", f"{op}-{dt}-axis{axis}{'-rev' if rev else ''}", "scan_kernel",
                               ["X"], [dt], op=op, scalars={},
                               constexprs={"M": 4, "N": 16, "AXIS": axis, "OP": op, "REVERSE": rev},
                               grid=(1,), out_dtype=dt, in_sizes=[64], out_size=64)
    for op in ["add", "max", "min", "or", "xor", "and"]:
        for dt in ["int32", "uint32", "int64"] + (["float32"] if op in ("add", "max", "min") else []):
            yield Case("atomic", f"{op}-{dt}", "atomic_kernel", ["X"], [dt], op="atomic_" + op,
                       scalars={"N": N}, constexprs={"OP": op, "BLOCK": BLOCK},
                       grid=(-(-N // BLOCK),), out_dtype=dt, out_size=8)
    # Rows of 48 elements: Triton requires 16-byte aligned descriptor strides (so do
    # Intel's 2D block loads). Triton 3.9 removed block pointers: those cases
    # are checked against numpy instead (see conformance_support.REFERENCES).
    for kern in ["block_ptr_copy", "descriptor_copy"]:
        for dt in ["float32", "int32", "float16"]:
            yield Case("block", f"{kern}-{dt}", kern, ["X"], [dt], op="copy",
                       scalars={"M": 37, "N": 48}, constexprs={"BM": 16, "BN": 16},
                       grid=(3, 3), out_dtype=dt, in_sizes=[37 * 48], out_size=37 * 48)


def _compose_cases():
    for op in ["join_split", "interleave", "swizzle", "softmax", "add_sub_mul", "squeeze"]:
        for dt in ["int32", "float32"]:
            yield Case("shape", f"{op}-{dt}", "compose_kernel", ["X", "Y"], [dt, dt], op=op,
                       scalars={}, constexprs={"N": 32, "OP": op}, grid=(1,), out_dtype=dt,
                       in_sizes=[32, 32], out_size=32)


def _permute_cases():
    for op in ["flip", "sort", "sort_desc", "gather", "cat", "histogram"]:
        for dt in ["int32", "float32"]:
            if op == "histogram" and dt != "int32":
                continue
            yield Case("permute", f"{op}-{dt}", "permute_kernel", ["X"], [dt], op=op, scalars={},
                       constexprs={"N": 32, "OP": op}, grid=(1,),
                       out_dtype="int32" if op == "histogram" else dt, in_sizes=[32], out_size=32)


def _dot_cases():
    # tl.dot's result type and precision against the interpreter: fp64 sums
    # in fp64 (a fp32 accumulator was a silent 1e-6 error), fp32 and bf16 in
    # fp32 whatever out_dtype says, fp16 in out_dtype, int8 in int32. The
    # tolerance grows with K (conformance_support._tolerance); fp32 at
    # "ieee" only: the interpreter ignores tf32.
    for dt, ops, precs in [("float64", ["default", "out_f16", "scaled"], ["ieee"]),
                           ("float32", ["default", "out_f16", "acc_f32"], ["ieee"]),
                           ("float16", ["default", "out_f16", "acc_f32"], ["ieee"]),
                           ("int8", ["default", "scaled"], ["ieee"])]:
        for op in ops:
            for prec in precs:
                for b in (1, 2):
                    m, n, k = 16, 32, 32
                    yield Case("dot", f"{op}-{dt}-b{b}", "dot_kernel", ["X", "Y"], [dt, dt],
                               op=op, scalars={},
                               constexprs={"B": b, "M": m, "N": n, "K": k, "OP": op, "PREC": prec},
                               grid=(1,), out_dtype=None, in_sizes=[b * m * k, b * k * n],
                               out_size=b * m * n)


CASES = [*_dot_cases(), *_permute_cases(), *_compose_cases(), *_binary_cases(), *_scalar_cases(), *_unary_cases(), *_cast_cases(), *_reduce_cases(),
         *_shape_cases(), *_control_cases(), *_index_reduce_cases(), *_random_cases(),
         *_scan_atomic_block_cases()]


# Known Xe lowering bugs, each a strict expectation: when one gets fixed its case
# fails until it is removed from here.
_WHILE_SCALAR_LOAD = ("upstream xegpu-subgroup-distribute leaves the uniform gather of a scalar "
                      "load inside scf.while undistributed (failed to legalize 'xegpu.load')")
# zetile's own lane distribution (lowering/xe/xe_distribute.c, the default)
# distributes that gather; these fail only when upstream's pass is forced.
XE_KNOWN_FAILURES = {
    "control/while-float32": _WHILE_SCALAR_LOAD,
    "control/while-int32": _WHILE_SCALAR_LOAD,
} if os.environ.get("ZETILE_XE_DISTRIBUTE") == "upstream" else {}


@pytest.mark.parametrize("case", CASES, ids=[f"{c.category}-{c.name}" for c in CASES])
def test_conformance(case, conformance_results):
    if triton_mod is None:
        conformance_results.record(case.category, "skipped")
        pytest.skip("triton is not installed: the conformance oracle is missing (pip install triton)")
    outcome, detail = run_case(case, triton_mod, zetile_mod)
    conformance_results.record(case.category, outcome)
    if outcome == "oracle-skip":
        # No oracle for the numbers, but the Xe build (E1) needs none (unless
        # zetile's front end rejects the program, as Triton would).
        if xe_selected(case):
            try:
                xe_outcome, xe_detail = xe_check(case, zetile_mod)
            except zetile.CompilationError:
                xe_outcome = None
            if xe_outcome:
                conformance_results.record("xe:" + case.category, xe_outcome)
                assert xe_outcome != "xe-failed", xe_detail
        pytest.skip(detail)
    assert outcome == "passed", detail
    if xe_selected(case) and detail != "both reject the program":
        xe_outcome, xe_detail = xe_check(case, zetile_mod)
        known = XE_KNOWN_FAILURES.get(f"{case.category}/{case.name}")
        conformance_results.record("xe:" + case.category,
                                   "xe-known" if known and xe_outcome == "xe-failed" else xe_outcome)
        if known:
            assert xe_outcome == "xe-failed", f"fixed? remove it from XE_KNOWN_FAILURES: {known}"
            pytest.xfail(known)
        assert xe_outcome != "xe-failed", xe_detail


# Built for pvc at num_warps=1: 4 elements a lane, so the lane packing
# applies (at the compiler's choice of subgroups these kernels have one
# element a lane). Boolean xor / != of packed compares made Debian's IGC
# abort while spirv-val accepted them (fixed in 9015029). Every case so:
# ZETILE_CONFORMANCE_XE_WARPS=1 (tests/conformance/README.md).
XE_PACKED_SAMPLE = ["binary/mask_xor-float32", "binary/mask_ne-int32", "binary/add-float16",
                    "math/exp-float32", "reduce/sum-float32-axis1", "cast/float32-to-int8"]
_CASES_BY_NAME = {f"{c.category}/{c.name}": c for c in CASES}


@pytest.mark.parametrize("name", XE_PACKED_SAMPLE)
def test_xe_packed_sample(name):
    outcome, detail = xe_check(_CASES_BY_NAME[name], zetile_mod, num_warps=1)
    assert outcome == "xe-ok", detail
