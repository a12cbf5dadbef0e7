"""Per tutorial: the calls that exercise its kernels, each a case
(name, function) that runs the tutorial's own host code (its wrapper, or its
own test function where it has one) on CPU tensors at a small size and
checks against the tutorial's own torch reference. The sizes keep what
decides a kernel's specialization (block sizes come from the tutorial's
configs, feature dims such as layer norm's N stay the tutorial's); only the
number of rows/programs shrinks. Where a tutorial autotunes, the configs run
are picked here (Intel's XPU configs where the tutorial has them); each runs
as the only config, so nothing is benchmarked.

Used by tutorials_cases.py; `quick` keeps one case per tutorial (pytest)."""
import inspect

import torch

from tutorials_cases import Wrong, each_config, expect, first_line, only_configs


def _cfg(**want):
    def pick(c):
        d = dict(c.kwargs, num_warps=c.num_warps, num_stages=c.num_stages)
        return all(d.get(k) == v for k, v in want.items())
    return pick


def _first(c):
    return True


def t01(m, quick):
    def go():
        x, y = torch.rand(98432), torch.rand(98432)
        expect(m.add(x, y), x + y, 0.0)
    yield "add_kernel", go


def t02(m, quick):
    """The wrapper sizes the launch from device properties; where zetile's
    driver lacks one the kernel is launched as the wrapper would (one
    program per row), which the note records."""
    def direct(x, num_warps):
        n_rows, n_cols = x.shape
        y = torch.empty_like(x)
        import triton
        bs = triton.next_power_of_2(n_cols)
        args = [y, x, x.stride(0), y.stride(0), n_rows, n_cols, bs]
        if "num_stages" in m.softmax_kernel.arg_names:
            # Positional, as the tutorial passes it: num_stages= is a launch option.
            args.append(2)
        m.softmax_kernel[(n_rows, 1, 1)](*args, num_warps=num_warps)
        return y

    x = torch.randn(183, 781)

    def wrapper():
        try:
            y = m.softmax(x)
        except Exception as e:  # noqa: BLE001 - a host-side gap, not the kernel's
            if type(e).__name__ in ("CompilationError", "UnsupportedError"):
                raise
            y = direct(x, 8)
            expect(y, torch.softmax(x, axis=1), 1e-6, 1e-5)
            return f"wrapper failed ({type(e).__name__}: {first_line(e)}); kernel launched directly, 8 warps"
        expect(y, torch.softmax(x, axis=1), 1e-6, 1e-5)
    yield "softmax_kernel", wrapper
    if not quick:
        # Intel's benchmark configs for this kernel: 16-lane subgroups, 32 warps.
        def intel():
            expect(direct(x, 32), torch.softmax(x, axis=1), 1e-6, 1e-5)
        yield "softmax_kernel[w32]", intel


def t03(m, quick):
    k = m.matmul_kernel
    configs = only_configs(k, _cfg(BLOCK_SIZE_M=256, BLOCK_SIZE_N=256, BLOCK_SIZE_K=32))[:1]
    a = torch.rand((512, 512), dtype=torch.float16) - 0.5
    b = torch.rand((512, 512), dtype=torch.float16) - 0.5
    ref = (a.float() @ b.float())
    for label, _ in each_config(k, configs, None):
        def go():
            expect(m.matmul(a, b), ref.half(), 1e-2)
        yield f"matmul_kernel[{label}]", go
        if not quick:
            def relu():
                expect(m.matmul(a, b, activation="leaky_relu"),
                       torch.where(ref >= 0, ref, 0.01 * ref).half(), 1e-2)
            yield f"matmul_kernel[{label},leaky_relu]", relu


def t03a(m, quick):
    k2, k3 = m.matmul_kernel_with_tensor_descriptors, m.matmul_kernel_with_tensor_descriptors_batched
    c2 = only_configs(k2, _cfg(BLOCK_SIZE_M=256, BLOCK_SIZE_N=256, BLOCK_SIZE_K=32))[:1]
    c3 = only_configs(k3, _cfg(BLOCK_SIZE_M=256, BLOCK_SIZE_N=256, BLOCK_SIZE_K=32))[:1]
    n = 512
    for label, _ in each_config(k2, c2, None):
        def go():
            a, b = torch.randn((n, n), dtype=torch.float16), torch.randn((n, n), dtype=torch.float16)
            expect(m.matmul(a, b, torch.float32, torch.float16), (a.float() @ b.float()).half(),
                   1e-2, 1e-2)
        yield f"matmul_kernel_with_tensor_descriptors[{label},fp16]", go
    if quick:
        return
    for label, _ in each_config(k3, c3, None):
        def go3():
            a, b = (torch.randn((2, n, n), dtype=torch.float16), torch.randn((2, n, n), dtype=torch.float16))
            expect(m.matmul(a, b, torch.float32, torch.float16), (a.float() @ b.float()).half(),
                   1e-2, 1e-2)
        yield f"matmul_kernel_with_tensor_descriptors_batched[{label},fp16]", go3


