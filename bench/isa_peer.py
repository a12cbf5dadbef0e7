"""ISA side by side with Intel's Triton (issue 12): the same kernels at Intel's
own configurations compiled by Intel's Triton (triton-xpu 3.3.0b1, its own
venv: bench/peer_venv.sh; offline, for a PVC GPUTarget, no device) and by
zetile (target pvc, both routes: native XeVM 2D block IO and the compat path
for drivers without it), each SPIR-V then built by Debian's ocloc
(`ocloc compile -spirv_input -device pvc`, IGC 1.0.12504 of 2022) and
disassembled with iga64 (zetile.tools.isa). Evidence level E2: what that
IGC makes of each SPIR-V, not what a current driver would.

    bench/peer_venv.sh                                  # once
    .venv/bin/python bench/isa_peer.py [--json out.json] [--only SUBSTR] [--attention]

Per kernel and compiler: whether spirv-val accepts the SPIR-V, the builtins
and extensions it imports, ocloc's verdict (or why it refused), then the
ISA: instructions, DPAS, sends, 2D block loads, scratch (spill) sends and
ocloc's "spilled around" registers, and the loop holding the most DPAS
(one K / KV step). Intel's Triton compiles the pointer-form matmul with
shared local memory (its metadata's `shared`), which the SPIR-V shows as
barriers and workgroup memory; zetile's native route calls the SPIR-V 2D
block IO builtins, which this IGC does not have (`calla` to unresolved
symbols in the ISA, so its figures are not a kernel's).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "python-bindings"))
import compile_latency as cl  # noqa: E402  (the peer kernels and Intel's compile)

KERNELS = ["matmul 256x256x32, 32 warps, large GRF", "matmul 128x128x32, 8 warps",
           "FlashAttention fwd 128x64, D 64, 8 warps", "softmax (1024 columns, 4 warps)"]


def attention_variants():
    """--attention: the FlashAttention forward of bench/xe_attention_isa.py
    (fp16; head dim 64 and 128, causal or not; 8 warps) at large GRF, as
    Intel's FlashAttention configs ask (grf_mode '256'), added to the
    peer's kernel table; their names."""
    base = cl.PEER_KERNELS["FlashAttention fwd 128x64, D 64, 8 warps"]
    names = []
    for d in (64, 128):
        for causal in (False, True):
            n = f"FlashAttention fwd 128x64, D {d}{', causal' if causal else ''}, 8 warps, large GRF"
            cl.PEER_KERNELS[n] = dict(base, consts=dict(base["consts"], HEAD_DIM=d, CAUSAL=causal),
                                      grf=True)
            names.append(n)
    return names

# The peer's worker: compile each kernel, write its SPIR-V and LLVM IR, print
# RESULT {name: {"spv": path, "llir": path, "build_flags": ..., "shared": ...}}.
PEER_DUMP = cl.PEER_COMMON.replace("IS_ZETILE", "False") + cl.PEER_INTEL_COMPILE + r"""
res = {}
for name, k in KERNELS.items():
    try:
        ck = compile_one(name, k)
    except Exception as e:
        res[name] = {"error": (str(e).strip().splitlines() or [type(e).__name__])[-1][:300]}
        continue
    base = os.path.join(TMP, "peer_%d" % len(res))
    out = {"build_flags": ck.metadata.build_flags, "shared": ck.metadata.shared,
           "num_warps": ck.metadata.num_warps, "asm_keys": sorted(ck.asm)}
    for key in ("spv", "llir"):
        if key in ck.asm:
            v = ck.asm[key]
            open(base + "." + key, "wb").write(v if isinstance(v, bytes) else v.encode())
            out[key] = base + "." + key
    res[name] = out
print("RESULT " + json.dumps(res))
"""


def run_peer(python, names, tmp):
    env = dict(os.environ)
    env.update({"TRITON_CACHE_DIR": os.path.join(tmp, "cache"), "CC": "g++",
                "TRITON_ALWAYS_COMPILE": "1", "PYTHONPATH": ""})
    head = (f"TMP = {tmp!r}\nREPS = 1\nPVC = {cl.PVC_PROPS!r}\n"
            f"KERNELS_JSON = {json.dumps(cl._peer_kernels(names))!r}\n")
    r = subprocess.run([python, "-c", head + PEER_DUMP], capture_output=True, text=True, env=env,
                       timeout=1800)
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    tail = (r.stderr or r.stdout).strip().splitlines()
    return {"error": tail[-1][:300] if tail else f"exit {r.returncode}"}


