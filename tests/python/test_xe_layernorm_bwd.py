"""Layer-norm backward in the form of Triton's tutorial 05 (kernels in
xe_layernorm_bwd_kernels.py) on Xe with many subgroups per program:

- the dw/db column sums (`tl.sum(tile, axis=0)` over a tile whose rows are
  split across subgroups: 32x128 over a 4x8 grid at num_warps=32) meet in
  SLM and are combined in grid-row order (xe_reduce.c);
- the lock (`while tl.atomic_cas(lock, 0, 1) == 1: pass` ... `atomic_xchg(lock,
  0)`): a scalar atomic runs once per program (lane 0 of subgroup 0) after a
  barrier, and its old value reaches every subgroup through SLM, so every
  subgroup runs the spin loop alike (xe_memory.c);
- an atomic on a 1-D tensor every subgroup holds: subgroup 0 performs it and
  its old values reach the others through SLM;
- SLM accesses become memref loads/stores after distribution (xe_atomic.c),
  so the same SPIR-V runs on Intel's OpenCL CPU runtime.

Shown: numbers on the CPU target (E4), spirv-val for pvc and bmg (E1),
ocloc + iga64 for pvc with no spills (E2), and the pvc SPIR-V on Intel's
OpenCL CPU runtime (E5) against numpy. The CPU runtime showed no lost
update even without a lock, so E5 shows that the spin loop ends, the lock is
released and the sums are right, not that the lock excludes (E6 would)."""
import os
import sys

import numpy as np
import pytest

import zetile
from zetile.tools import isa
from zt_testutil import have_tool, opencl_cpu_or_skip, run_result, spirv_val

HERE = os.path.dirname(os.path.abspath(__file__))
SLOW = os.environ.get("ZETILE_SLOW_TESTS") == "1"
sys.path.insert(0, HERE)
import xe_layernorm_bwd_kernels as K  # noqa: E402

SIG_DX = {"DX": "*fp32", "DY": "*fp32", "PDW": "*fp32", "PDB": "*fp32", "X": "*fp32", "W": "*fp32",
          "MEAN": "*fp32", "RSTD": "*fp32", "LOCKS": "*i32", "stride": "i32", "N": "i32"}
SIG_DWDB = {"PDW": "*fp32", "PDB": "*fp32", "DW": "*fp32", "DB": "*fp32", "M": "i32", "N": "i32"}
# The tutorial's XPU configuration: 32 warps, dwdb tiles of 32x128.
DX_CONST = {"GROUP": 64, "BLOCK_N": 1024}
DWDB_CONST = {"BLOCK_M": 32, "BLOCK_N": 128}

RUN = """
import json, numpy as np, zetile
import xe_layernorm_bwd_kernels as K
M, N, GROUP, WARPS = {M}, {N}, {GROUP}, {WARPS}
rng = np.random.default_rng(3)
x = (-2.3 + 0.5 * rng.standard_normal((M, N))).astype(np.float32)
w = rng.random(N).astype(np.float32)
dy = (0.1 * rng.standard_normal((M, N))).astype(np.float32)
xd = x.astype(np.float64)
mean = xd.mean(1)
rstd = 1 / np.sqrt(xd.var(1) + 1e-5)
xhat = (xd - mean[:, None]) * rstd[:, None]
wdy = w * dy.astype(np.float64)
dx_ref = (wdy - (xhat * (xhat * wdy).mean(1, keepdims=True) + wdy.mean(1, keepdims=True))) * rstd[:, None]
dw_ref = (dy * xhat).sum(0)
db_ref = dy.astype(np.float64).sum(0)
locks = np.zeros(2 * GROUP, np.int32)
pdw = np.zeros((GROUP, N), np.float32)
pdb = np.zeros((GROUP, N), np.float32)
dx = np.zeros_like(x)
dw = np.zeros(N, np.float32)
db = np.zeros(N, np.float32)
K.ln_bwd_dx[(M,)](dx, dy, pdw, pdb, x, w, mean.astype(np.float32), rstd.astype(np.float32), locks,
                  N, N, GROUP=GROUP, BLOCK_N=zetile.next_power_of_2(N), num_warps=WARPS)
K.ln_bwd_dwdb[(zetile.cdiv(N, 128),)](pdw, pdb, dw, db, min(GROUP, M), N, BLOCK_M=32, BLOCK_N=128,
                                      num_warps=WARPS)
zetile.get_device().synchronize()
print("RESULT", json.dumps({{
    "dx": float(np.abs(dx - dx_ref).max() / np.abs(dx_ref).max()),
    "dw": float(np.abs(dw - dw_ref).max() / np.abs(dw_ref).max()),
    "db": float(np.abs(db - db_ref).max() / np.abs(db_ref).max()),
    "locks": locks[:GROUP].tolist(), "counts": locks[GROUP:].tolist()}}))
"""


