"""FlexAttention mods (score_mod, mask_mod) as tile programs.

A mod given as a Python function (what torch.nn.attention.flex_attention
takes) is traced to an FX graph of aten ops with make_fx, and the graph is
written out as the source of a @zetile.jit function the attention template
inlines. The same `translate` takes the GraphModules torch.compile hands to
a FlexAttention lowering (the torch plugin), where captured tensors are
extra placeholders instead of get_attr constants.

Every generated function has one signature, so the template calls any mod
the same way:
    score mods: fn(score, b, h, q_idx, kv_idx, B0, B1, B2, B3)
    mask mods:  fn(b, h, q_idx, kv_idx, B0, B1, B2, B3)
where B0..B3 point at captured tensors (made contiguous by the caller; the
generated code knows their shapes). Inside the template score is an fp32
(BLOCK_M, BLOCK_N) tile, q_idx a (BLOCK_M, 1) and kv_idx a (1, BLOCK_N)
int32 tile, b and h int32 scalars. Ops without a translation raise
FxTranslationError naming the op.
"""
from __future__ import annotations

import hashlib
import json
import linecache
import math
import re

import zetile

MAX_BUFFERS = 4
SCORE_ARGS = ("score", "b", "h", "q_idx", "kv_idx")
MASK_ARGS = ("b", "h", "q_idx", "kv_idx")
_BUF_ARGS = tuple(f"B{i}" for i in range(MAX_BUFFERS))


class FxTranslationError(NotImplementedError):
    """A mod uses something the translator does not turn into tile IR."""


class TranslatedMod:
    """A mod as a @zetile.jit function plus the tensors it reads (in slot order)."""

    def __init__(self, fn, buffers, source, kind, body=None):
        self._fn, self.buffers, self.source, self.kind = fn, list(buffers), source, kind
        # The generated body lines (None for a wrapped @zetile.jit mod): with
        # `kind` they rebuild the function, so they are the mod's portable name.
        self.body = body

    @property
    def fn(self):
        """The mod as a @zetile.jit function, the same for every target: a
        captured tensor gathered by q_idx or kv_idx alone loads a
        (BLOCK_M, 1) column or a (1, BLOCK_N) row, which the Xe lowering
        gathers as a 1-D tensor and broadcasts (lowering/common/unit_dims.c)."""
        return self._fn

    def __repr__(self):
        return f"TranslatedMod({self.kind}, {len(self.buffers)} buffers)"


# ------------------------------------------------------------ the translator
_FLOAT_DT = ("float16", "bfloat16", "float32", "float64")


def _kind_of(dtype):
    name = str(dtype).replace("torch.", "")
    if name in _FLOAT_DT:
        return "f"
    if name == "bool":
        return "b"
    if name in ("int64", "uint64"):
        return "i64"
    if name in ("int8", "int16", "int32", "uint8", "uint16", "uint32"):
        return "i32"
    raise FxTranslationError(f"flex mods: values of dtype {name} have no tile-IR translation")


_CAST = {"f": "tl.float32", "i32": "tl.int32", "i64": "tl.int64", "b": "tl.int1"}


def _literal(v):
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, int):
        return repr(v)
    if isinstance(v, float):
        if math.isinf(v):
            return 'float("inf")' if v > 0 else 'float("-inf")'
        if math.isnan(v):
            return 'float("nan")'
        return repr(v)
    raise FxTranslationError(f"flex mods: constant {v!r} of type {type(v).__name__} is not supported")


class _Buf:
    """A captured tensor, or a part of one selected with constant indices."""

    def __init__(self, slot, shape, strides, offset=0):
        self.slot, self.shape, self.strides, self.offset = slot, tuple(shape), tuple(strides), offset


class _Val:
    def __init__(self, expr, kind, literal=None):
        self.expr, self.kind, self.literal = expr, kind, literal


