# {"seed": 42, "runs": [{"C0": false, "C1": 0, "R0": 144, "R1": 2}, {"C0": true, "C1": 1, "R0": 270, "R1": 2}, {"C0": false, "C1": 1, "R0": 218, "R1": 1}], "found": "run {'C0': True, 'C1': 1, 'R0': 270, 'R1': 2}: zetile raised CompilationError: at /tmp/zt-cf-fuzz-90s12jgh/case42_zetile.py:7:9 in helper_0:\n            if k % 2 == 0:\n            ^\nboth branches must return a value, or neither", "front_end": "d4e441b, before the early-return fix"}
@triton.jit
def helper_0(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if F:
        if k % 2 == 0:
            return (a + 4) & 0xFFFF, b
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
    t0 = (t1 + offs) & 0xFFFF
    acc, t0 = helper_0(((((s0) + (x)) & 0xFFFF) + (((t1) & 0xF0F))) & 0xFFFF, s0, C1 > 0)
    t0 = (((((35 + offs) & 0xFFFF) & 0x3FF)) + (((y) & 0xF0F))) & 0xFFFF
    tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
