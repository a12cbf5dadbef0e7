"""The libFuzzer harnesses (tests/fuzz/*.c: artifacts, cache entries, the C
builder, CPU object files through the own ELF loader, tile IR text -> compile for cpu, pvc and dg2) build and run a few seconds each
without a crash, hang, leak or sanitizer report. Long runs:
`tests/fuzz/run.sh 600` (or scripts/stress.sh)."""
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNTIME = "/usr/lib/llvm-22/lib/clang/22/lib/linux/libclang_rt.fuzzer-x86_64.a"


@pytest.mark.skipif(shutil.which("clang-22") is None or not os.path.exists(RUNTIME),
                    reason="needs clang-22 and libclang-rt-22-dev (scripts/setup.sh installs them)")
def test_fuzzers_short_run():
    seconds = os.environ.get("ZT_FUZZ_SECONDS", "3")
    p = subprocess.run([os.path.join(ROOT, "tests/fuzz/run.sh"), seconds], capture_output=True,
                       text=True, timeout=600)
    lines = [l for l in p.stdout.splitlines() if l.startswith("fuzz ")]
    assert p.returncode == 0, p.stdout + p.stderr
    assert len(lines) == 7, p.stdout  # tile IR for cpu, pvc and dg2
    for line in lines:
        assert "0 crashes" in line, line
        execs = int(line.split(": ", 1)[1].split()[0])
        assert execs > 0, line  # the harness actually ran
