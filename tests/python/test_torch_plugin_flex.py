"""FlexAttention through zetile's torch.compile plugin (issue 14): the
flex_attention HOP becomes torch.ops.zetile.flex_attention, its mods
translated to tile IR by fx_to_tile, for torch's standard mods at lengths
that are not multiples of 128; outputs equal eager. A mod zetile cannot
translate falls back to Inductor's own CPU kernel with the reason logged."""
import logging

import pytest

torch = pytest.importorskip("torch")
from torch.nn.attention.flex_attention import create_block_mask, flex_attention  # noqa: E402

from torch_plugin_util import compiled  # noqa: E402

FLEX = "torch.ops.zetile.flex_attention.default("
L = 200          # two 128-blocks, the second partial
H = 4
DOC = torch.tensor([0] * 70 + [1] * 90 + [2] * 40, dtype=torch.int64)


def causal(b, h, q, kv):
    return q >= kv


def sliding(b, h, q, kv):
    return (q >= kv) & (q - kv <= 48)


def prefix_lm(b, h, q, kv):
    return (kv <= 30) | (q >= kv)


def document(b, h, q, kv):
    return (DOC[q] == DOC[kv]) & (q >= kv)


def alibi(score, b, h, q, kv):
    return score + torch.exp2(-((h + 1) * 8.0 / H)) * (kv - q)


def softcap(score, b, h, q, kv):
    return 20.0 * torch.tanh(score / 20.0)


@pytest.fixture(autouse=True)
def plugin(monkeypatch):
    monkeypatch.setenv("ZETILE_INDUCTOR", "cpu")
    import zetile.inductor
    zetile.inductor.install()
    with torch._inductor.config.patch(fx_graph_cache=False, autotune_local_cache=False):
        yield
    torch._dynamo.reset()


def _mask(fn, Lq=L, Lk=L):
    return create_block_mask(fn, None, None, Lq, Lk, device="cpu")


def _qkv(B=1, Hq=H, Hkv=H, Lq=L, Lk=L, E=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(B, Hq, Lq, E, generator=g), torch.randn(B, Hkv, Lk, E, generator=g),
            torch.randn(B, Hkv, Lk, E, generator=g))


def test_standard_mods():
    q, k, v = _qkv()
    masks = {n: _mask(f) for n, f in (("causal", causal), ("sliding", sliding),
                                       ("prefix_lm", prefix_lm), ("document", document))}

    def f(q, k, v):
        out = {n: flex_attention(q, k, v, block_mask=bm) for n, bm in masks.items()}
        out["alibi_causal"] = flex_attention(q, k, v, score_mod=alibi, block_mask=masks["causal"])
        out["softcap"] = flex_attention(q, k, v, score_mod=softcap)       # no block mask
        return out

    got, code = compiled(f, q, k, v)
    with torch.no_grad():
        want = f(q, k, v)            # eager flex (the unfused reference)
    for n in want:
        torch.testing.assert_close(got[n], want[n], atol=2e-5, rtol=2e-5, msg=n)
    assert code.count(FLEX) == 6, code
    assert "cpp_fused_flex_attention" not in code


def test_gqa_lse_and_unequal_lengths():
    """GQA with Lq != Lk and return_lse=True (which Inductor's own CPU flex
    lowering refuses); the document mask reads its captured table."""
    q, k, v = _qkv(B=2, Hq=4, Hkv=2, Lq=150, Lk=200)
    doc = torch.arange(200) // 64
    bm = create_block_mask(lambda b, h, qi, ki: (doc[qi] == doc[ki]) | (ki < 16), None, None,
                           150, 200, device="cpu")

    def f(q, k, v):
        return flex_attention(q, k, v, score_mod=softcap, block_mask=bm, enable_gqa=True,
                              return_lse=True)

    (out, lse), code = compiled(f, q, k, v)
    with torch.no_grad():
        want_out, want_lse = f(q, k, v)
    torch.testing.assert_close(out, want_out, atol=2e-5, rtol=2e-5)
    torch.testing.assert_close(lse, want_lse, atol=2e-5, rtol=2e-5)
    assert code.count(FLEX) == 1, code


def test_untranslatable_mod_falls_back_with_reason(caplog):
    def uses_atan(score, b, h, q, kv):       # no tile-IR translation for atan (yet)
        return 4.0 * torch.atan(score / 4.0)

    q, k, v = _qkv(Lq=64, Lk=64)

    def f(q, k, v):
        return flex_attention(q, k, v, score_mod=uses_atan)

    with caplog.at_level(logging.INFO, logger="torch._inductor.zetile"):
        got, code = compiled(f, q, k, v)
    with torch.no_grad():
        want = f(q, k, v)
    torch.testing.assert_close(got, want, atol=2e-5, rtol=2e-5)
    assert FLEX not in code
    msgs = [r.getMessage() for r in caplog.records if r.name == "torch._inductor.zetile"]
    assert any(m.startswith("flex_attention falls back to Inductor:") and "atan" in m
               for m in msgs), msgs
