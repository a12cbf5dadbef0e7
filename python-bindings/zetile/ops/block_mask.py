"""zetile.ops.create_block_mask and zetile's BlockMask (torch's KV-side
semantics: per query block, the partial KV blocks where mask_mod decides
and the full ones it skips)."""
import numpy as np

from .. import cdiv
from . import _kernels, fx_to_tile


class BlockMask:
    """The KV tables of a block-sparse mask, as numpy int32 arrays:
    kv_num_blocks (B, H, Qb), kv_indices (B, H, Qb, KVb) for partial blocks
    (mask_mod applies), full_kv_num_blocks / full_kv_indices for full ones;
    B and H may be 1 (broadcast). Indices of listed blocks come first, in
    increasing order, as torch orders them."""

    def __init__(self, kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices,
                 BLOCK_SIZE, mask_mod, seq_lengths):
        self.kv_num_blocks = kv_num_blocks
        self.kv_indices = kv_indices
        self.full_kv_num_blocks = full_kv_num_blocks
        self.full_kv_indices = full_kv_indices
        self.BLOCK_SIZE = BLOCK_SIZE
        self.mask_mod = mask_mod
        self.seq_lengths = seq_lengths

    @property
    def shape(self):
        return self.kv_num_blocks.shape[:2] + self.seq_lengths

    def sparsity(self):
        """Percent of blocks skipped (neither partial nor full)."""
        total = self.kv_indices.size
        used = int(self.kv_num_blocks.sum()) + int(self.full_kv_num_blocks.sum())
        return 100.0 * (1.0 - used / total) if total else 0.0

    def to_torch(self):
        """The same mask as torch's BlockMask (for torch's flex_attention)."""
        import torch
        from torch.nn.attention.flex_attention import BlockMask as TorchBlockMask
        t = torch.from_numpy
        return TorchBlockMask.from_kv_blocks(t(self.kv_num_blocks), t(self.kv_indices),
                                             t(self.full_kv_num_blocks), t(self.full_kv_indices),
                                             BLOCK_SIZE=self.BLOCK_SIZE, mask_mod=self.mask_mod,
                                             seq_lengths=self.seq_lengths)

    def __repr__(self):
        return (f"zetile.ops.BlockMask(shape={self.shape}, BLOCK_SIZE={self.BLOCK_SIZE}, "
                f"sparsity={self.sparsity():.1f}%)")


def _ordered(blocks):
    num = blocks.sum(-1).astype(np.int32)
    # Listed blocks first, each group in increasing order (a stable sort).
    idx = np.argsort(~blocks, axis=-1, kind="stable").astype(np.int32)
    return num, idx


def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device=None, BLOCK_SIZE=128):
    """mask_mod(b, h, q_idx, kv_idx) -> bool (a Python function as torch's
    create_block_mask takes, or a @zetile.jit function) evaluated by a zetile
    kernel block by block. B or H None means 1 (broadcast), as in torch.
    `device` is accepted for torch's signature and ignored (the tables are
    host arrays the kernels read)."""
    B = 1 if B is None else int(B)
    H = 1 if H is None else int(H)
    qbs, kvbs = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else tuple(BLOCK_SIZE)
    Q_LEN, KV_LEN = int(Q_LEN), int(KV_LEN)
    qb, kvb = cdiv(Q_LEN, qbs), cdiv(KV_LEN, kvbs)
    tm = fx_to_tile.from_mod(mask_mod, "mask")
    if any(b is None for b in tm.buffers):
        raise ValueError("create_block_mask: the mask_mod's captured tensors are placeholders")
    from .attention import _contig
    from ._arrays import as_view
    bufs = [as_view(_contig(b)).arg for b in tm.buffers]
    bufs += [None] * (fx_to_tile.MAX_BUFFERS - len(bufs))
    counts = np.zeros((B, H, qb, kvb), np.int32)
    if counts.size:
        sub_m, sub_n = min(qbs, 32), min(kvbs, 32)
        if qbs % sub_m or kvbs % sub_n:
            raise ValueError(f"create_block_mask: BLOCK_SIZE {BLOCK_SIZE} must be a multiple of 32 "
                             "or a power of two below it")
        k = _kernels.load("attention").block_counts
        k[(kvb, qb, B * H)](counts, H, Q_LEN, KV_LEN, qb, kvb, *bufs, MASK_MOD=tm.fn,
                            Q_BLOCK=qbs, KV_BLOCK=kvbs, SUB_M=sub_m, SUB_N=sub_n)
    full = counts == qbs * kvbs
    partial = (counts > 0) & ~full
    kv_num, kv_idx = _ordered(partial)
    f_num, f_idx = _ordered(full)
    return BlockMask(kv_num, kv_idx, f_num, f_idx, (qbs, kvbs), mask_mod, (Q_LEN, KV_LEN))
