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


# Sends through the scratch surface (`.ss[a0.2]`) in a kernel without calls
# are private memory: on the compat path, the library's out-of-bounds row
# loop writes its block into a private array by a run-time index (the
# batched GEMM's K loop at 4 warps: 32 such sends, ocloc "no spill"). They
# count as scratch sends, so the no-spill verdict sees them. Beside
# unresolved calls (the native path under Debian's IGC) they are the calls'
# own traffic, reported apart. (Excerpts of that kernel's ISA.)
SS_PRIVATE = """
        send.ugm (16|M0)         null     r43     r28:4   a0.2        0x420E3504           {ExBSO,A@1,$9} // wr:1+4, rd:0; store.ugm.d32x4.a32.wb.wb.ss[a0.2]
        send.ugm (16|M0)         r2       r43     null:0  a0.2        0x42884500           {ExBSO,$11} // wr:1+0, rd:8; load.ugm.d32x8.a32.ca.ca.ss[a0.2]
        dpas.8x8 (16|M0)         r46:f         null:f            r2:hf             r38.0:hf         {$11}
(W)     send.gtwy (8|M0)         null     r127    null:0  0x0  0x02000010  {EOT} // wr:1+0, rd:0; end of thread
"""
SS_CALL = """
(W)     send.ugm (1|M0)          null     r126    r1:1    a0.2        0x4200D504           {ExBSO,A@2,$2} // wr:1+1, rd:0; store.ugm.d32x16t.a32.ss[a0.2]
        calla (16|M0)            r125.0        r125.0                           {$2.src}
(W)     send.ugm (1|M0)          r1       r126    null:0  a0.2        0x4210D500           {ExBSO,A@1,$4} // wr:1+0, rd:1; load.ugm.d32x16t.a32.ss[a0.2]
"""


def test_scratch_surface_sends_count_as_spills_without_calls():
    k = isa.analyze_isa(SS_PRIVATE)
    assert k["surface_scratch_sends"] == 2 and k["scratch_sends"] == 2, k
    assert k["call_scratch_sends"] == 0
    assert not isa.no_spill_cheap({"spilled_registers": 0, "kernels": {"k": k}})
    assert isa.spill_summary(0, k["scratch_sends"])["disagree"] == ["ocloc"]
    c = isa.analyze_isa(SS_CALL)
    assert c["calla"] == 1 and c["scratch_sends"] == 0 and c["call_scratch_sends"] == 2, c
    assert isa.no_spill_cheap({"spilled_registers": 0, "kernels": {"k": c}})
    text = isa.format_report({"target": "pvc", "grf_mode": "128", "local_size": [16, 1, 1],
                              "igc_options": "", "spilled_registers": 0, "kernels": {"k": c}})
    assert "2 sends through the scratch surface around the unresolved calls" in text


def _target_rows():
    """(name, ocloc device) of every row of the Xe target table."""
    import os
    import re
    src = open(os.path.join(os.path.dirname(EXAMPLES), "lowering", "xe", "xe_target.c")).read()
    return re.findall(r'\.name = "([^"]+)".*?\.ocloc_device = "([^"]+)"', src, re.S)


def test_every_target_row_has_an_ocloc_device_or_is_refused_by_name(tmp_path):
    import zetile._zetile as z
    rows = _target_rows()
    assert len(rows) >= 14 and all(z.target_info(name) for name, _ in rows), rows
    for name, device in rows:
        if name in isa.OCLOC_DEVICE:
            assert isa.OCLOC_DEVICE[name] == device and name in isa.IGA_PLATFORM, name
        else:
            assert isa.OCLOC_UNKNOWN.get(name) == device, name
            with pytest.raises(ValueError, match=f"no ocloc device for target '{name}'"):
                isa.ocloc_compile(b"", str(tmp_path), target=name)
            # zetile.tools.evidence's E2 column says n/a for it, not fail.
            from zetile.tools import evidence
            assert evidence._e2(b"", name)[0] == "n/a", name
    if not have_tool("ocloc"):
        return
    # What this ocloc knows (its help's device list): every mapped device
    # and none of the refused ones (a newer ocloc that knows them fails
    # this, and the row then gets its E2).
    import re
    import subprocess
    h = subprocess.run(["ocloc", "compile", "--help"], capture_output=True, text=True)
    m = re.search(r"<device_type> can be: ([^\n]*)", h.stdout + h.stderr)
    assert m, h.stdout[-2000:]
    known = {d.strip() for d in m.group(1).split(",")}
    assert set(isa.OCLOC_DEVICE.values()) <= known, known
    assert not set(isa.OCLOC_UNKNOWN.values()) & known, known


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
