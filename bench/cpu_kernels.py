"""The tutorial kernels on zetile's CPU target against numpy and torch (CPU)
on the same inputs, in the same run, plus host launch overhead.

    .venv/bin/python bench/cpu_kernels.py [--reps 20]

CPU timings of the CPU target (what zetile runs without an Intel GPU);
they say nothing about GPU speed.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
import zetile  # noqa: E402
from layer_norm import layer_norm  # noqa: E402
from softmax import softmax  # noqa: E402
from vector_add import add, add_kernel  # noqa: E402


def timed(fn, reps):
    fn()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    zetile.set_device("cpu")
    try:
        import torch
    except ImportError:
        torch = None
    rng = np.random.default_rng(0)
    rows = []
    n = 4_000_037
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.empty_like(x)
    tx, ty = (torch.from_numpy(x), torch.from_numpy(y)) if torch else (None, None)
    rows.append(("vector add", f"{n}", timed(lambda: add(x, y, out), args.reps),
                 timed(lambda: np.add(x, y, out=out), args.reps),
                 timed(lambda: torch.add(tx, ty), args.reps) if torch else None))
    xs = rng.standard_normal((4096, 781), dtype=np.float32)
    outs = np.empty_like(xs)
    txs = torch.from_numpy(xs) if torch else None

    def np_softmax():
        e = np.exp(xs - xs.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    rows.append(("fused softmax", "4096x781", timed(lambda: softmax(xs, outs), args.reps),
                 timed(np_softmax, args.reps),
                 timed(lambda: torch.softmax(txs, dim=1), args.reps) if torch else None))
    M, N = 2048, 1531
    xl = rng.standard_normal((M, N), dtype=np.float32)
    w, b = rng.standard_normal(N, dtype=np.float32), rng.standard_normal(N, dtype=np.float32)
    yl, mean, rstd = np.empty_like(xl), np.empty(M, np.float32), np.empty(M, np.float32)
    txl, tw, tb = (torch.from_numpy(xl), torch.from_numpy(w), torch.from_numpy(b)) if torch else (None,) * 3

    def np_ln():
        m = xl.mean(axis=1, keepdims=True)
        return (xl - m) / np.sqrt(((xl - m) ** 2).mean(axis=1, keepdims=True) + 1e-5) * w + b
    rows.append(("layer norm fwd", f"{M}x{N}", timed(lambda: layer_norm(xl, w, b, yl, mean, rstd), args.reps),
                 timed(np_ln, args.reps),
                 timed(lambda: torch.nn.functional.layer_norm(txl, (N,), tw, tb), args.reps)
                 if torch else None))
    print(f"{'kernel':<16}{'shape':<12}{'zetile cpu':>12}{'numpy':>10}{'torch':>10}"
          f"{'numpy/zetile':>14}{'torch/zetile':>14}")
    for name, shape, z, npy, tt in rows:
        tcol = f"{tt * 1e3:>8.2f}ms" if tt else f"{'-':>10}"
        tratio = f"{tt / z:>13.2f}x" if tt else f"{'-':>14}"
        print(f"{name:<16}{shape:<12}{z * 1e3:>10.2f}ms{npy * 1e3:>8.2f}ms{tcol}{npy / z:>13.2f}x{tratio}")
    tiny = np.zeros(16, np.float32)
    t = timed(lambda: add_kernel[(1,)](tiny, tiny, tiny, 16, BLOCK_SIZE=16), 5000)
    print(f"host launch overhead, 1 program, 4 arguments: {t * 1e6:.1f} us "
          "(Triton 3.6 on an H100 host: 21 us, from ../shared/DESIGN.md)")


if __name__ == "__main__":
    main()
