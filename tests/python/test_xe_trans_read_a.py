"""Transposed 2D block reads for a dot's A operand stored transposed (`a.T`,
Intel's transposed-A GEMMs; issue 12, session 20).

A stored row-major as [K, M] and read as the dot's [M, K] A tile (a pointer
load `A + k * stride_ak + m`, or `desc.load([k, m]).T`) has its M elements
one apart and its K rows a stride apart: the geometry of the `b.T` case
(test_xe_trans_block_read.py). One transposed d32 read of 16 K rows x 8
dwords gives lane k the 16 M elements of column k, i.e. two 8x16 A blocks
(lowering/xe/xe_trans_load.c, trans_read_a). Before, every A row was a
strided row gather (16 per 8x16 block). ZETILE_XE_TRANS_READ_A=0 keeps the
gathers (the "before" here).

Evidence: E1 (spirv-val, pvc compat, fp16 and bf16), E2 (ocloc + iga64:
fewer sends, no more spills than the gathers; Intel's
matmul_kernel_with_tensor_descriptors [BM256,BN256,BK32,GM4,w32,A^T] on the
compat path went from 971 sends / 290 spilled to 518 / 0, docs/TUTORIALS.md),
E5 (the pvc SPIR-V on Intel's OpenCL CPU runtime against numpy: the
descriptor form with M and K tails; the pointer form at fp16 and bf16 and
the compat SPIR-V behind ZETILE_SLOW_TESTS=1)."""
import os

import pytest

import zetile
import zetile.language as tl
from zt_testutil import env_set, have_tool, opencl_cpu_or_skip, run_result, spirv_val

HERE = os.path.dirname(os.path.abspath(__file__))
SLOW = os.environ.get("ZETILE_SLOW_TESTS") == "1"


