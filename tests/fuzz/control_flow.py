"""A differential fuzzer of control flow: random kernels run by zetile (CPU
target) and by Triton's interpreter (TRITON_INTERPRET=1), results compared
exactly.

Each generated kernel mixes compile-time and run-time `if`/`else`, early
`return` (at the kernel's top level, nested in `if`s and in `@jit` helpers
returning tuples), `for` loops (range with run-time bounds, tl.static_range)
and `while` loops with loop-carried tensors and scalars, masked loads and
stores. Values are int32 kept small (every expression is masked), so both
sides must agree to the bit.

The kernel text is written twice to files, once with Triton's imports and
once with zetile's (the only difference), because both front ends read a
kernel's source from its file. A case is (source, constexpr combinations,
run-time arguments); a mismatch is saved as a .py file whose header holds
the arguments, so it can be kept as a regression test
(tests/fuzz/control_flow_cases/).

    python tests/fuzz/control_flow.py --kernels 500 --seed 1   # a long run
"""
from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import random
import sys
import tempfile
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CASES_DIR = os.path.join(HERE, "control_flow_cases")

TRITON_HEADER = "import triton\nimport triton.language as tl\n"
ZETILE_HEADER = "import zetile as triton\nimport zetile.language as tl\n"

N = 50          # elements (not a multiple of BLOCK: masked tails)
BLOCK = 16
GRID = 4        # programs: 64 lanes cover N
TENSORS = ["acc", "t0", "t1"]
SCALARS = ["s0", "s1"]
MASK = "0xFFFF"


