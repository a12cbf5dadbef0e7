"""Two dots on different subgroup grids whose data meet (issue 12 (c)).

A 64x64 dot takes a 1xN subgroup grid and a 64x16 dot an Nx1 one
(xe_layout.c dot_grid). `x + tl.sum(y, 1)[:, None]` (x from the first, y
from the second) was refused: "a tile made on the 4x1 subgroup grid is read
on the 1x4 grid of another dot" — the broadcast of y's row sums took y's
layout. Now a broadcast of a 1-D value read next to another dot's tile takes
that tile's layout (xe_layout.c used_on_other_grid), the lazy expand_dims
crosses grids as the 1-D value it is (xe_grids.c), and the broadcast is
built on the user's grid from the 1-D sums, gathered whole through SLM
where they are split across subgroups (xe_matrix.c broadcast_col_into_a).
No 2-D tile moves between grids; a general conversion between two grids'
tiles is still refused.

Evidence: E1 (spirv-val), E2 (`zetile isa` pvc: DPAS, no spill), E4 and E5
(the pvc SPIR-V on opencl:cpu), exact (small integers)."""
import os
import sys

import pytest

import zetile
from zt_testutil import e5_cases, have_tool, isa_no_spill, run_cases_on, spirv_val

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import xe_grid_meet_kernels as K  # noqa: E402

pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


def _compile(num_warps):
    return zetile.compile(K.two_grids_meet, signature=K.SIG_GRIDS,
                          constexprs={"BM": 64, "BN": 64, "BK": 32, "BN2": 16}, target="pvc",
                          num_warps=num_warps, cached=False)


@pytest.mark.skipif(not have_tool("spirv-val"), reason="spirv-val is not installed")
@pytest.mark.parametrize("num_warps", [4, 8])
def test_e1_row_sums_of_one_dot_added_to_another(num_warps):
    asm = _compile(num_warps).asm
    # 64x64x32: 64 fp16 DPAS (K 16 each), 64x16x32: 16, over the subgroups
    assert asm["mlir"].count("xegpu.dpas") == (64 + 16) // num_warps
    spirv_val(asm["spirv"])


def test_e2():
    ck = _compile(4)
    r = isa_no_spill(ck.asm["spirv"], ck.metadata.get("igc_options", ""), "pvc two grids num_warps 4")
    assert r["dpas"] >= 10, r


RUN = """
import json, zetile
import xe_grid_meet_kernels as K
out = K.run_grids(K.GRID_CASES[:N_CASES])
out["device"] = zetile.get_device().info["name"]
print("RESULT", json.dumps(out))
"""


@pytest.mark.parametrize("device", ["cpu", "opencl:cpu"])
def test_numerics_exact(device):
    res = run_cases_on(device, RUN, HERE)
    assert len(res) == len(K.GRID_CASES[:e5_cases(device)])
    assert all(v <= 1e-6 for v in res.values()), res
