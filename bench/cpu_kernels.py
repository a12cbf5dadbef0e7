"""The tutorial kernels on zetile's CPU target against numpy and torch (CPU)
on the same inputs, in the same run, plus host launch overhead.

    .venv/bin/python bench/cpu_kernels.py [--reps 20] [--threads 1]

--threads N sets ZETILE_NUM_THREADS, torch.set_num_threads and numpy's BLAS
threads (OPENBLAS_NUM_THREADS, for np.matmul) to N; without it each library
uses its own default. Each figure is the minimum over --rounds rounds of --reps calls (the
machine is shared: the minimum is the least disturbed), the median beside it.
--interleave times zetile and torch round by round in turn and adds the
median of the per-round torch/zetile ratios ("paired"): on a loaded machine
the two minima can come from different moments, the paired ratio cannot.
With more than one thread each round starts after a pause (--settle, 50 ms):
torch's OpenMP (libgomp) threads spin for a while after each torch call, and
the second core they hold is the one zetile's next round needs (2 threads,
chrt -f 10: zetile's layer norm 2.41 ms right after torch, 2.00 ms after the
pause; torch's own times did not move).
CPU timings of the CPU target (what zetile runs without an Intel GPU); they
say nothing about GPU speed.
"""
import argparse
import os
import statistics
import sys
import time

# --threads N also limits numpy's BLAS (np.matmul) before numpy loads it:
# otherwise OpenBLAS runs its matmuls on every core and its threads keep
# spinning after each call, into the next row's zetile timing.
for _i, _a in enumerate(sys.argv):
    if _a.startswith("--threads"):
        _n = _a.split("=", 1)[1] if "=" in _a else sys.argv[_i + 1]
        if int(_n):
            os.environ.setdefault("OPENBLAS_NUM_THREADS", _n)
            os.environ.setdefault("OMP_NUM_THREADS", _n)

import numpy as np  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))


# The clock: wall time, or with --cpu-time the process's CPU time (time spent
# waiting for a CPU that other processes hold is not counted, so on a loaded
# machine it is much steadier; it sums every thread's time, so it measures
# speed only with --threads 1).
clock = time.perf_counter
# Seconds to wait before each timed round (set in main: --settle, only with
# threads other than 1): another library's threads may still spin on a core.
settle = 0.0


def timed(fn, reps, rounds):
    fn()
    per = []
    for _ in range(rounds):
        if settle:
            time.sleep(settle)
        t0 = clock()
        for _ in range(reps):
            fn()
        per.append((clock() - t0) / reps)
    return min(per), statistics.median(per)


