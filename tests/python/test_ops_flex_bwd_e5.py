"""E5 of the FlexAttention backward from C: tests/c/test_ops_flex_bwd.c run
with ZT_TEST_OPS_DEVICE=opencl:cpu, so every plan compiles its exports for
pvc and Intel's OpenCL CPU runtime runs that SPIR-V; dq, dk, dv (and the
forward's out and lse) against the test's double reference, as on the CPU.
The document mask (mods.py's doc[q] / doc[kv] gathers, (BLOCK_M, 1) /
(1, BLOCK_N) tiles the Xe lowering refused until session 15: "2-D tile 32x1
does not split into 8x16 blocks") is in since its exports build for pvc:
alone it passed in 23 min at load 8-10. The runtime builds each kernel for
minutes on this 2-core machine (softcap + causal and the builder mask:
19.5 min at load 14), so ZETILE_SLOW_TESTS=1 only."""
import os
import subprocess

import pytest

from zt_testutil import opencl_cpu_or_skip

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BINARY = os.path.join(ROOT, "build", "test_ops_flex_bwd")
SLOW = os.environ.get("ZETILE_SLOW_TESTS") == "1"
# Softcap + causal with Lq != Lk, head dim 48 and a log2 lse (the score mod's
# derivative), and a builder-made mask mod spliced into both kernels (the
# dk/dv one transposed). The other cases ran past the 300 s per-test limit
# at load 14 before the multiplier was set, so they are not claimed here.
# The document mask over two batches (f32, ids in a captured buffer).
CASES = "softcap_causal_lse_log2,builder_mask,document_batches"


def test_flex_backward_from_c_on_opencl_cpu():
    if not SLOW:
        pytest.skip("E5 of the flex backward builds for minutes on the OpenCL CPU runtime: "
                    "ZETILE_SLOW_TESTS=1")
    if not os.path.exists(BINARY):
        pytest.skip(f"{BINARY} is not built")
    opencl_cpu_or_skip()
    env = dict(os.environ, ZT_TEST_OPS_DEVICE="opencl:cpu", ZT_TEST_FLEX_BWD_CASES=CASES,
               CK_TIMEOUT_MULTIPLIER="12")
    env.pop("ZETILE_SLOW_TESTS", None)  # the C test's slow cases are not picked here
    r = subprocess.run([BINARY], env=env, capture_output=True, text=True, timeout=7200)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "SKIP" not in out, out          # the compiler was there: the cases ran
    assert "Checks: 3, Failures: 0, Errors: 0" in out, out
