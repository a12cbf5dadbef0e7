"""One Triton tutorial, run from a Triton source tree with `triton` resolved to
zetile: its kernels on the CPU target against the tutorial's own torch
reference at a small size, and every kernel specialization those launches
compiled, written out as tile IR for scripts/tutorials_compile.py to build
for the Xe targets (the launch arguments decide the specialization, as
Triton's launcher does). Run by scripts/tutorials.py, one process per
tutorial:

    python scripts/tutorials_cases.py --src $TRITON_SRC --tutorial 03 --out cases.json

The tutorial file is executed with its module-level demo, plots and
benchmarks left out (only imports, definitions and assignments that build
no tensors and launch nothing run). The tutorials' Intel paths are taken:
`triton.runtime.driver.active.get_current_target().backend` answers "xpu"
(so `is_xpu()` picks Intel's configs), and the host-side queries those paths
make of torch.xpu (EU count, memory) get fixed answers (SHIM below) because
this torch has no XPU device. Kernels are never edited.
"""
import argparse
import ast
import glob
import hashlib
import json
import os
import sys
import time
import traceback
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHIM = {"gpu_eu_count": 8, "total_memory": 16 << 30}

# Calls that make data or run things at module level: a top-level assignment
# whose value calls one of these (or a function of the module that launches
# a kernel) is the tutorial's demo, not a definition.
_DATA_CALLS = {"rand", "randn", "randint", "empty", "zeros", "ones", "full", "tensor", "eye",
               "matmul", "softmax", "asin", "arange", "randn_like", "empty_like", "diag"}


def _calls(node):
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            f = n.func
            if isinstance(f, ast.Name):
                yield f.id
            elif isinstance(f, ast.Attribute):
                yield f.attr


def _is_perf_report(fn):
    return any("perf_report" in ast.unparse(d) for d in fn.decorator_list)


