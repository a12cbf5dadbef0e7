"""Triton names and semantics that Triton's own language tests exercise
(issue 19), each checked here on the CPU target without Triton's tree:
optional pointers (`x is None`), the TritonError hierarchy, batched tl.dot,
set_allocator, tensor.shape as a list, tensor.cast/item/type, tl.dtype's
type-name lists, str_to_ty and triton.reinterpret."""
from typing import NamedTuple

import numpy as np
import pytest
import torch

import zetile as triton
import zetile.language as tl

pytestmark = pytest.mark.usefixtures("cpu_device")


# ------------------------------------------------------------ x is None
@triton.jit
def _optional_bias(x_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if b_ptr is not None:
        x += tl.load(b_ptr + offs, mask=offs < n)
    if b_ptr is None:
        x = x * 10
    tl.store(out_ptr + offs, x, mask=offs < n)


def test_optional_pointer_is_none():
    x = torch.arange(8.0)
    b = torch.full((8,), 0.5)
    out = torch.empty(8)
    _optional_bias[(1,)](x, None, out, 8, BLOCK=8)
    assert torch.equal(out, x * 10)
    _optional_bias[(1,)](x, b, out, 8, BLOCK=8)
    assert torch.equal(out, x + 0.5)


@triton.jit
def _is_tensor(x_ptr, out_ptr):
    x = tl.load(x_ptr)
    y = x
    same = x is y          # identity of kernel values, decided at compile time
    other = x is not None
    tl.store(out_ptr, (x + 1) if same and other else x)


def test_is_on_kernel_values_is_identity():
    x = torch.tensor([2.0])
    out = torch.empty(1)
    _is_tensor[(1,)](x, out)
    assert out.item() == 3.0


# ------------------------------------------------------------ TritonError
def test_triton_error_hierarchy():
    assert issubclass(triton.CompilationError, triton.TritonError)
    assert issubclass(triton.compiler.errors.UnsupportedError, triton.TritonError)
    assert issubclass(triton.InterpreterError, triton.TritonError)


@triton.jit
def _bad_kernel(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr) + undefined_name)  # noqa: F821


def test_compile_error_is_a_triton_error():
    with pytest.raises(triton.TritonError, match="undefined_name"):
        _bad_kernel[(1,)](torch.zeros(1))


# ------------------------------------------------------------ batched dot
@triton.jit
def _bmm(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, K: tl.constexpr,
         N: tl.constexpr):
    bi = tl.arange(0, B)[:, None, None]
    a = tl.load(a_ptr + bi * M * K + tl.arange(0, M)[None, :, None] * K
                + tl.arange(0, K)[None, None, :])
    b = tl.load(b_ptr + bi * K * N + tl.arange(0, K)[None, :, None] * N
                + tl.arange(0, N)[None, None, :])
    c = tl.dot(a, b)
    tl.static_assert(c.shape == [B, M, N])
    tl.store(c_ptr + bi * M * N + tl.arange(0, M)[None, :, None] * N
             + tl.arange(0, N)[None, None, :], c)


@pytest.mark.parametrize("dt", [torch.float32, torch.float16, torch.int8])
def test_batched_dot(dt):
    g = torch.Generator().manual_seed(0)
    a = (torch.randn(2, 4, 8, generator=g) * 4).to(dt)
    b = (torch.randn(2, 8, 16, generator=g) * 4).to(dt)
    out = torch.empty(2, 4, 16, dtype=torch.int32 if dt == torch.int8 else torch.float32)
    _bmm[(1,)](a, b, out, 2, 4, 8, 16)
    ref = torch.bmm(a.double(), b.double())
    if dt == torch.int8:
        assert torch.equal(out.double(), ref)
    else:
        torch.testing.assert_close(out.double(), ref, rtol=1e-5, atol=1e-4)
    # Each batch is its own product: swapping the batches of `a` changes the result.
    out2 = torch.empty_like(out)
    _bmm[(1,)](a.flip(0).contiguous(), b, out2, 2, 4, 8, 16)
    ref2 = torch.bmm(a.flip(0).double(), b.double())
    assert torch.allclose(out2.double(), ref2, rtol=1e-5, atol=1e-4)
    assert not torch.allclose(out2.double(), ref, rtol=1e-5, atol=1e-4)