def spirv_facts(spv_path):
    """spirv-val's verdict, the extensions, and the functions the module
    imports (Linkage Import: builtins the driver's compiler must resolve),
    with the number of calls of each."""
    out = {"spirv_val": None, "extensions": [], "imports": {}, "workgroup_vars": 0}
    v = subprocess.run(["spirv-val", spv_path], capture_output=True, text=True)
    out["spirv_val"] = "ok" if v.returncode == 0 else (v.stderr or v.stdout).strip().splitlines()[0][:160]
    d = subprocess.run(["spirv-dis", "--raw-id", spv_path], capture_output=True, text=True)
    if d.returncode != 0:
        return out
    names, imports, calls = {}, set(), {}
    for line in d.stdout.splitlines():
        s = line.strip()
        m = re.match(r'OpExtension "([^"]+)"', s)
        if m:
            out["extensions"].append(m.group(1))
        m = re.match(r'OpName (%\d+) "([^"]+)"', s)
        if m:
            names[m.group(1)] = m.group(2)
        m = re.match(r'OpDecorate (%\d+) LinkageAttributes "([^"]+)" Import', s)
        if m:
            imports.add(m.group(1))
            names.setdefault(m.group(1), m.group(2))
        m = re.match(r"%\d+ = OpFunctionCall %\d+ (%\d+)", s)
        if m:
            calls[m.group(1)] = calls.get(m.group(1), 0) + 1
        if re.match(r"%\d+ = OpVariable %\d+ Workgroup", s):
            out["workgroup_vars"] += 1
        if s.startswith("OpControlBarrier"):
            out["barriers"] = out.get("barriers", 0) + 1
    for fid in imports:
        out["imports"][names.get(fid, fid)] = calls.get(fid, 0)
    return out


def call_kinds(imports):
    """Calls of imported builtins by kind (DPAS, 2D block reads/writes/
    prefetches, 1-D subgroup block IO, barriers)."""
    kinds = {"dpas": 0, "block2d_read": 0, "block2d_write": 0, "block2d_prefetch": 0,
             "block1d": 0, "barrier": 0, "other": 0}
    for name, n in imports.items():
        low = name.lower()
        if "matrix_mad" in low or "matrixmultiplyaccumulate" in low or "dpas" in low:
            kinds["dpas"] += n
        elif "2d_block_prefetch" in low or "2dblockprefetch" in low:
            kinds["block2d_prefetch"] += n
        elif "2d_block_read" in low or "2dblockload" in low or "block_read_flat" in low:
            kinds["block2d_read"] += n
        elif "2d_block_write" in low or "2dblockstore" in low or "block_write_flat" in low:
            kinds["block2d_write"] += n
        elif "block_read" in low or "block_write" in low or "blockread" in low:
            kinds["block1d"] += n
        elif "barrier" in low:
            kinds["barrier"] += n
        else:
            kinds["other"] += n
    return kinds


def ocloc_figures(spv, options):
    from zetile.tools import isa
    try:
        isas, log = isa.ocloc_isa(spv, "pvc", options)
    except Exception as e:  # a refusal or a crash: say which
        text = str(e)
        lines = [l for l in text.splitlines() if l.strip() and "[zetile]" not in l]
        why = next((l for l in lines if re.search(r"error|unknown|unsupported|undefined", l, re.I)),
                   lines[-1] if lines else text)
        if "signal" in text:
            why = "ocloc crashed: " + text.splitlines()[1 if len(text.splitlines()) > 1 else 0]
        return {"ocloc": "failed: " + why.strip()[:200]}
    ks = [isa.analyze_isa(t) for t in isas.values()]
    k = max(ks, key=lambda r: r["instructions"])
    return {"ocloc": "ok", "spilled": isa.spill_from_log(log),
            "grf": "256" if re.search(r"allocated 256 regs|256-GRF|large-register", log + options) else "128",
            **k}


def zetile_spv(name, k, compat):
    import importlib.util
    import zetile
    spec = importlib.util.spec_from_file_location("isa_peer_" + re.sub(r"\W", "_", name),
                                                  os.path.join(ROOT, k["file"]))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ck = zetile.compile(getattr(mod, k["fn"]), signature=k["sig"], constexprs=k["consts"],
                        target="pvc", num_warps=k["warps"], compat=compat, cached=False,
                        igc_options="-ze-opt-large-register-file" if k["grf"] else None)
    return ck.asm["spirv"], ck.metadata.get("igc_options") or ""


