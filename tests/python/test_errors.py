"""Bad kernels and bad launches: clear errors naming the file and line, never a crash."""
import os

import numpy as np
import pytest

import zetile
import zetile.language as tl
from zetile import CompilationError


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py


def _line_of(fn, needle):
    import inspect
    lines, first = inspect.getsourcelines(fn.fn)
    for i, l in enumerate(lines):
        if needle in l:
            return first + i
    raise AssertionError(needle)


@zetile.jit
def bad_type(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    y = x + x_ptr  # float tensor + pointer: invalid
    tl.store(x_ptr + offs, y)


def test_type_error_names_file_and_line():
    x = np.zeros(16, np.float32)
    with pytest.raises(CompilationError) as ei:
        bad_type[(1,)](x, BLOCK=16)
    e = ei.value
    assert e.filename == os.path.abspath(__file__)
    assert e.lineno == _line_of(bad_type, "y = x + x_ptr")
    assert "x + x_ptr" in str(e)


@zetile.jit
def bad_arange(x_ptr, n):
    offs = tl.arange(0, n)  # n is a run-time value
    tl.store(x_ptr + offs, offs)


def test_non_constexpr_where_one_is_needed():
    with pytest.raises(CompilationError) as ei:
        bad_arange[(1,)](np.zeros(16, np.int32), 16)
    assert ei.value.lineno == _line_of(bad_arange, "tl.arange(0, n)")
    assert "constexpr" in str(ei.value) or "compile-time" in str(ei.value)


@zetile.jit
def unsupported_construct(x_ptr):
    with open("x"):
        pass


def test_unsupported_construct():
    with pytest.raises(zetile.UnsupportedError) as ei:
        unsupported_construct[(1,)](np.zeros(1, np.float32))
    assert "With" in str(ei.value)
    assert ei.value.lineno == _line_of(unsupported_construct, 'with open')


@zetile.jit
def loop_type_change(x_ptr, n):
    acc = 0
    for i in range(n):
        acc += 0.5
    tl.store(x_ptr, acc)


def test_loop_carried_type_change():
    with pytest.raises(CompilationError, match="loop-carried variable 'acc'"):
        loop_type_change[(1,)](np.zeros(1, np.float32), 3)


@zetile.jit
def simple(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, offs, mask=offs < n)


def test_bad_launches():
    x = np.zeros(16, np.int32)
    with pytest.raises(zetile.KernelArgumentError, match="missing"):
        simple[(1,)](x, 16)  # BLOCK missing
    with pytest.raises(zetile.KernelArgumentError, match="takes 3 arguments"):
        simple[(1,)](x, 16, 16, 3)
    with pytest.raises(zetile.KernelArgumentError, match="unexpected argument"):
        simple[(1,)](x, 16, BLOCK=16, FOO=1)
    with pytest.raises(zetile.KernelArgumentError, match="cannot be passed"):
        simple[(1,)]("not an array", 16, BLOCK=16)
    with pytest.raises(zetile.KernelArgumentError, match="grid"):
        simple[(1, 1, 1, 1)](x, 16, BLOCK=16)
    with pytest.raises(RuntimeError, match="did you forget @jit"):
        tl.arange(0, 16)
    with pytest.raises(RuntimeError, match=r"simple\[grid\]"):
        simple(x, 16, BLOCK=16)


def test_undefined_name():
    @zetile.jit
    def k(x_ptr):
        tl.store(x_ptr, undefined_thing)  # noqa: F821

    with pytest.raises(CompilationError, match="undefined_thing"):
        k[(1,)](np.zeros(1, np.float32))


@zetile.jit
def xe_rank3(x_ptr, out_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r)
    y = tl.sum(tl.reshape(x, (2, 4, BLOCK // 8)), axis=2)
    tl.store(out_ptr + tl.arange(0, 8), tl.reshape(y, (8,)))


def test_xe_unsupported_construct_names_the_line():
    # Rank-3 tensors have no Xe layout yet (the CPU target has them): an
    # UnsupportedError naming the kernel's line.
    with pytest.raises(zetile.UnsupportedError) as ei:
        zetile.compile(xe_rank3, signature={"x_ptr": "*fp32", "out_ptr": "*fp32"},
                       constexprs={"BLOCK": 32}, target="pvc")
    msg = str(ei.value)
    assert "Xe" in msg and "3-D" in msg, msg
    assert ei.value.lineno == _line_of(xe_rank3, "tl.reshape(x"), msg
