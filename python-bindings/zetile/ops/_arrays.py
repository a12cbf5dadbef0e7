"""Array-likes in, array-likes out: torch tensors, numpy arrays, DLPack
objects and zetile.Tensor become strided views the templates read through
their strides; outputs are allocated as the same kind as the inputs."""
import numpy as np

from .. import runtime
from ..language import dtypes as T

# Canonical dtype names shared by every kind of array.
_FLOAT = ("float16", "bfloat16", "float32", "float64")


class View:
    """What a kernel argument needs: `arg` (passed to the launch), shape and
    strides in elements, the dtype's name and the kind of the source."""
    __slots__ = ("arg", "shape", "strides", "dtype", "kind", "src")

    def __init__(self, arg, shape, strides, dtype, kind, src):
        self.arg, self.shape, self.strides, self.dtype, self.kind, self.src = \
            arg, tuple(shape), tuple(strides), dtype, kind, src

    @property
    def ndim(self):
        return len(self.shape)

    def unsqueeze(self, dim):
        """A view with a new size-1 dimension at `dim`."""
        return View(self.arg, self.shape[:dim] + (1,) + self.shape[dim:],
                    self.strides[:dim] + (0,) + self.strides[dim:], self.dtype, self.kind, self.src)

    def expand(self, shape):
        """A broadcast view to `shape` (stride 0 on broadcast dimensions)."""
        nd = len(shape)
        if self.ndim > nd:
            raise ValueError(f"cannot broadcast shape {self.shape} to {tuple(shape)}")
        sh = (1,) * (nd - self.ndim) + self.shape
        st = (0,) * (nd - self.ndim) + self.strides
        out = []
        for s, t, want in zip(sh, st, shape):
            if s == want:
                out.append(t if want != 1 else 0)
            elif s == 1:
                out.append(0)
            else:
                raise ValueError(f"cannot broadcast shape {self.shape} to {tuple(shape)}")
        return View(self.arg, shape, out, self.dtype, self.kind, self.src)


def _is_torch(x):
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def _np_name(dt):
    dt = np.dtype(dt)
    if dt.name == "bfloat16":
        return "bfloat16"
    if dt == np.bool_:
        return "bool"
    return dt.name


def _np_view(a, src, kind="numpy"):
    name = _np_name(a.dtype)
    if name == "bool":
        a = a.view(np.uint8)
    item = a.itemsize
    if a.flags.c_contiguous or a.size <= 1:
        strides = [s // item for s in a.strides] if a.size > 1 else [0] * a.ndim
        return View(a, a.shape, strides, name, kind, src)
    if all(s >= 0 and s % item == 0 for s in a.strides):
        # A strided view (a transpose, a slice): pass the memory it spans as
        # one contiguous 1-D array starting at its first element.
        span = 1 + sum((n - 1) * s // item for n, s in zip(a.shape, a.strides))
        flat = np.lib.stride_tricks.as_strided(a, shape=(span,), strides=(item,))
        return View(flat, a.shape, [s // item for s in a.strides], name, kind, src)
    return _np_view(np.ascontiguousarray(a), src, kind)


def as_view(x, what="argument"):
    """The View of an array-like; TypeError naming `what` if x is not one."""
    if isinstance(x, View):
        return x
    if _is_torch(x):
        if x.device.type not in ("cpu", "xpu"):
            raise ValueError(f"{what}: torch tensors on {x.device.type} are not supported")
        name = str(x.dtype).replace("torch.", "")
        t = x.detach().resolve_neg().resolve_conj()
        if name == "bool":
            t = t.view(__import__("torch").uint8)
        arg = t
        if not t.is_contiguous() and t.numel() > 1:
            # A strided view: pass the memory it spans as one contiguous 1-D
            # tensor starting at its first element (the kernel has the strides).
            span = 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride()))
            arg = t.as_strided((span,), (1,))
        return View(arg, t.shape, t.stride(), name, "torch", x)
    if isinstance(x, np.ndarray):
        return _np_view(x, x)
    if isinstance(x, runtime.Tensor):
        st, acc = [], 1
        for s in reversed(x.shape):
            st.append(acc)
            acc *= s
        return View(x, x.shape, tuple(reversed(st)), _np_name(x.dtype.to_numpy()), "zetile", x)
    if hasattr(x, "__dlpack__"):
        return _np_view(np.from_dlpack(x), x, "numpy")
    raise TypeError(f"{what} must be a torch tensor, a numpy array, a zetile.Tensor or a DLPack "
                    f"object, got {type(x).__name__}")


def numpy_dtype(name):
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    if name == "bool":
        return np.dtype(np.bool_)
    return np.dtype(name)


def torch_dtype(name):
    import torch
    return getattr(torch, name)


def empty(kind, shape, dtype):
    """A new array of `kind` ("torch", "numpy", "zetile") on the current device."""
    shape = tuple(int(s) for s in shape)
    if kind == "torch":
        import torch
        return torch.empty(shape, dtype=torch_dtype(dtype))
    if kind == "zetile":
        return runtime.empty(shape, T.from_numpy_dtype(numpy_dtype(dtype)))
    return np.empty(shape, dtype=numpy_dtype(dtype))


def is_float(name):
    return name in _FLOAT


def dtype_name(d):
    """A dtype's canonical name from a torch dtype, numpy dtype or string."""
    if d is None:
        return None
    if isinstance(d, str):
        return d.replace("torch.", "")
    if type(d).__module__.startswith("torch"):
        return str(d).replace("torch.", "")
    return _np_name(d)
