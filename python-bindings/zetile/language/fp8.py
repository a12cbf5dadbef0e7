"""Triton's 8-bit floats, computed by conversion (issue 19).

No target here has fp8 arithmetic (the CPU has none; PVC's DPAS takes no
fp8 either), so an fp8 value is its byte: the tile IR holds an `i8` and the
front end knows which format the byte is in. Loads, stores, `where`,
reshapes and permutes move the byte as it is; everything that computes
(casts, arithmetic, comparisons, reductions, dots) decodes to fp32 first,
exactly (every fp8 value is an fp32 and an fp16 value), and rounds back
where the result is fp8. The conversions below are integer and fp32 ops,
so every target that compiles those runs fp8 kernels the same way.

Formats (Triton's names; bias and the meaning of the top codes):
  fp8e4nv   E4M3FN   bias 7   no infinities, NaN = S.1111.111       max 448
  fp8e4b15  E4M3     bias 15  like fp8e4nv (Triton's own format)     max 1.75
  fp8e5     E5M2     bias 15  IEEE: inf = S.11111.00, NaN otherwise  max 57344
  fp8e4b8   E4M3FNUZ bias 8   NaN = 0x80 (no -0), no infinities      max 240
  fp8e5b16  E5M2FNUZ bias 16  NaN = 0x80 (no -0), no infinities      max 57344

Rounding from wider floats is to nearest even (Triton's default for
downcasts) or toward zero (`fp_downcast_rounding="rtz"`). Out of range,
fp8e4nv, fp8e4b15 and fp8e5 saturate to ±max, infinities too (Triton's
"clamping", which its test_conversions.py checks for fp8e4nv and fp8e5;
torch 2.13 agrees for fp8e4nv but gives ±inf in fp8e5); the FNUZ formats
become NaN (as torch; under rtz a finite overflow saturates); NaN stays NaN.
"""
from __future__ import annotations

import math
import struct
from typing import NamedTuple

from . import dtypes as T


class Format(NamedTuple):
    m: int          # mantissa bits
    bias: int
    kind: str       # "fn" (NaN at S.1111111), "ieee" (inf and NaN at exponent 11111), "fnuz" (NaN 0x80)

    @property
    def e(self):
        return 7 - self.m

    @property
    def max_code(self):
        """The largest finite magnitude's byte."""
        if self.kind == "fn":
            return 0x7E
        if self.kind == "ieee":
            return (((1 << self.e) - 2) << self.m) | ((1 << self.m) - 1)
        return 0x7F


FORMATS = {
    "fp8e4nv": Format(3, 7, "fn"),
    "fp8e4b15": Format(3, 15, "fn"),
    "fp8e5": Format(2, 15, "ieee"),
    "fp8e4b8": Format(3, 8, "fnuz"),
    "fp8e5b16": Format(2, 16, "fnuz"),
}


# ------------------------------------------------------------ host side
def decode_byte(code: int, name: str) -> float:
    """The value of one fp8 byte (Python float)."""
    f = FORMATS[name]
    code &= 0xFF
    s = -1.0 if code & 0x80 else 1.0
    e = (code >> f.m) & ((1 << f.e) - 1)
    mant = code & ((1 << f.m) - 1)
    if f.kind == "fnuz" and code == 0x80:
        return math.nan
    if f.kind == "fn" and code & 0x7F == 0x7F:
        return math.nan
    if f.kind == "ieee" and e == (1 << f.e) - 1:
        return s * math.inf if mant == 0 else math.nan
    if e == 0:
        return s * mant * 2.0 ** (1 - f.bias - f.m)
    return s * (mant + (1 << f.m)) * 2.0 ** (e - f.bias - f.m)


def encode_scalar(value: float, name: str, rtz: bool = False) -> int:
    """The fp8 byte of a Python number, rounded as kernels round fp32
    (the number is taken as fp32 first, as Triton's constants are)."""
    u = struct.unpack("<I", struct.pack("<f", float(value)))[0]
    return _encode_bits(u, FORMATS[name], rtz)


def _encode_bits(u: int, f: Format, rtz: bool) -> int:
    # The same steps as from_f32 below, on one fp32 bit pattern.
    sign = (u >> 24) & 0x80
    a = u & 0x7FFFFFFF
    shift = 23 - f.m
    if a > 0x7F800000:
        return _nan_code(f, sign)
    if a < (128 - f.bias) << 23:
        x = struct.unpack("<f", struct.pack("<I", a))[0]
        r = int(x * 2.0 ** (f.bias + f.m - 1)) if rtz else \
            _rne(x * 2.0 ** (f.bias + f.m - 1))
    else:
        b = a - ((127 - f.bias) << 23)
        r = b >> shift if rtz else (b + (1 << (shift - 1)) - 1 + ((a >> shift) & 1)) >> shift
    if r > f.max_code:
        r = _overflow_code(f, sign, a == 0x7F800000, rtz)
        return r
    if f.kind == "fnuz" and r == 0:
        return 0
    return r | sign


