"""tl.extra.libdevice: Triton's libdevice math functions for zetile kernels.

Each is built from zetile's math ops (tile IR's math.* ops, which every
target lowers), in the kernel language itself where it composes: asin is
atan2(x, sqrt(1 - x^2)), log1p and expm1 use the compensated forms
(log(u) * x / (u - 1)), rint rounds half to even. They take fp32 and fp64
as Triton's do. Not provided (and so an AttributeError naming them): the
special functions (lgamma, tgamma, Bessel functions, erfinv), nextafter,
ilogb and the integer intrinsics.
"""
from ... import _C
from ...jit import jit
from .. import core as _core
from .. import core as tl
from ..core import (exp, exp2, log, log2, sqrt, sqrt_rn, rsqrt, sin, cos, erf, floor,  # noqa: F401
                    ceil, fma, div_rn, abs, maximum as fmax, minimum as fmin)


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
nearbyint = None  # set below (rint)
fast_expf = exp
fast_logf = log


@jit
def isnan(x):
    return x != x


@jit
def isinf(x):
    return tl.abs(x) == float("inf")


@jit
def isfinited(x):
    return tl.abs(x) < float("inf")


finitef = isfinited


@jit
def signbit(x):
    if x.dtype == tl.float64:
        bits = x.to(tl.int64, bitcast=True)
    else:
        bits = x.to(tl.float32).to(tl.int32, bitcast=True)
    return bits < 0


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
    return tl.where(tl.abs(x - t) >= 0.5, t + copysign(1.0, x), t)


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
def erfc(x):
    # 1 - erf(x): relative precision is lost for x > ~2 (the tail underflows
    # to 0 past ~6 in fp32), where libdevice's erfc keeps it.
    return 1.0 - tl.erf(x)


@jit
def exp10(x):
    return pow(10.0, x)


@jit
def log10(x):
    return tl.log(x) * 0.4342944819032518


@jit
def cbrt(x):
    return copysign(pow(tl.abs(x), 1.0 / 3.0), x)


@jit
def hypot(x, y):
    return tl.sqrt(x * x + y * y)


@jit
def fdim(x, y):
    return tl.maximum(x - y, 0.0)


@jit
def saturatef(x):
    return tl.minimum(tl.maximum(x, 0.0), 1.0)


@jit
def fast_dividef(x, y):
    return x / y
