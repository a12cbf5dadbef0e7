"""SDPA dropout's backward on the CPU target (E4): zetile regenerates the
forward's keep flags from the same seed (philox offsets of the (b, h, q, kv)
position) in the dq and dk/dv kernels. The reference is torch autograd
through softmax -> (* the same keep flags / (1 - p)) -> @ v, with the flags
read back from the forward itself (q = k = 0 and v = the identity make the
output the dropped weights, test_templates_sdpa_dropout._mask_of)."""
import math
import os

import pytest

import zetile

torch = pytest.importorskip("torch")
import zetile.ops as ops  # noqa: E402

from test_templates_sdpa_dropout import _mask_of  # noqa: E402


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


def _reference(q, k, v, keep, p, causal=False, mask=None, scale=None):
    """Dropout SDPA with explicit keep flags (B, Hq, L, S), differentiable."""
    Hq, Hkv = q.shape[1], k.shape[1]
    if Hq != Hkv:
        k = k.repeat_interleave(Hq // Hkv, 1)
        v = v.repeat_interleave(Hq // Hkv, 1)
    sc = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ k.transpose(-1, -2) * sc
    if causal:
        L, S = s.shape[-2:]
        s = s.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), float("-inf"))
    if mask is not None:
        s = s + mask
    w = torch.softmax(s, -1)
    return (w * keep / (1 - p)) @ v


def _grads(fn, q, k, v, g):
    q, k, v = (t.detach().clone().requires_grad_() for t in (q, k, v))
    out = fn(q, k, v)
    (out * g).sum().backward()
    return out.detach(), q.grad, k.grad, v.grad


SLOW = os.environ.get("ZETILE_SLOW_TESTS") == "1"
_slow = pytest.mark.skipif(not SLOW, reason="ZETILE_SLOW_TESTS=1")


# GQA in the normal suite (~40 s at load ~14 with a warm cache: three
# forwards and a backward through the CPU target); causal and the float
# mask with ZETILE_SLOW_TESTS=1.
@pytest.mark.parametrize("case", ["gqa", pytest.param("causal", marks=_slow),
                                  pytest.param("float_mask", marks=_slow)])
def test_dropout_grads_match_autograd_on_the_same_mask(case):
    p, seed = 0.3, 4321
    B, Hq, Hkv, L, S, E = 2, 4, 2, 40, 72, 32
    causal = case == "causal"
    if causal:
        L = S
    if case != "gqa":
        Hkv = Hq
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(B, Hq, L, E, generator=gen)
    k = torch.randn(B, Hkv, S, E, generator=gen)
    v = torch.randn(B, Hkv, S, E, generator=gen)
    g = torch.randn(B, Hq, L, E, generator=gen)
    mask = torch.randn(1, Hq, L, S, generator=gen) if case == "float_mask" else None
    keep, _, _ = _mask_of(p, seed, B=B, H=Hq, L=L, S=S)
    assert 0.5 < keep.mean().item() < 0.9

    got = _grads(lambda q, k, v: ops.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, dropout_p=p, is_causal=causal, enable_gqa=Hq != Hkv,
        dropout_seed=seed), q, k, v, g)
    want = _grads(lambda q, k, v: _reference(q, k, v, keep, p, causal, mask), q, k, v, g)
    for name, a, b in zip(("out", "dq", "dk", "dv"), got, want):
        torch.testing.assert_close(a, b, atol=2e-4, rtol=2e-4, msg=name)
    # The comparison sees the mask: another seed's flags give other gradients.
    other, _, _ = _mask_of(p, seed + 1, B=B, H=Hq, L=L, S=S)
    wrong = _grads(lambda q, k, v: _reference(q, k, v, other, p, causal, mask), q, k, v, g)
    assert (wrong[3] - got[3]).abs().max() > 1e-2


def test_dropout_seed_drawn_once_per_call():
    """Without dropout_seed the forward draws one from torch's generator and
    its backward uses that same seed: the gradient equals the one of an
    explicit seed re-drawn from the same generator state."""
    p = 0.25
    gen = torch.Generator().manual_seed(1)
    q, k, v, g = (torch.randn(1, 2, 24, 16, generator=gen) for _ in range(4))
    torch.manual_seed(99)
    a = _grads(lambda q, k, v: ops.scaled_dot_product_attention(q, k, v, dropout_p=p), q, k, v, g)
    torch.manual_seed(99)
    seed = int(torch.randint(0, 2**31 - 1, (1,)).item())
    b = _grads(lambda q, k, v: ops.scaled_dot_product_attention(q, k, v, dropout_p=p,
                                                                dropout_seed=seed), q, k, v, g)
    for x, y in zip(a, b):
        assert torch.equal(x, y)


def test_p_one_gives_zero_grads_and_the_op_needs_a_seed():
    gen = torch.Generator().manual_seed(2)
    q, k, v, g = (torch.randn(1, 1, 8, 16, generator=gen) for _ in range(4))
    out, dq, dk, dv = _grads(lambda q, k, v: ops.scaled_dot_product_attention(
        q, k, v, dropout_p=1.0), q, k, v, g)
    assert torch.equal(out, torch.zeros_like(out))
    for t in (dq, dk, dv):
        assert torch.equal(t, torch.zeros_like(t))
    with pytest.raises(ValueError, match="dropout_seed"):
        torch.ops.zetile.sdpa(q, k, v, None, False, None, False, 0.5, None)
    with pytest.raises(ValueError, match="dropout_seed"):
        ops.scaled_dot_product_attention_backward(g, q, k, v, out, torch.zeros(1, 1, 8),
                                                  dropout_p=0.5)
