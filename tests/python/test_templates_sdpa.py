"""zetile.ops.scaled_dot_product_attention (the attention template,
stdlib-kernels/attention.py) on the CPU target against torch's
F.scaled_dot_product_attention run eagerly on CPU (E4)."""
import math

import numpy as np
import pytest

import zetile

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
import zetile.ops as ops  # noqa: E402

TOL = {torch.float32: 2e-5, torch.float16: 1e-2, torch.bfloat16: 4e-2}


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


def _qkv(B, Hq, Hkv, L, S, E, dt=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g).to(dt)  # noqa: E731
    return r(B, Hq, L, E), r(B, Hkv, S, E), r(B, Hkv, S, E)


def _ref(q, k, v, **kw):
    # fp32 reference for low-precision inputs (torch's CPU kernel also
    # accumulates in fp32).
    return F.scaled_dot_product_attention(q.float(), k.float(), v.float(), **kw)


def _close(got, ref, dt):
    err = (got.float() - ref.float()).abs().max().item()
    assert err <= TOL[dt] * max(ref.abs().max().item(), 1.0), err


@pytest.mark.parametrize("E", [64, 80, 96, 128, 256])
def test_head_dims(E):
    q, k, v = _qkv(1, 2, 2, 37, 45, E)
    _close(ops.scaled_dot_product_attention(q, k, v), _ref(q, k, v), torch.float32)


@pytest.mark.parametrize("dt", [torch.float16, torch.bfloat16])
def test_low_precision_causal(dt):
    q, k, v = _qkv(2, 2, 2, 70, 70, 64, dt)
    got = ops.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert got.dtype == dt
    _close(got, _ref(q, k, v, is_causal=True), dt)


@pytest.mark.parametrize("L,S", [(50, 83), (83, 50), (1, 100)])
def test_causal_lq_ne_lk(L, S):
    # torch's is_causal is top-left aligned: query i sees keys 0..i.
    q, k, v = _qkv(1, 2, 2, L, S, 64, seed=L)
    _close(ops.scaled_dot_product_attention(q, k, v, is_causal=True),
           _ref(q, k, v, is_causal=True), torch.float32)


@pytest.mark.parametrize("shape", [(60, 70), (2, 1, 60, 70), (1, 3, 1, 70)])
def test_masks_broadcast(shape):
    q, k, v = _qkv(2, 3, 3, 60, 70, 64)
    g = torch.Generator().manual_seed(5)
    bmask = torch.rand(*shape, generator=g) > 0.4
    _close(ops.scaled_dot_product_attention(q, k, v, attn_mask=bmask),
           _ref(q, k, v, attn_mask=bmask), torch.float32)
    fmask = torch.randn(*shape, generator=g)
    _close(ops.scaled_dot_product_attention(q, k, v, attn_mask=fmask, scale=0.3),
           _ref(q, k, v, attn_mask=fmask, scale=0.3), torch.float32)


def test_gqa_and_lse():
    q, k, v = _qkv(2, 8, 2, 33, 47, 64)
    got, lse = ops.scaled_dot_product_attention(q, k, v, enable_gqa=True, return_lse=True)
    _close(got, _ref(q, k, v, enable_gqa=True), torch.float32)
    kk = k.repeat_interleave(4, 1)
    ref_lse = (q @ kk.transpose(-1, -2) / math.sqrt(64)).logsumexp(-1)
    assert lse.dtype == torch.float32 and lse.shape == (2, 8, 33)
    assert (lse - ref_lse).abs().max().item() < 1e-4
    # torch's own CPU SDPA op returns the same natural-log lse.
    _, tl = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, kk, v.repeat_interleave(4, 1))
    assert (lse - tl).abs().max().item() < 1e-4
    with pytest.raises(ValueError, match="enable_gqa"):
        ops.scaled_dot_product_attention(q, k, v)


def test_fully_masked_rows():
    q, k, v = _qkv(1, 1, 1, 6, 9, 64)
    m = torch.ones(6, 9, dtype=torch.bool)
    m[2] = False
    got, lse = ops.scaled_dot_product_attention(q, k, v, attn_mask=m, return_lse=True)
    ref = _ref(q, k, v, attn_mask=m)              # torch CPU gives 0 for such rows too
    assert torch.equal(got[0, 0, 2], torch.zeros(64))
    _close(got, ref, torch.float32)
    assert lse[0, 0, 2].item() == float("-inf") and torch.isfinite(lse[0, 0, [0, 1, 3, 4, 5]]).all()


def test_three_d_and_numpy():
    q, k, v = _qkv(1, 3, 3, 20, 30, 64)
    got = ops.scaled_dot_product_attention(q[0], k[0], v[0])
    assert got.shape == (3, 20, 64)
    _close(got, _ref(q[0], k[0], v[0]), torch.float32)
    got = ops.scaled_dot_product_attention(q.numpy(), k.numpy(), v.numpy(), is_causal=True)
    assert isinstance(got, np.ndarray)
    _close(torch.from_numpy(got), _ref(q, k, v, is_causal=True), torch.float32)


def test_strided_inputs():
    # (B, L, H, E) memory viewed as (B, H, L, E), as attention layers produce.
    q, k, v = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in _qkv(2, 4, 4, 25, 31, 64))
    assert not q.is_contiguous()
    _close(ops.scaled_dot_product_attention(q, k, v), _ref(q, k, v), torch.float32)


def test_refusals():
    q, k, v = _qkv(1, 1, 1, 8, 8, 64)
    with pytest.raises(ValueError, match="dropout_p must be in"):
        ops.scaled_dot_product_attention(q, k, v, dropout_p=1.5)
    # Dropout with grad is no longer refused: it has a backward
    # (test_templates_sdpa_dropout_bwd.py checks its values).
    out = ops.scaled_dot_product_attention(q.requires_grad_(), k, v, dropout_p=0.1,
                                           dropout_seed=3)
    out.sum().backward()
    assert q.grad is not None and bool(torch.isfinite(q.grad).all())
    q = q.detach()
    with pytest.raises(ValueError, match="does not broadcast"):
        ops.scaled_dot_product_attention(q, k, v, attn_mask=torch.ones(3, 8, dtype=torch.bool))
    with pytest.raises(TypeError, match="one dtype"):
        ops.scaled_dot_product_attention(q, k.half(), v)
