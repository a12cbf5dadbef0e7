"""IEEE 754 operations on a float's exponent and neighbours: nextafter,
ilogb/logb, ldexp/scalbn (exact, through denormals), remainder (round-half-
even quotient), llrint/llround."""
from ....jit import jit
from ... import core as tl
from .float_bits import _bits, _from_bits, signbit
from .elementary import fmod, rint, round
from .integer import _clz32, _clz64


@jit
def nextafter(x, y):
    b = _bits(x)
    # Toward y: one step of the bits away from zero when x and y - x have the same sign.
    # (an i1 == i1 here, like ~ or != on i1 elsewhere, made IGC abort on pvc: as integers)
    r = _from_bits(b + tl.where((x < y).to(tl.int32) == (x > 0).to(tl.int32), 1, -1))
    tiny = _from_bits(b * 0 + 1)  # the smallest denormal
    r = tl.where(x == 0, tl.where(y > 0, tiny, -tiny), r)
    r = tl.where(x == y, y, r)
    return tl.where((x != x) | (y != y), x + y, r)


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
