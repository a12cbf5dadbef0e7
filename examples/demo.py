"""zetile demo: Triton's tutorial kernels (vector add, fused softmax, layer
norm) compiled and run on the best device present, checked against numpy,
with compile and launch timings; then the same kernels compiled for Intel
GPUs (pvc) to show what zetile hands the driver.

    scripts/demo.sh                 (sets up, then runs this)
    ZETILE_DEVICE=cpu python examples/demo.py
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zetile  # noqa: E402
from layer_norm import _layer_norm_fwd_fused, layer_norm  # noqa: E402
from softmax import softmax, softmax_kernel  # noqa: E402
from vector_add import add, add_kernel  # noqa: E402


def timed(fn, reps=20):
    fn()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps


def main():
    dev = zetile.get_device()
    info = dev.info
    print(f"zetile {zetile.__version__} on {info['name']} ({info['description']}, target {info['target']})")
    if info["backend"] == "cpu":
        print("  no Intel GPU found: running on the CPU target (set ZETILE_DEVICE to choose)")
    rng = np.random.default_rng(0)
    rows = []

    # Vector add.
    n = 1_000_003
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    out = np.zeros_like(x)
    t0 = time.perf_counter()
    add(x, y, out)
    first = time.perf_counter() - t0
    err = float(np.abs(out - (x + y)).max())
    t_run = timed(lambda: add(x, y, out))
    t_np = timed(lambda: np.add(x, y, out=out))
    rows.append(("vector add", f"n={n}", err, first, t_run, t_np))

    # Fused softmax.
    xs = rng.standard_normal((4096, 781), dtype=np.float32)
    outs = np.zeros_like(xs)
    t0 = time.perf_counter()
    softmax(xs, outs)
    first = time.perf_counter() - t0
    ref = np.exp(xs - xs.max(axis=1, keepdims=True))
    ref /= ref.sum(axis=1, keepdims=True)
    err = float(np.abs(outs - ref).max())

    def np_softmax():
        e = np.exp(xs - xs.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    rows.append(("fused softmax", "4096x781", err, first, timed(lambda: softmax(xs, outs)),
                 timed(np_softmax)))

    # Layer norm.
    M, N = 2048, 1531
    xl = rng.standard_normal((M, N), dtype=np.float32)
    w = rng.standard_normal(N, dtype=np.float32)
    b = rng.standard_normal(N, dtype=np.float32)
    yl = np.zeros_like(xl)
    mean = np.zeros(M, np.float32)
    rstd = np.zeros(M, np.float32)
    t0 = time.perf_counter()
    layer_norm(xl, w, b, yl, mean, rstd)
    first = time.perf_counter() - t0
    mu = xl.mean(axis=1, keepdims=True)
    rs = 1 / np.sqrt(((xl - mu) ** 2).mean(axis=1, keepdims=True) + 1e-5)
    err = float(np.abs(yl - ((xl - mu) * rs * w + b)).max())

    def np_ln():
        m = xl.mean(axis=1, keepdims=True)
        r = 1 / np.sqrt(((xl - m) ** 2).mean(axis=1, keepdims=True) + 1e-5)
        return (xl - m) * r * w + b
    rows.append(("layer norm fwd", f"{M}x{N}", err, first,
                 timed(lambda: layer_norm(xl, w, b, yl, mean, rstd)), timed(np_ln)))

    print(f"\n{'kernel':<16}{'shape':<12}{'max |err|':>11}{'first call':>12}{'per call':>11}"
          f"{'numpy':>11}{'numpy/zetile':>14}")
    for name, shape, err, first, t, tn in rows:
        print(f"{name:<16}{shape:<12}{err:>11.2e}{first * 1e3:>10.1f}ms{t * 1e3:>9.3f}ms"
              f"{tn * 1e3:>9.3f}ms{tn / t:>13.2f}x")
    print("  first call = specialize + tile IR + compile (or on-disk cache hit) + load + run")
    s = zetile.cache_stats()
    print(f"  cache {zetile.cache_dir()}: {s['compiles']} compiled, {s['hits']} reused from disk")

    # Launch overhead of an empty-ish launch.
    tiny = np.zeros(16, np.float32)
    t = timed(lambda: add_kernel[(1,)](tiny, tiny, tiny, 16, BLOCK_SIZE=16), reps=2000)
    print(f"  host launch overhead (1 program, 4 args): {t * 1e6:.1f} us")

    # The same kernels for Intel GPUs: SPIR-V for pvc, built by Intel's compiler if installed.
    print("\nFor Intel GPUs (no GPU needed to compile):")
    sigs = {
        "add_kernel": (add_kernel, "*fp32,*fp32,*fp32,i32", {"BLOCK_SIZE": 1024}),
        "softmax_kernel": (softmax_kernel, "*fp32,*fp32,i32,i32,i32,i32", {"BLOCK_SIZE": 1024}),
        "_layer_norm_fwd_fused": (_layer_norm_fwd_fused, "*fp32,*fp32,*fp32,*fp32,*fp32,*fp32,i32,i32,fp32",
                                  {"BLOCK_SIZE": 1024}),
    }
    for name, (k, sig, consts) in sigs.items():
        t0 = time.perf_counter()
        try:
            ck = zetile.compile(k, signature=sig, constexprs=consts, target="pvc", cached=False)
        except zetile.Error as e:
            print(f"  {name:<24} pvc: not yet: {str(e).splitlines()[0]}")
            continue
        dt = time.perf_counter() - t0
        spv = ck.asm["spirv"]
        val = ""
        if shutil.which("spirv-val"):
            with tempfile.NamedTemporaryFile(suffix=".spv") as f:
                f.write(spv)
                f.flush()
                ok = subprocess.run(["spirv-val", f.name], capture_output=True).returncode == 0
            val = "spirv-val ok" if ok else "spirv-val FAILED"
        print(f"  {name:<24} pvc SPIR-V {len(spv):>6} bytes in {dt * 1e3:6.1f} ms  {val}")


if __name__ == "__main__":
    main()
