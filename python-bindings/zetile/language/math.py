"""tl.math: the elementwise math functions under their libdevice-style names."""
from .core import (exp, exp2, log, log2, sqrt, sqrt_rn, rsqrt, sin, cos, erf, floor, ceil, abs,  # noqa: F401
                   fma, maximum as max, minimum as min, div_rn, fdiv, umulhi, sigmoid, cdiv)
