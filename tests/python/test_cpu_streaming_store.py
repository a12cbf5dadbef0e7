"""CPU target (issue 16): a single-pass kernel's 1-D store writes the whole
64-byte lines of a large output with non-temporal vector stores
(lowering/cpu/cpu_store_nt.c), its first and last partial lines with masked
plain stores. The LLVM IR must carry `nontemporal` stores for vector add (and not
for kernels where streaming is wrong or measured slower: a kernel that loads
from the stored argument, one with atomics, one with a reduction, a store in
a loop), and every output must equal numpy's bit for bit, with the bytes
around the output untouched, at sizes above and below the run-time size
threshold, at every misalignment of the output, on one and two threads, and
when the output is an input too (then the loads are read into buffers first
and nothing streams)."""
import re

import numpy as np
import pytest

import zetile
import zetile.language as tl


pytestmark = pytest.mark.usefixtures("cpu_device")  # conftest.py

BIG = 1_100_003  # f32: 4.4 MB, above the 4 MiB threshold
SMALL = 100_003


@zetile.jit
def _axpy(x_ptr, y_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(o_ptr + offs, x * 1.5 + y, mask=mask)


@zetile.jit
def _inplace(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


@zetile.jit
def _with_atomic(x_ptr, o_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)
    tl.atomic_add(c_ptr, 1)


@zetile.jit
def _with_sum(x_ptr, o_ptr, s_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(s_ptr + tl.program_id(0), tl.sum(x, axis=0))
    tl.store(o_ptr + offs, x * 2.0, mask=mask)


@zetile.jit
def _in_loop(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    for k in range(0, 2):
        offs = (tl.program_id(0) * 2 + k) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(o_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0, mask=mask)


def _llvm(kernel, *args, grid, **meta):
    return kernel.warmup(*args, grid=grid, **meta).asm["llvm"]


def _streams(ir):  # a 16-lane vector store marked nontemporal, aligned to a line
    return re.search(r"llvm\.store [^\n]*alignment = 64[^\n]*nontemporal[^\n]*vector<16x", ir)


def test_vector_kernel_streams_its_store():
    x = np.ones(BIG, np.float32)
    ir = _llvm(_axpy, x, x, np.empty_like(x), BIG, BLOCK=1024, grid=(zetile.cdiv(BIG, 1024),))
    assert _streams(ir)
    # f64 too (16 lanes: two lines per vector store)
    d = np.ones(BIG // 2, np.float64)
    ir = _llvm(_axpy, d, d, np.empty_like(d), d.size, BLOCK=512, grid=(zetile.cdiv(d.size, 512),))
    assert _streams(ir)


@pytest.mark.parametrize("case", ["inplace", "atomic", "sum", "loop", "f16"])
def test_no_streaming_where_it_does_not_belong(case):
    x = np.ones(BIG, np.float32)
    o = np.empty_like(x)
    g = (zetile.cdiv(BIG, 1024),)
    if case == "inplace":  # the kernel reads the stored argument
        ir = _llvm(_inplace, x, x, BIG, BLOCK=1024, grid=g)
    elif case == "atomic":
        ir = _llvm(_with_atomic, x, o, np.zeros(1, np.int32), BIG, BLOCK=1024, grid=g)
    elif case == "sum":  # a multi-pass kernel (measured slower streamed)
        ir = _llvm(_with_sum, x, o, np.empty(g[0], np.float32), BIG, BLOCK=1024, grid=g)
    elif case == "loop":
        ir = _llvm(_in_loop, x, o, BIG, BLOCK=1024, grid=(zetile.cdiv(BIG, 2048),))
    else:  # 2-byte elements: not streamed
        h = np.ones(BIG, np.float16)
        ir = _llvm(_axpy, h, h, np.empty_like(h), BIG, BLOCK=1024, grid=g)
    assert "nontemporal" not in ir


def _check_axpy(n, dtype, shift, block):
    rng = np.random.default_rng(n + shift)
    x = rng.standard_normal(n + 16).astype(dtype)[shift:shift + n]
    y = rng.standard_normal(n + 16).astype(dtype)[shift:shift + n]
    buf = np.full(n + 32, 7, dtype)
    o = buf[8 + shift:8 + shift + n]
    _axpy[(zetile.cdiv(n, block),)](x, y, o, n, BLOCK=block)
    want = x * dtype(1.5) + y
    assert np.array_equal(o.view(np.uint8), want.view(np.uint8))
    assert (buf[:8 + shift] == 7).all() and (buf[8 + shift + n:] == 7).all()


@pytest.mark.parametrize("n", [BIG, SMALL])
@pytest.mark.parametrize("shift", [0, 1, 5, 15])
def test_outputs_exact_at_every_alignment(n, shift):
    _check_axpy(n, np.float32, shift, 1024)


def test_f64_and_other_blocks_exact():
    for shift in (0, 3):
        _check_axpy(BIG // 2 + 5, np.float64, shift, 512)
    _check_axpy(BIG, np.float32, 2, 64)  # 64 lanes: two lines a program


def test_two_threads_exact(monkeypatch):
    monkeypatch.setenv("ZETILE_NUM_THREADS", "2")
    for shift in (0, 7):
        _check_axpy(BIG, np.float32, shift, 1024)


def test_output_that_is_an_input_exact():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(BIG).astype(np.float32)
    y = rng.standard_normal(BIG).astype(np.float32)
    want = x + y
    _inplace[(zetile.cdiv(BIG, 1024),)](x, y, BIG, BLOCK=1024)
    assert np.array_equal(x, want)
    # the same through _axpy with o = x: every element from before the store
    x = rng.standard_normal(BIG).astype(np.float32)
    want = x * np.float32(1.5) + y
    _axpy[(zetile.cdiv(BIG, 1024),)](x, y, x, BIG, BLOCK=1024)
    assert np.array_equal(x, want)


@zetile.jit
def _fill(o_ptr, v, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(o_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32) + v, mask=offs < n)


@zetile.jit
def _every_other(x_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(o_ptr + offs, x * 2.0, mask=(offs < n) & (offs % 2 == 0))


def test_splat_value_and_a_store_mask_of_its_own():
    n = BIG
    buf = np.full(n + 32, 7, np.float32)
    o = buf[9:9 + n]
    assert _streams(_llvm(_fill, o, 2.5, n, BLOCK=1024, grid=(zetile.cdiv(n, 1024),)))
    _fill[(zetile.cdiv(n, 1024),)](o, 2.5, n, BLOCK=1024)
    assert (o == 2.5).all() and (buf[:9] == 7).all() and (buf[9 + n:] == 7).all()
    # a mask the split does not make all-true: plain stores, odd elements untouched
    x = np.arange(n, dtype=np.float32)
    o = np.full(n, -1, np.float32)
    assert "nontemporal" not in _llvm(_every_other, x, o, n, BLOCK=1024,
                                      grid=(zetile.cdiv(n, 1024),))
    _every_other[(zetile.cdiv(n, 1024),)](x, o, n, BLOCK=1024)
    want = np.where(np.arange(n) % 2 == 0, x * 2, -1).astype(np.float32)
    assert np.array_equal(o, want)
