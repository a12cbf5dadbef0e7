"""Cold-compile latency: zetile (tile IR -> SPIR-V for pvc, and the CPU target)
against Triton from PyPI compiling the same kernels offline for a CUDA target
(triton.compile with a GPUTarget; no GPU needed), measured in the same run.

Each measurement runs in a fresh process with an empty cache ("cold process,
cold cache"), then compiles a second specialization in that process ("warm
process, cold cache"). zetile's stage times come from the compiler's
"timings" section: "front+load" is the Python AST -> tile IR step plus, in a
cold process, loading libzetile_compiler (MLIR, LLVM; `import zetile` does
not load it, `import triton` loads Triton's compiler) and creating its
context; "lowering" is zetile's own lowering; "upstream" is MLIR's pass
pipeline and SPIR-V emission (XeVM serializes; a second pipeline after a bf16 check).

    .venv/bin/python bench/compile_latency.py [--reps 3] [--json out.json]

With --peer intel it instead compares zetile with Intel's Triton (triton-xpu
3.3.0b1 from PyPI, in its own venv: bench/peer_venv.sh), both compiling to
SPIR-V for a PVC without a device, at the configurations Intel's kernels use
(tutorial matmul 128x128 and 256x256x32 with 32 warps and large GRF, a
FlashAttention forward, softmax, layer norm, a 200-op elementwise chain, a
DG2 GEMM): each compiler in one process, a set-up compile first (loading
the compiler; Intel's Triton also builds its helper modules with CC=g++),
then each kernel compiled --reps times, cache off; the median per kernel
and the ratio:

    bench/peer_venv.sh                # once: bench/.peer-venv
    .venv/bin/python bench/compile_latency.py --peer intel [--reps 3] [--peer-python P]

These are CPU timings of compilers on this machine, not GPU speed.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")

KERNELS = {
    "matmul 128x128x32 fp16": dict(
        file="matmul.py", fn="matmul_kernel",
        sig={"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
             "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32",
             "stride_cm": "i32", "stride_cn": "i32"},
        consts=[{"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8},
                {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}]),
    # The same kernel as Triton's launcher specializes it for contiguous
    # 512x512 fp16 arrays: sizes, row strides and pointers divisible by 16
    # (":16"), unit strides as constants. Both compilers get these facts;
    # zetile then proves the pointer tensors affine and emits 2D block IO.
    "matmul as launched": dict(
        file="matmul.py", fn="matmul_kernel", hinted=True,
        sig={"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32:16", "N": "i32:16",
             "K": "i32:16", "stride_am": "i32:16", "stride_bk": "i32:16", "stride_cm": "i32:16"},
        consts=[{"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8,
                 "stride_ak": 1, "stride_bn": 1, "stride_cn": 1},
                {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8,
                 "stride_ak": 1, "stride_bn": 1, "stride_cn": 1}]),
    "matmul descriptors fp16": dict(
        file="matmul.py", fn="matmul_descriptor_kernel",
        sig={"a_desc": "tensordesc<fp16[128, 32]>", "b_desc": "tensordesc<fp16[32, 128]>",
             "c_desc": "tensordesc<fp16[128, 128]>", "M": "i32", "N": "i32", "K": "i32"},
        consts=[{"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 32},
                {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}]),
    "fused softmax": dict(
        file="softmax.py", fn="softmax_kernel",
        sig={"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32",
             "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32"},
        consts=[{"BLOCK_SIZE": 1024}, {"BLOCK_SIZE": 512}]),
}

ZETILE = r"""
import json, sys, time
t0 = time.perf_counter()
import zetile
from zetile.language import dtypes as D
t1 = time.perf_counter()
sys.path.insert(0, {examples!r})
mod = __import__({file!r}[:-3])
fn = getattr(mod, {fn!r})
out = {{"import_ms": (t1 - t0) * 1e3, "runs": []}}
first = True
for consts in {consts!r}:
    sig = {sig!r}
    if first:
        # Loading libzetile_compiler (MLIR, LLVM), which `import zetile`
        # leaves to the first compile; Triton loads its compiler at import.
        # Timed apart, and counted in the first compile's total below.
        tl0 = time.perf_counter()
        zetile._C.compiler_available()
        out["load_ms"] = (time.perf_counter() - tl0) * 1e3
        first = False
    t2 = time.perf_counter()
    try:
        if any(t.startswith("tensordesc") for t in sig.values()):
            # Block shapes follow the constexprs of this run.
            bm, bn, bk = consts["BLOCK_M"], consts["BLOCK_N"], consts["BLOCK_K"]
            sig = dict(sig, a_desc=f"tensordesc<fp16[{{bm}},{{bk}}]>",
                       b_desc=f"tensordesc<fp16[{{bk}},{{bn}}]>", c_desc=f"tensordesc<fp16[{{bm}},{{bn}}]>")
        t2 = time.perf_counter()
        from zetile.jit import compile as zcompile
        import zetile.compiler.codegen as cg
        ck = zcompile(fn, signature=sig, constexprs=consts, target={target!r}, cached=False)
        t4 = time.perf_counter()
        art = ck.artifact
        t3 = t2 + 0  # front end measured separately below
        fe0 = time.perf_counter()
        b = zetile._C.Builder()
        # Re-run the front end alone for its time (same specialization).
        text = art.get("tile").decode()
        fe_ms = None
        timings = {{}}
        for line in art.get("timings").decode().splitlines():
            k, v = line.rsplit("=", 1)
            timings[k] = timings.get(k, 0.0) + float(v)
        fe_ms = (t4 - t2) * 1e3 - timings.get("compile (total)", 0.0)
        load = out.pop("load_ms", 0.0)
        out["runs"].append({{"front_end_ms": fe_ms + load, "compile_ms": timings.get("compile (total)"),
                            "load_ms": load, "total_ms": (t4 - t2) * 1e3 + load,
                            "stages": timings}})
    except Exception as e:
        out["runs"].append({{"error": str(e).splitlines()[0][:200]}})
