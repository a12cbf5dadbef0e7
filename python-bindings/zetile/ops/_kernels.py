"""Where the stdlib kernels live, and loading them as modules.

The templates are @zetile.jit programs in the top-level stdlib-kernels/
folder. Today the package is used in place (scripts/setup.sh puts
python-bindings/ on sys.path), so the folder is found next to it; packaging
(a later issue) changes only `stdlib_dir`.
"""
import importlib.util
import os
import sys
import threading

_lock = threading.Lock()
_modules = {}


def stdlib_dir():
    """The stdlib-kernels folder: $ZETILE_STDLIB_DIR, else the one beside
    python-bindings/ in a source tree, else one installed inside the package."""
    env = os.environ.get("ZETILE_STDLIB_DIR")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))          # .../zetile/ops
    pkg = os.path.dirname(here)                                  # .../zetile
    for cand in (os.path.join(os.path.dirname(os.path.dirname(pkg)), "stdlib-kernels"),
                 os.path.join(pkg, "stdlib-kernels")):
        if os.path.isdir(cand):
            return cand
    raise FileNotFoundError("zetile's stdlib-kernels folder was not found (looked beside "
                            "python-bindings/ and inside the package; set ZETILE_STDLIB_DIR)")


def load(name):
    """The stdlib module `name` (e.g. "gemm"), loaded once per process."""
    mod = _modules.get(name)
    if mod is not None:
        return mod
    with _lock:
        mod = _modules.get(name)
        if mod is None:
            path = os.path.join(stdlib_dir(), name + ".py")
            modname = "zetile_stdlib_" + name
            spec = importlib.util.spec_from_file_location(modname, path)
            mod = importlib.util.module_from_spec(spec)
            sys.modules[modname] = mod      # kernels' source lookup needs the module
            spec.loader.exec_module(mod)
            _modules[name] = mod
        return mod