def timed_pair(f, g, reps, rounds):
    """f and g (zetile, torch) timed round by round in turn: both see the same
    machine at nearly the same moment. Returns their (min, median) and the
    median over rounds of g's time / f's time."""
    f()
    g()
    pf, pg = [], []
    for _ in range(rounds):
        for fn, acc in ((f, pf), (g, pg)):
            if settle:
                time.sleep(settle)
            t0 = clock()
            for _ in range(reps):
                fn()
            acc.append((clock() - t0) / reps)
    return ((min(pf), statistics.median(pf)), (min(pg), statistics.median(pg)),
            statistics.median(b / a for a, b in zip(pf, pg)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--only", default="", help="comma-separated row names (prefixes)")
    ap.add_argument("--json", help="also write the rows here (bench/run.py reads them)")
    ap.add_argument("--interleave", action="store_true",
                    help="time zetile and torch round by round in turn and print the median of "
                    "the per-round torch/zetile ratios too (steadier on a loaded machine)")
    ap.add_argument("--cpu-time", action="store_true",
                    help="time by process CPU time instead of wall time (steadier on a loaded "
                    "machine; needs --threads 1: CPU time sums all threads)")
    ap.add_argument("--settle", type=float, default=None,
                    help="seconds to pause before each timed round (default 0.05 unless "
                    "--threads 1): lets torch's spinning OpenMP threads go idle first")
    args = ap.parse_args()
    global settle
    settle = args.settle if args.settle is not None else (0.0 if args.threads == 1 else 0.05)
    if args.cpu_time:
        if args.threads != 1:
            ap.error("--cpu-time needs --threads 1 (process CPU time sums every thread)")
        global clock
        clock = time.process_time
    if args.threads:
        os.environ["ZETILE_NUM_THREADS"] = str(args.threads)
    import zetile
    from layer_norm import layer_norm
    from matmul import matmul, matmul_descriptor
    from softmax import softmax
    from vector_add import add, add_kernel
    zetile.set_device("cpu")
    try:
        import torch
        if args.threads:
            torch.set_num_threads(args.threads)
    except ImportError:
        torch = None
    rng = np.random.default_rng(0)
    want = [w for w in args.only.split(",") if w]
    rows = []
    paired = {}  # row index -> median per-round torch/zetile (--interleave)

    def row(name, shape, z, npy, tt):
        if want and not any(name.startswith(w) for w in want):
            return
        t = lambda f: timed(f, args.reps, args.rounds)  # noqa: E731
        if args.interleave and tt:
            zz, ttt, med = timed_pair(z, tt, args.reps, args.rounds)
            paired[len(rows)] = med
            rows.append((name, shape, zz, t(npy), ttt))
            return
        rows.append((name, shape, t(z), t(npy), t(tt) if tt else None))

    n = 4_000_037
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    out = np.empty_like(x)
    tx, ty = (torch.from_numpy(x), torch.from_numpy(y)) if torch else (None, None)
    row("vector add", f"{n}", lambda: add(x, y, out), lambda: np.add(x, y, out=out),
        (lambda: torch.add(tx, ty)) if torch else None)
    for shape in ((4096, 781), (4096, 4096)):
        xs = rng.standard_normal(shape, dtype=np.float32)
        outs = np.empty_like(xs)
        txs = torch.from_numpy(xs) if torch else None

        def np_softmax(xs=xs):
            e = np.exp(xs - xs.max(axis=1, keepdims=True))
            return e / e.sum(axis=1, keepdims=True)
        row("fused softmax", "x".join(map(str, shape)), lambda xs=xs, outs=outs: softmax(xs, outs),
            np_softmax, (lambda txs=txs: torch.softmax(txs, dim=1)) if torch else None)
    M, N = 2048, 1531
    xl = rng.standard_normal((M, N), dtype=np.float32)
    w, b = rng.standard_normal(N, dtype=np.float32), rng.standard_normal(N, dtype=np.float32)
    yl, mean, rstd = np.empty_like(xl), np.empty(M, np.float32), np.empty(M, np.float32)
    txl, tw, tb = (torch.from_numpy(xl), torch.from_numpy(w), torch.from_numpy(b)) if torch else (None,) * 3

    def np_ln():
        m = xl.mean(axis=1, keepdims=True)
        return (xl - m) / np.sqrt(((xl - m) ** 2).mean(axis=1, keepdims=True) + 1e-5) * w + b
    row("layer norm fwd", f"{M}x{N}", lambda: layer_norm(xl, w, b, yl, mean, rstd), np_ln,
        (lambda: torch.nn.functional.layer_norm(txl, (N,), tw, tb)) if torch else None)
    for S in (512, 1024):
        a = rng.standard_normal((S, S), dtype=np.float32)
        bm = rng.standard_normal((S, S), dtype=np.float32)
        cm = np.empty((S, S), np.float32)
        ta, tbm = (torch.from_numpy(a), torch.from_numpy(bm)) if torch else (None, None)
        row("matmul fp32", f"{S}^3", lambda a=a, bm=bm, cm=cm: matmul(a, bm, cm),
            lambda a=a, bm=bm, cm=cm: np.matmul(a, bm, out=cm),
            (lambda ta=ta, tbm=tbm: torch.mm(ta, tbm)) if torch else None)
    # The tutorial kernel with the descriptor row's 64x64x32 tiles: pointer
    # tensors against descriptors at the same tile shape.
    S = 1024
    a = rng.standard_normal((S, S), dtype=np.float32)
    bm = rng.standard_normal((S, S), dtype=np.float32)
    cm = np.empty((S, S), np.float32)
    ta, tbm = (torch.from_numpy(a), torch.from_numpy(bm)) if torch else (None, None)
    row("matmul ptr 64x64", f"{S}^3", lambda: matmul(a, bm, cm, 64, 64, 32),
        lambda: np.matmul(a, bm, out=cm), (lambda: torch.mm(ta, tbm)) if torch else None)
    # Tensor descriptors (contiguous tile loads) with 64x64x32 tiles: the dot
    # itself, without the pointer-tensor gathers of the tutorial matmul.
    S = 1024
    a = rng.standard_normal((S, S), dtype=np.float32)
    bm = rng.standard_normal((S, S), dtype=np.float32)
    cm = np.empty((S, S), np.float32)
    ta, tbm = (torch.from_numpy(a), torch.from_numpy(bm)) if torch else (None, None)
    row("matmul fp32 desc", f"{S}^3", lambda: matmul_descriptor(a, bm, cm, 64, 64, 32),
        lambda: np.matmul(a, bm, out=cm), (lambda: torch.mm(ta, tbm)) if torch else None)
    threads = args.threads or "default"
    print(f"threads: {threads}; min (median) of {args.rounds} rounds of {args.reps} calls"
          + ("; process CPU time" if args.cpu_time else ""))
    print(f"{'kernel':<17}{'shape':<10}{'zetile cpu':>18}{'numpy':>18}{'torch':>18}"
          f"{'numpy/zetile':>14}{'torch/zetile':>14}" + (f"{'paired':>9}" if paired else ""))
    ms = lambda t: f"{t[0] * 1e3:.2f} ({t[1] * 1e3:.2f})ms"  # noqa: E731
    for i, (name, shape, z, npy, tt) in enumerate(rows):
        tcol = f"{ms(tt):>18}" if tt else f"{'-':>18}"
        tratio = f"{tt[0] / z[0]:>13.2f}x" if tt else f"{'-':>14}"
        pcol = f"{paired[i]:>8.2f}x" if i in paired else ""
        print(f"{name:<17}{shape:<10}{ms(z):>18}{ms(npy):>18}{tcol}{npy[0] / z[0]:>13.2f}x{tratio}"
              f"{pcol}")
    if args.json:
        import json
        with open(args.json, "w") as f:
            json.dump({"threads": threads, "rows": [
                {"kernel": name, "shape": shape, "zetile_s": z[0], "zetile_median_s": z[1],
                 "numpy_s": npy[0], "torch_s": tt[0] if tt else None,
                 "torch_zetile_paired": paired.get(i)}
                for i, (name, shape, z, npy, tt) in enumerate(rows)]}, f, indent=1)
    if not want:
        tiny = np.zeros(16, np.float32)
        t = timed(lambda: add_kernel[(1,)](tiny, tiny, tiny, 16, BLOCK_SIZE=16), 5000, 1)[0]
        print(f"host launch overhead, 1 program, 4 arguments: {t * 1e6:.1f} us "
              "(Triton 3.6 on an H100 host: 21 us, from ../shared/DESIGN.md)")


if __name__ == "__main__":
    main()
