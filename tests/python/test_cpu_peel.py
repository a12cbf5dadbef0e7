"""The first iteration of an scf.for peeled when a carried tensor starts as a
splat (issue 16, lowering/cpu/cpu_control.c peel_ok/emit_peeled): layer
norm's `acc = tl.zeros([BLOCK]); for ...: acc += x` no longer fills a 4 KB
buffer with zeros per row and reads it back. The peeled iteration runs the
same ops in the same order, so results are bit for bit those of the loop;
zero trips take the else branch (the init copied)."""
import re

import numpy as np
import pytest

import zetile
import zetile.language as tl

pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


@zetile.jit
def _sums(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    acc2 = tl.full([BLOCK], -0.0, dtype=tl.float32)
    k = 0
    for off in range(0, n, BLOCK):
        cols = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + cols, mask=cols < n, other=0.0)
        acc += x
        acc2 += x * x
        k += 1
    tl.store(out_ptr, tl.sum(acc, axis=0))
    tl.store(out_ptr + 1, tl.sum(acc2, axis=0))
    tl.store(out_ptr + 2, k.to(tl.float32))
    tl.store(out_ptr + 3, tl.max(acc2, axis=0))


def test_peeled_loop_structure():
    ck = zetile.compile(_sums, "*fp32, *fp32, i32", constexprs={"BLOCK": 256}, cached=False)
    m = ck.asm["mlir"]
    # The loop over `off` (i32 induction variable) starts at lb + step, behind
    # an `scf.if lb < n` holding the first iteration.
    loop = re.search(r"scf\.for %\w+ = (%\w+) to %arg2 step %\w+ iter_args\(.*: i32 \{", m)
    assert loop, m
    start = loop.group(1)
    assert re.search(re.escape(start) + r" = arith\.addi ", m), "the loop is not peeled"
    head = m[:loop.start()]
    assert re.search(r"arith\.cmpi slt, %\w+, %arg2 : i32", head)
    assert re.search(r"scf\.if %\w+ -> \(i32\) \{", head), "no peeled iteration before the loop"


@pytest.mark.parametrize("n", [0, 1, 255, 256, 257, 700, 1024])
def test_peeled_results_every_trip_count(n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal(max(n, 1), dtype=np.float32)
    if n > 3:
        x[:3] = -0.0
    out = np.full(4, 7.0, np.float32)
    _sums[(1,)](x, out, n, BLOCK=256)
    xs = x[:n].astype(np.float64)
    assert out[2] == -(-n // 256)
    np.testing.assert_allclose(out[0], xs.sum(), atol=1e-4)
    np.testing.assert_allclose(out[1], (xs * xs).sum(), rtol=1e-5, atol=1e-6)
    if n == 0:
        # Zero trips: the inits themselves (0 and -0.0 lanes).
        assert out[0] == 0 and out[1] == 0 and np.signbit(out[3])
    else:
        # Lane sums in the kernel's order, in f32: the same bits.
        pad = np.zeros(-(-n // 256) * 256, np.float32)
        pad[:n] = x[:n]
        lanes = np.full(256, -0.0, np.float32)
        for blk in pad.reshape(-1, 256):
            lanes = lanes + blk * blk
        assert out[3] == lanes.max()
