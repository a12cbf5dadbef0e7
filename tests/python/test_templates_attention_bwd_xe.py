"""The attention backward template (stdlib-kernels/attention_bwd.py) built
for pvc without a GPU: E1 (spirv-val) and E2 (ocloc; DPAS inside the
innermost loop, no spill). SDPA fp16 d64 runs by default; the other
configurations (bf16 d128, masks, GQA, causal, flex block mask and softcap)
with ZETILE_SLOW_TESTS=1 (~6-17 s each)."""
import os
import shutil
import subprocess
import tempfile

import pytest

import zetile

torch = pytest.importorskip("torch")
from zetile import _C  # noqa: E402
from zetile.ops import attention_bwd as AB  # noqa: E402
from zetile.ops import fx_to_tile  # noqa: E402
from zetile.tools import isa  # noqa: E402

SLOW = os.environ.get("ZETILE_SLOW_TESTS") == "1"
L = 512


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


def _sdpa(dt=torch.float16, E=64, mask=None, gqa=False, causal=False):
    q = torch.zeros(1, 4, L, E, dtype=dt)
    kv = torch.zeros(1, 2 if gqa else 4, L, E, dtype=dt)
    m = {"bool": torch.zeros(L, L, dtype=torch.bool), "float": torch.zeros(L, L, dtype=dt)}.get(mask)
    return AB.scaled_dot_product_attention_backward(q, q, kv, kv, q, torch.zeros(1, 4, L),
                                                    attn_mask=m, is_causal=causal,
                                                    enable_gqa=gqa, plan=True)


def _flex(score=None, blocks=False):
    import zetile.ops as ops
    q = torch.zeros(1, 2, L, 64, dtype=torch.float16)
    v = AB._arrays.as_view(q)

    def softcap(s, b, h, qi, kv):
        return 20.0 * torch.tanh(s / 20.0)
    smod = fx_to_tile.from_mod(softcap, "score") if score else None
    grad = AB.score_mod_grad(softcap, smod) if score else None
    bm = ops.create_block_mask(lambda b, h, qi, kv: qi >= kv, None, None, L, L) if blocks else None
    mmod = fx_to_tile.from_mod(bm.mask_mod, "mask") if bm is not None else None
    return AB._bwd("flex", v, v, v, v, v, torch.zeros(1, 2, L), scale=0.125,
                   score_mod=smod.fn if smod else None, score_grad=grad.fn if grad else None,
                   mask_mod=mmod.fn if mmod else None,
                   blocks=AB._dense_blocks(bm, 1, 2, L, L, "flex") if bm is not None else None,
                   plan=True)


# name -> (planned launches, minimum DPAS in the innermost loop of dk/dv, of dq)
CASES = {
    "sdpa_bwd_fp16_d64": (lambda: _sdpa(), 64, 48),
    "sdpa_bwd_fp16_d64_causal": (lambda: _sdpa(causal=True), 64, 48),
    "sdpa_bwd_bf16_d128": (lambda: _sdpa(torch.bfloat16, 128), 128, 96),
    "sdpa_bwd_fp16_d64_boolmask": (lambda: _sdpa(mask="bool"), 64, 48),
    "sdpa_bwd_fp16_d64_floatmask": (lambda: _sdpa(mask="float"), 64, 48),
    "sdpa_bwd_fp16_d64_gqa": (lambda: _sdpa(gqa=True), 64, 48),
    "flex_bwd_fp16_causal_blocks": (lambda: _flex(blocks=True), 64, 48),
    "flex_bwd_fp16_softcap": (lambda: _flex(score=True), 64, 48),
}


def _spirv_val(spv):
    if not shutil.which("spirv-val"):
        pytest.skip("spirv-val is not installed")
    with tempfile.NamedTemporaryFile(suffix=".spv") as f:
        f.write(spv)
        f.flush()
        r = subprocess.run(["spirv-val", f.name], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.skipif(
    c != "sdpa_bwd_fp16_d64" and not SLOW, reason="ZETILE_SLOW_TESTS=1")) for c in CASES])
def test_backward_builds_for_pvc_e1_e2(case):
    plan, dkdv_dpas, dq_dpas = CASES[case]
    _, dkdv, dq = plan()
    for name, launch, want in (("dk/dv", dkdv, dkdv_dpas), ("dq", dq, dq_dpas)):
        try:
            art = launch.compile("pvc", cached=True)
        except _C.Error as e:
            pytest.fail(f"{name}: {e}")
        _spirv_val(art.get("spirv"))
        if not (shutil.which("ocloc") and shutil.which("iga64")):
            pytest.skip("ocloc/iga64 are not installed")
        isas, log = isa.ocloc_isa(art.get("spirv"), "pvc", "-ze-opt-large-register-file")
        r = isa.analyze_isa("".join(isas.values()))
        assert r["dpas_in_innermost_loop"] >= want, (name, r)
        assert isa.spill_from_log(log) == 0 and r["scratch_sends"] == 0, (name, r, log[-2000:])
