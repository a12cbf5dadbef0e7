"""tl.cumsum, and tl.associative_scan with a user combiner (a tuple linear
recurrence), of a row split across subgroups on Xe (xe_emit_scan,
xe_reduce_user.c): each
subgroup scans its part, the parts' totals meet in SLM (the exchange the
cross-subgroup reductions use) and each part adds the totals before it
(after it, reversed). Shown: the kernel really is split (more than one
subgroup), spirv-val (E1), ocloc builds it with no call left (E2), and the
CPU target's numbers (E4), and the pvc SPIR-V's on Intel's OpenCL CPU
runtime (E5: zetile writes the SLM accesses as pointer arithmetic that
runtime can run).

The same for a 2-D tl.cumsum / tl.cumprod along an axis the subgroup grid
splits (xe_reduce.c scan_prefix_across): each subgroup's line totals meet in
SLM and each subgroup's scan starts from the totals before it. Was refused
('a 2-D scan along axis 0 of a tile split that way across subgroups'),
Intel's 64x32 prefix-sum benchmark along axis 0 among them."""
import os
import sys

import numpy as np
import pytest

import zetile
from zetile.tools import isa
from zt_testutil import have_tool, isa_no_spill, opencl_cpu_or_skip, run_result, spirv_val

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import xe_reduce_kernels as K  # noqa: E402

# (kernel, signature, reverse constexpr's name)
SPLIT = {"cumsum": (K.cumsum_row, {"X": "*i32", "OUT": "*i32", "N": "i32"}, "REV"),
         "user": (K.scan_user, {"A": "*fp32", "B": "*fp32", "H": "*fp32", "S": "*i32",
                                "R": "*i32", "N": "i32"}, "REVERSE")}


@pytest.mark.skipif(not (have_tool("spirv-val") and have_tool("ocloc")),
                    reason="spirv-val/ocloc are not installed")
@pytest.mark.parametrize("kind", list(SPLIT))
@pytest.mark.parametrize("rev", [False, True])
def test_e1_e2_split_row(kind, rev):
    fn, sig, rev_name = SPLIT[kind]
    ck = zetile.compile(fn, signature=sig, constexprs={"BLOCK": 1024, rev_name: rev},
                        target="pvc", cached=False)
    assert int(str(ck.metadata["local_size"]).split(",")[0]) > 16, ck.metadata
    spirv_val(ck.asm["spirv"])
    isas, log = isa.ocloc_isa(ck.asm["spirv"], "pvc", ck.metadata.get("igc_options", ""))
    assert isa.analyze_isa("".join(isas.values()))["calla"] == 0, log


CUMSUM = r"""
import json, numpy as np, zetile
import xe_reduce_kernels as K
x = np.random.default_rng(4).integers(-9, 10, 1000).astype(np.int32)
out = {"x": x.tolist()}
for rev in (False, True):
    o = np.zeros_like(x)
    K.cumsum_row[(1,)](x, o, 1000, BLOCK=1024, REV=rev)
    out[str(rev)] = o.tolist()
print("RESULT " + json.dumps(out))
"""


def _check_cumsum(res):
    x = np.array(res["x"])
    np.testing.assert_array_equal(res["False"], np.cumsum(x))
    np.testing.assert_array_equal(res["True"], np.cumsum(x[::-1])[::-1])


def test_cpu_numbers():
    _check_cumsum(run_result(CUMSUM, path=HERE, env={"ZETILE_DEVICE": "cpu"}))


def test_e5_split_row_on_opencl_cpu():
    opencl_cpu_or_skip()
    _check_cumsum(run_result(CUMSUM, path=HERE))


# (M, N, axis, reverse, cumprod, dtype, num_warps): grids 2x2 (axis 0 split
# in two), 4x1, 1x2 and 2x4 (axis 1 split in two and four); the old lowering
# refused each.
TILES = [(64, 32, 0, False, False, "fp32", 4), (32, 16, 0, True, True, "i32", 4),
         (8, 32, 1, True, False, "i32", 2), (32, 64, 1, False, False, "fp32", 8)]


def _tile(case, target, **kw):
    m, n, ax, rev, prod, dt, nw = case
    return zetile.compile(K.cumsum_tile, signature={"X": "*" + dt, "OUT": "*" + dt},
                          constexprs={"M": m, "N": n, "AXIS": ax, "REV": rev, "PROD": prod},
                          target=target, num_warps=nw, cached=False, **kw)


@pytest.mark.skipif(not have_tool("spirv-val"), reason="spirv-val is not installed")
@pytest.mark.parametrize("target", ["pvc", "bmg"])
@pytest.mark.parametrize("case", TILES, ids=lambda c: "%dx%d-axis%d" % c[:3])
def test_e1_split_tile(target, case):
    spirv_val(_tile(case, target).asm["spirv"])


@pytest.mark.parametrize("case", TILES[::2], ids=lambda c: "%dx%d-axis%d" % c[:3])
def test_e2_split_tile_pvc(case):
    ck = _tile(case, "pvc", compat=True)
    r = isa_no_spill(ck.asm["spirv"], ck.metadata.get("igc_options", ""), "scan %dx%d" % case[:2])
    assert r["calla"] == 0, r


