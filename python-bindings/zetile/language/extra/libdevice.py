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
from ..core import (exp, exp2, log, log2, sqrt, rsqrt, sin, cos, erf, floor,  # noqa: F401
                    ceil, fma, abs, maximum as fmax, minimum as fmin)


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

nearbyint = None  # set below (rint)
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


# ======================================================================
# Below: the rest of CUDA libdevice's names as Triton's dispatch tables
# give them (argument and result dtypes equal Triton's
# python/triton/language/extra/cuda/libdevice.py; tests/python/
# test_libdevice_ext.py reads those tables). Everything is written over
# integer and float ops of the kernel language, so every target takes it.

# ------------------------------------------------------------ bits of floats
@jit
def _bits(x):
    # The IEEE bits of x as a signed integer of its width.
    if x.dtype == tl.float64:
        return x.to(tl.int64, bitcast=True)
    else:
        return x.to(tl.float32).to(tl.int32, bitcast=True)


@jit
def _from_bits(b):
    if b.dtype == tl.int64:
        return b.to(tl.float64, bitcast=True)
    else:
        return b.to(tl.float32, bitcast=True)


@jit
def _step_up(r):
    # The next float above r: floats are sign-magnitude, so one step of the
    # bits away from zero above 0, toward zero below; from +-0 the smallest denormal.
    b = _bits(r)
    return _from_bits(tl.where(r > 0, b + 1, tl.where(r == 0, b * 0 + 1, b - 1)))


@jit
def _step_down(r):
    return -_step_up(-r)


@jit
def _round_rd(r, above):
    # r is the value rounded to nearest; above: the exact value is below it.
    return tl.where(above, _step_down(r), r)


@jit
def _round_ru(r, below):
    return tl.where(below, _step_up(r), r)


@jit
def _round_rz(r, above, below):
    return tl.where(above & (r > 0), _step_down(r), tl.where(below & (r < 0), _step_up(r), r))


# ------------------------------------------------ classification (int32 results)
# CUDA's __nv_isnanf & co. return int32 (0 or 1), so Triton's do; `.to(tl.int1)`
# or a use as a condition gives the boolean.
@jit
def isnan(x):
    return (x != x).to(tl.int32)


@jit
def isinf(x):
    return (tl.abs(x) == float("inf")).to(tl.int32)


@jit
def isfinited(x):
    return (tl.abs(x) < float("inf")).to(tl.int32)


finitef = isfinited


@jit
def signbit(x):
    return (_bits(x) < 0).to(tl.int32)


@jit
def nextafter(x, y):
    b = _bits(x)
    # Toward y: one step of the bits away from zero when x and y - x have the same sign.
    r = _from_bits(b + tl.where((x < y) == (x > 0), 1, -1))
    tiny = _from_bits(b * 0 + 1)  # the smallest denormal
    r = tl.where(x == 0, tl.where(y > 0, tiny, -tiny), r)
    r = tl.where(x == y, y, r)
    return tl.where((x != x) | (y != y), x + y, r)


@jit
def _clz32(v):
    # Leading zeros of a 32-bit pattern by halving (no count-leading-zeros op
    # in the tile IR); 32 for 0.
    x = v.to(tl.uint32, bitcast=True)
    n = x.to(tl.int32, bitcast=True) * 0
    c = (x >> 16) == 0
    n = tl.where(c, n + 16, n)
    x = tl.where(c, x << 16, x)
    c = (x >> 24) == 0
    n = tl.where(c, n + 8, n)
    x = tl.where(c, x << 8, x)
    c = (x >> 28) == 0
    n = tl.where(c, n + 4, n)
    x = tl.where(c, x << 4, x)
    c = (x >> 30) == 0
    n = tl.where(c, n + 2, n)
    x = tl.where(c, x << 2, x)
    c = (x >> 31) == 0
    n = tl.where(c, n + 1, n)
    return tl.where(v == 0, 32, n)


@jit
def _clz64(v):
    hi = (v >> 32).to(tl.int32)
    lo = v.to(tl.int32)
    return tl.where(hi == 0, 32 + _clz32(lo), _clz32(hi))


@jit
def clz(x):
    if x.dtype == tl.int64:
        return _clz64(x)
    else:
        return _clz32(x)


@jit
def ilogb(x):
    # CUDA and C: ilogb(0) and ilogb(NaN) are INT_MIN, ilogb(+-inf) INT_MAX.
    # Denormals from the leading zeros of their mantissa (no float scaling, so
    # a target flushing denormals still gets them).
    if x.dtype == tl.float64:
        b = _bits(x) & 0x7FFFFFFFFFFFFFFF
        e = (b >> 52).to(tl.int32)
        r = tl.where(e == 0, -1011 - _clz64(b), e - 1023)
    else:
        b = _bits(x) & 0x7FFFFFFF
        e = b >> 23
        r = tl.where(e == 0, -118 - _clz32(b), e - 127)
    r = tl.where(x == 0, -2147483648, r)
    r = tl.where(tl.abs(x) == float("inf"), 2147483647, r)
    return tl.where(x != x, -2147483648, r)


@jit
def logb(x):
    r = ilogb(x).to(x.dtype)
    r = tl.where(x == 0, float("-inf"), r)
    r = tl.where(tl.abs(x) == float("inf"), float("inf"), r)
    return tl.where(x != x, x, r)


