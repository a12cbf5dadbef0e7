"""sinpi, cospi (exact argument reduction by halves) and the gamma
functions lgamma and tgamma (the zeta series near their zeros 1 and 2,
Stirling's series from 10, the reflection formula below 0)."""
from ....jit import jit
from ... import core as tl
from .elementary import log1p, pow, rint


@jit
def _pi_reduce(x):
    # x = n/2 + r with n = rint(2x), |r| <= 1/4, both exact; k = n mod 4.
    n = rint(x + x)
    r = x - n * 0.5
    q = n - 4.0 * tl.floor(n * 0.25)
    k = tl.where(q == q, q, 0.0).to(tl.int32)
    return r, k


@jit
def sinpi(x):
    r, k = _pi_reduce(x)
    s = tl.sin(r * 3.141592653589793)
    c = tl.cos(r * 3.141592653589793)
    v = tl.where(k == 0, s, tl.where(k == 1, c, tl.where(k == 2, -s, -c)))
    return tl.where(v == 0, x * 0.0, v)  # sinpi(n) is +0 for n >= 0, -0 below (C23)


@jit
def cospi(x):
    r, k = _pi_reduce(x)
    s = tl.sin(r * 3.141592653589793)
    c = tl.cos(r * 3.141592653589793)
    v = tl.where(k == 0, c, tl.where(k == 1, -s, tl.where(k == 2, -c, s)))
    return tl.where(v == 0, 0.0, v)  # cospi(n + 1/2) is +0


@jit
def _lgamma_near(z):
    # lgamma(2 + z) for |z| <= 1/2: z(1 - gamma) + sum_{k>=2} (-1)^k (zeta(k) - 1) z^k / k
    # (Abramowitz & Stegun 6.1.33 with lgamma(2+z) = log(1+z) + lgamma(1+z); the
    # zeta(k) - 1 coefficients fall as 2**-k, so 29 terms reach 1e-19 at |z| = 1/2;
    # computed from scipy.special.zetac).
    p = 3.104424774732227e-11
    p = p * z + -6.422964563838101e-11
    p = p * z + 1.3304764374244491e-10
    p = p * z + -2.7595228851242334e-10
    p = p * z + 5.731367241678862e-10
    p = p * z + -1.1921401405860912e-09
    p = p * z + 2.4836745438024785e-09
    p = p * z + -5.183475041970047e-09
    p = p * z + 1.0838659214896955e-08
    p = p * z + -2.2711094608943164e-08
    p = p * z + 4.769810169363981e-08
    p = p * z + -1.00432248239681e-07
    p = p * z + 2.1207184805554667e-07
    p = p * z + -4.492469198764566e-07
    p = p * z + 9.55141213040742e-07
    p = p * z + -2.039215753801366e-06
    p = p * z + 4.374866789907487e-06
    p = p * z + -9.439488275268395e-06
    p = p * z + 2.0507212775670694e-05
    p = p * z + -4.492623673813314e-05
    p = p * z + 9.945751278180853e-05
    p = p * z + -0.00022315475845357936
    p = p * z + 0.0005096695247430425
    p = p * z + -0.001192753911703261
    p = p * z + 0.0028905103307415234
    p = p * z + -0.007385551028673986
    p = p * z + 0.020580808427784546
    p = p * z + -0.0673523010531981
    p = p * z + 0.3224670334241132
    return z * (0.42278433509846713 + z * p)


@jit
def _lgamma_pos(x):
    # lgamma for x >= 1/2. Near its zeros 1 and 2 by the series (relative
    # accuracy kept), [2.5, 10) down to [1.5, 2.5) by Gamma(x) = (x-1)...(f) Gamma(f)
    # (the log of the product and lgamma(f) do not cancel), from 10 Stirling's
    # series (A&S 6.1.41, eight terms: below 1e-17 relative at 10).
    # fp32 goes to the series about 2 from 1.25 (the series converges to |z| < 2;
    # from 1/4 of the way its 29 terms still reach fp32's precision), where
    # -log1p(z) + z(1 - gamma) would cancel to a few ulps.
    if x.dtype == tl.float64:
        lo = 1.5
    else:
        lo = 1.25
    z = tl.where(x < lo, x - 1.0, x - 2.0)
    near = _lgamma_near(z)
    near = tl.where(x < lo, near - log1p(z), near)
    f = x
    p = x * 0.0 + 1.0
    for i in tl.static_range(8):
        down = f >= 2.5
        f = tl.where(down, f - 1.0, f)
        p = tl.where(down, p * f, p)
    mid = tl.log(p) + _lgamma_near(f - 2.0)
    y = tl.maximum(x, 10.0)
    w = 1.0 / y
    w2 = w * w
    s = w * (0.08333333333333333 + w2 * (-0.002777777777777778 + w2 * (0.0007936507936507937 + w2 * (
        -0.0005952380952380953 + w2 * (0.0008417508417508417 + w2 * (-0.0019175269175269176 + w2 * (
            0.00641025641025641 + w2 * -0.029550653594771242)))))))
    big = (y - 0.5) * tl.log(y) - y + 0.9189385332046728 + s
    return tl.where(x < 2.5, near, tl.where(x < 10.0, mid, big))


