"""Template specializations exported for C programs (no Python at run time).

    python -m zetile.ops.export stdlib-kernels/prebuilt

writes, per exported case, NAME.tile (the tile IR zt_compile takes) and
NAME.args (one line per run-time argument, in launch order: name, kind
("ptr" or a scalar kind) and the value the specialization was made for;
constexprs and integers equal to 1 are compiled in). tests/c/
test_stdlib_templates.c runs them; tests/python/test_templates_prebuilt.py
checks that the checked-in files match the templates.

The C API (include/zetile/ops.h, runtime/ops/) names the specialization it
needs with a spec string and reads SPEC.tile / SPEC.args from the prebuilt
folder; `spec_manifest(spec)` builds any of them:

    gemm-DT-ACT-EPI-BMxBNxBK[-rm16]     gemm-f16-relu-epi-64x64x32
                                        gemm-i8-none-plain-64x64x32
                                        gemm-f16w4g128-none-plain-64x64x32
    attn-DT-dHD-BMxBN-CAUSAL-MASK-SCORE-MASKMOD-KV[-drop|-split|-drop-split]
                                        attn-f32-d64-32x32-causal-nomask-none-none-dense
    attncombine-DT-dHD-BM               attncombine-f32-d64-32
    attn-...[-rm16], attnbwd-dkdv|dq-...[-rm16]   (row-major variants, below)
    attnbwd-delta-DT-dHD-BM[-dlse]      attnbwd-delta-f32-d64-32
    attnbwd-dkdv|dq-DT-dHD-BMxBN-CAUSAL-MASK[-drop]
                                        attnbwd-dq-f16-d64-32x32-causal-nomask
    attnbwd-dkdv|dq-DT-dHD-BMxBN-full-nomask-SCORE-MASKMOD-sparseN
                                        attnbwd-dq-f32-d64-32x32-full-nomask-alibi-causal-sparse128
  DT f32|f16|bf16, i8 (int8 x int8 -> exact int32, plain only) or a float DT
  with weight-only quantization, DTwBITSgGROUP (B int8 weights, BITS 8, or
  int4 pairs packed along K, BITS 4; scales of DT per GROUP rows of K);
  ACT none|relu|gelu|gelu_tanh|silu; EPI plain (store the
  accumulator) or epi (alpha, beta * C, bias, act, residual, all operands
  present: the C side points absent ones at a zero with stride 0);
  CAUSAL causal|full; MASK nomask|fmask (additive, q's dtype)|bmask (int8);
  SCORE none|alibi|softcap|ext, MASKMOD none|causal|sliding|document|ext
  (stdlib-kernels/mods.py; ext: a placeholder the C API replaces with a
  mod built with the C builder, its lines recorded in the .args file); KV dense, sparseN or sparsefullN (a block mask
  with KV blocks of N, without or with full blocks); -drop: SDPA dropout
  (dropout_p and seed at run time); -split: the decode path, the KV tiles
  cut into as many shares as the grid's third axis has programs (one
  export serves every count), each share's partial results to fp32
  workspaces that attncombine-DT-dHD-BM (BM the attention's BLOCK_M)
  merges into out and lse; -drop-split both (the shares' accumulators
  carry the dropout rescale). attnbwd-: the SDPA backward's three kernels
  (stdlib-kernels/attention_bwd.py; no block mask or mods): delta with the
  lse rescaled to log2 (BM the dq kernel's BLOCK_M; -dlse: minus a gradient
  of the lse, given in the lse's units, desc.has_grad_lse), then dk/dv (row
  statistics in the 2-D form every target builds) and dq, -drop
  regenerating the forward's dropout mask. The 10-field attnbwd- form is
  the FlexAttention backward (zt_ops_flex_bwd_plan): SCORE none|alibi|softcap|ext
  (differentiated by mods.py's SCORE_GRADS; ext: a builder-made score mod
  and its builder-made derivative, both spliced), MASKMOD none|causal|sliding|
  document|ext (a builder-made mask mod, spliced as the forward's), a block mask as the dense state table and walk lists the C
  side builds, N the block length along the axis the kernel walks (dq: the
  KV block, dk/dv: the query block).
These are generic: every integer is a run-time int32 (none compiled in as 1,
no divisibility hints), so one specialization serves every shape and
stride; `-rm16` GEMMs are the row-major variant (unit column strides
compiled in, row strides and pointers hinted multiples of 16), which the
C API picks when the descriptor allows: on Xe the hints turn row gathers
into 2D block loads. Attention's `-rm16` (forward, and the backward's dk/dv
and dq) compiles in the unit head-dim strides of q, k, v, out (and
grad_out and the gradients) and hints their pointers and batch, head and
sequence strides as multiples of 16 (the generic exports spill on pvc). `python -m zetile.ops.export DIR SPEC...` writes the ones named;
`python -m zetile.ops.export DIR` rewrites the default set (SPECS).
"""
import os
import sys


