"""Every benchmark against its peer, one command (issue 16).

    .venv/bin/python bench/run.py [--quick] [--only cpu,launch,warm,compile] [--threads 1]
                                  [--plot docs/perf_cpu.svg]

Runs, one after another, each in a child process of its own (so that one
bench's threads and caches do not disturb the next):

  cpu      bench/cpu_kernels.py   CPU-target kernels vs torch and numpy (same inputs)
  launch   bench/launch.py        launch overhead: zetile Python and C vs torch.add
  warm     bench/warm_start.py    warm start, N cached kernels ready in a new process
  compile  bench/compile_latency.py  cold/warm compile vs Triton (PyPI) for CUDA sm_90

Each child prints its own table, every figure beside its peer and their ratio
measured in the same run; those tables are passed through, and the CPU kernels
(which the child also writes as JSON) are gathered into the summary table at
the end. The load average is printed before and after each bench: the timings
are CPU timings on a shared machine (`chrt -f 10` as root runs ahead of the
other load). Nothing here measures a GPU. --plot FILE draws the CPU kernels'
ratios and the launch figures (bench/plot.py; matplotlib where installed) and
keeps the run's figures beside it as FILE's name with .json.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")


def load():
    return f"{os.getloadavg()[0]:.1f}"


def run(name, argv, timeout):
    print(f"\n=== {name}: {' '.join(os.path.relpath(a, ROOT) if a.startswith(ROOT) else a for a in argv)}"
          f" (load {load()})", flush=True)
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable] + argv, cwd=ROOT, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"--- {name}: past {timeout} s, stopped")
        return False
    out = p.stdout.rstrip()
    if out:
        print(out)
    if p.returncode:
        tail = "\n".join(p.stderr.strip().splitlines()[-5:])
        print(f"--- {name}: exit {p.returncode}\n{tail}")
    print(f"--- {name}: {time.perf_counter() - t0:.0f} s, load {load()}", flush=True)
    return p.returncode == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="cpu,launch,warm,compile")
    ap.add_argument("--threads", type=int, default=1, help="CPU kernels' threads (0: defaults)")
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke run)")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per bench")
    ap.add_argument("--plot", help="draw the CPU and launch figures here (.svg or .png)")
    args = ap.parse_args()
    want = [w.strip() for w in args.only.split(",") if w.strip()]
    unknown = set(want) - {"cpu", "launch", "warm", "compile"}
    if unknown:
        ap.error(f"unknown bench {', '.join(sorted(unknown))}")
    print(f"bench/run.py: {os.cpu_count()} CPUs, load {load()}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    cpu_rows = launch_rows = None
    when, load0 = time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()), load()
    with tempfile.TemporaryDirectory() as tmp:
        if "cpu" in want:
            js = os.path.join(tmp, "cpu.json")
            argv = [os.path.join(BENCH, "cpu_kernels.py"), "--json", js]
            if args.threads:
                argv += ["--threads", str(args.threads)]
            if args.quick:
                argv += ["--reps", "2", "--rounds", "2"]
            if run("cpu", argv, args.timeout) and os.path.exists(js):
                with open(js) as f:
                    cpu_rows = json.load(f)
        if "launch" in want:
            js = os.path.join(tmp, "launch.json")
            argv = [os.path.join(BENCH, "launch.py"), "--json", js]
            if args.quick:
                argv += ["--reps", "2000", "--rounds", "2"]
            run("launch", argv, args.timeout)
            if os.path.exists(js):
                with open(js) as f:
                    launch_rows = json.load(f)
        if "warm" in want:
            argv = [os.path.join(BENCH, "warm_start.py")]
            if args.quick:
                argv += ["--kernels", "5", "--reps", "1", "--rounds", "2"]
            run("warm", argv, args.timeout)
        if "compile" in want:
            run("compile", [os.path.join(BENCH, "compile_latency.py")], args.timeout)
    if cpu_rows:
        print(f"\n=== summary: CPU target, {cpu_rows['threads']} thread(s); min times; "
              "above 1: zetile faster")
        print(f"{'kernel':<18}{'shape':<11}{'zetile ms':>10}{'torch ms':>10}{'numpy ms':>10}"
              f"{'torch/zetile':>14}{'numpy/zetile':>14}")
        for r in cpu_rows["rows"]:
            z, t, n = r["zetile_s"], r["torch_s"], r["numpy_s"]
            tc = f"{t * 1e3:>10.2f}" if t else f"{'-':>10}"
            tr = f"{t / z:>14.2f}" if t else f"{'-':>14}"
            print(f"{r['kernel']:<18}{r['shape']:<11}{z * 1e3:>10.2f}{tc}{n * 1e3:>10.2f}{tr}"
                  f"{n / z:>14.2f}")
    if args.plot:
        sys.path.insert(0, BENCH)
        import plot
        data = {"when": when, "cpus": os.cpu_count(), "load": f"{load0}-{load()}",
                "cpu": cpu_rows, "launch": launch_rows,
                "json": os.path.splitext(args.plot)[0] + ".json"}
        with open(data["json"], "w") as f:
            json.dump(data, f, indent=1)
        print(f"\n=== plot: figures kept in {data['json']}")
        plot.plot(data, args.plot)


if __name__ == "__main__":
    main()
