"""8-bit floats and tl.dot_scaled on the CPU target (issue 19), checked
without Triton's tree: conversions against torch's float8 types and against
an independent nearest-value search over each format's 256 codes, fp8
arithmetic, abs/neg, dots, and microscaled dots against numpy."""
import math

import numpy as np
import pytest
import torch

import zetile as triton
import zetile.language as tl
from zetile.language import fp8 as F8

pytestmark = pytest.mark.usefixtures("cpu_device")

FORMATS = {"fp8e4nv": tl.float8e4nv, "fp8e5": tl.float8e5, "fp8e4b15": tl.float8e4b15,
           "fp8e4b8": tl.float8e4b8, "fp8e5b16": tl.float8e5b16}
TORCH = {"fp8e4nv": torch.float8_e4m3fn, "fp8e5": torch.float8_e5m2,
         "fp8e4b8": torch.float8_e4m3fnuz, "fp8e5b16": torch.float8_e5m2fnuz}


@triton.jit
def _encode(X, Z, N, R: tl.constexpr, DT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    tl.store(Z + offs, x.to(DT, fp_downcast_rounding=R).to(tl.uint8, bitcast=True), mask=m)


@triton.jit
def _decode(X, Z):
    offs = tl.arange(0, 256)
    tl.store(Z + offs, tl.load(X + offs).to(tl.float32))


def _values(name):
    return np.array([F8.decode_byte(c, name) for c in range(256)], np.float64)


def _nearest(xs, name, rtz):
    """The byte an exact rounding gives, found by search over the codes
    (ties to the even code; rtz: the largest magnitude not above |x|), with
    the out-of-range rules of fp8.py: saturate (fn, ieee: Triton's), NaN (fnuz)."""
    f = F8.FORMATS[name]
    vals = _values(name)
    pos = [(vals[c], c) for c in range(128) if math.isfinite(vals[c])]
    pos.sort()
    grid = np.array([v for v, _ in pos])
    codes = np.array([c for _, c in pos])
    top = grid[-1]
    # the half-way point above the largest finite value (what still rounds to it)
    step = grid[-1] - grid[-2]
    out = np.empty(xs.size, np.uint8)
    for i, x in enumerate(xs.tolist()):
        sign = 0x80 if math.copysign(1.0, x) < 0 else 0
        a = abs(x)
        if math.isnan(x):
            out[i] = 0x80 if f.kind == "fnuz" else 0x7F | sign
            continue
        if rtz:
            over = a > top
        else:   # at the midpoint, ties go to the even code: top + 1 is even when top is odd
            over = a > top + step / 2 or (a == top + step / 2 and codes[-1] % 2 == 1)
        if over or math.isinf(a):
            if f.kind != "fnuz" or (rtz and not math.isinf(a)):
                out[i] = codes[-1] | sign
            else:
                out[i] = 0x80
            continue
        j = np.searchsorted(grid, a, side="right") - 1   # grid[j] <= a
        if rtz or grid[j] == a or j == len(grid) - 1:
            c = codes[j]
        else:
            lo, hi = a - grid[j], grid[j + 1] - a
            c = codes[j] if lo < hi or (lo == hi and codes[j] % 2 == 0) else codes[j + 1]
        out[i] = 0 if (f.kind == "fnuz" and c == 0) else c | sign
    return out


def _inputs():
    rng = np.random.default_rng(0)
    every_half = np.arange(-32768, 32768, dtype=np.int32).astype(np.int16).view(np.float16)
    wide = rng.standard_normal(3000) * np.exp2(rng.integers(-40, 40, 3000))
    edges = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 448, 464, 465, 480, 1e30, 57344, 61440, 61441,
                      240, 247, 248, 1.75, 1.8125, 1.875, 2 ** -9, 2 ** -10, 2 ** -17, 2 ** -18])
    return np.concatenate([every_half.astype(np.float32), wide.astype(np.float32),
                           edges.astype(np.float32), -edges.astype(np.float32)])


@pytest.mark.parametrize("name", list(FORMATS))
def test_fp8_conversions(name):
    xs = _inputs()
    codes = np.arange(256, dtype=np.uint8)
    got = np.zeros(256, np.float32)
    _decode[(1,)](triton.reinterpret(torch.from_numpy(codes), FORMATS[name]), got)
    ref = _values(name).astype(np.float32)
    assert np.array_equal(np.isnan(got), np.isnan(ref))
    assert np.array_equal(got[~np.isnan(ref)].view(np.uint32), ref[~np.isnan(ref)].view(np.uint32))
    if name in TORCH:
        t = torch.from_numpy(codes).view(TORCH[name]).float().numpy()
        assert np.array_equal(t[~np.isnan(t)], ref[~np.isnan(ref)])
    for rounding in ("rtne", "rtz"):
        z = np.zeros(xs.size, np.uint8)
        _encode[(triton.cdiv(xs.size, 1024),)](xs, z, xs.size, rounding, FORMATS[name], 1024)
        want = _nearest(xs, name, rounding == "rtz")
        bad = np.nonzero(z != want)[0]
        assert bad.size == 0, f"{name} {rounding}: x={xs[bad[:4]]} got {z[bad[:4]]} want {want[bad[:4]]}"
        if name in TORCH and rounding == "rtne":
            t = torch.from_numpy(xs).to(TORCH[name]).view(torch.uint8).numpy()
            # torch's fp8e5 overflows to inf where Triton (and zetile) saturate
            same = ~((t & 0x7F) == 0x7C) if name == "fp8e5" else np.ones(t.shape, bool)
            assert np.array_equal(z[same], t[same])
            if name == "fp8e5":
                assert (~same).sum() == (np.isinf(xs) | (np.abs(xs) >= 61440)).sum()


