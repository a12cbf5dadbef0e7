"""@zetile.autotune, zetile.Config and @zetile.heuristics, with Triton's
semantics (python/triton/runtime/autotuner.py is the contract), plus a
persistent results database (tune_db.py) so a second process with the same
kernel, key values, configs, device, driver and zetile version does not
benchmark again.

    @zetile.autotune(configs=[zetile.Config({"BLOCK": 64}, num_warps=4), ...],
                     key=["n"], reset_to_zero=["out_ptr"])
    @zetile.jit
    def kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr): ...

    kernel[grid](x, out, n)       # tunes on the first call per key, then reuses
    kernel.best_config            # the config the last call ran with

zetile's own knobs in a Config: grf_mode ("auto" | "large" | "default", the
Xe register file: "large" adds IGC's -ze-opt-large-register-file) and compat
(Xe without 2D block IO). maxnreg is accepted and ignored (Intel GPUs choose
a register-file mode instead). num_stages is accepted; zetile's lowering does
not pipeline by stages yet, so configs differing only there compile alike.
"""
from __future__ import annotations

import builtins
import inspect
import os
import threading
import time
import warnings

# tune_db (sqlite3) and concurrent.futures load on first tuning: `import zetile`
# stays as fast as before (bench/compile_latency.py counts it).
from . import runtime, testing
from .compiler.errors import CompilationError

__all__ = ["Config", "Autotuner", "autotune", "Heuristics", "heuristics", "AutotunerError"]

# Compile options of other Triton backends that configs carry in kwargs:
# AMD's, and Intel's XPUOptions scheduling switches (its benchmark kernels'
# configs set loop_distribute; none of them changes what a kernel computes).
# Intel's grf_mode and warp_size are taken, not dropped (jit.py).
_FOREIGN_OPTIONS = ("waves_per_eu", "matrix_instr_nonkdim", "kpack", "instruction_sched_variant",
                    "loop_distribute", "code_sinking", "sub_32_dpas", "reduce_variable_liveness",
                    "optimize_epilogue", "use_barrier", "generate_native_code",
                    "dynamic_shared_memory")

# Options a Config carries besides its meta-parameters, in Triton's order.
_OPTION_NAMES = ("num_warps", "num_ctas", "num_stages", "maxnreg", "grf_mode", "compat")


class AutotunerError(RuntimeError):
    """No config could run (every one failed to compile), or pruning left none."""


class Config:
    """One point of the search space: meta-parameters (constexpr values) and
    launch options. num_warps=None lets zetile pick (Triton's default is 4)."""

    def __init__(self, kwargs, num_warps=None, num_stages=None, num_ctas=None, maxnreg=None,
                 pre_hook=None, ir_override=None, grf_mode=None, compat=None):
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages
        self.num_ctas = num_ctas
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook
        self.ir_override = ir_override
        if grf_mode not in (None, "auto", "large", "default", 128, 256):
            raise ValueError(f"grf_mode must be 'auto', 'large' or 'default', not {grf_mode!r}")
        self.grf_mode = grf_mode
        self.compat = compat
        if ir_override is not None:
            raise ValueError("Config(ir_override=...) is not supported by zetile")

    def options(self):
        """The launch options that are set (not None)."""
        return {k: getattr(self, k) for k in _OPTION_NAMES if getattr(self, k) is not None}

    def all_kwargs(self):
        return {**self.kwargs, **self.options()}

    def to_dict(self):
        """A JSON-able identity (no hooks): what the database stores."""
        return {"kwargs": {k: _jsonable(v) for k, v in self.kwargs.items()}, **self.options()}

    def __str__(self):
        parts = [f"{k}: {v}" for k, v in self.kwargs.items()]
        parts += [f"{k}: {getattr(self, k)}" for k in ("num_warps", "num_ctas", "num_stages",
                                                       "maxnreg")]
        parts += [f"{k}: {v}" for k, v in (("grf_mode", self.grf_mode), ("compat", self.compat))
                  if v is not None]
        return ", ".join(parts)

    def __repr__(self):
        return f"Config({self})"

    def __hash__(self):
        return hash((*sorted((k, _hashable(v)) for k, v in self.all_kwargs().items()),
                     self.pre_hook))

    def __eq__(self, other):
        return isinstance(other, Config) and self.all_kwargs() == other.all_kwargs() and \
            self.pre_hook == other.pre_hook

    def short(self):
        """A compact label for tables and plots."""
        parts = [f"{k}={v}" for k, v in self.kwargs.items()]
        parts += [f"{k}={v}" for k, v in self.options().items()]
        return " ".join(parts) or "(defaults)"


