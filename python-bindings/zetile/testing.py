"""Benchmarking and checking helpers with triton.testing's names and
arguments, so tutorial code runs with only its import changed:
`do_bench`, `assert_close`, `Benchmark`, `perf_report`.

do_bench times with the device's own clock where it has one: on Level Zero
every timed run is a timing region of the runtime (Device.timing_begin /
timing_end: kernel timestamps), and its time is the sum of the kernels' device
times, without launch overhead. On the CPU target (and OpenCL) it is wall
time around each call plus a device synchronize (`time.perf_counter_ns`),
which there is what the kernel costs. `last_timer` says what the last
do_bench used.
"""
from __future__ import annotations

import math
import os
import sys
import time
import warnings


from . import runtime
from . import language as tl
from .jit import jit

__all__ = ["do_bench", "assert_close", "Benchmark", "perf_report", "Mark"]


# ----------------------------------------------------------------- flushing
def _l2_bytes():
    """The level-2 (last per-core) CPU cache size from sysfs, for sizing the
    flush buffer; 2 MB when sysfs does not say."""
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for d in os.listdir(base):
            try:
                with open(os.path.join(base, d, "level")) as f:
                    if f.read().strip() != "2":
                        continue
                with open(os.path.join(base, d, "size")) as f:
                    s = f.read().strip()
            except OSError:
                continue
            mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(s[-1:], 1)
            return int(s.rstrip("KMG") or 0) * mult
    except OSError:
        pass
    return 2 << 20


