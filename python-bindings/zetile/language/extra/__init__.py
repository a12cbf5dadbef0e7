"""tl.extra: Triton's extra libraries. `libdevice` holds the math functions
Triton takes from CUDA's libdevice / Intel's OCL builtins, written here over
zetile's math ops; `extra.intel.libdevice` and `extra.cuda.libdevice` are
the same functions under the paths ported kernels import."""
from . import libdevice  # noqa: F401
