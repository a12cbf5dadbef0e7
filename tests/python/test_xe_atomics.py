"""Atomics on Xe (xe_memory.c emits marked scatters; xe_atomic.c turns them
into per-lane LLVM atomics after upstream's distribution): the SPIR-V passes
spirv-val and Intel's ocloc builds it for pvc (E1, E2), and the same SPIR-V
gives the right results on Intel's OpenCL CPU runtime (E5): sums, max/min
(f32 through compare-and-swap loops), bitwise ops, exchanges, old values,
scalar tickets and compare-and-swap claims."""
import os
import sys
import tempfile

import numpy as np
import pytest

import zetile
from zetile.tools import isa
from zt_testutil import have_tool, opencl_cpu_or_skip, run_result, spirv_val

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import xe_atomic_kernels as K  # noqa: E402

CASES = [("add", "int32"), ("add", "int64"), ("add", "float32"), ("max", "int32"),
         ("max", "uint32"), ("max", "float32"), ("min", "int64"), ("min", "float32"),
         ("and", "int32"), ("or", "uint32"), ("xor", "int64"), ("xchg", "int32"),
         ("xchg", "float32")]
TY = {"int32": "i32", "int64": "i64", "uint32": "u32", "float32": "fp32"}


@pytest.mark.parametrize("op,dt", CASES)
def test_pvc_spirv_validates_and_ocloc_builds(op, dt):
    if not (have_tool("spirv-val") and have_tool("ocloc")):
        pytest.skip("spirv-val/ocloc are not installed")
    t = TY[dt]
    ck = zetile.compile(K.rmw_kernel, signature={"x_ptr": "*" + t, "out_ptr": "*" + t,
                                                 "old_ptr": "*" + t, "N": "i32"},
                        constexprs={"OP": op, "SLOTS": 8, "BLOCK": 64}, target="pvc",
                        cached=False)
    spv = ck.asm["spirv"]
    spirv_val(spv)
    with tempfile.TemporaryDirectory() as d:
        _, log = isa.ocloc_compile(spv, d, "pvc")
        assert "unresolved" not in log.lower(), log


_opencl_cpu_or_skip = opencl_cpu_or_skip


def _run(code):
    return run_result(code, path=HERE)


@pytest.mark.parametrize("op,dt", CASES)
def test_e5_rmw(op, dt):
    """Final slot values against numpy; the old values returned to each
    element must be a consistent history: for add, each old value is the
    slot's sum over some subset of the other contributions, so we check
    what holds for any order (the set of results for xchg; the extreme for
    max/min; partial sums bounded for add)."""
    _opencl_cpu_or_skip()
    res = _run(f"""
import json, numpy as np, zetile
import xe_atomic_kernels as K
rng = np.random.default_rng(1)
N, SLOTS, op, dt = 777, 8, "{op}", np.dtype("{dt}")
if dt.kind == "f":
    x = rng.standard_normal(N).astype(dt)
    init = {{"add": 0, "max": -np.inf, "min": np.inf, "xchg": 0}}[op]
else:
    hi = 1 << 20
    # Unsigned values use the top bit, where signed and unsigned max differ.
    x = (rng.integers(0, 1 << 32, N, dtype=np.uint64) if dt.kind == "u"
         else rng.integers(-hi, hi, N)).astype(dt)
    init = {{"add": 0, "max": np.iinfo(dt).min, "min": np.iinfo(dt).max, "and": -1 if dt.kind == "i"
            else np.iinfo(dt).max, "or": 0, "xor": 0, "xchg": 0}}[op]
out = np.full(SLOTS, init, dt)
old = np.zeros(N, dt)
K.rmw_kernel[(zetile.cdiv(N, 64),)](x, out, old, N, OP=op, SLOTS=SLOTS, BLOCK=64, num_warps=1)
zetile.get_device().synchronize()
idx = np.arange(N) % SLOTS
ok, err = True, 0.0
for s in range(SLOTS):
    xs = x[idx == s]
    if op == "add":
        want = xs.astype(np.float64).sum()
        err = max(err, abs(float(out[s]) - want) / max(1.0, np.abs(xs.astype(np.float64)).sum()))
    elif op == "max":
        ok &= out[s] == xs.max()
    elif op == "min":
        ok &= out[s] == xs.min()
    elif op == "and":
        ok &= out[s] == np.bitwise_and.reduce(np.concatenate([[init], xs]).astype(dt))
    elif op == "or":
        ok &= out[s] == np.bitwise_or.reduce(xs)
    elif op == "xor":
        ok &= out[s] == np.bitwise_xor.reduce(xs)
    else:
        # xchg: the slot ends with one of its writers' values, and the old
        # values seen are the initial value and all writers but the last.
        seen = sorted(old[idx == s].tolist() + [out[s]])
        ok &= seen == sorted(xs.tolist() + [init])
    if op in ("max", "min"):
        # Every old value is the extreme of the initial value and some of
        # the slot's contributions: never beyond the final one.
        o = old[idx == s]
        ok &= bool((o <= out[s]).all()) if op == "max" else bool((o >= out[s]).all())
print("RESULT", json.dumps({{"ok": bool(ok), "err": float(err)}}))
""")
    assert res["ok"], res
    tol = 1e-5 if dt == "float32" else 0.0
    assert res["err"] <= tol, res


def test_e5_scalar_tickets():
    """tl.atomic_add on a scalar pointer: one atomic per program (lane 0), and
    every program gets a distinct ticket (the old value made uniform)."""
    _opencl_cpu_or_skip()
    res = _run("""
import json, numpy as np, zetile
import xe_atomic_kernels as K
counter = np.zeros(1, np.int32)
tickets = np.full(50, -1, np.int32)
K.ticket_kernel[(50,)](counter, tickets, num_warps=1)
zetile.get_device().synchronize()
print("RESULT", json.dumps({"counter": int(counter[0]), "tickets": sorted(tickets.tolist())}))
""")
    assert res["counter"] == 50, res
    assert res["tickets"] == list(range(50)), res


def test_e5_atomic_cas_claims():
    _opencl_cpu_or_skip()
    res = _run("""
import json, numpy as np, zetile
import xe_atomic_kernels as K
N = 200
slots = np.zeros(8, np.int32)
won = np.zeros(N, np.int32)
K.cas_kernel[(zetile.cdiv(N, 64),)](slots, won, N, BLOCK=64, num_warps=1)
zetile.get_device().synchronize()
idx = np.arange(N) % 8
winners = [int(won[idx == s].sum()) for s in range(8)]
owner_ok = all(won[slots[s] - 1] == 1 and (slots[s] - 1) % 8 == s for s in range(8))
print("RESULT", json.dumps({"winners": winners, "owner_ok": bool(owner_ok)}))
""")
    assert res["winners"] == [1] * 8, res
    assert res["owner_ok"], res


def test_e5_scalar_tickets_several_subgroups():
    """A scalar atomic whose old value is used, in a program of 4 subgroups:
    lane 0 of subgroup 0 performs it once and the old value reaches every
    subgroup through SLM (each program still gets one distinct ticket)."""
    _opencl_cpu_or_skip()
    res = _run("""
import json, numpy as np, zetile
import xe_atomic_kernels as K
counter = np.zeros(1, np.int32)
tickets = np.full(50, -1, np.int32)
K.ticket_kernel[(50,)](counter, tickets, num_warps=4)
zetile.get_device().synchronize()
print("RESULT", json.dumps({"counter": int(counter[0]), "tickets": sorted(tickets.tolist())}))
""")
    assert res["counter"] == 50, res
    assert res["tickets"] == list(range(50)), res
