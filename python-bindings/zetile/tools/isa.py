"""ISA report: what Intel's compiler makes of a kernel, without a GPU.

Runs Intel's offline compiler (`ocloc`, Debian's intel-opencl-icd) on the
SPIR-V zetile emits and disassembles it with `iga64`, then counts per
kernel: instructions, DPAS (total and inside the innermost loop), sends
(loads / stores / prefetches / other), and reads spill / private memory and
the register-file mode from ocloc's report. With Debian's Level Zero driver
(NEO) installed, the same kernel is also created on a device in AUB mode and
zeKernelGetProperties' spill and private sizes are reported beside them.

    zetile isa examples/matmul.py:matmul_kernel --signature ... --target pvc
    zetile.tools.isa.report(kernel, signature, constexprs, target="pvc")
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

# The target table's rows (lowering/xe/xe_target.c) Debian's ocloc knows,
# with the table's ocloc device name.
OCLOC_DEVICE = {"pvc": "pvc", "dg2": "acm-g10", "skl": "skl", "icllp": "icllp",
                "tgllp": "tgllp", "rkl": "rkl", "adl-s": "adl-s", "adl-p": "adl-p", "dg1": "dg1"}
# The rows it does not: Debian 12's ocloc (intel-opencl-icd 22.43, IGC
# 1.0.12504) says "Cannot get HW Info for device" for each of their names
# (the table's, the short ones and their hexadecimal device ids, tried
# 2026-11-29), so E2 is refused by name instead of failing inside ocloc.
# Their SPIR-V is another row's (bmg's for lnl and ptl, byte for byte;
# tgllp's / dg2's form for mtl / arl-h), whose evidence stands for them.
OCLOC_UNKNOWN = {"bmg": "bmg", "lnl": "lnl-m", "ptl": "ptl-h", "mtl": "mtl-h", "arl-h": "arl-h"}
IGA_PLATFORM = {"pvc": "XeHPC", "dg2": "XeHPG", "skl": "9", "icllp": "11",
                "tgllp": "12p1", "rkl": "12p1", "adl-s": "12p1", "adl-p": "12p1", "dg1": "12p1"}
# NEO's ProductFamilyOverride spelling where it differs from the row's.
NEO_PRODUCT = {"adl-s": "adls", "adl-p": "adlp"}

AUB_ENV = {"NEOReadDebugKeys": "1", "SetCommandStreamReceiver": "1",
           "OverrideMaxWorkgroupSize": "1024", "AUBDumpCaptureFileName": "/dev/null"}


class ToolMissing(RuntimeError):
    pass


def _need(tool):
    if not shutil.which(tool):
        raise ToolMissing(f"{tool} is not installed (Debian: intel-opencl-icd provides ocloc, "
                          "libigc-tools provides iga64)")


def analyze_isa(text):
    """Counts in one kernel's iga64 disassembly."""
    lines = [l for l in text.splitlines() if l.strip() and not l.strip().startswith("//")]
    labels, instrs = {}, []
    for l in lines:
        s = l.strip()
        m = re.match(r"^([A-Za-z_][\w$.]*):\s*$", s)
        if m:
            labels[m.group(1)] = len(instrs)
            continue
        instrs.append(s)
    # Loops: branches back to an earlier label.
    loops = []
    for i, s in enumerate(instrs):
        op = re.sub(r"^\([^)]*\)\s*", "", s).split()[0] if s else ""
        base = op.split(".")[0]
        if base in ("while", "jmpi", "goto", "brc", "brd", "jmp"):
            for tgt in re.findall(r"\b([A-Za-z_][\w$.]*)\b", s):
                if tgt in labels and labels[tgt] <= i:
                    loops.append((labels[tgt], i))
    innermost = None
    for a, b in loops:
        if not any(a <= c and d <= b and (c, d) != (a, b) for c, d in loops):
            if innermost is None or b - a < innermost[1] - innermost[0]:
                innermost = (a, b)

    def opcode(s):
        return re.sub(r"^\([^)]*\)\s*", "", s).split()[0]

    dpas = [i for i, s in enumerate(instrs) if opcode(s).startswith("dpas")]
    sends = [s for s in instrs if opcode(s).startswith("send")]
    kinds = {"load": 0, "store": 0, "prefetch": 0, "other": 0}
    for s in sends:
        c = s.split("//")[-1] if "//" in s else ""
        if "prefetch" in c or ".pf" in c:
            kinds["prefetch"] += 1
        # Pre-LSC parts (Gen9 to Gen12LP) say "... read" / "... write".
        elif "load" in c or (re.search(r"\bread\b", c) and "scratch" not in c):
            kinds["load"] += 1
        elif "store" in c or (re.search(r"\bwrite\b", c) and "scratch" not in c):
            kinds["store"] += 1
        else:
            kinds["other"] += 1
    calla = sum(1 for s in instrs if opcode(s).startswith("calla"))

    # Sends through the scratch surface (LSC `.ss[a0.2]`): IGC's private
    # memory. In a kernel without unresolved calls they are private arrays
    # IGC could not keep in registers (the compat library's reads write
    # their block into a `private` array by a run-time index: the row loop
    # of its out-of-bounds branch, the per-element loops of the spec reads
    # it serves int8 with; docs/ARCHITECTURE.md, "One spill verdict"),
    # i.e. registers moved through memory, which ocloc's
    # "spilled" line does not report: they count as scratch sends. With
    # unresolved calls (calla: the native path's 2D block builtins under
    # Debian's IGC) they are the calls' out-parameter arrays and the
    # registers saved around each call, which a driver that links the
    # builtins would not issue: reported apart (call_scratch_sends), not
    # counted.
    def is_surface_scratch(s):
        return ".ss[" in s

    def is_scratch(s):
        return ("scratch" in s or ".slm" not in s and "bti[253]" in s
                or (calla == 0 and is_surface_scratch(s)))

    scratch = sum(1 for s in sends if is_scratch(s))
    # The loop that holds the most DPAS (the K loop of a GEMM, the KV loop of
    # attention): its instructions, sends, 2D block loads and scratch sends
    # are what one step costs.
    dpas_loop = None
    best = None
    for a, b in loops:
        n = sum(1 for i in dpas if a <= i <= b)
        if n and (best is None or n > best[0] or (n == best[0] and b - a < best[2] - best[1])):
            best = (n, a, b)
    if best:
        body = instrs[best[1]:best[2] + 1]
        body_sends = [s for s in body if opcode(s).startswith("send")]
        dpas_loop = {"instructions": len(body), "dpas": best[0], "sends": len(body_sends),
                     "block2d_loads": sum(1 for s in body_sends if "load_block2d" in s),
                     "scratch_sends": sum(1 for s in body_sends if is_scratch(s))}
    return {
        "instructions": len(instrs),
        "dpas": len(dpas),
        "dpas_in_innermost_loop": (sum(1 for i in dpas if innermost[0] <= i <= innermost[1])
                                   if innermost else 0),
        # In any loop: a kernel with several loops (attention's causal and
        # full stages, a backward's two walks) has its DPAS in loops other
        # than the shortest innermost one (a tail loop, say).
        "dpas_in_loops": sum(1 for i in dpas if any(a <= i <= b for a, b in loops)),
        "loops": len(loops),
        "sends": len(sends),
        "sends_by_kind": kinds,
        "scratch_sends": scratch,
        # 2D block messages (Xe-HPC and later): loads, stores, prefetches.
        "block2d": {k: sum(1 for s in sends if f"{k}_block2d" in s)
                    for k in ("load", "store", "prefetch")},
        "dpas_loop": dpas_loop,
        "calla": calla,
        # All LSC sends through the scratch surface, counted in scratch_sends
        # above when the kernel has no unresolved call (see is_scratch).
        "surface_scratch_sends": sum(1 for s in sends if is_surface_scratch(s)),
        # Those of a kernel with unresolved calls: not in scratch_sends.
        "call_scratch_sends": (sum(1 for s in sends if is_surface_scratch(s)) if calla else 0),
    }


