"""A 2-D tile loaded once and read only inside several following loops is
loaded again inside each (lowering/xe/xe_reload_loops.c; issue 12, session
20): tutorial 06's causal forward runs its KV loop twice on one Q tile, which
was held across both beside the accumulator. pvc compat, w4 d64 causal
forward (Intel's tutorial, `--tutorials 06 --targets pvc`): 672 -> 480
spilled registers. ZETILE_XE_RELOAD_PER_LOOP=0 keeps the one load.

Evidence: the emitted text reads Q's blocks in both loops (twice the block
reads), and not where a store stands between the loops; E4 (CPU target) and
E5 (the pvc SPIR-V on Intel's OpenCL CPU runtime) against numpy."""
import os

import pytest

import zetile
import zetile.language as tl
from zt_testutil import env_set, opencl_cpu_or_skip, run_result

HERE = os.path.dirname(os.path.abspath(__file__))


@zetile.jit
def two_loops_kernel(Q, B1, B2, C, W, n1, n2, BM: tl.constexpr, BN: tl.constexpr,
                     BK: tl.constexpr, STORE_BETWEEN: tl.constexpr):
    # C = Q @ (sum of n1 B1 tiles) + Q @ (sum of n2 B2 tiles), Q read by both loops.
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    q = tl.load(Q + rm[:, None] * BK + rk[None, :])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for i in range(0, n1):
        acc += tl.dot(q, tl.load(B1 + i * BK * BN + rk[:, None] * BN + rn[None, :]))
    if STORE_BETWEEN:
        tl.store(W + rm[:, None] * BN + rn[None, :], acc)
    for j in range(0, n2):
        acc += tl.dot(q, tl.load(B2 + j * BK * BN + rk[:, None] * BN + rn[None, :]))
    tl.store(C + rm[:, None] * BN + rn[None, :], acc)


SIG = {"Q": "*fp16", "B1": "*fp16", "B2": "*fp16", "C": "*fp32", "W": "*fp32", "n1": "i32",
       "n2": "i32"}


def _q_reads(store_between=False, env=None):
    with env_set(env):
        ck = zetile.compile(two_loops_kernel, signature=SIG, target="pvc", num_warps=4,
                            compat=True, cached=False,
                            constexprs={"BM": 64, "BN": 64, "BK": 32,
                                        "STORE_BETWEEN": store_between})
    # Q's blocks are the A role's 8x16 f16 reads.
    return sum(1 for ln in ck.asm["mlir"].splitlines()
               if "xegpu.load_nd" in ln and "tensor_desc<8x16xf16" in ln)


def test_q_is_read_in_each_loop():
    once = _q_reads(env={"ZETILE_XE_RELOAD_PER_LOOP": "0"})
    assert once > 0
    assert _q_reads() == 2 * once
    # A store between the loops: the second loop's copy could read what the
    # store wrote (the kernel cannot tell W from Q), so the one load stays.
    assert _q_reads(store_between=True) == once


RUN = """
import json, numpy as np, zetile
from test_xe_reload_loops import two_loops_kernel
rng = np.random.default_rng(5)
n1, n2 = 3, 2
q = rng.standard_normal((64, 32)).astype(np.float16)
b1 = rng.standard_normal((n1, 32, 64)).astype(np.float16)
b2 = rng.standard_normal((n2, 32, 64)).astype(np.float16)
c = np.zeros((64, 64), np.float32)
w = np.zeros((64, 64), np.float32)
two_loops_kernel[(1,)](q, b1, b2, c, w, n1, n2, BM=64, BN=64, BK=32, STORE_BETWEEN=False,
                       num_warps=4)
zetile.get_device().synchronize()
qf = q.astype(np.float32)
ref = qf @ b1.astype(np.float32).sum(0) + qf @ b2.astype(np.float32).sum(0)
print("RESULT", json.dumps({"err": float(np.abs(c - ref).max()),
                            "device": zetile.get_device().info["name"]}))
"""


@pytest.mark.parametrize("device", ["cpu", "opencl:cpu"])
def test_numbers(device, tmp_path):
    if device != "cpu":
        opencl_cpu_or_skip()
    res = run_result(RUN, path=HERE, env={"ZETILE_DEVICE": device,
                                          "ZETILE_CACHE_DIR": str(tmp_path)}, timeout=600)
    assert res["device"] == device and res["err"] < 1e-2, res
