"""Attention backward (stdlib-kernels/attention_bwd.py) on the CPU target:
dq, dk, dv of zetile.ops' SDPA and FlexAttention against torch's own
autograd on CPU (E4): F.scaled_dot_product_attention's backward, and for
flex (torch's flex_attention refuses backward on CPU) the same mods applied
densely to the score matrix and differentiated by torch.
Each case compiles four kernels (forward, delta, dk/dv, dq): the larger
head dims, bf16 and the block-mask variants the default cases already cover
run with ZETILE_SLOW_TESTS=1."""
import math
import os

import pytest

import zetile

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
import zetile.ops as ops  # noqa: E402
from zetile.ops import attention_bwd  # noqa: E402

SLOW = os.environ.get("ZETILE_SLOW_TESTS") == "1"
SLOW_CASES = {"head_dim_80", "head_dim_256", "sliding_window", "prefix_lm", "bfloat16"}
TOL = {torch.float32: 2e-5, torch.float16: 1e-2, torch.bfloat16: 4e-2}


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


def _rand(g, dt, *shape):
    return torch.randn(*shape, generator=g).to(dt)


def _inputs(B, Hq, Hkv, L, S, E, dt=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (_rand(g, dt, B, Hq, L, E), _rand(g, dt, B, Hkv, S, E), _rand(g, dt, B, Hkv, S, E),
            _rand(g, dt, B, Hq, L, E))


def _close(got, want, dt, what):
    assert not torch.isnan(got).any(), f"{what}: NaN"
    err = (got.float() - want.float()).abs().max().item()
    assert err <= TOL[dt] * max(want.abs().max().item(), 1.0), (what, err)


def _torch_grads(fn, q, k, v, do):
    """torch's autograd of fn in fp32 (the reference for every dtype)."""
    qf, kf, vf = (x.detach().float().requires_grad_() for x in (q, k, v))
    fn(qf, kf, vf).backward(do.float())
    return qf.grad, kf.grad, vf.grad


def _check(got, want, dt):
    for name, a, b in zip(("dq", "dk", "dv"), got, want):
        assert a.shape == b.shape and a.dtype == dt, (name, a.shape, b.shape, a.dtype)
        _close(a, b, dt, name)


# ------------------------------------------------------------------- SDPA
_g = torch.Generator().manual_seed(7)
_BOOL = torch.rand(2, 1, 45, 70, generator=_g) > 0.4
_BOOL[0, 0, 5] = False            # fully masked rows: zero gradients, no NaN
_BOOL[1, 0, 44] = False
_FLOAT = torch.randn(1, 3, 1, 70, generator=_g)
_FLOAT_INF = torch.randn(45, 70, generator=_g)
_FLOAT_INF[3] = float("-inf")

SDPA_CASES = {
    "plain_lq_ne_lk": (dict(B=1, Hq=2, Hkv=2, L=37, S=45, E=64), {}),
    "causal_lq_lt_lk": (dict(B=1, Hq=2, Hkv=2, L=50, S=83, E=64), dict(is_causal=True)),
    "causal_lq_gt_lk": (dict(B=2, Hq=2, Hkv=2, L=83, S=50, E=64), dict(is_causal=True)),
    "bool_mask_broadcast": (dict(B=2, Hq=3, Hkv=3, L=45, S=70, E=64), dict(attn_mask=_BOOL)),
    "float_mask_scale": (dict(B=2, Hq=3, Hkv=3, L=45, S=70, E=64),
                         dict(attn_mask=_FLOAT, scale=0.3)),
    "float_mask_inf_row": (dict(B=1, Hq=2, Hkv=2, L=45, S=70, E=64),
                           dict(attn_mask=_FLOAT_INF)),
    "gqa_causal": (dict(B=2, Hq=8, Hkv=2, L=33, S=47, E=64), dict(is_causal=True)),
    "mqa": (dict(B=1, Hq=4, Hkv=1, L=40, S=30, E=64), {}),
    "head_dim_80": (dict(B=1, Hq=2, Hkv=2, L=37, S=45, E=80), {}),
    "head_dim_256": (dict(B=1, Hq=1, Hkv=1, L=20, S=33, E=256), dict(is_causal=True)),
}


def _cases(names):
    return [pytest.param(n, id=n, marks=pytest.mark.skipif(
        n in SLOW_CASES and not SLOW, reason="ZETILE_SLOW_TESTS=1")) for n in sorted(names)]


@pytest.mark.parametrize("case", _cases(SDPA_CASES))
def test_sdpa_backward(case):
    shape, kw = SDPA_CASES[case]
    B, Hq, Hkv, L, S, E = (shape[x] for x in ("B", "Hq", "Hkv", "L", "S", "E"))
    q, k, v, do = _inputs(B, Hq, Hkv, L, S, E, seed=len(case))
    gqa = Hq != Hkv
    out, lse = ops.scaled_dot_product_attention(q, k, v, enable_gqa=gqa, return_lse=True, **kw)
    got = attention_bwd.scaled_dot_product_attention_backward(do, q, k, v, out, lse,
                                                              enable_gqa=gqa, **kw)
    want = _torch_grads(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, enable_gqa=gqa,
                                                                       **kw), q, k, v, do)
    _check(got, want, torch.float32)
    if kw.get("attn_mask") is not None and kw["attn_mask"].dtype == torch.bool:
        assert got[0][0, :, 5].abs().max() == 0     # a fully masked row's dq


