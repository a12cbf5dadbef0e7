"""The GEMM template planned for dg2 (acm-g10: XMX, no 2D block IO, 128
registers of 32 bytes, zetile's SIMD8 lowering) builds without spilling:
E2 with Intel's ocloc, ocloc's spill line at 0 and no scratch send in the
ISA (ocloc's line alone misses SIMD8 spills). The default 64x64x32 over the
lowering's 8 subgroups had 709 scratch sends; gemm.config_for now takes a
K step of 16 over 16 subgroups (and smaller tiles with an epilogue, fp32 or
int8). The same plans run on the CPU target against torch, so the smaller
tiles and the launch option are numerics-checked too. A few seconds per
case: two by default, the rest with ZETILE_SLOW_TESTS=1."""
import os
import shutil

import pytest

torch = pytest.importorskip("torch")
from zetile.ops import _kernels, gemm, xe_cases  # noqa: E402
from zetile.tools import isa  # noqa: E402

SLOW = os.environ.get("ZETILE_SLOW_TESTS") == "1"

pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py

CASES = ["gemm_fp16", "gemm_fp16_bias_gelu_residual"]
SLOW_CASES = ["gemm_bf16", "gemm_fp32", "gemm_fp32_ieee", "gemm_int8", "gemm_fp16_bT",
              "gemm_fp16_batched", "gemm_fp16_w8", "gemm_fp16_w4", "gemm_bf16_w4"]


@pytest.mark.parametrize("case", CASES + [pytest.param(c, marks=pytest.mark.skipif(
    not SLOW, reason="ZETILE_SLOW_TESTS=1")) for c in SLOW_CASES])
def test_dg2_gemm_default_plan_has_no_scratch_sends(case):
    if not shutil.which("ocloc"):
        pytest.skip("ocloc is not installed")
    r = xe_cases.isa_row(case, "dg2")
    assert r["built"], r
    assert r["dpas_in_loop"] and r["dpas_in_loop"] > 0, r
    assert r["spill"] == 0 and r["scratch_sends"] == 0, r


@pytest.mark.parametrize("what", ["plain", "epilogue", "int8"])
def test_dg2_gemm_plan_numerics_on_cpu(what):
    """dg2's plan (tiles and num_warps) launched on the CPU target."""
    g = torch.Generator().manual_seed(3)
    M, N, K = 70, 90, 100  # not multiples of the tiles
    if what == "int8":
        a = torch.randint(-8, 8, (M, K), generator=g, dtype=torch.int8)
        b = torch.randint(-8, 8, (K, N), generator=g, dtype=torch.int8)
        want = a.int() @ b.int()
    else:
        a = torch.randn(M, K, generator=g).half()
        b = torch.randn(K, N, generator=g).half()
        want = a.float() @ b.float()
    kw = {}
    if what == "epilogue":
        kw = dict(bias=torch.randn(N, generator=g).half(), activation="relu")
        want = torch.relu(want + kw["bias"].float())
    with _kernels.planning_for("dg2"):
        launch = gemm(a, b, plan=True, **kw)
    assert launch.num_warps == 16
    assert launch.kwargs["BLOCK_K"] == (32 if what == "int8" else 16)
    got = launch.run()
    if what == "int8":
        assert torch.equal(got, want)
    else:
        assert (got.float() - want).abs().max().item() < 0.05 * max(1.0, want.abs().max().item())


# The C API's plan on dg2 (runtime/ops/ops_gemm_tiles.c) takes the same
# tiles and 16 subgroups, from the exports made for them (export.py SPECS):
# those build without a scratch send there too. Before, it took the 64x64x32
# exports at the lowering's 8 subgroups: f16 plain rm16 709 scratch sends
# (ocloc 164 B), fp32 gelu epilogue 2922 (825 B).
C_EXPORTS = [("gemm-f16-none-plain-64x64x16-rm16", 4),
             pytest.param("gemm-f32-gelu-epi-32x64x16-rm16", 6, marks=pytest.mark.skipif(
                 not SLOW, reason="ZETILE_SLOW_TESTS=1"))]


@pytest.mark.parametrize("spec,dpas", C_EXPORTS)
def test_dg2_c_exports_at_16_subgroups_have_no_scratch_sends(spec, dpas):
    if not shutil.which("ocloc"):
        pytest.skip("ocloc is not installed")
    from zetile import _C
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "stdlib-kernels", "prebuilt", spec + ".tile")) as f:
        ir = f.read()
    art = _C.compile(ir, target="dg2", num_warps=16, compat=False, igc_options=None, cached=True)
    isas, log = isa.ocloc_isa(art.get("spirv"), "dg2", "")
    r = isa.analyze_isa("".join(isas.values()))
    assert r["dpas_in_innermost_loop"] == dpas, r
    assert isa.spill_from_log(log) == 0 and r["scratch_sends"] == 0, r
