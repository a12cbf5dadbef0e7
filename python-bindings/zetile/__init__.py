"""zetile: a Triton-style JIT kernel compiler for Intel GPUs, with a CPU target.

    import zetile
    import zetile.language as tl

    @zetile.jit
    def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        ...
    add[(zetile.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
"""
from . import _C
from . import language  # noqa: F401
from .compiler.errors import CompilationError, UnsupportedError  # noqa: F401
from .jit import jit, compile, JITFunction, CompiledKernel, KernelArgumentError  # noqa: F401
from .runtime import (devices, set_device, get_device, empty, zeros, from_numpy,  # noqa: F401
                      Tensor)
from . import testing  # noqa: F401 - triton.testing's helpers (do_bench, perf_report, ...)
from .autotuner import autotune, Config, heuristics, Autotuner, AutotunerError  # noqa: F401
from .triton_names import (TritonError, InterpreterError, OutOfResources, set_allocator,  # noqa: F401
                           reinterpret, TensorWrapper, constexpr_function)

Error = _C.Error
# What a launch can raise from inside a kernel (docs/RELIABILITY.md): a
# failed tl.device_assert, and a memory fault or bounds-mode violation.
DeviceAssertError = _C.DeviceAssertError
DeviceFaultError = _C.DeviceFaultError
DeviceLostError = _C.DeviceLostError
__version__ = _C._ext.__version__  # written once, in include/zetile/api.h


def cdiv(x, y):
    """ceil(x / y) for host-side grid computations."""
    return (x + y - 1) // y


def next_power_of_2(n):
    """The smallest power of 2 >= n (1 for n <= 1)."""
    n = int(n)
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def cache_stats():
    """Counters of the on-disk cache for this process (hits, misses, compiles, ...)."""
    return _C.cache_stats()


def cache_dir():
    return _C.cache_dir()
