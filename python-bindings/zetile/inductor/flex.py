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


def install(lowering):
    op = torch.ops.higher_order.flex_attention
    if "flex" in _orig or op not in lowering.lowerings:
        return
    _orig["flex"] = lowering.lowerings[op]
    lowering.register_lowering(op, type_promotion_kind=None)(zt_flex)
