"""Conformance kernels, written once in Triton's language.

The suite loads this file twice: as it is (Triton's interpreter runs it) and
with the two import lines below changed to zetile's (zetile runs it on the
CPU target). Nothing else differs. Each kernel reads inputs X, Y, Z and
writes OUT (and OUT2 where needed), all flat contiguous arrays.
"""
import triton
import triton.language as tl


# ---------------------------------------------------------------- elementwise
@triton.jit
def binary_op(X, Y, OUT, N, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    y = tl.load(Y + offs, mask=m)
    if OP == "add":
        r = x + y
    elif OP == "sub":
        r = x - y
    elif OP == "mul":
        r = x * y
    elif OP == "truediv":
        r = x / y
    elif OP == "floordiv":
        r = x // y
    elif OP == "mod":
        r = x % y
    elif OP == "and":
        r = x & y
    elif OP == "or":
        r = x | y
    elif OP == "xor":
        r = x ^ y
    elif OP == "lt":
        r = x < y
    elif OP == "le":
        r = x <= y
    elif OP == "gt":
        r = x > y
    elif OP == "ge":
        r = x >= y
    elif OP == "eq":
        r = x == y
    elif OP == "ne":
        r = x != y
    elif OP == "mask_xor":  # boolean vectors (the lane packing keeps them in pieces on Xe)
        r = (x < y) ^ (y > 1)
    elif OP == "mask_eq":
        r = (x < y) == (y > 1)
    elif OP == "mask_ne":
        r = (x < y) != (y > 1)
    elif OP == "maximum":
        r = tl.maximum(x, y)
    elif OP == "minimum":
        r = tl.minimum(x, y)
    elif OP == "shl":
        r = x << (y & 7)
    elif OP == "shr":
        r = x >> (y & 7)
    else:
        tl.static_assert(False, "unknown op")
    tl.store(OUT + offs, r, mask=m)


@triton.jit
def scalar_op(X, OUT, N, S, OP: tl.constexpr, BLOCK: tl.constexpr):
    # A run-time scalar and Python literals against a tensor (weak typing).
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    if OP == "add_lit":
        r = x + 3
    elif OP == "mul_flit":
        r = x * 1.5
    elif OP == "sub_scalar":
        r = x - S
    elif OP == "rsub_lit":
        r = 7 - x
    elif OP == "div_lit":
        r = x / 2
    elif OP == "neg":
        r = -x
    else:
        tl.static_assert(False, "unknown op")
    tl.store(OUT + offs, r, mask=m)


@triton.jit
def unary_math(X, OUT, N, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=1.0)
    if OP == "exp":
        r = tl.exp(x)
    elif OP == "exp2":
        r = tl.exp2(x)
    elif OP == "log":
        r = tl.log(tl.abs(x) + 0.5)
    elif OP == "log2":
        r = tl.log2(tl.abs(x) + 0.5)
    elif OP == "sqrt":
        r = tl.sqrt(tl.abs(x))
    elif OP == "rsqrt":
        r = tl.rsqrt(tl.abs(x) + 0.25)
    elif OP == "sin":
        r = tl.sin(x)
    elif OP == "cos":
        r = tl.cos(x)
    elif OP == "abs":
        r = tl.abs(x)
    elif OP == "floor":
        r = tl.floor(x)
    elif OP == "ceil":
        r = tl.ceil(x)
    elif OP == "sigmoid":
        r = tl.sigmoid(x)
    elif OP == "erf":
        r = tl.erf(x)
    elif OP == "fma":
        r = tl.fma(x, x, 1.0)
    elif OP == "where":
        r = tl.where(x > 0, x, 0.5 * x)
    elif OP == "clamp":
        r = tl.clamp(x, -0.5, 0.75)
    else:
        tl.static_assert(False, "unknown op")
    tl.store(OUT + offs, r, mask=m)


@triton.jit
def cast_kernel(X, OUT, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    tl.store(OUT + offs, x.to(OUT.dtype.element_ty), mask=m)


@triton.jit
def bitcast_kernel(X, OUT, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    tl.store(OUT + offs, x.to(OUT.dtype.element_ty, bitcast=True), mask=m)


# ------------------------------------------------------------------- reductions
@triton.jit
def reduce_2d(X, OUT, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr, OP: tl.constexpr,
              KEEP: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    if OP == "sum":
        r = tl.sum(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "max":
        r = tl.max(x, axis=AXIS, keep_dims=KEEP)
    elif OP == "min":
        r = tl.min(x, axis=AXIS, keep_dims=KEEP)
    else:
        r = tl.xor_sum(x, axis=AXIS, keep_dims=KEEP)
    if AXIS == 0:
        if KEEP:
            tl.store(OUT + rn[None, :], r)
        else:
            tl.store(OUT + rn, r)
    else:
        if KEEP:
            tl.store(OUT + rm[:, None], r)
        else:
            tl.store(OUT + rm, r)


@triton.jit
def reduce_all(X, OUT, N, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < N, other=0)
    if OP == "sum":
        r = tl.sum(x)
    elif OP == "max":
        r = tl.max(x, axis=0)
    else:
        r = tl.min(x, axis=0)
    tl.store(OUT, r)


# ------------------------------------------------------------------ shapes
@triton.jit
def shapes_kernel(X, OUT, M: tl.constexpr, N: tl.constexpr, OP: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    if OP == "trans":
        y = tl.trans(x)
        tl.store(OUT + rn[:, None] * M + rm[None, :], y)
    elif OP == "permute":
        y = tl.permute(x, (1, 0))
        tl.store(OUT + rn[:, None] * M + rm[None, :], y)
    elif OP == "reshape":
        y = tl.reshape(x, (N, M))
        tl.store(OUT + rn[:, None] * M + rm[None, :], y)
    elif OP == "ravel":
        y = tl.ravel(x)
        tl.store(OUT + tl.arange(0, M * N), y)
    elif OP == "broadcast_to":
        col = tl.load(X + rm)
        y = tl.broadcast_to(col[:, None], (M, N))
        tl.store(OUT + rm[:, None] * N + rn[None, :], y)
    elif OP == "expand_dims":
        row = tl.load(X + rn)
        y = tl.expand_dims(row, 0) + tl.expand_dims(rm.to(row.dtype), 1)
        tl.store(OUT + rm[:, None] * N + rn[None, :], y)
    elif OP == "hints":
        # Hints change nothing in the values (the Xe lowering may use them).
        rmh = tl.max_contiguous(tl.multiple_of(rm, M), M)
        rnh = tl.max_contiguous(tl.multiple_of(rn, N), N)
        off = tl.max_constancy(rmh * N, 1)
        y = tl.load(X + off[:, None] + rnh[None, :])
        tl.store(OUT + rm[:, None] * N + rn[None, :], y + 1)
    else:
        tl.static_assert(False, "unknown op")


@triton.jit
def creation_kernel(OUT, N, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < N
    if OP == "zeros":
        r = tl.zeros([BLOCK], dtype=OUT.dtype.element_ty) + offs.to(OUT.dtype.element_ty)
    elif OP == "full":
        r = tl.full([BLOCK], 3, dtype=OUT.dtype.element_ty)
    elif OP == "zeros_like":
        r = tl.zeros_like(offs).to(OUT.dtype.element_ty) + 2
    else:
        r = tl.arange(0, BLOCK).to(OUT.dtype.element_ty) * 2 + 1
    tl.store(OUT + offs, r, mask=m)


# --------------------------------------------------------------- control flow
@triton.jit
def control_flow(X, OUT, N, MODE: tl.constexpr):
    pid = tl.program_id(0)
    x = tl.load(X + pid)
    acc = x * 0
    if MODE == "for":
        for i in range(0, N):
            acc += x + i
    elif MODE == "for_step":
        for i in range(1, N, 3):
            acc += i
    elif MODE == "while":
        i = 0
        while i < N:
            acc += i * x
            i += 2
    elif MODE == "if":
        if x > 0:
            acc = x * 2
        else:
            acc = x - 1
    elif MODE == "if_elif":
        if x > 1:
            acc = x
        elif x > -1:
            acc = x * 10
        else:
            acc = -x
    elif MODE == "nested":
        for i in range(N):
            if i % 2 == 0:
                acc += x
            else:
                for j in range(i):
                    acc -= 1
    elif MODE == "static_range":
        for i in tl.static_range(4):
            acc += x * i
    tl.store(OUT + pid, acc)


@triton.jit
def _helper_pair(a, b):
    return a + b, a * b


@triton.jit
def _helper_scale(x, k: tl.constexpr):
    return x * k


@triton.jit
def calls_kernel(X, OUT, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m)
    s, p = _helper_pair(x, _helper_scale(x, 3))
    tl.store(OUT + offs, s - p, mask=m)


@triton.jit
def grid3d_kernel(OUT):
    pid = tl.program_id(0) + tl.num_programs(0) * (tl.program_id(1) + tl.num_programs(1) * tl.program_id(2))
    tl.store(OUT + pid, pid * 7 + tl.num_programs(0) + tl.num_programs(1) * 100 + tl.num_programs(2) * 10000)


# ------------------------------------------------ reductions with combiners
@triton.jit
def _max_combine_user(a, b):
    return tl.maximum(a, b)


@triton.jit
def _sum_pair(a0, a1, b0, b1):
    return a0 + b0, a1 * b1


@triton.jit
def index_reduce_kernel(X, OUT, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr,
                        OP: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    if OP == "argmax":
        r = tl.argmax(x, axis=AXIS)
    elif OP == "argmin":
        r = tl.argmin(x, axis=AXIS)
    elif OP == "argmax_fast":
        r = tl.argmax(x, axis=AXIS, tie_break_left=False)
    elif OP == "max_idx":
        v, i = tl.max(x, axis=AXIS, return_indices=True)
        r = i * 1000 + v.to(tl.int32)
    elif OP == "user_max":
        r = tl.reduce(x, AXIS, _max_combine_user)
    else:
        s, p = tl.reduce((x, x.to(tl.int32) % 3 + 1), AXIS, _sum_pair)
        r = s.to(tl.int32) + p
    if AXIS == 0:
        tl.store(OUT + rn, r)
    else:
        tl.store(OUT + rm, r)


# -------------------------------------------------------------------- random
@triton.jit
def random_kernel(OUT, N, seed, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    if OP == "randint":
        r = tl.randint(seed, offs)
    elif OP == "rand":
        r = tl.rand(seed, offs)
    elif OP == "randn":
        r = tl.randn(seed, offs)
    else:
        a, b, c, d = tl.randint4x(seed, offs)
        r = a ^ b ^ c ^ d
    tl.store(OUT + offs, r, mask=m)


# ------------------------------------------------------------ scans, atomics
@triton.jit
def _fill_combine(x, y):
    # Associative, not commutative: the last non-zero so far.
    return tl.where(y != 0, y, x)


@triton.jit
def _linear_combine(a1, b1, a2, b2):
    # h = a * h + b composed (a linear recurrence), a tuple scan.
    return a1 * a2, b1 * a2 + b2


@triton.jit
def scan_kernel(X, OUT, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr, OP: tl.constexpr,
                REVERSE: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    if OP == "cumsum":
        r = tl.cumsum(x, axis=AXIS, reverse=REVERSE)
    elif OP == "cumprod":
        r = tl.cumprod(x % 3 + 1, axis=AXIS, reverse=REVERSE)
    elif OP == "fill_scan":
        r = tl.associative_scan(x % 3, AXIS, _fill_combine, reverse=REVERSE)
    elif OP == "pair_scan":
        _, r = tl.associative_scan((x % 3 + 1, x), AXIS, _linear_combine, reverse=REVERSE)
    else:
        r = tl.associative_scan(x, AXIS, _max_combine_user, reverse=REVERSE)
    tl.store(OUT + rm[:, None] * N + rn[None, :], r)


@triton.jit
def atomic_kernel(X, OUT, N, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < N
    x = tl.load(X + offs, mask=m, other=0)
    slot = OUT + (offs % 8)
    if OP == "add":
        tl.atomic_add(slot, x, mask=m)
    elif OP == "max":
        tl.atomic_max(slot, x, mask=m)
    elif OP == "min":
        tl.atomic_min(slot, x, mask=m)
    elif OP == "or":
        tl.atomic_or(slot, x, mask=m)
    elif OP == "xor":
        tl.atomic_xor(slot, x, mask=m)
    else:
        tl.atomic_and(slot, x, mask=m)


# ---------------------------------------------------- block pointers / descriptors
@triton.jit
def block_ptr_copy(X, OUT, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    src = tl.make_block_ptr(X, shape=(M, N), strides=(N, 1), offsets=(pm * BM, pn * BN),
                            block_shape=(BM, BN), order=(1, 0))
    dst = tl.make_block_ptr(OUT, shape=(M, N), strides=(N, 1), offsets=(pm * BM, pn * BN),
                            block_shape=(BM, BN), order=(1, 0))
    x = tl.load(src, boundary_check=(0, 1), padding_option="zero")
    tl.store(dst, x * 2 + 1, boundary_check=(0, 1))


@triton.jit
def descriptor_copy(X, OUT, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    src = tl.make_tensor_descriptor(X, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(OUT, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    x = src.load([pm * BM, pn * BN])
    dst.store([pm * BM, pn * BN], x + 3)


@triton.jit
def compose_kernel(X, Y, OUT, N: tl.constexpr, OP: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    y = tl.load(Y + offs)
    if OP == "join_split":
        a, b = tl.split(tl.join(x, y))
        r = a * 3 + b
    elif OP == "interleave":
        r2 = tl.interleave(x, y)
        a, b = tl.split(tl.reshape(r2, (N, 2)))
        r = a - b
    elif OP == "swizzle":
        i, j = tl.swizzle2d(offs // 4, offs % 4, N // 4, 4, 3)
        r = (i * 100 + j).to(x.dtype)
    elif OP == "softmax":
        r = tl.softmax(x.to(tl.float32)).to(x.dtype)
    elif OP == "add_sub_mul":
        r = tl.mul(tl.add(x, y), tl.sub(x, y))
    else:
        r = tl.squeeze(tl.unsqueeze(x, 0), 0)
    tl.store(OUT + offs, r)


@triton.jit
def permute_kernel(X, OUT, N: tl.constexpr, OP: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(X + offs)
    if OP == "flip":
        r = tl.flip(x, 0)
    elif OP == "sort":
        r = tl.sort(x)
    elif OP == "sort_desc":
        r = tl.sort(x, descending=True)
    elif OP == "gather":
        idx = (offs * 7 + 3) % N
        r = tl.gather(x, idx, 0)
    elif OP == "cat":
        h = tl.reshape(x, (2, N // 2))
        r = tl.reshape(tl.cat(h, h * 2, can_reorder=False, dim=1), (N * 2,))
        r = tl.sum(tl.reshape(r, (N, 2)) * tl.reshape(tl.arange(0, 2 * N), (N, 2)).to(x.dtype), axis=1)
    else:
        r = tl.histogram((tl.abs(x) % 8).to(tl.int32), N)
    tl.store(OUT + offs, r)


# ---------------------------------------------------------------- dots
@triton.jit
def dot_kernel(X, Y, OUT, B: tl.constexpr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
               OP: tl.constexpr, PREC: tl.constexpr):
    # The result's own precision shows: OUT is float64 (int64), so the store
    # widens the dot's result exactly. B > 1: Triton's batched (3-D) dot.
    if B == 1:
        om = tl.arange(0, M)[:, None]
        on = tl.arange(0, N)[None, :]
        ok = tl.arange(0, K)
        x = tl.load(X + om * K + ok[None, :])
        y = tl.load(Y + ok[:, None] * N + on)
        dst = OUT + om * N + on
    else:
        ob = tl.arange(0, B)[:, None, None]
        om = tl.arange(0, M)[None, :, None]
        on = tl.arange(0, N)[None, None, :]
        ok = tl.arange(0, K)
        x = tl.load(X + ob * M * K + om * K + ok[None, None, :])
        y = tl.load(Y + ob * K * N + ok[None, :, None] * N + on)
        dst = OUT + ob * M * N + om * N + on
    if OP == "default":
        r = tl.dot(x, y, input_precision=PREC)
    elif OP == "out_f16":
        r = tl.dot(x, y, out_dtype=tl.float16, input_precision=PREC)
    elif OP == "acc_f32":
        if B == 1:
            acc = tl.full((M, N), 0.5, tl.float32)
        else:
            acc = tl.full((B, M, N), 0.5, tl.float32)
        r = tl.dot(x, y, acc, input_precision=PREC)
    else:
        r = tl.dot(x, y, input_precision=PREC) * 2 + 1
    tl.store(dst, r)
