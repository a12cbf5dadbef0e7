"""torch custom ops over the templates: torch.ops.zetile.gemm, .sdpa and
.flex_attention, each with a fake (meta) implementation, so torch users,
torch.compile graphs and zetile's Inductor plugin share one entry point.

    torch.ops.zetile.gemm(a, b, bias=None, activation=None, residual=None,
                          alpha=1.0, beta=0.0, c=None, out_dtype=None) -> out
    torch.ops.zetile.sdpa(q, k, v, attn_mask=None, is_causal=False, scale=None,
                          enable_gqa=False, dropout_p=0.0, dropout_seed=None)
                          -> (out, lse)     # lse: natural log, fp32 (undropped)
    torch.ops.zetile.flex_attention(q, k, v, kv_num_blocks, kv_indices,
                          full_kv_num_blocks, full_kv_indices, score_bufs, mask_bufs,
                          scale, q_block, kv_block, mods, enable_gqa=False)
                          -> (out, lse, max_scores)           # log2 units, as torch's HOP
    torch.ops.zetile.sdpa_backward(grad_out, q, k, v, out, lse, grad_lse, attn_mask,
                          is_causal, scale, enable_gqa, dropout_p=0.0,
                          dropout_seed=None) -> (dq, dk, dv)
    torch.ops.zetile.flex_attention_backward(grad_out, q, k, v, out, lse, grad_lse,
                          <the forward's tables, buffers, scale, blocks, mods, enable_gqa>)
                          -> (dq, dk, dv)                     # lse in log2 units
    torch.ops.zetile.sdpa_dropout(q, k, v, attn_mask, is_causal, scale, enable_gqa,
                          dropout_p, seed) -> (out, lse)
    torch.ops.zetile.sdpa_dropout_backward(grad_out, q, k, v, out, lse, grad_lse,
                          attn_mask, is_causal, scale, enable_gqa, dropout_p, seed)
                          -> (dq, dk, dv)
        sdpa / sdpa_backward with the philox seed as a tensor (any integer
        dtype, one element, read on the host) instead of an int: what the
        Inductor plugin puts in a graph (zetile.inductor.sdpa_dropout), where
        the seed is drawn at run time by a random op of the graph, so every
        step gets its own mask and the backward graph gets the forward's seed.

sdpa and flex_attention carry autograd formulas (torch.library.register_autograd)
calling the two backward ops, so loss.backward() works through them, and
torch.compile puts the backward op in the backward graph. Gradients of an
attention mask or of a flex mod's captured tensors are refused (not built);
flex needs the score_mod's derivative in `mods` (attention_bwd.mods_with_grad:
zetile.ops.flex_attention adds it), else its backward says so.

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
             scale: float | None = None, enable_gqa: bool = False, dropout_p: float = 0.0,
             dropout_seed: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        _need_seed("sdpa", dropout_p, dropout_seed)
        return _attn._sdpa(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, True,
                           None, False, dropout_seed)

    @sdpa.register_fake
    def _(q, k, v, attn_mask=None, is_causal=False, scale=None, enable_gqa=False, dropout_p=0.0,
          dropout_seed=None):
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

    _define_epilogue(torch)
    _define_backward(torch, sdpa, flex_attention)

    @flex_attention.register_fake
    def _(q, k, v, kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices, score_bufs,
          mask_bufs, scale, q_block, kv_block, mods, enable_gqa=False):
        stats = q.new_empty(q.shape[:-1], dtype=torch.float32)
        return q.new_empty(q.shape), stats, torch.empty_like(stats)   # contiguous, as the real one


def _epilogue_roles(roles, x, y):
    """(bias, residual) of gemm_epilogue's optional tensors named by roles."""
    names = [r for r in roles.split(",") if r]
    got = dict(zip(names, [t for t in (x, y) if t is not None]))
    if set(names) - {"bias", "residual"} or len(got) != len(names):
        raise ValueError(f"zetile gemm_epilogue: roles {roles!r} do not name the tensors given")
    return got.get("bias"), got.get("residual")


