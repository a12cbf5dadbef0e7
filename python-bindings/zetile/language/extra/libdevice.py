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
def remainder(x, y):
    # IEEE remainder x - n*y, n = x/y rounded half to even; exact (fdlibm's
    # e_remainder scheme: fmod by 2|y| first, so the quotient's parity is
    # known, then at most two subtractions of |y|).
    p = tl.abs(y)
    if x.dtype == tl.float64:
        half_max = 8.98846567431158e+307
        tiny = 4.450147717014403e-308  # 2 * smallest normal: below it p/2 is inexact
    else:
        half_max = 1.7014118346046923e+38
        tiny = 2.350988701644575e-38
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
    r = tl.where((r == 0) & ~a & ~b & ((_bits(p) | _bits(z)) != 0), _neg_zero(r), r)
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


# ------------------------------------------------------------ what is not here
# CUDA libdevice names (in Triton's tables) zetile does not provide yet;
# asking for one (or any other missing name) is an AttributeError saying so.
NOT_PROVIDED = (
    'rcp64h', 'j0',
    'j1', 'y0', 'y1', 'yn', 'jn', 'cyl_bessel_i0', 'cyl_bessel_i1', 'erfinv', 'erfcx',
    'erfcinv', 'normcdfinv', 'normcdf',
)


def __getattr__(name):
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    why = (" (a CUDA libdevice function zetile has not implemented; docs/LANGUAGE.md lists them)"
           if name in NOT_PROVIDED else "")
    raise AttributeError(f"libdevice.{name} is not provided by zetile's libdevice{why}")