@jit
def lgamma(x):
    # Below 1/2: lgamma(x+1) - log(x) on (0, 1/2); below 0 the reflection
    # log(pi/|sinpi(x)|) - lgamma(1 - x), with lgamma(1 - x) = log(-x) + lgamma(-x)
    # from -1/2 down (1 - x would round, an error lgamma's slope magnifies).
    a = tl.where(x >= 0.5, x, tl.where(x > 0, x + 1.0, tl.where(x > -0.5, 1.0 - x, -x)))
    lp = _lgamma_pos(a)
    lp1 = tl.where(x > -0.5, lp, lp + tl.log(-x))
    neg = 1.1447298858494002 - tl.log(tl.abs(sinpi(x))) - lp1
    r = tl.where(x >= 0.5, lp, tl.where(x > 0, lp - tl.log(x), neg))
    r = tl.where(tl.abs(x) == float("inf"), float("inf"), r)
    return tl.where(x != x, x, r)


@jit
def _gamma_pos(x):
    # Gamma for x >= 1/2: below 10 exp of the series (|lgamma| < 0.3 there, so
    # no error is magnified) times the product; from 10 Stirling as
    # sqrt(2 pi) h (h e^-x) e^s, h = x**((x - 1/2)/2), which neither overflows
    # early nor magnifies an error in x/e by x.
    z = tl.where(x < 1.5, x - 1.0, x - 2.0)
    near = _lgamma_near(z)
    near = tl.where(x < 1.5, near - log1p(z), near)
    f = x
    p = x * 0.0 + 1.0
    for i in tl.static_range(8):
        down = f >= 2.5
        f = tl.where(down, f - 1.0, f)
        p = tl.where(down, p * f, p)
    small = tl.where(x < 2.5, tl.exp(near), p * tl.exp(_lgamma_near(f - 2.0)))
    y = tl.maximum(x, 10.0)
    w = 1.0 / y
    w2 = w * w
    s = w * (0.08333333333333333 + w2 * (-0.002777777777777778 + w2 * (0.0007936507936507937 + w2 * (
        -0.0005952380952380953 + w2 * (0.0008417508417508417 + w2 * (-0.0019175269175269176 + w2 * (
            0.00641025641025641 + w2 * -0.029550653594771242)))))))
    # Past the overflow (171.6 in fp64, 35.04 in fp32) y is clamped so that
    # e^(-y/2) stays a normal number: the result is inf, never inf * 0.
    if x.dtype == tl.float64:
        y = tl.minimum(y, 200.0)
    else:
        y = tl.minimum(y, 60.0)
    t = pow(y, 0.5 * (y - 0.5)) * tl.exp(-0.5 * y)
    big = 2.5066282746310002 * t * t * tl.exp(s)
    return tl.where(x < 10.0, small, big)


@jit
def tgamma(x):
    # (0, 1/2): Gamma(x + 1) / x; below 0 the reflection pi / (sinpi(x) Gamma(1 - x)),
    # Gamma(1 - x) = -x Gamma(-x) from -1/2 down (as in lgamma); NaN at the poles
    # (negative integers), +-inf at +-0.
    a = tl.where(x >= 0.5, x, tl.where(x > 0, x + 1.0, tl.where(x > -0.5, 1.0 - x, -x)))
    g = _gamma_pos(a)
    g1 = tl.where(x > -0.5, g, -x * g)
    neg = 3.141592653589793 / (sinpi(x) * g1)
    r = tl.where(x >= 0.5, g, tl.where(x > 0, g / x, neg))
    r = tl.where(x == 0, 1.0 / x, r)
    r = tl.where((x < 0) & (tl.floor(x) == x), float("nan"), r)
    return tl.where(x == float("inf"), x, r)
