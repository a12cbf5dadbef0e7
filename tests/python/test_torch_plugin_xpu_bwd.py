"""The plugin's rewrite of the xpu fused-attention pair (issue 14):
aten._scaled_dot_product_fused_attention_overrideable and its _backward.
No Intel GPU here and the ops have no CPU kernel, so the joint graph is
traced with their fake implementations (make_fx over torch.autograd.grad:
the forward, its saved outputs and the backward, as a training graph holds
them), rewritten by zetile.inductor.sdpa.rewrite with CPU routed to zetile
(ZETILE_INDUCTOR=cpu), and the rewritten graph, which no longer calls an
xpu op, then runs on CPU: its gradients must equal eager math SDPA's. What
this does not show: that Inductor on an xpu device builds these graphs
(fused op chosen, arguments as here), nor anything on hardware."""
import logging

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch.fx.experimental.proxy_tensor import make_fx  # noqa: E402

aten = torch.ops.aten
FWD = getattr(aten, "_scaled_dot_product_fused_attention_overrideable", None)
BWD = getattr(aten, "_scaled_dot_product_fused_attention_overrideable_backward", None)
pytestmark = pytest.mark.skipif(FWD is None or BWD is None,
                                reason="torch without the overrideable fused-attention ops")


@pytest.fixture(autouse=True)
def plugin(monkeypatch):
    monkeypatch.setenv("ZETILE_INDUCTOR", "cpu")
    import zetile
    import zetile.inductor
    zetile.set_device("cpu")
    zetile.inductor.install()       # registers torch.ops.zetile.*
    yield


def _joint(causal, scale, bias=None):
    """A function whose trace is the overrideable op, then its backward
    (through autograd's formula for it)."""
    def f(q, k, v, do, *b):
        out = FWD.default(q, k, v, b[0] if b else None, 0.0, causal, False, scale=scale)[0]
        return torch.autograd.grad(out, (q, k, v), do)
    return f


def _trace(f, *args):
    from torch._subclasses.fake_tensor import FakeTensorMode
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    fake = [mode.from_tensor(a).requires_grad_(a.requires_grad) for a in args]
    with mode:
        return make_fx(f, tracing_mode="real")(*fake)


def _targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


def _qkv(B, Hq, Hkv, L, S, E, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(B, Hq, L, E, generator=g).requires_grad_(),
            torch.randn(B, Hkv, S, E, generator=g).requires_grad_(),
            torch.randn(B, Hkv, S, E, generator=g).requires_grad_(),
            torch.randn(B, Hq, L, E, generator=g))


@pytest.mark.parametrize("shape, causal, scale", [
    ((1, 2, 2, 45, 70, 64), True, None),     # Lq != Lk, causal
    ((2, 4, 2, 40, 33, 64), False, 0.2),     # GQA, scale
])
def test_overrideable_pair_rewritten_and_runs(shape, causal, scale):
    from zetile.inductor import sdpa
    q, k, v, do = _qkv(*shape)
    gm = _trace(_joint(causal, scale), q, k, v, do)
    before = _targets(gm)
    assert FWD.default in before and BWD.default in before, gm.graph
    assert sdpa.rewrite(gm.graph) == 2
    gm.graph.lint()
    gm.recompile()
    after = _targets(gm)
    assert FWD.default not in after and BWD.default not in after, gm.graph
    assert torch.ops.zetile.sdpa.default in after
    assert torch.ops.zetile.sdpa_backward.default in after
    got = gm(q.detach(), k.detach(), v.detach(), do)
    gqa = shape[1] != shape[2]
    ref = torch.autograd.grad(
        F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=scale, enable_gqa=gqa),
        (q, k, v), do)
    for name, g, r in zip("qkv", got, ref):
        torch.testing.assert_close(g, r, atol=2e-5, rtol=1e-4, msg=f"d{name}")


def test_overrideable_pair_with_bias_stays_torch(caplog):
    """With an attn_bias neither graph is taken (zetile's backward has no bias
    gradient, and each graph must decide alone): both reasons logged."""
    from zetile.inductor import sdpa
    q, k, v, do = _qkv(1, 2, 2, 16, 16, 64)
    bias = torch.randn(1, 2, 16, 16)
    gm = _trace(_joint(False, None, bias), q, k, v, do, bias)
    with caplog.at_level(logging.DEBUG, logger="torch._inductor.zetile"):
        assert sdpa.rewrite(gm.graph) == 0
    assert FWD.default in _targets(gm) and BWD.default in _targets(gm)
    assert caplog.text.count("attn_bias in a training graph") == 2, caplog.text


def test_overrideable_backward_reading_bias_grad_stays_torch(caplog):
    """A backward node whose grad_attn_bias output is read is left alone."""
    from zetile.inductor import sdpa
    q, k, v, do = _qkv(1, 2, 2, 16, 16, 64)
    lse = torch.randn(1, 2, 16)
    e = torch.empty(0)

    def f(do, q, k, v, o, lse):
        r = BWD.default(do, q, k, v, e, [True, True, True, True], o, lse, e, e, 16, 16, 0.0,
                        False, e, e, scale=None)
        return r[0], r[3]
    gm = _trace(f, do, q.detach(), k.detach(), v.detach(), do, lse)
    with caplog.at_level(logging.DEBUG, logger="torch._inductor.zetile"):
        assert sdpa.rewrite(gm.graph) == 0
    assert "grad_attn_bias" in caplog.text, caplog.text
