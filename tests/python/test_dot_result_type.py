"""tl.dot's result type follows Triton's rule (triton/language/semantic.py, dot):
fp64 operands accumulate in fp64 and fp32/bf16 operands in fp32 whatever
out_dtype says; fp16 products take out_dtype; out_dtype=bfloat16 is an error;
an accumulator must have out_dtype's dtype. Until 2026-11-28 a fp64 dot took
out_dtype's default (fp32) as its accumulator, so every product was rounded to
fp32 and the result was off by ~1e-6 relative, silently (Triton's own fp64
tests compare with rtol 1e-2 and passed)."""
import numpy as np
import pytest
import torch

import zetile
import zetile.language as tl


pytestmark = pytest.mark.usefixtures("cpu_device")


@zetile.jit
def _mm(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
        OUT: tl.constexpr):
    om = tl.arange(0, M)[:, None]
    on = tl.arange(0, N)[None, :]
    ok = tl.arange(0, K)
    a = tl.load(a_ptr + om * K + ok[None, :])
    b = tl.load(b_ptr + ok[:, None] * N + on)
    if OUT == 0:
        c = tl.dot(a, b)
    elif OUT == 16:
        c = tl.dot(a, b, out_dtype=tl.float16)
    else:
        c = tl.dot(a, b, out_dtype=tl.float32)
    # The store converts to c_ptr's type: the result's own precision shows in
    # c's bits only if c is stored as what the dot returned, so record it too.
    tl.store(c_ptr + om * N + on, c)
    tl.static_assert(c.dtype == (tl.float64 if a.dtype == tl.float64 else
                                 (tl.float16 if OUT == 16 and a.dtype == tl.float16 else tl.float32)))


@pytest.mark.parametrize("out", [0, 32, 16])
@pytest.mark.parametrize("m", [16, 32])
def test_fp64_dot_accumulates_in_fp64(m, out):
    rng = np.random.default_rng(m + out)
    a = rng.standard_normal((m, m))
    b = rng.standard_normal((m, m))
    c = torch.empty((m, m), dtype=torch.float64)
    _mm[(1,)](torch.from_numpy(a), torch.from_numpy(b), c, m, m, m, out)
    # fp32 accumulation misses this by ~1e-6; fp64 sums of 32 products: ~1e-14.
    np.testing.assert_allclose(c.numpy(), a @ b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dt", [torch.float32, torch.float16])
def test_result_type_by_operand(dt):
    # fp32 operands with out_dtype=float16 still give fp32 (static_assert in
    # the kernel); fp16 operands give out_dtype.
    m = 16
    a = torch.randn((m, m)).to(dt)
    b = torch.randn((m, m)).to(dt)
    c = torch.empty((m, m), dtype=torch.float32)
    _mm[(1,)](a, b, c, m, m, m, 16)
    ref = (a.double() @ b.double()).float()
    tol = 1e-4 if dt == torch.float32 else 2e-2
    torch.testing.assert_close(c, ref, rtol=tol, atol=tol)


@zetile.jit
def _bf16_out(a_ptr, c_ptr):
    o = tl.arange(0, 16)
    a = tl.load(a_ptr + o[:, None] * 16 + o[None, :])
    tl.store(c_ptr + o[:, None] * 16 + o[None, :], tl.dot(a, a, out_dtype=tl.bfloat16))


@zetile.jit
def _acc_mismatch(a_ptr, c_ptr):
    o = tl.arange(0, 16)
    a = tl.load(a_ptr + o[:, None] * 16 + o[None, :])
    acc = tl.zeros((16, 16), dtype=tl.float32)
    tl.store(c_ptr + o[:, None] * 16 + o[None, :], tl.dot(a, a, acc, out_dtype=tl.float16))


def test_bf16_out_dtype_refused():
    a = torch.randn((16, 16)).half()
    with pytest.raises(Exception, match="out_dtype=bfloat16 is unsupported"):
        _bf16_out[(1,)](a, torch.empty((16, 16)))


def test_accumulator_must_match_out_dtype():
    a = torch.randn((16, 16)).half()
    with pytest.raises(Exception, match="expected accumulator dtype"):
        _acc_mismatch[(1,)](a, torch.empty((16, 16)))
