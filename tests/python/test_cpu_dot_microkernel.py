"""CPU target (issue 16): the register-blocked dot micro-kernel
(lowering/cpu/cpu_dot.c). Its block (rows x vectors of columns) follows the
host: 8 rows x 2 vectors of 16 lanes with AVX-512F, 6 rows x 2 vectors of 8
lanes on AVX2 hosts, whole blocks of rows and then the rows left (M % 6) as
one smaller block.

Each result element must be the chain fma(a[m, k], b[k, n], acc) in
increasing k, whatever the blocking: the results are compared bit for bit
with that chain computed in numpy (an exact f32 fma from float64, below), on
shapes that leave row and column tails (masked stores, rows wrapped by % M),
a masked K tail, f16 inputs, a nonzero initial accumulator carried across
the k loop, and `acc += tl.dot(a, b)` (a chain from zero, then one add). A
wrong row block, a tail block reading the wrong rows, a skipped k step or a
reordered chain changes bits here."""
import re

import numpy as np
import pytest

import zetile
import zetile.language as tl


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


def _fma32(a, b, c):
    """Correctly rounded f32 fma of f32 arrays: a * b is exact in float64,
    s = a * b + c rounded to float64 with its exact error e (two-sum); the
    f32 rounding of s differs from that of s + e only when s is exactly
    halfway between two floats (such a midpoint is a float64 number, so no
    other one lies between s and s + e), and then e decides."""
    p = a.astype(np.float64) * b.astype(np.float64)
    c64 = c.astype(np.float64)
    s = p + c64
    bb = s - p
    e = (p - (s - bb)) + (c64 - bb)
    r = s.astype(np.float32)
    up = np.nextafter(r, np.float32(np.inf))
    dn = np.nextafter(r, np.float32(-np.inf))
    r64 = r.astype(np.float64)
    mid_up = s == (r64 + up.astype(np.float64)) / 2
    mid_dn = s == (r64 + dn.astype(np.float64)) / 2
    r = np.where(mid_up & (e > 0), up, r)
    r = np.where(mid_dn & (e < 0), dn, r)
    return r


def _chain(a, b, acc):
    """acc (M x N f32) after fma(a[:, k], b[k, :], acc) for k = 0, 1, ..."""
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    for k in range(a.shape[1]):
        acc = _fma32(np.broadcast_to(a32[:, k:k + 1], acc.shape),
                     np.broadcast_to(b32[k:k + 1, :], acc.shape), acc)
    return acc


@zetile.jit
def _mm(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn, scm, scn,
        BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, ADD: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_am = (pid_m * BM + tl.arange(0, BM)) % M
    offs_bn = (pid_n * BN + tl.arange(0, BN)) % N
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + (offs_am[:, None] * sam + offs_k[None, :] * sak)
    b_ptrs = b_ptr + (offs_k[:, None] * sbk + offs_bn[None, :] * sbn)
    offs_cm = pid_m * BM + tl.arange(0, BM)
    offs_cn = pid_n * BN + tl.arange(0, BN)
    c_ptrs = c_ptr + scm * offs_cm[:, None] + scn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    # The initial accumulator is c itself: the chain starts from nonzero.
    acc = tl.load(c_ptrs, mask=c_mask, other=0.0)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BK, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BK, other=0.0)
        if ADD:
            acc += tl.dot(a, b, input_precision="ieee")
        else:
            acc = tl.dot(a, b, acc, input_precision="ieee")
        a_ptrs += BK * sak
        b_ptrs += BK * sbk
    tl.store(c_ptrs, acc, mask=c_mask)


