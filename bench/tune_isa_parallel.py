"""`zetile tune --isa-only` (issue 15): the same configs compiled for a GPU
target with --jobs 1 (one after another) and --jobs N (N threads: zetile's
compiler releases the GIL, ocloc and iga64 are processes of their own), each
run a fresh process with a fresh kernel cache, the two orders alternating.
Prints the time the configs took (the figure in the command's header:
start-up and template load excluded) and the whole command's wall time, the
speed-ups, and the machine's ceiling measured in
the same rounds: N processes spinning in Python at once against the same
work one after another (on a machine busy with other work, neither side
gets N cores, and no speed-up can pass that ceiling).

    .venv/bin/python bench/tune_isa_parallel.py [--jobs 2] [--reps 3] [--target pvc]

These are CPU timings of the compilers on this machine, not GPU timings.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPACE = "BLOCK_M=32|64;BLOCK_N=32|64;BLOCK_K=32|64;GROUP_M=8"
SPIN = "s = 0\nfor i in range(6_000_000): s += i\n"


def tune(jobs, target):
    cache = tempfile.mkdtemp(prefix="zt-isa-bench-")
    env = dict(os.environ, ZETILE_CACHE_DIR=cache, ZETILE_AUTOTUNE_DB="off")
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "zetile", "tune", "gemm", "--shape",
                        "1024x1024x1024", "--dtype", "bf16", "--target", target, "--isa-only",
                        "--space", SPACE, "--jobs", str(jobs)],
                       env=env, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t
    shutil.rmtree(cache, ignore_errors=True)
    if r.returncode != 0:
        raise SystemExit(r.stdout + r.stderr)
    # The header says how long the configs took (the process's start-up and
    # the template's load are outside); the table below it must not change.
    head, _, table = r.stdout.partition("\n")
    m = re.search(r"configs compiled in ([0-9.]+)s", head)
    return wall, float(m.group(1)), table


def ceiling(n):
    """Wall time of n spinning processes one after another / all at once."""
    def run(parallel):
        t = time.perf_counter()
        if parallel:
            ps = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(n)]
            for p in ps:
                p.wait()
        else:
            for _ in range(n):
                subprocess.run([sys.executable, "-c", SPIN], check=True)
        return time.perf_counter() - t
    return run(False) / run(True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--target", default="pvc")
    a = ap.parse_args()
    walls = {1: [], a.jobs: []}
    comp = {1: [], a.jobs: []}
    ceil = []
    for rep in range(a.reps):
        order = (1, a.jobs) if rep % 2 == 0 else (a.jobs, 1)
        outs = {}
        for j in order:
            w, c, outs[j] = tune(j, a.target)
            walls[j].append(w)
            comp[j].append(c)
        if outs[1] != outs[a.jobs]:
            raise SystemExit("the threads' statistics differ from the serial ones")
        ceil.append(ceiling(a.jobs))
        with open("/proc/loadavg") as f:
            load = f.read().split()[0]
        print(f"round {rep + 1}: configs compiled in {comp[1][-1]:.1f} s (--jobs 1) / "
              f"{comp[a.jobs][-1]:.1f} s (--jobs {a.jobs}) = {comp[1][-1] / comp[a.jobs][-1]:.2f}x; "
              f"whole command {walls[1][-1]:.1f} / {walls[a.jobs][-1]:.1f} s; "
              f"machine ceiling {ceil[-1]:.2f}x; load {load}", flush=True)
    med = {k: statistics.median(v) for k, v in comp.items()}
    wm = {k: statistics.median(v) for k, v in walls.items()}
    print(f"median: configs compiled in {med[1]:.1f} s / {med[a.jobs]:.1f} s = "
          f"{med[1] / med[a.jobs]:.2f}x; whole command {wm[1]:.1f} / {wm[a.jobs]:.1f} s = "
          f"{wm[1] / wm[a.jobs]:.2f}x (ceiling {statistics.median(ceil):.2f}x on "
          f"{os.cpu_count()} cores); the threads' tables equal the serial ones")


if __name__ == "__main__":
    main()
