"""`import torch` with zetile's torch.compile hook against without it, in
fresh interpreters, interleaved in the same run.

    .venv/bin/python bench/torch_import.py [--rounds 9]

"with hook": a torch.backends entry point for zetile (what the installed
wheel declares) is on the path, so `import torch` calls
_zetile_torch_hook.autoload(). "without": the same interpreter and
environment, no entry point. A third row, `import torch; import zetile`,
shows what a hook inside the zetile package would have cost (importing the
package is what the hook avoids). Each figure is the minimum over --rounds
fresh processes (the machine is shared: the minimum is the least disturbed),
the median beside it. Also printed: the hook call itself, timed in-process.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

PROBE = ("import time; t=time.perf_counter(); import torch{extra}; "
         "print(time.perf_counter()-t); import sys; "
         "print(any(type(f).__name__ == '_Finder' for f in sys.meta_path))")


def once(env, extra=""):
    r = subprocess.run([sys.executable, "-c", PROBE.format(extra=extra)], env=env,
                       capture_output=True, text=True, check=True)
    t, finder = r.stdout.split()
    return float(t), finder == "True"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    from torch_plugin_util import entry_point_dir
    import pathlib
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="zt-torch-import-"))
    ep = entry_point_dir(tmp)
    base = dict(os.environ)
    base.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)
    base.pop("ZETILE_INDUCTOR", None)
    base["PYTHONPATH"] = os.pathsep.join(p for p in (base.get("PYTHONPATH"),) if p)
    with_hook = dict(base, PYTHONPATH=os.pathsep.join(filter(None, (str(ep), base["PYTHONPATH"]))))
    rows = {"without hook": [], "with hook": [], "import torch; import zetile": []}
    once(base)                                            # warm the file cache
    for _ in range(args.rounds):
        t, f = once(base)
        assert not f, "a zetile hook ran without the entry point"
        rows["without hook"].append(t)
        t, f = once(with_hook)
        assert f, "the entry point did not install zetile's finder"
        rows["with hook"].append(t)
        rows["import torch; import zetile"].append(once(base, "; import zetile")[0])
    print(f"import torch, {args.rounds} fresh processes each, interleaved (CPU host, shared)")
    print(f"{'':30s} {'min s':>8s} {'median s':>9s}")
    for k, v in rows.items():
        print(f"{k:30s} {min(v):8.3f} {statistics.median(v):9.3f}")
    base_min = min(rows["without hook"])
    base_med = statistics.median(rows["without hook"])
    print(f"ratio with/without hook: {min(rows['with hook']) / base_min:.3f} (min), "
          f"{statistics.median(rows['with hook']) / base_med:.3f} (median)")
    print(f"ratio torch+zetile/without: {min(rows['import torch; import zetile']) / base_min:.3f} "
          "(min)")
    sys.path.insert(0, os.path.join(ROOT, "python-bindings"))
    import _zetile_torch_hook as hook
    t0 = time.perf_counter()
    hook.autoload()
    print(f"the hook call itself: {(time.perf_counter() - t0) * 1e6:.0f} us")


if __name__ == "__main__":
    main()
