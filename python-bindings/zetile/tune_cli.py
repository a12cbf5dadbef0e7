"""`zetile tune`: tune a user kernel or the GEMM template on a device, or
rank configs by Intel ISA statistics without one; show, export and import
the results database.

    zetile tune FILE.py:KERNEL --signature "x_ptr=*fp32,out_ptr=*fp32,n=i32" \\
        --args "x_ptr=1048576,out_ptr=1048576,n=1048576" --grid "cdiv(n, BLOCK)" \\
        --space "BLOCK=256|1024|4096;num_warps=4|8" [--device cpu] [--plot p.svg]
    zetile tune gemm --shape 512x512x512 --dtype fp16 [--device opencl:cpu]
    zetile tune gemm --shape 4096x4096x4096 --dtype bf16 --target pvc --isa-only
    zetile tune sdpa --shape 1,8,512,512,64 --dtype fp16 [--causal]    (also: flex)
    zetile tune show [--kernel NAME] [--json]
    zetile tune export FILE.json | zetile tune import FILE.json

A kernel decorated with @zetile.autotune brings its own configs and key;
a plain @zetile.jit kernel takes them from --config/--space (and --key,
default: its integer arguments).
"""
from __future__ import annotations

import itertools
import json
import math
import os
import sys
import time

SPECIAL = ("show", "export", "import", "gemm")


# ------------------------------------------------------------------ output
class Progress:
    """A progress bar on stderr: redrawn in place on a terminal, one line
    per config otherwise (logs, CI)."""

    def __init__(self, total, label, stream=None, what=None):
        self.total, self.label = total, label
        # what(timing) -> the text after a config's name (default: its median in ms)
        self.what = what or (lambda t: f"{t[0]:.4f} ms")
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.t0 = time.time()

    def __call__(self, i, n, config, timing, error):
        self.total = n
        w = 24
        done = int(w * i / max(n, 1))
        bar = "#" * done + "-" * (w - done)
        what = "failed" if error else self.what(timing)
        line = (f"{self.label} [{bar}] {i}/{n} {time.time() - self.t0:5.1f}s  "
                f"{_label(config)}: {what}")
        if self.tty:
            self.stream.write("\r\x1b[K" + line + ("\n" if i == n else ""))
        else:
            self.stream.write(line + "\n")
        self.stream.flush()


def _label(config):
    return config.short() if hasattr(config, "short") else str(config)


def _table(headers, rows):
    cells = [headers] + [[_fmt(v) for v in r] for r in rows]
    w = [max(len(c[j]) for c in cells) for j in range(len(headers))]
    # Text columns left, number columns right.
    text = [any(isinstance(r[j], str) and r[j] not in ("failed", "-") for r in rows)
            for j in range(len(headers))]
    out = ["  ".join(c[j].ljust(w[j]) if text[j] else c[j].rjust(w[j]) for j in range(len(c)))
           for c in cells]
    out.insert(1, "  ".join("-" * x for x in w))
    return "\n".join(out)


def _fmt(v):
    if isinstance(v, float):
        if math.isinf(v):
            return "inf"
        return f"{v:.4g}"
    return "-" if v is None else str(v)


# ------------------------------------------------------------------ arguments
def _configs_from_cli(args):
    from .autotuner import Config
    from .cli import _parse_pairs, _parse_value
    opts = ("num_warps", "num_stages", "num_ctas", "maxnreg", "grf_mode", "compat")

    def make(d):
        kw = {k: v for k, v in d.items() if k not in opts}
        return Config(kw, **{k: v for k, v in d.items() if k in opts})
    configs = []
    for c in args.config or []:
        configs.append(make({k: _parse_value(v) for k, v in _parse_pairs(c, "--config").items()}))
    if args.space:
        axes = []
        for part in args.space.split(";"):
            if not part.strip():
                continue
            if "=" not in part:
                raise SystemExit(f"zetile: --space entries are NAME=V1|V2|..., got {part!r}")
            k, vs = part.split("=", 1)
            axes.append([(k.strip(), _parse_value(v.strip())) for v in vs.split("|")])
        for combo in itertools.product(*axes):
            configs.append(make(dict(combo)))
    return configs


