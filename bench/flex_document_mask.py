"""FlexAttention forward with a document mask on the CPU target: the mask
mod's doc[q] / doc[kv] gathers in the form the CPU target takes (a
(BLOCK_M, 1) column and a (1, BLOCK_N) row, which every target takes since
session 15) against the form widened to the (BLOCK_M, BLOCK_N) score tile
that GPU targets took until then (written here as doc[q + 0 * kv]: the
gather then depends on both indices). Both run alternately in one process after a warm-up
call each (compiles excluded) and must give the same output; prints each
form's min and median and the median of the paired ratios.

Set ZETILE_NUM_THREADS=1 for one thread. CPU timings on whatever else the
machine runs.

    .venv/bin/python bench/flex_document_mask.py [--len 2048] [--doc 300] [--repeats 31]
"""
import argparse
import statistics
import time
import warnings


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--len", type=int, default=2048, help="query and key length")
    ap.add_argument("--doc", type=int, default=300,
                    help="mean document length (each drawn in [0.5, 1.5) times it)")
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=31)
    a = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    import numpy as np
    import torch
    import zetile.ops as ops
    from zetile import runtime
    runtime.set_device("cpu")
    L = a.len
    g = torch.Generator().manual_seed(0)
    ids, d = [], 0
    while len(ids) < L:
        ids += [d] * max(1, int(a.doc * (0.5 + torch.rand(1, generator=g).item())))
        d += 1
    doc = torch.tensor(ids[:L])

    # The widened form: each gather's index depends on both axes, so it
    # loads the whole (BLOCK_M, BLOCK_N) tile (the same addresses).
    def doc_widened(b, h, q, kv):
        return doc[q + 0 * kv] == doc[kv + 0 * q]

    def doc_narrow(b, h, q, kv):
        return doc[q] == doc[kv]

    q, k, v = (torch.randn(1, a.heads, L, a.head_dim, generator=g) for _ in range(3))
    masks = {}
    for name, fn in (("widened", doc_widened), ("narrow", doc_narrow)):
        masks[name] = ops.create_block_mask(fn, 1, 1, L, L)
    outs = {n: ops.flex_attention(q, k, v, block_mask=bm) for n, bm in masks.items()}
    assert torch.equal(outs["widened"], outs["narrow"]), "the two forms differ"
    ts = {n: [] for n in masks}
    for _ in range(a.repeats):
        for n, bm in masks.items():
            t = time.perf_counter()
            ops.flex_attention(q, k, v, block_mask=bm)
            ts[n].append((time.perf_counter() - t) * 1e3)
    bm = masks["narrow"]
    part = int(np.asarray(bm.kv_num_blocks).sum())
    full = int(np.asarray(bm.full_kv_num_blocks).sum())
    print(f"L={L} docs~{a.doc} H={a.heads} D={a.head_dim}: {part} partial and {full} full "
          f"{bm.BLOCK_SIZE} blocks")
    for n in ts:
        print(f"  {n:8s} min {min(ts[n]):8.1f} ms  median {statistics.median(ts[n]):8.1f} ms")
    pr = sorted(w / n for w, n in zip(ts["widened"], ts["narrow"]))
    print(f"  widened/narrow paired: median {statistics.median(pr):.3f}, quartiles "
          f"{pr[len(pr) // 4]:.3f}-{pr[3 * len(pr) // 4]:.3f} ({len(pr)} pairs)")


if __name__ == "__main__":
    main()
