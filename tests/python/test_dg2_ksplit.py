"""dg2's SIMD8 lowering splits a dot's K over the subgroups that would repeat
its 8x8 blocks (lowering/dg2/dg2_dot.c, dot_ksplit / emit_ksum, session 21)
when the kernel's dots hold more operand registers than the register file
(ZETILE_DG2_KSPLIT=R: above R registers; 0: never). A 16x64 @ 64x16 fp16 dot
at 32 subgroups has 2 x 2 places: K (4 DPAS steps) goes in 4 slices, and
the 16 subgroups past the first 16 repeat those, so only the first 16
write their partial products to local memory (the guarded write the
attention backward's plan takes). Checked: the MLIR's DPAS calls per
subgroup, and (E5) the dg2 SPIR-V on Intel's OpenCL CPU runtime."""
import collections
import os
import sys

import numpy as np
import pytest

from zt_testutil import env_set, opencl_cpu_or_skip, run_result
from zetile.jit import compile as zcompile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dg2_ksplit_kernels import dot_tile  # noqa: E402

F16_MAD = "_Z38intel_sub_group_f16_f16_matrix_mad_k16Dv8_iS_Dv8_f"
SIG = {"A": "*fp16", "B": "*fp16", "C": "*fp32"}


def _mad_calls(split):
    with env_set({"ZETILE_DG2_KSPLIT": split}):
        ck = zcompile(dot_tile, signature=SIG, constexprs={"M": 16, "N": 16, "K": 64},
                      target="dg2", num_warps=32)
    text = ck.asm["mlir"]
    text = text.decode() if isinstance(text, bytes) else text
    return collections.Counter(ln.split("@")[1].split("(")[0] for ln in text.splitlines()
                               if "llvm.call" in ln and "matrix_mad" in ln)


def test_k_split_takes_one_dpas_step_a_subgroup():
    # Whole K: 4 K steps of 16 on the subgroup's one 8x8 block; split in 4
    # slices: 1. The dot holds 64 registers a lane: under the file (128), so
    # the default keeps whole K.
    assert _mad_calls("0") == {F16_MAD: 4}
    assert _mad_calls("") == {F16_MAD: 4}
    assert _mad_calls("16") == {F16_MAD: 1}


E5 = """
import json, os, sys, numpy as np, zetile
sys.path.insert(0, {here!r})
from dg2_ksplit_kernels import dot_tile
assert zetile.get_device().info["target"] == "dg2"
rng = np.random.default_rng(2)
a = rng.standard_normal((16, 64)).astype(np.float16)
b = rng.standard_normal((64, 16)).astype(np.float16)
c = np.zeros((16, 16), np.float32)
dot_tile[(1,)](a, b, c, M=16, N=16, K=64, num_warps=32)
print("RESULT", json.dumps({{"c": c.tolist()}}))
"""


def test_k_split_e5_on_opencl_cpu():
    opencl_cpu_or_skip()
    here = os.path.dirname(os.path.abspath(__file__))
    res = run_result(E5.format(here=here), env={"ZETILE_OPENCL_TARGET": "dg2",
                                                "ZETILE_DG2_KSPLIT": "16"}, timeout=600)
    rng = np.random.default_rng(2)
    a = rng.standard_normal((16, 64)).astype(np.float16)
    b = rng.standard_normal((64, 16)).astype(np.float16)
    want = a.astype(np.float64) @ b.astype(np.float64)
    got = np.asarray(res["c"], np.float64)
    # fp16 products are exact in fp32; only the sums' order and rounding differ
    assert np.abs(got - want).max() < 1e-4, np.abs(got - want).max()
