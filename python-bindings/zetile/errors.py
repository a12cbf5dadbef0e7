"""Triton's error classes (`triton.errors`, `triton.runtime.errors`).

A program ported from Triton catches `triton.TritonError` around compiles and
launches; zetile's CompilationError derives from it, as Triton's does."""


class TritonError(Exception):
    """Base class of the errors Triton's API raises (zetile raises its own
    subclasses: CompilationError, UnsupportedError)."""


class InterpreterError(TritonError):
    """Raised by Triton's interpreter only; defined so `except InterpreterError`
    in ported code keeps working."""


class OutOfResources(TritonError):
    """A kernel needs more of a resource (shared memory, registers) than the
    device has."""

    def __init__(self, required, limit, name):
        self.required, self.limit, self.name = required, limit, name
        super().__init__(f"out of resource: {name}, required: {required}, hardware limit: {limit}")
