"""dg2 (SIMD8 lowering): scf.while (data-dependent loops, scalars and tensors
carried) and arith.mului_extended (tl.umulhi, Triton's philox in tl.rand /
tl.randint), both once refused ("not supported by the dg2 lowering"), and the
shape of the MLIR the lowering prints (what its compile time depends on).
Evidence: E1 (spirv-val) for the builds; E5 on Intel's OpenCL CPU runtime
(ZETILE_OPENCL_TARGET=dg2) against numpy when that runtime is present."""
import json
import sys

import numpy as np
import pytest

import zetile
import zetile.language as tl
from zt_testutil import EXAMPLES, env_set, have_tool, run_python, spirv_val
from zetile.jit import compile as zcompile

sys.path.insert(0, EXAMPLES)

KERNELS = r'''
import zetile
import zetile.language as tl


@zetile.jit
def mulhi_kernel(x_ptr, y_ptr, out_ptr, out2_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    tl.store(out_ptr + offs, tl.umulhi(x, y), mask=m)
    # From the index alone (no load): the lowering's lazy path.
    u = offs.to(tl.uint32) * 2654435761
    tl.store(out2_ptr + offs, tl.umulhi(u, u + 12345), mask=m)


@zetile.jit
def collatz_kernel(x_ptr, out_ptr):
    # A scalar loop whose trip count depends on the data (scf.while).
    i = tl.program_id(0)
    v = tl.load(x_ptr + i)
    steps = 0
    while v != 1:
        v = tl.where(v % 2 == 0, v // 2, 3 * v + 1)
        steps += 1
    tl.store(out_ptr + i, steps)


@zetile.jit
def while_rows_kernel(x_ptr, out_ptr, rows, BLOCK: tl.constexpr):
    # A tensor carried through scf.while: the sum of `rows` rows of BLOCK.
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], tl.float32)
    r = 0
    while r < rows:
        acc += tl.load(x_ptr + r * BLOCK + cols)
        r += 1
    tl.store(out_ptr + cols, acc)
'''

needs_val = pytest.mark.skipif(not have_tool("spirv-val"), reason="spirv-val is not installed")


@pytest.fixture(scope="module")
def kmod(tmp_path_factory):
    d = tmp_path_factory.mktemp("dg2k")
    (d / "dg2_wm_kernels.py").write_text(KERNELS)
    sys.path.insert(0, str(d))
    import dg2_wm_kernels
    yield dg2_wm_kernels
    sys.path.remove(str(d))


@needs_val
def test_umulhi_builds_for_dg2(kmod):
    ck = zcompile(kmod.mulhi_kernel, signature="*u32,*u32,*u32,*u32,i32",
                  constexprs={"BLOCK": 256}, target="dg2")
    spirv_val(ck.asm["spirv"])
    assert "mului_extended" in ck.asm["tile"]


@needs_val
@pytest.mark.parametrize("name", ["collatz_kernel", "while_rows_kernel"])
def test_while_builds_for_dg2(kmod, name):
    sig, consts = {"collatz_kernel": ("*i32,*i32", {}),
                   "while_rows_kernel": ("*fp32,*fp32,i32", {"BLOCK": 128})}[name]
    ck = zcompile(getattr(kmod, name), signature=sig, constexprs=consts, target="dg2")
    spirv_val(ck.asm["spirv"])
    assert "scf.while" in ck.asm["tile"] and "scf.while" in ck.asm["mlir"]


def test_dg2_mlir_prints_constants_once_and_no_branch_per_masked_element():
    # The lowering's text is what parse, cse and convert-scf-to-cf spend
    # their time on: each integer constant once (kernel entry), masked
    # element loads as calls of one helper per type (not one scf.if each).
    from matmul import matmul_kernel
    with env_set({"ZETILE_DG2_LLVMIR": "1"}):  # the LLVM IR text, kept only when asked
        ck = zcompile(matmul_kernel, signature="*fp16,*fp16,*fp16,i32,i32,i32,i32,i32,i32,i32,i32,i32",
                      constexprs={"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32,
                                  "GROUP_SIZE_M": 4}, target="dg2")
    text = ck.asm["mlir"]
    # (%t names: the emitter's values; the prelude's and the layouts' own
    # few constants are named otherwise.)
    consts = [ln.split("=", 1)[1].strip() for ln in text.splitlines()
              if ln.strip().startswith("%t") and " = arith.constant " in ln and ": i" in ln]
    assert consts and len(consts) == len(set(consts)), sorted(consts)
    assert text.count("llvm.call @zt_mload_f16(") >= 32
    assert "scf.if" not in text
    # The helpers stay functions for IGC to inline (called, not inlined, in
    # the LLVM IR given to the SPIR-V backend).
    assert "call spir_func half @zt_mload_f16(" in ck.asm["llvmir"]


