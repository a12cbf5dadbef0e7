"""Layer-norm backward in the form of Triton's tutorial 05, written for
test_xe_layernorm_bwd.py: one program per row computes dx and adds its
dw/db contributions into one of GROUP partial rows under a spin lock
(`atomic_cas` in a `while`, released by `atomic_xchg`), then a second kernel
sums the partial rows by columns (a 2-D tile reduced along axis 0)."""
import zetile as triton
import zetile.language as tl


@triton.jit
def ln_bwd_dx(DX, DY, PDW, PDB, X, W, MEAN, RSTD, LOCKS, stride, N,
              GROUP: tl.constexpr, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    inb = cols < N
    x = tl.load(X + row * stride + cols, mask=inb, other=0.).to(tl.float32)
    dy = tl.load(DY + row * stride + cols, mask=inb, other=0.).to(tl.float32)
    w = tl.load(W + cols, mask=inb).to(tl.float32)
    mu = tl.load(MEAN + row)
    rs = tl.load(RSTD + row)
    xhat = tl.where(inb, (x - mu) * rs, 0.)
    wdy = tl.where(inb, w * dy, 0.)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    tl.store(DX + row * stride + cols, (wdy - (xhat * c1 + c2)) * rs, mask=inb)
    # This row's share of dw and db goes into partial row `slot`; the first
    # program there stores, later ones add (counted in LOCKS[GROUP + slot]).
    slot = row % GROUP
    lock = LOCKS + slot
    count = LOCKS + GROUP + slot
    pdw = (dy * xhat).to(w.dtype)
    pdb = dy.to(w.dtype)
    while tl.atomic_cas(lock, 0, 1) == 1:
        pass
    seen = tl.load(count)
    if seen == 0:
        tl.atomic_xchg(count, 1)
    else:
        pdw += tl.load(PDW + slot * N + cols, mask=inb)
        pdb += tl.load(PDB + slot * N + cols, mask=inb)
    tl.store(PDW + slot * N + cols, pdw, mask=inb)
    tl.store(PDB + slot * N + cols, pdb, mask=inb)
    tl.debug_barrier()
    tl.atomic_xchg(lock, 0)


@triton.jit
def ln_bwd_dwdb(PDW, PDB, DW, DB, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc_w = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc_b = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for r0 in range(0, M, BLOCK_M):
        rows = r0 + tl.arange(0, BLOCK_M)
        m = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        acc_w += tl.load(PDW + offs, mask=m, other=0.)
        acc_b += tl.load(PDB + offs, mask=m, other=0.)
    tl.store(DW + cols, tl.sum(acc_w, axis=0), mask=cols < N)
    tl.store(DB + cols, tl.sum(acc_b, axis=0), mask=cols < N)


@triton.jit
def col_reduce(P, OUT, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, OP: tl.constexpr):
    """One BLOCK_M x BLOCK_N tile reduced along axis 0 (sum, max or min)."""
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    rows = tl.arange(0, BLOCK_M)
    m = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(P + rows[:, None] * N + cols[None, :], mask=m, other=0.)
    if OP == "max":
        s = tl.max(x, axis=0)
    elif OP == "min":
        s = tl.min(x, axis=0)
    else:
        s = tl.sum(x, axis=0)
    tl.store(OUT + cols, s, mask=cols < N)


@triton.jit
def dot_col_sum(A, B, C, S, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """A dot's accumulator (split both ways over the subgroups) and its column
    sums (a 1-D result distributed over the subgroups)."""
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.dot(tl.load(A + rm[:, None] * BK + rk[None, :]), tl.load(B + rk[:, None] * BN + rn[None, :]))
    tl.store(C + rm[:, None] * BN + rn[None, :], acc)
    tl.store(S + rn, tl.sum(acc, axis=0))


@triton.jit
def small_tensor_cas(SLOTS, OUT, BLOCK: tl.constexpr, WIDE: tl.constexpr):
    """atomic_cas on a 1-D tensor of fewer chunks than subgroups (every
    subgroup holds it; subgroup 0 performs it), its old values used by every
    subgroup: how many slots this program won, written over a WIDE row that
    the subgroups store in parts."""
    offs = tl.arange(0, BLOCK)
    old = tl.atomic_cas(SLOTS + offs, tl.zeros((BLOCK,), dtype=tl.int32), offs + 1)
    won = tl.sum((old == 0).to(tl.int32), axis=0)
    wide = tl.arange(0, WIDE)
    tl.store(OUT + tl.program_id(0) * WIDE + wide, tl.zeros((WIDE,), dtype=tl.int32) + won)


@triton.jit
def row_reduce(P, OUT, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, OP: tl.constexpr):
    """One BLOCK_M x BLOCK_N tile reduced along axis 1 (sum, max or min)."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    m = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(P + rows[:, None] * N + cols[None, :], mask=m, other=0.)
    if OP == "max":
        s = tl.max(x, axis=1)
    elif OP == "min":
        s = tl.min(x, axis=1)
    else:
        s = tl.sum(x, axis=1)
    tl.store(OUT + rows, s, mask=rows < M)
