"""The compat path's VNNI B reads as IGC's internal 2D transform read
(lowering/xe/xe_igc_vnni.c, issue 12, session 20).

A dot's 16x16 B block read from a row-major pointer tile (attention's V, a
GEMM's B) is, on the compat path, IGC's
__builtin_IB_subgroup_block_read_flat_transform_u16_k16 (one
load_block2d.ugm.d16v send) where the 2D message's rules hold by
construction (the tile 4-byte aligned, 32 or more columns, no column mask,
a pitch of 32 bytes or more in multiples of 16), else the compat library's
per-row read as before. ZETILE_XE_IGC_VNNI=0 keeps the old read (the
"before" here).

Evidence: E1 (spirv-val on the compat SPIR-V, which imports the builtin),
E2 (ocloc + iga64, pvc: the attention forward's VNNI reads of V are
load_block2d sends, and it spills no more registers than with the compat
library's reads; at head dim 128 145 -> 121, bench/xe_attention_isa.py), E5 (the compat SPIR-V on Intel's OpenCL CPU
runtime, whose emulation of the builtin follows the spec layout,
runtime/opencl/emu/subgroup_block.cl: attention fp16/bf16 against numpy,
a GEMM with a K tail, which the builtin's bounds zero-fill), and the cases
the rules exclude keep the library's read (a column mask; a B pointer not
known to be 4-byte aligned)."""
import os
import sys

import pytest

import zetile
import zetile.language as tl
from zt_testutil import env_set, have_tool, opencl_cpu_or_skip, run_result, spirv_val

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from attention_kernels import attn_fwd_kernel  # noqa: E402

FN = b"__builtin_IB_subgroup_block_read_flat_transform_u16_k16"
FN_PLAIN = b"__builtin_IB_subgroup_block_read_flat_u16_m8k16v1"
SLOW = os.environ.get("ZETILE_SLOW_TESTS") == "1"


def _attn_sig(dt):
    return {"Q": f"*{dt}", "K": f"*{dt}", "V": f"*{dt}", "Out": f"*{dt}", "sm_scale": "fp32",
            "N_CTX": "i32:16", "stride_qm": "i32:16", "stride_kn": "i32:16",
            "stride_vn": "i32:16", "stride_om": "i32:16"}


def _attn(dt="fp16", d=64, causal=False, env=None):
    with env_set(env):
        return zetile.compile(attn_fwd_kernel, signature=_attn_sig(dt), target="pvc",
                              num_warps=8, compat=True, cached=False,
                              constexprs={"HEAD_DIM": d, "BLOCK_M": 128, "BLOCK_N": 64,
                                          "CAUSAL": causal})


@zetile.jit
def gemm_kernel(A, B, C, M, N, K, stride_am, stride_bk, stride_cm, BM: tl.constexpr,
                BN: tl.constexpr, BK: tl.constexpr, MASK_N: tl.constexpr, B_OFF: tl.constexpr,
                DOTS: tl.constexpr = 1):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(A + rm[:, None] * stride_am + (k0 + rk)[None, :],
                    mask=(k0 + rk)[None, :] < K, other=0.0)
        if MASK_N:
            bm = ((k0 + rk)[:, None] < K) & (rn[None, :] < N)
        else:
            bm = (k0 + rk)[:, None] < K
        b = tl.load(B + B_OFF + (k0 + rk)[:, None] * stride_bk + rn[None, :], mask=bm,
                    other=0.0)
        acc += tl.dot(a, b)
        if DOTS > 1:  # more dots in the body than the sink serves
            acc += tl.dot(a * 2, b)
            acc += tl.dot(a * 3, b)
    tl.store(C + rm[:, None] * stride_cm + rn[None, :], acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))


GEMM_SIG = {"A": "*fp16", "B": "*fp16", "C": "*fp32", "M": "i32", "N": "i32", "K": "i32",
            "stride_am": "i32:16", "stride_bk": "i32:16", "stride_cm": "i32:16"}


