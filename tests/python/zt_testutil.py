"""Helpers shared by the Python tests (import as `zt_testutil`)."""
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")
if EXAMPLES not in sys.path:
    sys.path.insert(0, EXAMPLES)

# NEO's Level Zero driver in AUB mode: a real driver device without hardware
# (modules, kernels and launches go through the real API; nothing computes).
AUB_ENV = {
    "NEOReadDebugKeys": "1",
    "SetCommandStreamReceiver": "1",
    "ProductFamilyOverride": "pvc",
    "OverrideMaxWorkgroupSize": "1024",
    "AUBDumpCaptureFileName": "/dev/null",
}


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
