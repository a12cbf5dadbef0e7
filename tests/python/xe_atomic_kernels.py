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
