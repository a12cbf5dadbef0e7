"""The plugin's log. The logger sits under torch._inductor, so
TORCH_LOGS="inductor" (or "+inductor") shows its lines with Inductor's own;
ZETILE_DEBUG=inductor prints them to stderr without touching torch's logging.
Every fallback to Inductor's own lowering is logged with its reason."""
import logging
import sys

from . import settings

log = logging.getLogger("torch._inductor.zetile")
_handler = None


def _ensure_handler():
    global _handler
    if settings.debug():
        if _handler is None:
            _handler = logging.StreamHandler(sys.stderr)
            _handler.setFormatter(logging.Formatter("zetile.inductor: %(message)s"))
            log.addHandler(_handler)
        # Printed here only, not again by torch's handlers.
        log.propagate = False
        log.setLevel(logging.DEBUG)


def took(op, what):
    _ensure_handler()
    log.info("%s -> %s", op, what)


def fallback(op, reason):
    """op: the aten/HOP name; reason: why zetile did not take it."""
    _ensure_handler()
    log.info("%s falls back to Inductor: %s", op, reason)
