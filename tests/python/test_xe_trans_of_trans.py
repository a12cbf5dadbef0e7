"""`tl.trans(x.T)` into tl.dot on Xe (Intel's FlashAttention backward:
`qT = q_desc.load(...).T` feeds `tl.dot(k, qT)` and `tl.trans(qT)` feeds
`tl.dot(dsT, tl.trans(qT), dk)`; the dq loop does the same with kT).
lowering/xe/xe_trans_load.c folds a transpose of a transpose whose orders
compose to the identity before its other rewrites, so the dk dot reads the
loaded Q block as it is stored. Before, the outer transpose of the 64x16
view was refused on 8 subgroups ("tile.trans: 2-D tile 16x64 does not split
into 8x16 blocks over the 8x1 subgroup grid").

Evidence: E1 (spirv-val, pvc and bmg), E2 (ocloc + iga64 for pvc: DPAS,
spills), E4 (CPU target against numpy), E5 (the pvc SPIR-V on Intel's
OpenCL CPU runtime)."""
import os

import numpy as np
import pytest

import zetile
import zetile.language as tl
from zt_testutil import have_tool, opencl_cpu_or_skip, run_result, spirv_val

HERE = os.path.dirname(os.path.abspath(__file__))


@zetile.jit
def dk_kernel(Q, K, DK, N_CTX, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
              BLOCK_N: tl.constexpr):
    # dk = sum over Q blocks of (0.125 * K Q^T) Q: the backward's dk form.
    start_n = tl.program_id(0) * BLOCK_N
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    desc_q = tl.make_tensor_descriptor(Q, shape=[N_CTX, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    k = tl.load(K + offs_n[:, None] * HEAD_DIM + offs_d[None, :])
    dk = tl.zeros([BLOCK_N, HEAD_DIM], dtype=tl.float32)
    for start_m in range(0, N_CTX, BLOCK_M):
        qT = desc_q.load([start_m, 0]).T
        sT = tl.dot(k, qT) * 0.125
        dk = tl.dot(sT.to(tl.float16), tl.trans(qT), dk)
    tl.store(DK + offs_n[:, None] * HEAD_DIM + offs_d[None, :], dk)


SIG = {"Q": "*fp16", "K": "*fp16", "DK": "*fp32", "N_CTX": "i32:16"}
# Intel's masked backward step: 16 query rows a step, 64 keys a program.
CONF = {"HEAD_DIM": 64, "BLOCK_M": 16, "BLOCK_N": 64}
NUM_WARPS = 8


def _inputs(n):
    rng = np.random.default_rng(n)
    q, k = (rng.standard_normal((n, 64)).astype(np.float16) for _ in range(2))
    f = lambda x: x.astype(np.float32)  # noqa: E731
    s = (f(k) @ f(q).T * 0.125).astype(np.float16)
    return q, k, f(s) @ f(q)


def _run(n):
    q, k, ref = _inputs(n)
    dk = np.zeros((n, 64), np.float32)
    dk_kernel[(n // 64,)](q, k, dk, n, **CONF, num_warps=NUM_WARPS)
    return float(np.abs(dk - ref).max() / np.abs(ref).max())


@pytest.mark.parametrize("target", ["pvc", "bmg"])
def test_builds(target):
    ck = zetile.compile(dk_kernel, signature=SIG, constexprs=CONF, target=target,
                        num_warps=NUM_WARPS, cached=False)
    # Per subgroup (8 key rows): K Q^T one 8x16 block x 4 K steps, then
    # 8x64 of dk (4 blocks) x one 16-deep K step.
    assert ck.asm["mlir"].count("xegpu.dpas") == 8, ck.asm["mlir"].count("xegpu.dpas")
    if have_tool("spirv-val"):
        spirv_val(ck.asm["spirv"])


def test_e2_pvc():
    if not (have_tool("ocloc") and have_tool("iga64")):
        pytest.skip("ocloc/iga64 are not installed")
    from zetile.tools import isa
    ck = zetile.compile(dk_kernel, signature=SIG, constexprs=CONF, target="pvc",
                        num_warps=NUM_WARPS, compat=True, cached=False)
    isas, log = isa.ocloc_isa(ck.asm["spirv"], "pvc", "-ze-opt-large-register-file")
    r = isa.analyze_isa("".join(isas.values()))
    print(f"trans of trans, pvc compat: {r} spill~{isa.spill_from_log(log)}")
    assert r["dpas"] == 8 and r["dpas_loop"]["dpas"] == 8, r
    assert isa.spill_from_log(log) == 0, log


def test_cpu_target():
    assert _run(256) < 1e-2


def test_e5_opencl_cpu():
    opencl_cpu_or_skip()
    err = run_result("""
        import json, zetile
        from test_xe_trans_of_trans import _run
        assert zetile.get_device().info["name"] == "opencl:cpu"
        print("RESULT " + json.dumps(_run(128)))
    """, path=HERE, env={"ZETILE_COMPAT": "0"})
    assert err < 1e-2, err