@jit
def ldexp(x, n):
    # x * 2**n in steps that stay exact until the last one (musl's scalbn
    # scheme): at most two scalings toward the range, then one by a normal power
    # of two, so a denormal result is rounded once.
    n = n + (_bits(x) * 0).to(tl.int32)
    if x.dtype == tl.float64:
        c = n > 1023
        x = tl.where(c, x * 8.98846567431158e+307, x)
        n = tl.where(c, n - 1023, n)
        c = n > 1023
        x = tl.where(c, x * 8.98846567431158e+307, x)
        n = tl.where(c, n - 1023, n)
        n = tl.minimum(n, 1023)
        c = n < -1022
        x = tl.where(c, x * 2.0041683600089728e-292, x)  # 2**-969 = 2**-1022 * 2**53
        n = tl.where(c, n + 969, n)
        c = n < -1022
        x = tl.where(c, x * 2.0041683600089728e-292, x)
        n = tl.where(c, n + 969, n)
        n = tl.maximum(n, -1022)
        return x * ((n + 1023).to(tl.int64) << 52).to(tl.float64, bitcast=True)
    else:
        c = n > 127
        x = tl.where(c, x * 1.7014118346046923e+38, x)
        n = tl.where(c, n - 127, n)
        c = n > 127
        x = tl.where(c, x * 1.7014118346046923e+38, x)
        n = tl.where(c, n - 127, n)
        n = tl.minimum(n, 127)
        c = n < -126
        x = tl.where(c, x * 1.9721522630525295e-31, x)  # 2**-102 = 2**-126 * 2**24
        n = tl.where(c, n + 102, n)
        c = n < -126
        x = tl.where(c, x * 1.9721522630525295e-31, x)
        n = tl.where(c, n + 102, n)
        n = tl.maximum(n, -126)
        return x * ((n + 127) << 23).to(tl.float32, bitcast=True)


scalbn = ldexp


@jit
def _remainder(x, y, half_max, tiny):
    p = tl.abs(y)
    t = tl.where(p <= half_max, fmod(x, p + p), x)
    a = tl.abs(t)
    small = p < tiny
    c1 = tl.where(small, a + a > p, a > 0.5 * p)
    a1 = a - p
    c2 = tl.where(small, a1 + a1 >= p, a1 >= 0.5 * p)
    r = tl.where(c1, tl.where(c2, a1 - p, a1), a)
    r = tl.where(signbit(x) != 0, -r, r)
    return tl.where((p == 0) | (tl.abs(x) == float("inf")) | (x != x) | (y != y),
                    float("nan"), r)


@jit
def remainder(x, y):
    # IEEE remainder x - n*y, n = x/y rounded half to even; exact (fdlibm's
    # e_remainder scheme: fmod by 2|y| first, so the quotient's parity is
    # known, then at most two subtractions of |y|; below twice the smallest
    # normal |y|/2 would be inexact, so 2a > p is compared instead).
    # (Constants go in as arguments: a float assigned under a dtype branch
    # would be an fp32 value.)
    if x.dtype == tl.float64:
        return _remainder(x, y, 8.98846567431158e+307, 4.450147717014403e-308)
    else:
        return _remainder(x, y, 1.7014118346046923e+38, 2.350988701644575e-38)


@jit
def llrint(x):
    return rint(x).to(tl.int64)


@jit
def llround(x):
    return round(x).to(tl.int64)


# ------------------------------------------------------------ reinterpretations
@jit
def float_as_int(x):
    return x.to(tl.int32, bitcast=True)


@jit
def float_as_uint(x):
    return x.to(tl.int32, bitcast=True)  # int32 in Triton's table


@jit
def int_as_float(x):
    return x.to(tl.float32, bitcast=True)


uint_as_float = int_as_float


@jit
def double_as_longlong(x):
    return x.to(tl.int64, bitcast=True)


@jit
def longlong_as_double(x):
    return x.to(tl.float64, bitcast=True)


@jit
def hiloint2double(hi, lo):
    b = (hi.to(tl.int64) << 32) | lo.to(tl.uint32, bitcast=True).to(tl.int64)
    return b.to(tl.float64, bitcast=True)


@jit
def double2hiint(x):
    return (x.to(tl.int64, bitcast=True) >> 32).to(tl.int32)


@jit
def double2loint(x):
    return x.to(tl.int64, bitcast=True).to(tl.int32)


# ------------------------------------------------------------ float -> integer
# r is already integral (rounded in the mode the name says); out of range
# saturates and NaN gives 0, as PTX's cvt.rni/rzi/rmi/rpi do.
@jit
def _sat_i32(r):
    v = tl.where((r >= -2147483648.0) & (r < 2147483648.0), r, 0.0).to(tl.int32)
    v = tl.where(r >= 2147483648.0, 2147483647, v)
    return tl.where(r < -2147483648.0, -2147483648, v)


@jit
def _sat_u32(r):
    v = tl.where((r >= 0.0) & (r < 4294967296.0), r, 0.0).to(tl.uint32)
    # Triton's table types the float2uint results int32 (the same bits).
    return tl.where(r >= 4294967296.0, (v * 0 + 1) * 4294967295, v).to(tl.int32, bitcast=True)


@jit
def _sat_i64(r):
    v = tl.where((r >= -9.223372036854775808e18) & (r < 9.223372036854775808e18), r, 0.0).to(tl.int64)
    v = tl.where(r >= 9.223372036854775808e18, 9223372036854775807, v)
    return tl.where(r < -9.223372036854775808e18, -9223372036854775808, v)


@jit
def _sat_u64(r):
    v = tl.where((r >= 0.0) & (r < 1.8446744073709552e19), r, 0.0).to(tl.uint64)
    v = tl.where(r >= 1.8446744073709552e19, (v * 0 + 1) * 18446744073709551615, v)
    return v.to(tl.int64, bitcast=True)


@jit
def float2int_rn(x):
    return _sat_i32(rint(x))


@jit
def float2int_rz(x):
    return _sat_i32(trunc(x))


@jit
def float2int_rd(x):
    return _sat_i32(tl.floor(x))


@jit
def float2int_ru(x):
    return _sat_i32(tl.ceil(x))


