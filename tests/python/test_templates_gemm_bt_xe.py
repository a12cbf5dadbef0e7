"""The GEMM template with B transposed (`x @ w.T`, w stored [N, K], torch's
Linear) on pvc: B's tile is read with Intel's transposed 2D block reads,
not gathered by rows (issue 13: Intel's Triton GEMM falls to 19-51% of
oneDNN when an input is transposed).

Two things kept the template's transposed B on row gathers (4 DPAS per
subgroup per K step over 16 subgroups instead of 16 over 4): its mask has a
K term (`offs_k < K - k0`), which the transposed read refused, and a 2-D
GEMM's batch stride is 0, which the launcher does not hint, so `batch *
s_bb` hid the 4-byte alignment a 16-bit transposed read needs. Now a K
bound is the read's width where it keeps dword pairs whole (xe_trans_load.c
xe_ptr_trans_k_bound_ok: the bound and the tile's K offsets provably even),
and ops.gemm launches a single batch with a hinted batch stride.

E1 (spirv-val), E2 (ocloc + iga64: DPAS in the K loop, spills, the compat
path's d32t sends against ZETILE_XE_TRANS_READ=0 in the same run); E5 (the
pvc SPIR-V on Intel's OpenCL CPU runtime, fp16 with M, N and K tails)
with ZETILE_SLOW_TESTS=1."""
import os

import numpy as np
import pytest

from zt_testutil import have_tool, opencl_cpu_or_skip, run_result, spirv_val

torch = pytest.importorskip("torch")
from zetile import _C  # noqa: E402
from zetile.ops import _kernels, gemm  # noqa: E402

SLOW = os.environ.get("ZETILE_SLOW_TESTS") == "1"
HERE = os.path.dirname(os.path.abspath(__file__))

pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


def _plan(dt, m, n, k, trans="b"):
    # trans "b": x @ w.T (w stored [N, K]); "a": a.T @ b (a stored [K, M]).
    t = getattr(torch, dt)
    a = torch.zeros(k, m, dtype=t).T if trans == "a" else torch.zeros(m, k, dtype=t)
    b = torch.zeros(n, k, dtype=t).T if trans == "b" else torch.zeros(k, n, dtype=t)
    with _kernels.planning_for("pvc"):
        return gemm(a, b, plan=True)


def _compile(dt, m, n, k, compat=False, trans="b"):
    launch = _plan(dt, m, n, k, trans)
    return _C.compile(launch.tile_ir(), target="pvc", num_warps=launch.num_warps or 0,
                      compat=compat, igc_options=None, cached=False)


def _mlir(art):
    return art.get("mlir").decode()


# (dtype, M, N, K): K 80 leaves a 16-deep tail after two 32-deep steps; the
# fp32 case reads two d32t per 16x16 block.
@pytest.mark.parametrize("dt,m,n,k", [("float16", 128, 128, 128), ("bfloat16", 64, 64, 80),
                                      ("float32", 64, 64, 64)])
def test_e1_transposed_b_is_read_with_transposed_blocks(dt, m, n, k):
    art = _compile(dt, m, n, k)
    mlir = _mlir(art)
    assert "transpose = array<i64: 1, 0>" in mlir, mlir
    assert "xegpu.load " not in mlir  # no row gathers left
    if have_tool("spirv-val"):
        spirv_val(art.get("spirv"))


def test_k_not_provably_even_keeps_the_gathers():
    # K = 72 is not hinted (not a multiple of 16): `K - k0` is not provably
    # even, so an fp16 dword could hold one K in bounds and one past it.
    mlir = _mlir(_compile("float16", 64, 64, 72))
    assert "transpose = array" not in mlir and mlir.count("xegpu.load ") > 0


def _isa(art):
    from zetile.tools import isa
    isas, log = isa.ocloc_isa(art.get("spirv"), "pvc", "-ze-opt-large-register-file")
    text = "".join(isas.values())
    r = isa.analyze_isa(text)
    r["d32t"] = text.count("load_block2d.ugm.d32t")
    r["spill"] = isa.spill_from_log(log)
    r["subgroups"] = int(art.get("meta").decode().split("local_size=")[1].split(",")[0]) // 16
    return r


@pytest.mark.skipif(not have_tool("ocloc") or not have_tool("iga64"),
                    reason="ocloc and iga64 are needed")
