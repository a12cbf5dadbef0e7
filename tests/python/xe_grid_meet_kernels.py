"""Kernels of tests/python/test_xe_grids_meet.py: two dots on different
subgroup grids whose data meet (issue 12 (c))."""
import numpy as np

import zetile
import zetile.language as tl


@zetile.jit
def two_grids_meet(A, B, C, D, O, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                   BN2: tl.constexpr):
    # Two dots of different widths (64x64 takes a 1xN grid, 64x16 an Nx1
    # one) whose data meet: x + the row sums of y, broadcast over x.
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    rn2 = tl.arange(0, BN2)
    a = tl.load(A + rm[:, None] * BK + rk[None, :])
    b = tl.load(B + rk[:, None] * BN + rn[None, :])
    x = tl.dot(a, b)
    c = tl.load(C + rm[:, None] * BK + rk[None, :])
    d = tl.load(D + rk[:, None] * BN2 + rn2[None, :])
    y = tl.dot(c, d)
    x = x + tl.sum(y, 1)[:, None]
    tl.store(O + rm[:, None] * BN + rn[None, :], x)


SIG_GRIDS = {"A": "*fp16", "B": "*fp16", "C": "*fp16", "D": "*fp16", "O": "*fp32"}
GRID_CASES = [4, 8]  # num_warps (64x64 / 64x16 dots, K 32)


def run_grids(cases=GRID_CASES, seed=4):
    """Largest error relative to max |out| against float64, per num_warps."""
    dev = zetile.get_device()
    rng = np.random.default_rng(seed)
    out = {}
    for nw in cases:
        a, b = (rng.integers(-4, 5, s).astype(np.float16) for s in ((64, 32), (32, 64)))
        c, d = (rng.integers(-4, 5, s).astype(np.float16) for s in ((64, 32), (32, 16)))
        o = np.full((64, 64), 7.0, np.float32)
        two_grids_meet[(1,)](a, b, c, d, o, BM=64, BN=64, BK=32, BN2=16, num_warps=nw)
        dev.synchronize()
        f = np.float64
        ref = a.astype(f) @ b.astype(f) + (c.astype(f) @ d.astype(f)).sum(1)[:, None]
        out[f"w{nw}"] = float(np.abs(o - ref).max() / np.abs(ref).max())
    return out
