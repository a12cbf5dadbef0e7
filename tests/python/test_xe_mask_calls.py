"""Masked one-element global loads and stores as calls of one helper per form
(lowering/xe/xe_mask_calls.c, issue 22): the SPIR-V keeps the helpers as
functions with FunctionControl Inline (IGC inlines them), the branch of each
masked access is written once per form instead of once per element, and the
pvc ISA is not worse than with the accesses in place (ZETILE_XE_MASK_CALLS=0).
Whole loads of a form read two or more times (layer norm's X, W, B) are one
call each of a helper making the element calls (ZETILE_XE_MASK_VECTORS=0: one
call per element); a form read once (softmax) keeps its element calls.
E5 of softmax and layer norm with the calls: test_opencl_e5.py and
test_xe_evidence.py."""
import re
import sys

import pytest

from zt_testutil import EXAMPLES, env_set, have_tool, spirv_val
from zetile.jit import compile as zcompile

sys.path.insert(0, EXAMPLES)

LN_SIG = {"X": "*fp16", "Y": "*fp16", "W": "*fp16", "B": "*fp16", "Mean": "*fp32", "Rstd": "*fp32",
          "stride": "i32:16", "N": "i32", "eps": "fp32"}


def _ln(env=None):
    from layer_norm import _layer_norm_fwd_fused
    with env_set(env):
        return zcompile(_layer_norm_fwd_fused, signature=LN_SIG, constexprs={"BLOCK_SIZE": 1024},
                        target="pvc", num_warps=8, cached=False)


def _dis(spirv):
    import subprocess
    import tempfile
    with tempfile.NamedTemporaryFile(suffix=".spv") as f:
        f.write(spirv)
        f.flush()
        return subprocess.run(["spirv-dis", f.name], capture_output=True, text=True,
                              check=True).stdout


@pytest.mark.skipif(not (have_tool("spirv-dis") and have_tool("spirv-val")),
                    reason="needs spirv-dis and spirv-val")
def test_layer_norm_masked_accesses_are_calls_of_inline_helpers():
    # One call per element (the whole-access calls, tested below, off).
    calls, inplace = _ln({"ZETILE_XE_MASK_VECTORS": "0"}), _ln({"ZETILE_XE_MASK_CALLS": "0"})
    spirv_val(calls.asm["spirv"])
    text = _dis(calls.asm["spirv"])
    helpers = re.findall(r"%zt_mcall_\w+ = OpFunction %\w+ (\w+)", text)
    # fp16 loads of X, W, B under the mask and fp16 stores of Y: a few forms,
    # each called once per element (40 loads, 8 stores a lane).
    assert helpers and set(helpers) == {"Inline"}, helpers
    assert text.count("OpFunctionCall") >= 48
    assert "zt_mcall" not in _dis(inplace.asm["spirv"])
    assert len(calls.asm["spirv"]) < len(inplace.asm["spirv"])


@pytest.mark.skipif(not (have_tool("ocloc") and have_tool("iga64")), reason="needs ocloc and iga64")
def test_layer_norm_isa_not_worse_with_calls():
    from zetile.tools import isa
    stats = {}
    for key, env in (("calls", None), ("inplace", {"ZETILE_XE_MASK_CALLS": "0"})):
        text, = isa.ocloc_isa(_ln(env).asm["spirv"], target="pvc")[0].values()
        stats[key] = isa.analyze_isa(text)
    assert stats["calls"]["sends"] == stats["inplace"]["sends"], stats
    assert stats["calls"]["scratch_sends"] == 0
    assert stats["calls"]["instructions"] <= stats["inplace"]["instructions"], stats


def _softmax(env=None):
    from softmax import softmax_kernel
    sig = {"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32:16",
           "output_row_stride": "i32:16", "n_rows": "i32", "n_cols": "i32"}
    with env_set(env):
        return zcompile(softmax_kernel, signature=sig, constexprs={"BLOCK_SIZE": 1024},
                        target="pvc", num_warps=4, cached=False)


@pytest.mark.skipif(not (have_tool("spirv-dis") and have_tool("spirv-val")),
                    reason="needs spirv-dis and spirv-val")
