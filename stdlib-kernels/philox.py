"""The dropout draw of the attention templates: tl.rand's Philox-4x32-10
(zetile.language.random, Triton's bits) written with single-result 32/64-bit
integer ops only.

Why a copy: tl.rand's umulhi is arith.mului_extended (two results), which the
Xe lowering emits for 1-D tensors but not for the 2-D (query, key) tiles of
attention. Here the high half of each 32x32-bit product comes from a 64-bit
product shifted right by 32, which the 2-D path takes. The result is the same
uniform float as tl.rand(seed, offset) bit for bit (tests compare them), so
the CPU target, the Xe targets and the backward all see one keep mask.
"""
import zetile
import zetile.language as tl


@zetile.jit
def _mulhi(a, M: tl.constexpr):
    return ((a.to(tl.uint64) * M) >> 32).to(tl.uint32)


@zetile.jit
def uniform(seed, offset):
    """tl.rand(seed, offset) for an int32 offset tensor and an int seed."""
    # to_tensor: a seed of 1 arrives as a constexpr (the launcher
    # specializes integers equal to 1), which has no .to.
    s = tl.to_tensor(seed).to(tl.uint64)
    k0 = (s & 0xffffffff).to(tl.uint32)
    k1 = ((s >> 32) & 0xffffffff).to(tl.uint32)
    c0 = offset.to(tl.uint32, bitcast=True)
    c1 = c0 * 0
    c2 = c1
    c3 = c1
    for _ in tl.static_range(10):
        prev0 = c0
        prev2 = c2
        c0 = _mulhi(prev2, 0xCD9E8D57) ^ c1 ^ k0
        c2 = _mulhi(prev0, 0xD2511F53) ^ c3 ^ k1
        c1 = prev2 * 0xCD9E8D57
        c3 = prev0 * 0xD2511F53
        k0 = k0 + 0x9E3779B9
        k1 = k1 + 0xBB67AE85
    x = c0.to(tl.int32, bitcast=True)
    x = tl.where(x < 0, ~x, x)
    return x * 4.6566127342e-10
