"""IGC's 2D block reads for tensor-descriptor loads on the compat path
(lowering/xe/xe_igc_vnni.c, xe_igc_vnni_desc_ok; issue 12, session 21).

Intel's FlashAttention (ib-flash-attention) and tutorial 06 read V and Q
through tensor descriptors / block pointers, not pointer tiles. Their
tile.block_load blocks were never marked for IGC's internal 2D reads (only
pointer loads were), so the compat library's per-row reads served them. A
descriptor's width, pitch and column offset are its own operands: where the
width is a constant of 64 bytes or more, the pitch a constant multiple of 16
bytes (64 or more), the column offset an even constant and the base 4-byte
aligned (Intel's [y, HEAD_DIM] descriptors with strides [HEAD_DIM, 1]), V's
16x16 B blocks are IGC's transform read and Q's 8x16 A blocks its plain read.

Evidence: E1 (spirv-val), E2 (ocloc + iga64, pvc, 256 GRF: the Intel-form
forward at head dim 64 spills nothing, 12 registers with the library's
reads; ZETILE_XE_IGC_VNNI=0 is the before), E5 (a descriptor GEMM with a K
tail on Intel's OpenCL CPU runtime against numpy); a run-time width keeps
the library's read unless it (and a run-time pitch) is an argument Triton's
launcher specialized as a multiple of 16 (`i32:16`, session 22: tutorial
09's and 03a's [M, K] descriptors with strides [K, 1]), proven at compile
time since IGC drops the builtin behind a run-time check."""
import os
import sys

import pytest

import zetile
import zetile.language as tl
from zt_testutil import env_set, have_tool, opencl_cpu_or_skip, run_result, spirv_val

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

FN = b"__builtin_IB_subgroup_block_read_flat_transform_u16_k16"
FN_PLAIN = b"__builtin_IB_subgroup_block_read_flat_u16_m8k16v1"


