# {"seed": 30, "runs": [{"C0": false, "C1": 2, "R0": 218, "R1": 2}, {"C0": true, "C1": 2, "R0": 35, "R1": 2}, {"C0": false, "C1": 0, "R0": 193, "R1": 2}], "found": "run {'C0': True, 'C1': 2, 'R0': 35, 'R1': 2}: zetile raised CompilationError: at /tmp/zt-cf-fuzz-90s12jgh/case30_zetile.py:22:9 in helper_2:\n            if k % 2 == 0:\n            ^\nboth branches must return a value, or neither", "front_end": "d4e441b, before the early-return fix"}
@triton.jit
def helper_0(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if k > 271:
        return b, (a * 4) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_1(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    a = (a ^ b) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_2(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if F:
        if k % 2 == 0:
            return (a + 8) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    a = (a ^ b) & 0xFFFF
    if k > 294:
        return b, (a * 3) & 0xFFFF
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
    if s0 % 4 == 0:
        t1 = (t0 + offs) & 0xFFFF
        acc, t1 = helper_0(((tl.maximum(s0, x)) + (x)) & 0xFFFF, s1, C1 == 2)
        tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
        return
    else:
        t1 = (tl.maximum((s1 + offs) & 0xFFFF, t0)) ^ (((y) + (acc)) & 0xFFFF)
        w0 = R1 * 0
        while w0 < R1 + 0:
            w1 = R1 * 0
            while w1 < R1 + 1:
                tl.store(OUT2 + offs, (((x) ^ (acc)) & 0x3FF), mask=mask & (offs % 4 != 0))
                t1 = t0
                w1 += 1
            acc = ((((x) + (t1)) & 0xFFFF) * 5) & 0xFFFF
            w0 += 1
        t1 = tl.load(Y + offs, mask=offs < N - 12, other=1)
    if pid == 1:
        t0, acc = helper_1((((x) ^ (t0)) - (((t0) + (37)) & 0xFFFF)) & 0xFFFF, s1, C1 > 0)
        for i2 in range(1, R1 + 2, 2):
            t0 = (t1 + i2 * 1) & 0xFFFF
            for i3 in range(1, R1 + 2, 2):
                t1 = (t1 + i3 * 3) & 0xFFFF
                t1 = tl.load(Y + offs, mask=offs < N - 5, other=5)
    else:
        if pid >= 3:
            if C1 == 0 or C0:
                t0 = tl.load(Y + offs, mask=offs < N - 4, other=1)
                t1 = tl.load(Y + offs, mask=offs < N - 10, other=8)
                t0 = ((s1 + offs) & 0xFFFF) ^ (((x) + (t0)) & 0xFFFF)
            else:
                s0 = (tl.sum(acc & 0xFF, axis=0) + pid) & 0xFFFF
        if C0 and C1 == 1:
            tl.store(OUT2 + offs, (t0 + offs) & 0xFFFF, mask=mask & (offs % 4 != 1))
        w4 = R1 * 0
        while w4 < R1 + 1:
            w5 = R1 * 0
            while w5 < R1 + 1:
                acc = (acc + offs) & 0xFFFF
                tl.store(OUT2 + offs, (((((s0 + offs) & 0xFFFF) + (t1)) & 0xFFFF) + (((s1) + ((t0 + offs) & 0xFFFF)) & 0xFFFF)) & 0xFFFF, mask=mask & (offs % 2 != 1))
                w5 += 1
            for i6 in range(R1, 0, -1):
                t1 = (t0 + i6 * 3) & 0xFFFF
                t1 = (t0 + offs) & 0xFFFF
                tl.store(OUT2 + offs, (((t1) + (t0)) & 0xFFFF) ^ (tl.where(((acc + offs) & 0xFFFF) > (y), ((acc + offs) & 0xFFFF), (y) + 1) & 0xFFFF), mask=mask & (offs % 3 != 0))
            if C0 and C1 == 1:
                acc = ((((t0) * 6) & 0xFFFF) - ((((t0 + offs) & 0xFFFF) & 0xF0F))) & 0xFFFF
            else:
                acc = tl.maximum(t1, ((t1) - (acc)) & 0xFFFF)
            w4 += 1
    t0, t1 = helper_2((s0 + offs) & 0xFFFF, s0, C0)
    if (R0 & 1) == 0:
        tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
        return
    s0 = (s1 + 3) & 0xFFFF
    tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
