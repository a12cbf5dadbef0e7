"""A masked 1-D loop whose mask covers the whole block runs as one unmasked
loop (issue 16, session 19; lowering/cpu/cpu_range.c cpu_split_loop).

cpu_split_loop cuts a loop over a block at the mask `s + arange < n`: lanes
below the bound's last multiple of 16 unmasked, the next 16 lanes masked, the
rest `other`. The first range stopped at numel - 16 even when the bound covers
the block, so every full program of vector add (all but the last) ran its last
16 lanes as masked vector ops. Now a bound >= numel runs the first range to
numel and the others are empty.
"""
import re

import numpy as np
import pytest

import zetile
import zetile.language as tl

pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


@zetile.jit
def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


def test_full_block_is_one_unmasked_range():
    mlir = zetile.compile(_add, {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32",
                                 "n": "i32"}, constexprs={"BLOCK": 1024}, cached=False).asm["mlir"]
    full = re.findall(r"(%\S+) = arith\.cmpi uge, %\S+, %c1024 : index", mlir)
    assert full, "no test of the bound against the block's size (fails before session 19)"
    assert any(re.search(r"= arith\.select " + re.escape(f) + r", %c1024, %\S+ : index", mlir)
               for f in full), mlir


@pytest.mark.parametrize("n", [16, 1008, 1009, 1023, 1024, 1025, 2047, 2048, 3 * 1024 + 5])
def test_values_at_every_bound(n):
    rng = np.random.default_rng(n)
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    # out has a sentinel tail: a store past n would show.
    out = np.full(n + 64, np.float32(7.5))
    _add[((n + 1023) // 1024,)](x, y, out, n, BLOCK=1024)
    np.testing.assert_array_equal(out[:n], x + y)
    assert (out[n:] == np.float32(7.5)).all()
