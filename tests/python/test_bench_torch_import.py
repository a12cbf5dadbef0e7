"""bench/torch_import.py still measures what it says: its "without hook" row
runs no zetile hook even though scripts/setup.sh installs zetile (editable,
with its torch.backends entry point), and its "with hook" row runs exactly
one. The bench asserts both per process; this runs it for one round so a
change to the packaging that breaks the comparison fails here, not in a
benchmark nobody ran (it did, once: the editable install's entry point made
both rows hook-ed and the bench stopped at its own check)."""
import os
import subprocess
import sys

import pytest

pytest.importorskip("torch")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_torch_import_bench_one_round():
    r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "torch_import.py"),
                        "--rounds", "1"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ratio with hook / without hook" in r.stdout, r.stdout
    assert "hook import + call" in r.stdout, r.stdout
