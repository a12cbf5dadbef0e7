"""Attention backward from Python: dq, dk, dv of SDPA and FlexAttention with
the backward template (stdlib-kernels/attention_bwd.py).

    scaled_dot_product_attention_backward(grad_out, query, key, value, out, lse, ...)
    flex_attention_backward(grad_out, query, key, value, out, lse, score_mod, block_mask, ...)
    score_mod_grad(score_mod)   d score_mod / d score as a translated mod

The backward needs the forward's output and log-sum-exp (what
scaled_dot_product_attention(..., return_lse=True) and flex_attention(...,
return_lse=True) return); the torch custom ops (torch_ops.py) wire this to
autograd, so loss.backward() works through zetile.ops.
"""
import json
import math
import re

import numpy as np

from .. import cdiv, next_power_of_2
from . import _arrays, _kernels, fx_to_tile
from .attention import (_as_4d, _bwd_values, _check_qkv, _config, _contig, _is_noop, _sdpa_mask,
                        _to_int32, gathered_xmx_row)

LN2 = math.log(2.0)

# The backward's tiles on dg2's row (attention.gathered_xmx_row), for dk/dv
# and dq (session 21): 16x16 over 32 subgroups, where the SIMD8 lowering
# splits the two 16x16 score dots' K (head dim) over the subgroups that would
# repeat their 2 x 2 blocks (dg2_dot.c, dot_ksplit). E2 (acm-g10, fp16 d64
# causal, ISA scratch sends): dk/dv 2233 -> 154, dq 1162 -> 0 against the
# default 32x32 (16x16 over 8: 706 / 330 before the split, 588 / 343 with it;
# over 16: 205 / 47); bf16 d128 dk/dv 482, dq 302.
DG2_BWD = {"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 32}


def _wrap_4d(x, what):
    return _as_4d(x, what)[0]


def _lse_log2(lse, natural, kind):
    """The forward's lse as the kernel reads it: contiguous fp32, log2 units."""
    f = (1.0 / LN2) if natural else 1.0
    if kind == "torch":
        import torch
        return (lse.detach().to(torch.float32) * f).contiguous()
    a = lse.numpy() if hasattr(lse, "numpy") and not isinstance(lse, np.ndarray) else np.asarray(lse)
    a = np.ascontiguousarray(a.astype(np.float32) * np.float32(f))
    if kind == "zetile":
        from .. import runtime
        return runtime.from_numpy(a)
    return a


def _lse_grad(grad_lse, natural, kind, shape):
    """The lse's gradient as a natural-log one (fp32, contiguous), or None.
    d lse / d z = p, so it enters as delta - grad_lse (log2 units: / ln 2)."""
    if grad_lse is None:
        return None
    return _lse_log2(grad_lse, not natural, kind)


def _dense_blocks(bm, B, Hq, L, S, fn):
    """torch's BlockMask (or zetile's) as a dense int8 table over (B', H',
    query blocks, KV blocks): 0 masked, 1 partial, 2 full; B' and H' may be 1
    (the launch broadcasts them with stride 0). Built on the host: the tables
    are small (blocks, not positions)."""
    qbs, kvbs = bm.BLOCK_SIZE if isinstance(bm.BLOCK_SIZE, tuple) else (bm.BLOCK_SIZE,) * 2
    qbs, kvbs = int(qbs), int(kvbs)
    qb, kvb = cdiv(L, qbs), cdiv(S, kvbs)

    def host(t):
        t = _to_int32(t)
        if type(t).__module__.startswith("torch"):
            return t.detach().cpu().numpy()
        return np.asarray(t)
    num, idx = host(bm.kv_num_blocks), host(bm.kv_indices)
    if num.ndim != 3 or idx.ndim != 4:
        raise ValueError(f"{fn}: block_mask tables have shapes {num.shape}, {idx.shape}")
    if num.shape[2] < qb:
        raise ValueError(f"{fn}: block_mask covers {num.shape[2]} query blocks of {qbs}, the "
                         f"query needs {qb}")
    state = np.zeros(num.shape[:2] + (num.shape[2], kvb + 1), np.int8)
    tables = [(num, idx, 1)]
    fnum = getattr(bm, "full_kv_num_blocks", None)
    if fnum is not None:
        tables.append((host(fnum), host(bm.full_kv_indices), 2))
    for n, i, val in tables:
        listed = np.arange(i.shape[-1])[None, None, None, :] < n[..., None]
        # Unlisted columns (and indices past the keys) land in a spare column.
        col = np.where(listed & (i >= 0) & (i < kvb), i, kvb)
        np.put_along_axis(state, col.astype(np.int64), np.int8(val), axis=-1)
        state[..., kvb] = 0
    state = np.ascontiguousarray(state[:, :, :qb, :kvb])
    if state.shape[0] not in (1, B) or state.shape[1] not in (1, Hq):
        raise ValueError(f"{fn}: block_mask of batch/heads {state.shape[:2]} does not broadcast "
                         f"to {(B, Hq)}")
    return state, qbs, kvbs


def _not_cpu():
    """The dk/dv kernel's row statistics in the form Xe builds (STATS_2D)
    unless the launch runs on the CPU target, where the 1-D form is faster.
    Planned launches (plan=True, for Xe builds) take the Xe form."""
    from .. import runtime
    return runtime.get_device().name != "cpu"


def _walk_lists(live, kind):
    """Per row of a (B, H, rows, cols) boolean table: how many columns are
    live and which (first, in increasing order), as the kernel's list
    arguments (num, idx, their strides)."""
    num = np.ascontiguousarray(live.sum(-1).astype(np.int32))
    idx = np.ascontiguousarray(np.argsort(~live, axis=-1, kind="stable").astype(np.int32))
    return (_as_kind(num, kind), _as_kind(idx, kind), num.shape[1] * num.shape[2], num.shape[2],
            idx.shape[1] * idx.shape[2] * idx.shape[3], idx.shape[2] * idx.shape[3], idx.shape[3])


def _as_kind(a, kind):
    if kind == "torch":
        import torch
        return torch.from_numpy(a)
    if kind == "zetile":
        from .. import runtime
        return runtime.from_numpy(a)
    return a


def _bwd(fn, do, q, k, v, o, lse2, *, scale, causal=False, mask=None, mask_kind=0,
         score_mod=None, score_grad=None, mask_mod=None, sbufs=(), gbufs=(), mbufs=(),
         blocks=None, grad_lse=None, config=None, dropout=None, plan=False):
    """Launches delta, dk/dv and dq; returns (dq, dk, dv) as q's kind, or with
    plan=True the three planned launches (_kernels.Launch) without running.
    dropout: None or the forward's (dropout_p, seed)."""
    B, Hq, L, E = q.shape
    Hkv, S = k.shape[1], k.shape[2]
    head = max(16, next_power_of_2(E))
    kind = q.kind
    mod = _kernels.load("attention_bwd")
    num_warps = None
    if config is None and head <= 128 and gathered_xmx_row(_kernels.target_row()):
        # dg2's row: DG2_BWD's tiles and subgroups for dk/dv and dq.
        config = {k: DG2_BWD[k] for k in ("BLOCK_M", "BLOCK_N")}
        num_warps = DG2_BWD["num_warps"]
    if blocks is not None:
        state, qbs, kvbs = blocks
        # A block at least as long as the sequence is the one block there
        # is: shrink it to the sequence's power of two (the tables say the
        # same), so the walk covers only the tiles the sequence fills.
        qbs = max(16, next_power_of_2(L)) if qbs >= L else qbs
        kvbs = max(16, next_power_of_2(S)) if kvbs >= S else kvbs
        cfg = _config(L, S, config, qbs, kvbs, head=head, values=_bwd_values)
    else:
        cfg = _config(L, S, config, head=head, values=_bwd_values)
    bm_, bn_ = cfg["BLOCK_M"], cfg["BLOCK_N"]
    dq = _arrays.empty(kind, q.shape, q.dtype)
    dk = _arrays.empty(kind, k.shape, k.dtype)
    dv = _arrays.empty(kind, v.shape, v.dtype)
    delta = _arrays.empty(kind, (B, Hq, L), "float32")
    dqv, dkv, dvv = (_arrays.as_view(x) for x in (dq, dk, dv))
    lv = _arrays.as_view(lse2, f"{fn}: lse")
    if lv.shape != (B, Hq, L):
        raise ValueError(f"{fn}: lse has shape {lv.shape}, expected {(B, Hq, L)}")
    gl = _arrays.as_view(grad_lse).arg if grad_lse is not None else None
    launches = [_kernels.Launch(
        mod.attn_bwd_delta, (cdiv(L, bm_), B * Hq),
        (o.arg, do.arg, delta, gl, *o.strides, *do.strides, Hq, L, E),
        dict(HEAD_DIM=head, BLOCK_M=bm_, HAS_DLSE=gl is not None), None)]

    def slots(bufs):
        got = [(_arrays.as_view(_contig(b), f"{fn}: captured tensor").arg if b is not None else None)
               for b in bufs]
        return got + [None] * (fx_to_tile.MAX_BUFFERS - len(got))
    bufs = slots(sbufs) + slots(gbufs) + slots(mbufs)
    margs = (mask.arg, *mask.strides) if mask is not None else (None, 0, 0, 0, 0)
    group = Hq // Hkv if Hkv else 1
    if blocks is not None:
        sv = _arrays.as_view(_as_kind(state, kind)).expand((B, Hq) + state.shape[2:])
        bargs = (sv.arg, *sv.strides, qbs, kvbs)
        live = np.broadcast_to(state != 0, (B, Hq) + state.shape[2:])
        lists_q = _walk_lists(live, kind)                       # dq: KV blocks per query block
        lists_k = _walk_lists(live.reshape((B, Hkv, group) + live.shape[2:]).any(2)
                              .transpose(0, 1, 3, 2), kind)     # dk/dv: query blocks per KV block
        subs_q, subs_k = kvbs // cfg["BLOCK_N"], qbs // cfg["BLOCK_M"]
    else:
        bargs = (None, 0, 0, 0, 0, 1, 1)
        lists_q = lists_k = (None, None, 0, 0, 0, 0, 0)
        subs_q = subs_k = 1
    consts = dict(HEAD_DIM=head, MASK_KIND=mask_kind, IS_CAUSAL=bool(causal), SCORE_MOD=score_mod,
                  SCORE_GRAD=score_grad, MASK_MOD=mask_mod, BLOCKS=blocks is not None, **cfg)
    if dropout is not None:
        consts["DROPOUT"] = True
    drop = (float(dropout[0]), int(dropout[1])) if dropout is not None else (None, None)
    common = (group, float(scale), *drop, *margs, *bargs)
    launches.append(_kernels.Launch(
        mod.attn_bwd_dkdv, (cdiv(S, bn_), B * Hkv),
        (q.arg, k.arg, v.arg, do.arg, dk, dv, lse2, delta,
         *q.strides, *k.strides, *v.strides, *do.strides, *dkv.strides, *dvv.strides,
         Hkv, L, S, E, *common, *lists_k, *bufs),
        dict(consts, SUBS=subs_k, STATS_2D=plan or _not_cpu()), None, num_warps))
    launches.append(_kernels.Launch(
        mod.attn_bwd_dq, (cdiv(L, bm_), B * Hq),
        (q.arg, k.arg, v.arg, do.arg, dq, lse2, delta,
         *q.strides, *k.strides, *v.strides, *do.strides, *dqv.strides,
         Hq, L, S, E, *common, *lists_q, *bufs), dict(consts, SUBS=subs_q), None, num_warps))
    if plan:
        return launches
    for launch in launches:       # Launch.run skips empty grids
        launch.run()
    return dq, dk, dv


def _grads_like(grads, q3):
    if not q3:
        return grads
    return tuple(g.reshape(g.shape[0], g.shape[2], g.shape[3]) for g in grads)


def _check_like(fn, what, x, shape):
    xv = _wrap_4d(x, f"{fn}: {what}")
    if xv.shape != shape:
        raise ValueError(f"{fn}: {what} has shape {xv.shape}, expected {shape} (the query's)")
    return xv


def scaled_dot_product_attention_backward(grad_out, query, key, value, out, lse, attn_mask=None,
                                          is_causal=False, scale=None, enable_gqa=False, *,
                                          grad_lse=None, dropout_p=0.0, dropout_seed=None,
                                          config=None, plan=False):
    """(dq, dk, dv) of scaled_dot_product_attention for the gradient
    `grad_out` of its output. `out` and `lse` are what the forward returned
    with return_lse=True (lse natural log, (B, Hq, L) fp32); the other
    arguments are the forward's. grad_lse, if given, is the gradient of that
    lse. With GQA, dk/dv sum the contributions of each key/value head's query
    heads. Rows whose scores are all masked give zero gradients. plan=True
    returns the three planned launches (delta, dk/dv, dq) without running.
    0 < dropout_p < 1 takes the forward's dropout_seed (the same int the
    forward was given): the keep flags are regenerated from it, not stored;
    with dropout_p = 1 every weight was dropped and only grad_lse reaches
    q, k, v."""
    fn = "scaled_dot_product_attention_backward"
    dropout_p = float(dropout_p)
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"zetile.ops.{fn}: dropout_p must be in [0, 1], got {dropout_p}")
    dropout = None
    if 0.0 < dropout_p < 1.0:
        if dropout_seed is None or int(dropout_seed) != dropout_seed:
            raise ValueError(f"zetile.ops.{fn}: dropout_p={dropout_p} needs the forward's "
                             f"dropout_seed (an int), got {dropout_seed!r}")
        dropout = (dropout_p, int(dropout_seed) & 0x7FFFFFFF)
    q, k, v, q3 = _check_qkv(fn, query, key, value, enable_gqa)
    B, Hq, L, E = q.shape
    S = k.shape[2]
    do = _check_like(fn, "grad_out", grad_out, q.shape)
    if dropout_p == 1.0:
        # Every weight dropped: the output (0) did not depend on q, k, v, so
        # only an lse gradient (the lse is the undropped one) reaches them.
        from .attention import _zeros_like
        do = _wrap_4d(_zeros_like(_arrays.empty(q.kind, q.shape, q.dtype), q.kind), fn)
    o = _check_like(fn, "out", out, q.shape)
    mask, kind = _sdpa_mask(fn, attn_mask, is_causal, (B, Hq, L, S))
    sc = 1.0 / math.sqrt(E) if scale is None else float(scale)
    lse2 = _lse_log2(lse, True, q.kind)
    gl = _lse_grad(grad_lse, True, q.kind, (B, Hq, L))
    got = _bwd(fn, do, q, k, v, o, lse2, scale=sc, causal=is_causal, mask=mask, mask_kind=kind,
               grad_lse=gl, config=config, dropout=dropout, plan=plan)
    return got if plan else _grads_like(got, q3)


