"""zetile.language: Triton's tile language (`import zetile.language as tl`).

Builtins here run while a @zetile.jit function is being compiled: they add
ops to the kernel through the current `Semantic`. Called anywhere else they
raise, as Triton's do ("did you forget @jit?").
"""
from __future__ import annotations

import builtins
import enum
import numbers
import threading

from . import dtypes as _dt
from .dtypes import (dtype, pointer_type, int1, int8, int16, int32, int64, uint8, uint16,  # noqa: F401
                     uint32, uint64, float16, bfloat16, float32, float64, float8e4nv, float8e5,
                     float8e4b15, float8e4b8, float8e5b16)
from .semantic import tensor

pi32_t = _dt.pointer_type(int32)  # Triton's name for a pointer to int32

from .. import _C


_state = threading.local()


def _sem():
    s = getattr(_state, "semantic", None)
    if s is None:
        raise RuntimeError("zetile.language builtins can only be called inside a @zetile.jit "
                           "function (did you forget @jit?)")
    return s


class _SemanticScope:
    """Makes `sem` current for builtins while a kernel is compiled."""

    def __init__(self, sem):
        self.sem = sem

    def __enter__(self):
        self.prev = getattr(_state, "semantic", None)
        _state.semantic = self.sem
        return self.sem

    def __exit__(self, *exc):
        _state.semantic = self.prev


def builtin(fn):
    """Marks a function the code generator calls directly (not inlined)."""
    fn.__zetile_builtin__ = True
    return fn


class constexpr:
    """A compile-time value. As a parameter annotation it marks a kernel
    parameter whose value is baked into the compiled code."""

    def __init__(self, value):
        self.value = value.value if isinstance(value, constexpr) else value

    def __repr__(self):
        return f"constexpr[{self.value!r}]"

    def __index__(self):
        return self.value.__index__()

    def __bool__(self):
        return bool(self.value)

    def __hash__(self):
        return hash(self.value)

    def __eq__(self, other):
        return self.value == _unwrap(other)

    def __call__(self, *args, **kwargs):
        return self.value(*args, **kwargs)

    @property
    def type(self):
        """Triton's `x.type` on a compile-time value: constexpr_type(value)."""
        return constexpr_type(self.value)


class constexpr_type:
    """The type of a compile-time value (Triton's tl.constexpr_type): equal
    when the values are."""

    def __init__(self, value):
        self.value = _unwrap(value)

    def __eq__(self, other):
        return isinstance(other, constexpr_type) and self.value == other.value

    def __hash__(self):
        return hash(self.value)

    def __repr__(self):
        return f"constexpr_type[{self.value}]"


def _unwrap(x):
    while isinstance(x, constexpr):
        x = x.value
    return x


class PropagateNan(enum.Enum):
    NONE = 0
    ALL = 0xFFFF


def _int(x, what):
    x = _unwrap(x)
    if isinstance(x, tensor):
        raise TypeError(f"{what} must be a compile-time constant (tl.constexpr), got a tensor")
    # int() would truncate: tl.arange(0, 16.0) or BLOCK=16.5 ran as 16 (issue 17).
    if isinstance(x, numbers.Real) and not isinstance(x, numbers.Integral):
        raise TypeError(f"{what} must be an integer, got {x!r}")
    return int(x)


def _shape(shape):
    shape = _unwrap(shape)
    if isinstance(shape, (int,)):
        return (shape,)
    return tuple(_int(s, "shape entries") for s in shape)


# ---------------------------------------------------------------- programs
@builtin
def program_id(axis):
    axis = _int(axis, "program_id's axis")
    if axis not in (0, 1, 2):
        raise ValueError(f"program_id axis must be 0, 1, or 2 but got {axis}")
    return _sem().program_id(axis)


@builtin
def num_programs(axis):
    return _sem().num_programs(_int(axis, "num_programs' axis"))


# ---------------------------------------------------------------- creation
@builtin
def arange(start, end):
    return _sem().arange(_int(start, "arange's start"), _int(end, "arange's end"))


@builtin
def full(shape, value, dtype):
    return _sem().full(_shape(shape), _unwrap(value), _unwrap(dtype))


@builtin
def zeros(shape, dtype):
    return _sem().full(_shape(shape), 0, _unwrap(dtype))


@builtin
def zeros_like(input, dtype=None):
    input = _sem().to_tensor(_unwrap(input))
    return _sem().full(input.shape, 0, _unwrap(dtype) or input.dtype)


