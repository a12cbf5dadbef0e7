"""zetile.ops: the stdlib kernels (GEMM, SDPA, FlexAttention templates in
stdlib-kernels/) as functions taking torch tensors, numpy arrays, DLPack
objects and zetile.Tensor. Each call launches a @zetile.jit template
specialized for its configuration, compiled once and cached like any kernel.
When torch is importable, the same functions are also torch custom ops
(torch.ops.zetile.gemm / sdpa / flex_attention)."""
from .gemm import gemm  # noqa: F401
from ._kernels import stdlib_dir  # noqa: F401
from .attention import scaled_dot_product_attention, flex_attention, flex_attention_fwd  # noqa: F401
from .attention_bwd import scaled_dot_product_attention_backward, flex_attention_backward  # noqa: F401
from .block_mask import BlockMask, create_block_mask  # noqa: F401
from .fx_to_tile import FxTranslationError  # noqa: F401


def _register_torch_ops():
    import importlib.util
    if importlib.util.find_spec("torch") is None:
        return
    from . import torch_ops
    torch_ops.register()


_register_torch_ops()
