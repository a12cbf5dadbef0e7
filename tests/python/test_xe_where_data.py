"""`tl.where` whose condition is computed from 2-D data on Xe: tutorial 03's
leaky_relu epilogue (`tl.where(acc >= 0, acc, 0.01 * acc)` on a dot's
accumulator) and the same on a loaded tile. Xe evaluates 2-D masks row by
row; a data value met inside the mask is now read as its own row of the
block being built (lowering/xe/xe_matrix.c, lazy_at). Before, both were
refused ("a 2-D address or mask computed with scf.for / tile.load").

Evidence: E1 (spirv-val), E4 (CPU target against numpy), E5 (the pvc SPIR-V
on Intel's OpenCL CPU runtime)."""
import os

import numpy as np

import zetile
import zetile.language as tl
from zt_testutil import have_tool, opencl_cpu_or_skip, run_result, spirv_val

HERE = os.path.dirname(os.path.abspath(__file__))


@zetile.jit
def mm_leaky_relu(A, B, C, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(B + (k + rk)[:, None] * BN + rn[None, :])
        acc += tl.dot(a, b)
    acc = tl.where(acc >= 0, acc, 0.01 * acc)
    tl.store(C + rm[:, None] * BN + rn[None, :], acc)


@zetile.jit
def where_on_load(X, Y, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    x = tl.load(X + rm[:, None] * BN + rn[None, :])
    tl.store(Y + rm[:, None] * BN + rn[None, :], tl.where(x >= 0, x, 0.01 * x))


def _run_both():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((32, 32)).astype(np.float32)
    y = np.zeros_like(x)
    where_on_load[(1,)](x, y, BM=32, BN=32, num_warps=4)
    e1 = float(np.abs(y - np.where(x >= 0, x, 0.01 * x)).max())
    K = 64
    a = rng.standard_normal((64, K)).astype(np.float16)
    b = rng.standard_normal((K, 64)).astype(np.float16)
    c = np.zeros((64, 64), np.float32)
    mm_leaky_relu[(1,)](a, b, c, K, BM=64, BN=64, BK=32, num_warps=4)
    r = a.astype(np.float32) @ b.astype(np.float32)
    e2 = float(np.abs(c - np.where(r >= 0, r, 0.01 * r)).max())
    return e1, e2


def test_pvc_builds():
    for fn, sig, c in ((where_on_load, {"X": "*fp32", "Y": "*fp32"}, {"BM": 32, "BN": 32}),
                       (mm_leaky_relu, {"A": "*fp16", "B": "*fp16", "C": "*fp32", "K": "i32:16"},
                        {"BM": 64, "BN": 64, "BK": 32})):
        ck = zetile.compile(fn, signature=sig, constexprs=c, target="pvc", num_warps=4,
                            cached=False)
        if have_tool("spirv-val"):
            spirv_val(ck.asm["spirv"])


def test_cpu_target():
    e1, e2 = _run_both()
    assert e1 == 0.0 and e2 < 1e-3, (e1, e2)


def test_e5_opencl_cpu():
    opencl_cpu_or_skip()
    e1, e2 = run_result("""
        import json, zetile
        from test_xe_where_data import _run_both
        assert zetile.get_device().info["name"] == "opencl:cpu"
        print("RESULT " + json.dumps(_run_both()))
    """, path=HERE)
    assert e1 == 0.0 and e2 < 1e-3, (e1, e2)