# ------------------------------------------------------ score_mod derivative
_grad_cache = {}


def _trace_grad(mod):
    """d mod / d score as an FX graph of aten ops (torch.func.vjp traced by
    make_fx, with torch's core decompositions so backward ops such as
    tanh_backward become pointwise arithmetic the translator knows)."""
    import torch
    from torch._decomp import core_aten_decompositions
    from torch.fx.experimental.proxy_tensor import make_fx

    def grad(score, b, h, q_idx, kv_idx):
        _, vjp = torch.func.vjp(lambda s: mod(s, b, h, q_idx, kv_idx), score)
        return vjp(torch.ones_like(score))[0]
    idx = tuple(torch.zeros((1,), dtype=torch.int32) for _ in range(4))
    try:
        # functionalize: some backward decompositions write in place (copy_).
        gm = make_fx(torch.func.functionalize(grad, remove="mutations_and_views"),
                     decomposition_table=core_aten_decompositions())(
            torch.zeros((1,), dtype=torch.float32), *idx)
    except Exception as e:  # noqa: BLE001 - reported as the mod's error
        raise fx_to_tile.FxTranslationError(
            f"flex_attention backward: cannot differentiate score_mod "
            f"{getattr(mod, '__name__', mod)!r} with respect to the score: "
            f"{type(e).__name__}: {e}") from e
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm


