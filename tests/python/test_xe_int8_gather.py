"""int8 dot operands that are not straight 2-D block reads, on pvc (issues 12
and 13). The stdlib GEMM's generic int8 export passes every stride at run
time, so A and B are row gathers; an int8 DPAS wants A as 8x32 blocks with
each lane holding a column pair (2j, 2j + 1) packed in one 16-bit register,
which a 16-lane row gather does not give. Now each A row is two gathers, of
the even and of the odd columns, packed per lane (xe_matrix.c
gather_i8_pairs); B's 32x16 VNNI blocks are 16-lane rows already. Before,
the load was refused ("2-D gathers of i8 tensors feeding a dot").

Evidence: E1 (spirv-val, the XeGPU holds gathers and int8 DPAS), E2 (`zetile
isa` pvc: DPAS in the K loop, no spill at 4 subgroups), E4 (CPU target) and
E5 (the pvc SPIR-V on Intel's OpenCL CPU runtime), exact against int64 numpy
with M, N, K tails and a column-major A."""
import os
import sys

import pytest

import zetile
from zt_testutil import have_tool, opencl_cpu_or_skip, run_result, spirv_val

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import xe_int8_gather_kernels as K  # noqa: E402

pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


def _compile_strided(num_warps, target="pvc"):
    return zetile.compile(K.i8_strided, signature=K.SIG_STRIDED,
                          constexprs={"BM": 64, "BN": 64, "BK": 32}, target=target,
                          num_warps=num_warps, cached=False)


@pytest.mark.skipif(not have_tool("spirv-val"), reason="spirv-val is not installed")
@pytest.mark.parametrize("target", ["pvc", "bmg"])
@pytest.mark.parametrize("num_warps", [1, 4])
def test_e1_strided_int8_gemm(num_warps, target):
    asm = _compile_strided(num_warps, target).asm
    mlir = asm["mlir"]
    # Gathers (no block read can serve run-time strides) and int8 DPAS: 64x64
    # over num_warps subgroups, K 32 a DPAS.
    assert mlir.count("xegpu.load_nd") == 0
    assert mlir.count("xegpu.load ") > 0
    assert mlir.count("xegpu.dpas") == 32 // num_warps
    assert "vector<8x32xi8>" in mlir
    spirv_val(asm["spirv"])


def test_e2_strided_int8_gemm():
    if not (have_tool("ocloc") and have_tool("iga64")):
        pytest.skip("ocloc/iga64 are not installed")
    from zetile.tools import isa
    ck = _compile_strided(4)
    isas, log = isa.ocloc_isa(ck.asm["spirv"], "pvc", ck.metadata.get("igc_options", ""))
    r = isa.analyze_isa("".join(isas.values()))
    print("pvc 64x64x32 num_warps 4:", {k: r[k] for k in ("instructions", "dpas", "sends")})
    # 32x32 per subgroup: 4x2 accumulators, one int8 DPAS (K 32) each.
    assert r["dpas_in_innermost_loop"] >= 8, r
    assert isa.spill_from_log(log) == 0, log[-2000:]


RUN = """
import json, zetile
import xe_int8_gather_kernels as K
out = K.run_strided()
out["device"] = zetile.get_device().info["name"]
print("RESULT", json.dumps(out))
"""


@pytest.mark.parametrize("device", ["cpu", "opencl:cpu"])
def test_numerics_strided_exact(device):
    if device == "opencl:cpu":
        opencl_cpu_or_skip()
    res = run_result(RUN, path=HERE, env={"ZETILE_DEVICE": device}, timeout=900)
    assert res.pop("device") == device
    assert len(res) == len(K.STRIDED_CASES)
    assert all(v == 0 for v in res.values()), res
