# {"seed": 71, "runs": [{"C0": false, "C1": 1, "R0": 257, "R1": 3}, {"C0": true, "C1": 2, "R0": 30, "R1": 3}, {"C0": false, "C1": 2, "R0": 284, "R1": 1}], "found": "run {'C0': True, 'C1': 2, 'R0': 30, 'R1': 3}: zetile raised CompilationError: at /tmp/zt-cf-fuzz-90s12jgh/case71_zetile.py:21:9 in helper_1:\n            if k % 2 == 0:\n            ^\nboth branches must return a value, or neither", "front_end": "d4e441b, before the early-return fix"}
@triton.jit
def helper_0(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if k > 102:
        if k % 2 == 0:
            return (a + 1) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    if k > 258:
        if k % 2 == 1:
            return (a + 8) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_1(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if not F:
        if k % 2 == 0:
            return (a + 3) & 0xFFFF, b
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
    t1, acc = helper_0(((((acc) - (t0)) & 0xFFFF) + (tl.where((y) > (s1), (y), (s1) + 1) & 0xFFFF)) & 0xFFFF, s0, C0 and C1 == 1)
    tl.store(OUT2 + offs, t0, mask=mask & (offs % 4 != 1))
    if pid >= 1:
        tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
        return
    w0 = R1 * 0
    while w0 < R1 + 1:
        t1, t0 = helper_1(((x) & 0x3FF), s1, not C0)
        if pid >= 1:
            tl.store(OUT2 + offs, ((18) + t0) & 0xFFFF, mask=mask & (offs % 2 != 0))
            t1 = ((((((1) & 0x3FF)) * 6) & 0xFFFF) + t1) & 0xFFFF
        else:
            t1 = tl.load(Y + offs, mask=offs < N - 11, other=7)
            acc = (tl.where((x) > (x), (x), (x) + 1) & 0xFFFF) ^ (x)
        w0 += 1
    if s0 % 4 == 1:
        w1 = R1 * 0
        while w1 < R1 + 1:
            acc = tl.load(Y + offs, mask=offs < N - 15, other=7)
            w1 += 1
        for i2 in tl.static_range(2):
            t0 = (acc + i2 * 5) & 0xFFFF
            t1 = ((((t1) * 3) & 0xFFFF) - (acc)) & 0xFFFF
        s1 = tl.load(X + (pid * 1 + 0) % N)
        return
    else:
        if s1 % 2 == 1:
            t1 = ((tl.maximum(19, t0)) - (tl.where((x) > (t1), (x), (t1) + 1) & 0xFFFF)) & 0xFFFF
            t0 = tl.maximum((((41 + offs) & 0xFFFF) - (t1)) & 0xFFFF, (((s1 + offs) & 0xFFFF) & 0x3FF))
        w3 = R1 * 0
        while w3 < R1 + 0:
            t1 = tl.load(Y + offs, mask=offs < N - 13, other=4)
            acc = (s0 + offs) & 0xFFFF
            acc = acc
            w3 += 1
        return
    tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
