"""@zetile.jit: specialization, compilation and launches, as in Triton.

`kernel[grid](*args, CONST=...)` specializes on the argument types (dtype of
each pointer, i32/i64 for ints), Triton's hints (integers and addresses
divisible by 16; integers equal to 1 become constants) and the constexpr
values; each specialization is compiled once per device (tile IR -> the
on-disk cache -> the device) and kept in memory.
"""
from __future__ import annotations

import inspect
import re
import textwrap
import sys
import threading
import time

from . import _C, runtime, source_cache
from .compiler import codegen
from .compiler.errors import CompilationError, UnsupportedError
from .language import core, dtypes as T


import os

# Read once: launches consult it on every call.
_ENV_DEBUG = "assert" in os.environ.get("ZETILE_DEBUG", "") or os.environ.get("TRITON_DEBUG") == "1"
_ENV_BOUNDS = "bounds" in os.environ.get("ZETILE_DEBUG", "")


_np_types = None  # with numpy: (arrays, bools, ints, floats) including numpy's


def _value_types():
    """The classes launches sort arguments by: numpy's scalars and arrays
    join Python's once the program has imported numpy (zetile does not
    import it: before, no argument can be a numpy value)."""
    global _np_types
    if _np_types is None:
        np = sys.modules.get("numpy")
        if np is None:
            return (runtime.Tensor,), (bool,), (int,), (float,)
        _np_types = ((np.ndarray, runtime.Tensor), (bool, np.bool_), (int, np.integer),
                     (float, np.floating))
    return _np_types


def _launch_ints(bound):
    """The integer values among a launch's arguments (strides a kernel takes)."""
    _, bools, ints, _ = _value_types()
    return {int(v) for v in bound.values() if isinstance(v, ints) and not isinstance(v, bools)}


def _strides_passed(v, ints):
    """Whether a non-contiguous array `v` is passed as Triton passes it, by
    its first element's address (data_ptr()), the kernel addressing its
    storage. Two kinds of view qualify:
    - a dense permutation of a contiguous layout (x.T, x.permute(...),
      np.empty_like of a transposed array): no gaps, no overlaps, positive
      strides, so its storage is exactly numel elements from that address
      and the kernel cannot read or write outside the tensor whatever it
      does with the storage (bounds mode checks that same span);
    - a view whose every non-unit stride (in elements) is among the launch's
      integer arguments (`matmul(a, b.T, ..., b.stride(0), b.stride(1))`):
      the kernel indexes it through those strides.
    Any other view is refused by pointer_arg instead of being read wrongly:
    one with gaps (`x[::2]`, a column) given to a kernel that takes no
    strides would be read as if its elements were adjacent; one with zero
    strides (expand/broadcast) overlaps; negative strides (reversed numpy
    views) start below their first element's address."""
    layout = runtime.element_strides(v)
    if layout is None:
        return False
    strides, shape = layout
    if runtime.dense_order(strides, shape) is not None:
        return True
    need = [s for s, d in zip(strides, shape) if d > 1]
    return all(s > 0 for s in need) and all(s == 1 or s in ints for s in need)


def _why_refused(e):
    """A refused view's message says which views are taken instead."""
    msg = str(e)
    if msg.startswith("is not contiguous"):
        return ValueError(msg + " (a view with gaps or overlaps is refused; dense permuted views "
                          "such as x.T, and views whose strides are integer arguments of the "
                          "launch, are passed by data_ptr() as in Triton)")
    return e


def _arg_bytes(p):
    """Bytes reachable from a PointerArg's address (bounds mode): what the
    array, tensor or buffer behind it holds from its first element on."""
    k = p.keepalive
    np = sys.modules.get("numpy")
    if np is not None and isinstance(k, np.ndarray):
        if k.size == 0:
            return 0
        return int(sum((d - 1) * abs(s) for d, s in zip(k.shape, k.strides))) + k.itemsize
    if isinstance(k, runtime.Tensor):
        return k.nbytes
    if hasattr(k, "element_size") and hasattr(k, "stride"):  # torch
        if k.numel() == 0:
            return 0
        return (sum((d - 1) * abs(s) for d, s in zip(k.shape, k.stride())) + 1) * k.element_size()
    return int(getattr(k, "size", 0) or 0)  # a staged _C.Buffer


def _name_arguments(e, names):
    """A bounds error names kernel arguments by position (`argument #i`,
    over the run-time arguments); put their names in."""
    msg = str(e)
    for i, n in enumerate(names):
        msg = msg.replace(f"argument #{i},", f"argument '{n}',")
    return type(e)(msg)


class KernelArgumentError(TypeError, ValueError):
    """A launch whose arguments do not fit the kernel (a TypeError, and a
    ValueError for the array checks that used to raise ValueError)."""


def _argument_error(kernel, n, e):
    """An array check's message (runtime.pointer_arg) with the kernel and
    argument named: "k: argument 'x' is not contiguous ..."."""
    msg = str(e)
    sep = " " if msg.split(" ", 1)[0] in ("is", "has", "cannot") else ": "
    return KernelArgumentError(f"{kernel}: argument '{n}'{sep}{msg}")


def _annotated_pointer(ann):
    """The element dtype a parameter's annotation promises ("*fp32" or
    tl.pointer_type(tl.float32)), else None."""
    if isinstance(ann, str) and ann.strip().startswith("*"):
        try:
            ann = T.parse_signature_type(ann)
        except ValueError:
            return None
    if isinstance(ann, T.pointer_type):
        return ann.element_ty
    return None


def _is_const_annotation(ann):
    if ann is T.const:
        return True
    return isinstance(ann, str) and ann.strip() in ("tl.const", "const", "triton.language.const",
                                                    "zetile.language.const")


