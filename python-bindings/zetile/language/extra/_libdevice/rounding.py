"""Arithmetic with a directed rounding (CUDA's __fadd_rz, __fmul_rd,
__fdiv_ru, __fsqrt_rz, __fmaf_rd, ... and the reciprocals __frcp_*):
the result rounded to nearest, then one step toward the mode's direction
when the exact result lies on the other side of it (the helpers _round_rz,
_round_rd, _round_ru in _float_bits)."""
from ....jit import jit
from ... import core as tl
from .float_bits import _bits, _one_like, _round_rd, _round_ru, _round_rz
from .elementary import div_rn, sqrt_rn


# Which side is known exactly:
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


def _directed(rounded, sides, op):
    """op_rz, op_rd, op_ru of a binary operation: `rounded` gives its result
    rounded to nearest, `sides(x, y, r)` whether the exact result lies
    (below r, above r)."""
    def rz(x, y):
        r = rounded(x, y)
        above, below = sides(x, y, r)
        return _round_rz(r, above, below)

    def rd(x, y):
        r = rounded(x, y)
        above, below = sides(x, y, r)
        return _round_rd(r, above)

    def ru(x, y):
        r = rounded(x, y)
        above, below = sides(x, y, r)
        return _round_ru(r, below)

    for f in (rz, rd, ru):
        f.__name__ = f.__qualname__ = f"{op}_{f.__name__}"
    return jit(rz), jit(rd), jit(ru)


mul_rz, mul_rd, mul_ru = _directed(mul_rn, _mul_sides, "mul")


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


div_rz, div_rd, div_ru = _directed(div_rn, _div_sides, "div")


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
