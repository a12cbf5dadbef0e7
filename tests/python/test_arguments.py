"""Array arguments: a kernel sees only an address, so anything the address
does not describe (strides, byte order, misalignment, another device, a lazy
view) must be refused with an error naming the argument, never run with
silently wrong results (issue 17). Every kind of array follows one rule:
numpy, torch, DLPack objects, zetile.Tensor. A view whose strides the launch
passes as integer arguments is taken as Triton takes it (docs/RELIABILITY.md)."""
import numpy as np
import pytest

import zetile
import zetile.language as tl

torch = pytest.importorskip("torch")


@zetile.jit
def double(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    m = o < n
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=m) * 2, mask=m)


@zetile.jit
def double_annotated(x_ptr: "*fp32", y_ptr: tl.pointer_type(tl.float32), n, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    m = o < n
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=m) * 2, mask=m)


def run(x, y, n=4, kernel=double):
    kernel[(1,)](x, y, n, BLOCK=16)
    return y


def refused(x, match, y=None, kernel=double):
    y = np.zeros(4, np.float32) if y is None else y
    with pytest.raises(zetile.KernelArgumentError, match=match) as ei:
        run(x, y, kernel=kernel)
    return str(ei.value)


# ------------------------------------------------------------------ torch
def test_torch_strided_view_refused():
    # The probe: read as [0, 1, 2, 3] (data pointer only) before.
    msg = refused(torch.arange(8.)[::2], r"argument 'x_ptr' is not contiguous")
    assert "double" in msg and "strides (2,)" in msg and "contiguous()" in msg


def test_torch_contiguous_copy_of_the_view_is_right():
    y = torch.zeros(4)
    run(torch.arange(8.)[::2].contiguous(), y)
    assert y.tolist() == [0, 4, 8, 12]


def test_torch_offset_slice_is_contiguous_and_right():
    # A contiguous slice with a storage offset: data_ptr() includes it.
    y = torch.zeros(4)
    run(torch.arange(8.)[2:6], y)
    assert y.tolist() == [4, 6, 8, 10]


def test_torch_transposed_and_expanded_refused():
    refused(torch.arange(4.).reshape(2, 2).t(), "argument 'x_ptr' is not contiguous")
    refused(torch.ones(1).expand(4), "argument 'x_ptr' is not contiguous")
    # The output argument is checked too.
    out = torch.zeros(8)[::2]
    with pytest.raises(zetile.KernelArgumentError, match="argument 'y_ptr' is not contiguous"):
        run(torch.arange(4.), out)
    assert out.tolist() == [0, 0, 0, 0]


def test_torch_other_devices_and_layouts_refused():
    refused(torch.empty(4, device="meta"), r"argument 'x_ptr' is a torch tensor on meta")
    refused(torch.eye(4).to_sparse(), r"argument 'x_ptr' is a torch.sparse_coo torch tensor")


def test_torch_lazy_negation_refused():
    # A neg view shares memory with its base and negates lazily.
    x = torch.arange(4.)
    neg = torch._neg_view(x)
    assert neg.is_neg() and neg.data_ptr() == x.data_ptr()
    refused(neg, "argument 'x_ptr' has a pending negation")


def test_torch_unsupported_dtype_names_the_argument():
    refused(torch.zeros(4, dtype=torch.complex64), r"argument 'x_ptr': no zetile dtype")


def test_torch_size_one_view_is_fine():
    y = torch.zeros(4)
    run(torch.arange(8.)[3:4], y, n=1)
    assert y.tolist() == [6, 0, 0, 0]


# ------------------------------------------------------------------ numpy
def test_numpy_views_refused():
    a = np.arange(8, dtype=np.float32)
    refused(a[::2], r"argument 'x_ptr' is not contiguous \(strides \(8,\)")
    refused(a[::-1][:4], "argument 'x_ptr' is not contiguous")
    refused(a.reshape(4, 2).T, "argument 'x_ptr' is not contiguous")


