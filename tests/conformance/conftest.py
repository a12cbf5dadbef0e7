import collections
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


class _Results:
    def __init__(self):
        self.counts = collections.defaultdict(collections.Counter)

    def record(self, category, outcome):
        self.counts[category][outcome] += 1


_results = _Results()


@pytest.fixture
def conformance_results():
    return _results


def pytest_sessionfinish(session):
    # Under pytest-xdist (scripts/test.sh runs -n), the cases run in worker
    # processes: each sends its counts to the controller, which prints the table.
    out = getattr(session.config, "workeroutput", None)
    if out is not None:
        out["zt_conformance"] = {cat: dict(c) for cat, c in _results.counts.items()}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    for cat, c in getattr(node, "workeroutput", {}).get("zt_conformance", {}).items():
        _results.counts[cat].update(c)


def pytest_terminal_summary(terminalreporter):
    if not _results.counts:
        return
    tr = terminalreporter
    tr.section("zetile conformance against Triton's interpreter")
    total = collections.Counter()
    xe = collections.Counter()
    for cat in sorted(_results.counts):
        c = _results.counts[cat]
        if cat.startswith("xe:"):
            xe.update(c)
            continue
        total.update(c)
        tr.write_line(f"  {cat:<10} {c['passed']:>4} passed, {c['failed']:>3} failed, "
                      f"{c['skipped'] + c['oracle-skip']:>3} skipped")
    tr.write_line(f"  {'total':<10} {total['passed']:>4} passed, {total['failed']:>3} failed, "
                  f"{total['skipped'] + total['oracle-skip']:>3} skipped")
    if xe:
        from conformance_support import XE_MODE, XE_WARPS
        import shutil
        which = "every case" if XE_MODE == "all" else "a sample of the cases"
        if XE_WARPS:
            which += f" at num_warps={XE_WARPS}"
        checks = "spirv-val and ocloc" if shutil.which("ocloc") else "spirv-val; no ocloc here"
        tr.write_line(f"  pvc target (compat path, {which}): {xe['xe-ok']} built and "
                      f"validated ({checks}), {xe['xe-unsupported']} not yet "
                      f"supported on Xe, {xe['xe-failed']} failed, {xe['xe-known']} known "
                      f"upstream failures (strict xfail)")
        for cat in sorted(c for c in _results.counts if c.startswith("xe:")):
            c = _results.counts[cat]
            known = f", {c['xe-known']} known" if c["xe-known"] else ""
            tr.write_line(f"    {cat[3:]:<10} {c['xe-ok']:>4} ok, {c['xe-unsupported']:>3} unsupported, "
                          f"{c['xe-failed']:>3} failed{known}")
    if total["skipped"]:
        tr.write_line("  NOTE: cases were skipped because triton is not installed")


@pytest.fixture(autouse=True, scope="session")
def _zetile_on_cpu():
    import zetile
    zetile.set_device("cpu")
