"""Block pointers and tensor descriptors: strided 2-D (n-D) views of memory.

Both lower to `tile.block_load`/`tile.block_store` (docs/TILE_IR.md), which
the Xe target maps to Intel's 2D block loads and the CPU target to bounds-
checked loops. They are compound kernel values: loops and ifs carry their
tensors (base, shape, strides, offsets) like any other value.
"""
from __future__ import annotations

from .. import _C
from . import dtypes as T
from .core import _sem, _unwrap, builtin
from .semantic import tensor


def _scalars(values, dt, what):
    s = _sem()
    values = _unwrap(values)
    if isinstance(values, tensor) or not isinstance(values, (list, tuple)):
        raise TypeError(f"{what} must be a list or tuple, got {values!r}")
    out = []
    for v in values:
        t = s.to_tensor(_unwrap(v))
        if t.shape or not t.dtype.is_int():
            raise TypeError(f"{what} entries must be integer scalars, got {t}")
        out.append(s.cast(t, dt))
    return out


def _ints(values, what):
    values = _unwrap(values)
    out = []
    for v in values:
        v = _unwrap(v)
        if isinstance(v, tensor):
            raise TypeError(f"{what} must be compile-time constants (tl.constexpr)")
        out.append(int(v))
    return tuple(out)


class block_ptr:
    """What tl.make_block_ptr returns (Triton's legacy block pointers)."""

    def __init__(self, base, shape, strides, offsets, block_shape, order):
        self.base, self.shape, self.strides, self.offsets = base, shape, strides, offsets
        self.block_shape, self.order = tuple(block_shape), tuple(order)

    @property
    def dtype(self):
        return self.base.dtype

    @property
    def element_ty(self):
        return self.base.dtype.element_ty

    def _flatten(self):
        r = len(self.block_shape)
        ts = [self.base, *self.shape, *self.strides, *self.offsets]

        def rebuild(new):
            return block_ptr(new[0], new[1:1 + r], new[1 + r:1 + 2 * r], new[1 + 2 * r:1 + 3 * r],
                             self.block_shape, self.order)
        return ts, rebuild

    def __repr__(self):
        return f"block_ptr<{list(self.block_shape)}x{self.element_ty}>"


class tensor_descriptor:
    """What tl.make_tensor_descriptor returns, and what a host TensorDescriptor
    argument becomes inside the kernel."""

    def __init__(self, base, shape, strides, block_shape, padding="zero"):
        self.base, self.shape, self.strides = base, shape, strides
        self.block_shape = tuple(block_shape)
        self.padding = padding

    @property
    def dtype(self):
        return self.base.dtype.element_ty

    def _flatten(self):
        r = len(self.block_shape)
        ts = [self.base, *self.shape, *self.strides]

        def rebuild(new):
            return tensor_descriptor(new[0], new[1:1 + r], new[1 + r:1 + 2 * r], self.block_shape,
                                     self.padding)
        return ts, rebuild

    @builtin
    def load(self, offsets):
        s = _sem()
        offs = _scalars(offsets, T.int32, "descriptor offsets")
        return block_load(s, self.base, self.shape, self.strides, offs, self.block_shape,
                          (1 << len(self.block_shape)) - 1, self.padding)

    @builtin
    def store(self, offsets, value):
        s = _sem()
        offs = _scalars(offsets, T.int32, "descriptor offsets")
        block_store(s, self.base, self.shape, self.strides, offs, value,
                    (1 << len(self.block_shape)) - 1, self.block_shape)

    def __repr__(self):
        return f"tensor_descriptor<{list(self.block_shape)}x{self.dtype}>"


def _check_base(base, what):
    s = _sem()
    base = s.to_tensor(_unwrap(base))
    if not base.dtype.is_ptr() or base.shape:
        raise TypeError(f"{what} needs a scalar pointer as base, got {base}")
    return base