def row(kernel, who, f):
    if "ocloc" not in f or f["ocloc"] != "ok":
        return f"| {kernel} | {who} | {f.get('ocloc', f.get('error', '?'))} | | | | | | | |"
    dl = f.get("dpas_loop") or {}
    loop = (f"{dl.get('instructions', 0)} instr, {dl.get('dpas', 0)} DPAS, {dl.get('sends', 0)} sends "
            f"({dl.get('block2d_loads', 0)} 2D loads, {dl.get('scratch_sends', 0)} scratch)") if dl else "-"
    b2 = f["block2d"]
    calla = f" ({f['calla']} calla: unresolved)" if f.get("calla") else ""
    return (f"| {kernel} | {who} | ok, GRF {f['grf']}{calla} | {f['instructions']} | "
            f"{f['dpas']} | {f['sends']} | {b2['load']} | {f['scratch_sends']} | "
            f"{f['spilled']} | {loop} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--peer-python", help="the peer venv's python (default bench/.peer-venv)")
    ap.add_argument("--only", help="kernels whose name contains this")
    ap.add_argument("--json")
    ap.add_argument("--attention", action="store_true",
                    help="only the attention forward's four fp16 variants at large GRF")
    args = ap.parse_args()
    python = args.peer_python or os.path.join(ROOT, "bench", ".peer-venv", "bin", "python")
    kernels = attention_variants() if args.attention else KERNELS
    names = [n for n in kernels if not args.only or args.only in n]
    commit = subprocess.run(["git", "-C", ROOT, "log", "-1", "--format=%h"], capture_output=True,
                            text=True).stdout.strip()
    report = {"commit": commit, "kernels": {}}
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["ZETILE_CACHE_DIR"] = os.path.join(tmp, "zcache")
        peer = run_peer(python, names, tmp) if os.path.exists(python) else \
            {"error": f"no peer venv at {python}: run bench/peer_venv.sh"}
        for name in names:
            k = cl.PEER_KERNELS[name]
            entry = {}
            p = peer.get(name) if "error" not in peer else {"error": peer["error"]}
            if p and "spv" in p:
                facts = spirv_facts(p["spv"])
                opts = p.get("build_flags") or ""
                entry["intel"] = {"metadata": {x: p[x] for x in ("build_flags", "shared", "asm_keys")},
                                  "spirv": {**facts, "calls": call_kinds(facts["imports"])},
                                  **ocloc_figures(open(p["spv"], "rb").read(), opts)}
            else:
                entry["intel"] = {"error": (p or {}).get("error", "not compiled")}
            for route, compat in (("native", False), ("compat", True)):
                try:
                    spv, opts = zetile_spv(name, k, compat)
                except Exception as e:
                    entry["zetile " + route] = {"error": str(e).splitlines()[0][:200]}
                    continue
                with tempfile.NamedTemporaryFile(suffix=".spv", dir=tmp, delete=False) as f:
                    f.write(spv)
                facts = spirv_facts(f.name)
                entry["zetile " + route] = {"spirv": {**facts, "calls": call_kinds(facts["imports"])},
                                            **ocloc_figures(spv, opts)}
            report["kernels"][name] = entry

    print(f"zetile {commit} vs Intel's Triton 3.3.0b1, SPIR-V for a PVC built by Debian's ocloc "
          f"(-device pvc) and counted with iga64 (E2)")
    print("| kernel | compiler | ocloc | instructions | DPAS | sends | 2D block loads | "
          "scratch sends | spilled (ocloc) | loop with the most DPAS (one step) |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---|")
    for name, e in report["kernels"].items():
        for who in ("intel", "zetile native", "zetile compat"):
            f = e.get(who, {})
            print(row(name, "Intel's Triton" if who == "intel" else who, f))
    print()
    print("SPIR-V (builtin calls by kind; spirv-val; SLM)")
    print("| kernel | compiler | spirv-val | DPAS calls | 2D block reads | 2D prefetches | "
          "1-D block IO | barriers | workgroup variables | extensions |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---|")
    for name, e in report["kernels"].items():
        for who in ("intel", "zetile native", "zetile compat"):
            s = e.get(who, {}).get("spirv")
            if not s:
                continue
            c = s["calls"]
            shared = e[who].get("metadata", {}).get("shared")
            wg = f"{s['workgroup_vars']}" + (f" ({shared} B shared)" if shared else "")
            print(f"| {name} | {'Intel' if who == 'intel' else who} | {s['spirv_val']} | {c['dpas']} | "
                  f"{c['block2d_read']} | {c['block2d_prefetch']} | {c['block1d']} | "
                  f"{c['barrier'] + s.get('barriers', 0)} | "
                  f"{wg} | {', '.join(s['extensions']) or '-'} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
