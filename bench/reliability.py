"""Reliability figures (issue 17) in one command: how zetile ends when it is
given bad kernels and launches, a damaged cache, C API misuse, fuzzed
inputs, and many processes and threads at once. Every probe runs in a fresh
interpreter, so a crash or hang is counted instead of ending the run.

    .venv/bin/python bench/reliability.py [--fuzz-seconds 10] [--procs 8] [--rounds 5] [--numpy-kernels 40] [--numpy-seed 0]

Outcomes: "error" (a zetile/Python exception with a message: the intended
end of a bad input), "ok" (ran and gave the right numbers), "WRONG" (ran and
gave wrong numbers without an error), "accepted" (a bad input that ran
without an error), "CRASH" (the process died of a signal), "HANG" (killed
after the time limit). The summary line counts
crashes, hangs and silent wrong results; all three should be 0.
CPU target only (no Intel GPU here).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable
ENV = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python-bindings"), ZETILE_DEVICE="cpu")

PRELUDE = """
import numpy as np, zetile, zetile.language as tl, sys
def report(ok):
    print("RESULT", "ok" if ok else "WRONG")
"""

# name -> (kernel and launch code, extra environment). Each must end in an
# exception (printed as "error") or print RESULT ok/WRONG.
BAD = {
    "load 2^34 elements past the base (normal mode)": ("""
