"""Random kernels with control flow, dots and atomics, checked against numpy
(issue 17; the sibling of numpy_kernels.py, which covers straight-line
elementwise code and reductions).

Each seed gives a kernel over one 2-D tile `acc` (BM x BN, int32 or fp32)
per program, with tails: the tile covers M x N elements of its arrays with
M <= BM and N <= BN chosen at random, every load and store masked. Its body
is a random tree of
  - statements on acc: masked loads of inputs (int8/int16/uint8/int32 into
    int32, fp16/bf16/fp32 into fp32) added, subtracted or max'ed in, weak
    constants, abs, negation, where, the loop variables, the program id, a
    loop-carried scalar `s`;
  - tl.dot on small tiles (16/32): fp32 with input_precision="ieee", fp16
    and bf16 into fp32, int8 into int32, K masked, once or in a K loop,
    `acc += dot(a, b)` or `dot(a, b, acc)`;
  - `for` loops (range/tl.range with run-time bounds and steps, including 0
    trips, and tl.static_range) carrying acc and s;
  - `if`/`else` on a compile-time constant, a run-time scalar argument, the
    program id, a value loaded per program, a loop variable, the carried
    scalar, and (when the numbers are exact) a reduction of acc;
  - `while` loops with a run-time bound (0 trips too), some also stopping on
    a reduction of acc;
and it ends by storing acc, or by an atomic that several programs aim at
the same addresses: atomic_add (int32 exact; fp32 within a tolerance),
atomic_max/min (the result is deterministic), atomic_xchg (each program on
its own tile: the old values are the initial ones; or all on one: the old
values and the final value are a permutation of the initial value and what
the programs wrote), atomic_cas (exactly one program wins each address and
the others see its value), and a ticket counter (atomic_add of 1: the old
values are a permutation). Masked-off elements and a guard past the end of
each output must stay untouched.

The reference runs the same tree in numpy, program by program, on the full
tile (masked-off lanes included, as the kernel computes them: a reduction in
a branch condition sees them). Integers wrap as int32. Floats come in two
kinds: "dyadic" inputs (multiples of 1/4 in [-2, 2]) keep every sum exact
in fp32 while the magnitudes stay below 2**20, so the results must be equal
and branches may depend on the data; "random" inputs (normal, scaled) are
compared within 2**-23 * (R + 2) * mag, where mag is the same computation on
magnitudes (|a| @ |b| for a dot) and R counts the roundings on the way (K
for a dot, P for an atomic sum over P programs); no branch depends on their
values.

    python tests/fuzz/numpy_kernels_cf.py --kernels 200 --seed 1     # a long run
    python tests/fuzz/numpy_kernels_cf.py --seed S --kernels 1 --show  # one kernel
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import random
import sys
import tempfile
import time

import numpy as np

HEADER = "import zetile as triton\nimport zetile.language as tl\n\n\n"
TL = {"int8": "tl.int8", "int16": "tl.int16", "uint8": "tl.uint8", "uint16": "tl.uint16",
      "int32": "tl.int32", "int64": "tl.int64", "uint32": "tl.uint32",
      "float16": "tl.float16", "bfloat16": "tl.bfloat16", "float32": "tl.float32",
      "float64": "tl.float64"}
INTS = ("int8", "int16", "uint8", "uint16", "int32", "int64", "uint32")
PAD = 8          # guard elements after every output array
GUARD_I = -1234567
GUARD_F = -7777.25
GUARD_U = 0xDEADBEEF


def guard_of(k):
    return GUARD_F if k.kind != "int" else GUARD_U if k.dt == "uint32" else GUARD_I


def wrap(x, dt):
    """x (ints, any range) as dtype dt, wrapping; floats as they are."""
    if np.dtype(dt).kind in "iu":
        return np.asarray(x).astype(np.int64).astype(dt)
    return np.asarray(x).astype(dt)
EXACT_LIMIT = 2.0 ** 20   # dyadic (multiples of 1/16 after a dot) sums stay exact below this


def np_dtype(name):
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


# ------------------------------------------------------------------ the tree
class St:
    """One program's state in the reference."""

    def __init__(self, k, p, data):
        self.k, self.p, self.d = k, p, data
        dt = np.dtype(k.dt) if k.kind == "int" else np.float64
        self.acc = np.zeros((k.BM, k.BN), dt)
        self.mag = np.zeros((k.BM, k.BN))
        self.R = 0
        self.s = int(data["S0"])
        self.vars = {}
        self.sums, self.maxes, self.count = [], [], 0   # atomics inside the tree
        self.returned = False

    def full(self, arr):
        """A masked load: the M x N block in a BM x BN tile of zeros."""
        k = self.k
        t = np.zeros((k.BM, k.BN), arr.dtype)
        t[:k.M, :k.N] = arr
        return t


class Returned(Exception):
    """An early `return` in the reference."""


class Node:
    pass


class Op(Node):
    """A statement; text: kernel lines; fn(st): the reference."""

    def __init__(self, lines, fn):
        self.lines, self.fn = lines, fn

    def emit(self, ind):
        return [ind + line for line in self.lines]

    def run(self, st):
        self.fn(st)


class Block(Node):
    def __init__(self, items):
        self.items = items

    def emit(self, ind):
        out = []
        for it in self.items:
            out += it.emit(ind)
        return out or [ind + "pass"]

    def run(self, st):
        for it in self.items:
            it.run(st)


class For(Node):
    def __init__(self, var, kind, lo, hi_text, hi_fn, step, body):
        self.var, self.kind, self.lo, self.hi_text, self.hi_fn = var, kind, lo, hi_text, hi_fn
        self.step, self.body = step, body

    def emit(self, ind):
        if self.kind == "static_range":
            head = f"for {self.var} in tl.static_range({self.hi_text}):"
        else:
            fn = "range" if self.kind == "range" else "tl.range"
            head = f"for {self.var} in {fn}({self.lo}, {self.hi_text}, {self.step}):"
        return [ind + head] + self.body.emit(ind + "    ")

    def run(self, st):
        lo, step = (0, 1) if self.kind == "static_range" else (self.lo, self.step)
        for i in range(lo, self.hi_fn(st), step):
            st.vars[self.var] = i
            self.body.run(st)
        st.vars.pop(self.var, None)


