"""The template configurations zetile ships, as planned launches that build
without a device: what tests/python/test_templates_xe.py checks for the Xe
targets (E1 spirv-val, E2 ocloc) and what docs/TEMPLATES.md tabulates.

    python -m zetile.ops.xe_cases [--target pvc] [--case NAME]

prints, per case and target, DPAS inside the innermost loop, ocloc's spill
estimate, or the message of the refusal.
"""
import argparse
import sys


def _t():
    import torch
    return torch


def _z(*shape, dt="float16"):
    torch = _t()
    return torch.zeros(*shape, dtype=getattr(torch, dt))


def _gemm(dt="float16", trans_b=False, batch=0, epilogue=False, weight_bits=0, precision=None):
    from . import gemm
    torch = _t()
    M = N = K = 512
    a = _z(*((batch,) if batch else ()), M, K, dt=dt)
    if weight_bits:
        b = torch.zeros((K // 2 if weight_bits == 4 else K, N), dtype=torch.int8)
        return gemm(a, b, scales=_z(K // 32, N, dt=dt), weight_bits=weight_bits, plan=True)
    b = _z(N, K, dt=dt).T if trans_b else _z(K, N, dt=dt)
    kw = {"precision": precision} if precision else {}
    if epilogue:
        kw = dict(bias=_z(N, dt=dt), activation="gelu", residual=_z(M, N, dt=dt))
    return gemm(a, b, plan=True, **kw)


def _sdpa(dt="float16", E=64, causal=False, mask=None, gqa=False, dropout_p=0.0):
    from . import scaled_dot_product_attention
    torch = _t()
    L = 512
    q = _z(1, 4, L, E, dt=dt)
    kv = _z(1, 2 if gqa else 4, L, E, dt=dt)
    m = None
    if mask == "bool":
        m = torch.zeros(L, L, dtype=torch.bool)
    elif mask == "float":
        m = _z(L, L, dt=dt)
    return scaled_dot_product_attention(q, kv, kv, attn_mask=m, is_causal=causal,
                                        enable_gqa=gqa, dropout_p=dropout_p, dropout_seed=1,
                                        plan=True)


def _flex(score=None, mask=None, dt="float16"):
    from . import create_block_mask, flex_attention_fwd
    torch = _t()
    L = 512
    q = _z(1, 2, L, 64, dt=dt)
    doc = torch.zeros(L, dtype=torch.int64)

    def causal(b, h, qi, kv):
        return qi >= kv

    def document(b, h, qi, kv):
        return (doc[qi] == doc[kv]) & (qi >= kv)

    def softcap(s, b, h, qi, kv):
        return 20.0 * torch.tanh(s / 20.0)

    def alibi(s, b, h, qi, kv):
        return s + torch.exp2(-((h + 1) * 8.0 / 2)) * (kv - qi)

    mods = {"causal": causal, "document": document, "softcap": softcap, "alibi": alibi}
    bm = create_block_mask(mods[mask], None, None, L, L) if mask else None
    return flex_attention_fwd(q, q, q, mods.get(score), bm, plan=True)


# name -> builder of a Launch. Names say the template, dtype and variant.
CASES = {
    "gemm_fp16": lambda: _gemm("float16"),
    "gemm_bf16": lambda: _gemm("bfloat16"),
    "gemm_fp32": lambda: _gemm("float32"),
    "gemm_fp32_tf32": lambda: _gemm("float32", precision="tf32"),
    "gemm_fp32_ieee": lambda: _gemm("float32", precision="ieee"),
    "gemm_int8": lambda: _gemm("int8"),
    "gemm_fp16_bias_gelu_residual": lambda: _gemm("float16", epilogue=True),
    "gemm_fp16_bT": lambda: _gemm("float16", trans_b=True),
    "gemm_fp16_batched": lambda: _gemm("float16", batch=4),
    "gemm_fp16_w8": lambda: _gemm("float16", weight_bits=8),
    "gemm_fp16_w4": lambda: _gemm("float16", weight_bits=4),
    "gemm_bf16_w4": lambda: _gemm("bfloat16", weight_bits=4),
    "sdpa_fp16_d64": lambda: _sdpa("float16", 64),
    "sdpa_bf16_d128": lambda: _sdpa("bfloat16", 128),
    "sdpa_fp16_d64_causal": lambda: _sdpa("float16", 64, causal=True),
    "sdpa_fp16_d64_boolmask": lambda: _sdpa("float16", 64, mask="bool"),
    "sdpa_fp16_d64_floatmask": lambda: _sdpa("float16", 64, mask="float"),
    "sdpa_fp16_d64_gqa": lambda: _sdpa("float16", 64, gqa=True),
    "sdpa_fp16_d64_dropout": lambda: _sdpa("float16", 64, dropout_p=0.1),
    "sdpa_bf16_d128_causal_dropout": lambda: _sdpa("bfloat16", 128, causal=True, dropout_p=0.1),
    "flex_fp16_causal_blocks": lambda: _flex(mask="causal"),
    "flex_fp16_softcap": lambda: _flex(score="softcap"),
    "flex_fp16_alibi_causal": lambda: _flex(score="alibi", mask="causal"),
    "flex_fp16_document": lambda: _flex(mask="document"),
}


def build(name, target):
    """(artifact, None) or (None, message of the refusal)."""
    from .. import _C
    from . import _kernels
    try:
        # Planned for `target`: the templates size their tiles by its row.
        with _kernels.planning_for(target):
            launch = CASES[name]()
        return launch.compile(target, cached=True), None
    except _C.Error as e:
        return None, f"{type(e).__name__}: {e}"


def isa_row(name, target):
    """One table row: DPAS in the innermost loop, spills from ocloc and the
    ISA's scratch sends (ocloc's line alone misses SIMD8 spills), or the refusal."""
    from .. import _C
    from ..tools import isa
    art, err = build(name, target)
    if err:
        return {"case": name, "target": target, "built": False, "message": err.splitlines()[0]}
    row = _C.target_info(target)
    opts = "-ze-opt-large-register-file" if row and row["grf_large"] else ""
    try:
        isas, log = isa.ocloc_isa(art.get("spirv"), target, opts)
    except (RuntimeError, ValueError, isa.ToolMissing) as e:
        # Debian's ocloc does not know bmg ("Cannot get HW Info for device bmg"):
        # the SPIR-V was built (E1 is spirv-val's), ocloc figures are missing.
        first = [ln for ln in str(e).splitlines() if ln.strip()][1:2] or [str(e)]
        return {"case": name, "target": target, "built": True, "dpas": None,
                "dpas_in_loop": None, "spill": None, "message": "ocloc: " + first[0].strip()}
    r = isa.analyze_isa("".join(isas.values()))
    return {"case": name, "target": target, "built": True, "dpas": r["dpas"],
            "dpas_in_loop": r["dpas_in_innermost_loop"], "spill": isa.spill_from_log(log),
            "sends": r.get("sends"), "scratch_sends": r["scratch_sends"]}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", action="append", help="pvc, bmg, dg2, tgllp, skl, ... (default: pvc, bmg, dg2)")
    p.add_argument("--case", action="append", help="a case name (default: all)")
    a = p.parse_args(argv)
    import zetile
    zetile.set_device("cpu")
    import time
    for t in a.target or ["pvc", "bmg", "dg2"]:
        for c in a.case or list(CASES):
            t0 = time.perf_counter()
            r = isa_row(c, t)
            r["seconds"] = time.perf_counter() - t0
            if r["built"] and r["dpas"] is None:
                print(f"{t:4} {c:32} built; {r['message']} ({r['seconds']:.0f} s)", flush=True)
            elif r["built"]:
                print(f"{t:4} {c:32} dpas={r['dpas']:3} in_loop={r['dpas_in_loop']:3} spill={r['spill']} "
                      f"scratch={r['scratch_sends']} sends={r['sends']} "
                      f"({r['seconds']:.0f} s)",
                      flush=True)
            else:
                print(f"{t:4} {c:32} refused: {r['message'][:200]} ({r['seconds']:.0f} s)", flush=True)


if __name__ == "__main__":
    sys.exit(main())
