"""tl.cumsum, and tl.associative_scan with a user combiner (a tuple linear
recurrence), of a row split across subgroups on Xe (xe_emit_scan,
xe_reduce_user.c): each
subgroup scans its part, the parts' totals meet in SLM (the exchange the
cross-subgroup reductions use) and each part adds the totals before it
(after it, reversed). Shown: the kernel really is split (more than one
subgroup), spirv-val (E1), ocloc builds it with no call left (E2), and the
CPU target's numbers (E4), and the pvc SPIR-V's on Intel's OpenCL CPU
runtime (E5: zetile writes the SLM accesses as pointer arithmetic that
runtime can run)."""
import os
import sys

import numpy as np
import pytest

import zetile
from zetile.tools import isa
from zt_testutil import have_tool, opencl_cpu_or_skip, run_result, spirv_val

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import xe_reduce_kernels as K  # noqa: E402

# (kernel, signature, reverse constexpr's name)
SPLIT = {"cumsum": (K.cumsum_row, {"X": "*i32", "OUT": "*i32", "N": "i32"}, "REV"),
         "user": (K.scan_user, {"A": "*fp32", "B": "*fp32", "H": "*fp32", "S": "*i32",
                                "R": "*i32", "N": "i32"}, "REVERSE")}


@pytest.mark.skipif(not (have_tool("spirv-val") and have_tool("ocloc")),
                    reason="spirv-val/ocloc are not installed")
@pytest.mark.parametrize("kind", list(SPLIT))
@pytest.mark.parametrize("rev", [False, True])
def test_e1_e2_split_row(kind, rev):
    fn, sig, rev_name = SPLIT[kind]
    ck = zetile.compile(fn, signature=sig, constexprs={"BLOCK": 1024, rev_name: rev},
                        target="pvc", cached=False)
    assert int(str(ck.metadata["local_size"]).split(",")[0]) > 16, ck.metadata
    spirv_val(ck.asm["spirv"])
    isas, log = isa.ocloc_isa(ck.asm["spirv"], "pvc", ck.metadata.get("igc_options", ""))
    assert isa.analyze_isa("".join(isas.values()))["calla"] == 0, log


CUMSUM = r"""
import json, numpy as np, zetile
import xe_reduce_kernels as K
x = np.random.default_rng(4).integers(-9, 10, 1000).astype(np.int32)
out = {"x": x.tolist()}
for rev in (False, True):
    o = np.zeros_like(x)
    K.cumsum_row[(1,)](x, o, 1000, BLOCK=1024, REV=rev)
    out[str(rev)] = o.tolist()
print("RESULT " + json.dumps(out))
"""


def _check_cumsum(res):
    x = np.array(res["x"])
    np.testing.assert_array_equal(res["False"], np.cumsum(x))
    np.testing.assert_array_equal(res["True"], np.cumsum(x[::-1])[::-1])


def test_cpu_numbers():
    _check_cumsum(run_result(CUMSUM, path=HERE, env={"ZETILE_DEVICE": "cpu"}))


def test_e5_split_row_on_opencl_cpu():
    opencl_cpu_or_skip()
    _check_cumsum(run_result(CUMSUM, path=HERE))
