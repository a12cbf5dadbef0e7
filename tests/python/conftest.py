import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zt_testutil  # noqa: E402,F401 - puts examples/ on sys.path


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory):
    """Tests use their own cache directory, never the user's."""
    d = tmp_path_factory.mktemp("zetile-cache")
    os.environ["ZETILE_CACHE_DIR"] = str(d)
    yield d