_UNARY_FLOAT = {"exp": "tl.exp({})", "exp2": "tl.exp2({})", "log": "tl.log({})",
                "log2": "tl.log2({})", "sqrt": "tl.sqrt({})", "rsqrt": "tl.rsqrt({})",
                "sin": "tl.sin({})", "cos": "tl.cos({})", "erf": "tl.erf({})",
                "sigmoid": "tl.sigmoid({})", "tanh": "_zt_tanh({})", "reciprocal": "(1.0 / {})",
                "floor": "tl.floor({})", "ceil": "tl.ceil({})"}
_COMPARE = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_BITWISE = {"bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^", "logical_and": "&",
            "logical_or": "|", "logical_xor": "^", "__and__": "&", "__or__": "|"}
_IDENTITY = ("detach", "clone", "alias", "lift_fresh_copy", "contiguous", "view", "_unsafe_view",
             "expand", "squeeze", "unsqueeze")


def _contiguous_strides(shape):
    st, acc = [], 1
    for s in reversed(shape):
        st.append(acc)
        acc *= int(s)
    return tuple(reversed(st))


def _shape_of(node, what):
    val = node.meta.get("val", node.meta.get("example_value"))
    if val is None or not hasattr(val, "shape"):
        raise FxTranslationError(f"flex mods: the shape of captured tensor {what} is unknown "
                                 "(no 'val' in the FX node's meta)")
    return tuple(int(s) for s in val.shape)


