# {"seed": 35, "runs": [{"C0": true, "C1": 0, "R0": 272, "R1": 0}, {"C0": true, "C1": 2, "R0": 96, "R1": 2}, {"C0": false, "C1": 2, "R0": 272, "R1": 0}], "found": "run {'C0': True, 'C1': 2, 'R0': 96, 'R1': 2}: zetile raised CompilationError: at /tmp/zt-cf-fuzz-90s12jgh/case35_zetile.py:12:9 in helper_0:\n            if k % 2 == 1:\n            ^\nboth branches must return a value, or neither", "front_end": "d4e441b, before the early-return fix"}
@triton.jit
def helper_0(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    a = (a ^ b) & 0xFFFF
    if k > 272:
        if k % 2 == 1:
            return (a + 7) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    if (F + 1) == 0 or F:
        if k % 2 == 1:
            return (a + 3) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_1(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if tl.sum(a & 3, axis=0) > 17:
        return b, (a * 2) & 0xFFFF
    if tl.sum(a & 3, axis=0) > 39:
        if k % 2 == 0:
            return (a + 1) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    a = (a ^ b) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_2(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if tl.sum(a & 3, axis=0) > 22:
        if k % 2 == 0:
            return (a + 1) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    a = (a ^ b) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_3(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if k > 136:
        if k % 2 == 1:
            return (a + 6) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    if tl.sum(a & 3, axis=0) > 31:
        return b, (a * 2) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_4(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if tl.sum(a & 3, axis=0) > 27:
        return b, (a * 4) & 0xFFFF
    a = (a ^ b) & 0xFFFF
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
    if pid >= 3:
        tl.store(OUT2 + offs, ((tl.maximum(x, (t0 + offs) & 0xFFFF)) * 7) & 0xFFFF, mask=mask & (offs % 3 != 0))
        w0 = R1 * 0
        while w0 < R1 + 0:
            t0 = (y + offs) & 0xFFFF
            w0 += 1
    else:
        t1 = tl.load(Y + offs, mask=offs < N - 4, other=7)
        w1 = R1 * 0
        while w1 < R1 + 0:
            for i2 in range(0, R1):
                t0 = (t1 + i2 * 4) & 0xFFFF
                t1 = tl.load(Y + offs, mask=offs < N - 3, other=5)
                tl.store(OUT2 + offs, ((s0) + (((acc) + (acc)) & 0xFFFF)) & 0xFFFF, mask=mask & (offs % 2 != 1))
                s0 = (s0 + 8) & 0xFFFF
            t1, acc = helper_0(tl.where(((((44 + offs) & 0xFFFF) * 7) & 0xFFFF) > (((s0) & 0xF0F)), ((((44 + offs) & 0xFFFF) * 7) & 0xFFFF), (((s0) & 0xF0F)) + 1) & 0xFFFF, s0, C1 > 0)
            w1 += 1
        return
    if pid == 1:
        t0 = ((t0) - (((t1) - (49)) & 0xFFFF)) & 0xFFFF
        for i3 in range(1, R1 + 2, 2):
            t1 = (t1 + i3 * 5) & 0xFFFF
            w4 = R1 * 0
            while w4 < R1 + 0:
                s0 = (s0 * 4 + R0) & 0xFFFF
                w4 += 1
            t0, t1 = helper_1(((t0) - (((acc) + (s0)) & 0xFFFF)) & 0xFFFF, s0, C1 == 0 or C0)
    else:
        if (R0 & 2) == 0:
            acc = x
        else:
            w5 = R1 * 0
            while w5 < R1 + 1:
                tl.store(OUT2 + offs, (y + offs) & 0xFFFF, mask=mask & (offs % 3 != 0))
                tl.store(OUT2 + offs, ((s1) + acc) & 0xFFFF, mask=mask & (offs % 3 != 0))
                t1 = (18 + offs) & 0xFFFF
                w5 += 1
            w6 = R1 * 0
            while w6 < R1 + 0:
                s0 = (s1 ^ R1) & 0xFFFF
                t0 = ((((t1 + offs) & 0xFFFF) + (t0)) & 0xFFFF) ^ (((t0) * 6) & 0xFFFF)
                w6 += 1
        if s1 > 127:
            if s0 > 45:
                s0 = (tl.sum(t1 & 0xFF, axis=0) + pid) & 0xFFFF
                acc = t0
            else:
                t0 = tl.maximum(((t0) * 2) & 0xFFFF, t1)
                acc = tl.load(Y + offs, mask=offs < N - 2, other=2)
                tl.store(OUT2 + offs, (tl.maximum(acc, t0)) ^ (((acc) + ((x + offs) & 0xFFFF)) & 0xFFFF), mask=mask & (offs % 4 != 1))
            t1, t0 = helper_2(tl.maximum(y, ((t1) & 0x3FF)), s0, C1 == 2)
            if C0 and C1 == 1:
                s1 = (s0 + 8) & 0xFFFF
                tl.store(OUT2 + offs, ((((45) + (x)) & 0xFFFF) * 3) & 0xFFFF, mask=mask & (offs % 2 != 0))
                s0 = tl.max(acc, axis=0)
            else:
                t0 = (s0 + offs) & 0xFFFF
        else:
            t1, t0 = helper_3(acc, s0, not C0)
            if (R0 & 2) == 0:
                t0 = tl.load(Y + offs, mask=offs < N - 16, other=0)
                acc = tl.load(Y + offs, mask=offs < N - 6, other=3)
                tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
                return
            tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
            return
        t1, t0 = helper_4(((tl.where((acc) > (x), (acc), (x) + 1) & 0xFFFF) + (tl.maximum(x, y))) & 0xFFFF, s1, C0)
    t0 = ((((t0) + (t0)) & 0xFFFF) * 5) & 0xFFFF
    if s0 % 3 == 1:
        return
    t1 = (((s1 + offs) & 0xFFFF) + (t0)) & 0xFFFF
    t1 = tl.maximum(tl.where((y) > (acc), (y), (acc) + 1) & 0xFFFF, (t1) ^ (40))
    tl.store(OUT2 + offs, tl.maximum(39, ((s1) - (x)) & 0xFFFF), mask=mask & (offs % 2 != 1))
    tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