@pytest.mark.parametrize("dt", [torch.float16, pytest.param(torch.bfloat16, marks=pytest.mark.skipif(
    not SLOW, reason="ZETILE_SLOW_TESTS=1"))])
def test_sdpa_backward_low_precision(dt):
    q, k, v, do = _inputs(2, 2, 2, 70, 70, 64, dt)
    out, lse = ops.scaled_dot_product_attention(q, k, v, is_causal=True, return_lse=True)
    got = attention_bwd.scaled_dot_product_attention_backward(do, q, k, v, out, lse,
                                                              is_causal=True)
    want = _torch_grads(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True),
                        q, k, v, do)
    _check(got, want, dt)


def test_sdpa_autograd_through_zetile_ops():
    # loss.backward() through zetile.ops (torch.ops.zetile.sdpa's autograd
    # formula); the loss also reads lse, whose gradient enters the backward.
    q, k, v, do = _inputs(2, 4, 2, 29, 41, 64)
    w = torch.randn(2, 4, 29, generator=torch.Generator().manual_seed(3))
    qz, kz, vz = (x.clone().requires_grad_() for x in (q, k, v))
    out, lse = ops.scaled_dot_product_attention(qz, kz, vz, is_causal=True, enable_gqa=True,
                                                return_lse=True)
    assert out.requires_grad and out.grad_fn is not None
    ((out * do).sum() + (lse * w).sum()).backward()

    def ref(a, b, c):
        o = F.scaled_dot_product_attention(a, b, c, is_causal=True, enable_gqa=True)
        kk = b.repeat_interleave(2, 1)
        s = (a @ kk.transpose(-1, -2)) / math.sqrt(64)
        s = s.masked_fill(~torch.ones(29, 41, dtype=torch.bool).tril(), float("-inf"))
        return (o * do).sum() + (s.logsumexp(-1) * w).sum()
    qf, kf, vf = (x.clone().requires_grad_() for x in (q, k, v))
    ref(qf, kf, vf).backward()
    _check((qz.grad, kz.grad, vz.grad), (qf.grad, kf.grad, vf.grad), torch.float32)


def test_sdpa_mask_grad_refused():
    q, k, v, do = _inputs(1, 2, 2, 16, 16, 64)
    q.requires_grad_()
    mask = torch.zeros(16, 16, requires_grad=True)
    out = ops.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    with pytest.raises(NotImplementedError, match="gradient of attn_mask"):
        out.sum().backward()


