"""A store's pass prefetches the next program's row (issue 16, session 19;
lowering/cpu/cpu_ops.c cpu_prefetch_next), and since session 21 every blocked
loop reading such a row does (cpu_prefetch_pick): a reduction's pass too.

Layer norm reads its row X three times, the first from memory. When a store
reads a load whose base moves with the program id (`X += row * stride`), each
16-lane block of the store's loop prefetches the same block of the next
program's row, `stride` elements on. A prefetch never faults: the last
program's prefetches past the array's end are harmless.
"""
import os
import re
import sys

import numpy as np
import pytest

import zetile
import zetile.language as tl

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))

pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


@zetile.jit
def _scale_rows(X, Y, stride, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    X += row * stride
    Y += row * stride
    cols = tl.arange(0, BLOCK)
    x = tl.load(X + cols, mask=cols < N, other=0.0)
    tl.store(Y + cols, x * 2.0 + 1.0, mask=cols < N)


@zetile.jit
def _flat(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(Y + offs, tl.load(X + offs, mask=offs < n) * 2.0, mask=offs < n)


@zetile.jit
def _row_sums(X, Out, stride, N, BLOCK: tl.constexpr):
    # No row store: only the reduction's pass reads X.
    row = tl.program_id(0)
    X += row * stride
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for off in range(0, N, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        acc += tl.load(X + cols, mask=cols < N, other=0.0)
    tl.store(Out + row, tl.sum(acc, axis=0))


_SIG = {"X": "*fp32", "Y": "*fp32", "stride": "i32", "N": "i32"}


def _prefetches(mlir):
    return re.findall(r'"llvm\.intr\.prefetch"\((%\S+)\)', mlir)


def test_store_prefetches_next_programs_row():
    mlir = zetile.compile(_scale_rows, _SIG, constexprs={"BLOCK": 256}, cached=False).asm["mlir"]
    pf = _prefetches(mlir)
    assert pf, "no prefetch in the store's loop"
    # The address: X's base plus stride * 4 bytes, then the block's offset.
    m = re.search(re.escape(pf[0]) + r" = llvm\.getelementptr (%\S+)\[", mlir)
    assert m, pf[0]
    m = re.search(re.escape(m.group(1)) + r" = llvm\.inttoptr (%\S+) ", mlir)
    m = re.search(re.escape(m.group(1)) + r" = arith\.addi %\S+, (%\S+) : i64", mlir)
    delta = m.group(1)
    m = re.search(re.escape(delta) + r" = arith\.muli (%\S+), (%\S+) : i64", mlir)
    assert m, delta
    ext = re.search(re.escape(m.group(1)) + r" = arith\.extsi (%\S+) : i32 to i64", mlir)
    four = re.search(re.escape(m.group(2)) + r" = arith\.constant 4 : i64", mlir)
    assert ext and four, (m.group(0), mlir[:400])
    # `stride` is the kernel's third argument.
    assert ext.group(1) == "%arg2", ext.group(0)


def test_no_prefetch_when_the_base_does_not_move_with_the_program():
    # vector add's base is the argument; the program id is in the offsets.
    mlir = zetile.compile(_flat, {"X": "*fp32", "Y": "*fp32", "n": "i32"},
                          constexprs={"BLOCK": 256}, cached=False).asm["mlir"]
    assert not _prefetches(mlir)


@pytest.mark.parametrize("rows,n", [(3, 200), (5, 256), (2, 17)])
def test_values_and_last_program(rows, n):
    # The last program prefetches past the end of x; results stay exact.
    x = np.random.default_rng(rows).standard_normal((rows, n)).astype(np.float32)
    y = np.full_like(x, np.nan)
    _scale_rows[(rows,)](x, y, n, n, BLOCK=256)
    np.testing.assert_array_equal(y, x * np.float32(2) + np.float32(1))


def test_layer_norm_prefetches_and_matches():
    from layer_norm import _layer_norm_fwd_fused, layer_norm
    M, N = 4, 1531
    rng = np.random.default_rng(0)
    x = rng.standard_normal((M, N)).astype(np.float32)
    w, b = rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)
    y, mean, rstd = np.empty_like(x), np.empty(M, np.float32), np.empty(M, np.float32)
    layer_norm(x, w, b, y, mean, rstd)
    x64 = x.astype(np.float64)
    ref = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-5) * w + b
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
    sig = {"X": "*fp32", "Y": "*fp32", "W": "*fp32", "B": "*fp32", "Mean": "*fp32",
           "Rstd": "*fp32", "stride": "i32", "N": "i32", "eps": "fp32"}
    mlir = zetile.compile(_layer_norm_fwd_fused, sig, constexprs={"BLOCK_SIZE": 1024},
                          cached=False).asm["mlir"]
    assert _prefetches(mlir)


def test_reduction_pass_prefetches_next_programs_row():
    # Session 21: layer norm's store pass waited on Y's lines and the next
    # row at once while its reduction passes left memory idle; now the
    # reduction's loop asks for the next row (here there is no other loop).
    sig = {"X": "*fp32", "Out": "*fp32", "stride": "i32", "N": "i32"}
    mlir = zetile.compile(_row_sums, sig, constexprs={"BLOCK": 256}, cached=False).asm["mlir"]
    pf = _prefetches(mlir)
    assert pf, "no prefetch in the reduction's loop"
    for a in pf:  # each one X's next row: X's base + stride * 4 bytes
        m = re.search(re.escape(a) + r" = llvm\.getelementptr (%\S+)\[", mlir)
        m = re.search(re.escape(m.group(1)) + r" = llvm\.inttoptr (%\S+) ", mlir)
        m = re.search(re.escape(m.group(1)) + r" = arith\.addi %\S+, (%\S+) : i64", mlir)
        m = re.search(re.escape(m.group(1)) + r" = arith\.muli (%\S+), %\S+ : i64", mlir)
        assert re.search(re.escape(m.group(1)) + r" = arith\.extsi %arg2 : i32 to i64", mlir), a
    rows, n = 3, 700
    x = np.random.default_rng(7).standard_normal((rows, n)).astype(np.float32)
    out = np.full(rows, np.nan, np.float32)
    _row_sums[(rows,)](x, out, n, n, BLOCK=256)
    np.testing.assert_allclose(out, x.astype(np.float64).sum(1), rtol=1e-5, atol=1e-4)
