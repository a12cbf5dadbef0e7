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
    # Runs long enough to be written whole (xe_wide.c weighs them), in
    # every scope: w before the loop, acc in it and in both branches.
    w = x
    for _ in tl.static_range(6):
        w = w * 0.5 + 1.0
    acc = tl.zeros([BLOCK], tl.float32)
    for i in range(steps):
        # w read whole inside the loop; its chunks written in the loop for
        # the reduction must not be the ones read after it
        for _ in tl.static_range(4):
            acc = acc * 0.75 + w * 0.25 - 0.125
        acc = acc + tl.sum(w, axis=0) * 0.0009765625
        if i % 2 == 0:
            for _ in tl.static_range(4):
                acc = acc + w * 2.0 - 1.5
        else:
            for _ in tl.static_range(4):
                acc = acc - x * 0.5 + 0.25
    for _ in tl.static_range(4):
        acc = acc * w + x
    tl.store(y_ptr + offs, acc, mask=mask)
    tl.store(y_ptr + n + offs, w, mask=mask)


def scoped_ref(x, block, steps):
    """One program's block of x (len(x) <= block: its lanes past the end load
    0 and count in the sum)."""
    import numpy as np
    f = np.float32
    w, wpad = x, f(0.0)
    for _ in range(6):
        w = w * f(0.5) + f(1.0)
        wpad = wpad * f(0.5) + f(1.0)
    acc = np.zeros_like(x)
    s = f(w.sum(dtype=np.float64) + (block - len(x)) * float(wpad))
    for i in range(steps):
        for _ in range(4):
            acc = acc * f(0.75) + w * f(0.25) - f(0.125)
        acc = acc + s * f(0.0009765625)
        for _ in range(4):
            acc = acc + w * f(2.0) - f(1.5) if i % 2 == 0 else acc - x * f(0.5) + f(0.25)
    for _ in range(4):
        acc = acc * w + x
    return np.concatenate([acc, w]).astype(f)
