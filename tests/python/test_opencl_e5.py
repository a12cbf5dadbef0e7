"""Evidence level E5: zetile's Xe SPIR-V (target pvc, byte for byte what the
Level Zero driver gets) computes the right numbers when executed, here by
Intel's OpenCL CPU runtime ("opencl:cpu", pip package intel-opencl-rt) with
the Intel GPU-only builtins linked from zetile's emulation library
(runtime/opencl/emu). Shapes are not multiples of the blocks, so masks and
tails are exercised. Every kernel runs in its own fresh interpreter with
ZETILE_DEVICE=opencl:cpu, as a user would select the device."""
import json

import numpy as np
import pytest

import zetile
from zt_testutil import run_python


def _opencl_cpu_or_skip():
    names = [d["name"] for d in zetile.devices()]
    if "opencl:cpu" not in names:
        try:
            zetile.get_device("opencl:cpu")
        except zetile.Error as e:  # the reason: which paths were tried
            pytest.skip(f"Intel's OpenCL CPU runtime is not available: {e}")
        pytest.skip("opencl:cpu is not listed")


def _run(code):
    r = run_python(code, env={"ZETILE_DEVICE": "opencl:cpu"})
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, r.stdout + r.stderr
    return json.loads(lines[-1][len("RESULT "):])


def test_device_is_listed_and_runs_pvc_spirv():
    _opencl_cpu_or_skip()
    info = zetile.get_device("opencl:cpu").info
    assert info["backend"] == "opencl"
    assert info["target"] == "pvc"
    assert info["host_memory"] is True


@pytest.mark.parametrize("n,block", [(1000, 64), (4097, 1024), (1, 16)])
def test_vector_add(n, block):
    _opencl_cpu_or_skip()
    res = _run(f"""
        import json, numpy as np, zetile
        from vector_add import add_kernel
        assert zetile.get_device().info["name"] == "opencl:cpu"
        rng = np.random.default_rng(0)
        n = {n}
        x = rng.standard_normal(n).astype(np.float32)
        y = rng.standard_normal(n).astype(np.float32)
        out = np.full(n + 16, 7.0, np.float32)      # guard cells past the end
        ck = add_kernel[(zetile.cdiv(n, {block}),)](x, y, out, n, BLOCK_SIZE={block})
        zetile.get_device().synchronize()
        assert ck.metadata["target"] == "pvc", ck.metadata
        print("RESULT", json.dumps({{"err": float(np.abs(out[:n] - (x + y)).max()),
                                    "guard": bool((out[n:] == 7.0).all())}}))
    """)
    assert res["err"] == 0.0
    assert res["guard"], "the kernel wrote past the masked tail"


BF16_KERNEL = """
import zetile
import zetile.language as tl


@zetile.jit
def bf16_ops(x_ptr, y_ptr, out_ptr, big_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)   # bf16
    y = tl.load(y_ptr + offs, mask=mask, other=0.0)   # bf16
    r = tl.where(x > y, x * y + x, tl.maximum(x, y) - 1.5)   # bf16 arithmetic
    tl.store(out_ptr + offs, r, mask=mask)
    tl.store(big_ptr + offs, x.to(tl.float32) * 3.0 + y.to(tl.float32), mask=mask)
"""


def test_bf16_elementwise(tmp_path):
    """1-D bf16 on Xe: i16 bits in the SPIR-V, arithmetic in f32 with
    round-to-nearest-even back to bf16 (elementwise, where, maximum, casts):
    bit-identical to ml_dtypes doing the same f32 computation."""
    _opencl_cpu_or_skip()
    (tmp_path / "bf16_kernel.py").write_text(BF16_KERNEL)
    res = _run(f"""
        import json, sys, numpy as np, ml_dtypes, zetile
        sys.path.insert(0, {str(tmp_path)!r})
        from bf16_kernel import bf16_ops
        bf = ml_dtypes.bfloat16
        rng = np.random.default_rng(3)
        n = 1000
        x = (rng.standard_normal(n) * 4).astype(bf)
        y = (rng.standard_normal(n) * 4).astype(bf)
        x[:4] = [np.nan, np.inf, -0.0, 1e-40]     # NaN, inf, signed zero, subnormal
        out = np.zeros(n, bf)
        big = np.zeros(n, np.float32)
        bf16_ops[(zetile.cdiv(n, 128),)](x, y, out, big, n, BLOCK=128, num_warps=1)
        zetile.get_device().synchronize()
        xf, yf = x.astype(np.float32), y.astype(np.float32)
        prod = (xf * yf).astype(bf).astype(np.float32)            # bf16 * bf16 -> bf16
        lhs = (prod + xf).astype(bf)                              # ... + bf16 -> bf16
        mx = np.fmax(xf, yf).astype(bf)          # tl.maximum: propagate_nan=NONE
        rhs = (mx.astype(np.float32) - np.float32(1.5)).astype(bf)
        want = np.where(xf > yf, lhs, rhs)
        same = (want.view(np.uint16) == out.view(np.uint16)) | (np.isnan(want.astype(np.float32)) & np.isnan(out.astype(np.float32)))
        want_big = xf * np.float32(3.0) + yf
        print("RESULT", json.dumps({{"bad": int((~same).sum()),
                                     "first": [float(v) for v in out[:8].astype(np.float32)],
                                     "big_err": float(np.nanmax(np.abs(np.where(np.isfinite(want_big), big - want_big, 0))))}}))
    """)
    assert res["bad"] == 0, res
    assert res["big_err"] == 0.0, res


