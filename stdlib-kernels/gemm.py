"""GEMM as one tile program: out = act(alpha * A @ B + beta * C + bias) + residual.

A is (batch, M, K) and B (batch, K, N), each read through its own strides, so
transposed operands and broadcast batches (stride 0) need no copies. One
program per (BLOCK_M x BLOCK_N output tile, batch), the tiles of a batch
visited in GROUP_M-row groups (Triton's grouped ordering, for cache reuse).

Constexpr switches (each configuration is its own cached specialization):
  ACT         0 none, 1 relu, 2 gelu (erf), 3 gelu (tanh), 4 silu
  EPILOGUE    False: store the accumulator as is (exact int8 -> int32);
              True: alpha, beta * C, bias, act, residual in fp32
  WEIGHT_BITS 0: B holds A's type (or int8 with int8 A); 8: B is int8 weights
              and 4: B packs two int4 weights per byte along K (low nibble
              first, value = nibble - 8), both times SCALES[k // GROUP_K, n]
PRECISION   fp32 dots: None (the compiler's default), "tf32" or "ieee" (on Xe
            3 or 6 bf16-piece DPAS per product; the CPU target computes fp32)
Optional operands (BIAS, RES, C_IN, SCALES) are None when absent, and the
HAS_* constexprs say which are present (a pointer cannot be compared with
None inside a kernel), so an absent operand costs nothing.
"""
import zetile
import zetile.language as tl

