"""Triton's tutorials 01-09 (and Intel's 03a) from a Triton source tree, with
only `import triton` resolved to zetile, on every target (issue 12):

  cpu          the tutorial's kernels run on CPU tensors against its own torch
               reference at a small size (E4);
  pvc bmg dg2  every specialization those launches compiled, built for the
               target: E1 (spirv-val) and E2 (ocloc + iga64: DPAS, sends,
               spilled registers), each build under a time limit;
  e5           the cpu column's cases again (same host code, same torch
               reference), with the kernels' pvc SPIR-V run on Intel's
               OpenCL CPU runtime (zetile device opencl:cpu), each case
               under --e5-timeout (that runtime's compiler is slow on big
               kernels); a case past it is "timeout", never a pass.

    TRITON_SRC=/path/to/triton .venv/bin/python scripts/tutorials.py
    scripts/tutorials.py --tutorials 01,03 --targets cpu,pvc --timeout 300

TRITON_SRC is triton-lang/triton or intel/intel-xpu-backend-for-triton (whose
tutorials carry Intel's configs and 03a); nothing of it is stored here. One
table (kernel x target: ok / refused: first message line / timeout / wrong /
error) and a summary are printed; results are compared with
tests/tutorials_known_failures.txt: the exit status is 1 only for a failure
no line there covers (NEW FAILURE); a line that covers only passing cells is
printed as NOW PASSING. How tutorials are run: tutorials_cases.py (one
process per tutorial), tutorials_drivers.py (the calls per tutorial),
tutorials_compile.py (one process per Xe build).
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.join(ROOT, "scripts")
KNOWN = os.path.join(ROOT, "tests", "tutorials_known_failures.txt")
TUTORIALS = ["01", "02", "03", "03a", "04", "05", "06", "07", "08", "09"]
# Intel's benchmark kernels (benchmarks/triton_kernels_benchmark in Intel's
# tree), on request: `--tutorials ib` or names (scripts/intel_bench_drivers.py).
INTEL_BENCH = ["ib-softmax", "ib-prefix-sums", "ib-gemm", "ib-gemm-tensor-of-ptr", "ib-gemm-splitk",
               "ib-gemm-streamk", "ib-gemm-postop-gelu", "ib-gemm-postop-addmatrix",
               "ib-gemm-preop-exp", "ib-fused-gemm", "ib-flash-attention"]
TARGETS = ["cpu", "pvc", "bmg", "dg2"]
EXTRA_TARGETS = ["e5"]   # not run by default: it needs Intel's OpenCL CPU runtime and takes long
# Integrated GPUs (issue 21; lowering/xe/xe_target.c's rows): built like the
# discrete targets, on request. Debian's ocloc knows these five; lnl and ptl
# emit bmg's SPIR-V, mtl tgllp's and arl-h dg2's (E1 only for those).
IGPU_TARGETS = ["skl", "icllp", "tgllp", "adl-p", "dg1", "mtl", "arl-h", "lnl", "ptl"]
EXTRA_TARGETS += IGPU_TARGETS


# ------------------------------------------------------------ known failures
def parse_known(text):
    """Lines `pattern  # reason`; the pattern is `row@target` with `*`
    wildcards (row: `NN-tutorial::case`). Returns [(pattern, reason)]."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        pat, _, reason = line.partition(" #")   # a row name may hold '#'; never a space
        pat = pat.strip()
        if "@" not in pat:
            raise ValueError(f"known-failures line without @target: {line!r}")
        out.append((pat, reason.strip()))
    return out


def matches(name, pattern):
    """`*` is the only wildcard (row names hold brackets: `[BM256,w32]`)."""
    return re.fullmatch(".*".join(re.escape(p) for p in pattern.split("*")), name) is not None


