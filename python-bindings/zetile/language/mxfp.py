"""tl.dot_scaled: microscaling (MX) dots, computed by upcasting (issue 19).

An operand is given in one of Triton's formats: "e2m1" (fp4, two values a
byte, the first in the low nibble, packed along K unless k_pack=False),
"e4m3" / "e5m2" (fp8 bytes, as tl.float8e4nv / tl.float8e5), "bf16",
"fp16". An operand with a scale tensor (uint8, e8m0: shape [M, K // 32]
for the left one, [N, K // 32] for the right one) has each group of 32
values along K multiplied by 2**(scale - 127); scale 0xFF is NaN and scale
0 gives 0, as the bit patterns `scale << 23` read as fp32 (Triton's own
decoding). No target here has MX hardware, so both operands are decoded to
fp32, scaled, and rounded to bf16 — or fp16 when either operand is fp16 —
as Triton does on GPUs without MX instructions; every e2m1/e4m3/e5m2 value
times a power of two is exact there unless it leaves the type's range. The
dot then accumulates in fp32 (tl.dot of the two upcast tiles).
"""
from __future__ import annotations

from . import dtypes as T
from . import fp8 as F8
from .semantic import tensor

_FP8_FORMATS = {"e4m3": T.float8e4nv, "e5m2": T.float8e5}
FORMATS = ("e2m1", "e4m3", "e5m2", "bf16", "fp16")


def _e2m1_to_f32(s, nib):
    """fp32 values of 4-bit e2m1 codes held in a uint32 tensor:
    0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives."""
    e = s.and_(s.shr(nib, 1), 3)
    m = s.and_(nib, 1)
    # e == 0: m * 0.5; otherwise (2 + m) * 2**(e - 2)  (as 1.m * 2**(e-1))
    sub = s.mul(s.cast(m, T.float32), 0.5)
    p2 = s.bitcast(s.shl(s.add(e, 125), 23), T.float32)
    norm = s.mul(s.cast(s.add(m, 2), T.float32), p2)
    mag = s.where(s.equal(e, 0), sub, norm)
    return s.where(s.equal(s.and_(nib, 8), 0), mag, s.minus(mag))


def _interleave(s, lo, hi, axis):
    """lo and hi alternating along `axis` (lo first): the unpacked nibbles."""
    rank = len(lo.shape)
    shape = lo.shape + (2,)
    which = s.broadcast_to(s.reshape(s.arange(0, 2), (1,) * rank + (2,)), shape)
    j = s.where(s.equal(which, 0), s.broadcast_to(s.expand_dims(lo, rank), shape),
                s.broadcast_to(s.expand_dims(hi, rank), shape))
    if axis != rank - 1:
        # move the pair dimension just after `axis`
        order = list(range(axis + 1)) + [rank] + list(range(axis + 1, rank))
        j = s.permute(j, order)
    out = list(lo.shape)
    out[axis] *= 2
    return s.reshape(j, tuple(out))


def _values(s, v, fmt, k_pack, k_axis):
    """fp32 tile of the operand `v` given in format `fmt` (unscaled)."""
    if fmt == "e2m1":
        if not v.dtype.is_int() or v.dtype.primitive_bitwidth != 8:
            raise TypeError(f"tl.dot_scaled: an e2m1 operand is packed in uint8, got {v.dtype}")
        u = s.cast(tensor(v.handle, T.uint8, v.shape), T.uint32)
        lo = _e2m1_to_f32(s, s.and_(u, 15))
        hi = _e2m1_to_f32(s, s.shr(u, 4))
        axis = k_axis if k_pack else 1 - k_axis
        return _interleave(s, lo, hi, axis)
    if fmt in _FP8_FORMATS:
        if v.dtype.primitive_bitwidth != 8:
            raise TypeError(f"tl.dot_scaled: an {fmt} operand holds bytes, got {v.dtype}")
        return F8.to_f32(s, tensor(v.handle, _FP8_FORMATS[fmt], v.shape))
    want = T.bfloat16 if fmt == "bf16" else T.float16
    if v.dtype != want:
        raise TypeError(f"tl.dot_scaled: a {fmt} operand must be {want}, got {v.dtype}")
    return s.cast(v, T.float32)


def _scale_factor(s, scale):
    """fp32 2**(scale - 127) of e8m0 bytes (0 -> 0.0, 0xFF -> NaN)."""
    u = s.cast(tensor(scale.handle, T.uint8, scale.shape), T.uint32)
    f = s.bitcast(s.shl(u, 23), T.float32)
    nan = s.bitcast(s.full(scale.shape, 0x7FC00000, T.uint32), T.float32)
    return s.where(s.equal(u, 255), nan, f)


def _apply_scale(s, x, scale, is_rhs):
    """x [M, K] (lhs) or [K, N] (rhs) times its group scales
    ([M, K//32] or [N, K//32])."""
    k = x.shape[1] if not is_rhs else x.shape[0]
    mn = x.shape[0] if not is_rhs else x.shape[1]
    if k % 32:
        raise ValueError(f"tl.dot_scaled: K = {k} is not a multiple of 32 (the scale group)")
    want = (mn, k // 32)
    if tuple(scale.shape) != want:
        raise ValueError(f"tl.dot_scaled: the {'rhs' if is_rhs else 'lhs'} scale has shape "
                         f"{list(scale.shape)}, expected {list(want)}")
    f = _scale_factor(s, scale)                         # [MN, G]
    if not is_rhs:
        f = s.broadcast_to(s.expand_dims(f, 2), (mn, k // 32, 32))
        f = s.reshape(f, (mn, k))
    else:
        f = s.permute(f, (1, 0))                        # [G, N]
        f = s.broadcast_to(s.expand_dims(f, 1), (k // 32, 32, mn))
        f = s.reshape(f, (k, mn))
    return s.mul(x, f)


def dot_scaled(s, lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None,
               fast_math=False, lhs_k_pack=True, rhs_k_pack=True, out_dtype=T.float32):
    for name, fmt in (("lhs_format", lhs_format), ("rhs_format", rhs_format)):
        if fmt not in FORMATS:
            raise ValueError(f"tl.dot_scaled: {name} must be one of {', '.join(FORMATS)}, got {fmt!r}")
    lhs, rhs = s.to_tensor(lhs), s.to_tensor(rhs)
    if len(lhs.shape) != 2 or len(rhs.shape) != 2:
        raise ValueError(f"tl.dot_scaled needs 2-D operands, got {list(lhs.shape)} and {list(rhs.shape)}")
    comp = T.float16 if "fp16" in (lhs_format, rhs_format) else T.bfloat16
    x = _values(s, lhs, lhs_format, lhs_k_pack, 1)
    y = _values(s, rhs, rhs_format, rhs_k_pack, 0)
    if lhs_scale is not None:
        x = _apply_scale(s, x, s.to_tensor(lhs_scale), False)
    if rhs_scale is not None:
        y = _apply_scale(s, y, s.to_tensor(rhs_scale), True)
    if x.shape[1] != y.shape[0]:
        raise ValueError(f"tl.dot_scaled: K differs: lhs {list(x.shape)} (unpacked), rhs {list(y.shape)}")
    return s.dot(s.cast(x, comp), s.cast(y, comp), acc, "ieee", out_dtype)
