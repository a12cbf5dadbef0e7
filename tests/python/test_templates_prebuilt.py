"""stdlib-kernels/prebuilt/ (the specializations tests/c/test_stdlib_templates.c
runs without Python) must match what the templates generate today:
regenerate them with `python -m zetile.ops.export stdlib-kernels/prebuilt`."""
import os

import pytest

import zetile
from zetile.ops import export

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PREBUILT = os.path.join(ROOT, "stdlib-kernels", "prebuilt")


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


def test_prebuilt_matches_templates(tmp_path):
    names = export.export(str(tmp_path))
    assert names
    for n in names:
        for ext in ("tile", "args"):
            fresh = (tmp_path / f"{n}.{ext}").read_text()
            with open(os.path.join(PREBUILT, f"{n}.{ext}")) as f:
                kept = f.read()
            assert fresh == kept, (f"stdlib-kernels/prebuilt/{n}.{ext} is stale: run "
                                   "python -m zetile.ops.export stdlib-kernels/prebuilt")
        # Source locations are relative to the tree, not this checkout.
        assert ROOT not in (tmp_path / f"{n}.tile").read_text()
