"""The attention template's decode path (short queries over a long KV: the
KV length split into shares by separate programs, merged by
attn_split_combine) on the CPU target against torch's eager flex_attention
and scaled_dot_product_attention (E4): query lengths 1-16, KV lengths that
are not multiples of the blocks, GQA, block masks with partial and full
blocks, score mods with a captured tensor, lse, and fully masked rows."""
import os
import warnings

import pytest

import zetile

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import flex_attention as tfa  # noqa: E402
import zetile.ops as ops  # noqa: E402
from zetile.ops import attention as attn  # noqa: E402

warnings.filterwarnings("ignore", message=".*flex_attention called without torch.compile.*")
warnings.filterwarnings("ignore", message=".*return_lse is deprecated.*")

S = 1000                     # KV length: 7.8 blocks of 128
OFF = 600                    # the queries sit at positions OFF.. of the sequence
BIAS = torch.randn(4, S, generator=torch.Generator().manual_seed(3))   # (H, S) captured


def decode_causal(b, h, q, kv):
    return kv <= q + OFF


def decode_window(b, h, q, kv):
    return (kv <= q + OFF) & (q + OFF - kv < 300)


def bias_mod(score, b, h, q, kv):
    return score + BIAS[h, kv]


def softcap(score, b, h, q, kv):
    return 30.0 * torch.tanh(score / 30.0)


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


def _qkv(B, Hq, Hkv, L, E=64, dt=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g).to(dt)  # noqa: E731
    return r(B, Hq, L, E), r(B, Hkv, S, E), r(B, Hkv, S, E)


def _close(a, b, tol):
    err = (a.float() - b.float()).abs().max().item()
    assert err <= tol * max(b.abs().max().item(), 1.0), err


SLOW = os.environ.get("ZETILE_SLOW_TESTS") == "1"
_slow = pytest.mark.skipif(not SLOW, reason="ZETILE_SLOW_TESTS=1")


@pytest.mark.parametrize("L, mask_mod, score_mod, split", [
    (1, decode_causal, None, 4),
    (4, decode_window, bias_mod, 3),
    pytest.param(16, decode_causal, softcap, 7, marks=_slow),
    pytest.param(7, None, bias_mod, 5, marks=_slow),
])
def test_flex_decode_matches_torch(L, mask_mod, score_mod, split):
    q, k, v = _qkv(2, 4, 2, L)
    bm = tbm = None
    if mask_mod is not None:
        bm = ops.create_block_mask(mask_mod, None, None, L, S)
        tbm = tfa.create_block_mask(mask_mod, None, None, L, S, device="cpu")
    ref, ref_lse = tfa.flex_attention(q, k, v, score_mod=score_mod, block_mask=tbm,
                                      enable_gqa=True, return_lse=True)
    launch = ops.flex_attention_fwd(q, k, v, score_mod, bm, enable_gqa=True, split_kv=split,
                                    plan=True)
    assert isinstance(launch, attn.SplitKVLaunch) and launch.grid[2] == split
    out, lse = ops.flex_attention(q, k, v, score_mod=score_mod, block_mask=bm, enable_gqa=True,
                                  return_lse=True, split_kv=split)
    _close(out, ref, 2e-5)
    _close(lse, ref_lse, 2e-5)


def test_more_shares_than_blocks_and_masked_rows():
    # 16 shares of a block mask listing at most 8 blocks (empty shares), and a
    # query row whose every key is masked: output 0, lse -inf.
    L = 3
    q, k, v = _qkv(1, 2, 2, L, seed=1)

    def mask(b, h, qi, kv):
        return (qi != 1) & (kv <= qi + OFF)
    bm = ops.create_block_mask(mask, None, None, L, S)
    tbm = tfa.create_block_mask(mask, None, None, L, S, device="cpu")
    out, lse = ops.flex_attention(q, k, v, block_mask=bm, return_lse=True, split_kv=16)
    ref = tfa.flex_attention(q, k, v, block_mask=tbm)
    _close(out, ref, 2e-5)
    assert torch.all(out[:, :, 1] == 0)
    assert torch.all(torch.isneginf(lse[:, :, 1])) and torch.isfinite(lse[:, :, 0]).all()


def test_sdpa_decode_split_automatically():
    # One batch*head row and a short query: split_kv_for splits (up to 2 per
    # compute unit), and the result is torch's SDPA (causal is top-left, so
    # the float-mask form of decode causality is used; fp16 too).
    assert attn.split_kv_for(1, S, 1, {"BLOCK_M": 16, "BLOCK_N": 32}, programs=8) == 8
    assert attn.split_kv_for(1, S, 8, {"BLOCK_M": 16, "BLOCK_N": 32}, programs=8) == 1
    assert attn.split_kv_for(64, S, 1, {"BLOCK_M": 16, "BLOCK_N": 32}, programs=8) == 1
    assert attn.split_kv_for(1, 64, 1, {"BLOCK_M": 16, "BLOCK_N": 32}, programs=8) == 1
    for dt, tol in ((torch.float32, 2e-5), (torch.float16, 1e-2)):
        q, k, v = _qkv(1, 1, 1, 2, dt=dt, seed=2)
        pos = torch.arange(S)[None, :] <= (torch.arange(2)[:, None] + OFF)
        mask = torch.where(pos, 0.0, float("-inf")).to(dt)
        plan = ops.scaled_dot_product_attention(q, k, v, attn_mask=mask, plan=True)
        expect = attn.split_kv_for(2, S, 1, {"BLOCK_M": 16, "BLOCK_N": 32})
        assert isinstance(plan, attn.SplitKVLaunch) == (expect > 1)
        out, lse = ops.scaled_dot_product_attention(q, k, v, attn_mask=mask, return_lse=True)
        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                             attn_mask=mask.float())
        _close(out, ref, tol)
        s = (q.float() @ k.float().transpose(-1, -2)) / 8.0 + mask.float()
        _close(lse, torch.logsumexp(s, -1), 1e-4 if dt == torch.float32 else 1e-2)


def test_split_kv_refusals():
    q, k, v = _qkv(1, 1, 1, 2)
    with pytest.raises(ValueError, match="split_kv must be"):
        ops.flex_attention(q, k, v, split_kv=0)
    with pytest.raises(ValueError, match="max scores"):
        ops.flex_attention_fwd(q, k, v, write_max=True, split_kv=2)
