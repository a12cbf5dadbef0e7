"""GEMM epilogues taken from the post-grad graph: mm, addmm or bmm (+ a
reshape) followed by relu, GELU (erf form, as Inductor decomposes nn.GELU;
or aten.gelu with either approximation), silu (aten.silu or its
x / (1 + exp(-x)) decomposition) and/or a residual add becomes one
zetile GEMM with that epilogue (out = act(a @ b + bias) + residual), so
Inductor emits no separate kernel for the activation or the add.

Forced (ZETILE_INDUCTOR=cpu, or force on xpu) the chain becomes
torch.ops.zetile.gemm(a, b, bias, activation, residual). Raced (on /
cpu-race) it becomes torch.ops.zetile.gemm_epilogue, whose lowering
(gemm.zt_gemm_epilogue) races zetile's fused GEMM against the same chain in
torch's eager ops (gemm_epilogue_aten): taking the chain out of the graph
takes it out of Inductor's own mm race, so the race is offered again here.
"""
import torch

from . import log, settings

aten = torch.ops.aten
_FLOATS = (torch.float16, torch.bfloat16, torch.float32)
_RSQRT2 = 0.7071067811865476
_GEMMS = (aten.mm.default, aten.addmm.default, aten.bmm.default)


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


def _only_user(n):
    users = list(n.users)
    return users[0] if len(users) == 1 else None


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


def _gelu_tanh_end(y):
    """The last node of the tanh-GELU decomposition of y, or None:
    mul(mul(y, 0.5), add(tanh(mul(add(y, mul(mul(mul(y, y), y), 0.044715)),
    sqrt(2/pi))), 1))."""
    users = list(y.users)
    if len(users) != 4:
        return None
    half = next((u for u in users if _const_mul(u, y, 0.5)), None)
    sq = next((u for u in users if _call(u, aten.mul.Tensor) and u.args == (y, y)), None)
    if half is None or sq is None:
        return None
    cube = _only_user(sq)
    if not (_call(cube, aten.mul.Tensor) and set(cube.args) == {sq, y} and cube in users):
        return None
    c = _only_user(cube)
    if not _const_mul(c, cube, 0.044715):
        return None
    inner = _only_user(c)
    if not (_call(inner, aten.add.Tensor) and set(inner.args) == {y, c} and inner in users
            and not inner.kwargs):
        return None
    sc = _only_user(inner)
    if not _const_mul(sc, inner, 0.7978845608028654):
        return None
    th = _only_user(sc)
    if not _call(th, aten.tanh.default):
        return None
    one = _only_user(th)
    if not (_call(one, aten.add.Tensor) and one.args[0] is th and one.args[1] == 1
            and not one.kwargs):
        return None
    end = _only_user(one)
    if _call(end, aten.mul.Tensor) and set(end.args) == {half, one} and _only_user(half) is end:
        return end
    return None


def _silu_end(y):
    """The last node of silu's decomposition div(y, add(exp(neg(y)), 1)), or None."""
    users = list(y.users)
    if len(users) != 2:
        return None
    neg = next((u for u in users if _call(u, aten.neg.default)), None)
    div = next((u for u in users if _call(u, aten.div.Tensor) and u.args[0] is y), None)
    if neg is None or div is None or _only_user(neg) is None:
        return None
    ex = _only_user(neg)
    if not _call(ex, aten.exp.default) or _only_user(ex) is None:
        return None
    add = _only_user(ex)
    if _call(add, aten.add.Tensor) and add.args[0] is ex and add.args[1] == 1 \
            and not add.kwargs and _only_user(add) is div and div.args[1] is add:
        return div
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
    if end is not None:
        return "gelu", end
    end = _gelu_tanh_end(y)
    if end is not None:
        return "gelu_tanh", end
    end = _silu_end(y)
    return ("silu", end) if end is not None else None


