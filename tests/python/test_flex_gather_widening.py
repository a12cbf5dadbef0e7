"""A flex mod's captured-tensor gather indexed by q_idx alone or kv_idx alone
(the document mask's doc[q] / doc[kv]) is widened to the score tile only
for GPU targets (fx_to_tile.TranslatedMod.fn, decided by the target the
templates plan for): the Xe lowering needs the whole (BLOCK_M, BLOCK_N)
tile, the CPU target loads the (BLOCK_M, 1) column and (1, BLOCK_N) row
(the widened form cost it 8-22%, docs/TEMPLATES.md). Checked on the tile
IR of planned launches; the CPU numerics are test_templates_flex.py's and
the pvc build test_templates_xe.py's flex_fp16_document."""
import contextlib
import re

import pytest

torch = pytest.importorskip("torch")
import zetile.ops as ops  # noqa: E402
from zetile.ops import _kernels, export, fx_to_tile  # noqa: E402

pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py

L = 200
DOC = torch.tensor([0] * 50 + [1] * 90 + [2] * 60)


def document(b, h, q, kv):
    return DOC[q] == DOC[kv]


def _mod_load_shapes(target):
    """The result shapes of the mask mod's loads in the planned forward's
    tile IR, for the CPU (target None) or `target`."""
    q = torch.randn(1, 2, L, 64)
    bm = ops.create_block_mask(document, 1, 1, L, L, BLOCK_SIZE=64)
    cm = _kernels.planning_for(target) if target else contextlib.nullcontext()
    with cm:
        launch = ops.flex_attention_fwd(q, q, q, None, bm, plan=True)
    text, _ = export.manifest(launch)
    bm_, bn_ = launch.kwargs["BLOCK_M"], launch.kwargs["BLOCK_N"]
    shapes = [re.search(r"-> tensor<([0-9x]+)x", ln).group(1) for ln in text.splitlines()
              if '"tile.load"' in ln and "zetile-flex-mod" in ln]
    return shapes, bm_, bn_


def test_cpu_target_gathers_a_column_and_a_row():
    shapes, bm, bn = _mod_load_shapes(None)
    assert sorted(shapes) == sorted([f"{bm}x1", f"1x{bn}"]), shapes


def test_pvc_gathers_the_whole_score_tile():
    shapes, bm, bn = _mod_load_shapes("pvc")
    assert shapes == [f"{bm}x{bn}"] * 2, shapes


def test_the_portable_body_keeps_the_widening():
    # The body (the mod's name in torch op strings) is the widened form;
    # the narrow one is derived from it, so from_body gives both too.
    tm = fx_to_tile.from_mod(document, "mask")
    assert sum("+ 0 * kv_idx, mask=" in ln or "+ 0 * q_idx, mask=" in ln for ln in tm.body) == 2
    narrow = fx_to_tile._narrow_lines(tm.body)
    assert narrow is not None and not any("+ 0 *" in ln for ln in narrow)
    again = fx_to_tile.from_body("mask", tm.body, 1)
    assert again.fn is not again._fn                      # the CPU target's narrow form
    with _kernels.planning_for("pvc"):
        assert again.fn is again._fn
    # A mod without single-axis gathers has one form.
    causal = fx_to_tile.from_mod(lambda b, h, q, kv: q >= kv, "mask")
    assert fx_to_tile._narrow_lines(causal.body) is None and causal.fn is causal._fn