def _define_epilogue(torch):
    """Two ops of one signature for a GEMM with its epilogue as Inductor races
    it (zetile.inductor.epilogue): the tensors first and only those present
    (an autotuning choice passes its inputs positionally, so a missing bias
    cannot sit between a and the residual), `roles` naming them.

        gemm_epilogue      zetile's GEMM, epilogue fused
        gemm_epilogue_aten the same in torch's eager ops (matmul, then the
                           epilogue): the stock side of the race
    """
    from .gemm import gemm as _gemm
    import torch.nn.functional as F

    lib = "zetile::"

    @torch.library.custom_op(lib + "gemm_epilogue", mutates_args=())
    def gemm_epilogue(a: torch.Tensor, b: torch.Tensor, x: torch.Tensor | None = None,
                      y: torch.Tensor | None = None, roles: str = "",
                      activation: str = "") -> torch.Tensor:
        bias, residual = _epilogue_roles(roles, x, y)
        return _gemm(a, b, bias=bias, activation=activation or None, residual=residual)

    @torch.library.custom_op(lib + "gemm_epilogue_aten", mutates_args=())
    def gemm_epilogue_aten(a: torch.Tensor, b: torch.Tensor, x: torch.Tensor | None = None,
                           y: torch.Tensor | None = None, roles: str = "",
                           activation: str = "") -> torch.Tensor:
        bias, residual = _epilogue_roles(roles, x, y)
        out = torch.matmul(a, b)
        if bias is not None:
            out = out + bias
        if activation == "relu":
            out = torch.relu(out)
        elif activation in ("gelu", "gelu_tanh"):
            out = F.gelu(out, approximate="tanh" if activation == "gelu_tanh" else "none")
        elif activation == "silu":
            out = F.silu(out)
        elif activation:
            raise ValueError(f"zetile gemm_epilogue_aten: activation {activation!r}")
        if residual is not None:
            out = out + residual
        return out.contiguous()

    def fake(a, b, x=None, y=None, roles="", activation=""):
        if a.dim() == 2 and b.dim() == 2:
            return a.new_empty((a.shape[0], b.shape[1]))
        nb = max(a.shape[0] if a.dim() == 3 else 1, b.shape[0] if b.dim() == 3 else 1)
        return a.new_empty((nb, a.shape[-2], b.shape[-1]))

    gemm_epilogue.register_fake(fake)
    gemm_epilogue_aten.register_fake(fake)


