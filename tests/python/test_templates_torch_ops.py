"""torch.ops.zetile.gemm / sdpa / flex_attention (zetile/ops/torch_ops.py):
results against torch's eager CPU ops, fake implementations and schemas
through torch.library.opcheck, and use inside torch.compile graphs."""
import math
import warnings

import pytest

import zetile

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import flex_attention as tfa  # noqa: E402
import zetile.ops as ops  # noqa: E402,F401 - registers the ops
from zetile.ops import fx_to_tile  # noqa: E402

warnings.filterwarnings("ignore", message=".*flex_attention called without torch.compile.*")
warnings.filterwarnings("ignore", message=".*return_lse is deprecated.*")


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


def _r(*s, seed=0):
    return torch.randn(*s, generator=torch.Generator().manual_seed(seed))


def test_gemm_op_and_opcheck():
    a, b, bias = _r(24, 40), _r(40, 16, seed=1), _r(16, seed=2)
    got = torch.ops.zetile.gemm(a, b, bias, "relu")
    ref = F.relu(a.double() @ b.double() + bias.double())
    assert (got.double() - ref).abs().max().item() < 1e-4
    torch.library.opcheck(torch.ops.zetile.gemm.default, (a, b, bias, "relu"))
    torch.library.opcheck(torch.ops.zetile.gemm.default, (_r(2, 8, 16), _r(16, 24)),
                          {"out_dtype": torch.bfloat16})


def test_sdpa_op_and_opcheck():
    q, k, v = _r(1, 4, 20, 64), _r(1, 2, 30, 64, seed=1), _r(1, 2, 30, 64, seed=2)
    out, lse = torch.ops.zetile.sdpa(q, k, v, None, True, None, True)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    assert (out - ref).abs().max().item() < 1e-5
    assert lse.shape == (1, 4, 20) and lse.dtype == torch.float32
    m = _r(20, 30, seed=3) > 0
    torch.library.opcheck(torch.ops.zetile.sdpa.default, (q, k, v, m, False, 0.2, True))


def _flex_args(q, score_mod, mask_mod, L, S, block=32):
    bm = tfa.create_block_mask(mask_mod, None, None, L, S, device="cpu", BLOCK_SIZE=block)
    st = fx_to_tile.from_mod(score_mod, "score")
    mt = fx_to_tile.from_mod(mask_mod, "mask")
    mods = fx_to_tile.mods_string(st, mt)
    return bm, (bm.kv_num_blocks, bm.kv_indices, bm.full_kv_num_blocks, bm.full_kv_indices,
                list(st.buffers), list(mt.buffers), 1 / math.sqrt(q.shape[-1]), block, block, mods)


def test_flex_op_and_opcheck():
    L = S = 70
    q, k, v = _r(1, 2, L, 64), _r(1, 2, S, 64, seed=1), _r(1, 2, S, 64, seed=2)
    doc = torch.tensor([0] * 30 + [1] * 40)
    table = _r(2, 2 * S, seed=3)

    def doc_mask(b, h, qi, kv):
        return (doc[qi] == doc[kv]) & (qi >= kv)

    def rel(score, b, h, qi, kv):
        return score + table[h, qi - kv + S]

    bm, args = _flex_args(q, rel, doc_mask, L, S)
    out, lse2, mx = torch.ops.zetile.flex_attention(q, k, v, *args)
    ref, ref_lse = tfa.flex_attention(q, k, v, score_mod=rel, block_mask=bm, return_lse=True)
    assert (out - ref).abs().max().item() < 1e-5
    assert (lse2 * math.log(2) - ref_lse).abs().max().item() < 1e-4     # the HOP's log2 units
    assert (mx <= lse2 + 1e-5).all()
    torch.library.opcheck(torch.ops.zetile.flex_attention.default, (q, k, v, *args))


def test_mods_string_refuses_foreign_code():
    bad = '{"score": ["    import os"], "mask": null}'
    with pytest.raises(ValueError, match="not a generated flex mod line"):
        fx_to_tile.mods_from_string(bad, 0, 0)


def test_ops_inside_torch_compile():
    # aot_eager traces through the fake implementation into a graph and runs
    # it (Inductor itself is the torch plugin's, issue 14, and costs ~15 s).
    def f(a, b, bias):
        return torch.ops.zetile.gemm(a, b, bias, "silu") * 2.0

    a, b, bias = _r(16, 32), _r(32, 24, seed=1), _r(24, seed=2)
    got = torch.compile(f, fullgraph=True, backend="aot_eager")(a, b, bias)
    ref = 2.0 * F.silu(a.double() @ b.double() + bias.double())
    assert (got.double() - ref).abs().max().item() < 1e-4
