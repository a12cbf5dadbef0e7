"""Elementwise tile ops written whole (lowering/xe/xe_wide.c, issue 22): a run
of arith ops on a 1-D tile is one op on the subgroup's vector<nchunks*16 x T>
instead of one op per 16-element chunk, with its chunks written (as
vector.shuffle) only where a reader needs them, in that reader's scope.
Checks: the emitted text has one op per tile op (16 per op with
ZETILE_XE_WIDE=0, the chunks), E1 of both; E5 (the pvc SPIR-V on Intel's
OpenCL CPU runtime) and the CPU target against numpy on a kernel whose whole
values cross loops and branches (chunks written inside a loop must not be
read after it)."""
import os

import numpy as np
import pytest

import zetile
from zt_testutil import have_tool, opencl_cpu_or_skip, run_result, spirv_val

HERE = os.path.dirname(os.path.abspath(__file__))


def _mlir(monkeypatch, wide, kernel="short_chain", sig=None, **kw):
    import xe_wide_kernels as K
    if wide is None:
        monkeypatch.delenv("ZETILE_XE_WIDE", raising=False)
    else:
        monkeypatch.setenv("ZETILE_XE_WIDE", wide)
    c = zetile.compile(getattr(K, kernel), signature=sig or {"x_ptr": "*fp32", "y_ptr": "*fp32",
                                                             "n": "i32"},
                       constexprs={"BLOCK": 1024}, target="pvc", num_warps=4, cached=False, **kw)
    m = c.asm["mlir"]
    return (m if isinstance(m, str) else m.decode()), c.asm["spirv"]


def test_one_op_per_tile_op(monkeypatch):
    # 1024 elements over 4 subgroups: 16 chunks a subgroup.
    whole, spv_w = _mlir(monkeypatch, None)
    chunks, spv_c = _mlir(monkeypatch, "0")
    for op in ('"arith.mulf"', '"arith.addf"', '"arith.subf"', '"arith.maxnumf"'):
        assert whole.count(op) == 10, (op, whole.count(op))
        assert chunks.count(op) == 160, (op, chunks.count(op))
    assert "vector<256xf32>" in whole
    assert len(whole) < 0.6 * len(chunks), (len(whole), len(chunks))
    if have_tool("spirv-val"):
        spirv_val(spv_w)
        spirv_val(spv_c)


RUN = """
import json, numpy as np, zetile
import xe_wide_kernels as K
n, steps = 2500, 5                 # not a multiple of BLOCK: a masked tail
rng = np.random.default_rng(3)
x = rng.standard_normal(n).astype(np.float32)
y = np.full(2 * n + 8, 7.0, np.float32)
# one program per 1024 elements; the reduction is over each program's block
ref = np.empty(2 * n, np.float32)
for p in range(zetile.cdiv(n, 1024)):
    lo, hi = p * 1024, min(n, (p + 1) * 1024)
    r = K.scoped_ref(x[lo:hi], 1024, steps)
    ref[lo:hi], ref[n + lo:n + hi] = r[:hi - lo], r[hi - lo:]
K.scoped[(zetile.cdiv(n, 1024),)](x, y, n, steps, BLOCK=1024, num_warps=4)
zetile.get_device().synchronize()
print("RESULT", json.dumps({"rel": float((np.abs(y[:2 * n] - ref) / (np.abs(ref) + 1e-3)).max()),
                            "guard": bool((y[2 * n:] == 7.0).all()),
                            "device": zetile.get_device().info["name"]}))
"""


@pytest.mark.parametrize("device", ["cpu", "opencl:cpu"])
def test_scoped_numbers(device, tmp_path):
    if device == "opencl:cpu":
        opencl_cpu_or_skip()
    res = run_result(RUN, path=HERE, env={"ZETILE_DEVICE": device,
                                          "ZETILE_CACHE_DIR": str(tmp_path)})
    assert res["device"] == device, res
    assert res["guard"], res
    # the sum's order differs between the devices and numpy
    assert res["rel"] < 1e-4, res


def test_scoped_written_whole(monkeypatch):
    whole, spv = _mlir(monkeypatch, None, "scoped",
                       sig={"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "steps": "i32"})
    assert "vector<256xf32>" in whole and "vector.shuffle" in whole
    if have_tool("spirv-val"):
        spirv_val(spv)


@zetile.jit
def _bool_ne(x_ptr, y_ptr, z_ptr, N: zetile.language.constexpr):
    tl = zetile.language
    o = tl.arange(0, N)
    x = tl.load(x_ptr + o)
    y = tl.load(y_ptr + o)
    tl.store(z_ptr + o, ((x < y) != (y > 1)).to(tl.int32))


@zetile.jit
def _bool_ext_eq(x_ptr, y_ptr, z_ptr, N: zetile.language.constexpr):
    # Widened booleans compared (libdevice's nextafter has this form):
    # InstCombine turns `zext a == zext b` into a compare of the booleans.
    tl = zetile.language
    o = tl.arange(0, N)
    x = tl.load(x_ptr + o)
    y = tl.load(y_ptr + o)
    tl.store(z_ptr + o, tl.where((x < y).to(tl.int32) == (y > 1).to(tl.int32), x, y))


@pytest.mark.parametrize("kernel,wide", [(_bool_ne, "all"), (_bool_ext_eq, "all"),
                                         (_bool_ext_eq, "1")])
def test_bools_read_by_bool_compares_stay_in_chunks(monkeypatch, kernel, wide):
    # ZETILE_XE_WIDE=all writes the two compares whole; had their results
    # been split for the (chunked) compare of booleans, LLVM's InstCombine
    # would fold the chunk compares of shuffles into OpLogicalNotEqual on a
    # bool vector, which Debian's IGC aborts on (conformance binary/mask_ne
    # at num_warps=1, 41ae94e). Such booleans stay in chunks. E1, and E2
    # where ocloc is installed: the build must not abort. Widened booleans
    # compared count as booleans compared (_bool_ext_eq: ocloc SIGABRT by
    # default before, found by test_libdevice_ext's nextafter in CI).
    monkeypatch.setenv("ZETILE_XE_WIDE", wide)
    spv = zetile.compile(kernel, signature={"x_ptr": "*i32", "y_ptr": "*i32", "z_ptr": "*i32"},
                         constexprs={"N": 64}, target="pvc", num_warps=1,
                         cached=False).asm["spirv"]
    if have_tool("spirv-dis"):
        import re
        import subprocess
        dis = subprocess.run(["spirv-dis", "-"], input=spv, capture_output=True,
                             check=True).stdout.decode()
        vec_bool = set(re.findall(r"(%\w+) = OpTypeVector %bool", dis))
        logical = re.findall(r"OpLogical(?:Not)?Equal (%\w+)", dis)
        assert not vec_bool & set(logical), (vec_bool, logical)
        assert logical or kernel is not _bool_ne, dis  # the scalar compare of booleans
    if have_tool("spirv-val"):
        spirv_val(spv)
    if have_tool("ocloc"):
        from zetile.tools import isa
        isas, log = isa.ocloc_isa(spv, "pvc")
        assert isas, log