@jit
def float2uint_rn(x):
    return _sat_u32(rint(x))


@jit
def float2uint_rz(x):
    return _sat_u32(trunc(x))


@jit
def float2uint_rd(x):
    return _sat_u32(tl.floor(x))


@jit
def float2uint_ru(x):
    return _sat_u32(tl.ceil(x))


@jit
def float2ll_rn(x):
    return _sat_i64(rint(x))


@jit
def float2ll_rz(x):
    return _sat_i64(trunc(x))


@jit
def float2ll_rd(x):
    return _sat_i64(tl.floor(x))


@jit
def float2ll_ru(x):
    return _sat_i64(tl.ceil(x))


@jit
def float2ull_rn(x):
    return _sat_u64(rint(x))


@jit
def float2ull_rz(x):
    return _sat_u64(trunc(x))


@jit
def float2ull_rd(x):
    return _sat_u64(tl.floor(x))


@jit
def float2ull_ru(x):
    return _sat_u64(tl.ceil(x))


# The double2* names are the same functions (the rounding is dtype-generic).
double2int_rn, double2int_rz, double2int_rd, double2int_ru = (
    float2int_rn, float2int_rz, float2int_rd, float2int_ru)
double2uint_rn, double2uint_rz, double2uint_rd, double2uint_ru = (
    float2uint_rn, float2uint_rz, float2uint_rd, float2uint_ru)
double2ll_rn, double2ll_rz, double2ll_rd, double2ll_ru = (
    float2ll_rn, float2ll_rz, float2ll_rd, float2ll_ru)
double2ull_rn, double2ull_rz, double2ull_rd, double2ull_ru = (
    float2ull_rn, float2ull_rz, float2ull_rd, float2ull_ru)


# ------------------------------------------------------------ double -> float
@jit
def double2float_rn(x):
    return x.to(tl.float32)


@jit
def double2float_rz(x):
    r = x.to(tl.float32)
    b = r.to(tl.float64)
    return _round_rz(r, b > x, b < x)


@jit
def double2float_rd(x):
    r = x.to(tl.float32)
    return _round_rd(r, r.to(tl.float64) > x)


@jit
def double2float_ru(x):
    r = x.to(tl.float32)
    return _round_ru(r, r.to(tl.float64) < x)


# ------------------------------------------------------------ integer -> float
# Rounded to nearest by the cast, then one step in the mode's direction when
# the result read back exactly (as a wider integer) is on the wrong side.
@jit
def _i2f_sides(x, r):
    # (above, below) of r against the integer x.
    if x.dtype == tl.uint64:
        big = r >= 1.8446744073709552e19  # 2**64: rounded up past every uint64
        back = tl.where(big, 0.0, r).to(tl.uint64)
        return big | (back > x), (~big) & (back < x)
    elif x.dtype == tl.int64:
        big = r >= 9.223372036854775808e18
        back = tl.where(big, 0.0, r).to(tl.int64)
        return big | (back > x), (~big) & (back < x)
    else:
        back = r.to(tl.int64)
        x64 = x.to(tl.int64)
        return back > x64, back < x64


@jit
def int2float_rn(x):
    return x.to(tl.float32)


@jit
def int2float_rz(x):
    r = x.to(tl.float32)
    a, b = _i2f_sides(x, r)
    return _round_rz(r, a, b)


@jit
def int2float_rd(x):
    r = x.to(tl.float32)
    a, b = _i2f_sides(x, r)
    return _round_rd(r, a)


@jit
def int2float_ru(x):
    r = x.to(tl.float32)
    a, b = _i2f_sides(x, r)
    return _round_ru(r, b)


uint2float_rn, uint2float_rz, uint2float_rd, uint2float_ru = (
    int2float_rn, int2float_rz, int2float_rd, int2float_ru)
ll2float_rn, ll2float_rz, ll2float_rd, ll2float_ru = (
    int2float_rn, int2float_rz, int2float_rd, int2float_ru)
ull2float_rn, ull2float_rz, ull2float_rd, ull2float_ru = (
    int2float_rn, int2float_rz, int2float_rd, int2float_ru)


@jit
def int2double_rn(x):
    return x.to(tl.float64)


uint2double_rn = int2double_rn


@jit
def ll2double_rz(x):
    r = x.to(tl.float64)
    a, b = _i2f_sides(x, r)
    return _round_rz(r, a, b)


@jit
def ll2double_rd(x):
    r = x.to(tl.float64)
    a, b = _i2f_sides(x, r)
    return _round_rd(r, a)


@jit
def ll2double_ru(x):
    r = x.to(tl.float64)
    a, b = _i2f_sides(x, r)
    return _round_ru(r, b)


ll2double_rn = int2double_rn
ull2double_rn, ull2double_rz, ull2double_rd, ull2double_ru = (
    int2double_rn, ll2double_rz, ll2double_rd, ll2double_ru)


# ------------------------------------------------------------ integer intrinsics
@jit
def popc(x):
    # SWAR bit count (Hacker's Delight 5-1) on the unsigned pattern.
    if x.dtype == tl.int64:
        v = x.to(tl.uint64, bitcast=True)
        v = v - ((v >> 1) & 0x5555555555555555)
        v = (v & 0x3333333333333333) + ((v >> 2) & 0x3333333333333333)
        v = (v + (v >> 4)) & 0x0F0F0F0F0F0F0F0F
        return ((v * 0x0101010101010101) >> 56).to(tl.int32)
    else:
        v = x.to(tl.uint32, bitcast=True)
        v = v - ((v >> 1) & 0x55555555)
        v = (v & 0x33333333) + ((v >> 2) & 0x33333333)
        v = (v + (v >> 4)) & 0x0F0F0F0F
        return ((v * 0x01010101) >> 24).to(tl.int32, bitcast=True)


