"""E5 of FlexAttention examples: the pvc SPIR-V of zetile.ops.flex_attention
run on Intel's OpenCL CPU runtime (opencl:cpu), fp16, for the examples not
covered there before: ALiBi (a score mod reading a captured slopes tensor)
over a causal block mask, and a sliding window block mask. Lengths 200 (not
a multiple of the 128-blocks). Compared with the CPU target's result for
the same inputs and with a dense numpy reference.

Slow (ZETILE_SLOW_TESTS=1): the block-sparse kernels' pvc compiles and the
OpenCL CPU runtime take minutes here."""
import os

import numpy as np
import pytest

from zt_testutil import opencl_cpu_or_skip, run_result

SLOW = os.environ.get("ZETILE_SLOW_TESTS") == "1"

pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py

B, H, L, E, WINDOW = 1, 2, 200, 64, 48
SLOPES = [0.5, 0.25]

CASES = f"""
import numpy as np, torch
from zetile import ops
B, H, L, E, WINDOW = {B}, {H}, {L}, {E}, {WINDOW}
slopes = torch.tensor({SLOPES})
def alibi(score, b, h, q_idx, kv_idx):
    return score + slopes[h] * (kv_idx - q_idx)
def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx
def sliding(b, h, q_idx, kv_idx):
    return (q_idx >= kv_idx) & (q_idx - kv_idx < WINDOW)
def inputs():
    rng = np.random.default_rng(7)
    return [rng.standard_normal((B, H, L, E)).astype(np.float16) for _ in range(3)]
def run_all():
    q, k, v = inputs()
    out = {{}}
    bm = ops.create_block_mask(causal, 1, 1, L, L, BLOCK_SIZE=128)
    out["alibi_causal"] = np.asarray(ops.flex_attention(q, k, v, score_mod=alibi, block_mask=bm))
    bm = ops.create_block_mask(sliding, 1, 1, L, L, BLOCK_SIZE=128)
    out["sliding"] = np.asarray(ops.flex_attention(q, k, v, block_mask=bm))
    return {{n: o.astype(np.float32) for n, o in out.items()}}
"""

E5_CODE = CASES + """
import json, zetile
assert zetile.get_device().info["name"] == "opencl:cpu"
assert zetile.get_device().info["target"] == "pvc"
print("RESULT", json.dumps({n: o.tolist() for n, o in run_all().items()}))
"""


def _reference(q, k, v, name):
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    s = q @ k.transpose(0, 1, 3, 2) / np.sqrt(E)
    i = np.arange(L)[:, None]
    j = np.arange(L)[None, :]
    keep = i >= j
    if name == "alibi_causal":
        s = s + np.asarray(SLOPES)[None, :, None, None] * (j - i)
    else:
        keep = keep & (i - j < WINDOW)
    s = np.where(keep, s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


@pytest.mark.skipif(not SLOW, reason="ZETILE_SLOW_TESTS=1 (the OpenCL CPU runtime takes minutes)")
def test_flex_examples_e5_fp16_alibi_and_sliding_window():
    opencl_cpu_or_skip()
    got = run_result(E5_CODE, env={"ZETILE_OPENCL_TARGET": "pvc"}, timeout=2400)
    ns = {}
    exec(CASES, ns)
    cpu = ns["run_all"]()           # the CPU target, this process
    q, k, v = ns["inputs"]()
    for name in ("alibi_causal", "sliding"):
        g = np.asarray(got[name], np.float32)
        ref = _reference(q, k, v, name)
        print(f"{name}: max |opencl:cpu - cpu| {np.abs(g - cpu[name]).max():.3g}, "
              f"max |opencl:cpu - reference| {np.abs(g - ref).max():.3g}")
        assert np.abs(g - cpu[name]).max() < 2e-3, (name, np.abs(g - cpu[name]).max())
        assert np.abs(g - ref).max() < 5e-3, (name, np.abs(g - ref).max())
    # The two examples differ (the comparison sees the mods).
    assert np.abs(np.asarray(got["alibi_causal"]) - np.asarray(got["sliding"])).max() > 0.1
