"""`zetile info` opens the default device, so a bad ZETILE_DEVICE is an
error (exit 1, the reason on stderr) instead of `default device: garbage`
and exit 0 (issue 17)."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def info(*args, device=None):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python-bindings"))
    env.pop("ZETILE_DEVICE", None)
    if device is not None:
        env["ZETILE_DEVICE"] = device
    return subprocess.run([sys.executable, "-m", "zetile", "info", *args], env=env,
                          capture_output=True, text=True, timeout=120)


def test_bad_device_is_an_error():
    p = info(device="garbage")
    assert p.returncode == 1
    assert "default device: garbage (cannot be opened" in p.stdout
    assert "unknown device 'garbage'" in p.stderr
    p = info("--json", device="cpu:7")
    assert p.returncode == 1
    d = json.loads(p.stdout)
    assert d["default_device"] == "cpu:7" and "no device 'cpu:7'" in d["default_device_error"]


def test_good_device_is_named():
    p = info(device="cpu")
    assert p.returncode == 0, p.stderr
    assert "default device: cpu\n" in p.stdout
    d = json.loads(info("--json", device="cpu").stdout)
    assert d["default_device"] == "cpu" and d["default_device_error"] is None
