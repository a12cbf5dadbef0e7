"""dg2 target (Arc A-series, Xe-HPG, SIMD8): the tutorial kernels through
zetile's own SIMD8 lowering. Evidence: E1 (spirv-val) and E2 (ocloc for
acm-g10 builds them with no unresolved call); for the matmuls (fp16, bf16,
int8 -> int32, and fp32 as 3 or 6 bf16 DPAS per block product), DPAS in the
XeHPG ISA inside the K loop, as many as the tiling implies; E3: Debian's
Level Zero driver simulating a DG2 (AUB mode) creates and launches them, the
runtime picking the dg2 target by itself. No DG2 here: numbers are checked
(E5) by running the dg2 SPIR-V on Intel's OpenCL CPU runtime
(ZETILE_OPENCL_TARGET=dg2), the SIMD8 matrix_mad builtins linked from
runtime/opencl/emu/matrix_mad.cl, which is written from the extension's text
as the lowering is: a shared misreading of the spec would pass both, and the
emulation's fp32 fma chain is not XMX's internal precision."""
import collections
import importlib
import os
import pathlib
import sys

import pytest

import zetile
from zt_testutil import AUB_ENV, EXAMPLES, have_tool, neo_installed, run_python, spirv_val
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


def _single(isas):
    (text,) = [t for n, t in isas.items() if not n.startswith("Intel_Symbol")]
    return text


@needs_tools
@pytest.mark.parametrize("name", ["vector_add", "softmax", "layer_norm"])
def test_skeleton_kernels_build_for_acm_g10(name):
    fn, sig, consts = _kernels()[name]
    ck = zcompile(fn, signature=sig, constexprs=consts, target="dg2")
    assert ck.metadata.get("subgroup_size") in (8, "8")
    spirv_val(ck.asm["spirv"])
    isas, log = isa.ocloc_isa(ck.asm["spirv"], "dg2")
    k = isa.analyze_isa(_single(isas))
    assert k["calla"] == 0
    assert k["instructions"] > 10
    assert k["sends_by_kind"]["load"] >= 1 and k["sends_by_kind"]["store"] >= 1
    assert "spill" not in log.lower() and k["scratch_sends"] == 0, (k, log)


@needs_tools
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_matmul_uses_dpas_on_acm_g10(dtype):
    from matmul import matmul_kernel
    sig = MATMUL_SIG.replace("fp16", dtype)
    ck = zcompile(matmul_kernel, signature=sig,
                  constexprs={"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32,
                              "GROUP_SIZE_M": 4}, target="dg2")
    spirv_val(ck.asm["spirv"])
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
    spirv_val(ck.asm["spirv"])
    text = _single(isa.ocloc_isa(ck.asm["spirv"], "dg2")[0])
    k = isa.analyze_isa(text)
    assert k["calla"] == 0, k
    assert k["dpas"] >= 4 and k["dpas_in_innermost_loop"] >= 4, k


def _mad_calls(ck):
    """Builtin name -> number of calls in the work-item MLIR the dg2 lowering
    emitted (before LLVM: one line per call, loops not unrolled)."""
    text = ck.asm["mlir"]
    text = text.decode() if isinstance(text, bytes) else text
    return collections.Counter(ln.split("@")[1].split("(")[0] for ln in text.splitlines()
                               if "llvm.call" in ln and "matrix_mad" in ln)


def _dpas_lines(text):
    return [ln for ln in text.splitlines() if "dpas" in ln]