def test_e2_pvc_dpas_and_sends(monkeypatch):
    # xe_cases' gemm_fp16_bT (512^3, the default 64x64x32 tiles).
    native = _isa(_compile("float16", 512, 512, 512))
    assert native["dpas_in_innermost_loop"] == 16, native
    assert native["spill"] == 0 and native["scratch_sends"] == 0, native
    after = _isa(_compile("float16", 512, 512, 512, compat=True))
    monkeypatch.setenv("ZETILE_XE_TRANS_READ", "0")
    before = _isa(_compile("float16", 512, 512, 512, compat=True))
    print("before", before, "after", after)
    assert after["d32t"] > 0 and before["d32t"] == 0
    assert after["dpas_in_innermost_loop"] == 16 and before["dpas_in_innermost_loop"] == 4
    # Per work-group: the gathers spread the tile over 4x the subgroups.
    assert after["sends"] * after["subgroups"] < before["sends"] * before["subgroups"]
    assert after["spill"] == 0 and after["scratch_sends"] == 0


# (M, N, K) with tails; A transposed wants M a multiple of 16 (its transposed
# read's rows are M), so its shapes differ.
E5_SHAPES = {"b": [(40, 48, 80), (64, 64, 64)], "a": [(48, 40, 80), (64, 64, 64)]}


@pytest.mark.skipif(not SLOW, reason="ZETILE_SLOW_TESTS=1 (about a minute on opencl:cpu)")
@pytest.mark.parametrize("trans", ["b", "a"])
def test_e5_transposed_opencl_cpu(trans):
    opencl_cpu_or_skip()
    shapes = E5_SHAPES[trans]
    res = run_result(f"""
        import json, numpy as np, zetile
        from zetile import ops
        from test_templates_gemm_bt_xe import _compile, _mlir
        d = zetile.get_device().info
        assert d["name"] == "opencl:cpu" and d["target"] == "pvc"
        out = []
        for m, n, k in {shapes!r}:
            # The specialization these launches compile reads the operand transposed.
            assert "transpose = array" in _mlir(_compile("float16", m, n, k, trans={trans!r}))
            rng = np.random.default_rng(m + k)
            if {trans!r} == "b":  # x @ w.T, w stored [N, K]
                x = rng.standard_normal((m, k)).astype(np.float16)
                w = rng.standard_normal((n, k)).astype(np.float16)
                r = np.asarray(ops.gemm(x, w.T)).astype(np.float64)
                ref = x.astype(np.float64) @ w.astype(np.float64).T
            else:  # a.T @ b, a stored [K, M]
                at = rng.standard_normal((k, m)).astype(np.float16)
                b = rng.standard_normal((k, n)).astype(np.float16)
                r = np.asarray(ops.gemm(at.T, b)).astype(np.float64)
                ref = at.astype(np.float64).T @ b.astype(np.float64)
            out.append([m, n, k, float(np.abs(r - ref).max()), float(np.abs(ref).max())])
        print("RESULT " + json.dumps(out))
    """, path=HERE, env={"ZETILE_CACHE_DIR": os.path.join(os.environ.get(
        "ZETILE_CACHE_DIR", "/tmp"), f"gemm_{trans}t_e5")}, timeout=900)
    print(res)
    assert len(res) == len(shapes)
    for m, n, k, err, mag in res:
        # fp16 products are exact in fp32; the fp16 output rounds (half an
        # ulp of the largest value).
        assert err <= mag * 2.0 ** -11, (m, n, k, err, mag)


# A transposed (`a.T @ b`, a stored [K, M]): since b8404f5 (xe_trans_load.c)
# an A operand stored transposed is read with transposed 2D block reads, two
# 8x16 A blocks a read, for 16-bit data with M and K multiples of 16; it was
# row gathers (4 DPAS per subgroup per K step instead of 16).
@pytest.mark.parametrize("dt,m,n,k", [("float16", 128, 128, 128), ("bfloat16", 64, 64, 80)])
def test_e1_transposed_a_is_read_with_transposed_blocks(dt, m, n, k, monkeypatch):
    art = _compile(dt, m, n, k, trans="a")
    mlir = _mlir(art)
    assert "transpose = array<i64: 1, 0>" in mlir and "xegpu.load " not in mlir, mlir
    assert mlir.count("xegpu.dpas") == 16, mlir.count("xegpu.dpas")
    if have_tool("spirv-val"):
        spirv_val(art.get("spirv"))
    monkeypatch.setenv("ZETILE_XE_TRANS_READ_A", "0")  # the old form, same tree
    old = _mlir(_compile(dt, m, n, k, trans="a"))
    assert "xegpu.load " in old and old.count("xegpu.dpas") == 4


@pytest.mark.skipif(not have_tool("ocloc") or not have_tool("iga64"),
                    reason="ocloc and iga64 are needed")
def test_e2_pvc_transposed_a():
    for compat in (False, True):
        r = _isa(_compile("float16", 512, 512, 512, compat=compat, trans="a"))
        print("compat" if compat else "native", r)
        assert r["dpas_in_innermost_loop"] == 16, r
        assert r["spill"] == 0 and r["scratch_sends"] == 0, r
        if compat:
            assert r["d32t"] > 0, r