class Gen:
    """Builds one kernel module's source from a seeded random stream."""

    def __init__(self, seed):
        self.r = random.Random(seed)
        self.helpers = []       # source of each helper
        self.loop_depth = 0
        self.loop_vars = 0

    # ---------------------------------------------------------- expressions
    def tensor_atom(self):
        """(text, is_tensor)."""
        r = self.r
        k = r.randrange(8)
        if k < 4:
            return r.choice(TENSORS), True
        if k == 4:
            return "x", True
        if k == 5:
            return "y", True
        if k == 6:
            return r.choice(SCALARS), False
        return str(r.randrange(1, 50)), False

    def _expr(self, depth):
        """(text, is_tensor) of a random int32 expression kept below 2**16."""
        r = self.r
        if depth > 1 or r.random() < 0.3:
            a, t = self.tensor_atom()
            return (f"({a} + offs) & {MASK}", True) if r.random() < 0.2 else (a, t)
        (a, ta), (b, tb) = self._expr(depth + 1), self._expr(depth + 1)
        t = ta or tb
        op = r.randrange(7)
        if op == 0:
            return f"(({a}) + ({b})) & {MASK}", t
        if op == 1:
            return f"(({a}) - ({b})) & {MASK}", t
        if op == 2:
            return f"(({a}) * {r.randrange(2, 9)}) & {MASK}", ta
        if op == 3:
            return f"({a}) ^ ({b})", t
        if op == 4 and t:
            return f"tl.maximum({a}, {b})", t
        if op == 5 and t:
            return f"tl.where(({a}) > ({b}), ({a}), ({b}) + 1) & {MASK}", t
        return f"(({a}) & {r.choice(['0xFF', '0xF0F', '0x3FF'])})", ta

    def tensor_expr(self):
        """A BLOCK-long int32 tensor expression (a scalar one gets a tensor added)."""
        e, t = self._expr(0)
        return e if t else f"(({e}) + {self.r.choice(TENSORS)}) & {MASK}"

    def scalar_expr(self):
        r = self.r
        k = r.randrange(6)
        if k == 0:
            return f"({r.choice(SCALARS)} + {r.randrange(1, 9)}) & {MASK}"
        if k == 1:
            return f"(tl.sum({r.choice(TENSORS)} & 0xFF, axis=0) + pid) & {MASK}"
        if k == 2:
            return f"tl.max({r.choice(TENSORS)}, axis=0)"
        if k == 3:
            return f"({r.choice(SCALARS)} * {r.randrange(2, 5)} + R0) & {MASK}"
        if k == 4:
            return f"tl.load(X + (pid * {r.randrange(1, 5)} + {r.randrange(0, 3)}) % N)"
        return f"({r.choice(SCALARS)} ^ R1) & {MASK}"

    def cond_runtime(self):
        r = self.r
        k = r.randrange(5)
        if k == 0:
            return f"pid == {r.randrange(GRID)}"
        if k == 1:
            return f"pid >= {r.randrange(1, GRID)}"
        if k == 2:
            return f"{r.choice(SCALARS)} > {r.randrange(0, 200)}"
        if k == 3:
            return f"(R0 & {r.choice([1, 2, 4])}) == 0"
        return f"{r.choice(SCALARS)} % {r.randrange(2, 5)} == {r.randrange(2)}"

    def cond_const(self):
        r = self.r
        return r.choice(["C0", "not C0", "C1 == 2", "C1 > 0", "C0 and C1 == 1", "C1 == 0 or C0"])

    # ----------------------------------------------------------- statements
    def assign(self, ind):
        r = self.r
        if r.random() < 0.7:
            return [f"{ind}{r.choice(TENSORS)} = {self.tensor_expr()}"]
        return [f"{ind}{r.choice(SCALARS)} = {self.scalar_expr()}"]

    def masked_io(self, ind):
        r = self.r
        if r.random() < 0.5:
            m = f"mask & (offs % {r.randrange(2, 5)} != {r.randrange(2)})"
            return [f"{ind}tl.store(OUT2 + offs, {self.tensor_expr()}, mask={m})"]
        m = f"offs < N - {r.randrange(0, 20)}"
        return [f"{ind}{r.choice(TENSORS)} = tl.load(Y + offs, mask={m}, other={r.randrange(0, 9)})"]

    def block(self, ind, depth, may_return, top=False):
        """A list of statements; may_return: returns are allowed here (no
        enclosing loop)."""
        r = self.r
        out = []
        for _ in range(r.randrange(1, 4)):
            out += self.statement(ind, depth, may_return)
        if may_return and not top and r.random() < 0.25:
            out += self.early_return(ind)
        return out

    def early_return(self, ind):
        r = self.r
        out = []
        if r.random() < 0.6:  # make the return observable
            out.append(f"{ind}tl.store(OUT + offs, {self.final_expr()}, mask=mask)")
        out.append(f"{ind}return")
        return out

    def statement(self, ind, depth, may_return):
        r = self.r
        k = r.randrange(10) if depth < 3 else r.randrange(3)
        if k in (0, 1):
            return self.assign(ind)
        if k == 2:
            return self.masked_io(ind)
        if k == 3:  # compile-time if
            out = [f"{ind}if {self.cond_const()}:"] + self.block(ind + "    ", depth + 1, may_return)
            if r.random() < 0.5:
                out += [f"{ind}else:"] + self.block(ind + "    ", depth + 1, may_return)
            return out
        if k in (4, 5):  # run-time if
            out = [f"{ind}if {self.cond_runtime()}:"] + self.block(ind + "    ", depth + 1, may_return)
            if r.random() < 0.5:
                out += [f"{ind}else:"] + self.block(ind + "    ", depth + 1, may_return)
            return out
        if k == 6:  # for loop
            v = f"i{self.loop_vars}"
            self.loop_vars += 1
            rng = r.choice([f"range(0, R1)", f"range(1, R1 + 2, 2)", f"range({r.randrange(3)}, 3)",
                            f"tl.static_range({r.randrange(1, 4)})", f"range(R1, 0, -1)"])
            body = [f"{ind}    {r.choice(TENSORS)} = ({r.choice(TENSORS)} + {v} * "
                    f"{r.randrange(1, 7)}) & {MASK}"]
            body += self.block(ind + "    ", depth + 1, False)
            return [f"{ind}for {v} in {rng}:"] + body
        if k == 7:  # while loop with a counter
            v = f"w{self.loop_vars}"
            self.loop_vars += 1
            body = self.block(ind + "    ", depth + 1, False)
            body.append(f"{ind}    {v} += 1")
            return [f"{ind}{v} = R1 * 0", f"{ind}while {v} < R1 + {r.randrange(2)}:"] + body
        # a helper call returning a tuple
        return [f"{ind}{self.tuple_target()} = {self.helper()}({self.tensor_expr()}, "
                f"{r.choice(SCALARS)}, {self.cond_const()})"]

    def tuple_target(self):
        a, b = self.r.sample(TENSORS, 2)
        return f"{a}, {b}"

    def helper(self):
        """Defines a new @jit helper (a, k, F: constexpr) -> (tensor, tensor)
        with early returns, and returns its name."""
        r = self.r
        self.helper_depth = getattr(self, "helper_depth", 0) + 1
        inner = self.helper() if self.helper_depth < 3 and r.random() < 0.3 else None
        self.helper_depth -= 1
        name = f"helper_{len(self.helpers)}"
        lines = ["@triton.jit", f"def {name}(a, k, F: tl.constexpr):", "    b = (a * 3 + k) & 0xFFFF"]
        for _ in range(r.randrange(1, 4)):
            kind = r.randrange(5 if inner else 4)
            if kind == 4:  # a nested helper, its tuple unpacked
                lines.append(f"    b, a = {inner}(a ^ b, k + {r.randrange(1, 5)}, not F)")
                continue
            cond = self.cond_const() .replace("C0", "F").replace("C1", "(F + 1)") if kind == 0 else \
                f"k > {r.randrange(0, 300)}" if kind == 1 else f"tl.sum(a & 3, axis=0) > {r.randrange(10, 40)}"
            if kind == 3:
                lines.append(f"    a = (a ^ b) & 0xFFFF")
                continue
            lines.append(f"    if {cond}:")
            if r.random() < 0.5:
                lines.append(f"        if k % 2 == {r.randrange(2)}:")
                lines.append(f"            return (a + {r.randrange(1, 9)}) & 0xFFFF, b")
                lines.append(f"        b = (b + a) & 0xFFFF")
            else:
                lines.append(f"        return b, (a * {r.randrange(2, 5)}) & 0xFFFF")
        lines.append("    return a, (a + b) & 0xFFFF")
        self.helpers.append("\n".join(lines))
        return name

    def final_expr(self):
        return "(acc + t0 * 3 + t1 * 5 + s0 + s1 * 7) & 0xFFFFFF"

    def kernel(self):
        body = [
            "    pid = tl.program_id(0)",
            "    offs = pid * BLOCK + tl.arange(0, BLOCK)",
            "    mask = offs < N",
            "    x = tl.load(X + offs, mask=mask, other=0)",
            "    y = tl.load(Y + offs, mask=mask, other=1)",
            "    acc = x & 0xFF",
            "    t0 = (y * 2) & 0xFFFF",
            "    t1 = x ^ y",
            "    s0 = R0 + 0",
            "    s1 = (R1 * 3) & 0xFFFF",
        ]
        body += self.block("    ", 0, True, top=True)
        if self.r.random() < 0.5:  # a conditional return near the end
            body += [f"    if {self.cond_runtime() if self.r.random() < 0.6 else self.cond_const()}:"]
            body += self.early_return("        ")
            body += self.block("    ", 1, True, top=True)
        body.append(f"    tl.store(OUT + offs, {self.final_expr()}, mask=mask)")
        head = ["@triton.jit",
                "def kernel(X, Y, OUT, OUT2, N, R0, R1, C0: tl.constexpr, C1: tl.constexpr, "
                "BLOCK: tl.constexpr):"]
        return "\n".join(head + body)

    def module(self):
        k = self.kernel()
        return "\n\n\n".join(self.helpers + [k]) + "\n"


