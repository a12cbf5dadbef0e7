"""zetile.ops.gemm: the GEMM template (stdlib-kernels/gemm.py) from Python."""

from .. import cdiv, next_power_of_2
from . import _arrays, _kernels

ACTIVATIONS = {None: 0, "none": 0, "relu": 1, "gelu": 2, "gelu_tanh": 3, "silu": 4}
_INPUT = ("float16", "bfloat16", "float32", "int8")


def _batched(v, what):
    if v.ndim == 2:
        return v.expand((1,) + v.shape), False
    if v.ndim == 3:
        return v, True
    raise ValueError(f"gemm: {what} must be 2-D or 3-D (batched), got shape {v.shape}")


def _operand_strides(v, nb):
    """The strides a dot operand is launched with. With one batch the batch
    stride is never used (program_id(1) is 0), but a 0 there (a 2-D operand
    or a broadcast one) is not hinted by the launcher (it hints positive
    multiples of 16 only), and `batch * stride` then hides the operand's
    alignment: the Xe lowering reads a transposed fp16/bf16 B (x @ w.T) with
    transposed 2D block reads only where its first element is provably
    4-byte aligned, so it gathered rows instead. 16 is hinted; any value
    gives the same addresses."""
    s = v.strides
    return (16,) + tuple(s[1:]) if nb == 1 and s[0] == 0 else s


def _gathered_xmx_tiles(cfg, int8, plain):
    """Tiles for rows with XMX but no 2D block IO and 128 registers (dg2,
    zetile's SIMD8 lowering): every operand element is gathered with its own
    address, so the default 64x64x32 over the 8 subgroups the lowering picks
    spills (acm-g10: 709 scratch sends). What ocloc compiles without a
    scratch send (E2, docs/TEMPLATES.md "dg2 without spills"): a K step of
    16 over 16 subgroups, 64x64 for plain fp16/bf16 (4 DPAS a subgroup in
    the loop), 32x64 with an epilogue, weight-only scales or fp32 (64x64
    spills 65-297 there); int8 DPAS take K 32, and 32x32 (64x64: 236)."""
    cfg["BLOCK_K"] = 32 if int8 else 16
    if int8:
        cfg["BLOCK_M"], cfg["BLOCK_N"] = min(cfg["BLOCK_M"], 32), min(cfg["BLOCK_N"], 32)
    elif not plain:
        cfg["BLOCK_M"] = min(cfg["BLOCK_M"], 32)
    return 16


def config_for(M, N, K, config=None, dtype=None, plain=True):
    """The tile configuration: `config` if given, else what `zetile tune gemm`
    stored for (M, N, K, dtype) on this device, else the template's default
    with tiles shrunk (to a power of two, at least 16) for small M or N and
    to the target's registers (_kernels.shrink_to_fit: the accumulator and
    both operand tiles, on rows without XMX; _gathered_xmx_tiles on dg2's
    row, which also asks for 16 subgroups: cfg["num_warps"], a launch
    option, not a kernel parameter). `plain`: fp16/bf16 without epilogue or
    weight-only scales."""
    g = _kernels.load("gemm")
    if config is None and dtype is not None:
        config = _kernels.tuned_config(g.gemm_kernel, [M, N, K, dtype])
    cfg = dict(g.DEFAULT if config is None else config)
    if config is None:
        row = _kernels.target_row()
        # Only for zetile's SIMD8 lowering (the row's simd8_lowering), not the
        # shared Xe lowering at 8 lanes (ZETILE_DG2_LOWERING=shared*: these
        # tiles spill there too, 128 scratch sends, and the bf16 int4 one
        # does not split over its subgroup grid).
        if (row and row["xmx"] and not row["block_io_2d"] and row["simd8_lowering"]
                and row["grf"] * row["grf_bytes"] <= 4096):
            cfg["num_warps"] = _gathered_xmx_tiles(cfg, dtype == "int8", plain)
        cfg["BLOCK_M"] = min(cfg["BLOCK_M"], max(16, next_power_of_2(M)))
        cfg["BLOCK_N"] = min(cfg["BLOCK_N"], max(16, next_power_of_2(N)))
        _kernels.shrink_to_fit(cfg, lambda c: (c["BLOCK_M"] * c["BLOCK_N"] + c["BLOCK_K"]
                                               * (c["BLOCK_M"] + c["BLOCK_N"])),
                               ("BLOCK_N", "BLOCK_M"))
    return cfg


