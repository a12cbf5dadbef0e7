"""Loading the kernels twice and comparing the two runs."""
from __future__ import annotations

import dataclasses
import os
import sys
import traceback
import types

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join(HERE, "kernels.py")

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint32"]
FLOAT_DTYPES = ["float16", "bfloat16", "float32", "float64"]
ALL_DTYPES = INT_DTYPES + FLOAT_DTYPES

TRITON_IMPORTS = ("import triton\n", "import triton.language as tl\n")
ZETILE_IMPORTS = ("import zetile as triton\n", "import zetile.language as tl\n")


def load_kernels(which, path=KERNELS):
    """kernels.py (or `path`) as a module run by `which` ("triton" or
    "zetile"); None if Triton is not installed."""
    src = open(path).read()
    if which == "triton":
        os.environ["TRITON_INTERPRET"] = "1"
        try:
            import triton  # noqa: F401
        except ImportError:
            return None
    else:
        for a, b in zip(TRITON_IMPORTS, ZETILE_IMPORTS):
            assert a in src, f"kernels.py must contain the line {a!r}"
            src = src.replace(a, b, 1)  # the only change: same line count, same lines
    stem = os.path.splitext(os.path.basename(path))[0]
    mod = types.ModuleType(f"conformance_{stem}_{which}")
    mod.__file__ = path
    sys.modules[mod.__name__] = mod
    exec(compile(src, path, "exec"), mod.__dict__)
    return mod


@dataclasses.dataclass
class Case:
    category: str
    name: str
    kernel: str
    inputs: list
    in_dtypes: list
    op: str
    scalars: dict
    constexprs: dict
    grid: tuple
    out_dtype: str | None
    in_sizes: list | None = None
    out_size: int | None = None


_DIV_OPS = {"truediv", "floordiv", "mod"}
_MATH_OPS = {"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "sin", "cos", "sigmoid", "erf", "fma",
             "sum", "div_lit", "truediv", "calls", "mod"}


def _torch_dtype(name):
    import torch
    return getattr(torch, name)


def _inputs(case, rng):
    out = []
    for i, dt in enumerate(case.in_dtypes):
        size = (case.in_sizes or [None] * len(case.in_dtypes))[i] or case.scalars.get("N", 64)
        divisor = i == 1 and case.op in _DIV_OPS
        if dt in FLOAT_DTYPES:
            if case.op in ("cast", "bitcast") and case.op != "bitcast":
                v = rng.uniform(0, 100, size)
            elif case.op == "argmax_fast":
                v = rng.permutation(size).astype(np.float64) - size // 2  # which tie wins is unspecified
            elif case.category in ("argreduce", "scan"):
                v = rng.integers(-4, 5, size).astype(np.float64)  # ties, exactly summable
            else:
                v = rng.standard_normal(size) * 3
            if divisor:
                v = np.where(np.abs(v) < 0.25, 0.5, v)
            if case.op == "shl" or case.op == "shr":
                v = np.round(v)
            arr = v.astype(np.float64)
        else:
            lo, hi = (0, 40) if dt.startswith("uint") else (-40, 40)
            if case.op in ("cast",):
                lo, hi = 0, 100
            if case.category in ("reduce", "argreduce", "scan"):
                lo, hi = (0, 5) if dt.startswith("uint") else (-5, 5)
            if case.category == "atomic" and case.op in ("atomic_or", "atomic_xor", "atomic_and"):
                lo, hi = 0, 1 << 20
            arr = rng.integers(lo, hi, size)
            if case.op == "argmax_fast":
                arr = rng.permutation(size) - size // 2  # which tie wins is unspecified
            if divisor:
                arr = np.where(arr == 0, 3, arr)
        out.append((arr, dt))
    return out


def _out_dtype(case):
    if case.out_dtype:
        return case.out_dtype
    if any(d in FLOAT_DTYPES for d in case.in_dtypes):
        return "float64"
    return "int64"


def _make(arr, dt):
    import torch
    if dt == "bfloat16":
        return torch.tensor(arr, dtype=torch.float32).to(torch.bfloat16)
    if dt in ("uint32",):
        return torch.from_numpy(np.asarray(arr).astype(np.uint32).copy())
    return torch.from_numpy(np.asarray(arr).astype(dt).copy())


