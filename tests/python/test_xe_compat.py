"""The Xe compat path (issue 3): drivers without 2D block IO, like Debian 12's
IGC 1.0.12504. With compat=True the lowering links OpenCL C versions of the 2D
block builtins (runtime/opencl/emu/block2d.cl, written from the spec) into the
module: the SPIR-V imports none, ocloc builds it with no unresolved call and
DPAS stays in the K loop (E1, E2), and Level Zero creates and launches it on
the Debian driver in AUB mode, choosing the path from the device by itself (E3)."""
import pytest

import zetile
from zt_testutil import AUB_ENV, have_tool, neo_installed, run_python
from zetile.tools import isa

DESC_SIG = {"a_desc": "tensordesc<fp16[64,32]>", "b_desc": "tensordesc<fp16[32,64]>",
            "c_desc": "tensordesc<fp16[64,64]>", "M": "i32", "N": "i32", "K": "i32"}
# Unit inner strides are specialized to constants, as a launch does for ints equal to 1.
BP_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32",
          "K": "i32", "stride_am": "i32", "stride_bk": "i32", "stride_cm": "i32"}
UNIT = {"stride_ak": 1, "stride_bn": 1, "stride_cn": 1}
CONSTS = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}


def _kernels():
    from matmul import matmul_block_ptr_kernel, matmul_descriptor_kernel
    return [("descriptor", matmul_descriptor_kernel, DESC_SIG),
            ("block_ptr", matmul_block_ptr_kernel, BP_SIG)]


@pytest.mark.skipif(not (have_tool("ocloc") and have_tool("iga64")), reason="ocloc/iga64 missing")
@pytest.mark.parametrize("which", ["descriptor", "block_ptr"])
def test_compat_builds_without_unresolved_calls(which):
    name, kernel, sig = [k for k in _kernels() if k[0] == which][0]
    consts = dict(CONSTS, **(UNIT if which == "block_ptr" else {}))
    plain = isa.report(kernel, sig, consts, target="pvc", driver=False)
    compat = isa.report(kernel, sig, consts, target="pvc", compat=True, driver=False)
    (p,) = plain["kernels"].values()
    (c,) = compat["kernels"].values()
    assert p["calla"] > 0, "the plain path should import the 2D block builtins"
    assert c["calla"] == 0, c
    assert c["dpas"] >= 16 and c["dpas_in_innermost_loop"] == c["dpas"], c


@pytest.mark.skipif(not neo_installed(), reason="Debian's NEO (intel-opencl-icd) is not installed")
def test_level_zero_picks_the_compat_path_and_launches():
    r = run_python("""
        import numpy as np, zetile
        from matmul import matmul_descriptor
        devs = [d for d in zetile.devices() if d["backend"] == "level_zero"]
        assert devs and devs[0]["compat"], devs
        zetile.set_device(devs[0]["name"])
        a = zetile.empty((128, 64), zetile.language.float16)
        b = zetile.empty((64, 128), zetile.language.float16)
        c = zetile.empty((128, 128), zetile.language.float16)
        matmul_descriptor(a, b, c, BLOCK_M=64, BLOCK_N=64, BLOCK_K=32)
        zetile.get_device().synchronize()
        print("LAUNCHED")
    """, env=AUB_ENV)
    assert r.returncode == 0 and "LAUNCHED" in r.stdout, r.stdout + r.stderr
