"""2-D index arithmetic and masks used as data on Xe: the lowering keeps
them lazy for addresses and evaluates them into blocks where they meet data
(xe_matrix.c, materialize_lazy): attention's causal mask as a 2-D where,
tl.flip and tl.gather (one-hot matrices reduced), an index ramp cast to
float, tl.ravel and a reshape of 1-D data to 2-D. These failed on Xe before ("2-D float op with an integer/mask
operand"). Shown: spirv-val (E1), ocloc builds them (E2), the numbers on
Intel's OpenCL CPU runtime (E5) and on the CPU target (E4)."""
import os
import sys

import numpy as np
import pytest

import zetile
from zetile.tools import isa
from zt_testutil import have_tool, opencl_cpu_or_skip, run_result, spirv_val

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import xe_mask_kernels as K  # noqa: E402

CASES = [
    ("causal_mask", {"X": "*fp32", "OUT": "*fp32"}, {"M": 16, "N": 32}),
    ("flip_gather", {"X": "*fp32", "FLIP": "*fp32", "GATHER": "*fp32"}, {"N": 32}),
    ("flip_gather", {"X": "*i32", "FLIP": "*i32", "GATHER": "*i32"}, {"N": 16}),
    ("ramp_plus", {"X": "*fp32", "OUT": "*fp32"}, {"M": 8, "N": 32}),
    ("ravel_unravel", {"X": "*fp32", "FLAT": "*fp32", "TILE": "*fp32"}, {"M": 8, "N": 32}),
]


@pytest.mark.skipif(not (have_tool("spirv-val") and have_tool("ocloc")),
                    reason="spirv-val/ocloc are not installed")
@pytest.mark.parametrize("i", range(len(CASES)))
def test_e1_e2_pvc(i):
    name, sig, consts = CASES[i]
    ck = zetile.compile(getattr(K, name), signature=sig, constexprs=consts, target="pvc",
                        cached=False)
    spirv_val(ck.asm["spirv"])
    isas, log = isa.ocloc_isa(ck.asm["spirv"], "pvc", ck.metadata.get("igc_options", ""))
    assert isas, log


RUN = r"""
import json, numpy as np, zetile
import xe_mask_kernels as K
rng = np.random.default_rng(2)
out = {}
x = rng.standard_normal((16, 32)).astype(np.float32)
y = np.zeros_like(x)
K.causal_mask[(1,)](x, y, M=16, N=32)
out["causal"] = {"x": x.tolist(), "y": y.tolist()}
for dt, n in (("float32", 32), ("int32", 16)):
    v = (rng.standard_normal(n) * 100).astype(dt)
    f, g = np.zeros_like(v), np.zeros_like(v)
    K.flip_gather[(1,)](v, f, g, N=n)
    out["fg_" + dt] = {"x": v.tolist(), "flip": f.tolist(), "gather": g.tolist()}
x = rng.standard_normal((8, 32)).astype(np.float32)
y = np.zeros_like(x)
K.ramp_plus[(1,)](x, y, M=8, N=32)
out["ramp"] = {"x": x.tolist(), "y": y.tolist()}
x = rng.standard_normal((8, 32)).astype(np.float32)
fl, ti = np.zeros(256, np.float32), np.zeros((8, 32), np.float32)
K.ravel_unravel[(1,)](x, fl, ti, M=8, N=32, num_warps=1)
out["ravel"] = {"x": x.tolist(), "flat": fl.tolist(), "tile": ti.tolist()}
zetile.get_device().synchronize()
print("RESULT " + json.dumps(out))
"""


def _check(res):
    x = np.array(res["causal"]["x"])
    keep = np.tril(np.ones((16, 32), bool))
    ym = np.where(keep, x, -np.inf)
    np.testing.assert_allclose(res["causal"]["y"], np.exp(ym - ym.max(axis=1, keepdims=True)),
                               rtol=1e-5, atol=1e-6)
    for dt, n in (("float32", 32), ("int32", 16)):
        r = res["fg_" + dt]
        v = np.array(r["x"])
        np.testing.assert_array_equal(r["flip"], v[::-1])
        np.testing.assert_array_equal(r["gather"], v[(np.arange(n) * 7 + 3) % n])
    x = np.array(res["ravel"]["x"], np.float32)  # float32 arithmetic, exact
    np.testing.assert_array_equal(res["ravel"]["flat"], x.ravel() * np.float32(2))
    np.testing.assert_array_equal(res["ravel"]["tile"], x + np.float32(1))
    x = np.array(res["ramp"]["x"])
    np.testing.assert_allclose(res["ramp"]["y"], x + np.arange(8 * 32).reshape(8, 32),
                               rtol=1e-6)


def test_cpu_numbers():
    _check(run_result(RUN, path=HERE, env={"ZETILE_DEVICE": "cpu"}))


def test_e5_pvc_spirv_on_opencl_cpu():
    opencl_cpu_or_skip()
    _check(run_result(RUN, path=HERE))
