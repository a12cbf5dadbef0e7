"""Compile-time cuts in what the Xe lowering writes and runs (issue 22), each
of which must leave the SPIR-V byte for byte the same:
- location aliases: the emitter writes every distinct location once above the
  module (`#zlN = loc(...)`) and each op names it (`loc(#zlN)`), instead of
  every one of a tile op's 16 chunks carrying the file name, line and column
  (lowering/xe/xe_values.c, xe_set_cur); ZETILE_XE_LOC_ALIAS=0 writes them out;
- type aliases: each distinct vector type is defined once (`!zvN = vector<...>`)
  and the ops name it (xe_alias_vector_types); ZETILE_XE_TYPE_ALIAS=0 writes
  them out;
- `overflowFlags = #arith.overflow<none>`, the default, is left out like
  `fastmath<none>` (xe_op_props);
- after zetile's own lane distribution, the module-level lower-affine (both),
  expand-strided-metadata and gpu-to-llvm no longer run: nothing in zetile's
  lane code is theirs to convert (lowering/xe/xe_lower.c);
  ZETILE_XE_NOOP_PASSES=1 keeps them;
- nor do the clean-ups LLVM's own passes redo on the LLVM IR: the cse after
  loop-invariant-code-motion, after convert-gpu-to-llvm-spv and at the end,
  and the gpu.module's reconcile-unrealized-casts (one cse, before the motion,
  and one reconcile-unrealized-casts stay), and the two canonicalizes skip
  region simplification (`region-simplify=disabled`, LLVM's simplifycfg does it);
  ZETILE_XE_CLEANUP_PASSES=1 keeps them;
- xegpu-vector-linearize runs only on lane code with something for it (a
  vector of rank 2 or more, a vector op other than extract, insert,
  extract_strided_slice, from_elements and a broadcast of a scalar:
  lowering/xe/xe_linearize_need.c): softmax's and the chain's lane code have
  none, the tutorial matmul's DPAS blocks are 2-D; ZETILE_XE_LINEARIZE=1 runs
  it always;
- nor, on such code, convert-vector-to-llvm, whose greedy vector lowerings then
  find nothing once the lane packer writes its one-element slices as shuffles
  of the packed vector with itself (xe_lane_pack.c): convert-to-llvm converts
  the vector ops; ZETILE_XE_VECTOR_LLVM=1 writes strided slices and runs it.
Byte comparisons compile each kernel alone in a fresh process per route (LLVM's
SPIR-V backend keeps state across the modules of one process,
llvm/llvm-project#160613, so a kernel compiled after others can differ by id
renaming)."""
import base64
import json
import os
import re

import pytest

import zetile
from zt_testutil import run_python

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SIG = {"x_ptr": "*fp32", "y_ptr": "*fp32", "k_ptr": "*i32", "s": "fp32", "n": "i32"}


def _text(monkeypatch, alias):
    import xe_pack_kernels as K
    for v in ("ZETILE_XE_LOC_ALIAS", "ZETILE_XE_TYPE_ALIAS"):
        if alias:
            monkeypatch.delenv(v, raising=False)
        else:
            monkeypatch.setenv(v, "0")
    c = zetile.compile(K.mixed_chain, signature=SIG, constexprs={"BLOCK": 1024}, target="pvc",
                       num_warps=4, cached=False)
    m = c.asm["mlir"]
    return m if isinstance(m, str) else m.decode()


def test_locations_written_once(monkeypatch):
    text = _text(monkeypatch, True)
    lines = text.splitlines()
    defs = [ln for ln in lines if ln.startswith("#zl")]
    body = [ln for ln in lines if not ln.startswith("#")]
    # Every location of the kernel's source is defined once, by an alias...
    assert defs, text[:2000]
    locs = [ln.split(" = ", 1)[1] for ln in defs]
    assert all(v.startswith("loc(") for v in locs), defs
    assert len(set(locs)) == len(locs), defs
    # ... and the body names the aliases only (1024 elements over 4 subgroups:
    # 16 chunks of each elementwise op share one location).
    assert not any('loc("' in ln for ln in body), [ln for ln in body if 'loc("' in ln][:3]
    used = re.findall(r"loc\(#zl(\d+)\)", text)
    assert len(used) >= 16 * len(defs) // 2, (len(used), len(defs))
    assert {int(u) for u in used} <= set(range(len(defs)))
    # Written out (the measure's reference), the same locations appear per op.
    plain = _text(monkeypatch, False)
    assert "#zl" not in plain
    assert plain.count('loc("') == len(used), (plain.count('loc("'), len(used))


def test_vector_types_written_once(monkeypatch):
    text = _text(monkeypatch, True)
    lines = text.splitlines()
    defs = [ln for ln in lines if ln.startswith("!zv")]
    body = [ln for ln in lines if not ln.startswith(("#", "!"))]
    assert any(d.endswith(" = vector<16xf32>") for d in defs), defs
    types = [d.split(" = ", 1)[1] for d in defs]
    assert len(set(types)) == len(types), defs
    assert not any("vector<" in ln for ln in body), [ln for ln in body if "vector<" in ln][:3]
    used = len(re.findall(r"!zv\d+\b", "\n".join(body)))
    plain = _text(monkeypatch, False)
    assert "!zv" not in plain
    assert plain.count("vector<") == used, (plain.count("vector<"), used)
    # The integer ops' default overflow flags are left out too (both forms).
    assert '"arith.addi"' in text or '"arith.muli"' in text, text[:3000]
    assert "overflow<none>" not in text and "overflow<none>" not in plain


