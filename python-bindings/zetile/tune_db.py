"""The autotuning results database: one SQLite file shared by processes.

A result is found again only by the same kernel source (its hash covers the
kernel, the @jit functions it calls and zetile's compiler version), the
same key values, the same set of configs, the same device and driver, and
the same zetile version; anything else tunes again. Writers use WAL mode
and a busy timeout, so concurrent processes queue instead of failing; a
file SQLite calls corrupt is moved aside (FILE.corrupt-<time>) and a new one
made, with a warning. A database that cannot be used at all (read-only
directory, ...) only costs the persistence: tuning still runs, with one
warning.

    ZETILE_AUTOTUNE_DB=/path/file.sqlite   where it lives (default: the kernel
                                           cache directory, autotune.sqlite)
    ZETILE_AUTOTUNE_DB=off                 no persistence (also 0, none, "")
"""
from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import os
import socket
import sqlite3
import threading
import time
import warnings

SCHEMA_VERSION = 1
OFF_VALUES = ("", "0", "off", "none", "false", "no")
BUSY_TIMEOUT_S = 60.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (
    kernel       TEXT NOT NULL,   -- module:qualname, for people
    kernel_hash  TEXT NOT NULL,   -- sources + compiler version
    key          TEXT NOT NULL,   -- JSON list of the key values
    configs_hash TEXT NOT NULL,   -- the configs that were compared
    device       TEXT NOT NULL,   -- name and description
    driver       TEXT NOT NULL,
    target       TEXT NOT NULL,
    version      TEXT NOT NULL,   -- zetile's version
    best         TEXT NOT NULL,   -- JSON of the winning config
    timings      TEXT NOT NULL,   -- JSON [[config, median, p20, p80], ...] in ms
    bench_seconds REAL,
    created      REAL NOT NULL,
    host         TEXT,
    PRIMARY KEY (kernel_hash, key, configs_hash, device, driver, version)
);
"""


class TuneDBError(RuntimeError):
    pass


def default_path():
    """$ZETILE_AUTOTUNE_DB, else autotune.sqlite in the kernel cache directory;
    None when persistence is off."""
    env = os.environ.get("ZETILE_AUTOTUNE_DB")
    if env is not None:
        return None if env.strip().lower() in OFF_VALUES else os.path.expanduser(env)
    from . import _C
    return os.path.join(_C.cache_dir(), "autotune.sqlite")


def zetile_version():
    from . import __version__
    return __version__


def _is_corruption(e):
    code = getattr(e, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)
    msg = str(e).lower()
    return "not a database" in msg or "malformed" in msg or "corrupt" in msg


class TuneDB:
    """One database file. Connections are per thread (sqlite3 objects may
    not cross threads); every public call opens, retries on corruption once,
    and never raises for an unusable database unless strict=True."""

    def __init__(self, path, strict=False):
        self.path = path
        self.strict = strict
        self._local = threading.local()
        self._warned = False

    # ------------------------------------------------------------ connecting
    def _connect(self):
        conn = getattr(self._local, "conn", None)
        # A connection never crosses a fork (SQLite's rule): a child opens its own.
        if conn is not None and self._local.pid == os.getpid():
            return conn
        d = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(d, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            # Switching a new file to WAL reads it and then upgrades to a write
            # lock; SQLite answers a second process doing the same "database is
            # locked" at once, without waiting the busy timeout (it would be a
            # deadlock): one process at a time switches. Without a lock file
            # (read-only directory) the switch is tried unlocked: nothing else
            # works there.
            with self._file_lock(optional=True):
                # WAL: readers never wait for the writer; one writer at a time.
                # A rollback journal (a filesystem without shared memory) works too.
                conn.execute("PRAGMA journal_mode = WAL").fetchone()
            conn.execute("PRAGMA synchronous = NORMAL")
            with self._write(conn):
                for stmt in _SCHEMA.split(";"):
                    if stmt.strip():
                        conn.execute(stmt)
                row = conn.execute("SELECT v FROM meta WHERE k='schema'").fetchone()
                if row is None:
                    conn.execute("INSERT INTO meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),))
                elif row[0] != str(SCHEMA_VERSION):
                    # A future/past layout: results are a cache, start over.
                    conn.execute("DELETE FROM results")
                    conn.execute("UPDATE meta SET v=? WHERE k='schema'", (str(SCHEMA_VERSION),))
        except BaseException:
            conn.close()
            raise
        self._local.conn = conn
        self._local.pid = os.getpid()
        return conn

    @contextlib.contextmanager
    def _file_lock(self, optional):
        """An exclusive flock on FILE.lock for the block: across processes
        (and threads: each call opens its own descriptor). With optional, a
        lock file that cannot be made (read-only directory) runs the block
        unlocked; otherwise the OSError goes to the caller."""
        import fcntl
        try:
            lk = open(self.path + ".lock", "a")
        except OSError:
            if not optional:
                raise
            yield
            return
        with lk:
            fcntl.flock(lk, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lk, fcntl.LOCK_UN)

    @staticmethod
    @contextlib.contextmanager
    def _write(conn):
        # BEGIN IMMEDIATE takes the write lock up front (waiting up to the
        # busy timeout), so two writers never deadlock upgrading read locks.
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def close(self):
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            if self._local.pid == os.getpid():
                conn.close()
            self._local.conn = None

    def _recover(self, err):
        """Moves a corrupt file aside (under an flock, re-checking first: a
        process racing here may already have replaced it) and warns."""
        self.close()
        with self._file_lock(optional=False):
            still_bad = True
            try:
                c = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S)
                try:
                    c.execute("PRAGMA quick_check").fetchall()
                    c.execute("SELECT count(*) FROM results").fetchone()
                    still_bad = False
                finally:
                    c.close()
            except sqlite3.DatabaseError as e2:
                still_bad = _is_corruption(e2) or "no such table" in str(e2)
            if still_bad and os.path.exists(self.path):
                aside = f"{self.path}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
                os.replace(self.path, aside)
                for ext in ("-wal", "-shm"):
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(self.path + ext)
                warnings.warn(f"zetile: the autotuning database {self.path} was corrupt "
                              f"({err}); moved it to {aside} and started a new one",
                              RuntimeWarning, stacklevel=4)

    def _run(self, fn, default=None):
        for attempt in range(2):
            try:
                return fn(self._connect())
            except sqlite3.DatabaseError as e:
                if attempt == 0 and _is_corruption(e):
                    self._recover(e)
                    continue
                if self.strict:
                    raise TuneDBError(f"autotuning database {self.path}: {e}") from e
                if not self._warned:
                    self._warned = True
                    warnings.warn(f"zetile: autotuning database {self.path} unusable ({e}); "
                                  "results are kept in memory only", RuntimeWarning, stacklevel=4)
                return default
            except OSError as e:
                if self.strict:
                    raise TuneDBError(f"autotuning database {self.path}: {e}") from e
                if not self._warned:
                    self._warned = True
                    warnings.warn(f"zetile: autotuning database {self.path} unusable ({e}); "
                                  "results are kept in memory only", RuntimeWarning, stacklevel=4)
                return default
        return default

    # ------------------------------------------------------------ results
    def lookup(self, kernel_hash, key, configs_hash, device, driver, version=None):
        """The stored row (a dict) for exactly these, else None."""
        version = version or zetile_version()

        def q(conn):
            cur = conn.execute(
                "SELECT * FROM results WHERE kernel_hash=? AND key=? AND configs_hash=? AND "
                "device=? AND driver=? AND version=?",
                (kernel_hash, key, configs_hash, device, driver, version))
            row = cur.fetchone()
            return _row(cur, row) if row else None
        return self._run(q)

    def store(self, *, kernel, kernel_hash, key, configs_hash, device, driver, target, best,
              timings, bench_seconds=None, version=None):
        version = version or zetile_version()
        rec = (kernel, kernel_hash, key, configs_hash, device, driver, target, version,
               json.dumps(best, sort_keys=True), json.dumps(timings), bench_seconds, time.time(),
               socket.gethostname())

        def w(conn):
            with self._write(conn):
                conn.execute("INSERT OR REPLACE INTO results VALUES "
                             "(?,?,?,?,?,?,?,?,?,?,?,?,?)", rec)
            return True
        return self._run(w, False)

    def lookup_latest(self, kernel_hash, key, device, driver, version=None):
        """The newest row for these, whatever configs were compared (for
        templates, whose config list may grow), else None."""
        version = version or zetile_version()

        def q(conn):
            cur = conn.execute(
                "SELECT * FROM results WHERE kernel_hash=? AND key=? AND device=? AND driver=? "
                "AND version=? ORDER BY created DESC LIMIT 1",
                (kernel_hash, key, device, driver, version))
            row = cur.fetchone()
            return _row(cur, row) if row else None
        return self._run(q)

    def rows(self, kernel=None):
        def q(conn):
            sql, args = "SELECT * FROM results", ()
            if kernel:
                sql += " WHERE kernel LIKE ?"
                args = (f"%{kernel}%",)
            cur = conn.execute(sql + " ORDER BY created", args)
            return [_row(cur, r) for r in cur.fetchall()]
        return self._run(q, [])

    def delete_other_versions(self, version=None):
        version = version or zetile_version()

        def w(conn):
            with self._write(conn):
                return conn.execute("DELETE FROM results WHERE version != ?", (version,)).rowcount
        return self._run(w, 0)

    def import_rows(self, rows):
        cols = ("kernel", "kernel_hash", "key", "configs_hash", "device", "driver", "target",
                "version", "best", "timings", "bench_seconds", "created", "host")

        def w(conn):
            with self._write(conn):
                for r in rows:
                    vals = [r.get(c) for c in cols]
                    for i in (8, 9):   # best, timings: stored as JSON text
                        if not isinstance(vals[i], str):
                            vals[i] = json.dumps(vals[i], sort_keys=(i == 8))
                    if vals[11] is None:
                        vals[11] = time.time()
                    conn.execute("INSERT OR REPLACE INTO results VALUES "
                                 "(?,?,?,?,?,?,?,?,?,?,?,?,?)", vals)
            return len(rows)
        return self._run(w, 0)


def _row(cur, row):
    d = {c[0]: v for c, v in zip(cur.description, row)}
    for k in ("best", "timings"):
        try:
            d[k] = json.loads(d[k])
        except (TypeError, ValueError):
            pass
    return d


_dbs = {}
_dbs_lock = threading.Lock()


def get_db(path=None):
    """The TuneDB at `path` (default: default_path()); None when off."""
    path = path or default_path()
    if path is None:
        return None
    with _dbs_lock:
        db = _dbs.get(path)
        if db is None:
            db = _dbs[path] = TuneDB(path)
        return db


def device_ids(info):
    """(device, driver) as the database writes them, from a device's info dict."""
    return f"{info['name']} | {info.get('description', '')}", str(info.get("driver_version", ""))