def _rne(x: float) -> int:
    # x >= 0 and small: Python's round() is half-to-even.
    return int(round(x))


def _nan_code(f: Format, sign: int) -> int:
    if f.kind == "fnuz":
        return 0x80
    return 0x7F | sign


def _overflow_code(f: Format, sign: int, is_inf: bool, rtz: bool) -> int:
    if f.kind == "fnuz":
        return f.max_code | sign if rtz and not is_inf else 0x80
    return f.max_code | sign  # fn and ieee: saturate (Triton)


# --------------------------------------------------------- kernel side
def to_f32(s, t):
    """fp32 tensor holding the values of the fp8 tensor `t` (exact)."""
    from .semantic import tensor
    f = FORMATS[t.dtype.name]
    u = s.cast(tensor(t.handle, T.uint8, t.shape), T.uint32)
    e = s.and_(s.shr(u, f.m), (1 << f.e) - 1)
    mant = s.and_(u, (1 << f.m) - 1)
    is_sub = s.equal(e, 0)
    full = s.where(is_sub, mant, s.or_(mant, 1 << f.m))
    ex = s.where(is_sub, s.full(t.shape, 1, T.uint32), e)
    # 2**(ex - bias - m) built as fp32 bits: always a normal fp32 here.
    p2 = s.bitcast(s.shl(s.add(ex, 127 - f.bias - f.m), 23), T.float32)
    mag = s.mul(s.cast(full, T.float32), p2)
    bits = s.or_(s.bitcast(mag, T.uint32), s.shl(s.and_(u, 0x80), 24))
    if f.kind == "fn":
        special = s.equal(s.and_(u, 0x7F), 0x7F)
        bits = s.where(special, s.full(t.shape, 0x7FC00000, T.uint32), bits)
    elif f.kind == "fnuz":
        bits = s.where(s.equal(u, 0x80), s.full(t.shape, 0x7FC00000, T.uint32), bits)
    else:
        emax = (1 << f.e) - 1
        top = s.equal(e, emax)
        inf_or_nan = s.where(s.equal(mant, 0),
                             s.or_(s.full(t.shape, 0x7F800000, T.uint32), s.shl(s.and_(u, 0x80), 24)),
                             s.full(t.shape, 0x7FC00000, T.uint32))
        bits = s.where(top, inf_or_nan, bits)
    return s.bitcast(bits, T.float32)


def from_f32(s, x, dst, rtz=False):
    """fp8 tensor of format `dst` from the fp32 tensor `x`, rounded to
    nearest even (or toward zero)."""
    from .semantic import tensor
    f = FORMATS[dst.name]
    shape = x.shape
    shift = 23 - f.m
    u = s.bitcast(x, T.uint32)
    sign = s.and_(s.shr(u, 24), 0x80)
    a = s.and_(u, 0x7FFFFFFF)
    absf = s.bitcast(a, T.float32)
    # Below the smallest normal of the target: the value in units of the
    # target's subnormal step, rounded by the fp32 unit itself (adding a
    # power of two whose ulp is that step rounds to nearest even).
    if rtz:
        r_sub = s.cast(s.mul(absf, float(2.0 ** (f.bias + f.m - 1))), T.uint32)
    else:
        magic = ((127 - f.bias) + shift + 1) << 23
        magic_f = struct.unpack("<f", struct.pack("<I", magic))[0]
        r_sub = s.sub(s.bitcast(s.add(absf, magic_f), T.uint32), magic)
    # Normal: rebias the exponent and round the mantissa's low bits away.
    b = s.sub(a, (127 - f.bias) << 23)
    if rtz:
        r_norm = s.shr(b, shift)
    else:
        odd = s.and_(s.shr(a, shift), 1)
        r_norm = s.shr(s.add(s.add(b, (1 << (shift - 1)) - 1), odd), shift)
    r = s.where(s.less_than(a, (128 - f.bias) << 23), r_sub, r_norm)
    is_nan = s.greater_than(a, 0x7F800000)
    is_inf = s.equal(a, 0x7F800000)
    over = s.greater_than(r, f.max_code)
    signed = s.or_(r, sign)
    maxc = s.or_(s.full(shape, f.max_code, T.uint32), sign)
    if f.kind == "fnuz":
        nan = s.full(shape, 0x80, T.uint32)
        out = s.where(s.equal(r, 0), s.full(shape, 0, T.uint32), signed)
        ovf = s.where(is_inf, nan, maxc) if rtz else nan
        out = s.where(over, ovf, out)
        out = s.where(is_nan, nan, out)
    else:   # fn and ieee saturate, infinities too
        out = s.where(over, maxc, signed)
        out = s.where(is_nan, s.or_(s.full(shape, 0x7F, T.uint32), sign), out)
    byte = s.cast(out, T.uint8)
    return tensor(byte.handle, dst, byte.shape)
