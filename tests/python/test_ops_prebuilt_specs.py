"""The generic specializations the C ops API reads (include/zetile/ops.h,
stdlib-kernels/prebuilt/SPEC.tile|.args, zetile.ops.export.SPECS) must match
what the templates generate today: regenerate them with
`python -m zetile.ops.export stdlib-kernels/prebuilt`."""
import os

import pytest

import zetile
from zetile.ops import export

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PREBUILT = os.path.join(ROOT, "stdlib-kernels", "prebuilt")


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


def test_exported_specs_match_templates(tmp_path):
    written = export.export_specs(str(tmp_path))
    assert len(written) == len(export.SPECS) >= 40
    for spec in written:
        for ext in ("tile", "args"):
            fresh = (tmp_path / f"{spec}.{ext}").read_text()
            path = os.path.join(PREBUILT, f"{spec}.{ext}")
            assert os.path.exists(path), f"{path} missing: run python -m zetile.ops.export " \
                                         "stdlib-kernels/prebuilt"
            with open(path) as f:
                assert fresh == f.read(), (f"stdlib-kernels/prebuilt/{spec}.{ext} is stale: run "
                                           "python -m zetile.ops.export stdlib-kernels/prebuilt")
        assert ROOT not in (tmp_path / f"{spec}.tile").read_text()


def test_generic_exports_keep_every_integer_at_run_time():
    _, text, rows, _ = export.spec_manifest("gemm-f16-relu-epi-64x64x32")
    names = [r[0] for r in rows]
    # Unit strides and divisible sizes are not compiled in: one file serves all.
    for n in ("M", "N", "K", "s_am", "s_ak", "s_bk", "s_bn", "s_on", "alpha", "beta"):
        assert n in names
    assert "SCALES" not in names                    # weight-only operand absent
    _, _, wq_rows, _ = export.spec_manifest("gemm-bf16w4g128-none-plain-64x64x32")
    assert [r[0] for r in wq_rows][:4] == ["A", "B", "OUT", "SCALES"]
    import re
    hints = re.search(r"zt.divisibility = array<i32: ([0-9, ]+)>", text).group(1)
    assert set(hints.replace(" ", "").split(",")) == {"0"}   # no divisibility hints
    assert len(hints.split(",")) == len(rows)


@pytest.mark.parametrize("spec, msg", [
    ("gemm-f64-none-plain-64x64x32", "not a gemm spec"),
    ("gemm-f32-relu-plain-64x64x32", "needs the epi epilogue"),
    ("gemm-f32-none-plain-64x64", "tiles must be"),
    ("gemm-i8-relu-epi-64x64x32", "int8 GEMMs are plain"),
    ("gemm-f16w3g128-none-plain-64x64x32", "not a gemm spec"),
    ("gemm-f16w4g48-none-plain-64x64x32", "must divide one another"),
    ("attn-f32-d64-32x32-full-nomask-none-causal-dense", "needs a block mask"),
    ("attn-f32-d64-32x32-full-nomask-nosuch-none-dense", "not an attention spec"),
    ("attn-f32-d64-32x32-full-nomask-none-none-sparse", "KV must be"),
    ("conv-f32", "starts with gemm- "),
])
def test_bad_specs_are_refused(spec, msg):
    with pytest.raises(ValueError, match=msg):
        export.spec_manifest(spec)


# The weight-only exports the C API compiles for the device's target: on Xe
# their dequantized B (int8 weights, int4 nibbles unpacked by shifts and
# ands, times the group's scale) computes in the B operand's places and
# feeds the DPAS (xe_layout.c slot_variant). E1: spirv-val of the pvc build.
@pytest.mark.skipif(not __import__("shutil").which("spirv-val"), reason="spirv-val is not installed")
@pytest.mark.parametrize("spec", ["gemm-f16w4g128-none-plain-64x64x32",
                                  "gemm-f16w8g128-none-plain-64x64x32",
                                  "gemm-bf16w4g128-none-plain-64x64x32",
                                  "gemm-bf16w8g128-none-plain-64x64x32"])
def test_weight_only_exports_build_for_pvc(spec):
    import subprocess
    import tempfile
    from zetile import _C
    with open(os.path.join(PREBUILT, f"{spec}.tile")) as f:
        text = f.read()
    spv = _C.compile(text, target="pvc", cached=False).get("spirv")
    with tempfile.NamedTemporaryFile(suffix=".spv") as f:
        f.write(spv)
        f.flush()
        r = subprocess.run(["spirv-val", f.name], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


# The attention exports' row-major variants (export.py "-rm16", picked by the
# C planner for unit head-dim strides and other strides multiples of 16) on
# pvc: E1 spirv-val, E2 ocloc with large GRF. The generic exports they stand
# in for spill (causal SDPA fp16 d64: 44 bytes, bf16 d128: 440; the flex
# backward's dq fp16 d64 softcap + causal: 338); these must not.
@pytest.mark.skipif(not all(__import__("shutil").which(t) for t in ("spirv-val", "ocloc", "iga64")),
                    reason="spirv-val, ocloc and iga64 are needed")
@pytest.mark.parametrize("spec, dpas", [
    ("attn-f16-d64-32x32-causal-nomask-none-none-dense-rm16", 32),
    # 64 of the two dots + 16 identity DPAS in the online-softmax rescale
    # branch (xe_lazy_rescale.c, session 22: 14795 -> 13457 instructions,
    # 1773 -> 1261 sends, 0 spilled either way).
    ("attn-bf16-d128-32x32-causal-nomask-none-none-dense-rm16", 64 + 16),
    ("attnbwd-dq-f16-d64-32x32-full-nomask-softcap-causal-sparse128-rm16", 48),
])
def test_attention_row_major_exports_do_not_spill_on_pvc(spec, dpas):
    import subprocess
    import tempfile
    from zetile import _C
    from zetile.tools import isa
    with open(os.path.join(PREBUILT, f"{spec}.tile")) as f:
        text = f.read()
    spv = _C.compile(text, target="pvc", cached=False).get("spirv")
    with tempfile.NamedTemporaryFile(suffix=".spv") as f:
        f.write(spv)
        f.flush()
        r = subprocess.run(["spirv-val", f.name], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    kernels, log = isa.ocloc_isa(spv, "pvc", "-ze-opt-large-register-file")
    (text_isa,) = kernels.values()
    a = isa.analyze_isa(text_isa)
    assert isa.spill_from_log(log) == 0 and a["scratch_sends"] == 0, (log, a)
    assert a["dpas_in_innermost_loop"] == dpas, a


def test_attention_row_major_specs():
    """-rm16 compiles the unit head-dim strides in and hints the rest."""
    import re
    _, text, rows, _ = export.spec_manifest("attnbwd-dkdv-f16-d64-32x32-causal-nomask-rm16")
    names = [r[0] for r in rows]
    for n in ("stride_qd", "stride_kd", "stride_vd", "stride_dd", "stride_kgd", "stride_vgd"):
        assert n not in names
    assert "stride_qm" in names and "stride_kgn" in names
    hints = re.search(r"zt.divisibility = array<i32: ([0-9, ]+)>", text).group(1)
    hinted = {n for n, h in zip(names, hints.replace(" ", "").split(",")) if h == "16"}
    assert {"Q", "K", "V", "DO", "DK", "DV", "stride_qm", "stride_kgn", "stride_vgh"} <= hinted
    assert "Lq" not in hinted and "LSE" not in hinted
    with pytest.raises(ValueError, match="no -rm16 variant"):
        export.spec_manifest("attnbwd-delta-f16-d64-32-rm16")