@zetile.jit
def k(x_ptr, y_ptr, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(y_ptr + o, tl.load(x_ptr + (1 << 34) + o))
x = np.zeros(16, np.float32); y = np.zeros(16, np.float32)
k[(4,)](x, y, B=16)
report(False)
""", {}),
    "store 2^36 elements before the base": ("""
@zetile.jit
def k(x_ptr, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(x_ptr - (1 << 36) + o, o.to(tl.float32))
x = np.zeros(16, np.float32)
k[(1,)](x, B=16)
report(False)
""", {}),
    "same under ZETILE_DEBUG=assert": ("""
@zetile.jit
def k(x_ptr, y_ptr, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(y_ptr + o, tl.load(x_ptr + (1 << 34) + o))
x = np.zeros(16, np.float32); y = np.zeros(16, np.float32)
k[(1,)](x, y, B=16)
report(False)
""", {"ZETILE_DEBUG": "assert"}),
    "16-element overrun under ZETILE_DEBUG=bounds": ("""
@zetile.jit
def k(x_ptr, y_ptr, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(y_ptr + o, tl.load(x_ptr + o))
x = np.zeros(16, np.float32); y = np.zeros(32, np.float32)
k[(1,)](x, y, B=32)
report(False)
""", {"ZETILE_DEBUG": "bounds"}),
    "atomic past the end under ZETILE_DEBUG=bounds": ("""
@zetile.jit
def k(h_ptr, i_ptr, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.atomic_add(h_ptr + tl.load(i_ptr + o), 1)
h = np.zeros(8, np.int32)
k[(1,)](h, np.arange(16, dtype=np.int32), B=16)
report(False)
""", {"ZETILE_DEBUG": "bounds"}),
    "masked kernel, exact sizes, ZETILE_DEBUG=bounds (must run)": ("""
@zetile.jit
def k(x_ptr, y_ptr, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    m = o < n
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=m) * 2, mask=m)
x = np.arange(100, dtype=np.float32); y = np.zeros(100, np.float32)
k[(4,)](x, y, 100, B=32)
report((y == 2 * x).all())
""", {"ZETILE_DEBUG": "bounds"}),
    "torch view arange(8)[::2]": ("""
import torch
@zetile.jit
def k(x_ptr, y_ptr, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(y_ptr + o, tl.load(x_ptr + o) * 2)
y = torch.zeros(4)
k[(1,)](torch.arange(8.)[::2], y, B=4)
report(y.tolist() == [0, 4, 8, 12])
""", {}),
    "torch expanded (stride 0)": ("""
import torch
@zetile.jit
def k(x_ptr, y_ptr, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(y_ptr + o, tl.load(x_ptr + o))
y = torch.zeros(4)
k[(1,)](torch.ones(1).expand(4), y, B=4)
report(False)
""", {}),
    "numpy big-endian floats": ("""
@zetile.jit
def k(x_ptr, y_ptr, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(y_ptr + o, tl.load(x_ptr + o))
y = np.zeros(4, np.float32)
k[(1,)](np.arange(4, dtype='>f4'), y, B=4)
report(y.tolist() == [0, 1, 2, 3])
""", {}),
    "numpy misaligned view": ("""
@zetile.jit
def k(x_ptr, y_ptr, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(y_ptr + o, tl.load(x_ptr + o))
raw = np.zeros(17, np.uint8)
k[(1,)](raw[1:].view(np.float32), np.zeros(4, np.float32), B=4)
report(False)
""", {}),
    "torch meta tensor": ("""
import torch
@zetile.jit
def k(x_ptr, B: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, B), 1.0)
k[(1,)](torch.empty(4, device="meta"), B=4)
report(False)
""", {}),
    "DLPack view": ("""
import torch
class D:
    def __init__(s, a): s.a = a
    def __dlpack__(s, **kw): return s.a.__dlpack__(**kw)
    def __dlpack_device__(s): return s.a.__dlpack_device__()
@zetile.jit
def k(x_ptr, y_ptr, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(y_ptr + o, tl.load(x_ptr + o))
y = np.zeros(4, np.float32)
k[(1,)](D(torch.arange(8.)[::2]), y, B=4)
report(y.tolist() == [0, 2, 4, 6])
""", {}),
    "annotated *fp32 given fp64": ("""
@zetile.jit
def k(x_ptr: "*fp32", B: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, B), 1.0)
k[(1,)](np.zeros(4), B=4)
report(False)
""", {}),
    "grid with a negative dimension": ("""
@zetile.jit
def k(x_ptr, B: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, B), 1.0)
k[(-1,)](np.zeros(4, np.float32), B=4)
report(False)
""", {}),
    "missing argument": ("""
@zetile.jit
def k(x_ptr, n, B: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, B), 1.0)
k[(1,)](np.zeros(4, np.float32), B=4)
report(False)
""", {}),
    "type error inside the kernel": ("""
@zetile.jit
def k(x_ptr, B: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, B), tl.arange(0, B) + "a")
k[(1,)](np.zeros(4, np.float32), B=4)
report(False)
""", {}),
    "arange not a power of two": ("""
@zetile.jit
def k(x_ptr, B: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, B), 1.0)
k[(1,)](np.zeros(8, np.float32), B=6)
report(False)
""", {}),
    "tl.arange(0, 16.0) (should be refused)": ("""
@zetile.jit
def k(x_ptr, B: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, 16.0), 1.0)
k[(1,)](np.zeros(16, np.float32), B=4)
print("RESULT accepted")
""", {}),
    "float constexpr BLOCK=16.5 (should be refused)": ("""
@zetile.jit
def k(x_ptr, B: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, B), 1.0)
k[(1,)](np.zeros(32, np.float32), B=16.5)
print("RESULT accepted")
""", {}),
    "device_assert failing (debug=True)": ("""
@zetile.jit(debug=True)
def k(x_ptr, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.device_assert(o < 2, "o small")
    tl.store(x_ptr + o, 1.0)
k[(1,)](np.zeros(4, np.float32), B=4)
report(False)
""", {}),
}


def run_script(code, env=None, timeout=120, workdir=None):
    """(outcome, detail) of running PRELUDE + code in a fresh interpreter."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False, dir=workdir) as f:
        f.write(PRELUDE + textwrap.dedent(code))
    e = dict(ENV, **(env or {}))
    try:
        p = subprocess.run([PY, f.name], env=e, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "HANG", f"no end after {timeout}s"
    finally:
        os.unlink(f.name)
    if p.returncode < 0:
        return "CRASH", f"signal {-p.returncode}"
    m = re.search(r"^RESULT (\w+)", p.stdout, re.M)
    if p.returncode == 0 and m:
        return m.group(1), ""
    last = [l for l in p.stderr.strip().splitlines() if l.strip()]
    detail = last[-1] if last else f"exit {p.returncode}"
    # Exit status 1 with a traceback: the exception that ended the script.
    return ("error" if p.returncode == 1 else f"exit {p.returncode}"), detail[:150]


def section(title):
    print(f"\n== {title}")


def bad_inputs(cache_dir):
    section(f"bad kernels and launches ({len(BAD)}, each in a fresh interpreter)")
    counts = {}
    for name, (code, env) in BAD.items():
        outcome, detail = run_script(code, dict(env, ZETILE_CACHE_DIR=cache_dir))
        counts[outcome] = counts.get(outcome, 0) + 1
        print(f"  {outcome:6} {name}: {detail}")
    return counts


DAMAGE = {
    "truncated to 10 bytes": "open(p, 'r+b').truncate(10)",
    "empty file": "open(p, 'wb').close()",
    "one byte flipped": "b = bytearray(open(p, 'rb').read()); b[len(b) // 2] ^= 0xff; open(p, 'wb').write(b)",
    "garbage": "open(p, 'wb').write(os.urandom(5000))",
    "FIFO in its place": "os.unlink(p); os.mkfifo(p)",
    "directory in its place": "os.unlink(p); os.mkdir(p)",
    "symlink to /dev/zero": "os.unlink(p); os.symlink('/dev/zero', p)",
    "symlink to another kernel's entry": "os.unlink(p); os.symlink(other, p)",
    "swapped with another kernel's entry": "t = p + '.t'; os.rename(p, t); os.rename(other, p); os.rename(t, other)",
    "key directory replaced by a link out of the cache": "d = os.path.dirname(p); shutil.rmtree(d); os.symlink(tempfile.mkdtemp(), d)",
}

CACHE_KERNELS = """
@zetile.jit
def scale(x_ptr, y_ptr, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(y_ptr + o, tl.load(x_ptr + o) * 3)
@zetile.jit
def shift(x_ptr, y_ptr, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(y_ptr + o, tl.load(x_ptr + o) + 100)
x = np.arange(16, dtype=np.float32); y = np.zeros(16, np.float32); z = np.zeros(16, np.float32)
scale[(1,)](x, y, B=16); shift[(1,)](x, z, B=16)
report((y == 3 * x).all() and (z == x + 100).all())
"""


def cli_and_interrupt():
    section("command line and Ctrl-C")
    counts = {}
    p = subprocess.run([PY, "-m", "zetile", "info"], env=dict(ENV, ZETILE_DEVICE="garbage"),
                       capture_output=True, text=True, timeout=120)
    out = (p.stdout + p.stderr).strip().splitlines()
    verdict = "error" if p.returncode != 0 else "accepted"
    counts[verdict] = 1
    print(f"  {verdict:6} zetile info with ZETILE_DEVICE=garbage: exit {p.returncode}: "
          f"{(out or [''])[-1][:120]}")
    code = PRELUDE + textwrap.dedent("""
        import time, faulthandler, signal
        faulthandler.register(signal.SIGUSR1, all_threads=True)   # the stacks, if it hangs
        # Ctrl-C as a terminal's shell gives it: a process started in the
        # background of a non-interactive shell (`bench/reliability.py &`)
        # inherits SIGINT ignored, and Python then never raises
        # KeyboardInterrupt (the probe hung so, with zetile not at fault).
        signal.signal(signal.SIGINT, signal.default_int_handler)
        @zetile.jit
        def spin(x_ptr, n, B: tl.constexpr):
            o = tl.arange(0, B)
            acc = tl.zeros([B], dtype=tl.float32)
            for i in range(n):
                acc = acc * 0.5 + 1.0
            tl.store(x_ptr + o, acc)
        x = np.zeros(16, np.float32)
        spin[(2,)](x, 10, B=16)
        print("started", flush=True)
        try:
            spin[(100000,)](x, 20000000, B=16)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
    """)
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(code)
    p = subprocess.Popen([PY, f.name], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    p.stdout.readline()
    time.sleep(1.0)
    import signal
    t = time.time()
    p.send_signal(signal.SIGINT)
    try:
        out, _ = p.communicate(timeout=60)
        verdict = "error" if "interrupted" in out else f"exit {p.returncode}"
        print(f"  {verdict:6} Ctrl-C 1 s into a launch of hours: KeyboardInterrupt, process "
              f"ended {time.time() - t:.2f} s after the signal")
    except subprocess.TimeoutExpired:
        # Which hang: the interpreter still running (its Python stacks go to
        # stderr), or a child of it still holding the output pipes.
        alive = p.poll() is None
        if alive:
            p.send_signal(signal.SIGUSR1)
            time.sleep(1.0)
        p.kill()
        try:
            out, err = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            out, err = "", "(the pipes stay open: a child process holds them)"
        verdict = "HANG"
        print(f"  HANG   Ctrl-C during a long launch: {'still running' if alive else 'exited, pipes open'}"
              f" 60 s later; stdout {out.strip()!r}; stderr (last lines):")
        for line in err.strip().splitlines()[-25:]:
            print("           " + line)
    os.unlink(f.name)
    counts[verdict] = counts.get(verdict, 0) + 1
    return counts


def cache_damage():
    section(f"cache damage ({len(DAMAGE)} kinds; a fresh process must recompile and be right)")
    counts = {}
    for name, how in DAMAGE.items():
        d = tempfile.mkdtemp(prefix="zt-rel-cache-")
        try:
            outcome, _ = run_script(CACHE_KERNELS, {"ZETILE_CACHE_DIR": d})
            entries = sorted(os.path.join(r, f) for r, _, fs in os.walk(d) for f in fs
                             if f == "artifact")
            if outcome != "ok" or len(entries) < 2:
                print(f"  SETUP  {name}: {outcome} {len(entries)} entries")
                continue
            p, other = entries[0], entries[1]
            exec(how, {"os": os, "shutil": shutil, "tempfile": tempfile, "p": p, "other": other})
            outcome, detail = run_script(CACHE_KERNELS, {"ZETILE_CACHE_DIR": d}, timeout=60)
            counts[outcome] = counts.get(outcome, 0) + 1
            print(f"  {outcome:6} {name} {detail}")
        finally:
            for r, ds, _ in os.walk(d):
                for x in ds:
                    try:
                        os.chmod(os.path.join(r, x), 0o755)
                    except OSError:
                        pass
            shutil.rmtree(d, ignore_errors=True)
    return counts


CONCURRENT = """
import threading
@zetile.jit
def axpy(x_ptr, y_ptr, out_ptr, a, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    m = o < n
    tl.store(out_ptr + o, a * tl.load(x_ptr + o, mask=m) + tl.load(y_ptr + o, mask=m), mask=m)
ok = True
for r in range(ROUNDS):
    for B in (32, 64, 128):
        n = 1000 + 37 * r
        x = np.random.rand(n).astype(np.float32); y = np.random.rand(n).astype(np.float32)
        out = np.zeros(n, np.float32)
        axpy[(-(-n // B),)](x, y, out, 2.5, n, B=B)
        ok = ok and np.allclose(out, 2.5 * x + y)
report(ok)
"""

THREADS = """
import threading
@zetile.jit
def axpy(x_ptr, y_ptr, out_ptr, a, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    m = o < n
    tl.store(out_ptr + o, a * tl.load(x_ptr + o, mask=m) + tl.load(y_ptr + o, mask=m), mask=m)
results = []
def work(t):
    for r in range(ROUNDS):
        B = (16, 32, 64, 128)[(t + r) % 4]
        n = 500 + 13 * t + r
        x = np.random.rand(n).astype(np.float32); y = np.random.rand(n).astype(np.float32)
        out = np.zeros(n, np.float32)
        axpy[(-(-n // B),)](x, y, out, float(t), n, B=B)
        results.append(np.allclose(out, t * x + y))
ts = [threading.Thread(target=work, args=(t,)) for t in range(THREADS_N)]
[t.start() for t in ts]; [t.join() for t in ts]
print("LAUNCHES", len(results), sum(results))
report(all(results) and len(results) == THREADS_N * ROUNDS)
"""


def concurrency(procs, rounds):
    section(f"{procs} processes x {rounds} rounds on one fresh cache; 8 threads in one process")
    d = tempfile.mkdtemp(prefix="zt-rel-conc-")
    code = CONCURRENT.replace("ROUNDS", str(rounds))
    files = []
    ps = []
    for i in range(procs):
        with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
            f.write(PRELUDE + code)
        files.append(f.name)
        ps.append(subprocess.Popen([PY, f.name], env=dict(ENV, ZETILE_CACHE_DIR=d),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    right = 0
    for p in ps:
        try:
            out, err = p.communicate(timeout=600)
            right += "RESULT ok" in out
            if "RESULT ok" not in out:
                print("   ", (err.strip().splitlines() or ["?"])[-1][:150])
        except subprocess.TimeoutExpired:
            p.kill()
    for f in files:
        os.unlink(f)
    print(f"  processes: {right}/{procs} right ({procs * rounds * 3} launches)")
    outcome, detail = run_script(THREADS.replace("THREADS_N", "8").replace("ROUNDS", "25"),
                                 {"ZETILE_CACHE_DIR": d}, timeout=600)
    print(f"  threads: 8 threads x 25 launches: {outcome} {detail}")
    shutil.rmtree(d, ignore_errors=True)
    return right, procs, outcome


def c_misuse():
    section("C API misuse and cache damage (Check tests, build/)")
    total = 0
    for t in ("test_api_misuse", "test_cpu_faults", "test_cache_damage"):
        exe = os.path.join(ROOT, "build", t)
        if not os.path.exists(exe):
            print(f"  {t}: not built")
            continue
        p = subprocess.run([exe], capture_output=True, text=True, timeout=300)
        m = re.search(r"Checks: (\d+), Failures: (\d+), Errors: (\d+)", p.stdout + p.stderr)
        print(f"  {t}: {m.group(0) if m else 'no summary'}")
    src = open(os.path.join(ROOT, "tests/c/test_api_misuse.c")).read()
    total = len(re.findall(r"^\s*(INVALID|FAILS_WITH)\(", src, re.M))
    print(f"  misuses asserted in test_api_misuse.c: {total}")


def fuzz(seconds):
    section(f"libFuzzer, {seconds}s per harness (tests/fuzz/run.sh)")
    runner = os.path.join(ROOT, "tests/fuzz/run.sh")
    if not shutil.which("clang-22"):
        print("  skipped: no clang-22")
        return None
    p = subprocess.run([runner, str(seconds)], capture_output=True, text=True,
                       timeout=seconds * 8 + 600)
    execs = harnesses = 0
    for line in p.stdout.splitlines():
        print("  " + line)
        m = re.match(r"fuzz \S+: (\d+) executions", line)
        if m:
            execs, harnesses = execs + int(m.group(1)), harnesses + 1
    print(f"  total: {execs} executions in {harnesses} harness runs, exit status {p.returncode}")
    fuzz.executions = execs
    return p.returncode


def numpy_kernels(n, seed):
    """Both generators of random kernels, n seeds each from seed: (worst
    return code, wrong results, errors, crashed, hung)."""
    section(f"random kernels against numpy, {n} seeds each from {seed} (tests/fuzz/numpy_kernels.py: "
            f"elementwise and reductions; numpy_kernels_cf.py: loops, ifs, whiles, dots, atomics)")
    if n <= 0:
        print("  skipped")
        return None, 0, 0, 0, 0
    rc, wrong, errors, crashed, hung = 0, 0, 0, 0, 0
    for script in ("numpy_kernels.py", "numpy_kernels_cf.py"):
        try:
            p = subprocess.run([PY, os.path.join(ROOT, "tests/fuzz", script), "--kernels", str(n),
                                "--seed", str(seed)], capture_output=True, text=True, env=ENV,
                               timeout=60 * n + 600)
        except subprocess.TimeoutExpired:
            print(f"  HANG: {script} past {60 * n + 600} s")
            rc, hung = 1, hung + 1
            continue
        lines = p.stdout.strip().splitlines() or ["(no output)"]
        for line in lines:                        # the failing seeds' first lines
            if re.match(r"seed \d+: ", line):
                print("    " + line[:200])
        print("  " + lines[-1])
        if p.returncode < 0:
            print(f"  CRASH: {script} killed by signal {-p.returncode}")
            crashed += 1
        m = re.search(r"(\d+) wrong results, (\d+) errors", lines[-1])
        wrong += int(m.group(1)) if m else 0
        errors += int(m.group(2)) if m else 0
        rc = rc or p.returncode
    return rc, wrong, errors, crashed, hung


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fuzz-seconds", type=int, default=10)
    ap.add_argument("--procs", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--numpy-kernels", type=int, default=40,
                    help="random kernels checked against numpy, per generator (two generators)")
    ap.add_argument("--numpy-seed", type=int, default=0, help="first seed of the random kernels")
    args = ap.parse_args()
    t0 = time.time()
    cache = tempfile.mkdtemp(prefix="zt-rel-")
    bad = bad_inputs(cache)
    shutil.rmtree(cache, ignore_errors=True)
    for k, v in cli_and_interrupt().items():
        bad[k] = bad.get(k, 0) + v
    dmg = cache_damage()
    right, procs, threads = concurrency(args.procs, args.rounds)
    c_misuse()
    fuzz_rc = fuzz(args.fuzz_seconds)
    fuzz_execs = getattr(fuzz, "executions", 0)
    np_rc, np_wrong, np_errors, np_crashed, np_hung = numpy_kernels(args.numpy_kernels, args.numpy_seed)
    crashes = bad.get("CRASH", 0) + dmg.get("CRASH", 0) + np_crashed
    hangs = bad.get("HANG", 0) + dmg.get("HANG", 0) + np_hung
    wrong = bad.get("WRONG", 0) + dmg.get("WRONG", 0) + (procs - right) + (threads != "ok") + np_wrong
    print(f"\nSUMMARY ({time.time() - t0:.0f}s): {crashes} crashes, {hangs} hangs, "
          f"{wrong} silent wrong results or failed concurrent runs, "
          f"{bad.get('accepted', 0)} bad inputs accepted without an error; fuzzers "
          f"{'clean' if fuzz_rc == 0 else 'FAILED' if fuzz_rc else 'skipped'}"
          f"{f' ({fuzz_execs} executions)' if fuzz_rc is not None else ''}"
          f"; random kernels "
          f"{'clean' if np_rc == 0 else 'FAILED' if np_rc else 'skipped'}"
          f"{f' ({np_wrong} wrong, {np_errors} errors)' if np_rc else ''}")
    return 1 if crashes or hangs or wrong or fuzz_rc or np_rc else 0


if __name__ == "__main__":
    sys.exit(main())
