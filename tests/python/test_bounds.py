"""Bounds mode on the CPU target (ZETILE_DEBUG=bounds, or @jit(debug=True)):
every load, store and atomic is checked against the buffers given at
launch; an access outside them raises DeviceFaultError naming the kernel,
source line, program id, the access and the argument it overran (issue 17).
Off, kernels compile to the same code as before (no checks, same keys)."""
import sys

import numpy as np
import pytest

import zetile
import zetile.language as tl

zjit = sys.modules["zetile.jit"]  # the module (zetile.jit is the decorator)
DeviceFaultError = zetile.DeviceFaultError

torch = pytest.importorskip("torch")


@pytest.fixture
def bounds(monkeypatch):
    monkeypatch.setattr(zjit, "_ENV_BOUNDS", True)


@zetile.jit
def overrun(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))  # the 16-element overrun


@zetile.jit
def add_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1, mask=m)


@zetile.jit
def count(hist_ptr, idx_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(hist_ptr + tl.load(idx_ptr + offs), 1)


@zetile.jit(debug=True)
def overrun_debug(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))


LINE_OVERRUN = overrun.fn.__code__.co_firstlineno + 3


def test_overrun_is_reported_with_line_program_and_offset(bounds):
    x = np.arange(16, dtype=np.float32)
    y = np.zeros(32, np.float32)
    with pytest.raises(DeviceFaultError) as ei:
        overrun[(1,)](x, y, BLOCK=32)
    msg = str(ei.value)
    assert "kernel overrun" in msg
    assert f"test_bounds.py:{LINE_OVERRUN}:" in msg
    assert "program (0, 0, 0)" in msg
    assert "out-of-bounds load of 4 bytes" in msg
    assert "byte offset 64 from the start of argument 'x_ptr', a buffer of 64 bytes" in msg


def test_store_overrun_names_the_output_and_program(bounds):
    x = np.arange(100, dtype=np.float32)
    y = np.zeros(100, np.float32)
    with pytest.raises(DeviceFaultError) as ei:
        add_one[(4,)](x, y[:90], 100, BLOCK=32)  # y too short for n
    msg = str(ei.value)
    assert "out-of-bounds store" in msg and "program (2, 0, 0)" in msg
    assert "argument 'y_ptr', a buffer of 360 bytes" in msg


def test_atomic_overrun(bounds):
    hist = np.zeros(8, np.int32)
    idx = np.array([0, 1, 2, 9] * 4, np.int32)
    with pytest.raises(DeviceFaultError, match="out-of-bounds atomic .* argument 'hist_ptr'"):
        count[(1,)](hist, idx, BLOCK=16)


@pytest.mark.parametrize("kind", ["numpy", "torch", "zetile"])
def test_correct_kernels_pass_for_every_kind_of_array(bounds, kind):
    a = np.arange(100, dtype=np.float32)
    if kind == "numpy":
        x, y = a, np.zeros(100, np.float32)
    elif kind == "torch":
        x, y = torch.from_numpy(a.copy()), torch.zeros(100)
    else:
        x, y = zetile.from_numpy(a), zetile.zeros(100)
    add_one[(4,)](x, y, 100, BLOCK=32)
    out = y.numpy() if kind != "numpy" else y
    np.testing.assert_array_equal(out, a + 1)
    hist = np.zeros(8, np.int32)
    count[(1,)](hist, np.array([0, 1, 2, 7] * 4, np.int32), BLOCK=16)
    assert hist.tolist() == [4, 4, 4, 0, 0, 0, 0, 4]


def test_dense_permuted_view_span_is_its_storage(bounds):
    # x.T is passed by data_ptr() (Triton's rule for dense permuted views):
    # the kernel may use all of its storage and nothing past it.
    x = torch.arange(16.).reshape(4, 4).T
    y = torch.empty_like(x)
    overrun[(1,)](x, y, BLOCK=16)
    assert torch.equal(y, x)
    with pytest.raises(DeviceFaultError, match="argument 'x_ptr', a buffer of 64 bytes"):
        overrun[(1,)](x, torch.empty(32), BLOCK=32)


def test_debug_true_turns_it_on():
    x = np.arange(16, dtype=np.float32)
    y = np.zeros(32, np.float32)
    with pytest.raises(DeviceFaultError, match="kernel overrun_debug.*argument 'x_ptr'"):
        overrun_debug[(1,)](x, y, BLOCK=32)


def test_off_the_code_is_unchanged(monkeypatch):
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"}
    monkeypatch.setattr(zjit, "_ENV_BOUNDS", False)
    off = zetile.compile(add_one, signature=sig, constexprs={"BLOCK": 32})
    monkeypatch.setattr(zjit, "_ENV_BOUNDS", True)
    on = zetile.compile(add_one, signature=sig, constexprs={"BLOCK": 32})
    assert "zt.bounds_check" not in off.asm["tile"]
    assert "zt_cpu_check_access" not in off.asm["llvm"]
    assert "zt.bounds_check" in on.asm["tile"] and "zt_cpu_check_access" in on.asm["llvm"]
    # Apart from the mark, the tile programs are the same.
    assert on.asm["tile"].replace(", zt.bounds_check", "") == off.asm["tile"]
    # Without bounds mode an overrun is not detected (it reads whatever lies
    # past the array: the reason the mode exists).
    x = np.arange(16, dtype=np.float32)
    y = np.zeros(32, np.float32)
    monkeypatch.setattr(zjit, "_ENV_BOUNDS", False)
    overrun[(1,)](x, y, BLOCK=32)
    np.testing.assert_array_equal(y[:16], x)
