"""Attention forward as one tile program: SDPA and FlexAttention share it.

FlashAttention-style online softmax over KV tiles, in the log2 domain (scores
times log2(e), exp2), one program per (BLOCK_M query rows, batch*head).
Constexpr switches pick the variant, so each configuration is its own
specialization in the kernel cache:

  MASK_KIND   0: none, 1: additive float mask, 2: boolean mask (int8 0/1),
              loaded through strides (stride 0 broadcasts a dimension)
  IS_CAUSAL   torch's top-left causal mask (q_idx >= kv_idx)
  SCORE_MOD   None or a @zetile.jit fn(score, b, h, q_idx, kv_idx, B0, B1, B2, B3)
  MASK_MOD    None or a @zetile.jit fn(b, h, q_idx, kv_idx, B0, B1, B2, B3) -> bool
  SPARSE      walk torch's BlockMask (kv_num_blocks / kv_indices, then the
              full blocks, which skip MASK_MOD) instead of every KV tile

  SPLIT_KV    > 1: the decode path (short queries, long KV): program_id(2)
              takes one of num_programs(2) contiguous shares of the KV tiles
              or of the listed blocks' tiles (SPARSE) and writes its
              unnormalized accumulator, running max and sum (fp32) to
              WS_ACC / WS_M / WS_L; attn_split_combine merges the shares
              into O and LSE (FlashDecoding).
  DROPOUT     torch's SDPA dropout: softmax weights zeroed with probability
              dropout_p (a philox draw, tl.rand(seed, offset)'s bits from philox.py, offset the
              flat (b*H + h, q, kv) position) and the kept ones scaled by
              1 / (1 - dropout_p); the normalizer (l_i, lse) is the undropped
              one, as dropout applies after the softmax.

The log-sum-exp is the log2 one (torch's flex HOP) times lse_scale: 1 keeps
log2 units, ln 2 gives torch's natural-log lse (SDPA). Rows with every score
masked give 0 and lse -inf.
"""
import zetile
import zetile.language as tl
from zetile.ops import _kernels

# tl.rand's bits in ops the Xe lowering takes on 2-D tiles (philox.py).
dropout_uniform = _kernels.load("philox").uniform

# Tunable parameters, the list a tuner walks (HEAD_DIM is the head size
# rounded up to a power of two; D is the real one).
CONFIGS = [
    {"BLOCK_M": 32, "BLOCK_N": 32},
    {"BLOCK_M": 64, "BLOCK_N": 32},
    {"BLOCK_M": 64, "BLOCK_N": 64},
    {"BLOCK_M": 16, "BLOCK_N": 32},
    {"BLOCK_M": 128, "BLOCK_N": 64},
]
DEFAULT = {"BLOCK_M": 32, "BLOCK_N": 32}


