"""The autotuning results database (zetile/tune_db.py): shared by processes,
safe with concurrent writers, recovers from a corrupt file, invalidated by a
zetile version change, switched off by ZETILE_AUTOTUNE_DB=off."""
import glob
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
import warnings

import pytest

import zetile
from zetile import tune_db
from zt_testutil import ROOT, EXAMPLES

KERNEL = '''
import numpy as np, zetile, zetile.language as tl

@zetile.jit
def accumulate(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(out_ptr + offs, mask=m) + tl.load(x_ptr + offs, mask=m), mask=m)

BENCHED = []

def bench(kernel_call, quantiles):
    # Counts benchmarks; a fixed ranking (BLOCK 256 wins) so results are known.
    kernel_call()
    BENCHED.append(1)
    b = bench.block
    return [{64: 2.0, 256: 1.0, 1024: 3.0}[b]] * 3

def record(nargs):
    bench.block = nargs["BLOCK"]

def tuned():
    return zetile.autotune([zetile.Config({"BLOCK": b}, pre_hook=record) for b in (64, 256, 1024)],
                           key=["n"], do_bench=bench, reset_to_zero=["out_ptr"])(accumulate)

def run(n, k=None):
    k = k or tuned()
    x = np.ones(n, np.float32)
    out = np.zeros(n, np.float32)
    k[lambda M: (zetile.cdiv(n, M["BLOCK"]),)](x, out, n)
    assert np.allclose(out, 1.0), out
    return k
'''


@pytest.fixture
def kmod(tmp_path, monkeypatch):
    """The kernel module above, importable here and in child processes."""
    (tmp_path / "tunekern.py").write_text(KERNEL)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("ZETILE_AUTOTUNE_DB", str(tmp_path / "tune.sqlite"))
    zetile.set_device("cpu")
    sys.modules.pop("tunekern", None)
    import tunekern
    tunekern.BENCHED.clear()
    return tunekern


