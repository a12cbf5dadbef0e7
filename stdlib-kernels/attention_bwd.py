"""Attention backward (dq, dk, dv) as three tile programs, FlashAttention-2
style: SDPA and FlexAttention share them, as they share the forward
(attention.py).

  attn_bwd_delta  delta = rowsum(o * do) per query row (fp32), minus the
                  lse's gradient when the caller has one; with CONVERT_LSE
                  also the lse rescaled to log2 (the C API's natural-log lse)
  attn_bwd_dkdv   one program per (BLOCK_N keys, batch * kv head): walks every
                  query tile of every query head of its group (GQA/MQA sum
                  there, no atomics) and accumulates dk, dv
  attn_bwd_dq     one program per (BLOCK_M queries, batch * query head):
                  walks the KV tiles and accumulates dq

Probabilities are recomputed from the forward's log-sum-exp (log2 units, as
the forward kernel writes it): p = exp2(z * log2(e) - lse), where z is the
score after scale, score_mod and masks. With dz = p * (dp - delta):
dv = p^T do, and the raw score's gradient is ds = dz * score_mod'(s * scale)
* scale (score_mod' = 1 without a mod), dq = ds k, dk = ds^T q.

Constexpr switches are the forward's (MASK_KIND, IS_CAUSAL, SCORE_MOD,
MASK_MOD), plus
  SCORE_GRAD  d score_mod / d score, a function with score_mod's signature
              (traced from the mod, zetile.ops.attention)
  BLOCKS      a BlockMask as a dense (B, H, Q blocks, KV blocks) int8 table:
              0 masked, 1 partial (MASK_MOD applies), 2 full (it does not),
              read by (q block, kv block); plus, per program, the list of
              blocks to walk (lnum / lidx, made on the host from the table:
              dq the KV blocks of its query block, dk/dv the query blocks
              any head of its group keeps), SUBS kernel tiles per block.
  DROPOUT     the forward's dropout (attention.py's DROPOUT): its keep flags
              regenerated from the same philox draw, tl.rand(seed, (bh * Lq
              + q) * Lk + k), bh = b * Hq + query head, so no mask is stored.
              With keep flags m and c = 1 / (1 - dropout_p) the forward was
              o = sum p m c v: dv = (p m c)^T do, dp = m c (do v^T), and
              delta = rowsum(o * do) is still sum p dp, so dz keeps its form.
Masked positions and rows with every score masked (lse -inf) give p = 0,
hence zero gradients, never NaN.
"""
import zetile
import zetile.language as tl
from zetile.ops import _kernels

# The forward's draw (tl.rand's bits, in ops the Xe lowering takes: philox.py).
dropout_uniform = _kernels.load("philox").uniform

CONFIGS = [
    {"BLOCK_M": 32, "BLOCK_N": 32},
    {"BLOCK_M": 16, "BLOCK_N": 32},
    {"BLOCK_M": 64, "BLOCK_N": 64},
]
DEFAULT = {"BLOCK_M": 32, "BLOCK_N": 32}
LOG2E = 1.4426950408889634


@zetile.jit
def attn_bwd_delta(O, DO, DELTA, DLSE,
                   stride_ob, stride_oh, stride_om, stride_od,
                   stride_db, stride_dh, stride_dm, stride_dd,
                   H, Lq, D, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                   HAS_DLSE: tl.constexpr, LSE=None, LSE2=None, lse_scale=1.0,
                   CONVERT_LSE: tl.constexpr = False):
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    msk = (offs_m[:, None] < Lq) & (offs_d[None, :] < D)
    o = tl.load(O + b * stride_ob + h * stride_oh + offs_m[:, None] * stride_om
                + offs_d[None, :] * stride_od, mask=msk, other=0.0)
    do = tl.load(DO + b * stride_db + h * stride_dh + offs_m[:, None] * stride_dm
                 + offs_d[None, :] * stride_dd, mask=msk, other=0.0)
    delta = tl.sum(o.to(tl.float32) * do.to(tl.float32), 1)
    if HAS_DLSE:
        # A gradient of the (natural) lse adds p * dlse to each score's:
        # d lse / d z = p, so it folds into delta (the C API's: its units).
        delta = delta - _natural_dlse(DLSE + bh * Lq + offs_m, offs_m < Lq, lse_scale, CONVERT_LSE)
    tl.store(DELTA + bh * Lq + offs_m, delta, mask=offs_m < Lq)
    if CONVERT_LSE:
        # The C API (runtime/ops/ops_attention_bwd.c) takes the lse in the
        # units its forward wrote (natural log by default); the other two
        # kernels read log2: LSE2 = LSE * lse_scale (-inf stays -inf).
        lse = tl.load(LSE + bh * Lq + offs_m, mask=offs_m < Lq, other=0.0)
        tl.store(LSE2 + bh * Lq + offs_m, lse * lse_scale, mask=offs_m < Lq)


