"""zetile.ops.flex_attention / create_block_mask (the attention template with
mods translated by zetile/ops/fx_to_tile.py) on the CPU target against
torch.nn.attention.flex_attention run eagerly on CPU (E4), with the standard
FlexAttention examples; lengths are not multiples of the block sizes."""
import warnings

import numpy as np
import pytest

import zetile
import zetile.language as tl

torch = pytest.importorskip("torch")
from torch.nn.attention import flex_attention as tfa  # noqa: E402
import zetile.ops as ops  # noqa: E402

warnings.filterwarnings("ignore", message=".*flex_attention called without torch.compile.*")
warnings.filterwarnings("ignore", message=".*return_lse is deprecated.*")

L, S = 200, 200
DOC = torch.tensor([0] * 50 + [1] * 90 + [2] * 60)          # document ids, a captured buffer
REL = torch.randn(2, 2 * S, generator=torch.Generator().manual_seed(7))   # (H, 2S) bias table


def causal(b, h, q, kv):
    return q >= kv


def sliding(b, h, q, kv):
    return (q >= kv) & (q - kv <= 40)


def prefix_lm(b, h, q, kv):
    return (kv <= 30) | (q >= kv)


def document(b, h, q, kv):
    return (DOC[q] == DOC[kv]) & (q >= kv)


def alibi(score, b, h, q, kv):
    return score + torch.exp2(-((h + 1) * 8.0 / 2)) * (kv - q)


def softcap(score, b, h, q, kv):
    return 20.0 * torch.tanh(score / 20.0)


def relative_bias(score, b, h, q, kv):
    return score + REL[h, q - kv + S]


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


def _qkv(B=1, Hq=2, Hkv=2, Lq=L, Lk=S, E=64, seed=0, dt=torch.float32):
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g).to(dt)  # noqa: E731
    return r(B, Hq, Lq, E), r(B, Hkv, Lk, E), r(B, Hkv, Lk, E)


def _close(a, b, tol=2e-5):
    err = (a.float() - b.float()).abs().max().item()
    assert err <= tol * max(b.abs().max().item(), 1.0), err


@pytest.mark.parametrize("mask_mod", [causal, sliding, prefix_lm, document])
def test_mask_mods(mask_mod):
    q, k, v = _qkv()
    bm = ops.create_block_mask(mask_mod, None, None, L, S, BLOCK_SIZE=64)
    tbm = tfa.create_block_mask(mask_mod, None, None, L, S, device="cpu", BLOCK_SIZE=64)
    # zetile's block tables equal torch's.
    for name in ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices"):
        ours, theirs = getattr(bm, name), getattr(tbm, name)
        n = theirs.shape[-1]
        if name.endswith("indices"):   # only the listed prefix is meaningful
            num = getattr(tbm, name.replace("indices", "num_blocks"))
            for r in range(num.shape[-1]):
                c = int(num[0, 0, r])
                assert ours[0, 0, r, :c].tolist() == theirs[0, 0, r, :c].tolist(), (name, r)
        else:
            assert ours.tolist() == theirs.tolist(), name
        assert ours.shape[-1] == n
    ref = tfa.flex_attention(q, k, v, block_mask=tbm)
    _close(ops.flex_attention(q, k, v, block_mask=bm), ref)
    _close(ops.flex_attention(q, k, v, block_mask=tbm), ref)      # torch's BlockMask too


@pytest.mark.parametrize("score_mod", [alibi, softcap, relative_bias])
def test_score_mods(score_mod):
    q, k, v = _qkv(seed=1)
    _close(ops.flex_attention(q, k, v, score_mod=score_mod),
           tfa.flex_attention(q, k, v, score_mod=score_mod))


def test_score_and_mask_with_buffers_lse_and_gqa():
    # Both mods capture a tensor (two buffer slots); GQA; Lq != Lk; lse.
    q, k, v = _qkv(B=2, Hq=4, Hkv=2, Lq=L, Lk=S, seed=2)
    rel = torch.randn(4, 2 * S, generator=torch.Generator().manual_seed(3))

    def bias4(score, b, h, qi, kv):
        return score + rel[h, qi - kv + S]

    tbm = tfa.create_block_mask(document, 2, 4, L, S, device="cpu")
    bm = ops.create_block_mask(document, 2, 4, L, S)
    out, lse = ops.flex_attention(q, k, v, score_mod=bias4, block_mask=bm, enable_gqa=True,
                                  return_lse=True)
    r_out, r_lse = tfa.flex_attention(q, k, v, score_mod=bias4, block_mask=tbm, enable_gqa=True,
                                      return_lse=True)
    _close(out, r_out)
    assert (lse - r_lse).abs().max().item() < 1e-4
    # The HOP's convention: lse in log2 units.
    _, lse2, _ = ops.flex_attention_fwd(q, k, v, bias4, bm, enable_gqa=True)
    assert (lse2 * np.log(2.0) - r_lse).abs().max().item() < 1e-4


