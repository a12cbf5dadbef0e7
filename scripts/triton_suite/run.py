"""Runs Triton's language tests with `triton` resolved to zetile (CPU target)
and with Triton's own interpreter, on the same selection, and compares.

    TRITON_SRC=/path/to/triton scripts/triton_suite.sh [options]

TRITON_SRC is a Triton source tree (its python/test/unit/language and
python/conftest.py are used; nothing of it is copied here). Each test file
runs as its own pytest process per mode, results land as JUnit XML in --out,
and the summary prints `N passed, N failed, N skipped` per mode. Failures of
zetile are then matched against tests/triton_suite_known_failures.txt
(patterns with `*` wildcards, a reason each): a failure no pattern covers is reported as
new, and a pattern that covers only passing tests as stale (a test that
started passing), so both show up. The exit status is 1 when either exists.
"""
import argparse
import importlib.util
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.dirname(os.path.abspath(__file__))
FILES = ["test_core.py", "test_standard.py", "test_random.py", "test_tuple.py"]
KNOWN = os.path.join(ROOT, "tests", "triton_suite_known_failures.txt")
# Deselected in both modes: Triton's interpreter runs one program at a time
# in Python, and this test launches 65536 programs 1000 times (hours).
DESELECT = ["test/unit/language/test_core.py::test_load_store_same_ptr"]


def run_file(mode, src, name, out, timeout, extra):
    xml = os.path.join(out, f"{mode}_{name[:-3]}.xml")
    log = os.path.join(out, f"{mode}_{name[:-3]}.log")
    env = dict(os.environ)
    # -v: one line per test as it finishes, so a run cut short still has results.
    cmd = [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-o", "addopts=",
           "-o", "console_output_style=classic", "--disable-warnings",
           f"test/unit/language/{name}", "--device", "cpu", f"--junitxml={xml}"] + extra
    for d in DESELECT:
        cmd += ["--deselect", d]
    if mode == "zetile":
        env.pop("TRITON_INTERPRET", None)
        env["ZETILE_DEVICE"] = "cpu"
        env["PYTHONPATH"] = os.pathsep.join([HERE, os.path.join(ROOT, "python-bindings"),
                                             env.get("PYTHONPATH", "")])
        cmd[3:3] = ["-p", "zt_triton_alias"]
    else:
        env["TRITON_INTERPRET"] = "1"
    t0 = time.time()
    with open(log, "w") as f:
        try:
            subprocess.run(cmd, cwd=os.path.join(src, "python"), env=env, stdout=f,
                           stderr=subprocess.STDOUT, timeout=timeout)
        except subprocess.TimeoutExpired:
            print(f"  {mode} {name}: timed out after {timeout} s (results so far are lost)",
                  file=sys.stderr)
    return xml, time.time() - t0


_LINE = re.compile(r"^test/unit/language/(\S+\.py::.+?) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)\b")
_STATE = {"PASSED": "passed", "XPASS": "passed", "FAILED": "failed", "ERROR": "failed",
          "SKIPPED": "skipped", "XFAIL": "skipped"}


def read_log(log):
    """Results from the -v log, for a run cut short (no XML written)."""
    out = {}
    if os.path.exists(log):
        for line in open(log, errors="replace"):
            m = _LINE.match(line)
            if m and out.get(m.group(1)) != "failed":
                out[m.group(1)] = _STATE[m.group(2)]
    return out


def read_results(xml):
    """{test id: 'passed' | 'failed' | 'skipped'} from a JUnit XML file, or
    from the -v log beside it when the run did not finish."""
    out = {}
    if not os.path.exists(xml):
        out = read_log(xml[:-4] + ".log")
        if out:
            print(f"  {os.path.basename(xml)} missing: {len(out)} results read from the log "
                  "(a partial run)", file=sys.stderr)
        return out
    for tc in ET.parse(xml).getroot().iter("testcase"):
        file = tc.get("file") or (tc.get("classname", "").split(".")[-1] + ".py")
        tid = f"{os.path.basename(file)}::{tc.get('name')}"
        kinds = {c.tag for c in tc}
        if "failure" in kinds or "error" in kinds:
            state = "failed"
        elif "skipped" in kinds:
            state = "skipped"
        else:
            state = "passed"
        # A test that passed but errored in teardown appears twice: keep the failure.
        if out.get(tid) != "failed":
            out[tid] = state
    return out


