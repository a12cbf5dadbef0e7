"""zetile.ops.scaled_dot_product_attention and flex_attention: the attention
template (stdlib-kernels/attention.py) from Python, with torch's semantics."""
import math

import numpy as np

from .. import cdiv, next_power_of_2
from . import _arrays, _kernels, fx_to_tile
from .block_mask import BlockMask

LN2 = math.log(2.0)
_FLOATS = ("float16", "bfloat16", "float32")


def _as_4d(x, what):
    v = _arrays.as_view(x, what)
    if v.ndim == 3:
        return v.unsqueeze(1), True
    if v.ndim != 4:
        raise ValueError(f"{what} must be (batch, heads, length, head_dim) or (batch, length, "
                         f"head_dim), got shape {v.shape}")
    return v, False


def _check_qkv(fn, query, key, value, enable_gqa):
    q, q3 = _as_4d(query, f"{fn}: query")
    k, _ = _as_4d(key, f"{fn}: key")
    v, _ = _as_4d(value, f"{fn}: value")
    if not (q.dtype == k.dtype == v.dtype):
        raise TypeError(f"{fn}: query, key and value must have one dtype, got {q.dtype}, "
                        f"{k.dtype}, {v.dtype}")
    if q.dtype not in _FLOATS:
        raise TypeError(f"{fn}: supported dtypes are {', '.join(_FLOATS)}, got {q.dtype}")
    B, Hq, L, E = q.shape
    if k.shape[0] != B or v.shape[0] != B:
        raise ValueError(f"{fn}: batch sizes differ: {q.shape}, {k.shape}, {v.shape}")
    Hkv, S = k.shape[1], k.shape[2]
    if v.shape[1] != Hkv or v.shape[2] != S:
        raise ValueError(f"{fn}: key {k.shape} and value {v.shape} disagree")
    if k.shape[3] != E:
        raise ValueError(f"{fn}: query and key head dims differ ({E} and {k.shape[3]})")
    if v.shape[3] != E:
        raise NotImplementedError(f"{fn}: a value head dim ({v.shape[3]}) different from the "
                                  f"query's ({E}) is not built yet")
    if Hq != Hkv:
        if not enable_gqa:
            raise ValueError(f"{fn}: query has {Hq} heads and key/value {Hkv}; pass "
                             "enable_gqa=True for grouped-query attention")
        if Hq % Hkv:
            raise ValueError(f"{fn}: query heads ({Hq}) must be a multiple of key/value heads ({Hkv})")
    return q, k, v, q3


def _fwd_values(head):
    # 32-bit values one forward program holds: the output accumulator and
    # the query tile (BLOCK_M x head), key and value tiles (BLOCK_N x head),
    # the scores (BLOCK_M x BLOCK_N).
    return lambda c: (2 * c["BLOCK_M"] * head + 2 * c["BLOCK_N"] * head
                      + c["BLOCK_M"] * c["BLOCK_N"])


def _bwd_values(head):
    # The dk/dv kernel, the backward's largest: dk and dv accumulators and
    # the key and value tiles (BLOCK_N x head each), the query and output
    # gradient tiles (BLOCK_M x head), scores and their gradient (BLOCK_M x
    # BLOCK_N).
    return lambda c: (4 * c["BLOCK_N"] * head + 2 * c["BLOCK_M"] * head
                      + 2 * c["BLOCK_M"] * c["BLOCK_N"])