def _launches(fn):
    """A plain function whose body launches a kernel (`k[grid](...)`)."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript)
               for n in ast.walk(fn))


def definitions(tree):
    """The statements of a tutorial that define things (see module doc)."""
    keep, launchers = [], set()
    for st in tree.body:
        if isinstance(st, (ast.Import, ast.ImportFrom, ast.ClassDef)):
            keep.append(st)
        elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if _is_perf_report(st):
                continue
            if _launches(st):
                launchers.add(st.name)
            keep.append(st)
        elif isinstance(st, (ast.Assign, ast.AnnAssign, ast.If, ast.Try)):
            names = set(_calls(st))
            if names & (_DATA_CALLS | launchers | {"print", "run", "benchmark"}):
                continue
            keep.append(st)
    return keep


def load_tutorial(path, name):
    """Executes a tutorial's definitions as module `name`; returns (module,
    [statements that raised, with the error])."""
    with open(path) as f:
        src = f.read()
    tree = ast.parse(src, path)
    mod = types.ModuleType(name)
    mod.__file__ = path
    sys.modules[name] = mod
    skipped = []
    for st in definitions(tree):
        code = compile(ast.Module(body=[st], type_ignores=[]), path, "exec")
        try:
            exec(code, mod.__dict__)
        except Exception as e:  # noqa: BLE001 - recorded: a definition zetile cannot take
            skipped.append(f"line {st.lineno}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
    return mod, skipped


def first_line(e):
    """The message line that says what went wrong (compiler errors put the
    source location first, then the message)."""
    text = str(e).strip()
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    for l in lines:
        if "error:" in l:
            return l[l.index("error:"):][:300]
    for l in lines:
        if not l.startswith(("at ", "File ", "^")) and not set(l) <= set("^ ~"):
            return l[:300]
    return type(e).__name__


# ----------------------------------------------------------------- recording
class Recorder:
    """Wraps JITFunction._compile_for: every specialization a launch compiles
    is kept as tile IR (built the way the launch builds it) with its launch
    options, under the case that is running."""

    def __init__(self):
        import zetile  # noqa: F401
        zj = sys.modules["zetile.jit"]   # zetile.jit the attribute is the decorator
        self.zj = zj
        self.specs = []
        self.case = None
        self.on_record = None   # called after each new spec (saves it before the compile runs)
        orig = zj.JITFunction._compile_for
        rec = self

        def compile_for(fn, device, key, arg_types, divisibility, constexprs, num_warps,
                        descriptors, xe=(None, None)):
            rec.record(fn, arg_types, divisibility, constexprs, num_warps, descriptors, xe)
            return orig(fn, device, key, arg_types, divisibility, constexprs, num_warps,
                        descriptors, xe)
        zj.JITFunction._compile_for = compile_for

    def record(self, fn, arg_types, div, constexprs, num_warps, descs, xe):
        s = {"case": self.case, "kernel": fn.__name__, "num_warps": num_warps or 0,
             "constexprs": {k: v for k, v in constexprs.items()
                            if isinstance(v, (int, float, bool, str)) or v is None},
             "signature": {k: (str(t) + (":16" if k in div else "")) for k, t in arg_types.items()}}
        grf, compat = xe
        try:
            s["igc_options"] = self.zj._grf_igc_options(grf)
            s["compat"] = compat
            s["tile_ir"] = fn.build_tile_ir(arg_types, constexprs, div, descs)
            s["src_file"] = fn.source.file
        except Exception as e:  # noqa: BLE001 - the front end refused it: same on every target
            s["front_end_error"] = f"{type(e).__name__}: {first_line(e)}"
        key = hashlib.sha256((s.get("tile_ir", "") + s.get("front_end_error", "") +
                              f"{num_warps}{s.get('igc_options')}").encode()).hexdigest()[:12]
        s["ir_key"] = key
        if not any(o["case"] == s["case"] and o["ir_key"] == key for o in self.specs):
            self.specs.append(s)
            if self.on_record:
                self.on_record()


# ----------------------------------------------------------------- checking
def close(got, ref, atol, rtol=0.0):
    """(ok, max abs error) of two tensors, compared in fp32."""
    import torch
    got, ref = got.float(), ref.float()
    if got.shape != ref.shape:
        return False, float("inf")
    err = (got - ref).abs()
    fin = torch.isfinite(ref)
    if not torch.equal(torch.isfinite(got), fin):
        return False, float("inf")
    err = err[fin]
    ok = bool((err <= atol + rtol * ref.abs()[fin]).all())
    return ok, float(err.max()) if err.numel() else 0.0


class Wrong(AssertionError):
    pass


def expect(got, ref, atol, rtol=0.0, what="output"):
    ok, err = close(got, ref, atol, rtol)
    if not ok:
        raise Wrong(f"{what}: max abs error {err:.3g} > atol {atol:g} (rtol {rtol:g})")
    return err


def only_configs(autotuned, pick):
    """Restricts an @autotune kernel to the configs `pick` selects (a
    tutorial's config list is for a GPU: compiling each one on 2 CPU cores
    would take the run's time); returns them."""
    chosen = [c for c in autotuned.configs if pick(c)] or autotuned.configs[:1]
    return chosen


def each_config(autotuned, configs, call):
    """Runs call() once per config with the autotuner holding that config
    alone (no tuning: the launch takes it); yields (label, call result)."""
    saved = autotuned.configs
    try:
        for c in configs:
            autotuned.configs = [c]
            autotuned.cache.clear()
            yield short(c), call
    finally:
        autotuned.configs = saved


def short(c):
    kw = ",".join(f"{k.replace('BLOCK_SIZE_', 'B').replace('BLOCK_', 'B').replace('GROUP_SIZE_', 'G')}{v}"
                  for k, v in c.kwargs.items() if k != "grf_mode")
    return kw + (f",w{c.num_warps}" if c.num_warps else "")


# ----------------------------------------------------------------- main
def run(src, tutorial, quick=False, save=None, device="cpu", skip=()):
    import torch
    import zt_triton_alias  # noqa: F401 - `triton` is zetile from here on
    import zetile
    import zetile.driver as zdrv
    import intel_bench_drivers
    from tutorials_drivers import DRIVERS
    DRIVERS = dict(DRIVERS, **intel_bench_drivers.DRIVERS)
    # "opencl:cpu" (the e5 column): the pvc SPIR-V runs on Intel's OpenCL CPU
    # runtime, which takes the same torch CPU tensors.
    zetile.set_device(device)
    if device != "cpu":
        # The driver names "xpu" for a non-CPU zetile device, but this torch
        # has none: opencl:cpu runs on host memory, so the tutorials' DEVICE
        # (and their asserts on it) must be torch's CPU.
        zdrv.active.get_active_torch_device = lambda: torch.device("cpu")
    torch.manual_seed(0)
    # The Intel path of each tutorial (see the module doc).
    cpu_target = zdrv.active.get_current_target

    def xpu_target():
        t = cpu_target()
        # Intel's backend gives arch as a dict (09's is_xpu_cri reads arch['arch']).
        return zdrv.GPUTarget("xpu", {"arch": "pvc"}, 16)
    zdrv.active.get_current_target = xpu_target
    if hasattr(torch, "xpu"):
        props = types.SimpleNamespace(name="no XPU (tutorials runner)", **SHIM)
        torch.xpu.get_device_properties = lambda *a, **k: props
        torch.xpu.empty_cache = lambda: None
        torch.xpu.synchronize = lambda *a, **k: None
    if tutorial in intel_bench_drivers.FILES:
        # Intel's benchmark kernels (intel_bench_drivers.py): its tree only.
        bench_dir = os.path.join(src, "benchmarks", "triton_kernels_benchmark")
        intel_bench_drivers.harness_stub(bench_dir)
        if hasattr(torch, "xpu"):
            torch.xpu.current_device = lambda: 0
            torch.xpu.get_device_name = lambda *a, **k: "no XPU (tutorials runner)"
            torch.xpu.get_device_capability = lambda *a, **k: dict(intel_bench_drivers.XPU_CAPABILITY)
        rel = os.path.join("benchmarks", "triton_kernels_benchmark", intel_bench_drivers.FILES[tutorial])
        files = [p for p in [os.path.join(src, rel)] if os.path.exists(p)]
        if not files:
            return {"tutorial": tutorial, "error": f"no {rel} in {src} (Intel's tree has it)"}
    else:
        files = sorted(glob.glob(os.path.join(src, "python", "tutorials", f"{tutorial}-*.py")))
        if not files:
            return {"tutorial": tutorial, "error": f"no python/tutorials/{tutorial}-*.py in {src}"}
    path = files[0]
    rec = Recorder()
    t0 = time.time()
    mod, skipped = load_tutorial(path, "tutorial_" + tutorial.replace("-", "_"))
    name = tutorial if tutorial in intel_bench_drivers.FILES else os.path.basename(path)[:-3]
    out = {"tutorial": name, "file": path, "device": device,
           "skipped_definitions": skipped,
           "load_s": round(time.time() - t0, 1), "cases": [], "specs": rec.specs}
    if save:
        rec.on_record = lambda: save(out)
    driver = DRIVERS.get(tutorial)
    if driver is None:
        out["error"] = f"no driver for tutorial {tutorial}"
        return out
    for case, fn in driver(mod, quick):
        if case in skip:   # done (or timed out) in an earlier process: see tutorials.run_cases_e5
            continue
        rec.case = case
        t = time.time()
        # Written before the call: a case that kills the process (a crash in
        # a kernel) is reported as such from this file.
        r = {"case": case, "status": "crash", "message": "the process died in this case",
             "started": t}
        out["cases"].append(r)
        if save:
            save(out)
        try:
            note = fn()
            r["status"], r["message"] = "ok", ""
            if note:
                r["note"] = str(note)
        except Wrong as e:
            r["status"], r["message"] = "wrong", str(e)
        except (zetile.CompilationError, getattr(zetile, "UnsupportedError", ())) as e:
            r["status"], r["message"] = "refused", first_line(e)
            r["kernel"] = getattr(e, "kernel_name", None) or getattr(e, "name", None)
        except Exception as e:  # noqa: BLE001 - the table says what failed and how
            r["status"], r["message"] = "error", f"{type(e).__name__}: {first_line(e)}"
            r["trace"] = traceback.format_exc()[-1500:]
        r["seconds"] = round(time.time() - t, 1)
        if save:
            save(out)
        print(f"  {out['tutorial']} {case}: {r['status']} {r.get('message', '')}", file=sys.stderr,
              flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", default=os.environ.get("TRITON_SRC"))
    ap.add_argument("--tutorial", required=True, help="number prefix: 01 .. 09, 03a")
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true", help="fewer cases (the pytest uses it)")
    ap.add_argument("--device", default="cpu", help="zetile device the kernels run on (opencl:cpu: E5)")
    ap.add_argument("--skip", default="", help="case names to leave out, separated by '\\n'")
    a = ap.parse_args()
    sys.path[:0] = [os.path.join(ROOT, "scripts", "triton_suite"), os.path.join(ROOT, "scripts"),
                    os.path.join(ROOT, "python-bindings")]
    def save(res):
        with open(a.out + ".tmp", "w") as f:
            json.dump(res, f, indent=1, default=str)
        os.replace(a.out + ".tmp", a.out)
    save(run(a.src, a.tutorial, a.quick, save, a.device, set(filter(None, a.skip.split("\n")))))


if __name__ == "__main__":
    main()