# IGC occasionally dies on a signal with no output (SIGABRT once in a CI
# run, not reproducible in 150 reruns of the same SPIR-V): a crash is retried
# a bounded number of times and the retries are written into the log, while
# a build error (non-zero exit) is never retried.
OCLOC_CRASH_RETRIES = 2


def ocloc_device(target):
    """The ocloc -device name of a target; a row Debian's ocloc does not know
    (or a name without a row) is refused by name."""
    if target in OCLOC_DEVICE:
        return OCLOC_DEVICE[target]
    if target in OCLOC_UNKNOWN:
        raise ValueError(f"no ocloc device for target {target!r}: Debian's ocloc (22.43) says "
                         f"\"Cannot get HW Info for device {OCLOC_UNKNOWN[target]}\"")
    raise ValueError(f"no ocloc device for target {target!r}")


def ocloc_compile(spirv: bytes, out_dir: str, target="pvc", options=""):
    """Builds SPIR-V with ocloc into out_dir; returns (path of the .bin, log)."""
    ocloc_device(target)
    _need("ocloc")
    p = os.path.join(out_dir, "k.spv")
    with open(p, "wb") as f:
        f.write(spirv)
    cmd = ["ocloc", "compile", "-file", p, "-spirv_input", "-device", ocloc_device(target),
           "-output", "k", "-out_dir", out_dir]
    if options:
        cmd += ["-options", options]
    notes = ""
    for attempt in range(OCLOC_CRASH_RETRIES + 1):
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=out_dir)
        if r.returncode >= 0:
            break
        notes += f"[zetile] ocloc killed by signal {-r.returncode} (attempt {attempt + 1})\n"
    log = notes + r.stdout + r.stderr
    if r.returncode != 0 or "Build succeeded" not in r.stdout:
        raise RuntimeError(f"ocloc failed (exit {r.returncode}):\n{log}")
    bins = [f for f in os.listdir(out_dir) if f.endswith(".bin")]
    if not bins:
        raise RuntimeError(f"ocloc wrote no binary:\n{log}")
    return os.path.join(out_dir, bins[0]), log