def _signature(kernel, text, fixed):
    from .cli import _parse_pairs
    if not text:
        raise SystemExit("zetile: --signature is needed (the run-time arguments' types)")
    if "=" in text:
        return _parse_pairs(text, "--signature")
    names = [n for n in kernel.arg_names if n not in kernel.constexpr_names and n not in fixed]
    parts = [s.strip() for s in text.split(",") if s.strip()]
    if len(parts) != len(names):
        raise SystemExit(f"zetile: --signature has {len(parts)} types for {len(names)} arguments "
                         f"({', '.join(names)})")
    return dict(zip(names, parts))


def _make_args(kernel, sig, values, dev):
    """Arrays (random, in the device's memory) and scalars for a launch."""
    import numpy as np
    from . import runtime
    from .language import dtypes as T
    rng = np.random.default_rng(0)
    out = {}
    for n, ty in sig.items():
        t = T.parse_signature_type(ty.split(":")[0])
        if n not in values:
            raise SystemExit(f"zetile: --args needs a value for {n!r} (a shape such as 4096 or "
                             "64x64 for a pointer, a number for a scalar)")
        v = values[n]
        if t.is_ptr():
            shape = tuple(int(x) for x in str(v).lower().split("x"))
            npdt = t.element_ty.to_numpy()
            if np.dtype(npdt).kind == "f" or "bfloat16" in str(npdt):
                a = rng.standard_normal(shape).astype(np.float32).astype(npdt)
            else:
                a = rng.integers(0, 8, shape).astype(npdt)
            out[n] = runtime.from_numpy(a, device=dev)
        elif t.is_floating():
            out[n] = float(v)
        else:
            out[n] = int(v)
    return out


def _grid_fn(expr, scalars):
    from . import cdiv, next_power_of_2
    if not expr:
        raise SystemExit('zetile: --grid is needed, e.g. --grid "cdiv(n, BLOCK)"')
    env = {"cdiv": cdiv, "next_power_of_2": next_power_of_2, "min": min, "max": max}

    def grid(meta):
        g = eval(expr, {"__builtins__": {}}, {**env, **scalars, **meta})  # noqa: S307 - the user's own expression
        return tuple(g) if isinstance(g, (tuple, list)) else (g,)
    return grid


# ------------------------------------------------------------------ results
def _result_rows(configs, timings, errors):
    rows = []
    for c in configs:
        t = timings.get(c)
        med, lo, hi = (t if t else (float("inf"),) * 3)
        spread = (hi - lo) / med * 100 if t and med and math.isfinite(med) else None
        rows.append({"config": c, "median_ms": med, "p20_ms": lo, "p80_ms": hi,
                     "spread_pct": spread, "error": errors.get(c)})
    rows.sort(key=lambda r: r["median_ms"])
    return rows


def _print_timing(rows, extra=None, json_out=False, header=""):
    if json_out:
        print(json.dumps([{**{k: v for k, v in r.items() if k != "config"},
                           "config": r["config"].to_dict()} for r in rows], indent=2))
        return
    if header:
        print(header)
    heads = ["rank", "config", "median ms", "p20 ms", "p80 ms", "spread %"]
    extras = [e for e in (extra if isinstance(extra, list) else [extra]) if e]
    heads += [e[0] for e in extras]
    table = []
    for i, r in enumerate(rows):
        line = [i + 1, _label(r["config"]), r["median_ms"], r["p20_ms"], r["p80_ms"],
                r["spread_pct"]]
        line += [e[1](r) for e in extras]
        if r["error"]:
            line[2] = "failed"
        table.append(line)
    print(_table(heads, table))
    for r in rows:
        if r["error"]:
            print(f"  {_label(r['config'])}: {r['error']}")


def _spill_bytes(kernel, args, kwargs):
    """Spill memory the device's driver reports for one config's kernel
    (zeKernelGetProperties on Level Zero), or None where unknown (the CPU
    target, OpenCL). The kernel is in the JIT's cache after timing."""
    try:
        ck = kernel.warmup(*args, **kwargs)
        ex = getattr(ck, "executable", None)
        v = ex.stats().get("spill_bytes") if ex is not None else None
    except Exception:  # noqa: BLE001 - a column of the table, never a failure
        return None
    return v if isinstance(v, int) and v >= 0 else None


def _spill_column(info, spills):
    """("spill B", getter) for the table where the device reports spills."""
    if info.get("backend") != "level_zero" or not any(v is not None for v in spills.values()):
        return None
    return ("spill B", lambda r: spills.get(id(r["config"])))


def _timer_note(timer, missing=0):
    from .testing import TIMER_NAMES
    if timer is None:
        return "timer: -"
    note = f"timer: {TIMER_NAMES.get(timer, timer)}"
    if missing:
        note += (f" (the device wrote no timestamp for {missing} launches, counted as 0 ms: "
                 "a simulated device executes nothing, these times are no measurement)")
    return note


