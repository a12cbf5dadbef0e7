"""E3 of the templates: zetile.ops on the level_zero device, Intel's real
Level Zero driver (NEO) in AUB mode (no hardware: module builds run the
driver's IGC, allocations and launches go through the driver, kernels do
not compute, so nothing here looks at values). A GEMM with an epilogue and
a causal SDPA (fp16) by default; a FlexAttention forward over a causal
BlockMask (create_block_mask's kernel too) and the SDPA backward's three
kernels with ZETILE_SLOW_TESTS=1. A module the driver refuses, or a launch
it rejects, raises and fails the test."""
import json
import os

import pytest

from zt_testutil import AUB_ENV, neo_installed, run_python

SLOW = os.environ.get("ZETILE_SLOW_TESTS") == "1"

CODE = """
import json, numpy as np, zetile
from zetile import ops
dev = zetile.get_device()
assert dev.info["name"] == "level_zero:0" and dev.info["target"] == "pvc", dev.info
rng = np.random.default_rng(0)
shapes = {}
a = rng.standard_normal((128, 64)).astype(np.float16)
b = rng.standard_normal((64, 96)).astype(np.float16)
o = ops.gemm(a, b, bias=rng.standard_normal(96).astype(np.float16), activation="gelu")
shapes["gemm"] = [list(np.asarray(o).shape), str(np.asarray(o).dtype)]
q = rng.standard_normal((1, 2, 100, 64)).astype(np.float16)
o, lse = ops.scaled_dot_product_attention(q, q, q, is_causal=True, return_lse=True)
shapes["sdpa"] = [list(np.asarray(o).shape), str(np.asarray(o).dtype)]
if SLOW:
    def causal(b, h, q_idx, kv_idx):
        return q_idx >= kv_idx
    bm = ops.create_block_mask(causal, 1, 1, 200, 200, BLOCK_SIZE=128)
    q2 = rng.standard_normal((1, 2, 200, 64)).astype(np.float16)
    o2 = ops.flex_attention(q2, q2, q2, block_mask=bm)
    shapes["flex"] = [list(np.asarray(o2).shape), str(np.asarray(o2).dtype)]
    dq, dk, dv = ops.scaled_dot_product_attention_backward(q, q, q, q, o, lse, is_causal=True)
    shapes["sdpa_bwd"] = [list(np.asarray(dq).shape), str(np.asarray(dq).dtype)]
print("RESULT", json.dumps(shapes))
"""


@pytest.mark.skipif(not neo_installed(), reason="Debian's Level Zero driver (NEO) is not installed")
def test_templates_build_and_launch_on_level_zero_aub(tmp_path):
    env = {**AUB_ENV, "ZETILE_CACHE_DIR": str(tmp_path / "cache")}
    r = run_python(f"SLOW = {SLOW}\n" + CODE, env=env, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads([ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")][-1][7:])
    assert res["gemm"] == [[128, 96], "float16"]
    assert res["sdpa"] == [[1, 2, 100, 64], "float16"]
    if SLOW:
        assert res["flex"] == [[1, 2, 200, 64], "float16"]
        assert res["sdpa_bwd"] == [[1, 2, 100, 64], "float16"]