def test_layer_norm_whole_loads_are_one_call_each():
    whole, elements = _ln(), _ln({"ZETILE_XE_MASK_VECTORS": "0"})
    spirv_val(whole.asm["spirv"])
    text = _dis(whole.asm["spirv"])
    # The five fp16 row loads (X three times, W, B; 8 elements a lane) call
    # one vector helper, which makes the 8 element calls once.
    vcalls = re.findall(r"OpFunctionCall %\w+ %zt_mcall_loadv\d+", text)
    assert len(vcalls) == 5, vcalls
    helpers = re.findall(r"%zt_mcall_\w+ = OpFunction %\w+ (\w+)", text)
    assert set(helpers) == {"Inline"} and len(helpers) >= 3, helpers
    assert text.count("OpFunctionCall") < _dis(elements.asm["spirv"]).count("OpFunctionCall") - 24
    assert "zt_mcall_loadv" not in _dis(elements.asm["spirv"])
    assert len(whole.asm["spirv"]) < len(elements.asm["spirv"])
    # Softmax reads and writes its row once: nothing to share, same bytes.
    assert _softmax().asm["spirv"] == _softmax({"ZETILE_XE_MASK_VECTORS": "0"}).asm["spirv"]


@pytest.mark.skipif(not (have_tool("ocloc") and have_tool("iga64")), reason="needs ocloc and iga64")
def test_layer_norm_isa_not_worse_with_whole_load_calls():
    from zetile.tools import isa
    stats = {}
    for key, env in (("whole", None), ("elements", {"ZETILE_XE_MASK_VECTORS": "0"})):
        text, = isa.ocloc_isa(_ln(env).asm["spirv"], target="pvc")[0].values()
        stats[key] = isa.analyze_isa(text)
    assert stats["whole"]["sends"] == stats["elements"]["sends"], stats
    assert stats["whole"]["scratch_sends"] == 0 and stats["whole"]["loops"] == stats["elements"]["loops"]
    assert stats["whole"]["instructions"] <= stats["elements"]["instructions"], stats


TWO_ROWS = """
import zetile
import zetile.language as tl


@zetile.jit
def two_rows(x_ptr, y_ptr, s_ptr, p_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=1.0)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(s_ptr + offs, x + y, mask=mask)
    tl.store(p_ptr + offs, x * y, mask=mask)
"""


def test_two_whole_loads_and_stores_of_one_form_run_right(tmp_path):
    """Whole stores too (two fp32 rows stored under one mask: one call each of
    a store helper), and the numbers on Intel's OpenCL CPU runtime (E5): the
    masked tail neither read nor written."""
    from test_opencl_e5 import _opencl_cpu_or_skip, _run
    (tmp_path / "two_rows_kernel.py").write_text(TWO_ROWS)
    sys.path.insert(0, str(tmp_path))
    try:
        from two_rows_kernel import two_rows
        sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "s_ptr": "*fp32", "p_ptr": "*fp32", "n": "i32"}
        spirv = zcompile(two_rows, signature=sig, constexprs={"BLOCK": 1024}, target="pvc",
                         num_warps=4, cached=False).asm["spirv"]
    finally:
        sys.path.remove(str(tmp_path))
    if have_tool("spirv-dis") and have_tool("spirv-val"):
        spirv_val(spirv)
        text = _dis(spirv)
        assert len(re.findall(r"OpFunctionCall %\w+ %zt_mcall_loadv\d+", text)) == 2
        assert len(re.findall(r"OpFunctionCall %\w+ %zt_mcall_storev\d+", text)) == 2
    _opencl_cpu_or_skip()
    res = _run(f"""
        import json, sys, numpy as np, zetile
        sys.path.insert(0, {str(tmp_path)!r})
        from two_rows_kernel import two_rows
        rng = np.random.default_rng(5)
        n = 3000
        x = rng.standard_normal(n + 16).astype(np.float32)[:n]
        y = rng.standard_normal(n).astype(np.float32)
        s = np.full(n + 16, 7.0, np.float32)
        p = np.full(n + 16, 7.0, np.float32)
        two_rows[(zetile.cdiv(n, 1024),)](x, y, s, p, n, BLOCK=1024, num_warps=4)
        zetile.get_device().synchronize()
        print("RESULT", json.dumps({{"s": float(np.abs(s[:n] - (x + y)).max()),
                                     "p": float(np.abs(p[:n] - x * y).max()),
                                     "guard": bool((s[n:] == 7.0).all() and (p[n:] == 7.0).all())}}))
    """)
    assert res["s"] == 0.0 and res["p"] == 0.0, res
    assert res["guard"], res
