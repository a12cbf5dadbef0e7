# {"seed": 23, "runs": [{"C0": false, "C1": 2, "R0": 285, "R1": 1}, {"C0": true, "C1": 2, "R0": 18, "R1": 2}, {"C0": false, "C1": 1, "R0": 270, "R1": 0}], "found": "run {'C0': False, 'C1': 2, 'R0': 285, 'R1': 1}: zetile raised CompilationError: at /tmp/zt-cf-fuzz-90s12jgh/case23_zetile.py:7:9 in helper_0:\n            if k % 2 == 1:\n            ^\nboth branches must return a value, or neither", "front_end": "d4e441b, before the early-return fix"}
@triton.jit
def helper_0(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if (F + 1) > 0:
        if k % 2 == 1:
            return (a + 8) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    if k > 93:
        return b, (a * 4) & 0xFFFF
    if tl.sum(a & 3, axis=0) > 31:
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
    t0 = tl.where((((t1 + offs) & 0xFFFF) ^ (1)) > (tl.where((acc) > ((27 + offs) & 0xFFFF), (acc), ((27 + offs) & 0xFFFF) + 1) & 0xFFFF), (((t1 + offs) & 0xFFFF) ^ (1)), (tl.where((acc) > ((27 + offs) & 0xFFFF), (acc), ((27 + offs) & 0xFFFF) + 1) & 0xFFFF) + 1) & 0xFFFF
    for i0 in range(1, R1 + 2, 2):
        acc = (t1 + i0 * 3) & 0xFFFF
        t1 = tl.load(Y + offs, mask=offs < N - 11, other=5)
        t0, t1 = helper_0(((((s0) * 8) & 0xFFFF) + t0) & 0xFFFF, s0, C1 == 2)
        tl.store(OUT2 + offs, t1, mask=mask & (offs % 2 != 1))
    tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