def _child(tmp_path, body, env=None):
    """Starts a child process running `body` after importing tunekern."""
    e = dict(os.environ)
    e.update(env or {})
    e["PYTHONPATH"] = os.pathsep.join([str(tmp_path), os.path.join(ROOT, "python-bindings"),
                                       EXAMPLES])
    code = "import tunekern, zetile\nzetile.set_device('cpu')\n" + textwrap.dedent(body)
    return subprocess.Popen([sys.executable, "-W", "error::RuntimeWarning", "-c", code], env=e,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _done(p, timeout=120):
    out, err = p.communicate(timeout=timeout)
    assert p.returncode == 0, out + err
    return out


def test_second_process_skips_benchmarking(kmod, tmp_path):
    body = """
        k = tunekern.run(1000)
        print("SOURCE", k.tuning_source, len(tunekern.BENCHED), k.best_config.kwargs["BLOCK"])
    """
    first = _done(_child(tmp_path, body))
    second = _done(_child(tmp_path, body))
    assert "SOURCE benchmark 3 256" in first
    assert "SOURCE database 0 256" in second
    # A different key value is not the same result.
    third = _done(_child(tmp_path, body.replace("1000", "1001")))
    assert "SOURCE benchmark 3 256" in third


def test_eight_processes_write_at_once(kmod, tmp_path):
    # Each process tunes its own key and also stores 25 rows as fast as it can,
    # all starting at the same moment: every write must land, none may fail.
    start = time.time() + 2.0
    body = """
        import os, time
        from zetile import tune_db
        i = int(os.environ["WORKER"])
        db = tune_db.get_db()
        db.strict = True
        time.sleep(max(0, {start} - time.time()))
        for j in range(25):
            db.store(kernel="w", kernel_hash="h", key=f"[{{i}}, {{j}}]", configs_hash="c",
                     device="d", driver="v", target="cpu", best={{"kwargs": {{}}}}, timings=[])
        k = tunekern.run(2000 + i)
        print("OK", k.tuning_source)
    """.format(start=start)
    procs = [_child(tmp_path, body, env={"WORKER": str(i)}) for i in range(8)]
    outs = [_done(p) for p in procs]
    assert all("OK benchmark" in o for o in outs)
    db = tune_db.TuneDB(str(tmp_path / "tune.sqlite"), strict=True)
    rows = db.rows()
    assert len([r for r in rows if r["kernel"] == "w"]) == 8 * 25
    tuned = [r for r in rows if r["kernel"] != "w"]
    assert sorted(json.loads(r["key"])[0] for r in tuned) == [2000 + i for i in range(8)]
    assert all(r["best"]["kwargs"] == {"BLOCK": 256} for r in tuned)
    with sqlite3.connect(str(tmp_path / "tune.sqlite")) as c:
        assert c.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def _open_fresh_files(paths, barrier, q):
    # One forked worker: opens each new file at the same moment as the others.
    try:
        for p in paths:
            barrier.wait(timeout=60)
            db = tune_db.TuneDB(p, strict=True)
            db._run(lambda c: c.execute("SELECT count(*) FROM results").fetchone())
            db.close()
        q.put("ok")
    except BaseException as e:  # noqa: BLE001 - reported to the parent
        barrier.abort()  # the others stop waiting for this one
        q.put(f"{type(e).__name__}: {e}")


def test_processes_opening_a_new_file_at_once_all_switch_it_to_wal(tmp_path):
    # Switching a new file to WAL upgrades a read lock; SQLite answers a second
    # process doing the same "database is locked" at once, busy timeout or not
    # (the session-15 CI failure of test_eight_processes_write_at_once). Without
    # the flock around the switch, 8 processes on 30 new files failed in 5 runs of 5.
    import multiprocessing as mp
    ctx = mp.get_context("fork")
    paths = [str(tmp_path / f"t{i}.sqlite") for i in range(30)]
    barrier, q = ctx.Barrier(8), ctx.Queue()
    procs = [ctx.Process(target=_open_fresh_files, args=(paths, barrier, q)) for _ in range(8)]
    for p in procs:
        p.start()
    results = [q.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert results == ["ok"] * 8, results
    for p in paths:
        with sqlite3.connect(p) as c:
            assert c.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_corrupt_file_is_moved_aside_with_a_warning(kmod, tmp_path):
    path = tmp_path / "tune.sqlite"
    path.write_bytes(b"this is not an SQLite database" * 100)
    tune_db._dbs.clear()
    with pytest.warns(RuntimeWarning, match="was corrupt"):
        k = kmod.run(500)
    assert k.tuning_source == "benchmark"
    aside = glob.glob(str(path) + ".corrupt-*")
    assert len(aside) == 1 and open(aside[0], "rb").read().startswith(b"this is not")
    # The new file holds the result: a fresh tuner finds it.
    kmod.BENCHED.clear()
    k2 = kmod.run(500)
    assert k2.tuning_source == "database" and kmod.BENCHED == []


def test_version_change_invalidates_entries(kmod, monkeypatch):
    kmod.run(700)
    assert len(kmod.BENCHED) == 3
    kmod.BENCHED.clear()
    assert kmod.run(700).tuning_source == "database" and kmod.BENCHED == []
    before = zetile.__version__
    monkeypatch.setattr(zetile, "__version__", "999.0-test")
    k = kmod.run(700)
    assert k.tuning_source == "benchmark" and len(kmod.BENCHED) == 3
    versions = sorted({r["version"] for r in tune_db.get_db().rows()})
    assert versions == sorted({"999.0-test", before})
    assert tune_db.get_db().delete_other_versions() == 1


def test_source_change_invalidates_entries(kmod, tmp_path):
    kmod.run(300)
    src = (tmp_path / "tunekern.py").read_text().replace("mask=m), mask=m)",
                                                         "mask=m) * 1, mask=m)")
    (tmp_path / "tunekern.py").write_text(src)
    sys.modules.pop("tunekern", None)
    import tunekern
    tunekern.BENCHED.clear()
    assert tunekern.run(300).tuning_source == "benchmark"


def test_off_switch(kmod, tmp_path, monkeypatch):
    monkeypatch.setenv("ZETILE_AUTOTUNE_DB", "off")
    assert tune_db.default_path() is None
    kmod.run(400)
    kmod.BENCHED.clear()
    assert kmod.run(400).tuning_source == "benchmark" and len(kmod.BENCHED) == 3
    assert not (tmp_path / "tune.sqlite").exists()


def test_unusable_location_warns_once_and_still_tunes(kmod, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("ZETILE_AUTOTUNE_DB", str(blocker / "sub" / "tune.sqlite"))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        k = kmod.run(900)
    assert k.tuning_source == "benchmark"
    assert sum("unusable" in str(x.message) for x in w) == 1


def test_export_import_round_trip(kmod, tmp_path):
    kmod.run(800)
    rows = tune_db.get_db().rows()
    other = tune_db.TuneDB(str(tmp_path / "other.sqlite"), strict=True)
    assert other.import_rows(json.loads(json.dumps(rows))) == len(rows)
    got = other.rows()
    assert [(r["key"], r["best"]) for r in got] == [(r["key"], r["best"]) for r in rows]


def test_forked_child_uses_its_own_connection(kmod, tmp_path):
    # multiprocessing's fork start method copies the parent's connection:
    # the child must open its own (SQLite forbids sharing one across a fork).
    kmod.run(600)
    db = tune_db.get_db()
    parent_conn = db._connect()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            if db._connect() is parent_conn:
                os._exit(3)
            db.strict = True
            db.store(kernel="child", kernel_hash="h", key="[1]", configs_hash="c", device="d",
                     driver="v", target="cpu", best={"kwargs": {}}, timings=[])
            code = 0 if len(db.rows("child")) == 1 else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert [r["kernel"] for r in db.rows("child")] == ["child"]
    assert len(db.rows()) == 2