def _is_constexpr_annotation(ann):
    if ann is core.constexpr:
        return True
    if isinstance(ann, str):
        return "constexpr" in ann
    return False


_BINARY_SECTIONS = ("spirv", "obj", "native")


class CompiledKernel:
    """One specialization compiled for one target (and loaded on a device
    when `executable` is set). `asm` maps section names to their contents:
    "tile" (tile IR), "mlir" (zetile's lowering), "llvm" (cpu) or "spirv"
    (Xe, bytes), "meta"."""

    def __init__(self, name, artifact, executable=None, arg_names=(), arg_types=None, constexprs=None):
        self.name = name
        self.artifact = artifact
        self.executable = executable
        self.arg_names = tuple(arg_names)
        self.arg_types = dict(arg_types or {})
        self.constexprs = dict(constexprs or {})
        self._hash = None
        self._hash_of = None  # what JITFunction's hooked_hash digests, until asked
        self._asm = None

    @property
    def hash(self):
        """A digest of the specialization (Triton's CompiledKernel.hash), None
        outside a JITFunction. Computed when first read: hashlib's import
        alone was 5 ms of a new process's first launch (bench/warm_start.py)."""
        if self._hash is None and self._hash_of is not None:
            self._hash = hooked_hash(*self._hash_of)
        return self._hash

    @hash.setter
    def hash(self, value):
        self._hash, self._hash_of = value, None

    @property
    def asm(self):
        if self._asm is None:
            asm = {}
            for k, v in self.artifact.sections().items():
                # Binary sections (SPIR-V, the CPU target's machine code) stay bytes.
                asm[k] = v if k in _BINARY_SECTIONS else v.decode("utf-8", "replace")
            self._asm = asm
        return self._asm

    @property
    def metadata(self):
        meta = KernelMetadata()
        for line in self.asm.get("meta", "").splitlines():
            if "=" in line:
                k, v = line.split("=", 1)
                meta[k] = v
        if meta.get("target") == "cpu":
            # Triton's `compiled.metadata.shared` (bytes of shared memory per
            # program): the CPU target has none. Xe targets do not record
            # their SLM use here yet, so they have no "shared" entry.
            meta.setdefault("shared", 0)
        return meta