@jit
def brev(x):
    # Bit reversal by swapping halves of ever larger groups.
    if x.dtype == tl.int64:
        v = x.to(tl.uint64, bitcast=True)
        v = ((v >> 1) & 0x5555555555555555) | ((v & 0x5555555555555555) << 1)
        v = ((v >> 2) & 0x3333333333333333) | ((v & 0x3333333333333333) << 2)
        v = ((v >> 4) & 0x0F0F0F0F0F0F0F0F) | ((v & 0x0F0F0F0F0F0F0F0F) << 4)
        v = ((v >> 8) & 0x00FF00FF00FF00FF) | ((v & 0x00FF00FF00FF00FF) << 8)
        v = ((v >> 16) & 0x0000FFFF0000FFFF) | ((v & 0x0000FFFF0000FFFF) << 16)
        v = (v >> 32) | (v << 32)
        return v.to(tl.int64, bitcast=True)
    else:
        v = x.to(tl.uint32, bitcast=True)
        v = ((v >> 1) & 0x55555555) | ((v & 0x55555555) << 1)
        v = ((v >> 2) & 0x33333333) | ((v & 0x33333333) << 2)
        v = ((v >> 4) & 0x0F0F0F0F) | ((v & 0x0F0F0F0F) << 4)
        v = ((v >> 8) & 0x00FF00FF) | ((v & 0x00FF00FF) << 8)
        v = (v >> 16) | (v << 16)
        return v.to(tl.int32, bitcast=True)


@jit
def ffs(x):
    # 1 + the index of the lowest set bit, 0 for 0: x & -x keeps that bit.
    if x.dtype == tl.int64:
        return 64 - _clz64(x & -x)
    else:
        return 32 - _clz32(x & -x)


@jit
def byte_perm(x, y, s):
    # Byte n of the result is byte (s >> 4n) & 7 of the 8 bytes {y:x}.
    v = (y.to(tl.int64) << 32) | x.to(tl.uint32, bitcast=True).to(tl.int64)
    r = x.to(tl.int64) * 0
    for n in tl.static_range(4):
        sel = ((s >> (4 * n)) & 7).to(tl.int64)
        r = r | (((v >> (sel * 8)) & 255) << (8 * n))
    return r.to(tl.int32)


@jit
def mulhi(x, y):
    if x.dtype == tl.int64:
        # The signed high word from the unsigned one: subtract the other
        # operand once for each negative operand (mod 2**64).
        h = tl.umulhi(x.to(tl.uint64, bitcast=True), y.to(tl.uint64, bitcast=True)).to(tl.int64, bitcast=True)
        return h - tl.where(x < 0, y, 0) - tl.where(y < 0, x, 0)
    elif x.dtype == tl.uint64:
        return tl.umulhi(x, y)
    elif x.dtype == tl.uint32:
        return ((x.to(tl.uint64) * y.to(tl.uint64)) >> 32).to(tl.uint32)
    else:
        return ((x.to(tl.int64) * y.to(tl.int64)) >> 32).to(tl.int32)


@jit
def mul24(x, y):
    # The low 32 bits of the product of the low 24 bits (signed: sign-extended).
    if x.dtype == tl.uint32:
        return (x & 0xFFFFFF) * (y & 0xFFFFFF)
    else:
        a = (x << 8) >> 8
        b = (y << 8) >> 8
        return (a.to(tl.int64) * b.to(tl.int64)).to(tl.int32)


@jit
def sad(x, y, z):
    # |x - y| + z, the difference taken without overflow.
    if x.dtype == tl.uint32:
        d = tl.where(x > y, x - y, y - x)
        return d + z
    else:
        d = tl.abs(x.to(tl.int64) - y.to(tl.int64))
        return (d + z.to(tl.int64)).to(tl.int32)


@jit
def hadd(x, y):
    # (x + y) >> 1 without overflowing the sum.
    if x.dtype == tl.uint32:
        return ((x.to(tl.uint64) + y.to(tl.uint64)) >> 1).to(tl.uint32)
    else:
        return ((x.to(tl.int64) + y.to(tl.int64)) >> 1).to(tl.int32)


@jit
def rhadd(x, y):
    if x.dtype == tl.uint32:
        return ((x.to(tl.uint64) + y.to(tl.uint64) + 1) >> 1).to(tl.uint32)
    else:
        return ((x.to(tl.int64) + y.to(tl.int64) + 1) >> 1).to(tl.int32)


# ------------------------------------------------------------ sinpi, cospi, gamma
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


# ------------------------------------------------------------ directed-rounding arithmetic
# The result rounded to nearest, then one step toward the mode's direction when
# the exact result lies on the other side of it. Which side is known exactly:
# fp32 products, quotients and roots checked in fp64 (a 24x24-bit product is
# exact there), sums by TwoSum (Knuth), fp64 products, quotients and roots by
# the FMA residual (exact while it is not below the normal range: there, fp64
# results may be rounded as to nearest).
@jit
def _two_sum_err(a, b, s):
    # a + b - s exactly, s = a + b rounded (Knuth's TwoSum).
    bb = s - a
    return (a - (s - bb)) + (b - bb)


@jit
def _neg_zero(r):
    # -0 of r's dtype (for round-down's exact zeros).
    return -(r * 0.0 + 0.0)


@jit
def _add_sides(a, b, r):
    e = _two_sum_err(a, b, r)
    ovf = (tl.abs(r) == float("inf")) & (tl.abs(a) < float("inf")) & (tl.abs(b) < float("inf"))
    return (e < 0) | (ovf & (r > 0)), (e > 0) | (ovf & (r < 0))


@jit
def add_rn(x, y):
    return x + y


@jit
def add_rz(x, y):
    r = x + y
    a, b = _add_sides(x, y, r)
    return _round_rz(r, a, b)


