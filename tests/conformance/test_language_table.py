"""docs/LANGUAGE.md is generated from the code and must not drift."""
import os

from zetile.tools import language_table

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_language_md_is_current():
    with open(os.path.join(ROOT, "docs", "LANGUAGE.md")) as f:
        current = f.read()
    assert current == language_table.table(), (
        "docs/LANGUAGE.md is stale: run `python -m zetile.tools.language_table > docs/LANGUAGE.md`")


def test_names_file_matches_installed_triton():
    try:
        import triton.language as tl  # noqa: F401
        import triton
    except ImportError:
        import pytest
        pytest.skip("triton is not installed: cannot check the list of triton.language names")
    import triton.language.math as tm
    names = language_table.public_names(tl) + ["math." + n for n in language_table.public_names(tm)]
    assert names == language_table.triton_names(), f"triton {triton.__version__}'s names changed"
