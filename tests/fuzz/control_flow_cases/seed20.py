# {"seed": 20, "runs": [{"C0": false, "C1": 0, "R0": 119, "R1": 1}, {"C0": true, "C1": 2, "R0": 59, "R1": 1}, {"C0": false, "C1": 1, "R0": 268, "R1": 3}], "found": "run {'C0': True, 'C1': 2, 'R0': 59, 'R1': 1}: zetile raised CompilationError: at /tmp/zt-cf-fuzz-90s12jgh/case20_zetile.py:7:9 in helper_0:\n            if k % 2 == 1:\n            ^\nboth branches must return a value, or neither", "front_end": "d4e441b, before the early-return fix"}
@triton.jit
def helper_0(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if F:
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
    tl.store(OUT2 + offs, (((acc) ^ ((acc + offs) & 0xFFFF)) * 4) & 0xFFFF, mask=mask & (offs % 4 != 0))
    for i0 in range(R1, 0, -1):
        t0 = (t0 + i0 * 1) & 0xFFFF
        acc, t1 = helper_0(((acc) + (t1)) & 0xFFFF, s1, C1 == 2)
    t1 = tl.load(Y + offs, mask=offs < N - 10, other=7)
    tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