# Split-K: at most this many K slices, each at least this deep.
MAX_SPLITS = 16
MIN_SLICE = 256


def split_k_for(M, N, K, nb, cfg, programs=None):
    """How many K slices a GEMM of this shape should be cut into (1: none).
    Only skinny shapes split: K at least 4 times M and N, the output tiles
    fewer than the device can run at once (`programs`, default: 2 per
    compute unit: CPU cores, GPU EUs), and K deep enough to give every slice
    MIN_SLICE or more."""
    if K < 4 * max(M, N):
        return 1
    if programs is None:
        from .. import runtime
        cu = runtime.info(runtime.get_device()).get("compute_units", 0) or 1
        programs = 2 * cu
    tiles = cdiv(M, cfg["BLOCK_M"]) * cdiv(N, cfg["BLOCK_N"]) * nb
    if tiles >= programs:
        return 1
    return max(1, min(MAX_SPLITS, cdiv(programs, tiles), K // MIN_SLICE))


class SplitKLaunch:
    """A split-K GEMM planned: the partial-sum launch, then the reduction."""

    def __init__(self, partial, reduce, result):
        self.launches, self.result = (partial, reduce), result
        self.kernel, self.grid = partial.kernel, partial.grid

    def run(self):
        for launch in self.launches:
            launch.run()
        return self.result


def gemm(a, b, *, bias=None, activation=None, residual=None, alpha=1.0, beta=0.0, c=None,
         out_dtype=None, out=None, scales=None, weight_bits=None, precision=None, config=None,
         split_k=None, plan=False):
    """out = act(alpha * (a @ b) + beta * c + bias) + residual, cast to out_dtype.

    a: (M, K) or (batch, M, K); b: (K, N) or (batch, K, N); either may be a
    transposed or otherwise strided view, and a batch of 1 (or a 2-D
    operand) broadcasts. fp16, bf16 and fp32 accumulate in fp32; int8 x int8
    accumulates exactly in int32 (the default out_dtype then). bias, c and
    residual broadcast to the output: a (N,) bias adds to every row, an
    (M, 1) bias to every column. activation: None, "relu", "gelu",
    "gelu_tanh" or "silu".

    Weight-only quantization (the LLM decode case): with `scales` given, b
    holds int8 weights (weight_bits=8, (K, N)) or int4 pairs packed along K
    (weight_bits=4, (K // 2, N) uint8/int8 bytes, low nibble = even row,
    value = nibble - 8), dequantized as w * scales[k // group, n] where
    group = K // scales.shape[0].

    Inputs and outputs are torch tensors, numpy arrays, zetile.Tensor or
    DLPack objects; the result is the kind of `a` (or `out`, written in place).
    `config` overrides the tile sizes (one of stdlib-kernels/gemm.py CONFIGS).
    precision: fp32 inputs only, None (the compiler's default), "tf32" or
    "ieee" (Triton's input_precision: on Xe 3 or 6 bf16-piece DPAS per product).
    split_k: None picks by shape (split_k_for: skinny M, N with a deep K cut
    K into slices summed by a second, deterministic pass), 1 never splits,
    n > 1 cuts K into n slices (fp16/bf16/fp32 without weight-only scales).
    plan=True returns the planned launch (_kernels.Launch, or SplitKLaunch:
    its two launches) instead of running it.
    """
    act = ACTIVATIONS.get(activation)
    if act is None:
        raise ValueError(f"gemm: activation must be one of None, 'relu', 'gelu', 'gelu_tanh', "
                         f"'silu', got {activation!r}")
    av = _arrays.as_view(a, "gemm: a")
    bv = _arrays.as_view(b, "gemm: b")
    A, a3 = _batched(av, "a")
    B, b3 = _batched(bv, "b")
    M, K = A.shape[1], A.shape[2]
    bits = 0
    if scales is not None:
        bits = 8 if weight_bits is None else int(weight_bits)
        if bits not in (4, 8):
            raise ValueError(f"gemm: weight_bits must be 4 or 8, got {weight_bits}")
        if av.dtype not in ("float16", "bfloat16", "float32"):
            raise TypeError(f"gemm: weight-only quantization takes fp16/bf16/fp32 activations, "
                            f"got {av.dtype}")
        if bv.dtype not in ("int8", "uint8"):
            raise TypeError(f"gemm: quantized weights must be int8/uint8 bytes, got {bv.dtype}")
        kb = B.shape[1] * (2 if bits == 4 else 1)
        if kb != K:
            raise ValueError(f"gemm: a has K={K} but the {bits}-bit weights hold K={kb}")
        if bits == 4 and K % 2:
            raise ValueError("gemm: int4 weights need an even K")
    elif weight_bits is not None:
        raise ValueError("gemm: weight_bits needs scales")
    else:
        if av.dtype not in _INPUT or bv.dtype not in _INPUT:
            raise TypeError(f"gemm: supported input types are {', '.join(_INPUT)}; got "
                            f"{av.dtype} and {bv.dtype}")
        if av.dtype != bv.dtype:
            raise TypeError(f"gemm: a and b must have the same dtype, got {av.dtype} and {bv.dtype}")
        if B.shape[1] != K:
            raise ValueError(f"gemm: shapes {av.shape} and {bv.shape} cannot be multiplied")
    N = B.shape[2]
    if A.shape[0] != B.shape[0] and 1 not in (A.shape[0], B.shape[0]):
        raise ValueError(f"gemm: batch sizes {A.shape[0]} and {B.shape[0]} do not broadcast")
    nb = max(A.shape[0], B.shape[0])
    A = A.expand((nb, M, K))
    B = B.expand((nb,) + B.shape[1:])
    acc_int = av.dtype == "int8"
    if out_dtype is None:
        out_dtype = _arrays.as_view(out).dtype if out is not None else ("int32" if acc_int else av.dtype)
    out_dtype = _arrays.dtype_name(out_dtype)
    epilogue = (alpha != 1.0 or c is not None or bias is not None or act != 0
                or residual is not None or (acc_int and out_dtype != "int32"))
    if acc_int and epilogue and not _arrays.is_float(out_dtype) and (
            alpha != 1.0 or beta != 0.0 or act != 0):
        raise ValueError("gemm: int8 with alpha/beta/activation needs a floating out_dtype")
    oshape = (nb, M, N) if (a3 or b3) else (M, N)
    if out is None:
        out = _arrays.empty(av.kind, oshape, out_dtype)
    ov = _arrays.as_view(out, "gemm: out")
    if ov.shape != oshape:
        raise ValueError(f"gemm: out has shape {ov.shape}, expected {oshape}")
    if ov.dtype != out_dtype:
        raise TypeError(f"gemm: out has dtype {ov.dtype}, expected {out_dtype}")
    O = ov if ov.ndim == 3 else ov.expand((1, M, N))

    def opt(x, what):
        if x is None:
            return None, (0, 0, 0)
        v = _arrays.as_view(x, f"gemm: {what}")
        try:
            v = v.expand((nb, M, N))
        except ValueError:
            raise ValueError(f"gemm: {what} of shape {v.shape} does not broadcast to "
                             f"{(nb, M, N)}") from None
        return v.arg, v.strides

    if c is not None and beta == 0.0:
        c = None          # torch's addmm: beta=0 ignores C (even NaN in it)
    bias_arg, sx = opt(bias, "bias")
    res_arg, sr = opt(residual, "residual")
    c_arg, sc = opt(c, "c")
    sc_arg, ss, gk = None, (0, 0), 1
    if scales is not None:
        sv = _arrays.as_view(scales, "gemm: scales")
        if sv.ndim != 2 or sv.shape[1] != N or K % sv.shape[0]:
            raise ValueError(f"gemm: scales must be (groups, N) with K={K} a multiple of groups, "
                             f"got {sv.shape}")
        sc_arg, ss, gk = sv.arg, sv.strides, K // sv.shape[0]
    if precision is not None:
        if precision not in ("tf32", "ieee"):
            raise ValueError(f"gemm: precision must be None, 'tf32' or 'ieee', got {precision!r}")
        if av.dtype != "float32" or bits:
            raise ValueError("gemm: precision applies to fp32 inputs only")
    cfg = config_for(M, N, K, config, None if bits else av.dtype,
                     plain=not (bits or epilogue or av.dtype == "float32"))
    num_warps = cfg.pop("num_warps", None)
    if bits and gk % cfg["BLOCK_K"] and cfg["BLOCK_K"] % gk:
        raise ValueError(f"gemm: group size {gk} and BLOCK_K {cfg['BLOCK_K']} must divide one another")
    if split_k is not None and (int(split_k) != split_k or split_k < 1):
        raise ValueError(f"gemm: split_k must be None or an integer >= 1, got {split_k!r}")
    splits = 1
    if not bits and not acc_int:
        splits = split_k_for(M, N, K, nb, cfg) if split_k is None else int(split_k)
    elif split_k not in (None, 1):
        raise ValueError("gemm: split_k takes fp16/bf16/fp32 inputs without weight-only scales")
    if splits > 1:
        return _split_k(A, B, O, out, av.kind, M, N, K, nb, splits, cfg, precision, act,
                        epilogue, (bias_arg, sx), (res_arg, sr), (c_arg, sc), alpha, beta, plan,
                        num_warps)
    kern = _kernels.load("gemm").gemm_kernel
    grid = (cdiv(M, cfg["BLOCK_M"]) * cdiv(N, cfg["BLOCK_N"]), nb)
    launch = _kernels.Launch(
        kern, grid,
        (A.arg, B.arg, O.arg, bias_arg, res_arg, c_arg, sc_arg, M, N, K,
         *_operand_strides(A, nb), *_operand_strides(B, nb), *O.strides, *sx, *sr, *sc, *ss,
         float(alpha), float(beta)),
        dict(ACT=act, EPILOGUE=epilogue, ACC_INT=acc_int, WEIGHT_BITS=bits, GROUP_K=gk,
             HAS_BIAS=bias_arg is not None, HAS_RES=res_arg is not None,
             HAS_C=c_arg is not None, PRECISION=precision, **cfg), out, num_warps)
    return launch if plan else launch.run()


def _split_k(A, B, O, out, kind, M, N, K, nb, splits, cfg, precision, act, epilogue,
             bias, res, c, alpha, beta, plan, num_warps=None):
    """K cut into `splits` slices of whole BLOCK_K steps: fp32 partial tiles
    into a (splits, nb, M, N) workspace, then a reduction in slice order."""
    g = _kernels.load("gemm")
    bk = cfg["BLOCK_K"]
    k_split = cdiv(cdiv(K, splits), bk) * bk
    splits = cdiv(K, k_split)              # no empty slice
    ws = _arrays.empty(kind, (splits, nb, M, N), "float32")
    wsv = _arrays.as_view(ws, "gemm: workspace")
    tiles = cdiv(M, cfg["BLOCK_M"]) * cdiv(N, cfg["BLOCK_N"])
    tile_cfg = dict(BLOCK_M=cfg["BLOCK_M"], BLOCK_N=cfg["BLOCK_N"])
    partial = _kernels.Launch(
        g.gemm_splitk_partial, (tiles, nb, splits),
        (A.arg, B.arg, wsv.arg, M, N, K, k_split, *_operand_strides(A, nb),
         *_operand_strides(B, nb)),
        dict(BLOCK_K=bk, PRECISION=precision, **tile_cfg), None, num_warps)
    (bias_arg, sx), (res_arg, sr), (c_arg, sc) = bias, res, c
    reduce = _kernels.Launch(
        g.gemm_splitk_reduce, (tiles, nb),
        (wsv.arg, O.arg, bias_arg, res_arg, c_arg, M, N, splits, nb, *O.strides, *sx, *sr, *sc,
         float(alpha), float(beta)),
        dict(ACT=act, EPILOGUE=epilogue, HAS_BIAS=bias_arg is not None,
             HAS_RES=res_arg is not None, HAS_C=c_arg is not None, **tile_cfg), out)
    launch = SplitKLaunch(partial, reduce, out)
    return launch if plan else launch.run()
