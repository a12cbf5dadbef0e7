"""The walking skeleton's kernels on the Xe targets, without an Intel GPU:
E1 spirv-val on the SPIR-V (pvc, bmg), E2 Intel's offline compiler builds it
with no unresolved builtin (pvc), E3 zetile's Level Zero backend creates and
launches it on Debian's NEO driver in AUB mode (nothing is computed there)."""
import re
import subprocess
import tempfile

import pytest

import zetile
from zt_testutil import AUB_ENV, have_tool, neo_installed, run_python
from zetile.tools import isa

P32 = "*fp32"
KERNELS = {
    "vector_add": ("vector_add", "add_kernel",
                   {"x_ptr": P32, "y_ptr": P32, "output_ptr": P32, "n_elements": "i32"},
                   {"BLOCK_SIZE": 1024}),
    "softmax": ("softmax", "softmax_kernel",
                {"output_ptr": P32, "input_ptr": P32, "input_row_stride": "i32",
                 "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
                # As in the tutorial: zetile splits the row across 16 subgroups
                # (one subgroup holding all 64 chunks takes upstream minutes).
                {"BLOCK_SIZE": 1024}),
    "layer_norm": ("layer_norm", "_layer_norm_fwd_fused",
                   {"X": P32, "Y": P32, "W": P32, "B": P32, "Mean": P32, "Rstd": P32,
                    "stride": "i32", "N": "i32", "eps": "fp32"},
                   {"BLOCK_SIZE": 512}),
}


def _compile(name, target):
    mod, fn, sig, consts = KERNELS[name]
    kernel = getattr(__import__(mod), fn)
    return zetile.compile(kernel, signature=sig, constexprs=consts, target=target)


@pytest.mark.parametrize("target", ["pvc", "bmg"])
@pytest.mark.parametrize("name", list(KERNELS))
def test_spirv_validates(name, target):
    if not have_tool("spirv-val"):
        pytest.skip("spirv-val (Debian's spirv-tools) is not installed")
    ck = _compile(name, target)
    spv = ck.asm["spirv"]
    assert isinstance(spv, bytes) and spv[:4] == b"\x03\x02\x23\x07"
    assert "xegpu" in ck.asm["mlir"]  # went through upstream's XeGPU path
    with tempfile.NamedTemporaryFile(suffix=".spv") as f:
        f.write(spv)
        f.flush()
        r = subprocess.run(["spirv-val", f.name], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def ocloc_isa(spv, device="pvc"):
    """Builds with ocloc and returns the iga64 disassembly of every kernel."""
    isas, _ = isa.ocloc_isa(spv, device)
    text = "".join(isas.values())
    assert text, "ocloc produced no kernel heap"
    return text


@pytest.mark.parametrize("name", list(KERNELS))
def test_ocloc_builds_without_unresolved_calls(name):
    if not (have_tool("ocloc") and have_tool("iga64")):
        pytest.skip("ocloc/iga64 (Debian's intel-opencl-icd, libigc-tools) are not installed")
    text = ocloc_isa(_compile(name, "pvc").asm["spirv"])
    assert "calla" not in text, "unresolved builtin calls in the ISA"
    assert len(re.findall(r"\bsend", text)) > 0  # loads/stores are there


@pytest.mark.skipif(not neo_installed(), reason="Debian's NEO (intel-opencl-icd) is not installed")
@pytest.mark.parametrize("name", list(KERNELS))
def test_level_zero_launch_aub(name):
    mod, fn, sig, consts = KERNELS[name]
    code = f"""
        import numpy as np, zetile
        from {mod} import {fn} as k
        devs = [d for d in zetile.devices() if d["backend"] == "level_zero"]
        assert devs, "no level_zero device in AUB mode: " + repr(zetile.devices())
        assert devs[0]["target"] == "pvc", devs[0]
        zetile.set_device(devs[0]["name"])
        sig = {sig!r}
        args = []
        for n, t in sig.items():
            if t.startswith("*"):
                args.append(zetile.empty(4096, zetile.language.float32))
            elif t == "fp32":
                args.append(1e-5)
            else:
                args.append(64)
        ck = k[(2,)](*args, **{consts!r})
        zetile.get_device().synchronize()
        st = ck.executable.stats()
        print("LAUNCHED", ck.metadata.get("local_size"), st)
    """
    r = run_python(code, env=AUB_ENV)
    assert r.returncode == 0 and "LAUNCHED" in r.stdout, r.stdout + r.stderr


def test_no_gpu_never_crashes_and_defaults_to_cpu():
    env = {k: "" for k in AUB_ENV}
    env["ZETILE_DEVICE"] = ""
    r = run_python("""
        import zetile
        names = [d["name"] for d in zetile.devices()]
        assert "cpu" in names, names
        print(zetile.get_device().info["name"])
    """, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1] == "cpu"
