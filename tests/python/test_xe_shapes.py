"""Transposes and reshapes of small tiles, narrow tiles (2, 4, 8 columns),
tl.join / tl.split / tl.interleave, tl.sort and tl.histogram on Xe
(xe_reshape.c, narrow blocks in xe_values.c, 2-D index arithmetic reading
1-D data in xe_matrix.c). Before, each of these was refused on pvc
("operation on 2-D tensors not supported", "2-D tile 32x2 does not split
into 8x16 blocks", "reduction of this 2-D value"). Now the SPIR-V passes
spirv-val (E1) and Intel's ocloc (E2), and computes the numpy result on
Intel's OpenCL CPU runtime (E5) on both paths; the CPU target gives the same
numbers (E4)."""
import os
import sys

import numpy as np
import pytest

import zetile
from zt_testutil import have_tool, opencl_cpu_or_skip, run_result, spirv_val

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import xe_shape_kernels as K  # noqa: E402

TRANS = [(8, 16), (16, 8), (16, 16), (4, 16), (32, 8)]
RESHAPE = [(8, 16, 16, 8), (16, 8, 8, 16), (32, 2, 4, 16), (4, 16, 32, 2), (16, 16, 32, 8)]
PAIRS = [16, 64]
NARROW = [(16, 2), (32, 4), (8, 8), (64, 2)]

BUILDS = [
    ("transpose", {"X": "*fp16", "OUT": "*fp16"}, {"M": 8, "N": 16, "PERMUTE": False}),
    ("transpose", {"X": "*i32", "OUT": "*i32"}, {"M": 16, "N": 8, "PERMUTE": True}),
    ("reshape_2d", {"X": "*fp32", "OUT": "*fp32"}, {"M": 32, "N": 2, "R": 4, "C": 16}),
    ("rotate_pairs", {"X": "*fp32", "COS": "*fp32", "SIN": "*fp32", "OUT": "*fp32"}, {"N": 64}),
    ("interleave", {"X": "*i32", "Y": "*i32", "OUT": "*i32"}, {"N": 32}),
    ("narrow_sums", {"X": "*fp32", "ROWS": "*fp32", "COLS": "*fp32"}, {"N": 32, "C": 4}),
    ("sort_rows", {"X": "*i32", "OUT": "*i32", "HIST": "*i32"},
     {"N": 16, "DESCENDING": True, "BINS": 8}),
    ("cat_tiles", {"X": "*fp32", "Y": "*fp32", "OUT": "*fp32"}, {"M": 8, "N": 16, "DIM": 1}),
    ("narrow_scans", {"X": "*i32", "DOWN": "*i32", "ALONG": "*i32"},
     {"N": 32, "C": 4, "REV": True}),
    ("narrow_fill", {"X": "*i32", "DOWN": "*i32", "ALONG": "*i32"},
     {"N": 32, "C": 4, "REV": False}),
]
CATS = [(1, 32, -1), (2, 16, 0), (8, 16, 1), (16, 8, 1), (4, 8, 0)]
SCANS = [(16, 2), (32, 4), (8, 8)]


@pytest.mark.parametrize("kernel,sig,consts", BUILDS, ids=[b[0] for b in BUILDS])
def test_pvc_builds(kernel, sig, consts):
    if not have_tool("spirv-val"):
        pytest.skip("spirv-val is not installed")
    for compat in (False, True):
        ck = zetile.compile(getattr(K, kernel), signature=sig, constexprs=consts,
                            target="pvc", compat=compat, cached=False)
        spirv_val(ck.asm["spirv"])
    if have_tool("ocloc") and have_tool("iga64"):
        # E2: IGC builds it; the lane moves are register moves, not memory.
        from zetile.tools import isa
        isas, log = isa.ocloc_isa(ck.asm["spirv"], "pvc")
        assert len(isas) == 1, isas.keys()
        k = isa.analyze_isa(next(iter(isas.values())))
        assert k["sends_by_kind"]["load"] >= 1 and k["sends_by_kind"]["store"] >= 1, k
        assert isa.spill_from_log(log) == 0, log


