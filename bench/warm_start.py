"""Warm start on the CPU target: new processes whose cache already holds the
kernels (issue 16: first launch <= 30 ms over `python -c pass`, 50 cached
kernels ready <= 100 ms).

Part 1, first launch: from spawning a process to the end of its first launch
of one cached kernel (numpy arrays), against `python -c pass` (spawn to
exit), the same process without zetile (numpy imported, arrays made: what
zetile adds is the difference) and torch's first eager ops on the same data (spawn to their end), all
interleaved in the same run, min and median of --rounds. zetile twice: its
own object loader (the default) and ZETILE_CPU_LOADER=orc (libzetile_compiler
dlopened to link the object with ORC, as before). The child's own split
(numpy import, zetile import, first launch) is printed too.

Part 2, N cached kernels: N specializations launched once each in a new
process, the time from the first launch to the last (in the child); own
loader, ORC, the front end run for every kernel (ZETILE_SOURCE_CACHE=0: the
Tile IR not read by source, as before source_cache.py), and with --llvm-text
the LLVM text re-optimized at load (ZETILE_CPU_OBJECT=0: artifacts without
machine code, 4+ s).

Bytecode: this environment may set PYTHONDONTWRITEBYTECODE=1; one run first
writes the .pyc files (without that variable) so that every measured process
imports as an installed package does.

    .venv/bin/python bench/warm_start.py [--kernels 50] [--reps 3] [--rounds 7] [--llvm-text]
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# N specializations of a small fused kernel (different constexprs: one
# compile each), launched once each; prints the seconds to run them all.
CHILD = textwrap.dedent("""
    import sys, time
    t0 = time.perf_counter()
    import numpy as np
    import zetile
    import zetile.language as tl

    @zetile.jit
    def k(x, y, n, A: tl.constexpr, B: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        v = tl.load(x + offs, mask=m)
        r = tl.exp(v * A) + tl.sqrt(tl.abs(v) + B)
        tl.store(y + offs, r / (1.0 + tl.sum(r, axis=0)), mask=m)

    n = int(sys.argv[1])
    x = np.linspace(-1, 1, 1000).astype(np.float32)
    y = np.zeros_like(x)
    t1 = time.perf_counter()
    for i in range(n):
        k[(8,)](x, y, 1000, A=i % 7 + 1, B=i // 7 + 1, BLOCK=128)
    t2 = time.perf_counter()
    maps = open("/proc/self/maps").read()
    print(f"{t2 - t1:.4f} {t2 - t0:.4f} {int('libzetile_compiler' in maps)}")
""")

# One cached kernel's first launch; prints CLOCK_MONOTONIC at its end (the
# parent took it before spawning) and the child's own split.
FIRST = textwrap.dedent("""
    import time
    t0 = time.monotonic()
    import numpy as np
    t1 = time.monotonic()
    import zetile
    import zetile.language as tl
    t2 = time.monotonic()

    @zetile.jit
    def k(x, y, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        v = tl.load(x + offs, mask=m)
        r = tl.exp(v * 3.0) + tl.sqrt(tl.abs(v) + 1.0)
        tl.store(y + offs, r / (1.0 + tl.sum(r, axis=0)), mask=m)

    x = np.linspace(-1, 1, 1000).astype(np.float32)
    y = np.zeros_like(x)
    t3 = time.monotonic()
    k[(8,)](x, y, 1000, BLOCK=128)
    t4 = time.monotonic()
    maps = open("/proc/self/maps").read()
    print(t4, t1 - t0, t2 - t1, t4 - t3, int("libzetile_compiler" in maps))
""")

# What the user's side of FIRST costs without zetile: numpy and the arrays.
NUMPY = textwrap.dedent("""
    import time
    import numpy as np
    x = np.linspace(-1, 1, 1000).astype(np.float32)
    y = np.zeros_like(x)
    print(time.monotonic())
""")

# torch's peer: the same arithmetic as eager ops on the same data.
TORCH = textwrap.dedent("""
    import time
    import torch
    x = torch.linspace(-1, 1, 1000)
    r = torch.exp(x * 3.0) + torch.sqrt(x.abs() + 1.0)
    y = r / (1.0 + r.sum())
    print(time.monotonic())
""")


def child_env(cache, extra):
    env = dict(os.environ, ZETILE_CACHE_DIR=cache, ZETILE_DEVICE="cpu", **extra)
    env["PYTHONPATH"] = os.path.join(ROOT, "python-bindings") + os.pathsep + env.get("PYTHONPATH", "")
    return env


def script(cache, name, text):
    # Kernels are read from their file, always the same one: its path is in
    # the kernel's source locations, hence in the cache key.
    path = os.path.join(cache, name)
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write(text)
    return path


def run(n, cache, env_extra):
    r = subprocess.run([sys.executable, script(cache, "warm_child.py", CHILD), str(n)],
                       env=child_env(cache, env_extra), capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(r.stdout + r.stderr)
    launches, total, mapped = r.stdout.split()
    return float(launches), float(total), mapped == "1"


def spawn_to_end(argv, env):
    """Seconds from spawning argv to the CLOCK_MONOTONIC it prints first (or
    to its exit when it prints nothing), the whole process's CPU time (user +
    system: what other load on the machine disturbs least), and its other
    output."""
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    r = subprocess.run(argv, env=env, capture_output=True, text=True)
    t1 = time.monotonic()
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode:
        raise SystemExit(r.stdout + r.stderr)
    out = r.stdout.split()
    cpu = ru1.ru_utime - ru0.ru_utime + ru1.ru_stime - ru0.ru_stime
    return (float(out[0]) - t0 if out else t1 - t0), cpu, out[1:]


def fmt(xs):
    return f"{min(xs) * 1e3:7.1f} {statistics.median(xs) * 1e3:7.1f}"


def first_launch(cache, rounds):
    first = script(cache, "warm_first.py", FIRST)
    torch_py = script(cache, "warm_torch.py", TORCH)
    numpy_py = script(cache, "warm_numpy.py", NUMPY)
    envs = {"own": child_env(cache, {}), "orc": child_env(cache, {"ZETILE_CPU_LOADER": "orc"})}
    # Fill the cache (and write .pyc files), then check both loaders load.
    for label, env in envs.items():
        wenv = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
        _, _, rest = spawn_to_end([sys.executable, first], wenv)
    try:
        import torch  # noqa: F401 - only whether it is installed
        have_torch = True
    except ImportError:
        have_torch = False
    labels = ("python -c pass", "numpy + arrays, no zetile", "zetile own loader",
              "zetile ORC (before)", "torch eager ops")
    rows = {k: [] for k in labels}
    cpu = {k: [] for k in labels}
    split = {"own": [], "orc": []}

    def one(label, argv, env):
        t, c, rest = spawn_to_end(argv, env)
        rows[label].append(t)
        cpu[label].append(c)
        return rest

    for _ in range(rounds):
        one("python -c pass", [sys.executable, "-c", "pass"], envs["own"])
        one("numpy + arrays, no zetile", [sys.executable, numpy_py], envs["own"])
        for label, key in (("zetile own loader", "own"), ("zetile ORC (before)", "orc")):
            split[key].append([float(v) for v in one(label, [sys.executable, first], envs[key])])
        if have_torch:
            one("torch eager ops", [sys.executable, torch_py], envs["own"])
    base, cbase = min(rows["python -c pass"]), min(cpu["python -c pass"])
    print(f"first launch of a cached kernel in a new process, {rounds} rounds interleaved; "
          f"wall: spawn to the end of the first launch, CPU: the whole process (ms)")
    print(f"  {'':24s}{'wall min':>9s} {'median':>7s}  {'over pass':>9s}   "
          f"{'CPU min':>7s} {'median':>7s}  {'over pass':>9s}")
    for label in labels:
        xs, cs = rows[label], cpu[label]
        if not xs:
            print(f"  {label:24s}  (torch not installed)")
            continue
        over = "" if label == "python -c pass" else f"+{(min(xs) - base) * 1e3:.1f}"
        cover = "" if label == "python -c pass" else f"+{(min(cs) - cbase) * 1e3:.1f}"
        print(f"  {label:24s} {fmt(xs)}  {over:>9s}   {fmt(cs)}  {cover:>9s}")
    nbase = min(rows["numpy + arrays, no zetile"])
    print(f"  zetile's own share (min over the numpy + arrays row): own loader "
          f"+{(min(rows['zetile own loader']) - nbase) * 1e3:.1f} ms, ORC "
          f"+{(min(rows['zetile ORC (before)']) - nbase) * 1e3:.1f} ms")
    for key in ("own", "orc"):
        s = split[key]
        med = [statistics.median(v[i] for v in s) * 1e3 for i in range(3)]
        mapped = {int(v[3]) for v in s}
        print(f"  split, {key:4s} (median ms): import numpy {med[0]:.1f}, import zetile "
              f"{med[1]:.1f}, first launch {med[2]:.1f}; libzetile_compiler mapped: "
              f"{'yes' if mapped == {1} else 'no' if mapped == {0} else 'sometimes'}")
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", type=int, default=50)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--llvm-text", action="store_true",
                    help="also the LLVM text re-optimized at load (4+ s a run)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        first_launch(cache, a.rounds)
    results = {}
    configs = [("own object loader", {}, None),
               ("ORC in libzetile_compiler", {"ZETILE_CPU_LOADER": "orc"}, "same"),
               ("front end each time", {"ZETILE_SOURCE_CACHE": "0"}, "same")]
    if a.llvm_text:
        configs.append(("LLVM text re-optimized", {"ZETILE_CPU_OBJECT": "0"}, None))
    print(f"\n{a.kernels} cached kernels, each launched once in a new process "
          f"(s from the first launch to the last, median of {a.reps})")
    with tempfile.TemporaryDirectory() as shared:
        for label, extra, cache_of in configs:
            with tempfile.TemporaryDirectory() as own_cache:
                cache = shared if cache_of == "same" or not extra else own_cache
                if cache_of != "same":
                    cold = run(a.kernels, cache, extra)  # fills the cache
                warm = [run(a.kernels, cache, extra) for _ in range(a.reps)]
            results[label] = warm
            med = statistics.median(w[0] for w in warm)
            mapped = "yes" if all(w[2] for w in warm) else "no" if not any(w[2] for w in warm) else "?"
            cold_s = f"cold {cold[0]:6.2f} s, " if cache_of != "same" else ""
            print(f"  {label:28s} {cold_s}warm {med:6.3f} s (min {min(w[0] for w in warm):.3f}; "
                  f"whole process {statistics.median(w[1] for w in warm):.3f} s); "
                  f"compiler mapped: {mapped}")
    meds = {k: statistics.median(w[0] for w in v) for k, v in results.items()}
    own = meds["own object loader"]
    for k, v in meds.items():
        if k != "own object loader":
            print(f"  {k} / own loader (same run): {v / own:.2f}x")


if __name__ == "__main__":
    main()
