"""Why the FlashAttention forward at head dim 128 spills on pvc at 8 subgroups
(issue 12, session 22): the SPIR-V zetile emits for it (tests/python/
attention_kernels.py, compat path, BLOCK_M 128, BLOCK_N 64) is edited as
text, reassembled (spirv-as), checked (spirv-val) and built by Debian's ocloc
at 256 GRF, and the spilled registers counted (zetile.tools.isa, E2). The
edits are probes, not fixes: two of them change the kernel's arithmetic.

    .venv/bin/python bench/xe_attention_acc_probe.py [--dtype fp16] [--head-dim 128] [--causal]

Variants, from the kernel built with ZETILE_XE_LAZY_RESCALE=0 (the form
before session 22; the last row is the library's own since then), (the KV loop carries the 16x128 fp32 accumulator of a subgroup as
16 `<8 x float>` phis; each step multiplies them by the rows' alpha, then
the P @ V DPAS chains read the products):
- as emitted;
- no alpha multiply: the DPAS read the phis themselves (wrong results;
  shows what the multiply costs);
- no loop guard: the branch that skips the loop when it has no step is
  taken out, so the loop-exit phis of the accumulator go (wrong when the
  loop would run 0 times);
- both;
- the library's own form since session 22 (lowering/xe/xe_lazy_rescale.c:
  the multiplies in a branch taken when some alpha is not 1, behind an
  identity DPAS, the loop not rotated).
IGC 1.0.12504 keeps a vector phi whose user is a DPAS (its scalarizer's
rule) and splits every other one into single-register phis; the multiply
between phi and DPAS makes it split them, and with the guard the exit phis
are split as well."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "python"))

import zetile  # noqa: E402
from zetile.tools import isa  # noqa: E402
from attention_kernels import attn_fwd_kernel  # noqa: E402


def emitted_text(dt, d, causal):
    sig = {"Q": f"*{dt}", "K": f"*{dt}", "V": f"*{dt}", "Out": f"*{dt}", "sm_scale": "fp32",
           "N_CTX": "i32:16", "stride_qm": "i32:16", "stride_kn": "i32:16",
           "stride_vn": "i32:16", "stride_om": "i32:16"}
    ck = zetile.compile(attn_fwd_kernel, signature=sig, target="pvc", num_warps=8, compat=True,
                        constexprs={"HEAD_DIM": d, "BLOCK_M": 128, "BLOCK_N": 64,
                                    "CAUSAL": causal}, cached=False)
    with tempfile.TemporaryDirectory() as t:
        p = os.path.join(t, "k.spv")
        with open(p, "wb") as f:
            f.write(ck.asm["spirv"])
        return subprocess.run(["spirv-dis", p], capture_output=True, text=True,
                              check=True).stdout


def acc_phis(text):
    # The loop's accumulator: <8 x float> phis with an incoming value from
    # the preheader (LLVM's .lr.ph) and one from the loop block itself.
    return set(re.findall(r"(%\w+) = OpPhi %v8float %\w+ %_lr_ph %\w+ %\w+", text))


def drop_multiply(text):
    phis = acc_phis(text)
    subs, out = {}, []
    for line in text.splitlines():
        m = re.match(r"\s*(%\w+) = OpFMul %v8float (%\w+) %\w+$", line)
        if m and m.group(2) in phis:
            subs[m.group(1)] = m.group(2)
            continue
        out.append(line)
    text = "\n".join(out) + "\n"
    for k, v in subs.items():
        text = re.sub(re.escape(k) + r"\b", v, text)
    return text, len(subs)


def drop_guard(text):
    lines = text.splitlines()
    at = next(i for i, l in enumerate(lines)
              if re.match(r"\s*OpBranchConditional %\w+ %_lr_ph %__crit_edge$", l))
    guard = next(lines[i].split()[0] for i in range(at, -1, -1) if "= OpLabel" in lines[i])
    lines[at] = "OpBranch %_lr_ph"
    out, in_exit, n = [], False, 0
    for line in lines:
        if line.strip() == "%__crit_edge = OpLabel":
            in_exit = True
        elif in_exit and "OpPhi" in line:
            line, k = re.subn(r" %\w+ " + re.escape(guard) + r"\b", "", line)
            n += k
        elif in_exit:
            in_exit = False
        out.append(line)
    return "\n".join(out) + "\n", n


def emitted_with(env, dt, d, causal):
    # The knobs are read where the SPIR-V is emitted (in a compile worker):
    # a fresh interpreter with them in its environment.
    code = ("import sys; sys.path.insert(0, %r); import xe_attention_acc_probe as p; "
            "sys.stdout.write(p.emitted_text(%r, %d, %r))" % (HERE, dt, d, causal))
    return subprocess.run([sys.executable, "-c", code], env=dict(os.environ, **env),
                          capture_output=True, text=True, check=True).stdout


def spilled(text):
    with tempfile.TemporaryDirectory() as t:
        src, spv = os.path.join(t, "k.spvasm"), os.path.join(t, "k.spv")
        with open(src, "w") as f:
            f.write(text)
        subprocess.run(["spirv-as", "--target-env", "spv1.4", src, "-o", spv], check=True)
        val = subprocess.run(["spirv-val", spv], capture_output=True, text=True)
        with open(spv, "rb") as f:
            blob = f.read()
    isas, log = isa.ocloc_isa(blob, "pvc", "-ze-opt-large-register-file")
    r = isa.analyze_isa("".join(isas.values()))
    return val.returncode == 0, isa.spill_from_log(log), r["scratch_sends"], r["sends"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtype", default="fp16", choices=("fp16", "bf16"))
    ap.add_argument("--head-dim", type=int, default=128)
    ap.add_argument("--causal", action="store_true")
    a = ap.parse_args()
    # The multiply as written (ZETILE_XE_LAZY_RESCALE=0: before session 22).
    off = {"ZETILE_XE_LAZY_RESCALE": "0"}
    base = emitted_with(off, a.dtype, a.head_dim, a.causal)
    no_mul, n_mul = drop_multiply(base)
    no_guard, n_exit = drop_guard(base)
    both, _ = drop_guard(no_mul)
    print(f"{a.dtype} d{a.head_dim}{' causal' if a.causal else ''}, pvc compat, 8 subgroups: "
          f"{len(acc_phis(base))} accumulator phis, {n_mul} alpha multiplies, "
          f"{n_exit} exit-phi incomings from the guard")
    print("| variant | spirv-val | spilled | scratch sends | sends |")
    print("|---|---|---|---|---|")
    now = emitted_text(a.dtype, a.head_dim, a.causal)
    for name, text in (("as emitted before (ZETILE_XE_LAZY_RESCALE=0)", base),
                       ("no alpha multiply (wrong results)", no_mul),
                       ("no loop guard", no_guard), ("both", both),
                       ("as emitted (lowering/xe/xe_lazy_rescale.c)", now)):
        ok, sp, sc, se = spilled(text)
        print(f"| {name} | {'ok' if ok else 'FAILS'} | {sp} | {sc} | {se} |", flush=True)


if __name__ == "__main__":
    main()
