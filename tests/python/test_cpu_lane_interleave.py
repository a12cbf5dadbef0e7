"""Lane loops on hosts without AVX-512 are interleaved by 2 (issue 16, session
18; lowering/cpu/cpu_values.c cpu_loop_end_lanes): a 16-lane loop is two ymm
vectors side by side instead of a loop running the vector body twice. The
values cannot change (LLVM interleaves only what it may reorder); these cases
check the annotation is there and the masked widths still give numpy's answer
(E4, against float64)."""
import numpy as np
import pytest

import zetile
import zetile.language as tl

pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


def _avx512():
    with open("/proc/cpuinfo") as f:
        return " avx512f" in f.read()


@zetile.jit
def _softmax_rows(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n
    x = tl.load(x_ptr + row * n + cols, mask=m, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * n + cols, e / tl.sum(e, axis=0), mask=m)


def test_lane_loops_interleaved_without_avx512():
    ck = zetile.compile(_softmax_rows, "*fp32, *fp32, i32", constexprs={"BLOCK": 256},
                        cached=False)
    mlir = ck.asm["mlir"]
    lanes = mlir.count("loop_unroll<disable = true>")
    inter = mlir.count("loop_interleave<count = 2>")
    assert lanes > 0, mlir
    if _avx512():
        assert inter == 0, "AVX-512: a 16-lane loop is one zmm op, nothing to interleave"
    else:
        assert inter == lanes, (inter, lanes)


@pytest.mark.parametrize("n", [1, 9, 16, 17, 100, 255, 256])
def test_softmax_widths(n):
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((6, n)) * 8).astype(np.float32)
    if n > 1:
        x[1, 0] = -np.inf  # a -inf lane (the masked tail holds more)
    y = np.empty_like(x)
    _softmax_rows[(x.shape[0],)](x, y, n, BLOCK=256)
    # x - max rounded in f32 as the kernel does it (its error, up to
    # |x - max| * 2^-24, would dominate), the rest in float64.
    e = np.exp((x - x.max(axis=1, keepdims=True)).astype(np.float64))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-6, atol=1e-30)
