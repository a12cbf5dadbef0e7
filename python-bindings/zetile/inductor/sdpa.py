"""The fused-attention aten ops rewritten to torch.ops.zetile.sdpa in the
post-grad graph (before lowering, so Inductor emits one extern call).

On CPU, every F.scaled_dot_product_attention reaches the post-grad graph as
aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, dropout_p,
is_causal, *, attn_mask, scale) -> (out, lse): a bool mask has already been
turned into an additive float mask, and with GQA k/v keep their Hkv heads.
zetile::sdpa takes the same arguments and returns (out, lse) with lse
(B, H, L) fp32 in natural log, so the node's users (getitem 0 / 1) stay.

On xpu, Inductor keeps aten._scaled_dot_product_fused_attention_overrideable
and aten._scaled_dot_product_flash_attention as fallbacks; both are matched
here too (their first two outputs are out and lse), but no Intel GPU was
available: that path has not run.

Training graphs: the forward graph saves (out, lse) for the backward graph's
aten._scaled_dot_product_flash_attention_for_cpu_backward(grad_out, q, k, v,
out, lse, dropout_p, is_causal, *, attn_mask, scale), which is rewritten to
torch.ops.zetile.sdpa_backward under the same conditions (why_not reads the
same arguments), so a forward zetile took gets zetile's backward, which reads
zetile's lse (natural log, -inf for fully masked rows). A forward whose lse
is read is taken only when the backward op would be.

On xpu the same holds for the overrideable pair:
aten._scaled_dot_product_fused_attention_overrideable_backward(grad_out, q,
k, v, attn_bias, grad_input_mask, out, lse, cum_seq_q, cum_seq_k, max_q,
max_k, dropout_p, is_causal, philox_seed, philox_offset, *, scale) becomes
zetile's sdpa_backward when its forward's conditions hold on its arguments
and, in both graphs, there is no attn_bias (zetile's backward computes no
bias gradient, and neither graph can see whether the other wants one: the
pair is taken together or not at all). A taken forward's other outputs,
which a training graph saves for the backward (cum_seq_q/k, max_q/k, the
philox seed/offset, the debug mask), are replaced by what the aten op gives
without dropout or nested tensors: None, the sequence lengths, and 0-d
zeros. Tested on graphs traced with the op's fake implementation
(test_torch_plugin_xpu_bwd.py: the rewritten graph then runs on CPU); no
Intel GPU was available, so the xpu graphs Inductor builds have not run.
The other xpu op (_scaled_dot_product_flash_attention) has no backward
match: its forward is left to Inductor when lse is read.

Not taken (logged): dropout > 0 (SDPA with dropout is rewritten before
autograd by sdpa_dropout.py; on CPU torch sends what that pass leaves down
its math path, so no fused op with dropout reaches this pass; on xpu one
would carry torch's philox seed/offset for its backward),
devices zetile is not routed to, other
dtypes, a value head dim different from the query's, head dims above 256,
debug masks.
"""
import operator

import torch

from . import log, settings

aten = torch.ops.aten
_FLOATS = (torch.float16, torch.bfloat16, torch.float32)
MAX_HEAD_DIM = 256


def _targets():
    t = {}
    cpu = getattr(aten, "_scaled_dot_product_flash_attention_for_cpu", None)
    if cpu is not None:
        t[cpu.default] = "cpu_flash"
    ovr = getattr(aten, "_scaled_dot_product_fused_attention_overrideable", None)
    if ovr is not None:
        t[ovr.default] = "overrideable"
    fl = getattr(aten, "_scaled_dot_product_flash_attention", None)
    if fl is not None:
        t[fl.default] = "flash"
    return t


def _arg(node, i, name, default):
    if len(node.args) > i:
        return node.args[i]
    return node.kwargs.get(name, default)


def _parse(node, kind):
    """(q, k, v, mask, dropout, causal, scale, debug_mask) of a matched node."""
    q, k, v = node.args[:3]
    if kind == "cpu_flash":
        return (q, k, v, node.kwargs.get("attn_mask"), _arg(node, 3, "dropout_p", 0.0),
                _arg(node, 4, "is_causal", False), node.kwargs.get("scale"), False)
    if kind == "overrideable":
        return (q, k, v, _arg(node, 3, "attn_bias", None), _arg(node, 4, "dropout_p", 0.0),
                _arg(node, 5, "is_causal", False), node.kwargs.get("scale"),
                _arg(node, 6, "return_debug_mask", False))
    return (q, k, v, None, _arg(node, 3, "dropout_p", 0.0), _arg(node, 4, "is_causal", False),
            node.kwargs.get("scale"), _arg(node, 5, "return_debug_mask", False))