def test_large_transpose_is_refused_with_its_line():
    # 64x64 builds (xe_transpose.c: butterflies in one subgroup, SLM across);
    # 256x256 fp32 is split across subgroups and its 256 KB exceed the SLM a
    # workgroup has.
    zetile.compile(K.transpose, signature={"X": "*fp32", "OUT": "*fp32"},
                   constexprs={"M": 64, "N": 64, "PERMUTE": False}, target="pvc", cached=False)
    with pytest.raises(zetile.CompilationError) as ei:
        zetile.compile(K.transpose, signature={"X": "*fp32", "OUT": "*fp32"},
                       constexprs={"M": 256, "N": 256, "PERMUTE": False}, target="pvc",
                       cached=False)
    msg = str(ei.value)
    assert "xe_shape_kernels.py:16" in msg and "transpose" in msg, msg
    assert "shared local memory" in msg, msg


def test_narrow_tile_with_several_subgroups_is_refused_with_advice():
    with pytest.raises(zetile.CompilationError) as ei:
        zetile.compile(K.rotate_pairs,
                       signature={"X": "*fp32", "COS": "*fp32", "SIN": "*fp32", "OUT": "*fp32"},
                       constexprs={"N": 64}, target="pvc", num_warps=4, cached=False)
    assert "num_warps=1" in str(ei.value), str(ei.value)


