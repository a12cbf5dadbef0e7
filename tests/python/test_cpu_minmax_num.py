"""arith.maxnumf / minnumf (tl.max, tl.min, tl.maximum, tl.minimum) on the CPU
target are llvm.intr.maxnum / minnum (issue 16, session 18; cpu_ops.c
minmax_num_fn). Left to arith-expand they were compares and selects, which in a
reduction's partial row LLVM made into masked stores (softmax's row max on
AVX2). The values must stay maxnum's: a NaN operand is ignored unless both are
NaN (E4, against numpy's fmax / fmin)."""
import numpy as np
import pytest

import zetile
import zetile.language as tl

pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py

BLOCK = 256


@zetile.jit
def _row_minmax(x_ptr, mx_ptr, mn_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + row * n + offs, mask=m, other=-float("inf"))
    tl.store(mx_ptr + row, tl.max(x, axis=0))
    y = tl.load(x_ptr + row * n + offs, mask=m, other=float("inf"))
    tl.store(mn_ptr + row, tl.min(y, axis=0))


@zetile.jit
def _pairwise(a_ptr, b_ptr, mx_ptr, mn_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs, mask=m)
    tl.store(mx_ptr + offs, tl.maximum(a, b), mask=m)
    tl.store(mn_ptr + offs, tl.minimum(a, b), mask=m)


def _rows(n, dtype, rng):
    x = rng.standard_normal((10, n)).astype(dtype)
    x[1, 3] = np.nan                       # one NaN among numbers
    x[2, :] = np.nan                       # all NaN: the result is NaN
    x[3, ::2] = np.nan                     # every other lane NaN
    x[4, n - 1] = np.inf                   # +inf in the last lane
    x[5, 0] = -np.inf
    x[6, :] = -np.inf                      # all -inf
    x[7, 1:] = np.nan                      # NaN but one lane
    x[8, : n // 2] = np.nan                # the first half NaN
    return x


def _ref(x, fn, other):
    # maxnum over the block (the masked lanes are `other`): NaN lanes
    # ignored unless all are NaN.
    out = []
    for r in x:
        r = np.concatenate([r, np.full(BLOCK - len(r), other, x.dtype)])
        ok = r[~np.isnan(r)]
        out.append(np.nan if ok.size == 0 else fn(ok))
    return np.array(out, x.dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [256, 200, 37])
def test_row_max_min_ignore_nan(dtype, n):
    x = _rows(n, dtype, np.random.default_rng(n))
    mx = np.empty(x.shape[0], dtype)
    mn = np.empty(x.shape[0], dtype)
    _row_minmax[(x.shape[0],)](x, mx, mn, n, BLOCK=BLOCK)
    np.testing.assert_array_equal(mx, _ref(x, np.max, -np.inf))
    np.testing.assert_array_equal(mn, _ref(x, np.min, np.inf))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_maximum_minimum_elementwise_like_fmax(dtype):
    rng = np.random.default_rng(5)
    n = 3 * BLOCK + 41
    a = rng.standard_normal(n).astype(dtype)
    b = rng.standard_normal(n).astype(dtype)
    a[::7] = np.nan
    b[::5] = np.nan                         # lanes 0, 35, 70 ...: both NaN
    a[3::11] = np.inf
    b[4::13] = -np.inf
    mx = np.empty_like(a)
    mn = np.empty_like(a)
    _pairwise[(zetile.cdiv(n, BLOCK),)](a, b, mx, mn, n, BLOCK=BLOCK)
    np.testing.assert_array_equal(mx, np.fmax(a, b))
    np.testing.assert_array_equal(mn, np.fmin(a, b))


def test_lowered_as_the_intrinsic():
    # The lowering's LLVM dialect: the reductions' combines are the
    # intrinsics, not arith-expand's compare (fcmp ugt / uno) and select.
    ck = zetile.compile(_row_minmax, "*fp32, *fp32, *fp32, i32", constexprs={"BLOCK": BLOCK},
                        cached=False)
    llvm = ck.asm["llvm"]
    assert "llvm.intr.maxnum" in llvm and "llvm.intr.minnum" in llvm
    assert 'llvm.fcmp "uno"' not in llvm, "maxnumf/minnumf expanded into compares"
