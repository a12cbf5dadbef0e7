"""Tiles held in copies on Xe, stored, atomically added and reduced (issue 12).

A dot with fewer 8x16 output blocks than subgroups (a 16x16 dot beside a
16x64 one at 4 warps, the 64x16 S^T of the attention backward at 16) runs on
a grid whose extra subgroups hold copies: its result like an A operand (the
same in every subgroup of a grid row) and its B operand whole in every
subgroup (xe_val_t.col_rep). Such copies used to be read by dots and
elementwise ops only (a store, atomic or reduction was refused by name).
Now a store or atomic issues from one copy (copies_once, xe_matrix.c: a
mask on the subgroup's grid row and column), and a built-in reduction
combines one slot per different part (parts_of, xe_reduce.c), so nothing
is written, added or summed twice. Scans and user-combiner reductions of
copies stay refused by name.

Evidence: E1 (spirv-val, pvc and bmg), E2 (ocloc + iga64 for pvc: no
spills), E5 (the pvc SPIR-V on Intel's OpenCL CPU runtime: every output
exactly numpy's, integer-valued inputs; an atomic counted twice would show
as 1 + 2x). Also a dot's B operand on a 2x2 grid (copies down the grid's
rows only) stored and reduced."""
import os
import re
import sys

import numpy as np
import pytest

import zetile
from zt_testutil import (SLOW_TESTS, have_tool, isa_no_spill, opencl_cpu_or_skip, run_result,
                          spirv_val, unalias_types)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import xe_copies_kernels as X  # noqa: E402

OUTS = "W SC AC CS CM SD AD DS0 DS1 DM0 DM1".split()
SIG = {**{n: "*fp32" for n in OUTS}, "A": "*fp16", "B": "*fp16", "C": "*fp16", "SC": "*fp16"}
# (rows M, K, num_warps, grid rows): 16 rows over a 2x2 grid (the Mx16
# result two copies, c four); the attention backward's shape, 64 rows over
# 8x2 (c sixteen copies).
SHAPES = [(16, 32, 4, 2), (64, 64, 16, 8)]


def _compile(target, shape, **kw):
    m, k, nw, _ = shape
    return zetile.compile(X.copies_read_kernel, signature=SIG, constexprs={"M": m, "K": k},
                          target=target, num_warps=nw, cached=False, **kw)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"m{s[0]}w{s[2]}")
@pytest.mark.parametrize("target", ["pvc", "bmg"])
def test_builds(target, shape):
    ck = _compile(target, shape)
    mlir = ck.asm["mlir"]
    # One marked atomic per row a subgroup holds, under the one-copy mask:
    # all K rows of c, M / (grid rows) of d.
    m, k, _, sm = shape
    assert mlir.count("zt.atomic =") == k + m // sm, mlir.count("zt.atomic =")
    if have_tool("spirv-val"):
        spirv_val(ck.asm["spirv"])


B_SIG = {"A": "*fp16", "C": "*fp16", "O": "*fp32", "SC": "*fp16", "S0": "*fp32", "S1": "*fp32"}


@pytest.mark.parametrize("target", ["pvc", "bmg"])
def test_b_operand_builds(target):
    # A dot's B operand stored and reduced (was "2-D store of this value" /
    # "reduction of this 2-D value"): grid row 0 stores its 32 columns.
    ck = zetile.compile(X.b_operand_read_kernel, signature=B_SIG, constexprs={"N": 32},
                        target=target, num_warps=4, cached=False)
    # 2x2 grid: each subgroup's 32 rows x 16 columns of c, 32 row scatters.
    assert len(re.findall(r"xegpu\.store [^\n]*vector<16xf16>",
                          unalias_types(ck.asm["mlir"]))) == 32
    if have_tool("spirv-val"):
        spirv_val(ck.asm["spirv"])


def test_e2_pvc():
    ck = _compile("pvc", SHAPES[0], compat=True)
    r = isa_no_spill(ck.asm["spirv"], "-ze-opt-large-register-file", "copies read, pvc compat")
    assert r["dpas"] > 0, r


def run(m=16, k=32, nw=4):
    """Max abs error of each output against numpy (inputs small integers:
    every result is exact in fp32)."""
    rng = np.random.default_rng(1)
    a = rng.integers(-2, 3, (m, k)).astype(np.float16)
    b = rng.integers(-2, 3, (k, 64)).astype(np.float16)
    c = rng.integers(-2, 3, (k, 16)).astype(np.float16)
    f = lambda x: x.astype(np.float32)  # noqa: E731
    d = f(a) @ f(c)
    ref = {"W": (f(a) @ f(b)).max(1), "SC": c, "AC": 1 + f(c), "CS": f(c).sum(0),
           "CM": f(c).max(1), "SD": d, "AD": 1 + d, "DS0": d.sum(0), "DS1": d.sum(1),
           "DM0": d.max(0), "DM1": d.max(1)}
    out = {n: (np.ones_like(f(r)) if n in ("AC", "AD") else np.zeros_like(r))
           for n, r in ref.items()}
    X.copies_read_kernel[(1,)](a, b, c, *[out[n] for n in OUTS], M=m, K=k, num_warps=nw)
    zetile.get_device().synchronize()
    return {n: float(np.abs(f(out[n]) - f(ref[n])).max()) for n in OUTS}


def run_b_operand():
    """Max abs errors of b_operand_read_kernel's outputs against numpy."""
    rng = np.random.default_rng(2)
    a = rng.integers(-2, 3, (32, 32)).astype(np.float16)
    c = rng.integers(-2, 3, (32, 32)).astype(np.float16)
    f = lambda x: x.astype(np.float32)  # noqa: E731
    ref = {"O": f(a) @ f(c), "SC": c, "S0": f(c).sum(0), "S1": f(c).max(1)}
    out = {n: np.zeros_like(r) for n, r in ref.items()}
    X.b_operand_read_kernel[(1,)](a, c, out["O"], out["SC"], out["S0"], out["S1"], N=32,
                                  num_warps=4)
    zetile.get_device().synchronize()
    return {"b_" + n: float(np.abs(f(out[n]) - f(ref[n])).max()) for n in ref}


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"m{s[0]}w{s[2]}")
def test_e5_opencl_cpu(shape):
    if shape != SHAPES[0] and not SLOW_TESTS:
        pytest.skip("the 16-warp build takes ~2 min on the OpenCL CPU runtime: "
                    "ZETILE_SLOW_TESTS=1")
    opencl_cpu_or_skip()
    m, k, nw, _ = shape
    extra = " | run_b_operand()" if shape == SHAPES[0] else ""
    errs = run_result(f"""
        import json, zetile
        from test_xe_copies_read import run, run_b_operand
        assert zetile.get_device().info["name"] == "opencl:cpu"
        print("RESULT " + json.dumps(run({m}, {k}, {nw}){extra}))
    """, path=HERE, timeout=1200)
    assert all(v == 0.0 for v in errs.values()), errs


def test_scan_of_copies_refused():
    sig = {"A": "*fp16", "B": "*fp16", "C": "*fp16", "W": "*fp32", "O": "*fp32"}
    with pytest.raises(zetile.UnsupportedError) as ex:
        zetile.compile(X.copies_scanned_kernel, signature=sig, constexprs={"M": 16, "K": 32},
                       target="pvc", num_warps=4, cached=False)
    msg = str(ex.value)
    assert "holds a copy" in msg and "tile.scan" in msg, msg
