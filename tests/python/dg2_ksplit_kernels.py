"""The kernel of test_dg2_ksplit.py (imported by its E5 subprocess too)."""
import zetile
import zetile.language as tl


@zetile.jit
def dot_tile(A, B, C, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(A + rm[:, None] * K + rk[None, :])
    b = tl.load(B + rk[:, None] * N + rn[None, :])
    tl.store(C + rm[:, None] * N + rn[None, :], tl.dot(a, b))
