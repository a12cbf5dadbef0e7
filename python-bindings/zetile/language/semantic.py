"""Triton's semantics (type promotion, casts, broadcasting) over zetile's C builder.

The rules follow triton/language/semantic.py (Triton 3.x): Python scalars are
weakly typed, `/` promotes to float, `//` and `%` round toward zero, half
types compute `/` and `%` in fp32, and so on. Every op ends in a call to the
C builder (`_zetile.Builder`), which checks shapes again and records the
source location.
"""
from __future__ import annotations

import numbers

from .. import _C
from . import dtypes as T
from . import fp8 as F8
from .dtypes import dtype, pointer_type


class tensor:
    """A value in a kernel: a scalar (shape ()) or a block of elements."""

    def __init__(self, handle: int, dtype_: dtype, shape=()):
        self.handle = handle
        self.dtype = dtype_
        self.shape = tuple(int(s) for s in shape)

    @property
    def type(self):
        """Triton's `x.type`: the dtype of a scalar (`ptr.type.element_ty` on
        a pointer argument), a block_type of a block."""
        return block_type(self.dtype, self.shape) if self.shape else self.dtype

    @property
    def scalar(self):
        return self.dtype

    def is_block(self):
        return len(self.shape) > 0

    @property
    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __repr__(self):
        shape = "x".join(map(str, self.shape))
        return f"tensor<{shape + 'x' if shape else ''}{self.dtype}>"

    def __bool__(self):
        raise TypeError("a tensor's truth value is only known when the kernel runs; "
                        "use it in an `if`/`while` of the kernel (which zetile compiles), "
                        "or tl.where for elementwise choice")


class block_type:
    """The type of a block (Triton's tl.block_type): element type and shape;
    dtype questions (is_floating(), primitive_bitwidth, ...) are answered
    by the element type."""

    def __init__(self, element_ty: dtype, shape):
        self.element_ty = element_ty
        self.shape = [int(s) for s in shape]
        self.numel = 1
        for s in self.shape:
            self.numel *= s

    @property
    def scalar(self):
        return self.element_ty

    def is_block(self):
        return True

    def get_block_shapes(self):
        return list(self.shape)

    def __getattr__(self, name):
        return getattr(self.element_ty, name)

    def __eq__(self, other):
        return isinstance(other, block_type) and (self.element_ty, self.shape) == \
            (other.element_ty, other.shape)

    def __hash__(self):
        return hash((self.element_ty, tuple(self.shape)))

    def __str__(self):
        return f"<{self.shape}, {self.element_ty}>"

    __repr__ = __str__


def _zt_type(dt: dtype, shape=()):
    pointee = dt.element_ty.zt_kind if dt.is_ptr() else 0
    return (dt.zt_kind, pointee, tuple(shape))


