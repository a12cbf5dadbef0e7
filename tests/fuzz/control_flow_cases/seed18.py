# {"seed": 18, "runs": [{"C0": false, "C1": 0, "R0": 239, "R1": 2}, {"C0": true, "C1": 1, "R0": 144, "R1": 0}, {"C0": true, "C1": 0, "R0": 268, "R1": 0}], "found": "run {'C0': True, 'C1': 1, 'R0': 144, 'R1': 0}: zetile raised CompilationError: at /tmp/zt-cf-fuzz-90s12jgh/case18_zetile.py:18:9 in helper_1:\n            if k % 2 == 1:\n            ^\nboth branches must return a value, or neither", "front_end": "d4e441b, before the early-return fix"}
@triton.jit
def helper_0(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if tl.sum(a & 3, axis=0) > 27:
        if k % 2 == 1:
            return (a + 3) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    a = (a ^ b) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_1(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if (F + 1) > 0:
        if k % 2 == 1:
            return (a + 3) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    a = (a ^ b) & 0xFFFF
    if k > 138:
        return b, (a * 4) & 0xFFFF
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
    t0 = ((41) + t0) & 0xFFFF
    if not C0:
        tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
        return
    t1 = ((acc) * 5) & 0xFFFF
    if C1 == 0 or C0:
        t0, t1 = helper_0(tl.maximum((acc) ^ (s0), ((t1) & 0x3FF)), s1, C0)
        w0 = R1 * 0
        while w0 < R1 + 1:
            acc = t1
            w0 += 1
    acc, t1 = helper_1(tl.maximum(y, ((t0) & 0xFF)), s1, C0)
    tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