def compare(cells, known):
    """cells: {(row, target): status}; known: [(pattern, reason)].
    Returns (new, expected, now_passing): new and expected are sorted
    [(row, target)] of cells not "ok" that no pattern / some pattern covers;
    now_passing lists the patterns that match cells but only "ok" ones
    (a pattern matching nothing run is not judged: the run may have left
    its tutorial or target out)."""
    new, expected, now_passing = [], [], []
    hits = {p: [] for p, _ in known}
    for (row, target), status in sorted(cells.items()):
        name = f"{row}@{target}"
        matched = [p for p, _ in known if matches(name, p)]
        for p in matched:
            hits[p].append(status)
        if status == "ok":
            continue
        (expected if matched else new).append((row, target))
    for p, _ in known:
        if hits[p] and all(s == "ok" for s in hits[p]):
            now_passing.append(p)
    return new, expected, now_passing


# ------------------------------------------------------------ running
def run_cases(src, tut, out_dir, timeout, quick):
    out = os.path.join(out_dir, f"cases_{tut}.json")
    cmd = [sys.executable, os.path.join(HERE, "tutorials_cases.py"), "--src", src, "--tutorial", tut,
           "--out", out] + (["--quick"] if quick else [])
    t = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"tutorial": tut, "error": f"timeout: the CPU run took more than {timeout} s",
                "cases": [], "specs": []}
    last = (r.stderr.strip().splitlines() or ["?"])[-1]
    if not os.path.exists(out):
        return {"tutorial": tut, "error": f"the case process failed: {last}", "cases": [], "specs": []}
    with open(out) as f:
        res = json.load(f)
    for c in res.get("cases", []):
        if c.get("status") == "crash":   # the case the process died in (see tutorials_cases.run)
            c["message"] = f"process died (exit {r.returncode}): {last[:200]}"
    res["seconds"] = round(time.time() - t, 1)
    return res


def run_cases_e5(src, tut, out_dir, limit, quick):
    """The tutorial's cases on opencl:cpu, each under `limit` seconds: the
    case process is watched through the results file it rewrites per case;
    a case running past the limit has its process killed, is recorded as
    timeout, and a new process goes on with the cases after it (a case that
    kills its process is likewise recorded and skipped). Returns
    {case: result}."""
    out = os.path.join(out_dir, f"e5_{tut}.json")
    done = {}
    while True:
        if os.path.exists(out):
            os.remove(out)
        cmd = [sys.executable, os.path.join(HERE, "tutorials_cases.py"), "--src", src, "--tutorial", tut,
               "--out", out, "--device", "opencl:cpu", "--skip", "\n".join(done)] + \
              (["--quick"] if quick else [])
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        t0, killed, current = time.time(), None, None
        while p.poll() is None:
            time.sleep(1)
            res = _read_json(out)
            cases = (res or {}).get("cases", [])
            current = cases[-1] if cases and cases[-1].get("status") == "crash" else None
            # The clock runs from the running case's start; between cases and
            # after the last one, from the last one's end; before the first,
            # from the process's start (loading the tutorial is limited too).
            if current:
                started = current.get("started", t0)
            elif cases:
                started = cases[-1].get("started", t0) + (cases[-1].get("seconds") or 0)
            else:
                started = t0
            if time.time() - started > limit:
                os.killpg(p.pid, 9)
                killed = current["case"] if current else None
                break
        _, err = p.communicate()
        res = _read_json(out) or {}
        new, died = 0, False
        for c in res.get("cases", []):
            if c["case"] in done:
                continue
            new += 1
            if c.get("status") == "crash":
                if c["case"] == killed:
                    c["status"], c["message"] = "timeout", f"no result after {limit:g} s on opencl:cpu"
                else:
                    died = True
                    last = (err.strip().splitlines() or ["?"])[-1]
                    c["message"] = f"process died (exit {p.returncode}): {last[:200]}"
            done[c["case"]] = c
        # A process that fails after its last case (seen: a non-zero exit at
        # the OpenCL runtime's teardown) has nothing left to run.
        if not killed and not died and (p.returncode == 0 or res.get("cases")):
            if p.returncode != 0:
                for c in done.values():
                    c.setdefault("note", f"the process then exited {p.returncode}")
            return done
        if new == 0:   # nothing got as far as a case: the whole tutorial failed
            msg = (f"timeout: loading took more than {limit:g} s" if killed or p.returncode == -9
                   else f"the case process failed: {(err.strip().splitlines() or ['?'])[-1][:200]}")
            done["*"] = {"case": "*", "status": "timeout" if "timeout" in msg else "error", "message": msg}
            return done