class _Writer:
    def __init__(self, gm, kind, n_args, buffer_shapes=None):
        self.gm, self.kind, self.n_args = gm, kind, n_args
        self.lines, self.env, self.buffers = [], {}, []
        self.buffer_shapes = buffer_shapes
        self.tmp = 0
        self.attr_slots = {}

    def new(self, expr, kind):
        name = f"v{self.tmp}"
        self.tmp += 1
        self.lines.append(f"    {name} = {expr}")
        return _Val(name, kind)

    def arg(self, a):
        if isinstance(a, (bool, int, float)):
            return _Val(_literal(a), "b" if isinstance(a, bool) else
                        ("i32" if isinstance(a, int) else "f"), a)
        if hasattr(a, "name") and a in self.env:
            return self.env[a]
        raise FxTranslationError(f"flex mods: argument {a!r} is not supported")

    def slot_for(self, tensor, what, shape=None):
        if len(self.buffers) >= MAX_BUFFERS:
            raise FxTranslationError(f"flex mods: more than {MAX_BUFFERS} captured tensors")
        slot = len(self.buffers)
        self.buffers.append(tensor)
        shape = tuple(tensor.shape) if shape is None else shape
        return _Buf(slot, shape, _contiguous_strides(shape))

    def as_float(self, v):
        if v.kind == "f":
            return v.expr
        if v.literal is not None:
            return _literal(float(v.literal))
        return f"({v.expr}).to(tl.float32)"

    def run(self):
        names = SCORE_ARGS if self.kind == "score" else MASK_ARGS
        placeholders = [n for n in self.gm.graph.nodes if n.op == "placeholder"]
        if len(placeholders) < len(names):
            raise FxTranslationError(f"flex mods: a {self.kind}_mod takes {len(names)} arguments "
                                     f"({', '.join(names)}), the graph has {len(placeholders)}")
        for i, n in enumerate(placeholders):
            if i < len(names):
                kind = "f" if names[i] == "score" else "i32"
                self.env[n] = _Val(names[i], kind)
            else:
                # A captured tensor passed as an input (torch.compile's graphs).
                shape = (self.buffer_shapes[i - len(names)] if self.buffer_shapes
                         else _shape_of(n, n.name))
                self.env[n] = self.slot_for(None, n.name, shape)
        result = None
        for n in self.gm.graph.nodes:
            if n.op == "placeholder":
                continue
            if n.op == "get_attr":
                t = self._attr(n.target)
                if t.numel() == 1 and t.dim() == 0:
                    self.env[n] = _Val(_literal(t.item()), _kind_of(t.dtype), t.item())
                else:
                    # One slot per tensor, however often the graph reads it.
                    known = self.attr_slots.get(id(t))
                    if known is None:
                        known = self.attr_slots[id(t)] = self.slot_for(t.detach().contiguous(),
                                                                       n.target)
                    self.env[n] = known
                continue
            if n.op == "output":
                out = n.args[0]
                if isinstance(out, (tuple, list)):
                    if len(out) != 1:
                        raise FxTranslationError(f"flex mods: a {self.kind}_mod must return one value")
                    out = out[0]
                result = self.arg(out)
                continue
            if n.op != "call_function":
                raise FxTranslationError(f"flex mods: FX node kind '{n.op}' ({n.target}) is not supported")
            self.env[n] = self.call(n)
        if result is None:
            raise FxTranslationError("flex mods: the graph returns nothing")
        if isinstance(result, _Buf):
            raise FxTranslationError("flex mods: a mod returned a captured tensor, not a value")
        if self.kind == "score":
            self.lines.append(f"    return {self.as_float(result)}")
        else:
            self.lines.append(f"    return {result.expr} != 0" if result.kind != "b"
                              else f"    return {result.expr}")
        return self.lines, self.buffers

    def _attr(self, target):
        obj = self.gm
        for part in target.split("."):
            obj = getattr(obj, part)
        return obj

    def call(self, n):
        target = n.target
        name = getattr(target, "__name__", str(target))          # "add.Tensor"
        op = name.split(".")[0]
        overload = name.split(".")[1] if "." in name else "default"
        out_kind = None
        val = n.meta.get("val")
        if val is not None and hasattr(val, "dtype"):
            out_kind = _kind_of(val.dtype)
        args = list(n.args)
        kw = dict(n.kwargs)
        if op in _IDENTITY:
            return self.arg(args[0])
        if op in ("_to_copy", "to", "type_as", "_conj"):
            v = self.arg(args[0])
            k = out_kind or v.kind
            return self.new(f"({v.expr}).to({_CAST[k]})", k) if k != v.kind else v
        if op in ("scalar_tensor", "full", "ones", "zeros", "ones_like", "zeros_like", "full_like"):
            value = {"ones": 1, "ones_like": 1, "zeros": 0, "zeros_like": 0}.get(op)
            if value is None:
                value = args[0] if op == "scalar_tensor" else args[1]
            k = out_kind or ("f" if isinstance(value, float) else "i32")
            if k == "b":
                return _Val("True" if value else "False", "b", bool(value))
            if k == "f":
                return _Val(_literal(float(value)), "f", float(value))
            return _Val(_literal(int(value)), k, int(value))
        if op == "index" and overload == "Tensor":
            return self.index(n, args[0], args[1])
        if op == "select" and overload == "int":
            return self.select(n, args[0], args[1], args[2])
        if op in _UNARY_FLOAT:
            v = self.arg(args[0])
            return self.new(_UNARY_FLOAT[op].format(self.as_float(v)), "f")
        if op == "neg":
            v = self.arg(args[0])
            return self.new(f"-({v.expr})", v.kind)
        if op == "abs":
            v = self.arg(args[0])
            return self.new(f"tl.abs({v.expr})", v.kind)
        if op in ("logical_not", "bitwise_not"):
            v = self.arg(args[0])
            return self.new(f"({v.expr}) == 0" if v.kind == "b" or op == "logical_not"
                            else f"~({v.expr})", "b" if v.kind == "b" or op == "logical_not" else v.kind)
        if op == "sign":
            v = self.arg(args[0])
            return self.new(f"tl.where({v.expr} > 0, 1, tl.where({v.expr} < 0, -1, 0)).to("
                            f"{_CAST[v.kind]})", v.kind)
        if op == "square":
            v = self.arg(args[0])
            return self.new(f"({v.expr}) * ({v.expr})", v.kind)
        if op in _COMPARE:
            a, b = self.arg(args[0]), self.arg(args[1])
            return self.new(f"({a.expr}) {_COMPARE[op]} ({b.expr})", "b")
        if op in _BITWISE:
            a, b = self.arg(args[0]), self.arg(args[1])
            if op.startswith("logical"):
                return self.new(f"(({a.expr}) != 0) {_BITWISE[op]} (({b.expr}) != 0)", "b")
            return self.new(f"({a.expr}) {_BITWISE[op]} ({b.expr})", out_kind or a.kind)
        if op in ("add", "sub", "mul", "rsub"):
            a, b = self.arg(args[0]), self.arg(args[1])
            if op == "rsub":
                a, b = b, a
            alpha = kw.get("alpha", args[2] if len(args) > 2 else None)
            k = out_kind or ("f" if "f" in (a.kind, b.kind) else a.kind)
            ae, be = (self.as_float(a), self.as_float(b)) if k == "f" else (a.expr, b.expr)
            if alpha is not None and alpha != 1:
                be = f"({_literal(alpha)} * ({be}))"
            sym = {"add": "+", "sub": "-", "mul": "*", "rsub": "-"}[op]
            return self.new(f"({ae}) {sym} ({be})", k)
        if op == "div":
            a, b = self.arg(args[0]), self.arg(args[1])
            mode = kw.get("rounding_mode")
            if mode is None:
                return self.new(f"({self.as_float(a)}) / ({self.as_float(b)})", "f")
            k = out_kind or a.kind
            if k == "f":
                q = f"({a.expr}) / ({b.expr})"
                return self.new(f"tl.floor({q})" if mode == "floor" else
                                f"tl.where({q} < 0, tl.ceil({q}), tl.floor({q}))", "f")
            return self.int_div(a, b, mode, k)
        if op in ("floor_divide",):
            a, b = self.arg(args[0]), self.arg(args[1])
            k = out_kind or a.kind
            if k == "f":
                return self.new(f"tl.floor(({a.expr}) / ({b.expr}))", "f")
            return self.int_div(a, b, "floor", k)
        if op in ("remainder", "fmod"):
            a, b = self.arg(args[0]), self.arg(args[1])
            k = out_kind or a.kind
            if k == "f":
                q = f"({a.expr}) / ({b.expr})"
                fl = f"tl.floor({q})" if op == "remainder" else f"tl.where({q} < 0, tl.ceil({q}), tl.floor({q}))"
                return self.new(f"({a.expr}) - ({b.expr}) * {fl}", "f")
            r = self.new(f"({a.expr}) % ({b.expr})", k)
            if op == "fmod":
                return r       # C remainder: the sign of the dividend, as fmod
            # Python's (floor) remainder: the sign of the divisor.
            return self.new(f"tl.where(({r.expr} != 0) & (({r.expr} < 0) != (({b.expr}) < 0)), "
                            f"{r.expr} + ({b.expr}), {r.expr})", k)
        if op in ("maximum", "minimum", "max", "min", "fmax", "fmin") and len(args) == 2:
            a, b = self.arg(args[0]), self.arg(args[1])
            k = out_kind or a.kind
            fn = "tl.maximum" if op in ("maximum", "max", "fmax") else "tl.minimum"
            if k == "f":
                return self.new(f"{fn}({self.as_float(a)}, {self.as_float(b)})", k)
            return self.new(f"{fn}({a.expr}, {b.expr})", k)
        if op in ("clamp", "clamp_min", "clamp_max"):
            v = self.arg(args[0])
            k = out_kind or v.kind
            e = self.as_float(v) if k == "f" else v.expr
            lo = args[1] if op != "clamp_max" else None
            hi = (args[2] if len(args) > 2 else kw.get("max")) if op == "clamp" else (
                args[1] if op == "clamp_max" else None)
            if op == "clamp":
                lo = args[1] if len(args) > 1 else kw.get("min")
            if lo is not None:
                e = f"tl.maximum({e}, {self.arg(lo).expr})"
            if hi is not None:
                e = f"tl.minimum({e}, {self.arg(hi).expr})"
            return self.new(e, k)
        if op == "where":
            c, a, b = self.arg(args[0]), self.arg(args[1]), self.arg(args[2])
            k = out_kind or a.kind
            ae, be = (self.as_float(a), self.as_float(b)) if k == "f" else (a.expr, b.expr)
            return self.new(f"tl.where({c.expr}, {ae}, {be})", k)
        if op == "pow":
            a, b = self.arg(args[0]), args[1]
            if isinstance(b, int) and 0 <= b <= 8:
                if b == 0:
                    return _Val("1.0" if a.kind == "f" else "1", a.kind)
                return self.new(" * ".join([f"({a.expr})"] * b), a.kind)
            bv = self.arg(b)
            return self.new(f"tl.exp2(({self.as_float(bv)}) * tl.log2({self.as_float(a)}))", "f")
        raise FxTranslationError(f"flex mods: aten op '{name}' has no tile-IR translation "
                                 f"(node {n.name}: {n.format_node()})")

    def int_div(self, a, b, mode, k):
        q = self.new(f"({a.expr}) // ({b.expr})", k)         # the kernel's // truncates
        if mode == "trunc":
            return q
        return self.new(f"tl.where((({a.expr}) % ({b.expr}) != 0) & ((({a.expr}) < 0) != "
                        f"(({b.expr}) < 0)), {q.expr} - 1, {q.expr})", k)

    def select(self, n, src, dim, index):
        buf = self.env.get(src)
        if not isinstance(buf, _Buf):
            raise FxTranslationError(f"flex mods: select of a computed value is not supported ({n.name})")
        dim = dim % len(buf.shape)
        index = index % buf.shape[dim]
        return _Buf(buf.slot, buf.shape[:dim] + buf.shape[dim + 1:],
                    buf.strides[:dim] + buf.strides[dim + 1:], buf.offset + index * buf.strides[dim])

    def index(self, n, src, idx):
        buf = self.env.get(src)
        if not isinstance(buf, _Buf):
            raise FxTranslationError(f"flex mods: aten.index.Tensor of a computed value is not "
                                     f"supported ({n.name}); index captured tensors")
        if len(idx) != len(buf.shape) or any(i is None for i in idx):
            raise FxTranslationError(f"flex mods: aten.index.Tensor must index every dimension of a "
                                     f"captured tensor with a value (shape {buf.shape}, node {n.name})")
        offs, ok = [str(buf.offset)] if buf.offset else [], []
        for i, size, stride in zip(idx, buf.shape, buf.strides):
            v = self.arg(i)
            if v.kind == "f" or v.kind == "b":
                raise FxTranslationError(f"flex mods: index of kind {v.kind} ({n.name})")
            offs.append(f"({v.expr}) * {stride}" if stride != 1 else f"({v.expr})")
            # Torch raises on an out-of-range index; the template evaluates mods
            # on padded tiles too, so such lanes read 0 instead of stray memory.
            ok.append(f"(({v.expr}) >= 0) & (({v.expr}) < {size})")
        val = n.meta.get("val")
        k = _kind_of(val.dtype) if val is not None else "f"
        other = "0.0" if k == "f" else "0"
        load = f"tl.load(B{buf.slot} + {' + '.join(offs) or '0'}, mask={' & '.join(ok)}, other={other})"
        if k == "f":
            load = f"{load}.to(tl.float32)"
        elif k == "b":
            load = f"({load} != 0)"
        return self.new(load, k)