def generate(seed):
    """Source (without imports) of the kernel module for `seed`."""
    return Gen(seed).module()


def arguments(seed):
    """The run-time argument sets and constexpr combinations a case runs."""
    r = random.Random(seed * 7919 + 1)
    runs = []
    for c0, c1 in itertools.product((False, True), (0, 1, 2)):
        runs.append({"C0": c0, "C1": c1, "R0": r.randrange(0, 300), "R1": r.randrange(0, 4)})
    r.shuffle(runs)
    return runs[:3]


# ------------------------------------------------------------------ running
def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _inputs(seed):
    r = np.random.default_rng(seed)
    return r.integers(0, 1000, N).astype(np.int32), r.integers(0, 1000, N).astype(np.int32)


def _run(mod, x, y, run, torch_args):
    out = np.zeros(N, np.int32)
    out2 = np.zeros(N, np.int32)
    args = [x.copy(), y.copy(), out, out2]
    if torch_args:
        import torch
        args = [torch.from_numpy(a) for a in args]
    mod.kernel[(GRID,)](*args, N, run["R0"], run["R1"], C0=run["C0"], C1=run["C1"], BLOCK=BLOCK)
    return np.asarray(args[2]).copy(), np.asarray(args[3]).copy()


class Runner:
    """Writes cases to a scratch folder and runs both sides in this process."""

    def __init__(self, workdir=None):
        os.environ["TRITON_INTERPRET"] = "1"
        self.dir = workdir or tempfile.mkdtemp(prefix="zt-cf-fuzz-")
        self.count = 0

    def run_case(self, src, runs, seed):
        """Returns None when both sides agree on every run, else a message."""
        self.count += 1
        tag = f"case{self.count}"
        tpath = os.path.join(self.dir, f"{tag}_triton.py")
        zpath = os.path.join(self.dir, f"{tag}_zetile.py")
        with open(tpath, "w") as f:
            f.write(TRITON_HEADER + src)
        with open(zpath, "w") as f:
            f.write(ZETILE_HEADER + src)
        x, y = _inputs(seed)
        tmod = _load(tpath, f"zt_cf_{tag}_t")
        try:
            zmod = _load(zpath, f"zt_cf_{tag}_z")
        except Exception as e:  # noqa: BLE001 - a front-end failure is a finding
            return f"zetile failed to load the module: {e}"
        for run in runs:
            try:
                want = _run(tmod, x, y, run, torch_args=True)
            except Exception:  # noqa: BLE001 - the oracle refused: not a zetile finding
                continue
            try:
                got = _run(zmod, x, y, run, torch_args=False)
            except Exception as e:  # noqa: BLE001
                return f"run {run}: zetile raised {type(e).__name__}: {e}"
            for name, w, g in (("OUT", want[0], got[0]), ("OUT2", want[1], got[1])):
                if not np.array_equal(w, g):
                    bad = np.nonzero(w != g)[0]
                    return (f"run {run}: {name} differs at {len(bad)} of {N} elements, first at "
                            f"{bad[0]}: triton {w[bad[0]]}, zetile {g[bad[0]]}")
        return None


