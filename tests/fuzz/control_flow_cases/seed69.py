# {"seed": 69, "runs": [{"C0": false, "C1": 2, "R0": 93, "R1": 0}, {"C0": false, "C1": 1, "R0": 152, "R1": 1}, {"C0": true, "C1": 2, "R0": 289, "R1": 3}], "found": "run {'C0': False, 'C1': 2, 'R0': 93, 'R1': 0}: zetile raised CompilationError: at /tmp/zt-cf-fuzz-90s12jgh/case69_zetile.py:34:9 in helper_3:\n            if k % 2 == 0:\n            ^\nboth branches must return a value, or neither", "front_end": "d4e441b, before the early-return fix"}
@triton.jit
def helper_0(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    a = (a ^ b) & 0xFFFF
    if tl.sum(a & 3, axis=0) > 27:
        return b, (a * 3) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_1(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    a = (a ^ b) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_2(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if (F + 1) == 2:
        if k % 2 == 0:
            return (a + 4) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    a = (a ^ b) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_3(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if not F:
        if k % 2 == 0:
            return (a + 1) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    if not F:
        if k % 2 == 1:
            return (a + 3) & 0xFFFF, b
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
    acc = y
    t0, t1 = helper_0(((s0) + acc) & 0xFFFF, s0, not C0)
    if pid >= 3:
        acc, t1 = helper_1(((y) - ((acc + offs) & 0xFFFF)) & 0xFFFF, s1, not C0)
        w0 = R1 * 0
        while w0 < R1 + 0:
            s1 = tl.load(X + (pid * 4 + 0) % N)
            if pid == 0:
                s1 = (tl.sum(t1 & 0xFF, axis=0) + pid) & 0xFFFF
                t1 = ((t1) & 0xF0F)
            else:
                t1 = ((((acc) * 5) & 0xFFFF) + (((t0) - (t1)) & 0xFFFF)) & 0xFFFF
                t1 = (((38) ^ ((y + offs) & 0xFFFF)) & 0xFF)
                tl.store(OUT2 + offs, ((s1) + t0) & 0xFFFF, mask=mask & (offs % 4 != 1))
            if C0:
                s0 = (s0 ^ R1) & 0xFFFF
            w0 += 1
        if pid >= 1:
            if C1 == 2:
                tl.store(OUT2 + offs, ((s1) - (tl.maximum(s1, t1))) & 0xFFFF, mask=mask & (offs % 2 != 1))
                s0 = tl.max(t1, axis=0)
                acc = tl.load(Y + offs, mask=offs < N - 19, other=7)
            else:
                acc = (((y + offs) & 0xFFFF) + (((19) - (s1)) & 0xFFFF)) & 0xFFFF
            if (R0 & 2) == 0:
                acc = tl.load(Y + offs, mask=offs < N - 0, other=4)
                t1 = ((19) + acc) & 0xFFFF
                return
            else:
                acc = (((((x + offs) & 0xFFFF) - (t0)) & 0xFFFF) + (17)) & 0xFFFF
                t0 = (x + offs) & 0xFFFF
    if C0:
        tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
        return
    t1 = ((y) * 7) & 0xFFFF
    w1 = R1 * 0
    while w1 < R1 + 0:
        if pid == 1:
            s0 = tl.load(X + (pid * 4 + 1) % N)
        else:
            t0 = t1
            s0 = (s0 * 3 + R0) & 0xFFFF
            acc = tl.load(Y + offs, mask=offs < N - 12, other=4)
        w1 += 1
    if s1 > 23:
        if C1 == 2:
            acc = ((29) + t1) & 0xFFFF
            s0 = (s1 ^ R1) & 0xFFFF
            t0 = tl.load(Y + offs, mask=offs < N - 12, other=5)
    else:
        t0, acc = helper_2((acc + offs) & 0xFFFF, s0, C1 == 0 or C0)
        t1, t0 = helper_3(t1, s1, C0 and C1 == 1)
    tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
