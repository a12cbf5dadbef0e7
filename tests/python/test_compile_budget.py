"""A compile-time budget (ZETILE_COMPILE_TIMEOUT, seconds; off by default):
compiles that miss the cache run in a zetile-compile-worker process, which
is ended at the deadline; the error says how long the finished stages took
and in which stage the time ran out (issue 17). Within the budget the
artifact is the one an in-process compile makes, and compile errors come
back unchanged."""
import random

import pytest

import zetile
import zetile.language as tl
from zetile import _C


@zetile.jit
def scale(x_ptr, y_ptr, n, SALT: tl.constexpr, B: tl.constexpr):
    o = tl.arange(0, B)
    m = o < n
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=m) * SALT, mask=m)


SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}


def fresh():
    """Constexprs no earlier compile used: a cache miss."""
    return {"SALT": random.random() + 2.0, "B": 32}


def test_deadline_names_the_stages(monkeypatch):
    monkeypatch.setenv("ZETILE_COMPILE_TIMEOUT", "0.05")
    with pytest.raises(zetile.CompilationError) as ei:
        zetile.compile(scale, signature=SIG, constexprs=fresh(), target="cpu")
    msg = str(ei.value)
    assert "compile stopped after 0." in msg and "ZETILE_COMPILE_TIMEOUT=0.05" in msg
    assert "stages finished before:" in msg


def test_within_the_budget_the_artifact_is_the_same(monkeypatch):
    ce = fresh()
    ref = zetile.compile(scale, signature=SIG, constexprs=ce, target="cpu", cached=False)
    monkeypatch.setenv("ZETILE_COMPILE_TIMEOUT", "120")
    got = zetile.compile(scale, signature=SIG, constexprs=ce, target="cpu")
    for section in ("tile", "meta", "llvm"):
        assert got.asm[section] == ref.asm[section], section


def test_compile_errors_come_back_unchanged(monkeypatch):
    text = "module { bogus }"
    with pytest.raises(_C.CompileError) as inproc:
        _C.compile(text, target="cpu", cached=False)
    monkeypatch.setenv("ZETILE_COMPILE_TIMEOUT", "120")
    with pytest.raises(_C.CompileError) as worker:
        _C.compile(text + " ", target="cpu", cached=True)  # another key: a miss
    assert str(worker.value) == str(inproc.value)
