"""Kernels transposing tiles held in registers (lowering/xe/xe_transpose.c):
tl.trans of a computed tile, stored or fed to a dot."""
import zetile
import zetile.language as tl


@zetile.jit
def trans_tile(X, Y, R: tl.constexpr, C: tl.constexpr):
    # Y = (2 X)^T: the scaled tile is data in accumulator-shaped blocks, its
    # transpose moves lanes (one subgroup) or crosses subgroups (SLM).
    rr = tl.arange(0, R)
    rc = tl.arange(0, C)
    x = tl.load(X + rr[:, None] * C + rc[None, :]) * 2
    tl.store(Y + rc[:, None] * R + rr[None, :], tl.trans(x))


@zetile.jit
def trans_into_b(A, B, X, C, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # C = X @ ((A @ B).to(fp16))^T: an accumulator transposed into a dot's B.
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(A + rm[:, None] * K + rk[None, :])
    b = tl.load(B + rk[:, None] * N + rn[None, :])
    c = tl.dot(a, b)
    x = tl.load(X + rn[:, None] * M + rm[None, :])
    tl.store(C + rn[:, None] * N + rn[None, :], tl.dot(x, tl.trans(c.to(tl.float16))))


@zetile.jit
def trans_into_a(A, B, Y, C, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # C = ((A @ B).to(fp16))^T @ Y: an accumulator transposed into a dot's A.
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(A + rm[:, None] * K + rk[None, :])
    b = tl.load(B + rk[:, None] * N + rn[None, :])
    c = tl.dot(a, b)
    y = tl.load(Y + rm[:, None] * N + rn[None, :])
    tl.store(C + rn[:, None] * N + rn[None, :], tl.dot(tl.trans(c.to(tl.float16)), y))