# The forward's tiles on rows with XMX but no 2D block IO and 128 registers
# of 32 bytes (dg2, zetile's SIMD8 lowering), and the subgroups they take:
# every Q, K and V element is gathered with its own address and the query
# tile stays in registers across the KV loop. E2 (acm-g10, SDPA fp16 d64,
# ISA scratch sends, docs/TEMPLATES.md "Attention on dg2"): 16x16 over 8
# subgroups none (4 + 2 DPAS a subgroup); 32x32 at 8 1186, 32x16 at 8 213,
# 16x16 at 4 244. d128 holds twice the query and key: 16x16 over 16
# subgroups, where the SIMD8 lowering splits the score dot's K over the
# subgroups that would repeat its 2 x 2 blocks (session 21, dg2_dot.c
# dot_ksplit): none (bf16 316 before; 32x32 2140, 16x16 at 8 572). fp32
# operands are twice as large again: twice the subgroups, so each holds as
# many bytes of them (d64 at 8: 872 scratch sends, 199 with the split, at
# 16 none; d128 at 16: 1779, 139 with the split, at 32 none).
DG2_FWD = {"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 8}
DG2_FWD_D128 = {"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 16}


def dg2_fwd_config(head, dtype):
    """The forward's plan on dg2's row for a head dim up to 128."""
    cfg = dict(DG2_FWD if head <= 64 else DG2_FWD_D128)
    if dtype == "float32":
        cfg["num_warps"] *= 2
    return cfg


def gathered_xmx_row(row):
    """dg2's row (gemm.config_for's rule): XMX, no 2D block IO, at most 4 KB
    of registers, zetile's SIMD8 lowering (not the shared lowering at 8
    lanes, ZETILE_DG2_LOWERING=shared*)."""
    return bool(row and row["xmx"] and not row["block_io_2d"] and row["simd8_lowering"]
                and row["grf"] * row["grf_bytes"] <= 4096)


def _config(L, S, config, q_block=None, kv_block=None, head=None, values=_fwd_values,
            forward=False, dtype=None):
    """The tiles: `config` if given, else the template's default cut to the
    lengths and, given the (padded) head dim, to the target's registers
    (_kernels.shrink_to_fit of `values(head)`, the forward's or the
    backward's: on rows without XMX BLOCK_N halves first, then BLOCK_M).
    The forward on dg2's row (gathered_xmx_row) takes DG2_FWD for head
    dims up to 64, DG2_FWD_D128 for 128, twice the subgroups for fp32
    (dg2_fwd_config); cfg["num_warps"] is a launch option, not a kernel
    parameter."""
    mod = _kernels.load("attention")
    cfg = dict(mod.DEFAULT if config is None else config)
    if config is None and forward and head is not None and head <= 128 \
            and gathered_xmx_row(_kernels.target_row()):
        cfg.update(dg2_fwd_config(head, dtype))
    if config is None:
        cfg["BLOCK_M"] = min(cfg["BLOCK_M"], max(16, next_power_of_2(L)))
        cfg["BLOCK_N"] = min(cfg["BLOCK_N"], max(16, next_power_of_2(S)))
        if head is not None:
            _kernels.shrink_to_fit(cfg, values(head), ("BLOCK_N", "BLOCK_M"))
    # A sparse block must hold whole kernel tiles.
    if q_block is not None:
        cfg["BLOCK_M"] = min(cfg["BLOCK_M"], q_block)
        cfg["BLOCK_N"] = min(cfg["BLOCK_N"], kv_block)
        if q_block % cfg["BLOCK_M"] or kv_block % cfg["BLOCK_N"]:
            raise ValueError(f"block mask sizes ({q_block}, {kv_block}) must be multiples of the "
                             f"kernel tiles ({cfg['BLOCK_M']}, {cfg['BLOCK_N']})")
    return cfg


def _launch(fn, q, k, v, *, scale, causal=False, mask=None, mask_kind=0, score_mod=None,
            mask_mod=None, buffers=(), sparse=None, write_max=False, config=None, out=None,
            lse_scale=1.0, dropout=None, split_kv=None, plan=False):
    """Runs the template; returns (out view's source, lse (B, Hq, L) fp32 in
    log2 units times lse_scale, max scores or None). dropout: None or
    (dropout_p, seed). split_kv: None picks (split_kv_for), 1 never splits,
    n > 1 splits the KV length into n shares (the decode path)."""
    B, Hq, L, E = q.shape
    Hkv, S = k.shape[1], k.shape[2]
    head = max(16, next_power_of_2(E))
    if sparse is not None:
        cfg = _config(L, S, config, sparse["Q_BLOCK"], sparse["KV_BLOCK"], head=head,
                      forward=True, dtype=q.dtype)
    else:
        if config is None and score_mod is None and mask_mod is None and mask is None:
            # What `zetile tune sdpa --shape B,H,L,S,D [--causal]` stored, if anything.
            config = _kernels.tuned_config(_kernels.load("attention").attn_fwd,
                                           [B, Hq, L, S, E, q.dtype, bool(causal)])
        cfg = _config(L, S, config, head=head, forward=True, dtype=q.dtype)
    cfg = dict(cfg)
    num_warps = cfg.pop("num_warps", None)
    kind = q.kind
    o = out if out is not None else _arrays.empty(kind, q.shape, q.dtype)
    ov = _arrays.as_view(o, f"{fn}: out")
    lse = _arrays.empty(kind, (B, Hq, L), "float32")
    mx = _arrays.empty(kind, (B, Hq, L), "float32") if write_max else None
    if len(buffers) > fx_to_tile.MAX_BUFFERS:
        raise ValueError(f"{fn}: at most {fx_to_tile.MAX_BUFFERS} captured tensors")
    bufs = [(_arrays.as_view(_contig(b), f"{fn}: captured tensor").arg if b is not None else None)
            for b in buffers]
    bufs += [None] * (fx_to_tile.MAX_BUFFERS - len(bufs))
    if mask is not None:
        margs = (mask.arg, *mask.strides)
    else:
        margs = (None, 0, 0, 0, 0)
    if sparse is not None:
        sp = (sparse["kv_num"].arg, sparse["kv_idx"].arg,
              sparse["full_num"].arg if sparse["full_num"] is not None else None,
              sparse["full_idx"].arg if sparse["full_idx"] is not None else None,
              *sparse["kv_num"].strides, *sparse["kv_idx"].strides[:3], sparse["Q_BLOCK"])
        kv_sparse = sparse["KV_BLOCK"]
        # A KV block at least as long as the keys is the one block there is:
        # walk only the tiles the keys fill. (Inductor passes blocks of 2**30
        # when flex_attention gets no block mask; the kernel stepped through
        # all 2**30 / BLOCK_N tiles of it, which ran for over 20 minutes.)
        if kv_sparse >= S:
            kv_sparse = max(cfg["BLOCK_N"], next_power_of_2(S))
    else:
        sp = (None, None, None, None, 0, 0, 0, 0, 0, 0, 1)
        kv_sparse = 1
    if sparse is not None and sparse["full_num"] is not None:
        # Full and partial tables share strides in the launch: check it.
        if (sparse["full_num"].strides != sparse["kv_num"].strides
                or sparse["full_idx"].strides[:3] != sparse["kv_idx"].strides[:3]):
            raise ValueError(f"{fn}: full and partial block tables must have the same layout")
    t = _kernels.load("attention")
    grid = (cdiv(L, cfg["BLOCK_M"]), B * Hq)
    if split_kv is not None and (int(split_kv) != split_kv or split_kv < 1):
        raise ValueError(f"{fn}: split_kv must be None or an integer >= 1, got {split_kv!r}")
    if split_kv is None:
        splits = 1 if (write_max or dropout) else split_kv_for(L, S, B * Hq, cfg)
    else:
        splits = int(split_kv)
        if splits > 1 and (write_max or dropout):
            raise ValueError(f"{fn}: split_kv > 1 does not return max scores or take dropout")
    ws = (None, None, None)
    if splits > 1:
        ws = tuple(_arrays.empty(kind, shape, "float32") for shape in
                   ((splits, B * Hq, L, head), (splits, B * Hq, L), (splits, B * Hq, L)))
        grid = grid + (splits,)
    launch = _kernels.Launch(
        t.attn_fwd, grid,
        (q.arg, k.arg, v.arg, ov.arg, lse, mx, *ws, *q.strides, *k.strides, *v.strides, *ov.strides,
         Hq, L, S, E, Hq // Hkv, float(scale), float(lse_scale),
         float(dropout[0]) if dropout else None, int(dropout[1]) if dropout else None,
         *margs, *sp, *bufs),
        dict(HEAD_DIM=head, MASK_KIND=mask_kind, IS_CAUSAL=bool(causal), SCORE_MOD=score_mod,
             MASK_MOD=mask_mod, SPARSE=sparse is not None,
             HAS_FULL=sparse is not None and sparse["full_num"] is not None,
             KV_SPARSE=kv_sparse, WRITE_MAX=write_max, DROPOUT=dropout is not None,
             SPLIT_KV=splits, **cfg),
        (o, lse, mx), num_warps)
    if splits > 1:
        combine = _kernels.Launch(
            t.attn_split_combine, grid[:2],
            (*ws, ov.arg, lse, *ov.strides, Hq, L, E, float(lse_scale), splits),
            dict(HEAD_DIM=head, BLOCK_M=cfg["BLOCK_M"]), (o, lse, mx))
        launch = SplitKVLaunch(launch, combine)
    return launch if plan else launch.run()


# The decode path: at most this many KV shares, each at least this many KV tiles.
MAX_KV_SPLITS = 16
MIN_SHARE_TILES = 4


def split_kv_for(L, S, bh, cfg, programs=None):
    """How many shares the KV length of an attention launch is cut into (1:
    none). Only short queries (one query tile: the LLM decode case, query
    lengths 1-16 and up to BLOCK_M) split, when the (query tile, batch*head)
    programs are fewer than the device runs at once (`programs`, default 2
    per compute unit) and the keys give every share MIN_SHARE_TILES tiles."""
    if L > cfg["BLOCK_M"]:
        return 1
    if programs is None:
        from .. import runtime
        cu = runtime.info(runtime.get_device()).get("compute_units", 0) or 1
        programs = 2 * cu
    if bh >= programs:
        return 1
    return max(1, min(MAX_KV_SPLITS, cdiv(programs, bh), cdiv(S, cfg["BLOCK_N"]) // MIN_SHARE_TILES))


class SplitKVLaunch:
    """A split-KV attention planned: the shares' launch, then the combine.
    tile_ir / compile build the first (the attention kernel)."""

    def __init__(self, partial, combine):
        self.launches, self.result = (partial, combine), combine.result
        self.kernel, self.grid = partial.kernel, partial.grid
        self.args, self.kwargs = partial.args, partial.kwargs

    def run(self):
        for launch in self.launches:
            launch.run()
        return self.result

    def tile_ir(self):
        return self.launches[0].tile_ir()

    def compile(self, target, num_warps=0, cached=True):
        return self.launches[0].compile(target, num_warps, cached)


def _contig(x):
    if type(x).__module__.startswith("torch"):
        return x.contiguous()
    if isinstance(x, np.ndarray):
        return np.ascontiguousarray(x)
    return x


def _reshape_like(o, q3):
    if not q3:
        return o
    return o.reshape(o.shape[0], o.shape[2], o.shape[3])


def _scale_lse(lse, factor, kind):
    # lse stays float32, as torch returns it.
    if kind == "torch":
        return lse * factor
    if kind == "zetile":
        from .. import runtime
        return runtime.from_numpy((lse.numpy() * np.float32(factor)).astype(np.float32))
    return (lse * np.float32(factor)).astype(np.float32)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None, enable_gqa=False, *, return_lse=False, config=None,
                                 dropout_seed=None, plan=False):
    """torch.nn.functional.scaled_dot_product_attention's forward on zetile.

    query (B, Hq, L, E), key/value (B, Hkv, S, E) (or without the head
    dimension); attn_mask boolean (True = take part) or additive float,
    broadcastable to (B, Hq, L, S); is_causal is torch's top-left causal mask;
    enable_gqa maps query head h to key/value head h // (Hq // Hkv).
    With return_lse=True returns (out, lse), lse (B, Hq, L) float32 in natural
    log (torch's SDPA ops' convention). A row whose scores are all masked
    gives output 0 and lse -inf (torch's CPU op writes lse 0 there).
    dropout_p > 0 drops softmax weights with that probability and scales the
    kept ones by 1 / (1 - dropout_p), as torch does (always, like
    torch.nn.functional's: there is no training flag); the mask is a philox
    draw (tl.rand) keyed by dropout_seed (an int; None draws one from torch's
    default generator for torch tensors, else numpy's), so one seed gives
    the same output every time. It follows torch's distribution, not its
    bits. With inputs that require grad the backward regenerates the same
    keep flags from the seed (attention_bwd.py), so dq, dk, dv are those of
    the dropped output.
    plan=True returns the planned launch (_kernels.Launch).
    Torch tensors that require grad (grad mode on) go through
    torch.ops.zetile.sdpa, whose backward is zetile's (attention_bwd.py).
    """
    if not plan and _needs_grad(query, key, value):
        # Through the torch op, whose autograd formula runs zetile's backward;
        # with dropout the seed is drawn here, so the forward and the backward
        # (which regenerates the keep flags from it) see the same one.
        import torch
        seed = None
        if 0.0 < float(dropout_p) < 1.0:
            seed = _dropout_seed(dropout_seed, "torch")
        out, lse = torch.ops.zetile.sdpa(query, key, value, attn_mask, bool(is_causal), scale,
                                         bool(enable_gqa), float(dropout_p), seed)
        return (out, lse) if return_lse else out
    return _sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa,
                 return_lse, config, plan, dropout_seed)


def _needs_grad(*xs):
    """Torch tensors autograd tracks (grad mode on, one requires grad)."""
    ts = [x for x in xs if type(x).__module__.startswith("torch") and hasattr(x, "requires_grad")]
    if not ts:
        return False
    import torch
    return torch.is_grad_enabled() and any(t.requires_grad for t in ts)


def _sdpa_mask(fn, attn_mask, is_causal, shape):
    """SDPA's attn_mask as torch takes it: (a view broadcast to shape (B, Hq,
    L, S), kind) with kind 0 none, 1 additive float, 2 boolean; refused with
    is_causal, as torch refuses it."""
    if is_causal and attn_mask is not None:
        raise ValueError(f"{fn}: pass either attn_mask or is_causal, not both (as torch)")
    if attn_mask is None:
        return None, 0
    m = _arrays.as_view(attn_mask, f"{fn}: attn_mask")
    try:
        mask = m.expand(shape)
    except ValueError:
        raise ValueError(f"{fn}: attn_mask of shape {m.shape} does not broadcast to "
                         f"{tuple(shape)}") from None
    if m.dtype == "bool":
        return mask, 2
    if _arrays.is_float(m.dtype):
        return mask, 1
    raise TypeError(f"{fn}: attn_mask must be bool or floating, got {m.dtype}")


def _dropout_seed(seed, kind):
    """A philox seed (int32 range): the caller's, else one drawn from torch's
    default generator (torch.manual_seed fixes it) or numpy's."""
    if seed is not None:
        if int(seed) != seed:
            raise TypeError(f"scaled_dot_product_attention: dropout_seed must be an int, got {seed!r}")
        return int(seed) & 0x7FFFFFFF
    if kind == "torch":
        import torch
        return int(torch.randint(0, 2**31 - 1, (1,)).item())
    return int(np.random.randint(0, 2**31 - 1))


def _sdpa(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa, return_lse,
          config, plan, dropout_seed=None):
    """scaled_dot_product_attention's forward without autograd routing (what
    torch.ops.zetile.sdpa runs)."""
    fn = "scaled_dot_product_attention"
    dropout_p = float(dropout_p)
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"zetile.ops.{fn}: dropout_p must be in [0, 1], got {dropout_p}")
    q, k, v, q3 = _check_qkv(fn, query, key, value, enable_gqa)
    B, Hq, L, E = q.shape
    S = k.shape[2]
    mask, kind = _sdpa_mask(fn, attn_mask, is_causal, (B, Hq, L, S))
    sc = 1.0 / math.sqrt(E) if scale is None else float(scale)
    dropout = None
    if 0.0 < dropout_p < 1.0:
        dropout = (dropout_p, _dropout_seed(dropout_seed, q.kind))
    got = _launch(fn, q, k, v, scale=sc, causal=is_causal, mask=mask, mask_kind=kind,
                  config=config, lse_scale=LN2, dropout=dropout, plan=plan)
    if plan:
        return got
    o, lse, _ = got
    if dropout_p == 1.0:
        o = _zeros_like(o, q.kind)   # torch: every weight dropped (no 1 / 0 rescale)
    o = _reshape_like(o, q3)
    if return_lse:
        return o, lse          # natural log: the kernel scaled it by ln 2
    return o


def _zeros_like(o, kind):
    if kind == "torch":
        return o.zero_()
    if kind == "zetile":
        from .. import runtime
        return runtime.from_numpy(np.zeros_like(o.numpy()))
    o[...] = 0
    return o


def _sparse_tables(bm, B, Hq, L, S, fn):
    """The BlockMask's KV tables as broadcast views over (B, Hq, Qblocks)."""
    qbs, kvbs = bm.BLOCK_SIZE if isinstance(bm.BLOCK_SIZE, tuple) else (bm.BLOCK_SIZE,) * 2
    qbs, kvbs = int(qbs), int(kvbs)
    qb = cdiv(L, qbs)

    def table(t, nd):
        if t is None:
            return None
        v = _arrays.as_view(_contig(_to_int32(t)), f"{fn}: block_mask")
        if v.ndim != nd:
            raise ValueError(f"{fn}: block_mask tables have shape {v.shape}")
        if v.shape[2] < qb:
            raise ValueError(f"{fn}: block_mask covers {v.shape[2]} query blocks of {qbs}, the "
                             f"query needs {qb}")
        try:
            return v.expand((B, Hq) + v.shape[2:])
        except ValueError:
            raise ValueError(f"{fn}: block_mask of batch/heads {v.shape[:2]} does not broadcast "
                             f"to {(B, Hq)}") from None
    kv_num = table(bm.kv_num_blocks, 3)
    kv_idx = table(bm.kv_indices, 4)
    full_num = table(getattr(bm, "full_kv_num_blocks", None), 3)
    full_idx = table(getattr(bm, "full_kv_indices", None), 4)
    return {"kv_num": kv_num, "kv_idx": kv_idx, "full_num": full_num, "full_idx": full_idx,
            "Q_BLOCK": qbs, "KV_BLOCK": kvbs}


def _to_int32(t):
    if type(t).__module__.startswith("torch"):
        import torch
        return t.to(torch.int32)
    if isinstance(t, np.ndarray):
        return t.astype(np.int32, copy=False)
    return t


def flex_attention(query, key, value, score_mod=None, block_mask=None, scale=None,
                   enable_gqa=False, return_lse=False, *, config=None, split_kv=None):
    """torch.nn.attention.flex_attention.flex_attention's forward on zetile.

    score_mod(score, b, h, q_idx, kv_idx) and block_mask (torch's BlockMask or
    zetile.ops.create_block_mask's) with torch's semantics: scale applies
    before score_mod; mask_mod applies on partial blocks only, full blocks
    skip it, unlisted blocks are masked; GQA maps query head h to kv head
    h // (Hq // Hkv) and score_mod sees h. Mods are Python functions (traced
    with make_fx and translated to tile IR; captured tensors are read in
    place) or @zetile.jit functions. Fully masked rows give 0 and lse -inf.
    return_lse=True returns (out, lse) with lse in natural log, as torch's
    flex_attention returns it (the kernel's log2 values times ln 2;
    `flex_attention_fwd` gives the HOP's log2 values).
    Decode (short queries over a long KV, few batch*heads): the KV length is
    split into shares computed by separate programs and merged by a second
    kernel (FlashDecoding); split_kv=None picks by shape (split_kv_for), 1
    never splits, n > 1 forces n shares.
    Torch tensors that require grad go through torch.ops.zetile.flex_attention,
    whose backward is zetile's: score_mod is differentiated with respect to
    the score (attention_bwd.score_mod_grad; a @zetile.jit score_mod is
    refused there).
    """
    if _needs_grad(query, key, value):
        from .attention_bwd import flex_autograd
        out, lse = flex_autograd(query, key, value, score_mod, block_mask, scale, enable_gqa)
        return (out, lse * LN2) if return_lse else out
    out, lse, _ = flex_attention_fwd(query, key, value, score_mod, block_mask, scale,
                                     enable_gqa, config=config, split_kv=split_kv)
    if return_lse:
        return out, _scale_lse(lse, LN2, _arrays.as_view(query).kind)
    return out


def flex_attention_fwd(query, key, value, score_mod=None, block_mask=None, scale=None,
                       enable_gqa=False, *, score_buffers=(), mask_buffers=(), write_max=False,
                       config=None, split_kv=None, plan=False):
    """What torch's flex_attention HOP returns: (out, lse, max_scores or
    None), lse and max_scores (B, Hq, L) float32 in log2 units.
    score_buffers / mask_buffers supply the tensors of mods translated from
    graphs with buffer placeholders (fx_to_tile.translate)."""
    fn = "flex_attention"
    q, k, v, q3 = _check_qkv(fn, query, key, value, enable_gqa)
    B, Hq, L, E = q.shape
    S = k.shape[2]
    sc = 1.0 / math.sqrt(E) if scale is None else float(scale)
    smod = fx_to_tile.from_mod(score_mod, "score") if score_mod is not None else None
    mmod, sparse = None, None
    if block_mask is not None:
        mm = getattr(block_mask, "mask_mod", None)
        if mm is not None and not _is_noop(mm):
            mmod = fx_to_tile.from_mod(mm, "mask")
        sparse = _sparse_tables(block_mask, B, Hq, L, S, fn)
    buffers = []
    if smod is not None:
        buffers += _fill(smod.buffers, score_buffers, fn)
    score_fn = smod.fn if smod is not None else None
    mask_fn = None
    if mmod is not None:
        mbufs = _fill(mmod.buffers, mask_buffers, fn)
        mask_fn = _shift_slots(mmod, len(buffers)) if mbufs else mmod.fn
        buffers += mbufs
    got = _launch(fn, q, k, v, scale=sc, score_mod=score_fn, mask_mod=mask_fn,
                  buffers=buffers, sparse=sparse, write_max=write_max, config=config,
                  split_kv=split_kv, plan=plan)
    if plan:
        return got
    o, lse, mx = got
    return _reshape_like(o, q3), lse, mx


def _fill(slots, given, fn):
    """Captured tensors in slot order: the traced ones, or the caller's for
    placeholder slots (None)."""
    given = list(given)
    out = []
    for t in slots:
        if t is None:
            if not given:
                raise ValueError(f"{fn}: a translated mod needs more captured tensors than given")
            t = given.pop(0)
        out.append(t)
    return out


_shifted = {}


def _shift_slots(mod, first):
    """The mask mod reads its captured tensors after the score mod's: a
    wrapper passes B{first}.. as its B0.."""
    if first == 0:
        return mod.fn
    key = (mod.fn, first)
    fn = _shifted.get(key)
    if fn is None:
        names = [f"B{i}" for i in range(fx_to_tile.MAX_BUFFERS)]
        moved = names[first:] + ["None"] * first
        body = [f"    return _zt_user(b, h, q_idx, kv_idx, {', '.join(moved)})"]
        fn, _ = fx_to_tile._materialize("mask_mod_shifted", list(fx_to_tile.MASK_ARGS), body,
                                        {"_zt_user": mod.fn})
        _shifted[key] = fn
    return fn


def _is_noop(mm):
    return getattr(mm, "__name__", "") in ("noop_mask", "_no_mask")