@pytest.mark.skipif(not (have_tool("ocloc") and have_tool("iga64")), reason="needs ocloc and iga64")
def test_dg2_helpers_left_to_igc_give_the_inlined_isa():
    # Masked element loads/stores left as calls of their helpers (the default
    # since issue 22's session 21) against LLVM's always-inline before the
    # SPIR-V (ZETILE_DG2_INLINE=1): fewer SPIR-V bytes, the same acm-g10 ISA.
    import re
    from matmul import matmul_kernel
    from zetile.tools import isa

    def build(env):
        with env_set(env):
            ck = zcompile(matmul_kernel, signature="*fp16,*fp16,*fp16,i32,i32,i32,i32,i32,i32,i32,i32,i32",
                          constexprs={"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32,
                                      "GROUP_SIZE_M": 4}, target="dg2", cached=False)
        text, = isa.ocloc_isa(ck.asm["spirv"], target="dg2")[0].values()
        return ck.asm["spirv"], [re.sub(r"//.*", "", ln).rstrip() for ln in text.splitlines()]

    called, called_isa = build({})
    inlined, inlined_isa = build({"ZETILE_DG2_INLINE": "1"})
    assert len(called) < len(inlined)
    assert called_isa == inlined_isa and any("dpas" in ln for ln in called_isa)


def test_dg2_llvm_ir_text_only_when_asked():
    # Printing the LLVM IR was ~5% of a dg2 GEMM's compile (issue 22): the
    # artifact keeps it only under ZETILE_DG2_LLVMIR=1, with the same SPIR-V.
    from vector_add import add_kernel
    sig, consts = "*fp32,*fp32,*fp32,i32", {"BLOCK_SIZE": 256}
    plain = zcompile(add_kernel, signature=sig, constexprs=consts, target="dg2", cached=False)
    with env_set({"ZETILE_DG2_LLVMIR": "1"}):
        kept = zcompile(add_kernel, signature=sig, constexprs=consts, target="dg2", cached=False)
    assert "llvmir" not in plain.asm and "define spir_kernel" in kept.asm["llvmir"]
    assert plain.asm["spirv"] == kept.asm["spirv"]


E5 = r"""
import json, sys, numpy as np, zetile
sys.path.insert(0, TMP)
import dg2_wm_kernels as k
assert zetile.get_device().name == "opencl:cpu"
rng = np.random.default_rng(3)
out = {}
n = 1000
x = rng.integers(0, 2**32, n, dtype=np.uint32)
y = rng.integers(0, 2**32, n, dtype=np.uint32)
o, o2 = np.zeros(n, np.uint32), np.zeros(n, np.uint32)
ck = k.mulhi_kernel[(4,)](x, y, o, o2, n, BLOCK=256)
zetile.get_device().synchronize()
out["target"] = ck.metadata["target"]
ref = ((x.astype(np.uint64) * y.astype(np.uint64)) >> 32).astype(np.uint32)
u = (np.arange(n, dtype=np.uint64) * 2654435761) & 0xffffffff
ref2 = ((u * ((u + 12345) & 0xffffffff)) >> 32).astype(np.uint32)
out["mulhi_bad"] = int((o != ref).sum())
out["mulhi_lazy_bad"] = int((o2 != ref2).sum())
xs = rng.integers(1, 5000, 64, dtype=np.int32)
steps = np.zeros(64, np.int32)
k.collatz_kernel[(64,)](xs, steps)
zetile.get_device().synchronize()
def coll(v):
    s = 0
    while v != 1:
        v = v // 2 if v % 2 == 0 else 3 * v + 1
        s += 1
    return s
out["collatz_bad"] = int(sum(int(steps[i]) != coll(int(xs[i])) for i in range(64)))
rows = 37
a = rng.standard_normal((rows, 128)).astype(np.float32)
s = np.zeros(128, np.float32)
k.while_rows_kernel[(1,)](a, s, rows, BLOCK=128)
zetile.get_device().synchronize()
out["rows_err"] = float(np.abs(s - a.sum(0)).max())
print("RESULT " + json.dumps(out))
"""


def test_e5_while_and_umulhi_on_opencl_cpu(tmp_path):
    names = [d["name"] for d in zetile.devices()]
    if "opencl:cpu" not in names:
        pytest.skip("Intel's OpenCL CPU runtime (opencl:cpu) is not available")
    (tmp_path / "dg2_wm_kernels.py").write_text(KERNELS)
    r = run_python(E5.replace("TMP", repr(str(tmp_path))),
                   env={"ZETILE_DEVICE": "opencl:cpu", "ZETILE_OPENCL_TARGET": "dg2"},
                   timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    res = json.loads(line[len("RESULT "):])
    assert res["target"] == "dg2", res
    assert res["mulhi_bad"] == 0 and res["mulhi_lazy_bad"] == 0, res
    assert res["collatz_bad"] == 0, res
    assert res["rows_err"] < 1e-4, res
