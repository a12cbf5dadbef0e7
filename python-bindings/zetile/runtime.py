"""Devices, device memory and how Python objects become kernel arguments."""
from __future__ import annotations

import os
import sys
import threading

from . import _C
from .language import dtypes as T
from .tensor_wrapper import TensorWrapper

_lock = threading.Lock()
_devices = {}          # name -> _C.Device
_current = None        # name chosen by set_device (None: $ZETILE_DEVICE / default)


def devices():
    """Every device zetile can use now: a list of dicts (name, backend, target, ...)."""
    return _C.devices()


_infos = {}            # id(device) -> its info dict (the extension builds a new dict per .info)


def info(dev):
    """A device's info dict, cached (launches read it on every call)."""
    i = _infos.get(id(dev))
    if i is None:
        i = _infos[id(dev)] = dev.info
    return i


def _open(name):
    dev = _devices.get(name)
    if dev is not None:
        return dev
    with _lock:
        dev = _devices.get(name)
        if dev is None:
            dev = _C.Device(name)
            # One Device object per device: "default" and "cpu" name the same
            # one (launches compare devices by identity in C).
            dev = _devices.setdefault(dev.info["name"], dev)
            _devices[name] = dev
        return dev


def set_device(name):
    """Selects the device used by kernel launches ("cpu", "level_zero", "level_zero:1", ...)."""
    global _current
    dev = _open(name)  # fail now, with the driver's message, if it cannot be opened
    _current = dev.info["name"]
    get_device()  # the C launcher follows the choice from the next launch on
    return dev


_fast_default = None   # what the C launcher was last told (launcher.c)


def get_device(name=None):
    """The device named `name`, else the one chosen by set_device, else
    $ZETILE_DEVICE, else the first Intel GPU, else the CPU."""
    global _fast_default
    if name is not None:
        return _open(name)
    if _current is not None:
        dev = _devices.get(_current) or _open(_current)
        state = (dev, True, None)
    else:
        env = os.environ.get("ZETILE_DEVICE")
        name = env or "default"
        dev = _devices.get(name) or _open(name)
        state = (dev, False, env)
    if state != _fast_default:
        # Launches without device= use this device in C while the choice
        # stands (set_device's, or $ZETILE_DEVICE reading the same).
        _C._ext._fast_default_device(*state)
        _fast_default = state
    return dev


class Tensor:
    """An n-dimensional array in device memory (`zetile.empty`, `zetile.from_numpy`)."""

    def __init__(self, shape, dtype, device=None):
        self.device = get_device(device) if not hasattr(device, "alloc") else device
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype if isinstance(dtype, T.dtype) else T.from_numpy_dtype(dtype)
        n = 1
        for s in self.shape:
            n *= s
        self._np_dtype = self.dtype.to_numpy()
        self.nbytes = n * self._np_dtype.itemsize
        self.buffer = self.device.alloc(max(self.nbytes, 1))

    def data_ptr(self):
        return self.buffer.address

    def numel(self):
        return self.nbytes // self._np_dtype.itemsize

    def numpy(self):
        """A host copy (waits for pending launches first)."""
        import numpy as np
        self.device.synchronize()
        out = np.empty(self.shape, dtype=self._np_dtype)
        if self.nbytes:
            self.buffer.read_into(out.reshape(-1).view(np.uint8))
        return out

    def copy_(self, array):
        import numpy as np
        a = np.ascontiguousarray(array, dtype=self._np_dtype)
        if a.shape != self.shape:
            raise ValueError(f"shape {a.shape} does not match {self.shape}")
        self.device.synchronize()
        if self.nbytes:
            self.buffer.write(a.reshape(-1).view(np.uint8))
        return self

    def __repr__(self):
        return f"zetile.Tensor(shape={self.shape}, dtype={self.dtype}, device={self.device.info['name']!r})"


def empty(shape, dtype=T.float32, device=None):
    if isinstance(shape, int):
        shape = (shape,)
    return Tensor(shape, dtype, device)


