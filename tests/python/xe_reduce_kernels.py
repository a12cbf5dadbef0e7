"""Reductions with user combine functions (tl.reduce with a @jit combiner,
tuples), for test_xe_user_reduce.py."""
import zetile as triton
import zetile.language as tl


@triton.jit
def _welford(mean_a, m2_a, w_a, mean_b, m2_b, w_b):
    w = w_a + w_b
    delta = mean_b - mean_a
    safe = tl.where(w == 0.0, 1.0, w)
    mean = mean_a + delta * (w_b / safe)
    m2 = m2_a + m2_b + delta * delta * (w_a * w_b / safe)
    return mean, m2, w


@triton.jit
def row_mean_var(X, MEAN, VAR, N, BLOCK: tl.constexpr):
    # One row per program, Welford's combination over the row.
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + row * N + offs, mask=m, other=0.0)
    w = tl.where(m, 1.0, 0.0)
    mean, m2, cnt = tl.reduce((x, tl.zeros_like(x), w), 0, _welford)
    tl.store(MEAN + row, mean)
    tl.store(VAR + row, m2 / cnt)


@triton.jit
def _argmax_first(v_a, i_a, v_b, i_b):
    # The larger value; on a tie the lower index (order independent).
    take_b = (v_b > v_a) | ((v_b == v_a) & (i_b < i_a))
    return tl.where(take_b, v_b, v_a), tl.where(take_b, i_b, i_a)


@triton.jit
def argmax_user(X, OUT, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N, other=-1000)
    v, i = tl.reduce((x, offs), 0, _argmax_first)
    tl.store(OUT, v * 1000 + i)


@triton.jit
def _sum_prod(a0, a1, b0, b1):
    return a0 + b0, a1 * b1


@triton.jit
def pair_2d(X, S, P, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    s, p = tl.reduce((x, x % 3 + 1), AXIS, _sum_prod)
    if AXIS == 0:
        tl.store(S + rn, s)
        tl.store(P + rn, p)
    else:
        tl.store(S + rm, s)
        tl.store(P + rm, p)


@triton.jit
def welford_long(X, MEAN, VAR, N, BLOCK: tl.constexpr):
    # A row long enough to be split across subgroups (BLOCK 1024).
    offs = tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=0.0)
    w = tl.where(m, 1.0, 0.0)
    mean, m2, cnt = tl.reduce((x, tl.zeros_like(x), w), 0, _welford)
    tl.store(MEAN, mean)
    tl.store(VAR, m2 / cnt)


@triton.jit
def _linear_rec(a1, b1, a2, b2):
    # h = a * h_prev + b composed: the scan of a linear recurrence (as
    # state-space models' selective scans write it).
    return a1 * a2, b1 * a2 + b2


@triton.jit
def _fill(x, y):
    # Forward fill (the last non-zero so far): associative, not commutative,
    # so the order a scan combines in shows.
    return tl.where(y != 0, y, x)


@triton.jit
def scan_user(A, B, H, S, R, N, BLOCK: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < N
    a = tl.load(A + offs, mask=m, other=1.0)
    b = tl.load(B + offs, mask=m, other=0.0)
    _, h = tl.associative_scan((a, b), 0, _linear_rec, reverse=REVERSE)
    tl.store(H + offs, h, mask=m)
    i = tl.load(S + offs, mask=m, other=0)
    tl.store(R + offs, tl.associative_scan(i, 0, _fill, reverse=REVERSE), mask=m)


@triton.jit
def scan2d(X, F, H, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr,
           REVERSE: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    tl.store(F + rm[:, None] * N + rn[None, :],
             tl.associative_scan(x % 3, AXIS, _fill, reverse=REVERSE))
    a = (x % 2 + 1).to(tl.float32) * 0.5
    _, h = tl.associative_scan((a, x.to(tl.float32)), AXIS, _linear_rec, reverse=REVERSE)
    tl.store(H + rm[:, None] * N + rn[None, :], h)


@triton.jit
def cumsum_row(X, OUT, N, BLOCK: tl.constexpr, REV: tl.constexpr):
    # A row long enough to be split across subgroups (BLOCK 1024).
    offs = tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=0)
    tl.store(OUT + offs, tl.cumsum(x, 0, reverse=REV), mask=m)


@triton.jit
def cumsum_tile(X, OUT, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr,
                REV: tl.constexpr, PROD: tl.constexpr):
    # A tile whose scan axis is split across subgroups at num_warps >= 2.
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    if PROD:
        y = tl.cumprod(x, axis=AXIS, reverse=REV)
    else:
        y = tl.cumsum(x, axis=AXIS, reverse=REV)
    tl.store(OUT + rm[:, None] * N + rn[None, :], y)


@triton.jit
def _add_both(a0, a1, b0, b1):
    return a0 + b0, a1 + b1


@triton.jit
def mixed_pair_scan(X, S, T, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr):
    # A loaded fp32 tile scanned beside an i32 tile built from aranges: on Xe
    # the index tile is made data, held in the loaded tile's blocks.
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    offs = rm[:, None] * N + rn[None, :]
    x = tl.load(X + offs)
    s, t = tl.associative_scan((x, offs * 0 + 1), AXIS, _add_both)
    tl.store(S + offs, s)
    tl.store(T + offs, t)
