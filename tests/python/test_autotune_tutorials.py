"""Triton's tutorials that use @triton.autotune (03 matmul, 06 fused
attention, 09 persistent matmul), written in their style with the import
swapped (autotune_tutorial_kernels.py), on the CPU target with torch CPU
tensors: right numbers after tuning, a best config per key, and the
tutorials' benchmarking code (perf_report + do_bench quantiles) running."""
import pytest
import torch

import zetile as triton
import autotune_tutorial_kernels as tk

torch.manual_seed(0)


@pytest.fixture(autouse=True)
def cpu_and_db(tmp_path, monkeypatch):
    triton.set_device("cpu")
    monkeypatch.setenv("ZETILE_AUTOTUNE_DB", str(tmp_path / "tune.sqlite"))


def test_03_matmul_with_leaky_relu_and_perf_report(tmp_path):
    a = torch.randn((96, 80), dtype=torch.float16)
    b = torch.randn((80, 72), dtype=torch.float16)
    for act in ("", "leaky_relu"):
        out = tk.matmul(a, b, activation=act)
        ref = torch.matmul(a.float(), b.float())
        if act:
            ref = torch.where(ref >= 0, ref, 0.01 * ref)
        torch.testing.assert_close(out.float(), ref, atol=5e-2, rtol=1e-2)
    assert tk.matmul_kernel.best_config in tk.get_autotune_config()
    assert len(tk.matmul_kernel.configs_timings) == 3

    @triton.testing.perf_report(triton.testing.Benchmark(
        x_names=["M", "N", "K"], x_vals=[64, 96], line_arg="provider",
        line_vals=["torch", "triton"], line_names=["Torch", "Triton"],
        styles=[("green", "-"), ("blue", "-")], ylabel="TFLOPS", plot_name="matmul-performance",
        args={}))
    def benchmark(M, N, K, provider):
        a = torch.randn((M, K), dtype=torch.float16)
        b = torch.randn((K, N), dtype=torch.float16)
        quantiles = [0.5, 0.2, 0.8]
        if provider == "torch":
            ms, min_ms, max_ms = triton.testing.do_bench(lambda: torch.matmul(a, b),
                                                         quantiles=quantiles, rep=10)
        else:
            ms, min_ms, max_ms = triton.testing.do_bench(lambda: tk.matmul(a, b),
                                                         quantiles=quantiles, rep=10)
        perf = lambda ms: 2 * M * N * K * 1e-12 / (ms * 1e-3)  # noqa: E731
        return perf(ms), perf(max_ms), perf(min_ms)
    df = benchmark.run(print_data=True, show_plots=False, save_path=str(tmp_path),
                       return_df=True)
    assert len(df) == 2 and all(v > 0 for v in df["Triton"])
    assert (tmp_path / "matmul-performance.csv").exists()


@pytest.mark.parametrize("causal", [False, True])
def test_06_fused_attention(causal):
    Z, H, N_CTX, HEAD_DIM = 1, 2, 64, 16
    q = torch.randn((Z, H, N_CTX, HEAD_DIM), dtype=torch.float16) * 0.5
    k = torch.randn((Z, H, N_CTX, HEAD_DIM), dtype=torch.float16) * 0.5
    v = torch.randn((Z, H, N_CTX, HEAD_DIM), dtype=torch.float16) * 0.5
    sm_scale = 0.5
    out = tk.attention(q, k, v, causal, sm_scale)
    p = torch.matmul(q.float(), k.float().transpose(2, 3)) * sm_scale
    if causal:
        p = p.masked_fill(torch.triu(torch.ones(N_CTX, N_CTX, dtype=torch.bool), 1), float("-inf"))
    ref = torch.matmul(torch.softmax(p, dim=-1), v.float())
    torch.testing.assert_close(out.float(), ref, atol=2e-2, rtol=0)
    # keep() (BLOCK_N <= BLOCK_M) leaves three configs, the early prune
    # (BLOCK_M <= N_CTX) all three here; STAGE is not in the key, so the
    # causal run reuses the first tuning.
    assert len(tk._attn_fwd.configs_timings) == 3
    assert tk._attn_fwd.best_config.kwargs["BLOCK_M"] in (16, 32)


def test_06_early_prune_uses_the_key_argument():
    # N_CTX=16: the early prune (given N_CTX, a key argument) drops
    # BLOCK_M=32, leaving BLOCK_M=BLOCK_N=16 without any timing.
    q = torch.randn((1, 1, 16, 16), dtype=torch.float16) * 0.5
    out = tk.attention(q, q, q, False, 0.25)
    ref = torch.matmul(torch.softmax(torch.matmul(q.float(), q.float().transpose(2, 3)) * 0.25,
                                     dim=-1), q.float())
    torch.testing.assert_close(out.float(), ref, atol=2e-2, rtol=0)
    assert tk._attn_fwd.tuning_source == "single"
    assert tk._attn_fwd.best_config.kwargs == {"BLOCK_M": 16, "BLOCK_N": 16}


def test_09_persistent_matmul_pointer_and_descriptor():
    a = torch.randn((80, 64), dtype=torch.float16)
    b = torch.randn((64, 96), dtype=torch.float16)
    ref = torch.matmul(a.float(), b.float())
    torch.testing.assert_close(tk.matmul_persistent(a, b).float(), ref, atol=5e-2, rtol=1e-2)
    assert len(tk.matmul_kernel_persistent.configs_timings) == 2
    # The descriptor version's config pre_hook sets the block shapes it launches with.
    out = tk.matmul_descriptor_persistent(a, b)
    torch.testing.assert_close(out.float(), ref, atol=5e-2, rtol=1e-2)
    best = tk.matmul_kernel_descriptor_persistent.best_config
    assert best.pre_hook is tk.matmul_tma_set_block_size_hook