print("RESULT " + json.dumps(out))
"""

TRITON = r"""
import json, os, sys, time, warnings
warnings.filterwarnings("ignore")
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
src = open(os.path.join({examples!r}, {file!r})).read()
src = src.replace("import zetile as triton\n", "import triton\n").replace(
    "import zetile.language as tl\n", "import triton.language as tl\n").replace(
    "from zetile.tools.tensor_descriptor import TensorDescriptor\n", "")
path = os.path.join({tmp!r}, "triton_" + {file!r})
open(path, "w").write(src)
sys.path.insert(0, {tmp!r})
t0 = time.perf_counter()
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
t1 = time.perf_counter()
mod = __import__("triton_" + {file!r}[:-3])
fn = getattr(mod, {fn!r})
out = {{"import_ms": (t1 - t0) * 1e3, "runs": []}}
for consts in {consts!r}:
    sig = dict({sig!r})
    if "BLOCK_M" in consts and any(str(t).startswith("tensordesc") for t in sig.values()):
        bm, bn, bk = consts["BLOCK_M"], consts["BLOCK_N"], consts["BLOCK_K"]
        sig.update(a_desc=f"tensordesc<fp16[{{bm}}, {{bk}}]>", b_desc=f"tensordesc<fp16[{{bk}}, {{bn}}]>",
                   c_desc=f"tensordesc<fp16[{{bm}}, {{bn}}]>")
    sig.update({{k: "constexpr" for k in consts}})
    # ":16" marks Triton's divisibility hint; hinted kernels' pointers get it too.
    attrs = {{}}
    for i, n in enumerate(fn.arg_names):
        t = sig.get(n)
        if isinstance(t, str) and (t.endswith(":16") or ({hinted!r} and t.startswith("*"))):
            attrs[(i,)] = [["tt.divisibility", 16]]
    sig = {{n: (t[:-3] if isinstance(t, str) and t.endswith(":16") else t) for n, t in sig.items()}}
    t2 = time.perf_counter()
    k = triton.compile(ASTSource(fn, signature=sig, constexprs=consts, attrs=attrs),
                       target=GPUTarget("cuda", 90, 32))
    t3 = time.perf_counter()
    out["runs"].append({{"total_ms": (t3 - t2) * 1e3}})
