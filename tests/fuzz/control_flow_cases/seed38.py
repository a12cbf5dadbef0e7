# {"seed": 38, "runs": [{"C0": true, "C1": 1, "R0": 266, "R1": 1}, {"C0": false, "C1": 1, "R0": 131, "R1": 0}, {"C0": true, "C1": 0, "R0": 62, "R1": 0}], "found": "run {'C0': True, 'C1': 1, 'R0': 266, 'R1': 1}: zetile raised CompilationError: at /tmp/zt-cf-fuzz-90s12jgh/case38_zetile.py:8:9 in helper_0:\n            if k % 2 == 1:\n            ^\nboth branches must return a value, or neither", "front_end": "d4e441b, before the early-return fix"}
@triton.jit
def helper_0(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    a = (a ^ b) & 0xFFFF
    if (F + 1) > 0:
        if k % 2 == 1:
            return (a + 8) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    a = (a ^ b) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_1(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if not F:
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
    for i0 in range(0, R1):
        acc = (t0 + i0 * 6) & 0xFFFF
        if pid == 1:
            if s1 > 181:
                t1 = tl.load(Y + offs, mask=offs < N - 15, other=6)
                s0 = tl.load(X + (pid * 4 + 0) % N)
            else:
                t1 = (((acc) - ((x + offs) & 0xFFFF)) & 0xFFFF) ^ (((acc) * 5) & 0xFFFF)
            w1 = R1 * 0
            while w1 < R1 + 0:
                tl.store(OUT2 + offs, (((y + offs) & 0xFFFF) - ((t0) ^ (acc))) & 0xFFFF, mask=mask & (offs % 3 != 1))
                s0 = (s1 ^ R1) & 0xFFFF
                w1 += 1
            if C1 > 0:
                tl.store(OUT2 + offs, t1, mask=mask & (offs % 4 != 0))
            else:
                s1 = (tl.sum(acc & 0xFF, axis=0) + pid) & 0xFFFF
                t1 = ((45) ^ (t0)) ^ (x)
        else:
            acc, t0 = helper_0(((s0) + t0) & 0xFFFF, s1, not C0)
            acc = (x + offs) & 0xFFFF
            t0 = tl.load(Y + offs, mask=offs < N - 3, other=0)
        for i2 in range(R1, 0, -1):
            t0 = (t0 + i2 * 6) & 0xFFFF
            if not C0:
                acc = ((((x) + (t1)) & 0xFFFF) + ((s1) ^ (x))) & 0xFFFF
                t1 = tl.where((((t1) - (y)) & 0xFFFF) > ((41) ^ (x)), (((t1) - (y)) & 0xFFFF), ((41) ^ (x)) + 1) & 0xFFFF
                s1 = (s1 * 3 + R0) & 0xFFFF
    t0, acc = helper_1(((tl.where((acc) > (x), (acc), (x) + 1) & 0xFFFF) & 0xF0F), s0, C0)
    tl.store(OUT2 + offs, ((((((46) - (33)) & 0xFFFF) & 0xFF)) + t1) & 0xFFFF, mask=mask & (offs % 3 != 0))
    tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
