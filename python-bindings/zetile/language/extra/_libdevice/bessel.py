"""Bessel functions: j0, j1, y0, y1 (series on [0, 8], Hankel's asymptotic
forms beyond), the modified cyl_bessel_i0/i1, and the integer orders jn
(forward or Miller's backward recurrence) and yn."""
from ....jit import jit
from ... import core as tl
from .float_bits import _bits, signbit
from .chebyshev import (_cheb_i0a, _cheb_i0b, _cheb_i1a, _cheb_i1b, _cheb_j0s, _cheb_j1s, _cheb_p0,
    _cheb_p1, _cheb_q0, _cheb_q1, _cheb_y0s, _cheb_y1s)


@jit
def _hankel(x, pc, qc):
    # sqrt(2/(pi x)) times (cos x, sin x) combinations: cos(x - pi/4) =
    # (cos x + sin x)/sqrt(2) etc., so no multiple of pi/4 is rounded into x.
    z = 8.0 / x
    s = 2.0 * z * z - 1.0
    return s, z, tl.sqrt(0.6366197723675814 / x), tl.cos(x), tl.sin(x)


@jit
def j0(x):
    a = tl.abs(x)
    am = tl.minimum(a, 8.0)
    small = _cheb_j0s(am * am * 0.03125 - 1.0)
    al = tl.maximum(a, 8.0)
    s, z, amp, c, sn = _hankel(al, 0, 0)
    p = _cheb_p0(s)
    q = z * _cheb_q0(s)
    # chi = x - pi/4: cos chi = (c + sn)/sqrt2, sin chi = (sn - c)/sqrt2
    big = amp * 0.7071067811865476 * (p * (c + sn) - q * (sn - c))
    r = tl.where(a <= 8.0, small, big)
    r = tl.where(a == float("inf"), 0.0, r)
    r = tl.where(x == 0, 1.0, r)  # exactly 1 (the series sums to 1 + 1ulp)
    return tl.where(x != x, x, r)


@jit
def j1(x):
    a = tl.abs(x)
    am = tl.minimum(a, 8.0)
    small = a * _cheb_j1s(am * am * 0.03125 - 1.0)
    al = tl.maximum(a, 8.0)
    s, z, amp, c, sn = _hankel(al, 0, 0)
    p = _cheb_p1(s)
    q = z * _cheb_q1(s)
    # chi = x - 3pi/4: cos chi = (sn - c)/sqrt2, sin chi = -(sn + c)/sqrt2
    big = amp * 0.7071067811865476 * (p * (sn - c) + q * (sn + c))
    r = tl.where(a <= 8.0, small, big)
    r = tl.where(a == float("inf"), 0.0, r)
    r = tl.where(signbit(x) != 0, -r, r)  # odd, -0 included
    return tl.where(x != x, x, r)


@jit
def y0(x):
    am = tl.minimum(tl.maximum(x, 0.0), 8.0)
    small = _cheb_y0s(am * am * 0.03125 - 1.0) + 0.6366197723675814 * tl.log(am) * j0(am)
    al = tl.maximum(x, 8.0)
    s, z, amp, c, sn = _hankel(al, 0, 0)
    p = _cheb_p0(s)
    q = z * _cheb_q0(s)
    big = amp * 0.7071067811865476 * (p * (sn - c) + q * (c + sn))
    r = tl.where(x <= 8.0, small, big)
    r = tl.where(x == float("inf"), 0.0, r)
    r = tl.where(x == 0, float("-inf"), r)
    return tl.where((x < 0) | (x != x), float("nan"), r)


@jit
def y1(x):
    am = tl.minimum(tl.maximum(x, 0.0), 8.0)
    small = am * _cheb_y1s(am * am * 0.03125 - 1.0) + 0.6366197723675814 * (tl.log(am) * j1(am) - 1.0 / am)
    al = tl.maximum(x, 8.0)
    s, z, amp, c, sn = _hankel(al, 0, 0)
    p = _cheb_p1(s)
    q = z * _cheb_q1(s)
    big = amp * 0.7071067811865476 * (q * (sn - c) - p * (sn + c))
    r = tl.where(x <= 8.0, small, big)
    r = tl.where(x == float("inf"), 0.0, r)
    r = tl.where(x == 0, float("-inf"), r)
    return tl.where((x < 0) | (x != x), float("nan"), r)


@jit
def cyl_bessel_i0(x):
    # e^|x| times e^-x I0 (series on [0, 8], sqrt(x) e^-x I0 beyond); e^x as
    # e^(x/2) twice so that the result overflows only where I0 does (713.98).
    a = tl.abs(x)
    am = tl.minimum(a, 8.0)
    small = _cheb_i0a(am * 0.25 - 1.0) * tl.exp(am)
    al = tl.maximum(a, 8.0)
    h = tl.exp(0.5 * al)
    big = _cheb_i0b(16.0 / al - 1.0) / tl.sqrt(al) * h * h
    r = tl.where(a <= 8.0, small, big)
    r = tl.where(a == float("inf"), a, r)
    r = tl.where(x == 0, 1.0, r)  # exactly 1 (the series sums to 1 + 1ulp)
    return tl.where(x != x, x, r)