class While(Node):
    def __init__(self, var, hi_text, hi_fn, step, cond, body):
        self.var, self.hi_text, self.hi_fn, self.step = var, hi_text, hi_fn, step
        self.cond, self.body = cond, body   # cond: None or (text, fn) on acc

    def emit(self, ind):
        c = f"{self.var} < {self.hi_text}"
        if self.cond:
            c = f"({c}) & ({self.cond[0]})"
        return ([ind + f"{self.var} = 0", ind + f"while {c}:"] + self.body.emit(ind + "    ") +
                [ind + f"    {self.var} += {self.step}"])

    def run(self, st):
        j = 0
        st.vars[self.var] = j
        while j < self.hi_fn(st) and (self.cond is None or self.cond[1](st)):
            self.body.run(st)
            j += self.step
            st.vars[self.var] = j
        st.vars.pop(self.var, None)


class If(Node):
    def __init__(self, cond, then, other):
        self.cond, self.then, self.other = cond, then, other

    def emit(self, ind):
        out = [ind + f"if {self.cond[0]}:"] + self.then.emit(ind + "    ")
        if self.other is not None:
            out += [ind + "else:"] + self.other.emit(ind + "    ")
        return out

    def run(self, st):
        (self.then if self.cond[1](st) else self.other or Block([])).run(st)


