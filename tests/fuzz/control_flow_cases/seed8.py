# {"seed": 8, "runs": [{"C0": false, "C1": 0, "R0": 118, "R1": 1}, {"C0": false, "C1": 2, "R0": 44, "R1": 3}, {"C0": true, "C1": 0, "R0": 50, "R1": 2}], "found": "run {'C0': False, 'C1': 0, 'R0': 118, 'R1': 1}: zetile raised CompilationError: at /tmp/zt-cf-fuzz-90s12jgh/case8_zetile.py:7:9 in helper_0:\n            if k % 2 == 0:\n            ^\nboth branches must return a value, or neither", "front_end": "d4e441b, before the early-return fix"}
@triton.jit
def helper_0(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if (F + 1) == 2:
        if k % 2 == 0:
            return (a + 8) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    if k > 297:
        return b, (a * 4) & 0xFFFF
    if F and (F + 1) == 1:
        return b, (a * 3) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_1(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if k > 225:
        return b, (a * 2) & 0xFFFF
    a = (a ^ b) & 0xFFFF
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
    if (R0 & 1) == 0:
        acc = (((s0) - (25)) & 0xFFFF) ^ ((s0) ^ (t1))
    else:
        if pid == 0:
            t0, acc = helper_0(((47) + (tl.maximum(y, (s0 + offs) & 0xFFFF))) & 0xFFFF, s1, C1 == 0 or C0)
            if (R0 & 4) == 0:
                t0 = ((((t1) + (t0)) & 0xFFFF) * 5) & 0xFFFF
                s1 = (tl.sum(t1 & 0xFF, axis=0) + pid) & 0xFFFF
                t1 = ((t0 + offs) & 0xFFFF) ^ (tl.maximum(s1, (s0 + offs) & 0xFFFF))
            else:
                s0 = (s0 + 6) & 0xFFFF
                return
        else:
            acc = (((t1) + (y)) & 0xFFFF) ^ ((((14 + offs) & 0xFFFF) * 5) & 0xFFFF)
            t1 = ((10) + acc) & 0xFFFF
            t1, t0 = helper_1(((acc) + (t1)) & 0xFFFF, s1, C1 > 0)
    tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