@jit
def add_rd(x, y):
    r = x + y
    a, b = _add_sides(x, y, r)
    # an exact zero sum is -0 rounding down unless both operands are +0 (IEEE 754 6.3)
    r = tl.where((r == 0) & ((_bits(x) | _bits(y)) != 0), _neg_zero(r), r)
    return _round_rd(r, a)


@jit
def add_ru(x, y):
    r = x + y
    a, b = _add_sides(x, y, r)
    return _round_ru(r, b)


@jit
def sub_rn(x, y):
    return x - y


@jit
def sub_rz(x, y):
    return add_rz(x, -y)


@jit
def sub_rd(x, y):
    return add_rd(x, -y)


@jit
def sub_ru(x, y):
    return add_ru(x, -y)


@jit
def _mul_sides(x, y, r):
    if x.dtype == tl.float64:
        e = tl.fma(x, y, -r)
        return e < 0, e > 0
    else:
        p = x.to(tl.float64) * y.to(tl.float64)
        r64 = r.to(tl.float64)
        return r64 > p, r64 < p


@jit
def mul_rn(x, y):
    return x * y


@jit
def mul_rz(x, y):
    r = x * y
    a, b = _mul_sides(x, y, r)
    return _round_rz(r, a, b)


@jit
def mul_rd(x, y):
    r = x * y
    a, b = _mul_sides(x, y, r)
    return _round_rd(r, a)


@jit
def mul_ru(x, y):
    r = x * y
    a, b = _mul_sides(x, y, r)
    return _round_ru(r, b)


@jit
def _div_sides(x, y, r):
    # r > x/y exactly when r*y - x has the sign of y.
    if x.dtype == tl.float64:
        rem = tl.fma(-r, y, x)  # x - r*y
        return ((rem < 0) & (y > 0)) | ((rem > 0) & (y < 0)), ((rem > 0) & (y > 0)) | ((rem < 0) & (y < 0))
    else:
        t = r.to(tl.float64) * y.to(tl.float64)
        x64 = x.to(tl.float64)
        return ((t > x64) & (y > 0)) | ((t < x64) & (y < 0)), ((t < x64) & (y > 0)) | ((t > x64) & (y < 0))


@jit
def div_rz(x, y):
    r = div_rn(x, y)
    a, b = _div_sides(x, y, r)
    return _round_rz(r, a, b)


@jit
def div_rd(x, y):
    r = div_rn(x, y)
    a, b = _div_sides(x, y, r)
    return _round_rd(r, a)


@jit
def div_ru(x, y):
    r = div_rn(x, y)
    a, b = _div_sides(x, y, r)
    return _round_ru(r, b)


@jit
def _one_like(x):
    # 1.0 of x's dtype and shape (from bits: x * 0 + 1 is NaN at inf).
    if x.dtype == tl.float64:
        return _from_bits(_bits(x) * 0 + 0x3FF0000000000000)
    else:
        return _from_bits(_bits(x) * 0 + 0x3F800000)


@jit
def rcp_rn(x):
    return div_rn(_one_like(x), x)


@jit
def rcp_rz(x):
    return div_rz(_one_like(x), x)


@jit
def rcp_rd(x):
    return div_rd(_one_like(x), x)


@jit
def rcp_ru(x):
    return div_ru(_one_like(x), x)


@jit
def _sqrt_sides(x, r):
    if x.dtype == tl.float64:
        rem = tl.fma(-r, r, x)
        return rem < 0, rem > 0
    else:
        t = r.to(tl.float64) * r.to(tl.float64)
        x64 = x.to(tl.float64)
        return t > x64, t < x64


@jit
def sqrt_rz(x):
    r = sqrt_rn(x)
    a, b = _sqrt_sides(x, r)
    return _round_rz(r, a, b)


@jit
def sqrt_rd(x):
    r = sqrt_rn(x)
    a, b = _sqrt_sides(x, r)
    return _round_rd(r, a)


@jit
def sqrt_ru(x):
    r = sqrt_rn(x)
    a, b = _sqrt_sides(x, r)
    return _round_ru(r, b)


@jit
def _fma_sides(x, y, z, r):
    if x.dtype == tl.float64:
        # x*y + z - r as u2 + d1 + d2 + t, each step exact (TwoProd by fma,
        # TwoSum); the sign of that sum by a compensated pass.
        u1 = x * y
        u2 = tl.fma(x, y, -u1)
        s = u1 + z
        t = _two_sum_err(u1, z, s)
        d1 = s - r
        d2 = _two_sum_err(s, -r, d1)
        x1 = d1 + t
        y1 = _two_sum_err(d1, t, x1)
        x2 = x1 + u2
        y2 = _two_sum_err(x1, u2, x2)
        e = x2 + (y1 + y2 + d2)
        ovf = (tl.abs(r) == float("inf")) & (tl.abs(x) < float("inf")) & (tl.abs(y) < float("inf")) & (
            tl.abs(z) < float("inf"))
        return (e < 0) | (ovf & (r > 0)), (e > 0) | (ovf & (r < 0))
    else:
        p = x.to(tl.float64) * y.to(tl.float64)
        z64 = z.to(tl.float64)
        s = p + z64
        e = _two_sum_err(p, z64, s)
        r64 = r.to(tl.float64)
        return (r64 > s) | ((r64 == s) & (e < 0)), (r64 < s) | ((r64 == s) & (e > 0))


@jit
def fma_rn(x, y, z):
    return tl.fma(x, y, z)


@jit
def fma_rz(x, y, z):
    r = tl.fma(x, y, z)
    a, b = _fma_sides(x, y, z, r)
    return _round_rz(r, a, b)