@zetile.jit
def _keep(b, h, offs_q, offs_k, start_m, start_n, Lq, Lk,
          blocks, sbk_m, sbk_n, Q_SPARSE, KV_SPARSE, B0, B1, B2, B3,
          IS_CAUSAL: tl.constexpr, MASK_MOD: tl.constexpr, BLOCKS: tl.constexpr):
    """The positions that take part (bounds, causal, block mask, mask_mod).
    offs_q and offs_k are 2-D: a row and a column, in either orientation."""
    keep = (offs_k < Lk) & (offs_q < Lq)
    if IS_CAUSAL:
        keep = keep & (offs_q >= offs_k)
    if BLOCKS:
        st = tl.load(blocks + (start_m // Q_SPARSE) * sbk_m + (start_n // KV_SPARSE) * sbk_n)
        keep = keep & (st != 0)
        if MASK_MOD is not None:
            keep = keep & (MASK_MOD(b, h, offs_q, offs_k, B0, B1, B2, B3) | (st == 2))
    return keep


@zetile.jit
def _scores(s, keep, b, h, offs_q, offs_k, Lq, Lk, sm_scale, mask_ptr, stride_mm, stride_mn,
            S0, S1, S2, S3, G0, G1, G2, G3,
            MASK_KIND: tl.constexpr, SCORE_MOD: tl.constexpr, SCORE_GRAD: tl.constexpr):
    """(log2 scores with masks applied, d z / d raw score) for a raw q.k tile."""
    if SCORE_MOD is not None:
        z = SCORE_MOD(s * sm_scale, b, h, offs_q, offs_k, S0, S1, S2, S3)
        g = SCORE_GRAD(s * sm_scale, b, h, offs_q, offs_k, G0, G1, G2, G3) * sm_scale
        z = z.to(tl.float32) * 1.4426950408889634
    else:
        z = s * (sm_scale * 1.4426950408889634)
        g = sm_scale
    if MASK_KIND == 1:
        mk = tl.load(mask_ptr + offs_q * stride_mm + offs_k * stride_mn,
                     mask=(offs_q < Lq) & (offs_k < Lk), other=0.0)
        z = z + mk.to(tl.float32) * 1.4426950408889634
    z = tl.where(keep, z, float("-inf"))
    if MASK_KIND == 2:
        # As the forward: the mask's bytes as +-inf bounds through a minimum.
        mb = tl.load(mask_ptr + offs_q * stride_mm + offs_k * stride_mn,
                     mask=(offs_q < Lq) & (offs_k < Lk), other=0)
        z = tl.minimum(z, (tl.minimum(mb.to(tl.float32), 1.0) * 2.0 - 1.0) * float("inf"))
    return z, g


@zetile.jit
def attn_bwd_dkdv(Q, K, V, DO, DK, DV, LSE, DELTA,
                  stride_qb, stride_qh, stride_qm, stride_qd,
                  stride_kb, stride_kh, stride_kn, stride_kd,
                  stride_vb, stride_vh, stride_vn, stride_vd,
                  stride_db, stride_dh, stride_dm, stride_dd,
                  stride_kgb, stride_kgh, stride_kgn, stride_kgd,
                  stride_vgb, stride_vgh, stride_vgn, stride_vgd,
                  Hkv, Lq, Lk, D, GROUP, sm_scale, dropout_p, seed,
                  mask_ptr, stride_mb, stride_mh, stride_mm, stride_mn,
                  blocks, sbk_b, sbk_h, sbk_m, sbk_n, Q_SPARSE, KV_SPARSE,
                  lnum, lidx, ln_b, ln_h, li_b, li_h, li_r,
                  S0, S1, S2, S3, G0, G1, G2, G3, M0, M1, M2, M3,
                  HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  MASK_KIND: tl.constexpr, IS_CAUSAL: tl.constexpr,
                  SCORE_MOD: tl.constexpr, SCORE_GRAD: tl.constexpr, MASK_MOD: tl.constexpr,
                  BLOCKS: tl.constexpr, SUBS: tl.constexpr, STATS_2D: tl.constexpr,
                  DROPOUT: tl.constexpr = False):
    start_n = tl.program_id(0) * BLOCK_N
    bhk = tl.program_id(1)
    b = bhk // Hkv
    hk = bhk % Hkv
    offs_n = start_n + tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    kv_msk = (offs_n[:, None] < Lk) & (offs_d[None, :] < D)
    k = tl.load(K + b * stride_kb + hk * stride_kh + offs_n[:, None] * stride_kn
                + offs_d[None, :] * stride_kd, mask=kv_msk, other=0.0)
    v = tl.load(V + b * stride_vb + hk * stride_vh + offs_n[:, None] * stride_vn
                + offs_d[None, :] * stride_vd, mask=kv_msk, other=0.0)
    dk = tl.zeros((BLOCK_N, HEAD_DIM), dtype=tl.float32)
    dv = tl.zeros((BLOCK_N, HEAD_DIM), dtype=tl.float32)
    lo = 0
    if IS_CAUSAL:
        # Query rows above the tile's first key see none of its keys.
        lo = (start_n // BLOCK_M) * BLOCK_M
    n_m = tl.maximum(Lq - lo + BLOCK_M - 1, 0) // BLOCK_M
    if BLOCKS:
        # Only the query blocks some head of the group keeps for this KV
        # block (host-made list), SUBS tiles each.
        col = start_n // KV_SPARSE
        n_m = tl.load(lnum + b * ln_b + hk * ln_h + col) * SUBS
        lbase = lidx + b * li_b + hk * li_h + col * li_r
    # One flat loop over (query head of the group, query tile): GQA/MQA sum
    # their heads' contributions here.
    for t in range(0, GROUP * n_m):
        h = hk * GROUP + t // n_m
        if BLOCKS:
            r = t % n_m
            start_m = tl.load(lbase + r // SUBS) * Q_SPARSE + (r % SUBS) * BLOCK_M
        else:
            start_m = lo + (t % n_m) * BLOCK_M
        offs_m = start_m + tl.arange(0, BLOCK_M)
        q_msk = (offs_m[:, None] < Lq) & (offs_d[None, :] < D)
        q = tl.load(Q + b * stride_qb + h * stride_qh + offs_m[:, None] * stride_qm
                    + offs_d[None, :] * stride_qd, mask=q_msk, other=0.0)
        do = tl.load(DO + b * stride_db + h * stride_dh + offs_m[:, None] * stride_dm
                     + offs_d[None, :] * stride_dd, mask=q_msk, other=0.0)
        # The transposed operands are loaded as such (the Xe lowering has no
        # transpose of a tile split across subgroups); the second read of the
        # same rows hits the cache.
        qT_msk = (offs_m[None, :] < Lq) & (offs_d[:, None] < D)
        qT = tl.load(Q + b * stride_qb + h * stride_qh + offs_m[None, :] * stride_qm
                     + offs_d[:, None] * stride_qd, mask=qT_msk, other=0.0)
        doT = tl.load(DO + b * stride_db + h * stride_dh + offs_m[None, :] * stride_dm
                      + offs_d[:, None] * stride_dd, mask=qT_msk, other=0.0)
        bh = b * (Hkv * GROUP) + h
        if STATS_2D:
            # Row statistics loaded already broadcast to the (keys x queries)
            # tile (row stride 0), not 1-D values expanded: the Xe lowering
            # expands 1-D values, and loads 1-row tiles, only inside one
            # subgroup. The CPU target takes the 1-D form (~30% faster there).
            st_ptr = bh * Lq + offs_m[None, :] + offs_n[:, None] * 0
            st_msk = (offs_n[:, None] >= 0) & (offs_m[None, :] < Lq)
            lse = tl.load(LSE + st_ptr, mask=st_msk, other=0.0)
            delta = tl.load(DELTA + st_ptr, mask=st_msk, other=0.0)
        else:
            lse = tl.load(LSE + bh * Lq + offs_m, mask=offs_m < Lq, other=0.0)[None, :]
            delta = tl.load(DELTA + bh * Lq + offs_m, mask=offs_m < Lq, other=0.0)[None, :]
        # A fully masked row has lse -inf: subtract a finite value instead, so
        # exp2(-inf) gives 0, not NaN (a maximum: Xe has no select on loaded data).
        lse = tl.maximum(lse, -1.0e30)
        # The transposed tile (keys x queries): rows are this program's keys.
        oq = offs_m[None, :]
        ok = offs_n[:, None]
        mptr = mask_ptr
        if MASK_KIND != 0:
            mptr = mask_ptr + b * stride_mb + h * stride_mh
        bptr = blocks
        if BLOCKS:
            bptr = blocks + b * sbk_b + h * sbk_h
        keep = _keep(b, h, oq, ok, start_m, start_n, Lq, Lk, bptr, sbk_m, sbk_n,
                     Q_SPARSE, KV_SPARSE, M0, M1, M2, M3, IS_CAUSAL, MASK_MOD, BLOCKS)
        sT = tl.dot(k, qT)
        zT, gT = _scores(sT, keep, b, h, oq, ok, Lq, Lk, sm_scale,
                         mptr, stride_mm, stride_mn,
                         S0, S1, S2, S3, G0, G1, G2, G3, MASK_KIND, SCORE_MOD, SCORE_GRAD)
        pT = tl.exp2(zT - lse)
        if DROPOUT:
            # The forward's draw for these (query, key) positions; 0/1 times
            # the rescale (a multiply, as the forward, not a select).
            rT = dropout_uniform(seed, (bh * Lq + oq) * Lk + ok)
            cT = (rT >= dropout_p).to(tl.float32) * (1.0 / (1.0 - dropout_p))
            dv += tl.dot((pT * cT).to(do.dtype), do)
            dpT = tl.dot(v, doT) * cT
        else:
            dv += tl.dot(pT.to(do.dtype), do)
            dpT = tl.dot(v, doT)
        dsT = pT * (dpT - delta) * gT
        if SCORE_MOD is not None:
            # score_mod' may be inf/NaN where the score is masked (p = 0);
            # selected by the positions (Xe selects on index-computed masks only).
            dsT = tl.where(keep, dsT, 0.0)
        dk += tl.dot(dsT.to(q.dtype), q)
    tl.store(DK + b * stride_kgb + hk * stride_kgh + offs_n[:, None] * stride_kgn
             + offs_d[None, :] * stride_kgd, dk.to(DK.dtype.element_ty), mask=kv_msk)
    tl.store(DV + b * stride_vgb + hk * stride_vgh + offs_n[:, None] * stride_vgn
             + offs_d[None, :] * stride_vgd, dv.to(DV.dtype.element_ty), mask=kv_msk)


@zetile.jit
def attn_bwd_dq(Q, K, V, DO, DQ, LSE, DELTA,
                stride_qb, stride_qh, stride_qm, stride_qd,
                stride_kb, stride_kh, stride_kn, stride_kd,
                stride_vb, stride_vh, stride_vn, stride_vd,
                stride_db, stride_dh, stride_dm, stride_dd,
                stride_gb, stride_gh, stride_gm, stride_gd,
                H, Lq, Lk, D, GROUP, sm_scale, dropout_p, seed,
                mask_ptr, stride_mb, stride_mh, stride_mm, stride_mn,
                blocks, sbk_b, sbk_h, sbk_m, sbk_n, Q_SPARSE, KV_SPARSE,
                lnum, lidx, ln_b, ln_h, li_b, li_h, li_r,
                S0, S1, S2, S3, G0, G1, G2, G3, M0, M1, M2, M3,
                HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                MASK_KIND: tl.constexpr, IS_CAUSAL: tl.constexpr,
                SCORE_MOD: tl.constexpr, SCORE_GRAD: tl.constexpr, MASK_MOD: tl.constexpr,
                BLOCKS: tl.constexpr, SUBS: tl.constexpr, DROPOUT: tl.constexpr = False):
    start_m = tl.program_id(0) * BLOCK_M
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    hk = h // GROUP
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q_msk = (offs_m[:, None] < Lq) & (offs_d[None, :] < D)
    q = tl.load(Q + b * stride_qb + h * stride_qh + offs_m[:, None] * stride_qm
                + offs_d[None, :] * stride_qd, mask=q_msk, other=0.0)
    do = tl.load(DO + b * stride_db + h * stride_dh + offs_m[:, None] * stride_dm
                 + offs_d[None, :] * stride_dd, mask=q_msk, other=0.0)
    lse = tl.load(LSE + bh * Lq + offs_m, mask=offs_m < Lq, other=0.0)
    lse = tl.maximum(lse, -1.0e30)       # as in attn_bwd_dkdv
    delta = tl.load(DELTA + bh * Lq + offs_m, mask=offs_m < Lq, other=0.0)
    mptr = mask_ptr
    if MASK_KIND != 0:
        mptr = mask_ptr + b * stride_mb + h * stride_mh
    bptr = blocks
    if BLOCKS:
        bptr = blocks + b * sbk_b + h * sbk_h
    dq = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    hi = Lk
    if IS_CAUSAL:
        hi = tl.minimum(Lk, start_m + BLOCK_M)
    n_t = (hi + BLOCK_N - 1) // BLOCK_N
    if BLOCKS:
        # Only the KV blocks listed (partial or full) for this query block.
        row = start_m // Q_SPARSE
        n_t = tl.load(lnum + b * ln_b + h * ln_h + row) * SUBS
        lbase = lidx + b * li_b + h * li_h + row * li_r
    oq = offs_m[:, None]
    for t in range(0, n_t):
        if BLOCKS:
            start_n = tl.load(lbase + t // SUBS) * KV_SPARSE + (t % SUBS) * BLOCK_N
        else:
            start_n = t * BLOCK_N
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_msk = (offs_n[:, None] < Lk) & (offs_d[None, :] < D)
        k = tl.load(K + b * stride_kb + hk * stride_kh + offs_n[:, None] * stride_kn
                    + offs_d[None, :] * stride_kd, mask=kv_msk, other=0.0)
        kvT_msk = (offs_n[None, :] < Lk) & (offs_d[:, None] < D)
        kT = tl.load(K + b * stride_kb + hk * stride_kh + offs_n[None, :] * stride_kn
                     + offs_d[:, None] * stride_kd, mask=kvT_msk, other=0.0)
        vT = tl.load(V + b * stride_vb + hk * stride_vh + offs_n[None, :] * stride_vn
                     + offs_d[:, None] * stride_vd, mask=kvT_msk, other=0.0)
        ok = offs_n[None, :]
        keep = _keep(b, h, oq, ok, start_m, start_n, Lq, Lk, bptr, sbk_m, sbk_n,
                     Q_SPARSE, KV_SPARSE, M0, M1, M2, M3, IS_CAUSAL, MASK_MOD, BLOCKS)
        s = tl.dot(q, kT)
        z, g = _scores(s, keep, b, h, oq, ok, Lq, Lk, sm_scale,
                       mptr, stride_mm, stride_mn,
                       S0, S1, S2, S3, G0, G1, G2, G3, MASK_KIND, SCORE_MOD, SCORE_GRAD)
        p = tl.exp2(z - lse[:, None])
        dp = tl.dot(do, vT)
        if DROPOUT:
            r = dropout_uniform(seed, (bh * Lq + oq) * Lk + ok)
            dp = dp * ((r >= dropout_p).to(tl.float32) * (1.0 / (1.0 - dropout_p)))
        ds = p * (dp - delta[:, None]) * g
        if SCORE_MOD is not None:
            ds = tl.where(keep, ds, 0.0)
        dq += tl.dot(ds.to(k.dtype), k)
    tl.store(DQ + b * stride_gb + h * stride_gh + offs_m[:, None] * stride_gm
             + offs_d[None, :] * stride_gd, dq.to(DQ.dtype.element_ty), mask=q_msk)


# (Below the kernels, so that their tile IR locations, which the exported
# stdlib-kernels/prebuilt files record, stay where they were.)
@zetile.jit
def _natural_dlse(ptrs, ok, lse_scale, CONVERT_LSE: tl.constexpr):
    # The C API gives the lse's gradient in the units of its lse (lse *
    # lse_scale is log2): the natural one is that * log2(e) / lse_scale.
    d = tl.load(ptrs, mask=ok, other=0.0)
    if CONVERT_LSE:
        d = d * (1.4426950408889634 / lse_scale)
    return d