REDUCE2D_KERNEL = """
import zetile
import zetile.language as tl


@zetile.jit
def reduce2d(X, OUT0, OUT1, M: tl.constexpr, N: tl.constexpr, OP: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    if OP == "sum":
        tl.store(OUT0 + rn, tl.sum(x, axis=0))
        tl.store(OUT1 + rm, tl.sum(x, axis=1))
    else:
        tl.store(OUT0 + rn, tl.max(x, axis=0))
        tl.store(OUT1 + rm, tl.max(x, axis=1))
"""


@pytest.mark.parametrize("dt,op,m,n", [("float32", "sum", 8, 32), ("int32", "sum", 16, 64),
                                       ("float32", "max", 32, 16), ("int8", "max", 8, 32),
                                       ("bfloat16", "sum", 8, 32), ("bfloat16", "max", 16, 16)])
def test_reduce_2d(tmp_path, dt, op, m, n):
    """2-D reductions on Xe (one subgroup): along rows (elementwise over each
    block column's rows) and along columns (one 16-lane reduction per row,
    rows gathered into lanes by selects); max skips a NaN, as Triton's does."""
    _opencl_cpu_or_skip()
    (tmp_path / "reduce2d_kernel.py").write_text(REDUCE2D_KERNEL)
    res = _run(f"""
        import json, sys, numpy as np, zetile, ml_dtypes
        sys.path.insert(0, {str(tmp_path)!r})
        from reduce2d_kernel import reduce2d
        rng = np.random.default_rng(7)
        M, N, dt = {m}, {n}, np.dtype("{dt}")
        if dt.kind == "f":
            x = rng.standard_normal((M, N)).astype(dt)
            x[1, 3] = np.nan if "{op}" == "max" else x[1, 3]
        else:
            x = rng.integers(-100, 100, (M, N)).astype(dt)
        o0 = np.zeros(N, dt)
        o1 = np.zeros(M, dt)
        reduce2d[(1,)](x, o0, o1, M=M, N=N, OP="{op}", num_warps=1)
        zetile.get_device().synchronize()
        if "{op}" == "sum" and dt.kind == "V":   # bf16: f32 accumulation, one rounding
            xf = x.astype(np.float32)
            w0, w1 = xf.sum(0).astype(dt), xf.sum(1).astype(dt)
        elif "{op}" == "sum":
            w0, w1 = x.sum(0, dtype=dt), x.sum(1, dtype=dt)
        else:
            # tl.max ignores NaN (Triton: propagate_nan defaults to NONE), as
            # zetile's CPU target does.
            w0, w1 = np.fmax.reduce(x, 0), np.fmax.reduce(x, 1)
        def err(a, b):
            a, b = a.astype(np.float64), b.astype(np.float64)
            same_nan = np.isnan(a) == np.isnan(b)
            return float(np.nanmax(np.abs(np.where(np.isnan(a) | np.isnan(b), 0, a - b)))) \
                if same_nan.all() else float("inf")
        print("RESULT", json.dumps({{"e0": err(o0, w0), "e1": err(o1, w1)}}))
    """)
    tol = {"float32": 1e-5, "bfloat16": 6e-2}.get(dt, 0.0)
    assert res["e0"] <= tol and res["e1"] <= tol, res


SCAN_KERNEL = """
import zetile
import zetile.language as tl


@zetile.jit
def scan2d(X, OUT, M: tl.constexpr, N: tl.constexpr, AXIS: tl.constexpr, OP: tl.constexpr,
           REVERSE: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    if OP == "cumsum":
        r = tl.cumsum(x, axis=AXIS, reverse=REVERSE)
    else:
        r = tl.cumprod(x % 3 + 1, axis=AXIS, reverse=REVERSE)
    tl.store(OUT + rm[:, None] * N + rn[None, :], r)


@zetile.jit
def scan1d(X, OUT, n, BLOCK: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(X + offs, mask=offs < n, other=0)
    tl.store(OUT + offs, tl.cumsum(x, 0, reverse=REVERSE), mask=offs < n)
"""