@zetile.jit
def _tile(acc, m_i, l_i, q, k_ptrs, v_ptrs, start_n, offs_m, offs_d, b, h, Lq, Lk, D,
          stride_kn, stride_vn, qk_scale, sm_scale,
          mask_ptr, stride_mm, stride_mn,
          B0, B1, B2, B3, dropout_p, seed, rng_row,
          BLOCK_N: tl.constexpr, MASK_KIND: tl.constexpr, IS_CAUSAL: tl.constexpr,
          SCORE_MOD: tl.constexpr, MASK_MOD: tl.constexpr, APPLY_MASK_MOD: tl.constexpr,
          DROPOUT: tl.constexpr):
    offs_n = start_n + tl.arange(0, BLOCK_N)
    # 2-D comparisons in masks (not expanded 1-D ones): the Xe lowering reads
    # their per-axis bounds to use 2D block IO.
    k = tl.load(k_ptrs + start_n * stride_kn,
                mask=(offs_n[None, :] < Lk) & (offs_d[:, None] < D), other=0.0)
    s = tl.dot(q, k)
    if SCORE_MOD is not None:
        s = SCORE_MOD(s * sm_scale, b, h, offs_m[:, None], offs_n[None, :], B0, B1, B2, B3)
        s = s.to(tl.float32) * 1.4426950408889634
    else:
        s = s * qk_scale
    keep = (offs_n[None, :] < Lk) & (offs_m[:, None] >= 0)
    if IS_CAUSAL:
        keep = keep & (offs_m[:, None] >= offs_n[None, :])
    if APPLY_MASK_MOD:
        keep = keep & MASK_MOD(b, h, offs_m[:, None], offs_n[None, :], B0, B1, B2, B3)
    if MASK_KIND == 1:
        mk = tl.load(mask_ptr + offs_m[:, None] * stride_mm + offs_n[None, :] * stride_mn,
                     mask=(offs_m[:, None] < Lq) & (offs_n[None, :] < Lk), other=0.0)
        s = s + mk.to(tl.float32) * 1.4426950408889634
    s = tl.where(keep, s, float("-inf"))
    if MASK_KIND == 2:
        # The boolean mask's bytes (0/1) as +-inf bounds through a minimum: the
        # Xe lowering cannot yet select with a mask computed from loaded data.
        mb = tl.load(mask_ptr + offs_m[:, None] * stride_mm + offs_n[None, :] * stride_mn,
                     mask=(offs_m[:, None] < Lq) & (offs_n[None, :] < Lk), other=0)
        s = tl.minimum(s, (tl.minimum(mb.to(tl.float32), 1.0) * 2.0 - 1.0) * float("inf"))
    m_new = tl.maximum(m_i, tl.max(s, 1))
    # A row with nothing kept so far has m_new = -inf: subtract 0 instead, so
    # exp2 gives 0 rather than NaN.
    m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
    p = tl.exp2(s - m_use[:, None])
    alpha = tl.exp2(m_i - m_use)
    l_i = l_i * alpha + tl.sum(p, 1)
    v = tl.load(v_ptrs + start_n * stride_vn,
                mask=(offs_n[:, None] < Lk) & (offs_d[None, :] < D), other=0.0)
    if DROPOUT:
        # One uniform draw per (row, key) position; multiplying by the 0/1
        # keep flag instead of a select (see MASK_KIND 2). The 1 / (1 - p)
        # rescale is applied once to the output.
        r = dropout_uniform(seed, (rng_row + offs_m[:, None]) * Lk + offs_n[None, :])
        p = p * (r >= dropout_p).to(tl.float32)
    acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
    return acc, m_new, l_i


