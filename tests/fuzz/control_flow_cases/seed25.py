# {"seed": 25, "runs": [{"C0": false, "C1": 1, "R0": 291, "R1": 0}, {"C0": false, "C1": 0, "R0": 265, "R1": 2}, {"C0": false, "C1": 2, "R0": 36, "R1": 1}], "found": "run {'C0': False, 'C1': 2, 'R0': 36, 'R1': 1}: zetile raised CompilationError: at /tmp/zt-cf-fuzz-90s12jgh/case25_zetile.py:17:9 in helper_1:\n            if k % 2 == 0:\n            ^\nboth branches must return a value, or neither", "front_end": "d4e441b, before the early-return fix"}
@triton.jit
def helper_0(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if k > 82:
        return b, (a * 2) & 0xFFFF
    if (F + 1) > 0:
        return b, (a * 4) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_1(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if F:
        if k % 2 == 0:
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
    t0 = (((x + offs) & 0xFFFF) * 8) & 0xFFFF
    t0 = tl.load(Y + offs, mask=offs < N - 16, other=8)
    if C1 == 0 or C0:
        return
    t0, t1 = helper_0(((((t1 + offs) & 0xFFFF) ^ (t0)) * 3) & 0xFFFF, s0, C1 > 0)
    for i0 in range(0, R1):
        t0 = (acc + i0 * 4) & 0xFFFF
        t0, acc = helper_1(t0, s1, C1 == 2)
        if s1 > 127:
            t0 = ((((t0) & 0x3FF)) & 0xF0F)
            t1 = tl.load(Y + offs, mask=offs < N - 1, other=2)
        acc = tl.maximum(s0, (t1 + offs) & 0xFFFF)
    if C0 and C1 == 1:
        tl.store(OUT2 + offs, tl.maximum((t0 + offs) & 0xFFFF, (t0 + offs) & 0xFFFF), mask=mask & (offs % 4 != 0))
        if s1 > 64:
            s1 = (s0 * 4 + R0) & 0xFFFF
            t0 = t0
        else:
            s0 = tl.max(t0, axis=0)
            acc = (((t1 + offs) & 0xFFFF) - ((s0 + offs) & 0xFFFF)) & 0xFFFF
        if s0 > 19:
            t1 = ((((4) * 7) & 0xFFFF) + t1) & 0xFFFF
            tl.store(OUT2 + offs, tl.maximum(t0, (((acc + offs) & 0xFFFF) + (s0)) & 0xFFFF), mask=mask & (offs % 4 != 1))
    tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
