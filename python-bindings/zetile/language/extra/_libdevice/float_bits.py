"""Bits of floats: a float's IEEE bits and back, one step to the next float
up or down (the directed roundings move a rounded-to-nearest result by
it), 1.0 of a value's dtype, and CUDA's classification functions, which
read the bits (isnan & co. return int32, as __nv_isnanf does)."""
from ....jit import jit
from ... import core as tl


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


@jit
def _one_like(x):
    # 1.0 of x's dtype and shape (from bits: x * 0 + 1 is NaN at inf).
    if x.dtype == tl.float64:
        return _from_bits(_bits(x) * 0 + 0x3FF0000000000000)
    else:
        return _from_bits(_bits(x) * 0 + 0x3F800000)


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