def read_known(path):
    """[(pattern, reason)] from the known-failures file: `pattern  # reason`."""
    known = []
    if not os.path.exists(path):
        return known
    for line in open(path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        pattern, _, reason = line.partition("#")
        known.append((pattern.strip(), reason.strip()))
    return known


def _match(test_id, pattern):
    """Shell-style `*` and `?` only: brackets are literal (test parameters)."""
    rx = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(rx, test_id) is not None


def counts(results):
    c = {"passed": 0, "failed": 0, "skipped": 0}
    for s in results.values():
        c[s] += 1
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--triton-src", default=os.environ.get("TRITON_SRC"))
    ap.add_argument("--files", default=",".join(FILES), help="comma-separated test files")
    ap.add_argument("--modes", default="zetile,interpreter")
    ap.add_argument("--out", default=os.environ.get("ZT_SUITE_OUT", "/tmp/zetile-triton-suite"))
    ap.add_argument("--timeout", type=int, default=4 * 3600, help="seconds per file and mode")
    ap.add_argument("--reuse", action="store_true",
                    help="read results already in --out (XML, or the -v log of a run cut short)")
    ap.add_argument("--known", default=KNOWN)
    ap.add_argument("-k", dest="select", help="pytest -k expression (both modes)")
    args = ap.parse_args()
    if not args.triton_src or not os.path.isdir(os.path.join(args.triton_src, "python", "test")):
        ap.error("set TRITON_SRC (or --triton-src) to a Triton source tree")
    os.makedirs(args.out, exist_ok=True)
    extra = ["-k", args.select] if args.select else []
    files = [f for f in args.files.split(",") if f]
    modes = [m for m in args.modes.split(",") if m]
    if "test_random.py" in files and importlib.util.find_spec("scipy") is None:
        # Triton's test_random.py imports scipy.stats: without it the whole file
        # errors at collection and would count as failures of zetile.
        ap.error("test_random.py needs scipy: .venv/bin/pip install -r "
                 "scripts/triton_suite/requirements.txt (or leave it out with --files)")
    results = {m: {} for m in modes}
    for m in modes:
        for f in files:
            xml = os.path.join(args.out, f"{m}_{f[:-3]}.xml")
            log = xml[:-4] + ".log"
            if not (args.reuse and (os.path.exists(xml) or os.path.exists(log))):
                print(f"running {f} ({m}) ...", file=sys.stderr, flush=True)
                xml, secs = run_file(m, args.triton_src, f, args.out, args.timeout, extra)
                print(f"  {secs:.0f} s", file=sys.stderr)
            results[m].update(read_results(xml))

    print(f"Triton's language tests ({', '.join(files)}) from {args.triton_src}; "
          f"deselected in both modes: {', '.join(d.split('/')[-1] for d in DESELECT)}")
    for f in files:
        for m in modes:
            c = counts({k: v for k, v in results[m].items() if k.startswith(f + "::")})
            print(f"  {f:18s} {m:12s} {c['passed']:6d} passed, {c['failed']:5d} failed, "
                  f"{c['skipped']:5d} skipped")
    for m in modes:
        c = counts(results[m])
        print(f"  {'all':18s} {m:12s} {c['passed']:6d} passed, {c['failed']:5d} failed, "
              f"{c['skipped']:5d} skipped of {len(results[m])}")
    if "zetile" not in modes:
        return 0

    zt = results["zetile"]
    interp = results.get("interpreter", {})
    known = read_known(args.known)
    hits = {p: 0 for p, _ in known}
    unlisted = []
    for tid, state in sorted(zt.items()):
        if state != "failed":
            continue
        pat = next((p for p, _ in known if _match(tid, p)), None)
        if pat is not None:
            hits[pat] += 1
        elif interp.get(tid) != "failed":  # failing in Triton's interpreter too is not ours
            unlisted.append(tid)
    ran = set(zt)
    stale = [p for p, _ in known if hits[p] == 0 and any(_match(t, p) for t in ran)]
    failed = [t for t, s in zt.items() if s == "failed"]
    listed = sum(1 for t in failed if any(_match(t, p) for p, _ in known))
    both = sum(1 for t in failed if interp.get(t) == "failed" and not any(_match(t, p) for p, _ in known))
    print(f"zetile failures: {listed} listed in {os.path.relpath(args.known, ROOT)}, "
          f"{both} others also fail in Triton's interpreter, {len(unlisted)} neither")
    if interp:
        lost = [t for t, s in interp.items() if s == "passed" and zt.get(t) != "passed"]
        gained = [t for t, s in zt.items() if s == "passed" and interp.get(t) != "passed"]
        print(f"passing in the interpreter but not in zetile: {len(lost)}; "
              f"the reverse: {len(gained)}")
    for t in unlisted:
        print(f"  NEW FAILURE {t}")
    for p in stale:
        print(f"  NOW PASSING (remove from the list) {p}")
    return 1 if unlisted or stale else 0


if __name__ == "__main__":
    sys.exit(main())
