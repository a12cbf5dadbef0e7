"""`desc.load([...]).T` into tl.dot on Xe (tutorial 06's K^T, the TMA
matmuls' b.T): lowering/xe/xe_trans_load.c reads a transposed 2-D block load
as a block load of the transposed view, which, with an inner stride other
than 1, is a masked pointer load of strided row gathers. Before, the
transpose was refused ("a transpose of a tile split across subgroups").

Evidence: E1 (spirv-val), E4 (CPU target against numpy), E5 (the pvc SPIR-V
on Intel's OpenCL CPU runtime, lengths that are and are not multiples of the
blocks: the bounds become the load's mask)."""
import os

import numpy as np
import pytest

import zetile
import zetile.language as tl
from zt_testutil import have_tool, opencl_cpu_or_skip, run_result, spirv_val

HERE = os.path.dirname(os.path.abspath(__file__))


@zetile.jit
def qkt_kernel(Q, K, Out, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
               BLOCK_N: tl.constexpr):
    pid = tl.program_id(0)
    desc_q = tl.make_tensor_descriptor(Q, shape=[N_CTX, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    desc_k = tl.make_tensor_descriptor(K, shape=[N_CTX, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    desc_o = tl.make_tensor_descriptor(Out, shape=[N_CTX, N_CTX], strides=[N_CTX, 1],
                                       block_shape=[BLOCK_M, BLOCK_N])
    q = desc_q.load([pid * BLOCK_M, 0])
    for start_n in range(0, N_CTX, BLOCK_N):
        k = desc_k.load([start_n, 0]).T
        qk = tl.dot(q, k)
        desc_o.store([pid * BLOCK_M, start_n], qk.to(tl.float16))


SIG = {"Q": "*fp16", "K": "*fp16", "Out": "*fp16", "N_CTX": "i32:16"}
CONF = {"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64}


def _reference(n):
    rng = np.random.default_rng(n)
    q = rng.standard_normal((n, 64)).astype(np.float16)
    k = rng.standard_normal((n, 64)).astype(np.float16)
    return q, k, q.astype(np.float32) @ k.astype(np.float32).T


@pytest.mark.parametrize("target", ["pvc", "bmg"])
def test_builds_without_a_transpose(target):
    ck = zetile.compile(qkt_kernel, signature=SIG, constexprs=CONF, target=target, num_warps=8,
                        cached=False)
    mlir = ck.asm["mlir"]
    assert mlir.count("xegpu.dpas") >= 32  # 128x64x64 over 8 subgroups: 4 blocks x 4 k-steps x 2
    if have_tool("spirv-val"):
        spirv_val(ck.asm["spirv"])


@pytest.mark.parametrize("n", [256, 200])
def test_cpu_target(n):
    q, k, ref = _reference(n)
    out = np.zeros((n, n), np.float16)
    qkt_kernel[(-(-n // 128),)](q, k, out, n, **CONF, num_warps=8)
    np.testing.assert_allclose(out.astype(np.float32), ref, atol=0.05, rtol=0.01)


def test_e5_opencl_cpu():
    opencl_cpu_or_skip()
    errs = run_result("""
        import json, numpy as np, zetile
        from test_xe_trans_load import qkt_kernel, CONF, _reference
        assert zetile.get_device().info["name"] == "opencl:cpu"
        errs = []
        for n in (256, 200):
            q, k, ref = _reference(n)
            out = np.zeros((n, n), np.float16)
            qkt_kernel[(-(-n // 128),)](q, k, out, n, **CONF, num_warps=8)
            errs.append(float(np.abs(out.astype(np.float32) - ref).max()))
        print("RESULT " + json.dumps(errs))
    """, path=HERE)
    assert max(errs) < 0.05, errs
