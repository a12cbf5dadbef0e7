"""Launch overhead on the CPU target (issue 16), peers in the same run.

    .venv/bin/python bench/launch.py [--reps 20000] [--rounds 7]

Rows, each the minimum (and median) over --rounds rounds of --reps calls,
the rounds of all rows interleaved so that a busy moment of the (shared)
machine hits every row alike:
  - zetile from Python: `add[(1,)](x, y, out, n, BLOCK=16)` with numpy
    arrays and with torch tensors (one program: the launch is nearly all of
    it): one array passed as all three (an in-place kernel's launch; the
    launcher reads an object passed twice once) and, the rows named
    "3 arrays"/"3 tensors", three distinct ones; and with 2 and 64 programs (the thread pool's hand-off); 64 programs
    of 1024 and of 16384 elements on all threads and on one
    (ZETILE_NUM_THREADS=1), whose difference is what the pool gains or
    costs on a kernel that does work;
  - torch.add on one-element tensors (a framework's cheapest eager op), the
    peer of the Python rows;
  - zetile from C (bench/launch_c.c, compiled here with cc): zt_launch of a
    kernel that does nothing, one program and 2 and 64, against calling the
    same function directly (the backend's own call).
Baselines run in child processes, each with the switch that restores the
path before a change: the one-program numpy launch with ZETILE_LAUNCH_C=0
(the Python launch path alone, as every launch ran before the C path); the
torch launch with ZETILE_LAUNCH_DLPACK_C=0 (tensors read through to_dlpack's
capsule instead of DLPack's C exchange table), with torch.add timed again in
that child. The 16384-element grid also runs with the pool forced
(ZETILE_NUM_THREADS set to the CPU count: every launch on the pool, the rule
before the pool was measured against the caller alone). The ratio column is
the row over torch.add (Python rows), over the 1-thread row (16384-element
rows), or the C launch minus the direct call (C rows). A machine whose
other processes keep its CPUs busy decides the pool rows:
`chrt -f 10 .venv/bin/python bench/launch.py` (as root) runs the bench ahead
of them, as on an idle machine.
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


def child_rows(args, cases, env):
    """Rows run in a child process with `env` added (the launcher and the CPU
    backend read these variables once): the path before a change, with its
    peer timed in the same child, interleaved. {case: (min, median)} in
    microseconds, or None."""
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--reps", str(args.reps),
                          "--rounds", str(args.rounds), "--child", *cases],
                         env=dict(os.environ, **env), capture_output=True, text=True)
    if out.returncode != 0:
        return None
    lines = out.stdout.strip().splitlines()[-len(cases):]
    return {c: tuple(float(v) for v in line.split()) for c, line in zip(cases, lines)}


def make_cases(np, torch):
    """name -> (launch, reps divisor)."""
    x = np.ones(16, np.float32)
    big = np.ones(64 * 16, np.float32)
    work = np.ones(64 * 1024, np.float32)
    heavy = np.ones(64 * 16384, np.float32)
    x2, x3 = np.ones(16, np.float32), np.zeros(16, np.float32)
    cases = {
        "zetile python, 1 program, numpy": (lambda: add[(1,)](x, x, x, 16, BLOCK=16), 1),
        "zetile python, 1 program, numpy, 3 arrays": (lambda: add[(1,)](x, x2, x3, 16, BLOCK=16), 1),
        "zetile python, 2 programs, numpy": (lambda: add[(2,)](x, x, x, 16, BLOCK=8), 1),
        "zetile python, 64 programs, numpy": (lambda: add[(64,)](big, big, big, 1024, BLOCK=16), 1),
        "64 programs x 1024, all threads": (lambda: add[(64,)](work, work, work, 65536, BLOCK=1024), 10),
        "64 programs x 1024, 1 thread": (lambda: add[(64,)](work, work, work, 65536, BLOCK=1024), 10),
        "64 programs x 16384, all threads": (
            lambda: add[(64,)](heavy, heavy, heavy, 64 * 16384, BLOCK=16384), 200),
        "64 programs x 16384, pool forced": (
            lambda: add[(64,)](heavy, heavy, heavy, 64 * 16384, BLOCK=16384), 200),
        "64 programs x 16384, 1 thread": (
            lambda: add[(64,)](heavy, heavy, heavy, 64 * 16384, BLOCK=16384), 200),
    }
    if torch is not None:
        t = torch.ones(16)
        one = torch.ones(1)
        t2, t3 = torch.ones(16), torch.zeros(16)
        cases["zetile python, 1 program, torch"] = (lambda: add[(1,)](t, t, t, 16, BLOCK=16), 1)
        cases["zetile python, 1 program, torch, 3 tensors"] = (
            lambda: add[(1,)](t, t2, t3, 16, BLOCK=16), 1)
        cases["torch.add, 1 element"] = (lambda: torch.add(one, one), 1)
    return cases


def time_cases(cases, args, names=None):
    names = names or list(cases)
    times = {k: [] for k in names}
    for k in names:
        for _ in range(100):  # compiles, registers the signature, warms up
            cases[k][0]()
    threads_env = os.environ.get("ZETILE_NUM_THREADS")
    for _ in range(args.rounds):
        for name in names:
            fn, div = cases[name]
            # The CPU backend reads ZETILE_NUM_THREADS at each launch; set,
            # it also sends every grid to the pool (the rule before the pool
            # was measured against the caller alone).
            if name.endswith("1 thread"):
                os.environ["ZETILE_NUM_THREADS"] = "1"
            elif name.endswith("pool forced"):
                os.environ["ZETILE_NUM_THREADS"] = str(os.cpu_count())
            reps = max(args.reps // div, 20)
            t0 = time.perf_counter()
            for _ in range(reps):
                fn()
            times[name].append((time.perf_counter() - t0) / reps * 1e6)
            if threads_env is None:
                os.environ.pop("ZETILE_NUM_THREADS", None)
            else:
                os.environ["ZETILE_NUM_THREADS"] = threads_env
    return times


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    ap.add_argument("--json", help="also write the rows here, microseconds (bench/run.py reads them)")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        torch = None
    zetile.set_device("cpu")
    cases = make_cases(np, torch)
    if args.child:
        times = time_cases(cases, args, args.child)
        for c in args.child:
            print(min(times[c]), statistics.median(times[c]))
        return
    times = time_cases(cases, args)
    rows = {k: [min(ts), statistics.median(ts)] for k, ts in times.items()}
    try:
        report(args, torch, times, rows)
    finally:
        if args.json:
            import json
            with open(args.json, "w") as f:
                json.dump({"load": os.getloadavg()[0], "rows_us": rows}, f, indent=1)


def report(args, torch, times, rows):
    peer = min(times["torch.add, 1 element"]) if torch is not None else None
    print(f"CPU target, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; min (median) of {args.rounds} rounds of "
          f"{args.reps} calls, microseconds per call")
    print(f"{'launch':<44}{'us':>16}{'x torch.add':>14}")
    heavy = [k for k in times if k.startswith("64 programs x 16384")]
    for name, ts in times.items():
        if name in heavy:
            continue
        ratio = f"{min(ts) / peer:>13.2f}x" if peer else f"{'-':>14}"
        print(f"{name:<44}{min(ts):>7.2f} ({statistics.median(ts):>5.2f}){ratio}")
    # Baselines: each in a child process with the switch that restores the
    # path before a change, its peer timed again in the same child.
    slow = child_rows(argparse.Namespace(reps=max(args.reps // 10, 100), rounds=args.rounds),
                      ["zetile python, 1 program, numpy"], {"ZETILE_LAUNCH_C": "0"})
    if slow is not None:
        lo, med = slow["zetile python, 1 program, numpy"]
        print(f"{'same, ZETILE_LAUNCH_C=0 (Python path)':<44}{lo:>7.2f} ({med:>5.2f})"
              f"{lo / peer if peer else float('nan'):>13.2f}x")
    if torch is not None:
        r = child_rows(args, ["zetile python, 1 program, torch", "torch.add, 1 element"],
                       {"ZETILE_LAUNCH_DLPACK_C": "0"})
        if r is not None:
            (lo, med), (plo, pmed) = r.values()
            print(f"{'torch via to_dlpack (before), own run':<44}{lo:>7.2f} ({med:>5.2f}){lo / plo:>13.2f}x")
            print(f"{'  torch.add in that run':<44}{plo:>7.2f} ({pmed:>5.2f}){1:>13.2f}x")
    one = times["64 programs x 16384, 1 thread"]
    print(f"{'64 x 16384 elements (pool vs 1 thread)':<44}{'us':>16}{'x 1 thread':>14}")
    for name in heavy:
        ts = times[name]
        print(f"{name:<44}{min(ts):>7.1f} ({statistics.median(ts):>6.1f}){min(ts) / min(one):>12.2f}x "
              f"(median {statistics.median(ts) / statistics.median(one):.2f}x)")
    c = c_launch_rows(args.reps)
    if c is None:
        print("zetile C launch: no C compiler or libzetile.so; skipped")
        return
    direct = c["direct"]
    rows.update({f"zt_launch from C, {g[4:]} program(s)": [c[g] / 1e3, c[g] / 1e3]
                 for g in ("grid1", "grid2", "grid64")})
    print(f"{'launch from C (zt_launch, empty kernel)':<44}{'us':>16}{'above direct':>14}")
    print(f"{'direct call of the kernel function':<44}{direct / 1e3:>7.3f}{'':>9}{'-':>14}")
    for g in ("grid1", "grid2", "grid64"):
        n = g[4:]
        print(f"{'zt_launch, ' + n + (' program' if n == '1' else ' programs'):<44}"
              f"{c[g] / 1e3:>7.3f}{'':>9}{(c[g] - direct) / 1e3:>13.3f}")


if __name__ == "__main__":
    main()