def score_mod_grad(score_mod, score=None):
    """d score_mod / d score as a TranslatedMod with score_mod's signature.
    score_mod is a Python function (as torch's flex_attention takes);
    @zetile.jit mods have no derivative here and are refused. When `score`
    (score_mod's TranslatedMod) is given, the derivative reads its captured
    tensors through the same slots (so one set of buffers serves both)."""
    import zetile
    if isinstance(score_mod, (zetile.JITFunction, fx_to_tile.TranslatedMod)):
        raise NotImplementedError("flex_attention backward: a @zetile.jit score_mod has no "
                                  "derivative; pass the Python function (as torch's "
                                  "flex_attention takes) to differentiate it")
    closure = tuple(id(c.cell_contents) for c in (getattr(score_mod, "__closure__", None) or ()))
    key = (score_mod, closure)
    tm = _grad_cache.get(key)
    if tm is None:
        tm = fx_to_tile.translate(_trace_grad(score_mod), "score")
        _grad_cache[key] = tm
    if score is None or not tm.buffers:
        return tm
    return _share_slots(tm, score)


def _same(a, b):
    if a is b:
        return True
    try:
        return (a.data_ptr() == b.data_ptr() and tuple(a.shape) == tuple(b.shape)
                and a.dtype == b.dtype)
    except AttributeError:
        return False


