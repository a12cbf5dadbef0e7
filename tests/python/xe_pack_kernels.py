"""Kernels for tests/python/test_xe_lane_pack.py: elementwise chains whose
tile ops are 16 one-element pieces per lane before xe_lane_pack.c packs them."""
import zetile
import zetile.language as tl


@zetile.jit
def mixed_chain(x_ptr, y_ptr, k_ptr, s, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    # float ops with constant, scalar-argument and tile operands
    x = x * 1.5 + 0.25
    x = tl.maximum(x, -2.0)
    x = x * s
    x = tl.where(x > 1.0, x - 1.0, x * 0.5)
    # integer ops on the offsets (cmp, xor, shifts, and, casts)
    i = (offs * 3) ^ (offs & 7)
    i = i >> 1
    x = x + (i & 15).to(tl.float32)
    x = tl.minimum(x, 9.0) - x / 4.0
    x = tl.exp(x * 0.125)
    tl.store(y_ptr + offs, x, mask=mask)
    tl.store(k_ptr + offs, i, mask=mask)


def mixed_chain_ref(x, s, n):
    import numpy as np
    f = np.float32
    offs = np.arange(n, dtype=np.int32)
    x = x * f(1.5) + f(0.25)
    x = np.maximum(x, f(-2.0))
    x = x * f(s)
    x = np.where(x > f(1.0), x - f(1.0), x * f(0.5)).astype(f)
    i = (offs * 3) ^ (offs & 7)
    i = i >> 1
    x = x + (i & 15).astype(f)
    x = np.minimum(x, f(9.0)) - x / f(4.0)
    return np.exp(x * f(0.125)).astype(f), i.astype(np.int32)
