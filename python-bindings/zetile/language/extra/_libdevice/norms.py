"""Scaled norms (norm3d, norm4d, hypot and their reciprocals, no overflow or
underflow in the squares), rsqrt_rn and rcbrt, and CUDA's fast_* names,
which here are the accurate functions."""
from ....jit import jit
from ... import core as tl
from .float_bits import _step_down, _step_up
from .elementary import cbrt, cos, exp10, log10, log2, pow, sin, tan, tanh
from .ieee import ilogb, ldexp


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

@jit
def hypot(x, y):
    # scaled as norm3d (sqrt(x*x + y*y) overflowed past 1.8e19 in fp32)
    return norm3d(x, y, y * 0.0)



# CUDA's fast_* trade accuracy for speed on NVIDIA's special-function unit;
# here they are the accurate functions (no faster path to take).
fast_sinf = sin
fast_cosf = cos
fast_log2f = log2
fast_tanf = tan
fast_exp10f = exp10
fast_log10f = log10
fast_powf = pow
fast_tanhf = tanh  # HIP's libdevice (Inductor emits it under use_fast_math on ROCm)