def test_batched_dot_on_xe_is_a_clean_unsupported_error():
    # Xe unrolls a batch of up to 16 slices (lowering/common/batch_unroll.c,
    # tests/python/test_xe_batched_dot.py); past that, 3-D stays refused.
    with pytest.raises(triton.compiler.errors.UnsupportedError) as e:
        triton.compile(_bmm, signature={"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32"},
                       constexprs=dict(B=32, M=16, K=16, N=16), target="pvc")
    assert e.value.lineno > 0 and "3-D" in str(e.value)


# ------------------------------------------------------------ allocator
def test_set_allocator():
    from zetile.allocation import NullAllocator, get_allocator
    calls = []

    def alloc(size, align, stream):
        calls.append(size)
        return torch.empty(size, dtype=torch.int8)

    triton.set_allocator(alloc)
    try:
        assert get_allocator() is alloc
    finally:
        triton.set_allocator(NullAllocator())
    with pytest.raises(RuntimeError, match="set_allocator"):
        get_allocator()(16, 16, None)


# ------------------------------------------------------------ tensor attributes
@triton.jit
def _tensor_attrs(x_ptr, out_ptr, N: tl.constexpr):
    t = tl.load(x_ptr + tl.arange(0, N))[None, :]
    tl.static_assert(t.shape == [1, N])
    tl.static_assert(x_ptr.type.element_ty == tl.float32)
    tl.static_assert(t.type.element_ty == tl.float32)
    tl.static_assert(t.type.shape == [1, N])
    s = tl.sum(t, axis=1).item()
    first = tl.reshape(t, (N,))
    y = t.cast(tl.int32).cast(tl.float32) + s
    tl.store(out_ptr + tl.arange(0, N)[None, :], y)


def test_shape_list_cast_item_type():
    x = torch.arange(4.0) + 0.5
    out = torch.empty(4)
    _tensor_attrs[(1,)](x, out, 4)
    assert out.tolist() == [8.0, 9.0, 10.0, 11.0]


@triton.jit
def _item_int(x_ptr, out_ptr):
    v = tl.load(x_ptr + tl.arange(0, 1)).item()
    tl.static_assert(v.dtype == tl.int8)
    tl.store(out_ptr, v)


def test_item_keeps_dtype():
    x = torch.tensor([-7], dtype=torch.int8)
    out = torch.zeros(1, dtype=torch.int8)
    _item_int[(1,)](x, out)
    assert out.item() == -7


def test_dtype_name_lists_and_str_to_ty():
    names = tl.dtype.SINT_TYPES + tl.dtype.UINT_TYPES + tl.dtype.STANDARD_FP_TYPES
    assert [tl.dtype(n) for n in names]
    assert "int8" in tl.dtype.SINT_TYPES and "uint64" in tl.dtype.UINT_TYPES
    assert tl.str_to_ty("*fp16") == tl.pointer_type(tl.float16)
    assert tl.str_to_ty("float32") == tl.float32
    assert tl.str_to_ty("i64") == tl.int64
    assert tl.float8e4nv.primitive_bitwidth == 8 and tl.float8e5.is_floating()


# ------------------------------------------------------------ reinterpret
@triton.jit
def _add_one(x_ptr, out_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 1)


def test_reinterpret_unsigned():
    x = torch.tensor([-1, 5], dtype=torch.int32)        # 0xFFFFFFFF read as uint32
    out = torch.zeros(2, dtype=torch.int32)
    _add_one[(1,)](triton.reinterpret(x, tl.uint32), triton.reinterpret(out, tl.uint32), 2)
    assert out.tolist() == [0, 6]                       # uint32 wraps to 0
    assert triton.reinterpret(x, tl.int32) is x
    with pytest.raises(ValueError, match="width"):
        _add_one[(1,)](triton.reinterpret(x, tl.uint8), out, 2)


