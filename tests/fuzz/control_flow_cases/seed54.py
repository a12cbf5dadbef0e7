# {"seed": 54, "runs": [{"C0": false, "C1": 2, "R0": 73, "R1": 3}, {"C0": false, "C1": 0, "R0": 47, "R1": 1}, {"C0": true, "C1": 2, "R0": 280, "R1": 0}], "found": "run {'C0': True, 'C1': 2, 'R0': 280, 'R1': 0}: zetile raised CompilationError: at /tmp/zt-cf-fuzz-90s12jgh/case54_zetile.py:24:9 in helper_1:\n            if k % 2 == 0:\n            ^\nboth branches must return a value, or neither", "front_end": "d4e441b, before the early-return fix"}
@triton.jit
def helper_0(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    a = (a ^ b) & 0xFFFF
    if k > 254:
        return b, (a * 4) & 0xFFFF
    if tl.sum(a & 3, axis=0) > 20:
        if k % 2 == 0:
            return (a + 2) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_1(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if tl.sum(a & 3, axis=0) > 13:
        if k % 2 == 0:
            return (a + 4) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    if not F:
        if k % 2 == 0:
            return (a + 5) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    if k > 97:
        if k % 2 == 1:
            return (a + 6) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_2(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if tl.sum(a & 3, axis=0) > 18:
        return b, (a * 2) & 0xFFFF
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
        if (R0 & 2) == 0:
            if C1 > 0:
                t1 = tl.load(Y + offs, mask=offs < N - 6, other=3)
                t1 = tl.maximum(y, ((x) * 5) & 0xFFFF)
            for i1 in range(2, 3):
                t0 = (acc + i1 * 2) & 0xFFFF
                t1 = ((((t1) - (s0)) & 0xFFFF) - (t1)) & 0xFFFF
                s1 = (s1 * 3 + R0) & 0xFFFF
                tl.store(OUT2 + offs, y, mask=mask & (offs % 3 != 1))
        else:
            t0, acc = helper_0(tl.maximum(((s1 + offs) & 0xFFFF) ^ (y), ((acc) & 0xF0F)), s0, C1 > 0)
        if s0 > 197:
            t1, t0 = helper_1(((((s1) * 5) & 0xFFFF) + t0) & 0xFFFF, s0, not C0)
            s1 = (s0 * 2 + R0) & 0xFFFF
            t1 = t0
        else:
            if C1 > 0:
                t1 = ((tl.where((t1) > (t0), (t1), (t0) + 1) & 0xFFFF) + (acc)) & 0xFFFF
            else:
                s0 = tl.max(acc, axis=0)
                tl.store(OUT2 + offs, tl.where((((y) & 0x3FF)) > (tl.maximum(t0, (y + offs) & 0xFFFF)), (((y) & 0x3FF)), (tl.maximum(t0, (y + offs) & 0xFFFF)) + 1) & 0xFFFF, mask=mask & (offs % 4 != 0))
                tl.store(OUT2 + offs, t0, mask=mask & (offs % 2 != 1))
            if pid >= 1:
                tl.store(OUT2 + offs, tl.maximum(((x) * 5) & 0xFFFF, x), mask=mask & (offs % 2 != 1))
                t0 = ((tl.where((acc) > (x), (acc), (x) + 1) & 0xFFFF) + (t1)) & 0xFFFF
            t1 = (t1 + offs) & 0xFFFF
        tl.store(OUT2 + offs, tl.where((tl.maximum(acc, 5)) > ((acc) ^ (t0)), (tl.maximum(acc, 5)), ((acc) ^ (t0)) + 1) & 0xFFFF, mask=mask & (offs % 4 != 1))
        w0 += 1
    if s0 > 56:
        tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
        return
    if C0:
        if C1 == 2:
            t1 = tl.load(Y + offs, mask=offs < N - 18, other=8)
            t0 = (t0) ^ (t0)
            tl.store(OUT2 + offs, x, mask=mask & (offs % 3 != 1))
        else:
            acc = tl.load(Y + offs, mask=offs < N - 3, other=7)
        if pid >= 3:
            s0 = (s0 ^ R1) & 0xFFFF
            acc = ((32) + t0) & 0xFFFF
            tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
            return
        else:
            s1 = (s0 + 6) & 0xFFFF
        acc, t1 = helper_2(((y) - (((t1) - (y)) & 0xFFFF)) & 0xFFFF, s0, not C0)
    tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