@jit
def fma_rd(x, y, z):
    r = tl.fma(x, y, z)
    a, b = _fma_sides(x, y, z, r)
    p = x * y
    # an exact zero (no side flagged; a rounded-away tiny result keeps its sign)
    r = tl.where(a | b, r, tl.where((r == 0) & ((_bits(p) | _bits(z)) != 0), _neg_zero(r), r))
    return _round_rd(r, a)


@jit
def fma_ru(x, y, z):
    r = tl.fma(x, y, z)
    a, b = _fma_sides(x, y, z, r)
    return _round_ru(r, b)


# ------------------------------------------------------------ norms, reciprocals, fast_*
@jit
def rsqrt_rn(x):
    # 1/sqrt(x) rounded to nearest (fp32): the fp64 value rounded, then moved
    # one step when it is past a midpoint m: 1/sqrt(x) > m exactly when
    # m*m*x < 1, and fma(m*m, x, -1) has that sign exactly (m*m is exact).
    x64 = x.to(tl.float64)
    r = (1.0 / tl.sqrt(x64)).to(tl.float32)
    fin = (r > 0) & (r < float("inf"))
    r64 = r.to(tl.float64)
    up = (r64 + tl.where(fin, _step_up(r), r).to(tl.float64)) * 0.5
    dn = (r64 + tl.where(fin, _step_down(r), r).to(tl.float64)) * 0.5
    r = tl.where(fin & (tl.fma(up * up, x64, -1.0) < 0), _step_up(r), r)
    return tl.where(fin & (tl.fma(dn * dn, x64, -1.0) > 0), _step_down(r), r)


@jit
def _norm_scale(m):
    # 2**-ilogb(m) and 2**ilogb(m) for finite nonzero m (scaling by them is exact)
    e = ilogb(m)
    e = tl.where((m == 0) | (tl.abs(m) == float("inf")) | (m != m), 0, e)
    return e


@jit
def norm3d(x, y, z):
    # sqrt(x^2 + y^2 + z^2) without overflow or underflow: scaled by a power of
    # two near the largest magnitude. inf if any is inf (even with a NaN), as C's hypot.
    ax, ay, az = tl.abs(x), tl.abs(y), tl.abs(z)
    m = tl.maximum(tl.maximum(ax, ay), az)
    e = _norm_scale(m)
    sx, sy, sz = ldexp(ax, -e), ldexp(ay, -e), ldexp(az, -e)
    r = ldexp(tl.sqrt(sx * sx + sy * sy + sz * sz), e)
    r = tl.where((x != x) | (y != y) | (z != z), float("nan"), r)
    return tl.where((ax == float("inf")) | (ay == float("inf")) | (az == float("inf")), float("inf"), r)


@jit
def norm4d(x, y, z, t):
    ax, ay, az, at = tl.abs(x), tl.abs(y), tl.abs(z), tl.abs(t)
    m = tl.maximum(tl.maximum(ax, ay), tl.maximum(az, at))
    e = _norm_scale(m)
    sx, sy, sz, st = ldexp(ax, -e), ldexp(ay, -e), ldexp(az, -e), ldexp(at, -e)
    r = ldexp(tl.sqrt(sx * sx + sy * sy + sz * sz + st * st), e)
    r = tl.where((x != x) | (y != y) | (z != z) | (t != t), float("nan"), r)
    inf = (ax == float("inf")) | (ay == float("inf")) | (az == float("inf")) | (at == float("inf"))
    return tl.where(inf, float("inf"), r)


@jit
def rnorm3d(x, y, z):
    return 1.0 / norm3d(x, y, z)


@jit
def rnorm4d(x, y, z, t):
    return 1.0 / norm4d(x, y, z, t)


@jit
def rhypot(x, y):
    return 1.0 / norm3d(x, y, y * 0.0)


@jit
def rcbrt(x):
    return 1.0 / cbrt(x)


# CUDA's fast_* trade accuracy for speed on NVIDIA's special-function unit;
# here they are the accurate functions (no faster path to take).
fast_sinf = sin
fast_cosf = cos
fast_log2f = log2
fast_tanf = tan
fast_exp10f = exp10
fast_log10f = log10
fast_powf = pow


# ------------------------------------------------------------ error-function family
# Chebyshev series generated by libdevice_fits.py (the forms and sources are
# listed there); evaluated by Clenshaw's recurrence.
@jit
def _cheb_erfcx(s):
    # ERFCX: 27 Chebyshev terms (libdevice_fits.py)
    t = s + s
    b1 = s * 0.0
    b2 = s * 0.0
    b0 = t * b1 - b2 + -2.187342944303018e-18
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -2.237056659436e-18
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 5.068148904796111e-17
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 7.418235256624044e-17
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -1.2507950530688648e-15
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -1.864562880419313e-15
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 3.3478119482868056e-14
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 3.25254814814874e-14
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -9.65469674843344e-13
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 1.9455868545777347e-13
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 2.86879501093067e-11
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -6.318088340886684e-11
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -7.754400208831351e-10
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 4.521959811218287e-09
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 1.076499946567091e-08
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -2.1886401049234397e-07
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 7.74038306619849e-07
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 4.13902798607301e-06
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -6.916973302501207e-05
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 0.0004907758365258086
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.002413163540417608
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 0.009074997670705265
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.026658668435305753
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 0.05920993999819189
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.08424913336651792
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.004590054580646478
    b2 = b1
    b1 = b0
    return s * b1 - b2 + 1.1775789345674017


@jit
def _cheb_j0s(s):
    # J0S: 17 Chebyshev terms (libdevice_fits.py)
    t = s + s
    b1 = s * 0.0
    b2 = s * 0.0
    b0 = t * b1 - b2 + 1.2218515873961411e-17
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -7.588508125447546e-16
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 4.125320595634374e-14
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -1.9438346867370164e-12
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 7.848696314479465e-11
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -2.679253530557673e-09
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 7.608163592418782e-08
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -1.7619469077621507e-06
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 3.246032882100508e-05
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.00046062616620627504
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 0.004819180069467605
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.034893769411408884
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 0.15806710233209725
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.37009499387264977
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 0.2651786132033368
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.008723442352852221
    b2 = b1
    b1 = b0
    return s * b1 - b2 + 0.15772797147489012


