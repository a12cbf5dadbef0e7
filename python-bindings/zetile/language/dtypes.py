"""Element types of zetile.language, with Triton's names and rules."""
from __future__ import annotations


from .. import _C

# Kind order used by Triton's promotion of Python scalars: bool < uint < int < float.
KIND_BOOL, KIND_UINT, KIND_INT, KIND_FLOAT = 0, 1, 2, 3


class dtype:
    """A scalar element type (tl.float32, tl.int32, ...)."""

    SINT = ("int8", "int16", "int32", "int64")
    UINT = ("int1", "uint8", "uint16", "uint32", "uint64")
    FP = ("fp16", "bf16", "fp32", "fp64")
    # Triton's 8-bit floats. A kernel holds their bytes (i8 in the tile IR)
    # and computes on them by conversion (fp8.py).
    FP8 = ("fp8e4nv", "fp8e5", "fp8e4b15", "fp8e4b8", "fp8e5b16")
    # Triton's lists of type names (tl.dtype.SINT_TYPES + ...).
    SINT_TYPES = list(SINT)
    UINT_TYPES = list(UINT)
    STANDARD_FP_TYPES = list(FP)
    FP_TYPES = list(FP8) + list(FP)
    OTHER_TYPES = []

    def __init__(self, name: str):
        self.name = name
        if name == "int1":
            self._bits, self._kind = 1, KIND_BOOL
        elif name in self.SINT:
            self._bits, self._kind = int(name[3:]), KIND_INT
        elif name in self.UINT:
            self._bits, self._kind = int(name[4:]), KIND_UINT
        elif name in self.FP:
            self._bits, self._kind = int(name[2:]) if name != "bf16" else 16, KIND_FLOAT
        elif name in self.FP8:
            self._bits, self._kind = 8, KIND_FLOAT
        else:
            raise ValueError(f"unknown dtype {name!r}")

    # Predicates, spelled as in triton.language.
    def is_floating(self): return self._kind == KIND_FLOAT
    def is_int(self): return self._kind in (KIND_BOOL, KIND_UINT, KIND_INT)
    def is_bool(self): return self._kind == KIND_BOOL
    def is_int_signed(self): return self._kind == KIND_INT
    def is_int_unsigned(self): return self._kind in (KIND_UINT, KIND_BOOL)
    def is_fp16(self): return self.name == "fp16"
    def is_bf16(self): return self.name == "bf16"
    def is_fp32(self): return self.name == "fp32"
    def is_fp64(self): return self.name == "fp64"
    def is_fp8(self): return self.name in self.FP8
    def is_fp8e4nv(self): return self.name == "fp8e4nv"
    def is_fp8e5(self): return self.name == "fp8e5"
    def is_fp8e4b15(self): return self.name == "fp8e4b15"
    def is_fp8e4b8(self): return self.name == "fp8e4b8"
    def is_fp8e5b16(self): return self.name == "fp8e5b16"
    def is_ptr(self): return False
    def is_const(self): return False
    def is_block(self): return False
    def is_standard_floating(self): return self.is_floating() and not self.is_fp8()

    @property
    def scalar(self): return self  # as Triton's: a scalar type is its own element type

    def kind(self):
        # Triton orders kinds bool < integer < float for weak Python scalars;
        # signed and unsigned integers are one kind there.
        return {KIND_BOOL: 0, KIND_UINT: 1, KIND_INT: 1, KIND_FLOAT: 2}[self._kind]

    @property
    def primitive_bitwidth(self): return self._bits

    @property
    def int_bitwidth(self): return self._bits if self.is_int() else 0

    @property
    def int_signedness(self): return "signed" if self.is_int_signed() else "unsigned"

    @property
    def fp_mantissa_width(self):
        return {"fp16": 10, "bf16": 7, "fp32": 23, "fp64": 52, "fp8e4nv": 3, "fp8e5": 2,
                "fp8e4b15": 3, "fp8e4b8": 3, "fp8e5b16": 2}[self.name]

    @property
    def exponent_bias(self):
        return {"fp16": 15, "bf16": 127, "fp32": 127, "fp64": 1023, "fp8e4nv": 7, "fp8e5": 15,
                "fp8e4b15": 15, "fp8e4b8": 8, "fp8e5b16": 16}[self.name]

    def get_int_min_value(self):
        if self.is_bool(): return 0
        return -(1 << (self._bits - 1)) if self.is_int_signed() else 0

    def get_int_max_value(self):
        if self.is_bool(): return 1
        return (1 << (self._bits - 1)) - 1 if self.is_int_signed() else (1 << self._bits) - 1

    @property
    def zt_kind(self) -> int:
        """The builder's scalar kind (signless)."""
        if self.is_fp8():
            return _C.I8  # the byte; fp8.py gives it its meaning
        if self.is_floating():
            return {"fp16": _C.F16, "bf16": _C.BF16, "fp32": _C.F32, "fp64": _C.F64}[self.name]
        return {1: _C.I1, 8: _C.I8, 16: _C.I16, 32: _C.I32, 64: _C.I64}[self._bits]

    def to_numpy(self):
        import numpy as np  # on use: `import zetile` does not import numpy
        if self.name == "bf16":
            import ml_dtypes
            return np.dtype(ml_dtypes.bfloat16)
        if self.is_fp8():
            import ml_dtypes
            return np.dtype(getattr(ml_dtypes, _ML_DTYPES[self.name], np.uint8))
        return np.dtype({"int1": np.bool_, "fp16": np.float16, "fp32": np.float32,
                         "fp64": np.float64}.get(self.name, self.name))

    def __eq__(self, other):
        return isinstance(other, dtype) and not other.is_ptr() and self.name == other.name

    def __hash__(self): return hash(self.name)
    def __repr__(self): return f"zetile.language.{_PUBLIC_NAMES.get(self.name, self.name)}"
    def __str__(self): return self.name

    # Used as a function: tl.float32(x) casts, as in Triton.
    def __call__(self, x):
        from . import core
        return core.cast(x, self)