@jit
def cyl_bessel_i1(x):
    a = tl.abs(x)
    am = tl.minimum(a, 8.0)
    small = am * _cheb_i1a(am * 0.25 - 1.0) * tl.exp(am)
    al = tl.maximum(a, 8.0)
    h = tl.exp(0.5 * al)
    big = _cheb_i1b(16.0 / al - 1.0) / tl.sqrt(al) * h * h
    r = tl.where(a <= 8.0, small, big)
    r = tl.where(a == float("inf"), a, r)
    r = tl.where(signbit(x) != 0, -r, r)  # odd, -0 included
    return tl.where(x != x, x, r)


# ------------------------------------------------------------ integer-order Bessel functions
@jit
def yn(n, x):
    # Forward recurrence Y(k+1) = (2k/x) Y(k) - Y(k-1) from y0, y1 (stable for Y:
    # it grows with k); the loop runs to the largest |n| of the block, each
    # element keeping its own order's value. Y(-n) = (-1)^n Y(n).
    n = n + (_bits(x) * 0).to(tl.int32)
    m = tl.abs(n)
    a = y0(x)
    b = y1(x)
    r = tl.where(m == 0, a, b)
    two_over_x = 2.0 / x
    top = tl.max(tl.ravel(m), axis=0)
    for k in range(1, top):
        c = k * two_over_x * b - a
        a = b
        b = c
        r = tl.where(m == k + 1, b, r)
    return tl.where(((n < 0) & ((m & 1) == 1)), -r, r)


@jit
def jn(n, x):
    # Below the turning point (|n| < |x|) the forward recurrence from j0, j1 is
    # stable; above it Miller's backward recurrence (A&S 9.12 / Numerical Recipes'
    # bessj scheme) from an order m > |n| + sqrt(40|n|), normalized by
    # J0 + 2(J2 + J4 + ...) = 1 and rescaled when it grows past 1e10 (the same
    # factor for every order, so the ratio J(|n|)/J(0) is kept).
    n = n + (_bits(x) * 0).to(tl.int32)
    m = tl.abs(n)
    ax = tl.abs(x)
    # forward
    a = j0(ax)
    b = j1(ax)
    fwd = tl.where(m == 0, a, b)
    two_over_x = 2.0 / ax
    top = tl.max(tl.ravel(tl.where(m.to(x.dtype) < ax, m, 0)), axis=0)
    for k in range(1, top):
        c = k * two_over_x * b - a
        a = b
        b = c
        fwd = tl.where(m == k + 1, b, fwd)
    # backward, for every element (its result is used where m >= |x|)
    mf = m.to(x.dtype)
    start = (2 * ((m + tl.sqrt(40.0 * mf + 1.0).to(tl.int32)) // 2 + 8))
    big_m = tl.max(tl.ravel(start), axis=0)
    bj = ax * 0.0
    bjp = ax * 0.0 + 1e-30
    s = ax * 0.0
    res = ax * 0.0
    safe_x = tl.where(ax == 0, 1.0, ax)
    for i in range(0, big_m):
        k = big_m - i  # k = big_m .. 1
        act = k <= start
        bjm = tl.where(act, k * (2.0 / safe_x) * bjp - bj, bjp * 0.0)
        bj = tl.where(act, bjp, bj)
        bjp = tl.where(act, bjm, tl.where(k - 1 == start, 1.0, bjp))
        # bjp now holds J(k-1) (unnormalized), bj holds J(k)
        res = tl.where(act & (k - 1 == m), bjp, res)
        s = tl.where(act & ((k - 1) % 2 == 0) & (k - 1 > 0), s + bjp, s)
        huge = tl.abs(bjp) > 1e10
        bjp = tl.where(huge, bjp * 1e-10, bjp)
        bj = tl.where(huge, bj * 1e-10, bj)
        res = tl.where(huge, res * 1e-10, res)
        s = tl.where(huge, s * 1e-10, s)
    norm = 2.0 * s + bjp  # bjp = J(0) at the end
    bwd = res / norm
    r = tl.where((mf < ax) | (m <= 1), fwd, bwd)
    r = tl.where(ax == 0, tl.where(m == 0, 1.0, 0.0), r)
    # J(-n) = (-1)^n J(n); J(n, -x) = (-1)^n J(n, x)
    odd = (m & 1) == 1
    # (counted as integers: an i1 inequality here made IGC abort, as ~ on i1 did in fma_rd)
    flip = odd & ((n < 0).to(tl.int32) + (x < 0).to(tl.int32) == 1)
    return tl.where(flip, -r, r)
