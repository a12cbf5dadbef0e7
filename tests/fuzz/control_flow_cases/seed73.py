# {"seed": 73, "runs": [{"C0": true, "C1": 0, "R0": 115, "R1": 2}, {"C0": false, "C1": 1, "R0": 209, "R1": 3}, {"C0": false, "C1": 2, "R0": 146, "R1": 1}], "found": "run {'C0': False, 'C1': 1, 'R0': 209, 'R1': 3}: zetile raised CompilationError: at /tmp/zt-cf-fuzz-90s12jgh/case73_zetile.py:7:9 in helper_0:\n            if k % 2 == 0:\n            ^\nboth branches must return a value, or neither", "front_end": "d4e441b, before the early-return fix"}
@triton.jit
def helper_0(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if F:
        if k % 2 == 0:
            return (a + 7) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    if tl.sum(a & 3, axis=0) > 27:
        if k % 2 == 1:
            return (a + 3) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_1(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if (F + 1) == 0 or F:
        if k % 2 == 0:
            return (a + 3) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_2(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if tl.sum(a & 3, axis=0) > 32:
        if k % 2 == 1:
            return (a + 1) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    if F:
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
    t1 = x
    w0 = R1 * 0
    while w0 < R1 + 1:
        t1, acc = helper_0(tl.where((((t1) * 3) & 0xFFFF) > (t0), (((t1) * 3) & 0xFFFF), (t0) + 1) & 0xFFFF, s0, not C0)
        acc, t0 = helper_1(((((46) - (y)) & 0xFFFF) + (t0)) & 0xFFFF, s0, C1 == 2)
        w0 += 1
    if C0:
        tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
        return
    t0, t1 = helper_2(tl.where((tl.where((t1) > ((acc + offs) & 0xFFFF), (t1), ((acc + offs) & 0xFFFF) + 1) & 0xFFFF) > ((t0 + offs) & 0xFFFF), (tl.where((t1) > ((acc + offs) & 0xFFFF), (t1), ((acc + offs) & 0xFFFF) + 1) & 0xFFFF), ((t0 + offs) & 0xFFFF) + 1) & 0xFFFF, s1, C0 and C1 == 1)
    tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