def _val(n):
    return n.meta.get("val") if isinstance(n, torch.fx.Node) else None


def why_not(node, kind):
    q, k, v, mask, dropout, causal, scale, debug = _parse(node, kind)
    qv, kv, vv = _val(q), _val(k), _val(v)
    if qv is None or kv is None or vv is None:
        return "no tensor metadata on the inputs"
    if qv.device.type not in settings.devices():
        return f"device {qv.device} is not routed to zetile (ZETILE_INDUCTOR={settings.mode()})"
    if dropout:
        return (f"dropout_p={dropout} (not mapped here: a fused op with dropout keeps torch's "
                "own philox seed/offset outputs for its backward; SDPA with dropout is taken "
                "before autograd by sdpa_dropout.py unless it fell back there; docs/TORCH.md)")
    if debug:
        return "return_debug_mask=True"
    if not (qv.dtype == kv.dtype == vv.dtype) or qv.dtype not in _FLOATS:
        return f"dtypes {qv.dtype}/{kv.dtype}/{vv.dtype} (zetile takes one of fp16, bf16, fp32)"
    if qv.dim() != 4 or kv.dim() != 4 or vv.dim() != 4:
        return "inputs are not 4-D"
    if any(not isinstance(s, int) for t in (qv, kv, vv) for s in t.shape):
        return "dynamic shapes (symbolic sizes)"
    E = qv.shape[-1]
    if vv.shape[-1] != E:
        return f"value head dim {vv.shape[-1]} differs from the query's {E}"
    if E > MAX_HEAD_DIM:
        return f"head dim {E} > {MAX_HEAD_DIM}"
    if qv.shape[1] % kv.shape[1]:
        return f"{qv.shape[1]} query heads are not a multiple of {kv.shape[1]} kv heads"
    mv = _val(mask)
    if mask is not None and (mv is None or mv.dtype not in _FLOATS + (torch.bool,)):
        return f"attn_mask of dtype {getattr(mv, 'dtype', None)}"
    outs = list(node.users)
    for u in outs:
        if not (u.op == "call_function" and u.target is operator.getitem):
            return f"output used by {u.target} directly"
        if u.args[1] >= 2 and u.users and kind != "overrideable":
            return f"output {u.args[1]} of the aten op is used"
        if u.args[1] == 1 and u.users and kind not in ("cpu_flash", "overrideable"):
            return ("the graph reads logsumexp (a training graph) and zetile's backward is "
                    "matched only for the CPU and the overrideable ops")
    if kind == "overrideable" and mask is not None and any(
            u.args[1] >= 1 and u.users for u in outs):
        return _BIAS_IN_TRAINING
    return None


_BIAS_IN_TRAINING = ("attn_bias in a training graph (zetile's backward computes no bias "
                     "gradient, and the forward cannot tell whether one is wanted: the xpu "
                     "pair stays torch's)")


def why_not_backward(node):
    """Why the CPU backward op is not taken (the forward's conditions on the
    same arguments), or None."""
    q, k, v = node.args[1:4]
    fwd = _FakeFwd(q, k, v, node.kwargs.get("attn_mask"), _arg(node, 6, "dropout_p", 0.0))
    return why_not(fwd, "cpu_flash")


def _no_bias(b):
    """The overrideable backward's attn_bias is a Tensor (undefined, or
    empty, when the forward had none)."""
    if b is None:
        return True
    bv = _val(b)
    return bv is not None and bv.numel() == 0


def why_not_backward_xpu(node):
    """Why the overrideable backward is not taken, or None."""
    q, k, v, bias = node.args[1:5]
    if not _no_bias(bias):
        return _BIAS_IN_TRAINING
    fwd = _FakeFwd(q, k, v, None, _arg(node, 12, "dropout_p", 0.0))
    return why_not(fwd, "cpu_flash")


class _FakeFwd:
    """The argument view why_not reads, built from a backward node."""

    def __init__(self, q, k, v, mask, dropout):
        self.args = (q, k, v, dropout, False)
        self.kwargs = {"attn_mask": mask}
        self.users = {}


