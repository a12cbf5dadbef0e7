"""Parallel compiles (issue 22): N configurations of one kernel compiled one
after another, then from N Python threads at once (the extension releases
the GIL; each compile has an MLIR context of its own; only SPIR-V emission
is serialized), in one process, cache off. Prints both wall times, the
speed-up, how many cores the threads kept busy, whether the threads'
artifacts are byte for byte the sequential ones, and a control: the same
compiles split over N forked processes (what the machine allows when
nothing is shared; on a machine busy with other work, neither gets N
cores).

    .venv/bin/python bench/compile_parallel.py [--target pvc|cpu|all] [--threads N] [--reps 3]

These are CPU timings of the compiler on this machine (2 cores here).
"""
import argparse
import os
import statistics
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples"))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

import zetile  # noqa: E402

MATMUL_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32:16", "N": "i32:16",
              "K": "i32:16", "stride_am": "i32:16", "stride_bk": "i32:16", "stride_cm": "i32:16"}
ATTN_SIG = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "Out": "*fp16", "sm_scale": "fp32",
            "N_CTX": "i32:16", "stride_qm": "i32:16", "stride_kn": "i32:16", "stride_vn": "i32:16",
            "stride_om": "i32:16"}


def matmul_configs():
    from matmul import matmul_kernel
    out = []
    for bm, bn, bk, w in ((64, 64, 32, 4), (128, 64, 32, 8), (64, 128, 32, 8), (128, 128, 32, 8),
                          (128, 128, 64, 8), (256, 128, 32, 16), (128, 256, 32, 16),
                          (256, 256, 32, 32)):
        out.append((f"matmul {bm}x{bn}x{bk}/{w}w", matmul_kernel, MATMUL_SIG,
                    {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8,
                     "stride_ak": 1, "stride_bn": 1, "stride_cn": 1}, w))
    return out


def attention_configs():
    from attention_kernels import attn_fwd_kernel
    return [(f"attention {bm}x{bn}/{w}w", attn_fwd_kernel, ATTN_SIG,
             {"HEAD_DIM": 64, "BLOCK_M": bm, "BLOCK_N": bn}, w)
            for bm, bn, w in ((64, 32, 4), (64, 64, 4), (128, 32, 8), (128, 64, 8))]


def compile_one(cfg, target):
    _, fn, sig, consts, warps = cfg
    return zetile.compile(fn, signature=sig, constexprs=consts, target=target, num_warps=warps,
                          cached=False)


def run(configs, target, threads):
    t0 = time.perf_counter()
    seq = [compile_one(c, target) for c in configs]
    t_seq = time.perf_counter() - t0
    par = [None] * len(configs)
    work = list(enumerate(configs))
    lock = threading.Lock()
    cpu = []

    def worker():
        c0 = time.thread_time()
        while True:
            with lock:
                if not work:
                    break
                i, c = work.pop(0)
            par[i] = compile_one(c, target)
        with lock:
            cpu.append(time.thread_time() - c0)
    t0 = time.perf_counter()
    ts = [threading.Thread(target=worker) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    t_par = time.perf_counter() - t0
    key = "spirv" if target != "cpu" else "obj"
    same = all(a.asm.get(key) == b.asm.get(key) for a, b in zip(seq, par))
    # CPU time of the threads over their wall time: how many cores the
    # compiles kept busy at once (below the thread count when other
    # processes hold the cores, or when compiles wait on a lock).
    return t_seq, t_par, same, sum(cpu) / t_par


def _child(configs, target, q, go):
    compile_one(configs[0], target)  # its own compiler load and context, before the clock
    q.put("ready")
    go.wait()
    t0 = time.perf_counter()
    for c in configs:
        compile_one(c, target)
    q.put(time.perf_counter() - t0)


def run_processes(configs, target, n):
    """The control: the same compiles split over n forked processes (no
    shared state at all), started together. Threads matching this wall time
    means nothing in the process serializes them beyond what the machine
    does."""
    import multiprocessing as mp
    ctx = mp.get_context("fork")
    q, go = ctx.Queue(), ctx.Event()
    ps = [ctx.Process(target=_child, args=(configs[i::n], target, q, go)) for i in range(n)]
    for p in ps:
        p.start()
    for _ in ps:
        q.get()
    t0 = time.perf_counter()
    go.set()
    for _ in ps:
        q.get()
    wall = time.perf_counter() - t0
    for p in ps:
        p.join()
    return wall


def _spin(n):
    x = 0
    for i in range(n):
        x += i
    return x


def machine_parallelism(n_procs):
    """What the machine gives right now: n processes spinning in Python (no
    zetile) against the same work done one after another; 1.0 when the
    cores are all taken by other work."""
    import multiprocessing as mp
    n = 5_000_000
    t0 = time.perf_counter()
    for _ in range(n_procs):
        _spin(n)
    seq = time.perf_counter() - t0
    with mp.get_context("fork").Pool(n_procs) as pool:
        pool.map(_spin, [1000] * n_procs)  # the workers exist before the clock
        t0 = time.perf_counter()
        pool.map(_spin, [n] * n_procs)
        par = time.perf_counter() - t0
    return seq / par


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="all", choices=("pvc", "cpu", "all"))
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    targets = ("pvc", "cpu") if args.target == "all" else (args.target,)
    sets = {"matmul (8 configs)": matmul_configs(), "attention (4 configs)": attention_configs()}
    print(f"{os.cpu_count()} cores, {args.threads} threads, median of {args.reps}")
    print(f"load average before: {os.getloadavg()[0]:.1f} (the figures need idle cores); "
          f"{args.threads} processes spinning in Python run {machine_parallelism(args.threads):.2f}x "
          f"as fast as one after another")
    print(f"{'kernel':<24}{'target':<8}{'sequential':>12}{'threads':>10}{'speed-up':>10}"
          f"{'busy cores':>12}{'processes':>11}  same bytes")
    for target in targets:
        for name, configs in sets.items():
            compile_one(configs[0], target)  # loads the compiler, makes a context
            runs = [run(configs, target, args.threads) for _ in range(args.reps)]
            s = statistics.median(r[0] for r in runs)
            p = statistics.median(r[1] for r in runs)
            same = all(r[2] for r in runs)
            busy = statistics.median(r[3] for r in runs)
            procs = statistics.median(run_processes(configs, target, args.threads)
                                      for _ in range(args.reps))
            print(f"{name:<24}{target:<8}{s:>10.2f} s{p:>8.2f} s{s / p:>9.2f}x{busy:>12.2f}"
                  f"{procs:>9.2f} s  {same}")


if __name__ == "__main__":
    main()
