"""Elementary functions: zetile's own math ops under libdevice's names, and
the trigonometric, hyperbolic, exponential and logarithmic functions,
rounding to integral values (trunc, rint, round), cbrt and the small
helpers (fdim, saturatef) written over them."""
from .... import _C
from ....jit import jit
from ... import core as _core
from ... import core as tl
from ...core import (exp, exp2, log, log2, sqrt, rsqrt, sin, cos, erf, floor,  # noqa: F401
                     ceil, fma, abs, maximum as fmax, minimum as fmin)
from .float_bits import _one_like, isinf, signbit


def _binary(op, name):
    def fn(x, y):
        s = _core._sem()
        x, y = s.binary_operands(x, y)
        if not x.dtype.is_floating():
            raise TypeError(f"{name} needs floating-point operands, got {x.dtype}")
        return s._bin(op, x, y)
    fn.__name__ = name
    return _core.builtin(fn)


atan2 = _binary(_C.BINARY_ATAN2, "atan2")
pow = _binary(_C.BINARY_POWF, "pow")  # noqa: A001 - libdevice's name
fmod = _binary(_C.BINARY_REMF, "fmod")


@_core.builtin
def tanh(x):
    s = _core._sem()
    return s.unary_float(_C.UNARY_TANH, s.to_tensor(_core._unwrap(x)), "tanh")


fabs = abs


@jit
def sqrt_rn(x):
    # tl.sqrt_rn is fp32 only (Triton's math); libdevice's also takes fp64,
    # where every target's sqrt is correctly rounded.
    if x.dtype == tl.float64:
        return tl.sqrt(x)
    else:
        return tl.sqrt_rn(x)


@jit
def div_rn(x, y):
    if x.dtype == tl.float64:
        return x / y
    else:
        return tl.div_rn(x, y)


fast_expf = exp
fast_logf = log


@jit
def copysign(x, y):
    return tl.where(signbit(y), -tl.abs(x), tl.abs(x))


@jit
def trunc(x):
    return tl.where(x < 0, tl.ceil(x), tl.floor(x))


@jit
def rint(x):
    # Round half to even: floor, then up when past the half or on an odd half.
    r = tl.floor(x)
    d = x - r
    half = r * 0.5
    odd = tl.floor(half) != half
    return copysign(tl.where((d > 0.5) | ((d == 0.5) & odd), r + 1.0, r), x)


nearbyint = rint


@jit
def round(x):  # noqa: A001 - libdevice's name: half away from zero
    t = trunc(x)
    return tl.where(tl.abs(x - t) >= 0.5, t + copysign(_one_like(x), x), t)


@jit
def tan(x):
    return tl.sin(x) / tl.cos(x)


@jit
def asin(x):
    return atan2(x, tl.sqrt(1.0 - x * x))


@jit
def acos(x):
    return atan2(tl.sqrt(1.0 - x * x), x)


@jit
def atan(x):
    return atan2(x, 1.0)


@jit
def log1p(x):
    u = 1.0 + x
    return tl.where(u == 1.0, x, tl.where(isinf(u), u, tl.log(u) * x / (u - 1.0)))


@jit
def expm1(x):
    u = tl.exp(x)
    res = tl.where(u == 1.0, x, (u - 1.0) * x / tl.log(u))
    return tl.where(u - 1.0 == -1.0, u - 1.0, tl.where(isinf(u), u, res))


@jit
def sinh(x):
    return (expm1(x) - expm1(-x)) * 0.5


@jit
def cosh(x):
    return (tl.exp(x) + tl.exp(-x)) * 0.5


@jit
def asinh(x):
    a = tl.abs(x)
    big = a > 268435456.0  # 2**28: x*x + 1 == x*x, and x*x may overflow
    small = log1p(a + a * a / (1.0 + tl.sqrt(1.0 + a * a)))
    r = tl.where(big, tl.log(a) + 0.6931471805599453, small)
    return copysign(r, x)


@jit
def acosh(x):
    big = x > 268435456.0
    t = x - 1.0  # log1p keeps the precision near 1
    return tl.where(big, tl.log(x) + 0.6931471805599453, log1p(t + tl.sqrt(2.0 * t + t * t)))


@jit
def atanh(x):
    return 0.5 * log1p(2.0 * x / (1.0 - x))


@jit
def exp10(x):
    return pow(10.0, x)


@jit
def log10(x):
    return tl.log(x) * 0.4342944819032518


@jit
def cbrt(x):
    # pow(|x|, 1/3) is off by 1/3's rounding times log|x| (11 ulps in fp32 at
    # 1e30); one Newton step r + (|x|/r^2 - r)/3 brings it back to ~1 ulp.
    a = tl.abs(x)
    r = pow(a, 1.0 / 3.0)
    n = r + (a / (r * r) - r) * 0.3333333333333333
    r = tl.where((a == 0) | (a == float("inf")) | (a != a), r, n)
    return copysign(r, x)
@jit
def fdim(x, y):
    return tl.maximum(x - y, 0.0)


@jit
def saturatef(x):
    return tl.minimum(tl.maximum(x, 0.0), 1.0)


@jit
def fast_dividef(x, y):
    return x / y