@zetile.jit
def attn_desc_kernel(Q, K, V, O, sm_scale, Z, H, N_CTX: tl.constexpr, HEAD_DIM: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Intel's _attn_fwd (flash_attention_benchmark.py) in short: every
    operand through a [Z*H*N_CTX, HEAD_DIM] descriptor, not causal."""
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    y_dim = Z * H * N_CTX
    desc_q = tl.make_tensor_descriptor(Q, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    desc_k = tl.make_tensor_descriptor(K, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    desc_v = tl.make_tensor_descriptor(V, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    desc_o = tl.make_tensor_descriptor(O, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    offset_y = off_hz * N_CTX
    qo_y = offset_y + start_m * BLOCK_M
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504
    q = desc_q.load([qo_y, 0])
    for start_n in range(0, N_CTX, BLOCK_N):
        k = desc_k.load([offset_y + start_n, 0]).T
        qk = tl.dot(q, k)
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)
        l_ij = tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = desc_v.load([offset_y + start_n, 0])
        acc = tl.dot(p.to(tl.float16), v, acc)
        l_i = l_i * alpha + l_ij
        m_i = m_ij
    acc = acc / l_i[:, None]
    desc_o.store([qo_y, 0], acc.to(tl.float16))


def _attn(env=None):
    sig = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "O": "*fp16", "sm_scale": "fp32",
           "Z": "i32", "H": "i32"}
    with env_set(env):
        return zetile.compile(attn_desc_kernel, signature=sig, target="pvc", num_warps=8,
                              compat=True, cached=False,
                              constexprs={"N_CTX": 256, "HEAD_DIM": 64, "BLOCK_M": 128,
                                          "BLOCK_N": 64})


@zetile.jit
def gemm_desc_kernel(A, B, C, M, K, N: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                     BK: tl.constexpr):
    """A [M, 64] (zero-padded past K) and B [K, N] through descriptors; N a
    constant (B's width), B's rows past K (its height) read as zeros."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    da = tl.make_tensor_descriptor(A, shape=[M, 64], strides=[64, 1], block_shape=[BM, BK])
    db = tl.make_tensor_descriptor(B, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        a = da.load([pid_m * BM, k0])
        b = db.load([k0, pid_n * BN])
        acc += tl.dot(a, b)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=rm[:, None] < M)


@zetile.jit
def gemm_desc_rt_kernel(A, B, C, M, K, N, BM: tl.constexpr, BN: tl.constexpr,
                        BK: tl.constexpr):
    """The same with B's width (and pitch) a run-time value."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    da = tl.make_tensor_descriptor(A, shape=[M, K], strides=[64, 1], block_shape=[BM, BK])
    db = tl.make_tensor_descriptor(B, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        acc += tl.dot(da.load([pid_m * BM, k0]), db.load([k0, pid_n * BN]))
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    tl.store(C + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


GEMM_CONST = {"BM": 32, "BN": 64, "BK": 32}


def _gemm(rt=False, env=None, hinted=False):
    sig = {"A": "*fp16", "B": "*fp16", "C": "*fp32", "M": "i32", "K": "i32"}
    if rt:
        sig["N"] = "i32"
    if hinted:  # as Triton's launcher specializes K and N when they are multiples of 16
        sig["K"] = sig["N"] = "i32:16"
    with env_set(env):
        return zetile.compile(gemm_desc_rt_kernel if rt else gemm_desc_kernel, signature=sig,
                              target="pvc", num_warps=4, compat=True, cached=False,
                              constexprs=GEMM_CONST if rt else {**GEMM_CONST, "N": 128})


def test_descriptor_reads_use_the_builtins():
    ck = _attn()
    # V: 64x64 a subgroup, 4x4 VNNI blocks; Q: 16x64 a subgroup, 2x4 A blocks.
    assert ck.asm["mlir"].count("zt.igc_vnni") == 16 + 8, ck.asm["mlir"].count("zt.igc_vnni")
    assert FN in ck.asm["spirv"] and FN_PLAIN in ck.asm["spirv"]
    before = _attn(env={"ZETILE_XE_IGC_VNNI": "0"})
    assert "zt.igc_vnni" not in before.asm["mlir"] and FN not in before.asm["spirv"]
    g = _gemm()
    assert FN in g.asm["spirv"] and FN_PLAIN in g.asm["spirv"]
    if have_tool("spirv-val"):
        spirv_val(ck.asm["spirv"])
        spirv_val(g.asm["spirv"])


def test_runtime_width_keeps_the_library_read():
    # B's width N at run time: the 64-byte minimum is not known; A's (a
    # constant pitch of 64 elements, K at run time as its width) likewise.
    g = _gemm(rt=True)
    assert "zt.igc_vnni" not in g.asm["mlir"] and FN not in g.asm["spirv"]


def test_hinted_runtime_width_and_pitch_use_the_builtins():
    # K and N specialized as multiples of 16 (tutorial 09's and 03a's [M, K]
    # descriptors with strides [K, 1]): width and pitch are multiples of 32
    # bytes, proven at compile time (IGC drops the builtin behind any
    # run-time check), so A's 8x16 blocks are IGC's plain read and B's
    # 16x16 blocks its transform read. Before (session 21): the library's.
    g = _gemm(rt=True, hinted=True)
    assert FN in g.asm["spirv"] and FN_PLAIN in g.asm["spirv"], g.asm["mlir"].count("zt.igc_vnni")
    if have_tool("spirv-val"):
        spirv_val(g.asm["spirv"])
    if have_tool("ocloc") and have_tool("iga64"):
        from zetile.tools import isa
        loads = {}
        for name, env in (("igc", {}), ("library", {"ZETILE_XE_IGC_VNNI": "0"})):
            isas, log = isa.ocloc_isa(_gemm(rt=True, hinted=True, env=env).asm["spirv"], "pvc", "")
            r = isa.analyze_isa("".join(isas.values()))
            loads[name] = (r["block2d"]["load"], r["sends"], r["scratch_sends"])
        print(loads)
        # 18:15 UTC: builtins 8 load_block2d / 75 sends, library 0 / 259.
        assert loads["igc"][0] > loads["library"][0] and loads["igc"][1] < loads["library"][1], loads


def test_e2_descriptor_attention_spills():
    if not (have_tool("ocloc") and have_tool("iga64")):
        pytest.skip("ocloc/iga64 are not installed")
    from zetile.tools import isa
    out = {}
    for name, env in (("igc", {}), ("library", {"ZETILE_XE_IGC_VNNI": "0"})):
        isas, log = isa.ocloc_isa(_attn(env=env).asm["spirv"], "pvc",
                                  "-ze-opt-large-register-file")
        r = isa.analyze_isa("".join(isas.values()))
        out[name] = (r["block2d"]["load"], isa.spill_from_log(log), r["sends"])
    print(out)
    # 15:56 UTC: library 16 block2d loads / 12 spilled / 403 sends; builtins
    # 40 / 0 / 171. Since the compat library keeps its rows in registers
    # (xe_hoist_allocas.c, session 22's second round) the library route does
    # not spill either (16 / 0 / 451, 19:24 UTC): the builtins' gain is sends.
    assert out["igc"][0] == out["library"][0] + 16 + 8, out
    assert out["igc"][1] == 0 and out["library"][1] >= out["igc"][1], out
    assert out["igc"][2] < out["library"][2], out


RUN_GEMM = """
import json, numpy as np, zetile
from test_xe_igc_desc_reads import gemm_desc_kernel
rng = np.random.default_rng(3)
M, N, K = 64, 128, 48   # K tail: B's rows 48..63 past its descriptor, zeros
a = np.zeros((M, 64), np.float16)
a[:, :K] = rng.integers(-3, 4, (M, K))
b = rng.integers(-3, 4, (K, N)).astype(np.float16)
c = np.zeros((M, N), np.float32)
gemm_desc_kernel[(M // 32, N // 64)](a, b, c, M, K, N=N, BM=32, BN=64, BK=32, num_warps=4)
zetile.get_device().synchronize()
ref = a[:, :K].astype(np.float32) @ b.astype(np.float32)
print("RESULT", json.dumps(float(np.abs(c - ref).max())))
"""


RUN_GEMM_RT = """
import json, numpy as np, zetile
from test_xe_igc_desc_reads import gemm_desc_rt_kernel, _gemm
rng = np.random.default_rng(4)
M, N, K = 64, 144, 48   # N: two and a quarter BN blocks (B's width cuts the last), K: a tail
a = np.zeros((M, 64), np.float16)
a[:, :K] = rng.integers(-3, 4, (M, K))
b = rng.integers(-3, 4, (K, N)).astype(np.float16)
c = np.zeros((M, N), np.float32)
ck = gemm_desc_rt_kernel[(M // 32, 3)](a, b, c, M, K, N, BM=32, BN=64, BK=32, num_warps=4)
zetile.get_device().synchronize()
ref = a[:, :K].astype(np.float32) @ b.astype(np.float32)
builtin = b"__builtin_IB_subgroup_block_read_flat_transform_u16_k16" in ck.asm["spirv"]
print("RESULT", json.dumps([float(np.abs(c - ref).max()), builtin]))
"""


def test_e5_hinted_runtime_descriptor_gemm_on_opencl_cpu(tmp_path):
    # The builtins with run-time width (N = 144: B's last block is cut at
    # its width, zero-filled; A's width K = 48 cuts its second K step) and
    # run-time pitch, exact against numpy on Intel's OpenCL CPU runtime.
    opencl_cpu_or_skip()
    err, builtin = run_result(RUN_GEMM_RT, path=HERE, env={"ZETILE_COMPAT": "1",
                                                            "ZETILE_CACHE_DIR": str(tmp_path)},
                              timeout=600)
    assert builtin and err == 0.0, (err, builtin)


def test_e5_descriptor_gemm_on_opencl_cpu(tmp_path):
    opencl_cpu_or_skip()
    assert FN in _gemm().asm["spirv"]
    err = run_result(RUN_GEMM, path=HERE, env={"ZETILE_COMPAT": "1",
                                                "ZETILE_CACHE_DIR": str(tmp_path)}, timeout=600)
    assert err == 0.0, err
