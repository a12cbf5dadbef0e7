"""aten.mm / addmm / bmm / baddbmm lowered to torch.ops.zetile.gemm.

Each lowering wraps Inductor's own (captured before zetile registers, so the
last registration wins and the stock one stays callable). zetile's GEMM is
an autotuning choice: an ExternKernelChoice over the custom op, so the
generated code calls torch.ops.zetile.gemm.default (registered again in any
process that runs a cached graph) rather than a Python function that only
this process knows. Forced (ZETILE_INDUCTOR=cpu / force) it is the only
choice; otherwise it races Inductor's stock aten choice.
"""
import torch

from . import log, settings

aten = torch.ops.aten
_FLOATS = (torch.float16, torch.bfloat16, torch.float32)
_orig = {}


def _choice():
    """One ExternKernelChoice per zetile version and mode: its name enters the
    autotune cache key, so a new zetile never reuses an old race's winner."""
    from torch._inductor.select_algorithm import ExternKernelChoice
    tag = settings.cache_tag().replace(".", "_").replace("-", "_")
    name = f"zetile_gemm_{tag}"
    ch = ExternKernelChoice.lookup(name)
    if ch is None:
        op = torch.ops.zetile.gemm.default
        ch = ExternKernelChoice(op, None, name=name, has_out_variant=False, op_overload=op,
                                use_fallback_kernel=True)
    return ch


def _static(sizes):
    try:
        return [int(s) for s in sizes]
    except TypeError:
        return None


def why_not(op, mats, extra=()):
    """None when zetile's GEMM takes these inputs, else the reason."""
    dev = mats[0].get_device()
    dtype = mats[0].get_dtype()
    if dev is None or dev.type not in settings.devices():
        return f"device {dev} is not routed to zetile (ZETILE_INDUCTOR={settings.mode()})"
    for m in list(mats) + [e for e in extra if e is not None]:
        if m.get_dtype() != dtype:
            return f"mixed dtypes {dtype} and {m.get_dtype()}"
        if m.get_device() != dev:
            return "inputs on different devices"
    if dtype not in _FLOATS:
        return f"dtype {dtype} (zetile's GEMM lowering takes fp16, bf16, fp32)"
    for m in mats:
        if _static(m.get_size()) is None:
            return "dynamic shapes (symbolic sizes)"
    return None


def _select(name, inputs, layout, stock, kwargs, dev_type):
    from torch._inductor.select_algorithm import autotune_select_algorithm
    choices = [] if settings.forced(dev_type) else [stock]
    choices.append(_choice().bind(tuple(inputs), layout, **kwargs))
    node, _ = autotune_select_algorithm(f"zetile_{name}", choices, list(inputs), layout)
    return node


def zt_mm(mat1, mat2, out_dtype=None, *, layout=None):
    from torch._inductor.kernel.mm import aten_mm
    from torch._inductor.kernel.mm_common import mm_args
    reason = "out_dtype given" if out_dtype is not None else why_not("mm", (mat1, mat2))
    if reason:
        log.fallback("aten.mm", reason)
        return _orig["mm"](mat1, mat2, out_dtype=out_dtype, layout=layout)
    m, n, k, layout, mat1, mat2 = mm_args(mat1, mat2, layout=layout)
    log.took("aten.mm", f"torch.ops.zetile.gemm ({m}x{k} @ {k}x{n})")
    return _select("mm", (mat1, mat2), layout, aten_mm.bind((mat1, mat2), layout), {},
                   mat1.get_device().type)


def _add_variant(kind, inp, mat1, mat2, alpha, beta, layout):
    """addmm / baddbmm: torch computes beta * inp + alpha * (mat1 @ mat2);
    zetile's GEMM as alpha * (a @ b) + bias with inp as the bias (expanded to
    the output; a 1-D bias becomes a stride-0 view)."""
    from torch._inductor.kernel.mm_common import mm_args
    stock_name = "addmm" if kind == "addmm" else "baddbmm"
    reason = why_not(stock_name, (mat1, mat2), (inp,))
    if reason is None and beta != 1:
        reason = f"beta={beta} (zetile's epilogue adds the input once)"
    if reason:
        log.fallback(f"aten.{stock_name}", reason)
        return _orig[stock_name](inp, mat1, mat2, alpha=alpha, beta=beta, layout=layout)
    m, n, k, layout, mat1, mat2, inp_exp = mm_args(mat1, mat2, inp, layout=layout)
    if kind == "addmm":
        from torch._inductor.kernel.mm import aten_addmm as stock
    else:
        from torch._inductor.kernel.bmm import aten_baddbmm as stock
    stock_choice = stock.bind((inp_exp, mat1, mat2), layout, alpha=alpha, beta=beta)
    kwargs = {} if alpha == 1 else {"alpha": float(alpha)}
    log.took(f"aten.{stock_name}", f"torch.ops.zetile.gemm with bias ({m}x{k} @ {k}x{n})")
    return _select(stock_name, (mat1, mat2, inp_exp), layout, stock_choice, kwargs,
                   mat1.get_device().type)