def _read_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def e5_cell(row, e5):
    case = row["case"].get("case")
    if case in e5:
        c = e5[case]
        return {"status": c.get("status", "error"), "message": c.get("message", ""),
                "seconds": c.get("seconds")}
    if "*" in e5:
        return dict(e5["*"])
    return {"status": "not run", "message": "no such case on opencl:cpu"}


def run_build(spec, target, out_dir, timeout):
    job = os.path.join(out_dir, f"job_{spec['ir_key']}.json")
    with open(job, "w") as f:
        json.dump(spec, f)
    out = os.path.join(out_dir, f"build_{spec['ir_key']}_{target}.json")
    cmd = [sys.executable, os.path.join(HERE, "tutorials_compile.py"), "--job", job, "--target", target,
           "--out", out]
    t = time.time()
    # Own session: a timeout stops the worker and the compile workers it starts.
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)
        p.communicate()
        return {"status": "timeout", "message": f"no result after {timeout} s", "compile_s": timeout}
    if p.returncode != 0 or not os.path.exists(out):
        last = (err.strip().splitlines() or ["?"])[-1]
        return {"status": "error", "message": f"build process failed: {last[:300]}",
                "compile_s": round(time.time() - t, 1)}
    with open(out) as f:
        return json.load(f)


def rows_of(res):
    """Table rows of one tutorial: one per (case, kernel specialization); a
    case that compiled nothing (refused before recording, or failed in host
    code) is a row of its own."""
    name = res.get("tutorial", "?")
    rows = []
    by_case = {c["case"]: c for c in res.get("cases", [])}
    seen = {}
    for s in res.get("specs", []):
        case = by_case.get(s["case"], {"status": "error", "message": "case did not finish"})
        label = s["case"] if s["kernel"] in s["case"] else f"{s['case']}/{s['kernel']}"
        k = seen.get(label, 0)
        seen[label] = k + 1
        rows.append({"row": f"{name}::{label}" + (f"({k + 1})" if k else ""), "case": case, "spec": s})
    for c in res.get("cases", []):
        if not any(r["case"].get("case") == c["case"] for r in rows):
            rows.append({"row": f"{name}::{c['case']}", "case": c, "spec": None})
    if res.get("error"):
        rows.append({"row": f"{name}::*", "case": {"status": "error", "message": res["error"]},
                     "spec": None})
    return rows


def cell_text(c):
    st = c.get("status", "error")
    if st == "ok":
        extra = ""
        if "isa" in c:
            i = c["isa"]
            extra = f" {i['dpas']}dpas/{i['sends']}snd" + (f" spill{i['spilled']}" if i["spilled"] else "")
        if c.get("E2") == "n/a":
            extra += " (E1 only)"
        if c.get("E2") == "pass (compat)":
            extra = " compat:" + extra
        return "ok" + extra + (" (earlier run)" if c.get("reused") else "")
    msg = c.get("message", "")
    return f"{st}: {msg}" if msg else st


def cpu_cell(row):
    case, spec = row["case"], row["spec"]
    if spec is not None and spec.get("front_end_error"):
        return {"status": "refused", "message": spec["front_end_error"]}
    return {"status": case.get("status", "error"), "message": case.get("message", "")}


_BUILT = {}