class KernelMetadata(dict):
    """A compiled kernel's metadata: a dict whose keys are also attributes,
    as Triton's `compiled.metadata.shared` reads them."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"kernel metadata has no {name!r} (it has: "
                                 f"{', '.join(sorted(self))})") from None


def _specialize_int(v):
    if -2**31 <= v < 2**31:
        return T.int32
    if 2**31 <= v < 2**32:
        return T.uint32
    if -2**63 <= v < 2**63:
        return T.int64
    if 2**63 <= v < 2**64:
        return T.uint64
    raise _IntegerOverflow(f"integer argument {v} does not fit in 64 bits")


class _IntegerOverflow(KernelArgumentError, OverflowError):
    """An integer argument wider than 64 bits (an OverflowError, as in Triton)."""


def _fast_plan_kind(dt):
    """The argument kind the C launcher packs a run-time value as (None: a
    value it cannot pack, such as an fp16 scalar, so launches stay slow)."""
    if dt.is_ptr():
        return _C.PTR
    if dt.is_floating() and dt.primitive_bitwidth == 16:
        return None
    return dt.zt_kind


_fast_seen = set()   # (type, dtype) of arrays already described to the C launcher
_torch_codes = {}    # torch dtype -> its number in C launch keys


def _note_fast_array(v):
    """Tells the C launcher (launcher.c) about an array type jit.py accepted,
    so that later launches can read such arrays without Python."""
    t = type(v)
    if t is runtime.Tensor:
        k = (t, v.dtype)
        if k not in _fast_seen:
            _fast_seen.add(k)
            _C._ext._fast_zetile_tensor(t, v.dtype, len(_fast_seen))
    elif t.__module__ == "numpy":
        if t not in _fast_seen:
            _fast_seen.add(t)
            _C._ext._fast_numpy_type(t)
    elif t.__module__.startswith("torch"):
        k = (t, v.dtype)
        if k not in _fast_seen:
            _fast_seen.add(k)
            code = _torch_codes.setdefault(v.dtype, len(_torch_codes) + 1)
            try:
                from torch.utils.dlpack import to_dlpack
            except ImportError:  # pragma: no cover - every torch has it
                to_dlpack = None
            _C._ext._fast_torch(t, v.dtype, code, to_dlpack)


# Constexpr values of these types are immutable: the C launcher may compare
# them by value.
_C._ext._fast_value_types((T.dtype,))


class JITFunction(_C.KernelBase):
    # kernel[grid] is KernelBase's (launcher.c): it returns a launch callable
    # that runs signatures seen before in C and calls _launch_slow otherwise.
    def __init__(self, fn, do_not_specialize=(), debug=None, noinline=None, repr=None,
                 launch_metadata=None):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.__qualname__ = getattr(fn, "__qualname__", fn.__name__)
        sig = inspect.signature(fn)
        self.signature = sig
        self.arg_names = list(sig.parameters)
        self.constexpr_names = {n for n, p in sig.parameters.items()
                                if _is_constexpr_annotation(p.annotation)}
        self.defaults = {n: p.default for n, p in sig.parameters.items()
                         if p.default is not inspect.Parameter.empty}
        self.do_not_specialize = {self.arg_names[d] if isinstance(d, int) else d
                                  for d in do_not_specialize}
        # Pointer annotations are checked against the arrays passed at launch.
        self.pointer_annotations = {}
        for n, p in sig.parameters.items():
            elt = _annotated_pointer(p.annotation)
            if elt is not None:
                self.pointer_annotations[n] = elt
        # tl.const parameters: their pointer types are const (no stores).
        self.const_names = {n for n, p in sig.parameters.items() if _is_const_annotation(p.annotation)}
        self.debug = debug
        self._source = None
        _ALL_JIT.add(self)
        self._cache = {}
        self._compiling = {}  # specialization -> its compile's lock
        self._lock = threading.Lock()
        self._fast_setup(tuple(self.arg_names),
                         tuple(n in self.constexpr_names for n in self.arg_names),
                         tuple((n in self.defaults, self.defaults.get(n)) for n in self.arg_names))

    @property
    def debug_enabled(self):
        """device_assert / assert on run-time values are compiled in only for
        debug kernels: @jit(debug=True), ZETILE_DEBUG=assert or TRITON_DEBUG=1."""
        if self.debug is not None:
            return bool(self.debug)
        rt = knobs.runtime
        if "debug" in rt.__dict__:  # set in Python (triton.knobs.runtime.debug)
            return bool(rt.__dict__["debug"])
        return _ENV_DEBUG

    @property
    def bounds_enabled(self):
        """Bounds-checked kernels (CPU target): @jit(debug=True) or
        ZETILE_DEBUG=bounds. A separate specialization: ordinary kernels'
        code and cache keys are unchanged."""
        if self.debug is not None:
            return bool(self.debug)
        return _ENV_BOUNDS

    @property
    def source(self):
        if self._source is None:
            self._source = codegen.FunctionSource(self.fn)
        return self._source

    def __repr__(self):
        return f"JITFunction({self.__module__}:{self.__qualname__})"

    @property
    def src(self):
        """The kernel's source from its `def` line (Triton's JITFunction.src)."""
        text = textwrap.dedent("".join(self.source.lines))
        m = re.search(r"^(async\s+)?def\s", text, re.MULTILINE)
        return text[m.start():] if m else text

    def _unsafe_update_src(self, new_src):
        """Compiles `new_src` (same signature) instead of the function's own
        source from now on, as Triton's; compiled specializations are dropped."""
        self._source = codegen.FunctionSource(self.fn, text=new_src)
        with self._lock:
            self._cache.clear()
            self._fast_clear()

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self.__name__} is a @zetile.jit kernel: launch it as "
                           f"{self.__name__}[grid](...), or call it from another kernel")

    def _launch_slow(self, grid, fast_key, args, kwargs):
        """kernel[grid](...) when the C launcher cannot: a signature not seen
        yet (fast_key: its key, registered if the launch may be repeated in
        C), or arguments it does not read."""
        return self._run(*args, grid=grid, _fast_key=fast_key, **kwargs)

    # ------------------------------------------------------------ binding
    def _bind(self, args, kwargs):
        if len(args) > len(self.arg_names):
            raise KernelArgumentError(f"{self.__name__}() takes {len(self.arg_names)} arguments but "
                                      f"{len(args)} were given")
        bound = dict(zip(self.arg_names, args))
        for k, v in kwargs.items():
            if k not in self.signature.parameters:
                raise KernelArgumentError(f"{self.__name__}() got an unexpected argument '{k}'")
            if k in bound:
                raise KernelArgumentError(f"{self.__name__}() got multiple values for argument '{k}'")
            bound[k] = v
        for n in self.arg_names:
            if n not in bound:
                if n in self.defaults:
                    bound[n] = self.defaults[n]
                else:
                    kind = "constexpr " if n in self.constexpr_names else ""
                    raise KernelArgumentError(f"{self.__name__}() missing {kind}argument '{n}'")
        return bound

    def specialize(self, bound, device):
        """Splits bound arguments into run-time arguments (types, hints,
        values) and constexprs; returns (key, arg_types, divisibility,
        constexprs, runtime_values)."""
        arg_types, divisibility, constexprs, values = {}, {}, {}, []
        descriptors = {}
        key = []
        arrays, bools, ints, floats = _value_types()
        # A tuple argument is specialized element by element (Triton's rule):
        # its elements become arguments named "<name>.<i>", visited next, and
        # the code generator rebuilds the tuple from them (codegen.TupleArg).
        work = [(n, bound[n]) for n in self.arg_names]
        i = 0
        while i < len(work):
            n, v = work[i]
            i += 1
            # tl.constexpr(x) passed at launch is a compile-time value, as are
            # @jit functions (called by the kernel, inlined).
            wrapped = isinstance(v, core.constexpr) or isinstance(v, JITFunction)
            if isinstance(v, core.constexpr):
                v = v.value
            if n in self.constexpr_names or wrapped:
                if isinstance(v, arrays):
                    raise KernelArgumentError(f"{self.__name__}: constexpr argument '{n}' must be a "
                                              "compile-time value, got an array")
                constexprs[n] = v
                key.append((n, "c", _hashable(v)))
                continue
            if isinstance(v, tuple):
                leaves = [(f"{n}.{j}", x) for j, x in enumerate(v)]
                work[i:i] = leaves
                constexprs[n] = codegen.TupleArg(type(v), [ln for ln, _ in leaves])
                key.append((n, "tuple", len(v), _tuple_type_key(type(v))))
                continue
            if v is None:
                constexprs[n] = None
                key.append((n, "none"))
                continue
            if isinstance(v, bools):
                arg_types[n] = T.int1
                values.append((n, T.int1, bool(v)))
                key.append((n, "i1"))
                continue
            if isinstance(v, ints):
                v = int(v)
                if v == 1 and n not in self.do_not_specialize:
                    constexprs[n] = 1
                    key.append((n, "1"))
                    continue
                dt = _specialize_int(v)
                arg_types[n] = dt
                # Positive multiples of 16 only (Triton also hints 0 and
                # negatives): the Xe lowering takes a hinted stride as a 2D
                # block pitch, which must be positive (lowering/xe/xe_axis.c).
                d16 = n not in self.do_not_specialize and v > 0 and v % 16 == 0
                if d16:
                    divisibility[n] = 16
                values.append((n, dt, v))
                key.append((n, dt.name, d16))
                continue
            if isinstance(v, floats):
                arg_types[n] = T.float32
                values.append((n, T.float32, float(v)))
                key.append((n, "fp32"))
                continue
            if _is_host_descriptor(v):
                key.append(self._specialize_descriptor(n, v, device, arg_types, divisibility,
                                                       values, descriptors))
                continue
            try:
                p = runtime.pointer_arg(v, device)
                if p is not None:
                    _note_fast_array(v)
            except (ValueError, TypeError) as e:
                # Only a refused array pays for the stride check (launches
                # run this per array): a view the launch gives its strides
                # to is taken as Triton takes it, any other refusal stands.
                if not _strides_passed(v, _launch_ints(bound)):
                    raise _argument_error(self.__name__, n, _why_refused(e)) from None
                try:
                    p = runtime.pointer_arg(v, device, strided=True)
                except (ValueError, TypeError) as e2:
                    raise _argument_error(self.__name__, n, e2) from None
            if p is None:
                raise KernelArgumentError(
                    f"{self.__name__}: argument '{n}' of type {type(v).__name__} cannot be passed to a "
                    "kernel (expected an array, a tensor, an int, a float or a bool; annotate "
                    "compile-time parameters with tl.constexpr)")
            want = self.pointer_annotations.get(n)
            if want is not None and want.name != p.dtype.name:
                raise KernelArgumentError(f"{self.__name__}: argument '{n}' holds {p.dtype} but its "
                                          f"annotation says pointer to {want}")
            pt = T.pointer_type(p.dtype, const=True) if n in self.const_names else \
                T.pointer_to(p.dtype)
            arg_types[n] = pt
            d16 = n not in self.do_not_specialize and p.address % 16 == 0
            if d16:
                divisibility[n] = 16
            values.append((n, pt, p))
            key.append((n, pt, d16))
        if self.bounds_enabled:
            key.append(("bounds",))  # its own specialization (checked code)
        return tuple(key), arg_types, divisibility, constexprs, values, descriptors

    def _specialize_descriptor(self, n, v, device, arg_types, divisibility, values, descriptors):
        """A host TensorDescriptor becomes run-time arguments (base, shape,
        strides); its block shape, padding and unit strides are compile-time."""
        try:
            p = runtime.pointer_arg(v.base, device, strided=True)
        except (ValueError, TypeError) as e:
            raise _argument_error(self.__name__, f"{n}.base", e) from None
        if p is None:
            raise KernelArgumentError(f"{self.__name__}: descriptor '{n}' has a base of type "
                                      f"{type(v.base).__name__}, not an array")
        pt = T.pointer_to(p.dtype)
        item = p.dtype.primitive_bitwidth // 8
        # Triton's rules for descriptors, which Intel's 2D block IO shares:
        # a unit last stride and 16-byte aligned other strides.
        if int(v.strides[-1]) != 1:
            raise KernelArgumentError(f"{self.__name__}: descriptor '{n}' needs a last stride of 1")
        for d, x in enumerate(v.strides[:-1]):
            if (int(x) * item) % 16:
                raise KernelArgumentError(f"{self.__name__}: descriptor '{n}': stride {d} "
                                          f"({int(x)} elements) must be 16-byte aligned")
        arg_types[f"{n}.base"] = pt
        d16 = p.address % 16 == 0
        if d16:
            divisibility[f"{n}.base"] = 16
        values.append((f"{n}.base", pt, p))
        for d, x in enumerate(v.shape):
            arg_types[f"{n}.shape{d}"] = T.int64
            # Extents divisible by 16 are specialized as Triton's integer
            # arguments are (the Xe lowering's transposed B reads need an
            # even K extent for 16-bit data: xe_trans_load.c).
            if int(x) % 16 == 0:
                divisibility[f"{n}.shape{d}"] = 16
            values.append((f"{n}.shape{d}", T.int64, int(x)))
        unit = []
        for d, x in enumerate(v.strides):
            if int(x) == 1:
                unit.append(d)
                continue
            arg_types[f"{n}.stride{d}"] = T.int64
            if int(x) % 16 == 0:
                divisibility[f"{n}.stride{d}"] = 16
            values.append((f"{n}.stride{d}", T.int64, int(x)))
        descriptors[n] = (len(v.shape), tuple(int(b) for b in v.block_shape), v.padding, tuple(unit))
        return (n, "desc", str(pt), descriptors[n], d16,
                tuple(int(x) % 16 == 0 for x in v.strides),
                tuple(int(x) % 16 == 0 for x in v.shape))

    # ------------------------------------------------------------ compiling
    def build_tile_ir(self, arg_types, constexprs, divisibility, descriptors=None, cached=True):
        """The specialization's Tile IR: kept by source (source_cache.py) when
        cached, so a warm process skips the front end."""
        k = None
        if cached and source_cache.enabled():
            k = source_cache.key(self, arg_types, constexprs, divisibility, descriptors,
                                 self.debug_enabled, self.bounds_enabled)
            text = source_cache.load(k) if k else None
            if text is not None:
                return text
        b = _C.Builder()
        if self.bounds_enabled:
            b.set_bounds_check(True)
        codegen.generate(b, self, self.__name__, arg_types, constexprs, divisibility,
                         descriptors or {}, debug=self.debug_enabled)
        text = b.module_text()
        if k:
            source_cache.store(k, text)
        return text

    def _compile_for(self, device, key, arg_types, divisibility, constexprs, num_warps,
                     descriptors, xe=(None, None)):
        t0 = time.perf_counter()
        text = self.build_tile_ir(arg_types, constexprs, divisibility, descriptors)
        front_end_ms = (time.perf_counter() - t0) * 1e3  # the compile's timings show it
        info = runtime.info(device)
        # The device says whether its driver lacks 2D block IO; ZETILE_COMPAT=1/0
        # forces the compat path on or off; a launch's compat= (autotune
        # configs) overrides both.
        grf_mode, compat_opt = xe
        forced = os.environ.get("ZETILE_COMPAT", "")
        compat = forced == "1" if forced in ("0", "1") else bool(info.get("compat"))
        if compat_opt is not None:
            compat = bool(compat_opt)
        try:
            artifact = _C.compile(text, target=info["target"], num_warps=num_warps or 0,
                                  compat=compat, igc_options=_grf_igc_options(grf_mode),
                                  cached=True, front_end_ms=front_end_ms)
        except _C.Error as e:
            raise _as_compilation_error(self, e) from e
        exe = device.load(artifact)
        return CompiledKernel(self.__name__, artifact, exe, list(arg_types), arg_types, constexprs)

    def warmup(self, *args, grid=None, num_warps=None, num_stages=None, device=None,
               grf_mode=None, compat=None, enable_fp_fusion=None, warp_size=None, **kwargs):
        # enable_fp_fusion (Triton: may a*b+c become one FMA): zetile never
        # fuses, Triton's result with fusion off and one it may give with it on.
        num_warps = _warps_of_16_lanes(num_warps, warp_size)
        dev = runtime.get_device(device)
        bound = self._bind(args, kwargs)
        key, arg_types, div, constexprs, _, descs = self.specialize(bound, dev)
        return self._get_compiled(dev, key, arg_types, div, constexprs, num_warps, descs,
                                  (grf_mode, compat), is_warmup=True)

    # ------------------------------------------------- triton.knobs hooks
    def _knob_hooks(self, dev, key, arg_types, div, constexprs, num_warps, descs, xe,
                    is_warmup):
        """Before a compile: refuses knobs zetile cannot honour, then calls
        triton.knobs.runtime.jit_cache_hook as Triton does (a true result
        skips the compile: returns True)."""
        why = knobs.unsupported_setting()
        if why:
            src = self.source
            raise UnsupportedError(src.file, src.first_line, 1, "", self.__name__, why)
        hook = knobs.runtime.jit_cache_hook
        if hook and self._call_hook(hook, dev, key, arg_types, div, constexprs, num_warps,
                                    descs, xe, is_warmup):
            return True
        return None

    def _call_hook(self, hook, dev, key, arg_types, div, constexprs, num_warps, descs, xe,
                   is_warmup):
        data = _serialize_specialization(self, key, arg_types, div, constexprs, num_warps,
                                         descs, xe)
        sig = {n: str(t) for n, t in arg_types.items()}
        args = ", ".join(f"{n}: {t}" for n, t in sig.items())
        compile_info = {
            "key": key, "signature": sig, "device": dev, "constants": dict(constexprs),
            "num_warps": num_warps, "num_ctas": 1, "num_stages": None,
            "enable_fp_fusion": False, "launch_cooperative_grid": False, "extern_libs": (),
            "configs": [dict(div)], "specialization_data": data, "is_warmup": is_warmup,
        }
        return hook(key=key, repr=f"{self.__qualname__}[num_warps={num_warps}]({args})",
                    fn=_JitFunctionInfo(self.__module__, self.__qualname__, self),
                    compile=compile_info, is_manual_warmup=is_warmup, already_compiled=False)

    def preload(self, specialization_data):
        """Compiles the specialization a jit_cache_hook received as
        `compile["specialization_data"]` (Triton's JITFunction.preload) on
        the current device and returns it."""
        import json
        d = json.loads(specialization_data)
        if d.get("name") != f"{self.__module__}.{self.__qualname__}":
            raise RuntimeError(f"specialization data is for {d.get('name')} but trying to "
                               f"preload for {self.__module__}.{self.__qualname__}")
        dec = _decode_spec
        key = dec(d["key"])
        arg_types = {n: dec(t) for n, t in d["arg_types"]}
        div = {n: v for n, v in d["divisibility"]}
        constexprs = {n: dec(v) for n, v in d["constexprs"]}
        descs = {n: dec(v) for n, v in d["descriptors"]}
        return self._get_compiled(runtime.get_device(None), key, arg_types, div, constexprs,
                                  d["num_warps"], descs, tuple(dec(d["xe"])), is_warmup=True)

    @property
    def device_caches(self):
        """Triton's per-device caches: `device_caches[device][0].clear()`
        drops the compiled specializations (zetile keeps one cache for all
        devices, so every device's is cleared)."""
        fn = self

        class _Cache:
            def clear(self):
                with fn._lock:
                    fn._cache.clear()
                    fn._fast_clear()

            def __len__(self):
                return len(fn._cache)

        import collections
        return collections.defaultdict(lambda: (_Cache(), {}, None, None, None))

    def _get_compiled(self, dev, key, arg_types, div, constexprs, num_warps, descs,
                      xe=(None, None), is_warmup=False):
        ckey = (id(dev), key, num_warps, self.debug_enabled, xe)
        ck = self._cache.get(ckey)
        if ck is None:
            # One lock per specialization: threads wanting the same one wait
            # for a single compile, different ones (autotuning configs)
            # compile at the same time (the compiler runs without the GIL).
            with self._lock:
                klock = self._compiling.setdefault(ckey, threading.Lock())
            try:
                with klock:
                    ck = self._cache.get(ckey)
                    if ck is None:
                        hooked = self._knob_hooks(dev, key, arg_types, div, constexprs,
                                                  num_warps, descs, xe, is_warmup)
                        if hooked is not None:
                            return None  # triton.knobs.runtime.jit_cache_hook said skip
                        ck = self._compile_for(dev, key, arg_types, div, constexprs, num_warps,
                                               descs, xe)
                        ck._hash_of = (key, num_warps, xe, self.debug_enabled)
                        with self._lock:
                            self._cache[ckey] = ck
                        post = knobs.runtime.jit_post_compile_hook
                        if post:
                            self._call_hook(post, dev, key, arg_types, div, constexprs,
                                            num_warps, descs, xe, is_warmup)
            finally:
                with self._lock:
                    self._compiling.pop(ckey, None)
        return ck

    # ------------------------------------------------------------- launching
    def run(self, *args, grid, num_warps=None, num_stages=None, num_ctas=None, device=None,
            grf_mode=None, compat=None, warp_size=None, **kwargs):
        """The launch kernel[grid](*args, **kwargs) makes, with the launch
        options spelled out (the autotuner reads them from this signature):
        through the C launcher, so repeated signatures skip Python here too."""
        for k, v in (("num_warps", num_warps), ("num_stages", num_stages),
                     ("num_ctas", num_ctas), ("device", device), ("grf_mode", grf_mode),
                     ("compat", compat), ("warp_size", warp_size)):
            if v is not None:
                kwargs[k] = v
        return self[grid](*args, **kwargs)

    def _run(self, *args, grid, num_warps=None, num_stages=None, num_ctas=None, device=None,
             grf_mode=None, compat=None, _fast_key=None, enable_fp_fusion=None, warp_size=None,
             **kwargs):
        # grf_mode ("large" | "default" | None: zetile picks) and compat
        # (None: the device decides) are zetile's Xe knobs (zetile.Config).
        num_warps = _warps_of_16_lanes(num_warps, warp_size)
        dev = runtime.get_device(device)
        bound = self._bind(args, kwargs)
        key, arg_types, div, constexprs, values, descs = self.specialize(bound, dev)
        ck = self._get_compiled(dev, key, arg_types, div, constexprs, num_warps, descs,
                                (grf_mode, compat))
        if callable(grid):
            grid = grid(dict(bound))
        grid = tuple(int(g.value if isinstance(g, core.constexpr) else g) for g in
                     (grid if isinstance(grid, (tuple, list)) else (grid,)))
        if not 1 <= len(grid) <= 3:
            raise KernelArgumentError(f"grid must have 1 to 3 dimensions, got {grid}")
        if any(g < 0 for g in grid):
            raise KernelArgumentError(f"grid dimensions must not be negative, got {grid}")
        grid = grid + (1,) * (3 - len(grid))
        if 0 in grid:
            return ck
        cargs = []
        writebacks = []
        host_args = False
        for n, dt, v in values:
            if dt.is_ptr():
                cargs.append((_C.PTR, v.address))
                if v.writeback is not None:
                    writebacks.append(v.writeback)
                host_args = host_args or v.host
            elif dt.is_floating():
                if dt.primitive_bitwidth == 16:
                    import numpy as np
                    bits = np.array([v], dtype=dt.to_numpy()).view(np.uint16)[0]
                    cargs.append((dt.zt_kind, int(bits)))
                else:
                    cargs.append((dt.zt_kind, v))
            else:
                cargs.append((dt.zt_kind, v))
        if self.bounds_enabled:
            try:
                ck.executable.launch(grid, cargs, sizes=[_arg_bytes(v) if dt.is_ptr() else 0
                                                         for _, dt, v in values])
            except _C.Error as e:
                raise _name_arguments(e, [n for n, _, _ in values]) from None
        else:
            ck.executable.launch(grid, cargs)
        sync = writebacks or (host_args and runtime.info(dev)["backend"] != "cpu")
        if sync:
            # numpy/torch-CPU arguments are read by the caller right after the
            # call: on asynchronous devices (GPUs, OpenCL) wait for the kernel.
            dev.synchronize()
            for w in writebacks:
                w()
        elif _fast_key is not None and not self.bounds_enabled and not descs:
            self._register_fast(_fast_key, ck, values)
        return ck

    def _register_fast(self, key, ck, values):
        """Lets the C launcher repeat this launch's signature (key) without
        Python: the same executable, arguments packed as this launch packed
        them. Only for launches with nothing to do after the kernel (no
        staging, no synchronization) and arguments that map one to one onto
        parameters (no tuples, no descriptors)."""
        index = {n: i for i, n in enumerate(self.arg_names)}
        plan = []
        for n, dt, _ in values:
            kind = _fast_plan_kind(dt)
            if kind is None or n not in index:
                return
            plan.append((index[n], kind))
        self._fast_register(key, ck, ck.executable, tuple(plan))


