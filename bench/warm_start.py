"""Warm start on the CPU target: a new process whose cache already holds N
kernels, launching each once. CPU artifacts carry machine code for the host
("obj"), linked with ORC at load; before, every new process ran LLVM -O3 and
code generation again on the artifact's LLVM text. Both are measured here in
the same run (ZETILE_CPU_OBJECT=0 compiles artifacts without machine code,
into a cache of their own), and the ratio printed.

    .venv/bin/python bench/warm_start.py [--kernels 50] [--reps 3]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

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
    print(f"{t2 - t1:.4f} {t2 - t0:.4f}")
""")


def run(n, cache, env_extra):
    env = dict(os.environ, ZETILE_CACHE_DIR=cache, ZETILE_DEVICE="cpu", **env_extra)
    env["PYTHONPATH"] = os.path.join(ROOT, "python-bindings") + os.pathsep + env.get("PYTHONPATH", "")
    # The kernel is read from its file, always the same one: its path is in
    # the kernel's source locations, hence in the cache key.
    script = os.path.join(cache, "warm_child.py")
    if not os.path.exists(script):
        with open(script, "w") as f:
            f.write(CHILD)
    r = subprocess.run([sys.executable, script, str(n)], env=env, capture_output=True,
                       text=True)
    if r.returncode:
        raise SystemExit(r.stdout + r.stderr)
    launches, total = map(float, r.stdout.split())
    return launches, total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", type=int, default=50)
    ap.add_argument("--reps", type=int, default=3)
    a = ap.parse_args()
    results = {}
    for label, extra in (("machine code in the artifact", {}),
                         ("LLVM text re-optimized at load", {"ZETILE_CPU_OBJECT": "0"})):
        with tempfile.TemporaryDirectory() as cache:
            cold = run(a.kernels, cache, extra)  # fills the cache
            warm = [run(a.kernels, cache, extra) for _ in range(a.reps)]
        results[label] = warm
        med = statistics.median(w[0] for w in warm)
        print(f"{label:32s} cold {cold[0]:6.2f} s   warm: {a.kernels} kernels ready and launched "
              f"in {med:6.3f} s (median of {a.reps}; whole process {statistics.median(w[1] for w in warm):.3f} s)")
    new, old = (statistics.median(w[0] for w in results[k]) for k in results)
    print(f"warm start ratio (object / LLVM text, same run): {new / old:.3f}")


if __name__ == "__main__":
    main()