def _s(x):
    return [v // x.itemsize for v in x.strides]


def _run(a, b, c0, bm, bn, bk, add):
    M, K = a.shape
    N = b.shape[1]
    c = c0.copy()
    _mm[(zetile.cdiv(M, bm), zetile.cdiv(N, bn))](a, b, c, M, N, K, *_s(a), *_s(b), *_s(c),
                                                  BM=bm, BN=bn, BK=bk, ADD=add)
    return c


def _expected(a, b, c0, bk, add):
    if not add:
        return _chain(a, b, c0)
    acc = c0
    for k0 in range(0, a.shape[1], bk):
        d = _chain(a[:, k0:k0 + bk], b[k0:k0 + bk, :], np.zeros_like(c0))
        acc = (acc + d).astype(np.float32)
    return acc


@pytest.mark.parametrize("M,N,K,bm,bn,bk,dtype,add", [
    (64, 64, 64, 64, 64, 32, np.float32, False),   # 6-row blocks + 4 rows, 2 k tiles
    (50, 70, 45, 32, 32, 32, np.float32, False),   # 6-row blocks + 2, row/col/K tails
    (40, 48, 37, 16, 16, 16, np.float16, False),   # f16 inputs, 6 + 6 + 4 rows
    (70, 40, 33, 64, 32, 32, np.float32, True),    # acc += dot: chain per k tile
    (24, 24, 20, 8, 8, 16, np.float32, False),     # 8 x 8 tiles: one vector of 8
])
def test_dot_bits_equal_fma_chain(M, N, K, bm, bn, bk, dtype, add):
    rng = np.random.default_rng(M * 10000 + N * 100 + K)
    a = rng.standard_normal((M, K)).astype(dtype)
    b = rng.standard_normal((K, N)).astype(dtype)
    c0 = rng.standard_normal((M, N)).astype(np.float32)
    got = _run(a, b, c0, bm, bn, bk, add)
    want = _expected(a, b, c0, bk, add)
    bad = np.argwhere(got.view(np.int32) != want.view(np.int32))
    assert bad.size == 0, (len(bad), bad[:5], got[tuple(bad[0])], want[tuple(bad[0])])


def _host_avx512():
    try:
        with open("/proc/cpuinfo") as f:
            return " avx512f" in f.read()
    except OSError:
        pytest.skip("no /proc/cpuinfo")


def test_accumulators_fit_the_registers():
    # The k loop of the dot carries its accumulators as scf.for iter_args of
    # vector type: they must fit the host's vector registers with room for
    # b's vectors and a's broadcast (32 registers of 512 bits with AVX-512F,
    # else 16 of 256 bits; at most 12 of 256 there), or LLVM spills them on
    # every k step. (Fails with the AVX-512 block on an AVX2 host: 16
    # vector<16xf32>, 32 ymm registers' worth.)
    a = np.zeros((64, 64), np.float32)
    k = _mm.warmup(a, a, a, 64, 64, 64, *_s(a), *_s(a), *_s(a), BM=64, BN=64, BK=32, ADD=False,
                   grid=(1, 1))
    loops = [ln for ln in k.asm["mlir"].splitlines() if "scf.for" in ln and "iter_args" in ln
             and "vector<" in ln]
    assert loops, "no vector dot k loop in the lowering"
    avx512 = _host_avx512()
    reg_bits, budget = (512, 32 - 3) if avx512 else (256, 16 - 4)
    for ln in loops:
        types = ln.rsplit("->", 1)[1]
        bits = sum(int(n) * 32 for n in re.findall(r"vector<(\d+)xf32>", types))
        assert bits <= budget * reg_bits, (bits // reg_bits, ln[:200])


def test_b_rows_prefetched_one_step_ahead():
    # The b tile's rows are a matrix row apart and new on every k step; the
    # row load of a carried pointer tensor stepped by loop-invariant
    # arithmetic (`b_ptrs += BK * sbk`, computed in the body) prefetches the
    # next step's rows (lowering/cpu/cpu_ops.c cpu_prefetch_row, the step
    # hoisted by cpu_control.c hoist_step). Fails with a library that does
    # not: no prefetch in the lowering.
    a = np.zeros((64, 64), np.float32)
    k = _mm.warmup(a, a, a, 64, 64, 64, *_s(a), *_s(a), *_s(a), BM=32, BN=32, BK=32, ADD=False,
                   grid=(2, 2))
    assert '"llvm.intr.prefetch"' in k.asm["mlir"]
    assert "llvm.intr.prefetch" in k.asm["llvm"]  # the LLVM dialect, before LLVM IR


def test_descriptor_tiles_prefetched_one_step_ahead():
    # A 2-D block load whose offset is its loop's induction variable
    # (`a_desc.load([pid_m * BM, k])` for k in range(0, K, BK)) prefetches
    # the rows the next iteration reads (lowering/cpu/cpu_block.c
    # prefetch_next_block). Fails with a library that does not.
    from matmul import matmul_descriptor_kernel
    from zetile.tools.tensor_descriptor import TensorDescriptor
    a = np.zeros((64, 64), np.float32)
    descs = [TensorDescriptor.from_tensor(a, [32, 32]) for _ in range(3)]
    k = matmul_descriptor_kernel.warmup(*descs, 64, 64, 64, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32,
                                        grid=(2, 2))
    assert '"llvm.intr.prefetch"' in k.asm["mlir"]
    # and the numbers are still right with tiles past the edges (prefetches
    # of rows beyond the view never fault)
    rng = np.random.default_rng(5)
    from matmul import matmul_descriptor
    x = rng.standard_normal((72, 40)).astype(np.float32)
    y = rng.standard_normal((40, 48)).astype(np.float32)
    z = np.zeros((72, 48), np.float32)
    matmul_descriptor(x, y, z, 32, 32, 32)
    np.testing.assert_allclose(z, x.astype(np.float64) @ y, rtol=1e-4, atol=1e-4)
