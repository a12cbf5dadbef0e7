"""The Xe compile-time rewrites after zetile's lane distribution
(lowering/xe/xe_lane_tidy.c, xe_lane_moves.c) change how the module gets to
SPIR-V, not what it computes: the pvc SPIR-V of the FlashAttention forward
(K^T gathered row by row, marked lane shuffles) and of softmax (SLM
exchange) must be byte-identical with them switched off (ZETILE_XE_TIDY=0,
ZETILE_XE_MOVES=text: the text round trip of xe_atomic.c), and the in-place
route must actually be the one taken by default."""
import os

from zt_testutil import run_python

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

CODE = f"""
import hashlib, json, sys
sys.path.insert(0, {HERE!r}); sys.path.insert(0, {os.path.join(ROOT, "examples")!r})
import zetile
from attention_kernels import attn_fwd_kernel
import softmax
out = {{}}
c = zetile.compile(attn_fwd_kernel,
                   signature={{"Q": "*fp16", "K": "*fp16", "V": "*fp16", "Out": "*fp16",
                              "sm_scale": "fp32", "N_CTX": "i32:16", "stride_qm": "i32:16",
                              "stride_kn": "i32:16", "stride_vn": "i32:16", "stride_om": "i32:16"}},
                   constexprs={{"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": False}},
                   target="pvc", num_warps=8, cached=False)
out["attention"] = c.asm
c = zetile.compile(softmax.softmax_kernel,
                   signature={{"output_ptr": "*fp32", "input_ptr": "*fp32",
                              "input_row_stride": "i32:16", "output_row_stride": "i32:16",
                              "n_rows": "i32", "n_cols": "i32"}},
                   constexprs={{"BLOCK_SIZE": 1024}}, target="pvc", num_warps=4, cached=False)
out["softmax"] = c.asm
print("RESULT", json.dumps({{k: {{"spirv": hashlib.sha256(a["spirv"]).hexdigest(),
                                 "stages": [ln.split("=")[0] for ln in a["timings"].splitlines()]}}
                             for k, a in out.items()}}))
"""


def _compile(tmp_path, **env):
    import json
    r = run_python(CODE, env={"ZETILE_CACHE_DIR": str(tmp_path), **env})
    assert r.returncode == 0, r.stdout + r.stderr
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def test_rewrites_keep_the_spirv(tmp_path):
    new = _compile(tmp_path / "new")
    old = _compile(tmp_path / "old", ZETILE_XE_TIDY="0", ZETILE_XE_MOVES="text")
    for k in ("attention", "softmax"):
        assert "lane tidy-up" in new[k]["stages"], new[k]["stages"]
        assert "lane moves" in new[k]["stages"], new[k]["stages"]
        assert "parse Xe module with atomics" not in new[k]["stages"], new[k]["stages"]
        assert "lane tidy-up" not in old[k]["stages"], old[k]["stages"]
        assert "parse Xe module with atomics" in old[k]["stages"], old[k]["stages"]
        assert new[k]["spirv"] == old[k]["spirv"], k