def _plot(path, rows, title, ylabel="median ms (whiskers: p20-p80)", key="median_ms"):
    from .tools import plot
    labels = [_label(r["config"]) for r in rows]
    vals = [r[key] for r in rows]
    lo = [r.get("p20_ms") if key == "median_ms" else None for r in rows]
    hi = [r.get("p80_ms") if key == "median_ms" else None for r in rows]
    plot.bar_plot(path, labels, vals, lo, hi, title=title, ylabel=ylabel)
    print(f"wrote {path} ({os.path.getsize(path)} bytes)")


# ------------------------------------------------------------------ user kernels
def _tune_user_kernel(args):
    from . import runtime
    from .autotuner import Autotuner
    from .cli import _load_kernel, _parse_pairs, _parse_value
    from .jit import JITFunction
    obj = _load_kernel(args.what)
    cli_configs = _configs_from_cli(args)
    if isinstance(obj, Autotuner):
        tuner = obj
        if cli_configs:
            tuner.configs = cli_configs
    elif isinstance(obj, JITFunction):
        if not cli_configs:
            raise SystemExit("zetile: a plain @zetile.jit kernel needs --config or --space "
                             "(or decorate it with @zetile.autotune)")
        tuner = None
    else:
        raise SystemExit(f"zetile: {args.what} is not a @zetile.jit or @zetile.autotune kernel")
    base = tuner.base_fn if tuner else obj
    fixed = {k: _parse_value(v) for k, v in _parse_pairs(args.constexpr, "--constexpr").items()}
    sig = _signature(base, args.signature, fixed)
    if args.isa_only:
        configs = tuner.configs if tuner else cli_configs
        return _isa_rank(args, base, sig, fixed, configs, title=base.__name__)
    values = _parse_pairs(args.args, "--args")
    dev = runtime.get_device(args.device)
    kargs = _make_args(base, sig, values, dev)
    if tuner is None:
        keys = args.key.split(",") if args.key else \
            [n for n, v in kargs.items() if isinstance(v, int)]
        tuner = Autotuner(base, base.arg_names, cli_configs, keys, warmup=args.warmup,
                          rep=args.rep)
    else:
        tuner.num_warmups, tuner.num_reps = args.warmup, args.rep
    tuner.force = args.force
    tuner.progress = None if args.json else Progress(len(tuner.configs), base.__name__)
    scalars = {n: v for n, v in kargs.items() if not hasattr(v, "shape")}
    positional = [kargs[n] for n in base.arg_names if n in kargs]
    if len(positional) != len(kargs) or any(n not in kargs for n in base.arg_names[:len(kargs)]):
        raise SystemExit("zetile: the run-time arguments must come first, in order")
    tuner[_grid_fn(args.grid, scalars)](*positional, device=args.device, **fixed)
    runtime.get_device(args.device).synchronize()
    configs = list(tuner.configs_timings) or [tuner.best_config]
    rows = _result_rows(configs, tuner.configs_timings, tuner.config_errors)
    src = tuner.tuning_source
    note = {"database": "from the autotuning database (--force re-benchmarks)",
            "benchmark": f"benchmarked in {tuner.bench_time or 0:.1f}s",
            "single": "one config: nothing to compare"}.get(src, src)
    info = runtime.info(dev)
    spills = {}
    if info.get("backend") == "level_zero" and src == "benchmark":
        meta = {"device": args.device, **fixed}
        for c in configs:
            spills[id(c)] = _spill_bytes(base, positional,
                                         tuner._warmup_kwargs(tuner._launch_kwargs(c, meta)))
    _print_timing(rows, extra=[_spill_column(info, spills)], json_out=args.json,
                  header=f"{base.__name__} on {info['name']} ({info.get('description', '')}); "
                         f"{note}; {_timer_note(tuner.timer, tuner.timer_missing)}; "
                         f"best: {_label(tuner.best_config)}")
    if args.plot:
        _plot(args.plot, rows, f"{base.__name__} on {info['name']}")
    return 0


# ------------------------------------------------------------------ GEMM template
def _parse_shape(text):
    try:
        parts = [int(x) for x in text.lower().replace(",", "x").split("x")]
    except ValueError:
        parts = []
    if len(parts) != 3:
        raise SystemExit(f"zetile: --shape is MxNxK, got {text!r}")
    return parts