# Tunable parameters, the list a tuner walks; DEFAULT is what ops.gemm uses.
CONFIGS = [
    {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 8},
    {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8},
    {"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 64, "GROUP_M": 8},
    {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8},
    {"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 1},
]
DEFAULT = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 8}


@zetile.jit
def _tanh(x):
    # 1 - 2 / (exp(2x) + 1): saturates to +-1 through inf and 0 without a
    # select (the Xe lowering cannot select on data computed by a dot yet).
    return 1.0 - 2.0 / (tl.exp2(2.8853900817779268 * x) + 1.0)


@zetile.jit
def _activation(y, ACT: tl.constexpr):
    if ACT == 1:
        y = tl.maximum(y, 0.0)
    if ACT == 2:
        y = 0.5 * y * (1.0 + tl.erf(y * 0.7071067811865476))
    if ACT == 3:
        y = 0.5 * y * (1.0 + _tanh(0.7978845608028654 * (y + 0.044715 * y * y * y)))
    if ACT == 4:
        y = y * tl.sigmoid(y)
    return y


@zetile.jit
def gemm_kernel(A, B, OUT, BIAS, RES, C_IN, SCALES,
                M, N, K,
                s_ab, s_am, s_ak, s_bb, s_bk, s_bn, s_ob, s_om, s_on,
                s_xb, s_xm, s_xn, s_rb, s_rm, s_rn, s_cb, s_cm, s_cn, s_sg, s_sn,
                alpha, beta,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                GROUP_M: tl.constexpr, ACT: tl.constexpr, EPILOGUE: tl.constexpr,
                ACC_INT: tl.constexpr, WEIGHT_BITS: tl.constexpr, GROUP_K: tl.constexpr,
                HAS_BIAS: tl.constexpr, HAS_RES: tl.constexpr, HAS_C: tl.constexpr,
                PRECISION: tl.constexpr = None):
    pid = tl.program_id(0)
    batch = tl.program_id(1)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * num_n
    first_m = (pid // in_group) * GROUP_M
    size_m = min(num_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % in_group) % size_m)
    pid_n = (pid % in_group) // size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    # Masks are written as 2-D comparisons (row < M, col < N): the Xe
    # lowering reads their bounds per axis to turn pointer tiles into 2D
    # block IO; an expanded 1-D comparison hides them (row gathers then).
    a_ptrs = A + batch * s_ab + offs_m[:, None] * s_am + offs_k[None, :] * s_ak
    if WEIGHT_BITS == 4:
        b_ptrs = B + batch * s_bb + (offs_k // 2)[:, None] * s_bk + offs_n[None, :] * s_bn
    else:
        b_ptrs = B + batch * s_bb + offs_k[:, None] * s_bk + offs_n[None, :] * s_bn
    if ACC_INT:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k0), other=0)
        b_ok = (offs_k[:, None] < K - k0) & (offs_n[None, :] < N)
        if WEIGHT_BITS == 0:
            b = tl.load(b_ptrs, mask=b_ok, other=0)
        else:
            raw = tl.load(b_ptrs, mask=b_ok, other=0)
            if WEIGHT_BITS == 4:
                nib = (raw.to(tl.int32) >> (((k0 + offs_k) % 2) * 4)[:, None]) & 15
                w = (nib - 8).to(tl.float32)
            else:
                w = raw.to(tl.float32)
            sc = tl.load(SCALES + ((k0 + offs_k) // GROUP_K)[:, None] * s_sg + offs_n[None, :] * s_sn,
                         mask=b_ok, other=0.0)
            b = (w * sc.to(tl.float32)).to(a.dtype)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
        a_ptrs += BLOCK_K * s_ak
        if WEIGHT_BITS == 4:
            b_ptrs += (BLOCK_K // 2) * s_bk
        else:
            b_ptrs += BLOCK_K * s_bk
    out_ok = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    if EPILOGUE:
        y = acc.to(tl.float32) * alpha
        if HAS_C:
            c = tl.load(C_IN + batch * s_cb + offs_m[:, None] * s_cm + offs_n[None, :] * s_cn,
                        mask=out_ok, other=0.0)
            y += beta * c.to(tl.float32)
        if HAS_BIAS:
            bias = tl.load(BIAS + batch * s_xb + offs_m[:, None] * s_xm + offs_n[None, :] * s_xn,
                           mask=out_ok, other=0.0)
            y += bias.to(tl.float32)
        y = _activation(y, ACT)
        if HAS_RES:
            r = tl.load(RES + batch * s_rb + offs_m[:, None] * s_rm + offs_n[None, :] * s_rn,
                        mask=out_ok, other=0.0)
            y += r.to(tl.float32)
    else:
        y = acc
    tl.store(OUT + batch * s_ob + offs_m[:, None] * s_om + offs_n[None, :] * s_on,
             y.to(OUT.dtype.element_ty), mask=out_ok)


# Split-K for skinny shapes (M and N small, K large): few output tiles leave
# most of the device idle, so K is cut into SPLITS slices, each program
# computes one tile's partial sum over one slice into an fp32 workspace
# (SPLITS, batch, M, N), and gemm_splitk_reduce adds the slices in a fixed
# order (deterministic: no atomics) and applies the epilogue.
@zetile.jit
def gemm_splitk_partial(A, B, WS, M, N, K, K_SPLIT,
                        s_ab, s_am, s_ak, s_bb, s_bk, s_bn,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                        PRECISION: tl.constexpr = None):
    pid = tl.program_id(0)
    batch = tl.program_id(1)
    split = tl.program_id(2)
    num_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_n
    pid_n = pid % num_n
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    k_lo = split * K_SPLIT
    k_hi = tl.minimum(K, k_lo + K_SPLIT)
    a_ptrs = A + batch * s_ab + offs_m[:, None] * s_am + (k_lo + offs_k)[None, :] * s_ak
    b_ptrs = B + batch * s_bb + (k_lo + offs_k)[:, None] * s_bk + offs_n[None, :] * s_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(k_lo, k_hi, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_hi - k0), other=0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < k_hi - k0) & (offs_n[None, :] < N), other=0)
        acc = tl.dot(a, b, acc, input_precision=PRECISION)
        a_ptrs += BLOCK_K * s_ak
        b_ptrs += BLOCK_K * s_bk
    nb = tl.num_programs(1)
    ws = WS + ((split * nb + batch) * M + offs_m[:, None]) * N + offs_n[None, :]
    tl.store(ws, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@zetile.jit
def gemm_splitk_reduce(WS, OUT, BIAS, RES, C_IN, M, N, SPLITS, NB,
                       s_ob, s_om, s_on, s_xb, s_xm, s_xn, s_rb, s_rm, s_rn, s_cb, s_cm, s_cn,
                       alpha, beta,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, ACT: tl.constexpr,
                       EPILOGUE: tl.constexpr, HAS_BIAS: tl.constexpr, HAS_RES: tl.constexpr,
                       HAS_C: tl.constexpr):
    pid = tl.program_id(0)
    batch = tl.program_id(1)
    num_n = tl.cdiv(N, BLOCK_N)
    offs_m = (pid // num_n) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = (pid % num_n) * BLOCK_N + tl.arange(0, BLOCK_N)
    out_ok = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for s in range(0, SPLITS):
        acc += tl.load(WS + ((s * NB + batch) * M + offs_m[:, None]) * N + offs_n[None, :],
                       mask=out_ok, other=0.0)
    y = acc
    if EPILOGUE:
        y = y * alpha
        if HAS_C:
            c = tl.load(C_IN + batch * s_cb + offs_m[:, None] * s_cm + offs_n[None, :] * s_cn,
                        mask=out_ok, other=0.0)
            y += beta * c.to(tl.float32)
        if HAS_BIAS:
            bias = tl.load(BIAS + batch * s_xb + offs_m[:, None] * s_xm + offs_n[None, :] * s_xn,
                           mask=out_ok, other=0.0)
            y += bias.to(tl.float32)
        y = _activation(y, ACT)
        if HAS_RES:
            r = tl.load(RES + batch * s_rb + offs_m[:, None] * s_rm + offs_n[None, :] * s_rn,
                        mask=out_ok, other=0.0)
            y += r.to(tl.float32)
    tl.store(OUT + batch * s_ob + offs_m[:, None] * s_om + offs_n[None, :] * s_on,
             y.to(OUT.dtype.element_ty), mask=out_ok)