def _gemm(mask_n=False, b_off=0, dots=1):
    return zetile.compile(gemm_kernel, signature=GEMM_SIG, target="pvc", num_warps=4,
                          compat=True, cached=False,
                          constexprs={"BM": 32, "BN": 64, "BK": 32, "MASK_N": mask_n,
                                      "B_OFF": b_off, "DOTS": dots})


def test_attention_reads_v_with_the_builtin():
    if not have_tool("spirv-val"):
        pytest.skip("spirv-val is not installed")
    ck = _attn()
    # V: 64x64 a subgroup (8x1 grid), 4x4 blocks of 16x16; Q (session 21):
    # 16x64 a subgroup, 2x4 A blocks of 8x16, IGC's plain read.
    assert ck.asm["mlir"].count("zt.igc_vnni") == 16 + 8, ck.asm["mlir"].count("zt.igc_vnni")
    assert FN in ck.asm["spirv"] and FN_PLAIN in ck.asm["spirv"]
    spirv_val(ck.asm["spirv"])
    no_plain = _attn(env={"ZETILE_XE_IGC_PLAIN": "0"})
    assert no_plain.asm["mlir"].count("zt.igc_vnni") == 16
    assert FN in no_plain.asm["spirv"] and FN_PLAIN not in no_plain.asm["spirv"]
    before = _attn(env={"ZETILE_XE_IGC_VNNI": "0"})
    assert "zt.igc_vnni" not in before.asm["mlir"] and FN not in before.asm["spirv"]
    assert FN_PLAIN not in before.asm["spirv"]


@pytest.mark.parametrize("mask_n,b_off,dots,marked", [(False, 0, 1, True), (True, 0, 1, False),
                                                      (False, 1, 1, False), (False, 0, 3, False)])
def test_rules_decide_the_read(mask_n, b_off, dots, marked):
    # A column mask (the width is what is left of N, any size) and a B tile
    # one element past an aligned pointer (2-byte aligned: x and the width
    # would not be whole dwords) keep the compat library's read; so does a
    # loop body of three dots, which the sink leaves as written (tutorial
    # 06's backward spilled 641 -> 1149 registers with the builtin there).
    ck = _gemm(mask_n, b_off, dots)
    assert ("zt.igc_vnni" in ck.asm["mlir"]) == marked
    assert (FN in ck.asm["spirv"]) == marked
    if have_tool("spirv-val"):
        spirv_val(ck.asm["spirv"])


def test_e2_sends_and_spills():
    # Head dim 64 (head dim 128, where the spills are, in
    # bench/xe_attention_isa.py --compat: 145 -> 121 registers).
    if not (have_tool("ocloc") and have_tool("iga64")):
        pytest.skip("ocloc/iga64 are not installed")
    from zetile.tools import isa
    out = {}
    for name, env in (("igc", {}), ("library", {"ZETILE_XE_IGC_VNNI": "0"})):
        ck = _attn(env=env)
        isas, log = isa.ocloc_isa(ck.asm["spirv"], "pvc", "-ze-opt-large-register-file")
        r = isa.analyze_isa("".join(isas.values()))
        assert r["calla"] == 0, r
        text = "".join(isas.values())
        out[name] = (r["block2d"]["load"], isa.spill_from_log(log),
                     text.count("load_block2d.ugm.d16.a64"), r["sends"])
    print(out)
    # 16 VNNI reads of V (64x64: 4x4 blocks) and 8 plain reads of Q (2x4
    # A blocks, session 21: 16 rows of 1-D block reads each before, 291 ->
    # 171 sends) become load_block2d sends.
    assert out["igc"][0] == out["library"][0] + 16 + 8, out
    assert out["igc"][2] == out["library"][2] + 8, out
    assert out["igc"][1] <= out["library"][1] and out["igc"][3] < out["library"][3], out