def test_driver_active_target():
    t = triton.runtime.driver.active.get_current_target()
    assert t.backend == "cpu" and t.warp_size > 0
    assert np.all(np.array([1]))


@triton.jit
def _bmm3d(a_ptr, b_ptr, c_ptr, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr,
           K: tl.constexpr):
    ob = tl.arange(0, B)[:, None, None]
    om = tl.arange(0, M)[None, :, None]
    on = tl.arange(0, N)[None, None, :]
    ok = tl.arange(0, K)
    a = tl.load(a_ptr + ob * M * K + om * K + ok[None, None, :])
    b = tl.load(b_ptr + ob * K * N + ok[None, :, None] * N + on)
    tl.store(c_ptr + ob * M * N + om * N + on, tl.dot(a, b, input_precision="ieee"))


def test_driver_shared_memory_cpu():
    """The CPU target has no separate shared memory (tiles live on the stack or the
    heap), so it reports host memory, not a GPU's 64 KB: Triton's test_dot3d skips
    configurations by this figure. A batched float64 dot whose operands take 128 KB
    (twice a 64 KB limit) runs and is right."""
    props = triton.runtime.driver.active.utils.get_device_properties(0)
    B, M, N, K = 8, 32, 32, 32
    need = B * (M * K + K * N) * 8
    assert props["max_shared_mem"] >= need > 64 * 1024
    rng = np.random.default_rng(7)
    a = torch.from_numpy(rng.standard_normal((B, M, K)))
    b = torch.from_numpy(rng.standard_normal((B, K, N)))
    c = torch.empty((B, M, N), dtype=torch.float64)
    _bmm3d[(1,)](a, b, c, B, M, N, K)
    np.testing.assert_allclose(c.numpy(), np.matmul(a.numpy(), b.numpy()), rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------ tuples as arguments
class Strided(NamedTuple):
    ptr: object
    stride: tuple


@triton.jit
def _tuple_args(out_ptr, vals, pair: Strided, nested, N: tl.constexpr):
    incremented = tl.tuple([v + 1 for v in vals])
    for i in tl.static_range(len(incremented)):
        tl.store(out_ptr + i, incremented[i])
    x = tl.load(pair.ptr + tl.arange(0, N) * pair.stride[0])
    tl.store(out_ptr + 4 + tl.arange(0, N), x)
    tl.static_assert(nested[1][1] is None)
    tl.store(out_ptr + 8, tl.load(nested[0]) + nested[1][0])
    both = tl.tuple((1, 2)) + (3, 4)
    tl.store(out_ptr + 9, both[3] + (tl.tuple((1, 2)) == (1, 2)))


def test_tuple_arguments():
    out = torch.zeros(10, dtype=torch.float32)
    src = torch.arange(8.0)
    one = torch.tensor([7.0])
    _tuple_args[(1,)](out, (1, 2.5, 3), Strided(src, (2,)), (one, (5, None)), 4)
    assert out.tolist() == [2.0, 3.5, 4.0, 0.0, 0.0, 2.0, 4.0, 6.0, 12.0, 5.0]
    # Another tuple length is another specialization.
    out.zero_()
    _tuple_args[(1,)](out, (1,), Strided(src, (1,)), (one, (-7, None)), 4)
    assert out.tolist() == [2.0, 0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 0.0, 5.0]


@triton.jit
def _constexpr_unpack(out_ptr, shape: tl.constexpr):
    d0: tl.constexpr
    d1: tl.constexpr
    d0, d1 = shape
    x = tl.full((d0, d1), 1.0, dtype=tl.float32)
    tl.store(out_ptr + tl.arange(0, d0 * d1), tl.reshape(x, (d0 * d1,)) * d1)


def test_constexpr_declared_names_stay_constexpr():
    out = torch.zeros(8)
    _constexpr_unpack[(1,)](out, shape=(2, 4))
    assert out.tolist() == [4.0] * 8


# ------------------------------------------------------------ src / _unsafe_update_src
@triton.jit
def _template(x_ptr):
    tl.store(x_ptr, GENERATE_HERE)  # noqa: F821


def test_update_src():
    k = triton.JITFunction(_template.fn)
    assert k.src.startswith("def _template(x_ptr):")
    k._unsafe_update_src(k.src.replace("GENERATE_HERE", "tl.load(x_ptr) * 3"))
    x = torch.tensor([2.0])
    k[(1,)](x)
    assert x.item() == 6.0
    k._unsafe_update_src(k.src.replace("* 3", "+ 1"))   # compiled again, not cached
    k[(1,)](x)
    assert x.item() == 7.0


@triton.jit
def _rand_with(x_ptr, seed):
    tl.store(x_ptr + tl.arange(0, 1), tl.rand(seed, tl.arange(0, 1)))


def test_random_seed_must_be_an_integer():
    x = torch.empty(1)
    _rand_with[(1,)](x, 123)
    assert 0.0 <= x.item() < 1.0
    with pytest.raises(triton.CompilationError, match="seed"):
        _rand_with[(1,)](x, 2.5)


def test_update_src_with_a_closure_cell_assigned_later():
    # `out` is read by the template's body, so Python makes it a closure
    # variable of the kernel; the test function assigns it only after the
    # patch (Triton's test_scan2d does this).
    @triton.jit
    def kernel(X):
        GENERATE_HERE  # noqa: F821
        tl.store(X, out)  # noqa: F821

    k = triton.JITFunction(kernel.fn)
    k._unsafe_update_src(k.src.replace("GENERATE_HERE", "out = tl.load(X) + 1"))
    out = torch.tensor([1.0])
    k[(1,)](out)
    assert out.item() == 2.0


# ------------------------------------------------------------ smaller semantics
@triton.jit
def _argmax_nan(x_ptr, idx_ptr, N: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < N, other=-float("inf"))
    tl.store(idx_ptr, tl.argmax(x, axis=0))
    tl.store(idx_ptr + 1, tl.argmin(x, axis=0))
    tl.store(idx_ptr + 2, tl.argmax(x, axis=0, tie_break_left=False))


@pytest.mark.parametrize("vals,expect", [([float("nan"), 6.0, 8.0], [2, 3, 2]),
                                         ([3.0, 5.0, float("nan")], [1, 3, 1])])
def test_argmax_argmin_skip_nan(vals, expect):
    idx = torch.zeros(3, dtype=torch.int32)
    _argmax_nan[(1,)](torch.tensor(vals), idx, N=3, BLOCK=4)
    assert idx.tolist() == expect


@triton.jit
def _interleave_scalars(X, Y, Z):
    z = tl.interleave(X, Y)
    tl.static_assert(z.shape == [2])
    tl.store(Z + tl.arange(0, 2), z)


def test_interleave_scalars():
    z = torch.zeros(2)
    _interleave_scalars[(1,)](10.0, 20.0, z)
    assert z.tolist() == [10.0, 20.0]


@triton.jit
def _expand_bad(x_ptr, CASE: tl.constexpr):
    t = tl.arange(0, 8)
    if CASE == 0:
        t = tl.expand_dims(t, -3)
    else:
        t = tl.expand_dims(t, (0, -3))
    tl.store(x_ptr + tl.arange(0, 8), tl.reshape(t, (8,)).to(tl.float32))


@triton.jit
def _pid_axis(x_ptr):
    tl.store(x_ptr, tl.program_id(20))


def test_error_messages_as_triton():
    x = torch.zeros(8)
    with pytest.raises(triton.TritonError) as e:
        _expand_bad[(1,)](x, 0)
    assert "invalid axis -3" in str(e.value)
    with pytest.raises(triton.TritonError, match=r"duplicate axes, normalized axes = \[0, 0\]"):
        _expand_bad[(1,)](x, 1)
    with pytest.raises(triton.TritonError, match="program_id axis must be 0, 1, or 2 but got 20"):
        _pid_axis[(1,)](x)


@triton.jit
def _members(x_ptr, p_ptr, out_ptr):
    x = tl.load(x_ptr + tl.arange(0, 4))
    tl.store(out_ptr + tl.arange(0, 4), x.sqrt_rn())
    tl.store(out_ptr + 4 + tl.arange(0, 4), tl.load(p_ptr + tl.arange(0, 4)).abs())


def test_members_and_dtype_facts():
    x = torch.tensor([1.0, 4.0, 9.0, 2.0])
    out = torch.zeros(8)
    _members[(1,)](x, -x, out)
    assert out.tolist() == torch.sqrt(x).tolist() + x.tolist()
    assert tl.pi32_t == tl.pointer_type(tl.int32)
    assert (tl.float16.exponent_bias, tl.float32.exponent_bias, tl.float8e4nv.exponent_bias) == \
        (15, 127, 7)


@triton.jit
def _bf16_cumsum(x_ptr, y_ptr, N: tl.constexpr):
    x = tl.load(x_ptr + tl.arange(0, N))
    tl.store(y_ptr + tl.arange(0, N), tl.cumsum(x, axis=0))


def test_bf16_scan_rounds_each_prefix_once():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, generator=g).bfloat16()
    y = torch.empty_like(x)
    _bf16_cumsum[(1,)](x, y, 256)
    ref = torch.cumsum(x.double(), 0)
    # each prefix is the float32 sum rounded once to bf16: within half a bf16 ulp (+ fp32 noise)
    assert torch.equal(y, ref.float().bfloat16())