def zt_addmm(inp, mat1, mat2, *, alpha=1, beta=1, layout=None):
    return _add_variant("addmm", inp, mat1, mat2, alpha, beta, layout)


def zt_baddbmm(inp, mat1, mat2, *, alpha=1, beta=1, layout=None):
    return _add_variant("baddbmm", inp, mat1, mat2, alpha, beta, layout)


def zt_bmm(mat1, mat2, out_dtype=None, *, layout=None):
    from torch._inductor.kernel.bmm import aten_bmm
    from torch._inductor.kernel.mm_common import mm_args
    reason = "out_dtype given" if out_dtype is not None else why_not("bmm", (mat1, mat2))
    if reason:
        log.fallback("aten.bmm", reason)
        return _orig["bmm"](mat1, mat2, out_dtype=out_dtype, layout=layout)
    m, n, k, layout, mat1, mat2 = mm_args(mat1, mat2, layout=layout)
    log.took("aten.bmm", f"torch.ops.zetile.gemm ({m}x{k} @ {k}x{n}, batched)")
    return _select("bmm", (mat1, mat2), layout, aten_bmm.bind((mat1, mat2), layout), {},
                   mat1.get_device().type)


def _epilogue_choice(op, prefix):
    """An ExternKernelChoice over one of the gemm_epilogue ops, named (as
    _choice) with zetile's version and mode."""
    from torch._inductor.select_algorithm import ExternKernelChoice
    tag = settings.cache_tag().replace(".", "_").replace("-", "_")
    name = f"{prefix}_{tag}"
    ch = ExternKernelChoice.lookup(name)
    if ch is None:
        ch = ExternKernelChoice(op, None, name=name, has_out_variant=False, op_overload=op,
                                use_fallback_kernel=True)
    return ch


def zt_gemm_epilogue(a, b, x=None, y=None, roles="", activation=""):
    """torch.ops.zetile.gemm_epilogue (a GEMM chain epilogue.py took where
    GEMMs are raced): zetile's fused GEMM against the same chain in torch's
    eager ops, timed by Inductor's autotuner (whose winner is cached per
    choice name, which carries zetile's version and mode)."""
    from torch._inductor.ir import FixedLayout, FlexibleLayout
    from torch._inductor.select_algorithm import autotune_select_algorithm, realize_inputs
    inputs = realize_inputs(a, b, *[t for t in (x, y) if t is not None])
    sa, sb = _static(a.get_size()), _static(b.get_size())
    if len(sa) == 2 and len(sb) == 2:
        size = [sa[0], sb[1]]
    else:
        nb = max(sa[0] if len(sa) == 3 else 1, sb[0] if len(sb) == 3 else 1)
        size = [nb, sa[-2], sb[-1]]
    layout = FixedLayout(a.get_device(), a.get_dtype(), size,
                         FlexibleLayout.contiguous_strides(size))
    kw = {"roles": roles, "activation": activation}
    choices = [_epilogue_choice(torch.ops.zetile.gemm_epilogue_aten.default,
                                "zetile_epilogue_aten").bind(tuple(inputs), layout, **kw),
               _epilogue_choice(torch.ops.zetile.gemm_epilogue.default,
                                "zetile_epilogue_gemm").bind(tuple(inputs), layout, **kw)]
    node, _ = autotune_select_algorithm("zetile_gemm_epilogue", choices, list(inputs), layout)
    return node


def install(lowering):
    """Registers the wrappers on the OpOverloads (the packets keep the stock
    lowerings, which the wrappers call for everything zetile does not take)."""
    table = {"mm": (aten.mm.default, zt_mm), "addmm": (aten.addmm.default, zt_addmm),
             "bmm": (aten.bmm.default, zt_bmm), "baddbmm": (aten.baddbmm.default, zt_baddbmm)}
    for name, (op, fn) in table.items():
        if name in _orig or op not in lowering.lowerings:
            continue
        _orig[name] = lowering.lowerings[op]
        lowering.register_lowering(op, type_promotion_kind=None)(fn)
    ep = torch.ops.zetile.gemm_epilogue.default
    if "gemm_epilogue" not in _orig:
        _orig["gemm_epilogue"] = lowering.lowerings.get(ep)
        lowering.register_lowering(ep, type_promotion_kind=None)(zt_gemm_epilogue)
