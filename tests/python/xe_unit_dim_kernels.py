"""Kernels on (M, 1) and (1, N) tensors, written as Triton code writes them
(keep_dims reductions, `[:, None]` pointers and masks), for
test_xe_unit_dims.py."""
import zetile as triton
import zetile.language as tl


@triton.jit
def row_stats(X, SUM, CENTERED, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # Row sums stored through a (BM, 1) pointer tensor, and the rows minus
    # their max (a (BM, 1) value broadcast to (BM, BN)): the first stays a
    # column, the second feeds a genuinely 2-D op.
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(X + rm[:, None] * N + rn[None, :], mask=mask, other=0.0)
    s = tl.sum(x, axis=1, keep_dims=True)
    mx = tl.max(x, axis=1, keep_dims=True)  # the padding's zeros count (BN > N)
    tl.store(SUM + rm[:, None], s * 0.5 + 1.0, mask=rm[:, None] < M)
    tl.store(CENTERED + rm[:, None] * N + rn[None, :], x - mx, mask=mask)


@triton.jit
def column_axpy(X, Y, OUT, n, a, BLOCK: tl.constexpr, ROW: tl.constexpr):
    # out = a * x + y on a (BLOCK, 1) column, or a (1, BLOCK) row.
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if ROW:
        idx = i[None, :]
    else:
        idx = i[:, None]
    m = idx < n
    x = tl.load(X + idx, mask=m, other=0)
    y = tl.load(Y + idx, mask=m, other=0)
    tl.store(OUT + idx, a * x + y, mask=m)


@triton.jit
def erf_1d(X, OUT, N, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < N
    x = tl.load(X + o, mask=m)
    tl.store(OUT + o, tl.erf(x) + tl.exp(x * 0.25), mask=m)


@triton.jit
def erf_2d(X, OUT, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # A 2-D tile (DPAS-sized blocks on Xe), as a GELU's erf would be.
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(X + rm[:, None] * N + rn[None, :], mask=mask, other=0.0)
    y = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    tl.store(OUT + rm[:, None] * N + rn[None, :], y, mask=mask)


@triton.jit
def softmax_squeeze(X, OUT, N: tl.constexpr):
    # tl.softmax on a 1-D tensor (a one-element max broadcast back) and a
    # squeeze of an unsqueezed tensor.
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    y = tl.softmax(x) + tl.squeeze(tl.unsqueeze(x, 0), 0)
    tl.store(OUT + offs, y)
