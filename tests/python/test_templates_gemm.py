"""zetile.ops.gemm (the GEMM template, stdlib-kernels/gemm.py) on the CPU
target against torch CPU references in float64 (E4)."""
import numpy as np
import pytest

import zetile

torch = pytest.importorskip("torch")
import zetile.ops as ops  # noqa: E402

TOL = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 5e-2}


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


def _close(got, ref, dt, what=""):
    got = torch.as_tensor(np.asarray(got)) if not isinstance(got, torch.Tensor) else got
    err = (got.double() - ref.double()).abs().max().item()
    scale = max(ref.double().abs().max().item(), 1.0)
    assert err <= TOL[dt] * scale, (what, err, scale)


def _rand(*shape, dt=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dt)


@pytest.mark.parametrize("dt", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(67, 45, 83), (1, 33, 64), (128, 64, 32)])
def test_gemm_dtypes(dt, shape):
    M, N, K = shape
    a, b = _rand(M, K, dt=dt), _rand(K, N, dt=dt, seed=1)
    c = ops.gemm(a, b)
    assert c.dtype == dt and c.shape == (M, N)
    _close(c, a.double() @ b.double(), dt)


@pytest.mark.parametrize("ta,tb", [(True, False), (False, True), (True, True)])
def test_gemm_transposed_views(ta, tb):
    M, N, K = 37, 29, 50
    a = _rand(K, M).T if ta else _rand(M, K)
    b = _rand(N, K, seed=2).T if tb else _rand(K, N, seed=2)
    assert not (a.is_contiguous() and b.is_contiguous())
    _close(ops.gemm(a, b), a.double() @ b.double(), torch.float32)


