# {"seed": 77, "runs": [{"C0": false, "C1": 2, "R0": 166, "R1": 3}, {"C0": true, "C1": 1, "R0": 94, "R1": 0}, {"C0": false, "C1": 0, "R0": 52, "R1": 3}], "found": "run {'C0': False, 'C1': 2, 'R0': 166, 'R1': 3}: zetile raised CompilationError: at /tmp/zt-cf-fuzz-90s12jgh/case77_zetile.py:48:9 in helper_3:\n            if k % 2 == 1:\n            ^\nboth branches must return a value, or neither", "front_end": "d4e441b, before the early-return fix"}
@triton.jit
def helper_0(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if (F + 1) > 0:
        return b, (a * 4) & 0xFFFF
    if k > 112:
        return b, (a * 3) & 0xFFFF
    if k > 196:
        if k % 2 == 0:
            return (a + 1) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_1(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if k > 175:
        if k % 2 == 1:
            return (a + 2) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    if tl.sum(a & 3, axis=0) > 12:
        if k % 2 == 0:
            return (a + 1) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_2(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if not F:
        return b, (a * 4) & 0xFFFF
    if tl.sum(a & 3, axis=0) > 30:
        return b, (a * 3) & 0xFFFF
    a = (a ^ b) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_3(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    a = (a ^ b) & 0xFFFF
    a = (a ^ b) & 0xFFFF
    if (F + 1) == 0 or F:
        if k % 2 == 1:
            return (a + 8) & 0xFFFF, b
        b = (b + a) & 0xFFFF
    return a, (a + b) & 0xFFFF


@triton.jit
def helper_4(a, k, F: tl.constexpr):
    b = (a * 3 + k) & 0xFFFF
    if k > 187:
        return b, (a * 4) & 0xFFFF
    a = (a ^ b) & 0xFFFF
    if F and (F + 1) == 1:
        if k % 2 == 1:
            return (a + 7) & 0xFFFF, b
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
    if pid >= 1:
        t1 = (((t0 + offs) & 0xFFFF) + (((acc) + (s0)) & 0xFFFF)) & 0xFFFF
    else:
        if not C0:
            acc = ((((acc) + (t1)) & 0xFFFF) & 0x3FF)
        else:
            acc, t0 = helper_0(tl.where((y) > (((x) & 0x3FF)), (y), (((x) & 0x3FF)) + 1) & 0xFFFF, s0, not C0)
            if s0 % 2 == 1:
                acc = ((t1 + offs) & 0xFFFF) ^ (8)
                s0 = (tl.sum(t0 & 0xFF, axis=0) + pid) & 0xFFFF
                return
            else:
                acc = (((s1) * 6) & 0xFFFF) ^ ((13 + offs) & 0xFFFF)
                tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
                return
            tl.store(OUT2 + offs, ((((s0 + offs) & 0xFFFF) ^ (s1)) & 0x3FF), mask=mask & (offs % 4 != 0))
        if C1 == 2:
            w0 = R1 * 0
            while w0 < R1 + 0:
                t1 = tl.load(Y + offs, mask=offs < N - 16, other=6)
                t1 = tl.maximum(((x) - (x)) & 0xFFFF, acc)
                acc = tl.load(Y + offs, mask=offs < N - 18, other=8)
                w0 += 1
            acc, t1 = helper_1(((((26) + ((t0 + offs) & 0xFFFF)) & 0xFFFF) & 0xFF), s0, C0)
            return
    t0 = y
    if (R0 & 4) == 0:
        tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
        return
    acc, t0 = helper_2(tl.maximum(((t0) - (acc)) & 0xFFFF, (19) ^ (t1)), s0, C1 == 2)
    if pid >= 1:
        t0, t1 = helper_3(((tl.maximum(t0, (s1 + offs) & 0xFFFF)) + (tl.maximum(x, 44))) & 0xFFFF, s1, C1 == 2)
        if s0 > 89:
            t1 = ((37) + (tl.where((t1) > (acc), (t1), (acc) + 1) & 0xFFFF)) & 0xFFFF
            t1 = tl.maximum((t0 + offs) & 0xFFFF, (((acc + offs) & 0xFFFF) * 5) & 0xFFFF)
            tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
            return
        else:
            t1 = tl.load(Y + offs, mask=offs < N - 1, other=2)
            tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
            return
        tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
        return
    else:
        t1, acc = helper_4(((acc) * 5) & 0xFFFF, s1, C1 == 0 or C0)
        if pid >= 1:
            s0 = tl.load(X + (pid * 1 + 1) % N)
        for i1 in tl.static_range(3):
            t1 = (acc + i1 * 3) & 0xFFFF
            s0 = (s1 ^ R1) & 0xFFFF
            t0 = ((s1) + acc) & 0xFFFF
        return
    t0 = (((((33 + offs) & 0xFFFF) & 0x3FF)) * 5) & 0xFFFF
    tl.store(OUT + offs, (acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF, mask=mask)
