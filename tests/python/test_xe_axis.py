"""Pointer tensors as 2D block IO on Xe (lowering/xe/xe_axis.c): which 2-D
loads and stores the lowering proves affine (block loads/stores) and which
stay row gathers/scatters, Triton's hints (tl.max_contiguous,
tl.multiple_of) changing that, and (E5) the numbers of each path on Intel's
OpenCL CPU runtime with masks cutting through blocks."""
import os
import sys

import numpy as np
import pytest

import zetile
from zt_testutil import opencl_cpu_or_skip, run_result

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import xe_axis_kernels as K  # noqa: E402


def _mlir(fn, sig, consts):
    ck = zetile.compile(fn, signature=sig, constexprs=consts, target="pvc", cached=False)
    m = ck.asm["mlir"]
    m = m.decode() if isinstance(m, bytes) else m
    return {"block": m.count("xegpu.load_nd") + m.count("xegpu.store_nd"),
            "gather": m.count("xegpu.load ") + m.count("xegpu.store ")}


SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "M": "i32", "N": "i32",
       "stride_xm": "i32:16", "stride_ym": "i32:16"}


def test_unit_columns_and_hinted_row_stride_give_block_io():
    r = _mlir(K.scale2d, SIG, {"BM": 32, "BN": 32, "COL_STEP": 1})
    assert r["block"] > 0 and r["gather"] == 0, r


def test_row_stride_without_hint_stays_gathered():
    # A pitch must be a positive multiple of 16 bytes: without the hint
    # (the launcher gives it to positive multiples of 16 only) no block IO.
    sig = dict(SIG, stride_xm="i32", stride_ym="i32")
    r = _mlir(K.scale2d, sig, {"BM": 32, "BN": 32, "COL_STEP": 1})
    assert r["block"] == 0 and r["gather"] > 0, r


def test_strided_columns_stay_gathered():
    r = _mlir(K.scale2d, SIG, {"BM": 32, "BN": 32, "COL_STEP": 2})
    # The load reads every other column: gathers; the store is contiguous.
    assert r["gather"] > 0 and r["block"] > 0, r


def test_max_contiguous_hint_is_used():
    plain = _mlir(K.scale2d_opaque_cols, SIG, {"BM": 32, "BN": 32, "HINT": False})
    hinted = _mlir(K.scale2d_opaque_cols, SIG, {"BM": 32, "BN": 32, "HINT": True})
    assert plain["block"] == 0 and plain["gather"] > 0, plain
    assert hinted["block"] > 0 and hinted["gather"] == 0, hinted


def test_multiple_of_hint_is_used():
    sig = {"x_ptr": "*fp32", "starts_ptr": "*i32", "y_ptr": "*fp32", "M": "i32:16", "N": "i32",
           "stride_xm": "i32:16", "stride_ym": "i32:16"}
    plain = _mlir(K.gather_rows_from, sig, {"BM": 32, "BN": 32, "HINT": False})
    hinted = _mlir(K.gather_rows_from, sig, {"BM": 32, "BN": 32, "HINT": True})
    # Without the hint the loaded rows may wrap anywhere: row gathers for x.
    # With it, only the scalar load of the start remains a (uniform) gather.
    assert plain["gather"] > 1, plain
    assert hinted["gather"] == 1 and hinted["block"] > plain["block"], (plain, hinted)


def test_bad_hints_are_errors_with_the_line():
    @zetile.jit
    def bad(x_ptr, BLOCK: tl.constexpr):
        offs = tl.max_contiguous(tl.arange(0, BLOCK), 12)
        tl.store(x_ptr + offs, offs.to(tl.float32))

    with pytest.raises(zetile.CompilationError) as ei:
        zetile.compile(bad, signature={"x_ptr": "*fp32"}, constexprs={"BLOCK": 16}, target="pvc")
    assert "power of two" in str(ei.value) and "max_contiguous" in str(ei.value)


import zetile.language as tl  # noqa: E402  (used by the kernel above)


_opencl_cpu_or_skip = opencl_cpu_or_skip


def _run(code):
    return run_result(code, path=HERE)


@pytest.mark.parametrize("kernel,extra", [("scale2d", "COL_STEP=1"),
                                          ("scale2d_opaque_cols", "HINT=True"),
                                          ("scale2d_opaque_cols", "HINT=False")])
