"""The `zetile` command line: info and compile."""
import os
import subprocess
import sys

import pytest

from zt_testutil import EXAMPLES, ROOT, have_tool

ZT = [sys.executable, "-m", "zetile"]


def run(args, **kw):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python-bindings")
    return subprocess.run(ZT + args, capture_output=True, text=True, env=env, **kw)


def test_info_lists_cpu_and_targets():
    r = run(["info"])
    assert r.returncode == 0, r.stderr
    assert "cpu" in r.stdout and "pvc" in r.stdout and "cache:" in r.stdout
    r = run(["info", "--json"])
    import json
    info = json.loads(r.stdout)
    assert any(d["name"] == "cpu" for d in info["devices"])


def test_compile_writes_valid_spirv(tmp_path):
    out = tmp_path / "add.spv"
    r = run(["compile", os.path.join(EXAMPLES, "vector_add.py") + ":add_kernel",
             "--signature", "x_ptr=*fp32,y_ptr=*fp32,output_ptr=*fp32,n_elements=i32",
             "--constexpr", "BLOCK_SIZE=1024", "--target", "pvc", "-o", str(out)])
    assert r.returncode == 0, r.stdout + r.stderr
    data = out.read_bytes()
    assert data[:4] == b"\x03\x02\x23\x07"
    if have_tool("spirv-val"):
        v = subprocess.run(["spirv-val", str(out)], capture_output=True, text=True)
        assert v.returncode == 0, v.stdout + v.stderr


def test_compile_tile_ir_to_stdout_positional_signature():
    r = run(["compile", os.path.join(EXAMPLES, "vector_add.py") + ":add_kernel",
             "--signature", "*fp32,*fp32,*fp32,i32", "--constexpr", "BLOCK_SIZE=256",
             "--target", "cpu", "--emit", "tile"])
    assert r.returncode == 0, r.stderr
    assert '"tile.load"' in r.stdout and "tensor<256xf32>" in r.stdout


def test_compile_errors_are_messages_not_tracebacks():
    r = run(["compile", os.path.join(EXAMPLES, "vector_add.py") + ":add_kernel",
             "--signature", "*fp32,i32", "--target", "pvc", "-o", "/dev/null"])
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    assert "signature" in r.stderr
    r = run(["compile", os.path.join(EXAMPLES, "vector_add.py") + ":nope"])
    assert r.returncode != 0 and "no kernel named" in r.stderr
