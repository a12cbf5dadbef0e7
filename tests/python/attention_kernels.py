"""FlashAttention forward written for zetile's tests (the form of Triton's
tutorial 06: one program per BLOCK_M query rows of one head; K/V streamed
BLOCK_N rows at a time; online softmax with a running row max and row sum;
`acc += P @ V` with P cast to V's type). Written here, not copied."""
import zetile
import zetile.language as tl


@zetile.jit
def attn_fwd_kernel(Q, K, V, Out, sm_scale, N_CTX,
                    stride_qm, stride_kn, stride_vn, stride_om,
                    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    CAUSAL: tl.constexpr = False):
    # Q, K, V, Out: (heads * N_CTX, HEAD_DIM) row-major; program (m, h).
    # CAUSAL: query row i sees key rows 0..i (the loop stops after the
    # block holding the diagonal; keys past it are masked to -inf).
    start_m = tl.program_id(0)
    head = tl.program_id(1)
    base = head * N_CTX
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + (base + offs_m)[:, None] * stride_qm + offs_d[None, :])
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.full([BLOCK_M], 1.0, tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    qk_scale = sm_scale * 1.44269504  # exp(x) = exp2(x * log2(e))
    hi = (start_m + 1) * BLOCK_M if CAUSAL else N_CTX
    for start_n in range(0, hi, BLOCK_N):
        # K^T as a (HEAD_DIM, BLOCK_N) tile: element (d, n) of key row n.
        k = tl.load(K + offs_d[:, None] + (base + start_n + offs_n)[None, :] * stride_kn)
        qk = tl.dot(q, k)
        if CAUSAL:
            qk = tl.where(offs_m[:, None] >= start_n + offs_n[None, :], qk, float("-inf"))
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        l_ij = tl.sum(p, 1)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + l_ij
        acc = acc * alpha[:, None]
        v = tl.load(V + (base + start_n + offs_n)[:, None] * stride_vn + offs_d[None, :])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    acc = acc / l_i[:, None]
    tl.store(Out + (base + offs_m)[:, None] * stride_om + offs_d[None, :], acc.to(Out.dtype.element_ty))


def run_fwd_error(dt, d, causal, heads=2, n_ctx=256, block_m=128, block_n=64, num_warps=8):
    """Runs attn_fwd_kernel on the current device with seeded fp16/bf16/fp32
    inputs and returns the largest absolute difference from a float64 numpy
    softmax attention (the tests' E4/E5 check)."""
    import ml_dtypes
    import numpy as np
    npdt = {"fp16": np.float16, "bf16": ml_dtypes.bfloat16, "fp32": np.float32}[dt]
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((heads * n_ctx, d)).astype(npdt) for _ in range(3))
    out = np.zeros((heads * n_ctx, d), npdt)
    scale = 1 / np.sqrt(d)
    attn_fwd_kernel[(n_ctx // block_m, heads)](q, k, v, out, scale, n_ctx, d, d, d, d, HEAD_DIM=d,
                                               BLOCK_M=block_m, BLOCK_N=block_n, CAUSAL=causal,
                                               num_warps=num_warps)
    zetile.get_device().synchronize()
    ref = np.zeros((heads * n_ctx, d), np.float64)
    for h in range(heads):
        s = slice(h * n_ctx, (h + 1) * n_ctx)
        qk = q[s].astype(np.float64) @ k[s].astype(np.float64).T * scale
        if causal:
            qk = np.where(np.tril(np.ones((n_ctx, n_ctx), bool)), qk, -np.inf)
        p = np.exp(qk - qk.max(1, keepdims=True))
        ref[s] = (p / p.sum(1, keepdims=True)) @ v[s].astype(np.float64)
    return float(np.abs(out.astype(np.float64) - ref).max())