print("RESULT " + json.dumps(out))
"""


# --- Intel's Triton as the peer (--peer intel) ------------------------------

# A PVC (Data Center GPU Max 1550) as Intel's Triton reads a device's
# properties (its driver's query on a real device; here given, as for an
# offline compile): DPAS with tf32, 2D block IO, bf16 conversions.
PVC_PROPS = {"name": "Intel(R) Data Center GPU Max 1550",
             "max_work_group_size": 1024, "max_num_sub_groups": 64, "sub_group_sizes": [16, 32],
             "has_fp64": True, "has_subgroup_matrix_multiply_accumulate": True,
             "has_subgroup_matrix_multiply_accumulate_tensor_float32": True,
             "has_subgroup_2d_block_io": True, "has_bfloat16_conversions": True,
             "gpu_eu_count": 448, "gpu_subslice_count": 56}
# An Arc A770 (DG2): DPAS of execution size 8, no 2D block IO. Intel's
# Triton 3.3.0b1 aborts on the tutorial matmul at 8 lanes (an LLVM assertion,
# "Invalid cast", seen here); at 16 lanes it compiles, so the peer's DG2
# figure is at 16 lanes (zetile's dg2 lowering is SIMD8).
DG2_PROPS = {"name": "Intel(R) Arc(TM) A770 Graphics",
             "max_work_group_size": 1024, "max_num_sub_groups": 128, "sub_group_sizes": [8, 16, 32],
             "has_fp64": False, "has_subgroup_matrix_multiply_accumulate": True,
             "has_subgroup_matrix_multiply_accumulate_tensor_float32": False,
             "has_subgroup_2d_block_io": False, "has_bfloat16_conversions": True,
             "gpu_eu_count": 512, "gpu_subslice_count": 32}

_MM_SIG = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32:16", "N": "i32:16",
           "K": "i32:16", "stride_am": "i32:16", "stride_bk": "i32:16", "stride_cm": "i32:16"}


def _mm(bm, bn, bk, g):
    return {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": g,
            "stride_ak": 1, "stride_bn": 1, "stride_cn": 1}


def _chain_source(n_ops=200):
    """A kernel of n_ops elementwise ops in a chain (mul, add, max, sub in
    turn), written for both compilers."""
    ops = ["x = x * 1.0009765625", "x = x + 0.5", "x = tl.maximum(x, -4.0)", "x = x - 0.25"]
    body = "\n".join("    " + ops[i % len(ops)] for i in range(n_ops))
    return ("import zetile as triton\nimport zetile.language as tl\n\n\n@triton.jit\n"
            "def chain_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n"
            "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
            "    mask = offs < n\n"
            "    x = tl.load(x_ptr + offs, mask=mask)\n"
            f"{body}\n"
            "    tl.store(y_ptr + offs, x, mask=mask)\n")


# name: (source file (examples/ or tests/python/) or None for generated text,
# kernel, signature (":16": divisible by 16), constexprs, num_warps, large
# GRF, zetile's target, the peer's device properties and subgroup size).
PEER_KERNELS = {
    "matmul 128x128x32, 8 warps": dict(
        file="examples/matmul.py", fn="matmul_kernel", sig=_MM_SIG, consts=_mm(128, 128, 32, 8),
        warps=8, grf=False),
    "matmul 256x256x32, 32 warps, large GRF": dict(
        file="examples/matmul.py", fn="matmul_kernel", sig=_MM_SIG, consts=_mm(256, 256, 32, 4),
        warps=32, grf=True),
    "FlashAttention fwd 128x64, D 64, 8 warps": dict(
        file="tests/python/attention_kernels.py", fn="attn_fwd_kernel",
        sig={"Q": "*fp16", "K": "*fp16", "V": "*fp16", "Out": "*fp16", "sm_scale": "fp32",
             "N_CTX": "i32:16", "stride_qm": "i32:16", "stride_kn": "i32:16",
             "stride_vn": "i32:16", "stride_om": "i32:16"},
        consts={"HEAD_DIM": 64, "BLOCK_M": 128, "BLOCK_N": 64, "CAUSAL": False}, warps=8, grf=False),
    "softmax (1024 columns, 4 warps)": dict(
        file="examples/softmax.py", fn="softmax_kernel",
        sig={"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32:16",
             "output_row_stride": "i32:16", "n_rows": "i32", "n_cols": "i32"},
        consts={"BLOCK_SIZE": 1024}, warps=4, grf=False),
    "layer norm fwd (1024, 8 warps)": dict(
        file="examples/layer_norm.py", fn="_layer_norm_fwd_fused",
        sig={"X": "*fp16", "Y": "*fp16", "W": "*fp16", "B": "*fp16", "Mean": "*fp32",
             "Rstd": "*fp32", "stride": "i32:16", "N": "i32", "eps": "fp32"},
        consts={"BLOCK_SIZE": 1024}, warps=8, grf=False),
    "elementwise chain, 200 ops (4 warps)": dict(
        file=None, fn="chain_kernel", sig={"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32"},
        consts={"BLOCK": 1024}, warps=4, grf=False),
    "dg2 GEMM 128x128x32, 8 warps": dict(
        file="examples/matmul.py", fn="matmul_kernel", sig=_MM_SIG, consts=_mm(128, 128, 32, 8),
        warps=8, grf=False, target="dg2", props=DG2_PROPS, warp_size=16),
}

# Both workers: load the kernel module from text with the compiler's own
# imports, compile a set-up kernel, then each kernel `reps` times; print
# RESULT {name: [ms, ...]} ("error: ..." for a kernel that does not compile).
PEER_COMMON = r"""
import json, os, statistics, sys, time, types, traceback
def load(name, text):
    text = text.replace("import zetile as triton\n", "import triton\n").replace(
        "import zetile.language as tl\n", "import triton.language as tl\n").replace(
        "from zetile.tools.tensor_descriptor import TensorDescriptor\n", "")
    if IS_ZETILE:
        text = text.replace("import triton\n", "import zetile as triton\n").replace(
            "import triton.language as tl\n", "import zetile.language as tl\n").replace(
            "import zetile\n", "import zetile\n")
    else:
        text = text.replace("import zetile\n", "import triton as zetile\n").replace(
            "zetile.language", "triton.language")
    path = os.path.join(TMP, name + ".py")
    open(path, "w").write(text)
    sys.path.insert(0, TMP)
    return __import__(name)
