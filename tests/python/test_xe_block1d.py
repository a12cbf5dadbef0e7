"""1-D tensor descriptors on Xe: a rank-1 `desc.load` / `desc.store`
(Intel's own FlashAttention forward benchmark stores its per-row m_i with
one: `tl.make_tensor_descriptor(M, shape=[N_CTX], strides=[1],
block_shape=[BLOCK_M])`) becomes a pointer load / store under the bound
(lowering/common/block1d.c, before the Xe and dg2 lowerings). Before, pvc
and bmg refused it ("block loads/stores of rank other than 2", "1-D block
loads on Xe"), dg2 too ("dg2: 1-D block stores"). Evidence: E4 (CPU target
against numpy), E1 (spirv-val) for pvc, bmg and dg2, E5 (the pvc SPIR-V, and
dg2's with ZETILE_OPENCL_TARGET=dg2, on Intel's OpenCL CPU runtime, lengths
that are not multiples of the block: the bound is the mask)."""
import os

import numpy as np
import pytest

import zetile
import zetile.language as tl
from zt_testutil import have_tool, opencl_cpu_or_skip, run_result, spirv_val

HERE = os.path.dirname(os.path.abspath(__file__))


@zetile.jit
def rowmax_kernel(X, M, n_rows, N_COLS: tl.constexpr, BLOCK_M: tl.constexpr):
    pid = tl.program_id(0)
    dx = tl.make_tensor_descriptor(X, shape=[n_rows, N_COLS], strides=[N_COLS, 1],
                                   block_shape=[BLOCK_M, N_COLS])
    dm = tl.make_tensor_descriptor(M, shape=[n_rows], strides=[1], block_shape=[BLOCK_M])
    x = dx.load([pid * BLOCK_M, 0])
    dm.store([pid * BLOCK_M], tl.max(x, axis=1))


@zetile.jit
def affine1d_kernel(X, Y, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    dx = tl.make_tensor_descriptor(X, shape=[n], strides=[1], block_shape=[BLOCK])
    dy = tl.make_tensor_descriptor(Y, shape=[n], strides=[1], block_shape=[BLOCK])
    dy.store([pid * BLOCK], dx.load([pid * BLOCK]) * 2.0 + 1.0)


def run_both(n_rows, n):
    """Max abs errors of both kernels against numpy on the current device."""
    rng = np.random.default_rng(n_rows + n)
    x = rng.standard_normal((n_rows, 64)).astype(np.float32)
    m = np.full(n_rows + 7, -5.0, np.float32)   # past n_rows: must stay untouched
    rowmax_kernel[(-(-n_rows // 64),)](x, m, n_rows, N_COLS=64, BLOCK_M=64, num_warps=4)
    ref_m = np.concatenate([x.max(axis=1), np.full(7, -5.0, np.float32)])
    v = rng.standard_normal(n).astype(np.float32)
    y = np.full(n + 5, 3.0, np.float32)
    affine1d_kernel[(-(-n // 128),)](v, y, n, BLOCK=128, num_warps=4)
    ref_y = np.concatenate([v * 2.0 + 1.0, np.full(5, 3.0, np.float32)])
    return float(np.abs(m - ref_m).max()), float(np.abs(y - ref_y).max())


def test_cpu_target():
    assert run_both(200, 300) == (0.0, 0.0)


@pytest.mark.parametrize("target", ["pvc", "bmg", "dg2"])
def test_e1_builds(target):
    for kernel, sig, conf in ((rowmax_kernel, "*fp32,*fp32,i32", {"N_COLS": 64, "BLOCK_M": 64}),
                              (affine1d_kernel, "*fp32,*fp32,i32", {"BLOCK": 128})):
        ck = zetile.compile(kernel, signature=sig, constexprs=conf, target=target, num_warps=4,
                            cached=False)
        if have_tool("spirv-val"):
            spirv_val(ck.asm["spirv"])


@pytest.mark.parametrize("target", ["pvc", "dg2"])
def test_e5_opencl_cpu(target):
    opencl_cpu_or_skip()
    res = run_result("""
        import json, zetile
        from test_xe_block1d import run_both
        info = zetile.get_device().info
        assert info["name"] == "opencl:cpu" and info["target"] == %r, info
        print("RESULT " + json.dumps([run_both(200, 300), run_both(128, 256)]))
    """ % target, path=HERE, env={"ZETILE_OPENCL_TARGET": target, "ZETILE_CACHE_DIR": os.path.join(
        os.environ.get("ZETILE_CACHE_DIR", "/tmp"), "xe_block1d_e5_" + target)}, timeout=600)
    assert res == [[0.0, 0.0], [0.0, 0.0]], res
