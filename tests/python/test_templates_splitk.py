"""Split-K GEMM (stdlib-kernels/gemm.py gemm_splitk_partial + gemm_splitk_reduce,
zetile.ops.gemm(split_k=...)) on the CPU target against numpy (float64)
and torch: chosen by shape, forced, with every epilogue, batched and
transposed, deterministic (the slices are added in a fixed order)."""
import importlib

import numpy as np
import pytest

import zetile
import zetile.ops as ops

gemm_mod = importlib.import_module("zetile.ops.gemm")   # the module (zetile.ops.gemm is also the function)


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


def _rand(rng, shape, dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def test_skinny_shape_picks_split_k():
    rng = np.random.default_rng(0)
    a, b = _rand(rng, (8, 3000)), _rand(rng, (3000, 24))
    launch = ops.gemm(a, b, plan=True)
    assert isinstance(launch, gemm_mod.SplitKLaunch)
    assert launch.launches[0].grid[2] > 1          # K really cut into slices
    out = launch.run()
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-3)


def test_split_k_choice_by_shape():
    cfg = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 32}
    assert gemm_mod.split_k_for(16, 16, 8192, 1, cfg, programs=8) == 8
    assert gemm_mod.split_k_for(16, 16, 300, 1, cfg, programs=8) == 1    # K too shallow
    assert gemm_mod.split_k_for(512, 512, 8192, 1, cfg, programs=8) == 1  # enough tiles
    assert gemm_mod.split_k_for(16, 16, 1 << 20, 1, cfg, programs=64) == gemm_mod.MAX_SPLITS
    # Not skinny (K < 4 max(M, N)): one pass even on a device with room.
    assert gemm_mod.split_k_for(1024, 1024, 2048, 1, cfg, programs=1 << 16) == 1
    # A big square GEMM plans the one-pass kernel.
    big = np.zeros((256, 256), np.float32)
    assert not isinstance(ops.gemm(big, big, plan=True), gemm_mod.SplitKLaunch)
    small = np.zeros((8, 3000), np.float32)
    assert not isinstance(ops.gemm(small, small.T, split_k=1, plan=True), gemm_mod.SplitKLaunch)


@pytest.mark.parametrize("splits", [2, 3, 5])
def test_forced_split_k_with_epilogue_fp32(splits):
    rng = np.random.default_rng(splits)
    M, N, K = 19, 37, 701                           # nothing a multiple of a tile
    a, b = _rand(rng, (M, K)), _rand(rng, (K, N))
    bias, res, c = _rand(rng, (N,)), _rand(rng, (M, N)), _rand(rng, (M, N))
    out = ops.gemm(a, b, bias=bias, residual=res, c=c, alpha=0.5, beta=2.0, activation="relu",
                   split_k=splits)
    y = 0.5 * (a.astype(np.float64) @ b) + 2.0 * c + bias
    ref = np.maximum(y, 0) + res
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-3)


def test_split_k_fp16_gelu_matches_torch():
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(3)
    a = torch.randn(12, 2048, generator=g, dtype=torch.float16)
    b = torch.randn(2048, 20, generator=g, dtype=torch.float16)
    bias = torch.randn(20, generator=g, dtype=torch.float16)
    out = ops.gemm(a, b, bias=bias, activation="gelu", split_k=4)
    ref = torch.nn.functional.gelu(a.float() @ b.float() + bias.float()).half()
    assert out.dtype == torch.float16
    torch.testing.assert_close(out, ref, rtol=2e-2, atol=5e-2)


def test_split_k_batched_transposed_and_deterministic():
    rng = np.random.default_rng(7)
    a = _rand(rng, (3, 10, 1500))
    bt = _rand(rng, (3, 14, 1500))                  # B given transposed: (batch, N, K)
    b = bt.transpose(0, 2, 1)
    first = ops.gemm(a, b, split_k=6)
    again = ops.gemm(a, b, split_k=6)
    assert np.array_equal(first, again)             # same slices, same order, same bits
    ref = np.einsum("bmk,bnk->bmn", a.astype(np.float64), bt.astype(np.float64))
    np.testing.assert_allclose(first, ref, rtol=1e-4, atol=1e-3)


def test_split_k_refusals():
    a = np.zeros((4, 64), np.float32)
    for bad in (0, -2, 2.5):
        with pytest.raises(ValueError, match="split_k"):
            ops.gemm(a, np.zeros((64, 4), np.float32), split_k=bad)
    i8 = np.zeros((4, 64), np.int8)
    with pytest.raises(ValueError, match="split_k"):
        ops.gemm(i8, np.zeros((64, 4), np.int8), split_k=2)
