"""dg2 target (Arc A-series, Xe-HPG, SIMD8): the tutorial kernels through
zetile's own SIMD8 lowering. Evidence: E1 (spirv-val) and E2 (ocloc for
acm-g10 builds them with no unresolved call); for the matmuls, DPAS in the
XeHPG ISA inside the K loop; E3: Debian's Level Zero driver simulating a DG2
(AUB mode) creates and launches them, the runtime picking the dg2 target by
itself. Numerics cannot be checked here (no DG2; the OpenCL CPU runtime has
no SIMD8 DPAS emulation)."""
import os
import subprocess
import sys
import tempfile

import pytest

from zt_testutil import AUB_ENV, EXAMPLES, have_tool, neo_installed, run_python
from zetile.jit import compile as zcompile
from zetile.tools import isa

sys.path.insert(0, EXAMPLES)

needs_tools = pytest.mark.skipif(
    not (have_tool("ocloc") and have_tool("iga64") and have_tool("spirv-val")),
    reason="ocloc/iga64/spirv-val are not installed")

MATMUL_SIG = ("*fp16,*fp16,*fp16,i32,i32,i32,i32,i32,i32,i32,i32,i32")


def _kernels():
    from vector_add import add_kernel
    from softmax import softmax_kernel
    from layer_norm import _layer_norm_fwd_fused
    return {
        "vector_add": (add_kernel, "*fp32,*fp32,*fp32,i32", {"BLOCK_SIZE": 1024}),
        "softmax": (softmax_kernel, "*fp32,*fp32,i32,i32,i32,i32", {"BLOCK_SIZE": 1024}),
        "layer_norm": (_layer_norm_fwd_fused, "*fp32,*fp32,*fp32,*fp32,*fp32,*fp32,i32,i32,fp32",
                       {"BLOCK_SIZE": 1024}),
    }


def _spirv_val(spirv):
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "k.spv")
        with open(p, "wb") as f:
            f.write(spirv)
        r = subprocess.run(["spirv-val", p], capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr


def _single(isas):
    (text,) = [t for n, t in isas.items() if not n.startswith("Intel_Symbol")]
    return text


@needs_tools
@pytest.mark.parametrize("name", ["vector_add", "softmax", "layer_norm"])
def test_skeleton_kernels_build_for_acm_g10(name):
    fn, sig, consts = _kernels()[name]
    ck = zcompile(fn, signature=sig, constexprs=consts, target="dg2")
    assert ck.metadata.get("subgroup_size") in (8, "8")
    _spirv_val(ck.asm["spirv"])
    isas, log = isa.ocloc_isa(ck.asm["spirv"], "dg2")
    k = isa.analyze_isa(_single(isas))
    assert k["calla"] == 0
    assert k["instructions"] > 10
    assert k["sends_by_kind"]["load"] >= 1 and k["sends_by_kind"]["store"] >= 1
    assert "spill" not in log.lower(), log


@needs_tools
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_matmul_uses_dpas_on_acm_g10(dtype):
    from matmul import matmul_kernel
    sig = MATMUL_SIG.replace("fp16", dtype)
    ck = zcompile(matmul_kernel, signature=sig,
                  constexprs={"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32,
                              "GROUP_SIZE_M": 4}, target="dg2")
    _spirv_val(ck.asm["spirv"])
    text = _single(isa.ocloc_isa(ck.asm["spirv"], "dg2")[0])
    k = isa.analyze_isa(text)
    assert k["calla"] == 0
    assert k["dpas"] > 0 and k["dpas_in_innermost_loop"] > 0
    assert ("(8|M0)" in line for line in text.splitlines() if "dpas" in line)
    if dtype == "bf16":
        assert ":bf" in text


@needs_tools
@pytest.mark.parametrize("kind", ["descriptor", "block_ptr"])
def test_block_io_matmuls_use_dpas_on_acm_g10(kind):
    # dg2 has no 2D block IO: tensor-descriptor and block-pointer loads become
    # per-element loads masked by the bounds, in the DPAS operand layouts.
    from matmul import matmul_block_ptr_kernel, matmul_descriptor_kernel
    consts = {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}
    if kind == "descriptor":
        fn = matmul_descriptor_kernel
        sig = {"a_desc": "tensordesc<fp16[32,32]>", "b_desc": "tensordesc<fp16[32,32]>",
               "c_desc": "tensordesc<fp32[32,32]>", "M": "i32", "N": "i32", "K": "i32"}
    else:
        fn, sig = matmul_block_ptr_kernel, MATMUL_SIG.replace("*fp16,*fp16,*fp16", "*fp16,*fp16,*fp32")
    ck = zcompile(fn, signature=sig, constexprs=consts, target="dg2")
    _spirv_val(ck.asm["spirv"])
    text = _single(isa.ocloc_isa(ck.asm["spirv"], "dg2")[0])
    k = isa.analyze_isa(text)
    assert k["calla"] == 0, k
    assert k["dpas"] >= 4 and k["dpas_in_innermost_loop"] >= 4, k


def test_unsupported_dot_names_its_location():
    from matmul import matmul_kernel
    with pytest.raises(Exception) as e:
        zcompile(matmul_kernel, signature=MATMUL_SIG.replace("fp16", "fp32"),
                 constexprs={"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32,
                             "GROUP_SIZE_M": 4}, target="dg2")
    msg = str(e.value)
    assert "tile.dot" in msg and "matmul.py:" in msg and "dg2" in msg


E3_LAUNCH = r"""
import json, numpy as np, zetile
from vector_add import add_kernel
from softmax import softmax_kernel
from matmul import matmul_kernel, matmul_block_ptr_kernel
devs = [d for d in zetile.devices() if d["backend"] == "level_zero"]
assert devs and devs[0]["target"] == "dg2", devs
zetile.set_device(devs[0]["name"])
dev = zetile.get_device()
f16, f32 = zetile.language.float16, zetile.language.float32
out = {}
x, y, o = (zetile.empty(4096, f32) for _ in range(3))
ck = add_kernel[(4,)](x, y, o, 4096, BLOCK_SIZE=1024)
out["subgroup"] = int(ck.metadata["subgroup_size"])
softmax_kernel[(4,)](o, x, 1024, 1024, 4, 1000, BLOCK_SIZE=1024)
M, N, K = 127, 259, 67
a, b, c = zetile.empty((M, K), f16), zetile.empty((K, N), f16), zetile.empty((M, N), f16)
matmul_kernel[(4 * 9,)](a, b, c, M, N, K, K, 1, N, 1, N, 1, BLOCK_SIZE_M=32, BLOCK_SIZE_N=32,
                        BLOCK_SIZE_K=32, GROUP_SIZE_M=4)
matmul_block_ptr_kernel[(4, 9)](a, b, c, M, N, K, K, 1, N, 1, N, 1, BLOCK_M=32, BLOCK_N=32,
                                BLOCK_K=32)
dev.synchronize()
out["launched"] = True
print("RESULT " + json.dumps(out))
"""


@pytest.mark.skipif(not neo_installed(), reason="Debian's NEO (intel-opencl-icd) is not installed")
def test_e3_level_zero_dg2_creates_and_launches():
    env = dict(AUB_ENV, ProductFamilyOverride="dg2")
    r = run_python(E3_LAUNCH, env=env, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    res = __import__("json").loads(line[len("RESULT "):])
    assert res["launched"] and res["subgroup"] == 8, res
