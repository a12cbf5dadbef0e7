"""Reductions with combiners, scans, argmax/argmin, atomics and debugging ops
(Triton's names and semantics; see triton/language/standard.py for the model)."""
from __future__ import annotations

from .. import _C
from . import dtypes as T
from .core import _sem, _unwrap, builtin, cast, constexpr
from . import semantic as _semantic
from .semantic import tensor


def _as_tuple(x):
    x = _unwrap(x)
    return (tuple(_unwrap(v) for v in x), True) if isinstance(x, (tuple, list)) else ((x,), False)


def _normalize_axis(axis, rank):
    axis = _unwrap(axis)
    if axis is None:
        return None
    axis = int(axis)
    if axis < 0:
        axis += rank
    if not 0 <= axis < rank:
        raise ValueError(f"axis {axis} out of range for rank {rank}")
    return axis


def _combine(combine_fn, lhs, rhs):
    """Runs a combiner on scalars: a @jit function (inlined by the code
    generator) or a Python function of builtins."""
    s = _sem()
    from ..jit import JITFunction
    if isinstance(combine_fn, JITFunction):
        gen = getattr(s, "codegen", None)
        if gen is None:
            raise RuntimeError("combiners can only run while a kernel is compiled")
        out = gen.inline_call(combine_fn, list(lhs) + list(rhs), {}, gen.cur_node)
    else:
        out = combine_fn(*lhs, *rhs)
    out, _ = _as_tuple(out)
    return out


def _reduce_impl(srcs, axis, combine_fn, keep_dims, scan=False, reverse=False):
    s = _sem()
    srcs = [s.to_tensor(x) for x in srcs]
    shape = srcs[0].shape
    for x in srcs[1:]:
        if x.shape != shape:
            raise ValueError("reduce/scan operands must have one shape")
    if not shape:
        return tuple(srcs)
    rank = len(shape)
    axis = _normalize_axis(axis, rank)
    if axis is None:
        if scan:
            raise ValueError("scans need an axis")
        srcs = [s.reshape(x, (x.numel,)) for x in srcs]
        axis, rank, shape = 0, 1, (srcs[0].numel,)
    b = s.b
    n = len(srcs)
    if scan:
        args = b.scan_begin([x.handle for x in srcs], axis, bool(reverse))
    else:
        args = b.reduce_begin([x.handle for x in srcs], axis)
    lhs = [tensor(h, x.dtype) for h, x in zip(args[:n], srcs)]
    rhs = [tensor(h, x.dtype) for h, x in zip(args[n:], srcs)]
    out = _combine(combine_fn, lhs, rhs)
    if len(out) != n:
        raise ValueError(f"the combine function returned {len(out)} values for {n} operands")
    out = [s.cast(s.to_tensor(_unwrap(o)), x.dtype) for o, x in zip(out, srcs)]
    for o in out:
        if o.shape:
            raise ValueError("the combine function must return scalars")
    if scan:
        res = b.scan_end([o.handle for o in out])
        return tuple(tensor(h, x.dtype, shape) for h, x in zip(res, srcs))
    res = b.reduce_end([o.handle for o in out])
    rshape = shape[:axis] + shape[axis + 1:]
    results = [tensor(h, x.dtype, rshape) for h, x in zip(res, srcs)]
    if _unwrap(keep_dims):
        results = [s.expand_dims(r, axis) if r.shape else s.reshape(r, (1,) * rank) for r in results]
    return tuple(results)


@builtin
def reduce(input, axis, combine_fn, keep_dims=False):
    srcs, is_tuple = _as_tuple(input)
    out = _reduce_impl(srcs, axis, _unwrap(combine_fn), keep_dims)
    return out if is_tuple else out[0]


@builtin
def associative_scan(input, axis, combine_fn, reverse=False):
    srcs, is_tuple = _as_tuple(input)
    out = _reduce_impl(srcs, axis, _unwrap(combine_fn), False, scan=True, reverse=_unwrap(reverse))
    return out if is_tuple else out[0]


