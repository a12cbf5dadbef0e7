"""Kernels with early returns, written as Triton programs (import swapped).

Each early return sits somewhere the old front end mishandled or where
Triton's rules are subtle: inside a compile-time `if` (the statements after
the enclosing `if` were dropped: the kernel stored nothing), nested run-time
ifs, both branches returning, helpers returning values early, helpers with
early returns called inside loops, and the tutorial-06 pattern of a helper
parameter annotated constexpr that is given a tensor."""
import zetile as triton
import zetile.language as tl


@triton.jit
def issue_reproducer(x, n, C: tl.constexpr):
    pid = tl.program_id(0)
    if C:
        if pid >= n:
            return
    tl.store(x + pid, pid + 1.0)


@triton.jit
def nested_const_runtime(OUT, n, m, A: tl.constexpr, B: tl.constexpr):
    pid = tl.program_id(0)
    v = pid * 10
    if A:
        v += 1
        if B == 2:
            if pid < n:
                tl.store(OUT + pid, v + 1000)
                return
            v += 2
        elif pid == m:
            return
        v += 3
    if pid % 2 == 0:
        if not B:
            return
        v += 100
    else:
        v += 200
    tl.store(OUT + pid, v)


@triton.jit
def _clamp_early(a, k, LIMIT: tl.constexpr):
    # Early returns of values from a helper, on run-time and compile-time paths.
    if LIMIT > 0:
        if k > LIMIT:
            return a * 0 + LIMIT, k - LIMIT
    if k < 0:
        return a - k, k * 0
    return a + k, k


@triton.jit
def helper_returns_in_loop(X, OUT, n, LIMIT: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    acc = tl.load(X + offs, mask=mask, other=0)
    total = acc * 0
    for i in range(0, n % 5 + 2):
        step, rest = _clamp_early(acc, i * 3 - 2, LIMIT)
        total += step + rest
    tl.store(OUT + offs, total, mask=mask)


@triton.jit
def _row_block(acc, offs_m: tl.constexpr, STAGE: tl.constexpr):
    # Triton's tutorial-06 `_attn_fwd_inner` annotates a tensor argument
    # (offs_m) as constexpr; Triton compiles it as the tensor it is.
    if STAGE == 2:
        return acc + offs_m * 2
    return acc + offs_m


@triton.jit
def constexpr_annotated_tensor_param(OUT, STAGE: tl.constexpr, BLOCK: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.int32)
    acc = _row_block(acc, offs_m, STAGE)
    tl.store(OUT + offs_m, acc)


@triton.jit
def return_in_static_range(OUT):
    for i in tl.static_range(3):
        if i == 1:
            return
        tl.store(OUT + i, i)


@triton.jit
def return_in_for(OUT, n):
    for i in range(n):
        if i == 2:
            return
        tl.store(OUT + i, i)


@triton.jit
def return_in_while(OUT, n):
    i = 0
    while i < n:
        if i == 2:
            return
        i += 1
    tl.store(OUT, i)
