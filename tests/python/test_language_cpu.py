"""Language features of the walking skeleton on the CPU target, against numpy."""
import numpy as np
import pytest

import zetile
import zetile.language as tl

RNG = np.random.default_rng(1)


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


@zetile.jit
def _square(x):
    return x * x


@zetile.jit
def _scale_shift(x, a, b: tl.constexpr):
    y = _square(x) * a
    return y + b


@zetile.jit
def broadcast_2d(x_ptr, y_ptr, out_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=mask, other=0.0)
    y = tl.load(y_ptr + rn, mask=rn < N, other=0.0)
    z = _scale_shift(x + y[None, :], 2.0, 1.0)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], z, mask=mask)


def test_broadcast_2d_grid_and_nested_calls():
    M, N = 37, 53
    x = RNG.standard_normal((M, N), dtype=np.float32)
    y = RNG.standard_normal(N, dtype=np.float32)
    out = np.zeros_like(x)
    broadcast_2d[(zetile.cdiv(M, 16), zetile.cdiv(N, 32))](x, y, out, M, N, BM=16, BN=32)
    np.testing.assert_allclose(out, (x + y) ** 2 * 2 + 1, rtol=1e-6)


@zetile.jit
def reductions(x_ptr, rowmax_ptr, colsum_ptr, total_ptr, M: tl.constexpr, N: tl.constexpr):
    r = tl.arange(0, M)
    c = tl.arange(0, N)
    x = tl.load(x_ptr + r[:, None] * N + c[None, :])
    tl.store(rowmax_ptr + r, tl.max(x, axis=1))
    tl.store(colsum_ptr + c, tl.sum(x, axis=0))
    tl.store(total_ptr, tl.sum(x))


