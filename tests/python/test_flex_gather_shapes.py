"""A flex mod's captured-tensor gather indexed by q_idx alone or kv_idx alone
(the document mask's doc[q] / doc[kv]) loads a (BLOCK_M, 1) column and a
(1, BLOCK_N) row for every target: one translation (fx_to_tile) serves the
CPU and Xe. Until session 15 fx_to_tile widened such gathers to the score
tile for GPU targets (`+ 0 * kv_idx`), because the Xe lowering refused a
(32, 1) load; now it gathers the column or row as a 1-D tensor and
broadcasts it (lowering/common/unit_dims.c, test_xe_column_gather.py).
Checked on the tile IR of planned launches; the CPU numerics are
test_templates_flex.py's and the pvc build (E1 + E2) test_templates_xe.py's
flex_fp16_document."""
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


@pytest.mark.parametrize("target", [None, "pvc"])
def test_gathers_a_column_and_a_row(target):
    shapes, bm, bn = _mod_load_shapes(target)
    assert sorted(shapes) == sorted([f"{bm}x1", f"1x{bn}"]), shapes


def test_one_body_for_every_target():
    tm = fx_to_tile.from_mod(document, "mask")
    assert not any("0 * kv_idx" in ln or "0 * q_idx" in ln for ln in tm.body), tm.body
    assert tm.fn is tm._fn
    with _kernels.planning_for("pvc"):
        assert tm.fn is tm._fn
    again = fx_to_tile.from_body("mask", tm.body, 1)
    assert again.body == tm.body and again.fn is tm.fn
