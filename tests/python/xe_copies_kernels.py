"""Kernels whose tiles are held in copies on Xe (a dot with fewer 8x16
output blocks than subgroups, xe_val_t.col_rep and the A-form result):
stored, atomically added and reduced (test_xe_copies_read.py)."""
import zetile
import zetile.language as tl


@zetile.jit
def copies_read_kernel(A, B, C, W, SC, AC, CS, CM, SD, AD, DS0, DS1, DM0, DM1,
                       M: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rk = tl.arange(0, K)
    r64 = tl.arange(0, 64)
    c16 = tl.arange(0, 16)
    a = tl.load(A + rm[:, None] * K + rk[None, :])
    b = tl.load(B + rk[:, None] * 64 + r64[None, :])
    c = tl.load(C + rk[:, None] * 16 + c16[None, :])
    # Row work on the wide Mx64 dot: both dots take a grid of rows (2x2 at 4
    # warps for 16 rows), on which the Mx16 dot has fewer 8x16 blocks than
    # subgroups. Its result d is held like an A operand (the same in both
    # grid columns) and its B operand c whole in every subgroup (col_rep).
    tl.store(W + rm, tl.max(tl.dot(a, b), axis=1))
    d = tl.dot(a, c)
    ck = rk[:, None] * 16 + c16[None, :]
    cm = rm[:, None] * 16 + c16[None, :]
    tl.store(SC + ck, c)
    tl.atomic_add(AC + ck, c.to(tl.float32))
    tl.store(CS + c16, tl.sum(c.to(tl.float32), axis=0))
    tl.store(CM + rk, tl.max(c.to(tl.float32), axis=1))
    tl.store(SD + cm, d)
    tl.atomic_add(AD + cm, d)
    tl.store(DS0 + c16, tl.sum(d, axis=0))
    tl.store(DS1 + rm, tl.sum(d, axis=1))
    tl.store(DM0 + c16, tl.max(d, axis=0))
    tl.store(DM1 + rm, tl.max(d, axis=1))


@zetile.jit
def copies_scanned_kernel(A, B, C, W, O, M: tl.constexpr, K: tl.constexpr):
    rm = tl.arange(0, M)
    rk = tl.arange(0, K)
    r64 = tl.arange(0, 64)
    c16 = tl.arange(0, 16)
    a = tl.load(A + rm[:, None] * K + rk[None, :])
    b = tl.load(B + rk[:, None] * 64 + r64[None, :])
    c = tl.load(C + rk[:, None] * 16 + c16[None, :])
    tl.store(W + rm, tl.max(tl.dot(a, b), axis=1))
    tl.store(O + rm[:, None] * 16 + c16[None, :], tl.dot(a, c))
    # A scan of the copies: each copy would be scanned across the grid's
    # columns as if it were another part.
    tl.store(O + rk[:, None] * 16 + c16[None, :], tl.cumsum(c.to(tl.float32), axis=0))


@zetile.jit
def b_operand_read_kernel(A, C, O, SC, S0, S1, N: tl.constexpr):
    # c is the dot's B operand on the 2x2 grid of 4 warps (N = 32): all N
    # rows in each subgroup, its N/2 columns; the same in both grid rows.
    # Stored and reduced from the B blocks (once per element), not loaded
    # again.
    r = tl.arange(0, N)
    a = tl.load(A + r[:, None] * N + r[None, :])
    c = tl.load(C + r[:, None] * N + r[None, :])
    tl.store(O + r[:, None] * N + r[None, :], tl.dot(a, c))
    tl.store(SC + r[:, None] * N + r[None, :], c)
    tl.store(S0 + r, tl.sum(c.to(tl.float32), axis=0))
    tl.store(S1 + r, tl.max(c.to(tl.float32), axis=1))
