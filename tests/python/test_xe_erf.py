"""tl.erf on Xe: upstream MLIR 22 cannot lower math.erf for XeVM; zetile
sends such modules through convert-math-to-libm and renames the libm calls
to OpenCL builtins (lowering/xe/xe_libm.c), which LLVM's SPIR-V backend
emits as OpenCL.std extended instructions. Shown: the SPIR-V has `erf`
extended instructions and no imports left (E1), ocloc builds it (E2), and
it computes erf on Intel's OpenCL CPU runtime (E5), for fp32 and fp64, 1-D
and 2-D (a GELU) tiles."""
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import zetile
from zetile.tools import isa
from zt_testutil import have_tool, opencl_cpu_or_skip, run_result, spirv_val

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import xe_unit_dim_kernels as K  # noqa: E402

CASES = [("erf_1d", {"X": "*fp32", "OUT": "*fp32", "N": "i32"}, {"BLOCK": 64}),
         ("erf_1d", {"X": "*fp64", "OUT": "*fp64", "N": "i32"}, {"BLOCK": 64}),
         ("erf_2d", {"X": "*fp32", "OUT": "*fp32", "M": "i32", "N": "i32"},
          {"BM": 16, "BN": 32})]


def _compile(i):
    name, sig, consts = CASES[i]
    return zetile.compile(getattr(K, name), signature=sig, constexprs=consts, target="pvc",
                          cached=False)


@pytest.mark.skipif(not have_tool("spirv-dis"), reason="spirv-tools are not installed")
@pytest.mark.parametrize("i", range(len(CASES)))
def test_e1_erf_is_an_opencl_ext_inst(i):
    spv = _compile(i).asm["spirv"]
    spirv_val(spv)
    with tempfile.NamedTemporaryFile(suffix=".spv") as f:
        f.write(spv)
        f.flush()
        dis = subprocess.run(["spirv-dis", f.name], capture_output=True, text=True).stdout
    assert " erf " in dis, dis
    imports = [ln for ln in dis.splitlines() if "Import" in ln and "LinkageAttributes" in ln
               and "__spirv_BuiltIn" not in ln]
    assert not imports, imports  # no libm name left unresolved


@pytest.mark.skipif(not have_tool("ocloc"), reason="ocloc is not installed")
def test_e2_ocloc_builds():
    ck = _compile(2)
    isas, log = isa.ocloc_isa(ck.asm["spirv"], "pvc", ck.metadata.get("igc_options", ""))
    assert isas, log


RUN = r"""
import json, numpy as np, zetile
import xe_unit_dim_kernels as K
rng = np.random.default_rng(7)
out = {}
for dt in ("float32", "float64"):
    x = (rng.standard_normal(203) * 2).astype(dt)
    y = np.zeros_like(x)
    K.erf_1d[(4,)](x, y, 203, BLOCK=64)
    out[dt] = {"x": x.tolist(), "y": y.tolist()}
M, N = 37, 29
x = rng.standard_normal((M, N)).astype(np.float32) * 3
y = np.zeros_like(x)
K.erf_2d[(3,)](x, y, M, N, BM=16, BN=32)
zetile.get_device().synchronize()
out["gelu"] = {"x": x.ravel().tolist(), "y": y.ravel().tolist()}
print("RESULT " + json.dumps(out))
"""


def _check(res):
    erf = np.vectorize(math.erf)
    for dt, tol in (("float32", 2e-6), ("float64", 1e-13)):
        x = np.array(res[dt]["x"])
        np.testing.assert_allclose(res[dt]["y"], erf(x) + np.exp(x * 0.25), rtol=tol, atol=tol)
    x = np.array(res["gelu"]["x"])
    np.testing.assert_allclose(res["gelu"]["y"], 0.5 * x * (1 + erf(x / math.sqrt(2))),
                               rtol=2e-6, atol=2e-6)


def test_cpu_numbers():
    _check(run_result(RUN, path=HERE, env={"ZETILE_DEVICE": "cpu"}))


def test_e5_pvc_spirv_on_opencl_cpu():
    opencl_cpu_or_skip()
    _check(run_result(RUN, path=HERE))
