"""Kernels for tests/python/test_tune_cli.py (`zetile tune FILE.py:KERNEL`)."""
import zetile
import zetile.language as tl


@zetile.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * factor, mask=m)


@zetile.autotune(configs=[zetile.Config({"BLOCK": 128}, num_warps=1),
                          zetile.Config({"BLOCK": 512}, num_warps=2)], key=["n"])
@zetile.jit
def tuned_scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * factor, mask=m)
