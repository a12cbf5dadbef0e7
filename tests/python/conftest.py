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


@pytest.fixture
def cpu_device():
    """Runs a test on the CPU target and puts the previous device back
    (`pytestmark = pytest.mark.usefixtures("cpu_device")`). Many older test
    files still define their own copy; new ones use this."""
    import zetile
    prev = zetile.get_device()
    zetile.set_device("cpu")
    yield
    zetile.set_device(prev.name if hasattr(prev, "name") else "cpu")