@pytest.mark.parametrize("op,dt,axis,rev,m,n", [
    ("cumsum", "int32", 1, False, 4, 16), ("cumsum", "float32", 0, True, 4, 16),
    ("cumprod", "int32", 0, False, 8, 32), ("cumsum", "int32", 1, True, 2, 32),
])
def test_scans(tmp_path, op, dt, axis, rev, m, n):
    """Scans on Xe (one subgroup): along lanes by lane shuffles (Hillis-
    Steele), with a carry across 16-lane chunks; along rows elementwise."""
    _opencl_cpu_or_skip()
    (tmp_path / "scan_kernels.py").write_text(SCAN_KERNEL)
    res = _run(f"""
        import json, sys, numpy as np, zetile
        sys.path.insert(0, {str(tmp_path)!r})
        from scan_kernels import scan2d, scan1d
        rng = np.random.default_rng(2)
        M, N, dt = {m}, {n}, np.dtype("{dt}")
        x = rng.integers(-9, 10, (M, N)).astype(dt)
        out = np.zeros((M, N), dt)
        scan2d[(1,)](x, out, M=M, N=N, AXIS={axis}, OP="{op}", REVERSE={rev}, num_warps=1)
        v = rng.integers(-9, 10, 40).astype(dt)
        o1 = np.zeros(64, dt)
        scan1d[(1,)](v, o1, 40, BLOCK=64, REVERSE={rev}, num_warps=1)
        zetile.get_device().synchronize()
        src = x if "{op}" == "cumsum" else np.fmod(x, 3) + 1   # C remainder, as Triton
        f = np.cumsum if "{op}" == "cumsum" else np.cumprod
        want = np.flip(f(np.flip(src, {axis}), axis={axis}), {axis}) if {rev} else f(src, axis={axis})
        want1 = np.flip(np.cumsum(np.flip(v))) if {rev} else np.cumsum(v)
        print("RESULT", json.dumps({{"err2": float(np.abs(out.astype(np.float64) - want).max()),
                                     "err1": float(np.abs(o1[:40].astype(np.float64) - want1).max())}}))
    """)
    assert res["err2"] == 0 and res["err1"] == 0, res


SOFTMAX2D_KERNEL = """
import zetile
import zetile.language as tl


@zetile.jit
def softmax_rows(X, B, OUT, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(X + rm[:, None] * N + rn[None, :]) + tl.load(B + rn)[None, :]
    x = x - tl.max(x, axis=1)[:, None]
    p = tl.exp(x)
    tl.store(OUT + rm[:, None] * N + rn[None, :], p / tl.sum(p, axis=1)[:, None])
"""


ROWS_KERNEL = """
import zetile
import zetile.language as tl


@zetile.jit
def row_softmax(X, OUT, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    x = x - tl.max(x, axis=1)[:, None]
    p = tl.exp(x)
    tl.store(OUT + rm[:, None] * N + rn[None, :], p / tl.sum(p, axis=1)[:, None])


@zetile.jit
def col_sums(X, OUT, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    tl.store(OUT + rn, tl.sum(x, axis=0))
"""


def test_row_and_column_work_over_several_subgroups(tmp_path):
    """zetile's own split (no num_warps): a 64x64 row softmax is split by rows
    (4 subgroups of 16 whole rows) and 32x128 column sums by columns, so the
    reductions and broadcasts stay inside each subgroup. Intel's CPU runtime
    runs several subgroups per workgroup when no SLM is involved."""
    _opencl_cpu_or_skip()
    (tmp_path / "rows_kernel.py").write_text(ROWS_KERNEL)
    res = _run(f"""
        import json, sys, numpy as np, zetile
        sys.path.insert(0, {str(tmp_path)!r})
        from rows_kernel import row_softmax, col_sums
        def ls(k):  # work-items per workgroup ("64,1,1" or a list)
            v = k.metadata["local_size"]
            return int(str(v).strip("[]() ").split(",")[0])
        rng = np.random.default_rng(6)
        x = (rng.standard_normal((64, 64)) * 3).astype(np.float32)
        y = np.zeros_like(x)
        ck = row_softmax[(1,)](x, y, M=64, N=64)
        z = np.exp(x.astype(np.float64) - x.max(1, keepdims=True))
        want = z / z.sum(1, keepdims=True)
        c = rng.standard_normal((32, 128)).astype(np.float32)
        o = np.zeros(128, np.float32)
        ck2 = col_sums[(1,)](c, o, M=32, N=128)
        zetile.get_device().synchronize()
        print("RESULT", json.dumps({{"err": float(np.abs(y - want).max()),
                                     "err2": float(np.abs(o - c.astype(np.float64).sum(0)).max()),
                                     "ls": ls(ck), "ls2": ls(ck2)}}))
    """)
    assert res["err"] < 1e-6 and res["err2"] < 1e-4, res
    assert res["ls"] > 16 and res["ls2"] > 16, res  # several subgroups each