CODE = f"""
import base64, json, os, sys, tempfile, importlib.util
sys.path.insert(0, {HERE!r}); sys.path.insert(0, {os.path.join(ROOT, "bench")!r})
import zetile
import compile_latency as CL
name = os.environ["ZT_EMIT_TEXT_KERNEL"]
k = CL.PEER_KERNELS[name]
text = CL._chain_source() if k["file"] is None else open(os.path.join({ROOT!r}, k["file"])).read()
p = os.path.join(tempfile.mkdtemp(), "k.py"); open(p, "w").write(text)
spec = importlib.util.spec_from_file_location("k", p)
mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
c = zetile.compile(getattr(mod, k["fn"]), signature=k["sig"], constexprs=k["consts"], target="pvc",
                   num_warps=k["warps"], cached=False)
print("RESULT " + json.dumps({{"spirv": base64.b64encode(c.asm["spirv"]).decode()}}))
"""

# softmax: SLM and a cross-subgroup reduction (the pipeline runs in two parts);
# the chain: 200 elementwise ops, the most locations.
KERNELS = ["softmax (1024 columns, 4 warps)", "elementwise chain, 200 ops (4 warps)"]
PASSES = ("LowerAffinePass", "ExpandStridedMetadataPass", "GpuToLLVMConversionPass")


def _passes_run(err):
    """How many times each pass ran, from MLIR's pass timing reports."""
    names = [re.sub(r"^\s*[0-9.]+ \(\s*[0-9.]+%\)\s*", "", ln).strip()
             for ln in err.splitlines() if re.match(r"^\s*[0-9.]+ \(\s*[0-9.]+%\)", ln)]
    return {n: names.count(n) for n in set(names)}


def _run(tmp_path, kernel, **env):
    r = run_python(CODE, env={"ZETILE_CACHE_DIR": str(tmp_path), "ZT_EMIT_TEXT_KERNEL": kernel,
                              "ZETILE_DEBUG": "passes", **env}, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return base64.b64decode(json.loads(line[len("RESULT "):])["spirv"]), r.stderr


@pytest.mark.parametrize("kernel", KERNELS)
def test_same_spirv_without_noop_passes_and_with_aliases(tmp_path, kernel):
    new, new_err = _run(tmp_path / "new", kernel)
    old, old_err = _run(tmp_path / "old", kernel, ZETILE_XE_LOC_ALIAS="0",
                        ZETILE_XE_TYPE_ALIAS="0", ZETILE_XE_NOOP_PASSES="1",
                        ZETILE_XE_CLEANUP_PASSES="1", ZETILE_XE_LINEARIZE="1",
                        ZETILE_XE_VECTOR_LLVM="1")
    # MLIR's pass timing (ZETILE_DEBUG=passes) names every pass that ran.
    assert "ConvertToLLVMPass" in new_err, new_err[-3000:]
    assert "ConvertVectorToLLVMPass" not in new_err, new_err[-3000:]
    assert "ConvertVectorToLLVMPass" in old_err, old_err[-3000:]
    assert "XeGPUVectorLinearize" not in new_err, new_err[-3000:]
    assert "XeGPUVectorLinearize" in old_err, old_err[-3000:]
    for p in PASSES:
        assert p not in new_err, (p, new_err[-3000:])
        assert p in old_err, (p, old_err[-3000:])
    ran, ran_old = _passes_run(new_err), _passes_run(old_err)
    assert ran.get("CSE") == 1 and ran.get("ReconcileUnrealizedCastsPass") == 1, ran
    assert ran.get("LoopInvariantCodeMotion") == 1 and ran.get("Canonicalizer") == 2, ran
    assert ran_old.get("CSE") == 4 and ran_old.get("ReconcileUnrealizedCastsPass") == 2, ran_old
    assert ran_old.get("Canonicalizer") == 2, ran_old
    # ZETILE_DEBUG=passes prints each pipeline's text (options included).
    texts = [ln for ln in new_err.splitlines() if ln.startswith("zetile pipeline (Xe pipeline")]
    old_texts = [ln for ln in old_err.splitlines() if ln.startswith("zetile pipeline (Xe pipeline")]
    assert "".join(texts).count("canonicalize{") == 2, texts
    assert "".join(texts).count("region-simplify=disabled") == 2, texts
    assert old_texts and "region-simplify" not in "".join(old_texts), old_texts
    assert new == old


def test_linearize_kept_for_nd_lane_code(tmp_path):
    """The tutorial matmul's lane code holds the DPAS blocks as 2-D vectors:
    xegpu-vector-linearize and convert-vector-to-llvm still run on it."""
    _, err = _run(tmp_path, "matmul 128x128x32, 8 warps")
    assert _passes_run(err).get("XeGPUVectorLinearize") == 1, err[-3000:]
    assert _passes_run(err).get("ConvertVectorToLLVMPass") == 1, err[-3000:]