def _sum_dtype(dt, dtype):
    if dtype is not None:
        return dtype
    if dt.is_int_signed() and dt.int_bitwidth < 32:
        return T.int32
    if dt.is_int_unsigned() and dt.int_bitwidth < 32:
        return T.uint32
    return None


@builtin
def cumsum(input, axis=0, reverse=False, dtype=None):
    s = _sem()
    t = s.to_tensor(_unwrap(input))
    dt = _sum_dtype(t.dtype, _unwrap(dtype))
    if dt is not None:
        t = s.cast(t, dt)
    return _scan_wide(t, lambda a, b: s.add(a, b), axis, reverse)


@builtin
def cumprod(input, axis=0, reverse=False, dtype=None):
    # As cumsum (and Triton): integers narrower than 32 bits multiply in 32.
    s = _sem()
    t = s.to_tensor(_unwrap(input))
    dt = _sum_dtype(t.dtype, _unwrap(dtype))
    if dt is not None:
        t = s.cast(t, dt)
    return _scan_wide(t, lambda a, b: s.mul(a, b), axis, reverse)


def _scan_wide(t, combine, axis, reverse):
    """A built-in scan; 16-bit floats run in float32 and each prefix is
    rounded once (a row of bf16 partial sums rounded at every step drifts
    past Triton's tests' 1% on long rows, where GPUs scan in a tree)."""
    s = _sem()
    narrow = t.dtype.is_floating() and t.dtype.primitive_bitwidth < 32
    w = s.cast(t, T.float32) if narrow else t
    r = _reduce_impl([w], axis, combine, False, scan=True, reverse=_unwrap(reverse))[0]
    return s.cast(r, t.dtype) if narrow else r


def _with_indices(input, axis, better, tie_break_left, keep_dims):
    """(values, indices) of the best element along axis: `better(a, b)` is the
    strict order; ties keep the lower index when tie_break_left (Triton)."""
    s = _sem()
    t = s.to_tensor(_unwrap(input))
    if not t.shape:
        return t, s.scalar_constant(0, T.int32)
    rank = len(t.shape)
    axis = _normalize_axis(axis, rank)
    if axis is None:
        t = s.reshape(t, (t.numel,))
        axis, rank = 0, 1
    idx = s.arange(0, t.shape[axis])
    shape = [1] * rank
    shape[axis] = t.shape[axis]
    idx = s.broadcast_to(s.reshape(idx, tuple(shape)), t.shape)

    def combine(v1, i1, v2, i2):
        gt = better(v1, v2)
        if v1.dtype.is_floating():
            # NaNs are skipped, as tl.max/tl.min skip them (Triton's rule):
            # a number beats a NaN whichever side it is on.
            gt = s.logical_or(gt, s.logical_and(s.not_equal(v2, v2), s.equal(v1, v1)))
        if _unwrap(tie_break_left):
            gt = s.logical_or(gt, s.logical_and(s.equal(v1, v2), s.less_than(i1, i2)))
        return s.where(gt, v1, v2), s.where(gt, i1, i2)
    v, i = _reduce_impl([t, idx], axis, combine, keep_dims)
    return v, i


@builtin
def argmax(input, axis, tie_break_left=True, keep_dims=False):
    s = _sem()
    return _with_indices(input, axis, s.greater_than, tie_break_left, keep_dims)[1]


@builtin
def argmin(input, axis, tie_break_left=True, keep_dims=False):
    s = _sem()
    return _with_indices(input, axis, s.less_than, tie_break_left, keep_dims)[1]


def max_with_indices(input, axis, tie_break_left, keep_dims):
    return _with_indices(input, axis, _sem().greater_than, tie_break_left, keep_dims)


def min_with_indices(input, axis, tie_break_left, keep_dims):
    return _with_indices(input, axis, _sem().less_than, tie_break_left, keep_dims)


