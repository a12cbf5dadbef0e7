"""tl.argmax/argmin of tiles the Intel lowerings cannot reduce as a (value,
position) pair: on pvc and bmg a tile split across subgroups along the axis
(a row argmax of a 16x64 tile over 4 or 8 subgroups, a 1-D tensor spread
over the subgroups, an expert choice over a dot's result: "argmin/argmax over
a tensor split across subgroups along the axis on Xe"), on dg2 every 2-D
tile ("dg2: multi-value reduce of a tile this small or of rank > 1"). They
now become a max/min and a min of the positions holding it, two built-in
reductions both lowerings run across subgroups (lowering/common/arg_split.c).
Shown: E1 for pvc, bmg and dg2, the pvc and dg2 SPIR-V on Intel's OpenCL CPU
runtime (E5) against numpy with ties (the lowest index wins) and NaN (never
wins)."""
import os

import pytest

import zetile
import zetile.language as tl
from zt_testutil import have_tool, opencl_cpu_or_skip, run_result, spirv_val

HERE = os.path.dirname(os.path.abspath(__file__))


@zetile.jit
def arg_tile(X, V, O0, O1, O2, M: tl.constexpr, N: tl.constexpr, L: tl.constexpr,
             MAX: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    v = tl.load(V + tl.arange(0, L))
    if MAX:
        tl.store(O0 + rm, tl.argmax(x, axis=1))
        tl.store(O1 + rn, tl.argmax(x, axis=0))
        tl.store(O2, tl.argmax(v, axis=0))
    else:
        tl.store(O0 + rm, tl.argmin(x, axis=1))
        tl.store(O1 + rn, tl.argmin(x, axis=0))
        tl.store(O2, tl.argmin(v, axis=0))


@zetile.jit
def route(X, W, P, E_OUT, M: tl.constexpr, K: tl.constexpr, E: tl.constexpr):
    # A mixture-of-experts router's form: logits = x @ w, each token's best
    # expert and its logit.
    rm = tl.arange(0, M)
    rk = tl.arange(0, K)
    re = tl.arange(0, E)
    x = tl.load(X + rm[:, None] * K + rk[None, :])
    w = tl.load(W + rk[:, None] * E + re[None, :])
    logits = tl.dot(x, w)
    best, e = tl.max(logits, axis=1, return_indices=True)
    tl.store(P + rm, best)
    tl.store(E_OUT + rm, e)


TILE = {"M": 16, "N": 64, "L": 256}
TSIG = {"X": "*fp32", "V": "*fp32", "O0": "*i32", "O1": "*i32", "O2": "*i32"}
ROUTE = {"M": 32, "K": 32, "E": 32}
RSIG = {"X": "*fp16", "W": "*fp16", "P": "*fp32", "E_OUT": "*i32"}


@pytest.mark.skipif(not have_tool("spirv-val"), reason="spirv-val is not installed")
@pytest.mark.parametrize("target", ["pvc", "bmg", "dg2"])
@pytest.mark.parametrize("num_warps", [4, 8])
def test_e1(target, num_warps):
    # Refused by name before on every row here (see the module's docstring).
    for is_max in (True, False):
        spirv_val(zetile.compile(arg_tile, signature=TSIG, constexprs={**TILE, "MAX": is_max},
                                 target=target, num_warps=num_warps, cached=False).asm["spirv"])
    spirv_val(zetile.compile(route, signature=RSIG, constexprs=ROUTE, target=target,
                             num_warps=num_warps, cached=False).asm["spirv"])


_RUN = """
import json, numpy as np, zetile
import test_xe_arg_split as T
rng = np.random.default_rng(21)
M, N, L = T.TILE["M"], T.TILE["N"], T.TILE["L"]
ok = []
for is_max, nw in ((True, 4), (False, 8)):
    # Small integers: many ties, where the lowest index must win; a NaN in
    # some rows and columns, which never wins.
    x = rng.integers(-6, 7, (M, N)).astype(np.float32)
    x[3, 5] = x[12, 60] = x[7, 0] = np.nan
    v = rng.integers(-50, 51, L).astype(np.float32)
    v[10] = np.nan
    o0 = np.full(M, -7, np.int32); o1 = np.full(N, -7, np.int32); o2 = np.full(1, -7, np.int32)
    T.arg_tile[(1,)](x, v, o0, o1, o2, M=M, N=N, L=L, MAX=is_max, num_warps=nw)
    zetile.get_device().synchronize()
    f = np.nanargmax if is_max else np.nanargmin
    ok.append(bool(np.array_equal(o0, f(x, 1)) and np.array_equal(o1, f(x, 0))
                   and int(o2[0]) == int(f(v))))
r = T.ROUTE
x = (rng.standard_normal((r["M"], r["K"])) * 0.5).astype(np.float16)
w = (rng.standard_normal((r["K"], r["E"])) * 0.5).astype(np.float16)
p = np.zeros(r["M"], np.float32); e = np.full(r["M"], -7, np.int32)
T.route[(1,)](x, w, p, e, **r, num_warps=4)
zetile.get_device().synchronize()
logits = x.astype(np.float32) @ w.astype(np.float32)
# fp16 products are exact in fp32; the sums' order may differ: the chosen
# expert's logit must be the row's best within rounding.
best = logits.max(1)
picked = logits[np.arange(r["M"]), np.clip(e, 0, r["E"] - 1)]
print("RESULT " + json.dumps({"tile": ok, "in_range": bool(((e >= 0) & (e < r["E"])).all()),
                             "pick_err": float(np.abs(picked - best).max()),
                             "val_err": float(np.abs(p - best).max()),
                             "same": float((e == logits.argmax(1)).mean())}))
"""


@pytest.mark.parametrize("where", ["pvc", "dg2"])
def test_numbers(where):
    opencl_cpu_or_skip()
    r = run_result(_RUN, path=HERE, timeout=600,
                   env={"ZETILE_DEVICE": "opencl:cpu", "ZETILE_OPENCL_TARGET": where})
    print(where, r)
    assert r["tile"] == [True, True], r
    assert r["in_range"] and r["pick_err"] < 1e-4 and r["val_err"] < 1e-4, r
