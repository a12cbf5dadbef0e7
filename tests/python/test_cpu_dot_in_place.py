"""CPU target (issue 16): `a = tl.load(a_ptrs, mask=...)` read only by
`tl.dot(a, b, acc)` is read in place by the dot when its rows are
consecutive and its mask is all true (lowering/cpu/cpu_ops.c emit_row_load
marks it, cpu_dot.c reads row starts through a select), instead of being
copied into a stack buffer first. Every case compares with the same kernel
where a store between the load and the dot forces the copy (the old path):
the two must be equal bit for bit (same FMAs in the same order), and both
close to numpy (E4). Cases cover the copy fallback inside the same kernel:
the K tail (mask not all true), rows that are not consecutive (a transposed
view: the gather), f16 inputs, and a dot too narrow for the vector kernel
(the scalar dot fills the buffer the load left empty)."""
import numpy as np
import pytest

import zetile
import zetile.language as tl


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


@zetile.jit
def _mm(a_ptr, b_ptr, c_ptr, s_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, COPY: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_am = (pid_m * BM + tl.arange(0, BM)) % M
    offs_bn = (pid_n * BN + tl.arange(0, BN)) % N
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + (offs_am[:, None] * sam + offs_k[None, :] * sak)
    b_ptrs = b_ptr + (offs_k[:, None] * sbk + offs_bn[None, :] * sbn)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BK, other=0.0)
        if COPY:
            # a store between the load and the dot: a is copied (old path)
            tl.store(s_ptr + pid_m, k)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK * sak
        b_ptrs += BK * sbk
    offs_cm = pid_m * BM + tl.arange(0, BM)
    offs_cn = pid_n * BN + tl.arange(0, BN)
    c_ptrs = c_ptr + scm * offs_cm[:, None] + scn * offs_cn[None, :]
    tl.store(c_ptrs, acc, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def _s(x):
    return [v // x.itemsize for v in x.strides]


def _run(a, b, copy, bm, bn, bk):
    M, K = a.shape
    N = b.shape[1]
    c = np.full((M, N), 7.0, np.float32)
    scratch = np.zeros(zetile.cdiv(M, bm), np.int32)
    _mm[(zetile.cdiv(M, bm), zetile.cdiv(N, bn))](a, b, c, scratch, M, N, K, *_s(a), *_s(b),
                                                  *_s(c), BM=bm, BN=bn, BK=bk, COPY=copy)
    return c


@pytest.mark.parametrize("M,N,K,bm,bn,bk,dtype,trans", [
    (64, 64, 64, 32, 32, 32, np.float32, False),   # in place every step
    (96, 80, 100, 32, 32, 32, np.float32, False),  # K tail: last step copies
    (33, 47, 70, 32, 32, 32, np.float32, False),   # wrapped rows (% M), K tail
    (64, 64, 64, 32, 32, 32, np.float32, True),    # a transposed: gathered
    (64, 64, 96, 32, 32, 32, np.float16, False),   # f16 in place
    (64, 40, 64, 32, 8, 32, np.float32, False),    # N = 8: scalar dot fills
])
def test_in_place_equals_copy(M, N, K, bm, bn, bk, dtype, trans):
    rng = np.random.default_rng(M * 1000 + N + K)
    a = rng.standard_normal((K, M) if trans else (M, K)).astype(dtype)
    if trans:
        a = a.T  # rows of a are a column apart: not consecutive
    b = rng.standard_normal((K, N)).astype(dtype)
    got = _run(a, b, False, bm, bn, bk)
    old = _run(a, b, True, bm, bn, bk)
    assert np.array_equal(got, old)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-3 * np.sqrt(K))


def test_lowering_reads_a_in_place():
    # The lowering itself (fails with a library that copies a every step):
    # the dot reads a's rows through their addresses, and the copy of the
    # COPY=1 kernel is not there.
    a = np.zeros((64, 64), np.float32)
    sig = dict(BM=32, BN=32, BK=32)

    def mlir(copy):
        k = _mm.warmup(a, a, a, np.zeros(2, np.int32), 64, 64, 64, *_s(a), *_s(a), *_s(a),
                       COPY=copy, grid=(2, 2), **sig)
        return k.asm["mlir"]

    assert "memref.extract_aligned_pointer_as_index" in mlir(False)
    assert "memref.extract_aligned_pointer_as_index" not in mlir(True)