_RUN_TILES = """
import json, numpy as np, zetile
import xe_reduce_kernels as K
rng = np.random.default_rng(6)
bad = []
for m, n, ax, rev, prod, dt, nw in {cases}:
    dt = np.float32 if dt == "fp32" else np.int32
    x = (rng.choice([-1, 1, 1, 1], (m, n)) if prod else rng.integers(-9, 10, (m, n))).astype(dt)
    o = np.zeros_like(x)
    K.cumsum_tile[(1,)](x, o, M=m, N=n, AXIS=ax, REV=rev, PROD=prod, num_warps=nw)
    zetile.get_device().synchronize()
    f = np.cumprod if prod else np.cumsum
    want = np.flip(f(np.flip(x, ax), axis=ax), ax) if rev else f(x, axis=ax)
    bad.append(int((o != want).sum()))
print("RESULT " + json.dumps(bad))
"""


def test_e5_split_tile_exact():
    """Integer-valued inputs: every element exact (the pvc SPIR-V on
    opencl:cpu; 2 s a case along axis 0, 13 s for the 8x32 along axis 1,
    whose per-lane scan is long code; 32x64 is E1 only)."""
    opencl_cpu_or_skip()
    assert run_result(_RUN_TILES.format(cases=TILES[:3]), path=HERE) == [0, 0, 0]


def test_lane_scan_is_shuffles():
    """Along the lanes each 16-lane row is scanned by 4 lane shuffles
    (Hillis-Steele; marked, gpu.shuffle after distribution) and one
    reduction for its total, not one reduction per lane (16 a row: 2690
    instructions for 32x16 along axis 1 on pvc, 304 now)."""
    ck = _tile((8, 32, 1, False, False, "i32", 1), "pvc")
    text = ck.asm["mlir"]
    rows = 8 * 2  # 16-lane rows
    assert text.count("vector.reduction") <= rows, text.count("vector.reduction")
    assert text.count("zt.shfl_up") == 4 * rows, text.count("zt.shfl_up")


# tl.associative_scan with a user combiner (a tuple linear recurrence and a
# forward fill: not commutative, so the order shows) of a tile along a split
# axis (xe_reduce_user.c scan_2d_across): 4x1 grid along axis 0 reversed,
# 1x2 along axis 1. Was refused ('a 2-D scan with a user combiner along an
# axis split across subgroups').
USER_TILES = [(32, 16, 0, True, 4), (8, 32, 1, False, 2)]


def _user_tile(case, target, **kw):
    m, n, ax, rev, nw = case
    return zetile.compile(K.scan2d, signature={"X": "*i32", "F": "*i32", "H": "*fp32"},
                          constexprs={"M": m, "N": n, "AXIS": ax, "REVERSE": rev},
                          target=target, num_warps=nw, cached=False, **kw)


@pytest.mark.skipif(not have_tool("spirv-val"), reason="spirv-val is not installed")
@pytest.mark.parametrize("target", ["pvc", "bmg"])
@pytest.mark.parametrize("case", USER_TILES, ids=lambda c: "%dx%d-axis%d" % c[:3])
def test_e1_split_tile_user(target, case):
    spirv_val(_user_tile(case, target).asm["spirv"])


def test_e2_split_tile_user_pvc():
    ck = _user_tile(USER_TILES[1], "pvc", compat=True)
    r = isa_no_spill(ck.asm["spirv"], ck.metadata.get("igc_options", ""), "user scan 8x32")
    assert r["calla"] == 0, r


_RUN_USER = """
import json, numpy as np, zetile
import xe_reduce_kernels as K
rng = np.random.default_rng(8)
bad = []
for m, n, axis, rev, nw in {cases}:
    x = rng.integers(-5, 6, (m, n)).astype(np.int32)
    f2, h2 = np.zeros((m, n), np.int32), np.zeros((m, n), np.float32)
    K.scan2d[(1,)](x, f2, h2, M=m, N=n, AXIS=axis, REVERSE=rev, num_warps=nw)
    zetile.get_device().synchronize()
    xs = x.astype(np.int64) if axis == 1 else x.T.astype(np.int64)
    fw, hw = np.zeros(xs.shape, np.int64), np.zeros(xs.shape)
    for i in range(xs.shape[0]):
        order = range(xs.shape[1] - 1, -1, -1) if rev else range(xs.shape[1])
        f, h = None, 0.0
        for k in order:
            v = int(np.fmod(xs[i, k], 3))  # Triton's % truncates, like C
            f = v if f is None or v != 0 else f
            h = (np.fmod(xs[i, k], 2) + 1) * 0.5 * h + xs[i, k]
            fw[i, k], hw[i, k] = f, h
    if axis == 0:
        fw, hw = fw.T, hw.T
    bad.append([int((f2 != fw).sum()), float(np.max(np.abs(h2 - hw) / (1 + np.abs(hw))))])
print("RESULT " + json.dumps(bad))
"""


@pytest.mark.parametrize("device", ["opencl:cpu", "cpu"])
def test_split_tile_user_numbers(device):
    """The pvc SPIR-V on opencl:cpu (E5) and the CPU target: the fill exact,
    the recurrence to float32 rounding (half-integers here: exact too)."""
    if device == "opencl:cpu":
        opencl_cpu_or_skip()
    res = run_result(_RUN_USER.format(cases=USER_TILES), path=HERE, env={"ZETILE_DEVICE": device})
    for fills, herr in res:
        assert fills == 0 and herr <= 1e-6, res
