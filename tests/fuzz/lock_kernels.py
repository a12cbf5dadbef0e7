"""Kernels in which many programs meet at the same addresses (issue 17):
tutorial 05's spin lock (atomic_cas to take it, a plain read-modify-write
under it, atomic_xchg to release it) with a window between the read and the
write, and counters. Used by tests/python/test_fuzz_numpy_cf.py."""
import zetile as triton
import zetile.language as tl


@triton.jit
def locked_sum(X, OUT, LOCK, CNT, Z, N, K, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + pid * N + offs, mask=m, other=0)
    z = tl.load(Z)                      # 0, unknown to the compiler
    while tl.atomic_cas(LOCK, 0, 1) == 1:
        pass
    cur = tl.load(OUT + offs, mask=m)
    for i in range(K):                  # widens the window a race would need
        cur = cur + z * i
    tl.store(OUT + offs, cur + x, mask=m)
    tl.atomic_xchg(LOCK, 0)
    tl.atomic_add(CNT, 1)
    tl.atomic_max(CNT + 1, pid)
    tl.atomic_min(CNT + 2, pid)