@builtin
def cast(input, dtype, fp_downcast_rounding=None, bitcast=False):
    s = _sem()
    dtype = _unwrap(dtype)
    if _unwrap(bitcast):
        return s.bitcast(_unwrap(input), dtype)
    return s.cast(_unwrap(input), dtype, _unwrap(fp_downcast_rounding))


# ------------------------------------------------------------------ memory
@builtin
def load(pointer, mask=None, other=None, boundary_check=(), padding_option="", cache_modifier="",
         eviction_policy="", volatile=False):
    from . import blocks
    p = _unwrap(pointer)
    if isinstance(p, blocks.block_ptr):
        if _unwrap(mask) is not None or _unwrap(other) is not None:
            raise ValueError("tl.load of a block pointer takes boundary_check/padding_option, "
                             "not mask/other")
        return blocks.load_block(p, boundary_check, _unwrap(padding_option))
    if _unwrap(boundary_check):
        raise ValueError("boundary_check only applies to block pointers (tl.make_block_ptr)")
    return _sem().load(p, _unwrap(mask), _unwrap(other))


@builtin
def store(pointer, value, mask=None, boundary_check=(), cache_modifier="", eviction_policy=""):
    from . import blocks
    p = _unwrap(pointer)
    if isinstance(p, blocks.block_ptr):
        if _unwrap(mask) is not None:
            raise ValueError("tl.store of a block pointer takes boundary_check, not mask")
        return blocks.store_block(p, _unwrap(value), boundary_check)
    if _unwrap(boundary_check):
        raise ValueError("boundary_check only applies to block pointers (tl.make_block_ptr)")
    _sem().store(p, _unwrap(value), _unwrap(mask))


# -------------------------------------------------------------------- math
def _float_unary(op, name, dtypes=("fp32", "fp64")):
    def fn(x):
        s = _sem()
        t = s.to_tensor(_unwrap(x))
        # Triton checks these dtypes (its math.py): fp16/bf16 must be upcast explicitly.
        if t.dtype.name not in dtypes:
            raise ValueError(f"Expected dtype {list(dtypes)} but got {t.dtype.name}")
        return s.unary_float(op, t, name)
    fn.__name__ = name
    fn.__doc__ = f"Elementwise {name} ({' or '.join(dtypes)})."
    return builtin(fn)


exp = _float_unary(_C.UNARY_EXP, "exp")
exp2 = _float_unary(_C.UNARY_EXP2, "exp2")
log = _float_unary(_C.UNARY_LOG, "log")
log2 = _float_unary(_C.UNARY_LOG2, "log2")
sqrt = _float_unary(_C.UNARY_SQRT, "sqrt")
sqrt_rn = _float_unary(_C.UNARY_SQRT, "sqrt_rn", ("fp32",))
rsqrt = _float_unary(_C.UNARY_RSQRT, "rsqrt")
sin = _float_unary(_C.UNARY_SIN, "sin")
cos = _float_unary(_C.UNARY_COS, "cos")
erf = _float_unary(_C.UNARY_ERF, "erf")
floor = _float_unary(_C.UNARY_FLOOR, "floor")
ceil = _float_unary(_C.UNARY_CEIL, "ceil")


@builtin
def abs(x):
    return _sem().abs(_unwrap(x))


@builtin
def fma(x, y, z):
    return _sem().fma(_unwrap(x), _unwrap(y), _unwrap(z))


@builtin
def maximum(x, y, propagate_nan=PropagateNan.NONE):
    return _sem().maximum(_unwrap(x), _unwrap(y), _unwrap(propagate_nan) == PropagateNan.ALL)


@builtin
def minimum(x, y, propagate_nan=PropagateNan.NONE):
    return _sem().minimum(_unwrap(x), _unwrap(y), _unwrap(propagate_nan) == PropagateNan.ALL)


@builtin
def clamp(x, min, max, propagate_nan=PropagateNan.NONE):
    s = _sem()
    all_ = _unwrap(propagate_nan) == PropagateNan.ALL
    return s.minimum(s.maximum(_unwrap(x), _unwrap(min), all_), _unwrap(max), all_)


@builtin
def where(condition, x, y):
    return _sem().where(_unwrap(condition), _unwrap(x), _unwrap(y))


@builtin
def fdiv(x, y, ieee_rounding=False):
    return _sem().fdiv(_unwrap(x), _unwrap(y), _unwrap(ieee_rounding))


@builtin
def div_rn(x, y):
    s = _sem()
    x, y = s.to_tensor(_unwrap(x)), s.to_tensor(_unwrap(y))
    if not (x.dtype.is_fp32() and y.dtype.is_fp32()):
        raise ValueError(f"Expected dtype ['fp32'] but got {x.dtype.name}")
    return s.fdiv(x, y, True)


