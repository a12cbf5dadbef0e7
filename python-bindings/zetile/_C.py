"""The compiled extension, with a clear message when it has not been built."""
try:
    from ._zetile import *  # noqa: F401,F403
    from ._zetile import Error  # noqa: F401
    from . import _zetile as _ext  # noqa: F401
except ImportError as e:  # pragma: no cover - only without a build
    raise ImportError(
        "zetile's C extension (_zetile.abi3.so) is not built or not found next to the "
        "package: run scripts/setup.sh (it builds it into python-bindings/zetile/). "
        f"Original error: {e}") from e