def _warps_of_16_lanes(num_warps, warp_size):
    """Intel's Triton's `warp_size` launch option (threads per warp, 16 or
    32; its benchmark kernels' configs carry it, e.g. fused_softmax's
    {"warp_size": 32}, num_warps=32): the workgroup keeps its num_warps x
    warp_size work-items, which zetile runs as 16-lane warps (subgroups).
    A launch with it skips the C launcher's cache (an unknown option there)."""
    if warp_size is None or warp_size == 16:
        return num_warps
    if warp_size != 32:
        raise KernelArgumentError(f"warp_size must be 16 or 32 (Intel's Triton's threads per warp), "
                                  f"not {warp_size!r}")
    return None if num_warps is None else num_warps * 2


def _grf_igc_options(grf_mode):
    """IGC options for a register-file mode: "large" (256 GRF), "default"
    (128), None/"auto" lets the lowering choose (large for kernels with dots)."""
    if grf_mode in (None, "auto"):
        return None
    # "256"/"128": the spelling of Intel's Triton configs ({'grf_mode': '256'}).
    if grf_mode in ("large", 256, "256"):
        return "-ze-opt-large-register-file"
    if grf_mode in ("default", 128, "128"):
        return ""
    raise KernelArgumentError(f"grf_mode must be 'auto', 'large' or 'default', not {grf_mode!r}")