class Semantic:
    def __init__(self, builder):
        self.b = builder

    # ------------------------------------------------------------------ basics
    def make(self, handle, dt, shape=()):
        return tensor(handle, dt, shape)

    def to_tensor_type(self, x):
        return _to_tensor_type(x)

    def scalar_constant(self, value, dt: dtype) -> tensor:
        if dt.is_fp8():
            code = F8.encode_scalar(value, dt.name)
            return tensor(self.b.const_int(_C.I8, code - 256 if code >= 128 else code), dt)
        if dt.is_floating():
            h = self.b.const_float(dt.zt_kind, float(value))
        elif dt.is_int():
            v = int(value)
            bits = dt.int_bitwidth
            if dt.is_bool():
                v = 1 if v else 0
            elif v >= (1 << (bits - 1)):  # unsigned values above the signed range
                v -= 1 << bits
            h = self.b.const_int(dt.zt_kind, v)
        else:
            raise TypeError(f"cannot make a constant of type {dt}")
        return tensor(h, dt)

    def to_tensor(self, x) -> tensor:
        if isinstance(x, tensor):
            return x
        from .core import constexpr
        if isinstance(x, constexpr):
            x = x.value
        if isinstance(x, (bool, int, float)):
            return self.scalar_constant(x, _to_tensor_type(x))
        raise TypeError(f"cannot use {x!r} (of type {type(x).__name__}) as a kernel value")

    def full(self, shape, value, dt: dtype) -> tensor:
        shape = tuple(int(s) for s in shape)
        if isinstance(value, tensor):
            if value.shape:
                raise ValueError("tl.full's value must be a scalar")
            s = self.cast(value, dt)
        else:
            s = self.scalar_constant(value, dt)
        if not shape:
            return s
        return tensor(self.b.splat(s.handle, shape), dt, shape)

    def splat(self, t: tensor, shape) -> tensor:
        if t.shape == tuple(shape):
            return t
        return tensor(self.b.splat(t.handle, tuple(shape)), t.dtype, shape)

    # ------------------------------------------------------------- broadcasts
    def broadcast_to(self, t: tensor, shape) -> tensor:
        shape = tuple(int(s) for s in shape)
        if t.shape == shape:
            return t
        if not t.shape:
            return self.splat(t, shape)
        if len(t.shape) < len(shape):
            t = self.reshape(t, (1,) * (len(shape) - len(t.shape)) + t.shape)
        for a, b_ in zip(t.shape, shape):
            if a != b_ and a != 1:
                raise ValueError(f"cannot broadcast shape {list(t.shape)} to {list(shape)}")
        if t.shape == shape:
            return t
        return tensor(self.b.broadcast(t.handle, shape), t.dtype, shape)

    def broadcast_shapes(self, a, b_):
        if not a:
            return tuple(b_)
        if not b_:
            return tuple(a)
        n = max(len(a), len(b_))
        a = (1,) * (n - len(a)) + tuple(a)
        b_ = (1,) * (n - len(b_)) + tuple(b_)
        out = []
        for x, y in zip(a, b_):
            if x == y or y == 1:
                out.append(x)
            elif x == 1:
                out.append(y)
            else:
                raise ValueError(f"incompatible dimensions at index {len(out)}: {x} and {y}")
        return tuple(out)

    def broadcast_pair(self, a: tensor, b_: tensor):
        shape = self.broadcast_shapes(a.shape, b_.shape)
        return self.broadcast_to(a, shape), self.broadcast_to(b_, shape)

    # ----------------------------------------------------------------- casts
    def _cast_rtz(self, t, dst: dtype) -> tensor:
        """A float downcast rounded toward zero (fp64/fp32 -> fp32/fp16/bf16).
        Rounded to nearest, the result is one of the two representable
        neighbours of t; when it is the one farther from zero (its magnitude,
        read back exactly, exceeds t's), the other is one step toward zero:
        the integer below its bits, as floats are sign-magnitude. That also
        turns an overflow to inf into the largest finite value, as rtz does;
        NaN compares false and stays NaN."""
        src = t.dtype
        r = self.cast(t, dst)
        away = self.greater_than(self.abs(self.cast(r, src)), self.abs(t))
        ity = {16: T.int16, 32: T.int32, 64: T.int64}[dst.primitive_bitwidth]
        bits = self.bitcast(r, ity)
        stepped = self.bitcast(self.sub(bits, self.scalar_constant(1, ity)), dst)
        return self.where(away, stepped, r)

    def cast(self, t, dst: dtype, rounding=None) -> tensor:
        t = self.to_tensor(t)
        src = t.dtype
        if src == dst and src.is_ptr() == dst.is_ptr():
            return t
        b = self.b
        if rounding not in (None, "rtne", "rtz"):
            raise ValueError(f"fp_downcast_rounding must be 'rtne' or 'rtz', got {rounding!r}")
        downcast = (not src.is_ptr() and not dst.is_ptr() and src.is_floating() and
                    dst.is_floating() and dst.primitive_bitwidth < src.primitive_bitwidth)
        if rounding is not None and not downcast:
            raise ValueError("fp_downcast_rounding should be set only for truncating fp conversions. "
                             f"Source scalar type is {src} and destination type is {dst}")
        if not src.is_ptr() and not dst.is_ptr() and (src.is_fp8() or dst.is_fp8()):
            # 8-bit floats by conversion through fp32 (fp8.py): exact from
            # fp8, one rounding to fp8 (fp64 sources round twice).
            if src.is_fp8():
                f = F8.to_f32(self, t)
                return f if dst == T.float32 else self.cast(f, dst)
            f = self.cast(t, T.float32) if src != T.float32 else t
            return F8.from_f32(self, f, dst, rtz=rounding == "rtz")
        if rounding == "rtz" and downcast:
            return self._cast_rtz(t, dst)
        if src.is_ptr() and dst.is_ptr():
            if src.element_ty == dst.element_ty:  # only constness differs: same IR type
                return tensor(t.handle, dst, t.shape)
            return tensor(b.ptr_cast(t.handle, dst.element_ty.zt_kind), dst, t.shape)
        if src.is_ptr() and dst.is_int():
            if dst.int_bitwidth == 64:
                return tensor(b.ptr_to_int(t.handle), dst, t.shape)
            if dst.is_bool():
                i = self.cast(t, T.int64)
                return self.not_equal(i, 0)
            raise TypeError(f"cannot cast a pointer to {dst}")
        if src.is_int() and dst.is_ptr():
            t64 = self.cast(t, T.int64)
            return tensor(b.int_to_ptr(t64.handle, dst.element_ty.zt_kind), dst, t.shape)
        if src.is_floating() and dst.is_floating():
            sb, db = src.primitive_bitwidth, dst.primitive_bitwidth
            if sb == db:  # fp16 <-> bf16 goes through fp32
                return self.cast(self.cast(t, T.float32), dst)
            op = _C.CAST_TRUNCF if db < sb else _C.CAST_EXTF
            return tensor(b.cast(op, t.handle, dst.zt_kind), dst, t.shape)
        if src.is_int() and dst.is_int():
            if dst.is_bool():
                return self.not_equal(t, 0)
            sb, db = src.int_bitwidth, dst.int_bitwidth
            if sb == db:
                return tensor(t.handle, dst, t.shape)  # signless: same bits
            if db < sb:
                return tensor(b.cast(_C.CAST_TRUNCI, t.handle, dst.zt_kind), dst, t.shape)
            op = _C.CAST_EXTSI if src.is_int_signed() else _C.CAST_EXTUI
            return tensor(b.cast(op, t.handle, dst.zt_kind), dst, t.shape)
        if src.is_floating() and dst.is_int():
            if dst.is_bool():
                return self.not_equal(t, 0)
            op = _C.CAST_FPTOSI if dst.is_int_signed() else _C.CAST_FPTOUI
            return tensor(b.cast(op, t.handle, dst.zt_kind), dst, t.shape)
        if src.is_int() and dst.is_floating():
            op = _C.CAST_SITOFP if src.is_int_signed() else _C.CAST_UITOFP
            return tensor(b.cast(op, t.handle, dst.zt_kind), dst, t.shape)
        raise TypeError(f"cannot cast {src} to {dst}")

    def bitcast(self, t, dst: dtype) -> tensor:
        t = self.to_tensor(t)
        src = t.dtype
        if src.is_ptr() or dst.is_ptr():
            return self.cast(t, dst)
        if src.primitive_bitwidth != dst.primitive_bitwidth:
            raise ValueError(f"cannot bitcast {src} ({src.primitive_bitwidth} bits) to "
                             f"{dst} ({dst.primitive_bitwidth} bits)")
        if src == dst:
            return t
        if (src.is_int() or src.is_fp8()) and (dst.is_int() or dst.is_fp8()):
            return tensor(t.handle, dst, t.shape)  # both held as integers of this width
        return tensor(self.b.cast(_C.CAST_BITCAST, t.handle, dst.zt_kind), dst, t.shape)

    # ------------------------------------------------------- type promotion
    def integer_promote(self, a: dtype, b_: dtype) -> dtype:
        if a.is_int_signed() == b_.is_int_signed():
            return a if a.int_bitwidth > b_.int_bitwidth else b_
        if a.is_int_unsigned():
            return a if a.int_bitwidth >= b_.int_bitwidth else b_
        return b_ if b_.int_bitwidth >= a.int_bitwidth else a

    def computation_type(self, a: dtype, a_scalar: bool, b_: dtype, b_scalar: bool,
                         div_or_mod: bool) -> dtype:
        if a_scalar != b_scalar:
            s, t = (a, b_) if a_scalar else (b_, a)
            if s.kind() <= t.kind():
                a, b_ = t, t
        if a.is_fp64() or b_.is_fp64():
            return T.float64
        if div_or_mod and (a.is_floating() or b_.is_floating()):
            return T.float32
        if a.is_fp32() or b_.is_fp32():
            return T.float32
        if a.is_fp16() or b_.is_fp16():
            return T.float16
        if a.is_bf16() and b_.is_bf16():
            return T.bfloat16
        if a.is_bf16() or b_.is_bf16():
            return T.float32
        if a.is_fp8() and b_.is_fp8():  # Triton: one fp8 type stays, two meet in fp16
            return a if a == b_ else T.float16
        if a.is_fp8() or b_.is_fp8():
            raise TypeError(f"unexpected types {a} and {b_}")
        if not a.is_int() or not b_.is_int():
            raise TypeError(f"unexpected types {a} and {b_}")
        if div_or_mod and a.is_int_signed() != b_.is_int_signed():
            raise TypeError(f"Cannot use /, //, or % with {a} and {b_} because they have different "
                            "signedness; cast them to the same signedness")
        return self.integer_promote(a, b_)

    def _to_computation_type(self, v, dt: dtype) -> tensor:
        if not isinstance(v, numbers.Number):
            return self.cast(v, dt)
        if v < 0 and dt.is_int_unsigned():
            raise ValueError("cannot combine an unsigned tensor with a negative scalar; cast one "
                             "of them explicitly")
        if dt.is_int() and not (dt.get_int_min_value() <= v <= dt.get_int_max_value()):
            raise ValueError(f"scalar {v} is out of range for type {dt}")
        return self.scalar_constant(v, dt)

    def _unwrap(self, x):
        from .core import constexpr
        while isinstance(x, constexpr):
            x = x.value
        return x

    def binary_operands(self, lhs, rhs, allow_lhs_ptr=False, allow_rhs_ptr=False,
                        arithmetic=True, div_or_mod=False):
        lhs, rhs = self._unwrap(lhs), self._unwrap(rhs)
        ls, rs = isinstance(lhs, numbers.Number), isinstance(rhs, numbers.Number)
        if not ls and not isinstance(lhs, tensor):
            raise TypeError(f"unsupported operand {lhs!r}")
        if not rs and not isinstance(rhs, tensor):
            raise TypeError(f"unsupported operand {rhs!r}")
        lt = _to_tensor_type(lhs) if ls else lhs.dtype
        rt = _to_tensor_type(rhs) if rs else rhs.dtype
        _check_ptr(lt, rt, allow_lhs_ptr)
        _check_ptr(rt, lt, allow_rhs_ptr)
        if arithmetic and not lt.is_ptr() and not rt.is_ptr():
            ct = self.computation_type(lt, ls, rt, rs, div_or_mod)
            lhs = self._to_computation_type(lhs, ct)
            rhs = self._to_computation_type(rhs, ct)
        else:
            lhs, rhs = self.to_tensor(lhs), self.to_tensor(rhs)
        return self.broadcast_pair(lhs, rhs)

    def _bin(self, op, a: tensor, b_: tensor, dt=None) -> tensor:
        if a.dtype.is_fp8():
            # fp8 arithmetic: computed in fp32, rounded back to the fp8 type
            r = self._bin(op, self.cast(a, T.float32), self.cast(b_, T.float32))
            return self.cast(r, dt or a.dtype)
        return tensor(self.b.binary(op, a.handle, b_.handle), dt or a.dtype, a.shape)

    # ------------------------------------------------------------ arithmetic
    def add(self, x, y) -> tensor:
        x, y = self.binary_operands(x, y, True, True)
        if x.dtype.is_ptr() and y.dtype.is_ptr():
            raise TypeError("cannot add pointers together")
        if y.dtype.is_ptr():
            x, y = y, x
        if x.dtype.is_ptr():
            off = y
            if off.dtype.is_int_unsigned() and off.dtype.int_bitwidth < 64:
                # addptr sign-extends offsets: zero-extend unsigned ones first.
                off = tensor(self.b.cast(_C.CAST_EXTUI, y.handle, _C.I64), T.int64, y.shape)
            if not off.dtype.is_int():
                raise TypeError(f"pointer offset must be an integer, got {off.dtype}")
            return tensor(self.b.addptr(x.handle, off.handle), x.dtype, x.shape)
        if x.dtype.is_floating():
            return self._bin(_C.BINARY_ADDF, x, y)
        return self._bin(_C.BINARY_ADDI, x, y)

    def sub(self, x, y) -> tensor:
        x, y = self.binary_operands(x, y, True, False)
        if x.dtype.is_ptr():
            return self.add(x, self.minus(y))
        if x.dtype.is_floating():
            return self._bin(_C.BINARY_SUBF, x, y)
        return self._bin(_C.BINARY_SUBI, x, y)

    def mul(self, x, y) -> tensor:
        x, y = self.binary_operands(x, y)
        if x.dtype.is_floating():
            return self._bin(_C.BINARY_MULF, x, y)
        return self._bin(_C.BINARY_MULI, x, y)

    def truediv(self, x, y) -> tensor:
        x, y = self.binary_operands(x, y, div_or_mod=True)
        xs, ys = x.dtype, y.dtype
        if xs.is_floating() and ys.is_int():
            y = self.cast(y, xs)
        elif xs.is_int() and ys.is_floating():
            x = self.cast(x, ys)
        elif xs.is_int() and ys.is_int():
            x, y = self.cast(x, T.float32), self.cast(y, T.float32)
        elif xs.fp_mantissa_width > ys.fp_mantissa_width:
            y = self.cast(y, xs)
        else:
            x = self.cast(x, ys)
        return self._bin(_C.BINARY_DIVF, x, y)

    def floordiv(self, x, y) -> tensor:
        x, y = self.binary_operands(x, y, div_or_mod=True)
        if not (x.dtype.is_int() and y.dtype.is_int()):
            raise TypeError(f"// needs integer operands, got {x.dtype} and {y.dtype}")
        rt = self.integer_promote(x.dtype, y.dtype)
        x, y = self.cast(x, rt), self.cast(y, rt)
        return self._bin(_C.BINARY_DIVSI if rt.is_int_signed() else _C.BINARY_DIVUI, x, y)

    def fdiv(self, x, y, ieee_rounding=False) -> tensor:
        x, y = self.binary_operands(x, y, div_or_mod=True)
        if not x.dtype.is_floating():
            raise TypeError("fdiv needs floating-point operands")
        return self._bin(_C.BINARY_DIVF, x, y)

    def mod(self, x, y) -> tensor:
        x, y = self.binary_operands(x, y, div_or_mod=True)
        if x.dtype.is_floating():
            return self._bin(_C.BINARY_REMF, x, y)
        if x.dtype.is_int_signed() != y.dtype.is_int_signed():
            raise TypeError(f"cannot take {x.dtype} modulo {y.dtype}: different signedness")
        return self._bin(_C.BINARY_REMSI if x.dtype.is_int_signed() else _C.BINARY_REMUI, x, y)

    def minus(self, x) -> tensor:
        x = self.to_tensor(x)
        if x.dtype.is_ptr():
            raise TypeError("cannot negate a pointer")
        if x.dtype.is_fp8():
            return self._fp8_sign(x, negate=True)
        if x.dtype.is_floating():
            return tensor(self.b.unary(_C.UNARY_NEGF, x.handle), x.dtype, x.shape)
        return self.sub(self.full(x.shape, 0, x.dtype), x)

    def invert(self, x) -> tensor:
        x = self.to_tensor(x)
        if not x.dtype.is_int():
            raise TypeError(f"~ needs an integer operand, got {x.dtype}")
        ones = self.full(x.shape, x.dtype.get_int_max_value() if x.dtype.is_int_unsigned() else -1,
                         x.dtype)
        return self._bin(_C.BINARY_XORI, x, ones)

    def _bitwise(self, op, x, y) -> tensor:
        x, y = self.binary_operands(x, y)
        if not (x.dtype.is_int() and y.dtype.is_int()):
            raise TypeError(f"invalid operands of type {x.dtype} and {y.dtype} (bitwise operations need integers)")
        rt = self.integer_promote(x.dtype, y.dtype)
        x, y = self.cast(x, rt), self.cast(y, rt)
        return self._bin(op, x, y)

    def and_(self, x, y): return self._bitwise(_C.BINARY_ANDI, x, y)
    def or_(self, x, y): return self._bitwise(_C.BINARY_ORI, x, y)
    def xor_(self, x, y): return self._bitwise(_C.BINARY_XORI, x, y)
    def shl(self, x, y): return self._bitwise(_C.BINARY_SHLI, x, y)

    def shr(self, x, y):
        # Triton picks the shift by the left operand's own signedness (before
        # promotion): int8 >> uint8 is arithmetic, on the promoted uint8 bits.
        # (`3 >> t` follows t's signedness, as tensor.__rrshift__ does.)
        ref = self._unwrap(x) if isinstance(self._unwrap(x), tensor) else self._unwrap(y)
        lhs_signed = isinstance(ref, tensor) and ref.dtype.is_int_signed()
        x, y = self.binary_operands(x, y)
        if not (x.dtype.is_int() and y.dtype.is_int()):
            raise TypeError(f">> needs integer operands, got {x.dtype} and {y.dtype}")
        rt = self.integer_promote(x.dtype, y.dtype)
        x, y = self.cast(x, rt), self.cast(y, rt)
        return self._bin(_C.BINARY_SHRSI if lhs_signed else _C.BINARY_SHRUI, x, y)

    def logical_and(self, x, y):
        x, y = self.to_bool(x), self.to_bool(y)
        return self.and_(x, y)

    def logical_or(self, x, y):
        x, y = self.to_bool(x), self.to_bool(y)
        return self.or_(x, y)

    def not_(self, x):
        x = self.to_bool(x)
        return self.xor_(x, self.full(x.shape, True, T.int1))

    def to_bool(self, x) -> tensor:
        x = self.to_tensor(self._unwrap(x))
        return x if x.dtype.is_bool() else self.cast(x, T.int1)

    # ------------------------------------------------------------ comparisons
    _FCMP = {"lt": _C.CMP_OLT, "le": _C.CMP_OLE, "gt": _C.CMP_OGT, "ge": _C.CMP_OGE,
             "eq": _C.CMP_OEQ, "ne": _C.CMP_UNE}
    _SCMP = {"lt": _C.CMP_SLT, "le": _C.CMP_SLE, "gt": _C.CMP_SGT, "ge": _C.CMP_SGE,
             "eq": _C.CMP_EQ, "ne": _C.CMP_NE}
    _UCMP = {"lt": _C.CMP_ULT, "le": _C.CMP_ULE, "gt": _C.CMP_UGT, "ge": _C.CMP_UGE,
             "eq": _C.CMP_EQ, "ne": _C.CMP_NE}

    def compare(self, pred: str, x, y) -> tensor:
        x, y = self.binary_operands(x, y, True, True)
        if x.dtype.is_ptr() or y.dtype.is_ptr():
            x, y = self.cast(x, T.int64), self.cast(y, T.int64)
            table = self._UCMP
        elif x.dtype.is_fp8():
            x, y = self.cast(x, T.float32), self.cast(y, T.float32)
            table = self._FCMP
        elif x.dtype.is_floating():
            table = self._FCMP
        elif x.dtype.is_int_signed():
            table = self._SCMP
        else:
            table = self._UCMP
        return tensor(self.b.cmp(table[pred], x.handle, y.handle), T.int1, x.shape)

    def less_than(self, x, y): return self.compare("lt", x, y)
    def less_equal(self, x, y): return self.compare("le", x, y)
    def greater_than(self, x, y): return self.compare("gt", x, y)
    def greater_equal(self, x, y): return self.compare("ge", x, y)
    def equal(self, x, y): return self.compare("eq", x, y)
    def not_equal(self, x, y): return self.compare("ne", x, y)

    # --------------------------------------------------------- other math
    def where(self, cond, x, y) -> tensor:
        cond = self.to_bool(cond)
        x, y = self._unwrap(x), self._unwrap(y)
        # Triton: resolve the value type from the tensor operands first and only
        # then let Python scalars join (so they never round through a narrow type).
        tensor_dt = scalar_dt = None
        for v in (x, y):
            if isinstance(v, numbers.Number):
                d = _to_tensor_type(v)
                scalar_dt = d if scalar_dt is None else self.computation_type(scalar_dt, True, d, True,
                                                                              False)
            else:
                v = self.to_tensor(v)
                tensor_dt = v.dtype if tensor_dt is None else (
                    v.dtype if v.dtype == tensor_dt else
                    self.computation_type(tensor_dt, False, v.dtype, False, False))
        if tensor_dt is None:
            dt = scalar_dt
        elif scalar_dt is None:
            dt = tensor_dt
        elif tensor_dt.is_ptr():
            dt = tensor_dt
        else:
            dt = self.computation_type(tensor_dt, False, scalar_dt, True, False)
        x = self._to_computation_type(x, dt) if not dt.is_ptr() else self.to_tensor(x)
        y = self._to_computation_type(y, dt) if not dt.is_ptr() else self.to_tensor(y)
        shape = self.broadcast_shapes(self.broadcast_shapes(cond.shape, x.shape), y.shape)
        cond, x, y = (self.broadcast_to(v, shape) for v in (cond, x, y))
        return tensor(self.b.select(cond.handle, x.handle, y.handle), x.dtype, shape)

    def maximum(self, x, y, propagate_nan_all=False) -> tensor:
        x, y = self.binary_operands(x, y)
        if x.dtype.is_floating():
            op = _C.BINARY_MAXIMUMF if propagate_nan_all else _C.BINARY_MAXNUMF
        else:
            op = _C.BINARY_MAXSI if x.dtype.is_int_signed() else _C.BINARY_MAXUI
        return self._bin(op, x, y)

    def minimum(self, x, y, propagate_nan_all=False) -> tensor:
        x, y = self.binary_operands(x, y)
        if x.dtype.is_floating():
            op = _C.BINARY_MINIMUMF if propagate_nan_all else _C.BINARY_MINNUMF
        else:
            op = _C.BINARY_MINSI if x.dtype.is_int_signed() else _C.BINARY_MINUI
        return self._bin(op, x, y)

    def unary_float(self, op, x, name) -> tensor:
        x = self.to_tensor(self._unwrap(x))
        if not x.dtype.is_floating():
            raise TypeError(f"{name} needs a floating-point operand, got {x.dtype}")
        if x.dtype.is_fp8():
            return self.cast(self.unary_float(op, self.cast(x, T.float32), name), x.dtype)
        return tensor(self.b.unary(op, x.handle), x.dtype, x.shape)

    def abs(self, x) -> tensor:
        x = self.to_tensor(self._unwrap(x))
        if x.dtype.is_fp8():
            return self._fp8_sign(x, negate=False)
        if x.dtype.is_floating():
            return tensor(self.b.unary(_C.UNARY_ABSF, x.handle), x.dtype, x.shape)
        if x.dtype.is_int_signed():
            return tensor(self.b.unary(_C.UNARY_ABSI, x.handle), x.dtype, x.shape)
        if x.dtype.is_int():
            return x
        raise TypeError(f"abs of {x.dtype}")

    def _fp8_sign(self, x, negate):
        """-x or |x| of fp8 bytes: the sign bit, except FNUZ formats, whose
        0x80 is NaN and whose zero has no sign."""
        u = tensor(x.handle, T.uint8, x.shape)
        r = self.xor_(u, 0x80) if negate else self.and_(u, 0x7F)
        if F8.FORMATS[x.dtype.name].kind == "fnuz":
            r = self.where(self.equal(self.and_(u, 0x7F), 0), u, r)
        r = self.cast(r, T.uint8)
        return tensor(r.handle, x.dtype, x.shape)

    def fma(self, x, y, z) -> tensor:
        x, y = self.binary_operands(x, y)
        x, z = self.binary_operands(x, z)
        x, y = self.binary_operands(x, y)
        if x.dtype.is_fp8():
            f = [self.cast(v, T.float32) for v in (x, y, z)]
            r = tensor(self.b.fma(f[0].handle, f[1].handle, f[2].handle), T.float32, x.shape)
            return self.cast(r, x.dtype)
        return tensor(self.b.fma(x.handle, y.handle, z.handle), x.dtype, x.shape)

    def umulhi(self, x, y) -> tensor:
        x, y = self.binary_operands(x, y)
        return self._bin(_C.BINARY_MULHIUI, x, y)

    # ------------------------------------------------------------- creation
    def arange(self, start: int, end: int) -> tensor:
        if not isinstance(start, int) or not isinstance(end, int):
            raise TypeError("arange's arguments must be constexpr integers")
        if end <= start:
            raise ValueError("arange's end must be greater than its start")
        n = end - start
        if n & (n - 1):
            raise ValueError(f"arange's range must be a power of 2, got {n}")
        return tensor(self.b.make_range(start, end), T.int32, (n,))

    def program_id(self, axis: int) -> tensor:
        return tensor(self.b.program_id(axis), T.int32)

    def num_programs(self, axis: int) -> tensor:
        return tensor(self.b.num_programs(axis), T.int32)

    # ---------------------------------------------------------------- shape
    def reshape(self, t: tensor, shape) -> tensor:
        shape = tuple(int(s) for s in shape)
        if not t.shape:
            return self.splat(t, shape)
        n = 1
        for s in shape:
            n *= s
        if n != t.numel:
            raise ValueError(f"cannot reshape {list(t.shape)} to {list(shape)}")
        if shape == t.shape:
            return t
        if not shape:
            raise ValueError("reshape to a scalar is not supported")
        return tensor(self.b.reshape(t.handle, shape), t.dtype, shape)

    def hint(self, t, kind: str, values) -> tensor:
        """Triton's tl.multiple_of / max_contiguous / max_constancy: the value
        itself, carrying a fact the Xe lowering may use."""
        if not isinstance(t, tensor):
            return t  # a constexpr: nothing to state
        if isinstance(values, int):
            values = [values]
        values = [int(getattr(v, "value", v)) for v in values]
        if len(values) != max(1, len(t.shape)):
            raise ValueError(f"{kind}: {len(values)} values for a tensor of shape {list(t.shape)} "
                             f"(one per dimension)")
        for v in values:
            if v < 1 or v & (v - 1):
                raise ValueError(f"{kind}: {v} is not a power of two >= 1")
        return tensor(self.b.hint(t.handle, kind, values), t.dtype, t.shape)

    def expand_dims(self, t: tensor, axis: int) -> tensor:
        t = self.to_tensor(t)
        if not t.shape:
            return self.splat(t, (1,))
        rank = len(t.shape) + 1
        if axis < 0:
            axis += rank
        if not 0 <= axis < rank:
            raise ValueError(f"expand_dims axis {axis} out of range for rank {rank - 1}")
        shape = t.shape[:axis] + (1,) + t.shape[axis:]
        return tensor(self.b.expand_dims(t.handle, axis), t.dtype, shape)

    def permute(self, t: tensor, order) -> tensor:
        order = tuple(int(o) for o in order)
        if sorted(order) != list(range(len(t.shape))):
            raise ValueError(f"permute order {order} is not a permutation of the dims of {list(t.shape)}")
        if order == tuple(range(len(order))):
            return t
        shape = tuple(t.shape[o] for o in order)
        return tensor(self.b.trans(t.handle, order), t.dtype, shape)

    # --------------------------------------------------------------- memory
    def load(self, ptr, mask=None, other=None) -> tensor:
        ptr = self.to_tensor(self._unwrap(ptr))
        if not ptr.dtype.is_ptr():
            raise TypeError(f"tl.load needs a pointer, got {ptr.dtype}")
        elt = ptr.dtype.element_ty
        mask, other = self._unwrap(mask), self._unwrap(other)
        if other is not None and mask is None:
            raise ValueError("tl.load: `other` needs a `mask`")
        if mask is not None:
            mask = self.to_bool(mask)
            if mask.shape != ptr.shape:
                shape = self.broadcast_shapes(ptr.shape, mask.shape)
                ptr, mask = self.broadcast_to(ptr, shape), self.broadcast_to(mask, shape)
        if other is not None:
            # A Python number becomes a constant of the element type directly
            # (no f32 constant + truncf, which bf16 on Xe cannot take).
            if isinstance(other, (bool, int, float)):
                other = self.scalar_constant(other, elt)
            other = self.cast(self.to_tensor(other), elt)
            other = self.broadcast_to(other, ptr.shape)
        h = self.b.load(ptr.handle, None if mask is None else mask.handle,
                        None if other is None else other.handle)
        return tensor(h, elt, ptr.shape)

    def store(self, ptr, value, mask=None):
        ptr = self.to_tensor(self._unwrap(ptr))
        if not ptr.dtype.is_ptr():
            raise TypeError(f"tl.store needs a pointer, got {ptr.dtype}")
        check_writable(ptr.dtype)
        elt = ptr.dtype.element_ty
        value = self.to_tensor(self._unwrap(value))
        mask = self._unwrap(mask)
        shape = self.broadcast_shapes(ptr.shape, value.shape)
        if mask is not None:
            mask = self.to_bool(mask)
            shape = self.broadcast_shapes(shape, mask.shape)
            mask = self.broadcast_to(mask, shape)
        ptr = self.broadcast_to(ptr, shape)
        value = self.broadcast_to(self.cast(value, elt), shape)
        self.b.store(ptr.handle, value.handle, None if mask is None else mask.handle)

    # ----------------------------------------------------------- reductions
    def reduce_builtin(self, t: tensor, axis, kind, keep_dims=False) -> tensor:
        t = self.to_tensor(t)
        if axis is None:
            # Whole-tensor reduction: flatten first (row-major), as Triton does.
            if len(t.shape) > 1:
                t = self.reshape(t, (t.numel,))
            axis = 0
        if not t.shape:
            return t
        if t.dtype.is_fp8():
            # in fp32 (exact for min/max; a sum rounds once, at the end)
            r = self.reduce_builtin(self.cast(t, T.float32), axis, kind, keep_dims)
            return self.cast(r, t.dtype)
        rank = len(t.shape)
        if axis < 0:
            axis += rank
        if not 0 <= axis < rank:
            raise ValueError(f"reduction axis {axis} out of range for rank {rank}")
        h = self.b.reduce(kind, t.handle, axis)
        shape = t.shape[:axis] + t.shape[axis + 1:]
        r = tensor(h, t.dtype, shape)
        if keep_dims:
            r = self.expand_dims(r, axis) if shape else self.reshape(r, (1,) * rank)
        return r

    def dot(self, a: tensor, b_: tensor, acc, input_precision, out_dtype) -> tensor:
        # Rank 3 is a batched dot: [B, M, K] @ [B, K, N], as in Triton; more
        # leading dimensions are folded into one batch and unfolded after.
        if len(a.shape) > 3 and len(b_.shape) == len(a.shape) and a.shape[:-2] == b_.shape[:-2]:
            lead = a.shape[:-2]
            nb = 1
            for d in lead:
                nb *= d
            if acc is not None:
                acc = self.to_tensor(acc)
                acc = self.reshape(acc, (nb,) + tuple(acc.shape[-2:]))
            r3 = self.dot(self.reshape(a, (nb,) + a.shape[-2:]), self.reshape(b_, (nb,) + b_.shape[-2:]),
                          acc, input_precision, out_dtype)
            return self.reshape(r3, lead + r3.shape[-2:])
        r = len(a.shape)
        if r not in (2, 3) or len(b_.shape) != r:
            raise ValueError(f"tl.dot needs 2-D or 3-D (batched) operands of one rank, got "
                             f"{list(a.shape)} and {list(b_.shape)}")
        if a.shape[-1] != b_.shape[-2] or a.shape[:-2] != b_.shape[:-2]:
            raise ValueError(f"tl.dot: shapes do not fit: {list(a.shape)} @ {list(b_.shape)}")
        if a.dtype.is_fp8() and b_.dtype.is_fp8():
            # No target here multiplies fp8 (PVC's DPAS neither): every fp8
            # value is an fp16 value, so the products are fp16 products,
            # accumulated in fp32 as Triton's fp8 dots are.
            a, b_ = self.cast(a, T.float16), self.cast(b_, T.float16)
            input_precision = "ieee"
        if a.dtype != b_.dtype:
            raise TypeError(f"tl.dot operands must have one dtype, got {a.dtype} and {b_.dtype}")
        # The result type is Triton's rule, not out_dtype alone: fp32 and bf16
        # operands accumulate in fp32 and fp64 operands in fp64 whatever
        # out_dtype says; only fp16 (and fp8) products take out_dtype. (Taking
        # out_dtype's default fp32 for fp64 operands rounded every product to
        # fp32: a silent precision loss Triton's tolerant tests did not see.)
        shape = tuple(a.shape[:-1]) + (b_.shape[-1],)
        if acc is not None:
            acc = self.to_tensor(acc)
            if acc.shape != shape:
                raise ValueError(f"tl.dot accumulator shape {list(acc.shape)} != {list(shape)}")
            if acc.dtype.is_int() and not a.dtype.is_int():
                raise TypeError(f"tl.dot of {a.dtype} operands cannot accumulate into {acc.dtype}")
            if out_dtype is not None and acc.dtype != out_dtype:
                raise TypeError(f"expected accumulator dtype {out_dtype}, got {acc.dtype}; "
                                f"pass out_dtype={acc.dtype} to use this accumulator dtype")
        if out_dtype is None:
            out_dtype = T.float32 if acc is None else acc.dtype
        if a.dtype.is_int():
            out = T.int32
        elif out_dtype.is_bf16():
            raise ValueError("out_dtype=bfloat16 is unsupported. Please use out_dtype=float32/float16 "
                             "and cast with `.to(tl.bfloat16)`")
        elif a.dtype.is_fp32() or a.dtype.is_bf16():
            out = T.float32
        elif a.dtype.is_fp64():
            out = T.float64
        else:
            out = out_dtype
        if acc is None:
            acc = self.full(shape, 0, out)
        else:
            out = acc.dtype
        prec = input_precision or ("tf32" if a.dtype.is_fp32() else "ieee")
        if prec in ("bf16x3", "bf16x6"):
            # Triton's fp32 emulations by bf16 products: the targets here
            # compute fp32 dots at least that precisely.
            prec = "ieee"
        if a.dtype.is_int():
            # Integer inputs have no precision: the tile IR's integers are
            # signless, so the dot is told how to read them.
            prec = "unsigned" if a.dtype.is_int_unsigned() else "ieee"
        h = self.b.dot(a.handle, b_.handle, acc.handle, prec)
        return tensor(h, out, shape)