# ------------------------------------------------------------------ atomics
def _atomic(name, pointer, val, mask, sem, scope):
    # name: the op's suffix in _C ("ADD", "XCHG", ...)
    kind = getattr(_C, "ATOMIC_" + name)
    s = _sem()
    ptr = s.to_tensor(_unwrap(pointer))
    if not ptr.dtype.is_ptr():
        raise TypeError(f"atomics need a pointer, got {ptr.dtype}")
    _semantic.check_writable(ptr.dtype)
    elt = ptr.dtype.element_ty
    if elt.is_fp8() and kind != _C.ATOMIC_XCHG:
        # an integer atomic on the byte would compute on the wrong values
        raise TypeError(f"atomics on {elt} are not supported (8-bit floats)")
    _check_atomic_element(elt, name.lower())
    val = s.to_tensor(_unwrap(val))
    mask = _unwrap(mask)
    shape = s.broadcast_shapes(ptr.shape, val.shape)
    if mask is not None:
        mask = s.to_bool(mask)
        shape = s.broadcast_shapes(shape, mask.shape)
        mask = s.broadcast_to(mask, shape)
    ptr = s.broadcast_to(ptr, shape)
    val = s.broadcast_to(s.cast(val, elt), shape)
    if kind in (_C.ATOMIC_MAX, _C.ATOMIC_MIN) and elt.is_int_unsigned():
        kind = _C.ATOMIC_UMAX if kind == _C.ATOMIC_MAX else _C.ATOMIC_UMIN
    if elt.is_floating() and kind not in (_C.ATOMIC_ADD, _C.ATOMIC_MAX, _C.ATOMIC_MIN,
                                          _C.ATOMIC_XCHG):
        raise TypeError(f"this atomic needs integers, got {elt}")
    h = s.b.atomic_rmw(kind, ptr.handle, val.handle, None if mask is None else mask.handle,
                       _unwrap(sem), _unwrap(scope))
    return tensor(h, elt, shape)


def _check_atomic_element(elt, op):
    """Triton's element types for read-modify-write atomics (its semantic.py):
    16-bit floats only add, no 16-bit integers, nothing narrower. The CPU
    target could do more; a kernel written here must build where Triton's does."""
    if elt.is_fp16() and op != "add":
        raise ValueError(f"atomic_{op} does not support fp16")
    if elt.is_bf16() and op != "add":
        raise ValueError(f"atomic_{op} does not support bf16")
    if elt.name in ("int16", "uint16") or elt.primitive_bitwidth < 16:
        raise ValueError(f"atomic_{op} does not support {elt}")


def _make_atomic(kind, name):
    def fn(pointer, val, mask=None, sem=None, scope=None):
        return _atomic(kind, pointer, val, mask, sem, scope)
    fn.__name__ = name
    fn.__doc__ = f"Atomic {kind.lower()}; returns the old values."
    return builtin(fn)


atomic_add = _make_atomic("ADD", "atomic_add")
atomic_max = _make_atomic("MAX", "atomic_max")
atomic_min = _make_atomic("MIN", "atomic_min")
atomic_and = _make_atomic("AND", "atomic_and")
atomic_or = _make_atomic("OR", "atomic_or")
atomic_xor = _make_atomic("XOR", "atomic_xor")
atomic_xchg = _make_atomic("XCHG", "atomic_xchg")


@builtin
def atomic_cas(pointer, cmp, val, sem=None, scope=None):
    s = _sem()
    ptr = s.to_tensor(_unwrap(pointer))
    if not ptr.dtype.is_ptr():
        raise TypeError(f"atomic_cas needs a pointer, got {ptr.dtype}")
    _semantic.check_writable(ptr.dtype)
    elt = ptr.dtype.element_ty
    if elt.primitive_bitwidth not in (16, 32, 64):
        raise ValueError("atomic_cas only supports elements with width {16, 32, 64}")
    cmp = s.broadcast_to(s.cast(s.to_tensor(_unwrap(cmp)), elt), ptr.shape)
    val = s.broadcast_to(s.cast(s.to_tensor(_unwrap(val)), elt), ptr.shape)
    h = s.b.atomic_cas(ptr.handle, cmp.handle, val.handle, _unwrap(sem), _unwrap(scope))
    return tensor(h, elt, ptr.shape)


