"""(M, 1) and (1, N) tensors on Xe: the Xe layouts have no one-column 2-D
tile, so elementwise code on them is rewritten into 1-D code before the Xe
lowering (lowering/common/unit_dims.c). These kernels used to fail on pvc
("2-D float op with an integer/mask operand"); now their SPIR-V passes
spirv-val (E1) and computes the numpy result on Intel's OpenCL CPU runtime
(E5); the CPU target gives the same numbers (E4). Also tl.softmax on a 1-D
tensor (a one-element max broadcast back) and tl.squeeze."""
import os
import sys

import numpy as np
import pytest

import zetile
from zt_testutil import have_tool, opencl_cpu_or_skip, run_result, spirv_val

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import xe_unit_dim_kernels as K  # noqa: E402

M, N, BM, BN = 37, 29, 16, 32
NV, BLOCK = 45, 32


def _row_stats_ref(x):
    # BN > N: the zeros of the padding take part in the max.
    return x.sum(axis=1) * 0.5 + 1.0, x - np.maximum(x.max(axis=1, keepdims=True), 0)


@pytest.mark.parametrize("kernel,sig,consts", [
    ("row_stats", {"X": "*fp32", "SUM": "*fp32", "CENTERED": "*fp32", "M": "i32", "N": "i32"},
     {"BM": BM, "BN": BN}),
    ("column_axpy", {"X": "*fp32", "Y": "*fp32", "OUT": "*fp32", "n": "i32", "a": "fp32"},
     {"BLOCK": BLOCK, "ROW": False}),
    ("column_axpy", {"X": "*i32", "Y": "*i32", "OUT": "*i32", "n": "i32", "a": "i32"},
     {"BLOCK": BLOCK, "ROW": True}),
    ("softmax_squeeze", {"X": "*fp32", "OUT": "*fp32"}, {"N": 32}),
])
def test_pvc_spirv_validates(kernel, sig, consts):
    if not have_tool("spirv-val"):
        pytest.skip("spirv-val is not installed")
    ck = zetile.compile(getattr(K, kernel), signature=sig, constexprs=consts, target="pvc",
                        cached=False)
    spirv_val(ck.asm["spirv"])


RUN = r"""
import json, numpy as np, zetile
import xe_unit_dim_kernels as K
M, N, BM, BN, NV, BLOCK = ARGS
rng = np.random.default_rng(3)
x = rng.standard_normal((M, N)).astype(np.float32)
s = np.zeros(M, np.float32)
c = np.zeros((M, N), np.float32)
K.row_stats[(-(-M // BM),)](x, s, c, M, N, BM=BM, BN=BN)
out = {"sum": s.tolist(), "centered": c.ravel().tolist()}
for row in (False, True):
    xi = rng.integers(-1000, 1000, NV).astype(np.int32)
    yi = rng.integers(-1000, 1000, NV).astype(np.int32)
    o = np.zeros(NV, np.int32)
    K.column_axpy[(-(-NV // BLOCK),)](xi, yi, o, NV, 3, BLOCK=BLOCK, ROW=row)
    out["axpy_%d" % row] = {"x": xi.tolist(), "y": yi.tolist(), "o": o.tolist()}
xs = rng.standard_normal(32).astype(np.float32)
ys = np.zeros_like(xs)
K.softmax_squeeze[(1,)](xs, ys, N=32)
out["softmax"] = {"x": xs.tolist(), "y": ys.tolist()}
zetile.get_device().synchronize()
out["x"] = x.ravel().tolist()
print("RESULT " + json.dumps(out))
""".replace("ARGS", repr((M, N, BM, BN, NV, BLOCK)))


def _check(res):
    x = np.array(res["x"], np.float32).reshape(M, N)
    s_ref, c_ref = _row_stats_ref(x.astype(np.float64))
    np.testing.assert_allclose(res["sum"], s_ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.array(res["centered"]).reshape(M, N), c_ref, rtol=1e-6,
                               atol=1e-6)
    xs = np.array(res["softmax"]["x"], np.float64)
    sm = np.exp(xs - xs.max()) / np.exp(xs - xs.max()).sum()
    np.testing.assert_allclose(res["softmax"]["y"], sm + xs, rtol=1e-5, atol=1e-6)
    for row in (0, 1):
        r = res["axpy_%d" % row]
        want = 3 * np.array(r["x"]) + np.array(r["y"])
        np.testing.assert_array_equal(r["o"], want)


def test_cpu_numbers():
    _check(run_result(RUN, path=HERE, env={"ZETILE_DEVICE": "cpu"}))


@pytest.mark.parametrize("compat", ["0", "1"])
def test_e5_pvc_spirv_on_opencl_cpu(compat):
    opencl_cpu_or_skip()
    _check(run_result(RUN, path=HERE, env={"ZETILE_COMPAT": compat}))