@zetile.jit
def gemm_at_kernel(A, B, C, M, N, K, stride_ak, stride_bk, stride_cm, BM: tl.constexpr,
                   BN: tl.constexpr, BK: tl.constexpr):
    # A stored transposed: element (m, k) at A + k * stride_ak + m.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = tl.load(A + (k0 + rk)[None, :] * stride_ak + rm[:, None])
        b = tl.load(B + (k0 + rk)[:, None] * stride_bk + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(C + rm[:, None] * stride_cm + rn[None, :], acc)


@zetile.jit
def gemm_at_desc_kernel(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # A^T stored [K, M]; its tile read through a descriptor and transposed.
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    da = tl.make_tensor_descriptor(A, shape=[K, M], strides=[M, 1], block_shape=[BK, BM])
    db = tl.make_tensor_descriptor(B, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    dc = tl.make_tensor_descriptor(C, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = da.load([k, pid_m * BM]).T
        b = db.load([k, pid_n * BN])
        acc += tl.dot(a, b)
    dc.store([pid_m * BM, pid_n * BN], acc)


def _ptr(dt="fp16", env=None):
    sig = {"A": f"*{dt}", "B": f"*{dt}", "C": "*fp32", "M": "i32", "N": "i32", "K": "i32",
           "stride_ak": "i32:16", "stride_bk": "i32:16", "stride_cm": "i32:16"}
    with env_set(env):
        return zetile.compile(gemm_at_kernel, signature=sig, target="pvc", num_warps=4,
                              compat=True, cached=False, constexprs={"BM": 64, "BN": 64, "BK": 32})


@pytest.mark.parametrize("dt", ["fp16", "bf16"])
def test_a_transposed_is_read_with_transposed_reads(dt):
    # 64x64 over 4 subgroups (2x2): each subgroup's 32x32 A tile is 4x2
    # blocks of 8x16, two reads per K block of 16: 4 reads; no gathers.
    mlir = _ptr(dt).asm["mlir"]
    assert mlir.count("transpose = array") == 4, mlir.count("transpose = array")
    assert "xegpu.load %" not in mlir
    before = _ptr(dt, {"ZETILE_XE_TRANS_READ_A": "0"}).asm["mlir"]
    assert "transpose = array" not in before and "xegpu.load %" in before
    if have_tool("spirv-val"):
        spirv_val(_ptr(dt).asm["spirv"])


def test_e2_fewer_sends():
    if not (have_tool("ocloc") and have_tool("iga64")):
        pytest.skip("ocloc/iga64 are not installed")
    from zetile.tools import isa
    out = {}
    for name, env in (("reads", {}), ("gathers", {"ZETILE_XE_TRANS_READ_A": "0"})):
        isas, log = isa.ocloc_isa(_ptr(env=env).asm["spirv"], "pvc",
                                  "-ze-opt-large-register-file")
        r = isa.analyze_isa("".join(isas.values()))
        assert r["calla"] == 0 and r["dpas"] == 16, r
        out[name] = (r["sends"], isa.spill_from_log(log), r["block2d"]["load"])
    print(out)  # 11:58 UTC: reads (139, 0, 8), gathers (361, 9, 0)
    assert out["reads"][0] < out["gathers"][0] and out["reads"][1] <= out["gathers"][1], out
    # (the 4 A reads, and B's VNNI reads where the grid gives them 32 columns)
    assert out["reads"][2] >= out["gathers"][2] + 4, out


RUN_DESC = """
import json, numpy as np, zetile
from test_xe_trans_read_a import gemm_at_desc_kernel
M, N, K = 40, 64, 48   # M and K tails: the reads' bounds give zeros
rng = np.random.default_rng(3)
at = rng.standard_normal((K, M)).astype(np.float16)
b = rng.standard_normal((K, N)).astype(np.float16)
c = np.zeros((M, N), np.float32)
gemm_at_desc_kernel[(1, 1)](at, b, c, M, N, K, BM=64, BN=64, BK=32, num_warps=4)
zetile.get_device().synchronize()
print("RESULT", json.dumps(float(np.abs(c - at.astype(np.float32).T @ b.astype(np.float32)).max())))
"""


def test_e5_descriptor_with_tails(tmp_path):
    opencl_cpu_or_skip()
    sig = {"A": "*fp16", "B": "*fp16", "C": "*fp32", "M": "i32:16", "N": "i32:16", "K": "i32:16"}
    ck = zetile.compile(gemm_at_desc_kernel, signature=sig, target="pvc", num_warps=4,
                        cached=False, constexprs={"BM": 64, "BN": 64, "BK": 32})
    assert ck.asm["mlir"].count("transpose = array") == 4
    err = run_result(RUN_DESC, path=HERE, env={"ZETILE_CACHE_DIR": str(tmp_path)}, timeout=600)
    assert err < 1e-4, err


RUN_PTR = """
import json, numpy as np, zetile, ml_dtypes
from test_xe_trans_read_a import gemm_at_kernel
out = []
for dt, M, N, K, nw, bm, bn in [("fp16", 64, 128, 96, 4, 64, 64), ("bf16", 128, 64, 64, 8, 128, 64)]:
    npdt = np.float16 if dt == "fp16" else ml_dtypes.bfloat16
    rng = np.random.default_rng(2)
    at = rng.standard_normal((K, M)).astype(npdt)
    b = rng.standard_normal((K, N)).astype(npdt)
    c = np.zeros((M, N), np.float32)
    gemm_at_kernel[(M // bm, N // bn)](at, b, c, M, N, K, M, N, N, BM=bm, BN=bn, BK=32,
                                       num_warps=nw)
    zetile.get_device().synchronize()
    out.append(float(np.abs(c - at.astype(np.float32).T @ b.astype(np.float32)).max()))
print("RESULT", json.dumps(out))
"""


@pytest.mark.skipif(not SLOW, reason="ZETILE_SLOW_TESTS=1 (~1 min)")
@pytest.mark.parametrize("compat", ["0", "1"])
def test_e5_pointer_fp16_bf16(tmp_path, compat):
    opencl_cpu_or_skip()
    for err in run_result(RUN_PTR, path=HERE, env={"ZETILE_COMPAT": compat,
                                                   "ZETILE_CACHE_DIR": str(tmp_path)},
                          timeout=900):
        assert err < 1e-4, err