def rewrite(graph):
    """Replaces every matched node zetile takes; returns how many."""
    targets = _targets()
    n_done = 0
    bwd = getattr(aten, "_scaled_dot_product_flash_attention_for_cpu_backward", None)
    bwd_xpu = getattr(aten, "_scaled_dot_product_fused_attention_overrideable_backward", None)
    for node in list(graph.nodes):
        if bwd is not None and node.op == "call_function" and node.target is bwd.default:
            n_done += _rewrite_backward(graph, node)
            continue
        if bwd_xpu is not None and node.op == "call_function" and node.target is bwd_xpu.default:
            n_done += _rewrite_backward(graph, node, xpu=True)
            continue
        if node.op != "call_function" or node.target not in targets:
            continue
        kind = targets[node.target]
        name = str(node.target)
        reason = why_not(node, kind)
        if reason:
            log.fallback(name, reason)
            continue
        q, k, v, mask, _, causal, scale, _ = _parse(node, kind)
        gqa = _val(q).shape[1] != _val(k).shape[1]
        with graph.inserting_before(node):
            new = graph.call_function(torch.ops.zetile.sdpa.default,
                                      (q, k, v, mask, bool(causal), scale, gqa))
        fake = _fake(new, q, k, v)
        new.meta.update(node.meta)
        if fake is not None:
            new.meta["val"] = fake
        # Users read outputs 0 and 1; later outputs have no users, except the
        # overrideable op's in a training graph (stand-ins below).
        for u in list(node.users):
            if u.args[1] >= 2:
                if u.users:
                    _stand_in(graph, u, q, k)
                graph.erase_node(u)
        node.replace_all_uses_with(new)
        graph.erase_node(node)
        log.took(name, "torch.ops.zetile.sdpa")
        n_done += 1
    return n_done


def _stand_in(graph, u, q, k):
    """Replaces the uses of the overrideable op's output u.args[1] (>= 2)
    with what the op returns without dropout or nested tensors: cum_seq_q/k
    and the debug mask None, max_q/max_k the sequence lengths, the philox
    seed/offset 0-d zeros of their dtype (nothing reads them at p = 0)."""
    i = u.args[1]
    if i in (4, 5):
        rep = int((_val(q) if i == 4 else _val(k)).shape[2])
    elif i in (6, 7):
        uv = _val(u)
        dtype = uv.dtype if uv is not None else torch.int64
        with graph.inserting_before(u):
            rep = graph.call_function(aten.zeros.default, ([],),
                                      {"dtype": dtype, "device": _val(q).device})
        mode = getattr(_val(q), "fake_mode", None)
        if mode is not None:
            with mode:
                rep.meta["val"] = torch.zeros((), dtype=dtype, device=_val(q).device)
    else:
        rep = None
    for user in list(u.users):
        user.args = torch.fx.node.map_arg(user.args, lambda n: rep if n is u else n)
        user.kwargs = torch.fx.node.map_arg(user.kwargs, lambda n: rep if n is u else n)


def _fake(new, q, k, v):
    """zetile::sdpa's own fake outputs (its strides, not the aten op's)."""
    qv = _val(q)
    mode = getattr(qv, "fake_mode", None)
    if mode is None:
        return None
    with mode:
        out = qv.new_empty(qv.shape)     # contiguous, as zetile::sdpa's fake
        lse = qv.new_empty(qv.shape[:-1], dtype=torch.float32)
    return (out, lse)


def _rewrite_backward(graph, node, xpu=False):
    name = str(node.target)
    reason = why_not_backward_xpu(node) if xpu else why_not_backward(node)
    if not reason and xpu:
        # Output 3 is the bias gradient; with no bias nothing may read it.
        if any(u.op != "call_function" or u.target is not operator.getitem
               for u in node.users):
            reason = "outputs used directly"
        elif any(u.args[1] == 3 and u.users for u in node.users):
            reason = "the graph reads grad_attn_bias"
    if reason:
        log.fallback(name, reason)
        return 0
    if xpu:
        grad_out, q, k, v = node.args[:4]
        out, lse = node.args[6:8]
        causal = _arg(node, 13, "is_causal", False)
        mask = None
        for u in list(node.users):
            if u.args[1] == 3:
                graph.erase_node(u)
    else:
        grad_out, q, k, v, out, lse = node.args[:6]
        causal = _arg(node, 7, "is_causal", False)
        mask = node.kwargs.get("attn_mask")
    scale = node.kwargs.get("scale")
    gqa = _val(q).shape[1] != _val(k).shape[1]
    with graph.inserting_before(node):
        new = graph.call_function(torch.ops.zetile.sdpa_backward.default,
                                  (grad_out, q, k, v, out, lse, None, mask, bool(causal), scale,
                                   gqa))
    new.meta.update(node.meta)
    mode = getattr(_val(q), "fake_mode", None)
    if mode is not None:
        with mode:
            new.meta["val"] = tuple(_val(t).new_empty(_val(t).shape) for t in (q, k, v))
    node.replace_all_uses_with(new)
    graph.erase_node(node)
    log.took(name, "torch.ops.zetile.sdpa_backward")
    return 1
