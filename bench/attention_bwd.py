"""Attention backward on the CPU target against torch's CPU backward, in the
same run (best of N after a warm-up call, so compiles are excluded):

  sdpa   zetile.ops.scaled_dot_product_attention_backward vs the backward of
         torch's F.scaled_dot_product_attention (torch.autograd.grad on a
         kept graph), non-causal and causal;
  flex   zetile.ops.flex_attention_backward with a causal BlockMask (the
         listed blocks only) next to zetile's causal SDPA backward (torch's
         flex has no CPU backward to compare with).

These are CPU timings on whatever else the machine runs; they say nothing
about GPU speed.

    .venv/bin/python bench/attention_bwd.py [--shape B,H,L,D] [--repeats N]
"""
import argparse
import time


def best_ms(fn, repeats):
    fn()
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best * 1e3


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", default="1,4,1024,64")
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args(argv)
    import torch
    import torch.nn.functional as F

    import zetile
    import zetile.ops as ops
    zetile.set_device("cpu")
    B, H, L, D = (int(x) for x in a.shape.split(","))
    g = torch.Generator().manual_seed(0)
    q, k, v, do = (torch.randn(B, H, L, D, generator=g) for _ in range(4))
    print(f"B{B} H{H} L{L} D{D} fp32, best of {a.repeats}, ms")
    for causal in (False, True):
        out, lse = ops.scaled_dot_product_attention(q, k, v, is_causal=causal, return_lse=True)
        z = best_ms(lambda: ops.scaled_dot_product_attention_backward(
            do, q, k, v, out, lse, is_causal=causal), a.repeats)
        qr, kr, vr = (x.clone().requires_grad_() for x in (q, k, v))
        o = F.scaled_dot_product_attention(qr, kr, vr, is_causal=causal)
        t = best_ms(lambda: torch.autograd.grad(o, (qr, kr, vr), do, retain_graph=True), a.repeats)
        print(f"sdpa causal={causal!s:5}  zetile {z:8.1f}  torch {t:8.1f}  torch/zetile {t / z:.2f}")
    bm = ops.create_block_mask(lambda b, h, qi, kv: qi >= kv, None, None, L, L, BLOCK_SIZE=128)
    out, lse = ops.flex_attention(q, k, v, block_mask=bm, return_lse=True)
    f = best_ms(lambda: ops.flex_attention_backward(do, q, k, v, out, lse, None, bm), a.repeats)
    print(f"flex causal BlockMask(128)  zetile {f:8.1f}")


if __name__ == "__main__":
    main()
