"""Host-side tensor descriptors (triton.tools.tensor_descriptor.TensorDescriptor).

Passed as a kernel argument, a descriptor becomes a tl.tensor_descriptor in
the kernel: its base pointer, shape and strides are run-time arguments and
its block shape is part of the specialization.
"""
from dataclasses import dataclass
from typing import Any, List


@dataclass
class TensorDescriptor:
    base: Any
    shape: List[int]
    strides: List[int]
    block_shape: List[int]
    padding: str = "zero"

    def __post_init__(self):
        rank = len(self.shape)
        if not (len(self.strides) == len(self.block_shape) == rank):
            raise ValueError("shape, strides and block_shape need one length")
        if self.padding not in ("zero", "nan"):
            raise ValueError(f"padding must be 'zero' or 'nan', got {self.padding!r}")

    @staticmethod
    def from_tensor(tensor: Any, block_shape: List[int], padding="zero"):
        shape = list(tensor.shape)
        if hasattr(tensor, "stride") and callable(tensor.stride):
            strides = list(tensor.stride())
        elif hasattr(tensor, "strides") and hasattr(tensor, "itemsize"):
            strides = [s // tensor.itemsize for s in tensor.strides]
        else:  # zetile.Tensor: contiguous
            strides, acc = [], 1
            for d in reversed(shape):
                strides.insert(0, acc)
                acc *= d
        return TensorDescriptor(tensor, shape, strides, list(block_shape), padding)
