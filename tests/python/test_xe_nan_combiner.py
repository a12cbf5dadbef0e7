"""User combiners whose max/min propagate NaN (tl.maximum / tl.minimum with
propagate_nan=ALL, i.e. arith.maximumf/minimumf) on Xe. A combiner body is
emitted op by op through xe_emit_elementwise (xe_reduce_user.c), which wrote
maximumf as it was: IGC and Intel's OpenCL CPU runtime give it OpenCL's
fmax, which returns the other operand of a NaN, so the NaNs were dropped
(a tuple reduce gave 26 where Triton gives NaN, a scan no NaN where numpy's
accumulate has 25). xe_emit_elementwise now writes the same maxnumf + NaN
select the op dispatch writes for a tile's own maximumf. Shown: E1 for pvc
and bmg, and the pvc SPIR-V on Intel's OpenCL CPU runtime (E5) against
numpy's NaN-propagating maximum/minimum (the CPU target as the same check)."""
import os

import pytest

import zetile
import zetile.language as tl
from zt_testutil import have_tool, opencl_cpu_or_skip, run_result, spirv_val

HERE = os.path.dirname(os.path.abspath(__file__))


@zetile.jit
def _cmax(a0, a1, b0, b1):
    return tl.maximum(a0, b0, propagate_nan=tl.PropagateNan.ALL), a1 + b1


@zetile.jit
def _cmin(a0, a1, b0, b1):
    return tl.minimum(a0, b0, propagate_nan=tl.PropagateNan.ALL), a1 + b1


@zetile.jit
def _max1(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)


@zetile.jit
def _min1(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)


@zetile.jit
def nan_tuple(X, SCAN, ONE, RED, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr,
              MIN: tl.constexpr, REV: tl.constexpr, DO_RED: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    offs = rm[:, None] * N + rn[None, :]
    x = tl.load(X + offs)
    c = (offs * 0 + 1).to(tl.float32)
    if MIN:
        s, _ = tl.associative_scan((x, c), AXIS, _cmin, reverse=REV)
        tl.store(ONE + offs, tl.associative_scan(x, AXIS, _min1, reverse=REV))
    else:
        s, _ = tl.associative_scan((x, c), AXIS, _cmax, reverse=REV)
        tl.store(ONE + offs, tl.associative_scan(x, AXIS, _max1, reverse=REV))
    tl.store(SCAN + offs, s)
    if DO_RED:
        if MIN:
            r, _ = tl.reduce((x, c), 1, _cmin)
        else:
            r, _ = tl.reduce((x, c), 1, _cmax)
        tl.store(RED + rm, r)


# (M, N, axis, min, reverse, num_warps): one subgroup along the lanes (with a
# row reduce), a 4x1 grid scanning across subgroups (SLM), a 1x2 grid.
CASES = [(8, 32, 1, False, False, 1), (8, 32, 1, True, True, 1), (32, 16, 0, False, True, 4),
         (8, 32, 1, True, False, 2)]


@pytest.mark.skipif(not have_tool("spirv-val"), reason="spirv-val is not installed")
@pytest.mark.parametrize("target", ["pvc", "bmg"])
def test_e1(target):
    m, n, ax, mn, rev, nw = CASES[2]
    ck = zetile.compile(nan_tuple, signature={"X": "*fp32", "SCAN": "*fp32", "ONE": "*fp32",
                                              "RED": "*fp32"},
                        constexprs={"M": m, "N": n, "AXIS": ax, "MIN": mn, "REV": rev,
                                    "DO_RED": False},
                        target=target, num_warps=nw, cached=False)
    spirv_val(ck.asm["spirv"])


_RUN = """
import json, numpy as np, zetile
import test_xe_nan_combiner as T
rng = np.random.default_rng(5)
bad = []
for m, n, ax, mn, rev, nw in {cases}:
    x = rng.integers(-9, 10, (m, n)).astype(np.float32)
    x[rng.random((m, n)) < 0.05] = np.nan
    s, one, r = np.zeros_like(x), np.zeros_like(x), np.zeros(m, np.float32)
    red = nw == 1  # (a user reduce along a split axis is refused)
    T.nan_tuple[(1,)](x, s, one, r, M=m, N=n, AXIS=ax, MIN=mn, REV=rev, DO_RED=red,
                      num_warps=nw)
    zetile.get_device().synchronize()
    f = np.minimum if mn else np.maximum  # both propagate NaN
    w = f.accumulate(np.flip(x, ax) if rev else x, axis=ax)
    want_s, want_r = np.flip(w, ax) if rev else w, f.reduce(x, axis=1)
    diff = lambda a, b: int((~((a == b) | (np.isnan(a) & np.isnan(b)))).sum())
    bad.append([diff(s, want_s), diff(one, want_s), diff(r, want_r) if red else 0,
                int(np.isnan(want_s).sum())])
print("RESULT " + json.dumps(bad))
"""


@pytest.mark.parametrize("device", ["opencl:cpu", "cpu"])
def test_nan_propagates(device):
    if device == "opencl:cpu":
        opencl_cpu_or_skip()
    res = run_result(_RUN.format(cases=CASES), path=HERE, env={"ZETILE_DEVICE": device})
    for scan_bad, one_bad, red_bad, nans in res:
        assert scan_bad == 0 and one_bad == 0 and red_bad == 0 and nans > 0, res
