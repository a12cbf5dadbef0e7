"""Tensors of rank > 4 (issue 19): Triton has no rank limit and its tests
use 5-D and 6-D blocks (reshape, permute, chained reductions, batched dots,
tl.cat of 4-D descriptor blocks) and a 9-D reshape. zetile's limit is
ZT_MAX_RANK (10) on the CPU target; Xe targets take 1-D and 2-D tensors
and refuse the rest by name."""
import numpy as np
import pytest

import zetile
import zetile.language as tl


def test_max_rank_constant():
    import zetile._zetile as ext
    assert ext.MAX_RANK == 10


@pytest.mark.parametrize("shape, perm, red", [
    ((4, 8, 4, 2, 2), (2, 1, 0, 3, 4), (3, 1, 0)),
    ((2, 2, 8, 4, 4), (4, 0, 1, 3, 2), (0, 2, 0)),
])
def test_5d_permute_and_chained_reductions(shape, perm, red):
    @zetile.jit
    def k(In, Out, d0: tl.constexpr, d1: tl.constexpr, d2: tl.constexpr, d3: tl.constexpr,
          d4: tl.constexpr, p0: tl.constexpr, p1: tl.constexpr, p2: tl.constexpr,
          p3: tl.constexpr, p4: tl.constexpr, r0: tl.constexpr, r1: tl.constexpr,
          r2: tl.constexpr):
        idx = tl.arange(0, d0 * d1 * d2 * d3 * d4).reshape(d0, d1, d2, d3, d4)
        v = tl.permute(tl.load(In + idx), [p0, p1, p2, p3, p4])
        r = tl.sum(tl.sum(tl.sum(v, r0), r1), r2)
        tl.store(Out + tl.arange(0, r.shape[0] * r.shape[1]).reshape(r.shape), r)

    rs = np.random.RandomState(1)
    x = rs.randint(0, 1000, shape).astype(np.int32)
    want = x.transpose(perm).sum(red[0]).sum(red[1]).sum(red[2])
    out = np.zeros(want.shape, np.int32)
    k[(1,)](x, out, *shape, *perm, *red)
    np.testing.assert_array_equal(out, want)


def test_9d_reshape_and_reverse_permute():
    @zetile.jit
    def k(X, Z):
        x = tl.load(X + tl.arange(0, 512)).reshape(2, 2, 2, 2, 2, 2, 2, 2, 2)
        y = tl.permute(x, (8, 7, 6, 5, 4, 3, 2, 1, 0))
        tl.store(Z + tl.arange(0, 512), y.reshape(512))

    x = np.arange(512, dtype=np.int32)
    z = np.zeros(512, np.int32)
    k[(1,)](x, z)
    np.testing.assert_array_equal(z, x.reshape((2,) * 9).transpose(tuple(range(8, -1, -1))).ravel())


@pytest.mark.parametrize("rank", [5, 6])
def test_batched_dot_over_several_batch_dims(rank):
    @zetile.jit
    def k(X, Y, Z, RANK: tl.constexpr, N: tl.constexpr):
        n: tl.constexpr = (1 << (RANK - 2)) * N * N
        x = tl.load(X + tl.arange(0, n)).reshape([2] * (RANK - 2) + [N, N])
        y = tl.trans(tl.load(Y + tl.arange(0, n)).reshape([2] * (RANK - 2) + [N, N]))
        tl.store(Z + tl.arange(0, n), tl.dot(x, y).reshape([n]))

    N = 16
    shape = (2,) * (rank - 2) + (N, N)
    rs = np.random.RandomState(rank)
    a = rs.randint(-4, 5, shape).astype(np.float32)
    b = rs.randint(-4, 5, shape).astype(np.float32)
    c = np.zeros(shape, np.float32)
    k[(1,)](a, b, c, rank, N)
    np.testing.assert_allclose(c, a @ np.swapaxes(b, -1, -2), rtol=0, atol=0)


