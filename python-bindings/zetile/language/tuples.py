"""tl.tuple: a tuple of kernel values (Triton's), in its own module so the
name does not shadow Python's tuple where the language is implemented."""
import builtins


class tuple(builtins.tuple):
    """tl.tuple(iterable): indexes, unpacks, compares and concatenates as a
    Python tuple (`tl.tuple((4, 5)) + (6, 7)`)."""

    def __add__(self, other):
        return tuple(builtins.tuple(self) + builtins.tuple(other))

    def __radd__(self, other):
        return tuple(builtins.tuple(other) + builtins.tuple(self))


tuple.__zetile_builtin__ = True