def check_writable(pt):
    """Stores and atomics through a tl.const pointer are refused (Triton's message)."""
    if pt.is_const():
        raise ValueError("Cannot store to a constant pointer")


def _check_ptr(a: dtype, b_: dtype, allow_ptr_a: bool):
    if a.is_ptr():
        if not allow_ptr_a:
            raise TypeError(f"invalid operands of type {a} and {b_}")
        if b_.is_ptr() and a != b_:
            raise TypeError(f"invalid operands of type {a} and {b_}")
        if b_.is_floating():
            raise TypeError(f"invalid operands of type {a} and {b_}")


def _to_tensor_type(x) -> dtype:
    if isinstance(x, bool):
        return T.int1
    if isinstance(x, int):
        if -2**31 <= x < 2**31:
            return T.int32
        if 2**31 <= x < 2**32:
            return T.uint32
        if -2**63 <= x < 2**63:
            return T.int64
        if 2**63 <= x < 2**64:
            return T.uint64
        raise ValueError(f"integer {x} does not fit in 64 bits")
    if isinstance(x, float):
        a = abs(x)
        if a == float("inf") or a == 0.0 or x != x or 2**-126 <= a <= (2 - 2**-23) * 2**127:
            return T.float32
        return T.float64
    raise TypeError(f"cannot convert {x!r} to a kernel value")


def flatten_value(v):
    """(tensors, rebuild): the kernel values inside `v` and a function that
    rebuilds a like value from new tensors of the same types. Compound values
    (block pointers, tensor descriptors, tuples) carry through loops and ifs
    this way; compile-time values flatten to nothing."""
    if isinstance(v, tensor):
        return [v], lambda ts: ts[0]
    if hasattr(v, "_flatten"):
        return v._flatten()
    if isinstance(v, (tuple, list)):
        parts = [flatten_value(x) for x in v]
        flat = [t for ts, _ in parts for t in ts]
        kind = type(v)

        def rebuild(ts):
            out, i = [], 0
            for pts, rb in parts:
                out.append(rb(ts[i:i + len(pts)]))
                i += len(pts)
            return kind(*out) if hasattr(kind, "_fields") else kind(out)  # NamedTuples
        return flat, rebuild
    return [], lambda ts: v


def same_structure(a, b):
    """Whether two flattened lists can stand for one another in scf ops."""
    return len(a) == len(b) and all(
        x.dtype == y.dtype and x.dtype.is_ptr() == y.dtype.is_ptr() and x.shape == y.shape
        for x, y in zip(a, b))
