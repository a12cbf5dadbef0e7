"""torch custom ops over the templates: torch.ops.zetile.gemm, .sdpa and
.flex_attention, each with a fake (meta) implementation, so torch users,
torch.compile graphs and zetile's Inductor plugin share one entry point.

    torch.ops.zetile.gemm(a, b, bias=None, activation=None, residual=None,
                          alpha=1.0, beta=0.0, c=None, out_dtype=None) -> out
    torch.ops.zetile.sdpa(q, k, v, attn_mask=None, is_causal=False, scale=None,
                          enable_gqa=False) -> (out, lse)     # lse: natural log, fp32
    torch.ops.zetile.flex_attention(q, k, v, kv_num_blocks, kv_indices,
                          full_kv_num_blocks, full_kv_indices, score_bufs, mask_bufs,
                          scale, q_block, kv_block, mods, enable_gqa=False)
                          -> (out, lse, max_scores)           # log2 units, as torch's HOP

`mods` is fx_to_tile.mods_string(...) of the translated score/mask mods: a
content-derived string, so generated code that bakes it in stays valid in
any process. register() runs when zetile.ops is imported with torch
importable; it is idempotent.
"""
import threading

_lock = threading.Lock()
_registered = False


def register():
    """Defines the zetile:: ops in torch (once per process)."""
    global _registered
    if _registered:
        return
    with _lock:
        if _registered:
            return
        _define()
        _registered = True


def _define():
    import torch

    from . import attention as _attn
    from . import fx_to_tile
    from .gemm import gemm as _gemm

    lib = "zetile::"

    @torch.library.custom_op(lib + "gemm", mutates_args=())
    def gemm(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor | None = None,
             activation: str | None = None, residual: torch.Tensor | None = None,
             alpha: float = 1.0, beta: float = 0.0, c: torch.Tensor | None = None,
             out_dtype: torch.dtype | None = None) -> torch.Tensor:
        return _gemm(a, b, bias=bias, activation=activation, residual=residual, alpha=alpha,
                     beta=beta, c=c, out_dtype=out_dtype)

    @gemm.register_fake
    def _(a, b, bias=None, activation=None, residual=None, alpha=1.0, beta=0.0, c=None,
          out_dtype=None):
        dt = out_dtype or (torch.int32 if a.dtype == torch.int8 else a.dtype)
        if a.dim() == 2 and b.dim() == 2:
            return a.new_empty((a.shape[0], b.shape[1]), dtype=dt)
        nb = max(a.shape[0] if a.dim() == 3 else 1, b.shape[0] if b.dim() == 3 else 1)
        return a.new_empty((nb, a.shape[-2], b.shape[-1]), dtype=dt)

    @torch.library.custom_op(lib + "sdpa", mutates_args=())
    def sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
             attn_mask: torch.Tensor | None = None, is_causal: bool = False,
             scale: float | None = None, enable_gqa: bool = False
             ) -> tuple[torch.Tensor, torch.Tensor]:
        return _attn.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal,
                                                  scale=scale, enable_gqa=enable_gqa,
                                                  return_lse=True)

    @sdpa.register_fake
    def _(q, k, v, attn_mask=None, is_causal=False, scale=None, enable_gqa=False):
        # Contiguous like the real output (empty_like would copy a strided q's layout).
        return q.new_empty(q.shape), q.new_empty(q.shape[:-1], dtype=torch.float32)

    @torch.library.custom_op(lib + "flex_attention", mutates_args=())
    def flex_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                       kv_num_blocks: torch.Tensor, kv_indices: torch.Tensor,
                       full_kv_num_blocks: torch.Tensor | None,
                       full_kv_indices: torch.Tensor | None,
                       score_bufs: list[torch.Tensor], mask_bufs: list[torch.Tensor],
                       scale: float, q_block: int, kv_block: int, mods: str,
                       enable_gqa: bool = False
                       ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        smod, mmod = fx_to_tile.mods_from_string(mods, len(score_bufs), len(mask_bufs))
        bm = _Tables(kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices,
                     (q_block, kv_block), mmod)
        out, lse, mx = _attn.flex_attention_fwd(q, k, v, smod, bm, scale, enable_gqa,
                                                score_buffers=score_bufs, mask_buffers=mask_bufs,
                                                write_max=True)
        return out, lse, mx

    @flex_attention.register_fake
    def _(q, k, v, kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices, score_bufs,
          mask_bufs, scale, q_block, kv_block, mods, enable_gqa=False):
        stats = q.new_empty(q.shape[:-1], dtype=torch.float32)
        return q.new_empty(q.shape), stats, torch.empty_like(stats)   # contiguous, as the real one


class _Tables:
    """A BlockMask's KV tables and mask mod, as the op receives them."""

    def __init__(self, kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices, block_size,
                 mask_mod):
        self.kv_num_blocks, self.kv_indices = kv_num_blocks, kv_indices
        self.full_kv_num_blocks, self.full_kv_indices = full_kv_num_blocks, full_kv_indices
        self.BLOCK_SIZE, self.mask_mod = tuple(block_size), mask_mod
