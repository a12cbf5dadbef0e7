"""Kernels for tests/python/test_xe_wide.py: elementwise runs the Xe emitter
writes as one op on the subgroup's whole vector (lowering/xe/xe_wide.c),
across loop and branch scopes."""
import zetile
import zetile.language as tl


@zetile.jit
def short_chain(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    for _ in tl.static_range(10):
        x = x * 1.0009765625
        x = x + 0.5
        x = tl.maximum(x, -4.0)
        x = x - 0.25
    tl.store(y_ptr + offs, x, mask=mask)


@zetile.jit
def scoped(x_ptr, y_ptr, n, steps, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    w = x * 0.5 + 1.0  # whole, before the loop
    acc = tl.zeros([BLOCK], tl.float32)
    for i in range(steps):
        # w read whole inside the loop; its chunks written in the loop for
        # the reduction must not be the ones read after it
        acc = acc * 0.75 + w * 0.25 - 0.125
        acc = acc + tl.sum(w, axis=0) * 0.0009765625
        if i % 2 == 0:
            acc = acc + w * 2.0
        else:
            acc = acc - x
    y = acc * w + x
    tl.store(y_ptr + offs, y, mask=mask)
    tl.store(y_ptr + n + offs, w, mask=mask)


def scoped_ref(x, block, steps):
    """One program's block of x (len(x) <= block: its lanes past the end load
    0, so their w is 1 in the sum)."""
    import numpy as np
    f = np.float32
    w = x * f(0.5) + f(1.0)
    acc = np.zeros_like(x)
    s = f(w.sum(dtype=np.float64) + (block - len(x)))
    for i in range(steps):
        acc = acc * f(0.75) + w * f(0.25) - f(0.125)
        acc = acc + s * f(0.0009765625)
        acc = acc + w * f(2.0) if i % 2 == 0 else acc - x
    return np.concatenate([acc * w + x, w]).astype(f)