RUN = r"""
import json, os, numpy as np, zetile
import xe_shape_kernels as K
TRANS, RESHAPE, PAIRS, NARROW, CATS, SCANS = ARGS
rng = np.random.default_rng(5)
out = {"trans": [], "reshape": [], "pairs": [], "interleave": [], "narrow": [], "sort": [],
       "cat": [], "scan": [], "fill": [], "affine": [], "same_spirv": 0}
# In the compat run only the specializations whose compat SPIR-V differs from
# the default path's are launched: the same bytes compute the same numbers,
# and the default run launched them (both compiles are in the disk cache
# then, so the comparison costs little; an OpenCL build costs ~0.6 s each).
ONLY_COMPAT_CHANGED = os.environ.get("ZT_E5_ONLY_COMPAT_CHANGED") == "1"
def compat_changes(kern, args, kw):
    from zetile import _C, runtime
    dev = zetile.get_device()
    key, at, div, ce, _, descs = kern.specialize(kern._bind(args, kw), dev)
    text = kern.build_tile_ir(at, ce, div, descs)
    a, b = (_C.compile(text, target=runtime.info(dev)["target"], num_warps=0, compat=c,
                       igc_options=None, cached=True).get("spirv") for c in (False, True))
    return a != b
def launch(kern, *args, **kw):
    if ONLY_COMPAT_CHANGED and not compat_changes(kern, args, kw):
        out["same_spirv"] += 1
        return False
    kern[(1,)](*args, **kw)
    zetile.get_device().synchronize()
    return True
for dt in ("float32", "float16", "int32"):
    for (m, n) in TRANS:
        for perm in (False, True):
            x = (rng.standard_normal((m, n)) * 10).astype(dt)
            o = np.zeros((n, m), dt)
            if launch(K.transpose, x, o, M=m, N=n, PERMUTE=perm):
                out["trans"].append([dt, x.tolist(), o.tolist()])
    for (m, n, r, c) in RESHAPE:
        x = (rng.standard_normal((m, n)) * 10).astype(dt)
        o = np.zeros((r, c), dt)
        if launch(K.reshape_2d, x, o, M=m, N=n, R=r, C=c):
            out["reshape"].append([dt, x.tolist(), o.tolist()])
for dt in ("float32", "float16"):
    for n in PAIRS:
        x, c, s = (rng.standard_normal(k).astype(dt) for k in ((n, 2), n, n))
        o = np.zeros((n, 2), dt)
        if launch(K.rotate_pairs, x, c, s, o, N=n):
            out["pairs"].append([dt, x.tolist(), c.tolist(), s.tolist(), o.tolist()])
for dt in ("float32", "int32"):
    for n in (8, 32):
        x = (rng.standard_normal(n) * 10).astype(dt)
        y = (rng.standard_normal(n) * 10).astype(dt)
        o = np.zeros(2 * n, dt)
        if launch(K.interleave, x, y, o, N=n):
            out["interleave"].append([dt, x.tolist(), y.tolist(), o.tolist()])
    for (n, c) in NARROW:
        x = (rng.standard_normal((n, c)) * 10).astype(dt)
        rows, cols = np.zeros(n, dt), np.zeros(c, dt)
        if launch(K.narrow_sums, x, rows, cols, N=n, C=c):
            out["narrow"].append([dt, x.tolist(), rows.tolist(), cols.tolist()])
        w = (rng.standard_normal(c) * 10).astype(dt)
        b = (rng.standard_normal(n) * 10).astype(dt)
        o = np.zeros((n, c), dt)
        if launch(K.narrow_affine, x, w, b, o, N=n, C=c):
            out["affine"].append([dt, x.tolist(), w.tolist(), b.tolist(), o.tolist()])
for dt in ("int32", "float32"):
    for desc in (False, True):
        x = (rng.standard_normal(16) * 20).astype(dt)
        x[3] = x[9]  # a tie
        o = np.zeros(16, dt)
        h = np.zeros(8, np.int32)
        if launch(K.sort_rows, x, o, h, N=16, DESCENDING=desc, BINS=8):
            out["sort"].append([dt, desc, x.tolist(), o.tolist(), h.tolist()])
for dt in ("float32", "int32"):
    for (m, n, d) in CATS:
        x = (rng.standard_normal((m, n)) * 10).astype(dt)
        y = (rng.standard_normal((m, n)) * 10).astype(dt)
        o = np.zeros(2 * m * n, dt)
        if launch(K.cat_tiles, x, y, o, M=m, N=n, DIM=d):
            out["cat"].append([dt, d, x.tolist(), y.tolist(), o.tolist()])
for dt in ("float32", "int32"):
    for (n, c) in SCANS:
        for rev in (False, True):
            x = (rng.standard_normal((n, c)) * 10).astype(dt)
            down, along = np.zeros((n, c), dt), np.zeros((n, c), dt)
            if launch(K.narrow_scans, x, down, along, N=n, C=c, REV=rev):
                out["scan"].append([dt, rev, x.tolist(), down.tolist(), along.tolist()])
for (n, c) in SCANS:
    for rev in (False, True):
        x = (rng.integers(-5, 5, (n, c)) * (rng.random((n, c)) < 0.4)).astype(np.int32)
        down, along = np.zeros((n, c), np.int32), np.zeros((n, c), np.int32)
        if launch(K.narrow_fill, x, down, along, N=n, C=c, REV=rev):
            out["fill"].append([rev, x.tolist(), down.tolist(), along.tolist()])
print("RESULT " + json.dumps(out))
""".replace("ARGS", repr((TRANS, RESHAPE, PAIRS, NARROW, CATS, SCANS)))


def _fill_ref(x, axis, rev):
    # Forward fill along axis (from the end when reversed).
    x = np.moveaxis(np.array(x), axis, 0)
    order = range(x.shape[0] - 1, -1, -1) if rev else range(x.shape[0])
    prev = None
    for i in order:
        if prev is not None:
            x[i] = np.where(x[i] != 0, x[i], prev)
        prev = x[i]
    return np.moveaxis(x, 0, axis)