def t04(m, quick):
    def plain():
        x = torch.randn(size=(98432,))
        keep = (torch.rand(size=(98432,)) > 0.5).to(torch.int32)
        expect(m.dropout(x, x_keep=keep, p=0.5), torch.where(keep.bool(), x / 0.5, 0.0), 1e-6)
    yield "_dropout", plain

    def seeded():
        # The tutorial's check: the same seed gives the same mask, another
        # seed another; kept values are x / (1 - p); about p dropped.
        x = torch.randn(size=(98432,)) + 5.0   # no zeros of its own
        o1, o2 = m.seeded_dropout(x, p=0.5, seed=123), m.seeded_dropout(x, p=0.5, seed=123)
        o3 = m.seeded_dropout(x, p=0.5, seed=512)
        if not torch.equal(o1, o2):
            raise Wrong("same seed, different outputs")
        if torch.equal(o1, o3):
            raise Wrong("different seeds, same output")
        kept = o1 != 0
        expect(o1[kept], x[kept] / 0.5, 1e-5)
        frac = float(kept.float().mean())
        if not 0.45 < frac < 0.55:
            raise Wrong(f"{frac:.3f} of the values kept with p=0.5")
    yield "_seeded_dropout", seeded


def t05(m, quick):
    def go():
        # The tutorial's own test, its N and dtype; fewer rows.
        m.test_layer_norm(151, 8192, torch.float32)
    yield "_layer_norm_fwd_fused+bwd", go


def t06(m, quick):
    k = m._attn_fwd
    configs = only_configs(k, lambda c: c.kwargs.get("BLOCK_M") == 128 and c.kwargs.get("BLOCK_N") == 64
                           and c.num_warps in (4, 8) and c.num_stages == 2)
    for i, (label, _) in enumerate(each_config(k, configs[:1] if quick else configs, None)):
        # The tutorial's test config (4 warps) on three shapes; 8 warps on one.
        shapes = [(64, False)] if quick or i else [(64, False), (64, True), (128, False)]
        for d, causal in shapes:
            def go(d=d, causal=causal):
                # The tutorial's own test_op (backward mode runs the forward
                # too), its smallest context.
                m.test_op(1, 2, 128, d, causal, False, "bwd", "triton-fp16")
            yield f"_attn_fwd+bwd[{label},d{d}{',causal' if causal else ''}]", go


def t07(m, quick):
    def go():
        import triton
        x = torch.rand(98432)
        y = torch.zeros(98432)
        n = x.numel()
        m.asin_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK_SIZE"]),)](x, y, n, BLOCK_SIZE=1024)
        expect(y, torch.asin(x), 1e-6, 1e-5)
    yield "asin_kernel", go


def _groups(sizes):
    g = [(torch.rand((s, s), dtype=torch.float16), torch.rand((s, s), dtype=torch.float16)) for s in sizes]
    return [a for a, _ in g], [b for _, b in g]


def t08(m, quick):
    # The kernel's loads and stores are unmasked: every size must be a
    # multiple of the block sizes (the tutorial's are 1024..128).
    A, B = _groups([256, 128, 128])
    ref = [(a.float() @ b.float()).half() for a, b in zip(A, B)]
    k = m.grouped_matmul_kernel
    for label, _ in each_config(k, only_configs(k, _first)[:1], None):
        def go():
            for i, c in enumerate(m.group_gemm_fn(A, B)):
                expect(c, ref[i], 1e-2, 1e-2, what=f"group {i}")
        yield f"grouped_matmul_kernel[{label}]", go
    if quick or not hasattr(m, "grouped_matmul_tma_kernel"):
        return
    kt = m.grouped_matmul_tma_kernel
    for label, _ in each_config(kt, only_configs(kt, _first)[:1], None):
        def tma():
            BT = [b.T.contiguous() for b in B]
            for i, c in enumerate(m.group_gemm_tma_fn(A, BT)):
                expect(c, ref[i], 1e-2, 1e-2, what=f"group {i}")
        yield f"grouped_matmul_tma_kernel[{label}]", tma


def t09(m, quick):
    a = torch.randn((512, 512), dtype=torch.float16)
    b = torch.randn((512, 512), dtype=torch.float16)
    ref = (a.float() @ b.float()).half()
    bt = b.T.contiguous()
    todo = [("matmul_kernel", "matmul", lambda f: f(a, b)),
            ("matmul_kernel_persistent", "matmul_persistent", lambda f: f(a, b))]
    if not quick:
        todo += [("matmul_kernel_tma", "matmul_tma", lambda f: f(a, bt, False)),
                 ("matmul_kernel_tma_persistent", "matmul_tma_persistent", lambda f: f(a, bt, False)),
                 ("matmul_kernel_descriptor_persistent", "matmul_descriptor_persistent",
                  lambda f: f(a, bt, False))]
    for kname, wname, call in todo:
        k = getattr(m, kname, None)
        if k is None:
            continue
        cfgs = only_configs(k, lambda c: c.num_warps == 8 and c.kwargs.get("BLOCK_SIZE_N") == 256
                            and c.kwargs.get("BLOCK_SIZE_K") == 64 and c.kwargs.get("EPILOGUE_SUBTILE")
                            in (None, False))
        for label, _ in each_config(k, cfgs[:1], None):
            def go(wname=wname, call=call):
                expect(call(getattr(m, wname)), ref, 5e-2, 1e-2)
            yield f"{kname}[{label}]", go


DRIVERS = {"01": t01, "02": t02, "03": t03, "03a": t03a, "04": t04, "05": t05, "06": t06,
           "07": t07, "08": t08, "09": t09}
assert all(inspect.isfunction(f) for f in DRIVERS.values())
