"""2-D tl.atomic_add on Xe (split-K's write-back of the accumulator tile, as
Intel's gemm_splitk and stream-K benchmark kernels do it): xe_scatter_2d
stores the tile row by row as for a 2-D tl.store, each row's scatter marked
as an atomic, and xe_atomic.c turns the marks into per-lane atomics. E1
(spirv-val) for pvc and bmg, E2 (ocloc, pvc) once, E5: the same SPIR-V on
Intel's OpenCL CPU runtime gives exact sums for integer-valued inputs; and
the CPU target's numerics of the same kernels. 2-D tl.atomic_cas the same
way, each row's compare values in a store marked zt.atomic_cmp before the
row's atomic (E1 pvc/bmg, E2 pvc, E5 and CPU: mixed matches, six programs
claiming one tile)."""
import os
import sys
import tempfile

import numpy as np
import pytest

import zetile
import zetile.language as tl
from zetile.tools import isa
from zt_testutil import have_tool, opencl_cpu_or_skip, run_result, spirv_val

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import xe_atomic_kernels as K  # noqa: E402

SPLITK = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "SPLIT_K": 2}
# (inputs, accumulator, num_warps)
CASES = [("fp16", "fp32", 4), ("fp16", "fp32", 1), ("i8", "i32", 4)]


def _splitk(ab, acc, nw, target):
    sig = {"A": "*" + ab, "B": "*" + ab, "C": "*" + acc, "M": "i32", "N": "i32", "K": "i32"}
    return zetile.compile(K.splitk_kernel, signature=sig,
                          constexprs={**SPLITK, "ACC": tl.float32 if acc == "fp32" else tl.int32},
                          target=target, num_warps=nw, cached=False)


def _need_spirv_val():
    if not have_tool("spirv-val"):
        pytest.skip("spirv-val is not installed")


@pytest.mark.parametrize("target", ["pvc", "bmg"])
@pytest.mark.parametrize("ab,acc,nw", CASES)
def test_splitk_spirv_validates(target, ab, acc, nw):
    _need_spirv_val()
    spirv_val(_splitk(ab, acc, nw, target).asm["spirv"])


@pytest.mark.parametrize("target", ["pvc", "bmg"])
@pytest.mark.parametrize("dt", ["fp32", "i32"])
def test_loaded_tile_spirv_validates(target, dt):
    _need_spirv_val()
    ck = zetile.compile(K.add_tile_kernel, signature={"X": "*" + dt, "OUT": "*" + dt, "M": "i32"},
                        constexprs={"BLOCK_M": 16, "BLOCK_N": 32}, target=target, num_warps=2,
                        cached=False)
    spirv_val(ck.asm["spirv"])


def test_splitk_ocloc_pvc():
    if not have_tool("ocloc"):
        pytest.skip("ocloc is not installed")
    spv = _splitk("fp16", "fp32", 4, "pvc").asm["spirv"]
    with tempfile.TemporaryDirectory() as d:
        _, log = isa.ocloc_compile(spv, d, "pvc")
        assert "unresolved" not in log.lower(), log


@pytest.mark.parametrize("target", ["pvc", "bmg"])
@pytest.mark.parametrize("dt", ["fp32", "i32"])
def test_old_values_spirv_validates(target, dt):
    _need_spirv_val()
    ck = zetile.compile(K.add_tile_old_kernel,
                        signature={"X": "*" + dt, "OUT": "*" + dt, "OLD": "*" + dt},
                        constexprs={"BLOCK_M": 16, "BLOCK_N": 32}, target=target, num_warps=2,
                        cached=False)
    spirv_val(ck.asm["spirv"])


def _cas(dt, target, **kw):
    return zetile.compile(K.cas_tile_old_kernel,
                          signature={"OUT": "*" + dt, "CMP": "*" + dt, "VAL": "*" + dt,
                                     "OLD": "*" + dt},
                          constexprs={"BLOCK_M": 16, "BLOCK_N": 32}, target=target, num_warps=2,
                          cached=False, **kw)


