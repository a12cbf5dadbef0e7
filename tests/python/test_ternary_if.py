"""`a if c else b` with a run-time scalar condition and a call on either
side runs only the chosen side, as Triton's scf.if does (issue 19, Triton's
test_if[if_exp_dynamic_void]). Before, both sides ran and one was selected:
a load the condition guards was read anyway (out of bounds: bounds mode
reported it), and two stores both happened."""
import sys

import pytest

import zetile
import zetile.language as tl

torch = pytest.importorskip("torch")
zjit = sys.modules["zetile.jit"]


@pytest.fixture
def bounds(monkeypatch):
    monkeypatch.setattr(zjit, "_ENV_BOUNDS", True)


@zetile.jit
def guarded(x, out, n):
    pid = tl.program_id(0)
    v = tl.load(x + pid) if pid < n else -1.0           # x has n elements
    tl.store(out + pid, v)
    w = 0.5 if pid < n else tl.load(x + (pid - n) % n)   # literal first: takes the load's type
    tl.store(out + 8 + pid, w)


@zetile.jit
def void_sides(out):
    pid = tl.program_id(0)
    tl.store(out + pid, 1.0) if pid % 2 == 0 else tl.store(out + pid, 2.0)


def test_guarded_load_is_not_read(bounds):
    x = torch.arange(3.)
    out = torch.zeros(16)
    guarded[(8,)](x, out, 3)
    assert out[:8].tolist() == [0, 1, 2, -1, -1, -1, -1, -1]
    assert out[8:11].tolist() == [0.5] * 3 and out[11:].tolist() == [0, 1, 2, 0, 1]


def test_void_sides_are_statements():
    out = torch.zeros(8)
    void_sides[(8,)](out)
    assert out.tolist() == [1, 2] * 4


def test_inconsistent_types_are_refused():
    @zetile.jit
    def mixed(x, out):
        v = tl.load(x) if tl.program_id(0) == 0 else tl.load(x).to(tl.int32)
        tl.store(out, v)

    with pytest.raises(zetile.CompilationError, match="inconsistent type: fp32 and int32"):
        mixed[(1,)](torch.zeros(1), torch.zeros(1))


@zetile.jit
def select_only(x, out, BLOCK: tl.constexpr):
    # No call on either side: still an elementwise select of both.
    o = tl.arange(0, BLOCK)
    v = tl.load(x + o)
    tl.store(out + o, v * 2 if tl.program_id(0) == 0 else v + 1)


def test_pure_expressions_still_select():
    out = torch.zeros(4)
    select_only[(1,)](torch.arange(4.), out, BLOCK=4)
    assert out.tolist() == [0, 2, 4, 6]