KERNELS = json.loads(KERNELS_JSON)
out = {"setup_ms": None, "kernels": {}}
mods = {}
for i, (name, k) in enumerate(KERNELS.items()):
    mods[name] = getattr(load(f"peer_kernel_{i}", k["text"]), k["fn"])
"""

PEER_ZETILE = PEER_COMMON.replace("IS_ZETILE", "True") + r"""
import zetile
def compile_one(name, k):
    return zetile.compile(mods[name], signature=k["sig"], constexprs=k["consts"],
                          target=k.get("target", "pvc"), num_warps=k["warps"], cached=False,
                          igc_options="-ze-opt-large-register-file" if k["grf"] else None)
t0 = time.perf_counter()
first = next(iter(KERNELS))
small = dict(KERNELS[first], consts=dict(KERNELS[first]["consts"]))
zetile.compile(mods["softmax (1024 columns, 4 warps)"] if "softmax (1024 columns, 4 warps)" in mods
               else mods[first], signature=KERNELS["softmax (1024 columns, 4 warps)"]["sig"],
               constexprs={"BLOCK_SIZE": 64}, target="pvc", num_warps=1, cached=False)
out["setup_ms"] = (time.perf_counter() - t0) * 1e3
print("SETUP " + json.dumps(out["setup_ms"]), flush=True)
for name, k in KERNELS.items():
    print("BEGIN " + json.dumps(name), flush=True)
    times = []
    for _ in range(REPS):
        t, c = time.perf_counter(), time.process_time()
        try:
            compile_one(name, k)
        except Exception as e:
            times = "error: " + str(e).replace("\n", " ")[:200]
            break
        # Wall and CPU time (all threads of the process): on a busy machine
        # the CPU time is the steadier measure of the compiler's work.
        times.append([(time.perf_counter() - t) * 1e3, (time.process_time() - c) * 1e3])
    print("DONE " + json.dumps([name, times]), flush=True)
