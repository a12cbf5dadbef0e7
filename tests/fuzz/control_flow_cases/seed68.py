# {"seed": 68, "runs": [{"C0": true, "C1": 1, "R0": 212, "R1": 3}, {"C0": true, "C1": 2, "R0": 20, "R1": 0}, {"C0": false, "C1": 2, "R0": 166, "R1": 2}], "found": "run {'C0': True, 'C1': 1, 'R0': 212, 'R1': 3}: zetile raised CompilationError: at /tmp/zt-cf-fuzz-90s12jgh/case68_zetile.py:26:9 in helper_2:\n            if k % 2 == 0:\n            ^\nboth branches must return a value, or neither", "front_end": "d4e441b, before the early-return fix"}
@triton.jit
def helper_0(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    a = (a ^ b) & 0xFFFF
    if tl.sum(a & 3, axis=0) > 24:
        return b, (a * 3) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_1(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if k > 216:
        if k % 2 == 1:
            return (a + 2) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_2(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if (F + 1) == 0 or F:
        if k % 2 == 0:
            return (a + 8) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_3(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    a = (a ^ b) & 0xFFFF
    if F:
        return b, (a * 3) & 0xFFFF
    if tl.sum(a & 3, axis=0) > 28:
        if k % 2 == 0:
            return (a + 4) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def kernel(X, Y, OUT, OUT2, N, R0, R1, C0: tl.constexpr, C1: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(X + offs, mask=mask, other=0)
    y = tl.load(Y + offs, mask=mask, other=1)
    acc = x & 0xFF
    t0 = (y * 2) & 0xFFFF
    t1 = x ^ y
    s0 = R0 + 0
    s1 = (R1 * 3) & 0xFFFF
    w0 = R1 * 0
    while w0 < R1 + 0:
        acc, t1 = helper_0(acc, s1, C0)
        if pid == 0:
            tl.store(OUT2 + offs, (((s0) - (t1)) & 0xFFFF) ^ (((y + offs) & 0xFFFF) ^ (acc)), mask=mask & (offs % 2 != 0))
            t1, t0 = helper_1(((t1) & 0xFF), s0, C1 == 0 or C0)
            if s1 > 151:
                t0 = ((((25) + (x)) & 0xFFFF) & 0xF0F)
                s0 = (s0 + 5) & 0xFFFF
                acc = tl.load(Y + offs, mask=offs < N - 11, other=4)
            else:
                s1 = tl.max(acc, axis=0)
                tl.store(OUT2 + offs, acc, mask=mask & (offs % 3 != 1))
        else:
            if C0 and C1 == 1:
                s1 = (s0 * 3 + R0) & 0xFFFF
                s1 = (s0 + 2) & 0xFFFF
            else:
                s0 = (tl.sum(acc & 0xFF, axis=0) + pid) & 0xFFFF
                t1 = tl.load(Y + offs, mask=offs < N - 15, other=8)
            tl.store(OUT2 + offs, (((((acc + offs) & 0xFFFF) * 4) & 0xFFFF) + ((acc) ^ (t0))) & 0xFFFF, mask=mask & (offs % 3 != 1))
            acc = ((tl.maximum((10 + offs) & 0xFFFF, y)) & 0xFF)
        if pid >= 1:
            if C1 == 2:
                acc = tl.load(Y + offs, mask=offs < N - 19, other=3)
            acc = ((t0) ^ (t0)) ^ (((t1) + (t0)) & 0xFFFF)
            if C0 and C1 == 1:
                tl.store(OUT2 + offs, ((((t0) - (t1)) & 0xFFFF) + (tl.where(((acc + offs) & 0xFFFF) > (t1), ((acc + offs) & 0xFFFF), (t1) + 1) & 0xFFFF)) & 0xFFFF, mask=mask & (offs % 2 != 0))
                s0 = (tl.sum(t1 & 0xFF, axis=0) + pid) & 0xFFFF
                t0 = ((((((s0) & 0xFF)) * 6) & 0xFFFF) + t0) & 0xFFFF
            else:
                t1 = tl.where(((acc) ^ (t1)) > (tl.maximum(t0, 8)), ((acc) ^ (t1)), (tl.maximum(t0, 8)) + 1) & 0xFFFF
        w0 += 1
    for i1 in range(0, R1):
        t1 = (t1 + i1 * 6) & 0xFFFF
        if C0 and C1 == 1:
            t0, acc = helper_2(((((((31) & 0xFF)) & 0xFF)) + t0) & 0xFFFF, s1, C0)
        else:
            if s1 % 4 == 0:
                acc = (((t0 + offs) & 0xFFFF) - (acc)) & 0xFFFF
                t1 = ((t1) & 0xFF)
            else:
                s0 = (tl.sum(t1 & 0xFF, axis=0) + pid) & 0xFFFF
                t1 = ((s0) + acc) & 0xFFFF
    t1, t0 = helper_3(((17) + acc) & 0xFFFF, s0, C0)
    tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
