"""CPU target (issue 16): a carried 2-D pointer tensor stepped by a uniform
offset (`a_ptrs += BLOCK_K * stride_ak`) whose only readers in the loop are
row loads moves only each row's first address while the hoisted row check
holds (lowering/cpu/cpu_values.c copy_col0, cpu_control.c col0_candidate).
Each case here goes wrong if the stale columns were read: the final pointers
used after the loop, another reader of the pointers in the loop, rows that
are not consecutive (the gather reads every address). E4 against numpy."""
import re

import numpy as np
import pytest

import zetile
import zetile.language as tl


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


@zetile.jit(do_not_specialize=["Z"])
def _mm(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn, Z,
        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, MODE: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_am = (pid_m * BM + tl.arange(0, BM)) % M
    offs_bn = (pid_n * BN + tl.arange(0, BN)) % N
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + (offs_am[:, None] * sam + offs_k[None, :] * sak)
    b_ptrs = b_ptr + (offs_k[:, None] * sbk + offs_bn[None, :] * sbn)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        kmask = offs_k < K - k * BK
        a = tl.load(a_ptrs, mask=kmask[None, :], other=0.0)
        b = tl.load(b_ptrs, mask=kmask[:, None], other=0.0)
        acc = tl.dot(a, b, acc)
        if MODE == 2:
            # another reader of b_ptrs (an addptr by the run-time 0 in Z,
            # gathered element by element): every column must stay current
            b2 = tl.load(b_ptrs + Z, mask=kmask[:, None], other=0.0)
            acc = tl.dot(a, b2, acc)
        a_ptrs += BK * sak
        b_ptrs += BK * sbk
    if MODE == 1:
        # the final pointers after the loop: one block past K, wrapped back
        # into the matrix by K * sak (every column of a_ptrs must be right)
        back = tl.load(a_ptrs - tl.cdiv(K, BK) * BK * sak)
        acc += tl.sum(back, axis=1)[:, None]
    offs_cm = pid_m * BM + tl.arange(0, BM)
    offs_cn = pid_n * BN + tl.arange(0, BN)
    c_ptrs = c_ptr + scm * offs_cm[:, None] + scn * offs_cn[None, :]
    tl.store(c_ptrs, acc, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def _run(a, b, mode, bm=32, bn=32, bk=32):
    M, K = a.shape
    N = b.shape[1]
    c = np.full((M, N), 7.0, np.float32)
    s = lambda x: [v // x.itemsize for v in x.strides]  # noqa: E731
    _mm[(zetile.cdiv(M, bm), zetile.cdiv(N, bn))](a, b, c, M, N, K, *s(a), *s(b), *s(c), 0,
                                                  BM=bm, BN=bn, BK=bk, MODE=mode)
    return c


def _ref(a, b, mode, bk=32):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    if mode == 2:
        b64 = 2 * b64
    r = a64 @ b64
    if mode == 1:
        r += a64[:, :bk].sum(axis=1)[:, None]
    return r


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("M,N,K", [(64, 64, 64), (96, 80, 100), (33, 47, 70)])
def test_values(mode, M, N, K):
    rng = np.random.default_rng(M * 1000 + N + K + mode)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    c = _run(a, b, mode)
    np.testing.assert_allclose(c, _ref(a, b, mode), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("mode", [0, 1])
def test_rows_not_consecutive(mode):
    # A read through a view with two elements between columns (stride_ak = 2)
    # and B transposed (columns K apart): the row check fails for both, the
    # gather reads every address, so every address must have moved.
    rng = np.random.default_rng(5 + mode)
    big = rng.standard_normal((64, 192), dtype=np.float32)
    a = big[:, ::2]
    bb = rng.standard_normal((64, 96), dtype=np.float32)
    b = bb.T
    c = _run(a, b, mode)
    np.testing.assert_allclose(c, _ref(a, b, mode), rtol=1e-4, atol=1e-3)


def _mlir(mode):
    ck = zetile.compile(_mm, "*fp32,*fp32,*fp32,i32,i32,i32,i32,i32,i32,i32,i32,i32,i32",
                        constexprs={"BM": 32, "BN": 32, "BK": 32, "MODE": mode}, cached=False)
    return ck.asm["mlir"]


# One address per row moved: a loop over rows reads the address at the row's
# start (row * cols) and stores it back there (the full update reads and
# stores at the loop's own index).
_COL0 = re.compile(r"(%t\d+) = arith\.muli %i\d+, %c\d+ : index\n\s*%t\d+ = memref\.load "
                   r"(%b\d+)\[\1\] : memref<\d+xi64>\n(?:[^\n]*\n){0,6}?\s*"
                   r"memref\.store %t\d+, \2\[\1\]")


def test_col0_update_is_emitted_only_when_safe():
    assert len(_COL0.findall(_mlir(0))) == 2, "a_ptrs and b_ptrs should move by column 0"
    # MODE 1 reads a_ptrs after the loop; MODE 2 reads b_ptrs twice: those
    # must move whole (the other keeps the column-0 update).
    assert len(_COL0.findall(_mlir(1))) == 1
    assert len(_COL0.findall(_mlir(2))) == 1
