"""Launch overhead on the CPU target (issue 16), peers in the same run.

    .venv/bin/python bench/launch.py [--reps 20000] [--rounds 7]

Rows, each the minimum (and median) over --rounds rounds of --reps calls,
the rounds of all rows interleaved so that a busy moment of the (shared)
machine hits every row alike:
  - zetile from Python: `add[(1,)](x, y, out, n, BLOCK=16)` with numpy
    arrays and with torch tensors (one program: the launch is nearly all of
    it), and with 2 and 64 programs (the thread pool's hand-off); 64 programs
    of 1024 elements on all threads and on one (ZETILE_NUM_THREADS=1), whose
    difference is what the pool gains or costs on a kernel that does work;
  - torch.add on one-element tensors (a framework's cheapest eager op), the
    peer of the Python rows;
  - zetile from C (bench/launch_c.c, compiled here with cc): zt_launch of a
    kernel that does nothing, one program and 2 and 64, against calling the
    same function directly (the backend's own call).
A last Python row runs the one-program numpy launch in a child process
with ZETILE_LAUNCH_C=0: the Python launch path alone, as every launch ran
before the C path. The ratio column is the row over torch.add (Python rows)
or the C launch minus the direct call (C rows).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import zetile  # noqa: E402
import zetile.language as tl  # noqa: E402


@zetile.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    tl.store(out_ptr + o, tl.load(x_ptr + o, mask=m) + tl.load(y_ptr + o, mask=m), mask=m)


def c_launch_rows(reps):
    """bench/launch_c.c's figures (ns per call), or None without a C compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    pkg = os.path.dirname(zetile.__file__)
    if not cc or not os.path.exists(os.path.join(pkg, "libzetile.so")):
        return None
    with tempfile.TemporaryDirectory() as d:
        exe = os.path.join(d, "launch_c")
        subprocess.run([cc, "-O2", "-std=c11", "-I", os.path.join(ROOT, "include"), "-I",
                        os.path.join(ROOT, "runtime"), os.path.join(ROOT, "bench", "launch_c.c"),
                        "-L", pkg, "-lzetile", f"-Wl,-rpath,{pkg}", "-o", exe], check=True)
        out = subprocess.run([exe, str(reps * 5)], check=True, capture_output=True, text=True)
    return {k: float(v) for k, v in (line.split() for line in out.stdout.splitlines())}


def slow_path_row(args):
    """The one-program numpy launch with the C launch path off, in a child
    process (the launcher reads ZETILE_LAUNCH_C once): the Python path that
    every launch took before, as the baseline."""
    env = dict(os.environ, ZETILE_LAUNCH_C="0")
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--slow-child",
                          "--reps", str(max(args.reps // 10, 100)), "--rounds", str(args.rounds)],
                         env=env, capture_output=True, text=True)
    return float(out.stdout.split()[-1]) if out.returncode == 0 else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--slow-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.slow_child:
        zetile.set_device("cpu")
        x = np.ones(16, np.float32)
        for _ in range(100):
            add[(1,)](x, x, x, 16, BLOCK=16)
        ts = []
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            for _ in range(args.reps):
                add[(1,)](x, x, x, 16, BLOCK=16)
            ts.append((time.perf_counter() - t0) / args.reps * 1e6)
        print(min(ts))
        return
    try:
        import torch
    except ImportError:
        torch = None
    zetile.set_device("cpu")
    x = np.ones(16, np.float32)
    big = np.ones(64 * 16, np.float32)
    work = np.ones(64 * 1024, np.float32)
    cases = {
        "zetile python, 1 program, numpy": lambda: add[(1,)](x, x, x, 16, BLOCK=16),
        "zetile python, 2 programs, numpy": lambda: add[(2,)](x, x, x, 16, BLOCK=8),
        "zetile python, 64 programs, numpy": lambda: add[(64,)](big, big, big, 1024, BLOCK=16),
        "64 programs x 1024, all threads": lambda: add[(64,)](work, work, work, 65536, BLOCK=1024),
        "64 programs x 1024, 1 thread": lambda: add[(64,)](work, work, work, 65536, BLOCK=1024),
    }
    if torch is not None:
        t = torch.ones(16)
        one = torch.ones(1)
        cases["zetile python, 1 program, torch"] = lambda: add[(1,)](t, t, t, 16, BLOCK=16)
        cases["torch.add, 1 element"] = lambda: torch.add(one, one)
    times = {k: [] for k in cases}
    for fn in cases.values():
        for _ in range(100):  # compiles, registers the signature, warms up
            fn()
    threads_env = os.environ.get("ZETILE_NUM_THREADS")
    for _ in range(args.rounds):
        for name, fn in cases.items():
            # The CPU backend reads ZETILE_NUM_THREADS at each launch.
            if name.endswith("1 thread"):
                os.environ["ZETILE_NUM_THREADS"] = "1"
            reps = args.reps // 10 if name.startswith("64 programs x") else args.reps
            t0 = time.perf_counter()
            for _ in range(reps):
                fn()
            times[name].append((time.perf_counter() - t0) / reps * 1e6)
            if threads_env is None:
                os.environ.pop("ZETILE_NUM_THREADS", None)
            else:
                os.environ["ZETILE_NUM_THREADS"] = threads_env
    peer = min(times["torch.add, 1 element"]) if torch is not None else None
    print(f"CPU target, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; min (median) of {args.rounds} rounds of "
          f"{args.reps} calls, microseconds per call")
    print(f"{'launch':<38}{'us':>16}{'x torch.add':>14}")
    for name, ts in times.items():
        ratio = f"{min(ts) / peer:>13.2f}x" if peer else f"{'-':>14}"
        print(f"{name:<38}{min(ts):>7.2f} ({statistics.median(ts):>5.2f}){ratio}")
    slow = slow_path_row(args)
    if slow is not None:
        print(f"{'same, ZETILE_LAUNCH_C=0 (Python path)':<38}{slow:>7.2f}{'':>9}"
              f"{slow / peer if peer else float('nan'):>13.2f}x")
    c = c_launch_rows(args.reps)
    if c is None:
        print("zetile C launch: no C compiler or libzetile.so; skipped")
        return
    direct = c["direct"]
    print(f"{'launch from C (zt_launch, empty kernel)':<38}{'us':>16}{'above direct':>14}")
    print(f"{'direct call of the kernel function':<38}{direct / 1e3:>7.3f}{'':>9}{'-':>14}")
    for g in ("grid1", "grid2", "grid64"):
        n = g[4:]
        print(f"{'zt_launch, ' + n + (' program' if n == '1' else ' programs'):<38}"
              f"{c[g] / 1e3:>7.3f}{'':>9}{(c[g] - direct) / 1e3:>13.3f}")


if __name__ == "__main__":
    main()
