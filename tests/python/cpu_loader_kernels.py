"""Kernels for test_cpu_loader.py, in a file of their own: a fresh interpreter
imports them (a kernel's source file is part of its cache key, so the child
processes of the test share cache entries). Between them their objects
import libmvec (tl.log, tl.sin vectorized), libm (float %: fmodf), libc
(memset for the dot's accumulator, on some hosts), the runtime's bf16
conversion (__truncsfbf2 on hosts without AVX512-BF16) and its print
helper (zt_cpu_print)."""
import sys

import numpy as np

import zetile
import zetile.language as tl


@zetile.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)


@zetile.jit
def softmax_log_sin(x, out, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    row = tl.program_id(0) * n
    m = offs < n
    v = tl.load(x + row + offs, mask=m, other=-float("inf"))
    e = tl.exp(v - tl.max(v, axis=0))
    s = e / tl.sum(e, axis=0)
    tl.store(out + row + offs, tl.log(s + 1.0) + tl.sin(v), mask=m)


@zetile.jit
def to_bf16_fmod(x, out_bf16, out_mod, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m)
    tl.store(out_bf16 + offs, (v * 3.0).to(tl.bfloat16), mask=m)
    tl.store(out_mod + offs, v % 0.7, mask=m)


@zetile.jit
def matmul(a, b, c, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    x = tl.load(a + rm[:, None] * K + rk[None, :])
    y = tl.load(b + rk[:, None] * N + rn[None, :])
    tl.store(c + rm[:, None] * N + rn[None, :], tl.dot(x, y))


@zetile.jit
def show(x, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.device_print("v=", tl.load(x + offs, mask=offs < n, other=0.0))


def run_all():
    """Runs every kernel on fixed inputs; returns {name: sha256 of the
    outputs' bytes} and {name: the kernel's object file}."""
    import hashlib  # here: test_cpu_loader checks that a launch does not import it
    import ml_dtypes
    rng = np.random.default_rng(16)
    digests, objs = {}, {}

    def keep(name, kernel, args, grid, outs, **kw):
        kernel[grid](*args, **kw)
        digests[name] = hashlib.sha256(b"".join(o.tobytes() for o in outs)).hexdigest()
        objs[name] = kernel.warmup(*args, grid=grid, **kw).asm["obj"]

    x = rng.standard_normal(1000).astype(np.float32)
    y = rng.standard_normal(1000).astype(np.float32)
    out = np.zeros_like(x)
    keep("add", add, (x, y, out, 1000), (8,), [out], BLOCK=128)
    rows = rng.standard_normal((6, 100)).astype(np.float32)
    sm = np.zeros_like(rows)
    keep("softmax_log_sin", softmax_log_sin, (rows, sm, 100), (6,), [sm], BLOCK=128)
    ob = np.zeros(1000, dtype=ml_dtypes.bfloat16)
    om = np.zeros_like(x)
    keep("to_bf16_fmod", to_bf16_fmod, (x, ob, om, 1000), (4,), [ob, om], BLOCK=256)
    a = rng.standard_normal((32, 16)).astype(np.float32)
    b = rng.standard_normal((16, 32)).astype(np.float32)
    c = np.zeros((32, 32), dtype=np.float32)
    keep("matmul", matmul, (a, b, c), (1,), [c], M=32, N=32, K=16)
    sys.stdout.flush()
    keep("show", show, (x, 3), (1,), [], BLOCK=4)
    return digests, objs
