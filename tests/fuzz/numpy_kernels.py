"""A property-based generator of random kernels checked against numpy
(issue 17): each seed gives a kernel of random dtypes, shapes and ops, run
on the CPU target, and the same computation in numpy; the results must be
equal (bit for bit up to -0.0 == 0.0 and NaN == NaN), except float sums,
whose order differs (a tolerance).

What a kernel holds: masked loads of 1-3 inputs of random dtypes (int8 to
int64, uint8 to uint32, fp16, bf16, fp32, fp64), sizes that are not
multiples of the block; a chain of statements, each an op on values of one
dtype: + - * with each other or with a weak Python constant, maximum,
minimum, where(a < b, ...), abs, negation, sqrt(|x|), / on floats (16-bit
floats divide in fp32, as Triton does); & | ^ << >> // % on integers (the
divisor a positive constant; // and % round toward zero); casts between
every pair of dtypes (floats clamped to a small range before they become
integers: out of range the result is undefined in Triton too); fp8
round trips (float8e4nv / float8e5, clamped into range; ml_dtypes is the
reference); and in 2-D kernels a reduction along the columns (sum, max,
min). Implicit promotion between different dtypes is not generated: each
mixed pair is cast explicitly, so the reference needs no promotion rules.

    python tests/fuzz/numpy_kernels.py --kernels 200 --seed 1     # a long run
A failing seed prints its kernel; `--seed S --kernels 1 --show` reprints it.
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

INTS = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
TL = {"int8": "tl.int8", "int16": "tl.int16", "int32": "tl.int32", "int64": "tl.int64",
      "uint8": "tl.uint8", "uint16": "tl.uint16", "uint32": "tl.uint32",
      "float16": "tl.float16", "bfloat16": "tl.bfloat16", "float32": "tl.float32",
      "float64": "tl.float64"}
HEADER = "import zetile as triton\nimport zetile.language as tl\n\n\n"


def np_dtype(name):
    if name == "bfloat16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def _tdiv(a, c):
    return (a - np.fmod(a, c)) // c   # toward zero (exact: the remainder is taken off first)


def _fp8(x, name, lo, hi):
    import ml_dtypes
    f8 = {"e4nv": ml_dtypes.float8_e4m3fn, "e5": ml_dtypes.float8_e5m2}[name]
    dt = x.dtype
    c = np.fmin(np.fmax(x, dt.type(lo)), dt.type(hi))
    return c.astype(np.float32).astype(f8).astype(np.float32).astype(dt)


class Kernel:
    """One random kernel: its source and a numpy function of its inputs."""

    def __init__(self, seed):
        self.seed = seed
        self.r = random.Random(seed)
        r = self.r
        self.two_d = r.random() < 0.35
        # 1-D kernels whose store has no mask (OUT padded to the grid): the
        # masked-off lanes store what their loads' `other` gives. Drawn from
        # its own stream so the other draws of a seed stay as they were.
        # (A store loop cut at a load's mask, not its own, lost that tail.)
        self.store_unmasked = not self.two_d and random.Random(seed ^ 0x5EED).random() < 0.3
        self.n_in = r.randint(1, 3)
        self.in_dt = [r.choice(INTS + FLOATS) for _ in range(self.n_in)]
        self.vals = [(f"x{i}", d) for i, d in enumerate(self.in_dt)]  # (name, dtype)
        self.body, self.ref = [], []
        self.float_sum = False
        for i in range(r.randint(2, 7)):
            k, n, d = self.statement(f"v{i}")
            self.body.append(f"{n} = {k}")
            self.ref.append((n, d, self.ref_text))
            self.vals.append((n, d))
        self.out_name, self.out_dt = self.vals[-1]
        if self.two_d:
            red = r.choice(["sum", "max", "min"])
            d = self.out_dt
            if red == "sum" and d in INTS and np.dtype(d).itemsize < 4:
                d = "int32" if d.startswith("int") else "uint32"   # Triton's sum widens these
            self.float_sum = red == "sum" and d in FLOATS
            self.body.append(f"r = tl.{red}({self.out_name}, axis=1)")
            self.red, self.red_dt = red, d
            self.out_dt = d

    # -------------------------------------------------------------- pieces
    def pick(self, dtype=None):
        cands = [v for v in self.vals if dtype is None or v[1] == dtype]
        return self.r.choice(cands) if cands else None

    def const(self, d):
        r = self.r
        if d in FLOATS:
            return r.choice(["0.5", "1.5", "2.0", "-3.25", "0.0"])
        return str(r.randint(0, 7) if d.startswith("u") else r.randint(-7, 7))

    def same(self, d, other_than=None):
        """A value of dtype d: an existing one (preferably not other_than),
        or a cast of another."""
        cands = [v for v in self.vals if v[1] == d and v[0] != other_than] or \
            [v for v in self.vals if v[1] == d]
        if cands and self.r.random() < 0.7:
            v = self.r.choice(cands)
            return v[0], v[0]
        n, s = self.pick()
        return self.cast_text(n, s, d)

    def cast_text(self, n, s, d):
        """(kernel text, numpy text) of n (dtype s) cast to d."""
        if s == d:
            return n, n
        if s in FLOATS and d in INTS:
            # clamp first: out-of-range float -> int is undefined (poison)
            lo = 0.0 if d.startswith("u") else -100.0
            k = f"tl.minimum(tl.maximum({n}, {lo}), 100.0).to({TL[d]})"
            p = f"np.fmin(np.fmax({n}, {n}.dtype.type({lo})), {n}.dtype.type(100.0)).astype(D['{d}'])"
            return k, p
        return f"{n}.to({TL[d]})", f"{n}.astype(D['{d}'])"

    def statement(self, name):
        """(kernel expression, name, dtype)."""
        r = self.r
        # mostly a chain through the last value, so that every statement
        # reaches the output (a dead statement would check nothing)
        n, d = self.vals[-1] if len(self.vals) > self.n_in and r.random() < 0.85 else self.pick()
        k = r.randrange(12)
        if k == 0:                                   # a cast to another dtype
            d2 = r.choice(INTS + FLOATS)
            kt, pt = self.cast_text(n, d, d2)
            self._set(pt)
            return kt, name, d2
        if k == 1 and d in ("float16", "bfloat16", "float32"):   # fp8 round trip
            f8 = r.choice(["e4nv", "e5"])
            lo, hi = (-400.0, 400.0) if f8 == "e4nv" else (-50000.0, 50000.0)
            if d == "float16" and f8 == "e5":
                lo, hi = -50000.0, 50000.0
            kt = (f"tl.minimum(tl.maximum({n}, {lo}), {hi}).to(tl.float8{f8})"
                  f".to({TL[d]})")
            self._set(f"_fp8({n}, '{f8}', {lo}, {hi})")
            return kt, name, d
        if k == 2:                                   # with a weak constant
            op = r.choice(["+", "-", "*"])
            c = self.const(d)
            self._set(f"({n} {op} {n}.dtype.type({c}))")
            return f"{n} {op} {c}", name, d
        if k == 3:
            fn = r.choice(["maximum", "minimum"])
            (bk, bp) = self.same(d, n)
            npf = {"maximum": "np.fmax", "minimum": "np.fmin"}[fn] if d in FLOATS else \
                {"maximum": "np.maximum", "minimum": "np.minimum"}[fn]
            self._set(f"{npf}({n}, {bp})")
            return f"tl.{fn}({n}, {bk})", name, d
        if k == 4:
            (bk, bp) = self.same(d, n)
            self._set(f"np.where({n} < {bp}, {n}, {bp} + {bp}.dtype.type(1))")
            return f"tl.where({n} < {bk}, {n}, {bk} + 1)", name, d
        if k == 5:
            if r.random() < 0.5:
                self._set(f"np.abs({n})")
                return f"tl.abs({n})", name, d
            self._set(f"np.negative({n})")          # unsigned: 0 - x, wrapping
            return f"-{n}", name, d
        if k == 6 and d in FLOATS:
            if r.random() < 0.5 and d in ("float32", "float64"):   # Triton: sqrt of fp32/fp64 only
                self._set(f"np.sqrt(np.abs({n}))")
                return f"tl.sqrt(tl.abs({n}))", name, d
            (bk, bp) = self.same(d, n)
            out = "float32" if d in ("float16", "bfloat16") else d
            self._set(f"({n}.astype(D['{out}']) / {bp}.astype(D['{out}']))")
            return f"{n} / {bk}", name, out
        if k == 7 and d in INTS:
            op = r.choice(["&", "|", "^"])
            (bk, bp) = self.same(d, n)
            self._set(f"({n} {op} {bp})")
            return f"{n} {op} {bk}", name, d
        if k == 8 and d in INTS:
            op = r.choice(["<<", ">>"])
            c = r.randint(0, 3)
            self._set(f"({n} {op} {n}.dtype.type({c}))")
            return f"{n} {op} {c}", name, d
        if k == 9 and d in INTS:
            c = r.randint(1, 9)
            if r.random() < 0.5:
                self._set(f"_tdiv({n}, {n}.dtype.type({c}))")
                return f"{n} // {c}", name, d
            self._set(f"np.fmod({n}, {n}.dtype.type({c}))")
            return f"{n} % {c}", name, d
        op = r.choice(["+", "-", "*"])                # binary, same dtype
        (bk, bp) = self.same(d, n)
        self._set(f"({n} {op} {bp})")
        return f"{n} {op} {bk}", name, d

    def _set(self, text):
        self.ref_text = text

    # ---------------------------------------------------------------- text
    def source(self):
        args = ", ".join(f"X{i}" for i in range(self.n_in))
        lines = [f"@triton.jit", f"def kern({args}, OUT, N, ROWS, BLOCK: tl.constexpr):"]
        if self.two_d:
            lines += ["    rows = tl.program_id(0) * 4 + tl.arange(0, 4)[:, None]",
                      "    cols = tl.arange(0, BLOCK)[None, :]",
                      "    m = (rows < ROWS) & (cols < N)",
                      "    offs = rows * N + cols"]
        else:
            lines += ["    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)",
                      "    m = offs < N"]
        for i in range(self.n_in):
            lines.append(f"    x{i} = tl.load(X{i} + offs, mask=m, other=0)")
        lines += ["    " + b for b in self.body]
        if self.two_d:
            lines.append("    tl.store(OUT + tl.arange(0, 4) + tl.program_id(0) * 4, r, "
                         "mask=tl.program_id(0) * 4 + tl.arange(0, 4) < ROWS)")
        elif self.store_unmasked:
            lines.append(f"    tl.store(OUT + offs, {self.out_name})")
        else:
            lines.append(f"    tl.store(OUT + offs, {self.out_name}, mask=m)")
        return HEADER + "\n".join(lines) + "\n"


def _inputs(rng, dtype, shape):
    d = np_dtype(dtype)
    if dtype in INTS:
        info = np.iinfo(d)
        if rng.random() < 0.5:   # small values, and the extremes
            a = rng.integers(max(info.min, -20), min(info.max, 20) + 1, shape, dtype=np.int64)
        else:
            a = rng.integers(info.min, info.max, shape, dtype=np.int64, endpoint=True)
        return a.astype(d)
    a = rng.standard_normal(shape) * np.exp2(rng.integers(-6, 6, shape))
    a = a.astype(np.float32)
    flat = a.reshape(-1)
    for v in (0.0, -0.0, np.inf, -np.nan):
        if flat.size > 4 and rng.random() < 0.3:
            flat[rng.integers(flat.size)] = v
    return a.astype(d)


def run_one(seed, show=False):
    """None when the kernel agrees with numpy, else a description."""
    import zetile as triton  # noqa: F401 - loaded by the generated module too
    kern = Kernel(seed)
    src = kern.source()
    if show:
        print(src)
    rng = np.random.default_rng(seed)
    # 2-D: whole rows (a reduction would read masked-off columns), rows masked
    n = int(rng.integers(1, 200)) if not kern.two_d else int(rng.choice([16, 32]))
    rows = int(rng.integers(1, 10))
    block = n if kern.two_d else int(rng.choice([16, 32, 64, 128]))
    shape = (rows, n) if kern.two_d else (n,)
    xs = [_inputs(rng, d, shape) for d in kern.in_dt]
    kern.n_cols = n
    grid_n = (n + block - 1) // block
    out_shape = (rows,) if kern.two_d else (grid_n * block if kern.store_unmasked else n,)
    out = np.zeros(out_shape, np_dtype(kern.out_dt))
    if kern.store_unmasked:   # a byte pattern no tail value is likely to equal
        out = np.full(out.nbytes, 0xA5, np.uint8).view(out.dtype).reshape(out_shape)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, f"numpy_kernel_{seed}.py")
        with open(path, "w") as f:
            f.write(src)
        spec = importlib.util.spec_from_file_location(f"numpy_kernel_{seed}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        grid = ((rows + 3) // 4,) if kern.two_d else ((n + block - 1) // block,)
        mod.kern[grid](*xs, out, n, rows, block)
    if kern.store_unmasked:   # the loads' other=0 past n
        xs = [np.concatenate([x, np.zeros(out_shape[0] - n, x.dtype)]) for x in xs]
    ref = reference(kern, xs)
    return compare(kern, out, ref, src)


def reference(kern, xs):
    """The kernel's computation in numpy, statement by statement."""
    env = {"np": np, "D": {d: np_dtype(d) for d in INTS + FLOATS}, "_tdiv": _tdiv, "_fp8": _fp8}
    for i, x in enumerate(xs):
        env[f"x{i}"] = x
    with np.errstate(all="ignore"):
        for name, d, text in kern.ref:
            env[name] = np.asarray(eval(text, env)).astype(np_dtype(d))
        v = env[kern.out_name]
        if kern.two_d:
            if kern.red == "sum":
                kern.sum_scale = np.abs(v.astype(np.float64)).sum(axis=1)
                v = v.astype(np_dtype(kern.red_dt)).sum(axis=1, dtype=np_dtype(kern.red_dt)
                                                        if kern.red_dt in INTS else np.float64)
            elif kern.out_dt in FLOATS:
                v = (np.fmax if kern.red == "max" else np.fmin).reduce(v, axis=1)
            else:
                v = v.max(axis=1) if kern.red == "max" else v.min(axis=1)
        return np.asarray(v).astype(np_dtype(kern.out_dt))


