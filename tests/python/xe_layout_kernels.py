"""Small kernels whose layouts tests/lit checks (their tile IR is in
tests/lit/*.tile, made by tests/lit/make_tiles.py) and whose Xe builds
tests/python/test_xe_attention.py checks."""
import zetile
import zetile.language as tl


@zetile.jit
def dot_tile(A, B, C, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # One BMxBN tile of A @ B, row-major, leading dimensions BK and BN.
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(A + rm[:, None] * BK + rk[None, :])
    b = tl.load(B + rk[:, None] * BN + rn[None, :])
    c = tl.dot(a, b)
    tl.store(C + rm[:, None] * BN + rn[None, :], c)


@zetile.jit
def scaled_dot_tile(A, B, C, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # A prologue op between the load and the dot: A's tile is not loaded in
    # the A operand's layout, so the dot reads it through a conversion.
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(A + rm[:, None] * BK + rk[None, :]) * 2.0
    b = tl.load(B + rk[:, None] * BN + rn[None, :])
    c = tl.dot(a.to(tl.float16), b)
    tl.store(C + rm[:, None] * BN + rn[None, :], c)


@zetile.jit
def row_softmax(X, Y, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    e = tl.exp(x - tl.max(x, 1)[:, None])
    tl.store(Y + rm[:, None] * N + rn[None, :], e / tl.sum(e, 1)[:, None])


@zetile.jit
def cast_dot_tile(A, B, C, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # B is loaded as fp32 and cast to fp16 for the dot: the cast changes the
    # element width, so the load takes dpas<B>'s places one element per slot
    # and the cast converts in registers (xe_layout.c slot_variant).
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(A + rm[:, None] * BK + rk[None, :])
    b = tl.load(B + rk[:, None] * BN + rn[None, :]).to(tl.float16)
    c = tl.dot(a, b)
    tl.store(C + rm[:, None] * BN + rn[None, :], c)


@zetile.jit
def cast_a_dot_tile(A, B, C, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # A is loaded as fp32 and cast to fp16 for the dot: with a 2x2 subgroup
    # grid the load's blocked layout splits the columns each A row needs
    # across subgroups, so the dot reads the fp16 tile through shared local
    # memory (lowering/xe/xe_convert.c).
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(A + rm[:, None] * BK + rk[None, :]).to(tl.float16)
    b = tl.load(B + rk[:, None] * BN + rn[None, :])
    tl.store(C + rm[:, None] * BN + rn[None, :], tl.dot(a, b))


@zetile.jit
def cast_a_dot_tile_stored(A, B, C, D, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    # cast_a_dot_tile whose fp32 tile is also stored (to D): with a reader
    # outside the dot's chain the load keeps the kernel grid's blocked
    # layout, and the fp16 tile reaches the dot's A blocks through shared
    # local memory on a 2x2 grid. (Read by the cast alone, the load takes
    # the A operand's places and the cast converts in registers.)
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    x = tl.load(A + rm[:, None] * BK + rk[None, :])
    tl.store(D + rm[:, None] * BK + rk[None, :], x)
    b = tl.load(B + rk[:, None] * BN + rn[None, :])
    tl.store(C + rm[:, None] * BN + rn[None, :], tl.dot(x.to(tl.float16), b))


@zetile.jit
def dot_into_b_tile(A, B, X, C, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    # out = X @ (A @ B).to(fp16): the first dot's accumulator (2x2 grid,
    # rows and columns split) is the second dot's B operand (columns split,
    # every row), so it crosses subgroups through shared local memory
    # (lowering/xe/xe_convert.c) into VNNI B blocks.
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(A + rm[:, None] * K + rk[None, :])
    b = tl.load(B + rk[:, None] * N + rn[None, :])
    c = tl.dot(a, b)
    x = tl.load(X + rm[:, None] * M + rm[None, :])
    tl.store(C + rm[:, None] * N + rn[None, :], tl.dot(x, c.to(tl.float16)))


@zetile.jit
def narrow_a_tiles(A, S, B, C, D, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                   SCALE: tl.constexpr):
    # A 64x32 A tile over 4 or 8 subgroups (grids 1x4, 2x4): 8 columns a
    # subgroup do not make 16-column blocks, so it is held like a dot's A
    # operand (rows split, replicated across the grid's columns). It is
    # stored (once per grid row), with SCALE scaled by a per-column vector
    # (its 1x32 row held whole in every subgroup) and cast, and read by the
    # dot as A blocks.
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    rk = tl.arange(0, K)
    a = tl.load(A + rm[:, None] * K + rk[None, :])
    tl.store(D + rm[:, None] * K + rk[None, :], a + 1.0)
    if SCALE:
        a = (a.to(tl.float32) * tl.load(S + rk)[None, :]).to(tl.float16)
    b = tl.load(B + rk[:, None] * N + rn[None, :])
    tl.store(C + rm[:, None] * N + rn[None, :], tl.dot(a, b))
