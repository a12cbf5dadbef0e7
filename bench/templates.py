"""Templates on the CPU target (zetile.ops.gemm / scaled_dot_product_attention /
flex_attention) against torch on the same machine, in the same run:

  throughput   zetile's CPU target vs torch CPU eager (median of repeats), as
               torch_time / zetile_time (> 1: zetile faster) and GFLOP/s;
  first call   a new process, cold caches: zetile (ZETILE_CACHE_DIR empty) vs
               torch.compile (TORCHINDUCTOR_CACHE_DIR empty), time of the first
               call after imports; ratio torch.compile / zetile;
  warm cache   a new process again with the caches the first call filled.

These are CPU timings (no Intel GPU here); they say nothing about GPU speed.

    .venv/bin/python bench/templates.py [--quick] [--no-compile] [--only gemm,sdpa,flex]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# One script per template for the subprocess measurements: build inputs, then
# time the first call of `which` ("zetile" or "compile").
SETUP = {
    "gemm": """
import torch
a = torch.randn(512, 512); b = torch.randn(512, 512)
def zetile_call(): return ops.gemm(a, b)
def compile_call(): return torch.compile(torch.mm)(a, b)
""",
    "sdpa": """
import torch, torch.nn.functional as F
q, k, v = (torch.randn(1, 4, 512, 64) for _ in range(3))
def zetile_call(): return ops.scaled_dot_product_attention(q, k, v, is_causal=True)
def compile_call():
    return torch.compile(F.scaled_dot_product_attention)(q, k, v, is_causal=True)
""",
    "flex": """
import torch
from torch.nn.attention import flex_attention as tfa
q, k, v = (torch.randn(1, 4, 512, 64) for _ in range(3))
def causal(b, h, qi, kv): return qi >= kv
def zetile_call():
    return ops.flex_attention(q, k, v, block_mask=ops.create_block_mask(causal, None, None, 512, 512))
def compile_call():
    bm = tfa.create_block_mask(causal, None, None, 512, 512, device="cpu")
    with torch.no_grad():
        return torch.compile(tfa.flex_attention)(q, k, v, block_mask=bm)
""",
}

CHILD = """
import sys, time, json, warnings
warnings.filterwarnings("ignore")
t0 = time.perf_counter()
import zetile, zetile.ops as ops
zetile.set_device("cpu")
t1 = time.perf_counter()
{setup}
t2 = time.perf_counter()
{which}_call()
t3 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "first_call": t3 - t2}}))
"""


def child(name, which, env):
    code = CHILD.format(setup=SETUP[name], which=which)
    e = dict(os.environ)
    e.update(env)
    e["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "python-bindings"), e.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True,
                       timeout=1800)
    if r.returncode:
        raise RuntimeError(f"{name}/{which} child failed:\n{r.stderr[-2000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def median_time(fn, repeats, warmup=2):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def throughput(name, repeats, quick):
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import flex_attention as tfa
    import warnings
    warnings.filterwarnings("ignore")
    import zetile
    import zetile.ops as ops
    zetile.set_device("cpu")
    torch.manual_seed(0)
    if name == "gemm":
        n = 256 if quick else 512
        a, b = torch.randn(n, n), torch.randn(n, n)
        flops = 2 * n ** 3
        z, t = (lambda: ops.gemm(a, b)), (lambda: torch.mm(a, b))
        shape = f"{n}x{n}x{n} fp32"
    else:
        L = 256 if quick else 512
        q, k, v = (torch.randn(1, 4, L, 64) for _ in range(3))
        flops = 4 * 4 * L * L * 64 // 2          # causal: half the score matrix
        shape = f"B1 H4 L{L} D64 fp32 causal"
        if name == "sdpa":
            z = lambda: ops.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
            t = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
        else:
            def causal(b_, h, qi, kv):
                return qi >= kv
            zbm = ops.create_block_mask(causal, None, None, L, L)
            tbm = tfa.create_block_mask(causal, None, None, L, L, device="cpu")
            z = lambda: ops.flex_attention(q, k, v, block_mask=zbm)  # noqa: E731
            t = lambda: tfa.flex_attention(q, k, v, block_mask=tbm)  # noqa: E731
    tz, tt = median_time(z, repeats), median_time(t, repeats)
    return {"shape": shape, "zetile_s": tz, "torch_s": tt, "ratio": tt / tz,
            "zetile_gflops": flops / tz / 1e9, "torch_gflops": flops / tt / 1e9}


def latency(name, with_compile):
    out = {}
    with tempfile.TemporaryDirectory(prefix="zt-bench-") as zc, \
            tempfile.TemporaryDirectory(prefix="ti-bench-") as tc:
        env = {"ZETILE_CACHE_DIR": zc, "TORCHINDUCTOR_CACHE_DIR": tc}
        out["zetile_cold"] = child(name, "zetile", env)["first_call"]
        out["zetile_warm"] = child(name, "zetile", env)["first_call"]
        if with_compile:
            out["compile_cold"] = child(name, "compile", env)["first_call"]
            out["compile_warm"] = child(name, "compile", env)["first_call"]
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="smaller shapes, fewer repeats")
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile latencies")
    p.add_argument("--only", default="gemm,sdpa,flex")
    a = p.parse_args()
    names = [n for n in a.only.split(",") if n]
    repeats = 5 if a.quick else 15
    print("CPU timings (2-core machine here), zetile's CPU target vs torch on the same run\n")
    print(f"{'template':6} {'shape':28} {'zetile ms':>10} {'torch ms':>10} {'torch/zetile':>13} "
          f"{'zt GF/s':>8} {'torch GF/s':>10}")
    for n in names:
        r = throughput(n, repeats, a.quick)
        print(f"{n:6} {r['shape']:28} {r['zetile_s'] * 1e3:10.2f} {r['torch_s'] * 1e3:10.2f} "
              f"{r['ratio']:13.2f} {r['zetile_gflops']:8.2f} {r['torch_gflops']:10.2f}", flush=True)
    print("\nfirst call in a new process (after imports), seconds")
    hdr = f"{'template':6} {'zetile cold':>12} {'zetile warm':>12}"
    if not a.no_compile:
        hdr += f" {'compile cold':>13} {'compile warm':>13} {'cold ratio':>11} {'warm ratio':>11}"
    print(hdr + "   (ratio = torch.compile / zetile)")
    for n in names:
        r = latency(n, not a.no_compile)
        line = f"{n:6} {r['zetile_cold']:12.3f} {r['zetile_warm']:12.3f}"
        if not a.no_compile:
            line += (f" {r['compile_cold']:13.3f} {r['compile_warm']:13.3f} "
                     f"{r['compile_cold'] / r['zetile_cold']:11.2f} "
                     f"{r['compile_warm'] / r['zetile_warm']:11.2f}")
        print(line, flush=True)


if __name__ == "__main__":
    main()