def test_row_softmax_2d(tmp_path):
    """Per-row statistics broadcast back over 2-D tiles (x - max[:, None],
    bias[None, :]), as attention and 2-D softmax kernels do."""
    _opencl_cpu_or_skip()
    (tmp_path / "softmax2d_kernel.py").write_text(SOFTMAX2D_KERNEL)
    res = _run(f"""
        import json, sys, numpy as np, zetile
        sys.path.insert(0, {str(tmp_path)!r})
        from softmax2d_kernel import softmax_rows
        rng = np.random.default_rng(4)
        M, N = 16, 32
        x = rng.standard_normal((M, N)).astype(np.float32) * 3
        b = rng.standard_normal(N).astype(np.float32)
        out = np.zeros((M, N), np.float32)
        softmax_rows[(1,)](x, b, out, M=M, N=N, num_warps=1)
        zetile.get_device().synchronize()
        z = (x + b).astype(np.float64)
        z = np.exp(z - z.max(1, keepdims=True))
        want = z / z.sum(1, keepdims=True)
        print("RESULT", json.dumps({{"err": float(np.abs(out - want).max())}}))
    """)
    assert res["err"] < 1e-6, res


ARG_KERNEL = """
import zetile
import zetile.language as tl


@zetile.jit
def arg2d(X, O0, O1, V, n, M: tl.constexpr, N: tl.constexpr, MAX: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(X + rm[:, None] * N + rn[None, :])
    offs = tl.arange(0, 64)
    v = tl.load(V + offs, mask=offs < n, other=0)
    if MAX:
        tl.store(O0 + rn, tl.argmax(x, axis=0))
        tl.store(O1 + rm, tl.argmax(x, axis=1))
        tl.store(O0 + N, tl.argmax(v, axis=0))
    else:
        tl.store(O0 + rn, tl.argmin(x, axis=0))
        tl.store(O1 + rm, tl.argmin(x, axis=1))
        tl.store(O0 + N, tl.argmin(v, axis=0))
"""


@pytest.mark.parametrize("dt,is_max", [("int32", True), ("float32", False), ("int8", True)])
def test_argmax_argmin(tmp_path, dt, is_max):
    """argmax/argmin with ties (small integer values): the first index wins,
    as numpy's and Triton's tie_break_left; 1-D with a masked tail and 2-D
    along both axes."""
    _opencl_cpu_or_skip()
    (tmp_path / "arg_kernel.py").write_text(ARG_KERNEL)
    res = _run(f"""
        import json, sys, numpy as np, zetile
        sys.path.insert(0, {str(tmp_path)!r})
        from arg_kernel import arg2d
        rng = np.random.default_rng(8)
        M, N, n, dt = 16, 32, 45, np.dtype("{dt}")
        x = rng.integers(-4, 5, (M, N)).astype(dt)
        v = rng.integers(-4, 5, 64).astype(dt)
        o0 = np.full(N + 1, -7, np.int32)
        o1 = np.full(M, -7, np.int32)
        arg2d[(1,)](x, o0, o1, v, n, M=M, N=N, MAX={is_max}, num_warps=1)
        zetile.get_device().synchronize()
        f = np.argmax if {is_max} else np.argmin
        ok = (np.array_equal(o0[:N], f(x, 0)) and np.array_equal(o1, f(x, 1))
              and int(o0[N]) == int(f(v[:n])))
        print("RESULT", json.dumps({{"ok": bool(ok), "o1": o1.tolist()[:8],
                                     "want1": f(x, 1).tolist()[:8], "v": int(o0[N]), "wv": int(f(v[:n]))}}))
    """)
    assert res["ok"], res