# ----------------------------------------------------------- generated code
_HELPERS = '''
@zetile.jit
def _zt_tanh(x):
    # 1 - 2 / (exp(2x) + 1): saturates to +-1 through inf and 0 without a
    # select (the Xe lowering cannot select on data computed by a dot yet).
    return 1.0 - 2.0 / (tl.exp2(2.8853900817779268 * x) + 1.0)
'''


def _materialize(name_hint, params, body_lines, extra_globals=None):
    """Compiles generated source under a linecache filename, so @zetile.jit
    can read it back (and errors can show it) like any file's."""
    head = f"def {{name}}({', '.join(list(params) + list(_BUF_ARGS))}):\n"
    body = "\n".join(body_lines) + "\n"
    digest = hashlib.sha256((head + body).encode()).hexdigest()[:16]
    fname = f"{name_hint}_{digest}"
    src = ("import zetile\nimport zetile.language as tl\n" + _HELPERS + "\n\n"
           + head.format(name=fname) + body)
    filename = f"<zetile-flex-mod {fname}>"
    lines = src.splitlines(keepends=True)
    linecache.cache[filename] = (len(src), None, lines, filename)
    g = {"__name__": "zetile_flex_mods"}
    g.update(extra_globals or {})
    exec(compile(src, filename, "exec"), g)
    return zetile.jit(g[fname]), src


