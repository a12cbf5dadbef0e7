"""Tile IR kept by source (zetile/source_cache.py, issue 16's warm start): a
specialization built once is not traced again by the front end, and no change
of what the front end reads (a module constant, a called @jit function, an
attribute of a plain object) gives back the IR of before."""
import importlib.util
import os

import numpy as np
import pytest

import zetile
from zetile import source_cache
from zetile.compiler import codegen

MODULE = '''
import zetile
import zetile.language as tl

SCALE = tl.constexpr({scale})


class Config:
    n = 2


CFG = Config()


@zetile.jit
def helper(v):
    return v + {offset}


@zetile.jit
def scaled(x, y, n, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    m = o < n
    tl.store(y + o, helper(tl.load(x + o, mask=m)) * SCALE, mask=m)


@zetile.jit
def by_object(x, y, n, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    m = o < n
    tl.store(y + o, tl.load(x + o, mask=m) * CFG.n, mask=m)
'''


def _module(tmp_path, name, scale=2, offset=1):
    path = tmp_path / f"{name}.py"
    path.write_text(MODULE.format(scale=scale, offset=offset))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(kernel):
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    kernel[(1,)](x, y, 8, BLOCK=8)
    return x, y


def _forget(kernel):
    """Drops the in-process specializations: the next launch asks the front
    end (or the source cache) again, as a new process does."""
    kernel._cache.clear()
    kernel._fast_clear()


@pytest.fixture
def traces(monkeypatch):
    calls = []
    real = codegen.generate

    def counted(*a, **k):
        calls.append(a[2])
        return real(*a, **k)
    monkeypatch.setattr(codegen, "generate", counted)
    return calls


def test_built_once_then_read_by_source(tmp_path, traces):
    mod = _module(tmp_path, "sc_once")
    x, y = _run(mod.scaled)
    np.testing.assert_array_equal(y, (x + 1) * 2)
    assert traces == ["scaled"]
    _forget(mod.scaled)
    x, y = _run(mod.scaled)
    np.testing.assert_array_equal(y, (x + 1) * 2)
    assert traces == ["scaled"], "the second build ran the front end again"


def test_switched_off(tmp_path, traces, monkeypatch):
    monkeypatch.setenv("ZETILE_SOURCE_CACHE", "0")
    mod = _module(tmp_path, "sc_off")
    _run(mod.scaled)
    _forget(mod.scaled)
    _run(mod.scaled)
    assert traces == ["scaled", "scaled"]


def test_changed_constant_and_callee_are_built_again(tmp_path, traces):
    mod = _module(tmp_path, "sc_deps")
    _run(mod.scaled)
    mod.SCALE = zetile.language.constexpr(3)
    _forget(mod.scaled)
    x, y = _run(mod.scaled)
    np.testing.assert_array_equal(y, (x + 1) * 3)
    # Another helper: the same name, another function (its source differs).
    other = _module(tmp_path, "sc_deps_other", offset=5)
    mod.helper = other.helper
    _forget(mod.scaled)
    x, y = _run(mod.scaled)
    np.testing.assert_array_equal(y, (x + 5) * 3)
    assert traces == ["scaled"] * 3


def test_plain_object_is_not_kept(tmp_path, traces):
    # An attribute of an arbitrary object: no fingerprint says what the
    # front end reads of it, so every build traces.
    mod = _module(tmp_path, "sc_obj")
    x, y = _run(mod.by_object)
    np.testing.assert_array_equal(y, x * 2)
    mod.CFG.n = 3
    _forget(mod.by_object)
    x, y = _run(mod.by_object)
    np.testing.assert_array_equal(y, x * 3)
    assert traces == ["by_object", "by_object"]
    assert source_cache.key(mod.by_object, {}, {"BLOCK": 8}, {}, {}, False, False) is None


def test_damaged_entry_is_built_again(tmp_path, traces):
    mod = _module(tmp_path, "sc_torn")
    _run(mod.scaled)
    entries = []
    root = os.path.join(zetile.cache_dir(), "tile-ir")
    for d, _, files in os.walk(root):
        entries += [os.path.join(d, f) for f in files]
    newest = max(entries, key=os.path.getmtime)
    with open(newest, "rb") as f:
        data = f.read()
    with open(newest, "wb") as f:
        f.write(data[:-7])  # a torn write
    _forget(mod.scaled)
    x, y = _run(mod.scaled)
    np.testing.assert_array_equal(y, (x + 1) * 2)
    assert traces == ["scaled", "scaled"]


def test_only_the_language_modules_are_fingerprinted():
    # zetile.knobs and the like hold settings a kernel could read while traced.
    assert source_cache.fingerprint(zetile.language) == "module:zetile.language"
    for mod in (zetile.knobs, zetile, np):
        with pytest.raises(source_cache._NotKept):
            source_cache.fingerprint(mod)
