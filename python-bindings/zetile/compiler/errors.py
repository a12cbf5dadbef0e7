"""Errors raised while compiling a kernel: they name the file, line and source."""
from __future__ import annotations

from ..errors import TritonError


class CompilationError(TritonError):
    """A kernel could not be compiled. `filename`, `lineno`, `col` and
    `src_line` locate the construct at fault; `__cause__` holds the original
    error when there is one."""

    def __init__(self, filename, lineno, col, src_line, kernel, message, error_type=None):
        self.filename = filename
        self.lineno = lineno
        self.col = col
        self.src_line = src_line
        self.kernel = kernel
        self.message = message
        self.error_type = error_type
        # Triton's name for the message without the location
        self.error_message = message
        where = f"{filename}:{lineno}:{col}" if lineno else filename
        text = f"at {where} in {kernel}:\n"
        if src_line:
            text += f"    {src_line.rstrip()}\n"
            text += "    " + " " * max(col - 1, 0) + "^\n"
        text += f"{error_type + ': ' if error_type else ''}{message}"
        super().__init__(text)


class UnsupportedError(CompilationError):
    """A Python or Triton construct zetile does not support (yet)."""