_cache = {}

def _materialized(kind, lines):
    """(fn, source) of a body; cached."""
    key = (kind, tuple(lines))
    hit = _cache.get(key)
    if hit is None:
        params = list(SCORE_ARGS if kind == "score" else MASK_ARGS)
        hit = _cache[key] = _materialize(f"{kind}_mod", params, list(lines))
    return hit


def translate(gm, kind, buffer_shapes=None):
    """A GraphModule of a score_mod ("score") or mask_mod ("mask") as a
    TranslatedMod. Placeholders after the mod's own arguments are captured
    tensors (shapes from their meta, or `buffer_shapes`); their tensors are
    supplied by the caller, so `buffers` holds None for them."""
    if kind not in ("score", "mask"):
        raise ValueError(f"kind must be 'score' or 'mask', got {kind!r}")
    w = _Writer(gm, kind, len(SCORE_ARGS if kind == "score" else MASK_ARGS), buffer_shapes)
    lines, buffers = w.run()
    fn, src = _materialized(kind, lines)
    return TranslatedMod(fn, buffers, src, kind, tuple(lines))


_LINE = re.compile(r"^    (v\d+ = |return )[^;]*$")


def from_body(kind, body, n_buffers):
    """The mod a `body` (TranslatedMod.body) describes, its tensors supplied
    by the caller. The lines are checked to be generated assignments (no
    statements of other shapes, no dunder names or imports) before they are
    compiled, since they may come from a string in generated torch code."""
    body = tuple(body)
    for ln in body:
        if not _LINE.match(ln) or "__" in ln or "import" in ln or "lambda" in ln:
            raise ValueError(f"not a generated flex mod line: {ln!r}")
    fn, src = _materialized(kind, body)
    return TranslatedMod(fn, [None] * n_buffers, src, kind, body)


