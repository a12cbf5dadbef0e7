"""Float64 on Intel GPUs without fp64 hardware. dg2 and the Gen11/Gen12LP
rows have none: Debian's ocloc refuses any double there ("Double type is not
supported on this platform"), so such a kernel used to pass spirv-val and
then fail in Intel's compiler with no line of the user's kernel named (74 of
a 1-in-4 conformance sample built for dg2, session 21). Now the lowering
refuses it by name at the first op holding a double (lowering/xe/xe_fp64.c);
pvc and skl, where ocloc builds doubles, still build it (E1, E2)."""
import pytest

import zetile
import zetile.language as tl
from zt_testutil import have_tool, spirv_val


@zetile.jit
def f64_axpy(X, Y, a, N, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    x = tl.load(X + i, mask=i < N)
    tl.store(Y + i, x * a + 1.0, mask=i < N)


@zetile.jit
def f64_scalar_only(Y, a, N, BLOCK: tl.constexpr):
    # The only double is the scalar argument, widened by nothing else.
    i = tl.arange(0, BLOCK)
    tl.store(Y + i, (i * 0).to(tl.float32) + a.to(tl.float32), mask=i < N)


def _compile(kernel, sig, target):
    return zetile.compile(kernel, signature=sig, constexprs={"BLOCK": 64}, target=target,
                          cached=False)


SIG = {"X": "*fp64", "Y": "*fp64", "a": "fp64", "N": "i32"}


@pytest.mark.parametrize("target", ["dg2", "tgllp", "icllp", "adl-p", "dg1"])
def test_refused_by_name_with_the_line(target):
    with pytest.raises(zetile.CompilationError) as ei:
        _compile(f64_axpy, SIG, target)
    msg = str(ei.value)
    assert f"float64 values on {target}" in msg, msg
    assert "x = tl.load(X + i, mask=i < N)" in msg or "test_xe_fp64_targets.py" in msg, msg


def test_scalar_argument_refused():
    with pytest.raises(zetile.CompilationError) as ei:
        _compile(f64_scalar_only, {"Y": "*fp32", "a": "fp64", "N": "i32"}, "dg2")
    assert "float64 values on dg2" in str(ei.value)


@pytest.mark.skipif(not have_tool("spirv-val"), reason="spirv-val is not installed")
@pytest.mark.parametrize("target", ["pvc", "skl"])
def test_builds_where_the_hardware_has_fp64(target):
    ck = _compile(f64_axpy, SIG, target)
    spirv_val(ck.asm["spirv"])
    if have_tool("ocloc"):
        import tempfile
        from zetile.tools import isa
        with tempfile.TemporaryDirectory() as d:
            isa.ocloc_compile(ck.asm["spirv"], d, target)