def _cases():
    import numpy as np
    from . import gemm, scaled_dot_product_attention
    rng = np.zeros
    M, N, K = 96, 80, 64           # multiples of 16: the divisibility hints hold
    B, H, L, S, E = 1, 2, 48, 64, 64
    return {
        # C = A @ B, fp32, row-major, no epilogue (DEFAULT tiles shrunk to 64).
        "gemm_f32": gemm(rng((M, K), np.float32), rng((K, N), np.float32), plan=True),
        # out, lse = SDPA(q, k, v), fp32 (B, H, L, E), k/v (B, H, S, E), causal.
        "sdpa_f32_causal": scaled_dot_product_attention(
            rng((B, H, L, E), np.float32), rng((B, H, S, E), np.float32),
            rng((B, H, S, E), np.float32), is_causal=True, return_lse=True, plan=True),
    }


def manifest(launch):
    """(tile IR text, [(name, kind, value)]) of a planned launch, as the CPU
    device would specialize it."""
    from .. import runtime
    dev = runtime.get_device("cpu")
    k = launch.kernel
    bound = k._bind(launch.args, launch.kwargs)
    _, arg_types, div, constexprs, values, descs = k.specialize(bound, dev)
    text = k.build_tile_ir(arg_types, constexprs, div, descs)
    # Source locations relative to the tree, so the files do not depend on
    # where it was checked out.
    from ._kernels import stdlib_dir
    text = text.replace(os.path.abspath(stdlib_dir()), "stdlib-kernels")
    rows = []
    for name, dt, v in values:
        if dt.is_ptr():
            rows.append((name, "ptr", 0))
        else:
            rows.append((name, dt.name, v))
    return text, rows


_DT = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}
_ACT = {"none": 0, "relu": 1, "gelu": 2, "gelu_tanh": 3, "silu": 4}