def mods_string(score, mask):
    """One content-derived string for a (score, mask) pair of translated mods
    (either may be None): what torch.ops.zetile.flex_attention takes."""
    for tm in (score, mask):
        if tm is not None and tm.body is None:
            raise ValueError("a @zetile.jit mod has no portable string form; pass it to "
                             "zetile.ops.flex_attention directly")
    return json.dumps({"score": list(score.body) if score is not None else None,
                       "mask": list(mask.body) if mask is not None else None})


def mods_from_string(text, n_score_buffers, n_mask_buffers):
    d = json.loads(text)
    score = from_body("score", d["score"], n_score_buffers) if d.get("score") else None
    mask = from_body("mask", d["mask"], n_mask_buffers) if d.get("mask") else None
    return score, mask


def trace(mod, kind):
    """An FX graph of a Python mod, with aten-named call targets and each
    node's value in meta["val"]. A light tracer first (proxies through
    __torch_function__ and Python operators: no torch._dynamo import, which
    costs seconds in a fresh process); what it does not know falls back to
    make_fx on one-element tensors, as torch traces flex mods."""
    try:
        return _fast_trace(mod, kind)
    except _Fallback:
        pass
    return _make_fx_trace(mod, kind)


def _make_fx_trace(mod, kind):
    import torch
    from torch.fx.experimental.proxy_tensor import make_fx
    # Distinct tensors: make_fx maps a tensor object to one graph input.
    idx = tuple(torch.zeros((1,), dtype=torch.int32) for _ in range(4))
    args = ((torch.zeros((1,), dtype=torch.float32),) + idx) if kind == "score" else idx
    try:
        return make_fx(mod)(*args)
    except FxTranslationError:
        raise
    except Exception as e:  # data-dependent Python control flow, unsupported torch calls
        raise FxTranslationError(f"flex mods: cannot trace {getattr(mod, '__name__', mod)!r} to an FX "
                                 f"graph: {type(e).__name__}: {e}") from e


class _Fallback(Exception):
    """The light tracer met something it does not model."""


class _Target:
    """A call target named like an aten overload ("ge.Tensor") for the writer."""

    def __init__(self, name, fn):
        self.__name__, self._fn = name, fn

    def __call__(self, *a, **k):
        return self._fn(*a, **k)

    def __repr__(self):
        return f"aten.{self.__name__}"