class _Flusher:
    """Evicts caches between timed runs, as triton.testing.do_bench zeroes a
    256 MB buffer. On the CPU target (and OpenCL's CPU device: host memory)
    a host buffer of 4x the per-core L2 is rewritten, outside the timed
    region: that evicts the private caches, not a shared L3 (which VMs report
    at hundreds of MB: rewriting that much costs ~0.1 s per run here). On a
    GPU a zetile kernel writes a 256 MB device buffer, as Triton's zero_()
    does (checked here only on OpenCL's CPU device: no GPU)."""

    def __init__(self, dev, host=None, nbytes=256 << 20):
        if host is None:
            host = bool(runtime.info(dev).get("host_memory")) or \
                runtime.info(dev).get("backend") == "cpu"
        self.host = host
        self.dev = dev
        self.val = 0
        if host:
            import numpy as np
            self.buf = np.empty(min(max(4 * _l2_bytes(), 4 << 20), 64 << 20), np.uint8)
        else:
            self.n = nbytes // 4
            self.buf = runtime.empty((self.n,), "int32", device=dev)

    def __call__(self):
        self.val = (self.val + 1) & 0x7F
        if self.host:
            self.buf.fill(self.val)
        else:
            _fill_kernel[(-(-self.n // 1024),)](self.buf, self.n, self.val, BLOCK=1024,
                                                device=runtime.info(self.dev)["name"])
            self.dev.synchronize()


@jit
def _fill_kernel(ptr, n, value, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(ptr + offs, tl.zeros([BLOCK], dtype=tl.int32) + value, mask=offs < n)


_flushers = {}


def _flusher(dev):
    f = _flushers.get(id(dev))
    if f is None:
        f = _flushers[id(dev)] = _Flusher(dev)
    return f


def _summarize(times_ms, quantiles, return_mode):
    import numpy as np
    t = np.asarray(times_ms, dtype=np.float64)
    if quantiles is not None:
        ret = [float(x) for x in np.quantile(t, list(quantiles))]
        return ret[0] if len(ret) == 1 else ret
    if return_mode == "all":
        return [float(x) for x in t]
    if return_mode not in ("min", "max", "mean", "median"):
        raise ValueError(f"return_mode must be min, max, mean, median or all, not {return_mode!r}")
    return float(getattr(np, return_mode)(t))


# What the last do_bench measured with: {"timer": "device" | "wall", "device":
# name, "runs": timed runs, "missing": launches whose device timestamps were
# not written (a simulated device), "why": why not the device timer}.
last_timer = {}
_warned_missing = set()

TIMER_NAMES = {"device": "device kernel timestamps (Level Zero)",
               "wall": "wall time (host clock around each call + synchronize)"}


def has_device_timer(dev):
    """Whether `dev` times kernels on its own clock (Level Zero kernel
    timestamps); False on the CPU target and OpenCL."""
    dev = dev if hasattr(dev, "synchronize") else runtime.get_device(dev)
    return hasattr(dev, "timing_begin") and runtime.info(dev).get("backend") == "level_zero"


def _device_timed(dev, fn):
    """Runs fn() in a device timing region: the region's timing dict."""
    dev.timing_begin()
    try:
        fn()
    finally:
        # An exception from fn goes on; the region is closed either way.
        t = dev.timing_end()
    return t


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean",
             device=None, flush=True, timer="auto"):
    """Times `fn()` in milliseconds (triton.testing.do_bench's contract).

    timer: "auto" (the device's kernel timestamps where it has them and fn
    launches kernels on it, else wall time), "device" or "wall". With the
    device timer a run's time is the sum of its kernels' device times;
    launches whose timestamps the device never wrote (NEO in AUB mode runs
    nothing) count 0 ms and are reported once with a warning.

    warmup / rep: milliseconds spent warming up / measuring, estimated from
    five first runs (at least 5 timed runs whatever `rep` says). With `flush` the caches are evicted before every timed
    run (that time is not counted, but it counts against `rep` on the CPU
    so a tiny kernel cannot make tuning take minutes). quantiles=(0.5, 0.2,
    0.8) returns [median, p20, p80]; otherwise `return_mode` ("mean",
    "median", "min", "max", "all") decides. grad_to_none: tensors whose
    .grad is cleared before each run, as in Triton."""
    dev = device if hasattr(device, "synchronize") else runtime.get_device(device)
    sync = dev.synchronize
    fl = _flusher(dev) if flush else None

    def clear_grads():
        if grad_to_none is not None:
            for x in grad_to_none:
                x.grad = None

    if timer not in ("auto", "device", "wall"):
        raise ValueError(f"timer must be 'auto', 'device' or 'wall', not {timer!r}")
    use_device, why = False, None
    if timer != "wall":
        use_device = has_device_timer(dev)
        why = None if use_device else f"{runtime.info(dev)['name']} has no device timer"
        if timer == "device" and not use_device:
            raise ValueError(f"do_bench(timer='device'): {why}")
    if use_device:
        probe = _device_timed(dev, fn)
        if not probe["kernels"]:
            # fn launched nothing on this device (another device's kernels,
            # host work): only the host clock sees it.
            why = f"fn launched no kernel on {runtime.info(dev)['name']}"
            if timer == "device":
                raise ValueError(f"do_bench(timer='device'): {why}")
            use_device = False
    else:
        fn()
    sync()
    t0 = time.perf_counter()
    for _ in range(5):
        if fl:
            fl()
        fn()
        sync()
    est_all = (time.perf_counter() - t0) * 1000 / 5      # with flushing
    t0 = time.perf_counter()
    fn()
    sync()
    est_fn = max((time.perf_counter() - t0) * 1000, 1e-4)
    n_warmup = max(1, int(warmup / est_fn))
    # The budget counts the flush too (see above), and is capped.
    # At least 5 timed runs, so that quantiles are more than one sample.
    n_repeat = max(5, min(int(rep / max(est_all, est_fn)), 10000))
    for _ in range(n_warmup):
        fn()
    sync()
    times = []
    missing = launched = 0
    for _ in range(n_repeat):
        clear_grads()
        if fl:
            fl()
        sync()
        if use_device:
            r = _device_timed(dev, fn)
            times.append(r["kernel_ns"] / 1e6)
            missing += r["missing"]
            launched += r["kernels"]
            continue
        t = time.perf_counter_ns()
        fn()
        sync()
        times.append((time.perf_counter_ns() - t) / 1e6)
    name = runtime.info(dev)["name"]
    global last_timer
    last_timer = {"timer": "device" if use_device else "wall", "device": name,
                  "runs": n_repeat, "missing": missing, "why": why}
    if missing and name not in _warned_missing:
        _warned_missing.add(name)
        warnings.warn(f"{name} wrote no kernel timestamp for {missing} of {launched} timed "
                      "launches (a simulated device such as NEO in AUB mode executes nothing): "
                      "they count as 0 ms", RuntimeWarning, stacklevel=2)
    return _summarize(times, quantiles, return_mode)


# ----------------------------------------------------------------- checking
def _to_numpy(x):
    import numpy as np
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, runtime.Tensor):
        return x.numpy()
    mod = type(x).__module__
    if mod.startswith("torch") and hasattr(x, "detach"):
        import torch
        t = x.detach().cpu()
        if t.dtype in (torch.bfloat16,) or str(t.dtype).startswith("torch.float8"):
            t = t.float()
        return t.numpy()
    a = np.asarray(x)
    if a.dtype.name == "bfloat16" or "float8" in a.dtype.name:
        a = a.astype(np.float32)
    return a


def assert_close(x, y, atol=None, rtol=None, err_msg=""):
    """Raises AssertionError unless |x - y| <= atol + rtol * |y| everywhere
    (NaN equal to NaN). Defaults as in Triton: atol=1e-2, rtol=0; either may
    be a function of x's dtype. Takes numpy arrays, torch tensors,
    zetile.Tensor and scalars."""
    import numpy as np
    xa, ya = _to_numpy(x), _to_numpy(y)
    if atol is None:
        atol = 1e-2
    if rtol is None:
        rtol = 0.0
    dt = getattr(x, "dtype", xa.dtype)
    atol = atol(dt) if callable(atol) else atol
    rtol = rtol(dt) if callable(rtol) else rtol
    xa = xa.astype(np.float64) if xa.dtype.kind in "fiub" and xa.dtype.kind != "b" else xa
    ya = ya.astype(np.float64) if ya.dtype.kind in "fiub" and ya.dtype.kind != "b" else ya
    if xa.size > 1 or ya.size > 1:
        np.testing.assert_allclose(xa, ya, atol=atol, rtol=rtol, equal_nan=True, err_msg=err_msg)
        return
    if not np.allclose(xa, ya, atol=atol, rtol=rtol, equal_nan=True):
        raise AssertionError(f"{err_msg} {xa} is not close to {ya} (atol={atol}, rtol={rtol})")


# ---------------------------------------------------------------- reporting
class Benchmark:
    """One benchmark of a perf_report (triton.testing.Benchmark's fields)."""

    def __init__(self, x_names, x_vals, line_arg, line_vals, line_names, plot_name, args=None,
                 xlabel="", ylabel="", x_log=False, y_log=False, styles=None, color=None):
        self.x_names = list(x_names)
        self.x_vals = list(x_vals)
        self.line_arg = line_arg
        self.line_vals = list(line_vals)
        self.line_names = list(line_names)
        self.plot_name = plot_name
        self.args = dict(args or {})
        self.xlabel = xlabel
        self.ylabel = ylabel
        self.x_log = x_log
        self.y_log = y_log
        self.styles = styles


class Table:
    """The rows a benchmark produced: a pandas DataFrame's to_string / to_csv
    without needing pandas (returned when pandas is not installed)."""

    def __init__(self, columns, rows):
        self.columns = list(columns)
        self.rows = [list(r) for r in rows]

    def __len__(self):
        return len(self.rows)

    def column(self, name):
        i = self.columns.index(name)
        return [r[i] for r in self.rows]

    def __getitem__(self, name):
        return self.column(name)

    @staticmethod
    def _fmt(v):
        if isinstance(v, float):
            return "nan" if math.isnan(v) else f"{v:.6g}"
        return str(v)

    def to_string(self, index=True):
        cells = [[""] * index + self.columns] + \
                [([str(i)] if index else []) + [self._fmt(v) for v in r]
                 for i, r in enumerate(self.rows)]
        w = [max(len(c[j]) for c in cells) for j in range(len(cells[0]))]
        return "\n".join("  ".join(c[j].rjust(w[j]) for j in range(len(c))) for c in cells)

    def to_csv(self, path, index=False):
        import csv
        with open(path, "w", newline="") as f:
            wr = csv.writer(f)
            wr.writerow(([""] if index else []) + self.columns)
            for i, r in enumerate(self.rows):
                wr.writerow(([i] if index else []) + r)

    def __str__(self):
        return self.to_string()


def _as_frame(columns, rows):
    try:
        import pandas as pd
    except ImportError:
        return Table(columns, rows)
    return pd.DataFrame(rows, columns=columns)


class Mark:
    """What @perf_report returns: call it like the function, or .run() it."""

    def __init__(self, fn, benchmarks):
        self.fn = fn
        self.benchmarks = benchmarks

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    def _run(self, bench, save_path, show_plots, print_data, diff_col=False, save_precision=6,
             **kwargs):
        columns = bench.x_names + bench.line_names + \
            [f"{n}-min" for n in bench.line_names] + [f"{n}-max" for n in bench.line_names]
        rows = []
        for x in bench.x_vals:
            if not isinstance(x, (list, tuple)):
                x = [x] * len(bench.x_names)
            if len(x) != len(bench.x_names):
                raise ValueError(f"x value {x} does not match x_names {bench.x_names}")
            x_args = dict(zip(bench.x_names, x))
            means, mins, maxs = [], [], []
            for y in bench.line_vals:
                ret = self.fn(**x_args, **{bench.line_arg: y}, **bench.args, **kwargs)
                try:
                    m, lo, hi = ret
                except TypeError:
                    m, lo, hi = ret, None, None
                means.append(m)
                mins.append(lo)
                maxs.append(hi)
            rows.append(list(x) + means + mins + maxs)
        table = _as_frame(columns, rows)
        name = bench.plot_name or "benchmark"
        if save_path or show_plots:
            from .tools import plot
            series = {n: ([r[bench.x_names.index(bench.x_names[0])] for r in rows],
                          [r[len(bench.x_names) + i] for r in rows],
                          [r[len(bench.x_names) + len(bench.line_names) + i] for r in rows],
                          [r[len(bench.x_names) + 2 * len(bench.line_names) + i] for r in rows])
                      for i, n in enumerate(bench.line_names)}
            if save_path:
                os.makedirs(save_path, exist_ok=True)
                ext = ".png" if plot.have_matplotlib() else ".svg"
                plot.line_plot(os.path.join(save_path, name + ext), series,
                               xlabel=bench.xlabel or bench.x_names[0], ylabel=bench.ylabel,
                               title=name, x_log=bench.x_log, y_log=bench.y_log,
                               styles=bench.styles)
                _table_subset(table, bench.x_names + bench.line_names).to_csv(
                    os.path.join(save_path, name + ".csv"), index=False)
            if show_plots:
                if plot.have_matplotlib():
                    import matplotlib.pyplot as plt
                    plot.line_plot(None, series, xlabel=bench.xlabel or bench.x_names[0],
                                   ylabel=bench.ylabel, title=name, x_log=bench.x_log,
                                   y_log=bench.y_log, styles=bench.styles)
                    plt.show()
                else:
                    print(f"zetile.testing: show_plots needs matplotlib (not installed); "
                          f"use save_path= to write an SVG", file=sys.stderr)
        if print_data:
            print(name + ":")
            print(_table_subset(table, bench.x_names + bench.line_names).to_string())
        return table

    def run(self, show_plots=False, print_data=False, save_path="", return_df=False, **kwargs):
        benches = self.benchmarks if isinstance(self.benchmarks, list) else [self.benchmarks]
        out = [self._run(b, save_path, show_plots, print_data, **kwargs) for b in benches]
        if return_df:
            return out if len(out) > 1 else out[0]
        return None


def _table_subset(table, cols):
    if isinstance(table, Table):
        idx = [table.columns.index(c) for c in cols]
        return Table(cols, [[r[i] for i in idx] for r in table.rows])
    return table[cols]


def perf_report(benchmarks):
    """Decorator: `fn(**x_args, line_arg=y, **args)` returns a time (or
    (mean, min, max)); `.run(print_data=True, save_path=...)` tabulates and
    plots it over every x and line value."""
    def wrap(fn):
        return Mark(fn, benchmarks)
    return wrap