_DTYPES = {"fp16": "float16", "float16": "float16", "bf16": "bfloat16", "bfloat16": "bfloat16",
           "fp32": "float32", "float32": "float32", "int8": "int8"}


def _gemm_template():
    from .ops import _kernels
    return _kernels.load("gemm")


def _template_configs(args, template):
    from .autotuner import Config
    cli = _configs_from_cli(args)
    if cli:
        return cli
    return [Config(dict(c)) for c in template.CONFIGS]


def _dtype(args):
    dt = _DTYPES.get(args.dtype)
    if dt is None:
        raise SystemExit(f"zetile: --dtype is one of {', '.join(sorted(_DTYPES))}")
    return dt


def _random(shape, dt, dev, rng):
    import numpy as np
    from . import runtime
    from .ops import _arrays
    npdt = _arrays.numpy_dtype(dt)
    if dt == "int8":
        a = rng.integers(-4, 4, shape).astype(npdt)
    else:
        a = rng.standard_normal(shape).astype(np.float32).astype(npdt)
    return runtime.from_numpy(a, device=dev)


def _tune_gemm(args):
    import numpy as np
    from . import runtime
    from .ops import gemm as gemm_op     # the function zetile.ops.gemm
    M, N, K = _parse_shape(args.shape or "512x512x512")
    dt = _dtype(args)
    g = _gemm_template()
    configs = _template_configs(args, g)
    if args.isa_only:
        sig, fixed = _gemm_signature(M, N, K, dt)
        return _isa_rank(args, g.gemm_kernel, sig, fixed, configs,
                         title=f"gemm {M}x{N}x{K} {dt}")
    dev = runtime.get_device(args.device)
    rng = np.random.default_rng(0)
    a, b = _random((M, K), dt, dev, rng), _random((K, N), dt, dev, rng)
    out = gemm_op(a, b)     # the default config: the output buffer, and a first check
    return _tune_template(args, dev, name="zetile.ops.gemm", kernel=g.gemm_kernel,
                          key=[M, N, K, dt], configs=configs,
                          call=lambda cfg: gemm_op(a, b, out=out, config=cfg),
                          title=f"zetile.ops.gemm {M}x{N}x{K} {dt}", flops=2.0 * M * N * K,
                          plan=lambda cfg: gemm_op(a, b, out=out, config=cfg, plan=True))


def _attention_shape(text):
    try:
        parts = [int(x) for x in text.replace("x", ",").split(",")]
    except ValueError:
        parts = []
    if len(parts) != 5:
        raise SystemExit(f"zetile: --shape is B,H,L,S,D for attention, got {text!r}")
    return parts


def _tune_attention(args, flex):
    import numpy as np
    from . import ops, runtime
    from .ops import _kernels
    B, H, L, S, D = _attention_shape(args.shape or "1,8,512,512,64")
    dt = _dtype(args)
    if dt not in ("float16", "bfloat16", "float32"):
        raise SystemExit("zetile: attention takes fp16, bf16 or fp32")
    t = _kernels.load("attention")
    configs = _template_configs(args, t)
    # --isa-only plans the launches on the CPU (no GPU needed) and compiles them for --target.
    dev = runtime.get_device("cpu" if args.isa_only else args.device)
    rng = np.random.default_rng(0)
    q, k, v = (_random((B, H, n, D), dt, dev, rng) for n in (L, S, S))
    name = "zetile.ops.flex_attention" if flex else "zetile.ops.sdpa"
    if flex:
        bm = None
        if args.causal:
            bm = ops.create_block_mask(lambda b, h, qi, ki: qi >= ki, B, H, L, S)

        def call(cfg, plan=False):
            if plan:    # the forward flex_attention runs, planned
                return ops.flex_attention_fwd(q, k, v, block_mask=bm, config=cfg, plan=True)
            return ops.flex_attention(q, k, v, block_mask=bm, config=cfg)
    else:
        def call(cfg, plan=False):
            return ops.scaled_dot_product_attention(q, k, v, is_causal=args.causal, config=cfg,
                                                    plan=plan)
    if args.isa_only:
        # Planned one after another (Python), compiled in threads.
        plans = {id(c): call(dict(c.kwargs), plan=True) for c in configs}
        return _isa_rank(args, t.attn_fwd, None, {}, configs,
                         title=f"{name} B,H,L,S,D={B},{H},{L},{S},{D} {dt}"
                               f"{' causal' if args.causal else ''}",
                         plan=lambda c: plans[id(c)])
    call(None)
    # Causal attention does about half the work; the figure counts what is computed.
    flops = 4.0 * B * H * L * S * D * (0.5 if args.causal else 1.0)
    return _tune_template(args, dev, name=name, kernel=t.attn_fwd,
                          key=[B, H, L, S, D, dt, bool(args.causal)], configs=configs,
                          call=call, title=f"{name} B,H,L,S,D={B},{H},{L},{S},{D} {dt}"
                                           f"{' causal' if args.causal else ''}", flops=flops,
                          plan=lambda cfg: call(cfg, plan=True))