@builtin
def atomic_poll(pointer, expected_value, sem=None, scope=None, timeout_ns=None):
    """Triton's tl.atomic_poll: wait until the integer at a scalar pointer
    equals `expected_value`; returns an int1, True when it was seen. `sem`
    is "acquire" (default) or "relaxed", `scope` "gpu" (default), "cta" or
    "sys". Each poll is an atomic add of 0 with that order and scope (an
    atomic read every target here has; a plain load could be hoisted out
    of the loop). zetile has no device timer yet: `timeout_ns` bounds the
    number of polls (at most timeout_ns + 1 reads; 0 is one read), so it
    never gives up before timeout_ns nanoseconds (no read here takes less
    than a nanosecond) but may wait longer than Triton's wall-clock timeout.
    As in Triton, a program polling for another program of the same grid
    can wait forever if that program never runs concurrently."""
    s = _sem()
    ptr = s.to_tensor(_unwrap(pointer))
    timeout = _unwrap(timeout_ns)
    if isinstance(timeout, int) and not isinstance(timeout, bool) and timeout < 0:
        raise ValueError("atomic_poll timeout_ns must be non-negative")
    if ptr.shape:
        raise ValueError("atomic_poll only supports a pointer to a scalar")
    if not ptr.dtype.is_ptr():
        raise ValueError(f"Unsupported ptr type {ptr.dtype} in `tl.atomic_poll`")
    expected = s.to_tensor(_unwrap(expected_value))
    if expected.shape:
        raise ValueError("Expected value argument cannot be block type")
    elt = ptr.dtype.element_ty
    if not elt.is_int() or elt.is_bool() or elt.primitive_bitwidth not in (16, 32, 64):
        raise ValueError("atomic_poll only supports integer elements with width {16, 32, 64}")
    expected = s.cast(expected, elt)
    sem = _unwrap(sem) or "acquire"
    if sem not in ("acquire", "relaxed"):
        raise ValueError("atomic_poll only supports acquire and relaxed semantics")
    scope = _unwrap(scope) or "gpu"
    if timeout is not None:
        timeout = s.to_tensor(timeout)
        if timeout.shape or not timeout.dtype.is_int():
            raise ValueError("atomic_poll timeout_ns must be a scalar integer")
        timeout = s.cast(timeout, T.uint64)
    # while (!seen && polls <= timeout) { seen = atomic_read(ptr) == expected; ++polls; }
    # The read is in the body (the condition forwards the carried values), so
    # the loop's results are the last read's outcome.
    zero = s.scalar_constant(0, elt)
    polls0 = s.scalar_constant(0, T.uint64)
    seen0 = s.scalar_constant(False, T.int1)
    polls_b, seen_b = s.b.while_begin([polls0.handle, seen0.handle])
    polls, seen = tensor(polls_b, T.uint64), tensor(seen_b, T.int1)
    go = s.not_(seen)
    if timeout is not None:
        go = s.logical_and(go, s.less_equal(polls, timeout))
    polls_a, _ = s.b.while_cond(go.handle)
    old = tensor(s.b.atomic_rmw(_C.ATOMIC_ADD, ptr.handle, zero.handle, None, sem, scope), elt)
    nxt = s.add(tensor(polls_a, T.uint64), s.scalar_constant(1, T.uint64))
    _, seen_out = s.b.while_end([nxt.handle, s.equal(old, expected).handle])
    return tensor(seen_out, T.int1)


# ---------------------------------------------------------------- debugging
@builtin
def device_print(prefix, *args, hex=False):
    s = _sem()
    vals = [s.to_tensor(_unwrap(a)) for a in args]
    prefix = str(_unwrap(prefix))
    if prefix and not prefix.endswith(" ") and vals:
        prefix += " "
    s.b.print_(prefix, [v.handle for v in vals], bool(_unwrap(hex)))


@builtin
def device_assert(cond, msg="", mask=None):
    s = _sem()
    if not getattr(s, "debug", False):
        return  # as in Triton: device asserts only exist in debug builds
    c = s.to_bool(_unwrap(cond))
    m = _unwrap(mask)
    if m is not None:
        c = s.logical_or(c, s.not_(m))
    s.b.assert_(c.handle, str(_unwrap(msg)))