def test_join_to_5d_and_split_back():
    @zetile.jit
    def k(X, Y, Z):
        i = tl.arange(0, 64).reshape(2, 2, 4, 4)
        j = tl.join(tl.load(X + i), tl.load(Y + i))  # 5-D
        s = tl.sum(j, 4) * 10
        a, b = tl.split(j)
        tl.store(Z + i, s + a - b)

    rs = np.random.RandomState(3)
    x = rs.randint(0, 100, 64).astype(np.int32)
    y = rs.randint(0, 100, 64).astype(np.int32)
    z = np.zeros(64, np.int32)
    k[(1,)](x, y, z)
    np.testing.assert_array_equal(z, (x + y) * 10 + x - y)


def test_rank_above_the_limit_refused():
    @zetile.jit
    def k(X):
        x = tl.arange(0, 2048).reshape(2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2)
        tl.store(X + tl.arange(0, 2048), x.reshape(2048))

    with pytest.raises(zetile.CompilationError, match="rank 11; zetile supports at most 10"):
        k.warmup(np.zeros(2048, np.int32), grid=(1,))


def test_print_of_5d_refused_on_cpu():
    @zetile.jit
    def k(X):
        x = tl.load(X + tl.arange(0, 32)).reshape(2, 2, 2, 2, 2)
        tl.device_print("x", x)

    with pytest.raises(zetile.CompilationError, match="rank <= 4"):
        k.warmup(np.zeros(32, np.int32), grid=(1,))


def test_5d_refused_by_name_on_xe():
    @zetile.jit
    def k(X, Z):
        i = tl.arange(0, 32).reshape(2, 2, 2, 2, 2)
        tl.store(Z + i, tl.load(X + i) * 2.0)

    with pytest.raises(zetile.UnsupportedError, match="5-D tensors are not supported on Xe"):
        zetile.compile(k, {"X": "*fp32", "Z": "*fp32"}, target="pvc")


@zetile.jit
def perm_sum_5d(X, Z):
    i = tl.arange(0, 64).reshape(2, 2, 2, 2, 4)
    x = tl.permute(tl.load(X + i), (4, 3, 2, 1, 0))
    tl.store(Z + tl.arange(0, 16).reshape(2, 2, 2, 2), tl.sum(x, 0) * 2.0)


def test_5d_builds_for_dg2_e1():
    """dg2's lowering (tgllp, skl share it) is rank-generic: a 5-D permute
    and reduction builds, and spirv-val accepts it (E1)."""
    from zt_testutil import have_tool, spirv_val
    if not have_tool("spirv-val"):
        pytest.skip("spirv-val not installed")
    spirv_val(zetile.compile(perm_sum_5d, {"X": "*fp32", "Z": "*fp32"}, target="dg2").asm["spirv"])


def test_5d_on_dg2_spirv_e5():
    """E5: that kernel's dg2 SPIR-V on Intel's OpenCL CPU runtime."""
    import os
    from zt_testutil import opencl_cpu_or_skip, run_result
    opencl_cpu_or_skip()
    res = run_result("""
import json, numpy as np, zetile
import test_high_rank as T
assert zetile.get_device().name == "opencl:cpu"
x = np.random.RandomState(0).randint(0, 50, 64).astype(np.float32)
z = np.zeros(16, np.float32)
ck = T.perm_sum_5d[(1,)](x, z)
want = (x.reshape(2, 2, 2, 2, 4).transpose(4, 3, 2, 1, 0).sum(0) * 2).ravel()
print("RESULT " + json.dumps({"target": ck.metadata["target"], "ok": bool(np.array_equal(z, want)),
                              "z": z.tolist()}))
""", path=os.path.dirname(os.path.abspath(__file__)), env={"ZETILE_OPENCL_TARGET": "dg2"})
    assert res["target"] == "dg2", res
    assert res["ok"], res
