"""`triton.set_allocator`: the host function a runtime calls for a kernel's
global scratch memory.

Triton needs scratch for tensor descriptors built inside a kernel (TMA
descriptors live in global memory). zetile's descriptors are plain values
(base, shapes, strides) and need none, so the allocator is recorded and
returned by get_allocator(), never called."""
import contextvars


class NullAllocator:
    """The default: asking it for memory is an error, as in Triton."""

    def __call__(self, size, alignment, stream):
        raise RuntimeError("Kernel requires a runtime memory allocation, but no allocator was set. "
                           "Use triton.set_allocator to specify an allocator.")


_allocator = contextvars.ContextVar("zetile_allocator", default=NullAllocator())


def set_allocator(allocator):
    """allocator(size: int, alignment: int, stream) -> a buffer (Triton's
    signature). Set per context (thread or task), as in Triton."""
    _allocator.set(allocator)


def get_allocator():
    return _allocator.get()
