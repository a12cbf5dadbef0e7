"""Running CPU kernels leaves no files behind (LLVM's perf JIT listener
writes a jitdump per engine unless zetile redirects and removes it)."""
import os

from zt_testutil import run_python


def test_cpu_jit_writes_no_jitdump_files(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    r = run_python("""
        import numpy as np, zetile
        from vector_add import add
        zetile.set_device("cpu")
        x = np.ones(100, np.float32)
        out = np.zeros_like(x)
        add(x, x, out, BLOCK_SIZE=64)
        assert (out == 2).all()
        print("OK")
    """, env={"HOME": str(home), "ZETILE_CACHE_DIR": str(tmp_path / "cache")})
    assert r.returncode == 0 and "OK" in r.stdout, r.stdout + r.stderr
    left = [os.path.join(d, f) for d, _, fs in os.walk(home) for f in fs]
    assert not left, left
