"""Kernels for test_dg2_atomics.py (the rmw/ticket/cas kernels are
xe_atomic_kernels.py's, shared with the pvc tests)."""
import zetile as triton
import zetile.language as tl


@triton.jit
def lock_colsum_kernel(x_ptr, part_ptr, lock_ptr, count_ptr, N, GROUP: tl.constexpr,
                       BLOCK_N: tl.constexpr):
    """Tutorial 05's backward pattern: each row adds itself into its group's
    partial row under a spin lock (`while atomic_cas(lock, 0, 1) == 1`), the
    first writer of a group (count 0) stores instead of adding. The partial
    row is read and written with plain loads and stores, so without the lock
    concurrent programs lose updates."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.)
    g = row % GROUP
    lock = lock_ptr + g
    count = count_ptr + g
    p = part_ptr + g * N + cols
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    c = tl.load(count)
    if c == 0:
        tl.atomic_xchg(count, 1)
    else:
        x += tl.load(p, mask=mask, other=0.)
    tl.store(p, x, mask=mask)
    tl.debug_barrier()
    tl.atomic_xchg(lock, 0)


@triton.jit
def loop_kernel(x_ptr, hist_ptr, counter_ptr, tickets_ptr, N, ITERS: tl.constexpr,
                BLOCK: tl.constexpr):
    """Atomics inside a loop: a tensor histogram (atomic_add on 16 bins,
    masked) and a scalar ticket per iteration whose old value is kept."""
    pid = tl.program_id(0)
    for i in range(ITERS):
        offs = (pid * ITERS + i) * BLOCK + tl.arange(0, BLOCK)
        m = offs < N
        x = tl.load(x_ptr + offs, mask=m, other=0)
        tl.atomic_add(hist_ptr + (x % 16), 1, mask=m)
        t = tl.atomic_add(counter_ptr, 1)
        tl.store(tickets_ptr + pid * ITERS + i, t)


@triton.jit
def colsum_kernel(x_ptr, out_ptr, M, N: tl.constexpr, BM: tl.constexpr):
    """Tutorial 05's dw/db column sums (`_layer_norm_bwd_dwdb`): a [BM, N]
    accumulator over row blocks, summed along axis 0."""
    cols = tl.arange(0, N)
    acc = tl.zeros((BM, N), dtype=tl.float32)
    for i in range(0, M, BM):
        rows = i + tl.arange(0, BM)
        acc += tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=rows[:, None] < M,
                       other=0.)
    tl.store(out_ptr + cols, tl.sum(acc, axis=0))
