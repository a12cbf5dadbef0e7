"""A block mask whose KV block is longer than the keys (Inductor passes
blocks of 2**30 when flex_attention gets no block mask): the template must
walk only the tiles the keys fill. It stepped through all 2**30 / BLOCK_N
tiles before, a launch of over 20 minutes (found by the torch plugin's tests)."""
import pytest

from zt_testutil import run_python

CODE = r"""
import torch
import zetile.ops as ops
from torch.nn.attention.flex_attention import BlockMask, flex_attention
torch.manual_seed(0)
B, H, L, D = 1, 2, 200, 64
q, k, v = (torch.randn(B, H, L, D) for _ in range(3))
kv_num = torch.ones(B, H, 1, dtype=torch.int32)
kv_idx = torch.zeros(B, H, 1, 1, dtype=torch.int32)
bm = BlockMask.from_kv_blocks(kv_num, kv_idx, BLOCK_SIZE=(256, 1 << 30))
out = ops.flex_attention(q, k, v, block_mask=bm)
err = (out - flex_attention(q, k, v)).abs().max().item()
print("ERR", err)
"""


def test_kv_block_longer_than_the_keys():
    pytest.importorskip("torch")
    r = run_python(CODE, timeout=300)  # the old walk did not finish in 20 minutes
    assert r.returncode == 0, r.stdout + r.stderr
    err = float([l for l in r.stdout.splitlines() if l.startswith("ERR")][0].split()[1])
    assert err < 1e-5, r.stdout
