"""GEMM epilogues taken from the post-grad graph: addmm (+ a reshape) followed
by relu, GELU (erf form, as Inductor decomposes nn.GELU) or silu becomes one
torch.ops.zetile.gemm(a, b, bias, activation), so Inductor does not emit
the activation as a separate kernel after the GEMM.

Only where zetile's choice is forced (ZETILE_INDUCTOR=cpu, or force on xpu):
fusing in the graph takes the GEMM out of Inductor's autotuning race.
"""
import operator  # noqa: F401

import torch

from . import log, settings

aten = torch.ops.aten
_FLOATS = (torch.float16, torch.bfloat16, torch.float32)
_RSQRT2 = 0.7071067811865476


def _call(n, target):
    return isinstance(n, torch.fx.Node) and n.op == "call_function" and n.target is target


def _val(n):
    return n.meta.get("val") if isinstance(n, torch.fx.Node) else None


def _const_mul(n, x, c):
    """n is mul(x, c) or mul(c, x)."""
    if not _call(n, aten.mul.Tensor) or len(n.args) != 2:
        return False
    a, b = n.args
    return (a is x and isinstance(b, float) and abs(b - c) < 1e-12) or \
           (b is x and isinstance(a, float) and abs(a - c) < 1e-12)


def _gelu_end(y):
    """The last node of Inductor's erf-GELU decomposition of y, or None:
    mul(mul(y, 0.5), add(erf(mul(y, 1/sqrt 2)), 1))."""
    users = list(y.users)
    if len(users) != 2:
        return None
    half = next((u for u in users if _const_mul(u, y, 0.5)), None)
    scaled = next((u for u in users if _const_mul(u, y, _RSQRT2)), None)
    if half is None or scaled is None or len(scaled.users) != 1 or len(half.users) != 1:
        return None
    erf = next(iter(scaled.users))
    if not _call(erf, aten.erf.default) or len(erf.users) != 1:
        return None
    add = next(iter(erf.users))
    if not (_call(add, aten.add.Tensor) and add.args[0] is erf and add.args[1] == 1
            and len(add.users) == 1):
        return None
    end = next(iter(add.users))
    if _call(end, aten.mul.Tensor) and set(end.args) == {half, add}:
        return end
    return None


def _activation(y):
    """(activation name, last node) of the activation applied to y, or None."""
    users = list(y.users)
    if len(users) == 1:
        u = users[0]
        if _call(u, aten.relu.default):
            return "relu", u
        if _call(u, aten.silu.default):
            return "silu", u
        if _call(u, aten.gelu.default):
            approx = u.kwargs.get("approximate", u.args[1] if len(u.args) > 1 else "none")
            return ("gelu" if approx == "none" else "gelu_tanh"), u
    end = _gelu_end(y)
    return ("gelu", end) if end is not None else None


def fuse(graph):
    """Rewrites addmm -> activation chains; returns how many."""
    done = 0
    for mm in list(graph.nodes):
        if not _call(mm, aten.addmm.default) or len(mm.users) != 1:
            continue
        if mm.kwargs.get("beta", 1) != 1 or mm.kwargs.get("alpha", 1) != 1:
            continue
        bias, a, b = mm.args[:3]
        vals = [_val(x) for x in (bias, a, b)]
        if any(v is None for v in vals):
            continue
        dev = vals[1].device
        if not settings.forced(dev.type) or dev.type not in settings.devices():
            continue
        if any(v.dtype != vals[1].dtype or v.device != dev for v in vals) or \
                vals[1].dtype not in _FLOATS:
            continue
        y, shape = mm, None
        u = next(iter(mm.users))
        if _call(u, aten.reshape.default) or _call(u, aten.view.default):
            y, shape = u, u.args[1]
        act = _activation(y)
        if act is None:
            continue
        name, end = act
        with graph.inserting_before(end):
            new = graph.call_function(torch.ops.zetile.gemm.default, (a, b, bias, name))
            new.meta["val"] = _val(mm)
            out = new
            if shape is not None:
                out = graph.call_function(aten.reshape.default, (new, shape))
                out.meta["val"] = _val(y)
        end.replace_all_uses_with(out)
        log.took("aten.addmm + " + name, "torch.ops.zetile.gemm with the activation as epilogue")
        done += 1
    if done:
        graph.eliminate_dead_code()
    return done