# The default set checked in to stdlib-kernels/prebuilt/ (what the C API
# finds without an export step): GEMM in every dtype and epilogue; SDPA
# (head dims 64 and 128: plain and causal; 64 also with a float or boolean
# mask); flex over block masks of torch's default 128-blocks with the
# exported mods (fp32; fp16 causal). The C API always launches flex with
# full-block tables (zero counts when the caller has none).
SPECS = (
    [f"gemm-{d}-none-plain-64x64x32{v}" for d in _DT for v in ("", "-rm16")]
    + [f"gemm-{d}-{a}-epi-64x64x32{v}" for d in _DT for a in _ACT for v in ("", "-rm16")]
    # int8 GEMM, and weight-only int4/int8 with fp16/bf16 activations and
    # 128-row scale groups (the LLM decode case).
    + [f"gemm-i8-none-plain-64x64x32{v}" for v in ("", "-rm16")]
    + [f"gemm-{d}w{b}g128-none-plain-64x64x32" for d in ("f16", "bf16") for b in (4, 8)]
    # The tiles the C plan picks on dg2's row (runtime/ops/ops_gemm_tiles.c,
    # as ops.gemm's config_for: K step 16 over 16 subgroups, no spills there).
    + [f"gemm-{d}-none-plain-64x64x16{v}" for d in ("f16", "bf16") for v in ("", "-rm16")]
    + [f"gemm-f32-none-plain-32x64x16{v}" for v in ("", "-rm16")]
    + [f"gemm-{d}-{a}-epi-32x64x16{v}" for d in _DT for a in _ACT for v in ("", "-rm16")]
    + [f"gemm-i8-none-plain-32x32x32{v}" for v in ("", "-rm16")]
    + [f"gemm-{d}w{b}g128-none-plain-32x64x16" for d in ("f16", "bf16") for b in (4, 8)]
    # The attention forward's tiles on dg2's row (runtime/ops/ops_gemm_tiles.c,
    # as zetile.ops.attention's DG2_FWD: 16x16 over 8 subgroups, head dims up
    # to 64, no scratch send there in fp16/bf16; d128 over 16 subgroups).
    + [f"attn-{d}-d64-16x16-{c}-nomask-none-none-dense{v}" for d in _DT
       for c in ("full", "causal") for v in ("", "-drop")]
    + [f"attn-{d}-d64-16x16-full-{m}-none-none-dense" for d in _DT for m in ("fmask", "bmask")]
    + [f"attn-{d}-d64-16x16-full-nomask-none-none-dense-{v}" for d in _DT
       for v in ("split", "drop-split")]
    + [f"attncombine-{d}-d64-16" for d in _DT]
    + [f"attn-{d}-d128-16x16-{c}-nomask-none-none-dense" for d in _DT for c in ("full", "causal")]
    + [f"attn-{d}-d128-16x16-full-nomask-none-none-dense-split" for d in _DT]
    + [f"attncombine-{d}-d128-16" for d in _DT]
    + [f"attn-f32-d64-16x16-full-nomask-{s}-{mm}-sparsefull128{v}"
       for s, mm in (("none", "none"), ("none", "causal"), ("none", "sliding"),
                     ("none", "document"), ("alibi", "causal"), ("softcap", "causal"),
                     ("ext", "none"), ("none", "ext"), ("ext", "ext"))
       for v in (("", "-split") if (s, mm) == ("none", "causal") else ("",))]
    + [f"attn-f16-d64-16x16-full-nomask-{s}-{mm}-sparsefull128"
       for s, mm in (("none", "causal"), ("ext", "ext"))]
    + [f"attn-{d}-d{hd}-32x32-{c}-nomask-none-none-dense" for d in _DT for hd in (64, 128)
       for c in ("full", "causal")]
    + [f"attn-{d}-d64-32x32-full-{m}-none-none-dense" for d in _DT for m in ("fmask", "bmask")]
    + [f"attn-f32-d64-32x32-full-nomask-{s}-{mm}-sparsefull128"
       for s, mm in (("none", "none"), ("none", "causal"), ("none", "sliding"),
                     ("none", "document"), ("alibi", "causal"), ("softcap", "causal"))]
    + ["attn-f16-d64-32x32-full-nomask-none-causal-sparsefull128"]
    # For mods built with the C builder (spliced in by runtime/ops/ops_splice.c).
    + [f"attn-f32-d64-32x32-full-nomask-{s}-{mm}-sparsefull128"
       for s, mm in (("ext", "none"), ("none", "ext"), ("ext", "ext"))]
    + ["attn-f16-d64-32x32-full-nomask-ext-ext-sparsefull128"]
    # SDPA dropout, and the decode path (split KV) with its combine kernel.
    + [f"attn-{d}-d64-32x32-{c}-nomask-none-none-dense-drop" for d in _DT
       for c in ("full", "causal")]
    + [f"attn-{d}-d{hd}-32x32-full-nomask-none-none-dense-split" for d in _DT
       for hd in (64, 128)]
    + ["attn-f32-d64-32x32-full-nomask-none-causal-sparsefull128-split"]
    # Dropout on the decode path (C: an explicit split_kv > 1 with dropout).
    + [f"attn-{d}-d64-32x32-full-nomask-none-none-dense-drop-split" for d in _DT]
    + [f"attncombine-{d}-d{hd}-32" for d in _DT for hd in (64, 128)]
    # SDPA backward (zt_ops_sdpa_bwd_plan): delta (and the lse to log2),
    # then dk/dv and dq, for the forward's plain, causal, masked and
    # dropout specializations.
    + [f"attnbwd-delta-{d}-d{hd}-32" for d in _DT for hd in (64, 128)]
    # ... with a gradient of the lse (desc.has_grad_lse)
    + [f"attnbwd-delta-{d}-d{hd}-32-dlse" for d in _DT for hd in (64, 128)]
    + [f"attnbwd-{w}-{d}-d{hd}-32x32-{c}-nomask" for w in ("dkdv", "dq") for d in _DT
       for hd in (64, 128) for c in ("full", "causal")]
    + [f"attnbwd-{w}-{d}-d64-32x32-full-{m}" for w in ("dkdv", "dq") for d in _DT
       for m in ("fmask", "bmask")]
    + [f"attnbwd-{w}-{d}-d64-32x32-{c}-nomask-drop" for w in ("dkdv", "dq") for d in _DT
       for c in ("full", "causal")]
    # FlexAttention backward (zt_ops_flex_bwd_plan): the forward's exported
    # mods over torch's default 128-blocks (the delta kernel is SDPA's), in
    # every float dtype at d64 (fp32 accumulation, gradients in the input's
    # dtype, as torch's flex backward), and d128 for causal and softcap.
    + [f"attnbwd-{w}-{d}-d64-32x32-full-nomask-{s}-{mm}-sparse128" for w in ("dkdv", "dq")
       for d in _DT
       for s, mm in (("none", "none"), ("none", "causal"), ("none", "sliding"),
                     ("none", "document"), ("alibi", "causal"), ("softcap", "causal"))]
    + [f"attnbwd-{w}-{d}-d128-32x32-full-nomask-{s}-causal-sparse128" for w in ("dkdv", "dq")
       for d in ("f16", "bf16") for s in ("none", "softcap")]
    # A mask mod built with the C builder, spliced in (runtime/ops/ops_splice.c).
    + [f"attnbwd-{w}-{d}-d64-32x32-full-nomask-none-ext-sparse128" for w in ("dkdv", "dq")
       for d in ("f32", "f16")]
    # A score mod built with the C builder and its derivative (a second
    # builder function), spliced in; with a builder mask mod too.
    + [f"attnbwd-{w}-{d}-d64-32x32-full-nomask-ext-{mm}-sparse128" for w in ("dkdv", "dq")
       for d, mm in (("f32", "none"), ("f32", "ext"), ("f16", "ext"))]
)
# Row-major variants of the attention exports: the C API takes SPEC-rm16
# when q, k, v, out (and the backward's grad_out and gradients) have unit
# head-dim strides and the other strides multiples of 16, else (or when the
# file is absent: dropout and split-KV have none) SPEC.
SPECS = SPECS + [
    s + "-rm16" for s in SPECS
    if (s.startswith("attn-") or s.startswith("attnbwd-dkdv-") or s.startswith("attnbwd-dq-"))
    and "-drop" not in s and "-split" not in s]