def _tune_template(args, dev, *, name, kernel, key, configs, call, title, flops=None, plan=None):
    """Times `call(config)` for every config (or reads the database), stores
    the result, prints the table and the plot."""
    from . import runtime, testing, tune_db
    from .compiler.errors import CompilationError
    info = runtime.info(dev)
    dev.synchronize()
    db = tune_db.get_db()
    ids = dict(kernel_hash=tune_db.kernel_hash(kernel), key=json.dumps(key),
               configs_hash=tune_db.configs_hash([c.to_dict() for c in configs]),
               **dict(zip(("device", "driver"), tune_db.device_ids(info))))
    row = db.lookup(**ids) if db is not None and not args.force else None
    timings, errors = {}, {}
    timer, missing = None, 0
    if row:
        by = {json.dumps(c.to_dict(), sort_keys=True): c for c in configs}
        for t in row["timings"]:
            c = by.get(json.dumps(t["config"], sort_keys=True))
            if c is not None:
                timings[c] = [t["median"], t["p20"], t["p80"]]
                timer = timer or t.get("timer")
                if t.get("error"):
                    errors[c] = t["error"]
        note = "from the autotuning database (--force re-benchmarks)"
    else:
        bar = None if args.json else Progress(len(configs), name.split(".")[-1])
        t0 = time.time()
        for i, c in enumerate(configs):
            try:
                timings[c] = testing.do_bench(lambda c=c: call(dict(c.kwargs)),
                                              warmup=args.warmup, rep=args.rep,
                                              quantiles=(0.5, 0.2, 0.8), device=dev)
                timer = testing.last_timer.get("timer")
                missing += testing.last_timer.get("missing", 0)
            except (CompilationError, ValueError) as e:
                timings[c] = [float("inf")] * 3
                errors[c] = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
            if bar:
                bar(i + 1, len(configs), c, timings[c], errors.get(c))
        secs = time.time() - t0
        best = min(timings, key=lambda c: timings[c])
        # Times the device never measured (a simulated device) are not kept.
        if db is not None and math.isfinite(timings[best][0]) and not missing:
            db.store(kernel=name, target=info["target"], best=best.to_dict(),
                     timings=[{"config": c.to_dict(), "median": t[0], "p20": t[1], "p80": t[2],
                               "error": errors.get(c), "timer": timer}
                              for c, t in timings.items()],
                     bench_seconds=secs, **ids)
        note = f"benchmarked in {secs:.1f}s"
    rows = _result_rows(configs, timings, errors)
    extra = []
    if flops:
        extra.append(("TFLOP/s", lambda r: flops / (r["median_ms"] * 1e-3) / 1e12
                      if math.isfinite(r["median_ms"]) and r["median_ms"] > 0 else None))
    spills = {}
    if plan is not None and info.get("backend") == "level_zero":
        for c in configs:
            if c in errors:
                continue
            try:
                launch = plan(dict(c.kwargs))
            except Exception:  # noqa: BLE001 - the column stays empty
                continue
            first = launch.launches[0] if hasattr(launch, "launches") else launch
            spills[id(c)] = _spill_bytes(first.kernel, first.args, first.kwargs)
    extra.append(_spill_column(info, spills))
    _print_timing(rows, extra=extra, json_out=args.json,
                  header=f"{title} on {info['name']} ({info.get('description', '')}); {note}; "
                         f"{_timer_note(timer, missing)}; best: {_label(rows[0]['config'])}")
    if args.plot:
        _plot(args.plot, rows, f"{title} on {info['name']}")
    return 0