@pytest.mark.skipif(not SLOW, reason="ZETILE_SLOW_TESTS=1 (two head dim 128 builds, ~20 s)")
def test_e2_plain_reads_lower_d128_spills():
    # pvc compat, 256 GRF, fp16 head dim 128: Q's 8x16 A blocks as IGC's
    # plain 2D read (session 21) instead of the compat library's per-row
    # reads: 121 -> 103 spilled registers (bench/xe_attention_isa.py).
    if not (have_tool("ocloc") and have_tool("iga64")):
        pytest.skip("ocloc/iga64 are not installed")
    from zetile.tools import isa
    out = {}
    # The multiply as written (ZETILE_XE_LAZY_RESCALE=0): with the rescale
    # in its branch (session 22) both spill nothing.
    keep = {"ZETILE_XE_LAZY_RESCALE": "0"}
    for name, env in (("igc", keep), ("library", dict(keep, ZETILE_XE_IGC_PLAIN="0"))):
        ck = _attn(d=128, env=env)
        isas, log = isa.ocloc_isa(ck.asm["spirv"], "pvc", "-ze-opt-large-register-file")
        r = isa.analyze_isa("".join(isas.values()))
        assert r["calla"] == 0 and r["dpas_loop"]["dpas"] == 128, r
        out[name] = (isa.spill_from_log(log), r["sends"])
    print(out)
    assert out["igc"][0] < out["library"][0] and out["igc"][1] < out["library"][1], out


def test_plain_reads_only_where_the_loads_are_sunk():
    # With the loads where the tile ops stand (ZETILE_XE_SINK_LOADS=0, or a
    # kernel with a loop of more than two dots) the plain read made ocloc
    # abort (SIGABRT); there Q keeps the library's read, V its VNNI read.
    ck = _attn(env={"ZETILE_XE_SINK_LOADS": "0"})
    assert FN in ck.asm["spirv"] and FN_PLAIN not in ck.asm["spirv"]


RUN_ATTN = """
import json
from attention_kernels import run_fwd_error
out = [[dt, d, causal, run_fwd_error(dt, d, causal)] for dt, d, causal in {variants!r}]
print("RESULT", json.dumps(out))
"""


@pytest.mark.skipif(not SLOW, reason="ZETILE_SLOW_TESTS=1 (~5 min: the compat SPIR-V's "
                    "emulated reads on opencl:cpu)")
def test_e5_attention_compat_on_opencl_cpu(tmp_path):
    opencl_cpu_or_skip()
    res = run_result(RUN_ATTN.format(variants=[("fp16", 64, False), ("bf16", 64, True)]),
                     path=HERE, env={"ZETILE_COMPAT": "1", "ZETILE_CACHE_DIR": str(tmp_path)},
                     timeout=900)
    for dt, d, causal, err in res:
        assert err < (1e-2 if dt == "fp16" else 3e-2), (dt, d, causal, err)


RUN_GEMM = """
import json, numpy as np, zetile
from test_xe_igc_vnni import gemm_kernel
rng = np.random.default_rng(1)
M, N, K = 64, 128, 80   # K tail: the last B tile's rows 80..95 read as zeros
a = rng.standard_normal((M, K)).astype(np.float16)
b = rng.standard_normal((K, N)).astype(np.float16)
c = np.zeros((M, N), np.float32)
gemm_kernel[(M // 32, N // 64)](a, b, c, M, N, K, K, N, N, BM=32, BN=64, BK=32, MASK_N=False,
                                 B_OFF=0, num_warps=4)
zetile.get_device().synchronize()
ref = a.astype(np.float32) @ b.astype(np.float32)
print("RESULT", json.dumps(float(np.abs(c - ref).max())))
"""


def test_e5_gemm_k_tail_compat_on_opencl_cpu(tmp_path):
    opencl_cpu_or_skip()
    assert FN in _gemm().asm["spirv"]
    err = run_result(RUN_GEMM, path=HERE, env={"ZETILE_COMPAT": "1",
                                                "ZETILE_CACHE_DIR": str(tmp_path)}, timeout=600)
    assert err < 1e-3, err
