"""Tree reductions that read a masked load block by block (issue 16;
lowering/cpu/cpu_reduce_tree.c, cpu_range.c cpu_split_block).

The first level of the tree reads each 16-lane block of a 1-D masked value
with the mask `cols < n` known true when the whole block is below n (plain
vector loads), and reads the mask otherwise. Each case here would go wrong if
a block that reaches past n were read as unmasked: the row sits inside a
larger array whose elements past n are huge sentinels, and `other` is not the
combiner's identity, so a masked-off lane that is read or dropped changes the
result (E4).
"""
import re

import numpy as np
import pytest

import zetile
import zetile.language as tl


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


@zetile.jit
def _row_reduce(x_ptr, out_ptr, stride, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n
    if OP == 0:
        x = tl.load(x_ptr + row * stride + cols, mask=m, other=-3.0)
        r = tl.max(x, axis=0)
    elif OP == 1:
        x = tl.load(x_ptr + row * stride + cols, mask=m, other=0.25)
        r = tl.sum(x, axis=0)
    elif OP == 2:
        x = tl.load(x_ptr + row * stride + cols, mask=m, other=-float("inf"))
        r = tl.max(x, axis=0)
    else:
        x = tl.load(x_ptr + row * stride + cols, mask=m, other=7)
        r = tl.sum(x, axis=0)
    tl.store(out_ptr + row, r)


BLOCK = 1024
NS = [1, 2, 15, 16, 17, 127, 128, 129, 781, 1008, 1009, 1023, 1024]


def _rows(n, dtype, rng):
    # 8 rows of `stride` elements; each row's tail past n is a sentinel that
    # any unmasked read of it would show.
    stride = BLOCK + 64
    if dtype == np.int32:
        x = rng.integers(-1000, 1000, (8, stride)).astype(np.int32)
        x[:, n:] = 1 << 20
        return x
    x = rng.standard_normal((8, stride)).astype(np.float32)
    x[:, n:] = 1e30
    x[1, :n] = np.nan                      # all NaN
    x[2, :n] = -np.inf                     # all -inf
    x[3, n // 2] = np.nan                  # one NaN
    x[4, n - 1] = np.inf                   # +inf at the mask's last lane
    x[5, :n] = -10.0                       # below `other` = -3 for max
    return x


def _run(op, x, n):
    out = np.empty(x.shape[0], x.dtype)
    _row_reduce[(x.shape[0],)](x, out, x.shape[1], n, OP=op, BLOCK=BLOCK)
    return out


def _max_ref(row, other):
    # arith.maxnumf over the block: NaN lanes are ignored unless all are NaN.
    vals = np.concatenate([row, np.full(BLOCK - len(row), other, np.float32)])
    ok = vals[~np.isnan(vals)]
    return np.float32(np.nan) if ok.size == 0 else ok.max()


@pytest.mark.parametrize("n", NS)
def test_masked_max(n):
    x = _rows(n, np.float32, np.random.default_rng(n))
    for op, other in ((0, -3.0), (2, -np.inf)):
        got = _run(op, x, n)
        want = np.array([_max_ref(r[:n], other) for r in x], np.float32)
        np.testing.assert_array_equal(got, want, err_msg=f"op {op} n {n}")


@pytest.mark.parametrize("n", NS)
def test_masked_sum(n):
    x = _rows(n, np.float32, np.random.default_rng(100 + n))
    got = _run(1, x, n)
    for i, r in enumerate(x):
        want = r[:n].astype(np.float64).sum() + 0.25 * (BLOCK - n)
        if np.isnan(want) or np.isinf(want):
            assert np.isnan(got[i]) if np.isnan(want) else got[i] == want, (i, got[i], want)
        else:
            assert abs(got[i] - want) <= 1e-5 * (np.abs(r[:n]).sum() + BLOCK), (i, got[i], want)


@pytest.mark.parametrize("n", NS)
def test_masked_int_sum_exact(n):
    x = _rows(n, np.int32, np.random.default_rng(200 + n))
    got = _run(3, x, n)
    want = x[:, :n].astype(np.int64).sum(axis=1) + 7 * (BLOCK - n)
    np.testing.assert_array_equal(got.astype(np.int64), want)


def test_split_path_emitted():
    # The case above runs through the split blocks (a compare of the block's
    # end with the mask's bound in the tree's first level), not only the
    # plain masked loop.
    ck = zetile.compile(_row_reduce, {"x_ptr": "*fp32", "out_ptr": "*fp32", "stride": "i32",
                                      "n": "i32"}, constexprs={"OP": 0, "BLOCK": BLOCK})
    # The first level's blocks branch on `start + 16 <= bound` (AVX-512: the
    # group's first row, a copy, and the rows combined into it; without:
    # each group of 8 rows, `start + 128 <= bound`).
    mlir = ck.asm["mlir"]

    def branches(pred):
        names = re.findall(r"(%\S+) = arith\.cmpi " + pred + r",", mlir)
        return [n for n in names if re.search(r"scf\.if " + re.escape(n) + r" \{", mlir)]

    if _avx512():
        assert len(branches("ule")) >= 2, mlir
        return
    # Without AVX-512 a block wholly past the bound reads no mask: a third
    # branch on `start >= bound` takes `other` for every lane (session 18;
    # on AVX-512 hosts it measured slower, cpu_split_block).
    assert len(branches("ule")) >= 1 and len(branches("uge")) >= 1, mlir
    # And the first level takes a group (8 rows of 16 lanes, 512 bytes) in
    # one lane loop, its partial in registers, the row read in address
    # order (session 19): the branch for a group below the bound loads all
    # 8 of its rows, where row k of every group came before row k + 1 (the
    # row read as 8 streams 512 bytes apart, one load per branch).
    full, past = branches("ule")[0], branches("uge")[0]
    body = mlir[mlir.index("scf.if " + full + " {"):mlir.index("scf.if " + past + " {")]
    assert body.count("llvm.load") == 8, body


def _avx512():
    with open("/proc/cpuinfo") as f:
        return " avx512f" in f.read()
