"""`triton.reinterpret(tensor, dtype)`: pass a tensor's memory to a kernel
as another element type of the same width (uint32 data held in an int32
torch tensor, fp8 bytes held in uint8), as Triton's TensorWrapper does."""
from .language import dtypes as T


class TensorWrapper:
    """`base` (the array-like holding the memory) seen as elements of `dtype`."""

    def __init__(self, base, dtype):
        self.base = base
        self.dtype = dtype
        self.data = base.data if hasattr(base, "data") else base
        self.device = getattr(base, "device", None)
        self.shape = tuple(base.shape)

    def data_ptr(self):
        return self.base.data_ptr()

    def stride(self, *args):
        return self.base.stride(*args)

    def numel(self):
        return self.base.numel()

    def element_size(self):
        return self.dtype.primitive_bitwidth // 8

    def dim(self):
        return self.base.dim()

    def size(self, *args):
        return self.base.size(*args)

    def clone(self):
        return TensorWrapper(self.base.clone(), self.dtype)

    def copy_(self, other):
        self.base.copy_(other.base if isinstance(other, TensorWrapper) else other)
        return self

    def cpu(self):
        return TensorWrapper(self.base.cpu(), self.dtype)

    def to(self, device):
        return TensorWrapper(self.base.to(device), self.dtype)

    def new_empty(self, sizes):
        return TensorWrapper(self.base.new_empty(sizes), self.dtype)

    def __str__(self):
        return f"TensorWrapper[{self.dtype}]({self.base})"


def reinterpret(tensor, dtype):
    """`tensor`'s memory as elements of `dtype` (same element width), or the
    tensor itself when it already holds that type."""
    if isinstance(tensor, TensorWrapper):
        tensor = tensor.base
    if not isinstance(dtype, T.dtype):
        # Triton takes a torch dtype here too (test_conversions.py does)
        dtype = T.from_torch_dtype(dtype) if str(dtype).startswith("torch.") else \
            T.from_numpy_dtype(dtype)
    if not (hasattr(tensor, "data_ptr") or hasattr(tensor, "__array_interface__")):
        raise TypeError(f"cannot reinterpret a {type(tensor).__name__}")
    try:
        own = T.from_torch_dtype(tensor.dtype) if hasattr(tensor, "data_ptr") else \
            T.from_numpy_dtype(tensor.dtype)
    except TypeError:
        own = None  # a dtype zetile has no name for (torch float8 bytes)
    return tensor if own == dtype else TensorWrapper(tensor, dtype)