@pytest.mark.parametrize("target", ["pvc", "bmg", "dg2"])
@pytest.mark.parametrize("dt", ["fp32", "i32"])
def test_atomic_cas_2d_spirv_validates(target, dt):
    """2-D tl.atomic_cas (was refused: 'atomic_cas on 2-D tensors on Xe'):
    each row's compare values go in a store marked zt.atomic_cmp before its
    marked atomic, as the 1-D cas's do. (dg2: its own lowering, which had
    2-D cas already.)"""
    _need_spirv_val()
    spirv_val(_cas(dt, target).asm["spirv"])


def test_atomic_cas_2d_scalar_compare_spirv_validates():
    _need_spirv_val()
    spirv_val(zetile.compile(K.cas_tile_kernel, signature={"OUT": "*i32"},
                             constexprs={"BLOCK": 16}, target="pvc", cached=False).asm["spirv"])


def test_atomic_cas_2d_ocloc_pvc():
    if not have_tool("ocloc"):
        pytest.skip("ocloc is not installed")
    with tempfile.TemporaryDirectory() as d:
        _, log = isa.ocloc_compile(_cas("i32", "pvc", compat=True).asm["spirv"], d, "pvc")
        assert "unresolved" not in log.lower(), log


_RUN_SPLITK = """
import json, numpy as np, zetile
import zetile.language as tl
import xe_atomic_kernels as K
rng = np.random.default_rng(3)
ab, acc, nw = "{ab}", "{acc}", {nw}
M, N, Kd = 40, 32, 128
dt = np.float16 if ab == "fp16" else np.int8
ct = np.float32 if acc == "fp32" else np.int32
a = rng.integers(-3, 4, (M, Kd)).astype(dt)
b = rng.integers(-3, 4, (Kd, N)).astype(dt)
c0 = rng.integers(-5, 6, (M, N)).astype(ct)
c = c0.copy()
K.splitk_kernel[(zetile.cdiv(M, 32), 2)](a, b, c, M, N, Kd, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32,
    SPLIT_K=2, ACC=tl.float32 if acc == "fp32" else tl.int32, num_warps=nw)
zetile.get_device().synchronize()
want = c0.astype(np.int64) + a.astype(np.int64) @ b.astype(np.int64)
print("RESULT", json.dumps({{"bad": int((c.astype(np.int64) != want).sum())}}))
"""

_RUN_TILE = """
import json, numpy as np, zetile
import xe_atomic_kernels as K
rng = np.random.default_rng(4)
P, BM, BN, M = 7, 16, 32, 13
dt = np.dtype("{dt}")
x = rng.integers(-50, 51, (P, BM, BN)).astype(dt)
out = np.ones((BM, BN), dt)
K.add_tile_kernel[(P,)](x, out, M, BLOCK_M=BM, BLOCK_N=BN, num_warps=2)
zetile.get_device().synchronize()
want = np.ones((BM, BN), np.int64)
want[:M] += x.astype(np.int64).sum(0)[:M]
print("RESULT", json.dumps({{"bad": int((out.astype(np.int64) != want).sum())}}))
"""


# (One subgroup's 32x32 tile: E1 above; its OpenCL CPU build takes ~50 s.)
@pytest.mark.parametrize("ab,acc,nw", CASES[:1] + CASES[2:])
def test_e5_splitk_sums_exact(ab, acc, nw):
    """Two K halves added into C (pre-filled, rows 32..39 by a masked second
    row of programs), 4 subgroups each adding its own part of the tile:
    every element exactly C0 + A @ B."""
    opencl_cpu_or_skip()
    res = run_result(_RUN_SPLITK.format(ab=ab, acc=acc, nw=nw), path=HERE)
    assert res["bad"] == 0, res


@pytest.mark.parametrize("dt", ["float32", "int32"])
def test_e5_loaded_tiles_sum_exact(dt):
    """Seven programs add their tiles into one (rows >= 13 masked off)."""
    opencl_cpu_or_skip()
    res = run_result(_RUN_TILE.format(dt=dt), path=HERE)
    assert res["bad"] == 0, res


