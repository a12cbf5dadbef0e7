"""The FlashAttention forward of tests/python/attention_kernels.py built for
an Xe target in the variants of issue 12 (fp16/bf16, head dim 64/128, causal
or not; BLOCK_M 128, BLOCK_N 64, 8 subgroups, sizes and strides hinted as
the launcher hints 16-divisible values): per variant the compile time (CPU
time of this machine's compiler, not a GPU figure), and from Intel's ocloc +
iga64 (`zetile isa`'s analysis) the DPAS count, DPAS inside the KV loop (the
loop holding the most DPAS: the compat path's row reads have loops of their
own), sends and spilled registers (ocloc's line) and scratch sends (the
ISA's; ocloc's line misses SIMD8 spills) at the default 256-GRF configuration.

    .venv/bin/python bench/xe_attention_isa.py [--target pvc] [--quick] [--compat] [--num-warps 8] [--block-n 64]

--quick: only fp16, head dim 64, not causal. --compat: the compat path (no
2D block IO: Debian's driver); without it the native path, whose 2D block
builtins Debian's IGC leaves as unresolved calls (`calla`). --num-warps:
subgroups per workgroup (default 8; Intel's FlashAttention configs also
use 16 and 32). --block-n: key rows a KV step (default 64)."""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))

import zetile  # noqa: E402
from zetile.tools import isa  # noqa: E402
from attention_kernels import attn_fwd_kernel  # noqa: E402


def build(target, dt, d, causal, num_warps=8, compat=False, block_n=64):
    sig = {"Q": f"*{dt}", "K": f"*{dt}", "V": f"*{dt}", "Out": f"*{dt}", "sm_scale": "fp32",
           "N_CTX": "i32:16", "stride_qm": "i32:16", "stride_kn": "i32:16",
           "stride_vn": "i32:16", "stride_om": "i32:16"}
    t = time.perf_counter()
    ck = zetile.compile(attn_fwd_kernel, signature=sig, target=target, num_warps=num_warps,
                        compat=compat,
                        constexprs={"HEAD_DIM": d, "BLOCK_M": 128, "BLOCK_N": block_n,
                                    "CAUSAL": causal}, cached=False)
    secs = time.perf_counter() - t
    opts = "-ze-opt-large-register-file" if target != "dg2" else ""
    isas, log = isa.ocloc_isa(ck.asm["spirv"], target, opts)
    r = isa.analyze_isa("".join(isas.values()))
    return secs, r, isa.spill_from_log(log)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", default="pvc")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--compat", action="store_true", help="the compat path (no 2D block IO)")
    ap.add_argument("--num-warps", type=int, default=8, help="subgroups per workgroup (default 8)")
    ap.add_argument("--block-n", type=int, default=64, help="key rows a KV step (default 64)")
    args = ap.parse_args()
    variants = [("fp16", 64, False)] if args.quick else [
        (dt, d, c) for dt in ("fp16", "bf16") for d in (64, 128) for c in (False, True)]
    route = "compat" if args.compat else "native"
    w = f", w{args.num_warps}" if args.num_warps != 8 else ""
    w += f", BLOCK_N {args.block_n}" if args.block_n != 64 else ""
    print(f"| variant ({args.target}, {route}{w}) | compile s | DPAS | in the KV loop | sends | spilled "
          f"| scratch sends |")
    print("|---|---|---|---|---|---|---|")
    for dt, d, causal in variants:
        name = f"{dt} d={d}{' causal' if causal else ''}"
        try:
            secs, r, spill = build(args.target, dt, d, causal, num_warps=args.num_warps,
                                     compat=args.compat, block_n=args.block_n)
        except zetile.CompilationError as e:
            print(f"| {name} | refused: {str(e).splitlines()[-1][:120]} |||||")
            continue
        in_loop = (r["dpas_loop"] or {}).get("dpas", 0)
        print(f"| {name} | {secs:.1f} | {r['dpas']} | {in_loop} | "
              f"{r['sends']} | {spill} | {r['scratch_sends']} |", flush=True)


if __name__ == "__main__":
    main()
