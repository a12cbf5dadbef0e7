"""Accuracy and order of the CPU target's reductions (lowering/cpu/cpu_reduce_tree.c).

tl.sum of n floats must be about as accurate as numpy's pairwise sum: a
sequential sum was ~10x worse at n = 781 and far worse at n = 100003. The
error is measured against math.fsum (exact, rounded once) and averaged over
several inputs, since a single input can land near a float by luck.
"""
import math

import numpy as np
import pytest

import zetile
import zetile.language as tl


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


@zetile.jit
def _sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(x, axis=0))


@zetile.jit
def _rows_kernel(x_ptr, sum_ptr, max_ptr, min_ptr, xor_ptr, N: tl.constexpr, AXIS: tl.constexpr):
    r = tl.arange(0, N)
    offs = r[:, None] * N + r[None, :]
    x = tl.load(x_ptr + offs)
    tl.store(sum_ptr + r, tl.sum(x, axis=AXIS))
    tl.store(max_ptr + r, tl.max(x, axis=AXIS))
    tl.store(min_ptr + r, tl.min(x, axis=AXIS))
    tl.store(xor_ptr + r, tl.reduce(x.to(tl.int32, bitcast=True), AXIS, _xor))


@zetile.jit
def _xor(a, b):
    return a ^ b


@pytest.mark.parametrize("n", [781, 100003])
def test_sum_error_near_numpy(n):
    rng = np.random.default_rng(n)
    ours, numpys = [], []
    for _ in range(8):
        x = rng.random(n, dtype=np.float32)
        out = np.zeros(1, np.float32)
        _sum_kernel[(1,)](x, out, n, BLOCK=zetile.next_power_of_2(n))
        exact = math.fsum(x.astype(np.float64))
        ours.append(abs(float(out[0]) - exact) / exact)
        numpys.append(abs(float(np.sum(x)) - exact) / exact)
    ours, numpys = float(np.mean(ours)), float(np.mean(numpys))
    # Within 3x of numpy's mean relative error (half an ulp of the result
    # as a floor, for inputs where numpy happens to be exact).
    assert ours <= 3 * max(numpys, 2.0 ** -25), (ours, numpys)


@pytest.mark.parametrize("axis", [0, 1])
def test_2d_reductions_in_tree_order(axis):
    # Both axes, 64 elements each (tree order on the last axis, strided on
    # the first); max/min/xor must be exact, the sum close to fsum.
    n = 64
    rng = np.random.default_rng(axis)
    x = rng.standard_normal((n, n), dtype=np.float32)
    s, mx, mn = (np.zeros(n, np.float32) for _ in range(3))
    xr = np.zeros(n, np.int32)
    _rows_kernel[(1,)](x, s, mx, mn, xr, N=n, AXIS=axis)
    np.testing.assert_array_equal(mx, x.max(axis=axis))
    np.testing.assert_array_equal(mn, x.min(axis=axis))
    np.testing.assert_array_equal(xr, np.bitwise_xor.reduce(x.view(np.int32), axis=axis))
    exact = np.array([math.fsum(v) for v in np.moveaxis(x.astype(np.float64), axis, -1)])
    np.testing.assert_allclose(s, exact, rtol=0, atol=4 * np.abs(x).sum(axis=axis).max() * 2.0 ** -24)