# ------------------------------------------------------- small compositions
@builtin
def add(x, y, sanitize_overflow=True):
    return _sem().add(_unwrap(x), _unwrap(y))


@builtin
def sub(x, y, sanitize_overflow=True):
    return _sem().sub(_unwrap(x), _unwrap(y))


@builtin
def mul(x, y, sanitize_overflow=True):
    return _sem().mul(_unwrap(x), _unwrap(y))


@builtin
def to_tensor(x):
    return _sem().to_tensor(_unwrap(x))


@builtin
def assume(cond):
    return None  # a hint; nothing to check at run time


@builtin
def reduce_or(input, axis, keep_dims=False):
    s = _sem()
    t = s.to_tensor(_unwrap(input))
    if not t.dtype.is_int():
        raise TypeError("reduce_or needs an integer tensor")
    return s.reduce_builtin(t, None if _unwrap(axis) is None else int(_unwrap(axis)), _C.REDUCE_OR,
                            _unwrap(keep_dims))


@builtin
def unsqueeze(x, dim):
    return _sem().expand_dims(_sem().to_tensor(_unwrap(x)), int(_unwrap(dim)))


@builtin
def squeeze(x, dim):
    s = _sem()
    t = s.to_tensor(_unwrap(x))
    dim = _normalize_axis(dim, len(t.shape))
    if t.shape[dim] != 1:
        raise ValueError(f"cannot squeeze dimension {dim} of size {t.shape[dim]}")
    shape = t.shape[:dim] + t.shape[dim + 1:]
    if not shape:
        return s.reduce_builtin(t, 0, _C.REDUCE_ADD)
    return s.reshape(t, shape)


@builtin
def join(a, b):
    """Stacks a and b along a new minor dimension of size 2."""
    s = _sem()
    a, b = s.broadcast_pair(s.to_tensor(_unwrap(a)), s.to_tensor(_unwrap(b)))
    if a.dtype != b.dtype:
        raise TypeError(f"join needs one dtype, got {a.dtype} and {b.dtype}")
    shape = a.shape + (2,)
    which = s.broadcast_to(s.reshape(s.arange(0, 2), (1,) * len(a.shape) + (2,)), shape)
    ea = s.broadcast_to(s.expand_dims(a, len(a.shape)), shape)
    eb = s.broadcast_to(s.expand_dims(b, len(b.shape)), shape)
    return s.where(s.equal(which, 0), ea, eb)


@builtin
def split(a):
    """The two halves of a tensor whose minor dimension has size 2."""
    s = _sem()
    t = s.to_tensor(_unwrap(a))
    if not t.shape or t.shape[-1] != 2:
        raise ValueError(f"split needs a minor dimension of size 2, got {list(t.shape)}")
    rank = len(t.shape)
    idx = s.broadcast_to(s.reshape(s.arange(0, 2), (1,) * (rank - 1) + (2,)), t.shape)

    def pick(first):
        def combine(x, ix, y, iy):
            keep_x = s.equal(ix, 0 if first else 1)
            return s.where(keep_x, x, y), s.where(keep_x, ix, iy)
        return combine
    lo = _reduce_impl([t, idx], rank - 1, pick(True), False)[0]
    hi = _reduce_impl([t, idx], rank - 1, pick(False), False)[0]
    return lo, hi


@builtin
def interleave(a, b):
    t = join(a, b)
    if len(t.shape) == 1:
        return t  # two scalars: [a, b]
    return _sem().reshape(t, t.shape[:-2] + (t.shape[-2] * 2,))


