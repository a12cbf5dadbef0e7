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


def _fp16_in_fp32(name):
    """libdevice's `name`, taking fp16 too: computed in fp32, rounded back to fp16."""
    fn = getattr(_ld, name)

    def wrapped(x):
        if x.dtype == tl.float16:
            return fn(x.to(tl.float32)).to(tl.float16)
        else:
            return fn(x)
    wrapped.__name__ = wrapped.__qualname__ = name
    return jit(wrapped)


# The unary functions of Intel's tables with an fp16 signature.
abs = _fp16_in_fp32("abs")  # noqa: A001 - libdevice's name
ceil = _fp16_in_fp32("ceil")
cos = _fp16_in_fp32("cos")
exp = _fp16_in_fp32("exp")
exp10 = _fp16_in_fp32("exp10")
exp2 = _fp16_in_fp32("exp2")
floor = _fp16_in_fp32("floor")
log = _fp16_in_fp32("log")
log10 = _fp16_in_fp32("log10")
log2 = _fp16_in_fp32("log2")
nearbyint = _fp16_in_fp32("nearbyint")
rint = _fp16_in_fp32("rint")
rsqrt = _fp16_in_fp32("rsqrt")
sin = _fp16_in_fp32("sin")
sqrt = _fp16_in_fp32("sqrt")
trunc = _fp16_in_fp32("trunc")


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
