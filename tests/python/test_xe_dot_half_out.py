"""Dots with an fp16 result (`tl.dot(a, b, out_dtype=tl.float16)`, an fp16
accumulator carried through a K loop) on the Intel targets. DPAS accumulates
in fp32 only, so every Xe lowering refused them by name ("dot of f16 x f16 ->
f16"; the conformance suite's dot/out_f16-float16 case), while the CPU target
and Triton run them. Now the dot is an fp32 dot between arith.extf of the
accumulator and arith.truncf of the result (lowering/common/dot_widen.c).
Shown: E1 for pvc, bmg and dg2, E2 for pvc (DPAS issued, nothing spilled),
and the pvc and dg2 SPIR-V on Intel's OpenCL CPU runtime (E5) against numpy
(fp32 products, the fp16 roundings the kernel's types ask for)."""
import os

import pytest

import zetile
import zetile.language as tl
from zt_testutil import have_tool, isa_no_spill, opencl_cpu_or_skip, run_result, spirv_val

HERE = os.path.dirname(os.path.abspath(__file__))


@zetile.jit
def dot_f16_out(A, B, C, O, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                BK: tl.constexpr, ACC: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, BK)
    if ACC:  # an fp16 accumulator read from memory and carried over K
        acc = tl.load(C + rm[:, None] * N + rn[None, :])
        for k0 in range(0, K, BK):
            a = tl.load(A + rm[:, None] * K + (k0 + rk)[None, :])
            b = tl.load(B + (k0 + rk)[:, None] * N + rn[None, :])
            acc = tl.dot(a, b, acc, out_dtype=tl.float16)
    else:  # out_dtype= alone: a zero fp16 accumulator
        a = tl.load(A + rm[:, None] * K + rk[None, :])
        b = tl.load(B + rk[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, out_dtype=tl.float16)
    tl.store(O + rm[:, None] * N + rn[None, :], acc)


SIG = {"A": "*fp16", "B": "*fp16", "C": "*fp16", "O": "*fp16"}
# (M, N, K, BK, ACC, num_warps)
CASES = [(32, 32, 32, 32, False, 1), (32, 32, 64, 32, True, 1), (32, 32, 64, 32, True, 4)]


def _compile(case, target, compat=False):
    m, n, k, bk, acc, nw = case
    return zetile.compile(dot_f16_out, signature=SIG,
                          constexprs={"M": m, "N": n, "K": k, "BK": bk, "ACC": acc},
                          target=target, num_warps=nw, cached=False, compat=compat)


@pytest.mark.skipif(not have_tool("spirv-val"), reason="spirv-val is not installed")
@pytest.mark.parametrize("target", ["pvc", "bmg", "dg2"])
@pytest.mark.parametrize("case", CASES, ids=["out_dtype", "acc_loop", "acc_loop_w4"])
def test_e1(target, case):
    spirv_val(_compile(case, target).asm["spirv"])


def test_e2_pvc_dpas():
    # The compat path: Debian's IGC has no 2D block IO builtins, so the
    # native path's ISA calls them (calla) and says nothing of the real one.
    ck = _compile(CASES[1], "pvc", compat=True)
    r = isa_no_spill(ck.asm["spirv"], "", "fp16-out dot, K loop")
    # 32x32 output, K 64 at num_warps=1: 4 x 2 blocks, 4 K steps of 16.
    assert r["dpas"] >= 8, r
    assert r["calla"] == 0 and r["surface_scratch_sends"] == 0, r


_RUN = """
import json, numpy as np, zetile
import test_xe_dot_half_out as T
rng = np.random.default_rng(3)
worst = []
for m, n, k, bk, acc, nw in T.CASES:
    a = (rng.standard_normal((m, k)) * 0.5).astype(np.float16)
    b = (rng.standard_normal((k, n)) * 0.5).astype(np.float16)
    c = rng.standard_normal((m, n)).astype(np.float16)
    o = np.zeros((m, n), np.float16)
    T.dot_f16_out[(1,)](a, b, c, o, M=m, N=n, K=k, BK=bk, ACC=acc, num_warps=nw)
    zetile.get_device().synchronize()
    # fp32 products, rounded to fp16 after each K block as the kernel's types say
    want = c.astype(np.float32) if acc else np.zeros((m, n), np.float32)
    for k0 in range(0, k, bk):
        part = a[:, k0:k0 + bk].astype(np.float32) @ b[k0:k0 + bk].astype(np.float32)
        want = (want + part).astype(np.float16).astype(np.float32)
    worst.append(float(np.abs(o.astype(np.float32) - want).max() / np.abs(want).max()))
print("RESULT " + json.dumps(worst))
"""


@pytest.mark.parametrize("where", ["pvc", "dg2", "cpu"])
def test_numbers(where):
    env = {"ZETILE_DEVICE": "cpu"} if where == "cpu" else \
        {"ZETILE_DEVICE": "opencl:cpu", "ZETILE_OPENCL_TARGET": where}
    if where != "cpu":
        opencl_cpu_or_skip()
    worst = run_result(_RUN, path=HERE, env=env)
    # fp16 keeps 11 bits: a rounding or two of the largest value at most
    assert max(worst) < 2e-3, worst