def _define_backward(torch, sdpa, flex_attention):
    from . import attention_bwd as _bwd
    from . import fx_to_tile

    lib = "zetile::"

    @torch.library.custom_op(lib + "sdpa_backward", mutates_args=())
    def sdpa_backward(grad_out: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                      out: torch.Tensor, lse: torch.Tensor, grad_lse: torch.Tensor | None = None,
                      attn_mask: torch.Tensor | None = None, is_causal: bool = False,
                      scale: float | None = None, enable_gqa: bool = False,
                      dropout_p: float = 0.0, dropout_seed: int | None = None
                      ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        _need_seed("sdpa_backward", dropout_p, dropout_seed)
        return _bwd.scaled_dot_product_attention_backward(
            grad_out, q, k, v, out, lse, attn_mask=attn_mask, is_causal=is_causal, scale=scale,
            enable_gqa=enable_gqa, grad_lse=grad_lse, dropout_p=dropout_p,
            dropout_seed=dropout_seed)

    @sdpa_backward.register_fake
    def _(grad_out, q, k, v, out, lse, grad_lse=None, attn_mask=None, is_causal=False, scale=None,
          enable_gqa=False, dropout_p=0.0, dropout_seed=None):
        return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)

    def sdpa_setup(ctx, inputs, output):
        q, k, v, attn_mask, is_causal, scale, enable_gqa, dropout_p, seed = _padded(inputs, 9)
        ctx.mask_grad = attn_mask is not None and attn_mask.requires_grad
        ctx.flags = (bool(is_causal), scale, bool(enable_gqa), float(dropout_p), seed)
        ctx.save_for_backward(q, k, v, attn_mask, output[0], output[1])

    def sdpa_bwd(ctx, grad_out, grad_lse):
        if ctx.mask_grad:
            raise NotImplementedError("zetile.ops.scaled_dot_product_attention: the gradient of "
                                      "attn_mask is not built (pass a mask without requires_grad)")
        q, k, v, attn_mask, out, lse = ctx.saved_tensors
        if grad_out is None:
            grad_out = torch.zeros_like(out)
        causal, scale, gqa, dropout_p, seed = ctx.flags
        dq, dk, dv = torch.ops.zetile.sdpa_backward(grad_out, q, k, v, out, lse, grad_lse,
                                                   attn_mask, causal, scale, gqa, dropout_p, seed)
        grads = (dq, dk, dv, None, None, None, None, None, None)
        return grads[:len(ctx.needs_input_grad)]

    sdpa.register_autograd(sdpa_bwd, setup_context=sdpa_setup)

    @torch.library.custom_op(lib + "flex_attention_backward", mutates_args=())
    def flex_attention_backward(grad_out: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                                v: torch.Tensor, out: torch.Tensor, lse: torch.Tensor,
                                grad_lse: torch.Tensor | None,
                                kv_num_blocks: torch.Tensor, kv_indices: torch.Tensor,
                                full_kv_num_blocks: torch.Tensor | None,
                                full_kv_indices: torch.Tensor | None,
                                score_bufs: list[torch.Tensor], mask_bufs: list[torch.Tensor],
                                scale: float, q_block: int, kv_block: int, mods: str,
                                enable_gqa: bool = False
                                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        smod, mmod = fx_to_tile.mods_from_string(mods, len(score_bufs), len(mask_bufs))
        sgrad = _bwd.grad_from_string(mods, len(score_bufs))
        if sgrad is False:
            raise NotImplementedError(
                "zetile flex_attention backward: this score_mod reached zetile without its "
                "derivative (a mod translated from a torch.compile graph); call "
                "zetile.ops.flex_attention with the Python score_mod to differentiate it")
        bm = _Tables(kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices,
                     (q_block, kv_block), mmod)
        return _bwd.flex_attention_backward(
            grad_out, q, k, v, out, lse, smod, bm, scale, enable_gqa, lse_log2=True,
            grad_lse=grad_lse, score_grad=sgrad or None, score_buffers=score_bufs,
            mask_buffers=mask_bufs)

    @flex_attention_backward.register_fake
    def _(grad_out, q, k, v, out, lse, grad_lse, kv_num_blocks, kv_indices, full_kv_num_blocks,
          full_kv_indices, score_bufs, mask_bufs, scale, q_block, kv_block, mods, enable_gqa=False):
        return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)

    def flex_setup(ctx, inputs, output):
        (q, k, v, kvn, kvi, fkvn, fkvi, sbufs, mbufs, scale, q_block, kv_block, mods,
         enable_gqa) = _padded(inputs, 14)
        ctx.buf_grad = any(b.requires_grad for b in list(sbufs) + list(mbufs))
        ctx.args = (len(sbufs), scale, q_block, kv_block, mods, bool(enable_gqa))
        ctx.save_for_backward(q, k, v, output[0], output[1], kvn, kvi, fkvn, fkvi, *sbufs, *mbufs)

    def flex_bwd(ctx, grad_out, grad_lse, grad_max):
        # max_scores is not differentiable (as torch's flex HOP).
        if ctx.buf_grad:
            raise NotImplementedError("zetile.ops.flex_attention: gradients of tensors a mod "
                                      "captures are not built (pass them without requires_grad)")
        n_s, scale, q_block, kv_block, mods, gqa = ctx.args
        q, k, v, out, lse, kvn, kvi, fkvn, fkvi, *bufs = ctx.saved_tensors
        if grad_out is None:
            grad_out = torch.zeros_like(out)
        dq, dk, dv = torch.ops.zetile.flex_attention_backward(
            grad_out, q, k, v, out, lse, grad_lse, kvn, kvi, fkvn, fkvi, bufs[:n_s], bufs[n_s:],
            scale, q_block, kv_block, mods, gqa)
        n_m = len(bufs) - n_s
        grads = (dq, dk, dv, None, None, None, None, [None] * n_s, [None] * n_m, None, None, None,
                 None, None)
        # The dispatcher drops trailing arguments left at their defaults, and
        # torch checks the gradients against the arguments passed.
        return grads[:len(ctx.needs_input_grad)]

    flex_attention.register_autograd(flex_bwd, setup_context=flex_setup)
    _define_dropout(torch)


def _seed_int(op, seed):
    if seed.numel() != 1 or seed.dtype.is_floating_point or seed.dtype.is_complex:
        raise ValueError(f"torch.ops.zetile.{op}: seed must be a one-element integer tensor, "
                         f"got {seed.dtype} of shape {tuple(seed.shape)}")
    return int(seed.reshape(()).item()) & 0x7FFFFFFF


