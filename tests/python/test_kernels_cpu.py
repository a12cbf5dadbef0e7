"""The walking skeleton's kernels on the CPU target, against numpy (E4)."""
import numpy as np
import pytest

import zetile
from layer_norm import _layer_norm_fwd_fused, layer_norm
from softmax import softmax, softmax_kernel
from vector_add import add, add_kernel

RNG = np.random.default_rng(0)


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


@pytest.mark.parametrize("n", [1, 15, 1000, 1024, 98432, 4097])
@pytest.mark.parametrize("block", [128, 1024])
def test_vector_add(n, block):
    x = RNG.standard_normal(n, dtype=np.float32)
    y = RNG.standard_normal(n, dtype=np.float32)
    out = np.full(n, np.nan, dtype=np.float32)
    add(x, y, out, BLOCK_SIZE=block)
    np.testing.assert_array_equal(out, x + y)


@pytest.mark.parametrize("dtype", [np.float16, np.float64, np.int32, np.int64, np.int8])
def test_vector_add_dtypes(dtype):
    n = 777
    if np.dtype(dtype).kind == "f":
        x = RNG.standard_normal(n).astype(dtype)
        y = RNG.standard_normal(n).astype(dtype)
    else:
        x = RNG.integers(-50, 50, n).astype(dtype)
        y = RNG.integers(-50, 50, n).astype(dtype)
    out = np.zeros(n, dtype=dtype)
    add(x, y, out, BLOCK_SIZE=256)
    np.testing.assert_array_equal(out, x + y)


def test_vector_add_device_tensors_and_masked_tail_untouched():
    n = 1000
    x = zetile.from_numpy(np.arange(n, dtype=np.float32))
    y = zetile.from_numpy(np.ones(n, dtype=np.float32))
    out = zetile.from_numpy(np.full(1024, -7.0, dtype=np.float32))
    add_kernel[(1,)](x, y, out, n, BLOCK_SIZE=1024)
    got = out.numpy()
    np.testing.assert_array_equal(got[:n], np.arange(n) + 1)
    np.testing.assert_array_equal(got[n:], -7.0)  # masked-off lanes never written


def test_vector_add_torch_and_dlpack():
    torch = pytest.importorskip("torch")
    x = torch.randn(3000)
    y = torch.randn(3000)
    out = torch.empty(3000)
    add_kernel[(3,)](x, y, out, 3000, BLOCK_SIZE=1024)
    assert torch.equal(out, x + y)


@pytest.mark.parametrize("shape", [(1, 1), (17, 13), (64, 1000), (5, 1024), (3, 1999)])
def test_softmax(shape):
    x = RNG.standard_normal(shape, dtype=np.float32) * 4
    out = np.zeros_like(x)
    softmax(x, out)
    x64 = x.astype(np.float64)
    ref = np.exp(x64 - x64.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-8)


def test_softmax_grid_stride_loop():
    # Fewer programs than rows: each program loops over several rows.
    x = RNG.standard_normal((37, 100), dtype=np.float32)
    out = np.zeros_like(x)
    softmax(x, out, num_programs=4)
    x64 = x.astype(np.float64)
    ref = np.exp(x64 - x64.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("M,N,block", [(1, 1, 16), (7, 1000, 256), (16, 4096, 1024), (3, 333, 64)])
def test_layer_norm(M, N, block):
    x = RNG.standard_normal((M, N), dtype=np.float32) * 3 + 1
    w = RNG.standard_normal(N, dtype=np.float32)
    b = RNG.standard_normal(N, dtype=np.float32)
    y = np.zeros_like(x)
    mean = np.zeros(M, dtype=np.float32)
    rstd = np.zeros(M, dtype=np.float32)
    layer_norm(x, w, b, y, mean, rstd, eps=1e-5, BLOCK_SIZE=block)
    x64 = x.astype(np.float64)
    mu = x64.mean(axis=1)
    var = ((x64 - mu[:, None]) ** 2).mean(axis=1)
    rs = 1 / np.sqrt(var + 1e-5)
    ref = (x64 - mu[:, None]) * rs[:, None] * w + b
    np.testing.assert_allclose(mean, mu, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(rstd, rs, rtol=1e-4)
    np.testing.assert_allclose(y, ref, rtol=1e-4, atol=1e-4)


def test_specializations_are_cached_in_memory():
    x = np.ones(64, dtype=np.float32)
    out = np.zeros(64, dtype=np.float32)
    add_kernel.__dict__["_cache"].clear()
    add_kernel[(1,)](x, x, out, 64, BLOCK_SIZE=64)
    add_kernel[(1,)](x, x, out, 64, BLOCK_SIZE=64)
    assert len(add_kernel._cache) == 1
    add_kernel[(1,)](x.astype(np.float64), x.astype(np.float64), out.astype(np.float64), 64,
                     BLOCK_SIZE=64)
    add_kernel[(1,)](x, x, out, 63, BLOCK_SIZE=64)  # 63 is not divisible by 16: new key
    assert len(add_kernel._cache) == 3


class _DLPackOnly:
    """An array known to zetile only through the DLPack protocol."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kw):
        return self._a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_vector_add_dlpack_objects():
    n = 300
    x = RNG.standard_normal(n, dtype=np.float32)
    y = RNG.standard_normal(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    add_kernel[(1,)](_DLPackOnly(x), _DLPackOnly(y), _DLPackOnly(out), n, BLOCK_SIZE=512)
    np.testing.assert_array_equal(out, x + y)