def _run(mod, case, inputs, out_dt, out_size):
    import torch
    ins = [_make(a, dt) for a, dt in inputs]
    out = torch.zeros(out_size, dtype=_torch_dtype(out_dt)) if out_dt != "uint32" else \
        torch.zeros(out_size, dtype=torch.uint32)
    kernel = getattr(mod, case.kernel)
    kernel[case.grid](*ins, out, *case.scalars.values(), **case.constexprs)
    if out.dtype == torch.bfloat16:
        return out.float().numpy().astype(np.float64)
    return out.numpy()


def _tolerance(case, out_dt):
    dts = set(case.in_dtypes) | {out_dt}
    if "bfloat16" in dts:
        base = 8e-3
    elif "float16" in dts:
        base = 1e-3
    elif "float32" in dts:
        base = 2e-6
    else:
        base = 1e-12
    if case.op in _MATH_OPS:
        base *= 10
    if case.category == "dot":
        base *= case.constexprs["K"]  # sums of K products, in another order than numpy's
    return base


def run_case(case, triton_mod, zetile_mod):
    """Returns (outcome, detail): outcome is passed, failed or oracle-skip."""
    if "bfloat16" in case.in_dtypes or case.out_dtype == "bfloat16":
        # Measured with triton 3.9: its interpreter reads torch bfloat16 tensors as
        # garbage (1.5 + 1.0 -> 2.55e38), so it cannot be the oracle for them.
        return "oracle-skip", "Triton's interpreter misreads bfloat16 tensors (1.5 + 1.0 -> 2.55e38)"
    if case.op == "shr" and len(set(d.startswith("u") for d in case.in_dtypes if d in INT_DTYPES)) == 2:
        # Measured with triton 3.9: for int8 >> uint8 the interpreter shifts the int8 data
        # but labels the result uint8, so it is sign-extended where compiled Triton
        # zero-extends (the result type is the promoted uint8).
        return "oracle-skip", "Triton's interpreter keeps the unpromoted data for mixed-sign >>"
    import zlib
    rng = np.random.default_rng(zlib.crc32(f"{case.category}/{case.name}".encode()))
    inputs = _inputs(case, rng)
    out_dt = _out_dtype(case)
    out_size = case.out_size or case.scalars.get("N", 64)
    t_res = t_exc = z_res = z_exc = None
    try:
        t_res = _run(triton_mod, case, inputs, out_dt, out_size)
    except Exception as e:  # noqa: BLE001
        t_exc = e
    try:
        z_res = _run(zetile_mod, case, inputs, out_dt, out_size)
    except Exception as e:  # noqa: BLE001
        z_exc = e
    if t_exc is not None and "Block pointers have been removed" in str(t_exc) \
            and case.kernel in REFERENCES and z_exc is None:
        # Triton 3.9 dropped block pointers (zetile keeps them, as Triton <= 3.7 did):
        # numpy is the oracle for these.
        t_res = REFERENCES[case.kernel](inputs, out_dt).astype(z_res.dtype)
        t_exc = None
    if t_exc is not None and z_exc is not None:
        return "passed", "both reject the program"
    if t_exc is not None:
        msg = f"{type(t_exc).__name__}: {t_exc}"
        if _oracle_limitation(t_exc):
            return "oracle-skip", f"Triton's interpreter cannot run this case: {msg.splitlines()[0]}"
        return "failed", f"Triton rejects the program but zetile runs it: {msg[-2000:]}"
    if z_exc is not None:
        tb = "".join(traceback.format_exception_only(type(z_exc), z_exc))
        return "failed", f"zetile fails where Triton runs: {tb[-3000:]}"
    if t_res.dtype.kind in "iub" and z_res.dtype.kind in "iub":
        if np.array_equal(t_res, z_res):
            return "passed", ""
        bad = np.nonzero(t_res != z_res)[0][:8]
        return "failed", (f"integer mismatch at {bad.tolist()}: triton {t_res[bad].tolist()} "
                          f"zetile {z_res[bad].tolist()}")
    t64, z64 = t_res.astype(np.float64), z_res.astype(np.float64)
    tol = _tolerance(case, out_dt)
    if np.allclose(z64, t64, rtol=tol, atol=tol, equal_nan=True):
        return "passed", ""
    err = np.abs(z64 - t64)
    i = int(np.nanargmax(err))
    return "failed", (f"max |diff| {err[i]:.3g} at {i}: triton {t64[i]!r} zetile {z64[i]!r} "
                      f"(tolerance {tol:g})")


