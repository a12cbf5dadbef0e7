"""A lost device (issue 17): when the driver reports the device lost (Level
Zero's ZE_RESULT_ERROR_DEVICE_LOST: a hang or fault it reset the device for),
the call that met it raises zetile.DeviceLostError, and every later call on
that device fails at once with DeviceLostError naming the first report,
instead of handing work to a context that can no longer run it
(runtime/device.c). No driver here loses a device on request:
ZETILE_ZE_INJECT_DEVICE_LOST=<Level Zero call> makes that call report it
after it ran (runtime/level_zero/ze_status.c), on NEO in AUB mode (E3)."""
import json
import os

import pytest

import zetile
import zetile.language as tl
from zt_testutil import AUB_ENV, neo_installed, run_python


@zetile.jit
def twice(x, y, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + o, tl.load(x + o, mask=o < n) * 2, mask=o < n)

HERE = os.path.dirname(os.path.abspath(__file__))

CODE = """
import json, os, sys
sys.path.insert(0, {here!r})
import numpy as np
import zetile
from test_device_lost import twice

dev = zetile.runtime.get_device("level_zero:0")
n = 1024
x = zetile.runtime.from_numpy(np.ones(n, np.float32), device=dev)
y = zetile.runtime.empty((n,), "float32", device=dev)
twice[(4,)](x, y, n, BLOCK=256, device="level_zero:0")
dev.synchronize()                      # fine: nothing injected yet
os.environ["ZETILE_ZE_INJECT_DEVICE_LOST"] = "zeEventHostSynchronize"
out = {{}}
twice[(4,)](x, y, n, BLOCK=256, device="level_zero:0")
try:
    dev.synchronize()
except zetile.DeviceLostError as e:
    out["first"] = str(e)
del os.environ["ZETILE_ZE_INJECT_DEVICE_LOST"]
for what, fn in [("launch", lambda: twice[(4,)](x, y, n, BLOCK=256, device="level_zero:0")),
                 ("alloc", lambda: zetile.runtime.empty((n,), "float32", device=dev)),
                 ("sync", dev.synchronize)]:
    try:
        fn()
        out[what] = "ok"
    except zetile.DeviceLostError as e:
        out[what] = str(e)
a = np.ones(n, np.float32)
b = np.zeros(n, np.float32)
twice[(4,)](a, b, n, BLOCK=256, device="cpu")
out["cpu"] = float(b.sum())
print("RESULT", json.dumps(out))
"""


@pytest.mark.skipif(not neo_installed(), reason="Debian's Level Zero driver (NEO) is not installed")
def test_a_lost_device_stays_unusable(tmp_path):
    env = {**AUB_ENV, "ZETILE_CACHE_DIR": str(tmp_path / "cache")}
    r = run_python(CODE.format(here=HERE), env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads([ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")][-1][7:])
    assert "ZE_RESULT_ERROR_DEVICE_LOST" in res.get("first", ""), res
    for what in ("launch", "alloc", "sync"):
        assert "is unusable: it was lost earlier" in res[what], (what, res)
        assert "zeEventHostSynchronize" in res[what], (what, res)   # names the first report
    assert res["cpu"] == 2.0 * 1024          # other devices are unaffected