def block_load(s, base, shape, strides, offsets, block_shape, mask, padding):
    pad = {"zero": _C.PADDING_ZERO, "": _C.PADDING_ZERO, None: _C.PADDING_ZERO,
           "nan": _C.PADDING_NAN}.get(padding)
    if pad is None:
        raise ValueError(f"padding_option must be 'zero' or 'nan', got {padding!r}")
    h = s.b.block_load(base.handle, [x.handle for x in shape], [x.handle for x in strides],
                       [x.handle for x in offsets], tuple(block_shape), mask, pad)
    return tensor(h, base.dtype.element_ty, tuple(block_shape))


def block_store(s, base, shape, strides, offsets, value, mask, block_shape):
    value = s.to_tensor(_unwrap(value))
    value = s.broadcast_to(s.cast(value, base.dtype.element_ty), tuple(block_shape))
    s.b.block_store(base.handle, [x.handle for x in shape], [x.handle for x in strides],
                    [x.handle for x in offsets], value.handle, mask)


def _boundary_mask(boundary_check, rank):
    mask = 0
    for d in _unwrap(boundary_check) or ():
        d = int(_unwrap(d))
        if not 0 <= d < rank:
            raise ValueError(f"boundary_check dimension {d} out of range for rank {rank}")
        mask |= 1 << d
    return mask


@builtin
def make_block_ptr(base, shape, strides, offsets, block_shape, order):
    base = _check_base(base, "make_block_ptr")
    bs = _ints(block_shape, "block_shape")
    sh = _scalars(shape, T.int64, "shape")
    st = _scalars(strides, T.int64, "strides")
    of = _scalars(offsets, T.int32, "offsets")
    if not (len(bs) == len(sh) == len(st) == len(of)):
        raise ValueError("make_block_ptr: shape, strides, offsets and block_shape need one length")
    return block_ptr(base, sh, st, of, bs, _ints(order, "order"))


@builtin
def advance(base, offsets):
    base = _unwrap(base)
    if not isinstance(base, block_ptr):
        raise TypeError("tl.advance needs a block pointer (tl.make_block_ptr)")
    s = _sem()
    deltas = _scalars(offsets, T.int32, "advance offsets")
    if len(deltas) != len(base.offsets):
        raise ValueError(f"tl.advance: {len(deltas)} offsets for a rank-{len(base.offsets)} block")
    new = [s.add(o, d) for o, d in zip(base.offsets, deltas)]
    return block_ptr(base.base, base.shape, base.strides, new, base.block_shape, base.order)


@builtin
def make_tensor_descriptor(base, shape, strides, block_shape, padding_option="zero"):
    base = _check_base(base, "make_tensor_descriptor")
    bs = _ints(block_shape, "block_shape")
    sh = _scalars(shape, T.int64, "shape")
    st = _scalars(strides, T.int64, "strides")
    if not (len(bs) == len(sh) == len(st)):
        raise ValueError("make_tensor_descriptor: shape, strides and block_shape need one length")
    # Triton's rule (its TMA and Intel's 2D block IO both move rows of at
    # least 16 bytes): refused here as in Triton, with its wording.
    elem = base.dtype.element_ty.primitive_bitwidth // 8
    if bs[-1] * elem < 16:
        raise ValueError("Descriptor block shape must have at least 16 bytes in the last dimension, "
                         f"but got {bs[-1]} * {elem} = {bs[-1] * elem} bytes")
    return tensor_descriptor(base, sh, st, bs, _unwrap(padding_option) or "zero")


@builtin
def load_tensor_descriptor(desc, offsets):
    return _unwrap(desc).load(offsets)


@builtin
def store_tensor_descriptor(desc, offsets, value):
    return _unwrap(desc).store(offsets, value)


def load_block(ptr: block_ptr, boundary_check, padding_option):
    s = _sem()
    return block_load(s, ptr.base, ptr.shape, ptr.strides, ptr.offsets, ptr.block_shape,
                      _boundary_mask(boundary_check, len(ptr.block_shape)), padding_option or "zero")


def store_block(ptr: block_ptr, value, boundary_check):
    s = _sem()
    block_store(s, ptr.base, ptr.shape, ptr.strides, ptr.offsets, value,
                _boundary_mask(boundary_check, len(ptr.block_shape)), ptr.block_shape)