def xe_cell(row, target, out_dir, timeout):
    spec = row["spec"]
    if spec is None:
        return {"status": "not built", "message": "no kernel compiled on the CPU run"}
    if spec.get("front_end_error"):
        return {"status": "refused", "message": spec["front_end_error"]}
    # The same specialization launched by several cases is built once.
    key = (spec["ir_key"], target)
    if key not in _BUILT and REUSE:
        # --reuse: a build an earlier run finished (same tile IR, same target),
        # marked as such in the table (it may be an older zetile's).
        old = _read_json(os.path.join(REUSE, f"build_{spec['ir_key']}_{target}.json"))
        if old is not None:
            _BUILT[key] = dict(old, reused=REUSE)
    if key not in _BUILT:
        _BUILT[key] = run_build(spec, target, out_dir, timeout)
    return _BUILT[key]


REUSE = None


def short_cell(c):
    """A table cell for docs: figures for a build, the message cut short."""
    st = c.get("status", "error")
    if st == "ok":
        i = c.get("isa")
        if not i:
            secs = f", {c['seconds']} s" if c.get("seconds") is not None else ""   # e5: the case's time
            return ("ok" + (" (E1; no ocloc device)" if c.get("E2") == "n/a" else "") + secs
                    + (" (earlier run)" if c.get("reused") else ""))
        compat = "compat: " if c.get("E2") == "pass (compat)" else ""
        spill = f", {i['spilled']} spilled" if i["spilled"] else ""
        return (f"ok, {compat}{i['dpas']} DPAS ({i['dpas_in_loop']} in loop), {i['sends']} sends{spill},"
                f" {c.get('compile_s', '?')} s" + (" (earlier run)" if c.get("reused") else ""))
    msg = re.sub(r"Xe lowering \((pvc|bmg)\): ", "", c.get("message", ""))
    msg = msg.replace("|", "/").strip()
    return f"**{st}**: {msg[:110]}{'...' if len(msg) > 110 else ''}"