def test_bf16_softmax():
    """The softmax tutorial on bf16 rows: bf16 max/sum reductions run on the
    f32 values (max exact; the sum accumulates in f32, rounded once), the
    elementwise ops in f32 rounded to bf16 per op."""
    _opencl_cpu_or_skip()
    res = _run("""
        import json, numpy as np, ml_dtypes, zetile
        from softmax import softmax_kernel
        bf = ml_dtypes.bfloat16
        rng = np.random.default_rng(12)
        rows, cols = 6, 100
        x = (rng.standard_normal((rows, cols)) * 2).astype(bf)
        y = np.zeros((rows, cols), bf)
        softmax_kernel[(rows,)](y, x, cols, cols, rows, cols, BLOCK_SIZE=128, num_warps=1)
        zetile.get_device().synchronize()
        z = x.astype(np.float64)
        z = np.exp(z - z.max(1, keepdims=True))
        want = z / z.sum(1, keepdims=True)
        print("RESULT", json.dumps({"err": float(np.abs(y.astype(np.float64) - want).max()),
                                    "rowsum": float(np.abs(y.astype(np.float64).sum(1) - 1).max())}))
    """)
    # bf16 keeps 8 bits: a few ulps of the largest probabilities.
    assert res["err"] < 2e-2 and res["rowsum"] < 5e-2, res


# One subgroup per program (num_warps=1); several subgroups, which reduce
# through SLM: test_slm_reductions_run.
# (BLOCK_SIZE 1024 in one subgroup takes the Xe lowering more than 5 minutes.)
@pytest.mark.parametrize("rows,cols,programs", [(37, 100, None), (5, 250, 3), (64, 16, 8)])
def test_fused_softmax(rows, cols, programs):
    _opencl_cpu_or_skip()
    res = _run(f"""
        import json, numpy as np, zetile
        from softmax import softmax_kernel
        rng = np.random.default_rng(1)
        x = rng.standard_normal(({rows}, {cols})).astype(np.float32) * 4
        out = np.zeros_like(x)
        block = zetile.next_power_of_2({cols})
        grid = (min({rows}, {programs} or {rows}),)
        softmax_kernel[grid](out, x, {cols}, {cols}, {rows}, {cols}, BLOCK_SIZE=block, num_warps=1)
        zetile.get_device().synchronize()
        xd = x.astype(np.float64)
        ref = np.exp(xd - xd.max(1, keepdims=True))
        ref /= ref.sum(1, keepdims=True)
        print("RESULT", json.dumps({{"err": float(np.abs(out - ref).max()),
                                    "rowsum": float(np.abs(out.sum(1) - 1).max())}}))
    """)
    assert res["err"] < 1e-6, res
    assert res["rowsum"] < 1e-5, res


@pytest.mark.parametrize("m,n,block", [(19, 300, 128), (3, 1000, 256), (8, 16, 16)])
def test_layer_norm(m, n, block):
    _opencl_cpu_or_skip()
    res = _run(f"""
        import json, numpy as np, zetile
        from layer_norm import _layer_norm_fwd_fused
        rng = np.random.default_rng(2)
        x = (rng.standard_normal(({m}, {n})) * 3 + 1).astype(np.float32)
        w = rng.standard_normal({n}).astype(np.float32)
        b = rng.standard_normal({n}).astype(np.float32)
        y = np.zeros_like(x)
        mean = np.zeros({m}, np.float32)
        rstd = np.zeros({m}, np.float32)
        _layer_norm_fwd_fused[({m},)](x, y, w, b, mean, rstd, {n}, {n}, 1e-5,
                                      BLOCK_SIZE={block}, num_warps=1)
        zetile.get_device().synchronize()
        xd = x.astype(np.float64)
        mu = xd.mean(1)
        var = ((xd - mu[:, None]) ** 2).mean(1)
        rs = 1 / np.sqrt(var + 1e-5)
        ref = (xd - mu[:, None]) * rs[:, None] * w + b
        print("RESULT", json.dumps({{"y": float(np.abs(y - ref).max()),
                                    "mean": float(np.abs(mean - mu).max()),
                                    "rstd": float(np.abs(rstd / rs - 1).max())}}))
    """)
    assert res["y"] < 1e-4, res
    assert res["mean"] < 1e-5, res
    assert res["rstd"] < 1e-5, res


