"""Block loads sunk to their first use (lowering/xe/xe_sink_loads.c, issue 12).

The Xe emitter writes every block of a tile load where the tl.load stands,
so a FlashAttention forward's K and V blocks were all read before the first
DPAS and all live at once; moved down to just before their first reader,
each is live from its read to its last use. ZETILE_XE_SINK_LOADS=0 keeps the
text as written (the comparison below).

Evidence: the emitted MLIR (how many loaded blocks are live at once), E2
(Debian's ocloc for pvc, compat path: spilled registers with and without),
E5 of the same kernel in test_xe_attention.py (the default, sunk)."""
import os
import re
import sys

import pytest

import zetile
from zt_testutil import have_tool

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from attention_kernels import attn_fwd_kernel  # noqa: E402

SIG = {"Q": "*fp16", "K": "*fp16", "V": "*fp16", "Out": "*fp16", "sm_scale": "fp32",
       "N_CTX": "i32:16", "stride_qm": "i32:16", "stride_kn": "i32:16", "stride_vn": "i32:16",
       "stride_om": "i32:16"}
CONFIG = {"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64}


def _compile(monkeypatch, sink, compat=False):
    if sink:
        monkeypatch.delenv("ZETILE_XE_SINK_LOADS", raising=False)
    else:
        monkeypatch.setenv("ZETILE_XE_SINK_LOADS", "0")
    return zetile.compile(attn_fwd_kernel, signature=SIG, constexprs=CONFIG, target="pvc",
                          num_warps=8, compat=compat, cached=False)


def _most_live_loads(mlir):
    """The most block-load results live at once in the kernel's text: from
    the line that reads them to their last reader."""
    lines = mlir.splitlines()
    defs, last = {}, {}
    for n, line in enumerate(lines):
        m = re.match(r"\s*(%[\w.$]+) = xegpu\.load_nd ", line)
        if m:
            defs[m.group(1)] = n
    pat = re.compile(r"%[\w.$]+")
    for n, line in enumerate(lines):
        rhs = line.split(" = ", 1)[1] if " = " in line else line
        for name in pat.findall(rhs):
            if name in defs:
                last[name] = n
    events = sorted([(d, 1) for d in defs.values()] +
                    [(last.get(x, d), -1) for x, d in defs.items()], key=lambda t: (t[0], -t[1]))
    live = most = 0
    for _, step in events:
        live += step
        most = max(most, live)
    return most


def test_loaded_blocks_live_from_first_to_last_reader_only(monkeypatch):
    sunk = _most_live_loads(_compile(monkeypatch, True).asm["mlir"])
    kept = _most_live_loads(_compile(monkeypatch, False).asm["mlir"])
    print(f"attention fwd pvc: most loaded blocks live at once: {kept} as written, {sunk} sunk")
    # As written, Q's 8 blocks (read before the loop, used on every step)
    # and a whole K^T tile's 16 wait for the DPAS chain; sunk, and with the
    # dot's output blocks emitted column by column (xe_matrix.c dot_blocks),
    # Q's blocks and one column of K^T's (4) or V's.
    assert sunk < kept, (sunk, kept)
    assert sunk <= 8 + 4, sunk


@pytest.mark.skipif(not (have_tool("ocloc") and have_tool("iga64")), reason="ocloc/iga64 missing")
def test_e2_compat_attention_spills_less(monkeypatch):
    from zetile.tools import isa
    spilled = {}
    for sink in (False, True):
        ck = _compile(monkeypatch, sink, compat=True)
        isas, log = isa.ocloc_isa(ck.asm["spirv"], "pvc", ck.metadata.get("igc_options", ""))
        r = isa.analyze_isa("".join(isas.values()))
        assert r["dpas"] == 64 and r["calla"] == 0, r
        spilled[sink] = (isa.spill_from_log(log), r["scratch_sends"])
    print(f"attention fwd pvc compat (spilled registers, scratch sends): as written "
          f"{spilled[False]}, sunk {spilled[True]}")
    assert spilled[True][0] < spilled[False][0] and spilled[True][1] < spilled[False][1], spilled