def _define_dropout(torch):
    """sdpa_dropout / sdpa_dropout_backward: the seed as a tensor (above)."""
    from . import attention as _attn
    from . import attention_bwd as _bwd

    lib = "zetile::"

    @torch.library.custom_op(lib + "sdpa_dropout", mutates_args=())
    def sdpa_dropout(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                     attn_mask: torch.Tensor | None, is_causal: bool, scale: float | None,
                     enable_gqa: bool, dropout_p: float, seed: torch.Tensor
                     ) -> tuple[torch.Tensor, torch.Tensor]:
        return _attn._sdpa(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa, True,
                           None, False, _seed_int("sdpa_dropout", seed))

    @sdpa_dropout.register_fake
    def _(q, k, v, attn_mask, is_causal, scale, enable_gqa, dropout_p, seed):
        return q.new_empty(q.shape), q.new_empty(q.shape[:-1], dtype=torch.float32)

    @torch.library.custom_op(lib + "sdpa_dropout_backward", mutates_args=())
    def sdpa_dropout_backward(grad_out: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                              v: torch.Tensor, out: torch.Tensor, lse: torch.Tensor,
                              grad_lse: torch.Tensor | None, attn_mask: torch.Tensor | None,
                              is_causal: bool, scale: float | None, enable_gqa: bool,
                              dropout_p: float, seed: torch.Tensor
                              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return _bwd.scaled_dot_product_attention_backward(
            grad_out, q, k, v, out, lse, attn_mask=attn_mask, is_causal=is_causal, scale=scale,
            enable_gqa=enable_gqa, grad_lse=grad_lse, dropout_p=dropout_p,
            dropout_seed=_seed_int("sdpa_dropout_backward", seed))

    @sdpa_dropout_backward.register_fake
    def _(grad_out, q, k, v, out, lse, grad_lse, attn_mask, is_causal, scale, enable_gqa,
          dropout_p, seed):
        return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)

    def setup(ctx, inputs, output):
        q, k, v, attn_mask, is_causal, scale, enable_gqa, dropout_p, seed = inputs
        ctx.mask_grad = attn_mask is not None and attn_mask.requires_grad
        ctx.flags = (bool(is_causal), scale, bool(enable_gqa), float(dropout_p))
        ctx.save_for_backward(q, k, v, attn_mask, output[0], output[1], seed)

    def bwd(ctx, grad_out, grad_lse):
        if ctx.mask_grad:
            raise NotImplementedError("torch.ops.zetile.sdpa_dropout: the gradient of attn_mask "
                                      "is not built (pass a mask without requires_grad)")
        q, k, v, attn_mask, out, lse, seed = ctx.saved_tensors
        if grad_out is None:
            grad_out = torch.zeros_like(out)
        causal, scale, gqa, dropout_p = ctx.flags
        dq, dk, dv = torch.ops.zetile.sdpa_dropout_backward(
            grad_out, q, k, v, out, lse, grad_lse, attn_mask, causal, scale, gqa, dropout_p, seed)
        return dq, dk, dv, None, None, None, None, None, None

    sdpa_dropout.register_autograd(bwd, setup_context=setup)


def _padded(inputs, n):
    """A custom op's inputs with its trailing defaults filled in."""
    inputs = tuple(inputs)
    defaults = {9: (None, False, None, False, 0.0, None), 14: (False,)}[n]
    missing = n - len(inputs)
    return inputs + defaults[len(defaults) - missing:] if missing > 0 else inputs


def _need_seed(op, dropout_p, seed):
    """The ops are functions of their arguments: dropout needs its seed given
    (the backward regenerates the forward's keep flags from it)."""
    if 0.0 < float(dropout_p) < 1.0 and seed is None:
        raise ValueError(f"torch.ops.zetile.{op}: dropout_p={dropout_p} needs dropout_seed "
                         "(zetile.ops.scaled_dot_product_attention draws one)")


class _Tables:
    """A BlockMask's KV tables and mask mod, as the op receives them."""

    def __init__(self, kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices, block_size,
                 mask_mod):
        self.kv_num_blocks, self.kv_indices = kv_num_blocks, kv_indices
        self.full_kv_num_blocks, self.full_kv_indices = full_kv_num_blocks, full_kv_indices
        self.BLOCK_SIZE, self.mask_mod = tuple(block_size), mask_mod