def _jsonable(v):
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    return str(v)


def _hashable(v):
    try:
        hash(v)
        return v
    except TypeError:
        return repr(v)


def _key_value(v):
    """How one key value is written into the database key."""
    if hasattr(v, "shape") and hasattr(v, "dtype"):
        return f"tensor{tuple(v.shape)}:{v.dtype}"
    return _jsonable(v)


def _base_jit(fn):
    from .jit import JITFunction
    f = fn
    while not isinstance(f, JITFunction):
        f = f.fn
    return f


def _env_flag(*names):
    return any(os.environ.get(n, "") not in ("", "0") for n in names)


# ---------------------------------------------------------------- arg hooks
def _zero(x):
    if x is None:
        return
    if hasattr(x, "zero_"):
        x.zero_()
    elif isinstance(x, runtime.Tensor):
        import numpy as np
        x.copy_(np.zeros(x.shape, x._np_dtype))
    else:
        x[...] = 0


def _clone(x):
    if hasattr(x, "clone"):
        return x.clone()
    if isinstance(x, runtime.Tensor):
        return x.numpy()
    return x.copy()


def _restore(dst, saved):
    if hasattr(dst, "copy_"):
        dst.copy_(saved)
    else:
        dst[...] = saved


class Autotuner:
    """What @autotune returns: launches like the kernel, tuning per key."""

    def __init__(self, fn, arg_names, configs, key, reset_to_zero=None, restore_value=None,
                 pre_hook=None, post_hook=None, prune_configs_by=None, warmup=None, rep=None,
                 do_bench=None, cache_results=None, use_cuda_graph=False):
        self.fn = fn
        self.base_fn = _base_jit(fn)
        self.arg_names = list(arg_names)
        self.configs = list(configs) if configs else [Config({})]
        self.keys = list(key)
        for k in self.keys:
            if k not in self.arg_names:
                # Triton ignores such a key; say so once instead of failing.
                warnings.warn(f"autotune key {k!r} is not an argument of "
                              f"{self.base_fn.__name__}: it is ignored", stacklevel=3)
        self.cache = {}
        self.configs_timings = {}
        self.best_config = None
        self.bench_time = None
        self.tuning_source = None       # "benchmark", "database", "memory" or "single"
        # What timed the configs: "device" (Level Zero kernel timestamps),
        # "wall" (host clock: the CPU target, OpenCL) or "do_bench" (the user's).
        self.timer = None
        self.timer_missing = 0          # launches the device wrote no timestamp for
        self.reset_to_zero = list(reset_to_zero or [])
        self.restore_value = list(restore_value or [])
        self.restore_copies = {}
        self.user_defined_pre_hook = pre_hook is not None
        self.user_defined_post_hook = post_hook is not None
        self.pre_hook = pre_hook or self._default_pre_hook
        self.post_hook = post_hook or self._default_post_hook
        p = prune_configs_by or {}
        self.perf_model = p.get("perf_model")
        self.configs_top_k = p.get("top_k", 1.0)
        self.early_config_prune = p.get("early_config_prune")
        self.num_warmups = 25 if warmup is None else warmup
        self.num_reps = 100 if rep is None else rep
        self._do_bench = do_bench
        # Persistence: on unless cache_results=False or ZETILE_AUTOTUNE_DB=off.
        self.cache_results = cache_results is not False
        self._hash = None
        self.config_errors = {}
        # For `zetile tune`: re-benchmark even when the database has a result,
        # and a callback (i, n, config, [median, p20, p80], error) per config.
        self.force = False
        self.progress = None
        self._lock = threading.RLock()
        self._run_params = None
        self.__name__ = self.base_fn.__name__
        self.__doc__ = self.base_fn.__doc__

    def __repr__(self):
        return f"Autotuner({self.base_fn!r})"

    def kernel_name(self):
        """FILE.py:NAME, how the database and `zetile tune show` name it."""
        f = inspect.getsourcefile(self.base_fn.fn) or self.base_fn.__module__
        return f"{os.path.basename(f)}:{self.base_fn.__qualname__}"

    # Triton's default hooks, for numpy arrays, torch tensors and zetile.Tensor.
    def _default_pre_hook(self, nargs, reset_only=False):
        for name in self.reset_to_zero:
            _zero(nargs.get(name))
        if not reset_only:
            self.restore_copies = {n: _clone(nargs[n]) for n in self.restore_value
                                   if nargs.get(n) is not None}

    def _default_post_hook(self, nargs, exception):
        for name, value in self.restore_copies.items():
            _restore(nargs[name], value)
        self.restore_copies = {}

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"{self.__name__} is an autotuned kernel: launch it as "
                           f"{self.__name__}[grid](...)")

    # ------------------------------------------------------------ tuning
    def do_bench(self, kernel_call, quantiles, device=None):
        if self._do_bench is not None:
            return self._do_bench(kernel_call, quantiles=quantiles)
        return testing.do_bench(kernel_call, warmup=self.num_warmups, rep=self.num_reps,
                                quantiles=quantiles, device=device)

    def _launch_kwargs(self, config, meta):
        """meta + the config's values, keeping only options the launcher takes.
        Other backends' compile options written into a config's kwargs (AMD's
        waves_per_eu, ... in the HIP configs Triton's tutorials pick on any
        non-CUDA device) are dropped when the kernel has no such parameter."""
        accepted = self._run_params
        if accepted is None:   # once: this runs on every launch
            accepted = self._run_params = frozenset(inspect.signature(self.base_fn.run).parameters)
        opts = config.options()
        out = dict(meta, **{k: v for k, v in config.kwargs.items()
                            if k not in _FOREIGN_OPTIONS or k in self.base_fn.arg_names})
        for k, v in opts.items():
            if k == "maxnreg" and k not in accepted:
                continue  # no maxnreg on Intel GPUs: grf_mode is the register knob
            if k not in accepted:
                raise AutotunerError(f"Config option {k}={v!r} is not supported by this zetile's "
                                     "launcher")
            out[k] = v
        return out

    def _warmup_kwargs(self, launch_kwargs):
        accepted = inspect.signature(self.base_fn.warmup).parameters
        return {k: v for k, v in launch_kwargs.items()
                if k not in _OPTION_NAMES or k in accepted}

    def _bench(self, *args, config, bench_device, **meta):
        conflicts = meta.keys() & config.kwargs.keys()
        if conflicts:
            raise ValueError(f"Conflicting meta-parameters: {', '.join(sorted(conflicts))}. "
                             "Make sure that you don't re-define auto-tuned symbols.")
        current = self._launch_kwargs(config, meta)
        full_nargs = {**self.nargs, **meta, **config.all_kwargs()}

        def kernel_call():
            if config.pre_hook:
                config.pre_hook(full_nargs)
            self.pre_hook(full_nargs)
            try:
                self.fn.run(*args, **current)
            except Exception as e:
                try:
                    self.post_hook(full_nargs, exception=e)
                finally:
                    raise
            self.post_hook(full_nargs, exception=None)

        try:
            t = self.do_bench(kernel_call, quantiles=(0.5, 0.2, 0.8), device=bench_device)
            if self._do_bench is not None:
                self.timer = "do_bench"
            else:
                self.timer = testing.last_timer.get("timer")
                self.timer_missing += testing.last_timer.get("missing", 0)
            return t, None
        except CompilationError as e:
            # Triton's OutOfResources analogue: a config the target refuses.
            if _env_flag("ZETILE_PRINT_AUTOTUNING", "TRITON_PRINT_AUTOTUNING"):
                print(f"zetile autotuning: {config} failed: {e}")
            return [float("inf")] * 3, f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"

    def _precompile(self, args, meta, configs):
        """Compiles every config before timing, in threads: the extension
        releases the GIL while the C compiler runs, and compiles of different
        specializations run at the same time (each in an MLIR context of its
        own; only SPIR-V emission is serialized), so on N cores up to N
        configs compile at once. Failures are left for _bench to record (it
        compiles the config again and reports or raises what it gets).
        Configs with a pre_hook are left to their first timed run: the hook
        may change the arguments' specialization (tutorial 09 sets
        descriptor block shapes), and hooks on shared arguments cannot run
        in parallel."""
        configs = [c for c in configs if c.pre_hook is None]
        if len(configs) < 2 or not hasattr(self.fn, "warmup"):
            return

        def one(cfg):
            try:
                self.fn.warmup(*args, **self._warmup_kwargs(self._launch_kwargs(cfg, meta)))
            except Exception:  # noqa: BLE001 - _bench meets it again, in order
                pass
        import concurrent.futures
        # Threads beyond the cores only add memory (a context each) and
        # contention: the front end holds the GIL, the compiler a core.
        workers = max(1, min(len(configs), os.cpu_count() or 1, 8))
        with concurrent.futures.ThreadPoolExecutor(workers) as ex:
            for f in [ex.submit(one, c) for c in configs]:
                f.result()

    def _tuning_key(self, all_args):
        key = [all_args[k] for k in self.keys if k in all_args]
        for n in self.arg_names:
            a = all_args.get(n)
            if hasattr(a, "dtype") and not isinstance(a, (int, float)):
                key.append(str(a.dtype))
        return tuple(_hashable(k) for k in key)

    def _db_ids(self, key, configs, dev):
        import json  # on use: 3 ms of `import zetile` otherwise (bench/warm_start.py)
        info = runtime.info(dev)
        from . import tune_db
        if self._hash is None:
            self._hash = tune_db.kernel_hash(self.base_fn)
        return dict(kernel_hash=self._hash,
                    key=json.dumps([_key_value(k) for k in key]),
                    configs_hash=tune_db.configs_hash([c.to_dict() for c in configs]),
                    **dict(zip(("device", "driver"), tune_db.device_ids(info))))

    def _from_db(self, row, configs):
        import json
        by_id = {json.dumps(c.to_dict(), sort_keys=True): c for c in configs}
        best = by_id.get(json.dumps(row["best"], sort_keys=True))
        if best is None:
            return None
        timings = {}
        self.timer = None
        for t in row["timings"]:
            c = by_id.get(json.dumps(t["config"], sort_keys=True))
            if c is not None:
                timings[c] = [t["median"], t["p20"], t["p80"]]
                self.timer = self.timer or t.get("timer")
        return best, timings

    def run(self, *args, **kwargs):
        with self._lock:   # hooks and self.nargs are per call, as in Triton
            return self._run(*args, **kwargs)

    def _run(self, *args, **kwargs):
        self.nargs = dict(zip(self.arg_names, args))
        used_cached = True
        dev = runtime.get_device(kwargs.get("device"))
        key = None
        if len(self.configs) > 1:
            all_args = {**self.nargs, **kwargs}
            key = self._tuning_key({k: v for k, v in all_args.items() if k in self.arg_names})
            mem_key = (runtime.info(dev)["name"], key)
            if mem_key in self.cache:
                self.tuning_source = "memory"
            else:
                pruned = self.prune_configs(kwargs)
                if len(pruned) == 1:
                    self.cache[mem_key] = pruned[0]
                    self.tuning_source = "single"
                else:
                    used_cached = self._tune(args, kwargs, pruned, key, mem_key, dev)
            config = self.cache[mem_key]
        else:
            config = self.configs[0]
            self.tuning_source = "single"
        self.best_config = config
        if not used_cached and _env_flag("ZETILE_PRINT_AUTOTUNING", "TRITON_PRINT_AUTOTUNING"):
            print(f"zetile autotuning for function {self.base_fn.__name__},\nwith key as {key},\n"
                  f"finished after {self.bench_time:.2f}s,\nbest config selected: {config};")
        full_nargs = {**self.nargs, **kwargs, **config.all_kwargs()}
        if config.pre_hook is not None:
            config.pre_hook(full_nargs)
        ret = self.fn.run(*args, **self._launch_kwargs(config, kwargs))
        self.nargs = None
        return ret

    def _tune(self, args, kwargs, pruned, key, mem_key, dev):
        """Returns True when the result came from the database."""
        from . import tune_db
        db = tune_db.get_db() if self.cache_results else None
        ids = self._db_ids(key, pruned, dev) if db is not None else None
        if db is not None and not self.force:
            row = db.lookup(**ids)
            got = self._from_db(row, pruned) if row else None
            if got is not None:
                self.cache[mem_key], self.configs_timings = got
                self.tuning_source = "database"
                self.bench_time = None
                return True
        t0 = time.time()
        meta = dict(kwargs)
        self.timer, self.timer_missing = None, 0
        self._precompile(args, meta, pruned)
        timings, errors = {}, {}
        for i, c in enumerate(pruned):
            timings[c], err = self._bench(*args, config=c, bench_device=dev, **meta)
            if err:
                errors[c] = err
            if self.progress is not None:
                self.progress(i + 1, len(pruned), c, timings[c], err)
        self.bench_time = time.time() - t0
        if all(t[0] == float("inf") for t in timings.values()):
            raise AutotunerError(f"{self.base_fn.__name__}: no config compiled:\n" +
                                 "\n".join(f"  {c}: {e}" for c, e in errors.items()))
        best = builtins.min(timings, key=lambda c: timings[c])
        self.cache[mem_key] = best
        self.configs_timings = timings
        self.config_errors = errors
        self.tuning_source = "benchmark"
        # Zero reset_to_zero arguments once more before the real launch.
        self.pre_hook({**self.nargs, **kwargs, **best.all_kwargs()}, reset_only=True)
        # Times the device never measured (a simulated device) are not kept.
        if db is not None and not self.timer_missing:
            db.store(kernel=self.kernel_name(),
                     target=runtime.info(dev)["target"], best=best.to_dict(),
                     timings=[{"config": c.to_dict(), "median": t[0], "p20": t[1], "p80": t[2],
                               "error": errors.get(c), "timer": self.timer}
                              for c, t in timings.items()],
                     bench_seconds=self.bench_time, **ids)
        return False

    def prune_configs(self, kwargs):
        pruned = self.configs
        if self.early_config_prune:
            pruned = self.early_config_prune(self.configs, self.nargs, **kwargs)
            if not pruned:
                raise AutotunerError("No valid autotuner configs after pruning. "
                                     "`early_config_prune` should return at least one config.")
        if self.perf_model:
            top_k = self.configs_top_k
            if isinstance(top_k, float) and top_k <= 1.0:
                top_k = max(1, int(len(pruned) * top_k))
            elif not isinstance(top_k, int):
                raise TypeError("Error while pruning configs, top_k must be either 1) a float "
                                "<= 1.0 or 2) an int")
            if len(pruned) > top_k:
                est = {c: self.perf_model(**self.nargs, **kwargs, **c.all_kwargs())
                       for c in pruned}
                pruned = sorted(est, key=lambda c: est[c])[:top_k]
        return list(pruned)

    def warmup(self, *args, **kwargs):
        """Compiles every (pruned) config without launching."""
        self.nargs = dict(zip(self.arg_names, args))
        out = []
        for c in self.prune_configs(kwargs):
            out.append(self.fn.warmup(*args, **self._warmup_kwargs(self._launch_kwargs(c, kwargs))))
        self.nargs = None
        return out


