# {"seed": 62, "runs": [{"C0": false, "C1": 1, "R0": 193, "R1": 3}, {"C0": false, "C1": 0, "R0": 226, "R1": 2}, {"C0": true, "C1": 1, "R0": 224, "R1": 3}], "found": "run {'C0': False, 'C1': 0, 'R0': 226, 'R1': 2}: OUT differs at 50 of 50 elements, first at 0: triton 3205, zetile 0", "front_end": "d4e441b, before the early-return fix"}
@triton.jit
def helper_0(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if tl.sum(a & 3, axis=0) > 26:
        if k % 2 == 1:
            return (a + 5) & 0xFFFF, b
        b = (b + a) & 0xFFFF
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
    tl.store(OUT2 + offs, (((((t1 + offs) & 0xFFFF) - (t0)) & 0xFFFF) - (tl.where((t0) > (t0), (t0), (t0) + 1) & 0xFFFF)) & 0xFFFF, mask=mask & (offs % 2 != 1))
    if C1 == 0 or C0:
        if s1 % 4 == 0:
            for i0 in range(1, 3):
                t0 = (acc + i0 * 3) & 0xFFFF
                tl.store(OUT2 + offs, t1, mask=mask & (offs % 4 != 1))
                acc = y
            w1 = R1 * 0
            while w1 < R1 + 1:
                t1 = tl.where((t0) > (tl.where(((s1 + offs) & 0xFFFF) > (acc), ((s1 + offs) & 0xFFFF), (acc) + 1) & 0xFFFF), (t0), (tl.where(((s1 + offs) & 0xFFFF) > (acc), ((s1 + offs) & 0xFFFF), (acc) + 1) & 0xFFFF) + 1) & 0xFFFF
                t1 = (((y) * 4) & 0xFFFF) ^ (s1)
                w1 += 1
            acc = ((((x) - (t1)) & 0xFFFF) + (((t1) + (s1)) & 0xFFFF)) & 0xFFFF
            tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
            return
    else:
        t0 = tl.load(Y + offs, mask=offs < N - 19, other=1)
    t0, t1 = helper_0(tl.maximum(((acc) - ((y + offs) & 0xFFFF)) & 0xFFFF, ((y) * 3) & 0xFFFF), s1, C0 and C1 == 1)
    tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