# ---------------------------------------------------------------- generator
class Kernel:
    def __init__(self, seed):
        self.seed = seed
        r = self.r = random.Random(seed)
        self.dt = r.choice(["int32", "int32", "float32", "float32", "int64", "uint32", "float64"])
        self.kind = "int" if self.dt in INTS else r.choice(["dyadic", "dyadic", "random"])
        self.unsigned = self.dt == "uint32"
        # dots into int32 (int8 or uint8 operands) and fp32 accumulators only
        self.has_dot = self.dt in ("int32", "float32") and r.random() < 0.5
        if self.has_dot:
            self.BM, self.BN, self.BK = r.choice([16, 32]), r.choice([16, 32]), r.choice([16, 32])
        else:
            self.BM, self.BN, self.BK = r.choice([1, 2, 4, 8, 16]), r.choice([4, 8, 16, 32, 64]), 16
        # tails: at least one dimension short of its block most of the time
        self.M = r.randint(max(1, self.BM // 2), self.BM)
        self.N = r.randint(max(1, self.BN // 2), self.BN - (1 if self.BN > 1 and r.random() < 0.7 else 0))
        self.P0 = r.randint(1, 4)
        self.P1 = r.choice([1, 1, 2])
        self.P = self.P0 * self.P1
        self.TT = 4                       # iterations an input holds per program
        self.inputs = []                  # (name, dtype, kind, shape-kind)
        self.rt = {"S0": r.randint(-3, 3), "S1": r.randint(-3, 5)}   # run-time scalar args
        self.consts = {"C0": r.choice([0, 1, 2]), "C1": r.randint(0, 3)}
        self.loops = 0
        self.n_ops = 0
        self.data_branch = False
        self.tree_atomics = False
        self.final = self.pick_final()
        # Features added later draw from a second stream, so that the first
        # one (and the kernels of earlier seeds) stays as it was.
        self.r2 = random.Random(seed * 7919 + 17)
        self.one_d = not self.has_dot and self.r2.random() < 0.3
        if self.one_d:                   # acc is (BN,): rows is the scalar 0
            self.BM = self.M = 1
        self.returns = 0
        self.body = self.block(0, r.randint(2, 5), [])
        self.sem = r.choice(["", "", ", sem=\"relaxed\"", ", sem=\"acq_rel\""])

    # ----- helpers
    def new_input(self, dtype, kind, shape=None):
        name = f"X{len(self.inputs)}"
        self.inputs.append((name, dtype, kind, shape))
        return name

    def runtime_bound(self):
        name = f"T{len([k for k in self.rt if k.startswith('T')])}"
        self.rt[name] = self.r.choice([0, 1, 2, 3, 4, 4])
        return name

    def pick_final(self):
        r = self.r
        opts = ["store", "store", "atomic_add", "atomic_max", "atomic_min", "xchg_own",
                "cas_scalar", "ticket", "ticket_scalar"]
        if self.kind != "random":
            opts += ["xchg_shared", "cas_tensor"]
        return r.choice(opts)

    def const(self):
        r = self.r
        if self.unsigned:
            return r.choice([1, 2, 3, 5, 100])
        if self.kind == "int":
            return r.choice([1, 2, 3, 5, -1, -4, 100])
        return r.choice([1.0, 2.0, -1.0, 0.5, 3.0, 0.25]) if self.kind == "random" else \
            r.choice([1.0, 2.0, -1.0, 3.0, -2.0])

    # ----- conditions: (text, fn(st))
    def cond(self, scope):
        r = self.r
        opts = ["const", "scalar", "pid", "flag", "s"]
        if scope:
            opts += ["loopvar", "loopvar"]
        if self.kind != "random":
            opts += ["reduce", "reduce"]
        k = r.choice(opts)
        cmp = r.choice([">", "<", ">=", "==", "!="])
        ops = {">": lambda a, b: a > b, "<": lambda a, b: a < b, ">=": lambda a, b: a >= b,
               "==": lambda a, b: a == b, "!=": lambda a, b: a != b}
        f = ops[cmp]
        if k == "const":
            c = r.randint(0, 2)
            return f"C0 {cmp} {c}", lambda st, c=c: f(self.consts["C0"], c)
        if k == "scalar":
            c = r.randint(-2, 3)
            return f"S1 {cmp} {c}", lambda st, c=c: f(st.d["S1"], c)
        if k == "pid":
            c = r.randint(0, 1)
            return f"pid % 2 == {c}", lambda st, c=c: st.p % 2 == c
        if k == "flag":
            return f"tl.load(F + pid) {cmp} 0", lambda st: f(int(st.d["F"][st.p]), 0)
        if k == "s":
            c = r.randint(-2, 4)
            return f"s {cmp} {c}", lambda st, c=c: f(st.s, c)
        if k == "loopvar":
            v = r.choice(scope)
            c = r.randint(0, 2)
            return f"{v} % 3 {cmp} {c}", lambda st, v=v, c=c: f(st.vars[v] % 3, c)
        self.data_branch = True
        red = r.choice(["max", "min", "sum"])
        c = r.choice([0, 1, 3] if self.unsigned else [0, 1, -1, 3])
        npf = {"max": np.max, "min": np.min, "sum": np.sum}[red]

        def fn(st, c=c, npf=npf):
            if red == "sum" and self.kind == "int":
                v = wrap(st.acc.astype(np.int64).sum(), self.dt)   # wraps in the acc dtype
            else:
                v = npf(st.acc)
            return f(v, c)
        return f"tl.{red}(acc) {cmp} {c}", fn

    # ----- statements
    def block(self, depth, n, scope, in_if=False):
        items = []
        for _ in range(n):
            if self.r2.random() < 0.1:
                items.append(self.reduce_op())
            r = self.r.random()
            if depth < 2 and r < 0.2 and self.loops < 4:
                items.append(self.for_loop(depth, scope))
            elif depth < 2 and r < 0.3 and self.loops < 4:
                items.append(self.while_loop(depth, scope))
            elif depth < 2 and r < 0.45:
                items.append(self.if_(depth, scope))
            elif self.has_dot and r < 0.6 and self.n_dots() < 2:
                items.append(self.dot(scope))
            else:
                items.append(self.op(scope))
        if self.has_dot and depth == 0 and self.n_dots() == 0:
            items.insert(self.r.randint(0, len(items)), self.dot(scope))
        if in_if and not scope and self.returns < 2 and self.r2.random() < 0.25:
            # an early return (not inside loops): the program stores nothing
            # after it, its atomics before it stay
            self.returns += 1

            def fn(st):
                raise Returned()
            items.append(Op(["return"], fn))
        return Block(items)

    def reduce_op(self):
        """acc minus its row maxima, or plus its column sums (masked-off
        lanes included, as the kernel has them)."""
        r2 = self.r2
        if self.one_d:
            how = r2.choice(["max", "sum"])
            text = f"acc = acc - tl.{how}(acc)" if how == "max" else "acc = acc + tl.sum(acc) // 2" \
                if self.kind == "int" else "acc = acc + tl.sum(acc) * 0.5"
        else:
            how = r2.choice(["max", "sum"])
            text = "acc = acc - tl.max(acc, axis=1)[:, None]" if how == "max" else \
                ("acc = acc + tl.sum(acc, axis=0)[None, :] // 2" if self.kind == "int" else
                 "acc = acc + tl.sum(acc, axis=0)[None, :] * 0.5")
        unsigned = self.unsigned
        axis = 1 if self.one_d else 0     # 1-D: the whole (1, BN) tile of the reference

        def fn(st, how=how):
            if how == "max":
                m = st.acc.max(axis=1, keepdims=True)
                st.acc = st.acc - m
                st.mag = st.mag + st.mag.max(axis=1, keepdims=True)
                st.R += 1
                return
            if self.kind == "int":
                c = wrap(st.acc.astype(np.int64).sum(axis=axis, keepdims=True), st.acc.dtype)
                if unsigned:
                    h = c // st.acc.dtype.type(2)
                else:   # // rounds toward zero in Triton
                    c = c.astype(np.int64)
                    h = wrap((c - np.fmod(c, 2)) // 2, st.acc.dtype)
                st.acc = st.acc + h
            else:
                st.acc = st.acc + st.acc.sum(axis=axis, keepdims=True) * 0.5
                st.mag = st.mag + st.mag.sum(axis=axis, keepdims=True) * 0.5
                st.R += st.acc.shape[axis] + 1
        return Op([text], fn)

    def n_dots(self):
        return len([i for i in self.inputs if i[2] == "a"])

    def for_loop(self, depth, scope):
        r = self.r
        self.loops += 1
        var = f"i{self.loops}"
        kind = r.choice(["range", "range", "tl.range", "static_range"])
        if kind == "static_range":
            return For(var, kind, 0, "C1", lambda st: self.consts["C1"], 1,
                       self.block(depth + 1, r.randint(1, 3), scope + [var]))
        lo, step = r.choice([0, 0, 1]), r.choice([1, 1, 2])
        t = self.runtime_bound()
        return For(var, kind, lo, t, lambda st, t=t: st.d[t], step,
                   self.block(depth + 1, r.randint(1, 3), scope + [var]))

    def while_loop(self, depth, scope):
        r = self.r
        self.loops += 1
        var = f"j{self.loops}"
        t = self.runtime_bound()
        cond = None
        if self.kind != "random" and r.random() < 0.4:
            self.data_branch = True
            c = r.choice([4, 10, 50])
            cond = (f"tl.max(acc) < {c}", lambda st, c=c: st.acc.max() < c)
        return While(var, t, lambda st, t=t: st.d[t], r.choice([1, 1, 2]), cond,
                     self.block(depth + 1, r.randint(1, 3), scope + [var]))

    def if_(self, depth, scope):
        r = self.r
        c = self.cond(scope)
        then = self.block(depth + 1, r.randint(1, 2), scope, in_if=True)
        other = self.block(depth + 1, r.randint(1, 2), scope) if r.random() < 0.6 else None
        return If(c, then, other)

    def load_text(self, name, it):
        return (f"tl.load({name} + ((pid * {self.TT} + {it}) * M + rows) * N + cols, "
                f"mask=m, other=0)")

    def op(self, scope):
        r = self.r
        self.n_ops += 1
        flt = self.dt == "float32"
        if r.random() < 0.12:
            return self.atomic_in_tree()
        k = r.randrange(10)
        if k <= 2:                                   # a masked load, added in
            xd = r.choice({"float32": ["float32", "float32", "float16", "bfloat16"],
                           "float64": ["float64", "float64", "float32", "float16"],
                           "int32": ["int32", "int32", "int8", "int16", "uint8"],
                           "int64": ["int64", "int64", "int32", "int8", "uint8"],
                           "uint32": ["uint32", "uint32", "uint8", "uint16", "int8"]}[self.dt])
            name = self.new_input(xd, "x")
            if scope and r.random() < 0.8:
                v = r.choice(scope)
                it_text, it_fn = f"({v} % {self.TT})", (lambda st, v=v: st.vars[v] % self.TT)
            else:
                c = r.randrange(self.TT)
                it_text, it_fn = str(c), (lambda st, c=c: c)
            how = r.choice(["+", "-", "max"] if self.kind != "random" else ["+", "-", "+", "max"])
            x = self.load_text(name, it_text)
            if xd != self.dt:
                x += f".to({TL[self.dt]})"
            line = f"acc = tl.maximum(acc, {x})" if how == "max" else f"acc = acc {how} {x}"

            def fn(st, name=name, it_fn=it_fn, how=how):
                x = st.full(st.d[name][st.p, it_fn(st)]).astype(st.acc.dtype)
                ax = np.abs(x.astype(np.float64))
                if how == "max":
                    st.acc = np.maximum(st.acc, x)
                    st.mag = np.maximum(st.mag, ax)
                else:
                    st.acc = st.acc + x if how == "+" else st.acc - x
                    st.mag = st.mag + ax
                    st.R += 1
            return Op([line], fn)
        if k == 3:                                   # a weak constant
            how = r.choice(["+", "-", "*"])
            c = self.const()
            if how == "*" and scope and self.kind != "int":
                c = -1.0                             # inside loops: no growth (exact sums)
            if how == "-" and self.unsigned:
                how = "+"
            if how == "*" and scope and self.kind == "int" and c == 100:
                c = 3

            def fn(st, how=how, c=c):
                cc = st.acc.dtype.type(c)
                st.acc = st.acc + cc if how == "+" else st.acc - cc if how == "-" else st.acc * cc
                st.mag = st.mag * abs(c) if how == "*" else st.mag + abs(c)
                st.R += 1
            return Op([f"acc = acc {how} {c}"], fn)
        if k == 4:
            if r.random() < 0.5:
                def fn(st):
                    st.acc = np.abs(st.acc)
                return Op(["acc = tl.abs(acc)"], fn)

            def fn(st):
                st.acc = -st.acc
            return Op(["acc = -acc"], fn)
        if k == 5:
            how = r.choice(["maximum", "minimum"])
            c = self.const()

            def fn(st, how=how, c=c):
                st.acc = getattr(np, how)(st.acc, st.acc.dtype.type(c))
                st.mag = np.maximum(st.mag, abs(c))
            return Op([f"acc = tl.{how}(acc, {c})"], fn)
        if k == 6:
            c = self.const() if not scope else (3 if self.unsigned else -1 if self.kind == "int" else -1.0)

            def fn(st, c=c):
                st.acc = np.where(st.acc > 0, st.acc, st.acc * st.acc.dtype.type(c))
                st.mag = st.mag * max(1.0, abs(c))
                st.R += 1
            return Op([f"acc = tl.where(acc > 0, acc, acc * {c})"], fn)
        if k == 7:                                   # a loop variable, the pid, or s
            vs = scope + ["pid", "s"]
            v = r.choice(vs)

            def fn(st, v=v):
                x = st.p if v == "pid" else st.s if v == "s" else st.vars[v]
                st.acc = st.acc + wrap(x, st.acc.dtype)
                st.mag = st.mag + abs(x)
                st.R += 1
            return Op([f"acc = acc + {v}"], fn)
        if k == 8:                                   # the carried scalar
            vs = scope + ["pid", "1", "-2"]
            v = r.choice(vs)

            def fn(st, v=v):
                x = st.p if v == "pid" else st.vars[v] if v in st.vars else int(v)
                st.s = st.s + x
            return Op([f"s = s + {v}"], fn)
        if self.kind == "int":                       # bitwise
            how, c = r.choice([("&", 0xFFFF), ("|", 3), ("^", 0x55)])

            def fn(st, how=how, c=c):
                cc = st.acc.dtype.type(c)
                st.acc = st.acc & cc if how == "&" else st.acc | cc if how == "|" else st.acc ^ cc
            return Op([f"acc = acc {how} {c}"], fn)

        def fn(st):
            st.acc = st.acc * 2.0
            st.mag = st.mag * 2.0
        return Op(["acc = acc * 2.0" if not scope else "acc = acc * 1.0"],
                  fn if not scope else (lambda st: None))

    def atomic_in_tree(self):
        """An atomic where it runs under the tree's loops and ifs: every
        program adds acc into SUM, max'es it into MX (both shared by all
        programs), counts itself in CNT[0]; the mask may depend on acc."""
        r = self.r
        self.tree_atomics = True
        how = r.choice(["sum", "sum", "max", "count"])
        if how == "count":
            def fn(st):
                st.count += 1
            return Op(["tl.atomic_add(CNT, 1)"], fn)
        cond = r.choice(["", "", " & (acc > 0)", " & (acc != 1)"])
        if self.kind == "random":
            # an inexact acc may miss 1; and near 0 it may fall on either side
            # of `> 0`: fine for a sum (it adds ~0 or nothing), not for a max
            # (the initial value or ~0)
            cond = "" if how == "max" else cond.replace("!= 1", "> 0")

        def fn(st, how=how, cond=cond):
            keep = np.zeros((self.BM, self.BN), bool)
            keep[:self.M, :self.N] = True
            if cond == " & (acc > 0)":
                keep &= st.acc > 0
            elif cond:
                keep &= st.acc != 1
            (st.sums if how == "sum" else st.maxes).append((keep, st.acc.copy(), st.mag.copy()))
        buf = "SUM" if how == "sum" else "MX"
        fnname = "atomic_add" if how == "sum" else "atomic_max"
        return Op([f"tl.{fnname}({buf} + rows * N + cols, acc, mask=m{cond})"], fn)

    def dot(self, scope):
        r = self.r
        j = self.n_dots()
        if self.dt == "int32":
            ind = r.choice(["int8", "int8", "uint8"])
        else:
            ind = r.choice(["float32", "float32", "float16", "bfloat16"])
        blocked = r.random() < 0.5
        K = r.randint(1, self.BK * (2 if blocked else 1))
        if blocked and r.random() < 0.3:
            K = self.BK * 2                          # no tail in K
        a = self.new_input(ind, "a", K)
        b = self.new_input(ind, "b", K)
        kname = f"K{j}"
        self.rt[kname] = K
        form = r.choice(["plus", "arg"])
        prec = ', input_precision="ieee"' if ind == "float32" else ""
        # names of their own: a value of another dtype under one name in a
        # loop would be a loop-carried variable changing its type
        ta, tb, ka, k0 = f"a{j}", f"b{j}", f"ka{j}", f"k{j}"
        if form == "arg" and self.dt == "float32":
            call = f"acc = tl.dot({ta}, {tb}, acc{prec})"
        elif form == "arg":
            call = f"acc = tl.dot({ta}, {tb}, acc)"
        else:
            call = f"acc += tl.dot({ta}, {tb}{prec})"
        body = [f"{ka} = {k0} + tl.arange(0, BK)",
                f"{ta} = tl.load({a} + (pid * M + rows) * {kname} + {ka}[None, :], "
                f"mask=(rows < M) & ({ka}[None, :] < {kname}), other=0)",
                f"{tb} = tl.load({b} + (pid * {kname} + {ka}[:, None]) * N + cols, "
                f"mask=({ka}[:, None] < {kname}) & (cols < N), other=0)",
                call]
        if blocked:
            lines = [f"for {k0} in range(0, {kname}, BK):"] + ["    " + x for x in body]
        else:
            lines = [f"{k0} = 0"] + body

        def fn(st, a=a, b=b):
            k = self.BK * ((self.rt[kname] + self.BK - 1) // self.BK if blocked else 1)
            A = np.zeros((self.BM, k), np.float64 if self.kind != "int" else np.int64)
            B = np.zeros((k, self.BN), A.dtype)
            A[:self.M, :self.rt[kname]] = st.d[a][st.p]
            B[:self.rt[kname], :self.N] = st.d[b][st.p]
            if self.kind == "int":
                st.acc = wrap(st.acc.astype(np.int64) + A @ B, self.dt)
            else:
                st.acc = st.acc + A @ B
                st.mag = st.mag + np.abs(A) @ np.abs(B)
                st.R += self.rt[kname] + 1
        return Op(lines, fn)

    # ----- text
    def args(self):
        names = [n for n, *_ in self.inputs] + ["F", "OUT", "OLD", "LOCK", "SUM", "MX", "CNT",
                                                 "M", "N"]
        names += sorted(self.rt)
        return names + ["BM: tl.constexpr", "BN: tl.constexpr", "BK: tl.constexpr",
                        "C0: tl.constexpr", "C1: tl.constexpr"]

    def source(self):
        L = ["@triton.jit", f"def kern({', '.join(self.args())}):",
             "    pid = tl.program_id(1) * tl.num_programs(0) + tl.program_id(0)",
             "    rows = 0" if self.one_d else "    rows = tl.arange(0, BM)[:, None]",
             "    cols = tl.arange(0, BN)" if self.one_d else "    cols = tl.arange(0, BN)[None, :]",
             "    m = (rows < M) & (cols < N)",
             f"    acc = tl.zeros({'(BN,)' if self.one_d else '(BM, BN)'}, dtype={TL[self.dt]})",
             "    s = S0"]
        L += self.body.emit("    ")
        f = self.final
        own = "OUT + (pid * M + rows) * N + cols"
        shared = "OUT + rows * N + cols"
        sem = self.sem
        if f == "store":
            L.append(f"    tl.store({own}, acc, mask=m)")
        elif f in ("atomic_add", "atomic_max", "atomic_min"):
            L.append(f"    tl.{f}({shared}, acc, mask=m{sem})")
        elif f == "xchg_own":
            L.append(f"    old = tl.atomic_xchg({own}, acc, mask=m{sem})")
            L.append("    tl.store(OLD + (pid * M + rows) * N + cols, old, mask=m)")
        elif f == "xchg_shared":
            L.append(f"    old = tl.atomic_xchg({shared}, acc, mask=m{sem})")
            L.append("    tl.store(OLD + (pid * M + rows) * N + cols, old, mask=m)")
            # what each program wrote, for the check (the reference's acc is
            # not bit-exact once the values outgrow the exact range)
            L.append("    tl.store(LOCK + M * N + (pid * M + rows) * N + cols, acc, mask=m)")
        elif f == "cas_tensor":
            # cas has no mask: masked-off lanes aim at a scratch tile after the guard
            L.append(f"    ptr = tl.where(m, {shared}, OUT + M * N + {PAD} + rows * BN + cols)")
            L.append("    cmp = tl.load(LOCK + rows * N + cols, mask=m, other=0)")
            L.append(f"    old = tl.atomic_cas(ptr, cmp, acc{sem})")
            L.append("    tl.store(OLD + (pid * M + rows) * N + cols, old, mask=m)")
            L.append("    tl.store(LOCK + M * N + (pid * M + rows) * N + cols, acc, mask=m)")
        elif f == "cas_scalar":
            L.append(f"    old = tl.atomic_cas(LOCK + pid % 2, 0, pid + 1{sem})")
            L.append("    tl.store(OLD + pid, old)")
            L.append(f"    tl.store({own}, acc, mask=m)")
        elif f == "ticket":
            L.append(f"    t = tl.atomic_add(LOCK + rows * N + cols, 1, mask=m{sem})")
            L.append("    tl.store(OLD + (pid * M + rows) * N + cols, t, mask=m)")
            L.append(f"    tl.store({own}, acc, mask=m)")
        elif f == "ticket_scalar":
            L.append(f"    t = tl.atomic_add(LOCK, 1{sem})")
            L.append("    tl.store(OLD + pid, t)")
            L.append(f"    tl.store({own}, acc, mask=m)")
        return HEADER + "\n".join(L) + "\n"

    # ----- data
    def data(self):
        rng = np.random.default_rng(self.seed)
        d = {}
        for name, dt, kind, K in self.inputs:
            shape = {"x": (self.P, self.TT, self.M, self.N), "a": (self.P, self.M, K),
                     "b": (self.P, K, self.N)}[kind]
            d[name] = self.values(rng, dt, shape)
        d["F"] = rng.integers(-2, 3, self.P).astype(np.int32)
        d.update(self.rt)
        return d

    def values(self, rng, dt, shape):
        if dt in INTS:
            info = np.iinfo(dt)
            if dt in ("int32", "int64", "uint32") and rng.random() < 0.5:
                return wrap(rng.integers(-20, 21, shape), dt)
            return rng.integers(info.min, info.max, shape, endpoint=True).astype(dt)
        if self.kind == "dyadic":
            v = rng.integers(-8, 9, shape) / 4.0
        else:
            v = rng.standard_normal(shape) * np.exp2(rng.integers(-3, 4, shape))
        return v.astype(np.float32).astype(np_dtype(dt))


# -------------------------------------------------------------------- run
def out_arrays(k, rng):
    """(OUT, OLD, LOCK) with a guard after each: initial values by final kind."""
    npd = np.dtype(k.dt)
    guard = guard_of(k)
    MN = k.M * k.N
    shared = k.final in ("atomic_add", "atomic_max", "atomic_min", "xchg_shared", "cas_tensor")
    n_out = MN if shared else k.P * MN
    if k.kind == "int":
        init = wrap(rng.integers(-50, 51, n_out), npd)
    elif k.kind == "dyadic":
        init = (rng.integers(-8, 9, n_out) / 4.0).astype(npd)
    else:
        init = rng.standard_normal(n_out).astype(npd)
    if k.final == "cas_tensor":
        # a value no program computes, so the first cas of each element wins
        init = np.full(n_out, np.iinfo(npd).min + (np.iinfo(npd).max if k.unsigned else 0)
                       if k.kind == "int" else 1e30, npd)
    OUT = np.concatenate([init, np.full(PAD, guard, npd)]).astype(npd)
    if k.final == "cas_tensor":
        OUT = np.concatenate([OUT, np.zeros(k.BM * k.BN, npd)])   # the masked lanes' scratch
    OLD = np.full(k.P * MN + PAD, guard, npd)
    if k.final in ("cas_tensor", "xchg_shared"):
        LOCK = np.concatenate([init, np.full(k.P * MN + PAD, guard, npd)])   # cmp, then the values
    elif k.final == "ticket":
        LOCK = np.concatenate([rng.integers(0, 5, MN), np.full(PAD, GUARD_I)]).astype(np.int32)
    else:
        LOCK = np.concatenate([np.zeros(2), np.full(PAD, GUARD_I)]).astype(np.int32)
    if k.final in ("cas_scalar", "ticket", "ticket_scalar"):
        OLD = np.full(k.P * MN + PAD, GUARD_I, np.int32)
    return OUT, OLD, LOCK


def run_one(seed, show=False, reference=None, tamper=None):
    """None when the kernel agrees with numpy, else a description.
    reference: another reference (tests give a wrong one); tamper(k, OUT,
    OLD, LOCK): changes the kernel's results before the check (tests)."""
    import zetile  # noqa: F401
    k = Kernel(seed)
    src = k.source()
    if show:
        print(src)
    d = k.data()
    rng = np.random.default_rng(seed + 1)
    OUT, OLD, LOCK = out_arrays(k, rng)
    OUT0, LOCK0 = OUT.copy(), LOCK.copy()
    SUM, MX, CNT = tree_arrays(k, rng)
    SUM0, MX0 = SUM.copy(), MX.copy()
    # One path per seed: the kernel's source locations (its file) are part
    # of its cache key, so a second run of a seed finds it in the cache.
    tmp = os.path.join(tempfile.gettempdir(), f"zetile-numpy-kernels-cf-{os.getuid()}")
    os.makedirs(tmp, exist_ok=True)
    path = os.path.join(tmp, f"numpy_kernel_cf_{seed}.py")
    old = open(path).read() if os.path.exists(path) else None
    if old != src:
        part = f"{path}.{os.getpid()}"
        with open(part, "w") as f:
            f.write(src)
        os.replace(part, path)
    if True:
        spec = importlib.util.spec_from_file_location(f"numpy_kernel_cf_{seed}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        args = [d[n] for n, *_ in k.inputs] + [d["F"], OUT, OLD, LOCK, SUM, MX, CNT, k.M, k.N]
        args += [d[n] for n in sorted(k.rt)]
        mod.kern[(k.P0, k.P1)](*args, BM=k.BM, BN=k.BN, BK=k.BK, C0=k.consts["C0"],
                               C1=k.consts["C1"])
    if tamper:
        tamper(k, OUT, OLD, LOCK)
    states = (reference or run_reference)(k, d)
    msg = check(k, states, OUT, OLD, LOCK, OUT0, LOCK0) or \
        check_tree(k, states, SUM, MX, CNT, SUM0, MX0)
    return None if msg is None else f"seed {seed}: {msg}\n{src}"


def tree_arrays(k, rng):
    """SUM and MX (M x N, the acc dtype) and CNT, with guards."""
    npd = np.dtype(k.dt)
    guard = guard_of(k)
    MN = k.M * k.N
    if k.kind == "int":
        s0, m0 = wrap(rng.integers(-50, 51, MN), npd), wrap(rng.integers(-50, 51, MN), npd)
    else:
        s0, m0 = rng.integers(-8, 9, MN) / 4.0, rng.integers(-8, 9, MN) / 4.0
    SUM = np.concatenate([s0, np.full(PAD, guard)]).astype(npd)
    MX = np.concatenate([m0, np.full(PAD, guard)]).astype(npd)
    CNT = np.concatenate([[0], np.full(PAD, GUARD_I)]).astype(np.int32)
    return SUM, MX, CNT


def check_tree(k, states, SUM, MX, CNT, SUM0, MX0):
    """The atomics inside the tree: SUM, MX and CNT against every program's
    contributions, the guards untouched."""
    M, N, MN = k.M, k.N, k.M * k.N
    guard = guard_of(k)
    if (SUM[MN:] != guard).any() or (MX[MN:] != guard).any() or (CNT[1:] != GUARD_I).any():
        return "a guard after SUM, MX or CNT was written"
    count = sum(st.count for st in states)
    if CNT[0] != count:
        return f"atomic_add(CNT, 1) ran {CNT[0]} times, numpy counts {count}"
    contrib = [c for st in states for c in st.sums]
    R = max([st.R for st in states] + [0]) + len(contrib)
    if k.kind == "int":
        want = SUM0[:MN].astype(np.int64)
    else:
        want = SUM0[:MN].astype(np.float64)
    mag = np.abs(SUM0[:MN].astype(np.float64))
    for keep, acc, amag in contrib:
        kk = keep[:M, :N].reshape(-1)
        want = want + np.where(kk, acc[:M, :N].reshape(-1), 0)
        mag = mag + np.where(kk, amag[:M, :N].reshape(-1), 0)
    if k.kind == "int":
        want = wrap(want, k.dt)
    ok = _close(k, SUM[:MN], want, mag, R)
    if not ok.all():
        i = np.nonzero(~ok)[0][:4]
        return (f"atomic_add into SUM ({len(contrib)} adds): zetile {SUM[i].tolist()} numpy "
                f"{want[i].tolist()} at {i.tolist()}")
    want = MX0[:MN].copy() if k.kind == "int" else MX0[:MN].astype(np.float64)
    mag = np.abs(MX0[:MN].astype(np.float64))
    R = max([st.R for st in states] + [0])
    for st in states:
        for keep, acc, amag in st.maxes:
            kk = keep[:M, :N].reshape(-1)
            a = acc[:M, :N].reshape(-1).astype(k.dt)
            want = np.where(kk, np.maximum(want, a.astype(want.dtype)), want)
            mag = np.where(kk, np.maximum(mag, amag[:M, :N].reshape(-1)), mag)
    ok = _close(k, MX[:MN], want, mag, R)
    if not ok.all():
        i = np.nonzero(~ok)[0][:4]
        return f"atomic_max into MX: zetile {MX[i].tolist()} numpy {want[i].tolist()} at {i.tolist()}"
    return None


def run_reference(k, d):
    out = []
    with np.errstate(all="ignore"):
        for p in range(k.P):
            st = St(k, p, d)
            try:
                k.body.run(st)
            except Returned:
                st.returned = True
            out.append(st)
    return out


def _close(k, got, want, mag, R):
    """Elementwise verdict: equal (exact kinds while exact), else within the bound."""
    if k.kind == "int":
        return np.asarray(got).astype(k.dt) == wrap(want, k.dt)
    got = got.astype(np.float64)
    want = want.astype(np.float64)
    if k.kind == "dyadic" and mag.max(initial=0) < EXACT_LIMIT:
        return got == want
    eps = 2.0 ** -23 if k.dt == "float32" else 2.0 ** -52
    return np.abs(got - want) <= eps * (R + 2) * mag + 1e-300


def check(k, states, OUT, OLD, LOCK, OUT0, LOCK0):
    """The final stores and atomics against the programs' states. Programs
    that returned early (st.returned) wrote nothing there: their own regions
    keep their initial values and they are not among the atomics' programs."""
    M, N, P, MN = k.M, k.N, k.P, k.M * k.N
    npd = np.dtype(k.dt)
    live = [p for p in range(P) if not states[p].returned]
    accs = [st.acc[:M, :N].reshape(-1) for st in states]
    mags = [st.mag[:M, :N].reshape(-1) for st in states]
    R = max([st.R for st in states] + [0])
    f = k.final
    shared = f in ("atomic_add", "atomic_max", "atomic_min", "xchg_shared", "cas_tensor")
    n_out = MN if shared else P * MN
    guard = guard_of(k)
    int_old = f in ("cas_scalar", "ticket", "ticket_scalar")
    og = GUARD_I if int_old else guard

    def bad(what, got, want):
        got, want = np.asarray(got).reshape(-1), np.asarray(want).reshape(-1)
        i = np.arange(min(4, got.size))
        return f"{what}: zetile {got[i].tolist()} numpy {want[i].tolist()} at {i.tolist()}"

    if (OUT[n_out:n_out + PAD] != guard).any():
        return bad("OUT guard written", OUT[n_out:n_out + PAD], np.full(PAD, guard, npd))
    out = OUT[:n_out]
    init = OUT0[:n_out]
    per_old = f in ("xchg_own", "xchg_shared", "cas_tensor", "ticket")   # OLD: P tiles, else P scalars
    for p in range(P):
        if p in live:
            continue
        if not shared and (out[p * MN:(p + 1) * MN] != init[p * MN:(p + 1) * MN]).any():
            return f"program {p} returned early but its OUT tile changed"
        o = OLD[p * MN:(p + 1) * MN] if per_old else OLD[p:p + 1]
        if int_old or per_old:
            if (o != og).any():
                return f"program {p} returned early but its OLD entry was written"
    if f in ("store", "xchg_own", "cas_scalar", "ticket", "ticket_scalar") and live:
        want = np.concatenate([accs[p] for p in live])
        got = np.concatenate([out[p * MN:(p + 1) * MN] for p in live])
        ok = _close(k, got, want, np.concatenate([mags[p] for p in live]), R)
        if not ok.all():
            return bad("stored acc", got[~ok], want[~ok])
    if f == "xchg_own":
        for p in live:
            if (OLD[p * MN:(p + 1) * MN] != init[p * MN:(p + 1) * MN]).any():
                return bad(f"xchg old values of program {p}", OLD[p * MN:(p + 1) * MN],
                           init[p * MN:(p + 1) * MN])
    if f == "atomic_add":
        if k.kind == "int":
            want = wrap(init.astype(np.int64) + sum(accs[p].astype(np.int64) for p in live), k.dt)
        else:
            want = init.astype(np.float64) + sum(accs[p] for p in live)
        mag = np.abs(init.astype(np.float64)) + sum(mags[p] for p in live)
        ok = _close(k, out, want, mag, R + P)
        if not ok.all():
            return bad("atomic_add result", out[~ok], want[~ok])
    if f in ("atomic_max", "atomic_min"):
        fn = np.maximum if f == "atomic_max" else np.minimum
        # integers in their own dtype (int64 does not fit a float64)
        want = init.copy() if k.kind == "int" else init.astype(np.float64)
        mag = np.abs(init.astype(np.float64))
        for p in live:
            want = fn(want, accs[p].astype(npd).astype(want.dtype))
            mag = np.maximum(mag, mags[p])
        ok = _close(k, out, want, mag, R)
        if not ok.all():
            return bad(f"{f} result", out[~ok], want[~ok])
    if f in ("xchg_shared", "cas_tensor"):
        # each program's acc as it wrote it: against the reference within
        # the bound, then the atomics' invariants on those exact values
        written = LOCK[MN:MN + P * MN].reshape(P, MN)
        for p in range(P):
            if p in live:
                ok = _close(k, written[p], accs[p], mags[p], R)
                if not ok.all():
                    return bad(f"values written (acc) of program {p}", written[p][~ok], accs[p][~ok])
            elif (written[p] != guard).any():
                return f"program {p} returned early but wrote its values"
        if (LOCK[MN + P * MN:] != guard).any():
            return "LOCK guard written"
    if f == "xchg_shared":
        olds = OLD[:P * MN].reshape(P, MN)
        for e in range(MN):
            have = sorted([olds[p, e] for p in live] + [out[e]])
            want = sorted([written[p, e] for p in live] + [init[e]])
            if have != want:
                return f"xchg_shared element {e}: olds+final {have}, init+written {want}"
    if f == "cas_tensor":
        olds = OLD[:P * MN].reshape(P, MN)
        vals = written
        if not live:
            return None if (out == init).all() else "cas: no program ran it but OUT changed"
        if (vals[live] == init[None, :]).any():
            return None       # a program computed the marker value: no clear winner (not a finding)
        for e in range(MN):
            o = olds[live, e]
            winners = np.nonzero(o == init[e])[0]
            if len(winners) != 1 or out[e] != vals[live][winners[0], e] or \
                    (o[o != init[e]] != out[e]).any():
                return (f"cas element {e}: init {init[e]}, olds {o.tolist()}, "
                        f"final {out[e]}, values {vals[live][:, e].tolist()}")
    if f == "cas_scalar":
        olds = OLD[:P]
        for g in range(2):
            ps = [p for p in live if p % 2 == g]
            fin = LOCK[g]
            if not ps:
                if fin != 0:
                    return f"cas lock {g} written by no program: {fin}"
                continue
            winners = [p for p in ps if olds[p] == 0]
            if len(winners) != 1 or fin != winners[0] + 1 or \
                    any(olds[p] != fin for p in ps if p != winners[0]):
                return f"cas lock {g}: final {fin}, olds {[int(olds[p]) for p in ps]} of programs {ps}"
        if (LOCK[2:] != GUARD_I).any():
            return "LOCK guard written"
    if f == "ticket":
        olds = OLD[:P * MN].reshape(P, MN)
        base = LOCK0[:MN]
        for e in range(MN):
            got = sorted(olds[live, e].tolist())
            if got != list(range(base[e], base[e] + len(live))) or LOCK[e] != base[e] + len(live):
                return f"ticket element {e}: base {base[e]}, olds {got}, final {LOCK[e]}"
        if (LOCK[MN:] != GUARD_I).any():
            return "LOCK guard written"
    if f == "ticket_scalar":
        got = sorted(OLD[live].tolist())
        if got != list(range(len(live))) or LOCK[0] != len(live):
            return f"scalar tickets {got}, final {LOCK[0]} for {len(live)} programs"
    n_old = P * MN if per_old else P if f in ("cas_scalar", "ticket_scalar") else 0
    if (OLD[n_old:] != og).any():
        return "OLD written past its end"
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernels", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--show", action="store_true", help="print each kernel's source")
    ap.add_argument("-v", "--verbose", action="store_true", help="a line per kernel")
    ap.add_argument("--threads", type=int, default=0,
                    help="run every grid on this many pool threads (ZETILE_NUM_THREADS)")
    args = ap.parse_args(argv)
    if args.threads:
        os.environ["ZETILE_NUM_THREADS"] = str(args.threads)
    import zetile
    zetile.set_device("cpu")
    t0 = time.time()
    fails = errors = 0
    for s in range(args.seed, args.seed + args.kernels):
        t1 = time.time()
        try:
            msg = run_one(s, args.show)
            if args.verbose:
                k = Kernel(s)
                print(f"seed {s}: {'WRONG' if msg else 'ok'} {k.dt} {k.kind} {k.final} "
                      f"dot={k.has_dot} {time.time() - t1:.1f} s", flush=True)
        except Exception as e:  # a compile or launch error is a finding too
            errors += 1
            print(f"seed {s}: {type(e).__name__}: {str(e)[:2000]}\n{Kernel(s).source()}")
            continue
        if msg:
            fails += 1
            print(msg)
    print(f"numpy_kernels_cf: {args.kernels} kernels (seeds {args.seed}..{args.seed + args.kernels - 1}), "
          f"{fails} wrong results, {errors} errors, {time.time() - t0:.0f} s")
    return 1 if fails or errors else 0


if __name__ == "__main__":
    sys.exit(main())
