"""Intel's own benchmark kernels (intel/intel-xpu-backend-for-triton,
benchmarks/triton_kernels_benchmark/: the kernels Intel tunes for its GPUs),
run like the tutorials: the benchmark file is loaded from the tree (TRITON_SRC
pointing at Intel's repository) with `triton` resolved to zetile, its
definitions only (tutorials_cases.load_tutorial), and each case below calls the
file's own host wrapper (or launches its kernel as the file's benchmark does)
on CPU tensors at a small size, with Intel's own configs (the first of each
list, or the one its benchmark runs), against a torch reference. The
specializations those launches compile are what scripts/tutorials.py builds
for pvc/bmg/dg2, as for the tutorials. Nothing of Intel's is stored here.

The benchmark harness `triton_kernels_benchmark` (timing, plots, the SYCL-TLA
and oneDNN providers) is not needed for the kernels: `harness_stub()` puts a
module in its place whose every attribute is an inert object, so the files'
imports and decorators of their benchmark functions load."""
import os
import sys
import types

import torch

from tutorials_cases import each_config, expect, load_tutorial, only_configs

# row prefix -> file under benchmarks/triton_kernels_benchmark/
FILES = {
    "ib-softmax": "fused_softmax.py",
    "ib-prefix-sums": "prefix_sums.py",
    "ib-gemm": "gemm_benchmark.py",
    "ib-gemm-tensor-of-ptr": "gemm_tensor_of_ptr_benchmark.py",
    "ib-gemm-splitk": "gemm_splitk_benchmark.py",
    "ib-gemm-streamk": "gemm_streamk_benchmark.py",
    "ib-gemm-postop-gelu": "gemm_postop_gelu_benchmark.py",
    "ib-gemm-postop-addmatrix": "gemm_postop_addmatrix_benchmark.py",
    "ib-gemm-preop-exp": "gemm_preop_exp_benchmark.py",
    "ib-fused-gemm": "fused_gemm_benchmark.py",
    "ib-flash-attention": "flash_attention_benchmark.py",
}
NAMES = list(FILES)
# Answers to the host-side questions the files ask of torch.xpu (this torch has
# no XPU): a PVC-like part (Max 1550 has 64 Xe cores per stack; 8 keeps the
# stream-K split small on CPU).
XPU_CAPABILITY = {"gpu_subslice_count": 8, "gpu_eu_count": 64, "max_work_group_size": 1024}


