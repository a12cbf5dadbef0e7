"""Builds Intel's fused FlashAttention backward (`_attn_bwd` in
benchmarks/triton_kernels_benchmark/flash_attention_benchmark.py of
intel/intel-xpu-backend-for-triton, loaded from TRITON_SRC with `triton`
resolved to zetile; nothing of Intel's is stored here) for pvc over every
config of its `bwd_configs` list (num_stages aside: zetile ignores it), HEAD_DIM
64, and prints one line per config: built (DPAS ops in the Xe MLIR) or the
refusal. The benchmark driver (scripts/intel_bench_drivers.py) runs the first
config only; this shows the rest (docs/TUTORIALS.md).

    TRITON_SRC=/tmp/intel-triton .venv/bin/python scripts/intel_attn_bwd_configs.py

With --run M1,N1,M2,N2,WARPS it runs the driver's backward case (forward,
preprocess, fused backward; dq/dk/dv against torch autograd) at that config
instead, on the current device (ZETILE_DEVICE=opencl:cpu: E5 of the pvc SPIR-V).
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "triton_suite"))
import zt_triton_alias  # noqa: E402,F401
import intel_bench_drivers as drivers  # noqa: E402
from tutorials_cases import load_tutorial  # noqa: E402

import zetile  # noqa: E402

SIG = {"Q": "*fp16:16", "K": "*fp16:16", "V": "*fp16:16", "sm_scale": "fp32", "DO": "*fp16:16",
       "DQ": "*fp16:16", "DK": "*fp16:16", "DV": "*fp16:16", "M": "*fp32:16", "D": "*fp32:16",
       "stride_z": "int32:16", "stride_h": "int32:16", "stride_tok": "int32:16", "H": "int32",
       "N_CTX": "int32:16"}


def main():
    src = os.environ.get("TRITON_SRC")
    if not src:
        sys.exit("set TRITON_SRC to a checkout of intel/intel-xpu-backend-for-triton")
    bench = os.path.join(src, "benchmarks", "triton_kernels_benchmark")
    drivers.harness_stub(bench)
    mod, _ = load_tutorial(os.path.join(bench, "flash_attention_benchmark.py"), "fa")
    if len(sys.argv) == 3 and sys.argv[1] == "--run":
        return run(mod, [int(x) for x in sys.argv[2].split(",")])
    fn = getattr(mod._attn_bwd, "fn", mod._attn_bwd)
    seen, built, total = set(), 0, 0
    for c in mod.bwd_configs:
        k = dict(c.kwargs)
        k.pop("grf_mode", None)
        key = (tuple(sorted(k.items())), c.num_warps)
        if key in seen:
            continue
        seen.add(key)
        total += 1
        t = time.time()
        try:
            ck = zetile.compile(fn, signature=SIG, target="pvc", num_warps=c.num_warps,
                                constexprs=dict(k, stride_d=1, BLK_SLICE_FACTOR=2, HEAD_DIM=64),
                                cached=False)
            built += 1
            print(k, f"w{c.num_warps}", "built, DPAS", ck.asm["mlir"].count("xegpu.dpas"),
                  f"{time.time() - t:.1f} s", flush=True)
        except Exception as e:  # noqa: BLE001 (a refusal is a result here)
            print(k, f"w{c.num_warps}", "refused:", str(e).strip().splitlines()[-1][:250],
                  flush=True)
    print(f"{built} of {total} configs built for pvc")


def run(mod, want):
    a = mod._attention
    a.attn_fwd = mod._attn_fwd
    a.tune_attn_fwd = mod.tuner(mod._attn_fwd)
    a.tune_attn_bwd = mod.bwd_tuner(mod._attn_bwd)
    key = lambda c: [c.kwargs["BLOCK_M1"], c.kwargs["BLOCK_N1"], c.kwargs["BLOCK_M2"],  # noqa: E731
                     c.kwargs["BLOCK_N2"], c.num_warps]
    a.tune_attn_bwd.configs = [c for c in a.tune_attn_bwd.configs if key(c) == want][:1]
    if not a.tune_attn_bwd.configs:
        sys.exit(f"no bwd config {want}")
    print(zetile.get_device().info["name"], flush=True)
    for name, go in drivers.flash_attention_bwd(mod, a, False):
        t = time.time()
        go()  # raises on a mismatch
        print(name, "passed", f"{time.time() - t:.0f} s", flush=True)


if __name__ == "__main__":
    main()
