"""Kernels whose dots want different subgroup grids (lowering/xe/xe_grids.c)."""
import zetile
import zetile.language as tl


@zetile.jit
def two_dots(A, B, X, Y, C, E, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
             M2: tl.constexpr, N2: tl.constexpr):
    # C = A @ B (M x N) and E = X @ Y (M2 x N2): with N2 = 16 the kernel's
    # grid (columns first for the first dot: 1x4) leaves the second dot 4
    # columns a subgroup; it gets a grid of its own (4x1).
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(A + rm[:, None] * K + rk[None, :])
    b = tl.load(B + rk[:, None] * N + rn[None, :])
    tl.store(C + rm[:, None] * N + rn[None, :], tl.dot(a, b))
    rm2 = tl.arange(0, M2)
    rn2 = tl.arange(0, N2)
    x = tl.load(X + rm2[:, None] * K + rk[None, :])
    y = tl.load(Y + rk[:, None] * N2 + rn2[None, :])
    e = tl.dot(x, y)
    # An epilogue on the second dot's grid.
    tl.store(E + rm2[:, None] * N2 + rn2[None, :], tl.where(e > 0, e, 0.5 * e))


@zetile.jit
def dot_into_narrow_dot(A, B, W, C, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                        D: tl.constexpr):
    # C = W @ (A @ B): the first dot's accumulator (kernel grid) is the B
    # operand of a dot on another grid: a tile crossing grids.
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    rd = tl.arange(0, D)
    a = tl.load(A + rm[:, None] * K + rk[None, :])
    b = tl.load(B + rk[:, None] * N + rn[None, :])
    h = tl.dot(a, b)
    w = tl.load(W + rd[:, None] * M + rm[None, :])
    tl.store(C + rd[:, None] * N + rn[None, :], tl.dot(w, h.to(tl.float16)))