"""

# Intel's Triton's compile of one kernel (also bench/isa_peer.py's).
PEER_INTEL_COMPILE = r"""
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
def compile_one(name, k):
    fn = mods[name]
    sig = dict(k["sig"])
    sig.update({c: "constexpr" for c in k["consts"]})
    attrs = {}
    for i, n in enumerate(fn.arg_names):
        t = sig.get(n)
        if isinstance(t, str) and (t.endswith(":16") or t.startswith("*")):
            attrs[(i,)] = [["tt.divisibility", 16]]
    # In parameter order: Triton 3.3 pairs signature entries with parameters by position.
    sig = {n: (sig[n][:-3] if sig[n].endswith(":16") else sig[n]) for n in fn.arg_names if n in sig}
    opts = {"num_warps": k["warps"]}
    if k["grf"]:
        opts["grf_mode"] = "large"
    ws = k.get("warp_size", 16)
    opts["threads_per_warp"] = ws
    target = GPUTarget("xpu", k.get("props") or PVC, ws)
    return triton.compile(ASTSource(fn, signature=sig, constexprs=k["consts"], attrs=attrs),
                          target=target, options=opts)
"""

PEER_INTEL = PEER_COMMON.replace("IS_ZETILE", "False") + PEER_INTEL_COMPILE + r"""
t0 = time.perf_counter()
sm = KERNELS["softmax (1024 columns, 4 warps)"]
compile_one("softmax (1024 columns, 4 warps)", dict(sm, consts={"BLOCK_SIZE": 64}, warps=1))
out["setup_ms"] = (time.perf_counter() - t0) * 1e3
print("SETUP " + json.dumps(out["setup_ms"]), flush=True)
for name, k in KERNELS.items():
    print("BEGIN " + json.dumps(name), flush=True)
    times = []
    for _ in range(REPS):
        t, c = time.perf_counter(), time.process_time()
        try:
            compile_one(name, k)
        except Exception as e:
            times = "error: " + (str(e).strip().splitlines() or [type(e).__name__])[-1][:200]
            break
        # Wall and CPU time (all threads of the process): on a busy machine
        # the CPU time is the steadier measure of the compiler's work.
        times.append([(time.perf_counter() - t) * 1e3, (time.process_time() - c) * 1e3])
    print("DONE " + json.dumps([name, times]), flush=True)
