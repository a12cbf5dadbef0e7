"""The CPU thread pool against one thread (issue 16), launch by launch.

    .venv/bin/python bench/cpu_pool.py [BLOCK] [LAUNCHES]
    chrt -f 10 .venv/bin/python bench/cpu_pool.py ...   # as root: ahead of the machine's other load

A vector add of 64 programs of BLOCK elements (default 16384), launched
LAUNCHES times (default 300) in each of three ways, the three interleaved
launch by launch so that the machine's load hits them alike:
ZETILE_NUM_THREADS=1 (the caller alone), ZETILE_NUM_THREADS=<CPUs> (every
launch on the pool, the rule before the pool was measured against the
caller) and unset (automatic: the pool while it is measured faster).
Prints min/median/p90 microseconds per launch and the load average.
"""
import os
import statistics
import sys
import time

import numpy as np

import zetile
import zetile.language as tl


@zetile.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    tl.store(out_ptr + o, tl.load(x_ptr + o, mask=m) + tl.load(y_ptr + o, mask=m), mask=m)


zetile.set_device("cpu")
B = int(sys.argv[1]) if len(sys.argv) > 1 else 16384
N = int(sys.argv[2]) if len(sys.argv) > 2 else 300
w = np.ones(64 * B, np.float32)


def f():
    add[(64,)](w, w, w, 64 * B, BLOCK=B)



modes = {"1 thread": "1", "pool forced": str(os.cpu_count()), "automatic": None}
for _ in range(20):
    f()
ts = {m: [] for m in modes}
for i in range(N):
    for m, v in modes.items():
        if v is None:
            os.environ.pop("ZETILE_NUM_THREADS", None)
        else:
            os.environ["ZETILE_NUM_THREADS"] = v
        t0 = time.perf_counter()
        f()
        ts[m].append((time.perf_counter() - t0) * 1e6)
os.environ.pop("ZETILE_NUM_THREADS", None)
print(f"64 programs x {B}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, "
      f"{N} launches each; min/median/p90 us:")
for m, v in ts.items():
    print(f"  {m:<12}{min(v):>9.1f}{statistics.median(v):>9.1f}{sorted(v)[len(v) * 9 // 10]:>9.1f}")
