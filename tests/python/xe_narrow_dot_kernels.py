"""Kernels of tests/python/test_xe_narrow_dots.py: 8-bit tiles (fp8e4nv,
fp8e5, int8) feeding a 16-bit dot. fp8 operands are upcast to fp16 by tl.dot
itself (as Triton does on Intel), int8 ones by an explicit .to(fp16); CAST 2
converts either to bf16 explicitly."""
import numpy as np
import torch

import zetile
import zetile.language as tl

TORCH = {"fp8e4nv": torch.float8_e4m3fn, "fp8e5": torch.float8_e5m2}


@zetile.jit
def narrow_dot(A, B, C, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
               CAST: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(B + (k + rk)[:, None] * BN + rn[None, :])
        if CAST == 1:
            a = a.to(tl.float16)
            b = b.to(tl.float16)
        if CAST == 2:
            a = a.to(tl.bfloat16)
            b = b.to(tl.bfloat16)
        acc += tl.dot(a, b)
    tl.store(C + rm[:, None] * BN + rn[None, :], acc)


def signature(dtype):
    return {"A": "*" + dtype, "B": "*" + dtype, "C": "*fp32", "K": "i32"}


def cast_code(dtype, to=None):
    """CAST: 0 (tl.dot upcasts fp8 itself), 1 (.to(fp16)), 2 (.to(bf16))."""
    if to == "bf16":
        return 2
    return 1 if dtype == "i8" else 0


def constexprs(bm, bn, bk=32, dtype="i8", to=None):
    return {"BM": bm, "BN": bn, "BK": bk, "CAST": cast_code(dtype, to)}


def inputs(dtype, m, n, k, seed=3):
    """A (m x k), B (k x n) as torch tensors of dtype, and their float64 values."""
    g = torch.Generator().manual_seed(seed)
    if dtype == "i8":
        a = torch.randint(-128, 128, (m, k), generator=g, dtype=torch.int8)
        b = torch.randint(-128, 128, (k, n), generator=g, dtype=torch.int8)
    else:
        a = (torch.randn(m, k, generator=g) * 4).to(TORCH[dtype])
        b = (torch.randn(k, n, generator=g) * 4).to(TORCH[dtype])
    return a, b, a.double().numpy(), b.double().numpy()


def run(dtype, bm, bn, k, num_warps, to=None):
    """Runs one workgroup on the current device; returns (C, reference)."""
    a, b, a64, b64 = inputs(dtype, bm, bn, k)
    c = np.full((bm, bn), 7.0, np.float32)
    narrow_dot[(1,)](a.numpy() if dtype == "i8" else a, b.numpy() if dtype == "i8" else b, c, k,
                     BM=bm, BN=bn, BK=32, CAST=cast_code(dtype, to), num_warps=num_warps)
    zetile.get_device().synchronize()
    return c, a64 @ b64


@zetile.jit
def int8_stored_and_dot(A, B, C, D, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # An int8 tile both stored and read as an int8 dot's A operand.
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(A + rm[:, None] * BK + rk[None, :])
    tl.store(D + rm[:, None] * BK + rk[None, :], a)
    b = tl.load(B + rk[:, None] * BN + rn[None, :])
    tl.store(C + rm[:, None] * BN + rn[None, :], tl.dot(a, b))


@zetile.jit
def int8_computed_into_dot(A, B, C, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # int8 arithmetic on an int8 dot's operand.
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(A + rm[:, None] * BK + rk[None, :])
    b = tl.load(B + rk[:, None] * BN + rn[None, :])
    tl.store(C + rm[:, None] * BN + rn[None, :], tl.dot(a + a, b))
