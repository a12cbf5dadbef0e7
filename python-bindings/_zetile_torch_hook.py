"""zetile's torch.compile plugin, as torch's autoload hook sees it.

`import torch` calls autoload() for the `torch.backends` entry point of the
installed zetile wheel (pyproject.toml). This module sits outside the
`zetile` package on purpose: importing `zetile` loads numpy and the language
(~0.1 s, more than 5% of `import torch`), and a hook inside the package
would pay that in every process that imports torch. Here the hook costs a
few microseconds: it only puts a finder on sys.meta_path, and zetile (and
Inductor's lowering module) are imported on the first torch.compile, when
Inductor imports torch._inductor.lowering.

Off with TORCH_DEVICE_BACKEND_AUTOLOAD=0 (torch never calls the hook) or
ZETILE_INDUCTOR=off. The hook never raises: an exception here would abort
`import torch`; a failure is kept in `error` and logged under
ZETILE_DEBUG=inductor.
"""
import os
import sys

TARGET = "torch._inductor.lowering"
error = None          # the exception the hook or the deferred install hit, if any
installed = False     # zetile.inductor.install ran


def _debug(msg):
    if "inductor" in os.environ.get("ZETILE_DEBUG", ""):
        sys.stderr.write(f"zetile.inductor: {msg}\n")


def _install(module):
    global error, installed
    try:
        import zetile.inductor
        zetile.inductor.install(module)
        installed = True
    except Exception as e:  # never break a compile because the plugin failed to load
        error = e
        _debug(f"not installed: {type(e).__name__}: {e}")


class _Finder:
    """Wraps the loader of torch._inductor.lowering so zetile installs its
    lowerings right after that module (and the kernel/* modules it imports)
    has executed."""

    def find_spec(self, name, path=None, target=None):
        if name != TARGET:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None:
            return spec

        class _Loader:
            def __getattr__(self, attr):
                return getattr(loader, attr)

            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                exec_module(module)
                _remove_finder()
                _install(module)

        spec.loader = _Loader()
        return spec


_finder = None


def _remove_finder():
    global _finder
    if _finder is not None and _finder in sys.meta_path:
        sys.meta_path.remove(_finder)
    _finder = None


def autoload():
    """torch's autoload entry point: cheap, never raises."""
    global error, _finder
    try:
        if os.environ.get("ZETILE_INDUCTOR", "").strip().lower() in ("off", "0", "none"):
            _debug("off (ZETILE_INDUCTOR=off)")
            return
        mod = sys.modules.get(TARGET)
        if mod is not None:
            _install(mod)
        elif _finder is None:
            _finder = _Finder()
            sys.meta_path.insert(0, _finder)
    except Exception as e:
        error = e