@pytest.mark.parametrize("kind,dt", [
    ("pointer", "float16"), ("descriptor", "float16"), ("block_ptr", "float16"),
    ("descriptor", "bfloat16"), ("block_ptr", "bfloat16"), ("pointer", "bfloat16"),
    ("pointer", "float32"), ("descriptor", "float32"), ("block_ptr", "float32"),
])
def test_matmul_dpas_and_block_io(kind, dt):
    """Matmul on the pvc path: DPAS (intel_sub_group_*_matrix_mad_k16) and,
    for descriptors and block pointers, 2D block reads (plain and VNNI
    transform), prefetches and writes: all emulated here from their specs."""
    _opencl_cpu_or_skip()
    res = _run(f"""
        import json, numpy as np, zetile, ml_dtypes
        import matmul as mm
        dt = {{"float16": np.float16, "bfloat16": ml_dtypes.bfloat16,
              "float32": np.float32}}["{dt}"]
        rng = np.random.default_rng(4)
        M, N, K = 127, 264, 72
        a = rng.standard_normal((M, K)).astype(dt)
        b = rng.standard_normal((K, N)).astype(dt)
        c = np.full((M, N), 7, dt)
        fn = {{"pointer": mm.matmul, "descriptor": mm.matmul_descriptor,
              "block_ptr": mm.matmul_block_ptr}}["{kind}"]
        fn(a, b, c)
        zetile.get_device().synchronize()
        ref = a.astype(np.float64) @ b.astype(np.float64)
        print("RESULT", json.dumps({{"err": float(np.abs(c.astype(np.float64) - ref).max()),
                                    "scale": float(np.abs(ref).max())}}))
    """)
    # fp32 accumulation; the output is rounded to fp16 (11 bits) or bf16 (8 bits).
    # fp32 inputs (Triton's default input_precision "tf32"): three bf16 DPAS
    # per product, about 16 bits; one plain bf16 DPAS would miss by ~1e-2.
    tol = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 3e-4}[dt]
    assert res["err"] <= tol * max(res["scale"], 1.0), res


@pytest.mark.parametrize("kind", ["block_ptr", "pointer"])
def test_block_io_base_not_64_byte_aligned(kind):
    """2D block IO needs 64-byte aligned bases: zetile aligns the base down and
    shifts the columns (xe_matrix.c). Views that start 16 and 40 (pointer
    kernel: 48, to keep the launch hints) bytes into their buffers must give
    the same numbers. The pointer kernel's sizes are multiples of 16, so its
    pointer tensors are 2D block IO too, its K-loop bases aligned from their
    loop-invariant roots."""
    _opencl_cpu_or_skip()
    res = _run("""
        import json, numpy as np, zetile
        import matmul as mm
        rng = np.random.default_rng(9)
        kind = "KIND"
        M, N, K = (70, 100, 72) if kind == "block_ptr" else (80, 96, 64)
        def view(n, byte_off):
            # n fp16 elements starting byte_off bytes past a 64-byte boundary
            # (the allocator's own alignment varies from run to run).
            buf = np.zeros(n + 64, np.float16)
            start = (-buf.ctypes.data % 64) // 2 + byte_off // 2
            return buf[start:start + n]
        a = view(M * K, 16).reshape(M, K)                                 # base +16 B
        b = view(K * N, 40 if kind == "block_ptr" else 48).reshape(K, N)  # +40 B / +48 B
        a[:] = rng.standard_normal((M, K))
        b[:] = rng.standard_normal((K, N))
        assert a.ctypes.data % 64 == 16 and b.ctypes.data % 64 in (40, 48)
        c = np.zeros((M, N), np.float32)
        (mm.matmul_block_ptr if kind == "block_ptr" else mm.matmul)(a, b, c)
        zetile.get_device().synchronize()
        ref = a.astype(np.float64) @ b.astype(np.float64)
        print("RESULT", json.dumps({"err": float(np.abs(c - ref).max()),
                                    "scale": float(np.abs(ref).max())}))
    """.replace("KIND", kind))
    assert res["err"] <= 1e-3 * res["scale"], res


@pytest.mark.parametrize("cols,block,warps", [(100, 128, 2), (1000, 1024, 8)])
def test_slm_reductions_run(cols, block, warps):
    """Several subgroups per program reduce through SLM. Upstream's lowering
    of XeGPU gathers on SLM keeps the addresses in 32-bit integers
    (OpConvertPtrToU, right on Intel GPUs), which would fault on the CPU
    runtime's 64-bit local memory, so the backend refuses such SPIR-V; zetile
    rewrites its SLM accesses into memref loads and stores (pointer
    arithmetic, lowering/xe/xe_atomic.c), so the same SPIR-V runs here."""
    _opencl_cpu_or_skip()
    res = _run(f"""
        import json, numpy as np, zetile
        from softmax import softmax_kernel
        rng = np.random.default_rng(2)
        x = rng.standard_normal((5, {cols})).astype(np.float32) * 4
        out = np.zeros_like(x)
        softmax_kernel[(5,)](out, x, {cols}, {cols}, 5, {cols}, BLOCK_SIZE={block}, num_warps={warps})
        zetile.get_device().synchronize()
        xd = x.astype(np.float64)
        ref = np.exp(xd - xd.max(1, keepdims=True))
        ref /= ref.sum(1, keepdims=True)
        print("RESULT", json.dumps({{"err": float(np.abs(out - ref).max())}}))
    """)
    assert res["err"] < 1e-6, res


