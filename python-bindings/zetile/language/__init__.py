"""zetile.language: write kernels as in Triton (`import zetile.language as tl`)."""
from .core import *  # noqa: F401,F403
from .core import (constexpr, tensor, dtype, pointer_type, builtin, PropagateNan, range,  # noqa: F401
                   static_range, program_id, num_programs, arange, full, zeros, zeros_like,
                   cast, load, store, exp, exp2, log, log2, sqrt, sqrt_rn, rsqrt, sin,
                   cos, erf, floor, ceil, abs, fma, maximum, minimum, clamp, where, fdiv, div_rn,
                   umulhi, sigmoid, cdiv, broadcast_to, broadcast, expand_dims, reshape, view,
                   ravel, permute, trans, sum, max, min, xor_sum, dot, dot_scaled, multiple_of, max_contiguous,
                   max_constancy, debug_barrier, static_assert, static_print,
                   int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16,
                   bfloat16, float32, float64)
from . import math  # noqa: F401
from .dtypes import str_to_ty, const  # noqa: F401
from .tuples import tuple  # noqa: F401,A001 - tl.tuple, as in Triton

from .blocks import (make_block_ptr, advance, make_tensor_descriptor, load_tensor_descriptor,  # noqa: F401
                     store_tensor_descriptor, block_ptr, tensor_descriptor)
from .standard import (reduce, associative_scan, cumsum, cumprod, argmax, argmin,  # noqa: F401
                       atomic_add, atomic_max, atomic_min, atomic_and, atomic_or, atomic_xor,
                       atomic_xchg, atomic_cas, atomic_poll, device_print, device_assert)
from .random import (randint, randint4x, rand, rand4x, randn, randn4x, philox,  # noqa: F401,E402
                     philox_impl, uint_to_uniform_float, pair_uniform_to_normal)
from .standard import (add, sub, mul, to_tensor, assume, reduce_or, unsqueeze, squeeze, join,  # noqa: F401,E402
                       split, interleave, swizzle2d, softmax)
TRITON_MAX_TENSOR_NUMEL = 1048576
from .standard import gather, flip, cat, histogram, sort, topk  # noqa: F401,E402


def __getattr__(name):
    # tl.extra (libdevice) is loaded on first use: it is written with @jit,
    # which needs the rest of zetile imported first.
    if name == "extra":
        import importlib
        return importlib.import_module(".extra", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
