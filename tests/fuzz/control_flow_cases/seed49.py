# {"seed": 49, "runs": [{"C0": true, "C1": 0, "R0": 269, "R1": 1}, {"C0": false, "C1": 0, "R0": 17, "R1": 0}, {"C0": false, "C1": 1, "R0": 23, "R1": 3}], "found": "run {'C0': False, 'C1': 0, 'R0': 17, 'R1': 0}: zetile raised CompilationError: at /tmp/zt-cf-fuzz-90s12jgh/case49_zetile.py:7:9 in helper_0:\n            if k % 2 == 1:\n            ^\nboth branches must return a value, or neither", "front_end": "d4e441b, before the early-return fix"}
@triton.jit
def helper_0(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if (F + 1) == 0 or F:
        if k % 2 == 1:
            return (a + 1) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    if k > 146:
        return b, (a * 3) & 0xFFFF
    if not F:
        return b, (a * 2) & 0xFFFF
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
        t1, acc = helper_0(tl.maximum(tl.where((y) > (s0), (y), (s0) + 1) & 0xFFFF, tl.maximum(t1, t1)), s1, not C0)
        w0 = R1 * 0
        while w0 < R1 + 1:
            if s1 > 156:
                t0 = tl.load(Y + offs, mask=offs < N - 12, other=8)
                acc = (t0 + offs) & 0xFFFF
            w0 += 1
    else:
        t0 = ((11) + t0) & 0xFFFF
        t0 = ((tl.maximum(t1, acc)) & 0x3FF)
        tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
        return
    tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