def ocloc_isa(spirv: bytes, target="pvc", options=""):
    """Builds with ocloc; returns ({kernel: isa text}, ocloc's output)."""
    _need("iga64")
    with tempfile.TemporaryDirectory() as d:
        binary, log = ocloc_compile(spirv, d, target, options)
        dump = os.path.join(d, "dump")
        r = subprocess.run(["ocloc", "disasm", "-file", binary, "-device",
                            OCLOC_DEVICE[target], "-dump", dump], capture_output=True, text=True, cwd=d)
        if r.returncode != 0 or not os.path.isdir(dump):
            raise RuntimeError(f"ocloc disasm failed:\n{r.stdout}{r.stderr}")
        out = {}
        for f in sorted(os.listdir(dump)):
            if f.endswith("_KernelHeap.dat"):
                name = f[:-len("_KernelHeap.dat")]
                if name.startswith("Intel_Symbol_Table"):
                    continue  # IGC's symbol-table pseudo kernel
                r = subprocess.run(["iga64", "-d", f"-p={IGA_PLATFORM[target]}", os.path.join(dump, f)],
                                   capture_output=True, text=True)
                out[name] = r.stdout
        return out, log


def spill_from_log(log: str) -> int:
    """The register count ocloc reports as spilled (0 when it reports none)."""
    m = re.search(r"spilled around (\d+)", log)
    return int(m.group(1)) if m else 0


def spill_summary(ocloc_registers, scratch_sends, driver=None):
    """One spill verdict from three witnesses. ocloc's "spilled around N"
    line alone is not enough: for dg2 SIMD8 kernels ocloc prints no such line
    although the binary spills (scratch sends in the ISA, spill_bytes from
    NEO's zeKernelGetProperties). The ISA's scratch sends are the cheap check
    every test can afford; the driver's figure is read when it was asked for.
    `spills` is True when any witness sees a spill; `disagree` names the
    witnesses that contradict each other."""
    seen = {"ocloc": ocloc_registers > 0, "isa": scratch_sends > 0}
    drv = None
    if driver and "error" not in driver and driver.get("spill_bytes") is not None:
        drv = int(driver["spill_bytes"])
        seen["driver"] = drv > 0
    spills = any(seen.values())
    disagree = sorted(k for k, v in seen.items() if v != spills) if len(set(seen.values())) > 1 else []
    return {"spills": spills, "ocloc_registers": ocloc_registers, "scratch_sends": scratch_sends,
            "driver_spill_bytes": drv, "disagree": disagree}


def no_spill_cheap(r) -> bool:
    """The check tests assert: ocloc's line says 0 AND no kernel in the ISA
    has a scratch send, the scratch surface's private-memory sends included
    (analyze_isa; no driver needed)."""
    return (r.get("spilled_registers", 0) == 0
            and all(k.get("scratch_sends", 0) == 0 for k in r["kernels"].values()))


