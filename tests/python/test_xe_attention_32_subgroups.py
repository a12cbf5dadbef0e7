"""The FlashAttention forward (tests/python/attention_kernels.py) at Intel's
32-warp configuration (BLOCK_M 128, BLOCK_N 64: Intel's benchmark tunes
_attn_fwd over 8, 16 and 32 warps). 128 rows over 32 subgroups are 4 rows
each, fewer than a DPAS block's 8, and the build was refused ("2-D tile
128x64 does not split into 8x16 blocks over the 32x1 subgroup grid"). The
attention dots now take a 16x2 grid (lowering/xe/xe_layout.c dot_grid: the
rows over the subgroups that take 8 each, the columns over the rest): the
row max and row sum of each 8x32 part meet across the two grid columns
through SLM (xe_reduce.c rows_across_subgroups) and every subgroup holds
the whole 1-D result; P goes from the accumulator layout to the A operand
through SLM (each A row needs both columns' halves; xe_convert.c, bf16 as
i16 blocks).

Evidence: E1 (spirv-val, pvc and bmg, fp16 and bf16), E2 (ocloc + iga64 on
the pvc compat build: DPAS in the loop, spills), E4 (CPU target against
numpy), E5 (the pvc SPIR-V on Intel's OpenCL CPU runtime: fp16 by default,
~40 s; bf16 and causal with ZETILE_SLOW_TESTS=1)."""
import os
import sys

import pytest

import zetile
from zt_testutil import have_tool, opencl_cpu_or_skip, run_result, spirv_val

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from attention_kernels import attn_fwd_kernel  # noqa: E402

SLOW = os.environ.get("ZETILE_SLOW_TESTS") == "1"
NUM_WARPS = 32


def _sig(dt):
    return {"Q": "*" + dt, "K": "*" + dt, "V": "*" + dt, "Out": "*" + dt, "sm_scale": "fp32",
            "N_CTX": "i32:16", "stride_qm": "i32:16", "stride_kn": "i32:16",
            "stride_vn": "i32:16", "stride_om": "i32:16"}


def _conf(causal=False):
    return {"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": causal}


@pytest.mark.parametrize("dt", ["fp16", "bf16"])
@pytest.mark.parametrize("target", ["pvc", "bmg"])
def test_builds(target, dt):
    ck = zetile.compile(attn_fwd_kernel, signature=_sig(dt), constexprs=_conf(), target=target,
                        num_warps=NUM_WARPS, cached=False)
    m = ck.asm["mlir"]
    # Per subgroup (8x32 of S and of the output): 2 blocks x 4 K steps for
    # each of the two dots.
    assert m.count("xegpu.dpas") == 16, m.count("xegpu.dpas")
    # Row max and row sum across the grid's two columns (two barriers
    # each), P into the A operand through SLM (two).
    assert m.count("gpu.barrier") == 6, m.count("gpu.barrier")
    if have_tool("spirv-val"):
        spirv_val(ck.asm["spirv"])


@pytest.mark.parametrize("causal", [False, True])
def test_e2_pvc(causal):
    if not (have_tool("ocloc") and have_tool("iga64")):
        pytest.skip("ocloc/iga64 are not installed")
    from zetile.tools import isa
    ck = zetile.compile(attn_fwd_kernel, signature=_sig("fp16"), constexprs=_conf(causal),
                        target="pvc", num_warps=NUM_WARPS, compat=True, cached=False)
    isas, log = isa.ocloc_isa(ck.asm["spirv"], "pvc", "-ze-opt-large-register-file")
    r = isa.analyze_isa("".join(isas.values()))
    print(f"attention fwd 32 subgroups, pvc compat (causal={causal}): {r} "
          f"spill~{isa.spill_from_log(log)}")
    assert r["calla"] == 0, r
    assert r["dpas"] == 16 and r["dpas_loop"]["dpas"] == 16, r
    assert isa.spill_from_log(log) == 0 and r["scratch_sends"] == 0, (r, log)


RUN = """
import json, zetile
from attention_kernels import run_fwd_error
err = run_fwd_error({dt!r}, 64, {causal}, heads=1, num_warps=32)
print("RESULT", json.dumps({{"err": err, "device": zetile.get_device().info["name"]}}))
"""


def _check(res, device, dt):
    assert res["device"] == device, res
    # P rounded to fp16/bf16 before the second dot, fp16/bf16 outputs.
    assert res["err"] < (1e-2 if dt == "fp16" else 3e-2), res


@pytest.mark.parametrize("dt,causal", [("fp16", False), ("fp16", True), ("bf16", False)])
def test_cpu_numbers(dt, causal):
    res = run_result(RUN.format(dt=dt, causal=causal), path=HERE, env={"ZETILE_DEVICE": "cpu"})
    _check(res, "cpu", dt)


@pytest.mark.parametrize("dt,causal", [("fp16", False), ("fp16", True), ("bf16", False)])
def test_e5_opencl_cpu(dt, causal):
    if (dt, causal) != ("fp16", False) and not SLOW:
        pytest.skip("~45 s each on opencl:cpu here: ZETILE_SLOW_TESTS=1")
    opencl_cpu_or_skip()
    res = run_result(RUN.format(dt=dt, causal=causal), path=HERE,
                     env={"ZETILE_DEVICE": "opencl:cpu", "ZETILE_COMPAT": "0"}, timeout=900)
    _check(res, "opencl:cpu", dt)
