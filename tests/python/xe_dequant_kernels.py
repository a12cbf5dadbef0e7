"""Weight-only GEMM written as a user would (tests/python/test_xe_dequant_gemm.py):
fp16 activations A (M, K) times weights dequantized in the kernel,
B = (w - zero) * scale with per-group scales and zero points (GROUP rows of K
share one), w int8 (BITS 8) or two int4 nibbles per byte packed along K (BITS 4,
low nibble = even row, unsigned 0..15). The dequantized tile is computed by
elementwise ops and feeds tl.dot: on Xe it stays in each lane of the B
operand's places (lowering/xe/xe_layout.c, slot_variant)."""
import numpy as np

import zetile
import zetile.language as tl


@zetile.jit
def dequant_gemm(A, W, S, Z, C, M, N, K,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                 GROUP: tl.constexpr, BITS: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k = k0 + offs_k
        a = tl.load(A + offs_m[:, None] * K + k[None, :],
                    mask=(offs_m[:, None] < M) & (k[None, :] < K), other=0.0)
        ok = (k[:, None] < K) & (offs_n[None, :] < N)
        if BITS == 4:
            raw = tl.load(W + (k // 2)[:, None] * N + offs_n[None, :], mask=ok, other=0)
            w = (raw.to(tl.int32) >> ((k % 2) * 4)[:, None]) & 15
        else:
            w = tl.load(W + k[:, None] * N + offs_n[None, :], mask=ok, other=0)
        s = tl.load(S + (k // GROUP)[:, None] * N + offs_n[None, :], mask=ok, other=0.0)
        z = tl.load(Z + (k // GROUP)[:, None] * N + offs_n[None, :], mask=ok, other=0.0)
        b = (w.to(tl.float16) - z) * s
        acc = tl.dot(a, b, acc)
    tl.store(C + offs_m[:, None] * N + offs_n[None, :], acc,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


SIG = {"A": "*fp16", "W": "*i8", "S": "*fp16", "Z": "*fp16", "C": "*fp32",
       "M": "i32", "N": "i32", "K": "i32"}


def consts(bits, block_m=32, block_n=64, block_k=32, group=32):
    return {"BLOCK_M": block_m, "BLOCK_N": block_n, "BLOCK_K": block_k, "GROUP": group,
            "BITS": bits}


def inputs(bits, M, N, K, group, seed=0):
    """(a, stored weights, scales, zeros, reference C). The reference rounds the
    dequantized weights to fp16 as the kernel does, then multiplies in fp64."""
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((M, K)) * 0.5).astype(np.float16)
    if bits == 4:
        q = rng.integers(0, 16, (K, N), dtype=np.int32)
        w = ((q[1::2] << 4) | q[0::2]).astype(np.uint8).view(np.int8)
        z = rng.integers(6, 10, (K // group, N)).astype(np.float16)
    else:
        q = rng.integers(-128, 128, (K, N), dtype=np.int32)
        w = q.astype(np.int8)
        z = rng.integers(-3, 4, (K // group, N)).astype(np.float16)
    s = (rng.random((K // group, N)) * 0.05 + 0.01).astype(np.float16)
    zz, ss = np.repeat(z, group, axis=0), np.repeat(s, group, axis=0)
    b = ((q.astype(np.float16) - zz) * ss).astype(np.float16)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    return a, w, s, z, ref


def run(bits, M, N, K, group=32, **cfg):
    """Launches on the current device; returns (C, reference)."""
    c = consts(bits, group=group, **cfg)
    a, w, s, z, ref = inputs(bits, M, N, K, group)
    out = np.full((M, N), 7.0, np.float32)
    grid = ((M + c["BLOCK_M"] - 1) // c["BLOCK_M"], (N + c["BLOCK_N"] - 1) // c["BLOCK_N"])
    dequant_gemm[grid](a, w, s, z, out, M, N, K, **c)
    return out, ref
