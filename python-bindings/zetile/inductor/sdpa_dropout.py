"""SDPA with dropout_p > 0 rewritten to torch.ops.zetile.sdpa_dropout in the
pre-grad graph (Dynamo's torch-level graph, before AOT autograd).

Why before autograd: torch never hands Inductor a fused attention op with
dropout on CPU. `aten.scaled_dot_product_attention` is composite; with
dropout_p > 0 it picks the math path, so the post-grad graph holds bmm ->
softmax -> Inductor's random draw -> gt/mul -> bmm, and the training graph
saves the mask for its backward (docs/TORCH.md). The pre-grad graph still
holds one `torch._C._nn.scaled_dot_product_attention(q, k, v, attn_mask=,
dropout_p=, is_causal=, scale=, enable_gqa=)` call: that node is replaced by

    seed = torch.randint(0, 2**31 - 1, (1,))       # a random op of the graph
    out, lse = torch.ops.zetile.sdpa_dropout(q, k, v, mask, causal, scale, gqa, p, seed)

AOT autograd then traces the op's autograd formula, so the backward graph
calls torch.ops.zetile.sdpa_dropout_backward with the forward's seed (the
keep flags are regenerated from it, not saved).

What the user gets (RNG semantics): Inductor lowers the randint with its own
generator (fallback_random off), seeded from torch's default generator as
its other random ops, so each call draws a new seed, torch.manual_seed makes
runs repeat, and the mask is zetile's philox draw from that seed: dropout
with torch's distribution (each weight kept with probability 1 - p, kept
ones scaled by 1 / (1 - p)), not eager's mask bits. Inductor's own code for
this graph does not give eager's bits either; with
`torch._inductor.config.fallback_random = True` (eager's random bits asked
for) the node is left alone. ZETILE_INDUCTOR_DROPOUT=off leaves every SDPA
with dropout to Inductor.

Not taken (logged), besides those: devices zetile is not routed to, dtypes
other than fp16/bf16/fp32 or mixed, inputs that are not 4-D, dynamic shapes,
a value head dim different from the query's, head dims above 256, a
dropout_p that is not a constant in (0, 1), masks of other dtypes.
"""
import operator

import torch

from . import log, settings

_FLOATS = (torch.float16, torch.bfloat16, torch.float32)
MAX_HEAD_DIM = 256
NAME = "scaled_dot_product_attention(dropout_p > 0)"


def _targets():
    t = {torch.nn.functional.scaled_dot_product_attention}
    c = getattr(torch._C._nn, "scaled_dot_product_attention", None)
    if c is not None:
        t.add(c)
    return t


_POS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
_DEFAULTS = {"attn_mask": None, "dropout_p": 0.0, "is_causal": False, "scale": None,
             "enable_gqa": False}


def _bind(node):
    """The call's arguments by name, or None if they do not bind."""
    if len(node.args) > len(_POS):
        return None
    a = dict(_DEFAULTS)
    a.update(zip(_POS, node.args))
    for k, v in node.kwargs.items():
        if k not in _POS:
            return None
        a[k] = v
    return a if all(k in a for k in _POS[:3]) else None


def _ev(x):
    if not isinstance(x, torch.fx.Node):
        return None
    return x.meta.get("example_value", x.meta.get("val"))


def why_not(a):
    p = a["dropout_p"]
    if isinstance(p, torch.fx.Node) or not isinstance(p, (int, float)):
        return f"dropout_p is not a constant ({p!r})"
    if not 0.0 < float(p) < 1.0:
        return f"dropout_p={p} (taken here only in (0, 1))"
    if not settings.dropout():
        return "ZETILE_INDUCTOR_DROPOUT=off"
    import torch._inductor.config as config
    if config.fallback_random:
        return "torch._inductor.config.fallback_random=True asks for eager's random bits"
    for name in ("is_causal", "enable_gqa"):
        if not isinstance(a[name], bool):
            return f"{name} is not a constant"
    if a["scale"] is not None and (isinstance(a["scale"], torch.fx.Node)
                                   or not isinstance(a["scale"], (int, float))):
        return "scale is not a constant"
    qv, kv, vv = (_ev(a[n]) for n in ("query", "key", "value"))
    if not all(isinstance(t, torch.Tensor) for t in (qv, kv, vv)):
        return "no tensor metadata on the inputs"
    if qv.device.type not in settings.devices():
        return f"device {qv.device} is not routed to zetile (ZETILE_INDUCTOR={settings.mode()})"
    if not (qv.dtype == kv.dtype == vv.dtype) or qv.dtype not in _FLOATS:
        return f"dtypes {qv.dtype}/{kv.dtype}/{vv.dtype} (zetile takes one of fp16, bf16, fp32)"
    if qv.dim() != 4 or kv.dim() != 4 or vv.dim() != 4:
        return "inputs are not 4-D"
    if any(not isinstance(s, int) for t in (qv, kv, vv) for s in t.shape):
        return "dynamic shapes (symbolic sizes)"
    E = qv.shape[-1]
    if vv.shape[-1] != E or kv.shape[-1] != E:
        return f"key/value head dims {kv.shape[-1]}/{vv.shape[-1]} differ from the query's {E}"
    if E > MAX_HEAD_DIM:
        return f"head dim {E} > {MAX_HEAD_DIM}"
    if qv.shape[1] != kv.shape[1] and (not a["enable_gqa"] or qv.shape[1] % kv.shape[1]):
        return f"{qv.shape[1]} query heads and {kv.shape[1]} kv heads"
    m = a["attn_mask"]
    if m is not None:
        mv = _ev(m)
        if not isinstance(mv, torch.Tensor) or mv.dtype not in _FLOATS + (torch.bool,):
            return f"attn_mask of dtype {getattr(mv, 'dtype', None)}"
        if a["is_causal"]:
            return "attn_mask with is_causal (torch refuses it)"
    return None


def rewrite(graph):
    """Replaces every SDPA call with dropout zetile takes; returns how many."""
    targets = _targets()
    done = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target not in targets:
            continue
        a = _bind(node)
        if a is None:
            log.fallback(NAME, "arguments do not bind to SDPA's signature")
            continue
        p = a["dropout_p"]
        if isinstance(p, (int, float)) and float(p) == 0.0:
            continue        # no dropout: the post-grad pass (sdpa.py) sees its fused op
        reason = why_not(a)
        if reason:
            log.fallback(NAME, reason)
            continue
        qv = _ev(a["query"])
        with graph.inserting_before(node):
            seed = graph.call_function(torch.randint, (0, 2**31 - 1, (1,)),
                                       {"dtype": torch.int64, "device": torch.device("cpu")})
            new = graph.call_function(
                torch.ops.zetile.sdpa_dropout.default,
                (a["query"], a["key"], a["value"], a["attn_mask"], a["is_causal"],
                 None if a["scale"] is None else float(a["scale"]),
                 bool(a["enable_gqa"] and qv.shape[1] != _ev(a["key"]).shape[1]),
                 float(a["dropout_p"]), seed))
            out = graph.call_function(operator.getitem, (new, 0))
        mode = getattr(qv, "fake_mode", None)
        if mode is not None:
            with mode:
                seed.meta["example_value"] = torch.empty((1,), dtype=torch.int64)
                o = qv.new_empty(qv.shape)
                new.meta["example_value"] = (o, qv.new_empty(qv.shape[:-1], dtype=torch.float32))
                out.meta["example_value"] = o
        node.replace_all_uses_with(out)
        graph.erase_node(node)
        log.took(NAME, "torch.ops.zetile.sdpa_dropout")
        done += 1
    return done