def _gemm_signature(M, N, K, dt):
    """The specialization ops.gemm launches for a plain (M, K) @ (K, N): the
    same strides and hints, written as a compile() signature (no device)."""
    ty = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "int8": "i8"}[dt]
    oty = "i32" if dt == "int8" else ty
    sig = {"A": f"*{ty}", "B": f"*{ty}", "OUT": f"*{oty}", "M": "i32", "N": "i32", "K": "i32",
           "alpha": "fp32", "beta": "fp32"}
    fixed = {"BIAS": None, "RES": None, "C_IN": None, "SCALES": None, "ACT": 0,
             "EPILOGUE": False, "ACC_INT": dt == "int8", "WEIGHT_BITS": 0, "GROUP_K": 1,
             "HAS_BIAS": False, "HAS_RES": False, "HAS_C": False}
    strides = {"s_ab": M * K, "s_am": K, "s_ak": 1, "s_bb": K * N, "s_bk": N, "s_bn": 1,
               "s_ob": M * N, "s_om": N, "s_on": 1}
    for n in ("s_xb", "s_xm", "s_xn", "s_rb", "s_rm", "s_rn", "s_cb", "s_cm", "s_cn", "s_sg",
              "s_sn"):
        strides[n] = 0
    for n, v in {**strides, "M": M, "N": N, "K": K}.items():
        if v == 1:
            fixed[n] = 1            # the launcher makes integers equal to 1 constants
            sig.pop(n, None)
        else:
            sig[n] = "i32:16" if v > 0 and v % 16 == 0 else "i32"
    return sig, fixed


# ------------------------------------------------------------------ ISA ranking
def _grf_options(grf_mode):
    if grf_mode in ("large", 256):
        return "-ze-opt-large-register-file"
    if grf_mode in ("default", 128):
        return ""
    return None        # "auto": zetile decides (large for kernels with dots)


def _isa_of_plan(plan, c, target):
    """isa.report's figures for a template's planned launch (a zetile.ops
    call with plan=True): its kernel compiled for target, then ocloc."""
    from .tools import isa
    launch = plan(c)
    art = launch.compile(target, num_warps=c.num_warps or 0)
    meta = dict(ln.split("=", 1) for ln in art.get("meta").decode().splitlines() if "=" in ln)
    opts = _grf_options(c.grf_mode)
    opts = meta.get("igc_options", "") if opts is None else opts
    isas, log = isa.ocloc_isa(art.get("spirv"), target, opts)
    return {"spilled_registers": isa.spill_from_log(log),
            "grf_mode": "256 (large)" if "large-register-file" in opts else "128 (default)",
            "kernels": {n: isa.analyze_isa(t) for n, t in isas.items()}}


