# {"seed": 4, "runs": [{"C0": true, "C1": 1, "R0": 279, "R1": 3}, {"C0": false, "C1": 2, "R0": 188, "R1": 0}, {"C0": true, "C1": 0, "R0": 94, "R1": 1}], "found": "run {'C0': True, 'C1': 1, 'R0': 279, 'R1': 3}: zetile raised CompilationError: at /tmp/zt-cf-fuzz-90s12jgh/case4_zetile.py:23:9 in helper_1:\n            if k % 2 == 0:\n            ^\nboth branches must return a value, or neither", "front_end": "d4e441b, before the early-return fix"}
@triton.jit
def helper_0(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if F:
        return b, (a * 3) & 0xFFFF
    if k > 62:
        if k % 2 == 0:
            return (a + 5) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_1(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if k > 128:
        if k % 2 == 0:
            return (a + 6) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    if (F + 1) == 2:
        if k % 2 == 0:
            return (a + 6) & 0xFFFF, b
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
    if pid == 3:
        tl.store(OUT2 + offs, ((acc) - (((acc) & 0xF0F))) & 0xFFFF, mask=mask & (offs % 2 != 1))
        tl.store(OUT2 + offs, y, mask=mask & (offs % 4 != 1))
    else:
        if pid == 2:
            if s1 % 4 == 0:
                t0 = ((x) * 6) & 0xFFFF
                acc = tl.load(Y + offs, mask=offs < N - 10, other=3)
                return
        else:
            t0, acc = helper_0(tl.where((t0) > (((t0) & 0x3FF)), (t0), (((t0) & 0x3FF)) + 1) & 0xFFFF, s0, C1 == 2)
            acc, t0 = helper_1(tl.maximum(((x) - (14)) & 0xFFFF, acc), s0, C0 and C1 == 1)
            tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
            return
        if C1 == 2:
            s1 = (s0 * 3 + R0) & 0xFFFF
            tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
            return
        else:
            for i0 in tl.static_range(1):
                acc = (t0 + i0 * 2) & 0xFFFF
                acc = ((tl.maximum((s1 + offs) & 0xFFFF, t0)) - (tl.maximum(t0, s0))) & 0xFFFF
    tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
