"""The templates at the tiles an integrated GPU's row gives them (issue 21),
run: E5 (the exact SPIR-V of the tgllp row, FMA dots, on Intel's OpenCL CPU
runtime, against torch in double) and E3 (Debian's Level Zero driver in AUB
mode, told it is a Tiger Lake: the runtime picks the tgllp row, the plans take
its tiles, and the driver creates and launches each kernel; AUB mode computes
nothing, so E3 shows acceptance, not numbers).

test_igpu_targets.py shows the same tiles build (E1, E2, no spills); this
file shows they run. The row's registers shrink attention's d128 tiles to
16x16 (the default 32x32 spilled on tgllp), asserted below so a change of the
tile rule cannot leave this test running the default tiles."""
import json

import pytest

import zetile
from zt_testutil import AUB_ENV, neo_installed, run_python

RUN = r"""
import json, torch, zetile, zetile.ops as ops
from zetile.ops import _kernels, create_block_mask
from torch.nn.attention.flex_attention import flex_attention as tflex
from torch.nn.attention.flex_attention import create_block_mask as tcbm
import os
F = torch.nn.functional
if os.environ.get("ZT_E3_BACKEND"):
    devs = [d for d in zetile.devices()
            if d["backend"] == os.environ["ZT_E3_BACKEND"] and d["name"] != "opencl:cpu"]
    assert devs, zetile.devices()
    zetile.set_device(devs[0]["name"])
dev = zetile.get_device()
E3 = bool(os.environ.get("ZT_E3_BACKEND"))
g = torch.Generator().manual_seed(11)
def rnd(*shape, dt=torch.float16):
    return torch.randn(*shape, generator=g).to(dt)
def err(got, ref):
    # E3 launches on a simulated GPU whose memory is never computed: no numbers.
    if E3:
        return None
    got = torch.as_tensor(got).double()
    return float((got - ref).abs().max() / max(ref.abs().max().item(), 1.0))
out = {"device": dev.name}
default = _kernels.load("attention").DEFAULT
# GEMM fp16, sizes not multiples of the tile.
a, b = rnd(100, 70), rnd(70, 90)
out["gemm_fp16"] = err(ops.gemm(a, b), a.double() @ b.double())
# SDPA bf16 d128 causal, Lq != Lk: the row's registers give smaller tiles.
q, k, v = rnd(1, 2, 70, 128, dt=torch.bfloat16), rnd(1, 2, 90, 128, dt=torch.bfloat16), \
    rnd(1, 2, 90, 128, dt=torch.bfloat16)
kw = ops.scaled_dot_product_attention(q, k, v, is_causal=True, plan=True).kwargs
out["sdpa_tiles"] = [kw["BLOCK_M"], kw["BLOCK_N"]]
out["default_tiles"] = [default["BLOCK_M"], default["BLOCK_N"]]
ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True)
out["sdpa_bf16_d128_causal"] = err(ops.scaled_dot_product_attention(q, k, v, is_causal=True), ref)
# SDPA backward fp16 d128 (dk/dv and dq kernels at the row's tiles).
q, k, v, do = (rnd(1, 2, 48, 128) for _ in range(4))
o, lse = ops.scaled_dot_product_attention(q, k, v, return_lse=True)
dq, dk, dv = ops.scaled_dot_product_attention_backward(do, q, k, v, o, lse)
qd, kd, vd = (t.double().requires_grad_() for t in (q, k, v))
F.scaled_dot_product_attention(qd, kd, vd).backward(do.double())
out["sdpa_bwd_d128"] = [err(x, r.grad) for x, r in ((dq, qd), (dk, kd), (dv, vd))]
# FlexAttention: tanh soft-cap score_mod, causal BlockMask, length not a
# multiple of the block.
def softcap(s, b, h, qi, ki):
    return 20 * torch.tanh(s / 20)
def causal(b, h, qi, ki):
    return qi >= ki
q, k, v = (rnd(1, 2, 200, 64) for _ in range(3))
got = ops.flex_attention(q, k, v, score_mod=softcap,
                         block_mask=create_block_mask(causal, 1, 2, 200, 200, BLOCK_SIZE=32))
ref = tflex(q.double(), k.double(), v.double(), score_mod=softcap,
            block_mask=tcbm(causal, 1, 2, 200, 200, device="cpu"))
out["flex_softcap_causal"] = err(got, ref)
dev.synchronize()
print("RESULT " + json.dumps(out))
"""


def _result(r):
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    return json.loads([ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")][-1][7:])


def _tiles_shrunk(res):
    (bm, bn), (dm, dn) = res["sdpa_tiles"], res["default_tiles"]
    assert bm * bn < dm * dn, res


def test_e5_templates_at_the_rows_tiles_on_opencl_cpu():
    if "opencl:cpu" not in [d["name"] for d in zetile.devices()]:
        pytest.skip("Intel's OpenCL CPU runtime (opencl:cpu) is not available")
    pytest.importorskip("torch")
    res = _result(run_python(RUN, env={"ZETILE_DEVICE": "opencl:cpu",
                                       "ZETILE_OPENCL_TARGET": "tgllp"}, timeout=900))
    assert res["device"] == "opencl:cpu", res
    _tiles_shrunk(res)
    # fp16 products are exact in fp32 FMAs: the fp16 output's rounding.
    assert res["gemm_fp16"] < 2 ** -10, res
    # bf16 output (8 bits) of probabilities times bf16 values.
    assert res["sdpa_bf16_d128_causal"] < 2 ** -6, res
    assert max(res["sdpa_bwd_d128"]) < 2 ** -7, res
    assert res["flex_softcap_causal"] < 2 ** -9, res


@pytest.mark.skipif(not neo_installed(), reason="Debian's NEO (intel-opencl-icd) is not installed")
def test_e3_templates_launch_on_a_simulated_tiger_lake():
    pytest.importorskip("torch")
    env = dict(AUB_ENV, ProductFamilyOverride="tgllp", ZT_E3_BACKEND="level_zero")
    res = _result(run_python(RUN, env=env, timeout=900))
    assert res["device"] != "opencl:cpu" and res["device"] != "cpu", res
    _tiles_shrunk(res)
    launched = [k for k in ("gemm_fp16", "sdpa_bf16_d128_causal", "sdpa_bwd_d128",
                            "flex_softcap_causal") if k in res]
    assert len(launched) == 4, res
