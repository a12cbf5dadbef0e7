"""torch.ops.higher_order.flex_attention lowered to torch.ops.zetile.flex_attention.

The HOP reaches the lowering with its score_mod and the block mask's mask_mod
as FX subgraphs of aten ops; fx_to_tile (the translator zetile.ops uses for
Python mods) writes them as tile-IR functions, and the pair travels in the
generated code as fx_to_tile.mods_string: generated lines, not a key valid in
one process only, so a cached graph runs in any process. Block tables and
captured tensors are passed through as tensors. Outputs are the HOP's
(out, lse, max_scores), lse and max in log2 units.

Anything zetile does not take (an op in a mod without a translation, a
captured constant inside a mod, dtypes, devices, block sizes that are not
powers of two, dynamic shapes, another kernel backend requested) goes to
Inductor's own lowering, with the reason logged.

Backward: torch.ops.higher_order.flex_attention_backward is lowered to
torch.ops.zetile.flex_attention_backward under the same conditions. The
HOP's joint graph (score, b, h, q_idx, kv_idx, grad, *buffers) -> (grad of
score, ...) is linear in `grad`, so with grad = 1 it is d score_mod / d score:
translated like a score mod and carried in the mods string ("score_grad").
A joint graph that also yields gradients of captured tensors is left to
Inductor. (torch's flex_attention refuses backward on CPU before Inductor
runs, so this path is exercised here only with that check lifted: see
tests/python/test_torch_plugin_bwd.py.)
"""
import torch

from . import log, settings

_FLOATS = (torch.float16, torch.bfloat16, torch.float32)
_orig = {}
MAX_HEAD_DIM = 256


def _ints(sizes):
    try:
        return [int(s) for s in sizes]
    except TypeError:
        return None


def _is_noop_mask(gm):
    """Inductor's stand-in for "no block mask": a graph returning full(True)."""
    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    return (len(calls) == 1 and calls[0].target is torch.ops.aten.full.default
            and calls[0].args[1] is True)


def translate(subgraph, mask_graph, score_bufs, mask_bufs):
    """(mods string, None) or (None, reason)."""
    from zetile.ops import fx_to_tile
    try:
        shapes_s = [_ints(b.get_size()) for b in score_bufs]
        shapes_m = [_ints(b.get_size()) for b in mask_bufs]
        if any(s is None for s in shapes_s + shapes_m):
            return None, "a captured tensor has a symbolic shape"
        score = fx_to_tile.translate(subgraph.graph_module, "score", shapes_s or None)
        mask = None
        if not _is_noop_mask(mask_graph.graph_module):
            mask = fx_to_tile.translate(mask_graph.graph_module, "mask", shapes_m or None)
        for tm, given in ((score, score_bufs), (mask, mask_bufs)):
            if tm is None:
                continue
            if any(b is not None for b in tm.buffers):
                return None, f"the {tm.kind}_mod holds a tensor constant (not a graph input)"
            if len(tm.buffers) != len(given):
                return None, (f"the {tm.kind}_mod reads {len(tm.buffers)} captured tensors, "
                              f"the HOP passes {len(given)}")
        if _is_identity_score(subgraph.graph_module):
            score = None
        return fx_to_tile.mods_string(score, mask), None
    except fx_to_tile.FxTranslationError as e:
        return None, str(e)


def _is_identity_score(gm):
    """score_mod=None reaches Inductor as a graph returning its first input."""
    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    outs = [n for n in gm.graph.nodes if n.op == "output"]
    first = next((n for n in gm.graph.nodes if n.op == "placeholder"), None)
    if calls or not outs:
        return False
    res = outs[0].args[0]
    if isinstance(res, (tuple, list)):
        res = res[0] if len(res) == 1 else None
    return res is first


def why_not(q, k, v, block_mask, kernel_options):
    dev = q.get_device()
    if dev is None or dev.type not in settings.devices():
        return f"device {dev} is not routed to zetile (ZETILE_INDUCTOR={settings.mode()})"
    dt = q.get_dtype()
    if not (dt == k.get_dtype() == v.get_dtype()) or dt not in _FLOATS:
        return f"dtypes {dt}/{k.get_dtype()}/{v.get_dtype()} (zetile takes one of fp16, bf16, fp32)"
    sq, sk, sv = _ints(q.get_size()), _ints(k.get_size()), _ints(v.get_size())
    if sq is None or sk is None or sv is None:
        return "dynamic shapes (symbolic sizes)"
    if len(sq) != 4:
        return "query is not 4-D"
    if sv[-1] != sq[-1]:
        return f"value head dim {sv[-1]} differs from the query's {sq[-1]}"
    if sq[-1] > MAX_HEAD_DIM:
        return f"head dim {sq[-1]} > {MAX_HEAD_DIM}"
    if sk[0] != sq[0]:
        return f"key batch {sk[0]} differs from the query's {sq[0]} (broadcast not built)"
    if sq[1] % sk[1]:
        return f"{sq[1]} query heads are not a multiple of {sk[1]} kv heads"
    backend = (kernel_options or {}).get("BACKEND", "AUTO")
    if backend not in ("AUTO", "TRITON", "DEFAULT"):
        return f"kernel_options BACKEND={backend!r}"
    for b in (block_mask[-3], block_mask[-2]):
        if not isinstance(b, int) or b < 16 or b & (b - 1):
            return f"block size {b} (zetile takes powers of two >= 16)"
    for t in block_mask[2:6]:
        if t is not None and _ints(t.get_size()) is None:
            return "block tables with symbolic sizes"
    return None


def _next_pow2(n):
    return 1 << max(0, (n - 1).bit_length())


