"""Counter-based random numbers (Philox 4x32-10), written in zetile's own
language like Triton's triton.language.random, so results match Triton's
bit for bit for the same seed and offsets.

Philox: Salmon et al., "Parallel random numbers: as easy as 1, 2, 3" (SC'11);
the round and key constants below are the published Philox-4x32/4x64 ones.
"""
from ..jit import jit
from . import core as tl
from .standard import to_tensor

N_ROUNDS_DEFAULT = 10


@jit
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    if c0.dtype == tl.uint32:
        KEY_A: tl.constexpr = 0x9E3779B9
        KEY_B: tl.constexpr = 0xBB67AE85
        MUL_A: tl.constexpr = 0xD2511F53
        MUL_B: tl.constexpr = 0xCD9E8D57
    else:
        tl.static_assert(c0.dtype == tl.uint64, "philox needs uint32 or uint64 counters")
        KEY_A: tl.constexpr = 0x9E3779B97F4A7C15
        KEY_B: tl.constexpr = 0xBB67AE8584CAA73B
        MUL_A: tl.constexpr = 0xD2E7470EE14C6C93
        MUL_B: tl.constexpr = 0xCA5A826395121157
    for _ in tl.static_range(n_rounds):
        prev0 = c0
        prev2 = c2
        c0 = tl.umulhi(MUL_B, prev2) ^ c1 ^ k0
        c2 = tl.umulhi(MUL_A, prev0) ^ c3 ^ k1
        c1 = MUL_B * prev2
        c3 = MUL_A * prev0
        k0 = k0 + KEY_A
        k1 = k1 + KEY_B
    return c0, c1, c2, c3


@jit
def philox(seed, c0, c1, c2, c3, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    # As Triton: a seed of 1 arrives as a constexpr (integers equal to 1 are
    # specialized), which has no dtype.
    seed = to_tensor(seed)
    tl.static_assert(seed.dtype.is_int(), "the seed of a random number must be an integer")
    seed = seed.to(tl.uint64)
    if c0.dtype.primitive_bitwidth == 32:
        seed_hi = ((seed >> 32) & 0xffffffff).to(tl.uint32)
        seed_lo = (seed & 0xffffffff).to(tl.uint32)
        c0 = c0.to(tl.uint32, bitcast=True)
        c1 = c1.to(tl.uint32, bitcast=True)
        c2 = c2.to(tl.uint32, bitcast=True)
        c3 = c3.to(tl.uint32, bitcast=True)
    else:
        seed_hi = tl.full((1, ), 0, dtype=tl.uint64)
        seed_lo = seed
        c0 = c0.to(tl.uint64, bitcast=True)
        c1 = c1.to(tl.uint64, bitcast=True)
        c2 = c2.to(tl.uint64, bitcast=True)
        c3 = c3.to(tl.uint64, bitcast=True)
    return philox_impl(c0, c1, c2, c3, seed_lo, seed_hi, n_rounds)


@jit
def randint4x(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    offset_lo = offset.to(tl.uint32)
    zero = offset_lo * 0
    if offset.dtype.primitive_bitwidth > 32:
        offset_hi = (offset >> 32).to(tl.uint32)
    else:
        offset_hi = zero
    return philox(seed, offset_lo, offset_hi, zero, zero, n_rounds)


@jit
def randint(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    r0, r1, r2, r3 = randint4x(seed, offset, n_rounds)
    return r0


@jit
def uint_to_uniform_float(x):
    """Uniform in [0, 1): the sign bit folded away, scaled by 2^-31 (2^-63)."""
    if x.dtype == tl.uint32 or x.dtype == tl.int32:
        x = x.to(tl.int32, bitcast=True)
        scale = 4.6566127342e-10
    else:
        x = x.to(tl.int64, bitcast=True)
        scale = 1.0842020432385337e-19
    x = tl.where(x < 0, ~x, x)
    return x * scale


@jit
def rand(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


@jit
def rand4x(seed, offsets, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    i1, i2, i3, i4 = randint4x(seed, offsets, n_rounds)
    return (uint_to_uniform_float(i1), uint_to_uniform_float(i2), uint_to_uniform_float(i3),
            uint_to_uniform_float(i4))


@jit
def pair_uniform_to_normal(u1, u2):
    """Box-Muller."""
    u1 = tl.maximum(1.0e-7, u1)
    th = 6.283185307179586 * u2
    r = tl.sqrt(-2.0 * tl.log(u1))
    return r * tl.cos(th), r * tl.sin(th)


@jit
def randn(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    i1, i2, _, _ = randint4x(seed, offset, n_rounds)
    n1, _ = pair_uniform_to_normal(uint_to_uniform_float(i1), uint_to_uniform_float(i2))
    return n1


@jit
def randn4x(seed, offset, n_rounds: tl.constexpr = N_ROUNDS_DEFAULT):
    u1, u2, u3, u4 = rand4x(seed, offset, n_rounds)
    n1, n2 = pair_uniform_to_normal(u1, u2)
    n3, n4 = pair_uniform_to_normal(u3, u4)
    return n1, n2, n3, n4
