"""What compiling in zetile-compile-worker (the default compile-time budget,
docs/RELIABILITY.md) costs against compiling in process
(ZETILE_COMPILE_TIMEOUT=0):
  - warm: cache-missing compiles in a process that has compiled before,
    alternating worker / in process (pairs);
  - first: a fresh process's first and second compile, and the memory of
    the caller and of its worker.
    .venv/bin/python bench/compile_worker.py [--pairs 10] [--processes 6]
"""
import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

KERNEL = '''
import random, time, os, sys
t0 = time.perf_counter()
import zetile, zetile.language as tl

@zetile.jit
def scale(x_ptr, y_ptr, n, SALT: tl.constexpr, B: tl.constexpr):
    o = tl.arange(0, B)
    m = o < n
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=m) * SALT, mask=m)

SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}

def miss(target="cpu"):
    t = time.perf_counter()
    zetile.compile(scale, signature=SIG, constexprs={"SALT": random.random() + 2, "B": 64},
                   target=target)
    return (time.perf_counter() - t) * 1e3

def worker_rss_mb():
    for p in os.listdir("/proc"):
        try:
            st = open(f"/proc/{p}/stat").read()
            if st.rsplit(")", 1)[1].split()[1] == str(os.getpid()) and "zetile-compile" in st:
                return int(open(f"/proc/{p}/statm").read().split()[1]) * 4096 / 2**20
        except (OSError, IndexError):
            pass
    return 0.0
'''

FIRST = KERNEL + '''
a, b = miss(), miss()
self_mb = int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
print(a, b, worker_rss_mb(), self_mb)
'''

WARM = KERNEL + '''
target, pairs = sys.argv[1], int(sys.argv[2])
os.environ["ZETILE_COMPILE_TIMEOUT"] = "0"
miss(target)
os.environ["ZETILE_COMPILE_TIMEOUT"] = "600"
miss(target)          # both ways warm: compiler loaded here, a worker running
res = {"worker": [], "in process": []}
for i in range(pairs):
    for mode in (("worker", "in process") if i % 2 == 0 else ("in process", "worker")):
        os.environ["ZETILE_COMPILE_TIMEOUT"] = "600" if mode == "worker" else "0"
        res[mode].append(miss(target))
for mode, v in res.items():
    print(f"  warm {target}, {mode}: median {statistics.median(v):.1f} ms "
          f"(min {min(v):.1f}, max {max(v):.1f}, n={len(v)})")
'''


def run(code, args=(), env_extra=None):
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(code)
    env = dict(os.environ)
    env.pop("ZETILE_COMPILE_TIMEOUT", None)
    env.update(env_extra or {})
    try:
        return subprocess.run([sys.executable, f.name, *args], env=env, capture_output=True,
                              text=True, check=True).stdout
    finally:
        os.unlink(f.name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=10)
    ap.add_argument("--processes", type=int, default=6)
    a = ap.parse_args()
    cache = tempfile.mkdtemp(prefix="zt-bench-worker-")
    env = {"ZETILE_CACHE_DIR": cache}
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores")
    for target in ("cpu", "pvc"):
        print(run("import statistics\n" + WARM, (target, str(a.pairs)), env), end="")
    res = {"default (worker)": [], "ZETILE_COMPILE_TIMEOUT=0": []}
    for i in range(a.processes):
        order = list(res) if i % 2 == 0 else list(reversed(res))
        for mode in order:
            extra = dict(env)
            if mode != "default (worker)":
                extra["ZETILE_COMPILE_TIMEOUT"] = "0"
            res[mode].append([float(x) for x in run(FIRST, (), extra).split()])
    for mode, rows in res.items():
        c = [statistics.median(col) for col in zip(*rows)]
        print(f"  new process, {mode}: first compile {c[0]:.0f} ms, second {c[1]:.0f} ms, "
              f"caller {c[3]:.0f} MB, worker {c[2]:.0f} MB (medians of {len(rows)})")


if __name__ == "__main__":
    main()