@triton.jit
def _arith(X, Y, Z, A, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    tl.store(Z + offs, x * y + x)                     # fp8 stays fp8 (Triton's rule)
    tl.store(A + offs, tl.where(x < y, -x, tl.abs(y)))


def test_fp8_arithmetic_and_signs():
    rng = np.random.default_rng(1)
    x = torch.from_numpy(rng.standard_normal(64).astype(np.float32)).to(torch.float8_e4m3fn)
    y = torch.from_numpy(rng.standard_normal(64).astype(np.float32)).to(torch.float8_e4m3fn)
    z = torch.empty(64, dtype=torch.float8_e4m3fn)
    a = torch.empty(64, dtype=torch.float8_e4m3fn)
    _arith[(1,)](x, y, z, a, 64)
    xf, yf = x.float(), y.float()
    # each op computes in fp32 and rounds to fp8 (x * y is exact in fp32, so is its sum with x)
    f8 = torch.float8_e4m3fn
    want = ((xf * yf).to(f8).float() + xf).to(f8)
    assert torch.equal(z.view(torch.uint8), want.view(torch.uint8))
    assert not torch.equal(z.view(torch.uint8), (xf * yf + xf).to(f8).view(torch.uint8))  # two roundings
    assert torch.equal(a.float(), torch.where(xf < yf, -xf, yf.abs()))


@triton.jit
def _dot(A, B, C, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    a = tl.load(A + tl.arange(0, M)[:, None] * K + tl.arange(0, K)[None, :])
    b = tl.load(B + tl.arange(0, K)[:, None] * N + tl.arange(0, N)[None, :])
    tl.store(C + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], tl.dot(a, b))


def test_fp8_dot_mixed_formats():
    a = torch.randn(32, 64).to(torch.float8_e4m3fn)
    b = torch.randn(64, 16).to(torch.float8_e5m2)
    c = torch.empty(32, 16)
    _dot[(1,)](a, b, c, 32, 16, 64)
    ref = a.double() @ b.double()
    assert (c.double() - ref).abs().max().item() < 1e-5 * ref.abs().max().item()


@triton.jit
def _fp8_atomic(P, V):
    tl.atomic_add(P, tl.load(V))


def test_fp8_atomics_refused():
    p = torch.zeros(1, dtype=torch.float8_e4m3fn)
    with pytest.raises(triton.TritonError, match="8-bit floats"):
        _fp8_atomic[(1,)](p, p)


# ------------------------------------------------------------- dot_scaled
@triton.jit
def _dot_scaled(a_base, a_scale, b_base, b_scale, out, M: tl.constexpr, N: tl.constexpr,
                K: tl.constexpr, type_a: tl.constexpr, type_b: tl.constexpr):
    DA: tl.constexpr = 2 if type_a == "e2m1" else 1
    DB: tl.constexpr = 2 if type_b == "e2m1" else 1
    a = tl.load(a_base + tl.arange(0, M)[:, None] * (K // DA) + tl.arange(0, K // DA)[None, :])
    b = tl.load(b_base + tl.arange(0, K // DB)[:, None] * N + tl.arange(0, N)[None, :])
    G: tl.constexpr = K // 32
    if a_scale is not None:
        a_scale = tl.load(a_scale + tl.arange(0, M)[:, None] * G + tl.arange(0, G)[None, :])
    if b_scale is not None:
        b_scale = tl.load(b_scale + tl.arange(0, N)[:, None] * G + tl.arange(0, G)[None, :])
    c = tl.dot_scaled(a, a_scale, type_a, b, b_scale, type_b)
    tl.store(out + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)


_E2M1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6])


def _upcast(v, fmt, k_axis):
    v = v.numpy()
    if fmt == "e2m1":   # low nibble first, along K
        pair = np.stack([_E2M1[v & 15], _E2M1[v >> 4]], axis=k_axis + 1)
        shape = list(v.shape)
        shape[k_axis] *= 2
        return pair.reshape(shape)
    if fmt in ("bf16", "fp16"):
        return v.astype(np.float64)
    return _values({"e4m3": "fp8e4nv", "e5m2": "fp8e5"}[fmt])[v]


@pytest.mark.parametrize("type_a, type_b, scaled", [("e2m1", "bf16", "a"), ("e4m3", "e5m2", "ab"),
                                                     ("fp16", "e2m1", "b"), ("e5m2", "e2m1", "ab")])
def test_dot_scaled(type_a, type_b, scaled):
    rng = np.random.default_rng(2)
    M, N, K = 32, 16, 64

    def operand(fmt, shape):
        if fmt in ("bf16", "fp16"):
            t = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
            return t.to(torch.bfloat16 if fmt == "bf16" else torch.float16)
        t = torch.from_numpy(rng.integers(0, 256, shape, dtype=np.uint8))
        special = {"e4m3": 0x7F, "e5m2": 0x7C}.get(fmt)
        if special:
            t[(t & special) == special] = 0
        return t
    a = operand(type_a, (M, K // 2 if type_a == "e2m1" else K))
    b = operand(type_b, (K // 2 if type_b == "e2m1" else K, N))
    lo, hi = (124, 131) if "fp16" in (type_a, type_b) else (110, 140)
    sa = torch.from_numpy(rng.integers(lo, hi, (M, K // 32), dtype=np.uint8)) if "a" in scaled else None
    sb = torch.from_numpy(rng.integers(lo, hi, (N, K // 32), dtype=np.uint8)) if "b" in scaled else None
    out = torch.empty(M, N)
    _dot_scaled[(1,)](a, sa, b, sb, out, M, N, K, type_a, type_b)
    x = _upcast(a.float() if type_a in ("bf16", "fp16") else a, type_a, 1)
    y = _upcast(b.float() if type_b in ("bf16", "fp16") else b, type_b, 0)
    if sa is not None:
        x = x * np.repeat(np.exp2(sa.numpy().astype(np.float64) - 127), 32, axis=1)
    if sb is not None:
        y = y * np.repeat(np.exp2(sb.numpy().astype(np.float64) - 127), 32, axis=1).T
    ref = x @ y
    err = np.abs(out.numpy() - ref).max() / np.abs(ref).max()
    assert err < 1e-6, err


def test_dot_scaled_e2m1_packed_along_m_and_bad_scale():
    @triton.jit
    def k(a_ptr, b_ptr, s_ptr, out, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
        # lhs e2m1 packed along M (lhs_k_pack=False): [M // 2, K] bytes
        a = tl.load(a_ptr + tl.arange(0, M // 2)[:, None] * K + tl.arange(0, K)[None, :])
        b = tl.load(b_ptr + tl.arange(0, K)[:, None] * N + tl.arange(0, N)[None, :])
        s = tl.load(s_ptr + tl.arange(0, M)[:, None] * (K // 32) + tl.arange(0, K // 32)[None, :])
        c = tl.dot_scaled(a, s, "e2m1", b, None, "bf16", lhs_k_pack=False)
        tl.store(out + tl.arange(0, M)[:, None] * N + tl.arange(0, N)[None, :], c)

    rng = np.random.default_rng(3)
    M, N, K = 16, 16, 32
    a = torch.from_numpy(rng.integers(0, 256, (M // 2, K), dtype=np.uint8))
    b = torch.from_numpy(rng.standard_normal((K, N)).astype(np.float32)).to(torch.bfloat16)
    s = torch.full((M, K // 32), 127, dtype=torch.uint8)
    s[3, 0] = 255                                      # NaN scale: row 3 is NaN
    s[5, 0] = 0                                        # scale 0 reads as 0.0 (Triton's decoding)
    out = torch.empty(M, N)
    k[(1,)](a, b, s, out, M, N, K)
    x = _upcast(a, "e2m1", 0)                          # rows interleaved: low nibble first
    ref = x @ b.double().numpy()
    ref[5] = 0
    assert torch.isnan(out[3]).all()
    rows = [i for i in range(M) if i != 3]
    np.testing.assert_allclose(out.numpy()[rows], ref[rows], rtol=1e-6, atol=1e-6)


@triton.jit
def _rtz_half(X, Z):
    offs = tl.arange(0, 16)
    tl.store(Z + offs, tl.load(X + offs).to(tl.float16, fp_downcast_rounding="rtz"))


def test_rtz_outside_fp8_is_not_ignored():
    # fp32 -> fp16 toward zero (refused until 2026-11-28; test_cast_rtz.py has
    # the rest): rounded down, where round-to-nearest goes up
    x = torch.full((16,), 1.0 + 2.0 ** -11 + 2.0 ** -13)
    z = torch.empty(16, dtype=torch.float16)
    _rtz_half[(1,)](x, z)
    assert (z == 1.0).all() and (x.half() == 1.0 + 2.0 ** -10).all()