def test_same_spirv_as_level_zero_gets():
    """The artifact run on opencl:cpu is the pvc artifact: same SPIR-V bytes as
    zetile.compile(target="pvc"), which is what Level Zero receives."""
    _opencl_cpu_or_skip()
    res = _run("""
        import json, hashlib, numpy as np, zetile
        from vector_add import add_kernel
        sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"}
        pvc = zetile.compile(add_kernel, signature=sig, constexprs={"BLOCK_SIZE": 64}, target="pvc")
        x = np.ones(100, np.float32)
        out = np.zeros(100, np.float32)
        ck = add_kernel[(2,)](x, x, out, 100, BLOCK_SIZE=64)
        zetile.get_device().synchronize()
        h = lambda b: hashlib.sha256(b).hexdigest()
        print("RESULT", json.dumps({"same": h(ck.asm["spirv"]) == h(pvc.asm["spirv"]),
                                    "ok": bool((out == 2).all())}))
    """)
    assert res["same"] and res["ok"], res


def test_unknown_opencl_device_says_why():
    with pytest.raises(zetile.Error) as e:
        zetile.get_device("opencl:nosuch")
    assert "opencl:nosuch" in str(e.value)


def test_evidence_command_reports_levels():
    """`zetile evidence` runs the checks and names the levels reached."""
    _opencl_cpu_or_skip()
    import subprocess
    import sys
    from zt_testutil import ROOT
    r = subprocess.run([sys.executable, "-m", "zetile", "evidence", "-k", "vector_add",
                        "-k", "matmul_descriptor_fp16", "--json"],
                       capture_output=True, text=True, timeout=900,
                       cwd=ROOT, env=dict(__import__("os").environ,
                                          PYTHONPATH=ROOT + "/python-bindings"))
    rows = {row["kernel"]: row for row in json.loads(r.stdout)}
    assert "E5" in rows["vector_add"]["passed"], rows["vector_add"]
    assert "E4" in rows["vector_add"]["passed"], rows["vector_add"]
    md = rows["matmul_descriptor_fp16"]
    assert "E5" in md["passed"], md
    # 2D block IO and DPAS are what the emulation library supplied.
    assert any("2d_block_read" in i for i in md["imports"]), md["imports"]
    assert any("matrix_mad" in i for i in md["imports"]), md["imports"]
    assert r.returncode == 0, r.stderr


def test_numpy_results_ready_when_the_launch_returns():
    """opencl:cpu runs kernels asynchronously; numpy arguments are read by the
    caller right after the call, so the launch must have finished by then."""
    import numpy as np
    import zetile
    from vector_add import add
    if not any(d["name"] == "opencl:cpu" for d in zetile.devices()):
        import pytest
        pytest.skip("Intel's OpenCL CPU runtime is not available")
    zetile.set_device("opencl:cpu")
    try:
        for _ in range(5):
            x = np.ones(100_000, np.float32)
            out = np.zeros_like(x)
            add(x, x, out, BLOCK_SIZE=64)
            assert (out == 2).all()
    finally:
        zetile.set_device("cpu")


@pytest.mark.parametrize("dt,shape,blocks", [
    ("float16", (144, 272, 80), (64, 64, 32)),
    ("bfloat16", (144, 272, 80), (64, 64, 32)),
    ("float32", (144, 272, 80), (64, 64, 32)),
    ("float16", (48, 96, 48), (32, 32, 32)),
    ("float16", (256, 128, 128), (128, 128, 32)),
])
def test_pointer_matmul_as_block_io(dt, shape, blocks):
    """The tutorial matmul (pointer tensors, `% M` rows, K masks), launched
    on contiguous arrays whose sizes are multiples of 16: Triton's launch
    hints (divisible by 16, unit strides as constants) let zetile prove the
    addresses affine (lowering/xe/xe_axis.c), so A, B and C move through 2D
    block loads/stores (load_nd/store_nd), not row gathers; the mask's K
    bound becomes the descriptor's width, the C mask its height and width.
    M and N are not multiples of the blocks: rows wrap (`% M`), whole
    subgroup tiles fall outside C."""
    _opencl_cpu_or_skip()
    M, N, K = shape
    bm, bn, bk = blocks
    res = _run(f"""
        import json, numpy as np, zetile, ml_dtypes
        import matmul as mm
        dt = {{"float16": np.float16, "bfloat16": ml_dtypes.bfloat16,
              "float32": np.float32}}["{dt}"]
        rng = np.random.default_rng(5)
        M, N, K = {M}, {N}, {K}
        a = rng.standard_normal((M, K)).astype(dt)
        b = rng.standard_normal((K, N)).astype(dt)
        c = np.full((M + 3, N), 7, dt)          # rows past M: guard cells
        st = lambda x: [s // x.itemsize for s in x.strides]
        grid = (zetile.cdiv(M, {bm}) * zetile.cdiv(N, {bn}),)
        ck = mm.matmul_kernel[grid](a, b, c, M, N, K, *st(a), *st(b), *st(c),
                                    BLOCK_SIZE_M={bm}, BLOCK_SIZE_N={bn}, BLOCK_SIZE_K={bk},
                                    GROUP_SIZE_M=4)
        zetile.get_device().synchronize()
        mlir = ck.asm["mlir"]
        mlir = mlir.decode() if isinstance(mlir, bytes) else mlir
        ref = a.astype(np.float64) @ b.astype(np.float64)
        print("RESULT", json.dumps({{
            "err": float(np.abs(c[:M].astype(np.float64) - ref).max()),
            "scale": float(np.abs(ref).max()),
            "guard": bool((c[M:].astype(np.float64) == 7).all()),
            "load_nd": mlir.count("xegpu.load_nd"), "store_nd": mlir.count("xegpu.store_nd"),
            "gathers": mlir.count("xegpu.load "), "scatters": mlir.count("xegpu.store "),
            "prefetch": mlir.count("xegpu.prefetch_nd")}}))
    """)
    assert res["load_nd"] > 0 and res["store_nd"] > 0, res
    assert res["gathers"] == 0 and res["scatters"] == 0, res
    assert res["prefetch"] > 0, res
    assert res["guard"], res
    tol = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 3e-4}[dt]
    assert res["err"] <= tol * max(res["scale"], 1.0), res


