"""scripts/tutorials.py (Triton's tutorials on every target, issue 12): its
known-failures comparison and message extraction here, always; with
TRITON_SRC set (a Triton source tree) the runner itself on the CPU target
for two tutorials (skipped otherwise, as test_triton_compat's tree tests are)."""
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

import tutorials  # noqa: E402
import tutorials_cases  # noqa: E402
import tutorials_compile  # noqa: E402

TRITON_SRC = os.environ.get("TRITON_SRC")

KNOWN = textwrap.dedent("""\
    # comment
    06-fused-attention::_attn_fwd*@pvc   # 2-D reduction across subgroups
    05-layer-norm::*@dg2                 # lock
    03-matrix-multiplication::*@bmg      # (fixed since)
""")


def test_parse_known():
    k = tutorials.parse_known(KNOWN)
    assert k[0] == ("06-fused-attention::_attn_fwd*@pvc", "2-D reduction across subgroups")
    assert len(k) == 3
    # '#' inside a row name is not the comment.
    assert tutorials.parse_known("a::k[x#1]@dg2  # why\n") == [("a::k[x#1]@dg2", "why")]
    with pytest.raises(ValueError, match="without @target"):
        tutorials.parse_known("01-vector-add::add_kernel   # no target\n")


def test_compare_new_known_and_now_passing():
    known = tutorials.parse_known(KNOWN)
    cells = {
        ("06-fused-attention::_attn_fwd+bwd[w4]", "pvc"): "refused",    # listed
        ("06-fused-attention::_attn_fwd+bwd[w4]", "bmg"): "refused",    # not listed: new
        ("05-layer-norm::ln", "dg2"): "timeout",                        # listed
        ("05-layer-norm::ln", "cpu"): "ok",
        ("03-matrix-multiplication::mm", "bmg"): "ok",                  # listed, passes now
        ("01-vector-add::add_kernel", "cpu"): "wrong",                  # not listed: new
    }
    new, expected, now = tutorials.compare(cells, known)
    assert new == [("01-vector-add::add_kernel", "cpu"), ("06-fused-attention::_attn_fwd+bwd[w4]", "bmg")]
    assert expected == [("05-layer-norm::ln", "dg2"), ("06-fused-attention::_attn_fwd+bwd[w4]", "pvc")]
    assert now == ["03-matrix-multiplication::*@bmg"]
    # A pattern that matches no cell of this run is not called passing (its
    # tutorial or target may have been left out).
    _, _, now = tutorials.compare({("01-vector-add::add_kernel", "cpu"): "ok"}, known)
    assert now == []
    # A pattern covering one failing and one passing cell still holds.
    cells[("06-fused-attention::_attn_fwd+bwd[w8]", "pvc")] = "ok"
    _, _, now = tutorials.compare(cells, known)
    assert "06-fused-attention::_attn_fwd*@pvc" not in now


def test_patterns_take_brackets_literally():
    row = "03-matrix-multiplication::matmul_kernel[BM256,BN256,BK32,GM4,w32]@pvc"
    assert tutorials.matches(row, row)
    assert tutorials.matches(row, "03-matrix-multiplication::matmul_kernel[*]@pvc")
    assert not tutorials.matches(row, "03-matrix-multiplication::matmul_kernel[BM128*]@pvc")
    assert not tutorials.matches(row.replace("@pvc", "@dg2"), "03-matrix-multiplication::*@pvc")


