"""Matmul kernels (issue 3) on the CPU target against float64 references (E4):
Triton-tutorial pointers with masks and grouped ordering, tensor descriptors,
block pointers; fp16, bf16 and fp32; shapes that are not tile multiples."""
import numpy as np
import pytest

import zetile
from matmul import matmul, matmul_block_ptr, matmul_descriptor

RNG = np.random.default_rng(3)


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


def _dtype(name):
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


TOL = {"float32": 1e-4, "float16": 2e-2, "bfloat16": 1.5e-1}


def _check(fn, dt_name, M, N, K, **blocks):
    dt = _dtype(dt_name)
    a = RNG.standard_normal((M, K)).astype(dt)
    b = RNG.standard_normal((K, N)).astype(dt)
    c = np.full((M, N), 7, dtype=dt)
    fn(a, b, c, **blocks)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    err = np.abs(c.astype(np.float64) - ref).max()
    # fp32 accumulation of K products; the output is rounded to dt.
    scale = np.abs(ref).max()
    assert err <= TOL[dt_name] * max(scale, 1.0), (err, scale)


@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(127, 259, 67), (64, 64, 64), (1, 33, 5)])
def test_pointer_matmul(dt, shape):
    M, N, K = shape
    _check(matmul, dt, M, N, K)


@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(127, 264, 72), (32, 32, 32)])
def test_descriptor_matmul(dt, shape):
    # Descriptor strides must be 16-byte aligned (Triton's rule, and Intel's 2D
    # block IO's): K and N are multiples of 8, not of the 32-wide tiles.
    M, N, K = shape
    _check(matmul_descriptor, dt, M, N, K)


def test_descriptor_rejects_unaligned_strides():
    a = np.zeros((16, 67), np.float16)
    with pytest.raises(zetile.KernelArgumentError, match="16-byte aligned"):
        matmul_descriptor(a, np.zeros((67, 16), np.float16), np.zeros((16, 16), np.float16))


@pytest.mark.parametrize("dt", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("shape", [(127, 259, 67), (32, 32, 32)])
def test_block_ptr_matmul(dt, shape):
    M, N, K = shape
    _check(matmul_block_ptr, dt, M, N, K)


def test_int8_dot():
    import zetile.language as tl

    @zetile.jit
    def k(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
        rm = tl.arange(0, M)
        rn = tl.arange(0, N)
        rk = tl.arange(0, K)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], tl.dot(a, b))

    a = RNG.integers(-128, 127, (16, 32)).astype(np.int8)
    b = RNG.integers(-128, 127, (32, 16)).astype(np.int8)
    c = np.zeros((16, 16), np.int32)
    k[(1,)](a, b, c, M=16, N=16, K=32)
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))
