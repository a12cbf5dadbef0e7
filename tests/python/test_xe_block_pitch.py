"""The 2-D block message's 64-byte minimum surface pitch on Xe (issue 12 (e)).

A 2-D block read or write (xegpu.create_nd_tdesc + load_nd/store_nd, and the
transposed block read of a dot's B) takes the memory rows' pitch as the
message's surface pitch, which the hardware requires to be at least 64 bytes.
An fp16 tile whose rows are 16 elements apart (a head dim of 16, a 16-wide K)
has a 32-byte pitch: zetile emitted the block message anyway. A constant pitch
below 64 bytes is now read with row gathers (xe_block_pitch_ok); 64 bytes and
more keep the block messages. A pitch that is a kernel argument is still only
known to be a multiple of 16 bytes (docs/ARCHITECTURE.md, "2-D block pitch").

Evidence: E1 (the emitted XeGPU: no block read of an operand with a 32-byte
pitch, gathers instead; spirv-val), E2 (`zetile isa` pvc: DPAS, no spills), E4 (CPU
target) and E5 (the pvc SPIR-V on Intel's OpenCL CPU runtime) against numpy.
Intel's CPU runtime accepts either form, so E5 shows the gathers compute the
same dot, not that a GPU would have rejected the old message."""
import os
import re
import sys

import numpy as np
import pytest

import zetile
from zt_testutil import have_tool, opencl_cpu_or_skip, run_result, spirv_val

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import xe_block_pitch_kernels as K  # noqa: E402


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


def _compile(kernel, n, k, target="pvc"):
    return zetile.compile(kernel, signature=K.SIG, constexprs={"N": n, "K": k}, target=target,
                          num_warps=1, cached=False)


@pytest.mark.skipif(not have_tool("spirv-val"), reason="spirv-val is not installed")
@pytest.mark.parametrize("target", ["pvc", "bmg"])
@pytest.mark.parametrize("kernel", ["small_dot", "small_dot_bt"])
def test_e1_pitch(kernel, target):
    kern = getattr(K, kernel)
    # 16 fp16 elements = 32 bytes: no block message for either operand.
    small = _compile(kern, 16, 16, target).asm
    # (the only block reads are the operands'; C is stored, store_nd)
    assert small["mlir"].count("xegpu.load_nd") == 0
    assert small["mlir"].count("xegpu.load ") > 0
    assert small["mlir"].count("xegpu.dpas") == 2
    spirv_val(small["spirv"])
    # 32 elements = 64 bytes: block messages stay (A and B).
    big = _compile(kern, 32, 32, target).asm
    assert big["mlir"].count("xegpu.load_nd") > 0
    assert big["mlir"].count("xegpu.load ") == 0
    spirv_val(big["spirv"])


def test_isa():
    # E2: the gathered 16x16x16 dot still runs DPAS, without spills.
    if not (have_tool("ocloc") and have_tool("iga64")):
        pytest.skip("ocloc/iga64 are not installed")
    from zetile.tools.isa import analyze_isa, ocloc_isa, spill_from_log
    for kern in (K.small_dot, K.small_dot_bt):
        isa, log = ocloc_isa(_compile(kern, 16, 16).asm["spirv"], "pvc", "")
        (text,) = isa.values()
        lines = [l for l in text.splitlines() if l.strip() and not l.strip().startswith("//")]
        dpas = len([l for l in lines if re.search(r"\bdpas\b", l)])
        sends = len([l for l in lines if re.search(r"\bsendg?s?c?\b", l)])
        print(kern.__name__ if hasattr(kern, "__name__") else kern, "instructions", len(lines),
              "dpas", dpas, "sends", sends, "spill", spill_from_log(log))
        assert dpas >= 1 and spill_from_log(log) == 0
        assert analyze_isa(text)["scratch_sends"] == 0, text[-2000:]


RUN = """
import json, numpy as np, zetile
import xe_block_pitch_kernels as K
rng = np.random.default_rng(5)
out = {}
for name, n, k in [("small_dot", 16, 16), ("small_dot_bt", 16, 16), ("small_dot", 32, 32),
                   ("small_dot_bt", 16, 32)]:
    a = rng.standard_normal((16, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((16, n), np.float32)
    bm = np.ascontiguousarray(b.T) if name.endswith("_bt") else b
    getattr(K, name)[(1,)](a, bm, c, N=n, K=k, num_warps=1)
    zetile.get_device().synchronize()
    ref = a.astype(np.float64) @ b.astype(np.float64)
    out[f"{name}_{n}_{k}"] = float(np.abs(c - ref).max() / np.abs(ref).max())
out["device"] = zetile.get_device().info["name"]
print("RESULT", json.dumps(out))
"""


@pytest.mark.parametrize("device", ["cpu", "opencl:cpu"])
def test_numerics(device):
    if device == "opencl:cpu":
        opencl_cpu_or_skip()
    res = run_result(RUN, path=HERE, env={"ZETILE_DEVICE": device}, timeout=600)
    assert res.pop("device") == device
    assert len(res) == 4
    for name, err in res.items():
        # fp32 sums of exact fp16 products: only the order may differ.
        assert err <= 1e-5, (name, res)


CHECK_RUN = """
import json, numpy as np, zetile
import xe_block_pitch_kernels as K
def placed(shape, dt, shift):
    # an array whose base is `shift` bytes past a 64-byte boundary
    n = int(np.prod(shape)) * np.dtype(dt).itemsize
    raw = np.zeros(n + 128, np.uint8)
    off = (-raw.ctypes.data) % 64 + shift
    return raw[off:off + n].view(dt).reshape(shape)
rng = np.random.default_rng(5)
out = {}
for shift in (0, 16):
    a = rng.standard_normal((16, 16)).astype(np.float16)
    b = rng.standard_normal((16, 16)).astype(np.float16)
    c = placed((16, 16), np.float32, shift)
    try:
        K.small_dot[(1,)](a, b, c, N=16, K=16, num_warps=1)
        zetile.get_device().synchronize()
        ref = a.astype(np.float64) @ b.astype(np.float64)
        out[shift] = float(np.abs(c - ref).max() / np.abs(ref).max())
    except Exception as e:
        out[shift] = str(e)
print("RESULT", json.dumps(out))
"""


def test_e5_block2d_operand_check():
    # ZETILE_OPENCL_BLOCK2D_CHECK=1: the emulated 2D block builtins check the
    # spec's operand rules (emu/block2d.cl) and the launch reports the first
    # violation. C's rows are 64 bytes (16 fp32) apart: with a 64-byte aligned
    # base the block write is within the rules; 16 bytes past a boundary the
    # emitter moves the base down 16 bytes and widens the region to 80 bytes,
    # beyond the 64-byte pitch (a finding, not fixed yet: the test records it).
    opencl_cpu_or_skip()
    res = run_result(CHECK_RUN, path=HERE,
                     env={"ZETILE_DEVICE": "opencl:cpu", "ZETILE_OPENCL_BLOCK2D_CHECK": "1"},
                     timeout=600)
    assert isinstance(res["0"], float) and res["0"] <= 1e-5, res
    msg = res["16"]
    assert isinstance(msg, str), res
    assert "intel_sub_group_2d_block_write_32b_8r16x1c" in msg, msg
    assert "pitch below the width" in msg and "width 80" in msg and "pitch 64" in msg, msg