def _isa_one(kernel, sig, fixed, c, target, plan=None):
    """ISA statistics of one config (a dict; "error" set when it fails):
    of `kernel` specialized by sig and fixed, or of the launch plan(c)."""
    from .tools import isa
    consts = {**fixed, **c.kwargs}
    try:
        if plan is not None:
            r = _isa_of_plan(plan, c, target)
        else:
            r = isa.report(kernel, sig, consts, target=target, num_warps=c.num_warps or 0,
                           compat=bool(c.compat), igc_options=_grf_options(c.grf_mode),
                           driver=False)
        ks = list(r["kernels"].values())
        k = ks[0] if ks else {}
        instr, dpas, sends = k.get("instructions", 0), k.get("dpas", 0), k.get("sends", 0)
        # ocloc prints no "spilled around" line for SIMD8 kernels that do
        # spill: the verdict is zetile isa's cheap one, that line AND the
        # ISA's scratch sends (docs/ARCHITECTURE.md, "One spill verdict").
        return {"config": c, "spilled_registers": r.get("spilled_registers", 0),
                "scratch_sends": sum(x.get("scratch_sends", 0) for x in ks),
                "spills": not isa.no_spill_cheap(r),
                "dpas": dpas, "dpas_in_loop": k.get("dpas_in_innermost_loop", 0),
                "instructions": instr, "sends": sends,
                "dpas_density": dpas / instr if instr else 0.0,
                "sends_per_dpas": sends / dpas if dpas else None,
                "grf": r.get("grf_mode"), "error": None}
    except Exception as e:  # noqa: BLE001 - a config the target refuses is ranked last
        return {"config": c, "error": f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"}


def _isa_rank(args, kernel, sig, fixed, configs, title, plan=None):
    """Compiles every config for --target and ranks them by ISA statistics:
    spill-free first (ocloc's line and the ISA's scratch sends), then fewer
    scratch sends, fewer spilled registers (ocloc's count, which SIMD8
    kernels lack: scratch sends come first), more DPAS per instruction,
    fewer sends per DPAS. No device runs anything: this is not a timing.

    Configs compile in parallel threads (--jobs, default one per core, at
    most 8): zetile's compiler releases the GIL and compiles different
    specializations at the same time, and ocloc / iga64 are processes of
    their own."""
    import concurrent.futures
    target = args.target or "pvc"
    if target == "cpu":
        raise SystemExit("zetile: --isa-only needs an Intel GPU target (pvc, bmg, dg2)")
    jobs = args.jobs or min(len(configs), os.cpu_count() or 1, 8)
    if jobs < 1:
        raise SystemExit("zetile: --jobs is at least 1")
    jobs = max(1, min(jobs, len(configs)))
    results = [None] * len(configs)
    bar = None if args.json else Progress(len(configs), f"isa {target}",
                                          what=lambda t: f"{t[0]:.4f} DPAS/instruction")
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(jobs) as ex:
        futs = {ex.submit(_isa_one, kernel, sig, fixed, c, target, plan): i
                for i, c in enumerate(configs)}
        for done, f in enumerate(concurrent.futures.as_completed(futs), 1):
            i = futs[f]
            res = results[i] = f.result()
            if bar:
                bar(done, len(configs), configs[i], [res.get("dpas_density", 0)] * 3,
                    res["error"])
    secs = time.time() - t0

    def rank(r):
        if r["error"]:
            return (1, 0, 0, 0, 0, 0)
        spd = r["sends_per_dpas"]
        return (0, r["spills"], r["scratch_sends"], r["spilled_registers"], -r["dpas_density"],
                spd if spd is not None else float("inf"))
    results.sort(key=rank)
    if args.json:
        print(json.dumps([{**{k: v for k, v in r.items() if k != "config"},
                           "config": r["config"].to_dict()} for r in results], indent=2))
    else:
        print(f"{title}: ISA statistics for {target} (ocloc + iga64); NO TIMING: nothing ran, "
              "configs are ranked by spills (scratch sends, then ocloc's count), then DPAS per "
              "instruction, then sends per DPAS; "
              f"{len(configs)} configs compiled in {secs:.1f}s by {jobs} thread(s)")
        heads = ["rank", "config", "spilled regs", "scratch sends", "dpas", "dpas in loop",
                 "instructions", "dpas/instr", "sends/dpas", "GRF"]
        rows = []
        for i, r in enumerate(results):
            if r["error"]:
                rows.append([i + 1, _label(r["config"]), "failed"] + [None] * 7)
            else:
                rows.append([i + 1, _label(r["config"]), r["spilled_registers"],
                             r["scratch_sends"], r["dpas"],
                             r["dpas_in_loop"], r["instructions"], r["dpas_density"],
                             r["sends_per_dpas"], r["grf"]])
        print(_table(heads, rows))
        for r in results:
            if r["error"]:
                print(f"  {_label(r['config'])}: {r['error']}")
        if not any(r.get("dpas") for r in results):
            print("no config has DPAS: the ranking is by spills only (ties keep the given order)")
    if args.plot:
        from .tools import plot
        ok = [r for r in results if not r["error"]]
        plot.bar_plot(args.plot, [_label(r["config"]) for r in ok],
                      [r["dpas_density"] for r in ok], [None] * len(ok), [None] * len(ok),
                      title=f"{title} on {target}: DPAS per instruction (ISA, no timing)",
                      ylabel="DPAS / instruction")
        print(f"wrote {args.plot} ({os.path.getsize(args.plot)} bytes)")
    return 0 if any(not r["error"] for r in results) else 1


# ------------------------------------------------------------------ database
def _show(args):
    from . import tune_db
    db = tune_db.get_db()
    if db is None:
        print("the autotuning database is off (ZETILE_AUTOTUNE_DB=off)")
        return 0
    rows = db.rows(args.kernel)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    version = tune_db.zetile_version()
    print(f"{db.path}: {len(rows)} result(s)")
    table = []
    for r in rows:
        ok = [t for t in r["timings"] if t.get("median") is not None and
              math.isfinite(t["median"])]
        best = min((t["median"] for t in ok), default=None)
        cfg = r["best"]
        label = " ".join([f"{k}={v}" for k, v in cfg.get("kwargs", {}).items()] +
                         [f"{k}={v}" for k, v in cfg.items() if k != "kwargs"])
        table.append([r["kernel"], r["key"], label, best, len(r["timings"]),
                      r["device"].split(" | ")[0], r["version"] + ("" if r["version"] == version
                                                                  else " (stale)"),
                      time.strftime("%Y-%m-%d %H:%M", time.localtime(r["created"]))])
    if table:
        print(_table(["kernel", "key", "best config", "best ms", "configs", "device", "version",
                      "when"], table))
    return 0


def _export(args):
    from . import tune_db
    db = tune_db.get_db()
    if db is None:
        raise SystemExit("zetile: the autotuning database is off (ZETILE_AUTOTUNE_DB=off)")
    rows = db.rows(args.kernel)
    text = json.dumps({"zetile_autotune": tune_db.SCHEMA_VERSION, "rows": rows}, indent=1)
    if not args.file or args.file == "-":
        print(text)
    else:
        with open(args.file, "w") as f:
            f.write(text + "\n")
        print(f"exported {len(rows)} result(s) to {args.file}")
    return 0


def _import(args):
    from . import tune_db
    if not args.file:
        raise SystemExit("zetile: tune import FILE.json")
    db = tune_db.get_db()
    if db is None:
        raise SystemExit("zetile: the autotuning database is off (ZETILE_AUTOTUNE_DB=off)")
    with open(args.file) as f:
        data = json.load(f)
    if data.get("zetile_autotune") != tune_db.SCHEMA_VERSION:
        raise SystemExit(f"zetile: {args.file} is not a zetile autotune export "
                         f"(schema {data.get('zetile_autotune')})")
    n = db.import_rows(data.get("rows", []))
    print(f"imported {n} result(s) into {db.path}")
    return 0


def cmd_tune(args):
    if args.device:
        from . import runtime
        runtime.set_device(args.device)
    if args.what == "show":
        return _show(args)
    if args.what == "export":
        return _export(args)
    if args.what == "import":
        return _import(args)
    if args.what == "gemm":
        return _tune_gemm(args)
    if args.what in ("sdpa", "flex"):
        return _tune_attention(args, flex=args.what == "flex")
    try:
        return _tune_user_kernel(args)
    except SystemExit:
        raise
    except Exception as e:  # noqa: BLE001 - shown to the user as it is
        print(f"zetile: {type(e).__name__}: {e}", file=sys.stderr)
        return 1


def add_parser(sub):
    p = sub.add_parser("tune", help="autotune a kernel or the GEMM template; show/export/import "
                                    "the results database")
    p.add_argument("what", help="FILE.py:KERNEL, gemm, sdpa, flex, show, export or import")
    p.add_argument("file", nargs="?", help="export/import: the JSON file (- for stdout)")
    p.add_argument("--device", "-d", help="cpu, level_zero[:N], opencl:cpu (default: zetile's)")
    p.add_argument("--signature", "-s", default="", help='"x_ptr=*fp32,n=i32" or "*fp32,i32"')
    p.add_argument("--args", "-a", default="",
                   help='values: a shape for pointers, a number for scalars: "x_ptr=4096,n=4096"')
    p.add_argument("--grid", "-g", default="", help='"cdiv(n, BLOCK)" (argument and meta names)')
    p.add_argument("--constexpr", "-c", default="", help="fixed constexprs: \"ACT=1,EVEN=True\"")
    p.add_argument("--config", action="append",
                   help='one config: "BLOCK=64,num_warps=4" (repeat for more)')
    p.add_argument("--space", help='a grid of configs: "BLOCK=64|128;num_warps=2|4"')
    p.add_argument("--key", help="tuning key of a plain kernel (default: its integer arguments)")
    p.add_argument("--shape", help="gemm: MxNxK; sdpa, flex: B,H,L,S,D")
    p.add_argument("--causal", action="store_true", help="sdpa, flex: a causal mask")
    p.add_argument("--dtype", default="fp16", help="gemm: fp16, bf16, fp32 or int8")
    p.add_argument("--warmup", type=float, default=25, help="ms of warm-up per config")
    p.add_argument("--rep", type=float, default=100, help="ms of measurement per config")
    p.add_argument("--force", action="store_true", help="benchmark even if the database has it")
    p.add_argument("--plot", help="write a plot: FILE.svg (or .png with matplotlib)")
    p.add_argument("--target", "-t", help="--isa-only: pvc, bmg or dg2")
    p.add_argument("--isa-only", action="store_true",
                   help="compile every config for --target and rank by ISA statistics (no timing)")
    p.add_argument("--jobs", "-j", type=int, default=0,
                   help="--isa-only: configs compiled at once (default: one per core, at most 8)")
    p.add_argument("--kernel", help="show/export: only kernels whose name contains this")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_tune)