def _tuple_type_key(cls):
    return "" if cls is tuple else f"{cls.__module__}.{cls.__qualname__}:{id(cls)}"


def _hashable(v):
    if isinstance(v, (list, tuple)):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, T.dtype):
        return ("dtype", str(v))
    try:
        hash(v)
        return v
    except TypeError:
        return repr(v)


def _as_compilation_error(jitfn, e):
    """Wraps a compiler (MLIR) error, which names file:line in its text."""
    msg = str(e)
    src = jitfn.source
    import re
    m = re.search(re.escape(src.file) + r":(\d+):(\d+)", msg)
    line = int(m.group(1)) if m else src.first_line
    col = int(m.group(2)) if m else 1
    idx = line - src.first_line
    src_line = src.lines[idx] if 0 <= idx < len(src.lines) else ""
    # The compiler's UNSUPPORTED (a construct a target lacks) stays an
    # UnsupportedError, as the front end's are.
    cls = UnsupportedError if isinstance(e, getattr(_C, "UnsupportedError", ())) else \
        CompilationError
    return cls(src.file, line, col, src_line, jitfn.__name__, msg, type(e).__name__)


def jit(fn=None, *, do_not_specialize=(), debug=None, noinline=None, repr=None,
        launch_metadata=None, **kwargs):
    """Decorator: compile `fn` as a kernel (Triton's @triton.jit).

    Array arguments (numpy, torch, DLPack, zetile.Tensor) reach the kernel as
    their first element's address, as in Triton. Contiguous arrays and dense
    permuted views (x.T, x.permute(...): no gaps, no overlaps) are taken; the
    kernel addresses their storage. A view with gaps or overlaps (x[::2], a
    column, expand) is refused with a KernelArgumentError unless each of its
    non-unit strides is an integer argument of the launch (the kernel then
    indexes it through them): indexed as if contiguous it would be read
    wrongly. docs/RELIABILITY.md has the rules."""
    def wrap(f):
        return JITFunction(f, do_not_specialize=do_not_specialize, debug=debug, noinline=noinline)
    return wrap(fn) if fn is not None else wrap


