"""2-D index arithmetic meeting data on Xe (masks and one-hot matrices
evaluated into blocks), for test_xe_index_data.py."""
import zetile as triton
import zetile.language as tl


@triton.jit
def causal_mask(X, OUT, M: tl.constexpr, N: tl.constexpr):
    # Attention's causal mask: a 2-D where on an index comparison.
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    y = tl.where(rm[:, None] >= rn[None, :], x, float("-inf"))
    tl.store(OUT + rm[:, None] * N + rn[None, :], tl.exp(y - tl.max(y, axis=1)[:, None]))


@triton.jit
def flip_gather(X, FLIP, GATHER, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    tl.store(FLIP + offs, tl.flip(x, 0))
    tl.store(GATHER + offs, tl.gather(x, (offs * 7 + 3) % N, 0))


@triton.jit
def ramp_plus(X, OUT, M: tl.constexpr, N: tl.constexpr):
    # Index arithmetic converted to data: (i * N + j).to(float) + x.
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    idx = (rm[:, None] * N + rn[None, :]).to(tl.float32)
    tl.store(OUT + rm[:, None] * N + rn[None, :], x + idx)


@triton.jit
def ravel_unravel(X, FLAT, TILE, M: tl.constexpr, N: tl.constexpr):
    # 2-D -> 1-D (tl.ravel) and 1-D -> 2-D (tl.reshape) move rows only.
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    k = tl.arange(0, M * N)
    tl.store(FLAT + k, tl.ravel(x) * 2)
    f = tl.load(X + k)
    tl.store(TILE + rm[:, None] * N + rn[None, :], tl.reshape(f, (M, N)) + 1)