_template_hashes = {}


def best_for_template(jitfn, key_values, device=None):
    """The best config `zetile tune` stored for a template kernel (e.g. the
    GEMM template's gemm_kernel with key [M, N, K, dtype]) on `device` (its
    name, its driver and this zetile version), as a dict {"kwargs": {...},
    options...}; None when nothing was stored or the database is off.
    Templates call this before falling back to their own defaults."""
    db = get_db()
    if db is None:
        return None
    from . import runtime
    dev = device if hasattr(device, "synchronize") else runtime.get_device(device)
    h = _template_hashes.get(id(jitfn))
    if h is None:
        h = _template_hashes[id(jitfn)] = kernel_hash(jitfn)
    dev_id, driver = device_ids(runtime.info(dev))
    row = db.lookup_latest(h, json.dumps(list(key_values)), dev_id, driver)
    return row["best"] if row else None


# ---------------------------------------------------------------- hashing
def _jit_callees(jf, seen):
    """Sources of the @jit functions `jf` refers to by global name."""
    from .jit import JITFunction
    fn = jf.fn
    names = set()
    stack = [fn.__code__]
    while stack:
        co = stack.pop()
        names.update(co.co_names)
        stack.extend(c for c in co.co_consts if hasattr(c, "co_names"))
    out = []
    for n in sorted(names):
        g = fn.__globals__.get(n)
        if isinstance(g, JITFunction) and id(g) not in seen:
            seen.add(id(g))
            out.append(_source(g.fn))
            out += _jit_callees(g, seen)
    return out


def _source(fn):
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return fn.__code__.co_code.hex()


def kernel_hash(jitfn):
    """sha256 of the kernel's source, its @jit callees' sources and the
    compiler's version string: what changes generated code for the same
    arguments (the specialization itself is in the tuning key)."""
    from . import _C
    h = hashlib.sha256()
    h.update(_source(jitfn.fn).encode())
    for s in _jit_callees(jitfn, {id(jitfn)}):
        h.update(b"\0" + s.encode())
    try:
        h.update(b"\0" + str(_C.compiler_version()).encode())
    except Exception:  # noqa: BLE001 - the runtime-only build has no compiler version
        pass
    return h.hexdigest()


def configs_hash(configs):
    h = hashlib.sha256()
    for c in configs:
        h.update(json.dumps(c, sort_keys=True, default=str).encode() + b"\n")
    return h.hexdigest()[:32]