def save_case(src, runs, seed, message, where=CASES_DIR):
    os.makedirs(where, exist_ok=True)
    path = os.path.join(where, f"seed{seed}.py")
    header = "# " + json.dumps({"seed": seed, "runs": runs, "found": message}) + "\n"
    with open(path, "w") as f:
        f.write(header + src)
    return path


def load_case(path):
    """(source, runs, seed) of a saved case."""
    with open(path) as f:
        first = f.readline()
        src = f.read()
    meta = json.loads(first[2:])
    return src, meta["runs"], meta["seed"]


def fuzz(n, seed0, save=True, log=print):
    """Runs n generated kernels from seed0 on; returns (kernels, runs, mismatches, oracle_refused)."""
    runner = Runner()
    mismatches = []
    t0 = time.time()
    for i in range(n):
        seed = seed0 + i
        src = generate(seed)
        runs = arguments(seed)
        try:
            msg = runner.run_case(src, runs, seed)
        except Exception:  # noqa: BLE001 - the oracle could not load it
            msg = None
            log(f"seed {seed}: oracle failed to load:\n{traceback.format_exc(limit=2)}")
        if msg:
            mismatches.append((seed, msg))
            where = save_case(src, runs, seed, msg) if save else "(not saved)"
            log(f"seed {seed}: MISMATCH {msg} -> {where}")
    log(f"control-flow fuzzer: {n} kernels generated, {n * 3} runs compared exactly against "
        f"Triton's interpreter, {len(mismatches)} mismatches ({time.time() - t0:.0f} s)")
    return n, mismatches


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-save", action="store_true", help="do not keep mismatching cases")
    ap.add_argument("--show", type=int, help="print the kernel of one seed and exit")
    a = ap.parse_args(argv)
    if a.show is not None:
        print(generate(a.show))
        print("# runs:", arguments(a.show))
        return 0
    _, bad = fuzz(a.kernels, a.seed, save=not a.no_save)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