@builtin
def swizzle2d(i, j, size_i, size_j, size_g):
    """Grouped ordering of a 2-D grid (as Triton's tl.swizzle2d)."""
    s = _sem()
    i, j = _unwrap(i), _unwrap(j)
    size_i, size_j, size_g = _unwrap(size_i), _unwrap(size_j), _unwrap(size_g)
    ij = s.add(s.mul(i, size_j), j)
    size_gj = s.mul(size_g, size_j)
    group_id = s.floordiv(ij, size_gj)
    off_i = s.mul(group_id, size_g)
    size_g = s.minimum(s.sub(size_i, off_i), size_g)
    ij = s.mod(ij, size_gj)
    new_i = s.add(off_i, s.mod(ij, size_g))
    new_j = s.floordiv(ij, size_g)
    return new_i, new_j


@builtin
def softmax(x, dim=None, keep_dims=False, ieee_rounding=False):
    s = _sem()
    from .core import exp, max as tmax, sum as tsum
    t = s.to_tensor(_unwrap(x))
    d = len(t.shape) - 1 if _unwrap(dim) is None else int(_unwrap(dim))
    z = s.sub(t, tmax(t, d, keep_dims=True))
    num = exp(z)
    den = tsum(num, d, keep_dims=True)
    return s.fdiv(num, den)


# ------------------------------------------------- gather, flip, cat, sort...
# Composed from broadcasts and a "pick" reduction: exact for every dtype
# (no arithmetic on the values), O(n^2) work along the dimension concerned.
def _pick_last(values, hit):
    """values, hit: same shape; per row of the last axis, the value whose hit is 1."""
    s = _sem()

    def combine(v1, h1, v2, h2):
        take = s.not_equal(h1, 0)
        return s.where(take, v1, v2), s.or_(h1, h2)
    return _reduce_impl([values, s.cast(hit, T.int32)], len(values.shape) - 1, combine, False)[0]


def _move_last(t, axis):
    rank = len(t.shape)
    order = [d for d in range(rank) if d != axis] + [axis]
    return _sem().permute(t, order), order


def _move_back(t, order):
    inv = [0] * len(order)
    for i, d in enumerate(order):
        inv[d] = i
    return _sem().permute(t, inv)


@builtin
def gather(src, index, axis):
    s = _sem()
    src, index = s.to_tensor(_unwrap(src)), s.to_tensor(_unwrap(index))
    rank = len(src.shape)
    if len(index.shape) != rank:
        raise ValueError("gather: src and index need the same rank")
    axis = _normalize_axis(axis, rank)
    if not index.dtype.is_int():
        raise TypeError(f"gather: index must be integer, got {index.dtype}")
    for d in range(rank):
        if d != axis and src.shape[d] != index.shape[d]:
            raise ValueError(f"gather: dimension {d} differs ({src.shape[d]} vs {index.shape[d]})")
    sl, order = _move_last(src, axis)
    il, _ = _move_last(s.cast(index, T.int32), axis)
    n, m = sl.shape[-1], il.shape[-1]
    full = il.shape[:-1] + (m, n)
    vals = s.broadcast_to(s.expand_dims(sl, len(sl.shape) - 1), full)
    j = s.broadcast_to(s.reshape(s.arange(0, n), (1,) * (len(full) - 1) + (n,)), full)
    want = s.broadcast_to(s.expand_dims(il, len(il.shape)), full)
    out = _pick_last(vals, s.equal(j, want))
    return _move_back(out, order)


@builtin
def flip(x, dim=None):
    s = _sem()
    t = s.to_tensor(_unwrap(x))
    rank = len(t.shape)
    dim = rank - 1 if _unwrap(dim) is None else _normalize_axis(dim, rank)
    n = t.shape[dim]
    shape = [1] * rank
    shape[dim] = n
    idx = s.sub(n - 1, s.reshape(s.arange(0, n), tuple(shape)))
    return gather(t, s.broadcast_to(idx, t.shape), dim)


