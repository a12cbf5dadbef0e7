"""What times the autotuner: Level Zero kernel timestamps on a Level Zero
device (Device.timing_begin / timing_end around each timed run), wall time
on the CPU target. The Level Zero side runs on NEO in AUB mode (E3): the
driver takes every call, but it executes no command, so the device writes no
timestamp; the tests check that the path runs and that such launches are
reported as missing, not that any time is right."""
import json
import os

import numpy as np
import pytest

import zetile
import zetile.language as tl
from zetile import testing
from zt_testutil import AUB_ENV, neo_installed, run_python

HERE = os.path.dirname(os.path.abspath(__file__))


@zetile.jit
def twice_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


CONFIGS = [zetile.Config({"BLOCK": b}) for b in (64, 256)]


def test_cpu_target_is_timed_by_wall_time(tmp_path, monkeypatch):
    monkeypatch.setenv("ZETILE_AUTOTUNE_DB", str(tmp_path / "tune.sqlite"))
    dev = zetile.runtime.get_device("cpu")
    assert not testing.has_device_timer(dev)
    with pytest.raises(zetile.Error, match="no device timer"):   # the runtime's UNSUPPORTED
        dev.timing_begin()
    with pytest.raises(ValueError, match="no device timer"):
        testing.do_bench(lambda: None, warmup=0, rep=1, device="cpu", timer="device")
    n = 1000
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    k = zetile.autotune(CONFIGS, key=["n"], warmup=1, rep=3)(twice_kernel)
    k[lambda META: (zetile.cdiv(n, META["BLOCK"]),)](x, out, n, device="cpu")
    np.testing.assert_array_equal(out, 2 * x)
    assert k.timer == "wall" and testing.last_timer["timer"] == "wall"
    assert testing.last_timer["device"] == "cpu" and testing.last_timer["runs"] >= 5
    assert all(t[0] > 0 for t in k.configs_timings.values())
    # A second process would read the timer from the database with the times.
    k2 = zetile.autotune(CONFIGS, key=["n"], warmup=1, rep=3)(twice_kernel)
    k2[lambda META: (zetile.cdiv(n, META["BLOCK"]),)](x, out, n, device="cpu")
    assert k2.tuning_source == "database" and k2.timer == "wall"


def test_bad_timer_name_is_refused():
    with pytest.raises(ValueError, match="timer must be"):
        testing.do_bench(lambda: None, device="cpu", timer="gpu")


AUB_CODE = """
import json, os, sys, warnings
sys.path.insert(0, {here!r})
import numpy as np
import zetile
from zetile import testing
import test_autotune_timer as T

dev = zetile.runtime.get_device("level_zero:0")
n = 4096
x = zetile.runtime.from_numpy(np.ones(n, np.float32), device=dev)
out = zetile.runtime.empty((n,), "float32", device=dev)
grid = lambda META: (zetile.cdiv(n, META["BLOCK"]),)

# The runtime's timing region: every launch inside counts, none outside.
T.twice_kernel[grid({{"BLOCK": 256}})](x, out, n, BLOCK=256, device="level_zero:0")
dev.timing_begin()
for _ in range(70):   # more than the device's pool of 64 timestamp events
    T.twice_kernel[grid({{"BLOCK": 256}})](x, out, n, BLOCK=256, device="level_zero:0")
region = dev.timing_end()

with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    k = zetile.autotune(T.CONFIGS, key=["n"], warmup=0, rep=1)(T.twice_kernel)
    k[grid](x, out, n, device="level_zero:0")
    ms = testing.do_bench(lambda: T.twice_kernel[grid({{"BLOCK": 64}})](
        x, out, n, BLOCK=64, device="level_zero:0"), warmup=0, rep=1, device=dev)
print("RESULT", json.dumps({{
    "region": region, "timer": k.timer, "missing": k.timer_missing,
    "source": k.tuning_source, "timings": [t for t in k.configs_timings.values()],
    "last": testing.last_timer, "ms": ms,
    "warnings": [str(x.message) for x in w if issubclass(x.category, RuntimeWarning)],
    "db_rows": len(__import__("zetile.tune_db").tune_db.get_db().rows())}}))
"""


@pytest.mark.skipif(not neo_installed(), reason="Debian's Level Zero driver (NEO) is not installed")
@pytest.mark.parametrize("query", ["copy", "query"])
def test_level_zero_is_timed_by_kernel_timestamps_in_aub_mode(tmp_path, query):
    env = {**AUB_ENV, "ZETILE_AUTOTUNE_DB": str(tmp_path / "tune.sqlite"),
           "ZETILE_CACHE_DIR": str(tmp_path / "cache")}
    if query == "query":
        env["ZETILE_ZE_TIMESTAMP_QUERY"] = "1"   # zeEventQueryKernelTimestamp per event
    r = run_python(AUB_CODE.format(here=HERE), env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads([ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")][-1][7:])
    region = res["region"]
    assert region["kernels"] == 70 and region["tick_ns"] > 0
    # AUB mode executes no command: no timestamp was written, none is made up.
    assert region["missing"] == 70 and region["kernel_ns"] == 0
    assert res["timer"] == "device" and res["source"] == "benchmark"
    assert res["last"]["timer"] == "device" and res["last"]["device"] == "level_zero:0"
    assert res["last"]["missing"] == res["last"]["runs"] >= 5
    assert res["missing"] >= 10 and res["ms"] == 0.0
    assert any("wrote no kernel timestamp" in w for w in res["warnings"])
    # Times the device did not measure are not kept in the database.
    assert res["db_rows"] == 0
