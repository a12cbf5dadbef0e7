"""The three matmul kernels of examples/matmul.py (pointer tensors with masks,
tensor descriptors, block pointers) on the Xe targets, without an Intel GPU:
E1 spirv-val (pvc, bmg); for pvc Intel's offline compiler builds them and the
iga64 ISA has DPAS inside the K loop and ocloc reports no spill for the
default configuration (zetile's own subgroup split, 256 GRF)."""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import zetile
from zetile import _C
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "examples"))
from matmul import matmul_block_ptr_kernel, matmul_descriptor_kernel, matmul_kernel
from zetile.tools import isa
from zetile.tools.tensor_descriptor import TensorDescriptor


def have_tool(name):
    return shutil.which(name) is not None


def _dtype(name):
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _tile_ir(kind, dt, cdt, bm=64, bn=64, bk=32, size=512):
    """Tile IR of one kernel specialized as a launch on arrays would be."""
    zetile.set_device("cpu")
    dev = zetile.get_device()
    a = np.zeros((size, size), _dtype(dt))
    b = np.zeros((size, size), _dtype(dt))
    c = np.zeros((size, size), _dtype(cdt))

    def st(x):
        return [s // x.itemsize for s in x.strides]

    M = N = K = size
    if kind == "pointer":
        fn, args, kw = matmul_kernel, (a, b, c, M, N, K, *st(a), *st(b), *st(c)), dict(
            BLOCK_SIZE_M=bm, BLOCK_SIZE_N=bn, BLOCK_SIZE_K=bk, GROUP_SIZE_M=4)
    elif kind == "descriptor":
        fn = matmul_descriptor_kernel
        args = (TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(b, [bk, bn]),
                TensorDescriptor.from_tensor(c, [bm, bn]), M, N, K)
        kw = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk)
    else:
        fn, args, kw = matmul_block_ptr_kernel, (a, b, c, M, N, K, *st(a), *st(b), *st(c)), dict(
            BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk)
    bound = fn._bind(args, kw)
    _, arg_types, div, constexprs, _, descs = fn.specialize(bound, dev)
    return fn.build_tile_ir(arg_types, constexprs, div, descs)


def _compile(kind, target, dt="float16", cdt="float32", num_warps=0, size=512):
    text = _tile_ir(kind, dt, cdt, size=size)
    return _C.compile(text, target=target, num_warps=num_warps, compat=False, igc_options=None,
                      cached=False)


CASES = [("pointer", "float16", "float32"), ("descriptor", "float16", "float32"),
         ("block_ptr", "float16", "float32"), ("descriptor", "bfloat16", "bfloat16"),
         ("block_ptr", "float16", "float16"), ("pointer", "bfloat16", "bfloat16")]


@pytest.mark.parametrize("target", ["pvc", "bmg"])
@pytest.mark.parametrize("kind,dt,cdt", CASES)
def test_spirv_validates(kind, dt, cdt, target):
    if not have_tool("spirv-val"):
        pytest.skip("spirv-val is not installed")
    art = _compile(kind, target, dt, cdt)
    mlir = art.get("mlir").decode()
    assert "xegpu.dpas" in mlir
    meta = art.get("meta").decode()
    assert "igc_options=-ze-opt-large-register-file" in meta, meta
    with tempfile.NamedTemporaryFile(suffix=".spv") as f:
        f.write(art.get("spirv"))
        f.flush()
        r = subprocess.run(["spirv-val", f.name], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def _ocloc(spv, options=None):
    isas, log = isa.ocloc_isa(spv, "pvc", options or "")
    return "".join(isas.values()), isa.spill_from_log(log)


@pytest.mark.parametrize("kind,dt,cdt", CASES)
def test_ocloc_dpas_in_k_loop(kind, dt, cdt):
    if not (have_tool("ocloc") and have_tool("iga64")):
        pytest.skip("ocloc/iga64 are not installed")
    art = _compile(kind, "pvc", dt, cdt)
    asm, spill = _ocloc(art.get("spirv"), "-ze-opt-large-register-file")
    r = isa.analyze_isa(asm)
    # 64x64 tile, BLOCK_K 32. Block loads: a 2x2 subgroup grid, 32x32 per
    # subgroup: 4x2 accumulators x 2 K steps = 16 DPAS per iteration. The
    # pointer kernel on 512x512 arrays gets Triton's launch hints (sizes and
    # strides divisible by 16, unit strides constant), which make its
    # pointer tensors 2D block IO too (xe_axis.c).
    want = 16
    assert r["dpas"] >= want, r
    assert r["dpas_in_innermost_loop"] >= want, r
    print(f"{kind} {dt}->{cdt}: dpas={r['dpas']} in loop={r['dpas_in_innermost_loop']} "
          f"calla={r['calla']} spill~{spill} regs (large GRF)")
    # The default configuration does not spill (issue 3).
    assert spill == 0, f"{kind}: ocloc reports ~{spill} spilled registers"
    assert r["scratch_sends"] == 0, f"{kind}: {r['scratch_sends']} scratch sends"
    if kind == "pointer":
        # 520 is not a multiple of 16: no hints, row gathers: 4x4 subgroups of
        # 16x16, 2x1 accumulators x 2 K steps = 4 DPAS; no 2-D block builtins,
        # so nothing unresolved even on IGC 2022; no spill either.
        art = _compile(kind, "pvc", dt, cdt, size=520)
        asm, spill = _ocloc(art.get("spirv"), "-ze-opt-large-register-file")
        r = isa.analyze_isa(asm)
        assert r["dpas_in_innermost_loop"] >= 4, r
        assert r["calla"] == 0, r
        assert spill == 0, f"gathered pointer matmul: ~{spill} spilled registers"


def test_fp64_dots_are_unsupported():
    # fp64 inputs have no DPAS: the message names the op, the types and the line.
    text = _tile_ir("descriptor", "float16", "float32")
    bad = text.replace("f16", "f64")
    with pytest.raises(_C.Error) as ei:
        _C.compile(bad, target="pvc", num_warps=0, compat=False, igc_options=None, cached=False)
    assert "f64" in str(ei.value) and "matmul.py" in str(ei.value), str(ei.value)
