# {"seed": 50, "runs": [{"C0": false, "C1": 2, "R0": 145, "R1": 3}, {"C0": true, "C1": 1, "R0": 128, "R1": 0}, {"C0": true, "C1": 0, "R0": 293, "R1": 0}], "found": "run {'C0': False, 'C1': 2, 'R0': 145, 'R1': 3}: zetile raised CompilationError: at /tmp/zt-cf-fuzz-90s12jgh/case50_zetile.py:7:9 in helper_0:\n            if k % 2 == 0:\n            ^\nboth branches must return a value, or neither", "front_end": "d4e441b, before the early-return fix"}
@triton.jit
def helper_0(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if (F + 1) == 2:
        if k % 2 == 0:
            return (a + 2) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    if tl.sum(a & 3, axis=0) > 29:
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
    if s0 > 177:
        if pid == 2:
            acc, t1 = helper_0(((tl.where((t1) > (y), (t1), (y) + 1) & 0xFFFF) * 7) & 0xFFFF, s1, not C0)
        else:
            t1 = tl.maximum(((t1) & 0x3FF), ((t0) * 8) & 0xFFFF)
            tl.store(OUT2 + offs, tl.maximum(((acc) & 0xFF), (acc) ^ (x)), mask=mask & (offs % 2 != 1))
            for i0 in range(0, R1):
                t0 = (acc + i0 * 3) & 0xFFFF
                t1 = tl.where((y) > (((6) + (s0)) & 0xFFFF), (y), (((6) + (s0)) & 0xFFFF) + 1) & 0xFFFF
            tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
            return
        s0 = tl.max(t1, axis=0)
    acc = x
    if (R0 & 2) == 0:
        tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
        return
    t0 = (((((s1 + offs) & 0xFFFF) + ((19 + offs) & 0xFFFF)) & 0xFFFF) + (((s1) + (acc)) & 0xFFFF)) & 0xFFFF
    tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
