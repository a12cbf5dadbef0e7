"""`zetile isa`: ISA statistics from Intel's offline compiler."""
import pytest

from zt_testutil import EXAMPLES, have_tool, neo_installed
from zetile.tools import isa

SYNTHETIC = """
        mov (16|M0)              r10.0<1>:f    0x0:f
L100:
        send.ugm (16|M0)         r22      r20     null:0  0x0  0x04804580  {$5} // wr:2+0, rd:8; load.ugm.d32x8.a64
        dpas.8x8 (16|M0)         r32:f         r32:f             r22:hf            r14.0:hf
        dpas.8x8 (16|M0)         r40:f         r40:f             r22:hf            r14.0:hf
L200:
        send.ugm (16|M0)         null     r30     r32:8   0x0  0x04004584  {$5} // wr:2+8, rd:0; store.ugm.d32x8.a64
(W&f0.0) jmpi                    L100
        dpas.8x8 (16|M0)         r48:f         r48:f             r22:hf            r14.0:hf
(W)     send.gtwy (8|M0)         null     r127    null:0  0x0  0x02000010  {EOT} // wr:1+0, rd:0; end of thread
"""


def test_counts_dpas_in_the_innermost_loop():
    r = isa.analyze_isa(SYNTHETIC)
    assert r["dpas"] == 3
    assert r["dpas_in_innermost_loop"] == 2
    assert r["loops"] == 1
    assert r["sends_by_kind"] == {"load": 1, "store": 1, "prefetch": 0, "other": 1}
    assert r["calla"] == 0


@pytest.mark.skipif(not (have_tool("ocloc") and have_tool("iga64")),
                    reason="ocloc/iga64 are not installed")
def test_report_on_vector_add():
    import sys
    sys.path.insert(0, EXAMPLES)
    from vector_add import add_kernel
    r = isa.report(add_kernel, "*fp32,*fp32,*fp32,i32", {"BLOCK_SIZE": 256}, target="pvc",
                   driver=neo_installed())
    (k,) = r["kernels"].values()
    assert k["instructions"] > 10 and k["calla"] == 0
    assert k["sends_by_kind"]["load"] >= 2 and k["sends_by_kind"]["store"] >= 1
    if neo_installed():
        assert r["driver"].get("spill_bytes") == 0, r["driver"]