def zeros(shape, dtype=T.float32, device=None):
    import numpy as np
    t = empty(shape, dtype, device)
    return t.copy_(np.zeros(t.shape, dtype=t._np_dtype))


def from_numpy(array, device=None):
    import numpy as np
    a = np.ascontiguousarray(array)
    t = Tensor(a.shape, T.from_numpy_dtype(a.dtype), device)
    return t.copy_(a)


# ----------------------------------------------------------------- arguments
class PointerArg:
    """How an array-like argument reaches a kernel on `device`: its address,
    plus what to copy back after the launch when the device cannot read host
    memory (numpy arrays given to a GPU are staged through device memory)."""

    __slots__ = ("dtype", "address", "writeback", "keepalive", "host")

    def __init__(self, dtype, address, writeback=None, keepalive=None, host=False):
        self.dtype = dtype
        self.address = address
        self.writeback = writeback
        self.keepalive = keepalive
        # Host memory the caller reads directly (numpy, torch CPU): a launch on
        # an asynchronous device must finish before it returns.
        self.host = host


def _check_numpy(a, strided):
    """The rules every host array follows before its address is taken: a
    kernel sees only an address, so anything the address does not describe
    (strides, byte order, a misaligned start) would be read wrongly without
    an error. (One flags object per call: launches run this per array.)"""
    dt = a.dtype
    if not dt.isnative:
        raise ValueError(f"has non-native byte order ({dt.str}); use a.astype(a.dtype.newbyteorder('='))")
    flags = a.flags
    if not flags.aligned:
        raise ValueError(f"is not aligned to its element size ({dt.itemsize} bytes)")
    if not strided and not flags.c_contiguous and a.size > 1:
        raise ValueError(f"is not contiguous (strides {a.strides} for shape {a.shape}); "
                         "pass np.ascontiguousarray(a) or a copy")
    return T.from_numpy_dtype(dt)


