"""NaN semantics of max/min are the same on every target (issue 12): the
CPU target, pvc's SPIR-V and dg2's SPIR-V (both executed on Intel's OpenCL
CPU runtime, E5) give the same answers as Triton's definitions:
tl.maximum/tl.minimum ignore a NaN operand by default
(propagate_nan=NONE: the other operand, as fmax/fmin) and return NaN with
propagate_nan=ALL; tl.max/tl.min reductions ignore NaNs (a row of NaNs
gives NaN). Operands mix NaN, infinities and finite values in every
pairing, in fp32 and fp16."""
import json

import numpy as np
import pytest

import zetile
from zt_testutil import run_python

KERNEL = """
import zetile
import zetile.language as tl


@zetile.jit
def nan_minmax(X, Y, OUT, R, N: tl.constexpr):
    i = tl.arange(0, N)
    x = tl.load(X + i)
    y = tl.load(Y + i)
    tl.store(OUT + 0 * N + i, tl.maximum(x, y))
    tl.store(OUT + 1 * N + i, tl.minimum(x, y))
    tl.store(OUT + 2 * N + i, tl.maximum(x, y, propagate_nan=tl.PropagateNan.ALL))
    tl.store(OUT + 3 * N + i, tl.minimum(x, y, propagate_nan=tl.PropagateNan.ALL))
    rows = tl.arange(0, N // 16)
    cols = tl.arange(0, 16)
    m = tl.load(X + rows[:, None] * 16 + cols[None, :])
    tl.store(R + rows, tl.max(m, axis=1))
    tl.store(R + N // 16 + rows, tl.min(m, axis=1))
"""

N = 128


def _inputs(dt):
    vals = np.array([np.nan, np.inf, -np.inf, 1.5, -2.0, 0.25, 7.0, -0.5], np.float32)
    # every (x, y) pairing of the 8 values, twice over: 128 elements
    x = np.tile(np.repeat(vals, 8), 2)
    y = np.tile(np.tile(vals, 8), 2)
    x[64:80] = np.nan  # one row of 16 all NaN for the reductions
    return x.astype(dt), y.astype(dt)


def _want(x, y):
    with np.errstate(invalid="ignore"):
        out = np.stack([np.fmax(x, y), np.fmin(x, y), np.maximum(x, y), np.minimum(x, y)])
        m = x.reshape(-1, 16)
        red = np.concatenate([np.fmax.reduce(m, axis=1), np.fmin.reduce(m, axis=1)])
    return out, red


def _same(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return bool(((a == b) | (np.isnan(a) & np.isnan(b))).all())


SCRIPT = """
import json, sys, numpy as np, zetile
sys.path.insert(0, {dir!r})
from nan_minmax_kernel import nan_minmax
x = np.load({dir!r} + "/x.npy"); y = np.load({dir!r} + "/y.npy")
out = np.zeros((4, {N}), x.dtype); red = np.zeros(2 * {N} // 16, x.dtype)
nan_minmax[(1,)](x, y, out, red, N={N}, num_warps=1)
zetile.get_device().synchronize()
np.save({dir!r} + "/out.npy", out); np.save({dir!r} + "/red.npy", red)
print("RESULT " + json.dumps(zetile.get_device().info.get("target", "cpu")))
"""


@pytest.mark.parametrize("dt", ["float32", "float16"])
@pytest.mark.parametrize("target", ["cpu", "pvc", "dg2"])
def test_nan_semantics_of_max_and_min(tmp_path, target, dt):
    if target != "cpu" and "opencl:cpu" not in [d["name"] for d in zetile.devices()]:
        pytest.skip("Intel's OpenCL CPU runtime (opencl:cpu) is not available")
    x, y = _inputs(dt)
    want, want_red = _want(x, y)
    # The cases tell the rules apart: NONE and ALL differ on NaN pairings.
    assert not _same(want[0], want[2]) and not _same(want[1], want[3])
    (tmp_path / "nan_minmax_kernel.py").write_text(KERNEL)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    env = {"ZETILE_DEVICE": "cpu"} if target == "cpu" else {
        "ZETILE_DEVICE": "opencl:cpu", "ZETILE_OPENCL_TARGET": target}
    r = run_python(SCRIPT.format(dir=str(tmp_path), N=N), env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    ran = json.loads([ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")][-1][7:])
    assert ran == target, (ran, target)  # the SPIR-V executed is the target's
    out = np.load(tmp_path / "out.npy")
    red = np.load(tmp_path / "red.npy")
    names = ["maximum", "minimum", "maximum ALL", "minimum ALL"]
    for k, name in enumerate(names):
        bad = np.flatnonzero(~((out[k] == want[k]) | (np.isnan(out[k]) & np.isnan(want[k]))))
        assert bad.size == 0, (name, [(float(x[i]), float(y[i]), float(out[k][i]))
                                      for i in bad[:6]])
    assert _same(red, want_red), (red, want_red)