def _share_slots(grad, score):
    """The derivative's body rewritten to read the score mod's slots."""
    moves = {}
    for i, t in enumerate(grad.buffers):
        j = next((j for j, s in enumerate(score.buffers) if s is not None and _same(t, s)), None)
        if j is None:
            raise NotImplementedError("flex_attention backward: the score_mod's derivative reads "
                                      "a captured tensor its value does not")
        moves[i] = j
    body = tuple(re.sub(r"\bB(\d)\b", lambda m: f"B{moves[int(m.group(1))]}", ln)
                 for ln in grad.body)
    return fx_to_tile.from_body("score", body, len(score.buffers))


def mods_with_grad(score, mask, score_grad):
    """fx_to_tile.mods_string plus the score_mod's derivative ("score_grad",
    reading the score mod's buffer slots): what the flex torch op's backward
    needs. The forward reads the same string and ignores the extra key."""
    d = json.loads(fx_to_tile.mods_string(score, mask))
    d["score_grad"] = list(score_grad.body) if score_grad is not None else None
    return json.dumps(d)


def grad_from_string(mods, n_score_buffers):
    """The derivative a mods string carries: None (no score mod), a
    TranslatedMod, or False (a score mod without a derivative)."""
    d = json.loads(mods)
    if not d.get("score"):
        return None
    body = d.get("score_grad")
    if not body:
        return False
    return fx_to_tile.from_body("score", body, n_score_buffers)


