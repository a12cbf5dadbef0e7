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


# Two loops, the DPAS in the longer one and none in a short tail loop: the
# innermost-loop count (the shortest loop) misses them, the any-loop count not.
TWO_LOOPS = """
L100:
        dpas.8x8 (16|M0)         r32:f         r32:f             r22:hf            r14.0:hf
        dpas.8x8 (16|M0)         r40:f         r40:f             r22:hf            r14.0:hf
        add (16|M0)              r10.0<1>:d    r10.0<1>:d        1:w
(W&f0.0) jmpi                    L100
L300:
        add (16|M0)              r11.0<1>:d    r11.0<1>:d        1:w
(W&f0.1) jmpi                    L300
        dpas.8x8 (16|M0)         r48:f         r48:f             r22:hf            r14.0:hf
"""


def test_counts_dpas_in_any_loop():
    r = isa.analyze_isa(TWO_LOOPS)
    assert r["dpas"] == 3 and r["loops"] == 2
    assert r["dpas_in_innermost_loop"] == 0
    assert r["dpas_in_loops"] == 2


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
    sp = r["spill"]
    assert not sp["spills"] and sp["disagree"] == [], sp
    assert "spill: none" in isa.format_report(r)


# ocloc's "spilled around N" line is one witness; for dg2 SIMD8 kernels it is
# missing although the binary spills, so the verdict also reads the ISA's
# scratch sends and the driver's spill_bytes, and names who disagrees.
def test_spill_summary_combines_the_witnesses():
    none = isa.spill_summary(0, 0, {"spill_bytes": 0})
    assert not none["spills"] and none["disagree"] == [] and none["driver_spill_bytes"] == 0
    silent = isa.spill_summary(0, 1083, {"spill_bytes": 16384})
    assert silent["spills"] and silent["disagree"] == ["ocloc"]
    no_drv = isa.spill_summary(0, 12, {"error": "no level_zero device"})
    assert no_drv["spills"] and no_drv["driver_spill_bytes"] is None and no_drv["disagree"] == ["ocloc"]
    assert isa.spill_summary(230, 353, None)["disagree"] == []
    r = {"spilled_registers": 0, "kernels": {"k": {"scratch_sends": 4}}}
    assert not isa.no_spill_cheap(r)
    r["kernels"]["k"]["scratch_sends"] = 0
    assert isa.no_spill_cheap(r)
    text = isa.format_report({"target": "dg2", "grf_mode": "128", "local_size": [8, 1, 1],
                              "igc_options": "", "spilled_registers": 0, "kernels": {},
                              "spill": silent})
    assert "spill: YES" in text and "DISAGREE: ocloc sees no spill" in text


def test_scratch_sends_are_counted():
    text = ("send.ugm (8|M0) null r10 r12:2 0x0 0x0 {$1} // wr:1+2, rd:0; store.ugm.d32x8.a32.ss[a0.2]\n"
            "(W) send.dc0 (8|M0) r20 r30 null 0x0 0x0 // scratch read\n")
    assert isa.analyze_isa(text)["scratch_sends"] >= 1


def _fake_ocloc(tmp_path, monkeypatch, crashes):
    """An `ocloc` first on PATH that aborts `crashes` times, then builds nothing
    but a fake binary and says what a successful build says."""
    count = tmp_path / "count"
    count.write_text("0")
    script = tmp_path / "ocloc"
    script.write_text(f"""#!/bin/sh
n=$(cat {count}); echo $((n + 1)) > {count}
if [ "$n" -lt {crashes} ]; then kill -ABRT $$; fi
while [ $# -gt 0 ]; do [ "$1" = -out_dir ] && out="$2"; shift; done
: > "$out/k.bin"; echo "Build succeeded."
""")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:" + __import__("os").environ["PATH"])
    return count


def test_ocloc_crash_is_retried_and_logged(tmp_path, monkeypatch):
    count = _fake_ocloc(tmp_path, monkeypatch, crashes=1)
    out = tmp_path / "out"
    out.mkdir()
    binary, log = isa.ocloc_compile(b"\x03\x02\x23\x07", str(out), "pvc")
    assert binary.endswith("k.bin")
    assert "killed by signal 6 (attempt 1)" in log and "Build succeeded" in log
    assert count.read_text().strip() == "2"


def test_ocloc_that_keeps_crashing_fails(tmp_path, monkeypatch):
    count = _fake_ocloc(tmp_path, monkeypatch, crashes=99)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(RuntimeError, match="killed by signal 6"):
        isa.ocloc_compile(b"\x03\x02\x23\x07", str(out), "pvc")
    assert int(count.read_text()) == isa.OCLOC_CRASH_RETRIES + 1
