"""Kernels of tests/python/test_xe_int8_gather.py: int8 dot operands that are
not straight 2-D block reads (issues 12 and 13)."""
import numpy as np

import zetile
import zetile.language as tl


@zetile.jit
def i8_strided(A, B, C, M, N, K, sam, sak, sbk, sbn, scm,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # The stdlib GEMM's generic int8 form: every stride a run-time argument,
    # so neither operand is provably a 2-D block read (row gathers).
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.int32)
    for k in range(0, K, BK):
        a = tl.load(A + rm[:, None] * sam + (k + rk)[None, :] * sak,
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0)
        b = tl.load(B + (k + rk)[:, None] * sbk + rn[None, :] * sbn,
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0)
        acc += tl.dot(a, b)
    tl.store(C + rm[:, None] * scm + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


SIG_STRIDED = {"A": "*i8", "B": "*i8", "C": "*i32", "M": "i32", "N": "i32", "K": "i32",
               "sam": "i32", "sak": "i32", "sbk": "i32", "sbn": "i32", "scm": "i32"}

# (M, N, K, A transposed in memory, num_warps): tails in every dimension.
STRIDED_CASES = [(50, 40, 70, False, 4), (64, 64, 64, True, 4), (37, 64, 96, True, 1)]


def run_strided(cases=STRIDED_CASES, seed=1):
    """Mismatch counts per case against int64 numpy on the current device."""
    dev = zetile.get_device()
    rng = np.random.default_rng(seed)
    out = {}
    for (m, n, k, ta, nw) in cases:
        a = rng.integers(-128, 128, (m, k), dtype=np.int8)
        b = rng.integers(-128, 128, (k, n), dtype=np.int8)
        am = np.ascontiguousarray(a.T) if ta else a
        sam, sak = (1, m) if ta else (k, 1)
        c = np.full((m, n), 7, np.int32)
        i8_strided[(1,)](am, b, c, m, n, k, sam, sak, n, 1, n, BM=64, BN=64, BK=32,
                         num_warps=nw)
        dev.synchronize()
        ref = a.astype(np.int64) @ b.astype(np.int64)
        out[f"{m}x{n}x{k}_t{int(ta)}_w{nw}"] = int((c != ref).sum())
    return out


@zetile.jit
def i8_zero_points(A, B, C, K, za, B_ZP: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                   BK: tl.constexpr):
    # int8 arithmetic before an int8 dot: a zero point subtracted from A in
    # int8 (wrapping, as numpy's int8 does); B_ZP adds 5 to B as well.
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.int32)
    for k in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(B + (k + rk)[:, None] * BN + rn[None, :])
        a = a - za.to(tl.int8)
        if B_ZP:
            b = b + 5
        acc += tl.dot(a, b)
    tl.store(C + rm[:, None] * BN + rn[None, :], acc)


SIG_ZP = {"A": "*i8", "B": "*i8", "C": "*i32", "K": "i32", "za": "i32"}
# (BM, BN, K, num_warps)
ZP_CASES = [(64, 64, 64, 4), (32, 32, 96, 1)]


def run_zero_points(cases=ZP_CASES, seed=2, b_zp=False):
    dev = zetile.get_device()
    rng = np.random.default_rng(seed)
    out = {}
    for (bm, bn, k, nw) in cases:
        a = rng.integers(-128, 128, (bm, k), dtype=np.int8)
        b = rng.integers(-128, 128, (k, bn), dtype=np.int8)
        a[0, 0], b[0, 0] = -128, 127  # wrap in int8 both ways
        c = np.full((bm, bn), 7, np.int32)
        i8_zero_points[(1,)](a, b, c, k, 3, B_ZP=b_zp, BM=bm, BN=bn, BK=32, num_warps=nw)
        dev.synchronize()
        with np.errstate(over="ignore"):
            aw = (a - np.int8(3)).astype(np.int64)
            bw = (b + np.int8(5) if b_zp else b).astype(np.int64)
        out[f"{bm}x{bn}x{k}_w{nw}"] = int((c != aw @ bw).sum())
    return out


@zetile.jit
def scaled_a(A, S, B, C, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # A per-row scale on a dequantized A operand (int8 activations/weights
    # times a row scale, into an fp16 dot): `a.to(fp16) * s[:, None]`.
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    s = tl.load(S + rm)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(B + (k + rk)[:, None] * BN + rn[None, :])
        a = a.to(tl.float16) * s[:, None]
        acc += tl.dot(a, b)
    tl.store(C + rm[:, None] * BN + rn[None, :], acc)


SIG_SCALED = {"A": "*i8", "S": "*fp16", "B": "*fp16", "C": "*fp32", "K": "i32"}
# (BM, BN, K, num_warps)
SCALED_CASES = [(64, 64, 64, 4), (64, 64, 64, 8), (128, 64, 32, 8)]


def run_scaled(cases=SCALED_CASES, seed=3):
    """Largest error relative to max |C| against float64, per case."""
    dev = zetile.get_device()
    rng = np.random.default_rng(seed)
    out = {}
    for (bm, bn, k, nw) in cases:
        a = rng.integers(-128, 128, (bm, k), dtype=np.int8)
        # scales that keep a * s exact in fp16 (powers of two times small ints)
        s = (rng.integers(1, 8, bm) * 2.0 ** rng.integers(-8, -4, bm)).astype(np.float16)
        b = rng.integers(-4, 5, (k, bn)).astype(np.float16)
        c = np.full((bm, bn), 7.0, np.float32)
        scaled_a[(1,)](a, s, b, c, k, BM=bm, BN=bn, BK=32, num_warps=nw)
        dev.synchronize()
        ref = (a.astype(np.float64) * s.astype(np.float64)[:, None]) @ b.astype(np.float64)
        out[f"{bm}x{bn}x{k}_w{nw}"] = float(np.abs(c - ref).max() / np.abs(ref).max())
    return out



@zetile.jit
def i8_stored_and_dot(A, B, C, D, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # An int8 tile both stored (a copy of A) and read as an int8 dot's A
    # operand, with run-time row strides (gathers and scatters).
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.int32)
    for k in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k + rk)[None, :])
        tl.store(D + rm[:, None] * K + (k + rk)[None, :], a)
        b = tl.load(B + (k + rk)[:, None] * BN + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(C + rm[:, None] * BN + rn[None, :], acc)


SIG_STORED = {"A": "*i8", "B": "*i8", "C": "*i32", "D": "*i8", "K": "i32"}
STORED_CASES = [(64, 64, 64, 4), (32, 32, 96, 1)]


def run_stored(cases=STORED_CASES, seed=6):
    """Mismatches of the dot and of the stored copy, per case."""
    dev = zetile.get_device()
    rng = np.random.default_rng(seed)
    out = {}
    for (bm, bn, k, nw) in cases:
        a = rng.integers(-128, 128, (bm, k), dtype=np.int8)
        b = rng.integers(-128, 128, (k, bn), dtype=np.int8)
        c = np.full((bm, bn), 7, np.int32)
        d = np.full((bm, k), 5, np.int8)
        i8_stored_and_dot[(1,)](a, b, c, d, k, BM=bm, BN=bn, BK=32, num_warps=nw)
        dev.synchronize()
        ref = a.astype(np.int64) @ b.astype(np.int64)
        out[f"{bm}x{bn}x{k}_w{nw}"] = int((c != ref).sum()) + int((d != a).sum())
    return out