def flex_attention_backward(grad_out, query, key, value, out, lse, score_mod=None,
                            block_mask=None, scale=None, enable_gqa=False, *, lse_log2=False,
                            grad_lse=None, score_grad=None, score_buffers=(), mask_buffers=(),
                            config=None):
    """(dq, dk, dv) of flex_attention for the gradient `grad_out` of its
    output; `out` and `lse` are the forward's (lse natural log as
    flex_attention(..., return_lse=True) returns it, or log2 units with
    lse_log2=True, as flex_attention_fwd and the HOP return it).

    score_mod is differentiated with respect to the score (torch.func.vjp
    traced to aten ops, then translated like the mod itself); what cannot be
    traced or translated raises FxTranslationError naming the op. mask_mod
    and the block mask select the positions, as in the forward. score_grad
    overrides the derivative (a TranslatedMod reading the score mod's
    slots). Gradients of captured tensors are not computed."""
    fn = "flex_attention_backward"
    q, k, v, q3 = _check_qkv(fn, query, key, value, enable_gqa)
    B, Hq, L, E = q.shape
    S = k.shape[2]
    do = _check_like(fn, "grad_out", grad_out, q.shape)
    o = _check_like(fn, "out", out, q.shape)
    sc = 1.0 / math.sqrt(E) if scale is None else float(scale)
    smod = fx_to_tile.from_mod(score_mod, "score") if score_mod is not None else None
    sgrad = None
    if smod is not None:
        sgrad = score_grad if score_grad is not None else score_mod_grad(score_mod, smod)
    mmod, blocks = None, None
    if block_mask is not None:
        mm = getattr(block_mask, "mask_mod", None)
        if mm is not None and not _is_noop(mm):
            mmod = fx_to_tile.from_mod(mm, "mask")
        blocks = _dense_blocks(block_mask, B, Hq, L, S, fn)
    from .attention import _fill
    sbufs = _fill(smod.buffers, score_buffers, fn) if smod is not None else []
    mbufs = _fill(mmod.buffers, mask_buffers, fn) if mmod is not None else []
    lse2 = _lse_log2(lse, not lse_log2, q.kind)
    gl = _lse_grad(grad_lse, not lse_log2, q.kind, (B, Hq, L))
    got = _bwd(fn, do, q, k, v, o, lse2, scale=sc, score_mod=smod.fn if smod else None,
               score_grad=sgrad.fn if sgrad is not None else None,
               mask_mod=mmod.fn if mmod else None, sbufs=sbufs, gbufs=sbufs, mbufs=mbufs,
               blocks=blocks, grad_lse=gl, config=config)
    return _grads_like(got, q3)


