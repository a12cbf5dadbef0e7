"""Kernels whose Xe lowering fails, for test_lowering_error_lines.py: the
error must name the line of the op that failed, not the @jit line."""
import zetile
import zetile.language as tl


@zetile.jit
def scalar_load_in_while(X, OUT, N):
    pid = tl.program_id(0)
    x = tl.load(X + pid)
    acc = x * 0
    i = 0
    while i < N:
        acc += i * x
        i += 2
    tl.store(OUT + pid, acc)


@zetile.jit
def atomic_2d(X, OUT, BLOCK: tl.constexpr):
    # 2-D atomic_add and atomic_cas build on Xe; fp16 atomics are refused.
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs[:, None] * BLOCK + offs[None, :])
    old = tl.atomic_add(OUT + offs[:, None] * BLOCK + offs[None, :], x + 1)
    tl.store(X + offs[:, None] * BLOCK + offs[None, :], old)
