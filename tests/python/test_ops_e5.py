"""E5 of the C API's attention exports: tests/c/test_ops_api.c and
test_ops_bwd.c run with ZT_TEST_OPS_DEVICE=opencl:cpu, so each plan compiles
its export for pvc and Intel's OpenCL CPU runtime runs that SPIR-V; outputs,
lse and gradients against the C tests' double references, as on the CPU.
ZT_TEST_OPS_ONLY picks the tests claimed here: the -rm16 (row-major) exports
the planner takes for contiguous buffers (fp16 and fp32 causal SDPA with
GQA, fp16 d80 padded to 128, the rm16 / generic pick, the fp16 bool-mask
export), the fp32 attention (float mask) and the C flex cases (causal and
ALiBi + causal over block masks; since session 18 also document, sliding
window and softcap + causal; since session 19 the split-KV decode of SDPA
and flex and SDPA dropout, generic exports), and the backward's fp16 bool-mask (a dead
row) and fp32 float-mask -rm16 exports. The runtime builds each kernel for
minutes on this 2-core machine, so ZETILE_SLOW_TESTS=1 only."""
import os
import subprocess

import pytest

from zt_testutil import opencl_cpu_or_skip

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SLOW = os.environ.get("ZETILE_SLOW_TESTS") == "1"

RUNS = {
    "test_ops_api": ["test_sdpa_f32_causal_gqa", "test_sdpa_f16_d80", "test_sdpa_f16_row_major_pick",
                     "test_sdpa_f32_float_mask", "test_sdpa_f16_bool_mask", "test_flex_causal",
                     "test_flex_alibi_causal",
                     # session 18: 22 min 24 s for these three at load 7-10
                     "test_flex_document", "test_flex_sliding", "test_flex_softcap_causal",
                     # session 19: 16 min 14 s for these three at load 2-6 (generic
                     # exports: split-KV decode and its combine, dropout's Philox mask)
                     "test_sdpa_split_kv_decode", "test_sdpa_dropout", "test_flex_causal_split_kv"],
    "test_ops_bwd": ["test_bwd_f16_bool_mask_dead_row", "test_bwd_f32_float_mask"],
}


@pytest.mark.skipif(not SLOW, reason="ZETILE_SLOW_TESTS=1 (the OpenCL CPU runtime builds for minutes)")
@pytest.mark.parametrize("binary", sorted(RUNS))
def test_attention_exports_from_c_on_opencl_cpu(binary):
    path = os.path.join(ROOT, "build", binary)
    if not os.path.exists(path):
        pytest.skip(f"{path} is not built")
    opencl_cpu_or_skip()
    env = dict(os.environ, ZT_TEST_OPS_DEVICE="opencl:cpu", ZT_TEST_OPS_ONLY=",".join(RUNS[binary]),
               CK_TIMEOUT_MULTIPLIER="12")
    env.pop("ZETILE_SLOW_TESTS", None)  # the C tests' own slow cases are not picked here
    r = subprocess.run([path], env=env, capture_output=True, text=True, timeout=7200)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "SKIP" not in out, out          # the compiler was there: the tests ran
    n = len(RUNS[binary])
    assert f"Checks: {n}, Failures: 0, Errors: 0" in out, out


# The C API's dg2 GEMM plan (runtime/ops/ops_gemm_tiles.c: the tiles and 16
# subgroups ops.gemm picks there) on Intel's OpenCL CPU runtime with
# ZETILE_OPENCL_TARGET=dg2: every GEMM test of test_ops_api (f32/f16/bf16,
# plain and epilogues, row-major -rm16 and transposed generic, int8 exact,
# weight-only int4/int8) compiles its export for dg2 at SIMD8 and runs it,
# against the C tests' double references; the tests also check the plans'
# specs name the dg2 tiles (want_tiles). 12 checks in about 5 minutes here.
@pytest.mark.skipif(not SLOW, reason="ZETILE_SLOW_TESTS=1 (the OpenCL CPU runtime builds for minutes)")
def test_gemm_dg2_plans_from_c_on_opencl_cpu():
    path = os.path.join(ROOT, "build", "test_ops_api")
    if not os.path.exists(path):
        pytest.skip(f"{path} is not built")
    opencl_cpu_or_skip()
    env = dict(os.environ, ZT_TEST_OPS_DEVICE="opencl:cpu", ZETILE_OPENCL_TARGET="dg2",
               CK_RUN_CASE="gemm", CK_TIMEOUT_MULTIPLIER="12")
    env.pop("ZETILE_SLOW_TESTS", None)
    r = subprocess.run([path], env=env, capture_output=True, text=True, timeout=7200)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "SKIP" not in out, out
    assert "Checks: 12, Failures: 0, Errors: 0" in out, out