@jit
def _cheb_j1s(s):
    # J1S: 17 Chebyshev terms (libdevice_fits.py)
    t = s + s
    b1 = s * 0.0
    b2 = s * 0.0
    b0 = t * b1 - b2 + 3.6912682997929334e-19
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -2.4441972916190464e-17
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 1.4232144003513942e-15
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -7.221755239651773e-14
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 3.160154580348003e-12
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -1.178026622695885e-10
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 3.687133759097148e-09
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -9.521984756750436e-08
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 1.9858774049915165e-06
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -3.255554866857259e-05
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 0.0004050337728354822
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.003646940600769276
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 0.022213639654966037
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.08268049176681791
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 0.1609992623572097
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.1489751450676521
    b2 = b1
    b1 = b0
    return s * b1 - b2 + 0.08104484632565812


@jit
def _cheb_y0s(s):
    # Y0S: 18 Chebyshev terms (libdevice_fits.py)
    t = s + s
    b1 = s * 0.0
    b2 = s * 0.0
    b0 = t * b1 - b2 + 3.9032584173475982e-19
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -2.6977881152566837e-17
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 1.6434898714919468e-15
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -8.747341203310769e-14
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 4.02633081830612e-12
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -1.5837552541812015e-10
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 5.248794787330516e-09
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -1.44072332740187e-07
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 3.206532537654801e-06
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -5.632079141056987e-05
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 0.0007531135932577742
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.007287962479552079
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 0.04719668959576339
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.17730201278114358
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 0.26156734625504663
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 0.17903431407718265
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.2744743055297453
    b2 = b1
    b1 = b0
    return s * b1 - b2 + -0.03314611320328494


@jit
def _cheb_y1s(s):
    # Y1S: 17 Chebyshev terms (libdevice_fits.py)
    t = s + s
    b1 = s * 0.0
    b2 = s * 0.0
    b0 = t * b1 - b2 + -8.224911372021585e-19
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 5.34668038572867e-17
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -3.0511859694473254e-15
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 1.51429151205002e-13
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -6.4651518414115946e-12
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 2.344337905911516e-10
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -7.11055004989928e-09
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 1.7707804556154404e-07
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -3.53808001868935e-06
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 5.505982873338744e-05
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.0006414551451326356
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 0.005289897544167113
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.028328123944594365
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 0.08445197259652346
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.09591204536083074
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.01608717304766875
    b2 = b1
    b1 = b0
    return s * b1 - b2 + 0.0025380132357417816


@jit
def _cheb_p0(s):
    # P0: 14 Chebyshev terms (libdevice_fits.py)
    t = s + s
    b1 = s * 0.0
    b2 = s * 0.0
    b0 = t * b1 - b2 + -2.880866169482871e-18
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 1.6305919233744186e-17
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -1.0011513723467786e-16
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 6.748072215733873e-16
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -5.069034095935236e-15
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 4.3265957431549404e-14
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -4.3045788699253914e-13
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 5.168262387349193e-12
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -7.86409137723707e-11
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 1.6306464635151382e-09
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -5.1705945376060975e-08
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 3.0751847875194745e-06
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.0005365220468132117
    b2 = b1
    b1 = b0
    return s * b1 - b2 + 0.9994603493475187


@jit
def _cheb_q0(s):
    # Q0: 17 Chebyshev terms (libdevice_fits.py)
    t = s + s
    b1 = s * 0.0
    b2 = s * 0.0
    b0 = t * b1 - b2 + -2.9211627152642775e-20
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 1.3091448717220122e-19
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -6.191115787358145e-19
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 3.1082440486738143e-18
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -1.6686065214378146e-17
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 9.662128970303257e-17
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -6.09993013164005e-16
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 4.255225040245461e-15
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -3.336328185322427e-14
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 3.006145125351706e-13
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -3.206747420996635e-12
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 4.2201219046687385e-11
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -7.27191593686632e-10
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 1.7972457247968992e-08
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -7.414498411060647e-07
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 6.838519942611649e-05
    b2 = b1
    b1 = b0
    return s * b1 - b2 + -0.015555854605337009


@jit
def _cheb_p1(s):
    # P1: 14 Chebyshev terms (libdevice_fits.py)
    t = s + s
    b1 = s * 0.0
    b2 = s * 0.0
    b0 = t * b1 - b2 + 3.0492991197665872e-18
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -1.7312313216116335e-17
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 1.0667689114335412e-16
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -7.221180842274018e-16
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 5.452674896044717e-15
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -4.6842237839904895e-14
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 4.699195515230542e-13
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -5.704863640395645e-12
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 8.816898659582339e-11
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -1.8718907491063067e-09
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 6.177633960644299e-08
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -3.987284300488908e-06
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 0.0008989898330859408
    b2 = b1
    b1 = b0
    return s * b1 - b2 + 1.0009030408600137


@jit
def _cheb_q1(s):
    # Q1: 16 Chebyshev terms (libdevice_fits.py)
    t = s + s
    b1 = s * 0.0
    b2 = s * 0.0
    b0 = t * b1 - b2 + -1.3765771484849487e-19
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 6.524081149589261e-19
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -3.2834519872981614e-18
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 1.767635548776479e-17
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -1.0269147531823243e-16
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 6.508282957783384e-16
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -4.5612523950772974e-15
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 3.5967765829165294e-14
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -3.2643156743279e-13
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 3.5152187949686082e-12
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -4.686363688176945e-11
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 8.229193327650554e-10
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -2.0959781384083424e-08
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 9.138615257955454e-07
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -9.62772354915708e-05
    b2 = b1
    b1 = b0
    return s * b1 - b2 + 0.04677778706953532