# torch-level names -> aten-level op names the writer knows.
_TORCH_TO_ATEN = {"__getitem__": "index", "true_divide": "div", "subtract": "sub",
                  "multiply": "mul", "greater_equal": "ge", "greater": "gt", "less_equal": "le",
                  "less": "lt", "not_equal": "ne", "absolute": "abs", "negative": "neg",
                  "clip": "clamp", "type": "to", "float": "to", "int": "to", "bool": "to",
                  "long": "to"}
_FAST_OPS = set(_UNARY_FLOAT) | set(_COMPARE) | set(_BITWISE) | {
    "add", "sub", "mul", "rsub", "div", "floor_divide", "remainder", "fmod", "neg", "abs",
    "maximum", "minimum", "clamp", "clamp_min", "clamp_max", "where", "pow", "to", "square",
    "sign", "logical_not", "bitwise_not", "index"}


class _Tracer:
    def __init__(self):
        import torch
        self.torch = torch
        self.graph = torch.fx.Graph()
        self.consts = {}
        self.root = torch.nn.Module()

    def const(self, t):
        node = self.consts.get(id(t))
        if node is None:
            name = f"_c{len(self.consts)}"
            setattr(self.root, name, t)
            node = self.graph.get_attr(name)
            node.meta["val"] = t
            self.consts[id(t)] = node
        return node

    def lower(self, x):
        """(graph argument, real value) of a traced argument."""
        torch = self.torch
        if isinstance(x, _Proxy):
            return x.node, x.val
        if isinstance(x, torch.Tensor):
            return self.const(x), x
        if isinstance(x, (bool, int, float)):
            return x, x
        if isinstance(x, (list, tuple)):
            parts = [self.lower(y) for y in x]
            return [p[0] for p in parts], type(x)(p[1] for p in parts)
        if x is None or isinstance(x, (str, torch.dtype)):
            return x, x
        raise _Fallback(f"argument of type {type(x).__name__}")

    def record(self, name, fn, args, kwargs=None):
        kwargs = dict(kwargs or {})
        name = _TORCH_TO_ATEN.get(name, name)
        if name not in _FAST_OPS:
            raise _Fallback(name)
        gargs, vals = zip(*[self.lower(a) for a in args]) if args else ((), ())
        gkw, vkw = {}, {}
        for k, v in kwargs.items():
            gkw[k], vkw[k] = self.lower(v)
        if name == "index":
            # tensor[proxy] / tensor[p0, p1]: aten.index.Tensor(tensor, [indices]).
            idx = gargs[1] if isinstance(gargs[1], list) else [gargs[1]]
            if not isinstance(args[0], self.torch.Tensor) or isinstance(args[0], _Proxy):
                raise _Fallback("index of a computed value")
            gargs = (gargs[0], idx)
        with self.torch._C.DisableTorchFunction():
            out = fn(*vals, **vkw)
        if not isinstance(out, self.torch.Tensor):
            raise _Fallback(f"{name} returned {type(out).__name__}")
        overload = {"index": "Tensor", "where": "self"}.get(name, "default")
        node = self.graph.call_function(_Target(f"{name}.{overload}", fn), tuple(gargs), gkw)
        node.meta["val"] = out
        return _Proxy(self, node, out)


class _Proxy:
    """A traced value: its graph node and a real one-element value (for dtypes)."""
    __slots__ = ("tracer", "node", "val")

    def __init__(self, tracer, node, val):
        self.tracer, self.node, self.val = tracer, node, val

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        tracer = next(a.tracer for a in _flat(args) if isinstance(a, _Proxy))
        return tracer.record(getattr(func, "__name__", str(func)), func, args, kwargs)

    def _op(self, name, fn, *args):
        return self.tracer.record(name, fn, args)

    def __bool__(self):
        raise _Fallback("Python control flow on a traced value")

    def __getitem__(self, i):
        raise _Fallback("indexing a traced value")

    @property
    def dtype(self):
        return self.val.dtype

    def to(self, *a, **k):
        return self.tracer.record("to", lambda x, *a, **k: x.to(*a, **k), (self,) + a, k)


