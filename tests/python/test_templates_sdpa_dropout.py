"""zetile.ops.scaled_dot_product_attention with dropout_p > 0 on the CPU
target (E4): torch's semantics (weights dropped after the softmax with
probability p, the kept ones scaled by 1 / (1 - p), lse undropped) and
torch's distribution, checked by statistics rather than bits (zetile's mask
is a philox draw, torch's is its own generator); the same seed gives the
same output, another seed another mask."""
import math

import numpy as np
import pytest

import zetile

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
import zetile.ops as ops  # noqa: E402


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


def _mask_of(p, seed, B=2, H=3, L=40, S=64, causal=False):
    """With q = k = 0 the softmax is uniform over the kept keys, and with
    v = the identity (S = E) output [.., i, j] is weight (i, j): the dropout
    mask can be read back exactly. Returns (mask 0/1, output, lse)."""
    q = torch.zeros(B, H, L, S)
    k = torch.zeros(B, H, S, S)
    v = torch.eye(S).expand(B, H, S, S).contiguous()
    out, lse = ops.scaled_dot_product_attention(q, k, v, dropout_p=p, dropout_seed=seed,
                                                is_causal=causal, return_lse=True)
    return (out != 0).float(), out, lse


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_dropped_fraction_and_scaling_follow_torch(p):
    mask, out, lse = _mask_of(p, seed=1234)
    n = mask.numel()
    kept = mask.mean().item()
    # Binomial(n, 1 - p): 5 standard deviations.
    assert abs(kept - (1 - p)) < 5 * math.sqrt(p * (1 - p) / n), kept
    # torch's scaling: a kept weight is softmax / (1 - p) = 1 / (S (1 - p)).
    S = out.shape[-1]
    kept_vals = out[mask.bool()]
    assert torch.allclose(kept_vals, torch.full_like(kept_vals, 1.0 / (S * (1 - p))), rtol=1e-5)
    # The lse is the undropped softmax's: log(S) (all scores 0), natural log.
    assert torch.allclose(lse, torch.full_like(lse, math.log(S)), atol=1e-5)
    # torch's own dropout on the same weights, same statistics.
    torch.manual_seed(0)
    ref = F.scaled_dot_product_attention(torch.zeros(2, 3, 40, S), torch.zeros(2, 3, S, S),
                                         torch.eye(S).expand(2, 3, S, S), dropout_p=p)
    ref_kept = (ref != 0).float().mean().item()
    assert abs(kept - ref_kept) < 7 * math.sqrt(p * (1 - p) / n), (kept, ref_kept)


def test_mask_positions_are_independent():
    # Rows, heads and batches get different masks (the philox offset is the
    # flat (b, h, q, kv) position), and neighbouring keys are uncorrelated.
    mask, _, _ = _mask_of(0.5, seed=7)
    rows = mask.reshape(-1, mask.shape[-1])
    assert len({tuple(r.tolist()) for r in rows}) == rows.shape[0]
    a, b = mask[..., :-1].flatten(), mask[..., 1:].flatten()
    corr = np.corrcoef(a.numpy(), b.numpy())[0, 1]
    assert abs(corr) < 5 / math.sqrt(a.numel()), corr


def test_same_seed_same_output_other_seed_other_mask():
    m1, o1, _ = _mask_of(0.3, seed=99)
    m2, o2, _ = _mask_of(0.3, seed=99)
    m3, _, _ = _mask_of(0.3, seed=100)
    assert torch.equal(o1, o2)
    assert (m1 != m3).float().mean().item() > 0.2
    # Without a seed, torch's generator picks one: torch.manual_seed repeats it.
    q, k, v = (torch.randn(1, 2, 16, 32, generator=torch.Generator().manual_seed(i))
               for i in range(3))
    torch.manual_seed(5)
    a = ops.scaled_dot_product_attention(q, k, v, dropout_p=0.2)
    torch.manual_seed(5)
    b = ops.scaled_dot_product_attention(q, k, v, dropout_p=0.2)
    assert torch.equal(a, b)


def test_unbiased_against_torch_without_dropout():
    # E[dropout(softmax) @ v] = softmax @ v: the mean over seeds converges to
    # torch's output without dropout (causal, random inputs, L != S).
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 24, 32, generator=g), torch.randn(1, 2, 40, 32, generator=g),
               torch.randn(1, 2, 40, 32, generator=g))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    n = 200
    acc = torch.zeros_like(ref)
    for s in range(n):
        acc += ops.scaled_dot_product_attention(q, k, v, dropout_p=0.25, is_causal=True,
                                                dropout_seed=s)
    err = (acc / n - ref).abs().mean().item()
    single = (ops.scaled_dot_product_attention(q, k, v, dropout_p=0.25, is_causal=True,
                                               dropout_seed=0) - ref).abs().mean().item()
    # The error of the mean shrinks like 1 / sqrt(n) (here 14x): allow 4x.
    assert err < single / 4, (err, single)


def test_p_one_gives_zeros_and_p_zero_is_exact():
    q, k, v = (torch.randn(1, 1, 8, 16, generator=torch.Generator().manual_seed(i))
               for i in range(3))
    assert torch.equal(ops.scaled_dot_product_attention(q, k, v, dropout_p=1.0),
                       torch.zeros(1, 1, 8, 16))
    ref = F.scaled_dot_product_attention(q, k, v)
    assert torch.allclose(ops.scaled_dot_product_attention(q, k, v, dropout_p=0.0), ref,
                          atol=2e-5)
