"""CPU target: a kernel that touches memory outside its buffers raises
zetile.DeviceFaultError naming the kernel and program instead of killing
the interpreter, and Ctrl-C stops a long launch (issue 17). Each case runs
in a fresh interpreter, so a regression fails the test instead of killing
the test run."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

PRELUDE = textwrap.dedent("""
    import numpy as np, zetile, zetile.language as tl, sys, time

    @zetile.jit
    def far_load(x_ptr, y_ptr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + (1 << 34) + offs))

    @zetile.jit
    def far_store(x_ptr, y_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(y_ptr - (1 << 36) + offs, tl.load(x_ptr + offs))

    @zetile.jit
    def copy(x_ptr, y_ptr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs))
""")


_scripts = []


def run(code, **env_extra):
    """Starts `code` (after PRELUDE) in a fresh interpreter; kernels need a
    source file, so the script is written to one."""
    import tempfile
    f = tempfile.NamedTemporaryFile("w", suffix=".py", delete=False)
    f.write(PRELUDE + textwrap.dedent(code))
    f.close()
    _scripts.append(f.name)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python-bindings"), ZETILE_DEVICE="cpu",
               **env_extra)
    return subprocess.Popen([sys.executable, f.name], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.fixture(autouse=True)
def _remove_scripts():
    yield
    while _scripts:
        os.unlink(_scripts.pop())


def finish(p, timeout=240):
    out, err = p.communicate(timeout=timeout)
    return p.returncode, out, err


def test_out_of_range_load_and_store_raise_and_the_device_still_works():
    rc, out, err = finish(run("""
        x = np.arange(64, dtype=np.float32); y = np.zeros(64, np.float32)
        for kernel in (far_load, far_store, far_load):
            try:
                kernel[(4,)](x, y, BLOCK=16)
                print("NO ERROR")
            except zetile.Error as e:
                print(type(e).__name__, "|", e)
        copy[(4,)](x, y, BLOCK=16)
        print("copy", bool((y == x).all()))
    """))
    assert rc == 0, err
    lines = out.splitlines()
    assert len(lines) == 4, out
    for line, name in zip(lines[:3], ("far_load", "far_store", "far_load")):
        assert line.startswith("DeviceFaultError | kernel %s: program (" % name), line
        assert "SIGSEGV" in line
    assert "reading" in lines[0] and "writing" in lines[1]
    assert lines[3] == "copy True"


def test_fault_is_also_caught_under_debug_assert():
    rc, out, err = finish(run("""
        x = np.zeros(16, np.float32); y = np.zeros(16, np.float32)
        try:
            far_load[(1,)](x, y, BLOCK=16)
        except zetile.Error as e:
            print(type(e).__name__)
    """, ZETILE_DEBUG="assert"))
    assert rc == 0, err
    assert out.strip() == "DeviceFaultError"


@pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals")
def test_ctrl_c_interrupts_a_long_launch():
    p = run("""
        # Python's Ctrl-C handler, as under a terminal: a test run started in
        # the background of a non-interactive shell passes SIGINT down
        # ignored, and then no KeyboardInterrupt can come (this test failed so).
        import signal
        signal.signal(signal.SIGINT, signal.default_int_handler)

        @zetile.jit
        def spin(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            acc = tl.zeros([BLOCK], dtype=tl.float32)
            for i in range(n):
                acc = acc * 0.5 + 1.0
            tl.store(x_ptr + tl.program_id(0) * 0 + offs, acc)

        x = np.zeros(16, np.float32)
        spin[(2,)](x, 10, BLOCK=16)                  # compiled and warm
        t = time.time(); spin[(4,)](x, 20000000, BLOCK=16); per = (time.time() - t) / 4
        print("per-program", per, flush=True)
        print("started", flush=True)
        t = time.time()
        try:
            spin[(100000,)](x, 20000000, BLOCK=16)  # hours uninterrupted
            print("finished", time.time() - t)
        except KeyboardInterrupt:
            print("interrupted", time.time() - t, flush=True)
        spin[(2,)](x, 10, BLOCK=16)
        print("usable", flush=True)
    """)
    per = None
    for line in p.stdout:
        if line.startswith("per-program"):
            per = float(line.split()[1])
        if line.startswith("started"):
            break
    else:
        pytest.fail("no start: " + p.stderr.read())
    time.sleep(0.5)
    sent = time.time()
    p.send_signal(signal.SIGINT)
    rc, out, err = finish(p, timeout=60)
    waited = time.time() - sent
    assert rc == 0, err
    assert out.splitlines()[0].startswith("interrupted"), out
    assert out.splitlines()[-1] == "usable"
    # The launch would take 100000 * per / threads seconds; it stopped
    # within a few programs plus interpreter exit.
    assert per is not None and 100000 * per / (os.cpu_count() or 1) > 60
    assert waited < 10 + 4 * per, (waited, per)