# ------------------------------------------------------------------- flex
def _dense_flex(q, k, v, score_mod=None, mask_mod=None, scale=None):
    """flex_attention's semantics on the whole score matrix, differentiable
    by torch: mods called with broadcasting index tensors."""
    B, Hq, L, E = q.shape
    Hkv, S = k.shape[1], k.shape[2]
    if Hq != Hkv:
        k, v = k.repeat_interleave(Hq // Hkv, 1), v.repeat_interleave(Hq // Hkv, 1)
    s = q @ k.transpose(-1, -2) * (1 / math.sqrt(E) if scale is None else scale)
    i32 = torch.int32
    b = torch.arange(B, dtype=i32).view(B, 1, 1, 1)
    h = torch.arange(Hq, dtype=i32).view(1, Hq, 1, 1)
    qi = torch.arange(L, dtype=i32).view(1, 1, L, 1)
    ki = torch.arange(S, dtype=i32).view(1, 1, 1, S)
    if score_mod is not None:
        s = score_mod(s, b, h, qi, ki)
    if mask_mod is not None:
        s = s.masked_fill(~mask_mod(b, h, qi, ki).expand_as(s), float("-inf"))
    return torch.nan_to_num(torch.softmax(s, -1), nan=0.0) @ v


_BIAS = torch.randn(160, generator=torch.Generator().manual_seed(11))
_DOC = torch.zeros(150, dtype=torch.int64)
_DOC[40:90], _DOC[90:] = 1, 2


def _causal(b, h, q, kv):
    return q >= kv


FLEX_CASES = {
    "causal": (dict(L=70, S=70), None, _causal, {}),
    "sliding_window": (dict(L=100, S=100), None, lambda b, h, q, kv: (q >= kv) & (q - kv <= 20), {}),
    "prefix_lm": (dict(L=80, S=80), None, lambda b, h, q, kv: (kv <= 20) | (q >= kv), {}),
    "document_captured": (dict(L=150, S=150), None,
                          lambda b, h, q, kv: (_DOC[q] == _DOC[kv]) & (q >= kv), {}),
    "softcap": (dict(L=50, S=70), lambda s, b, h, q, kv: 20 * torch.tanh(s / 20), None, {}),
    "alibi_causal": (dict(L=70, S=70, Hq=4, Hkv=4),
                     lambda s, b, h, q, kv: s + (kv - q) * torch.exp2(-(h + 1.0)), _causal, {}),
    "relative_bias_captured": (dict(L=50, S=70), lambda s, b, h, q, kv: s + _BIAS[(q - kv).abs()],
                               None, {}),
    "gqa_scale": (dict(L=40, S=60, Hq=4, Hkv=2), lambda s, b, h, q, kv: s * 1.5, _causal,
                  dict(scale=0.2)),
    # maximum's backward decomposes to an in-place copy_: traced functionalized.
    "maximum_mod": (dict(L=40, S=50), lambda s, b, h, q, kv: torch.maximum(s, torch.full_like(s, 0.1)),
                    None, {}),
    "fully_masked_rows": (dict(L=40, S=40), None, lambda b, h, q, kv: (q >= kv) & (q != 7), {}),
}


@pytest.mark.parametrize("case", _cases(FLEX_CASES))
def test_flex_backward(case):
    from torch.nn.attention.flex_attention import create_block_mask
    shape, score_mod, mask_mod, kw = FLEX_CASES[case]
    L, S = shape["L"], shape["S"]
    Hq, Hkv = shape.get("Hq", 2), shape.get("Hkv", 2)
    q, k, v, do = _inputs(1, Hq, Hkv, L, S, 64, seed=len(case))
    bm = (create_block_mask(mask_mod, None, None, L, S, device="cpu", BLOCK_SIZE=32)
          if mask_mod is not None else None)
    qz, kz, vz = (x.clone().requires_grad_() for x in (q, k, v))
    out = ops.flex_attention(qz, kz, vz, score_mod=score_mod, block_mask=bm,
                             enable_gqa=Hq != Hkv, **kw)
    out.backward(do)
    want = _torch_grads(lambda a, b, c: _dense_flex(a, b, c, score_mod, mask_mod, **kw),
                        q, k, v, do)
    _check((qz.grad, kz.grad, vz.grad), want, torch.float32)
    if case == "fully_masked_rows":
        assert qz.grad[0, :, 7].abs().max() == 0


def test_flex_backward_functional_with_zetile_block_mask():
    # The functional entry (no autograd) with zetile's own BlockMask and the
    # natural-log lse flex_attention returns.
    q, k, v, do = _inputs(1, 2, 2, 45, 45, 64)
    bm = ops.create_block_mask(_causal, 1, 1, 45, 45, BLOCK_SIZE=32)

    def sm(s, b, h, q_idx, kv_idx):
        return s * 0.5 + torch.sigmoid(s)
    out, lse = ops.flex_attention(q, k, v, score_mod=sm, block_mask=bm, return_lse=True)
    got = attention_bwd.flex_attention_backward(do, q, k, v, out, lse, sm, bm)
    want = _torch_grads(lambda a, b, c: _dense_flex(a, b, c, sm, _causal), q, k, v, do)
    _check(got, want, torch.float32)


def test_flex_backward_refusals():
    q, k, v, do = _inputs(1, 2, 2, 16, 16, 64)
    qz = q.clone().requires_grad_()

    @zetile.jit
    def jit_mod(score, b, h, q_idx, kv_idx):
        return score * 2.0
    with pytest.raises(NotImplementedError, match="@zetile.jit score_mod has no derivative"):
        ops.flex_attention(qz, k, v, score_mod=jit_mod)
    # A mods string without the derivative (what a translated torch.compile
    # graph gives) is refused by the backward op, naming the way out.
    from zetile.ops import fx_to_tile
    gm = fx_to_tile.trace(lambda score, b, h, q_idx, kv_idx: score * 2.0, "score")
    mods = fx_to_tile.mods_string(fx_to_tile.translate(gm, "score"), None)
    out, lse, _ = torch.ops.zetile.flex_attention(
        q, k, v, torch.ones(1, 1, 1, dtype=torch.int32), torch.zeros(1, 1, 1, 1, dtype=torch.int32),
        None, None, [], [], 0.125, 1 << 30, 1 << 30, mods)
    with pytest.raises(NotImplementedError, match="without its derivative"):
        torch.ops.zetile.flex_attention_backward(
            do, q, k, v, out, lse, None, torch.ones(1, 1, 1, dtype=torch.int32),
            torch.zeros(1, 1, 1, 1, dtype=torch.int32), None, None, [], [], 0.125, 1 << 30,
            1 << 30, mods)