@jit
def _cheb_i0a(s):
    # I0A: 31 Chebyshev terms (libdevice_fits.py)
    t = s + s
    b1 = s * 0.0
    b2 = s * 0.0
    b0 = t * b1 - b2 + 5.669178006921496e-19
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -4.4153416464793395e-18
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 3.3307945188222384e-17
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -2.431279846547955e-16
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 1.715391285555133e-15
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -1.1685332877993451e-14
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 7.676185498604936e-14
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -4.856446783111929e-13
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 2.95505266312964e-12
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -1.726826291441556e-11
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 9.675809035373237e-11
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -5.189795601635263e-10
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 2.6598237246823866e-09
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -1.300025009986248e-08
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 6.046995022541919e-08
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -2.670793853940612e-07
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 1.1173875391201037e-06
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -4.4167383584587505e-06
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 1.6448448070728896e-05
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -5.754195010082104e-05
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 0.00018850288509584165
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.0005763755745385824
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 0.0016394756169413357
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.004324309995050576
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 0.010546460394594998
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.02373741480589947
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 0.04930528423967071
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.09490109704804764
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 0.17162090152220877
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.3046826723431984
    b2 = b1
    b1 = b0
    return s * b1 - b2 + 0.33839763720473803


@jit
def _cheb_i1a(s):
    # I1A: 30 Chebyshev terms (libdevice_fits.py)
    t = s + s
    b1 = s * 0.0
    b2 = s * 0.0
    b0 = t * b1 - b2 + -3.541581772542136e-19
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 2.7779141127610464e-18
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -2.111421214358166e-17
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 1.5536319577362005e-16
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -1.1055969477353862e-15
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 7.600684294735408e-15
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -5.042185504727912e-14
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 3.223793365945575e-13
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -1.9839743977649436e-12
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 1.1736186298890901e-11
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -6.663489723502027e-11
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 3.625590281552117e-10
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -1.8872497517228294e-09
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 9.381537386495773e-09
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -4.445059128796328e-08
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 2.0032947535521353e-07
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -8.568720264695455e-07
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 3.4702513081376785e-06
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -1.3273163656039436e-05
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 4.781565107550054e-05
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.00016176081582589674
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 0.0005122859561685758
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.0015135724506312532
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 0.004156422944312888
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.010564084894626197
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 0.024726449030626516
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.05294598120809499
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 0.1026436586898471
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.17641651835783406
    b2 = b1
    b1 = b0
    return s * b1 - b2 + 0.12629359322181682


@jit
def _cheb_i0b(s):
    # I0B: 27 Chebyshev terms (libdevice_fits.py)
    t = s + s
    b1 = s * 0.0
    b2 = s * 0.0
    b0 = t * b1 - b2 + 1.193650890845982e-18
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 9.921475412173699e-19
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -7.233180487874754e-18
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -4.830504485944182e-18
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 4.46562142029676e-17
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 3.461222867697461e-17
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -2.8276239805165836e-16
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -3.425485619677219e-16
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 1.7725601330565263e-15
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 3.8116806693526224e-15
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -9.554846698828307e-15
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -4.150569347287222e-14
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 1.54008621752141e-14
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 3.8527783827421426e-13
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 7.180124451383666e-13
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -1.7941785315068062e-12
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -1.3215811840447713e-11
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -3.1499165279632416e-11
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 1.1889147107846439e-11
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 4.94060238822497e-10
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 3.3962320257083865e-09
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 2.266668990498178e-08
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 2.0489185894690638e-07
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 2.8913705208347567e-06
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 6.889758346916825e-05
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 0.0033691164782556943
    b2 = b1
    b1 = b0
    return s * b1 - b2 + 0.4022452055070544


@jit
def _cheb_i1b(s):
    # I1B: 27 Chebyshev terms (libdevice_fits.py)
    t = s + s
    b1 = s * 0.0
    b2 = s * 0.0
    b0 = t * b1 - b2 + -1.242193275194891e-18
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -9.314178867326884e-19
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 7.517296310842105e-18
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 4.414348323071708e-18
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -4.6503053684893586e-17
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -3.209525921993424e-17
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 2.96262899764595e-16
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 3.3082023109209285e-16
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -1.8803547755107825e-15
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -3.8144030724370075e-15
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 1.0420276984128802e-14
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 4.272440016711951e-14
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -2.1015418427726643e-14
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -4.0835511110921974e-13
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -7.198551776245908e-13
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 2.0356285441470896e-12
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 1.4125807436613782e-11
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + 3.2526035830154884e-11
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -1.8974958123505413e-11
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -5.589743462196584e-10
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -3.835380385964237e-09
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -2.6314688468895196e-08
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -2.512236237870209e-07
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -3.882564808877691e-06
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.00011058893876262371
    b2 = b1
    b1 = b0
    b0 = t * b1 - b2 + -0.009761097491361469
    b2 = b1
    b1 = b0
    return s * b1 - b2 + 0.38928811750914005



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


# ------------------------------------------------------------ Bessel functions
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


# ------------------------------------------------------------ what is not here
# CUDA libdevice names (in Triton's tables) zetile does not provide yet;
# asking for one (or any other missing name) is an AttributeError saying so.
NOT_PROVIDED = (
    'rcp64h', 'yn', 'jn', )


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    why = (" (a CUDA libdevice function zetile has not implemented; docs/LANGUAGE.md lists them)"
           if name in NOT_PROVIDED else "")
    raise AttributeError(f"libdevice.{name} is not provided by zetile's libdevice{why}")
