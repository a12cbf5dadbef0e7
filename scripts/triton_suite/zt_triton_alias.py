"""A pytest plugin that makes `import triton` give zetile (CPU target).

Loaded with `-p zt_triton_alias` before Triton's test modules are imported:
every `triton` and `triton.X.Y` import resolves to the zetile module of the
same name (`zetile.X.Y`), except the few names in _ALIASES whose zetile home
differs. What zetile lacks fails to import, as it would for a user who swapped
the import; nothing here fills gaps in zetile itself, except the test helpers
module (`triton._internal_testing`, the suite's own helpers, which we write in
zt_internal_testing.py).
"""
import importlib
import importlib.abc
import importlib.util
import os
import sys

_ALIASES = {
    "triton._internal_testing": "zt_internal_testing",
    "triton.errors": "zetile.errors",
    "triton.runtime.errors": "zetile.errors",
    "triton.runtime.jit": "zetile.jit",
    "triton.runtime._allocation": "zetile.allocation",
    "triton.runtime.driver": "zetile.driver",
}


def _target(name):
    if name in _ALIASES:
        return _ALIASES[name]
    return "zetile" + name[len("triton"):]


class _Loader(importlib.abc.Loader):
    def __init__(self, module):
        self.module = module

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        pass


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "triton" and not name.startswith("triton."):
            return None
        try:
            module = importlib.import_module(_target(name))
        except ImportError:
            # Also where zetile.X is a module (not a package) and triton.X.Y is
            # asked: report the triton name, as a user would see it.
            return None
        return importlib.util.spec_from_loader(name, _Loader(module))


def install():
    os.environ.setdefault("ZETILE_DEVICE", "cpu")
    for n in [m for m in sys.modules if m == "triton" or m.startswith("triton.")]:
        del sys.modules[n]  # a real triton imported earlier (a plugin) must not be seen
    sys.meta_path.insert(0, _Finder())
    import triton  # noqa: F401 - resolves to zetile now
    import triton.language  # noqa: F401
    # Python looks up a submodule of a module that is not a package (zetile's
    # runtime.py standing for triton.runtime) in sys.modules only.
    for name, target in _ALIASES.items():
        try:
            sys.modules[name] = importlib.import_module(target)
        except ImportError:
            pass


install()


def pytest_report_header(config):
    import triton
    return f"triton resolved to {triton.__name__} {getattr(triton, '__version__', '?')} (zt_triton_alias)"