def _tiles(text, n, spec):
    parts = text.split("x")
    if len(parts) != n or not all(p.isdigit() for p in parts):
        raise ValueError(f"{spec}: tiles must be {'x'.join(['N'] * n)}, got {text!r}")
    return [int(p) for p in parts]


def _build(kernel, params, constexprs, types, pins=(), hints=()):
    """Tile IR of `kernel` with every run-time parameter in `params` typed
    by `types` (default int32); the integers in `pins` compiled in as 1 and
    the parameters in `hints` declared multiples of 16 (as the launcher
    specializes them), nothing else specialized."""
    from ..language import dtypes as T
    arg_types, rows = {}, []
    for n in pins:
        constexprs[n] = 1
    for n in params:
        if n in constexprs:
            continue
        t = types.get(n, "int32")
        if t is None:
            constexprs[n] = None
            continue
        if t.startswith("*"):
            arg_types[n] = T.pointer_to(getattr(T, t[1:]))
            rows.append((n, "ptr", 0))
        else:
            arg_types[n] = getattr(T, t)
            rows.append((n, {"float32": "fp32", "int32": "int32"}[t], 0))
    text = kernel.build_tile_ir(arg_types, constexprs, {n: 16 for n in hints}, {})
    return text, rows


def spec_manifest(spec):
    """(kernel name, tile IR text, [(name, kind, 0)], notes for the .args header)
    of a spec string."""
    from . import _kernels
    f = spec.split("-")
    pins, hints = (), ()
    # Attention's row-major variant (the C API picks it as GEMM's -rm16):
    # unit head-dim strides compiled in, the other strides and the pointers
    # hinted multiples of 16, so the Xe lowering uses 2D block IO.
    rm16 = f[0] in ("attn", "attnbwd") and len(f) > 5 and f[-1] == "rm16"
    if rm16:
        f = f[:-1]
        if f[1] == "delta":
            raise ValueError(f"{spec}: the delta kernel has no -rm16 variant (no dot)")
    if f[0] == "gemm" and len(f) in (5, 6):
        _, dt, act, epi, tiles = f[:5]
        import re
        q = re.fullmatch(r"(f32|f16|bf16)w(4|8)g([0-9]+)", dt)
        bits, group = (int(q.group(2)), int(q.group(3))) if q else (0, 1)
        if q:
            dt = q.group(1)
        if ((dt not in _DT and dt != "i8") or act not in _ACT or epi not in ("plain", "epi")
                or (len(f) == 6 and f[5] != "rm16") or (q and group < 1)):
            raise ValueError(f"{spec}: not a gemm spec (gemm-DT-ACT-plain|epi-BMxBNxBK[-rm16], "
                             "DT f32|f16|bf16|i8|DTwBITSgGROUP)")
        if dt == "i8" and epi != "plain":
            raise ValueError(f"{spec}: int8 GEMMs are plain (exact int32 out)")
        if len(f) == 6:
            # Row-major A, B and out: unit column strides compiled in, row
            # strides and pointers hinted 16-divisible (what the Xe lowering
            # needs for 2D block IO).
            pins = ("s_ak", "s_bn", "s_on")
            hints = ("A", "B", "OUT", "s_am", "s_bk", "s_om")
        if epi == "plain" and act != "none":
            raise ValueError(f"{spec}: an activation needs the epi epilogue")
        bm, bn, bk = _tiles(tiles, 3, spec)
        if bits and group % bk and bk % group:
            raise ValueError(f"{spec}: group {group} and BLOCK_K {bk} must divide one another")
        kern = _kernels.load("gemm").gemm_kernel
        e = epi == "epi"
        ty = "*int8" if dt == "i8" else "*" + _DT[dt]
        types = {"A": ty, "B": "*int8" if bits else ty, "OUT": "*int32" if dt == "i8" else ty,
                 "BIAS": ty if e else None, "RES": ty if e else None,
                 "C_IN": ty if e else None, "SCALES": ty if bits else None,
                 "alpha": "float32", "beta": "float32"}
        ce = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, ACT=_ACT[act], EPILOGUE=e,
                  ACC_INT=dt == "i8", WEIGHT_BITS=bits, GROUP_K=group, HAS_BIAS=e, HAS_RES=e,
                  HAS_C=e, PRECISION=None)
    elif f[0] == "attncombine" and len(f) == 4:
        _, dt, hd, bm = f
        if dt not in _DT or not hd.startswith("d") or not hd[1:].isdigit() or not bm.isdigit():
            raise ValueError(f"{spec}: not a combine spec (attncombine-DT-dHD-BM)")
        kern = _kernels.load("attention").attn_split_combine
        ty = "*" + _DT[dt]
        types = {"WS_ACC": "*float32", "WS_M": "*float32", "WS_L": "*float32", "O": ty,
                 "LSE": "*float32", "lse_scale": "float32"}
        ce = dict(HEAD_DIM=int(hd[1:]), BLOCK_M=int(bm))
    elif f[0] == "attn" and len(f) in (9, 10, 11):
        _, dt, hd, tiles, causal, mask, smod, mmod, kv = f[:9]
        variant = "-".join(f[9:])
        if variant not in ("", "drop", "split", "drop-split"):
            raise ValueError(f"{spec}: the attention variant is drop, split or drop-split, "
                             f"got {variant!r}")
        mods = _kernels.load("mods")
        if (dt not in _DT or not hd.startswith("d") or not hd[1:].isdigit()
                or causal not in ("causal", "full") or mask not in ("nomask", "fmask", "bmask")
                or (smod != "none" and smod not in mods.SCORE_MODS)
                or (mmod != "none" and mmod not in mods.MASK_MODS)):
            raise ValueError(f"{spec}: not an attention spec "
                             "(attn-DT-dHD-BMxBN-causal|full-nomask|fmask|bmask-SCORE-MASKMOD-KV)")
        bm, bn = _tiles(tiles, 2, spec)
        if kv == "dense":
            sparse, full, kvb = False, False, 1
        elif kv.startswith("sparsefull") and kv[10:].isdigit():
            sparse, full, kvb = True, True, int(kv[10:])
        elif kv.startswith("sparse") and kv[6:].isdigit():
            sparse, full, kvb = True, False, int(kv[6:])
        else:
            raise ValueError(f"{spec}: KV must be dense, sparseN or sparsefullN, got {kv!r}")
        if mmod != "none" and not sparse:
            raise ValueError(f"{spec}: a mask mod needs a block mask (sparseN or sparsefullN)")
        kern = _kernels.load("attention").attn_fwd
        ty = "*" + _DT[dt]
        mk = {"nomask": 0, "fmask": 1, "bmask": 2}[mask]
        ws = "*float32" if "split" in variant else None
        types = {"Q": ty, "K": ty, "V": ty, "O": ty, "LSE": "*float32", "M_OUT": None,
                 "WS_ACC": ws, "WS_M": ws, "WS_L": ws,
                 "sm_scale": "float32", "lse_scale": "float32",
                 "dropout_p": "float32" if "drop" in variant else None,
                 "seed": "int32" if "drop" in variant else None,
                 "mask_ptr": None if mk == 0 else (ty if mk == 1 else "*int8"),
                 "kv_num": "*int32" if sparse else None, "kv_idx": "*int32" if sparse else None,
                 "full_num": "*int32" if full else None, "full_idx": "*int32" if full else None,
                 "B0": "*float32" if smod in ("alibi", "ext") else None, "B1": None,
                 "B2": "*int32" if mmod in ("document", "ext") else None,
                 "B3": "*float32" if (smod != "none" or mmod != "none") else None}
        ce = dict(HEAD_DIM=int(hd[1:]), BLOCK_M=bm, BLOCK_N=bn, MASK_KIND=mk,
                  IS_CAUSAL=causal == "causal",
                  SCORE_MOD=mods.SCORE_MODS[smod] if smod != "none" else None,
                  MASK_MOD=mods.MASK_MODS[mmod] if mmod != "none" else None,
                  SPARSE=sparse, HAS_FULL=full, KV_SPARSE=kvb, WRITE_MAX=False,
                  DROPOUT="drop" in variant, SPLIT_KV=2 if "split" in variant else 1)
    elif f[0] == "attnbwd" and len(f) in (5, 6) and f[1] == "delta":
        _, _, dt, hd, bm = f[:5]
        dlse = len(f) == 6
        if (dt not in _DT or not hd.startswith("d") or not hd[1:].isdigit() or not bm.isdigit()
                or (dlse and f[5] != "dlse")):
            raise ValueError(f"{spec}: not a backward delta spec (attnbwd-delta-DT-dHD-BM[-dlse])")
        kern = _kernels.load("attention_bwd").attn_bwd_delta
        ty = "*" + _DT[dt]
        types = {"O": ty, "DO": ty, "DELTA": "*float32", "DLSE": "*float32" if dlse else None,
                 "LSE": "*float32", "LSE2": "*float32", "lse_scale": "float32"}
        ce = dict(HEAD_DIM=int(hd[1:]), BLOCK_M=int(bm), HAS_DLSE=dlse, CONVERT_LSE=True)
    elif f[0] == "attnbwd" and len(f) == 10 and f[1] in ("dkdv", "dq"):
        # FlexAttention backward: exported mods, a block mask as the dense
        # state table and per-program walk lists (attention_bwd.py's BLOCKS),
        # N the block length along the walked axis (dq: the KV block, dk/dv:
        # the query block), so SUBS = N / the tile.
        _, which, dt, hd, tiles, causal, mask, smod, mmod, sp = f
        mods = _kernels.load("mods")
        if (dt not in _DT or not hd.startswith("d") or not hd[1:].isdigit()
                or causal != "full" or mask != "nomask"
                or (smod != "none" and smod not in mods.SCORE_GRADS)
                or (mmod != "none" and mmod not in mods.MASK_MODS)
                or not sp.startswith("sparse") or not sp[6:].isdigit()):
            raise ValueError(f"{spec}: not a flex backward spec (attnbwd-dkdv|dq-DT-dHD-BMxBN-"
                             "full-nomask-SCORE-MASKMOD-sparseN, SCORE none|alibi|softcap|ext, "
                             "MASKMOD none|causal|sliding|document|ext)")
        bm, bn = _tiles(tiles, 2, spec)
        n = int(sp[6:])
        tile = bn if which == "dq" else bm
        if n < tile or n % tile:
            raise ValueError(f"{spec}: the block length {n} must be a multiple of the tile {tile}")
        kern = getattr(_kernels.load("attention_bwd"), "attn_bwd_" + which)
        ty = "*" + _DT[dt]
        types = {n_: ty for n_ in ("Q", "K", "V", "DO", "DK", "DV", "DQ")}
        types.update({"LSE": "*float32", "DELTA": "*float32", "sm_scale": "float32",
                      "dropout_p": None, "seed": None, "mask_ptr": None,
                      "blocks": "*int8", "lnum": "*int32", "lidx": "*int32"})
        # The slots as the C API fills them (mods.py): the score mod's and
        # its derivative's tensor in 0, the mask mod's in 2, parameters in 3.
        for pre, name in (("S", smod), ("G", smod), ("M", mmod)):
            for i in range(4):
                types[f"{pre}{i}"] = None
            if name != "none":
                types[pre + "3"] = "*float32"
            if name == "alibi" or (pre != "M" and name == "ext"):
                types[pre + "0"] = "*float32"
            if name == "document" or (pre == "M" and name == "ext"):
                types[pre + "2"] = "*int32"
        ce = dict(HEAD_DIM=int(hd[1:]), BLOCK_M=bm, BLOCK_N=bn, MASK_KIND=0, IS_CAUSAL=False,
                  SCORE_MOD=mods.SCORE_MODS[smod] if smod != "none" else None,
                  SCORE_GRAD=mods.SCORE_GRADS[smod] if smod != "none" else None,
                  MASK_MOD=mods.MASK_MODS[mmod] if mmod != "none" else None,
                  BLOCKS=True, SUBS=n // tile, DROPOUT=False,
                  stride_mb=0, stride_mh=0, stride_mm=0, stride_mn=0)
        if which == "dkdv":
            ce["STATS_2D"] = True
    elif f[0] == "attnbwd" and len(f) in (7, 8) and f[1] in ("dkdv", "dq"):
        _, which, dt, hd, tiles, causal, mask = f[:7]
        if len(f) == 8 and f[7] != "drop":
            raise ValueError(f"{spec}: the backward variant is drop, got {f[7]!r}")
        drop = len(f) == 8
        if (dt not in _DT or not hd.startswith("d") or not hd[1:].isdigit()
                or causal not in ("causal", "full") or mask not in ("nomask", "fmask", "bmask")):
            raise ValueError(f"{spec}: not a backward spec "
                             "(attnbwd-dkdv|dq-DT-dHD-BMxBN-causal|full-nomask|fmask|bmask[-drop])")
        bm, bn = _tiles(tiles, 2, spec)
        kern = getattr(_kernels.load("attention_bwd"), "attn_bwd_" + which)
        ty = "*" + _DT[dt]
        mk = {"nomask": 0, "fmask": 1, "bmask": 2}[mask]
        types = {n: ty for n in ("Q", "K", "V", "DO", "DK", "DV", "DQ")}
        types.update({"LSE": "*float32", "DELTA": "*float32", "sm_scale": "float32",
                      "dropout_p": "float32" if drop else None,
                      "seed": "int32" if drop else None,
                      "mask_ptr": None if mk == 0 else (ty if mk == 1 else "*int8"),
                      "blocks": None, "lnum": None, "lidx": None})
        for n in ("S0", "S1", "S2", "S3", "G0", "G1", "G2", "G3", "M0", "M1", "M2", "M3"):
            types[n] = None
        ce = dict(HEAD_DIM=int(hd[1:]), BLOCK_M=bm, BLOCK_N=bn, MASK_KIND=mk,
                  IS_CAUSAL=causal == "causal", SCORE_MOD=None, SCORE_GRAD=None, MASK_MOD=None,
                  BLOCKS=False, SUBS=1, DROPOUT=drop,
                  # No block mask: its strides and sizes are dead, compiled in
                  # as the Python launcher passes them.
                  sbk_b=0, sbk_h=0, sbk_m=0, sbk_n=0, Q_SPARSE=1, KV_SPARSE=1,
                  ln_b=0, ln_h=0, li_b=0, li_h=0, li_r=0)
        if mk == 0:
            ce.update(stride_mb=0, stride_mh=0, stride_mm=0, stride_mn=0)
        if which == "dkdv":
            # Row statistics in the form every target builds (the Xe one).
            ce["STATS_2D"] = True
    else:
        raise ValueError(f"{spec}: a spec starts with gemm- (5 fields), attn- (9 to 11 "
                         "fields), attncombine- (4 fields) or attnbwd- (5, 7, 8 or 10 fields)")
    if rm16:
        ops = {"attn": ("q", "k", "v", "o"), "dq": ("q", "k", "v", "d", "g"),
               "dkdv": ("q", "k", "v", "d", "kg", "vg")}[f[1] if f[0] == "attnbwd" else "attn"]
        ptrs = {"attn": "QKVO", "dq": ("Q", "K", "V", "DO", "DQ"),
                "dkdv": ("Q", "K", "V", "DO", "DK", "DV")}[f[1] if f[0] == "attnbwd" else "attn"]
        seq = {"q": "m", "o": "m", "d": "m", "g": "m"}
        pins = tuple(f"stride_{o}d" for o in ops)
        hints = tuple(ptrs) + tuple(f"stride_{o}{x}" for o in ops
                                    for x in ("b", "h", seq.get(o, "n")))
    text, rows = _build(kern, kern.arg_names, ce, types, pins, hints)
    notes = []
    if f[0] == "attn" and f[-1] == "split":
        notes.append("split: launch over a third grid axis of the share count, then "
                     "attncombine-" + "-".join((f[1], f[2], f[3].split("x")[0])))
    if f[0] == "attn" or (f[0] == "attnbwd" and len(f) == 10):
        kinds = (("score", smod), ("mask", mmod))
        if f[0] == "attnbwd":  # a builder-made score mod's derivative too
            kinds += (("score_grad", smod),)
        for kind, name in kinds:
            if name == "ext":
                notes.append(f"splice {kind} " + " ".join(map(str, _statement_lines(
                    getattr(mods, f"ext_{kind}")))))
    return kern.__name__, _relative(text), rows, notes


