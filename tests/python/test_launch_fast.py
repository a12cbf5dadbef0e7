"""The C launch path (python-bindings/src/launcher.c, issue 16): a launch
whose signature was seen before runs without Python. Each test launches the
same kernel several times with values that change between launches, so a
fast path that reused a stale address, value or specialization would give a
wrong result; and the checks of the slow path must still hold after the
fast path has registered a signature (a refused array is refused on its
fourth launch as on its first)."""
import os

import numpy as np
import pytest

import zetile
import zetile.language as tl

torch = pytest.importorskip("torch")


@zetile.jit
def axpb(x_ptr, y_ptr, n, a, b, NEG: tl.constexpr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    m = o < n
    v = tl.load(x_ptr + o, mask=m) * a + b
    if NEG:
        v = -v
    tl.store(y_ptr + o, v, mask=m)


@zetile.jit
def store_int(out_ptr, v, flag):
    if flag:
        tl.store(out_ptr, v)
    else:
        tl.store(out_ptr, 7)


@zetile.jit
def with_default(x_ptr, y_ptr, n, scale=3, BLOCK: tl.constexpr = 8):
    o = tl.arange(0, BLOCK)
    m = o < n
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=m) * scale, mask=m)


def test_repeated_launches_take_new_addresses_and_values():
    rng = np.random.default_rng(0)
    for i in range(6):
        x = rng.standard_normal(16).astype(np.float32)
        y = np.zeros(16, np.float32)
        a, b = float(i) + 0.5, -float(i)
        axpb[(1,)](x, y, 13, a, b, NEG=False, BLOCK=16)
        np.testing.assert_allclose(y[:13], x[:13] * a + b, rtol=1e-6)
        assert (y[13:] == 0).all()
    # The signature was registered for the C path after its first launch.
    assert axpb._fast_entries >= 1


def test_constexpr_and_dtype_changes_pick_their_own_kernels():
    for neg in (False, True, False):
        x = np.arange(8, dtype=np.float32)
        y = np.zeros(8, np.float32)
        axpb[(1,)](x, y, 8, 2.0, 1.0, NEG=neg, BLOCK=8)
        np.testing.assert_allclose(y, -(x * 2 + 1) if neg else x * 2 + 1)
    for dt in (np.float64, np.float32, np.float64):
        x = np.arange(8, dtype=dt)
        y = np.zeros(8, dt)
        axpb[(1,)](x, y, 8, 2.0, 1.0, NEG=False, BLOCK=8)
        np.testing.assert_allclose(y, x * 2 + 1)


def test_misaligned_views_are_not_given_the_aligned_kernel():
    # The first launch registers 16-byte aligned arrays; a view one element
    # in (4-byte aligned) has another key and runs right.
    base = np.arange(40, dtype=np.float32)
    for off in (0, 1, 0, 3, 4):
        x = base[off:off + 16]
        y = np.zeros(20, np.float32)[off % 4:off % 4 + 16]
        axpb[(1,)](x, y, 16, 1.0, 0.5, NEG=False, BLOCK=16)
        np.testing.assert_allclose(y, x + 0.5)


@pytest.mark.parametrize("values", [[5, 1, 7, 16, 2**31 + 5, 2**40, -3, 1, 32]])
def test_integer_classes_and_bools(values):
    out = np.zeros(1, np.int64)
    for flag in (True, False, True):
        for v in values:
            store_int[(1,)](out, v, flag)
            assert out[0] == (v if flag else 7), (v, flag)


def test_keywords_defaults_and_grids():
    x = np.arange(8, dtype=np.float32)
    for _ in range(3):
        y = np.zeros(8, np.float32)
        with_default[(1,)](y_ptr=y, x_ptr=x, n=8)
        np.testing.assert_allclose(y, x * 3)
        y = np.zeros(8, np.float32)
        with_default[1](x, y, 8, 5)
        np.testing.assert_allclose(y, x * 5)
        y = np.zeros(8, np.float32)
        with_default[lambda meta: (1,)](x, y, 8, scale=2)
        np.testing.assert_allclose(y, x * 2)
        y = np.zeros(8, np.float32)
        assert with_default[(0,)](x, y, 8) is not None  # an empty grid runs nothing
        assert (y == 0).all()