@builtin
def cat(input, other, can_reorder=False, dim=0):
    """Concatenation along dim (in order, whatever can_reorder says)."""
    s = _sem()
    a, b = s.to_tensor(_unwrap(input)), s.to_tensor(_unwrap(other))
    rank = len(a.shape)
    dim = _normalize_axis(dim, rank)
    if a.shape != b.shape:
        raise ValueError(f"tl.cat requires tensors of the same shape, got {list(a.shape)} and {list(b.shape)}")
    if rank == 1:
        # a then b: the pairs (a_i, b_i) transposed to rows a, b, read in
        # order (1-D and 2-D values only: what every target holds).
        n = a.shape[0]
        return s.reshape(s.permute(join(a, b), (1, 0)), (2 * n,))
    if rank == 2:
        if dim == 1:
            # Columns: the rows' cat of the transposes, transposed back.
            return s.permute(cat(s.permute(a, (1, 0)), s.permute(b, (1, 0)), dim=0), (1, 0))
        r, c = a.shape
        flat = cat(s.reshape(a, (r * c,)), s.reshape(b, (r * c,)))
        return s.reshape(flat, (2 * r, c))
    j = join(a, b)  # (..., 2)
    order = list(range(dim)) + [rank] + list(range(dim, rank))
    p = s.permute(j, order)  # (..., 2, d_dim, ...)
    shape = a.shape[:dim] + (2 * a.shape[dim],) + a.shape[dim + 1:]
    return s.reshape(p, shape)


@builtin
def histogram(input, num_bins, mask=None):
    s = _sem()
    t = s.to_tensor(_unwrap(input))
    nb = int(_unwrap(num_bins))
    if len(t.shape) != 1:
        raise TypeError("histogram only supports 1D input")
    if not (t.dtype.is_int() and t.dtype.int_bitwidth == 32):
        raise ValueError(f"histogram only supports 32-bit integer input, but got {t.dtype}")
    n = t.shape[0]
    bins = s.broadcast_to(s.reshape(s.arange(0, nb), (1, nb)), (n, nb))
    vals = s.broadcast_to(s.reshape(s.cast(t, T.int32), (n, 1)), (n, nb))
    hit = s.equal(vals, bins)
    m = _unwrap(mask)
    if m is not None:
        mm = s.broadcast_to(s.reshape(s.to_bool(m), (n, 1)), (n, nb))
        hit = s.logical_and(hit, mm)
    return s.reduce_builtin(s.cast(hit, T.int32), 0, _C.REDUCE_ADD)


def _sort_impl(x, dim, descending):
    s = _sem()
    t = s.to_tensor(_unwrap(x))
    rank = len(t.shape)
    d = rank - 1 if _unwrap(dim) is None else _normalize_axis(dim, rank)
    if d != rank - 1:
        raise ValueError("sort: only the minor dimension is supported (as in Triton)")
    n = t.shape[-1]
    full = t.shape + (n,)
    xi = s.broadcast_to(s.expand_dims(t, rank), full)           # x_i along axis -2
    xj = s.broadcast_to(s.expand_dims(t, rank - 1), full)       # x_j along axis -1
    ii = s.broadcast_to(s.reshape(s.arange(0, n), (1,) * (rank - 1) + (n, 1)), full)
    jj = s.broadcast_to(s.reshape(s.arange(0, n), (1,) * rank + (n,)), full)
    before = s.greater_than(xj, xi) if _unwrap(descending) else s.less_than(xj, xi)
    tie = s.logical_and(s.equal(xj, xi), s.less_than(jj, ii))
    ranks = s.reduce_builtin(s.cast(s.logical_or(before, tie), T.int32), rank, _C.REDUCE_ADD)
    # Scatter by rank: out[k] = x_i with rank_i == k.
    ri = s.broadcast_to(s.expand_dims(ranks, rank - 1), full)   # rank_i along axis -1
    kk = s.broadcast_to(s.reshape(s.arange(0, n), (1,) * (rank - 1) + (n, 1)), full)
    return _pick_last(xj, s.equal(ri, kk))


@builtin
def sort(x, dim=None, descending=False):
    return _sort_impl(x, dim, descending)


@builtin
def topk(x, k, dim=None, descending=True):
    s = _sem()
    srt = _sort_impl(x, dim, descending)
    k = int(_unwrap(k))
    rank = len(srt.shape)
    idx = s.broadcast_to(s.reshape(s.arange(0, k), (1,) * (rank - 1) + (k,)), srt.shape[:-1] + (k,))
    return gather(srt, idx, rank - 1)