@zetile.jit
def attn_fwd(Q, K, V, O, LSE, M_OUT, WS_ACC, WS_M, WS_L,
             stride_qb, stride_qh, stride_qm, stride_qd,
             stride_kb, stride_kh, stride_kn, stride_kd,
             stride_vb, stride_vh, stride_vn, stride_vd,
             stride_ob, stride_oh, stride_om, stride_od,
             H, Lq, Lk, D, GROUP, sm_scale, lse_scale, dropout_p, seed,
             mask_ptr, stride_mb, stride_mh, stride_mm, stride_mn,
             kv_num, kv_idx, full_num, full_idx,
             sb_b, sb_h, sb_m, si_b, si_h, si_m, Q_SPARSE,
             B0, B1, B2, B3,
             HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
             MASK_KIND: tl.constexpr, IS_CAUSAL: tl.constexpr,
             SCORE_MOD: tl.constexpr, MASK_MOD: tl.constexpr,
             SPARSE: tl.constexpr, HAS_FULL: tl.constexpr, KV_SPARSE: tl.constexpr,
             WRITE_MAX: tl.constexpr, DROPOUT: tl.constexpr = False,
             SPLIT_KV: tl.constexpr = 1):
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    hk = h // GROUP
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + b * stride_qb + h * stride_qh + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qd,
                mask=(offs_m[:, None] < Lq) & (offs_d[None, :] < D), other=0.0)
    k_ptrs = K + b * stride_kb + hk * stride_kh + tl.arange(0, BLOCK_N)[None, :] * stride_kn + offs_d[:, None] * stride_kd
    v_ptrs = V + b * stride_vb + hk * stride_vh + tl.arange(0, BLOCK_N)[:, None] * stride_vn + offs_d[None, :] * stride_vd
    mptr = mask_ptr
    if MASK_KIND != 0:
        mptr = mask_ptr + b * stride_mb + h * stride_mh
    qk_scale = sm_scale * 1.4426950408889634
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    if SPARSE:
        row = (start_m * BLOCK_M) // Q_SPARSE
        n_part = tl.load(kv_num + b * sb_b + h * sb_h + row * sb_m)
        base = kv_idx + b * si_b + h * si_h + row * si_m
        # One flat loop over (listed block, tile in block) pairs rather than
        # two nested loops: the nested form does not lower for Xe yet (an
        # index cast survives to SPIR-V emission).
        SUBS = KV_SPARSE // BLOCK_N
        if SPLIT_KV > 1:
            share = tl.cdiv(n_part * SUBS, tl.num_programs(2))
            t_lo = tl.program_id(2) * share
            t_hi = tl.minimum(n_part * SUBS, t_lo + share)
        else:
            t_lo = 0
            t_hi = n_part * SUBS
        for t in range(t_lo, t_hi):
            blk = tl.load(base + t // SUBS)
            acc, m_i, l_i = _tile(acc, m_i, l_i, q, k_ptrs, v_ptrs, blk * KV_SPARSE + (t % SUBS) * BLOCK_N,
                                  offs_m, offs_d, b, h, Lq, Lk, D, stride_kn, stride_vn,
                                  qk_scale, sm_scale, mptr, stride_mm, stride_mn,
                                  B0, B1, B2, B3, dropout_p, seed, bh * Lq,
                                  BLOCK_N, MASK_KIND, IS_CAUSAL,
                                  SCORE_MOD, MASK_MOD, MASK_MOD is not None, DROPOUT)
        if HAS_FULL:
            n_full = tl.load(full_num + b * sb_b + h * sb_h + row * sb_m)
            fbase = full_idx + b * si_b + h * si_h + row * si_m
            if SPLIT_KV > 1:
                share = tl.cdiv(n_full * SUBS, tl.num_programs(2))
                f_lo = tl.program_id(2) * share
                f_hi = tl.minimum(n_full * SUBS, f_lo + share)
            else:
                f_lo = 0
                f_hi = n_full * SUBS
            for t in range(f_lo, f_hi):
                blk = tl.load(fbase + t // SUBS)
                acc, m_i, l_i = _tile(acc, m_i, l_i, q, k_ptrs, v_ptrs, blk * KV_SPARSE + (t % SUBS) * BLOCK_N,
                                      offs_m, offs_d, b, h, Lq, Lk, D, stride_kn, stride_vn,
                                      qk_scale, sm_scale, mptr, stride_mm, stride_mn,
                                      B0, B1, B2, B3, dropout_p, seed, bh * Lq,
                                  BLOCK_N, MASK_KIND, IS_CAUSAL,
                                      SCORE_MOD, MASK_MOD, False, DROPOUT)
    else:
        hi = Lk
        if IS_CAUSAL:
            hi = tl.minimum(Lk, (start_m + 1) * BLOCK_M)
        lo = 0
        if SPLIT_KV > 1:
            share = tl.cdiv(tl.cdiv(hi, BLOCK_N), tl.num_programs(2)) * BLOCK_N
            lo = tl.program_id(2) * share
            hi = tl.minimum(hi, lo + share)
        for start_n in range(lo, hi, BLOCK_N):
            acc, m_i, l_i = _tile(acc, m_i, l_i, q, k_ptrs, v_ptrs, start_n,
                                  offs_m, offs_d, b, h, Lq, Lk, D, stride_kn, stride_vn,
                                  qk_scale, sm_scale, mptr, stride_mm, stride_mn,
                                  B0, B1, B2, B3, dropout_p, seed, bh * Lq,
                                  BLOCK_N, MASK_KIND, IS_CAUSAL,
                                  SCORE_MOD, MASK_MOD, MASK_MOD is not None, DROPOUT)
    if SPLIT_KV > 1:
        if DROPOUT:
            acc = acc * (1.0 / (1.0 - dropout_p))  # the combine divides by the undropped sum
        ws = (tl.program_id(2) * tl.num_programs(1) + bh) * Lq + offs_m
        tl.store(WS_ACC + ws[:, None] * HEAD_DIM + offs_d[None, :], acc,
                 mask=(offs_m[:, None] < Lq) & (offs_d[None, :] < HEAD_DIM))
        tl.store(WS_M + ws, m_i, mask=offs_m < Lq)
        tl.store(WS_L + ws, l_i, mask=offs_m < Lq)
    else:
        empty = l_i == 0.0
        l_safe = tl.where(empty, 1.0, l_i)
        out = acc / l_safe[:, None]
        if DROPOUT:
            out = out * (1.0 / (1.0 - dropout_p))
        tl.store(O + b * stride_ob + h * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :] * stride_od,
                 out.to(O.dtype.element_ty), mask=(offs_m[:, None] < Lq) & (offs_d[None, :] < D))
        lse = tl.where(empty, float("-inf"), (m_i + tl.log2(l_safe)) * lse_scale)
        tl.store(LSE + bh * Lq + offs_m, lse, mask=offs_m < Lq)
        if WRITE_MAX:
            tl.store(M_OUT + bh * Lq + offs_m, m_i, mask=offs_m < Lq)


@zetile.jit
def attn_split_combine(WS_ACC, WS_M, WS_L, O, LSE, stride_ob, stride_oh, stride_om, stride_od,
                       H, Lq, D, lse_scale, SPLITS,
                       HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr):
    """Merges attn_fwd's SPLIT_KV shares of one (query tile, batch*head):
    each share's accumulator and sum are relative to its own running max
    (log2 domain), so they are rescaled to the common max and added."""
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    nbh = tl.num_programs(1)
    b = bh // H
    h = bh % H
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m < Lq
    m = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    for s in range(0, SPLITS):
        m = tl.maximum(m, tl.load(WS_M + (s * nbh + bh) * Lq + offs_m, mask=row_ok,
                                  other=float("-inf")))
    m_use = tl.where(m == float("-inf"), 0.0, m)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for s in range(0, SPLITS):
        ws = (s * nbh + bh) * Lq + offs_m
        w = tl.exp2(tl.load(WS_M + ws, mask=row_ok, other=float("-inf")) - m_use)
        l_i += w * tl.load(WS_L + ws, mask=row_ok, other=0.0)
        a = tl.load(WS_ACC + ws[:, None] * HEAD_DIM + offs_d[None, :],
                    mask=(offs_m[:, None] < Lq) & (offs_d[None, :] < HEAD_DIM), other=0.0)
        acc += a * w[:, None]
    empty = l_i == 0.0
    l_safe = tl.where(empty, 1.0, l_i)
    out = acc / l_safe[:, None]
    tl.store(O + b * stride_ob + h * stride_oh + offs_m[:, None] * stride_om + offs_d[None, :] * stride_od,
             out.to(O.dtype.element_ty), mask=(offs_m[:, None] < Lq) & (offs_d[None, :] < D))
    lse = tl.where(empty, float("-inf"), (m_use + tl.log2(l_safe)) * lse_scale)
    tl.store(LSE + bh * Lq + offs_m, lse, mask=row_ok)


@zetile.jit
def block_counts(COUNT, H, Q_LEN, KV_LEN, QB, KVB, B0, B1, B2, B3,
                 MASK_MOD: tl.constexpr, Q_BLOCK: tl.constexpr, KV_BLOCK: tl.constexpr,
                 SUB_M: tl.constexpr, SUB_N: tl.constexpr):
    """How many (q, kv) positions of one (Q_BLOCK x KV_BLOCK) block MASK_MOD
    keeps (create_block_mask: all of them = a full block, some = partial).
    Positions past Q_LEN / KV_LEN count as masked, as torch pads them."""
    kb = tl.program_id(0)
    qb = tl.program_id(1)
    bh = tl.program_id(2)
    b = bh // H
    h = bh % H
    total = 0
    for i in range(0, Q_BLOCK // SUB_M):
        q = qb * Q_BLOCK + i * SUB_M + tl.arange(0, SUB_M)[:, None]
        for j in range(0, KV_BLOCK // SUB_N):
            kv = kb * KV_BLOCK + j * SUB_N + tl.arange(0, SUB_N)[None, :]
            keep = MASK_MOD(b, h, q, kv, B0, B1, B2, B3) & (q < Q_LEN) & (kv < KV_LEN)
            total += tl.sum(tl.sum(keep.to(tl.int32), 1), 0)
    tl.store(COUNT + (bh * QB + qb) * KVB + kb, total)
