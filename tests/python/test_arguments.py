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


def test_torch_column_and_expanded_refused():
    # Gaps (a column) and overlaps (expand): not a layout a stride-less
    # kernel could mean to index raw.
    msg = refused(torch.arange(8.).reshape(4, 2)[:, 1], "argument 'x_ptr' is not contiguous")
    assert "dense permuted views" in msg
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
    refused(a.reshape(4, 2)[:, :1].T, "argument 'x_ptr' is not contiguous")
    refused(np.broadcast_to(a[:1], (4,)), "argument 'x_ptr' is not contiguous")


@zetile.jit
def scale_raw(x_ptr, y_ptr, BLOCK: tl.constexpr):
    # Indexes its arguments' storage, as Triton kernels given data_ptr() do.
    o = tl.arange(0, BLOCK)
    m = o < 24
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=m) * 2 + 1, mask=m)


def _dense_views(kind):
    """Non-contiguous, non-overlapping dense views of 24 floats."""
    base = np.arange(24, dtype=np.float32)
    if kind == "numpy":
        return [base.reshape(4, 6).T, base.reshape(2, 3, 4).transpose(2, 0, 1),
                base.reshape(6, 1, 4).transpose(1, 2, 0)]
    t = torch.from_numpy(base)
    return [t.reshape(4, 6).T, t.reshape(2, 3, 4).permute(2, 0, 1),
            t.reshape(6, 1, 4).permute(1, 2, 0)]


@pytest.mark.parametrize("kind", ["numpy", "torch"])
def test_dense_permuted_views_are_passed_by_storage(kind):
    # As Triton: x.T / x.permute are non-overlapping and dense, passed by
    # data_ptr(); the kernel reads and writes storage order. So an output
    # made by empty_like of the transposed input, read back through its view,
    # holds the elementwise result (Triton's test_transpose pattern), and a
    # contiguous output gets the input's storage order.
    for x in _dense_views(kind):
        xs = np.asarray(x)
        assert not xs.flags.c_contiguous
        y = np.empty_like(xs) if kind == "numpy" else torch.empty_like(x)
        # empty_like keeps the permutation (size-1 axes' strides are free)
        assert [s for s, d in zip(np.asarray(y).strides, xs.shape) if d > 1] == \
            [s for s, d in zip(xs.strides, xs.shape) if d > 1]
        scale_raw[(1,)](x, y, BLOCK=32)
        np.testing.assert_array_equal(np.asarray(y), xs * 2 + 1)
        flat = np.zeros(24, np.float32)
        scale_raw[(1,)](x, flat, BLOCK=32)
        np.testing.assert_array_equal(flat, np.arange(24, dtype=np.float32) * 2 + 1)


def test_dense_permuted_view_through_reinterpret():
    # triton.reinterpret (unsigned data in a signed torch tensor) keeps the rule.
    x = torch.arange(24, dtype=torch.int32).reshape(4, 6).T
    y = torch.zeros(24, dtype=torch.int32)
    scale_raw[(1,)](zetile.reinterpret(x, tl.uint32), zetile.reinterpret(y, tl.uint32), BLOCK=32)
    assert y.tolist() == [2 * i + 1 for i in range(24)]


class _Buf:
    def __init__(self, n):
        self.data = bytearray(n)
        self.address = 4096

    def write(self, u8):
        self.data[:len(u8)] = u8.tobytes()

    def read_into(self, u8):
        u8[:] = np.frombuffer(bytes(self.data[:len(u8)]), np.uint8)


class _StagingDevice:
    """A device without host memory (a GPU here): arrays are staged."""
    info = {"host_memory": False, "name": "staging"}

    def alloc(self, n):
        self.buf = _Buf(n)
        return self.buf


def test_dense_permuted_view_is_staged_in_storage_order():
    # No GPU here: the staging path with a stand-in device. The staged bytes
    # are the view's storage, and the copy back lands in that storage.
    from zetile import runtime
    base = np.arange(24, dtype=np.float32)
    x = base.reshape(4, 6).T
    dev = _StagingDevice()
    p = runtime.pointer_arg(x, dev, strided=True)
    np.testing.assert_array_equal(np.frombuffer(bytes(dev.buf.data), np.float32), base)
    dev.buf.data[:] = (np.arange(24, dtype=np.float32) * 10).tobytes()
    p.writeback()
    np.testing.assert_array_equal(base, np.arange(24, dtype=np.float32) * 10)
    with pytest.raises(ValueError, match="not contiguous"):  # gaps: still refused
        runtime.pointer_arg(base[::2], dev, strided=True)


@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e4m3fn", "float8_e5m2"])
def test_torch_dtypes_numpy_lacks_are_staged(dtype):
    # A bf16/fp8 torch CPU tensor given to a device without host memory: its
    # bits are staged (torch's .numpy() refuses these dtypes, which made
    # every bf16 template launch on a Level Zero device fail), the pointer
    # keeps the torch dtype, and the copy back lands in the tensor.
    from zetile import runtime
    tdt = getattr(torch, dtype)
    x = torch.linspace(-3, 3, 10).to(tdt)
    bits = x.view(torch.int16 if x.element_size() == 2 else torch.uint8).clone()
    dev = _StagingDevice()
    p = runtime.pointer_arg(x, dev)
    assert p.dtype == tl.bfloat16 if dtype == "bfloat16" else p.dtype.primitive_bitwidth == 8
    assert bytes(dev.buf.data) == bits.numpy().tobytes()
    y = torch.linspace(5, 6, 10).to(tdt)
    dev.buf.data[:] = y.view(bits.dtype).numpy().tobytes()
    p.writeback()
    assert torch.equal(x.view(bits.dtype), y.view(bits.dtype))


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
