"""zetile's torch.compile plugin: Inductor uses zetile's GEMM, SDPA and
FlexAttention kernels (docs/TORCH.md).

Installed by torch's autoload (the `torch.backends` entry point of the
zetile wheel, _zetile_torch_hook.autoload) on the first compile, or by
zetile.inductor.enable() where no entry point is installed (an in-place
development tree). What it routes is ZETILE_INDUCTOR (settings.py).

    install(lowering)   the lowerings (mm, addmm, bmm, baddbmm, flex_attention),
                        one post-grad pass (SDPA rewrite; its uuid puts
                        zetile's version and the settings in the FX-graph-cache
                        key) and one pre-grad pass (SDPA with dropout,
                        sdpa_dropout.py; same uuid). Idempotent.
"""
import threading

from . import log, settings  # noqa: F401

# Re-entrant: with zetile installed (its torch.backends entry point), an
# explicit install() that imports Inductor's lowering module runs the
# autoload hook's install on the same thread before the import returns.
_lock = threading.RLock()
_installed = False


class _PostGradPass:
    """Built lazily (the base class lives in Inductor)."""
    instance = None
    pre = None


def _uuid():
    from torch._inductor.custom_graph_pass import get_hash_for_files
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    files = tuple(os.path.join(here, f) for f in sorted(os.listdir(here)) if f.endswith(".py"))
    return get_hash_for_files(files, extra=settings.cache_tag())


def _make_pre_pass():
    from torch._inductor.custom_graph_pass import CustomGraphPass

    from . import sdpa_dropout

    class ZetilePreGradPass(CustomGraphPass):
        """Rewrites SDPA calls with dropout to torch.ops.zetile.sdpa_dropout
        before AOT autograd decomposes them (sdpa_dropout.py). Having a uuid,
        Inductor runs it after its cache lookup, with the uuid in the key."""

        def __call__(self, graph):
            sdpa_dropout.rewrite(graph)

        def uuid(self):
            return _uuid()

    return ZetilePreGradPass()


def _make_pass():
    from torch._inductor.custom_graph_pass import CustomGraphPass

    from . import epilogue, sdpa

    class ZetilePostGradPass(CustomGraphPass):
        """Takes GEMM epilogues (epilogue.py) and rewrites fused-attention
        aten ops to torch.ops.zetile.sdpa (sdpa.py). Its
        uuid enters Inductor's FX-graph-cache key: the overridden lowerings
        do not, so without it a graph compiled before zetile was installed,
        or by another zetile version or mode, would be reused."""

        def __call__(self, graph):
            epilogue.fuse(graph)
            sdpa.rewrite(graph)

        def uuid(self):
            return _uuid()

    return ZetilePostGradPass()


def _add_pass(config, name="post_grad_custom_post_pass", p=None):
    """Appends p to what the user set in config.<name> (one pass or a list)."""
    p = p or _PostGradPass.instance
    cur = getattr(config, name)
    if cur is None:
        setattr(config, name, p)
    elif isinstance(cur, (list, tuple)):
        if p not in cur:
            setattr(config, name, [*cur, p])
    elif cur is not p:
        setattr(config, name, [cur, p])


def install(lowering=None):
    """Installs the plugin into Inductor (once per process)."""
    global _installed
    if _installed:
        return
    with _lock:
        if _installed:
            return
        import torch._inductor.config as config
        if lowering is None:
            import torch._inductor.lowering as lowering
            if _installed:  # the autoload hook installed it during the import
                return
        import zetile.ops  # noqa: F401 - defines torch.ops.zetile.* before any graph runs
        from . import flex, gemm
        gemm.install(lowering)
        flex.install(lowering)
        _PostGradPass.instance = _make_pass()
        _add_pass(config)
        _PostGradPass.pre = _make_pre_pass()
        _add_pass(config, "pre_grad_custom_pass", _PostGradPass.pre)
        _installed = True
        log.log.debug("installed (mode %s)", settings.mode())


def enable():
    """Installs the plugin where torch's autoload did not (no entry point in
    an in-place development tree): lazily, like the hook, unless Inductor is
    already loaded. Never raises; returns the hook's error, if any."""
    import _zetile_torch_hook as hook
    hook.autoload()
    return hook.error


def is_installed():
    return _installed