def compile(fn, signature, constexprs=None, constants=None, target="cpu", num_warps=0,
            compat=False, igc_options=None, cached=True):
    """Compiles one specialization without launching it (no device needed).

    signature: {"x_ptr": "*fp32", "n": "i32"} (Triton's type strings) or a
    comma-separated string in parameter order; constexprs: {"BLOCK": 1024}.
    Returns a CompiledKernel whose .asm holds "tile", "mlir", "spirv"/"llvm".
    """
    if not isinstance(fn, JITFunction):
        fn = JITFunction(fn)
    constexprs = dict(constexprs or {})
    constexprs.update(constants or {})
    if isinstance(signature, str):
        runtime_names = [n for n in fn.arg_names if n not in fn.constexpr_names and n not in constexprs]
        parts = [s.strip() for s in signature.split(",") if s.strip()]
        if len(parts) != len(runtime_names):
            raise KernelArgumentError(f"signature has {len(parts)} types for {len(runtime_names)} "
                                      f"arguments ({', '.join(runtime_names)})")
        signature = dict(zip(runtime_names, parts))
    arg_types, div, descs = {}, {}, {}
    for n in fn.arg_names:
        if n in constexprs:
            continue
        sig_n = signature.get(n) if isinstance(signature, dict) else None
        if isinstance(sig_n, str) and sig_n.replace(" ", "").startswith("tensordesc<"):
            # Triton's spelling: "tensordesc<fp16[64,32]>" (last stride 1, others 16-divisible).
            m = re.match(r"tensordesc<\s*(\w+)\s*\[([\d,\s]+)\]\s*>", sig_n)
            if not m:
                raise KernelArgumentError(f"bad tensor descriptor type {sig_n!r}")
            elt = T.parse_signature_type(m.group(1))
            block = tuple(int(x) for x in m.group(2).split(","))
            arg_types[f"{n}.base"] = T.pointer_to(elt)
            div[f"{n}.base"] = 16
            for d in range(len(block)):
                arg_types[f"{n}.shape{d}"] = T.int64
            for d in range(len(block) - 1):
                arg_types[f"{n}.stride{d}"] = T.int64
                div[f"{n}.stride{d}"] = 16
            descs[n] = (len(block), block, "zero", (len(block) - 1,))
            continue
        if n in fn.constexpr_names:
            if n in fn.defaults:
                constexprs[n] = fn.defaults[n]
                continue
            raise KernelArgumentError(f"constexpr '{n}' needs a value in constexprs=")
        if n not in signature:
            if n in fn.defaults:
                constexprs[n] = fn.defaults[n]
                continue
            raise KernelArgumentError(f"argument '{n}' needs a type in signature=")
        s = signature[n]
        if isinstance(s, str) and s.endswith(":16"):
            s = s[:-3]
            div[n] = 16
        arg_types[n] = T.parse_signature_type(s) if isinstance(s, str) else s
        if arg_types[n].is_ptr():
            div.setdefault(n, 16)
    unknown = set(signature) - set(fn.arg_names) if isinstance(signature, dict) else set()
    if unknown:
        raise KernelArgumentError(f"signature names unknown arguments: {', '.join(sorted(unknown))}")
    t0 = time.perf_counter()
    text = fn.build_tile_ir(arg_types, constexprs, div, descs, cached=cached)
    front_end_ms = (time.perf_counter() - t0) * 1e3
    try:
        artifact = _C.compile(text, target=target, num_warps=num_warps, compat=compat,
                              igc_options=igc_options, cached=cached, front_end_ms=front_end_ms)
    except _C.Error as e:
        raise _as_compilation_error(fn, e) from e
    return CompiledKernel(fn.__name__, artifact, None, [n for n in fn.arg_names if n in arg_types],
                          arg_types, constexprs)


