"""Integer `//` and `%` of at most 32 bits on the CPU target go through an
exact f64 division (issue 16; lowering/cpu/cpu_ops.c, cpu_div_f64): x86 has no
vector integer division, so each element was a scalar idiv. trunc of the f64
quotient equals the integer quotient for every pair of 32-bit operands (the
argument is in cpu_div_f64's comment); these cases fail if the rounding,
truncation, signedness or the remainder's x - q * d are off (E4, against
numpy in int64), and the machine-code check fails if the idiv form comes back."""
import re
import shutil
import subprocess

import numpy as np
import pytest

import zetile
import zetile.language as tl

pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


@zetile.jit
def _divmod(x_ptr, y_ptr, q_ptr, r_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1)
    y = tl.load(y_ptr + offs, mask=m, other=1)
    tl.store(q_ptr + offs, x // y, mask=m)
    tl.store(r_ptr + offs, x % y, mask=m)


def _run(x, y):
    q, r = np.zeros_like(x), np.zeros_like(x)
    _divmod[(zetile.cdiv(x.size, 256),)](x, y, q, r, x.size, BLOCK=256)
    return q, r


def _want(x, y):
    """C semantics (truncation, remainder with the dividend's sign) in int64,
    with the lowering's rule for a zero divisor (x // 0 = x, x % 0 = 0) and
    the signed overflow INT_MIN // -1 = INT_MIN wrapped, % = 0."""
    x64, y64 = x.astype(np.int64), y.astype(np.int64)
    d = np.where(y64 == 0, 1, y64)
    if np.issubdtype(x.dtype, np.signedinteger):
        info = np.iinfo(x.dtype)
        d = np.where((x64 == info.min) & (y64 == -1), 1, d)
    q = np.abs(x64) // np.abs(d) * np.sign(x64) * np.sign(d)
    return q.astype(x.dtype), (x64 - q * d).astype(x.dtype)


def _edge_pairs(dtype):
    info = np.iinfo(dtype)
    e = np.array(sorted(v for v in {info.min, info.min + 1, -7, -2, -1, 0, 1, 2, 3, 7,
                                    46340, info.max - 1, info.max}
                        if info.min <= v <= info.max), dtype=np.int64)
    xs, ys = np.meshgrid(e, e)
    return xs.ravel().astype(dtype), ys.ravel().astype(dtype)


def test_int32_exact_random_and_edges():
    rng = np.random.default_rng(7)
    n = 200_000
    x = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    y = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    # Small divisors and exact multiples: the quotients an inexact reciprocal
    # (x * (1 / d)) truncates to q - 1.
    small = rng.integers(-1000, 1001, n // 4, dtype=np.int64)
    y[: n // 4] = small
    x[n // 4: n // 2] = (rng.integers(-2**15, 2**15, n // 4) * small).astype(np.int32)
    y[n // 4: n // 2] = small
    ex, ey = _edge_pairs(np.int32)
    x, y = np.concatenate([x, ex]), np.concatenate([y, ey])
    q, r = _run(x, y)
    wq, wr = _want(x, y)
    bad = np.flatnonzero((q != wq) | (r != wr))
    assert bad.size == 0, [(int(x[i]), int(y[i]), int(q[i]), int(r[i])) for i in bad[:5]]


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.uint8, np.uint32])
def test_narrow_and_unsigned_exact(dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(3)
    if info.bits == 8:  # every pair
        xs, ys = np.meshgrid(np.arange(info.min, info.max + 1), np.arange(info.min, info.max + 1))
        x, y = xs.ravel().astype(dtype), ys.ravel().astype(dtype)
    else:
        x = rng.integers(info.min, info.max + 1, 50_000, dtype=np.int64).astype(dtype)
        y = rng.integers(info.min, info.max + 1, 50_000, dtype=np.int64).astype(dtype)
        y[:10_000] = rng.integers(1, 300, 10_000).astype(dtype)
        ex, ey = _edge_pairs(dtype)
        x, y = np.concatenate([x, ex]), np.concatenate([y, ey])
    q, r = _run(x, y)
    wq, wr = _want(x, y)
    bad = np.flatnonzero((q != wq) | (r != wr))
    assert bad.size == 0, [(int(x[i]), int(y[i]), int(q[i]), int(r[i])) for i in bad[:5]]


@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump needed")
def test_int32_divmod_has_no_idiv(tmp_path):
    ck = zetile.compile(_divmod, "*i32, *i32, *i32, *i32, i32", constexprs={"BLOCK": 256},
                        cached=False)
    obj = tmp_path / "divmod.o"
    obj.write_bytes(ck.asm["obj"])
    dis = subprocess.run(["objdump", "-d", str(obj)], capture_output=True, text=True,
                         check=True).stdout
    assert not re.search(r"\bidiv", dis), "a scalar idiv is back in the int32 // and %"
    assert re.search(r"vdivpd|divsd", dis), "no f64 division in the int32 // and %"


@zetile.jit
def _divmod_const(x_ptr, q_ptr, r_ptr, n, D: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1)
    tl.store(q_ptr + offs, x // D, mask=m)
    tl.store(r_ptr + offs, x % D, mask=m)


@pytest.mark.skipif(shutil.which("objdump") is None, reason="objdump needed")
def test_constant_divisor_stays_integer(tmp_path):
    """A constexpr divisor keeps the integer op (LLVM's multiply by a magic
    number: neither idiv nor an f64 division), with C semantics."""
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.integers(-2**31, 2**31, 20_000, dtype=np.int64),
                        [-2**31, -2**31 + 1, -8, -7, -1, 0, 1, 6, 7, 2**31 - 1]]).astype(np.int32)
    for d in (7, -10):
        q, r = np.zeros_like(x), np.zeros_like(x)
        _divmod_const[(zetile.cdiv(x.size, 256),)](x, q, r, x.size, D=d, BLOCK=256)
        wq, wr = _want(x, np.full_like(x, d))
        assert np.array_equal(q, wq) and np.array_equal(r, wr), d
    ck = zetile.compile(_divmod_const, "*i32, *i32, *i32, i32",
                        constexprs={"D": 7, "BLOCK": 256}, cached=False)
    obj = tmp_path / "divmod_const.o"
    obj.write_bytes(ck.asm["obj"])
    dis = subprocess.run(["objdump", "-d", str(obj)], capture_output=True, text=True,
                         check=True).stdout
    assert not re.search(r"\bidiv|vdivpd|divsd", dis), "a constant divisor is divided"
