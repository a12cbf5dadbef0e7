"""Integer intrinsics: count of leading zeros, population count, bit
reversal, find-first-set, byte permutation, high halves of products,
24-bit multiplies, sums of absolute differences and halving adds, on
int32/int64 as CUDA's __nv_* functions define them."""
from ....jit import jit
from ... import core as tl


@jit
def _clz32(v):
    # Leading zeros of a 32-bit pattern by halving (no count-leading-zeros op
    # in the tile IR); 32 for 0.
    x = v.to(tl.uint32, bitcast=True)
    n = x.to(tl.int32, bitcast=True) * 0
    c = (x >> 16) == 0
    n = tl.where(c, n + 16, n)
    x = tl.where(c, x << 16, x)
    c = (x >> 24) == 0
    n = tl.where(c, n + 8, n)
    x = tl.where(c, x << 8, x)
    c = (x >> 28) == 0
    n = tl.where(c, n + 4, n)
    x = tl.where(c, x << 4, x)
    c = (x >> 30) == 0
    n = tl.where(c, n + 2, n)
    x = tl.where(c, x << 2, x)
    c = (x >> 31) == 0
    n = tl.where(c, n + 1, n)
    return tl.where(v == 0, 32, n)


@jit
def _clz64(v):
    hi = (v >> 32).to(tl.int32)
    lo = v.to(tl.int32)
    return tl.where(hi == 0, 32 + _clz32(lo), _clz32(hi))


@jit
def clz(x):
    if x.dtype == tl.int64:
        return _clz64(x)
    else:
        return _clz32(x)


# ------------------------------------------------------------ integer intrinsics
@jit
def popc(x):
    # SWAR bit count (Hacker's Delight 5-1) on the unsigned pattern.
    if x.dtype == tl.int64:
        v = x.to(tl.uint64, bitcast=True)
        v = v - ((v >> 1) & 0x5555555555555555)
        v = (v & 0x3333333333333333) + ((v >> 2) & 0x3333333333333333)
        v = (v + (v >> 4)) & 0x0F0F0F0F0F0F0F0F
        return ((v * 0x0101010101010101) >> 56).to(tl.int32)
    else:
        v = x.to(tl.uint32, bitcast=True)
        v = v - ((v >> 1) & 0x55555555)
        v = (v & 0x33333333) + ((v >> 2) & 0x33333333)
        v = (v + (v >> 4)) & 0x0F0F0F0F
        return ((v * 0x01010101) >> 24).to(tl.int32, bitcast=True)


@jit
def brev(x):
    # Bit reversal by swapping halves of ever larger groups.
    if x.dtype == tl.int64:
        v = x.to(tl.uint64, bitcast=True)
        v = ((v >> 1) & 0x5555555555555555) | ((v & 0x5555555555555555) << 1)
        v = ((v >> 2) & 0x3333333333333333) | ((v & 0x3333333333333333) << 2)
        v = ((v >> 4) & 0x0F0F0F0F0F0F0F0F) | ((v & 0x0F0F0F0F0F0F0F0F) << 4)
        v = ((v >> 8) & 0x00FF00FF00FF00FF) | ((v & 0x00FF00FF00FF00FF) << 8)
        v = ((v >> 16) & 0x0000FFFF0000FFFF) | ((v & 0x0000FFFF0000FFFF) << 16)
        v = (v >> 32) | (v << 32)
        return v.to(tl.int64, bitcast=True)
    else:
        v = x.to(tl.uint32, bitcast=True)
        v = ((v >> 1) & 0x55555555) | ((v & 0x55555555) << 1)
        v = ((v >> 2) & 0x33333333) | ((v & 0x33333333) << 2)
        v = ((v >> 4) & 0x0F0F0F0F) | ((v & 0x0F0F0F0F) << 4)
        v = ((v >> 8) & 0x00FF00FF) | ((v & 0x00FF00FF) << 8)
        v = (v >> 16) | (v << 16)
        return v.to(tl.int32, bitcast=True)


@jit
def ffs(x):
    # 1 + the index of the lowest set bit, 0 for 0: x & -x keeps that bit.
    if x.dtype == tl.int64:
        return 64 - _clz64(x & -x)
    else:
        return 32 - _clz32(x & -x)


@jit
def byte_perm(x, y, s):
    # Byte n of the result is byte (s >> 4n) & 7 of the 8 bytes {y:x}.
    v = (y.to(tl.int64) << 32) | x.to(tl.uint32, bitcast=True).to(tl.int64)
    r = x.to(tl.int64) * 0
    for n in tl.static_range(4):
        sel = ((s >> (4 * n)) & 7).to(tl.int64)
        r = r | (((v >> (sel * 8)) & 255) << (8 * n))
    return r.to(tl.int32)


@jit
def _umulhi64(x, y):
    # High 64 bits of a 64x64 product from 32-bit halves (schoolbook): the Xe
    # lowering has no 64-bit mului_extended (tl.umulhi on i64).
    xl = x & 0xFFFFFFFF
    xh = x >> 32
    yl = y & 0xFFFFFFFF
    yh = y >> 32
    ll = xl * yl
    lh = xl * yh
    hl = xh * yl
    hh = xh * yh
    mid = (ll >> 32) + (lh & 0xFFFFFFFF) + (hl & 0xFFFFFFFF)
    return hh + (lh >> 32) + (hl >> 32) + (mid >> 32)


@jit
def mulhi(x, y):
    if x.dtype == tl.int64:
        # The signed high word from the unsigned one: subtract the other
        # operand once for each negative operand (mod 2**64).
        h = _umulhi64(x.to(tl.uint64, bitcast=True), y.to(tl.uint64, bitcast=True)).to(tl.int64, bitcast=True)
        return h - tl.where(x < 0, y, 0) - tl.where(y < 0, x, 0)
    elif x.dtype == tl.uint64:
        return _umulhi64(x, y)
    elif x.dtype == tl.uint32:
        return ((x.to(tl.uint64) * y.to(tl.uint64)) >> 32).to(tl.uint32)
    else:
        return ((x.to(tl.int64) * y.to(tl.int64)) >> 32).to(tl.int32)


@jit
def mul24(x, y):
    # The low 32 bits of the product of the low 24 bits (signed: sign-extended).
    if x.dtype == tl.uint32:
        return (x & 0xFFFFFF) * (y & 0xFFFFFF)
    else:
        a = (x << 8) >> 8
        b = (y << 8) >> 8
        return (a.to(tl.int64) * b.to(tl.int64)).to(tl.int32)


@jit
def sad(x, y, z):
    # |x - y| + z, the difference taken without overflow.
    if x.dtype == tl.uint32:
        d = tl.where(x > y, x - y, y - x)
        return d + z
    else:
        d = tl.abs(x.to(tl.int64) - y.to(tl.int64))
        return (d + z.to(tl.int64)).to(tl.int32)


@jit
def hadd(x, y):
    # (x + y) >> 1 without overflowing the sum.
    if x.dtype == tl.uint32:
        return ((x.to(tl.uint64) + y.to(tl.uint64)) >> 1).to(tl.uint32)
    else:
        return ((x.to(tl.int64) + y.to(tl.int64)) >> 1).to(tl.int32)


@jit
def rhadd(x, y):
    if x.dtype == tl.uint32:
        return ((x.to(tl.uint64) + y.to(tl.uint64) + 1) >> 1).to(tl.uint32)
    else:
        return ((x.to(tl.int64) + y.to(tl.int64) + 1) >> 1).to(tl.int32)
