"""Where the stdlib kernels live, and loading them as modules.

The templates are @zetile.jit programs in the top-level stdlib-kernels/
folder. Today the package is used in place (scripts/setup.sh puts
python-bindings/ on sys.path), so the folder is found next to it; packaging
(a later issue) changes only `stdlib_dir`.
"""
import contextlib
import importlib.util
import os
import sys
import threading

# Reentrant: a template module may load another (attention.py loads philox.py).
_lock = threading.RLock()
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


_tuned = {}


def tuned_config(kernel, key):
    """The config `zetile tune` stored for template `kernel` with `key` on the
    current device (its name, driver and this zetile version), as the
    template's keyword arguments, else None. Looked up once per process and
    key: the database is read before the template's own defaults."""
    from .. import runtime, tune_db
    dev = runtime.get_device()
    k = (id(kernel), repr(key), id(dev))
    if k not in _tuned:
        try:
            best = tune_db.best_for_template(kernel, key, dev)
        except Exception:  # noqa: BLE001 - a database problem never fails an op
            best = None
        _tuned[k] = dict(best["kwargs"]) if best and best.get("kwargs") else None
    return _tuned[k]


def forget_tuned():
    """Forgets the configs tuned_config looked up (after a tuning run in
    this process)."""
    _tuned.clear()


_plan = threading.local()


@contextlib.contextmanager
def planning_for(target):
    """Plans templates inside the block for `target` ("tgllp", ...) instead of
    the current device's: what building for a GPU this machine lacks needs
    (zetile.ops.xe_cases, `zetile isa`), since a plan's tile sizes depend on
    the target's registers."""
    prev = getattr(_plan, "target", None)
    _plan.target = target
    try:
        yield
    finally:
        _plan.target = prev


def target_row():
    """The target table's row (_C.target_info: subgroup_size, xmx, grf,
    grf_bytes, slm_per_workgroup, ...) of the target templates plan for:
    planning_for's, else the current device's; None for the CPU."""
    from .. import _C, runtime
    t = getattr(_plan, "target", None)
    if t is None:
        t = runtime.info(runtime.get_device()).get("target", "cpu")
    return _C.target_info(t)


# Rows without XMX run dots as FMAs (lowering/dg2/dg2_dot_fma.c): the SIMD8
# lowering spreads a kernel with a dot over 16 subgroups (dg2_lower.c,
# pick_num_warps) and holds the tiles unpacked, as 32-bit values. A tile set
# fits when those values take at most REGISTER_SHARE of each work-item's
# registers; the rest is addresses, masks and loop state. Checked against
# ocloc's spill counts (docs/TEMPLATES.md, integrated GPUs): attention d128
# at 32x32 needs 136 values a work-item (1183 spilled on tgllp), at 16x16 66
# (0 spilled); d64 at 32x32 72 (0 spilled).
FMA_DOT_SUBGROUPS = 16
REGISTER_SHARE = 0.75


def registers_fit(row, values):
    """Whether `values` 32-bit tile elements of one program fit the
    registers of `row`'s work-items. True where no rule applies: the CPU
    (row None) and rows with XMX, whose shipped configs are what was
    measured there (packed DPAS operands, other subgroup counts)."""
    if row is None or row["xmx"]:
        return True
    lanes = FMA_DOT_SUBGROUPS * row["subgroup_size"]
    per_lane = row["grf"] * row["grf_bytes"] / row["subgroup_size"]
    return values * 4 / lanes <= REGISTER_SHARE * per_lane


def shrink_to_fit(cfg, values, keys, row=None, floor=16):
    """Halves cfg[k] for k in `keys`, the first key down to `floor` before
    the next, until `values(cfg)` 32-bit elements fit the target's registers
    (registers_fit). Returns cfg (changed in place); a config that does not
    fit even at the floor is returned at the floor."""
    row = target_row() if row is None else row
    for k in keys:
        while not registers_fit(row, values(cfg)) and cfg[k] > floor:
            cfg[k] //= 2
    return cfg


class Launch:
    """One planned template launch: kernel, grid, arguments. `run()` launches
    it on the current device; `tile_ir()` and `compile(target)` build its
    specialization without launching (for Xe builds on machines without an
    Intel GPU: zetile isa, spirv-val)."""

    def __init__(self, kernel, grid, args, kwargs, result, num_warps=None):
        self.kernel, self.grid, self.args, self.kwargs, self.result = kernel, grid, args, kwargs, result
        self.num_warps = num_warps  # None: the lowering picks (a plan may ask, see gemm.config_for)

    def run(self):
        if all(g > 0 for g in self.grid):
            opts = {"num_warps": self.num_warps} if self.num_warps else {}
            self.kernel[self.grid](*self.args, **self.kwargs, **opts)
        return self.result

    def tile_ir(self):
        from .. import runtime
        dev = runtime.get_device("cpu")
        bound = self.kernel._bind(self.args, self.kwargs)
        _, arg_types, div, constexprs, _, descs = self.kernel.specialize(bound, dev)
        return self.kernel.build_tile_ir(arg_types, constexprs, div, descs)

    def compile(self, target, num_warps=0, cached=True):
        """The artifact (sections "spirv", "mlir", "meta", ...) for `target`."""
        from .. import _C
        return _C.compile(self.tile_ir(), target=target, num_warps=num_warps or self.num_warps or 0,
                          compat=False, igc_options=None, cached=cached)