def flex_autograd(query, key, value, score_mod, block_mask, scale, enable_gqa):
    """flex_attention through torch.ops.zetile.flex_attention (autograd
    formula: zetile's backward). Returns (out, lse in log2 units)."""
    import torch
    fn = "flex_attention"
    smod = fx_to_tile.from_mod(score_mod, "score") if score_mod is not None else None
    sgrad = score_mod_grad(score_mod, smod) if smod is not None else None
    if smod is not None and smod.body is None:
        raise NotImplementedError(f"zetile.ops.{fn}: a @zetile.jit score_mod has no derivative; "
                                  "pass the Python function to differentiate it")
    mmod = None
    L, S = query.shape[-2], key.shape[-2]
    if block_mask is not None:
        mm = getattr(block_mask, "mask_mod", None)
        if mm is not None and not _is_noop(mm):
            mmod = fx_to_tile.from_mod(mm, "mask")
            if mmod.body is None:
                raise NotImplementedError(f"zetile.ops.{fn}: a @zetile.jit mask_mod cannot go "
                                          "through the torch op; pass the Python function")
        qbs, kvbs = (block_mask.BLOCK_SIZE if isinstance(block_mask.BLOCK_SIZE, tuple)
                     else (block_mask.BLOCK_SIZE,) * 2)

        def t(x):
            if x is None:
                return None
            x = torch.from_numpy(x) if isinstance(x, np.ndarray) else x
            return x.to(torch.int32)
        tables = [t(block_mask.kv_num_blocks), t(block_mask.kv_indices),
                  t(getattr(block_mask, "full_kv_num_blocks", None)),
                  t(getattr(block_mask, "full_kv_indices", None))]
    else:
        # One block holding every key, as Inductor passes "no block mask"
        # (the forward walks only the tiles the keys fill).
        qbs = kvbs = 1 << 30
        tables = [torch.ones((1, 1, 1), dtype=torch.int32),
                  torch.zeros((1, 1, 1, 1), dtype=torch.int32), None, None]
    for tm in (smod, mmod):
        if tm is not None and any(b is None for b in tm.buffers):
            raise ValueError(f"zetile.ops.{fn}: a translated mod with placeholder buffers needs "
                             "torch.ops.zetile.flex_attention directly")
    sbufs = [b for b in smod.buffers] if smod is not None else []
    mbufs = [b for b in mmod.buffers] if mmod is not None else []
    mods = mods_with_grad(smod, mmod, sgrad)
    E = query.shape[-1]
    sc = 1.0 / math.sqrt(E) if scale is None else float(scale)
    q3 = query.dim() == 3
    q, k, v = (x.unsqueeze(1) if q3 else x for x in (query, key, value))
    out, lse, _ = torch.ops.zetile.flex_attention(q, k, v, *tables, sbufs, mbufs, sc, int(qbs),
                                                  int(kvbs), mods, bool(enable_gqa))
    if q3:
        out, lse = out.squeeze(1), lse.squeeze(1)
    return out, lse