def _blocks_per_subgroup(ck, m, n):
    # The lowering spreads the [m, n] tile's 8x8 blocks over up to num_warps
    # subgroups (dg2_dpas_grid: a power-of-two grid dividing the blocks).
    warps = int(str(ck.metadata["local_size"]).split(",")[0]) // 8
    blocks = (m // 8) * (n // 8)
    return blocks // min(warps, blocks)


I8_SIG = {"a_desc": "tensordesc<i8[32,64]>", "b_desc": "tensordesc<i8[64,32]>",
          "c_desc": "tensordesc<i32[32,32]>", "M": "i32", "N": "i32", "K": "i32"}
I8_MAD = "_Z36intel_sub_group_i8_i8_matrix_mad_k32Dv8_iS_S_"
U8_MAD = "_Z36intel_sub_group_u8_u8_matrix_mad_k32Dv8_jS_Dv8_i"
BF16_MAD = "_Z40intel_sub_group_bf16_bf16_matrix_mad_k16Dv8_iS_Dv8_f"


def _compile_int8(sig=I8_SIG):
    from matmul import matmul_int8_kernel
    return zcompile(matmul_int8_kernel, signature=sig,
                    constexprs={"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 64}, target="dg2")


def test_int8_dot_calls_the_simd8_k32_builtin():
    # examples/matmul.py's int8 x int8 -> int32 kernel, 32x32 tile, BLOCK_K 64:
    # two K steps of 32 per 8x8 block, nothing else than the SIMD8 i8_i8 form.
    ck = _compile_int8()
    per_sg = _blocks_per_subgroup(ck, 32, 32)
    assert _mad_calls(ck) == {I8_MAD: per_sg * 2}, _mad_calls(ck)


@needs_tools
def test_uint8_dot_calls_the_u8_builtin():
    # uint8 operands are read as unsigned: the u8_u8 form, unsigned bytes in
    # the ISA (iga: ub).
    sig = {k: v.replace("<i8", "<u8") for k, v in I8_SIG.items()}
    ck = _compile_int8(sig)
    assert _mad_calls(ck) == {U8_MAD: _blocks_per_subgroup(ck, 32, 32) * 2}, _mad_calls(ck)
    spirv_val(ck.asm["spirv"])
    text = _single(isa.ocloc_isa(ck.asm["spirv"], "dg2")[0])
    lines = _dpas_lines(text)
    assert lines and all(ln.count(":ub") == 2 for ln in lines), lines


@needs_tools
def test_int8_matmul_uses_dpas_on_acm_g10():
    ck = _compile_int8()
    spirv_val(ck.asm["spirv"])
    text = _single(isa.ocloc_isa(ck.asm["spirv"], "dg2")[0])
    k = isa.analyze_isa(text)
    assert k["calla"] == 0, k
    # 8 subgroups: 2 blocks of 8x8 each, 2 K steps: 4 DPAS per iteration.
    want = _blocks_per_subgroup(ck, 32, 32) * 2
    assert want == 4, ck.metadata
    assert k["dpas"] == want and k["dpas_in_innermost_loop"] == want, k
    # signed bytes in, int32 accumulator (iga: d = dword, b = signed byte)
    for ln in _dpas_lines(text):
        assert "(8|M0)" in ln and ":d" in ln and ln.count(":b") == 2, ln


DOT_KERNELS = (pathlib.Path(__file__).parent / "dot_kernels.py").read_text()


def _compile_fp32(tmp_path, prec):
    """fp32 32x32x32: examples/matmul.py's pointer kernel for Triton's default
    ("tf32"), a descriptor kernel taking input_precision for the others."""
    consts = {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 4}
    if prec is None:
        from matmul import matmul_kernel
        return zcompile(matmul_kernel, signature=MATMUL_SIG.replace("fp16", "fp32"),
                        constexprs=consts, target="dg2")
    (tmp_path / "dg2_dot_prec.py").write_text(DOT_KERNELS)
    sys.path.insert(0, str(tmp_path))
    try:
        mod = importlib.import_module("dg2_dot_prec")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("dg2_dot_prec", None)
    sig = {"a_desc": "tensordesc<fp32[32,32]>", "b_desc": "tensordesc<fp32[32,32]>",
           "c_desc": "tensordesc<fp32[32,32]>", "K": "i32"}
    return zcompile(mod.dot_prec, signature=sig,
                    constexprs={"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "PREC": prec},
                    target="dg2")


# input_precision -> bf16 DPAS per block product and K step (no tf32 on XeHPG)
FP32_TERMS = [(None, 3), ("tf32", 3), ("tf32x3", 6), ("ieee", 6)]


@pytest.mark.parametrize("prec,terms", FP32_TERMS)
def test_fp32_dot_calls_bf16_builtin_per_piece_product(tmp_path, prec, terms):
    ck = _compile_fp32(tmp_path, prec)
    per_sg = _blocks_per_subgroup(ck, 32, 32)
    assert _mad_calls(ck) == {BF16_MAD: per_sg * 2 * terms}, _mad_calls(ck)


@needs_tools
@pytest.mark.parametrize("prec,terms", [FP32_TERMS[0], FP32_TERMS[3]])
def test_fp32_matmul_uses_bf16_dpas_on_acm_g10(tmp_path, prec, terms):
    ck = _compile_fp32(tmp_path, prec)
    spirv_val(ck.asm["spirv"])
    text = _single(isa.ocloc_isa(ck.asm["spirv"], "dg2")[0])
    k = isa.analyze_isa(text)
    assert k["calla"] == 0, k
    # 8 subgroups: 2 blocks of 8x8 each, K 32 = 2 bf16 steps, `terms` products.
    want = _blocks_per_subgroup(ck, 32, 32) * 2 * terms
    assert want == 4 * terms, ck.metadata
    assert k["dpas"] == want and k["dpas_in_innermost_loop"] == want, k
    for ln in _dpas_lines(text):
        assert "(8|M0)" in ln and ":f" in ln and ln.count(":bf") == 2, ln


def test_unsupported_dot_names_its_location():
    from matmul import matmul_descriptor_kernel
    sig = {"a_desc": "tensordesc<i16[32,32]>", "b_desc": "tensordesc<i16[32,32]>",
           "c_desc": "tensordesc<fp32[32,32]>", "M": "i32", "N": "i32", "K": "i32"}
    with pytest.raises(Exception) as e:
        zcompile(matmul_descriptor_kernel, signature=sig,
                 constexprs={"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}, target="dg2")
    msg = str(e.value)
    assert "tile.dot" in msg and "matmul.py:" in msg and "dg2" in msg
    assert "int8 x int8" in msg, msg  # the refusal says what is lowered


E5_DOTS = r"""
import json, sys, numpy as np, zetile
from matmul import matmul_int8_kernel
from zetile.tools.tensor_descriptor import TensorDescriptor as TD
sys.path.insert(0, TMP)
from dg2_dot_prec import dot_prec, mm_i8_ptr
assert zetile.get_device().name == "opencl:cpu"
rng = np.random.default_rng(5)
out = {}
# int8 -> int32: M and N not multiples of the 32x32 tile, K not of BLOCK_K 64.
M, N, K = 127, 272, 96
a = rng.integers(-128, 128, (M, K), dtype=np.int8)
b = rng.integers(-128, 128, (K, N), dtype=np.int8)
c = np.full((M, N), 7, np.int32)
ck = matmul_int8_kernel[(4, 9)](TD.from_tensor(a, [32, 64]), TD.from_tensor(b, [64, 32]),
                                TD.from_tensor(c, [32, 32]), M, N, K, BLOCK_M=32, BLOCK_N=32,
                                BLOCK_K=64)
zetile.get_device().synchronize()
out["target"], out["subgroup"] = ck.metadata["target"], int(ck.metadata["subgroup_size"])
out["int8_mismatches"] = int((c.astype(np.int64) != a.astype(np.int64) @ b.astype(np.int64)).sum())
M, N, K = 70, 50, 100
a = rng.integers(-128, 128, (M, K), dtype=np.int8)
b = rng.integers(-128, 128, (K, N), dtype=np.int8)
c = np.zeros((M, N), np.int32)
mm_i8_ptr[(3, 2)](a, b, c, M, N, K, BM=32, BN=32, BK=32)
zetile.get_device().synchronize()
out["int8_ptr_mismatches"] = int((c != a.astype(np.int64) @ b.astype(np.int64)).sum())
a = rng.integers(0, 256, (M, K), dtype=np.uint8)
b = rng.integers(0, 256, (K, N), dtype=np.uint8)
c = np.zeros((M, N), np.int32)
mm_i8_ptr[(3, 2)](a, b, c, M, N, K, BM=32, BN=32, BK=32)
zetile.get_device().synchronize()
out["uint8_ptr_mismatches"] = int((c != a.astype(np.int64) @ b.astype(np.int64)).sum())
# fp32 (and fp16) with one inf: row 0 of the product is not finite.
M, N, K = 64, 64, 256
for dt, prec in [("float32", "tf32"), ("float32", "ieee"), ("float16", "ieee")]:
    a = rng.standard_normal((M, K)).astype(dt)
    b = rng.standard_normal((K, N)).astype(dt)
    a[0, 0], b[0, 1] = np.inf, 3.0
    c = np.zeros((M, N), np.float32)
    dot_prec[(2, 2)](TD.from_tensor(a, [32, 32]), TD.from_tensor(b, [32, 32]),
                     TD.from_tensor(c, [32, 32]), K, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32,
                     PREC=prec)
    zetile.get_device().synchronize()
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = a64 @ b64
    fin = np.isfinite(ref)
    err = np.abs(c.astype(np.float64)[fin] - ref[fin]) / (np.abs(a64) @ np.abs(b64))[fin]
    out[dt + "_" + prec] = {"rel": float(err.max()),
                            "inf_ok": bool((~np.isfinite(c[~fin])).all())}
print("RESULT " + json.dumps(out))
"""


def test_e5_dots_on_opencl_cpu(tmp_path):
    names = [d["name"] for d in zetile.devices()]
    if "opencl:cpu" not in names:
        pytest.skip("Intel's OpenCL CPU runtime (opencl:cpu) is not available")
    (tmp_path / "dg2_dot_prec.py").write_text(DOT_KERNELS)
    r = run_python(E5_DOTS.replace("TMP", repr(str(tmp_path))),
                   env={"ZETILE_DEVICE": "opencl:cpu", "ZETILE_OPENCL_TARGET": "dg2"},
                   timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    res = __import__("json").loads(line[len("RESULT "):])
    assert res["target"] == "dg2" and res["subgroup"] == 8, res
    assert res["int8_mismatches"] == 0 and res["int8_ptr_mismatches"] == 0, res
    assert res["uint8_ptr_mismatches"] == 0, res
    # Relative to sum |a||b|. tf32 (3 bf16 products of round-to-nearest
    # pieces): the dropped x1*y1 and the pieces' rounding, ~2^-17 each.
    assert res["float32_tf32"]["rel"] < 2 ** -16, res
    # ieee: 6 products, within a few f32 ulps (epsilon 2^-23) of the exact dot.
    assert res["float32_ieee"]["rel"] < 2 ** -20, res
    # fp16 inputs: products exact in f32, so the same f32 accumulation bound.
    assert res["float16_ieee"]["rel"] < 2 ** -20, res
    assert all(v["inf_ok"] for k, v in res.items() if k.startswith("float")), res


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
