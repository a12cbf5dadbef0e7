"""What the plugin does, from ZETILE_INDUCTOR (read at each use, so the
FX-graph-cache key and the lowering always see the same value).

    unset / "on"   xpu tensors go to zetile; GEMMs race zetile against
                   Inductor's own choices
    "cpu"          CPU tensors too (zetile's CPU target), and zetile's
                   choice is forced (no race: the generated code is
                   deterministic); how the tests run without an Intel GPU
    "cpu-race"     CPU tensors, GEMMs raced (winners vary run to run on CPU)
    "force"        xpu tensors, zetile forced
    "off"          nothing (the autoload hook does not even install)

ZETILE_INDUCTOR_DROPOUT=off keeps SDPA with dropout_p > 0 with Inductor
(sdpa_dropout.py says what zetile's dropout gives instead of Inductor's).
"""
import os

_MODES = ("on", "cpu", "cpu-race", "force", "off")


def mode():
    m = os.environ.get("ZETILE_INDUCTOR", "").strip().lower() or "on"
    if m in ("0", "none"):
        m = "off"
    if m in ("1",):
        m = "on"
    return m if m in _MODES else "on"


def devices():
    """Device types zetile takes."""
    m = mode()
    if m == "off":
        return ()
    if m in ("cpu", "cpu-race"):
        return ("cpu", "xpu")
    return ("xpu",)


def forced(device_type):
    """True when zetile's choice is the only one (no autotuning race)."""
    m = mode()
    if m == "cpu":
        return True
    return m == "force" and device_type == "xpu"


def dropout():
    """SDPA with dropout_p > 0 taken by zetile (sdpa_dropout.py): on unless
    ZETILE_INDUCTOR_DROPOUT is off/0."""
    return os.environ.get("ZETILE_INDUCTOR_DROPOUT", "").strip().lower() not in ("off", "0",
                                                                              "false", "no")


def debug():
    return "inductor" in os.environ.get("ZETILE_DEBUG", "")


def cache_tag():
    """What the compiled code depends on besides the graph: enters
    Inductor's FX-graph-cache key and the autotune choice names."""
    import zetile
    return f"zetile-{zetile.__version__}-mode-{mode()}-dropout-{int(dropout())}"
