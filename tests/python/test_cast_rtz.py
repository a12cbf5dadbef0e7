"""Float downcasts rounded toward zero (`x.to(dt, fp_downcast_rounding="rtz")`)
from fp64/fp32 into fp32/fp16/bf16 (refused until 2026-11-28), checked by the
definition on the CPU target: |r| <= |x| with x's sign, and the next value of
the destination type above |r| exceeds |x| (so overflow gives the largest
finite value, infinities stay, NaN stays NaN); into bf16 from fp32 it is the
truncated bits. Also Triton's refusals: a rounding mode on a conversion that
is not a float downcast, and its atomic element types."""
import numpy as np
import pytest
import torch

import zetile
import zetile.language as tl


pytestmark = pytest.mark.usefixtures("cpu_device")


@zetile.jit
def _rtz(X, O16, OB, O32, N: tl.constexpr):
    o = tl.arange(0, N)
    x = tl.load(X + o)
    tl.store(O16 + o, x.to(tl.float16, fp_downcast_rounding="rtz"))
    tl.store(OB + o, x.to(tl.bfloat16, fp_downcast_rounding="rtz"))
    tl.store(O32 + o, x.to(tl.float32, fp_downcast_rounding="rtz"))


def _inputs(dt, n=4096):
    rng = np.random.default_rng(5)
    q = n // 4
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 65504.0, 65519.0, 65520.0, -65536.0,
               3.0e38, -3.4e38, 1e-8, -6e-8, 1.0 + 2**-11, 1.0 + 2**-8]
    if dt == np.float64:
        special += [1e300, -1e300, 5e-324]
    x = np.concatenate([rng.standard_normal(q) * 10.0 ** rng.integers(-9, 9, q),
                        rng.standard_normal(q) * 1e-6, rng.uniform(-70000, 70000, q),
                        np.resize(np.array(special), q)]).astype(dt)
    return x


def _check_rtz(x, r, tdt):
    x = x.astype(np.float64)
    rv = r.double().numpy()
    nxt = torch.nextafter(r.abs(), torch.full_like(r, float("inf"))).double().numpy()
    nan = np.isnan(x)
    assert np.isnan(rv[nan]).all()
    x, rv, nxt = x[~nan], rv[~nan], nxt[~nan]
    assert (np.abs(rv) <= np.abs(x)).all()
    assert ((rv == 0) | (np.sign(rv) == np.sign(x))).all()
    assert ((nxt > np.abs(x)) | (np.isinf(x) & np.isinf(rv))).all()


@pytest.mark.parametrize("src", [np.float32, np.float64])
def test_downcast_toward_zero(src):
    x = _inputs(src)
    n = len(x)
    o16 = torch.empty(n, dtype=torch.float16)
    ob = torch.empty(n, dtype=torch.bfloat16)
    o32 = torch.empty(n, dtype=torch.float32)
    _rtz[(1,)](torch.from_numpy(x), o16, ob, o32, n)
    _check_rtz(x, o16, torch.float16)
    _check_rtz(x, ob, torch.bfloat16)
    if src == np.float64:
        _check_rtz(x, o32, torch.float32)
    else:
        assert np.array_equal(o32.numpy(), x, equal_nan=True)
        # fp32 -> bf16 toward zero is the upper 16 bits (NaN aside).
        fin = ~np.isnan(x)
        hi = (x.view(np.uint32) >> 16).astype(np.uint16)
        assert np.array_equal(ob.view(torch.int16).numpy().view(np.uint16)[fin], hi[fin])


@zetile.jit
def _round_int(X, O):
    tl.store(O, tl.load(X).to(tl.float16, fp_downcast_rounding="rtz"))


@zetile.jit
def _round_up(X, O):
    tl.store(O, tl.load(X).to(tl.float64, fp_downcast_rounding="rtne"))


def test_rounding_only_for_float_downcasts():
    for k, x in ((_round_int, torch.ones(1, dtype=torch.int32)),
                 (_round_up, torch.ones(1, dtype=torch.float32))):
        with pytest.raises(zetile.TritonError, match="fp_downcast_rounding should be set only"):
            k[(1,)](x, torch.empty(1, dtype=torch.float64))


@zetile.jit
def _atomic(P, V, OP: tl.constexpr):
    v = tl.load(V)
    if OP == "add":
        tl.atomic_add(P, v)
    elif OP == "max":
        tl.atomic_max(P, v)
    elif OP == "xchg":
        tl.atomic_xchg(P, v)
    else:
        tl.atomic_cas(P, v, v)


@pytest.mark.parametrize("dt,op,ok", [
    (torch.int8, "add", False), (torch.int16, "add", False), (torch.uint8, "max", False),
    (torch.float16, "add", True), (torch.float16, "max", False), (torch.bfloat16, "xchg", False),
    (torch.int32, "max", True), (torch.float32, "xchg", True),
    (torch.int8, "cas", False), (torch.int16, "cas", True), (torch.int64, "cas", True)])
def test_atomic_element_types_as_triton(dt, op, ok):
    p = torch.zeros(1, dtype=dt)
    v = torch.ones(1, dtype=dt)
    if ok:
        _atomic[(1,)](p, v, op)
    else:
        with pytest.raises(zetile.TritonError, match="does not support|only supports elements"):
            _atomic[(1,)](p, v, op)
