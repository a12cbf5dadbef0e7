"""Code generation choices of the CPU target that change speed, not meaning
(issue 16): lazy loads (lowering/cpu/cpu_ops.c), block loads as lane loops
(cpu_block.c), 8-row dot blocks (cpu_dot.c), 512-bit vectors on AVX-512 hosts
(jit/compiler_cpu_object.c). Each test checks the results (E4) and, where the
choice is visible, that it was made.
"""
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

import zetile
import zetile.language as tl


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


@zetile.jit
def _sum_then_clobber(x_ptr, out_ptr, BLOCK: tl.constexpr):
    # The load's only reader (the sum) comes after a store to the same
    # memory: a lazy load moved to the sum would read the zeros.
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32))
    tl.store(out_ptr, tl.sum(x * 2.0, axis=0))


@zetile.jit
def _reverse_in_place(x_ptr, BLOCK: tl.constexpr):
    # A permuted store of the loaded values into the same memory: each
    # element must be the value before any store.
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    tl.store(x_ptr + (BLOCK - 1 - offs), x + 1.0)


@zetile.jit
def _row_sums(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Layer norm's accumulation loop: acc += tl.load(...).
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, n, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + cols, mask=cols < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))


def test_load_not_moved_past_store():
    x = np.arange(256, dtype=np.float32)
    want = float(np.sum(x.astype(np.float64) * 2))
    out = np.zeros(1, np.float32)
    _sum_then_clobber[(1,)](x, out, BLOCK=256)
    assert out[0] == want
    assert not x.any()


def test_permuted_store_reads_old_values():
    x = np.arange(64, dtype=np.float32)
    _reverse_in_place[(1,)](x, BLOCK=64)
    np.testing.assert_array_equal(x, np.arange(64, dtype=np.float32)[::-1] + 1)


def test_accumulated_load_is_lazy_and_right():
    n = 3000
    x = np.random.default_rng(1).standard_normal(n, dtype=np.float32)
    out = np.zeros(1, np.float32)
    _row_sums[(1,)](x, out, n, BLOCK=1024)
    assert abs(out[0] - float(np.sum(x.astype(np.float64)))) < 1e-3
    ck = zetile.compile(_row_sums, "*fp32, *fp32, i32", constexprs={"BLOCK": 1024})
    # Only the carried accumulator needs a 1024-element buffer: the load is
    # read where it is added (no buffer of its own).
    allocs = re.findall(r"memref\.alloca\(\) .*: memref<1024xf32>", ck.asm["mlir"])
    assert len(allocs) == 1, ck.asm["mlir"]


@zetile.jit
def _desc_dot(a_desc, b_desc, c_desc, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
              KT: tl.constexpr):
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, KT):
        a = a_desc.load([0, k * BK])
        b = b_desc.load([k * BK, 0])
        acc += tl.dot(a, b)
    c_desc.store([0, 0], acc)


@pytest.mark.parametrize("bm,bn,bk", [(64, 64, 32), (12, 32, 16), (8, 16, 8)])
def test_descriptor_dot_blocks(bm, bn, bk):
    # 8-row blocks (64, 8), 4-row blocks (12) and one vector of columns (16);
    # tile rows of 32, 16 and 8 elements through the block loads' lane loops.
    from zetile.tools.tensor_descriptor import TensorDescriptor
    rng = np.random.default_rng(2)
    K = 3 * bk
    a = rng.standard_normal((bm, K), dtype=np.float32)
    b = rng.standard_normal((K, bn), dtype=np.float32)
    c = np.zeros((bm, bn), np.float32)
    _desc_dot[(1,)](TensorDescriptor.from_tensor(a, [bm, bk]),
                    TensorDescriptor.from_tensor(b, [bk, bn]),
                    TensorDescriptor.from_tensor(c, [bm, bn]), BM=bm, BN=bn, BK=bk, KT=3)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-5, atol=1e-4)


@zetile.jit
def _softmax_row(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + offs, e / tl.sum(e, axis=0), mask=offs < n)