def test_lq_ne_lk_causal_and_alibi():
    q, k, v = _qkv(Lq=77, Lk=150, seed=4)
    tbm = tfa.create_block_mask(causal, None, None, 77, 150, device="cpu", BLOCK_SIZE=32)
    _close(ops.flex_attention(q, k, v, score_mod=alibi, block_mask=tbm),
           tfa.flex_attention(q, k, v, score_mod=alibi, block_mask=tbm))


def test_head_dependent_mask_and_fully_masked_rows():
    def mm(b, h, q, kv):
        return (q % 7 != 3) & ((h == 0) | (kv < q + 1))

    q, k, v = _qkv(seed=5)
    tbm = tfa.create_block_mask(mm, 1, 2, L, S, device="cpu", BLOCK_SIZE=64)
    out, lse = ops.flex_attention(q, k, v, block_mask=tbm, return_lse=True)
    r_out, r_lse = tfa.flex_attention(q, k, v, block_mask=tbm, return_lse=True)
    _close(out, r_out)
    rows = torch.arange(L) % 7 == 3
    assert torch.equal(out[:, :, rows], torch.zeros_like(out[:, :, rows]))
    assert torch.isinf(lse[:, :, rows]).all() and (lse[:, :, rows] < 0).all()
    assert torch.equal(torch.isinf(lse), torch.isinf(r_lse))
    fin = ~rows
    assert (lse[:, :, fin] - r_lse[:, :, fin]).abs().max().item() < 1e-4


def test_low_precision():
    q, k, v = _qkv(seed=6, dt=torch.bfloat16)
    tbm = tfa.create_block_mask(sliding, None, None, L, S, device="cpu")
    ref = tfa.flex_attention(q.float(), k.float(), v.float(), score_mod=softcap, block_mask=tbm)
    got = ops.flex_attention(q, k, v, score_mod=softcap, block_mask=tbm)
    assert got.dtype == torch.bfloat16
    _close(got, ref, 4e-2)


@zetile.jit
def jit_causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


@zetile.jit
def jit_softcap(score, b, h, q_idx, kv_idx):
    t = tl.exp2(-2.8853900817779268 * tl.abs(score / 20.0))
    r = (1.0 - t) / (1.0 + t)
    return 20.0 * tl.where(score < 0, -r, r)


def test_jit_mods():
    q, k, v = _qkv(seed=7)
    bm = ops.create_block_mask(jit_causal, None, None, L, S)
    tbm = tfa.create_block_mask(causal, None, None, L, S, device="cpu")
    assert bm.kv_num_blocks.tolist() == tbm.kv_num_blocks.tolist()
    _close(ops.flex_attention(q, k, v, score_mod=jit_softcap, block_mask=bm),
           tfa.flex_attention(q, k, v, score_mod=softcap, block_mask=tbm))


def test_untranslatable_op_is_named():
    def uses_cumsum(score, b, h, q, kv):
        return score + torch.cumsum(kv, 0)

    q, k, v = _qkv(Lq=16, Lk=16)
    with pytest.raises(ops.FxTranslationError, match="cumsum"):
        ops.flex_attention(q, k, v, score_mod=uses_cumsum)


def test_translated_source_is_a_jit_function():
    from zetile.ops import fx_to_tile
    tm = fx_to_tile.from_mod(document, "mask")
    assert isinstance(tm.fn, zetile.JITFunction)
    assert "tl.load(B0" in tm.source and len(tm.buffers) == 1
    assert tm.buffers[0].shape == DOC.shape


def test_light_tracer_matches_make_fx():
    # The light tracer (no torch._dynamo import) and make_fx give the same
    # generated code for the standard mods (up to operand order of a product).
    from zetile.ops import fx_to_tile
    for mod, kind in [(causal, "mask"), (sliding, "mask"), (prefix_lm, "mask"),
                      (document, "mask"), (alibi, "score"), (relative_bias, "score")]:
        fast = fx_to_tile.translate(fx_to_tile._fast_trace(mod, kind), kind)
        ref = fx_to_tile.translate(fx_to_tile._make_fx_trace(mod, kind), kind)
        assert fast.body == ref.body, mod.__name__
        assert [b is not None for b in fast.buffers] == [b is not None for b in ref.buffers]


def test_python_control_flow_is_refused_clearly():
    def branchy(score, b, h, q, kv):
        if q > 3:        # data-dependent Python control flow: neither tracer can follow it
            return score
        return score * 2

    q, k, v = _qkv(Lq=16, Lk=16)
    with pytest.raises(ops.FxTranslationError, match="cannot trace"):
        ops.flex_attention(q, k, v, score_mod=branchy)