@builtin
def umulhi(x, y):
    s = _sem()
    x = s.to_tensor(_unwrap(x))
    y = _unwrap(y)
    # Triton checks every tensor argument (int32 * int8 is refused, not promoted).
    for v in (x, y):
        if isinstance(v, tensor) and v.dtype.name not in ("int32", "int64", "uint32", "uint64"):
            raise ValueError(f"Expected dtype ['int32', 'int64', 'uint32', 'uint64'] but got {v.dtype.name}")
    return s.umulhi(x, y)


@builtin
def sigmoid(x):
    s = _sem()
    return s.truediv(1, s.add(1, exp(s.minus(s.to_tensor(_unwrap(x))))))


@builtin
def cdiv(x, div):
    x, div = _unwrap(x), _unwrap(div)
    if isinstance(x, int) and isinstance(div, int):
        return constexpr((x + div - 1) // div)
    s = _sem()
    return s.floordiv(s.sub(s.add(x, div), 1), div)


# ------------------------------------------------------------------ shapes
@builtin
def broadcast_to(input, *shape):
    if len(shape) == 1 and isinstance(_unwrap(shape[0]), (tuple, list)):
        shape = _unwrap(shape[0])
    return _sem().broadcast_to(_sem().to_tensor(_unwrap(input)), _shape(shape))


@builtin
def broadcast(input, other):
    s = _sem()
    return s.broadcast_pair(s.to_tensor(_unwrap(input)), s.to_tensor(_unwrap(other)))


@builtin
def expand_dims(input, axis):
    s = _sem()
    t = s.to_tensor(_unwrap(input))
    axes = _unwrap(axis)
    axes = [axes] if isinstance(axes, int) else [_int(a, "expand_dims axis") for a in axes]
    rank = len(t.shape) + len(axes)
    norm = [a + rank if a < 0 else a for a in axes]
    for a, n in zip(axes, norm):
        if not 0 <= n < rank:
            raise ValueError(f"invalid axis {a}: expand_dims of a rank-{len(t.shape)} tensor by "
                             f"{len(axes)} dimension(s) takes axes in [{-rank}, {rank})")
    if len(set(norm)) != len(norm):
        raise ValueError(f"expand_dims got duplicate axes, normalized axes = {sorted(norm)}")
    for a in sorted(norm):
        t = s.expand_dims(t, a)
    return t


@builtin
def reshape(input, *shape, can_reorder=False):
    if len(shape) == 1 and isinstance(_unwrap(shape[0]), (tuple, list)):
        shape = _unwrap(shape[0])
    return _sem().reshape(_sem().to_tensor(_unwrap(input)), _shape(shape))


view = reshape


@builtin
def ravel(x, can_reorder=False):
    t = _sem().to_tensor(_unwrap(x))
    return _sem().reshape(t, (t.numel,))


@builtin
def permute(input, *dims):
    if len(dims) == 1 and isinstance(_unwrap(dims[0]), (tuple, list)):
        dims = _unwrap(dims[0])
    return _sem().permute(_sem().to_tensor(_unwrap(input)), [_int(d, "permute dims") for d in dims])


@builtin
def trans(input, *dims):
    t = _sem().to_tensor(_unwrap(input))
    if len(dims) == 1 and isinstance(_unwrap(dims[0]), (tuple, list)):
        dims = _unwrap(dims[0])
    if not dims:
        # Swaps the last two axes (a batched transpose for rank > 2), as Triton's.
        n = len(t.shape)
        if n < 2:
            raise ValueError("tl.trans invoked with a 0- or 1-dimensional tensor")
        dims = tuple(builtins.range(n - 2)) + (n - 1, n - 2)
    return _sem().permute(t, [_int(d, "trans dims") for d in dims])


# -------------------------------------------------------------- reductions
def _reduce_input(input, kind_float_min32=True):
    s = _sem()
    return s.to_tensor(_unwrap(input))


@builtin
def sum(input, axis=None, keep_dims=False, dtype=None):
    s = _sem()
    t = s.to_tensor(_unwrap(input))
    dt = _unwrap(dtype)
    if dt is None:
        if t.dtype.is_int_signed() and t.dtype.int_bitwidth < 32:
            dt = int32
        elif t.dtype.is_int_unsigned() and t.dtype.int_bitwidth < 32:
            dt = uint32
    if dt is not None:
        t = s.cast(t, dt)
    return s.reduce_builtin(t, _axis(axis), _C.REDUCE_ADD, _unwrap(keep_dims))


def _axis(axis):
    axis = _unwrap(axis)
    return None if axis is None else int(axis)


def _minmax_input(t):
    s = _sem()
    t = s.to_tensor(_unwrap(t))
    if t.dtype.primitive_bitwidth < 32:
        t = s.cast(t, float32 if t.dtype.is_floating() else int32)
    return t


@builtin
def max(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    if _unwrap(return_indices):
        from .standard import max_with_indices
        return max_with_indices(input, axis, return_indices_tie_break_left, keep_dims)
    s = _sem()
    t = _minmax_input(input)
    kind = _C.REDUCE_MAXNUM if t.dtype.is_floating() else (
        _C.REDUCE_MAX if t.dtype.is_int_signed() else _C.REDUCE_UMAX)
    return s.reduce_builtin(t, _axis(axis), kind, _unwrap(keep_dims))


@builtin
def min(input, axis=None, return_indices=False, return_indices_tie_break_left=True, keep_dims=False):
    if _unwrap(return_indices):
        from .standard import min_with_indices
        return min_with_indices(input, axis, return_indices_tie_break_left, keep_dims)
    s = _sem()
    t = _minmax_input(input)
    kind = _C.REDUCE_MINNUM if t.dtype.is_floating() else (
        _C.REDUCE_MIN if t.dtype.is_int_signed() else _C.REDUCE_UMIN)
    return s.reduce_builtin(t, _axis(axis), kind, _unwrap(keep_dims))


@builtin
def xor_sum(input, axis=None, keep_dims=False):
    s = _sem()
    t = s.to_tensor(_unwrap(input))
    if not t.dtype.is_int():
        raise TypeError("xor_sum needs an integer tensor")
    return s.reduce_builtin(t, _axis(axis), _C.REDUCE_XOR, _unwrap(keep_dims))


# -------------------------------------------------------------------- dot
@builtin
def dot(input, other, acc=None, input_precision=None, allow_tf32=None, max_num_imprecise_acc=None,
        out_dtype=None):
    # out_dtype None (Triton's default): fp32, or the accumulator's dtype when one is given.
    s = _sem()
    prec = _unwrap(input_precision)
    if prec is None and _unwrap(allow_tf32) is not None:
        prec = "tf32" if _unwrap(allow_tf32) else "ieee"
    return s.dot(s.to_tensor(_unwrap(input)), s.to_tensor(_unwrap(other)), _unwrap(acc), prec,
                 _unwrap(out_dtype))


@builtin
def dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None, fast_math=False,
               lhs_k_pack=True, rhs_k_pack=True, out_dtype=float32):
    """Microscaling dot (mxfp4/mxfp8 with e8m0 scales), by upcasting: mxfp.py."""
    from . import mxfp
    u = _unwrap
    return mxfp.dot_scaled(_sem(), u(lhs), u(lhs_scale), u(lhs_format), u(rhs), u(rhs_scale),
                           u(rhs_format), u(acc), u(fast_math), u(lhs_k_pack), u(rhs_k_pack),
                           u(out_dtype))


# ------------------------------------------------------ hints and debugging
@builtin
def multiple_of(input, values):
    return _sem().hint(_unwrap(input), "multiple_of", _unwrap(values))


@builtin
def max_contiguous(input, values):
    return _sem().hint(_unwrap(input), "max_contiguous", _unwrap(values))


@builtin
def max_constancy(input, values):
    return _sem().hint(_unwrap(input), "max_constancy", _unwrap(values))


@builtin
def debug_barrier():
    return None


@builtin
def static_assert(cond, msg=""):
    if not _unwrap(cond):
        raise AssertionError(f"static_assert failed: {_unwrap(msg)}")


@builtin
def static_print(*values, sep=" ", end="\n", file=None, flush=False):
    builtins.print(*[_unwrap(v) for v in values], sep=sep, end=end, flush=flush)


# Iterators handled by the code generator (`for i in tl.range(...)`).
class range:
    def __init__(self, arg1, arg2=None, step=None, num_stages=None, loop_unroll_factor=None,
                 disallow_acc_multi_buffer=False, flatten=False, warp_specialize=False,
                 disable_licm=False):
        if arg2 is None:
            self.start, self.end = constexpr(0), arg1
        else:
            self.start, self.end = arg1, arg2
        self.step = constexpr(1) if step is None else step


class static_range:
    def __init__(self, arg1, arg2=None, step=None):
        if arg2 is None:
            self.start, self.end = 0, _unwrap(arg1)
        else:
            self.start, self.end = _unwrap(arg1), _unwrap(arg2)
        self.step = 1 if step is None else _unwrap(step)


# ---------------------------------------------------------- tensor methods
def _binop(name, fn_name, swap=False):
    def op(self, other):
        s = _sem()
        f = getattr(s, fn_name)
        return f(_unwrap(other), self) if swap else f(self, _unwrap(other))
    op.__name__ = name
    return op


_BINOPS = {
    "__add__": "add", "__sub__": "sub", "__mul__": "mul", "__truediv__": "truediv",
    "__floordiv__": "floordiv", "__mod__": "mod", "__and__": "and_", "__or__": "or_",
    "__xor__": "xor_", "__lshift__": "shl", "__rshift__": "shr",
    "__lt__": "less_than", "__le__": "less_equal", "__gt__": "greater_than",
    "__ge__": "greater_equal", "__eq__": "equal", "__ne__": "not_equal",
}
for _name, _fn in _BINOPS.items():
    setattr(tensor, _name, _binop(_name, _fn))
    if _name not in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
        setattr(tensor, "__r" + _name[2:], _binop("__r" + _name[2:], _fn, swap=True))
tensor.__hash__ = object.__hash__
tensor.__neg__ = lambda self: _sem().minus(self)
tensor.__pos__ = lambda self: self
tensor.__invert__ = lambda self: _sem().invert(self)
tensor.logical_and = lambda self, other: _sem().logical_and(self, _unwrap(other))
tensor.logical_or = lambda self, other: _sem().logical_or(self, _unwrap(other))


def _to(self, dtype, fp_downcast_rounding=None, bitcast=False):
    return cast(self, dtype, fp_downcast_rounding, bitcast)


def _getitem(self, slices):
    s = _sem()
    slices = _unwrap(slices)
    if not isinstance(slices, tuple):
        slices = (slices,)
    t = self
    dim = 0
    for sl in slices:
        sl = _unwrap(sl)
        if sl is None:
            t = s.expand_dims(t, dim)
            dim += 1
        elif isinstance(sl, slice) and sl.start is None and sl.stop is None and sl.step is None:
            dim += 1
        else:
            raise ValueError(f"unsupported tensor index {sl!r}: only None and ':' are supported")
    return t


tensor.to = _to
tensor.cast = _to


def _item(self):
    """x.item(): the one element of a block as a scalar (Triton's)."""
    if self.shape and self.numel != 1:
        raise ValueError(f"item() needs a tensor of one element, got shape {list(self.shape)}")
    if not self.shape:
        return self
    # A one-element reduction gives the scalar: XOR with nothing for integers,
    # a sum of one term for floats (16-bit floats through float32, exactly).
    s = _sem()
    dt = self.dtype
    if dt.is_floating():
        wide = dt.primitive_bitwidth < 32
        t = s.cast(self, float32) if wide else self
        r = s.reduce_builtin(t, None, _C.REDUCE_ADD)
        return s.cast(r, dt) if wide else r
    return s.reduce_builtin(self, None, _C.REDUCE_XOR)


tensor.item = _item
tensor.__getitem__ = _getitem
tensor.T = property(lambda self: trans(self))
tensor.reshape = lambda self, *shape, **kw: reshape(self, *shape, **kw)
tensor.view = tensor.reshape
tensor.broadcast_to = lambda self, *shape: broadcast_to(self, *shape)
tensor.expand_dims = lambda self, axis: expand_dims(self, axis)
tensor.trans = lambda self, *dims: trans(self, *dims)
tensor.permute = lambda self, *dims: permute(self, *dims)
tensor.ravel = lambda self: ravel(self)
for _m in ("sum", "max", "min", "xor_sum"):
    setattr(tensor, _m, (lambda f: lambda self, *a, **k: f(self, *a, **k))(globals()[_m]))
for _m in ("exp", "exp2", "log", "log2", "sqrt", "sqrt_rn", "rsqrt", "sin", "cos", "abs", "floor", "ceil",
           "erf", "sigmoid"):
    setattr(tensor, _m, (lambda f: lambda self: f(self))(globals()[_m]))

for _m in ("argmax", "argmin", "cumsum", "cumprod", "reduce", "associative_scan", "gather", "flip",
           "sort", "topk", "histogram", "atomic_poll"):
    def _method(name):
        def m(self, *a, **k):
            from . import standard
            return getattr(standard, name)(self, *a, **k)
        return m
    setattr(tensor, _m, _method(_m))