def test_refused_arrays_stay_refused_after_registration():
    x = np.arange(32, dtype=np.float32)
    y = np.zeros(16, np.float32)
    for _ in range(3):
        axpb[(1,)](x[:16], y, 16, 1.0, 0.0, NEG=False, BLOCK=16)
    with pytest.raises(zetile.KernelArgumentError, match="argument 'x_ptr' is not contiguous"):
        axpb[(1,)](x[::2], y, 16, 1.0, 0.0, NEG=False, BLOCK=16)
    swapped = x[:16].astype(">f4")
    with pytest.raises(zetile.KernelArgumentError, match="argument 'x_ptr' has non-native"):
        axpb[(1,)](swapped, y, 16, 1.0, 0.0, NEG=False, BLOCK=16)
    with pytest.raises(zetile.KernelArgumentError, match="missing argument 'b'"):
        axpb[(1,)](x[:16], y, 16, 1.0, NEG=False, BLOCK=16)
    with pytest.raises(zetile.KernelArgumentError, match="'x_ptr' of type str"):
        axpb[(1,)]("x", y, 16, 1.0, 0.0, NEG=False, BLOCK=16)
    with pytest.raises(zetile.KernelArgumentError, match="unexpected argument 'bogus'"):
        axpb[(1,)](x[:16], y, 16, 1.0, 0.0, NEG=False, BLOCK=16, bogus=1)
    with pytest.raises(zetile.KernelArgumentError, match="grid dimensions must not be negative"):
        axpb[(-1,)](x[:16], y, 16, 1.0, 0.0, NEG=False, BLOCK=16)


def test_torch_tensors_fast_and_refused():
    for i in range(4):
        x = torch.arange(16, dtype=torch.float32) + i
        y = torch.zeros(16)
        axpb[(1,)](x, y, 16, 2.0, 0.0, NEG=False, BLOCK=16)
        assert torch.equal(y, x * 2)
    # requires_grad tensors are passed as their data, as before.
    w = torch.ones(16, requires_grad=True)
    y = torch.zeros(16)
    axpb[(1,)](w, y, 16, 2.0, 0.0, NEG=False, BLOCK=16)
    assert torch.equal(y, torch.full((16,), 2.0))
    base = torch.arange(32, dtype=torch.float32)
    with pytest.raises(zetile.KernelArgumentError, match="argument 'x_ptr' is not contiguous"):
        axpb[(1,)](base[::2], y, 16, 2.0, 0.0, NEG=False, BLOCK=16)
    neg = torch._neg_view(base[:16])
    assert neg.is_neg()
    with pytest.raises(zetile.KernelArgumentError, match="pending negation"):
        axpb[(1,)](neg, y, 16, 2.0, 0.0, NEG=False, BLOCK=16)
    # A tensor after an in-place resize has a new address: read each launch.
    t = torch.zeros(16)
    for n in (16, 4096, 16):
        t.resize_(n).fill_(1.0)
        out = torch.zeros(16)
        axpb[(1,)](t, out, 16, 3.0, 0.0, NEG=False, BLOCK=16)
        assert torch.equal(out, torch.full((16,), 3.0))


def test_unsafe_update_src_drops_fast_entries():
    @zetile.jit
    def k(x_ptr, y_ptr):
        tl.store(y_ptr, tl.load(x_ptr) + 1)
    x = np.ones(1, np.float32)
    y = np.zeros(1, np.float32)
    for _ in range(2):
        k[(1,)](x, y)
    assert y[0] == 2 and k._fast_entries == 1
    k._unsafe_update_src(k.src.replace("+ 1", "+ 5"))
    assert k._fast_entries == 0
    k[(1,)](x, y)
    assert y[0] == 6


@zetile.jit
def add_blocks(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=m) + 1, mask=m)


def test_callable_grid_sees_each_launchs_values():
    # The grid function is called with this launch's arguments every time
    # (the C path builds its meta dict too): the program count follows n.
    seen = []

    def grid(meta):
        seen.append(meta["n"])
        return (zetile.cdiv(meta["n"], meta["BLOCK"]),)
    for n in (8, 40, 3, 64, 17):
        x = np.arange(64, dtype=np.float32)
        y = np.zeros(64, np.float32)
        add_blocks[grid](x, y, n, BLOCK=8)
        np.testing.assert_allclose(y[:n], x[:n] + 1)
        assert (y[n:] == 0).all()
    assert seen[-5:] == [8, 40, 3, 64, 17]


