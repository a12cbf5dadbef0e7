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
    assert isa.spill_from_log(log) == 0 and r["scratch_sends"] == 0, (r, log)


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


def _split_model(x, rtne=False):
    """The high bf16 piece of f32 `x` as f32, by the rule of xe_dot_f32.c and
    dg2_dot_f32.c: x's high 16 bits, a NaN's with the quiet bit set; or
    rounded to nearest even where that stays finite (`rtne=True`, the rule
    dg2 had), to show the inputs tell the two apart."""
    bits = x.view(np.uint32).astype(np.uint64)
    t = bits >> 16
    h = np.where(np.isnan(x), t | 0x40, t)
    if rtne:
        rn = (bits + 0x7FFF + (t & 1)) >> 16
        h = np.where((bits & 0x7FFFFFFF) < 0x7F7F8000, rn, h)
    return (h << 16).astype(np.uint32).view(np.float32)


def _tf32_model(x, y, rtne=False):
    """x * y as the "tf32" dot computes it from one nonzero product: the
    three piece products, smallest first, each added in f32; NaN and inf
    inputs get zero low pieces."""
    def pieces(v):
        v0 = _split_model(v, rtne)
        d = (v - v0).astype(np.float32)
        d = np.where(np.isnan(d), np.float32(0), d).astype(np.float32)
        return v0, _split_model(d, rtne)
    x0, x1 = pieces(x)
    y0, y1 = pieces(y)
    with np.errstate(invalid="ignore", over="ignore"):
        acc = (x1 * y0).astype(np.float32)
        acc = (acc + (x0 * y1).astype(np.float32)).astype(np.float32)
        return (acc + (x0 * y0).astype(np.float32)).astype(np.float32)


@pytest.mark.parametrize("target", ["pvc", "dg2"])
def test_e5_pieces_follow_one_rule_on_every_target(tmp_path, target):
    # One rule for the bf16 pieces of fp32 dots on every Xe target (issue
    # 12): each row of A has a single nonzero, so every output is one
    # product made of the three piece products, and its bits follow from how
    # x0 is formed. The inputs are chosen so rounding x0 to nearest would
    # change most outputs; row 0 holds a NaN whose payload is in its low
    # bits (it must stay NaN, not become inf).
    names = [d["name"] for d in zetile.devices()]
    if "opencl:cpu" not in names:
        pytest.skip("Intel's OpenCL CPU runtime (opencl:cpu) is not available")
    M, N, K = 64, 64, 128
    rng = np.random.default_rng(5)
    a = np.zeros((M, K), np.float32)
    cols = rng.integers(0, K, M)
    a[np.arange(M), cols] = rng.standard_normal(M).astype(np.float32)
    a[0, cols[0]] = np.array([0x7F800001], np.uint32).view(np.float32)[0]
    b = rng.standard_normal((K, N)).astype(np.float32)
    x = a[np.arange(M), cols][:, None].repeat(N, 1)
    y = b[cols, :]
    want = _tf32_model(x, y)
    other = _tf32_model(x, y, rtne=True)
    assert np.isnan(want[0]).all()
    same = (want.view(np.uint32) == other.view(np.uint32)) | (np.isnan(want) & np.isnan(other))
    assert (~same).mean() > 0.3  # the test tells the two rules apart
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    (tmp_path / "dot_prec_kernel.py").write_text(KERNEL)
    r = run_python(f"""
        import sys, numpy as np, zetile
        sys.path.insert(0, {str(tmp_path)!r})
        from dot_prec_kernel import dot_prec
        from zetile.tools.tensor_descriptor import TensorDescriptor as TD
        a = np.load({str(tmp_path / "a.npy")!r}); b = np.load({str(tmp_path / "b.npy")!r})
        c = np.zeros(({M}, {N}), np.float32)
        dot_prec[(2, 2)](TD.from_tensor(a, [32, 32]), TD.from_tensor(b, [32, 32]),
                         TD.from_tensor(c, [32, 32]), {K}, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32,
                         PREC="tf32")
        zetile.get_device().synchronize()
        np.save({str(tmp_path / "c.npy")!r}, c)
    """, env={"ZETILE_DEVICE": "opencl:cpu", "ZETILE_OPENCL_TARGET": target})
    assert r.returncode == 0, r.stdout + r.stderr
    c = np.load(tmp_path / "c.npy")
    assert np.isnan(c[0]).all(), c[0][:4]
    ok = (c.view(np.uint32) == want.view(np.uint32)) | (np.isnan(c) & np.isnan(want))
    bad = np.flatnonzero(~ok)
    assert bad.size == 0, (f"{bad.size} of {c.size} outputs differ from the model of the rule; "
                           f"{(c == other).sum()} equal the rounding one")
