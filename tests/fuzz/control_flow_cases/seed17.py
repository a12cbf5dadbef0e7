# {"seed": 17, "runs": [{"C0": false, "C1": 0, "R0": 270, "R1": 2}, {"C0": true, "C1": 1, "R0": 245, "R1": 3}, {"C0": true, "C1": 2, "R0": 90, "R1": 0}], "found": "run {'C0': False, 'C1': 0, 'R0': 270, 'R1': 2}: zetile raised CompilationError: at /tmp/zt-cf-fuzz-90s12jgh/case17_zetile.py:11:9 in helper_0:\n            if k % 2 == 0:\n            ^\nboth branches must return a value, or neither", "front_end": "d4e441b, before the early-return fix"}
@triton.jit
def helper_0(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if tl.sum(a & 3, axis=0) > 10:
        if k % 2 == 0:
            return (a + 6) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    if (F + 1) > 0:
        if k % 2 == 0:
            return (a + 7) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    if k > 59:
        return b, (a * 2) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_1(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    a = (a ^ b) & 0xFFFF
    a = (a ^ b) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_2(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if not F:
        return b, (a * 2) & 0xFFFF
    if tl.sum(a & 3, axis=0) > 36:
        if k % 2 == 1:
            return (a + 8) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_3(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if (F + 1) == 0 or F:
        return b, (a * 4) & 0xFFFF
    a = (a ^ b) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_4(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if not F:
        return b, (a * 4) & 0xFFFF
    if k > 230:
        if k % 2 == 0:
            return (a + 8) & 0xFFFF, b
        b = (b + a) & 0xFFFF
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
    for i0 in range(1, 3):
        acc = (t1 + i0 * 6) & 0xFFFF
        if pid == 0:
            for i1 in range(2, 3):
                t1 = (t0 + i1 * 6) & 0xFFFF
                tl.store(OUT2 + offs, acc, mask=mask & (offs % 4 != 0))
                t0 = tl.load(Y + offs, mask=offs < N - 6, other=8)
                s0 = tl.max(t0, axis=0)
        else:
            acc, t0 = helper_0(tl.maximum(tl.maximum((x + offs) & 0xFFFF, (x + offs) & 0xFFFF), ((t0) * 2) & 0xFFFF), s1, C1 == 2)
            t0 = x
        s1 = tl.max(acc, axis=0)
        w2 = R1 * 0
        while w2 < R1 + 0:
            t1, acc = helper_1(x, s0, not C0)
            w2 += 1
    t0, t1 = helper_2(t1, s0, not C0)
    t0, acc = helper_3(((((5) & 0xFF)) - (((t1) * 6) & 0xFFFF)) & 0xFFFF, s0, C0 and C1 == 1)
    if pid >= 2:
        tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
        return
    acc, t1 = helper_4(acc, s1, C1 == 2)
    if pid >= 1:
        t1 = t0
        if s0 % 2 == 0:
            t1 = tl.load(Y + offs, mask=offs < N - 7, other=0)
            s1 = (s0 + 4) & 0xFFFF
        else:
            s1 = (s0 * 4 + R0) & 0xFFFF
            t1 = (x) ^ (t1)
    else:
        for i3 in range(1, R1 + 2, 2):
            t0 = (t0 + i3 * 2) & 0xFFFF
            acc = tl.load(Y + offs, mask=offs < N - 18, other=4)
        tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
        return
    tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