def test_import_zetile_leaves_numpy_out():
    # numpy was ~70% of `import zetile` (issue 16); it is imported when a
    # program uses it, and launches do not need it to tell an array apart.
    # Nor torch (2 s of import), which only the torch plugin needs.
    import subprocess
    import sys
    code = ("import sys, zetile, zetile.language as tl\n"
            "assert 'numpy' not in sys.modules, 'import zetile imported numpy'\n"
            "assert 'torch' not in sys.modules, 'import zetile imported torch'\n"
            "import numpy as np\n"
            "x = np.arange(4, dtype=np.float32)\n"
            "print(zetile.runtime.pointer_arg(x, zetile.get_device('cpu')).dtype)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "fp32"


@zetile.autotune(configs=[zetile.Config({"BLOCK": 8}, num_warps=1),
                          zetile.Config({"BLOCK": 16}, num_warps=2)], key=["n"])
@zetile.jit
def tuned_add(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=m) + 2, mask=m)


def test_run_and_autotuned_launches_go_through_the_c_launcher():
    # JITFunction.run (what the autotuner calls, with num_warps=...) is the
    # kernel[grid] launch: after the first launches its signature is in C.
    for i in range(5):
        x = np.arange(40, dtype=np.float32) * (i + 1)
        y = np.zeros(40, np.float32)
        tuned_add[lambda meta: (zetile.cdiv(40, meta["BLOCK"]),)](x, y, 40)
        np.testing.assert_allclose(y, x + 2)
    assert tuned_add.fn._fast_entries >= 1
    y = np.zeros(8, np.float32)
    add_blocks.run(np.ones(8, np.float32), y, 8, grid=(1,), BLOCK=8, num_warps=4)
    add_blocks.run(np.ones(8, np.float32), y, 8, grid=(1,), BLOCK=8, num_warps=4)
    np.testing.assert_allclose(y, 2.0)


def test_threads_launching_one_kernel():
    # Launches release the GIL: threads register and look up signatures of
    # one kernel at once (three dtypes: entries are added meanwhile).
    import threading
    errors = []

    def worker(dt, seed):
        try:
            for i in range(200):
                x = np.full(16, seed + i, dtype=dt)
                y = np.zeros(16, dt)
                axpb[(1,)](x, y, 16, 1.0, 1.0, NEG=False, BLOCK=16)
                if not (y == x + 1).all():
                    errors.append((dt, i, y[:3]))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=worker, args=(dt, s))
               for s, dt in enumerate((np.float32, np.float64, np.int32, np.float32))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]


def test_kernels_made_at_run_time_are_freed():
    # kernel[grid] keeps its last launch callable, which refers back to the
    # kernel: the cycle must be collectable (KernelBase supports the GC).
    import gc
    import weakref

    def make():
        @zetile.jit
        def k(x_ptr, y_ptr):
            tl.store(y_ptr, tl.load(x_ptr) + 1)
        return k
    refs = []
    for _ in range(3):
        k = make()
        x, y = np.ones(1, np.float32), np.zeros(1, np.float32)
        for _ in range(3):
            k[(1,)](x, y)
        assert y[0] == 2 and k._fast_entries == 1
        refs.append(weakref.ref(k))
        del k
    gc.collect()
    assert all(r() is None for r in refs)


def test_zetile_tensors_fast():
    dev = zetile.get_device("cpu")
    for i in range(4):
        x = zetile.from_numpy(np.arange(16, dtype=np.float32) + i, device=dev)
        y = zetile.zeros((16,), device=dev)
        axpb[(1,)](x, y, 16, 2.0, 1.0, NEG=False, BLOCK=16)
        np.testing.assert_allclose(y.numpy(), (np.arange(16) + i) * 2 + 1)
    x.buffer.release()
    with pytest.raises(ValueError, match="released"):
        axpb[(1,)](x, y, 16, 2.0, 1.0, NEG=False, BLOCK=16)