def _statement_lines(fn):
    """Source lines of the three statements of a placeholder mod."""
    import inspect
    src, first = inspect.getsourcelines(fn.fn if hasattr(fn, "fn") else fn)
    body = [first + i for i, ln in enumerate(src)
            if ln.startswith("    ") and not ln.strip().startswith("#")]
    return body[-3:]


def _relative(text):
    """Source locations without the checkout's path: the templates' as
    stdlib-kernels/..., zetile's own (tl.rand's philox in language/random.py,
    which dropout inlines) as zetile/..."""
    from ._kernels import stdlib_dir
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    text = text.replace(os.path.abspath(stdlib_dir()), "stdlib-kernels")
    return text.replace(pkg + os.sep, "zetile" + os.sep)


def export_specs(out_dir, specs=SPECS):
    os.makedirs(out_dir, exist_ok=True)
    for spec in specs:
        kname, text, rows, notes = spec_manifest(spec)
        with open(os.path.join(out_dir, spec + ".tile"), "w") as f:
            f.write(text)
        with open(os.path.join(out_dir, spec + ".args"), "w") as f:
            f.write(f"# {spec}: run-time arguments of {kname} in launch order ("
                    + ("unit column strides compiled in, pointers and the other strides "
                       "hinted multiples of 16" if spec.endswith("-rm16") else
                       "generic: every integer at run time") + ")\n")
            for n in notes:
                f.write(f"# {n}\n")
            for r in rows:
                f.write(f"{r[0]} {r[1]} {r[2]}\n")
    return list(specs)


def export(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for name, launch in _cases().items():
        text, rows = manifest(launch)
        with open(os.path.join(out_dir, name + ".tile"), "w") as f:
            f.write(text)
        with open(os.path.join(out_dir, name + ".args"), "w") as f:
            f.write(f"# {name}: run-time arguments of {launch.kernel.__name__} in launch order; "
                    f"grid {launch.grid[0]} {launch.grid[1] if len(launch.grid) > 1 else 1}\n")
            for r in rows:
                f.write(f"{r[0]} {r[1]} {r[2]}\n")
        written.append(name)
    return written


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "stdlib-kernels", "prebuilt")
    if len(sys.argv) > 2:
        try:
            print("\n".join(export_specs(target, sys.argv[2:])))
        except ValueError as e:
            sys.exit(f"zetile.ops.export: {e}")
    else:
        print("\n".join(export(target) + export_specs(target)))
