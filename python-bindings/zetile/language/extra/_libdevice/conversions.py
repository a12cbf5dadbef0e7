"""Conversions in every rounding mode: float/double to (unsigned) int and
long long (saturating, NaN to 0, as PTX's cvt), double to float, and
integers to float/double, each rounded to nearest by the cast and then
moved one step when the exact value lies on the other side."""
from ....jit import jit
from ... import core as tl
from .float_bits import _round_rd, _round_ru, _round_rz
from .elementary import rint, trunc


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


def _convert(saturate, rounding, name):
    def convert(x):
        return saturate(rounding(x))
    convert.__name__ = convert.__qualname__ = name
    return jit(convert)


# The rounding each mode's name stands for (round to nearest even, toward
# zero, down, up); the conversions are these then the saturation.
_MODES = (("rn", rint), ("rz", trunc), ("rd", tl.floor), ("ru", tl.ceil))


def _float_to(kind, saturate):
    """float2<kind>_rn, _rz, _rd, _ru."""
    return tuple(_convert(saturate, rounding, f"float2{kind}_{mode}") for mode, rounding in _MODES)


float2int_rn, float2int_rz, float2int_rd, float2int_ru = _float_to("int", _sat_i32)
float2uint_rn, float2uint_rz, float2uint_rd, float2uint_ru = _float_to("uint", _sat_u32)
float2ll_rn, float2ll_rz, float2ll_rd, float2ll_ru = _float_to("ll", _sat_i64)
float2ull_rn, float2ull_rz, float2ull_rd, float2ull_ru = _float_to("ull", _sat_u64)


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
        return big | (back > x), (r < 1.8446744073709552e19) & (back < x)  # not ~big: IGC aborts
    elif x.dtype == tl.int64:
        big = r >= 9.223372036854775808e18
        back = tl.where(big, 0.0, r).to(tl.int64)
        return big | (back > x), (r < 9.223372036854775808e18) & (back < x)
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