# ---------------------------------------------------- triton.knobs support
from . import knobs  # noqa: E402 - knobs imports nothing of the package


import weakref  # noqa: E402

_ALL_JIT = weakref.WeakSet()


def _drop_fast_launches():
    """triton.knobs.runtime.debug changed: kernels' C fast launches (which
    skip Python, so the debug check) are dropped; compiled specializations
    stay cached under their debug flag."""
    for fn in list(_ALL_JIT):
        with fn._lock:
            fn._fast_clear()


def _is_host_descriptor(v):
    """isinstance(v, zetile.tools.tensor_descriptor.TensorDescriptor), without
    importing that module (3 ms of `import zetile`, its dataclass machinery):
    until someone imports it, no value can be one."""
    m = sys.modules.get("zetile.tools.tensor_descriptor")
    return m is not None and isinstance(v, m.TensorDescriptor)


class _JitFunctionInfo:
    """The `fn` Triton passes to its JIT hooks."""

    def __init__(self, module, name, jit_function):
        self.module = module
        self.name = name
        self.jit_function = jit_function


def hooked_hash(key, num_warps, xe, debug):
    """A compiled specialization's `hash` (Triton's CompiledKernel.hash): a
    digest of what selects it, so a preload of a hook's specialization data
    names the same kernel as the compile that produced the data."""
    import hashlib
    return hashlib.sha256(repr((_encode_spec(key, strict=False), num_warps, xe,
                                bool(debug))).encode()).hexdigest()