def _flat(xs):
    for x in xs:
        if isinstance(x, (list, tuple)):
            yield from _flat(x)
        else:
            yield x


def _binop(name, fn, swap=False):
    def op(self, other):
        return self._op(name, fn, *((other, self) if swap else (self, other)))
    return op


def _install_operators():
    import operator as O
    ops = {"__add__": ("add", O.add, False), "__radd__": ("add", O.add, True),
           "__sub__": ("sub", O.sub, False), "__rsub__": ("sub", O.sub, True),
           "__mul__": ("mul", O.mul, False), "__rmul__": ("mul", O.mul, True),
           "__truediv__": ("div", O.truediv, False), "__rtruediv__": ("div", O.truediv, True),
           "__floordiv__": ("floor_divide", O.floordiv, False),
           "__rfloordiv__": ("floor_divide", O.floordiv, True),
           "__mod__": ("remainder", O.mod, False), "__rmod__": ("remainder", O.mod, True),
           "__pow__": ("pow", O.pow, False),
           "__and__": ("bitwise_and", O.and_, False), "__rand__": ("bitwise_and", O.and_, True),
           "__or__": ("bitwise_or", O.or_, False), "__ror__": ("bitwise_or", O.or_, True),
           "__xor__": ("bitwise_xor", O.xor, False), "__rxor__": ("bitwise_xor", O.xor, True),
           "__ge__": ("ge", O.ge, False), "__gt__": ("gt", O.gt, False),
           "__le__": ("le", O.le, False), "__lt__": ("lt", O.lt, False),
           "__eq__": ("eq", O.eq, False), "__ne__": ("ne", O.ne, False)}
    for dunder, (name, fn, swap) in ops.items():
        setattr(_Proxy, dunder, _binop(name, fn, swap))
    _Proxy.__neg__ = lambda self: self._op("neg", O.neg, self)
    _Proxy.__abs__ = lambda self: self._op("abs", abs, self)
    _Proxy.__invert__ = lambda self: self._op("bitwise_not", O.invert, self)


_install_operators()


def _fast_trace(mod, kind):
    import torch
    tr = _Tracer()
    names = SCORE_ARGS if kind == "score" else MASK_ARGS
    proxies = []
    for n in names:
        node = tr.graph.placeholder(n)
        val = torch.zeros((1,), dtype=torch.float32 if n == "score" else torch.int32)
        node.meta["val"] = val
        proxies.append(_Proxy(tr, node, val))
    try:
        out = mod(*proxies)
    except _Fallback:
        raise
    except Exception as e:   # anything the proxies do not model: let make_fx try
        raise _Fallback(f"{type(e).__name__}: {e}") from e
    if isinstance(out, _Proxy):
        tr.graph.output(out.node)
    elif isinstance(out, (bool, int, float)):
        tr.graph.output(out)
    else:
        raise _Fallback(f"the mod returned {type(out).__name__}")
    return torch.fx.GraphModule(tr.root, tr.graph)


def _wrap_jit(user, kind):
    params = list(SCORE_ARGS if kind == "score" else MASK_ARGS)
    call = f"    return _zt_user({', '.join(params)})"
    fn, src = _materialize(f"{kind}_jit_{user.__name__}", params, [call], {"_zt_user": user})
    return TranslatedMod(fn, [], src, kind)


_mod_cache = {}


def from_mod(mod, kind):
    """A mod given by a user: a @zetile.jit function (called with the mod's
    own arguments), or a Python function traced and translated. Cached per
    function and the objects its closure holds."""
    if isinstance(mod, TranslatedMod):
        return mod
    closure = tuple(id(c.cell_contents) for c in (getattr(mod, "__closure__", None) or ()))
    key = (mod, kind, closure)
    try:
        hit = _mod_cache.get(key)
    except TypeError:
        hit, key = None, None
    if hit is not None:
        return hit
    if isinstance(mod, zetile.JITFunction):
        tm = _wrap_jit(mod, kind)
    else:
        tm = translate(trace(mod, kind), kind)
    if key is not None:
        _mod_cache[key] = tm
    return tm
