"""Kernels that move elements between lanes on Xe (xe_reshape.c) and narrow
2-D tiles (2, 4 or 8 columns): transposes and reshapes of small tiles,
tl.join / tl.split / tl.interleave, a rotary-embedding style pair update."""
import zetile
import zetile.language as tl


@zetile.jit
def transpose(X, OUT, M: tl.constexpr, N: tl.constexpr, PERMUTE: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    if PERMUTE:
        y = tl.permute(x * 2, (1, 0))
    else:
        y = tl.trans(x) * 2
    tl.store(OUT + rn[:, None] * M + rm[None, :], y + 1)


@zetile.jit
def reshape_2d(X, OUT, M: tl.constexpr, N: tl.constexpr, R: tl.constexpr, C: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    y = tl.reshape(x + 1, (R, C))
    rr = tl.arange(0, R)
    rc = tl.arange(0, C)
    tl.store(OUT + rr[:, None] * C + rc[None, :], y - rc[None, :].to(y.dtype))


@zetile.jit
def rotate_pairs(X, COS, SIN, OUT, N: tl.constexpr):
    # x holds (re, im) pairs; out = x * (cos + i sin), pairs again.
    offs = tl.arange(0, N)
    pair = tl.arange(0, 2)
    x = tl.load(X + offs[:, None] * 2 + pair[None, :])
    re, im = tl.split(x)
    c = tl.load(COS + offs)
    s = tl.load(SIN + offs)
    out = tl.join(re * c - im * s, re * s + im * c)
    tl.store(OUT + offs[:, None] * 2 + pair[None, :], out)


@zetile.jit
def interleave(X, Y, OUT, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    tl.store(OUT + tl.arange(0, 2 * N), tl.interleave(x, y * 10))


@zetile.jit
def narrow_sums(X, ROWS, COLS, N: tl.constexpr, C: tl.constexpr):
    rn = tl.arange(0, N)
    rc = tl.arange(0, C)
    x = tl.load(X + rn[:, None] * C + rc[None, :])
    tl.store(ROWS + rn, tl.sum(x, axis=1) + tl.max(x, axis=1))
    tl.store(COLS + rc, tl.sum(x, axis=0))


@zetile.jit
def sort_rows(X, OUT, HIST, N: tl.constexpr, DESCENDING: tl.constexpr, BINS: tl.constexpr):
    # tl.sort compares every pair (an N x N mask whose row sums are ranks);
    # tl.histogram sums a one-hot N x BINS tile along its rows.
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    tl.store(OUT + offs, tl.sort(x, descending=DESCENDING))
    h = tl.histogram((tl.abs(x) % BINS).to(tl.int32), BINS)
    tl.store(HIST + tl.arange(0, BINS), h)


@zetile.jit
def cat_tiles(X, Y, OUT, M: tl.constexpr, N: tl.constexpr, DIM: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    if DIM < 0:  # 1-D
        z = tl.cat(tl.load(X + rn), tl.load(Y + rn) * 3, can_reorder=False)
        tl.store(OUT + tl.arange(0, 2 * N), z)
    else:
        x = tl.load(X + rm[:, None] * N + rn[None, :])
        y = tl.load(Y + rm[:, None] * N + rn[None, :])
        z = tl.cat(x, y * 3, can_reorder=False, dim=DIM)
        if DIM == 0:
            r2 = tl.arange(0, 2 * M)
            tl.store(OUT + r2[:, None] * N + rn[None, :], z)
        else:
            c2 = tl.arange(0, 2 * N)
            tl.store(OUT + rm[:, None] * (2 * N) + c2[None, :], z)


@zetile.jit
def narrow_scans(X, DOWN, ALONG, N: tl.constexpr, C: tl.constexpr, REV: tl.constexpr):
    rn = tl.arange(0, N)
    rc = tl.arange(0, C)
    offs = rn[:, None] * C + rc[None, :]
    x = tl.load(X + offs)
    tl.store(DOWN + offs, tl.cumsum(x, axis=0, reverse=REV))
    tl.store(ALONG + offs, tl.cumsum(x, axis=1, reverse=REV))


@zetile.jit
def _fill(a, b):
    # Forward fill: the later non-zero value wins (not commutative).
    return tl.where(b != 0, b, a)


@zetile.jit
def narrow_fill(X, DOWN, ALONG, N: tl.constexpr, C: tl.constexpr, REV: tl.constexpr):
    rn = tl.arange(0, N)
    rc = tl.arange(0, C)
    offs = rn[:, None] * C + rc[None, :]
    x = tl.load(X + offs)
    tl.store(DOWN + offs, tl.associative_scan(x, 0, _fill, reverse=REV))
    tl.store(ALONG + offs, tl.associative_scan(x, 1, _fill, reverse=REV))


@zetile.jit
def narrow_affine(X, W, B, OUT, N: tl.constexpr, C: tl.constexpr):
    # A (1, C) row and an (N, 1) column broadcast over an (N, C) narrow tile.
    rn = tl.arange(0, N)
    rc = tl.arange(0, C)
    offs = rn[:, None] * C + rc[None, :]
    x = tl.load(X + offs)
    w = tl.load(W + rc)
    b = tl.load(B + rn)
    tl.store(OUT + offs, x * w[None, :] + b[:, None])
