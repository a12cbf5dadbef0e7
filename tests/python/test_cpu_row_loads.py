"""CPU target (issue 16): loads through 2-D tensors of addresses whose rows turn
out consecutive at run time read each row from its first address (vector and
masked vector loads), other tiles keep the per-element gather
(lowering/cpu/cpu_ops.c emit_row_load); masks in buffers are bytes; a dot
accumulates in place into a carried accumulator; carried tensors updated
elementwise (`a_ptrs += BLOCK_K * stride_ak`) are written in place
(cpu_values.c cpu_parallel_copy). Each test compares with numpy (E4), with
tails, columns wrapped by `% N`, strided and reversed rows (the run-time
check must send those to the gather) and stores the next iteration reads.
"""
import re

import numpy as np
import pytest

import zetile
import zetile.language as tl


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


@zetile.jit
def _matmul_ptr(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                stride_cm, stride_cn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # Triton's tutorial form: offsets wrapped with % M / % N, masks on K.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_am = (pid_m * BM + tl.arange(0, BM)) % M
    offs_bn = (pid_n * BN + tl.arange(0, BN)) % N
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BK, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    offs_cm = pid_m * BM + tl.arange(0, BM)
    offs_cn = pid_n * BN + tl.arange(0, BN)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, acc, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


def _run_matmul(a, b, BM, BN, BK):
    M, K = a.shape
    N = b.shape[1]
    c = np.full((M, N), np.nan, np.float32)
    grid = (-(-M // BM), -(-N // BN))
    _matmul_ptr[grid](a, b, c, M, N, K, a.strides[0] // 4, a.strides[1] // 4,
                      b.strides[0] // 4, b.strides[1] // 4, c.strides[0] // 4, 1,
                      BM=BM, BN=BN, BK=BK)
    return c


@pytest.mark.parametrize("M,N,K,BM,BN,BK", [
    (64, 64, 64, 32, 32, 32),    # every tile's rows consecutive
    (70, 100, 45, 32, 32, 16),   # tails on M, N (columns wrap: gather) and K (masks)
    (33, 17, 100, 16, 16, 32),
    (8, 48, 8, 8, 16, 8),        # rows of 8 and 16
])
def test_pointer_matmul_matches_numpy(M, N, K, BM, BN, BK):
    rng = np.random.default_rng(M * 1000 + N + K)
    a = rng.standard_normal((M, K), dtype=np.float32)
    b = rng.standard_normal((K, N), dtype=np.float32)
    c = _run_matmul(a, b, BM, BN, BK)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def test_pointer_matmul_transposed_operands():
    # a and b as transposed views: stride_ak and stride_bn are not 1, so no
    # row is consecutive and every load takes the gather.
    rng = np.random.default_rng(5)
    at = rng.standard_normal((40, 48), dtype=np.float32)
    bt = rng.standard_normal((56, 40), dtype=np.float32)
    c = _run_matmul(at.T, bt.T, 16, 16, 16)
    np.testing.assert_allclose(c, at.T.astype(np.float64) @ bt.T, rtol=1e-4, atol=1e-4)


@zetile.jit
def _tile_copy(x_ptr, y_ptr, z_ptr, col_step, col_start, ncols, n_iter, R: tl.constexpr,
               C: tl.constexpr):
    # Rows of x read through a carried 2-D tensor of addresses: columns
    # col_start + j * col_step (consecutive only when col_step == 1), masked
    # at ncols; the tile moves down R rows per iteration. Stored twice, so
    # the load is not recomputed in a store's loop: it is loaded into a
    # buffer (the row-load path).
    rows = tl.arange(0, R)
    cols = tl.arange(0, C)
    p = x_ptr + rows[:, None] * (C * 2) + (col_start + cols[None, :] * col_step)
    q = y_ptr + rows[:, None] * C + cols[None, :]
    r = z_ptr + rows[:, None] * C + cols[None, :]
    for _ in range(n_iter):
        v = tl.load(p, mask=cols[None, :] < ncols, other=-1.0)
        tl.store(q, v)
        tl.store(r, v + 1.0)
        p += R * C * 2
        q += R * C
        r += R * C


@pytest.mark.parametrize("col_step,col_start,ncols", [
    (1, 0, 16), (1, 3, 16), (1, 0, 11), (2, 0, 16), (-1, 15, 16), (0, 5, 16), (1, 0, 0),
])
def test_row_loads_and_gathers(col_step, col_start, ncols):
    R, C, n_iter = 4, 16, 3
    x = np.arange(R * n_iter * C * 2, dtype=np.float32).reshape(R * n_iter, C * 2)
    y = np.zeros((R * n_iter, C), np.float32)
    z = np.zeros((R * n_iter, C), np.float32)
    _tile_copy[(1,)](x, y, z, col_step, col_start, ncols, n_iter, R=R, C=C)
    cols = col_start + np.arange(C) * col_step
    want = np.where(np.arange(C) < ncols, x[:, np.clip(cols, 0, 2 * C - 1)], -1.0)
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(z, want + 1.0)


@zetile.jit
def _chain(m_ptr, n_iter, R: tl.constexpr, C: tl.constexpr):
    # Each step reads the tile the previous step stored: the row loads must
    # stay where the loads are (after the previous iteration's store). The
    # second store keeps the load out of the first store's loop.
    rows = tl.arange(0, R)
    cols = tl.arange(0, C)
    p = m_ptr + rows[:, None] * C + cols[None, :]
    for _ in range(n_iter):
        v = tl.load(p, mask=cols[None, :] < C - 1, other=100.0)
        tl.store(p + R * C, v * 2.0 + 1.0)
        tl.store(p + R * C, v * 2.0 + 1.0)
        p += R * C


def test_row_loads_see_the_previous_iterations_store():
    R, C, T = 4, 16, 5
    m = np.random.default_rng(1).standard_normal(((T + 1) * R, C)).astype(np.float32)
    want = m.copy()
    for t in range(T):
        v = want[t * R:(t + 1) * R].copy()
        v[:, C - 1] = 100.0
        want[(t + 1) * R:(t + 2) * R] = v * 2.0 + 1.0
    _chain[(1,)](m, T, R=R, C=C)
    np.testing.assert_array_equal(m, want)


@zetile.jit
def _swap_carried(x_ptr, out_ptr, n_iter, BLOCK: tl.constexpr):
    # Carried tensors updated from each other (must not be written in place)
    # beside one updated from itself (may be).
    offs = tl.arange(0, BLOCK)
    a = tl.load(x_ptr + offs)
    b = a * 0.5
    s = a + 0.0
    for _ in range(n_iter):
        a, b, s = b + 1.0, a * 2.0, s + a
    tl.store(out_ptr + offs, a)
    tl.store(out_ptr + BLOCK + offs, b)
    tl.store(out_ptr + 2 * BLOCK + offs, s)


@pytest.mark.parametrize("n_iter", [0, 1, 4])
def test_carried_tensors_read_each_other(n_iter):
    x = np.arange(32, dtype=np.float32)
    out = np.zeros(96, np.float32)
    _swap_carried[(1,)](x, out, n_iter, BLOCK=32)
    a, b, s = x.copy(), x * 0.5, x.copy()
    for _ in range(n_iter):
        a, b, s = b + 1.0, a * 2.0, s + a
    np.testing.assert_array_equal(out, np.concatenate([a, b, s]))


@zetile.jit
def _dot_acc_read_twice(a_ptr, b_ptr, c_ptr, n_iter, B: tl.constexpr):
    # The accumulator is read by the dot and by the add after it: it must
    # not be accumulated in place.
    r = tl.arange(0, B)
    a = tl.load(a_ptr + r[:, None] * B + r[None, :])
    b = tl.load(b_ptr + r[:, None] * B + r[None, :])
    acc = tl.zeros((B, B), dtype=tl.float32) + 1.0
    for _ in range(n_iter):
        acc = tl.dot(a, b, acc) + acc
    tl.store(c_ptr + r[:, None] * B + r[None, :], acc)


def test_dot_accumulator_with_two_readers():
    B, T = 16, 3
    rng = np.random.default_rng(2)
    a = rng.integers(-2, 3, (B, B)).astype(np.float32)
    b = rng.integers(-2, 3, (B, B)).astype(np.float32)
    c = np.zeros((B, B), np.float32)
    _dot_acc_read_twice[(1,)](a, b, c, T, B=B)
    acc = np.ones((B, B), np.float64)
    for _ in range(T):
        acc = a.astype(np.float64) @ b + acc + acc
    np.testing.assert_array_equal(c, acc.astype(np.float32))


def test_tutorial_matmul_code_shape():
    # The choices above are visible in the lowered text: the run-time check
    # (an or of xors over the addresses) guarding row loads from a row's first
    # address, masks in byte buffers, and no copy of the accumulator into a
    # work buffer (no 1024-element f32 buffer besides the loaded tiles).
    ck = zetile.compile(_matmul_ptr, "*fp32,*fp32,*fp32,i32,i32,i32,i32,i32,i32",
                        constexprs={"BM": 32, "BN": 32, "BK": 32, "stride_ak": 1,
                                    "stride_bn": 1, "stride_cn": 1}, target="cpu")
    mlir = ck.asm["mlir"]
    assert mlir.count("arith.xori") >= 2, mlir
    assert "memref<1024xi1>" not in mlir and "memref<1024xi8>" in mlir
    # acc (carried) + the two loaded tiles; before: + a work buffer and a
    # copy of the result per k step.
    assert len(re.findall(r"memref\.alloca\(\) .*: memref<1024xf32>", mlir)) == 3, mlir