def markdown(table, targets):
    lines = ["| kernel [config] | " + " | ".join(targets) + " |", "|---" * (len(targets) + 1) + "|"]
    for r in table:
        lines.append(f"| {r['row']} | " + " | ".join(short_cell(r["cells"][t]) for t in targets) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--src", default=os.environ.get("TRITON_SRC"), help="Triton source tree (TRITON_SRC)")
    ap.add_argument("--tutorials", default=",".join(TUTORIALS),
                    help="tutorial numbers, and/or Intel's benchmark kernels by name (ib-gemm, ...;"
                         " 'ib' for all of them: scripts/intel_bench_drivers.py; Intel's tree only)")
    ap.add_argument("--targets", default=",".join(TARGETS))
    ap.add_argument("--timeout", type=float, default=300, help="seconds per Xe build (default 300)")
    ap.add_argument("--case-timeout", type=float, default=1800, help="seconds per tutorial CPU run")
    ap.add_argument("--e5-timeout", type=float, default=600,
                    help="seconds per case on opencl:cpu (the e5 target; default 600)")
    ap.add_argument("--known", default=KNOWN)
    ap.add_argument("--quick", action="store_true", help="one case per tutorial")
    ap.add_argument("--out", default=None, help="directory for the JSON results (default: a temp dir)")
    ap.add_argument("--markdown", default=None, help="also write the table (short cells) as Markdown here")
    ap.add_argument("--reuse", default=None,
                    help="an earlier run's --out: its finished Xe builds are taken, not redone "
                         "(cells marked 'earlier run')")
    a = ap.parse_args(argv)
    global REUSE
    REUSE = a.reuse
    if not a.src or not os.path.isdir(os.path.join(a.src, "python", "tutorials")):
        ap.error("TRITON_SRC (or --src) must be a Triton source tree with python/tutorials")
    out_dir = a.out or tempfile.mkdtemp(prefix="zetile-tutorials-")
    os.makedirs(out_dir, exist_ok=True)
    os.environ.setdefault("ZETILE_AUTOTUNE_DB", "off")
    # e5: the CPU runtime's LLVM spends over half its JIT in MachineSinking on
    # Xe kernels (README, E5); only its x86 code generation changes.
    os.environ.setdefault("CL_CONFIG_LLVM_OPTIONS", "-disable-machine-sink")
    targets = [t for t in a.targets.split(",") if t]
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    if dirty:   # the library under test is built from the working tree, not from the commit
        commit += f" + {len(dirty.splitlines())} modified files"
    bad = [t for t in targets if t not in TARGETS + EXTRA_TARGETS]
    if bad:
        ap.error(f"unknown target(s) {','.join(bad)}: choose from {','.join(TARGETS + EXTRA_TARGETS)}")
    print(f"zetile {commit}, tutorials from {a.src}, targets {','.join(targets)}, "
          f"Xe build limit {a.timeout:g} s" + (f", e5 case limit {a.e5_timeout:g} s" if "e5" in targets else "")
          + f", results in {out_dir}", flush=True)
    table = []
    names = [t for t in a.tutorials.split(",") if t]
    names = [n for t in names for n in (INTEL_BENCH if t == "ib" else [t])]
    for tut in names:
        if tut.startswith("ib-"):
            if not os.path.isdir(os.path.join(a.src, "benchmarks", "triton_kernels_benchmark")):
                print(f"(no Intel benchmark kernels in this tree: {tut} left out)", flush=True)
                continue
        elif not glob.glob(os.path.join(a.src, "python", "tutorials", f"{tut}-*.py")):
            print(f"(no tutorial {tut} in this tree: left out)", flush=True)
            continue
        res = run_cases(a.src, tut, out_dir, a.case_timeout, a.quick)
        e5 = run_cases_e5(a.src, tut, out_dir, a.e5_timeout, a.quick) if "e5" in targets else {}
        for row in rows_of(res):
            cells = {}
            for tg in targets:
                cells[tg] = (cpu_cell(row) if tg == "cpu" else e5_cell(row, e5) if tg == "e5"
                             else xe_cell(row, tg, out_dir, a.timeout))
            table.append({"row": row["row"], "cells": cells,
                          "spec": {k: row["spec"].get(k) for k in ("kernel", "num_warps", "constexprs",
                                                                   "signature")} if row["spec"] else None})
            print("| " + row["row"] + " | " + " | ".join(cell_text(cells[t]) for t in targets) + " |",
                  flush=True)
    with open(os.path.join(out_dir, "table.json"), "w") as f:
        json.dump({"commit": commit, "targets": targets, "rows": table}, f, indent=1)
    # The table, once more in one piece, then the verdict.
    print()
    print("| kernel [config] | " + " | ".join(targets) + " |")
    print("|---" * (len(targets) + 1) + "|")
    for r in table:
        print("| " + r["row"] + " | " + " | ".join(cell_text(r["cells"][t]) for t in targets) + " |")
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(markdown(table, targets))
    cells = {(r["row"], t): r["cells"][t]["status"] for r in table for t in targets}
    with open(a.known) as f:
        known = parse_known(f.read())
    new, expected, now_passing = compare(cells, known)
    print()
    for t in targets:
        n = [r["cells"][t]["status"] for r in table]
        print(f"{t}: {n.count('ok')} ok, {len(n) - n.count('ok')} not ok of {len(n)} "
              f"({', '.join(f'{n.count(s)} {s}' for s in sorted(set(n)) if s != 'ok')})")
    for row, t in new:
        print(f"NEW FAILURE {row}@{t}")
    for p in now_passing:
        print(f"NOW PASSING {p}")
    print(f"summary: {len(table)} kernel rows x {len(targets)} targets, "
          f"{sum(1 for s in cells.values() if s == 'ok')} ok, {len(expected)} known failures, "
          f"{len(new)} new failures, {len(now_passing)} now passing")
    return 1 if new or now_passing else 0


if __name__ == "__main__":
    sys.exit(main())
