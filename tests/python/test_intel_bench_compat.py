"""What Intel's own benchmark kernels (intel/intel-xpu-backend-for-triton,
benchmarks/triton_kernels_benchmark; run from that tree by
`scripts/tutorials.py --tutorials ib`) need from zetile beyond the import
swap, checked with kernels written here in their style: configs carrying
Intel's launch options (`warp_size`, `grf_mode` as '256', `loop_distribute`),
`driver.active.utils.get_device_properties()["max_work_group_size"]`, and the
runner's stand-in for Intel's benchmark harness package."""
import os
import sys

import pytest
import torch

import zetile as triton
import zetile.language as tl
from zetile.jit import KernelArgumentError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


@triton.autotune(
    configs=[
        triton.Config({"warp_size": 32}, num_warps=32),
        triton.Config({"warp_size": 16, "loop_distribute": True, "grf_mode": "256"}, num_warps=4),
    ],
    key=["BLOCK_SIZE_X"],
)
@triton.jit
def softmax_rows(out_ptr, in_ptr, stride, n_cols, BLOCK_SIZE_X: tl.constexpr,
                 BLOCK_SIZE_Y: tl.constexpr):
    row = tl.program_id(0) * BLOCK_SIZE_Y
    cols = tl.arange(0, BLOCK_SIZE_X)
    rows = tl.arange(0, BLOCK_SIZE_Y)
    offs = cols[None, :] + (row + rows)[:, None] * stride
    mask = cols[None, :] < n_cols
    x = tl.load(in_ptr + offs, mask=mask, other=-float("inf"))
    x = tl.exp(x - tl.max(x, axis=1)[:, None])
    tl.store(out_ptr + offs, x / tl.sum(x, axis=1)[:, None], mask=mask)


@pytest.mark.parametrize("which", [0, 1])
def test_configs_with_intel_launch_options(which):
    """Each config alone (as Intel's harness pins one): warp_size 32 runs as
    twice the 16-lane warps, loop_distribute (an Intel scheduling switch) is
    dropped, grf_mode '256' taken; the result is the softmax either way."""
    saved = softmax_rows.configs
    softmax_rows.configs = [saved[which]]
    softmax_rows.cache.clear()
    try:
        x = torch.randn(8, 200)
        y = torch.empty_like(x)
        softmax_rows[(4,)](y, x, x.stride(0), 200, BLOCK_SIZE_X=256, BLOCK_SIZE_Y=2)
        torch.testing.assert_close(y, torch.softmax(x, dim=1), rtol=1e-5, atol=1e-6)
    finally:
        softmax_rows.configs = saved
        softmax_rows.cache.clear()


@triton.jit
def copy_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))


def test_warp_size_launch_option():
    x = torch.arange(64, dtype=torch.float32)
    y = torch.zeros_like(x)
    copy_kernel[(1,)](x, y, BLOCK=64, num_warps=2, warp_size=32)
    assert torch.equal(x, y)
    from zetile.jit import _warps_of_16_lanes
    assert _warps_of_16_lanes(32, 32) == 64 and _warps_of_16_lanes(8, 16) == 8
    assert _warps_of_16_lanes(None, 32) is None
    with pytest.raises(KernelArgumentError, match="warp_size must be 16 or 32"):
        copy_kernel[(1,)](x, y, BLOCK=64, warp_size=24)


def test_max_work_group_size():
    props = triton.runtime.driver.active.utils.get_device_properties(0)
    # fused_softmax sizes rows per program as max_work_group_size // BLOCK_SIZE_X.
    assert props["max_work_group_size"] == 1024


def test_harness_stub(tmp_path):
    """The runner's stand-in for `triton_kernels_benchmark`: decorators and
    helpers are inert; a sibling benchmark file is loaded as itself."""
    import intel_bench_drivers as ib
    (tmp_path / "x_benchmark.py").write_text("import triton\nVALUE = 41 + 1\n")
    sys.modules.pop("triton_kernels_benchmark", None)
    try:
        ib.harness_stub(str(tmp_path))
        import triton_kernels_benchmark as bs
        from triton_kernels_benchmark import sycl_tla_kernel  # noqa: F401 - a provider module
        deco = bs.perf_report(bs.Benchmark(x_names=["M"]))
        assert not deco(lambda: 1)          # the benchmark function is not kept
        assert bs.x_benchmark.VALUE == 42
        assert bs.BENCHMARKING_METHOD == "ELAPSED_TIME"
        assert list(bs.filter_providers({}, None)) == []
    finally:
        sys.modules.pop("triton_kernels_benchmark", None)
    assert ib.NAMES == list(ib.DRIVERS)


@pytest.mark.skipif(not os.environ.get("TRITON_SRC") or not os.path.isdir(os.path.join(
    os.environ.get("TRITON_SRC", ""), "benchmarks", "triton_kernels_benchmark")),
    reason="TRITON_SRC (Intel's tree, with benchmarks/triton_kernels_benchmark) is not set")
def test_runner_cpu_intel_benchmarks(tmp_path):
    """The runner on Intel's own softmax and prefix-sum benchmark kernels,
    CPU target: every row right, exit status 0."""
    import subprocess
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "tutorials.py"),
                        "--tutorials", "ib-softmax,ib-prefix-sums", "--targets", "cpu",
                        "--out", str(tmp_path)], capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, ZETILE_CACHE_DIR=str(tmp_path / "cache")))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "| ib-softmax::softmax_kernel[warp_size32,w32] | ok |" in r.stdout
    assert "summary: 6 kernel rows x 1 targets, 6 ok" in r.stdout