def n_terms(kern):
    return kern.n_cols


def compare(kern, out, ref, src):
    if kern.out_dt in FLOATS:
        o, e = out.astype(np.float64), ref.astype(np.float64)
        if kern.float_sum:
            # another order of additions: within a few units of the type's
            # precision of the sum of magnitudes; rows whose sum may overflow
            # the type on the way (an order question) are not compared
            eps = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23,
                   "float64": 2.0 ** -52}[kern.out_dt]
            top = float(np.finfo(np.float16).max if kern.out_dt == "float16" else
                        np.finfo(np.float32).max if kern.out_dt in ("bfloat16", "float32") else
                        np.finfo(np.float64).max)
            scale = kern.sum_scale
            check = np.isfinite(scale) & (scale < top / 4)
            bad = check & ~(np.abs(o - e) <= eps * 4 * n_terms(kern) * np.maximum(scale, 1e-30))
        else:
            bad = ~((o == e) | (np.isnan(o) & np.isnan(e)))
    else:
        bad = out != ref
    if not bad.any():
        return None
    i = np.nonzero(bad)[0][:4]
    return (f"seed {kern.seed}: {int(bad.sum())} of {bad.size} differ; at {i.tolist()}: "
            f"zetile {out[i].tolist()}, numpy {ref[i].tolist()}\n{src}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kernels", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--show", action="store_true", help="print each kernel's source")
    args = ap.parse_args(argv)
    import zetile
    zetile.set_device("cpu")
    t0 = time.time()
    fails = errors = 0
    for s in range(args.seed, args.seed + args.kernels):
        try:
            msg = run_one(s, args.show)
        except Exception as e:  # a compile or launch error is a finding too
            errors += 1
            print(f"seed {s}: {type(e).__name__}: {str(e)[:2000]}\n{Kernel(s).source()}")
            continue
        if msg:
            fails += 1
            print(msg)
    print(f"numpy_kernels: {args.kernels} kernels (seeds {args.seed}..{args.seed + args.kernels - 1}), "
          f"{fails} wrong results, {errors} errors, {time.time() - t0:.0f} s")
    return 1 if fails or errors else 0


if __name__ == "__main__":
    sys.exit(main())
