"""Running CPU kernels leaves no files behind: MLIR's ExecutionEngine always
attaches LLVM's perf JIT listener, which writes jit-<pid>.dump under
$JITDUMPDIR/.debug/jit (/tmp/.debug/jit here) unless zetile redirects it."""
import glob
import os

from zt_testutil import run_python

CODE = """
    import os, numpy as np, zetile
    from vector_add import add
    zetile.set_device("cpu")
    x = np.ones(100, np.float32)
    out = np.zeros_like(x)
    add(x, x, out, BLOCK_SIZE=64)
    assert (out == 2).all()
    print("PID", os.getpid())
"""


def _dumps_of(r):
    assert r.returncode == 0, r.stdout + r.stderr
    pid = [l.split()[1] for l in r.stdout.splitlines() if l.startswith("PID")][0]
    return [p for root in ("/tmp", os.path.expanduser("~"))
            for p in glob.glob(os.path.join(root, ".debug", "jit", "*", f"jit-{pid}.dump"))]


def test_cpu_jit_writes_no_jitdump_files(tmp_path):
    env = {"ZETILE_CACHE_DIR": str(tmp_path / "cache")}
    assert _dumps_of(run_python(CODE, env=env)) == []


def test_jitdump_kept_on_request(tmp_path):
    # The check above can fail: with ZETILE_JITDUMP=1 the listener's file stays.
    env = {"ZETILE_CACHE_DIR": str(tmp_path / "cache"), "ZETILE_JITDUMP": "1",
           "JITDUMPDIR": str(tmp_path)}
    r = run_python(CODE, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    pid = [l.split()[1] for l in r.stdout.splitlines() if l.startswith("PID")][0]
    assert glob.glob(os.path.join(str(tmp_path), ".debug", "jit", "*", f"jit-{pid}.dump"))
