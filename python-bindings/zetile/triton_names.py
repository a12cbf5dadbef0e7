"""Names of `triton.*` (outside triton.language) that ported programs use,
gathered so `import zetile as triton` finds them."""
import functools

from . import driver, runtime
from .allocation import set_allocator  # noqa: F401
from .errors import TritonError, InterpreterError, OutOfResources  # noqa: F401
from .tensor_wrapper import TensorWrapper, reinterpret  # noqa: F401

# `triton.runtime.driver.active...`: zetile.runtime is a module, not a package.
runtime.driver = driver


def constexpr_function(fn):
    """A plain Python function a kernel may call on compile-time values; its
    result is a compile-time value (Triton's @triton.constexpr_function).
    zetile already evaluates any Python call whose arguments are all
    compile-time values, so this only marks the function and unwraps
    constexpr arguments when it is called from Python."""
    from .language.core import _unwrap

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*[_unwrap(a) for a in args], **{k: _unwrap(v) for k, v in kwargs.items()})

    wrapper.__zetile_constexpr_function__ = True
    return wrapper
