"""tl.extra.intel.libdevice: zetile's libdevice under the path intel kernels use."""
from . import libdevice  # noqa: F401