@triton.jit
def _dot_prec(a_ptr, b_ptr, c_ptr, PREC: tl.constexpr):
    r = tl.arange(0, 16)
    a = tl.load(a_ptr + r[:, None] * 16 + r[None, :])
    b = tl.load(b_ptr + r[:, None] * 16 + r[None, :])
    tl.store(c_ptr + r[:, None] * 16 + r[None, :], tl.dot(a, b, input_precision=PREC))


@pytest.mark.parametrize("prec", ["bf16x3", "bf16x6"])
def test_dot_bf16x_precisions(prec):
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(16, 16, generator=g), torch.randn(16, 16, generator=g)
    c = torch.empty(16, 16)
    _dot_prec[(1,)](a, b, c, prec)
    torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=1e-5, atol=1e-5)


@triton.jit
def _dot4d(x_ptr, y_ptr, z_ptr):
    x = tl.load(x_ptr + tl.arange(0, 2048)).reshape([2, 2, 16, 32])
    y = tl.load(y_ptr + tl.arange(0, 2048)).reshape([2, 2, 16, 32])
    z = tl.dot(x, tl.trans(y))          # trans swaps the last two axes
    tl.store(z_ptr + tl.arange(0, 1024), z.reshape([1024]))


def test_rank4_dot_and_batched_trans():
    g = torch.Generator().manual_seed(0)
    x = torch.randint(-4, 5, (2, 2, 16, 32), generator=g).float()
    y = torch.randint(-4, 5, (2, 2, 16, 32), generator=g).float()
    z = torch.empty(2, 2, 16, 16)
    _dot4d[(1,)](x, y, z)
    assert torch.equal(z, x @ y.transpose(-1, -2))


@triton.jit
def _unsplat_if(x_ptr, out_ptr):
    c = tl.load(x_ptr + tl.arange(0, 1)) > 0     # a one-element block as an if condition
    if c:
        tl.store(out_ptr, 1.0)
    else:
        tl.store(out_ptr, 2.0)


def test_one_element_block_as_condition():
    out = torch.zeros(1)
    _unsplat_if[(1,)](torch.tensor([3.0]), out)
    assert out.item() == 1.0
    _unsplat_if[(1,)](torch.tensor([-3.0]), out)
    assert out.item() == 2.0


def test_integer_argument_overflow_is_an_overflow_error():
    with pytest.raises(OverflowError):
        _add_one[(1,)](2**64, torch.zeros(2), 2)