def _check(res, group, m):
    assert res["dx"] < 1e-5, res
    assert res["dw"] < 1e-5 and res["db"] < 1e-5, res
    assert res["locks"] == [0] * group, res           # every lock released
    assert res["counts"] == [1] * min(group, m) + [0] * (group - min(group, m)), res


@pytest.mark.parametrize("m,n,group,warps", [(100, 300, 8, 8), (70, 1000, 16, 32)])
def test_cpu_numbers(m, n, group, warps):
    res = run_result(RUN.format(M=m, N=n, GROUP=group, WARPS=warps), path=HERE,
                     env={"ZETILE_DEVICE": "cpu"})
    _check(res, group, m)


def _build(kernel, sig, const, target, warps=32):
    return zetile.compile(kernel, signature=sig, constexprs=const, target=target, num_warps=warps,
                          cached=False)


@pytest.mark.parametrize("target", ["pvc", "bmg"])
def test_tutorial_config_builds_and_validates(target):
    """E1 at the tutorial's configuration (both kernels were refused before:
    the old value of a scalar atomic in 32 subgroups; axis 0 across a 4x8
    grid)."""
    if not have_tool("spirv-val"):
        pytest.skip("spirv-val is not installed")
    dx = _build(K.ln_bwd_dx, SIG_DX, DX_CONST, target)
    dwdb = _build(K.ln_bwd_dwdb, SIG_DWDB, DWDB_CONST, target)
    for ck in (dx, dwdb):
        assert ck.metadata["local_size"] == "512,1,1", ck.metadata
        spirv_val(ck.asm["spirv"])
    # The column sums really cross subgroups: one SLM buffer of 4 grid rows x
    # 8 column chunks x 16 floats, shared by dw and db.
    assert "@zt_slm_f32_512 " in dwdb.asm["mlir"], dwdb.asm["mlir"][:2000]
    assert dwdb.asm["mlir"].count("gpu.barrier") == 4
    # The lock's atomics: a barrier before each of the three scalar atomics,
    # two around the exchange of the compare-and-swap's old value, two for
    # each row sum (c1, c2).
    assert dx.asm["mlir"].count("gpu.barrier") == 3 + 2 + 4, dx.asm["mlir"].count("gpu.barrier")


def test_pvc_ocloc_no_spills():
    """E2: Intel's compiler builds both kernels for pvc with nothing left
    unresolved and no spilled registers."""
    if not (have_tool("ocloc") and have_tool("iga64")):
        pytest.skip("ocloc/iga64 are not installed")
    for kernel, sig, const in ((K.ln_bwd_dx, SIG_DX, DX_CONST), (K.ln_bwd_dwdb, SIG_DWDB, DWDB_CONST)):
        ck = _build(kernel, sig, const, "pvc")
        kernels, log = isa.ocloc_isa(ck.asm["spirv"], "pvc")
        assert "unresolved" not in log.lower(), log
        assert isa.spill_from_log(log) == 0, log
        assert isa.analyze_isa("".join(kernels.values()))["scratch_sends"] == 0, log
        stats = isa.analyze_isa(kernels[kernel.__name__])
        assert stats["scratch_sends"] == 0 and stats["calla"] == 0, stats


@pytest.mark.parametrize("m,n,group,warps", [(100, 300, 8, 8), (70, 1000, 16, 32)])
def test_e5_pvc_spirv_on_opencl_cpu(m, n, group, warps):
    opencl_cpu_or_skip()
    _check(run_result(RUN.format(M=m, N=n, GROUP=group, WARPS=warps), path=HERE), group, m)