def _close(dt, got, want):
    got = np.asarray(got, np.float64)
    if dt == "int32":
        np.testing.assert_array_equal(got, want)
    else:
        tol = 1e-2 if dt == "float16" else 1e-5
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def _check(res, only_compat_changed=False):
    # Launches of each kind: all of them, or in the compat run those not
    # skipped for SPIR-V identical to the default path's (counted).
    want = {"trans": 3 * 2 * len(TRANS), "reshape": 3 * len(RESHAPE), "pairs": 2 * len(PAIRS),
            "interleave": 2 * 2, "narrow": 2 * len(NARROW), "affine": 2 * len(NARROW),
            "cat": 2 * len(CATS), "scan": 2 * 2 * len(SCANS), "fill": 2 * len(SCANS), "sort": 4}
    got = {k: len(res[k]) for k in want}
    if only_compat_changed:
        assert sum(got.values()) + res["same_spirv"] == sum(want.values()), (got, res["same_spirv"])
    else:
        assert got == want and res["same_spirv"] == 0, got
    for dt, x, o in res["trans"]:
        x = np.asarray(x, np.float64)
        _close(dt, o, x.T * 2 + 1)
    for dt, x, o in res["reshape"]:
        x = np.asarray(x, np.float64)
        r, c = np.shape(o)
        _close(dt, o, (x + 1).reshape(r, c) - np.arange(c))
    for dt, x, c, s, o in res["pairs"]:
        x, c, s = (np.asarray(a, np.float64) for a in (x, c, s))
        z = (x[:, 0] + 1j * x[:, 1]) * (c + 1j * s)
        _close(dt, o, np.stack([z.real, z.imag], 1))
    for dt, x, y, o in res["interleave"]:
        _close(dt, o, np.stack([np.asarray(x), np.asarray(y) * 10], 1).ravel())
    for dt, x, rows, cols in res["narrow"]:
        x = np.asarray(x, np.float64)
        _close(dt, rows, x.sum(1) + x.max(1))
        _close(dt, cols, x.sum(0))
    for dt, x, w, b, o in res["affine"]:
        x, w, b = (np.asarray(a, np.float64) for a in (x, w, b))
        _close(dt, o, x * w[None, :] + b[:, None])
    for dt, d, x, y, o in res["cat"]:
        x, y = np.asarray(x), np.asarray(y)
        want = (np.concatenate([x.ravel(), (y * 3).ravel()]) if d < 0
                else np.concatenate([x, y * 3], axis=d).ravel())
        _close(dt, o, want)
    for dt, rev, x, down, along in res["scan"]:
        x = np.asarray(x, np.float64)
        flip = (lambda a, ax: np.flip(a, ax)) if rev else (lambda a, ax: a)
        _close(dt, down, flip(np.cumsum(flip(x, 0), 0), 0))
        _close(dt, along, flip(np.cumsum(flip(x, 1), 1), 1))
    for rev, x, down, along in res["fill"]:
        x = np.asarray(x)
        np.testing.assert_array_equal(down, _fill_ref(x, 0, rev))
        np.testing.assert_array_equal(along, _fill_ref(x, 1, rev))
    for dt, desc, x, o, h in res["sort"]:
        x = np.asarray(x)
        want = np.sort(x)[::-1] if desc else np.sort(x)
        np.testing.assert_array_equal(o, want)
        np.testing.assert_array_equal(h, np.bincount((np.abs(x) % 8).astype(np.int64),
                                                     minlength=8))


def test_cpu_numbers():
    _check(run_result(RUN, path=HERE, env={"ZETILE_DEVICE": "cpu"}))


@pytest.mark.parametrize("compat", ["0", "1"])
def test_e5_pvc_spirv_on_opencl_cpu(compat):
    # The compat path launches only what its SPIR-V changes (20 of 105
    # specializations at 054b2a7: transposes, reshapes, cats); all of them
    # with ZETILE_SLOW_TESTS=1. In one run at load 13: compat=0 504 s,
    # compat=1 91 s (it took as long as compat=0 before).
    opencl_cpu_or_skip()
    only = compat == "1" and os.environ.get("ZETILE_SLOW_TESTS") != "1"
    res = run_result(RUN, path=HERE, env={"ZETILE_COMPAT": compat,
                                          "ZT_E5_ONLY_COMPAT_CHANGED": "1" if only else "0"},
                     timeout=900)  # ~100 OpenCL builds: past 300 s at load 13
    print(f"compat {compat}: {res['same_spirv']} specializations skipped (SPIR-V as the default path's)")
    _check(res, only)
