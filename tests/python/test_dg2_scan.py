"""tile.scan (tl.cumsum, tl.cumprod) on dg2 (SIMD8, zetile's own lowering,
lowering/dg2/dg2_scan.c): the tensor through local memory, each work-item
folding along the axis for the elements it holds. E1 (spirv-val) + E2 (ocloc
acm-g10: no unresolved call, no scratch) for the shapes of Intel's prefix-sum
benchmark (32x16 and 64x32 fp32, either axis); E5: the dg2 SPIR-V on Intel's
OpenCL CPU runtime (ZETILE_OPENCL_TARGET=dg2), exact on integer-valued data
(fp32 and int32, forward and reverse, 1-D masked, 1-4 subgroups)."""
import json

import pytest

import zetile
from zt_testutil import have_tool, run_python, spirv_val
from zetile.jit import compile as zcompile
from zetile.tools import isa

# The kernels test_opencl_e5.py writes out for its E5 scan checks (a 2-D
# cumsum / cumprod along either axis, a masked 1-D cumsum), run here as dg2
# code.
from test_opencl_e5 import SCAN_KERNEL as SCAN_KERNELS  # noqa: E402


def _kernels(tmp_path, monkeypatch):
    (tmp_path / "dg2_scan_kernels.py").write_text(SCAN_KERNELS)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib
    return importlib.import_module("dg2_scan_kernels")


@pytest.mark.skipif(not (have_tool("ocloc") and have_tool("iga64") and have_tool("spirv-val")),
                    reason="ocloc/iga64/spirv-val are not installed")
@pytest.mark.parametrize("m,n,axis", [(32, 16, 0), (64, 32, 1)])
def test_cumsum_builds_for_acm_g10(tmp_path, monkeypatch, m, n, axis):
    mod = _kernels(tmp_path, monkeypatch)
    ck = zcompile(mod.scan2d, signature="*fp32,*fp32",
                  constexprs=dict(M=m, N=n, AXIS=axis, OP="cumsum", REVERSE=False), target="dg2")
    assert ck.metadata.get("subgroup_size") in (8, "8")
    spirv_val(ck.asm["spirv"])
    isas, log = isa.ocloc_isa(ck.asm["spirv"], "dg2")
    (text,) = [t for k, t in isas.items() if not k.startswith("Intel_Symbol")]
    k = isa.analyze_isa(text)
    assert k["calla"] == 0 and k["scratch_sends"] == 0, (k, log)
    assert k["sends_by_kind"]["store"] >= 1


def test_scans_e5_on_opencl_cpu_as_dg2(tmp_path):
    names = [d["name"] for d in zetile.devices()]
    if "opencl:cpu" not in names:
        pytest.skip("Intel's OpenCL CPU runtime is not available")
    (tmp_path / "dg2_scan_kernels.py").write_text(SCAN_KERNELS)
    r = run_python(f"""
        import json, sys, numpy as np, zetile
        sys.path.insert(0, {str(tmp_path)!r})
        from dg2_scan_kernels import scan2d, scan1d
        rng = np.random.default_rng(2)
        errs, targets = {{}}, set()
        for m, n, ax, op, rev, dt, w in [(32, 16, 0, "cumsum", False, "float32", 4),
                                         (64, 32, 1, "cumsum", False, "float32", 4),
                                         (32, 16, 1, "cumsum", True, "float32", 1),
                                         (8, 32, 0, "cumprod", True, "int32", 2)]:
            x = rng.integers(-9, 10, (m, n)).astype(dt)
            out = np.zeros((m, n), dt)
            ck = scan2d[(1,)](x, out, M=m, N=n, AXIS=ax, OP=op, REVERSE=rev, num_warps=w)
            zetile.get_device().synchronize()
            targets.add(ck.metadata["target"])
            src = x if op == "cumsum" else np.fmod(x, 3) + 1   # C remainder, as Triton
            f = np.cumsum if op == "cumsum" else np.cumprod
            want = np.flip(f(np.flip(src, ax), axis=ax), ax) if rev else f(src, axis=ax)
            errs[f"{{m}}x{{n}} {{op}} axis {{ax}} rev {{rev}}"] = float(
                np.abs(out.astype(np.float64) - want).max())
        v = rng.integers(-9, 10, 40).astype(np.int32)
        o1 = np.full(64, 7, np.int32)
        scan1d[(1,)](v, o1, 40, BLOCK=64, REVERSE=True, num_warps=2)
        zetile.get_device().synchronize()
        errs["1-D reverse"] = float(np.abs(o1[:40] - np.flip(np.cumsum(np.flip(v)))).max())
        errs["1-D guard"] = float(np.abs(o1[40:] - 7).max())
        print("RESULT", json.dumps({{"errs": errs, "targets": sorted(targets)}}))
    """, env={"ZETILE_DEVICE": "opencl:cpu", "ZETILE_OPENCL_TARGET": "dg2"})
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, r.stdout + r.stderr
    res = json.loads(lines[-1][len("RESULT "):])
    assert res["targets"] == ["dg2"], res
    assert all(v == 0 for v in res["errs"].values()), res
