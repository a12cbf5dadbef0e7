"""Two compile routes of the same build, alternated in one process: each
kernel compiled --reps times with the environment of route A and of route B
(ABAB..., then BABA.. every other rep, so drift in the machine's load falls on
both), cache off; the median process CPU time of each, B/A, and whether the
SPIR-V bytes are equal. For measuring a change that an environment variable
can switch (ZETILE_XE_PIPELINE, ZETILE_XE_MOVES, ZETILE_XE_LLVM_PASSES, ...)
on a busy machine, where separate runs differ by more than the change.

    .venv/bin/python bench/compile_ab.py --a ZETILE_XE_PIPELINE=@old.txt --a ZETILE_XE_MOVES=text \\
        [--b VAR=VALUE] [--reps 5] [kernel ...]

VALUE `@file` reads the value from a file. Kernels: bench/compile_latency.py's
Intel-configuration kernels by their short names (mm128, mm256, attn,
softmax, ln, chain), dkdv64m / dkdv128 (tutorial-06-style backward,
tests/python/test_xe_attn_bwd_pointer_form.py) and atomic (an f32 atomic add);
`--a-atomics-only VAR` applies that A variable to the atomic kernel only.
CPU timings of compilers on this machine, not GPU speed."""
import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "tests", "python"))

SHORT = {"mm128": "matmul 128x128x32, 8 warps", "mm256": "matmul 256x256x32, 32 warps, large GRF",
         "attn": "FlashAttention fwd 128x64, D 64, 8 warps", "softmax": "softmax (1024 columns, 4 warps)",
         "ln": "layer norm fwd (1024, 8 warps)", "chain": "elementwise chain, 200 ops (4 warps)"}


def kernel(name):
    import compile_latency as CL
    if name in SHORT:
        k = CL.PEER_KERNELS[SHORT[name]]
        text = CL._chain_source() if k["file"] is None else open(os.path.join(ROOT, k["file"])).read()
        path = os.path.join(tempfile.mkdtemp(), f"ab_{name}.py")
        with open(path, "w") as f:
            f.write(text)
        spec = importlib.util.spec_from_file_location(f"ab_{name}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return dict(fn=getattr(mod, k["fn"]), sig=k["sig"], consts=k["consts"], warps=k["warps"],
                    igc="-ze-opt-large-register-file" if k["grf"] else None)
    if name.startswith("dkdv"):
        import test_xe_attn_bwd_pointer_form as B
        d = 128 if "128" in name else 64
        return dict(fn=B.dkdv_kernel, sig=B.SIG, consts=B._conf(d, name.endswith("m")), warps=4,
                    igc=None)
    if name == "atomic":
        import xe_atomic_kernels as A
        return dict(fn=A.rmw_kernel, sig={"x_ptr": "*fp32", "out_ptr": "*fp32", "old_ptr": "*fp32",
                                          "N": "i32"},
                    consts={"OP": "add", "SLOTS": 8, "BLOCK": 1024}, warps=4, igc=None)
    raise SystemExit(f"unknown kernel {name}")


def parse_env(items):
    env = {}
    for it in items or []:
        k, _, v = it.partition("=")
        if v.startswith("@"):
            with open(v[1:]) as f:
                v = f.read().strip()
        env[k] = v
    return env


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kernels", nargs="*",
                    default=["attn", "softmax", "ln", "chain", "mm128", "mm256", "dkdv64m", "atomic"])
    ap.add_argument("--a", action="append", help="VAR=VALUE of route A (repeatable)")
    ap.add_argument("--b", action="append", help="VAR=VALUE of route B (repeatable)")
    ap.add_argument("--a-atomics-only", action="append", default=[])
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    import zetile
    routes = {"A": parse_env(args.a), "B": parse_env(args.b)}
    names = set(routes["A"]) | set(routes["B"])
    print(f"load average {os.getloadavg()[0]:.1f}; A: {sorted(routes['A'])}, B: {sorted(routes['B'])}")
    print("| kernel | A CPU ms | B CPU ms | B/A | same SPIR-V |")
    print("|---|---:|---:|---:|---|")
    for kname in args.kernels:
        k = kernel(kname)
        times, spirv = {"A": [], "B": []}, {}
        for r in range(args.reps):
            for route in ("A", "B") if r % 2 == 0 else ("B", "A"):
                for n in names:
                    os.environ.pop(n, None)
                env = dict(routes[route])
                if kname != "atomic":
                    for n in args.a_atomics_only:
                        env.pop(n, None)
                os.environ.update(env)
                t = time.process_time()
                c = zetile.compile(k["fn"], signature=k["sig"], constexprs=k["consts"], target="pvc",
                                   num_warps=k["warps"], cached=False, igc_options=k["igc"])
                times[route].append((time.process_time() - t) * 1e3)
                spirv[route] = c.asm["spirv"]
        a, b = statistics.median(times["A"]), statistics.median(times["B"])
        print(f"| {kname} | {a:.1f} | {b:.1f} | {b / a:.2f} | {spirv['A'] == spirv['B']} |", flush=True)
    for n in names:
        os.environ.pop(n, None)


if __name__ == "__main__":
    main()
