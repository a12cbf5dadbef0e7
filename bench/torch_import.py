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
the median beside it, and the minimum CPU time (user + system) of the
whole child process, which the other processes on a shared host disturb
less than wall time. Also printed: the entry point's import and call, timed alone.
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

PROBE = ("import time; t=time.perf_counter(); import torch{extra}; "
         "print(time.perf_counter()-t); import sys; "
         "print(any(type(f).__name__ == '_Finder' for f in sys.meta_path))")


def once(env, extra=""):
    """(wall seconds of `import torch`, CPU seconds of the whole child, finder installed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run([sys.executable, "-c", PROBE.format(extra=extra)], env=env,
                       capture_output=True, text=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    t, finder = r.stdout.split()
    return float(t), cpu, finder == "True"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    from torch_plugin_util import entry_point_dir
    import pathlib
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="zt-torch-import-"))
    ep = entry_point_dir(tmp)
    # An installed zetile (the wheel, or scripts/setup.sh's editable install)
    # declares the entry point itself, so "without" would run the hook too.
    # importlib.metadata keeps the first distribution of a name on sys.path:
    # a dist-info named zetile with no entry points, first on PYTHONPATH,
    # hides the installed one's from torch's lookup (the lookup still runs).
    mask = tmp / "mask" / "zetile-0.0.dist-info"
    mask.mkdir(parents=True)
    (mask / "METADATA").write_text("Metadata-Version: 2.1\nName: zetile\nVersion: 0.0\n")
    base = dict(os.environ)
    base.pop("TORCH_DEVICE_BACKEND_AUTOLOAD", None)
    base.pop("ZETILE_INDUCTOR", None)
    base["PYTHONPATH"] = os.pathsep.join(p for p in (str(mask.parent), base.get("PYTHONPATH")) if p)
    # With the hook: exactly one entry point (the test dist-info's), the
    # installed one still hidden, so both rows differ only by that entry.
    with_hook = dict(base, PYTHONPATH=os.pathsep.join(filter(None, (str(ep), base["PYTHONPATH"]))))
    names = ("without hook", "with hook", "import torch; import zetile")
    wall = {k: [] for k in names}
    cpu = {k: [] for k in names}
    once(base)                                            # warm the file cache
    for _ in range(args.rounds):
        for k, env, extra in ((names[0], base, ""), (names[1], with_hook, ""),
                              (names[2], base, "; import zetile")):
            t, c, f = once(env, extra)
            assert f == (k == names[1]), f"{k}: zetile's finder installed: {f}"
            wall[k].append(t)
            cpu[k].append(c)
    print(f"import torch, {args.rounds} fresh processes each, interleaved (CPU host, shared)")
    print(f"{'':30s} {'wall min s':>10s} {'wall med s':>10s} {'CPU min s':>10s}")
    for k in names:
        print(f"{k:30s} {min(wall[k]):10.3f} {statistics.median(wall[k]):10.3f} "
              f"{min(cpu[k]):10.3f}")
    for k in names[1:]:
        print(f"ratio {k} / without hook: wall {min(wall[k]) / min(wall[names[0]]):.3f} (min), "
              f"{statistics.median(wall[k]) / statistics.median(wall[names[0]]):.3f} (median); "
              f"CPU {min(cpu[k]) / min(cpu[names[0]]):.3f} (min)")
    # What torch does for the entry point, timed alone in a fresh interpreter
    # that has imported torch without autoload: find it, import it, call it.
    probe = ("import time, torch, importlib.metadata as md; t = time.perf_counter(); "
             "eps = [e for e in md.entry_points(group='torch.backends') if e.name == 'zetile']; "
             "t1 = time.perf_counter(); eps[0].load()(); t2 = time.perf_counter(); "
             "print((t1 - t) * 1e3, (t2 - t1) * 1e3)")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                       env=dict(with_hook, TORCH_DEVICE_BACKEND_AUTOLOAD="0"))
    find_ms, load_ms = (float(x) for x in r.stdout.split())
    print(f"entry point lookup {find_ms:.2f} ms (torch does it with or without zetile), "
          f"hook import + call {load_ms:.2f} ms")


if __name__ == "__main__":
    main()