def element_strides(v):
    """(strides in elements, shape) of a numpy array or a torch tensor
    (also behind triton.reinterpret), else None."""
    if isinstance(v, TensorWrapper):
        v = v.base
    np = sys.modules.get("numpy")
    if np is not None and isinstance(v, np.ndarray):
        if v.itemsize == 0 or any(s % v.itemsize for s in v.strides):
            return None
        return [s // v.itemsize for s in v.strides], tuple(v.shape)
    if type(v).__module__.startswith("torch") and hasattr(v, "stride"):
        return list(v.stride()), tuple(v.shape)
    return None


def dense_order(strides, shape):
    """The axes, outermost first, that make a view of these strides (in
    elements) C-contiguous, when it is a permutation of a contiguous layout
    (x.T, x.permute(...)): no gaps, no overlaps, positive strides, so its
    storage is exactly its elements. None for any other view."""
    dims = sorted((i for i, d in enumerate(shape) if d > 1), key=lambda i: strides[i])
    expect = 1
    for i in dims:
        if strides[i] != expect:
            return None
        expect *= shape[i]
    return tuple([i for i, d in enumerate(shape) if d <= 1] + dims[::-1])


def _numpy_pointer(a, device, strided=False):
    dt = _check_numpy(a, strided)
    host = info(device)["host_memory"]
    if strided and host:
        # A strided view (descriptor base): the kernel gets its strides separately.
        return PointerArg(dt, a.__array_interface__["data"][0], keepalive=a, host=True)
    if strided and not a.flags.c_contiguous and a.size > 1:
        # A dense permuted view (x.T) is staged in its storage order: the
        # kernel addresses storage, as it would in host memory.
        layout = element_strides(a)
        order = layout and dense_order(*layout)
        if order is not None:
            a = a.transpose(order)
    if not a.flags.c_contiguous and a.size > 1:
        raise ValueError(f"is not contiguous (strides {a.strides} for shape {a.shape}); "
                         "pass np.ascontiguousarray(a) or a copy")
    if host:
        return PointerArg(dt, a.__array_interface__["data"][0], keepalive=a, host=True)
    # Stage through device memory and copy back after the launch.
    import numpy as np
    buf = device.alloc(max(a.nbytes, 1))
    if a.nbytes:
        buf.write(a.reshape(-1).view(np.uint8))

    def back():
        if a.nbytes and a.flags.writeable:
            buf.read_into(a.reshape(-1).view(np.uint8))
    return PointerArg(dt, buf.address, writeback=back, keepalive=buf)


def pointer_arg(obj, device, strided=False):
    """PointerArg for a numpy array, torch tensor, zetile.Tensor or any
    object with __dlpack__; None if obj is not array-like."""
    # numpy is looked up, not imported: without it no argument is an ndarray
    # (and `import zetile` stays without numpy until a program uses it).
    np = sys.modules.get("numpy")
    if np is not None and isinstance(obj, np.ndarray):
        return _numpy_pointer(obj, device, strided)
    if isinstance(obj, TensorWrapper):
        # triton.reinterpret: the memory of `base`, read as another dtype.
        p = pointer_arg(obj.base, device, strided)
        if p is not None:
            if p.dtype.primitive_bitwidth != obj.dtype.primitive_bitwidth:
                raise ValueError(f"reinterprets {p.dtype} as {obj.dtype}, a different width")
            p.dtype = obj.dtype
        return p
    if isinstance(obj, Tensor):
        if obj.device is not device and info(obj.device)["name"] != info(device)["name"]:
            raise ValueError(f"is a zetile.Tensor on {info(obj.device)['name']} but the kernel runs on "
                             f"{info(device)['name']}")
        return PointerArg(obj.dtype, obj.data_ptr(), keepalive=obj)
    mod = type(obj).__module__
    if mod.startswith("torch") and hasattr(obj, "data_ptr"):
        dev_type = obj.device.type
        if dev_type not in ("cpu", "xpu"):
            raise ValueError(f"is a torch tensor on {obj.device}; zetile takes cpu or xpu tensors")
        if str(obj.layout) != "torch.strided":
            raise ValueError(f"is a {obj.layout} torch tensor; zetile takes dense (torch.strided) tensors")
        dt = T.from_torch_dtype(obj.dtype)
        # data_ptr() is the first element only: strides and lazy negation
        # would be ignored by the kernel (torch.arange(8.)[::2] read as 0,1,2,3).
        if not strided and not obj.is_contiguous():
            raise ValueError(f"is not contiguous (strides {tuple(obj.stride())} for shape "
                             f"{tuple(obj.shape)}); pass t.contiguous()")
        if obj.is_neg() or obj.is_conj():
            raise ValueError("has a pending negation/conjugation (a lazy view); pass t.resolve_neg()")
        if dev_type == "cpu":
            if info(device)["host_memory"]:
                return PointerArg(dt, obj.data_ptr(), keepalive=obj, host=True)
            return _torch_staged(obj, dt, device, strided)
        if info(device)["backend"] != "level_zero":
            raise ValueError(f"is an xpu tensor but the kernel runs on {info(device)['name']} "
                             "(xpu tensors need a level_zero device)")
        return PointerArg(dt, obj.data_ptr(), keepalive=obj)
    if hasattr(obj, "__dlpack__"):
        import numpy as np
        try:
            a = np.from_dlpack(obj)
        except (TypeError, RuntimeError, BufferError) as e:
            raise ValueError(f"cannot be read through DLPack ({type(obj).__name__}: {e}); "
                             "zetile takes host (CPU) DLPack arrays") from e
        return _numpy_pointer(a, device, strided)
    return None


def _torch_staged(t, dt, device, strided=False):
    import torch
    t = t.detach()
    try:
        a = t.numpy()
    except TypeError:
        # bf16 and the fp8 types have no numpy dtype: stage their bits as an
        # integer of the same width (the array still shares t's memory, so
        # the copy back after the launch lands in t) and type the pointer.
        bits = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
        p = _numpy_pointer(t.view(bits).numpy(), device, strided)
        p.dtype = dt
        return p
    return _numpy_pointer(a, device, strided)