def test_message_lines():
    msg = ("/t/06-fused-attention.py:118:12: error: a 2-D reduction along axis 1 of a tile split "
           "that way across subgroups (2x2)\n  qk = tl.dot(q, k)\n")
    assert tutorials_compile.message_line(msg) == ("line 118: a 2-D reduction along axis 1 of a tile "
                                                  "split that way across subgroups (2x2)")
    assert tutorials_cases.first_line(RuntimeError("x\nloc: error: bad thing\n")) == "error: bad thing"
    # A line in zetile's own library (tl.rand) is named with its file.
    lib = "/z/zetile/language/random.py:30:5: arith.mului_extended: not supported by the dg2 lowering"
    assert tutorials_compile.message_line(lib, "/t/04-low-memory-dropout.py").startswith("random.py line 30: ")
    assert tutorials_compile.message_line(lib.replace("/z/zetile/language/random.py", "/t/04-low-memory-dropout.py"),
                                          "/t/04-low-memory-dropout.py").startswith("line 30: arith")


def test_definitions_leave_out_demo_code():
    import ast
    src = textwrap.dedent("""\
        import torch
        DEVICE = object()
        def add(x, y):
            k[(1,)](x, y)
        @triton.testing.perf_report(configs)
        def bench(n): pass
        x = torch.rand(10)
        out = add(x, x)
        print(out)
        configs = [1, 2]
        """)
    kept = [ast.unparse(s).splitlines()[0] for s in tutorials_cases.definitions(ast.parse(src))]
    assert kept == ["import torch", "DEVICE = object()", "def add(x, y):", "configs = [1, 2]"]


def test_intel_grf_mode_spelling():
    from zetile.jit import _grf_igc_options
    assert _grf_igc_options("256") == "-ze-opt-large-register-file"
    assert _grf_igc_options("128") == ""
    with pytest.raises(ValueError):
        _grf_igc_options("512")


@pytest.mark.skipif(not TRITON_SRC, reason="TRITON_SRC (a Triton source tree) is not set")
def test_runner_cpu_two_tutorials(tmp_path):
    """The runner on the CPU target for tutorials 01 and 04: both pass, the
    table names their kernels, and the exit status is 0."""
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "tutorials.py"), "--src", TRITON_SRC,
                        "--tutorials", "01,04", "--targets", "cpu", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, ZETILE_CACHE_DIR=str(tmp_path / "cache")))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "| 01-vector-add::add_kernel | ok |" in r.stdout
    assert "| 04-low-memory-dropout::_seeded_dropout | ok |" in r.stdout
    assert "summary: 4 kernel rows x 1 targets, 4 ok" in r.stdout


def test_e5_cells():
    """The e5 column takes a row's result from the opencl:cpu run by case
    name; a timeout stays a timeout; a tutorial-wide failure covers its rows;
    a case the run never reached is "not run", not ok."""
    row = {"case": {"case": "ln[w8]", "status": "ok"}, "spec": None}
    assert tutorials.e5_cell(row, {"ln[w8]": {"status": "ok", "seconds": 2.0}})["status"] == "ok"
    t = tutorials.e5_cell(row, {"ln[w8]": {"status": "timeout", "message": "no result after 180 s"}})
    assert t["status"] == "timeout" and "180" in t["message"]
    assert tutorials.e5_cell(row, {"*": {"status": "error", "message": "x"}})["status"] == "error"
    assert tutorials.e5_cell(row, {"other": {"status": "ok"}})["status"] == "not run"
    assert "e5" in tutorials.EXTRA_TARGETS and "e5" not in tutorials.TARGETS


@pytest.mark.skipif(not TRITON_SRC, reason="TRITON_SRC (a Triton source tree) is not set")
def test_runner_e5_vector_add(tmp_path):
    """Tutorial 01 with its kernel's SPIR-V run on Intel's OpenCL CPU runtime
    (E5): ok against the tutorial's torch reference."""
    from zt_testutil import opencl_cpu_or_skip
    opencl_cpu_or_skip()
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "tutorials.py"), "--src", TRITON_SRC,
                        "--tutorials", "01", "--targets", "e5", "--e5-timeout", "300", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, ZETILE_CACHE_DIR=str(tmp_path / "cache")))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "| 01-vector-add::add_kernel | ok |" in r.stdout
    assert "summary: 1 kernel rows x 1 targets, 1 ok" in r.stdout