def test_torch_views_and_refusals_after_registration():
    # Torch tensors are read through DLPack's C exchange table where torch
    # has one (dltensor_from_py_object_no_sync, no capsule): a view's address
    # includes its offset, and what the slow path refuses is refused on every
    # launch, after the signature is registered, with the slow path's message.
    y = torch.zeros(16)
    for _ in range(3):
        axpb[(1,)](torch.ones(16), y, 16, 2.0, 0.0, NEG=False, BLOCK=16)
    if (hasattr(torch.Tensor, "__dlpack_c_exchange_api__")
            and os.environ.get("ZETILE_LAUNCH_DLPACK_C") != "0"):
        from zetile import _C
        assert _C._ext._fast_torch_exchange(torch.Tensor)
    m = torch.arange(48, dtype=torch.float32).reshape(3, 16)
    for r in (1, 2, 0, 2):
        axpb[(1,)](m[r], y, 16, 2.0, 1.0, NEG=False, BLOCK=16)
        assert torch.equal(y, m[r] * 2 + 1)
        # A view at an odd element offset has another key (4-byte aligned).
        axpb[(1,)](m.view(-1)[r + 1:r + 17], y, 16, 1.0, 0.0, NEG=False, BLOCK=16)
        assert torch.equal(y, m.view(-1)[r + 1:r + 17])
    refused = {
        # (strides that are not among the launch's ints: one that is would
        # be taken as a Triton-style strided operand)
        "not contiguous": [torch.ones(16, 3)[:, 1], torch.ones(1).expand(16),
                           torch.ones(4, 5).t()[0]],
        "on meta": [torch.ones(16, device="meta")],
        "dense": [torch.ones(16).to_sparse()],
        "no zetile dtype": [torch.ones(16, dtype=torch.complex64)],
        "pending negation": [torch._neg_view(m[1])],
    }
    for msg, tensors in refused.items():
        for t in tensors:
            for _ in range(2):
                with pytest.raises(zetile.KernelArgumentError, match=msg):
                    axpb[(1,)](t, y, 16, 2.0, 0.0, NEG=False, BLOCK=16)



SAME_KERNEL = """
import zetile, zetile.language as tl


@zetile.jit
def axpy(x, y, out, n, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    m = o < n
    tl.store(out + o, 2 * tl.load(x + o, mask=m) + tl.load(y + o, mask=m), mask=m)
"""

SAME_TENSOR = """
import sys
import torch
calls = []
real = torch.Tensor.is_neg
def counted(t):
    calls.append(1)
    return real(t)
torch.Tensor.is_neg = counted  # before the launcher registers the type
sys.path.insert(0, {here!r})
import zetile
from same_tensor_kernel import axpy
zetile.set_device("cpu")
t = torch.arange(16, dtype=torch.float32)
u = torch.ones(16)
for _ in range(3):  # compiles and registers both signatures
    axpy[(1,)](t, u, u, 16, BLOCK=16)
    axpy[(1,)](t, t, t, 16, BLOCK=16)
t = torch.arange(16, dtype=torch.float32)
u = torch.ones(16)
del calls[:]
axpy[(1,)](t, u, u, 16, BLOCK=16)   # in place: out is y
distinct_then_same = len(calls)
del calls[:]
axpy[(1,)](t, t, t, 16, BLOCK=16)
print("RESULT", distinct_then_same, len(calls), u.tolist() == [1.0 + 2 * i for i in range(16)],
      t.tolist() == [3.0 * i for i in range(16)])
"""


def test_an_array_passed_twice_is_read_once(tmp_path):
    # A tensor passed as several arguments (kernels writing in place) is read
    # once a launch: each read costs torch's exchange and is_neg calls.
    from zt_testutil import run_python
    (tmp_path / "same_tensor_kernel.py").write_text(SAME_KERNEL)
    r = run_python(SAME_TENSOR.format(here=str(tmp_path)), env={"ZETILE_DEVICE": "cpu"})
    assert r.returncode == 0, r.stdout + r.stderr
    distinct, same, ok_inplace, ok_same = r.stdout.split("RESULT ")[-1].split()
    assert ok_inplace == "True" and ok_same == "True", r.stdout
    assert (distinct, same) == ("2", "1"), (distinct, same)