def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None,
             pre_hook=None, post_hook=None, warmup=None, rep=None, use_cuda_graph=False,
             do_bench=None, cache_results=None):
    """Decorator: tune a @zetile.jit kernel over `configs` whenever the values
    of the `key` arguments (or argument dtypes) change; Triton's arguments.
    warmup / rep are milliseconds for zetile.testing.do_bench (defaults 25 /
    100); do_bench(kernel_call, quantiles) replaces it. Results persist in
    the autotuning database unless cache_results=False or
    ZETILE_AUTOTUNE_DB=off."""
    def decorator(fn):
        return Autotuner(fn, fn.arg_names, configs, key, reset_to_zero, restore_value,
                         pre_hook=pre_hook, post_hook=post_hook, prune_configs_by=prune_configs_by,
                         warmup=warmup, rep=rep, do_bench=do_bench, cache_results=cache_results,
                         use_cuda_graph=use_cuda_graph)
    return decorator


class Heuristics:
    """What @heuristics returns: computes meta-parameters from the arguments."""

    def __init__(self, fn, arg_names, values):
        self.fn = fn
        self.arg_names = list(arg_names)
        self.values = dict(values)
        self.__name__ = getattr(fn, "__name__", "kernel")

    def _apply(self, args, kwargs):
        for v, heur in self.values.items():
            kwargs[v] = heur({**dict(zip(self.arg_names, args)), **kwargs})
        return kwargs

    def run(self, *args, **kwargs):
        return self.fn.run(*args, **self._apply(args, kwargs))

    def warmup(self, *args, **kwargs):
        return self.fn.warmup(*args, **self._apply(args, kwargs))

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, grid=grid, **kwargs)


def heuristics(values):
    """Decorator: values = {"META": lambda args: ...}; each function gets a
    dict of every argument by name and returns the meta-parameter's value."""
    def decorator(fn):
        return Heuristics(fn, fn.arg_names, values)
    return decorator
