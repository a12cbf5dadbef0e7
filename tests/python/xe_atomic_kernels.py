"""Kernels for test_xe_atomics.py."""
import zetile as triton
import zetile.language as tl


@triton.jit
def rmw_kernel(x_ptr, out_ptr, old_ptr, N, OP: tl.constexpr, SLOTS: tl.constexpr,
               BLOCK: tl.constexpr):
    """Every element updates slot i % SLOTS; the old values are kept."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(x_ptr + offs, mask=m, other=0)
    slot = out_ptr + offs % SLOTS
    if OP == "add":
        old = tl.atomic_add(slot, x, mask=m)
    elif OP == "max":
        old = tl.atomic_max(slot, x, mask=m)
    elif OP == "min":
        old = tl.atomic_min(slot, x, mask=m)
    elif OP == "and":
        old = tl.atomic_and(slot, x, mask=m)
    elif OP == "or":
        old = tl.atomic_or(slot, x, mask=m)
    elif OP == "xor":
        old = tl.atomic_xor(slot, x, mask=m)
    else:
        old = tl.atomic_xchg(slot, x, mask=m)
    tl.store(old_ptr + offs, old, mask=m)


@triton.jit
def ticket_kernel(counter_ptr, tickets_ptr):
    """One scalar atomic per program: its ticket is the counter's old value."""
    t = tl.atomic_add(counter_ptr, 1)
    tl.store(tickets_ptr + tl.program_id(0), t)


@triton.jit
def cas_kernel(slots_ptr, won_ptr, N, BLOCK: tl.constexpr):
    """Each element tries to claim slot i % 8 (0 -> its id + 1): exactly one
    claimant per slot sees the old value 0."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    slot = slots_ptr + offs % 8
    cmp = tl.zeros((BLOCK,), dtype=tl.int32)
    old = tl.atomic_cas(slot, cmp, offs + 1)
    tl.store(won_ptr + offs, (old == 0).to(tl.int32), mask=m)


@triton.jit
def splitk_kernel(A, B, C, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr, ACC: tl.constexpr):
    """Split-K GEMM as Intel's gemm_splitk benchmark writes it back: each
    program along axis 1 sums every SPLIT_K-th K block and adds its partial
    accumulator tile to C with a 2-D tl.atomic_add (old values unused)."""
    pid_m = tl.program_id(0)
    pid_z = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=ACC)
    off_k = pid_z * BLOCK_K
    for _ in range(0, K, BLOCK_K * SPLIT_K):
        a = tl.load(A + rm[:, None] * K + off_k + rk[None, :], mask=(rm < M)[:, None], other=0)
        b = tl.load(B + (off_k + rk)[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, acc, out_dtype=ACC)
        off_k += BLOCK_K * SPLIT_K
    mask = (rm < M)[:, None] & (rn < N)[None, :]
    tl.atomic_add(C + rm[:, None] * N + rn[None, :], acc, mask=mask, sem="relaxed")


@triton.jit
def add_tile_kernel(X, OUT, M, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Every program adds its (BLOCK_M, BLOCK_N) tile of X into OUT's one
    tile (a 2-D atomic of a loaded tile, no dot), rows >= M masked off."""
    pid = tl.program_id(0)
    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    x = tl.load(X + pid * BLOCK_M * BLOCK_N + rm[:, None] * BLOCK_N + rn[None, :])
    tl.atomic_add(OUT + rm[:, None] * BLOCK_N + rn[None, :], x, mask=(rm < M)[:, None])


@triton.jit
def add_tile_old_kernel(X, OUT, OLD, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Every program adds its tile of X into OUT's one tile and stores the
    old values it got (a 2-D atomic whose result is used)."""
    pid = tl.program_id(0)
    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    offs = rm[:, None] * BLOCK_N + rn[None, :]
    old = tl.atomic_add(OUT + offs, tl.load(X + pid * BLOCK_M * BLOCK_N + offs))
    tl.store(OLD + pid * BLOCK_M * BLOCK_N + offs, old)


@triton.jit
def cas_tile_kernel(OUT, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_cas(OUT + offs[:, None] * BLOCK + offs[None, :], 0, 1)


@triton.jit
def cas_tile_old_kernel(OUT, CMP, VAL, OLD, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Every program compares-and-swaps its tiles of CMP and VAL into OUT's
    one tile and stores the old values it got."""
    pid = tl.program_id(0)
    rm = tl.arange(0, BLOCK_M)
    rn = tl.arange(0, BLOCK_N)
    offs = rm[:, None] * BLOCK_N + rn[None, :]
    mine = pid * BLOCK_M * BLOCK_N + offs
    old = tl.atomic_cas(OUT + offs, tl.load(CMP + mine), tl.load(VAL + mine))
    tl.store(OLD + mine, old)
