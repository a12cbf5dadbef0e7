"""Kernels for test_xe_axis.py: 2-D loads and stores through pointer tensors
whose addresses the Xe lowering can or cannot prove affine."""
import zetile as triton
import zetile.language as tl


@triton.jit
def scale2d(x_ptr, y_ptr, M, N, stride_xm, stride_ym, BM: tl.constexpr, BN: tl.constexpr,
            COL_STEP: tl.constexpr):
    """y = 2x on a (M, N) tile grid; COL_STEP 2 reads every other column."""
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    x = tl.load(x_ptr + offs_m[:, None] * stride_xm + offs_n[None, :] * COL_STEP, mask=mask,
                other=0.0)
    tl.store(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :], x * 2, mask=mask)


@triton.jit
def scale2d_opaque_cols(x_ptr, y_ptr, M, N, stride_xm, stride_ym, BM: tl.constexpr,
                        BN: tl.constexpr, HINT: tl.constexpr):
    """Column offsets built with a division the analysis does not follow;
    HINT states their contiguity as Triton programs do."""
    offs_m = tl.program_id(0) * BM + tl.arange(0, BM)
    offs_n = tl.program_id(1) * BN + tl.arange(0, BN) // 1
    if HINT:
        offs_n = tl.max_contiguous(tl.multiple_of(offs_n, BN), BN)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    x = tl.load(x_ptr + offs_m[:, None] * stride_xm + offs_n[None, :], mask=mask, other=0.0)
    tl.store(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :], x * 2, mask=mask)


@triton.jit
def gather_rows_from(x_ptr, starts_ptr, y_ptr, M, N, stride_xm, stride_ym, BM: tl.constexpr,
                     BN: tl.constexpr, HINT: tl.constexpr):
    """Program p copies BM rows of x starting at starts[p] (rows wrap at M)
    into rows p*BM.. of y. The start comes from memory: only tl.multiple_of
    tells the compiler that `% M` keeps rows contiguous in blocks."""
    pid = tl.program_id(0)
    start = tl.load(starts_ptr + pid)
    if HINT:
        start = tl.multiple_of(start, 16)
    rows = (start + tl.arange(0, BM)) % M
    cols = tl.arange(0, BN)
    x = tl.load(x_ptr + rows[:, None] * stride_xm + cols[None, :], mask=cols[None, :] < N,
                other=0.0)
    out_rows = pid * BM + tl.arange(0, BM)
    tl.store(y_ptr + out_rows[:, None] * stride_ym + cols[None, :], x,
             mask=cols[None, :] < N)


@triton.jit
def matmul_int8_ptr(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                    stride_cm, stride_cn, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """int8 x int8 -> int32 in the tutorial's pointer style."""
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = (pid_m * BM + tl.arange(0, BM)) % M
    offs_n = (pid_n * BN + tl.arange(0, BN)) % N
    offs_k = tl.arange(0, BK)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BM, BN), dtype=tl.int32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BK, other=0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BK, other=0)
        acc += tl.dot(a, b)
        a_ptrs += BK * stride_ak
        b_ptrs += BK * stride_bk
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))