class _Inert:
    """Any attribute, any call, any decorator: itself."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __call__(self, *a, **k):
        return self

    def __iter__(self):
        return iter(())

    def __bool__(self):
        return False


def harness_stub(bench_dir):
    """Installs the stand-in for Intel's benchmark harness package. A name
    that is a benchmark file beside the others (gemm_tensor_of_ptr takes its
    configs from `triton_kernels_benchmark.gemm_benchmark`) is that file,
    loaded like the rest."""
    if "triton_kernels_benchmark" in sys.modules:
        return
    mod = types.ModuleType("triton_kernels_benchmark")
    mod.__path__ = []   # a package: `from triton_kernels_benchmark import x` takes attributes
    inert = _Inert()

    def attr(name):
        path = os.path.join(bench_dir, name + ".py")
        if name.endswith("_benchmark") and os.path.exists(path):
            sub, _ = load_tutorial(path, "triton_kernels_benchmark." + name)
            setattr(mod, name, sub)
            return sub
        return inert
    mod.__getattr__ = attr
    mod.BENCHMARKING_METHOD = "ELAPSED_TIME"
    sys.modules["triton_kernels_benchmark"] = mod


def _cfg(**want):
    def pick(c):
        d = dict(c.kwargs, num_warps=c.num_warps, num_stages=c.num_stages)
        return all(d.get(k) == v for k, v in want.items())
    return pick


def _bf16(*shape):
    return torch.rand(shape, dtype=torch.bfloat16)


def _name(kernel):
    fn = getattr(kernel, "fn", kernel)
    return getattr(fn, "__name__", None) or getattr(getattr(fn, "fn", None), "__name__", "kernel")


def _mm_ref(a, b):
    return a.float() @ b.float()


# --------------------------------------------------------------------- cases
def softmax(m, quick):
    k = m.softmax_kernel
    # The file's autotune list: 32- and 16-lane warps (Intel's `warp_size`;
    # zetile runs 32-lane warps as two 16-lane subgroups each).
    configs = only_configs(k, _cfg(warp_size=32, num_warps=32))[:1]
    if not quick:
        configs += only_configs(k, _cfg(warp_size=16, num_warps=32))[:1]
    x = torch.randn(64, 1024)
    for label, _ in each_config(k, configs, None):
        def go():
            y = torch.empty_like(x)
            expect(m.softmax(x, y), torch.softmax(x, axis=1), 1e-6, 1e-5)
        yield f"softmax_kernel[{label}]", go


def prefix_sums(m, quick):
    for (rows, cols) in ([(32, 16), (64, 32)][:1 if quick else 2]):
        for axis in (0, 1):
            def go(rows=rows, cols=cols, axis=axis):
                x = torch.rand(rows, cols)
                ref = torch.cumsum(x, dim=axis)
                m.scan_kernel[(1, )](x, BLOCK_SIZE_M=rows, BLOCK_SIZE_N=cols, AXIS=axis)
                expect(x, ref, 1e-5, 1e-5)
            yield f"scan_kernel[{rows}x{cols},axis{axis}]", go


def _gemm_cases(m, quick, kernel, batched, size=512):
    """gemm_benchmark's matmul (tensor descriptors, A and/or B transposed,
    batched) with its first config (256x256x32, 32 warps, 256 GRF), and the
    small-M config (8x512x64) Intel keeps for decode shapes."""
    picks = [("BM256", _cfg(BLOCK_SIZE_M=256, BLOCK_SIZE_N=256, BLOCK_SIZE_K=32))]
    if not quick:
        picks.append(("BM8", _cfg(BLOCK_SIZE_M=8, BLOCK_SIZE_N=512, BLOCK_SIZE_K=64)))
    variants = [(False, False)] if quick else [(False, False), (True, False), (False, True)]
    for tag, pick in picks:
        configs = only_configs(kernel, pick)[:1]
        for ta, tb in variants:
            for label, _ in each_config(kernel, configs, None):
                def go(ta=ta, tb=tb):
                    M, N, K = (8 if tag == "BM8" else size), size, size
                    a = _bf16(K, M) if ta else _bf16(M, K)
                    b = _bf16(N, K) if tb else _bf16(K, N)
                    c = torch.empty(M, N, dtype=torch.float32)
                    m.matmul(a, b, c, kernel, batched, transpose_a=ta, transpose_b=tb)
                    ref = _mm_ref(a.T if ta else a, b.T if tb else b)
                    expect(c, ref, 1e-2, 1e-4)
                yield f"{_name(kernel)}[{label}" + (",A^T" if ta else "") + \
                    (",B^T" if tb else "") + "]", go
    if not quick:
        configs = only_configs(batched, _cfg(BLOCK_SIZE_M=256, BLOCK_SIZE_N=256))[:1]
        for label, _ in each_config(batched, configs, None):
            def go_b():
                a, b = _bf16(2, 256, 256), _bf16(2, 256, 256)
                c = torch.empty(2, 256, 256, dtype=torch.float32)
                m.matmul(a, b, c, kernel, batched)
                expect(c, torch.bmm(a.float(), b.float()), 1e-2, 1e-4)
            yield f"{_name(batched)}[{label}]", go_b


def gemm(m, quick):
    yield from _gemm_cases(m, quick, m.matmul_kernel_with_tensor_descriptors,
                           m.matmul_kernel_with_tensor_descriptors_batched)


def gemm_tensor_of_ptr(m, quick):
    """Its kernels through gemm_benchmark.py's wrapper, as the file's own
    benchmark does (it imports that file from the harness package)."""
    gb = sys.modules["triton_kernels_benchmark"].gemm_benchmark
    yield from _gemm_cases(gb, quick, m.matmul_kernel, m.matmul_kernel_batched)


def gemm_splitk(m, quick):
    def go():
        a, b = _bf16(256, 1024), _bf16(1024, 256)
        c = torch.zeros(256, 256, dtype=torch.float32)
        expect(m.matmul(a, b, c), _mm_ref(a, b), 1e-2, 1e-4)
    yield "_kernel[BM256,BN256,BK32,SPLIT_K4,w32]", go


def gemm_streamk(m, quick):
    def go():
        # 5 x 3 tiles of 256 over 8 stream-K programs: both kernels run.
        a, b = _bf16(1280, 512), _bf16(512, 768)
        c = torch.zeros(1280, 768, dtype=torch.float32)
        expect(m.matmul(a, b, c), _mm_ref(a, b), 1e-2, 1e-4)
    yield "matmul[BM256,BN256,BK32,w32]", go


def _desc_gemm(m, quick, ref_of, *extra):
    k = m.matmul_kernel_with_tensor_descriptors
    configs = only_configs(k, _cfg(BLOCK_SIZE_M=256, BLOCK_SIZE_N=256, BLOCK_SIZE_K=32))[:1]
    for label, _ in each_config(k, configs, None):
        def go():
            a, b = _bf16(512, 512), _bf16(512, 512)
            c = torch.empty(512, 512, dtype=torch.float32)
            args = [t(512, 512) for t in extra]
            m.matmul(a, b, *args, c)
            expect(c, ref_of(a, b, *args), 2e-2, 1e-3)
        yield f"matmul_kernel_with_tensor_descriptors[{label}]", go


def gemm_postop_gelu(m, quick):
    yield from _desc_gemm(m, quick, lambda a, b: torch.nn.functional.gelu(_mm_ref(a, b)))


def gemm_postop_addmatrix(m, quick):
    yield from _desc_gemm(m, quick, lambda a, b, d: _mm_ref(a, b) + d,
                          lambda *s: torch.rand(s, dtype=torch.float32))


def gemm_preop_exp(m, quick):
    yield from _desc_gemm(m, quick, lambda a, b: torch.exp(a.float()).bfloat16().float() @ b.float())


def fused_gemm(m, quick):
    k = m.fused_gemm_swiglu_kernel
    configs = only_configs(k, lambda c: True)[:1]
    for label, _ in each_config(k, configs, None):
        def go():
            M = N = K = 256
            x = (torch.rand(M, K) * 0.5 - 0.25).bfloat16()
            w_g, w_fc = [(torch.rand(K, N) * 0.5 - 0.25).bfloat16() for _ in range(2)]
            b_g, b_fc = [(torch.rand(N) * 0.1).bfloat16() for _ in range(2)]
            import triton
            # The file's wrapper allocates y on device "xpu": its launch, on CPU tensors.
            y = torch.empty((M, N), dtype=torch.bfloat16)
            grid = lambda META: (triton.cdiv(M, META['BLOCK_SIZE_M'])   # noqa: E731
                                 * triton.cdiv(N, META['BLOCK_SIZE_N']), )
            k[grid](x, w_g, w_fc, b_g, b_fc, y, M, N, K)
            f = lambda t: t.float()   # noqa: E731
            ref = torch.nn.functional.silu(f(x) @ f(w_g) + f(b_g)) * (f(x) @ f(w_fc) + f(b_fc))
            expect(y, ref, 2e-2, 2e-2)
        yield f"fused_gemm_swiglu_kernel[{label}]", go


def flash_attention(m, quick):
    """The file's _attention.forward with Intel's forward configs (BM128,
    BN64 at 8 and 32 warps), causal and not, head dim 64; the backward
    (preprocess + fused dk/dv/dq) with a config its filter keeps."""
    A = m._attention
    A.attn_fwd = m._attn_fwd
    A.tune_attn_fwd = m.tuner(m._attn_fwd)
    A.tune_attn_bwd = m.bwd_tuner(m._attn_bwd)
    fwd = A.tune_attn_fwd
    warps = [8] if quick else [8, 32]
    for w in warps:
        configs = only_configs(fwd, _cfg(BLOCK_M=128, BLOCK_N=64, num_warps=w, num_stages=2))[:1]
        for causal in ([False] if quick else [False, True]):
            for label, _ in each_config(fwd, configs, None):
                def go(causal=causal):
                    torch.manual_seed(20)
                    q, k, v = [torch.empty(1, 2, 256, 64, dtype=torch.float16).normal_(0.0, 0.5)
                               for _ in range(3)]
                    o = A.forward(types.SimpleNamespace(save_for_backward=lambda *t: None), q, k, v,
                                  causal, 0.125)
                    ref = torch.nn.functional.scaled_dot_product_attention(
                        q.float(), k.float(), v.float(), is_causal=causal, scale=0.125)
                    expect(o, ref, 1e-2, 1e-3)
                yield f"_attn_fwd[{label}" + (",causal" if causal else "") + "]", go
    if not quick:
        yield from flash_attention_bwd(m, A, quick)


def flash_attention_bwd(m, A, quick):
    """The file's backward (preprocess, then the fused dk/dv + dq kernel) with
    the first config its filter keeps, causal as Intel's benchmark runs it
    ("the non-causal tests do not pass at the moment", its comment)."""
    bwd, fwd = A.tune_attn_bwd, A.tune_attn_fwd
    configs = only_configs(bwd, lambda c: True)[:1]
    fwd_config = only_configs(fwd, _cfg(BLOCK_M=128, BLOCK_N=64, num_warps=8, num_stages=2))[:1]
    for _, _ in each_config(bwd, configs, None):
        c = configs[0].kwargs
        label = (f"M1_{c['BLOCK_M1']},N1_{c['BLOCK_N1']},M2_{c['BLOCK_M2']},N2_{c['BLOCK_N2']},"
                 f"w{configs[0].num_warps}")

        def go():
            saved_fwd = fwd.configs
            fwd.configs = fwd_config   # the forward it needs: one config, no tuning
            fwd.cache.clear()
            try:
                run_bwd()
            finally:
                fwd.configs = saved_fwd
                fwd.cache.clear()

        def run_bwd():
            torch.manual_seed(20)
            q, k, v = [torch.empty(1, 2, 256, 64, dtype=torch.float16).normal_(0.0, 0.5)
                       for _ in range(3)]
            do = torch.randn_like(q)
            saved = {}
            ctx = types.SimpleNamespace(save_for_backward=lambda *t: saved.update(t=t))
            o = A.forward(ctx, q, k, v, True, 0.125)
            ctx.saved_tensors = saved["t"]
            dq, dk, dv = A.backward(ctx, do)[:3]
            qf, kf, vf = [t.float().requires_grad_() for t in (q, k, v)]
            ref = torch.nn.functional.scaled_dot_product_attention(qf, kf, vf, is_causal=True,
                                                                   scale=0.125)
            gq, gk, gv = torch.autograd.grad(ref, (qf, kf, vf), do.float())
            expect(o, ref.detach(), 1e-2, 1e-3, "o")
            for name, got, want in (("dq", dq, gq), ("dk", dk, gk), ("dv", dv, gv)):
                expect(got, want, 2e-2, 1e-2, name)
        yield f"_attn_bwd[{label},causal]", go


DRIVERS = {"ib-softmax": softmax, "ib-prefix-sums": prefix_sums, "ib-gemm": gemm,
           "ib-gemm-tensor-of-ptr": gemm_tensor_of_ptr, "ib-gemm-splitk": gemm_splitk,
           "ib-gemm-streamk": gemm_streamk, "ib-gemm-postop-gelu": gemm_postop_gelu,
           "ib-gemm-postop-addmatrix": gemm_postop_addmatrix, "ib-gemm-preop-exp": gemm_preop_exp,
           "ib-fused-gemm": fused_gemm, "ib-flash-attention": flash_attention}
assert list(DRIVERS) == NAMES