def test_reductions_along_axes():
    M, N = 8, 32
    x = RNG.standard_normal((M, N), dtype=np.float32)
    rowmax = np.zeros(M, np.float32)
    colsum = np.zeros(N, np.float32)
    total = np.zeros(1, np.float32)
    reductions[(1,)](x, rowmax, colsum, total, M=M, N=N)
    np.testing.assert_array_equal(rowmax, x.max(axis=1))
    np.testing.assert_allclose(colsum, x.sum(axis=0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(total, x.sum(), rtol=1e-5, atol=1e-5)


@zetile.jit
def control_flow(out_ptr, n, flag):
    i = 0
    acc = 0.0
    while i < n:
        if i % 3 == 0:
            acc += i
        elif i % 3 == 1:
            acc -= 1.0
        else:
            acc = acc * 1.0
        i += 1
    if flag > 0:
        acc = acc + 1000.0
    for k in range(10, 0, -3):
        acc += k * 0.5
    for j in tl.static_range(3):
        acc += j
    tl.store(out_ptr, acc)


def py_control_flow(n, flag):
    acc = 0.0
    for i in range(n):
        if i % 3 == 0:
            acc += i
        elif i % 3 == 1:
            acc -= 1.0
    if flag > 0:
        acc += 1000.0
    for k in range(10, 0, -3):
        acc += k * 0.5
    return acc + 0 + 1 + 2


@pytest.mark.parametrize("n,flag", [(0, 0), (1, 1), (10, 0), (31, 5)])
def test_while_if_elif_for_negative_step_static_range(n, flag):
    out = np.zeros(1, np.float32)
    control_flow[(1,)](out, n, flag)
    assert out[0] == np.float32(py_control_flow(n, flag))


@zetile.jit
def early_exit(x_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid * BLOCK >= n:
        return
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.full([BLOCK], 1, tl.int32), mask=offs < n)


def test_early_return():
    x = np.zeros(100, np.int32)
    early_exit[(10,)](x, 70, BLOCK=16)
    assert x[:70].tolist() == [1] * 70 and x[70:].tolist() == [0] * 30


@zetile.jit
def promotions(i8_ptr, u8_ptr, f16_ptr, out_i_ptr, out_f_ptr, out_div_ptr, out_mod_ptr):
    offs = tl.arange(0, 16)
    a = tl.load(i8_ptr + offs)
    b = tl.load(u8_ptr + offs)
    h = tl.load(f16_ptr + offs)
    tl.store(out_i_ptr + offs, (a + 1).to(tl.int32) * 3 - (b.to(tl.int32) >> 1))
    tl.store(out_f_ptr + offs, (h * 2 + 1).to(tl.float32))
    tl.store(out_div_ptr + offs, (a.to(tl.int32) // 3).to(tl.float32) + a / 4)
    tl.store(out_mod_ptr + offs, a.to(tl.int32) % 5)


def test_triton_promotion_and_rounding_rules():
    a = RNG.integers(-100, 100, 16).astype(np.int8)
    b = RNG.integers(0, 250, 16).astype(np.uint8)
    h = RNG.standard_normal(16).astype(np.float16)
    oi = np.zeros(16, np.int32)
    of = np.zeros(16, np.float32)
    od = np.zeros(16, np.float32)
    om = np.zeros(16, np.int32)
    promotions[(1,)](a, b, h, oi, of, od, om)
    # int8 + 1 stays int8 (the Python scalar does not promote), wrapping like C.
    np.testing.assert_array_equal(oi, (a + np.int8(1)).astype(np.int32) * 3 - (b.astype(np.int32) >> 1))
    np.testing.assert_array_equal(of, (h * np.float16(2) + np.float16(1)).astype(np.float32))
    # // and % round toward zero (C semantics), unlike numpy's floor.
    trunc_div = np.trunc(a.astype(np.float64) / 3).astype(np.int32)
    np.testing.assert_array_equal(od, trunc_div.astype(np.float32) + a.astype(np.float32) / 4)
    np.testing.assert_array_equal(om, np.fmod(a.astype(np.int32), 5))


@zetile.jit
def math_ops(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = tl.exp(x) + tl.log(tl.abs(x) + 1) + tl.sqrt(tl.abs(x)) - tl.maximum(x, 0.5) + \
        tl.minimum(x, -0.5) + tl.where(x > 0, x, -x * 2)
    tl.store(out_ptr + offs, y)


def test_math_ops():
    x = RNG.standard_normal(64).astype(np.float32)
    out = np.zeros_like(x)
    math_ops[(1,)](x, out, BLOCK=64)
    ref = np.exp(x) + np.log(np.abs(x) + 1) + np.sqrt(np.abs(x)) - np.maximum(x, 0.5) + \
        np.minimum(x, -0.5) + np.where(x > 0, x, -x * 2)
    np.testing.assert_allclose(out, ref, rtol=2e-6, atol=2e-6)


def test_grid_callable_and_num_programs_3d():
    @zetile.jit
    def k(out_ptr):
        pid = tl.program_id(0) + tl.program_id(1) * tl.num_programs(0) + \
            tl.program_id(2) * tl.num_programs(0) * tl.num_programs(1)
        tl.store(out_ptr + pid, pid * 10 + tl.num_programs(2))

    out = np.zeros(2 * 3 * 4, np.int32)
    k[lambda meta: (2, 3, 4)](out)
    np.testing.assert_array_equal(out, np.arange(24) * 10 + 4)


@pytest.mark.parametrize("threads", ["1", "2"])
def test_program_ids_of_a_3d_grid_in_chunks(monkeypatch, threads):
    # Every program of a 5x7x3 grid once, with its own ids: the backend counts
    # ids up from each chunk's first program (chunks of 6 or 13 start mid-row
    # and mid-plane when two threads share the grid).
    @zetile.jit
    def ids(out_ptr):
        x, y, z = tl.program_id(0), tl.program_id(1), tl.program_id(2)
        pid = x + y * 5 + z * 35
        tl.atomic_add(out_ptr + pid * 4, 1)
        tl.store(out_ptr + pid * 4 + 1, x)
        tl.store(out_ptr + pid * 4 + 2, y)
        tl.store(out_ptr + pid * 4 + 3, z)

    monkeypatch.setenv("ZETILE_NUM_THREADS", threads)
    out = np.zeros((105, 4), np.int32)
    ids[(5, 7, 3)](out)
    z, y, x = np.meshgrid(np.arange(3), np.arange(7), np.arange(5), indexing="ij")
    want = np.stack([np.ones(105, np.int32), x.ravel(), y.ravel(), z.ravel()], axis=1)
    np.testing.assert_array_equal(out, want)