class const:
    """tl.const: annotates a pointer parameter as pointing to constant data
    (`def k(x: tl.const, ...)`), as in Triton. Its pointer type is then
    `pointer_type(elt, const=True)`: loads read through it, stores and
    atomics are refused at compile time ("Cannot store to a constant
    pointer"), and the constness is part of the type (a value that is a
    const pointer on one side of a run-time if and a plain one on the
    other is a type mismatch)."""


class pointer_type(dtype):
    """Pointer to elements of `element_ty` in global memory."""

    def __init__(self, element_ty: dtype, address_space: int = 1, const: bool = False):
        self.element_ty = element_ty
        self.address_space = address_space
        self.const = const
        self.name = f"pointer<{element_ty}>"
        self._bits, self._kind = 64, -1

    def is_ptr(self): return True
    def is_floating(self): return False
    def is_int(self): return False
    def is_bool(self): return False
    def is_int_signed(self): return False
    def is_int_unsigned(self): return False

    @property
    def zt_kind(self): return _C.PTR

    def is_const(self): return self.const

    # Constness is part of the type, as in Triton: a const pointer and a
    # plain one differ where types must agree (if/else, ternaries, returns).
    def __eq__(self, other):
        return isinstance(other, pointer_type) and other.element_ty == self.element_ty and \
            bool(other.const) == bool(self.const)

    def __hash__(self): return hash(("ptr", self.element_ty.name, bool(self.const)))

    def __repr__(self):
        return f"pointer_type({self.element_ty!r}{', const=True' if self.const else ''})"

    def __str__(self): return ("*k" if self.const else "*") + signature_name(self.element_ty)


int1 = dtype("int1")
int8, int16, int32, int64 = (dtype(n) for n in dtype.SINT)
uint8, uint16, uint32, uint64 = (dtype(n) for n in dtype.UINT[1:])
float16, bfloat16, float32, float64 = (dtype(n) for n in dtype.FP)
float8e4nv, float8e5, float8e4b15, float8e4b8, float8e5b16 = (dtype(n) for n in dtype.FP8)
_PUBLIC_NAMES = {"int1": "int1", "fp16": "float16", "bf16": "bfloat16", "fp32": "float32",
                 "fp64": "float64", "fp8e4nv": "float8e4nv", "fp8e5": "float8e5",
                 "fp8e4b15": "float8e4b15", "fp8e4b8": "float8e4b8", "fp8e5b16": "float8e5b16"}

ALL_DTYPES = [int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
              float16, bfloat16, float32, float64]

# Triton's signature spellings ("*fp32", "i32", "u8", "fp16", "i1").
_SIG = {"int1": "i1", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
        "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
        "fp16": "fp16", "bf16": "bf16", "fp32": "fp32", "fp64": "fp64",
        "fp8e4nv": "fp8e4nv", "fp8e5": "fp8e5", "fp8e4b15": "fp8e4b15", "fp8e4b8": "fp8e4b8",
        "fp8e5b16": "fp8e5b16"}
