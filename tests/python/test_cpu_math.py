"""tl.exp on f32 in the CPU target is zetile's own inline polynomial
(lowering/cpu/cpu_math.c); other math goes to glibc's libmvec when vectorized
(jit/compiler_cpu_vecmath.c). Checked against float64 numpy, in ulps."""
import numpy as np
import pytest

import zetile
import zetile.language as tl


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


@zetile.jit
def _math_kernel(x_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if OP == "exp":
        y = tl.exp(x)
    elif OP == "log":
        y = tl.log(x)
    elif OP == "sin":
        y = tl.sin(x)
    else:
        y = tl.cos(x)
    tl.store(out_ptr + offs, y, mask=m)


def _run(op, x):
    out = np.full_like(x, 12345.0)
    _math_kernel[(zetile.cdiv(x.size, 1024),)](x, out, x.size, OP=op, BLOCK=1024)
    return out


def _ulps(got, ref64):
    ref = ref64.astype(np.float32)
    spacing = np.spacing(np.abs(ref)).astype(np.float64)
    return np.abs(got.astype(np.float64) - ref64) / spacing


def test_exp_f32_within_2_ulp():
    rng = np.random.default_rng(0)
    # Every exponent range where e^x is a normal float, densely, plus the edges.
    x = np.concatenate([
        rng.uniform(-87.33, 88.72, 400_000).astype(np.float32),
        rng.uniform(-1, 1, 100_000).astype(np.float32),
        np.float32([0.0, -0.0, 1e-30, -1e-30, 88.72283, 88.7228, -87.336, 1.0, -1.0, 0.5]),
    ])
    got = _run("exp", x)
    ref = np.exp(x.astype(np.float64))
    err = _ulps(got, ref)
    assert err.max() <= 2.0, (err.max(), x[err.argmax()])


def test_exp_f32_special_values():
    x = np.float32([-np.inf, np.inf, np.nan, 89.0, 100.0, -88.0, -100.0, -1e30, 1e30])
    got = _run("exp", x)
    assert got[0] == 0 and got[1] == np.inf and np.isnan(got[2])
    assert got[3] == np.inf and got[4] == np.inf and got[8] == np.inf
    # Below FLT_MIN the result is flushed to zero (documented in cpu_math.c).
    assert got[5] == 0 and got[6] == 0 and got[7] == 0


@pytest.mark.parametrize("op,lo,hi", [("log", 1e-30, 1e30), ("sin", -100.0, 100.0),
                                      ("cos", -100.0, 100.0)])
def test_vector_math_within_4_ulp(op, lo, hi):
    rng = np.random.default_rng(1)
    if op == "log":
        x = np.exp(rng.uniform(np.log(lo), np.log(hi), 200_000)).astype(np.float32)
    else:
        x = rng.uniform(lo, hi, 200_000).astype(np.float32)
    got = _run(op, x)
    ref = getattr(np, op)(x.astype(np.float64))
    err = _ulps(got, ref)
    if op != "log":
        # Near zeros of sin/cos a tiny absolute error is many ulps: compare
        # absolutely there, as glibc's own tests do.
        near_zero = np.abs(ref) < 1e-3
        assert np.abs(got[near_zero] - ref[near_zero]).max() < 1e-6
        err = err[~near_zero]
    assert err.max() <= 4.0, (op, err.max())
