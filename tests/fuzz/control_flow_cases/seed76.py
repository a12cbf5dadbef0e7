# {"seed": 76, "runs": [{"C0": true, "C1": 2, "R0": 78, "R1": 3}, {"C0": true, "C1": 0, "R0": 123, "R1": 0}, {"C0": true, "C1": 1, "R0": 247, "R1": 1}], "found": "run {'C0': True, 'C1': 2, 'R0': 78, 'R1': 3}: zetile raised CompilationError: at /tmp/zt-cf-fuzz-90s12jgh/case76_zetile.py:9:9 in helper_0:\n            if k % 2 == 0:\n            ^\nboth branches must return a value, or neither", "front_end": "d4e441b, before the early-return fix"}
@triton.jit
def helper_0(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    a = (a ^ b) & 0xFFFF
    a = (a ^ b) & 0xFFFF
    if (F + 1) == 0 or F:
        if k % 2 == 0:
            return (a + 8) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_1(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if tl.sum(a & 3, axis=0) > 13:
        if k % 2 == 1:
            return (a + 2) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    if (F + 1) == 2:
        if k % 2 == 1:
            return (a + 8) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_2(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    a = (a ^ b) & 0xFFFF
    if k > 50:
        if k % 2 == 1:
            return (a + 8) & 0xFFFF, b
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
        if C1 == 2:
            for i1 in range(0, 3):
                t0 = (t0 + i1 * 2) & 0xFFFF
                s0 = tl.max(t1, axis=0)
        else:
            for i2 in tl.static_range(3):
                t1 = (acc + i2 * 3) & 0xFFFF
                t1 = tl.maximum(tl.where((acc) > (t1), (acc), (t1) + 1) & 0xFFFF, tl.maximum((acc + offs) & 0xFFFF, (32 + offs) & 0xFFFF))
                t0 = t1
                s1 = tl.load(X + (pid * 3 + 1) % N)
            t1 = tl.load(Y + offs, mask=offs < N - 5, other=0)
            t1 = tl.load(Y + offs, mask=offs < N - 19, other=0)
        acc, t1 = helper_0(acc, s1, C1 > 0)
        w0 += 1
    acc, t1 = helper_1(((tl.where((t0) > (acc), (t0), (acc) + 1) & 0xFFFF) & 0xF0F), s0, C0 and C1 == 1)
    if C1 > 0:
        tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
        return
    t1, t0 = helper_2(acc, s1, C1 == 2)
    tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
