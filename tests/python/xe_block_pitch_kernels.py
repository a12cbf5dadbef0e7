"""Kernels for test_xe_block_pitch.py: a one-subgroup 16xN dot whose operands'
row pitch is a constant (K or N elements), so it can fall below the 2-D block
message's 64-byte minimum (fp16: fewer than 32 elements)."""
import zetile
import zetile.language as tl


@zetile.jit
def small_dot(a_ptr, b_ptr, c_ptr, N: tl.constexpr, K: tl.constexpr):
    m = tl.arange(0, 16)
    n = tl.arange(0, N)
    k = tl.arange(0, K)
    a = tl.load(a_ptr + m[:, None] * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * N + n[None, :])
    tl.store(c_ptr + m[:, None] * N + n[None, :], tl.dot(a, b))


@zetile.jit
def small_dot_bt(a_ptr, b_ptr, c_ptr, N: tl.constexpr, K: tl.constexpr):
    # B stored [N, K] (row n, K contiguous) and read as [K, N]: the
    # transposed block read, whose pitch is K elements.
    m = tl.arange(0, 16)
    n = tl.arange(0, N)
    k = tl.arange(0, K)
    a = tl.load(a_ptr + m[:, None] * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] + n[None, :] * K)
    tl.store(c_ptr + m[:, None] * N + n[None, :], tl.dot(a, b))


SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"}