def _residual(end, out_shape, reshaped):
    """(the add node, residual) when the only user of `end` adds a tensor of
    its dtype that broadcasts to it without widening it, else None. After a
    reshape the residual must have the reshaped shape exactly (it is then
    reshaped back to the GEMM's)."""
    add = _only_user(end)
    if not _call(add, aten.add.Tensor) or add.kwargs or len(add.args) != 2:
        return None
    a, b = add.args
    other = b if a is end else a if b is end else None
    ov, ev, av = _val(other), _val(end), _val(add)
    if other is None or ov is None or ev is None or av is None or other is end:
        return None
    if not isinstance(ov, torch.Tensor) or ov.dtype != ev.dtype or ov.device != ev.device:
        return None
    if tuple(av.shape) != tuple(ev.shape):
        return None
    if reshaped:
        return (add, other) if tuple(ov.shape) == tuple(ev.shape) else None
    if ov.dim() > len(out_shape):
        return None
    try:
        ok = tuple(torch.broadcast_shapes(tuple(ov.shape), tuple(out_shape))) == tuple(out_shape)
    except RuntimeError:
        return None
    return (add, other) if ok else None


def _fake_like(v):
    mode = getattr(v, "fake_mode", None)
    if mode is None:
        return v.new_empty(v.shape)
    with mode:
        return v.new_empty(v.shape)


def _gemm_inputs(mm):
    """(bias or None, a, b) of a matched GEMM node zetile takes, else None."""
    if mm.target is aten.addmm.default:
        if mm.kwargs.get("beta", 1) != 1 or mm.kwargs.get("alpha", 1) != 1:
            return None
        bias, a, b = mm.args[:3]
    else:
        if len(mm.args) != 2 or mm.kwargs:
            return None
        bias, (a, b) = None, mm.args
    vals = [_val(x) for x in (a, b) + ((bias,) if bias is not None else ())]
    if any(v is None for v in vals):
        return None
    dev = vals[0].device
    if dev.type not in settings.devices():
        return None
    if any(v.dtype != vals[0].dtype or v.device != dev for v in vals) or \
            vals[0].dtype not in _FLOATS:
        return None
    if any(not isinstance(s, int) for v in vals for s in v.shape):
        return None
    return bias, a, b


def fuse(graph):
    """Rewrites GEMM -> activation / residual chains; returns how many."""
    done = 0
    for mm in list(graph.nodes):
        # Several users: a decomposed activation (GELU, silu) reads the
        # GEMM's output twice; _activation checks they are all its own.
        if mm.op != "call_function" or mm.target not in _GEMMS or not mm.users:
            continue
        got = _gemm_inputs(mm)
        if got is None:
            continue
        bias, a, b = got
        y, shape = mm, None
        u = _only_user(mm)
        if _call(u, aten.reshape.default) or _call(u, aten.view.default):
            y, shape = u, u.args[1]
        act = _activation(y)
        name, end = act if act is not None else (None, y)
        res = _residual(end, tuple(_val(mm).shape), shape is not None)
        if act is None and res is None:
            continue
        residual = None
        if res is not None:
            end, residual = res
        forced = settings.forced(_val(mm).device.type)
        with graph.inserting_before(end):
            if residual is not None and shape is not None:
                residual = graph.call_function(aten.reshape.default,
                                               (residual, list(_val(mm).shape)))
                residual.meta["val"] = _fake_like(_val(mm))
            if forced:
                tail = (residual,) if residual is not None else ()
                new = graph.call_function(torch.ops.zetile.gemm.default,
                                          (a, b, bias, name, *tail))
            else:
                extra = [t for t in (bias, residual) if t is not None]
                roles = ",".join(r for r, t in (("bias", bias), ("residual", residual))
                                 if t is not None)
                new = graph.call_function(torch.ops.zetile.gemm_epilogue.default,
                                          (a, b, *extra, *[None] * (2 - len(extra)), roles,
                                           name or ""))
            new.meta["val"] = _val(mm)
            out = new
            if shape is not None:
                out = graph.call_function(aten.reshape.default, (new, shape))
                out.meta["val"] = _val(end)
        end.replace_all_uses_with(out)
        what = "+".join(x for x in (name, "residual" if residual is not None else None) if x)
        log.took(f"{mm.target} + {what}",
                 "torch.ops.zetile.gemm with the epilogue" if forced else
                 "torch.ops.zetile.gemm_epilogue (raced against the same chain in aten)")
        done += 1
    if done:
        graph.eliminate_dead_code()
    return done