def test_e5_scale2d(kernel, extra):
    """Masks on both axes cut through blocks (M, N not multiples of 16 or of
    the tile); the guard cells around y stay untouched."""
    _opencl_cpu_or_skip()
    res = _run(f"""
import json, numpy as np, zetile
import xe_axis_kernels as K
rng = np.random.default_rng(3)
M, N = 75, 53
x = rng.standard_normal((M, 64)).astype(np.float32)     # rows of 64: pitch 256 B
y = np.full((M + 2, 64), 5.0, np.float32)
ck = K.{kernel}[(zetile.cdiv(M, 32), zetile.cdiv(N, 32))](x, y, M, N, 64, 64, BM=32, BN=32,
                                                          {extra})
zetile.get_device().synchronize()
m = ck.asm["mlir"]; m = m.decode() if isinstance(m, bytes) else m
print("RESULT", json.dumps({{"err": float(np.abs(y[:M, :N] - 2 * x[:, :N]).max()),
                            "guard": bool((y[:M, N:] == 5).all() and (y[M:] == 5).all()),
                            "block": m.count("load_nd") + m.count("store_nd")}}))
""")
    assert res["err"] == 0.0, res
    assert res["guard"], res
    assert (res["block"] > 0) == (extra != "HINT=False"), res


def test_e5_rows_from_memory_with_multiple_of():
    """Starts read from memory, multiples of 16 (as the hint says), rows
    wrapping at M: the block loads (one descriptor per 16 rows) must give
    the rows (start + i) % M."""
    _opencl_cpu_or_skip()
    res = _run("""
import json, numpy as np, zetile
import xe_axis_kernels as K
rng = np.random.default_rng(8)
M, N, BM = 96, 40, 32
x = rng.standard_normal((M, 48)).astype(np.float32)
starts = np.array([0, 80, 48, 16], np.int32)              # 80: rows 80..95 then 0..15
y = np.zeros((4 * BM, 48), np.float32)
ck = K.gather_rows_from[(4,)](x, starts, y, M, N, 48, 48, BM=BM, BN=64, HINT=True)
zetile.get_device().synchronize()
want = np.concatenate([x[(s + np.arange(BM)) % M] for s in starts])
m = ck.asm["mlir"]; m = m.decode() if isinstance(m, bytes) else m
print("RESULT", json.dumps({"err": float(np.abs(y[:, :N] - want[:, :N]).max()),
                            "gathers": m.count("xegpu.load "), "block": m.count("load_nd")}))
""")
    assert res["err"] == 0.0, res
    assert res["block"] > 0 and res["gathers"] == 1, res   # 1: the scalar start


def test_e5_int8_pointer_matmul():
    """int8 dots from pointer tensors: once the addresses are proven affine,
    A comes in as 8x32 blocks and B as VNNI 32x16 blocks, as with tensor
    descriptors (row gathers cannot feed int8 DPAS). Exact int32 results."""
    _opencl_cpu_or_skip()
    res = _run("""
import json, numpy as np, zetile
import xe_axis_kernels as K
rng = np.random.default_rng(11)
M, N, Kd = 80, 96, 96                       # K: one full and one half-masked K tile
a = rng.integers(-128, 128, (M, Kd)).astype(np.int8)
b = rng.integers(-128, 128, (Kd, N)).astype(np.int8)
c = np.zeros((M, N), np.int32)
ck = K.matmul_int8_ptr[(zetile.cdiv(M, 32), zetile.cdiv(N, 32))](
    a, b, c, M, N, Kd, Kd, 1, N, 1, N, 1, BM=32, BN=32, BK=64)
zetile.get_device().synchronize()
m = ck.asm["mlir"]; m = m.decode() if isinstance(m, bytes) else m
ref = a.astype(np.int64) @ b.astype(np.int64)
print("RESULT", json.dumps({"exact": bool((c == ref).all()), "block": m.count("load_nd"),
                            "gathers": m.count("xegpu.load "), "dpas": m.count("xegpu.dpas")}))
""")
    assert res["block"] > 0 and res["gathers"] == 0 and res["dpas"] > 0, res
    assert res["exact"], res
