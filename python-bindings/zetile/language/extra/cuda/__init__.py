"""tl.extra.cuda.libdevice: zetile's libdevice under the path cuda kernels use."""
from . import libdevice  # noqa: F401
