"""`x.type` on compile-time values is tl.constexpr_type(value), as in
Triton (issue 19; Triton's test_tuple passes tuples mixing tensors and
constexprs and asserts on the elements' types)."""
import pytest

import zetile
import zetile.language as tl

torch = pytest.importorskip("torch")


@zetile.jit
def mixed(out_ptr, values):
    tl.static_assert(values[1].type == tl.constexpr_type(3))
    tl.static_assert(values[1].type != tl.constexpr_type(4))
    tl.store(out_ptr, tl.load(values[0]) + values[1])


@zetile.jit
def strides_kind(out_ptr, strides, UNIT: tl.constexpr):
    # A stride of 1 is specialized to a compile-time value, any other stays a
    # run-time integer (a tensor).
    if UNIT:
        tl.static_assert(isinstance(strides[1].type, tl.constexpr_type))
    else:
        tl.static_assert(not isinstance(strides[0].type, tl.constexpr_type))
    tl.store(out_ptr, strides[0])


def test_tuple_element_types():
    x = torch.tensor([8], dtype=torch.int32)
    out = torch.empty_like(x)
    mixed[(1,)](out, (x, tl.constexpr(3)))
    assert out.item() == 11
    strides_kind[(1,)](out, (6, 1), UNIT=True)
    strides_kind[(1,)](out, (6, 1), UNIT=False)
    assert out.item() == 6


def test_constexpr_type_outside_kernels():
    assert tl.constexpr(3).type == tl.constexpr_type(3)
    assert tl.constexpr_type(tl.constexpr(2)) == tl.constexpr_type(2)
    assert repr(tl.constexpr_type(5)) == "constexpr_type[5]"
    assert len({tl.constexpr_type(1), tl.constexpr_type(1)}) == 1


def test_wrong_type_assertion_fails():
    @zetile.jit
    def bad(out_ptr, values):
        tl.static_assert(values[1].type == tl.constexpr_type(4))
        tl.store(out_ptr, values[1])

    with pytest.raises(zetile.CompilationError):
        bad[(1,)](torch.empty(1, dtype=torch.int32), (1, tl.constexpr(3)))