"""


def _peer_kernels(names):
    ks = {}
    for name in names:
        k = PEER_KERNELS[name]
        text = _chain_source() if k["file"] is None else open(os.path.join(ROOT, k["file"])).read()
        ks[name] = dict({n: v for n, v in k.items() if n != "file"}, text=text)
    return ks


def _run_peer(python, template, env_extra, reps):
    """Runs the kernels in one process; a kernel that kills the process (an
    assertion in the compiler) is recorded as such, and the rest run again
    in a new process (whose set-up is then not counted again)."""
    out = {"setup_ms": None, "kernels": {}}
    todo = list(PEER_KERNELS)
    # The softmax kernel is the set-up compile's (at a small block).
    todo.remove("softmax (1024 columns, 4 warps)")
    todo.insert(0, "softmax (1024 columns, 4 warps)")
    while todo:
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ)
            env.update(env_extra(tmp))
            names = todo if "softmax (1024 columns, 4 warps)" in todo else \
                ["softmax (1024 columns, 4 warps)"] + todo
            head = (f"TMP = {tmp!r}\nREPS = {reps}\nPVC = {PVC_PROPS!r}\n"
                    f"KERNELS_JSON = {json.dumps(_peer_kernels(names))!r}\n")
            r = subprocess.run([python, "-c", head + template], capture_output=True, text=True,
                               env=env, timeout=3600)
        begun = None
        for line in r.stdout.splitlines():
            tag, _, rest = line.partition(" ")
            if tag == "SETUP" and out["setup_ms"] is None:
                out["setup_ms"] = json.loads(rest)
            elif tag == "BEGIN":
                begun = json.loads(rest)
            elif tag == "DONE":
                name, times = json.loads(rest)
                if name in todo:
                    out["kernels"][name] = times
                    todo.remove(name)
                begun = None
        if r.returncode == 0 and not todo:
            break
        tail = (r.stderr or r.stdout).strip().splitlines()
        why = tail[-1][:200] if tail else f"exit {r.returncode}"
        if begun is None or begun not in todo:
            if out["setup_ms"] is None or r.returncode == 0:
                return {"error": why}
            begun = todo[0]
        out["kernels"][begun] = f"the compiler process died: {why}"
        todo.remove(begun)
    return out


def peer_intel(args):
    python = args.peer_python or os.path.join(ROOT, "bench", ".peer-venv", "bin", "python")
    if not os.path.exists(python):
        print(f"no peer venv at {python}: run bench/peer_venv.sh (or give --peer-python)")
        return 1
    commit = subprocess.run(["git", "-C", ROOT, "log", "-1", "--format=%h"], capture_output=True,
                            text=True).stdout.strip()
    z = _run_peer(sys.executable, PEER_ZETILE,
                  lambda t: {"ZETILE_CACHE_DIR": t, "PYTHONPATH": os.path.join(ROOT, "python-bindings")},
                  args.reps)
    # CC=g++: Intel's Triton builds its helper modules (arch parser, SYCL
    # launcher utilities) with the C compiler it finds, and they are C++.
    i = _run_peer(python, PEER_INTEL,
                  lambda t: {"TRITON_CACHE_DIR": os.path.join(t, "cache"), "CC": "g++",
                             "TRITON_ALWAYS_COMPILE": "1", "PYTHONPATH": ""},
                  args.reps)
    for who, r in (("zetile", z), ("Intel's Triton", i)):
        if "error" in r:
            print(f"{who}: {r['error']}")
            return 1
    print(f"zetile {commit} (pvc; dg2 row: dg2) vs Intel's Triton 3.3.0b1 (SPIR-V for a PVC / DG2, "
          f"no device), median of {args.reps} compiles per kernel, one process each, cache off; "
          f"wall time and the process's CPU time")
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    print("| kernel | zetile wall (ms) | Intel wall (ms) | ratio wall | zetile CPU (ms) | "
          "Intel CPU (ms) | ratio CPU |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    print(f"| set-up (first compile of a process) | {z['setup_ms']:.0f} | {i['setup_ms']:.0f} | "
          f"{z['setup_ms'] / i['setup_ms']:.2f} | | | |")

    def med(v, j):
        return statistics.median(x[j] for x in v) if isinstance(v, list) and v else None
    for name in PEER_KERNELS:
        zt, it = z["kernels"].get(name), i["kernels"].get(name)
        cells = []
        for j in (0, 1):
            a, b = med(zt, j), med(it, j)
            cells += [f"{a:.0f}" if a is not None else f"n/a ({zt})",
                      f"{b:.0f}" if b is not None else f"n/a ({it})",
                      f"{a / b:.2f}" if a is not None and b else "-"]
        print(f"| {name} | " + " | ".join(cells) + " |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"commit": commit, "zetile": z, "intel": i}, f, indent=2)
    return 0


def run(template, env_extra, hinted=False, **kw):
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ)
        env.update(env_extra(tmp))
        env["PYTHONPATH"] = os.path.join(ROOT, "python-bindings")
        code = textwrap.dedent(template.format(examples=EXAMPLES, tmp=tmp, hinted=hinted, **kw))
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                           timeout=900)
        for line in r.stdout.splitlines():
            if line.startswith("RESULT "):
                return json.loads(line[7:])
        return {"error": (r.stderr or r.stdout).strip().splitlines()[-1][:200] if (r.stderr or r.stdout)
                else f"exit {r.returncode}"}


def best(results, key, idx):
    vals = [r["runs"][idx].get(key) for r in results if "runs" in r and len(r["runs"]) > idx]
    vals = [v for v in vals if v is not None]
    return min(vals) if vals else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--json")
    ap.add_argument("--peer", choices=("triton-cuda", "intel"), default="triton-cuda",
                    help="intel: Intel's Triton (bench/peer_venv.sh) at Intel's configurations")
    ap.add_argument("--peer-python", help="the peer venv's python (default bench/.peer-venv)")
    args = ap.parse_args()
    if args.peer == "intel":
        return peer_intel(args)
    have_triton = subprocess.run([sys.executable, "-c", "import triton"], capture_output=True).returncode == 0
    report = {}
    for name, k in KERNELS.items():
        entry = report[name] = {}
        for target in ("pvc", "cpu"):
            entry[f"zetile {target}"] = [run(ZETILE, lambda t: {"ZETILE_CACHE_DIR": t}, target=target,
                                             **k) for _ in range(args.reps)]
        if have_triton:
            entry["triton cuda"] = [run(TRITON, lambda t: {"TRITON_CACHE_DIR": t}, **k)
                                    for _ in range(args.reps)]
    print(f"{'kernel':<26}{'compiler':<14}{'cold process':>14}{'warm process':>14}"
          f"{'front+load':>11}{'lowering':>10}{'upstream':>10}")
    for name, entry in report.items():
        tri = entry.get("triton cuda")
        tri_cold = best(tri, "total_ms", 0) if tri else None
        for comp, results in entry.items():
            runs = [r for r in results if "runs" in r]
            errs = [r.get("error") or (r["runs"][0].get("error") if r.get("runs") else None)
                    for r in results]
            errs = [e for e in errs if e]
            cold, warm = best(runs, "total_ms", 0), best(runs, "total_ms", 1)
            if cold is None:
                print(f"{name:<26}{comp:<14}{'n/a: ' + (errs[0] if errs else '?')}")
                continue
            fe = best(runs, "front_end_ms", 0)
            st = runs[0]["runs"][0].get("stages", {})
            # MLIR's pipelines and LLVM's work (the CPU target's -O3 and code
            # generation, SPIR-V emission): upstream; the rest of the lowering: ours.
            upstream = sum(v for s, v in st.items() if s.startswith(("pipeline", "CPU ", "Xe SPIR-V",
                                                                      "dg2 SPIR-V", "dg2 translate")))
            lower_total = st.get("lower (total)")
            ours = max(0.0, lower_total - upstream - sum(v for s, v in st.items()
                                                 if s.startswith("parse") and s != "parse tile IR")) \
                if lower_total is not None else None
            cell = lambda v: f"{v:>9.0f}ms" if v is not None else f"{'-':>11}"  # noqa: E731
            print(f"{name:<26}{comp:<14}{cold:>12.0f}ms{(warm or 0):>12.0f}ms"
                  f"{cell(fe)}{cell(ours)}{cell(upstream or None)}")
        if tri_cold:
            zr = [r for r in entry.get("zetile pvc", []) if "runs" in r]
            z, zw = best(zr, "total_ms", 0), best(zr, "total_ms", 1)
            tri_warm = best(tri, "total_ms", 1)
            if z:
                # Cold process: the measure (empty cache, fresh process),
                # zetile's figure including the load of its compiler library.
                # Warm process: a second kernel in the same process, without
                # either compiler's start-up cost.
                warm = f", warm process: {zw / tri_warm:.2f}" if zw and tri_warm else ""
                print(f"{'':<26}ratio zetile pvc / triton cuda, cold process: {z / tri_cold:.2f} "
                      f"(aim: <= 0.10){warm}")
                # The same with like start-up on both sides: Triton's import
                # loads its compiler (libtriton) and its first compile starts
                # from there; zetile's import does not load libzetile_compiler.
                loaded = min(r["runs"][0]["total_ms"] - r["runs"][0].get("load_ms", 0.0)
                             for r in zr if r["runs"] and "total_ms" in r["runs"][0])
                zi = min(r["import_ms"] + r["runs"][0]["total_ms"]
                         for r in zr if r["runs"] and "total_ms" in r["runs"][0])
                ti = min(r["import_ms"] + r["runs"][0]["total_ms"]
                         for r in tri if r.get("runs") and "total_ms" in r["runs"][0])
                print(f"{'':<26}  both compilers loaded first: {loaded:.0f} ms / {tri_cold:.0f} ms = "
                      f"{loaded / tri_cold:.2f}; import + first compile: {zi:.0f} ms / "
                      f"{ti:.0f} ms = {zi / ti:.2f}")
    if not have_triton:
        print("triton is not installed: no peer figures (pip install triton)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)


if __name__ == "__main__":
    sys.exit(main())