def _fma_registers(env_bits, monkeypatch, tmp_path):
    """The vector registers the exp polynomial's packed FMAs use ({"zmm"}, {"ymm"})."""
    if env_bits is None:
        monkeypatch.delenv("ZETILE_CPU_VECTOR_BITS", raising=False)
    else:
        monkeypatch.setenv("ZETILE_CPU_VECTOR_BITS", env_bits)
    ck = zetile.compile(_softmax_row, "*fp32, *fp32, i32", constexprs={"BLOCK": 1024},
                        cached=False)
    obj = tmp_path / f"k{env_bits}.o"
    obj.write_bytes(ck.asm["obj"])
    dis = subprocess.run(["objdump", "-d", str(obj)], capture_output=True, text=True,
                         check=True).stdout
    # Packed f32 FMAs only: a scalar exp (vfmadd...ss on xmm) is the masked
    # tail's loop-invariant value, hoisted out of its loop; the division by
    # the sum's f64 correction step (vfmadd...pd) works on f32 vectors
    # widened to f64, twice their width.
    return set(re.findall(r"vfmadd\w+ps\s+%([xyz]mm)", dis))


@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump needed")
def test_vector_width(monkeypatch, tmp_path):
    with open("/proc/cpuinfo") as f:
        avx512 = " avx512f" in f.read()
    if not avx512:
        pytest.skip("host without AVX-512F")
    assert _fma_registers(None, monkeypatch, tmp_path) == {"zmm"}  # default: 512 bits
    assert _fma_registers("256", monkeypatch, tmp_path) == {"ymm"}  # LLVM's own tuning
    x = np.random.default_rng(3).standard_normal(781, dtype=np.float32)
    y = np.empty_like(x)
    _softmax_row[(1,)](x, y, 781, BLOCK=1024)
    e = np.exp(x.astype(np.float64) - x.max())
    np.testing.assert_allclose(y, e / e.sum(), rtol=1e-5, atol=1e-7)


@zetile.jit
def _div_by_scalar(x_ptr, y_ptr, d, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) / d, mask=m)


@pytest.mark.parametrize("d", [3.0, 0.1, -7.3e-39, 1.5e38, 2.0 ** -149, 0.0, -0.0,
                               float("inf"), float("nan"), 1.0 - 2.0 ** -24])
def test_division_by_uniform_is_correctly_rounded(d):
    # Division by a uniform f32 divisor (softmax's e / sum(e)) must equal
    # IEEE f32 division (numpy's) bit for bit, whatever form a faster
    # lowering takes (x * (1/d) in f64 is exact too, but measured no faster
    # here: the loops are bound by their loads and stores).
    rng = np.random.default_rng(4)
    bits = rng.integers(0, 2 ** 32, 200_000, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([bits.view(np.float32),
                        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.4e38, 1.0],
                                 np.float32)])
    y = np.empty_like(x)
    _div_by_scalar[(-(-x.size // 1024),)](x, y, np.float32(d), x.size, BLOCK=1024)
    with np.errstate(all="ignore"):
        want = x / np.float32(d)
    same = (y.view(np.uint32) == want.view(np.uint32)) | (np.isnan(y) & np.isnan(want))
    assert same.all(), (x[~same][:5], y[~same][:5], want[~same][:5])


def test_division_by_uniform_breaks_exact_ties_to_even():
    # x / d exactly halfway between two subnormal f32 numbers (x = o * D *
    # 2^-120, d = D * 2^30, x / d = o * 2^-150, o odd): IEEE rounds to the
    # even one. x * (1/d) in f64 alone rounded many of these the other way.
    o = np.arange(1, 64, 2)
    D = np.array([3, 49, 103, 105, 117, 1001, 4095])
    x = (o[:, None] * D[None, :] * 2.0 ** -120).astype(np.float32)
    for j, dv in enumerate(D):
        d = np.float32(dv * 2.0 ** 30)
        xs = np.ascontiguousarray(x[:, j])
        assert (xs.astype(np.float64) / np.float64(d) == o * 2.0 ** -150).all()  # exact ties
        y = np.empty_like(xs)
        _div_by_scalar[(1,)](xs, y, d, xs.size, BLOCK=32)
        want = xs / d
        bad = np.flatnonzero(y.view(np.uint32) != want.view(np.uint32))
        assert bad.size == 0, (dv, [(int(o[i]), int(y[i].view(np.uint32)),
                                     int(want[i].view(np.uint32))) for i in bad[:4]])