def test_pointer_matmul_transposed_b_stays_gathered():
    """B read transposed (stride_bk 1, stride_bn K, from an (N, K) array): its addresses
    are not contiguous along a row, so B keeps row gathers while A still
    goes through block loads; the numbers are right either way."""
    _opencl_cpu_or_skip()
    res = _run("""
        import json, numpy as np, zetile
        import matmul as mm
        rng = np.random.default_rng(6)
        M, N, K = 64, 80, 48
        a = rng.standard_normal((M, K)).astype(np.float16)
        bt = rng.standard_normal((N, K)).astype(np.float16)
        c = np.zeros((M, N), np.float32)
        st = lambda x: [s // x.itemsize for s in x.strides]
        grid = (zetile.cdiv(M, 32) * zetile.cdiv(N, 32),)
        ck = mm.matmul_kernel[grid](a, bt, c, M, N, K, *st(a), 1, K, *st(c),
                                    BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=16,
                                    GROUP_SIZE_M=4)
        zetile.get_device().synchronize()
        mlir = ck.asm["mlir"]
        mlir = mlir.decode() if isinstance(mlir, bytes) else mlir
        ref = a.astype(np.float64) @ bt.T.astype(np.float64)
        print("RESULT", json.dumps({"err": float(np.abs(c - ref).max()),
                                    "scale": float(np.abs(ref).max()),
                                    "load_nd": mlir.count("xegpu.load_nd"),
                                    "gathers": mlir.count("xegpu.load ")}))
    """)
    assert res["load_nd"] > 0 and res["gathers"] > 0, res
    assert res["err"] <= 2e-3 * res["scale"], res


def test_spirv_emitted_in_a_separate_process():
    """LLVM 22's SPIR-V backend keeps static state between modules
    (llvm/llvm-project#160613): when an emission comes out invalid in a
    process that has emitted before, the compile runs again in a fresh
    zetile-compile-worker (ZETILE_XE_EMIT=process makes every emission but a
    process's first take that path; no MLIR tool is started). That path gives
    the same bytes as a clean in-process emission, and the kernel computes
    the same numbers."""
    _opencl_cpu_or_skip()
    res = _run("""
        import json, os, numpy as np, zetile
        from vector_add import add_kernel
        sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32"}
        a = zetile.compile(add_kernel, signature=sig, constexprs={"BLOCK_SIZE": 256},
                           target="pvc", cached=False)
        os.environ["ZETILE_XE_EMIT"] = "process"
        b = zetile.compile(add_kernel, signature=sig, constexprs={"BLOCK_SIZE": 256},
                           target="pvc", cached=False)
        timings = b.artifact.get("timings").decode()
        n = 1000
        x = np.arange(n, dtype=np.float32); y = np.ones(n, np.float32)
        out = np.zeros(n, np.float32)
        add_kernel[(zetile.cdiv(n, 128),)](x, y, out, n, BLOCK_SIZE=128)
        zetile.get_device().synchronize()
        print("RESULT", json.dumps({"same": a.asm["spirv"] == b.asm["spirv"],
                                    "separate": "fresh compile worker" in timings,
                                    "err": float(np.abs(out - (x + y)).max())}))
    """)
    assert res["separate"], res
    assert res["same"], res
    assert res["err"] == 0.0, res
