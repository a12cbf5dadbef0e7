"""The on-disk cache across processes: a second process compiles nothing."""
import os

from zt_testutil import run_python

CODE = """
import numpy as np, zetile
from vector_add import add
zetile.set_device("cpu")
x = np.arange(1000, dtype=np.float32)
out = np.zeros_like(x)
add(x, x, out, BLOCK_SIZE=256)
assert (out == 2 * x).all()
s = zetile.cache_stats()
print("STATS", s["compiles"], s["hits"], s["misses"])
"""


def _stats(r):
    assert r.returncode == 0, r.stdout + r.stderr
    line = [l for l in r.stdout.splitlines() if l.startswith("STATS")][-1]
    return [int(v) for v in line.split()[1:]]


def test_second_process_reuses_compiled_kernels(tmp_path):
    env = {"ZETILE_CACHE_DIR": str(tmp_path)}
    compiles, hits, misses = _stats(run_python(CODE, env))
    assert compiles == 1 and misses == 1
    compiles, hits, misses = _stats(run_python(CODE, env))
    assert compiles == 0 and hits == 1


def test_corrupt_entry_is_rebuilt(tmp_path):
    env = {"ZETILE_CACHE_DIR": str(tmp_path)}
    _stats(run_python(CODE, env))
    damaged = 0
    for root, _, files in os.walk(tmp_path):
        for f in files:
            p = os.path.join(root, f)
            data = open(p, "rb").read()
            open(p, "wb").write(data[: len(data) // 2])  # truncate every entry
            damaged += 1
    assert damaged
    compiles, hits, misses = _stats(run_python(CODE, env))
    assert compiles == 1  # rebuilt, not crashed
    compiles, hits, misses = _stats(run_python(CODE, env))
    assert compiles == 0
