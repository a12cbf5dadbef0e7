"""Masked one-element global loads and stores as calls of one helper per form
(lowering/xe/xe_mask_calls.c, issue 22): the SPIR-V keeps the helpers as
functions with FunctionControl Inline (IGC inlines them), the branch of each
masked access is written once per form instead of once per element, and the
pvc ISA is not worse than with the accesses in place (ZETILE_XE_MASK_CALLS=0).
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
    calls, inplace = _ln(), _ln({"ZETILE_XE_MASK_CALLS": "0"})
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