_SIG_REV = {v: k for k, v in _SIG.items()}
_SIG_REV.update({"f16": "fp16", "f32": "fp32", "f64": "fp64", "u1": "int1", "bool": "int1"})
_BY_NAME = {d.name: d for d in ALL_DTYPES + [float8e4nv, float8e5, float8e4b15, float8e4b8, float8e5b16]}


_CANONICAL = {"float8e4nv": "fp8e4nv", "float8e5": "fp8e5", "float8e4b15": "fp8e4b15",
              "float8e4b8": "fp8e4b8", "float8e5b16": "fp8e5b16", "float8_e4m3fn": "fp8e4nv",
              "float8_e5m2": "fp8e5", "float8_e4m3fnuz": "fp8e4b8", "float8_e5m2fnuz": "fp8e5b16",
              "float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64",
              "bool": "int1", "i1": "int1"}


def str_to_ty(name: str, c=None) -> dtype:
    """tl.str_to_ty: a dtype from Triton's signature spelling ("*fp32",
    "i32", "bf16") or a numpy/torch name ("float32", "uint8", "bool")."""
    name = name.strip()
    if name.startswith("*"):
        return pointer_type(str_to_ty(name[1:].lstrip("k")), const=name[1:].startswith("k"))
    return parse_signature_type(_CANONICAL.get(name, name))


def signature_name(d: dtype) -> str:
    if d.is_ptr():
        return "*" + signature_name(d.element_ty)
    return _SIG[d.name]


def parse_signature_type(s: str) -> dtype:
    """'*fp32' -> pointer_type(float32), 'i32' -> int32 (Triton's strings)."""
    s = s.strip()
    if s.startswith("*"):
        s2 = s[1:]
        const = s2.startswith("k")  # Triton's const pointers "*kfp32"
        if const:
            s2 = s2[1:]
        return pointer_type(parse_signature_type(s2), const=const)
    if s in _SIG_REV:
        return _BY_NAME[_SIG_REV[s]]
    if s in _BY_NAME:
        return _BY_NAME[s]
    raise ValueError(f"unknown type {s!r} in signature (use Triton's spellings: *fp32, i32, fp16, ...)")


_NUMPY_TO_DTYPE = {
    "bool": int1, "int8": int8, "int16": int16, "int32": int32, "int64": int64,
    "uint8": uint8, "uint16": uint16, "uint32": uint32, "uint64": uint64,
    "float16": float16, "bfloat16": bfloat16, "float32": float32, "float64": float64,
    # ml_dtypes' 8-bit floats (numpy names); float8_e4m3b11fnuz is not Triton's fp8e4b15
    "float8_e4m3fn": float8e4nv, "float8_e5m2": float8e5, "float8_e4m3fnuz": float8e4b8,
    "float8_e5m2fnuz": float8e5b16,
}
_ML_DTYPES = {"fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2", "fp8e4b8": "float8_e4m3fnuz",
              "fp8e5b16": "float8_e5m2fnuz", "fp8e4b15": "uint8"}


_FROM_NUMPY_CACHE = {}


def from_numpy_dtype(npd) -> dtype:
    # Called on every launch for every array: keep the lookup a dict hit.
    hit = _FROM_NUMPY_CACHE.get(npd)
    if hit is not None:
        return hit
    import numpy as np
    name = np.dtype(npd).name
    if name not in _NUMPY_TO_DTYPE:
        raise TypeError(f"no zetile dtype for numpy dtype {name}")
    _FROM_NUMPY_CACHE[npd] = _NUMPY_TO_DTYPE[name]
    return _NUMPY_TO_DTYPE[name]


_POINTER_CACHE = {}


def pointer_to(elt: dtype) -> "pointer_type":
    """The (shared) pointer type to elements of `elt`."""
    p = _POINTER_CACHE.get(elt.name)
    if p is None:
        p = _POINTER_CACHE[elt.name] = pointer_type(elt)
    return p


_TORCH_NAMES = {"torch.bool": int1, "torch.int8": int8, "torch.int16": int16, "torch.int32": int32,
                "torch.int64": int64, "torch.uint8": uint8, "torch.uint16": uint16,
                "torch.uint32": uint32, "torch.uint64": uint64, "torch.float16": float16,
                "torch.bfloat16": bfloat16, "torch.float32": float32, "torch.float64": float64,
                "torch.float8_e4m3fn": float8e4nv, "torch.float8_e5m2": float8e5,
                "torch.float8_e4m3fnuz": float8e4b8, "torch.float8_e5m2fnuz": float8e5b16}


def from_torch_dtype(tdt) -> dtype:
    key = str(tdt)
    if key not in _TORCH_NAMES:
        raise TypeError(f"no zetile dtype for torch dtype {key}")
    return _TORCH_NAMES[key]
