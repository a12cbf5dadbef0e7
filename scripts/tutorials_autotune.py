"""Issue 15's check: Triton's own tutorial files 03, 06 and 09 with only
`triton` resolved to zetile (scripts/triton_suite/zt_triton_alias.py), their
@triton.autotune kernels tuned over all of the tutorial's configs on the CPU
target (E4), the result against torch. The tutorials' definitions are loaded
as scripts/tutorials.py loads them (tutorials_cases.load_tutorial); the
host code called is the tutorial's own wrapper (03 and 09: matmul(a, b) at
256^3 fp16; 06: attention(q, k, v, causal=True, sm_scale=0.5) at 1x2x128x64).
09's persistent and TMA wrappers query torch.cuda and are not called.

    .venv/bin/python scripts/tutorials_autotune.py 06 $TRITON_SRC
"""
import glob
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(HERE, "triton_suite")]
import torch  # noqa: E402
import zt_triton_alias  # noqa: E402,F401  (triton -> zetile)
import zetile  # noqa: E402
from tutorials_cases import load_tutorial  # noqa: E402

zetile.set_device("cpu")
torch.manual_seed(0)
which, src = sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else os.environ["TRITON_SRC"]
path = sorted(glob.glob(f"{src}/python/tutorials/{which}-*.py"))[0]
mod, skipped = load_tutorial(path, "tut" + which)
print("file", path, "skipped definitions:", skipped)
t0 = time.time()
if which == "03":
    a = torch.randn(256, 256, dtype=torch.float16); b = torch.randn(256, 256, dtype=torch.float16)
    got = mod.matmul(a, b); ref = torch.matmul(a.float(), b.float()).half()
    k = mod.matmul_kernel
elif which == "06":
    q, kk, v = (torch.randn(1, 2, 128, 64, dtype=torch.float16) for _ in range(3))
    got = mod.attention(q, kk, v, True, 0.5, False)
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), kk.float(), v.float(), is_causal=True, scale=0.5).half()
    k = mod._attn_fwd
elif which == "09":
    a = torch.randn(256, 256, dtype=torch.float16); b = torch.randn(256, 256, dtype=torch.float16)
    got = mod.matmul(a, b); ref = torch.matmul(a.float(), b.float()).half()
    k = mod.matmul_kernel
err = (got.float() - ref.float()).abs().max().item()
print(f"tutorial {which}: {len(k.configs)} configs, {len(k.configs_timings)} timed, "
      f"{sum(1 for t in k.configs_timings.values() if t[0] == float('inf'))} failed, "
      f"timer {k.timer}, source {k.tuning_source}, tuning {k.bench_time and round(k.bench_time, 1)} s "
      f"(call {time.time() - t0:.1f} s); best {k.best_config}; max |err| vs torch {err:.4f}")
for c, e in list(k.config_errors.items())[:3]:
    print("  error:", c, e[:200])
