"""tl.extra.intel.libdevice: zetile's libdevice under the path intel kernels use.

Intel's tables (intel-xpu-backend-for-triton's third_party/intel/language/
intel/libdevice.py) are CUDA's with the same result dtypes, minus fast_tanf,
rcp64h, rsqrt_rn and fma_r*, plus fp16 for 18 functions (and fp32 for
isfinited): those take fp16 here too, computed in fp32 and rounded back to
fp16 (one rounding of an fp32 result within a few fp32 ulps)."""
from ..libdevice import *  # noqa: F401,F403
from ..libdevice import __getattr__  # noqa: F401,E402 - the same message for a missing name
from .. import libdevice as _ld
from ....jit import jit
from ... import core as tl


@jit
def abs(x):
    if x.dtype == tl.float16:
        return _ld.abs(x.to(tl.float32)).to(tl.float16)
    else:
        return _ld.abs(x)


@jit
def ceil(x):
    if x.dtype == tl.float16:
        return _ld.ceil(x.to(tl.float32)).to(tl.float16)
    else:
        return _ld.ceil(x)


@jit
def cos(x):
    if x.dtype == tl.float16:
        return _ld.cos(x.to(tl.float32)).to(tl.float16)
    else:
        return _ld.cos(x)


@jit
def exp(x):
    if x.dtype == tl.float16:
        return _ld.exp(x.to(tl.float32)).to(tl.float16)
    else:
        return _ld.exp(x)


@jit
def exp10(x):
    if x.dtype == tl.float16:
        return _ld.exp10(x.to(tl.float32)).to(tl.float16)
    else:
        return _ld.exp10(x)


@jit
def exp2(x):
    if x.dtype == tl.float16:
        return _ld.exp2(x.to(tl.float32)).to(tl.float16)
    else:
        return _ld.exp2(x)


@jit
def floor(x):
    if x.dtype == tl.float16:
        return _ld.floor(x.to(tl.float32)).to(tl.float16)
    else:
        return _ld.floor(x)


@jit
def log(x):
    if x.dtype == tl.float16:
        return _ld.log(x.to(tl.float32)).to(tl.float16)
    else:
        return _ld.log(x)


@jit
def log10(x):
    if x.dtype == tl.float16:
        return _ld.log10(x.to(tl.float32)).to(tl.float16)
    else:
        return _ld.log10(x)


@jit
def log2(x):
    if x.dtype == tl.float16:
        return _ld.log2(x.to(tl.float32)).to(tl.float16)
    else:
        return _ld.log2(x)


@jit
def nearbyint(x):
    if x.dtype == tl.float16:
        return _ld.nearbyint(x.to(tl.float32)).to(tl.float16)
    else:
        return _ld.nearbyint(x)


@jit
def rint(x):
    if x.dtype == tl.float16:
        return _ld.rint(x.to(tl.float32)).to(tl.float16)
    else:
        return _ld.rint(x)


@jit
def rsqrt(x):
    if x.dtype == tl.float16:
        return _ld.rsqrt(x.to(tl.float32)).to(tl.float16)
    else:
        return _ld.rsqrt(x)


@jit
def sin(x):
    if x.dtype == tl.float16:
        return _ld.sin(x.to(tl.float32)).to(tl.float16)
    else:
        return _ld.sin(x)


@jit
def sqrt(x):
    if x.dtype == tl.float16:
        return _ld.sqrt(x.to(tl.float32)).to(tl.float16)
    else:
        return _ld.sqrt(x)


@jit
def trunc(x):
    if x.dtype == tl.float16:
        return _ld.trunc(x.to(tl.float32)).to(tl.float16)
    else:
        return _ld.trunc(x)


@jit
def copysign(x, y):
    if x.dtype == tl.float16:
        return _ld.copysign(x.to(tl.float32), y.to(tl.float32)).to(tl.float16)
    else:
        return _ld.copysign(x, y)


@jit
def fma(x, y, z):
    # fp16: the fp32 fma of fp16 values is exact before its rounding (11x11-bit
    # product), so rounding it to fp16 rounds twice only at fp32 ties
    if x.dtype == tl.float16:
        return _ld.fma(x.to(tl.float32), y.to(tl.float32), z.to(tl.float32)).to(tl.float16)
    else:
        return _ld.fma(x, y, z)