@zetile.jit
def copy2d(x_ptr, y_ptr, M, N, sxm, sxn, BM: tl.constexpr, BN: tl.constexpr):
    # Triton's way with strided operands: the kernel takes the strides.
    m = tl.arange(0, BM)[:, None]
    n = tl.arange(0, BN)[None, :]
    ok = (m < M) & (n < N)
    tl.store(y_ptr + m * N + n, tl.load(x_ptr + m * sxm + n * sxn, mask=ok), mask=ok)


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_views_whose_strides_the_launch_passes_are_taken(kind):
    # As in Triton: a transposed or sliced operand is passed by its first
    # element's address when every non-unit stride of it is an integer
    # argument of the launch (the kernel indexes it through them).
    base = np.arange(35, dtype=np.float32).reshape(5, 7)
    for view in (base.T, base[1:4, ::2], base[:, 2:5]):
        x = view if kind == "numpy" else torch.from_numpy(base)[...].as_strided(
            view.shape, tuple(s // 4 for s in view.strides),
            (view.__array_interface__["data"][0] - base.__array_interface__["data"][0]) // 4)
        st = view.strides[0] // 4, view.strides[1] // 4
        y = np.zeros(view.shape, np.float32)
        copy2d[(1,)](x, y, view.shape[0], view.shape[1], st[0], st[1], BM=8, BN=8)
        np.testing.assert_array_equal(y, view)


def test_numpy_byte_order_refused():
    # Big-endian floats were read as native ones (9.2e-41 instead of 2).
    refused(np.arange(4, dtype=">f4"), "argument 'x_ptr' has non-native byte order")
    y = np.zeros(4, np.float32)
    run(np.arange(4, dtype=">f4").astype("=f4"), y)
    assert y.tolist() == [0, 2, 4, 6]


def test_numpy_misaligned_refused():
    raw = np.zeros(4 * 4 + 1, np.uint8)
    a = raw[1:].view(np.float32)
    assert not a.flags.aligned
    refused(a, "argument 'x_ptr' is not aligned to its element size")


def test_numpy_unsupported_dtype_names_the_argument():
    refused(np.zeros(4, np.complex64), "argument 'x_ptr': no zetile dtype")


# ------------------------------------------------------------------ DLPack
class OnlyDLPack:
    """An array known to zetile only through the DLPack protocol."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_dlpack_view_refused_and_contiguous_right():
    refused(OnlyDLPack(torch.arange(8.)[::2]), "argument 'x_ptr' is not contiguous")
    y = np.zeros(4, np.float32)
    run(OnlyDLPack(torch.arange(4.)), y)
    assert y.tolist() == [0, 2, 4, 6]


def test_dlpack_non_host_refused():
    class Elsewhere(OnlyDLPack):
        def __dlpack_device__(self):
            return (2, 0)  # kDLCUDA

        def __dlpack__(self, **kw):
            raise BufferError("the data is on a CUDA device")

    refused(Elsewhere(np.zeros(4, np.float32)), "argument 'x_ptr' cannot be read through DLPack")


# ------------------------------------------------------------------ zetile
def test_zetile_tensor_and_annotations():
    x = zetile.from_numpy(np.arange(4, dtype=np.float32))
    y = zetile.zeros(4)
    run(x, y, kernel=double_annotated)
    assert y.numpy().tolist() == [0, 2, 4, 6]
    # An annotated pointer type is checked against the array's dtype.
    refused(np.arange(4, dtype=np.float64), r"argument 'x_ptr' holds fp64 but its annotation says "
            r"pointer to fp32", kernel=double_annotated)
    refused(np.arange(4, dtype=np.float32), r"argument 'y_ptr' holds int32",
            y=np.zeros(4, np.int32), kernel=double_annotated)


def test_argument_error_is_still_a_value_error():
    # Callers that caught the ValueError these checks raised before still do.
    with pytest.raises(ValueError):
        run(np.arange(8, dtype=np.float32)[::2], np.zeros(4, np.float32))


# ------------------------------------------------------------ constexprs
@zetile.jit
def fill(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


@zetile.jit
def fill_float_range(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, 16.0), 1.0)


def test_float_sizes_are_refused_not_truncated():
    # Both ran as 16 before (int() truncated them).
    with pytest.raises(zetile.CompilationError, match="arange's end must be an integer, got 16.5"):
        fill[(1,)](np.zeros(32, np.float32), BLOCK=16.5)
    with pytest.raises(zetile.CompilationError, match="arange's end must be an integer, got 16.0"):
        fill_float_range[(1,)](np.zeros(32, np.float32), BLOCK=4)
    x = np.zeros(32, np.float32)
    fill[(1,)](x, BLOCK=np.int64(16))  # numpy integers are integers
    assert x.sum() == 16
