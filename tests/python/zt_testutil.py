"""Helpers shared by the Python tests (import as `zt_testutil`)."""
import os
import shutil
import subprocess
import sys
import textwrap
from contextlib import contextmanager

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")
if EXAMPLES not in sys.path:
    sys.path.insert(0, EXAMPLES)

# Intel's OpenCL CPU runtime (the opencl:cpu device of E5) compiles each
# kernel with its own LLVM; on the Xe kernels' long straight-line bodies its
# MachineSinking pass alone took over half of the JIT (test_xe_convert's
# narrow tiles: 54 s -> 21 s without it). A code-generation pass, not a change
# of the SPIR-V that E5 runs: set before the runtime loads, inherited by the
# subprocesses the E5 tests start. A user's own setting wins.
os.environ.setdefault("CL_CONFIG_LLVM_OPTIONS", "-disable-machine-sink")

# NEO's Level Zero driver in AUB mode: a real driver device without hardware
# (modules, kernels and launches go through the real API; nothing computes).
AUB_ENV = {
    "NEOReadDebugKeys": "1",
    "SetCommandStreamReceiver": "1",
    "ProductFamilyOverride": "pvc",
    "OverrideMaxWorkgroupSize": "1024",
    "AUBDumpCaptureFileName": "/dev/null",
}


@contextmanager
def env_set(env=None):
    """Sets the variables of `env` in this process for the block, then puts
    back what was there (unset ones unset again)."""
    old = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                del os.environ[k]
            else:
                os.environ[k] = v


def run_python(code, env=None, timeout=300):
    """Runs code in a fresh interpreter (for driver settings that must be in
    place before anything loads, and for cross-process cache checks)."""
    e = dict(os.environ)
    e.update(env or {})
    e["PYTHONPATH"] = os.pathsep.join([os.path.join(ROOT, "python-bindings"), EXAMPLES,
                                       e.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=e, capture_output=True,
                          text=True, timeout=timeout)


def have_tool(name):
    return shutil.which(name) is not None


def neo_installed():
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"):
        for root, _, files in os.walk(d):
            if any(f.startswith("libze_intel_gpu.so") for f in files):
                return True
            break
    return False


def opencl_cpu_or_skip():
    """Skips (saying why) when Intel's OpenCL CPU runtime cannot serve."""
    import zetile
    try:
        zetile.get_device("opencl:cpu")
    except zetile.Error as e:
        pytest.skip(f"Intel's OpenCL CPU runtime is not available: {e}")


def run_result(code, path=None, env=None, timeout=300):
    """Runs code in a fresh interpreter on opencl:cpu, or the device env names
    (path: a folder put first on sys.path), and returns the JSON it printed
    after "RESULT "."""
    import json
    prefix = f"import sys; sys.path.insert(0, {path!r})\n" if path else ""
    r = run_python(prefix + textwrap.dedent(code), env={"ZETILE_DEVICE": "opencl:cpu", **(env or {})},
                   timeout=timeout)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, r.stdout + r.stderr
    return json.loads(lines[-1][len("RESULT "):])


def spirv_val(spirv: bytes):
    """Asserts that spirv-val accepts the module."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "k.spv")
        with open(p, "wb") as f:
            f.write(spirv)
        r = subprocess.run(["spirv-val", p], capture_output=True, text=True)
        assert r.returncode == 0, r.stdout + r.stderr


# ------------------------------------------------------------ Xe kernels: E1/E2/E5 helpers
SLOW_TESTS = os.environ.get("ZETILE_SLOW_TESTS") == "1"


def unalias_types(mlir):
    """The emitted XeGPU with its vector type aliases (`!zvN = vector<...>`,
    ZETILE_XE_TYPE_ALIAS) written out, for text checks."""
    import re
    names = dict(re.findall(r"^(!zv\d+) = (.*)$", mlir, re.M))
    return re.sub(r"!zv\d+", lambda m: names.get(m.group(0), m.group(0)), mlir)


def isa_no_spill(spirv, options, label, target="pvc"):
    """E2: the SPIR-V through ocloc and iga64 (skips without them); prints
    label with the instruction, DPAS and send counts, asserts IGC spilled
    nothing and returns zetile.tools.isa.analyze_isa's figures."""
    if not (have_tool("ocloc") and have_tool("iga64")):
        pytest.skip("ocloc/iga64 are not installed")
    from zetile.tools import isa
    isas, log = isa.ocloc_isa(spirv, target, options)
    r = isa.analyze_isa("".join(isas.values()))
    print(f"{label}:", {k: r[k] for k in ("instructions", "dpas", "sends")})
    assert isa.spill_from_log(log) == 0 and r["scratch_sends"] == 0, (r, log[-2000:])
    return r


def e5_cases(device):
    """How many cases of a list a numerics test runs on device: all on the
    CPU target (or with ZETILE_SLOW_TESTS=1), else one (Intel's OpenCL CPU
    runtime takes tens of seconds a kernel build here); None means all."""
    return None if device == "cpu" or SLOW_TESTS else 1


def run_cases_on(device, code, path, timeout=900):
    """Runs a RESULT script (run_result) on device, its N_CASES replaced by
    e5_cases(device); skips opencl:cpu where it cannot serve. Returns the
    results with the script's "device" entry checked and removed."""
    if device == "opencl:cpu":
        opencl_cpu_or_skip()
    res = run_result(code.replace("N_CASES", repr(e5_cases(device))), path=path,
                     env={"ZETILE_DEVICE": device}, timeout=timeout)
    assert res.pop("device") == device
    return res