REFERENCES = {
    "block_ptr_copy": lambda inputs, out_dt: np.asarray(inputs[0][0]).astype(out_dt) * 2 + 1,
}


def _oracle_limitation(e):
    text = f"{type(e).__name__}: {e}"
    return any(s in text for s in ("not supported by the interpreter", "interpreter does not support",
                                   "Unsupported dtype", "unsupported dtype"))


# ------------------------------------------------------------ the Xe target
# Every case is also built for pvc (spirv-val and ocloc: ~100 s for all
# cases), or a sample of one in four ("sample"), or none ("off").
XE_MODE = os.environ.get("ZETILE_CONFORMANCE_XE", "all")  # all | sample | off
# ZETILE_CONFORMANCE_XE_WARPS=1 builds each case at num_warps=1 instead of the
# compiler's choice: a 64-element block is then 4 elements a lane, so the lane
# packing (lowering/xe/xe_lane_pack.c) applies, which one element a lane never
# reaches (Debian's IGC aborted on packed boolean xor that spirv-val accepted).
# test_conformance.py's test_xe_packed_sample builds a few cases so always.
XE_WARPS = int(os.environ.get("ZETILE_CONFORMANCE_XE_WARPS", "0")) or None


def xe_selected(case):
    import zlib
    if XE_MODE == "off":
        return False
    if XE_MODE == "all":
        return True
    return zlib.crc32(f"{case.category}/{case.name}".encode()) % 4 == 0


def xe_check(case, zetile_mod, num_warps=None):
    """Compiles the case's zetile specialization for pvc on the compat path
    (what Debian 12's driver needs) and checks the SPIR-V with spirv-val
    (E1) and Intel's ocloc (E2; an IGC abort on a case spirv-val accepted was
    found this way). num_warps: the subgroups (else XE_WARPS, else the
    compiler's choice).
    Returns (outcome, detail): xe-ok, xe-unsupported, xe-failed."""
    import shutil
    import subprocess
    import tempfile

    import torch  # noqa: F401 - inputs are torch tensors, as for the CPU run
    import zetile
    rng = np.random.default_rng(0)
    inputs = _inputs(case, rng)
    out_dt = _out_dtype(case)
    out_size = case.out_size or case.scalars.get("N", 64)
    ins = [_make(a, dt) for a, dt in inputs]
    import torch as th
    out = th.zeros(out_size, dtype=_torch_dtype(out_dt)) if out_dt != "uint32" else \
        th.zeros(out_size, dtype=th.uint32)
    kernel = getattr(zetile_mod, case.kernel)
    bound = kernel._bind((*ins, out, *case.scalars.values()), dict(case.constexprs))
    key, arg_types, div, constexprs, _, descs = kernel.specialize(bound, zetile.get_device("cpu"))
    text = kernel.build_tile_ir(arg_types, constexprs, div, descs)
    try:
        warps = num_warps or XE_WARPS
        art = zetile._C.compile(text, target="pvc", compat=True, cached=True,
                                **({"num_warps": warps} if warps else {}))
    except zetile._C.UnsupportedError as e:
        return "xe-unsupported", str(e).splitlines()[0][:200]
    except zetile._C.Error as e:
        return "xe-failed", f"pvc compile failed: {str(e)[:1500]}"
    spv = art.get("spirv")
    if shutil.which("spirv-val"):
        with tempfile.NamedTemporaryFile(suffix=".spv") as f:
            f.write(spv)
            f.flush()
            r = subprocess.run(["spirv-val", f.name], capture_output=True, text=True)
        if r.returncode != 0:
            return "xe-failed", "spirv-val: " + (r.stdout + r.stderr)[:1500]
    if shutil.which("ocloc"):
        from zetile.tools import isa
        with tempfile.TemporaryDirectory() as d:
            try:
                isa.ocloc_compile(spv, d, "pvc")
            except RuntimeError as e:
                return "xe-failed", str(e)[-1500:]
        return "xe-ok", "spirv-val + ocloc"
    return "xe-ok", "spirv-val"