COLS = """
import json, numpy as np, zetile
import xe_layernorm_bwd_kernels as K
rng = np.random.default_rng(4)
out = {}
SLOW = SLOW_FLAG
for op in ("sum", "max", "min") if SLOW else ("max",):
    p = rng.standard_normal((32, 200)).astype(np.float32)
    got = np.zeros(200, np.float32)
    K.col_reduce[(2,)](p, got, 32, 200, BLOCK_M=32, BLOCK_N=128, OP=op, num_warps=32)
    zetile.get_device().synchronize()
    want = getattr(np, op)(p.astype(np.float64), 0)
    out[op] = float(np.abs(got - want).max())
# Axis 1 of tiles split by columns (64x128 on 1x8, 256x64 on 8x4, 8x64 on
# 1x4: 8 rows, half a chunk of the result).
ROWS = [(64, 128, 8, "sum"), (8, 64, 4, "max")]
if SLOW:
    ROWS += [(64, 128, 8, "max"), (256, 64, 32, "sum"), (256, 64, 32, "max"), (8, 64, 4, "sum")]
for (bm, bn, warps, op) in ROWS:
    m, n = 3 * bm - 5, bn - 3
    p = rng.standard_normal((m, n)).astype(np.float32)
    got = np.zeros(m, np.float32)
    K.row_reduce[(zetile.cdiv(m, bm),)](p, got, m, n, BLOCK_M=bm, BLOCK_N=bn, OP=op,
                                        num_warps=warps)
    zetile.get_device().synchronize()
    want = getattr(np, op)(p.astype(np.float64), 1)
    out["rows_%d_%d_%s" % (bm, bn, op)] = float(np.abs(got - want).max())
# A dot's accumulator on a 2x4 grid (num_warps=0: the planner's grid), its
# column sums distributed over the 8 subgroups.
a = rng.standard_normal((64, 32)).astype(np.float16)
b = rng.standard_normal((32, 128)).astype(np.float16)
c = np.zeros((64, 128), np.float32)
s = np.zeros(128, np.float32)
K.dot_col_sum[(1,)](a, b, c, s, BM=64, BN=128, BK=32, num_warps=0)
zetile.get_device().synchronize()
ref = a.astype(np.float64) @ b.astype(np.float64)
out["dot"] = float(np.abs(c - ref).max())
out["dot_sum"] = float(np.abs(s - ref.sum(0)).max() / np.abs(ref).sum(0).max())
print("RESULT", json.dumps(out))
"""


def test_column_reductions_across_subgroups_e5():
    """max (sum, min with ZETILE_SLOW_TESTS=1) along axis 0 of a 32x128 tile
    on a 4x8 grid (replicated result), a dot accumulator's column sums on a
    2x4 grid (distributed result), and reductions along axis 1 of tiles split
    by columns (two; six when slow): the pvc SPIR-V on Intel's OpenCL CPU
    runtime against numpy."""
    opencl_cpu_or_skip()
    ck = zetile.compile(K.dot_col_sum, signature={"A": "*fp16", "B": "*fp16", "C": "*fp32", "S": "*fp32"},
                        constexprs={"BM": 64, "BN": 128, "BK": 32}, target="pvc", cached=False)
    # 2 grid rows x 8 column chunks x 16: the exchange is there.
    assert "@zt_slm_f32_256 " in ck.asm["mlir"]
    res = run_result(COLS.replace("SLOW_FLAG", str(SLOW)), path=HERE)
    assert res["max"] == 0 and res.get("sum", 0) < 1e-5 and res.get("min", 0) == 0, res
    assert res["dot"] < 1e-3 and res["dot_sum"] < 1e-6, res
    rows = {k: v for k, v in res.items() if k.startswith("rows_")}
    assert len(rows) == (6 if SLOW else 2) and all(v < 1e-5 for v in rows.values()), res


@pytest.mark.parametrize("bm,bn,warps,slots", [(64, 128, 8, 8 * 64), (256, 64, 32, 4 * 256),
                                               (8, 64, 4, 4 * 16)])
def test_row_reductions_across_subgroups_build(bm, bn, warps, slots):
    """Axis 1 of a tile split by columns (refused before): the partial rows
    meet in an SLM buffer of grid columns x rows (rounded up to 16); E1."""
    ck = zetile.compile(K.row_reduce, signature={"P": "*fp32", "OUT": "*fp32", "M": "i32", "N": "i32"},
                        constexprs={"BLOCK_M": bm, "BLOCK_N": bn, "OP": "sum"}, target="pvc",
                        num_warps=warps, cached=False)
    assert "@zt_slm_f32_%d " % slots in ck.asm["mlir"]
    if have_tool("spirv-val"):
        spirv_val(ck.asm["spirv"])


def test_e5_old_values_of_a_replicated_tensor_atomic():
    """atomic_cas on 16 slots (one chunk, held by each of 4 subgroups;
    subgroup 0 performs it): its old values reach every subgroup through
    SLM. Each program counts the slots it won and writes the count over a
    256-wide row that the 4 subgroups store in parts: one program wins all
    16, the others none, and every row is uniform (without the exchange,
    subgroups 1-3 would read zeros and count 16)."""
    opencl_cpu_or_skip()
    res = run_result("""
import json, numpy as np, zetile
import xe_layernorm_bwd_kernels as K
slots = np.zeros(16, np.int32)
out = np.full((5, 256), -1, np.int32)
K.small_tensor_cas[(5,)](slots, out, BLOCK=16, WIDE=256, num_warps=4)
zetile.get_device().synchronize()
print("RESULT", json.dumps({"slots": slots.tolist(), "rows": [sorted(set(r)) for r in out.tolist()]}))
""", path=HERE)
    assert res["slots"] == list(range(1, 17)), res
    assert sorted(res["rows"]) == [[0], [0], [0], [0], [16]], res