class _NotSerializable(Exception):
    pass


def _qualified(obj):
    return f"{obj.__module__}:{obj.__qualname__}"


def _resolve(path):
    import importlib
    mod, _, qual = path.partition(":")
    obj = importlib.import_module(mod)
    for part in qual.split("."):
        obj = getattr(obj, part)
    return obj


def _encode_spec(v, strict=True):
    """JSON-able form of a specialization's pieces (dtypes, tuples,
    constexprs, @jit functions). strict=False stands repr() in for what has
    no such form (for the hash only)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, tuple):
        return {"tuple": [_encode_spec(x, strict) for x in v]}
    if isinstance(v, list):
        return {"list": [_encode_spec(x, strict) for x in v]}
    if isinstance(v, T.pointer_type):
        return {"dtype": ("*k" if getattr(v, "const", False) else "*") +
                T.signature_name(v.element_ty)}
    if isinstance(v, T.dtype):
        return {"dtype": T.signature_name(v)}
    if isinstance(v, core.constexpr):
        return {"constexpr": _encode_spec(v.value, strict)}
    if isinstance(v, codegen.TupleArg):
        return {"tuplearg": ["" if v.cls is tuple else _qualified(v.cls), list(v.names)]}
    if isinstance(v, JITFunction):
        return {"jit": _qualified(v)}
    if not strict:
        return {"repr": repr(v)}
    raise _NotSerializable(type(v).__name__)


def _decode_spec(v):
    if isinstance(v, list):
        return [_decode_spec(x) for x in v]
    if not isinstance(v, dict):
        return v
    (tag, x), = v.items()
    if tag == "tuple":
        return tuple(_decode_spec(y) for y in x)
    if tag == "list":
        return [_decode_spec(y) for y in x]
    if tag == "dtype":
        if x.startswith("*"):
            elt = T.parse_signature_type(x[2:] if x.startswith("*k") else x[1:])
            return T.pointer_type(elt, const=True) if x.startswith("*k") else T.pointer_to(elt)
        return T.parse_signature_type(x)
    if tag == "constexpr":
        return core.constexpr(_decode_spec(x))
    if tag == "tuplearg":
        return codegen.TupleArg(tuple if not x[0] else _resolve(x[0]), x[1])
    if tag == "jit":
        return _resolve(x)
    raise ValueError(f"specialization data: unknown entry {tag!r}")


def _serialize_specialization(fn, key, arg_types, div, constexprs, num_warps, descs, xe):
    """The `specialization_data` string of Triton's JIT hooks (JSON), read
    back by JITFunction.preload; None when a constexpr has no JSON form (a
    local class, an arbitrary object)."""
    import json
    try:
        return json.dumps({
            "name": f"{fn.__module__}.{fn.__qualname__}",
            "key": _encode_spec(key),
            "arg_types": [[n, _encode_spec(t)] for n, t in arg_types.items()],
            "divisibility": [[n, v] for n, v in div.items()],
            "constexprs": [[n, _encode_spec(v)] for n, v in constexprs.items()],
            "descriptors": [[n, _encode_spec(v)] for n, v in descs.items()],
            "num_warps": num_warps,
            "xe": _encode_spec(tuple(xe)),
        })
    except _NotSerializable:
        return None