_RUN_OLD = """
import json, numpy as np, zetile
import xe_atomic_kernels as K
P, BM, BN = 5, 16, 32
dt = np.dtype("{dt}")
x = np.ones((P, BM, BN), dt)
out = np.full((BM, BN), 7, dt)
old = np.zeros((P, BM, BN), dt)
K.add_tile_old_kernel[(P,)](x, out, old, BLOCK_M=BM, BLOCK_N=BN, num_warps=2)
zetile.get_device().synchronize()
seen = np.sort(old.astype(np.int64), axis=0)
want = 7 + np.arange(P)[:, None, None]
print("RESULT", json.dumps({{"out_bad": int((out != 7 + P).sum()),
                            "old_bad": int((seen != want).sum())}}))
"""


@pytest.mark.parametrize("dt", ["float32", "int32"])
def test_e5_old_values(dt):
    """Five programs add ones to one tile (2 subgroups): each element's old
    values are 7, 8, ..., 11 in some order, and it ends at 12."""
    opencl_cpu_or_skip()
    res = run_result(_RUN_OLD.format(dt=dt), path=HERE)
    assert res == {"out_bad": 0, "old_bad": 0}, res


@pytest.mark.parametrize("ab,acc,nw", CASES[:1] + CASES[2:])
def test_cpu_splitk_sums_exact(ab, acc, nw):
    res = run_result(_RUN_SPLITK.format(ab=ab, acc=acc, nw=nw), path=HERE,
                     env={"ZETILE_DEVICE": "cpu"})
    assert res["bad"] == 0, res


_RUN_CAS = """
import json, numpy as np, zetile
import xe_atomic_kernels as K
rng = np.random.default_rng(7)
BM, BN = 16, 32
res = {}
for dt in ("int32", "float32"):
    dt = np.dtype(dt)
    # One program: old = OUT's values; OUT takes VAL where it equalled CMP.
    out0 = rng.integers(0, 2, (BM, BN)).astype(dt)
    cmp = rng.integers(0, 2, (1, BM, BN)).astype(dt)
    val = rng.integers(5, 9, (1, BM, BN)).astype(dt)
    out, old = out0.copy(), np.zeros_like(cmp)
    K.cas_tile_old_kernel[(1,)](out, cmp, val, old, BLOCK_M=BM, BLOCK_N=BN, num_warps=2)
    zetile.get_device().synchronize()
    one = int((old[0] != out0).sum() + (out != np.where(out0 == cmp[0], val[0], out0)).sum())
    # Six programs claim every element (0 -> pid + 1): one winner each, its
    # value left in OUT, and every loser saw the winner's value.
    P = 6
    out = np.zeros((BM, BN), dt)
    cmp = np.zeros((P, BM, BN), dt)
    val = (np.arange(P) + 1).astype(dt)[:, None, None] * np.ones((BM, BN), dt)
    old = np.full((P, BM, BN), -1, dt)
    K.cas_tile_old_kernel[(P,)](out, cmp, val, old, BLOCK_M=BM, BLOCK_N=BN, num_warps=2)
    zetile.get_device().synchronize()
    won = old == 0
    claim = int((won.sum(0) != 1).sum() + (np.where(won, val, 0).sum(0) != out).sum()
                + (np.where(won, out[None], old) != out[None]).sum())
    res[str(dt)] = [one, claim]
print("RESULT", json.dumps(res))
"""


@pytest.mark.parametrize("device,spirv", [("opencl:cpu", "pvc"), ("opencl:cpu", "dg2"),
                                          ("cpu", None)])
def test_atomic_cas_2d_exact(device, spirv):
    """E5 (the pvc or the dg2 SPIR-V on Intel's OpenCL CPU runtime, 2
    subgroups) and the CPU target: a compare-and-swap of a loaded tile with
    mixed matches, and six programs claiming one tile."""
    env = {"ZETILE_DEVICE": device}
    if device == "opencl:cpu":
        opencl_cpu_or_skip()
        env["ZETILE_OPENCL_TARGET"] = spirv
    res = run_result(_RUN_CAS, path=HERE, env=env)
    assert res == {"int32": [0, 0], "float32": [0, 0]}, res
