"""The torch.compile plugin with SDPA dropout (issue 14): with
ZETILE_INDUCTOR=cpu, F.scaled_dot_product_attention(..., dropout_p=p) in a
compiled training step is rewritten before AOT autograd
(zetile/inductor/sdpa_dropout.py) to torch.ops.zetile.sdpa_dropout, whose
backward graph calls sdpa_dropout_backward with the forward's seed; the seed
is a random op of the graph (Inductor's generator, seeded by torch's).

What is checked: the generated code calls both ops; the forward and the
backward read one seed; loss and gradients equal zetile's eager op (whose
gradients equal torch autograd on the same mask:
test_templates_sdpa_dropout_bwd.py) with that seed; each call draws a new
seed and torch.manual_seed repeats them; the kept fraction is 1 - p; with
fallback_random=True or ZETILE_INDUCTOR_DROPOUT=off Inductor keeps it, the
reason logged."""
import logging

import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

DROP = "torch.ops.zetile.sdpa_dropout.default("
DROP_BWD = "torch.ops.zetile.sdpa_dropout_backward.default("


@pytest.fixture(autouse=True)
def plugin(monkeypatch):
    monkeypatch.setenv("ZETILE_INDUCTOR", "cpu")
    monkeypatch.delenv("ZETILE_INDUCTOR_DROPOUT", raising=False)
    import zetile
    import zetile.inductor
    zetile.set_device("cpu")
    zetile.inductor.install()
    with torch._inductor.config.patch(fx_graph_cache=False, autotune_local_cache=False,
                                      freezing=False):
        yield
    torch._dynamo.reset()


@pytest.fixture
def seeds(monkeypatch):
    """The seeds the ops read at run time, as (op, seed)."""
    from zetile.ops import torch_ops
    got = []
    orig = torch_ops._seed_int

    def record(op, seed):
        s = orig(op, seed)
        got.append((op, s))
        return s
    monkeypatch.setattr(torch_ops, "_seed_int", record)
    return got


def _inputs(L=40, S=48, E=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(1, 2, n, E, generator=g) for n in (L, S, S)]


def _step(fn, inputs):
    from torch._inductor.utils import run_and_get_code
    torch._dynamo.reset()
    leaves = [x.clone().requires_grad_() for x in inputs]
    cf = torch.compile(fn, fullgraph=True)

    def step():
        loss = cf(*leaves)
        loss.backward()
        return loss
    loss, code = run_and_get_code(step)
    return loss, [x.grad for x in leaves], "\n".join(code)


def _loss(q, k, v):
    return (F.scaled_dot_product_attention(q, k, v, dropout_p=0.3, is_causal=True) ** 2).sum()


def test_training_step_runs_zetile_dropout_forward_and_backward(seeds):
    inputs = _inputs()
    loss, grads, code = _step(_loss, inputs)
    assert DROP in code and DROP_BWD in code, code[-3000:]
    # No decomposed dropout left: Inductor's own random draw of the mask.
    assert "inductor_random" not in code
    (op_f, s_f), (op_b, s_b) = seeds
    assert (op_f, op_b) == ("sdpa_dropout", "sdpa_dropout_backward") and s_f == s_b
    leaves = [x.clone().requires_grad_() for x in inputs]
    out, _ = torch.ops.zetile.sdpa(*leaves, None, True, None, False, 0.3, s_f)
    ref = (out ** 2).sum()
    ref.backward()
    torch.testing.assert_close(loss, ref)
    for g, x in zip(grads, leaves):
        torch.testing.assert_close(g, x.grad)
    # Not the undropped result (the check can fail).
    plain = [x.clone().requires_grad_() for x in inputs]
    assert not torch.allclose(loss, (F.scaled_dot_product_attention(*plain, is_causal=True) ** 2).sum())


def test_each_call_draws_a_seed_and_manual_seed_repeats_them(seeds):
    q, k, v = _inputs()
    torch._dynamo.reset()
    cf = torch.compile(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=0.5),
                       fullgraph=True)
    with torch.no_grad():
        torch.manual_seed(7)
        a1, a2 = cf(q, k, v), cf(q, k, v)
        torch.manual_seed(7)
        b1 = cf(q, k, v)
    s = [x for _, x in seeds]
    assert len(s) == 3 and s[0] != s[1] and s[0] == s[2]
    assert not torch.equal(a1, a2)
    torch.testing.assert_close(a1, b1, rtol=0, atol=0)


def test_kept_fraction_is_one_minus_p():
    # q = k = 0: uniform softmax; v = identity: out[.., i, j] is weight (i, j).
    L, S, p = 64, 64, 0.25
    q = torch.zeros(2, 2, L, S)
    v = torch.eye(S).expand(2, 2, S, S).contiguous()
    torch._dynamo.reset()
    cf = torch.compile(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=p),
                       fullgraph=True)
    with torch.no_grad():
        out = cf(q, q, v)
    kept = (out != 0).float().mean().item()
    assert abs(kept - (1 - p)) < 0.02, kept        # 16384 draws: sd 0.0034
    vals = out[out != 0]
    torch.testing.assert_close(vals, torch.full_like(vals, 1 / (S * (1 - p))))


@pytest.mark.parametrize("how", ["fallback_random", "env_off"])
def test_left_to_inductor_with_reason(how, monkeypatch, caplog, seeds):
    caplog.set_level(logging.INFO, logger="torch._inductor.zetile")
    if how == "env_off":
        monkeypatch.setenv("ZETILE_INDUCTOR_DROPOUT", "off")
    from torch._inductor.utils import run_and_get_code
    torch._dynamo.reset()
    # Inference only (a training graph would compile Inductor's backward too).
    with torch._inductor.config.patch(fallback_random=how == "fallback_random"), torch.no_grad():
        loss, code = run_and_get_code(torch.compile(_loss, fullgraph=True), *_inputs())
    code = "\n".join(code)
    assert DROP not in code and not seeds
    want = "fallback_random" if how == "fallback_random" else "ZETILE_INDUCTOR_DROPOUT=off"
    assert any("dropout_p > 0" in r.getMessage() and want in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]
    assert torch.isfinite(loss)


def test_op_checks_its_seed():
    q, k, v = _inputs()
    with pytest.raises(ValueError, match="one-element integer"):
        torch.ops.zetile.sdpa_dropout(q, k, v, None, False, None, False, 0.3,
                                      torch.tensor([1.5]))