def _driver_stats(artifact_blob: bytes, target: str):
    """zeKernelGetProperties through zetile's Level Zero backend in AUB mode
    (a fresh process: the driver reads its settings at load)."""
    code = (
        "import sys, json, zetile._zetile as z\n"
        "a = z.Artifact.deserialize(sys.stdin.buffer.read())\n"
        "devs = [d for d in z.devices() if d['backend'] == 'level_zero']\n"
        "if not devs: print(json.dumps({'error': 'no level_zero device'})); sys.exit(0)\n"
        "e = z.Device(devs[0]['name']).load(a)\n"
        "print(json.dumps(e.stats()))\n")
    env = dict(os.environ)
    env.update(AUB_ENV)
    env["ProductFamilyOverride"] = NEO_PRODUCT.get(target, target)
    r = subprocess.run([sys.executable, "-c", code], input=artifact_blob, capture_output=True,
                       env=env, timeout=300)
    try:
        return json.loads(r.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": (r.stderr.decode().strip().splitlines() or ["?"])[-1]}


def report(kernel, signature, constexprs=None, target="pvc", num_warps=0, compat=False,
           igc_options=None, driver=True):
    """Compiles one specialization and returns a dict of ISA figures per kernel."""
    from ..jit import compile as zcompile
    ck = zcompile(kernel, signature=signature, constexprs=constexprs or {}, target=target,
                  num_warps=num_warps, compat=compat, igc_options=igc_options)
    meta = ck.metadata
    opts = igc_options if igc_options is not None else meta.get("igc_options", "")
    isas, log = ocloc_isa(ck.asm["spirv"], target, opts)
    spill = re.findall(r"[Ss]pill[^\n]*", log)
    out = {"target": target, "igc_options": opts, "grf_mode": "256 (large)" if
           "large-register-file" in (opts or "") else "128 (default)", "ocloc_notes": spill,
           "spilled_registers": spill_from_log(log),
           "local_size": meta.get("local_size"), "kernels": {}}
    for name, text in isas.items():
        out["kernels"][name] = analyze_isa(text)
    if driver:
        out["driver"] = _driver_stats(ck.artifact.serialize(), target)
    out["spill"] = spill_summary(out["spilled_registers"],
                                 sum(k["scratch_sends"] for k in out["kernels"].values()),
                                 out.get("driver"))
    return out


def format_report(r):
    lines = [f"target {r['target']}  GRF {r['grf_mode']}  local size {r['local_size']}  "
             f"IGC options: {r['igc_options'] or '-'}  spilled registers (ocloc): "
             f"{r.get('spilled_registers', 0)}"]
    for name, k in r["kernels"].items():
        sk = k["sends_by_kind"]
        lines.append(f"  {name}: {k['instructions']} instructions, dpas {k['dpas']} "
                     f"(innermost loop {k['dpas_in_innermost_loop']}), sends {k['sends']} "
                     f"(load {sk['load']}, store {sk['store']}, prefetch {sk['prefetch']}, "
                     f"other {sk['other']}), loops {k['loops']}, unresolved calls {k['calla']}, "
                     f"scratch sends {k['scratch_sends']}")
        if k.get("call_scratch_sends"):
            lines.append(f"    {k['call_scratch_sends']} sends through the scratch surface around "
                         "the unresolved calls, not counted as spills (this ISA is not the "
                         "linked kernel's)")
    sp = r.get("spill")
    if sp:
        drv = ("not read" if sp["driver_spill_bytes"] is None
               else f"{sp['driver_spill_bytes']} B")
        line = (f"  spill: {'YES' if sp['spills'] else 'none'} (ocloc line {sp['ocloc_registers']} "
                f"registers, ISA scratch sends {sp['scratch_sends']}, driver spill {drv})")
        if sp["disagree"]:
            line += f"  DISAGREE: {', '.join(sp['disagree'])} see{'s' if len(sp['disagree']) == 1 else ''} no spill"
        lines.append(line)
    for n in r.get("ocloc_notes", []):
        lines.append(f"  ocloc: {n}")
    d = r.get("driver")
    if d:
        if "error" in d:
            lines.append(f"  driver (AUB mode): not available: {d['error']}")
        else:
            lines.append(f"  driver (zeKernelGetProperties, AUB mode): spill {d.get('spill_bytes')} B, "
                         f"private {d.get('private_bytes')} B, local {d.get('local_bytes')} B")
    return "\n".join(lines)
