# {"seed": 55, "runs": [{"C0": false, "C1": 0, "R0": 58, "R1": 2}, {"C0": false, "C1": 2, "R0": 35, "R1": 3}, {"C0": true, "C1": 1, "R0": 192, "R1": 1}], "found": "run {'C0': False, 'C1': 0, 'R0': 58, 'R1': 2}: zetile raised CompilationError: at /tmp/zt-cf-fuzz-90s12jgh/case55_zetile.py:7:9 in helper_0:\n            if k % 2 == 1:\n            ^\nboth branches must return a value, or neither", "front_end": "d4e441b, before the early-return fix"}
@triton.jit
def helper_0(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if (F + 1) == 2:
        if k % 2 == 1:
            return (a + 5) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    if tl.sum(a & 3, axis=0) > 18:
        if k % 2 == 1:
            return (a + 8) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_1(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    a = (a ^ b) & 0xFFFF
    if k > 217:
        if k % 2 == 1:
            return (a + 5) & 0xFFFF, b
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
    if not C0:
        if pid == 1:
            t1 = ((35) ^ (s1)) ^ (tl.maximum(t1, t1))
            if C0:
                t1 = (((t0 + offs) & 0xFFFF) - (tl.maximum(acc, s1))) & 0xFFFF
                acc = t0
        t1, acc = helper_0((x) ^ (t0), s0, C1 == 0 or C0)
        if pid == 1:
            if (R0 & 2) == 0:
                t1 = y
                t0 = ((((s1) - (t1)) & 0xFFFF) * 5) & 0xFFFF
                t1 = tl.load(Y + offs, mask=offs < N - 0, other=0)
            if pid >= 2:
                t0 = tl.load(Y + offs, mask=offs < N - 3, other=3)
            acc, t1 = helper_1(y, s1, C1 == 2)
            return
        else:
            t1 = ((tl.where((x) > ((y + offs) & 0xFFFF), (x), ((y + offs) & 0xFFFF) + 1) & 0xFFFF) + ((t0) ^ ((t1 + offs) & 0xFFFF))) & 0xFFFF
            tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
            return
    tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