def _block_sizes(q_block, kv_block, L, S):
    """A block at least as long as the sequence holds all of it, so it can
    shrink to the sequence's power of two without changing what the tables
    say. Without a block mask Inductor passes blocks of 2**30 (one block per
    row); zetile's template walks a listed block tile by tile, so it would
    step through 2**30 / BLOCK_N empty tiles."""
    if q_block >= L:
        q_block = max(16, _next_pow2(L))
    if kv_block >= S:
        kv_block = max(16, _next_pow2(S))
    return q_block, kv_block


def zt_flex(query, key, value, subgraph, block_mask, scale, kernel_options,
            score_mod_other_buffers, mask_mod_other_buffers):
    from torch._inductor.lowering import fallback_handler
    name = "flex_attention"
    reason = why_not(query, key, value, block_mask, kernel_options)
    mods = None
    if reason is None:
        mods, reason = translate(subgraph, block_mask[-1], score_mod_other_buffers,
                                 mask_mod_other_buffers)
    if reason:
        log.fallback(name, reason)
        return _orig["flex"](query, key, value, subgraph, block_mask, scale, kernel_options,
                             score_mod_other_buffers, mask_mod_other_buffers)
    kvn, kvi, fkvn, fkvi = block_mask[2:6]
    gqa = int(query.get_size()[1]) != int(key.get_size()[1])
    q_block, kv_block = _block_sizes(int(block_mask[-3]), int(block_mask[-2]),
                                     int(query.get_size()[2]), int(key.get_size()[2]))
    op = torch.ops.zetile.flex_attention.default
    out, lse, mx = fallback_handler(op, add_to_fallback_set=False)(
        query, key, value, kvn, kvi, fkvn, fkvi, list(score_mod_other_buffers),
        list(mask_mod_other_buffers), float(scale), q_block, kv_block, mods, gqa)
    log.took(name, "torch.ops.zetile.flex_attention")
    return (out, lse, mx)


def translate_grad(joint_graph, n_score_bufs, score_bufs):
    """(body lines of d score_mod / d score, None) or (None, reason)."""
    from zetile.ops import fx_to_tile
    gm = joint_graph.graph_module
    phs = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(phs) != 6 + n_score_bufs:
        return None, f"the joint graph has {len(phs)} inputs, expected {6 + n_score_bufs}"
    out = next(n for n in gm.graph.nodes if n.op == "output")
    res = out.args[0]
    res = list(res) if isinstance(res, (tuple, list)) else [res]
    if any(r is not None for r in res[5:]):
        return None, "the score_mod's captured tensors require grad (not built in zetile)"
    g = torch.fx.Graph()
    env = {}
    for n in gm.graph.nodes:
        if n is phs[5]:
            env[n] = 1.0          # the joint graph is linear in its incoming gradient
        elif n.op == "output":
            g.output(torch.fx.map_arg(res[0], lambda a: env[a]) if isinstance(res[0], torch.fx.Node)
                     else res[0])
        else:
            env[n] = g.node_copy(n, lambda a: env[a])
    g.eliminate_dead_code()
    try:
        shapes = [_ints(b.get_size()) for b in score_bufs]
        tm = fx_to_tile.translate(torch.fx.GraphModule(gm, g), "score", shapes or None)
    except fx_to_tile.FxTranslationError as e:
        return None, f"the score_mod's derivative: {e}"
    except Exception as e:  # noqa: BLE001 - a graph shape the copy does not handle
        return None, f"the score_mod's derivative: {type(e).__name__}: {e}"
    return list(tm.body), None


def zt_flex_bwd(*args):
    import json

    from torch._inductor.lowering import fallback_handler
    (query, key, value, out, lse, grad_out, grad_lse, fw_graph, joint_graph, block_mask, scale,
     kernel_options, score_bufs, mask_bufs) = args
    name = "flex_attention_backward"
    reason = why_not(query, key, value, block_mask, kernel_options)
    mods = None
    if reason is None:
        mods, reason = translate(fw_graph, block_mask[-1], score_bufs, mask_bufs)
    if reason is None and json.loads(mods).get("score"):
        body, reason = translate_grad(joint_graph, len(score_bufs), score_bufs)
        if reason is None:
            d = json.loads(mods)
            d["score_grad"] = body
            mods = json.dumps(d)
    if reason:
        log.fallback(name, reason)
        return _orig["flex_bwd"](*args)
    kvn, kvi, fkvn, fkvi = block_mask[2:6]
    gqa = int(query.get_size()[1]) != int(key.get_size()[1])
    q_block, kv_block = _block_sizes(int(block_mask[-3]), int(block_mask[-2]),
                                     int(query.get_size()[2]), int(key.get_size()[2]))
    op = torch.ops.zetile.flex_attention_backward.default
    dq, dk, dv = fallback_handler(op, add_to_fallback_set=False)(
        grad_out, query, key, value, out, lse, grad_lse, kvn, kvi, fkvn, fkvi, list(score_bufs),
        list(mask_bufs), float(scale), q_block, kv_block, mods, gqa)
    log.took(name, "torch.ops.zetile.flex_attention_backward")
    return (dq, dk, dv, tuple(None for _ in score_bufs))


def install(lowering):
    op = torch.ops.higher_order.flex_attention
    if "flex" in _orig or op not in lowering.lowerings:
        return
    _orig["flex"] = lowering.lowerings[op]
    lowering.register_lowering(op, type_promotion_kind=None)(zt_flex)
    bwd = getattr(torch.ops.higher_order, "flex_attention_backward", None)
    if bwd is not None and bwd in lowering.lowerings:
        _orig["flex_bwd"] = lowering.lowerings[bwd]
        lowering.register_lowering(bwd, type_promotion_kind=None)(zt_flex_bwd)