class _DLPackOnly:
    """An object known only through the DLPack protocol."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kw):
        return self._a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


def test_gemm_numpy_transposed_and_dlpack():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((40, 30)).astype(np.float32)
    b = rng.standard_normal((20, 30)).astype(np.float32)
    got = ops.gemm(a, b.T)
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, a @ b.T, rtol=1e-4, atol=1e-4)
    got = ops.gemm(_DLPackOnly(a), b.T.copy())
    np.testing.assert_allclose(np.asarray(got), a @ b.T, rtol=1e-4, atol=1e-4)


def test_gemm_zetile_tensor():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((16, 24)).astype(np.float32)
    b = rng.standard_normal((24, 8)).astype(np.float32)
    got = ops.gemm(zetile.from_numpy(a), zetile.from_numpy(b))
    assert isinstance(got, zetile.Tensor)
    np.testing.assert_allclose(got.numpy(), a @ b, rtol=1e-4, atol=1e-4)


def test_gemm_batched_and_broadcast():
    a3, b3 = _rand(3, 20, 33), _rand(3, 33, 17, seed=1)
    _close(ops.gemm(a3, b3), a3.double() @ b3.double(), torch.float32, "bmm")
    b2 = _rand(33, 17, seed=3)
    _close(ops.gemm(a3, b2), a3.double() @ b2.double(), torch.float32, "3-D @ 2-D")
    a1 = _rand(1, 20, 33, seed=4)
    _close(ops.gemm(a1, b3), a1.double() @ b3.double(), torch.float32, "batch 1 broadcast")
    bt = _rand(3, 17, 33, seed=5).transpose(1, 2)
    _close(ops.gemm(a3, bt), a3.double() @ bt.double(), torch.float32, "batched transposed")


def _act(y, name):
    F = torch.nn.functional
    return {None: y, "relu": F.relu(y), "gelu": F.gelu(y), "gelu_tanh": F.gelu(y, approximate="tanh"),
            "silu": F.silu(y)}[name]


@pytest.mark.parametrize("act", [None, "relu", "gelu", "gelu_tanh", "silu"])
def test_gemm_epilogue(act):
    M, N, K = 45, 38, 52
    a, b = _rand(M, K), _rand(K, N, seed=1)
    bias, res, c = _rand(N, seed=2), _rand(M, N, seed=3), _rand(M, N, seed=4)
    got = ops.gemm(a, b, bias=bias, activation=act, residual=res, alpha=0.5, beta=2.0, c=c)
    ref = _act(0.5 * (a.double() @ b.double()) + 2.0 * c.double() + bias.double(), act) + res.double()
    _close(got, ref, torch.float32)


def test_gemm_column_bias_and_out_dtype():
    M, N, K = 30, 21, 40
    a, b = _rand(M, K, dt=torch.float16), _rand(K, N, dt=torch.float16, seed=1)
    bias = _rand(M, 1, seed=2)
    got = ops.gemm(a, b, bias=bias, out_dtype=torch.float32)
    assert got.dtype == torch.float32
    _close(got, a.double() @ b.double() + bias.double(), torch.float16)
    got = ops.gemm(_rand(M, K), _rand(K, N, seed=1), out_dtype=torch.bfloat16)
    assert got.dtype == torch.bfloat16


def test_gemm_beta_zero_ignores_c():
    a, b = _rand(8, 16), _rand(16, 8, seed=1)
    c = torch.full((8, 8), float("nan"))
    got = ops.gemm(a, b, c=c, beta=0.0)
    assert torch.isfinite(got).all()


def test_gemm_out_in_place():
    a, b = _rand(20, 30), _rand(30, 10, seed=1)
    out = torch.zeros(20, 10)
    r = ops.gemm(a, b, out=out)
    assert r is out
    _close(out, a.double() @ b.double(), torch.float32)


def test_gemm_int8_exact():
    g = torch.Generator().manual_seed(0)
    a = torch.randint(-128, 128, (33, 70), generator=g, dtype=torch.int8)
    b = torch.randint(-128, 128, (70, 19), generator=g, dtype=torch.int8)
    got = ops.gemm(a, b)
    assert got.dtype == torch.int32
    assert torch.equal(got, a.int() @ b.int())
    bias = _rand(19)
    got = ops.gemm(a, b, bias=bias, alpha=0.01, out_dtype=torch.float32)
    ref = 0.01 * (a.double() @ b.double()) + bias.double()
    _close(got, ref, torch.float32)


@pytest.mark.parametrize("bits", [8, 4])
@pytest.mark.parametrize("dt", [torch.float16, torch.bfloat16])
def test_gemm_weight_only(bits, dt):
    M, N, K, G = 5, 48, 128, 32
    g = torch.Generator().manual_seed(1)
    lo, hi = (-128, 128) if bits == 8 else (-8, 8)
    w = torch.randint(lo, hi, (K, N), generator=g, dtype=torch.int32)
    scales = (torch.rand(K // G, N, generator=g) * 0.02 + 0.001).to(dt)
    a = _rand(M, K, dt=dt)
    if bits == 8:
        packed = w.to(torch.int8)
    else:
        u = (w + 8).to(torch.uint8)                       # nibble = value + 8
        packed = (u[0::2] | (u[1::2] << 4)).to(torch.uint8)
    got = ops.gemm(a, packed, scales=scales, weight_bits=bits)
    deq = w.double() * scales.double().repeat_interleave(G, 0)
    # The dequantized weights are rounded to the activation type before the dot.
    ref = a.double() @ deq.to(dt).double()
    _close(got, ref, dt)


def test_gemm_errors():
    a, b = _rand(4, 8), _rand(8, 4)
    with pytest.raises(ValueError, match="activation"):
        ops.gemm(a, b, activation="tanh")
    with pytest.raises(TypeError, match="same dtype"):
        ops.gemm(a, b.half())
    with pytest.raises(ValueError, match="cannot be multiplied"):
        ops.gemm(a, _rand(7, 4))
    with pytest.raises(ValueError, match="does not broadcast"):
        ops.gemm(a, b, bias=_rand(5))


@pytest.mark.parametrize("precision", ["tf32", "ieee"])
def test_gemm_fp32_precision(precision):
    a, b = _rand(33, 47), _rand(47, 29, seed=1)
    _close(ops.gemm(a, b, precision=precision), a.double() @ b.double(), torch.float32)
    with pytest.raises(ValueError, match="fp32 inputs only"):
        ops.gemm(a.half(), b.half(), precision=precision)
