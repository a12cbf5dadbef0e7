"""fp32 tl.dot on Xe: DPAS on bf16 pieces of the fp32 operands
(lowering/xe/xe_dot_f32.c): Triton's default input_precision "tf32" takes
3 DPAS per block product (about 16 bits per product, more than tf32's 11),
"ieee" and "tf32x3" take 6 (close to an fp32 dot, not bit-identical to an
FMA loop). An inf input gives inf or NaN where fp32 gives inf (inf times
a zero low piece), as split-precision dots do. Shown here: ocloc's ISA has those DPAS in the K loop and no
spill (E2), and on Intel's OpenCL CPU runtime the SPIR-V's results sit
within each mode's error bound of a float64 reference (E5)."""
import json
import os
import pathlib
import sys

import numpy as np
import pytest

import zetile
from zt_testutil import have_tool, run_python
from zetile.tools import isa

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_xe_matmul as mm  # noqa: E402

KERNEL = (pathlib.Path(__file__).parent / "dot_kernels.py").read_text()


@pytest.mark.skipif(not (have_tool("ocloc") and have_tool("iga64")), reason="ocloc/iga64 missing")
@pytest.mark.parametrize("kind", ["pointer", "descriptor", "block_ptr"])
def test_e2_dpas_in_k_loop_no_spill(kind):
    art = mm._compile(kind, "pvc", "float32", "float32")
    isas, log = isa.ocloc_isa(art.get("spirv"), "pvc", "-ze-opt-large-register-file")
    r = isa.analyze_isa("".join(isas.values()))
    # 64x64 over 4x4 subgroups of 16x16: 2x1 blocks x 2 K steps x 3 pieces.
    assert r["dpas"] >= 12 and r["dpas_in_innermost_loop"] >= 12, r
    assert isa.spill_from_log(log) == 0, log


def _e5(tmp_path, prec):
    names = [d["name"] for d in zetile.devices()]
    if "opencl:cpu" not in names:
        pytest.skip("Intel's OpenCL CPU runtime (opencl:cpu) is not available")
    (tmp_path / "dot_prec_kernel.py").write_text(KERNEL)
    r = run_python(f"""
        import json, sys, numpy as np, zetile
        sys.path.insert(0, {str(tmp_path)!r})
        from dot_prec_kernel import dot_prec
        from zetile.tools.tensor_descriptor import TensorDescriptor as TD
        rng = np.random.default_rng(11)
        M, N, K = 64, 64, 256
        a = rng.standard_normal((M, K)).astype(np.float32)
        b = rng.standard_normal((K, N)).astype(np.float32)
        a[0, 0], b[0, 1] = np.inf, 3.0          # row 0 of the product is not finite
        c = np.zeros((M, N), np.float32)
        dot_prec[(2, 2)](TD.from_tensor(a, [32, 32]), TD.from_tensor(b, [32, 32]),
                         TD.from_tensor(c, [32, 32]), K, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32,
                         PREC="{prec}")
        zetile.get_device().synchronize()
        ref = a.astype(np.float64) @ b.astype(np.float64)
        fin = np.isfinite(ref)
        err = np.abs(c.astype(np.float64) - ref)[fin] / (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))[fin]
        print("RESULT " + json.dumps({{"rel": float(err.max()),
                                      "inf_ok": bool((~np.isfinite(c[~fin])).all())}}))
    """, env={"ZETILE_DEVICE": "opencl:cpu"})
    assert r.returncode == 0, r.stdout + r.stderr
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def test_e5_tf32_mode_accuracy(tmp_path):
    res = _e5(tmp_path, "tf32")
    # Relative to sum |a||b|: 3 pieces leave ~2^-16; a single bf16 DPAS ~2^-8.
    assert res["rel"] < 2 ** -14, res
    assert res["inf_ok"], res


@pytest.mark.parametrize("prec", ["ieee", "tf32x3"])
def test_e5_ieee_mode_accuracy(tmp_path, prec):
    res = _e5(tmp_path, prec)
    # 6 pieces: within a few f32 ulps of the exact dot (fp32 epsilon 2^-23).
    assert res["rel"] < 2 ** -20, res
    assert res["inf_ok"], res
