"""The error-function family: erfc and erfcx (Shepherd & Laframboise's
series), normcdf, and the inverses erfinv (Giles' polynomials), erfcinv
and normcdfinv."""
from ....jit import jit
from ... import core as tl
from .chebyshev import _cheb_erfcx


@jit
def _erfcx_pos(x):
    # erfcx(x) for x >= 0 as y/(1 + 2x), y from the series in (x - 3.75)/(x + 3.75);
    # past 1e30, 1/(x sqrt(pi)) (the next term is x^-2 smaller).
    xm = tl.minimum(x, 1e30)
    y = _cheb_erfcx((xm - 3.75) / (xm + 3.75))
    return tl.where(x > 1e30, 0.5641895835477563 / x, y / (1.0 + 2.0 * xm))


@jit
def _exp_sq(x):
    # exp(x*x) with x*x split exactly (fma): exp(hi) * (1 + lo); exp(x^2) of
    # the rounded square would be off by x^2 ulps.
    hi = x * x
    lo = tl.fma(x, x, -hi)
    lo = tl.where(hi < float("inf"), lo, 0.0)  # inf - inf
    return tl.exp(hi) * (1.0 + lo)


@jit
def _exp_neg_sq(x):
    hi = x * x
    lo = tl.fma(x, x, -hi)
    lo = tl.where(hi < float("inf"), lo, 0.0)  # inf - inf
    return tl.exp(-hi) * (1.0 - lo)


@jit
def erfcx(x):
    # e^(x^2) erfc(x); below 0, 2 e^(x^2) - erfcx(-x) (inf below -26.6).
    a = tl.abs(x)
    p = _erfcx_pos(a)
    r = tl.where(x < 0, 2.0 * _exp_sq(a) - p, p)
    r = tl.where(x == 0, 1.0, r)
    return tl.where(x != x, x, r)


@jit
def erfc(x):
    # Below 1/2, 1 - erf(x) (the result is above 0.47: no cancellation); above,
    # e^(-x^2) erfcx(x), which keeps relative precision down to the underflow.
    a = tl.abs(x)
    tail = _exp_neg_sq(a) * _erfcx_pos(a)
    r = tl.where(a < 0.5, 1.0 - tl.erf(x), tl.where(x < 0, 2.0 - tail, tail))
    return tl.where(x != x, x, r)


@jit
def _normcdf(x, c_hi, c_lo):
    uh = -x * c_hi
    ul = tl.fma(-x, c_hi + x * 0.0, -uh) - x * c_lo
    ul = tl.where(tl.abs(x) < float("inf"), ul, 0.0)
    a = tl.abs(uh)
    sq = uh * uh
    e = tl.fma(uh, uh, -sq) + 2.0 * uh * ul
    e = tl.where(sq < float("inf"), e, 0.0)
    tail = tl.exp(-sq) * (1.0 - e) * _erfcx_pos(a + tl.where(uh < 0, -ul, ul))
    r = tl.where(a < 0.5, 1.0 - tl.erf(uh + ul), tl.where(uh < 0, 2.0 - tail, tail))
    return tl.where(x != x, x, 0.5 * r)


@jit
def normcdf(x):
    # erfc(-x/sqrt(2))/2 with u = -x/sqrt(2) carried as hi + lo (the rounding of
    # u would be magnified by 2u^2 in the tail): e^(-u^2) from the exact square
    # of hi plus 2 hi lo. 1/sqrt(2) = c_hi + c_lo in the dtype.
    if x.dtype == tl.float64:
        return _normcdf(x, 0.7071067811865476, -4.833646656726457e-17)
    else:
        return _normcdf(x, 0.70710677, 1.2101617e-08)


@jit
def _erfinv_pos(a, q):
    # erfinv for a = |y| in [0, 1], q = 1 - a (exact, or only used for a >= 1/2
    # where it is). Start: Giles, "Approximating the erfinv function" (GPU
    # Computing Gems, 2011), single-precision form, from w = -log(q (1 + a));
    # then Newton steps: below 1/2 on a - erf(x); above on
    # log(erfc(x)) - log(q) = log(erfcx(x)) - x^2 - log(q), whose derivative
    # -2/(sqrt(pi) erfcx(x)) never underflows (q may be a denormal).
    w = -tl.log(q * (1.0 + a))
    ws = w - 2.5
    p1 = 2.81022636e-08
    p1 = 3.43273939e-07 + p1 * ws
    p1 = -3.5233877e-06 + p1 * ws
    p1 = -4.39150654e-06 + p1 * ws
    p1 = 0.00021858087 + p1 * ws
    p1 = -0.00125372503 + p1 * ws
    p1 = -0.00417768164 + p1 * ws
    p1 = 0.246640727 + p1 * ws
    p1 = 1.50140941 + p1 * ws
    wl = tl.sqrt(w) - 3.0
    p2 = -0.000200214257
    p2 = 0.000100950558 + p2 * wl
    p2 = 0.00134934322 + p2 * wl
    p2 = -0.00367342844 + p2 * wl
    p2 = 0.00573950773 + p2 * wl
    p2 = -0.0076224613 + p2 * wl
    p2 = 0.00943887047 + p2 * wl
    p2 = 1.00167406 + p2 * wl
    p2 = 2.83297682 + p2 * wl
    x = tl.where(w < 5.0, p1, p2) * a
    lq = tl.log(q)
    # Past Giles's range (w < 16.6, fp32's) his polynomial goes wild; there
    # erfc(x) ~ e^(-x^2)/(x sqrt(pi)) gives x^2 ~ L - log(pi L)/2, L = -log(q).
    # From any positive start the tail step below lands above the root,
    # (x^2 + x*^2)/(2x) to first order, and then descends to it.
    big_l = tl.maximum(-lq, 1.0)
    x = tl.where(w < 16.0, x, tl.sqrt(big_l - 0.5 * tl.log(3.141592653589793 * big_l)))
    for i in tl.static_range(5):
        small = a < 0.5
        xs = tl.where(small, x, 0.0)
        d_small = (a - tl.erf(xs)) * 0.886226925452758 * _exp_sq(xs)
        xt = tl.where(small, 1.0, x)
        ex = _erfcx_pos(xt)
        d_tail = (tl.log(ex) - xt * xt - lq) * 0.886226925452758 * ex
        x = x + tl.where(small, d_small, d_tail)
    return x


@jit
def erfinv(y):
    a = tl.abs(y)
    x = _erfinv_pos(a, 1.0 - a)
    r = tl.where(a == 1.0, float("inf"), x)
    r = tl.where(a > 1.0, float("nan"), r)
    r = tl.where(y == 0, y, r)
    return tl.where(y < 0, -r, r)


@jit
def erfcinv(q):
    # erfcinv(q) = erfinv(1 - q), with q itself kept for the tail (1 - q
    # loses it below 1/2); above 1 by erfcinv(q) = -erfcinv(2 - q) (exact).
    qq = tl.where(q > 1.0, 2.0 - q, q)
    x = _erfinv_pos(1.0 - qq, qq)
    x = tl.where(qq == 1.0, 0.0, x)
    r = tl.where(q > 1.0, -x, x)
    r = tl.where(q == 0, float("inf"), tl.where(q == 2.0, float("-inf"), r))
    return tl.where((q < 0) | (q > 2.0) | (q != q), float("nan"), r)


@jit
def normcdfinv(p):
    # -sqrt(2) erfcinv(2p) (2p is exact)
    return -1.4142135623730951 * erfcinv(p + p) + 0.0  # + 0: +0 at 1/2
